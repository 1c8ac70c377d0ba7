"""Reloads racing, without Spark: one capture at a time per hosted dashboard, however
many ask for one (the watch, `reload()`), and a session whose move to the new capture
fails tries again until it moves (tests/server/test_reload.py: reloads on Spark)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from websockets.sync.client import connect

import brushfire.spark_source
from brushfire import Dashboard, protocol
from brushfire.server import create_app
from brushfire.server.hosting import HostedDashboard
from live_server import live_server
from reloads import WAIT, Contended, Data, race


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


def ask(ws, message: dict) -> dict:
    ws.send(json.dumps(message))
    return json.loads(ws.recv(timeout=WAIT))


def test_a_session_that_could_not_move_tries_again_at_its_next_message(rich_local, monkeypatch):
    """A session's move to the new capture failed (its session there would not open, or
    not take its filters): it stayed on the old capture for good, answering on data no
    longer served. Now it is said once, the session answers on the capture it has and
    tries again before its next message, and `reloaded` says when it moved."""
    newer = Dashboard(rich_local.user_spec, rich_local.plan, rich_local.store)
    monkeypatch.setattr(rich_local, "stale", lambda: True)
    monkeypatch.setattr(rich_local, "refresh", lambda spark=None, progress=None: newer)
    monkeypatch.setattr(newer, "warm_up", lambda: 0.0)
    attempts, failing = [], [True]
    carry_over = protocol.carry_over

    def moving(old, new):
        attempts.append(new)
        if failing[0]:
            msg = "no memory left for another session"
            raise RuntimeError(msg)
        return carry_over(old, new)

    monkeypatch.setattr(protocol, "carry_over", moving)
    host = HostedDashboard.ready(rich_local)
    with live_server(create_app([host])) as addr, connect(f"ws://{addr}/ws/{host.name}") as ws:
        assert ask(ws, {"type": "brush", "id": 1, "view": "hx", "interval": [20, 60]})["type"] == "update"
        assert host.reload() and host.dashboard is newer
        told = json.loads(ws.recv(timeout=WAIT))  # (the idle session tried at once)
        assert told["type"] == "error" and told["id"] is None and "no memory left" in told["message"]
        assert len(attempts) == 1
        # answered on the capture it has, after another try (and no second error)
        assert ask(ws, {"type": "state", "id": 2})["type"] == "state" and len(attempts) == 2
        failing[0] = False
        moved = ask(ws, {"type": "state", "id": 3})
        assert moved["type"] == "reloaded" and moved["filters"] == {"hx": {"interval": [20, 60]}}, moved
        reply = json.loads(ws.recv(timeout=WAIT))
        assert reply["type"] == "state" and reply["id"] == 3 and reply["filters"] == moved["filters"]
        assert ask(ws, {"type": "state", "id": 4})["type"] == "state" and len(attempts) == 3  # moved: no more tries
