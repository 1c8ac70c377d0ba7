"""engine/api.py is the contract every engine implements: Brushfire's sessions and the
baselines' are `SessionAPI`s (their stores `StoreInfo`s), and `protocol.handle` answers
them alike, parameters included. On the rich dashboard, captured without Spark."""

from __future__ import annotations

import pytest

from brushfire import protocol
from brushfire.engine.api import Capability, ForwardAPI, LazyAPI, LineageAPI, SessionAPI


def test_brushfire_sessions_are_lineage_sessions(rich_local):
    s = rich_local.session()
    assert isinstance(s, SessionAPI) and isinstance(s, LineageAPI)


def test_baseline_sessions_implement_the_session_api(rich_local):
    pytest.importorskip("duckdb")
    from brushfire.baselines import with_engine
    from brushfire.baselines.base import BaselineStore

    served = with_engine(rich_local, "duckdb")
    s = served.session()
    assert isinstance(s, SessionAPI) and not isinstance(s, LineageAPI)
    assert isinstance(s.store, BaselineStore) and s.store.n_rows == rich_local.store.n_rows
    assert s.store.parameter_domain("pdest") == rich_local.store.parameter_domain("pdest")
    own = rich_local.session()
    for m in [{"type": "parameter", "name": "pdest", "value": "BBB"},
              {"type": "parameter", "name": "pm", "value": 100},
              {"type": "filters", "filters": {"pt": {"parameter": "2021-02-01"}, "hx": {"interval": [0, 50]}}},
              {"type": "parameter", "name": "pdest", "value": "bbb"}]:
        got, want = protocol.handle(s, m), protocol.handle(own, m)
        assert got["type"] == want["type"], (m, got)
        assert got.get("filters") == want.get("filters") and got.get("selected") == want.get("selected")
        assert got.get("message") == want.get("message")


# --- capabilities: declared by the session, read by the protocol ---------------------------

KEPT_BY = {Capability.ROWS: LineageAPI, Capability.FORWARD: ForwardAPI, Capability.LAZY: LazyAPI}


def test_each_session_keeps_the_capabilities_it_declares(rich_local):
    """A declared capability is backed by the methods of its interface, for every engine."""
    pytest.importorskip("duckdb")
    from brushfire.baselines import with_engine
    sessions = {"engine": rich_local.engine_session(), "lazy": rich_local.session(),
                "duckdb": with_engine(rich_local, "duckdb").session()}
    assert {n: set(s.capabilities) for n, s in sessions.items()} == {
        "engine": {Capability.ROWS, Capability.FORWARD}, "lazy": set(Capability), "duckdb": set()}
    for name, s in sessions.items():
        for cap in s.capabilities:
            assert isinstance(s, KEPT_BY[cap]), (name, cap)


def test_the_protocol_reads_the_declaration_not_the_methods(rich_local):
    """A session that has `forward` but does not declare FORWARD is not asked for it; one
    that does not declare LAZY is not sent filters on source columns."""
    from brushfire.engine.session import Session

    class Undeclared(Session):
        capabilities = frozenset()

    s = Undeclared(rich_local.store, rich_local.plan)
    reply = protocol.handle(s, {"type": "forward", "rids": [0]})
    assert reply["type"] == "error" and "not offered by this engine" in reply["message"], reply
    assert protocol.handle(rich_local.engine_session(), {"type": "forward", "rids": [0]})["type"] == "forward"
    reply = protocol.handle(s, {"type": "filter", "column": "dep_delay", "interval": [0, 1]})
    assert reply["type"] == "error" and "answered lazily" in reply["message"], reply
    assert not protocol.answers_lazily(s) and protocol.filter_kinds(s) == {
        f.name: f.kind for f in rich_local.plan.filters}


def test_every_front_serves_the_one_session_stack(rich_local):
    """The Python API, the server and the widget open the same session (the bench in process
    calls `Dashboard.session` too): the engine's under the lazy answers (brushfire/lazy.py),
    so one message gets one answer whichever front it comes through."""
    from brushfire.engine.session import Session
    from brushfire.lazy import LazySession
    from brushfire.server.app import open_session
    from brushfire.widget import DashboardWidget

    api = rich_local.session()
    assert type(api) is LazySession and type(api.inner) is Session
    assert type(open_session(rich_local)) is LazySession
    w = DashboardWidget(dashboard=rich_local)
    try:
        assert type(w.session) is LazySession
    finally:
        w.close()
