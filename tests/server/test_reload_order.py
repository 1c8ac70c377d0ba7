"""Reloads racing, without Spark: one capture at a time per hosted dashboard, however
many ask for one (the watch, `reload()`) (tests/server/test_reload.py: reloads on Spark)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import brushfire.spark_source
from brushfire.server.hosting import HostedDashboard
from reloads import Contended, Data, race


class Store:
    def __init__(self, n_rows: int) -> None:
        self.n_rows = n_rows


class Capture:
    """A stand-in for a Dashboard captured from `data` at `version`: what
    HostedDashboard.reload calls of it."""

    def __init__(self, data: Data, version: int) -> None:
        self.data, self.version = data, version
        self.spec = SimpleNamespace(name="fake")
        self.store = Store(version)  # (weakly referenced: _free_when_left)
        self.opened_with: dict = {}

    def stale(self) -> bool:
        return self.version != self.data.version

    def refresh(self, spark=None, progress=None) -> Capture | None:
        return Capture(self.data, self.data.capture()) if self.stale() else None

    def warm_up(self) -> float:
        return 0.0


@pytest.mark.parametrize("changed_again", [False, True])
def test_a_reload_asked_for_while_one_captures_waits_for_it(monkeypatch, changed_again):
    """`reload()` while the watch's reload captures: it waits for that one, then checks
    again, rather than capturing the same data alongside it (twice the work, one cache
    entry written by two, and the slower served last though it may have read older
    data). Data that changed meanwhile are captured then; either way it returns True: a
    newer capture is served than when it was asked for."""
    monkeypatch.setattr(brushfire.spark_source, "source_for",
                        lambda dash, master=None: SimpleNamespace(known_columns=lambda: None))
    data = Data()
    host = HostedDashboard.ready(Capture(data, 0))
    # (raising=False: without the fix the host has no lock; the second reload then
    # captures alongside the first, which sets `arrived` too)
    monkeypatch.setattr(host, "_reloading", Contended(data.arrived), raising=False)
    served = []
    host.listen(lambda: served.append(host.dashboard.version))
    results = race(host.reload, data, changed_again)
    assert data.most == 1  # never two captures at once
    assert data.captures == ([1, 2] if changed_again else [1])
    assert served == data.captures and host.dashboard.version == data.version
    assert host.reloads == len(served) and host.reload_error is None
    assert results == {"watch": True, "asked": True}
