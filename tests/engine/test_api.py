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


# --- one wording and one set of limits for a request's parts, in every layer ------------------


def test_bars_pages_and_y_are_refused_alike_by_every_layer(rich_local):
    """The protocol's check, the engine's Python API, the lazy answers and a baseline say
    the same (engine/api.py, views/base.py), the protocol with the message's path before
    it; the page limit is brushfire/limits.py's in each."""
    pytest.importorskip("duckdb")
    from brushfire.baselines import with_engine
    from brushfire.errors import InteractionError
    from brushfire.limits import MAX_PAGE_ROWS

    engine, lazy = rich_local.engine_session(), rich_local.session()
    duckdb = with_engine(rich_local, "duckdb").session()
    n = next(v.nbars for v in rich_local.store.views if v.name == "cat")
    bars = f"bars[1]: {n} is not a bar of view 'cat'; its bars are 0 to {n - 1}"
    page = f"page_size: {MAX_PAGE_ROWS + 1} is not an integer from 1 to {MAX_PAGE_ROWS:,}"
    y = "y: view 'hx' takes an interval brush; y is only for heatmaps"
    rect = "y: missing; view 'heat' is a heatmap: its brush gives interval (x) and y"
    cases = [(bars, lambda: engine.count_selected("cat", [0, n])),
             (bars, lambda: engine.highlight("cat", [0, n])),
             (bars, lambda: lazy.highlight("cat", [0, n], targets=["hk"])),  # undeclared: lazy's
             (bars, lambda: duckdb.count_selected("cat", [0, n])),
             (page, lambda: engine.details(page_size=MAX_PAGE_ROWS + 1)),
             (page, lambda: lazy.details(page_size=MAX_PAGE_ROWS + 1, columns=["k"])),  # unlisted
             (y, lambda: engine.brush("hx", (0, 10), y=(0, 1))),
             (y, lambda: duckdb.brush("hx", (0, 10), y=(0, 1))),
             (rect, lambda: engine.brush("heat", (0, 10))),
             (rect, lambda: duckdb.brush("heat", (0, 10)))]
    for want, call in cases:
        with pytest.raises(InteractionError) as e:
            call()
        assert str(e.value) == want
    for message, want in [({"type": "details", "view": "cat", "bars": [0, n]}, f"details.{bars}"),
                          ({"type": "highlight", "source": "cat", "bars": [0, n]}, f"highlight.{bars}"),
                          ({"type": "brush", "view": "hx", "interval": [0, 10], "y": [0, 1]}, f"brush.{y}"),
                          ({"type": "brush", "view": "heat", "interval": [0, 10]}, f"brush.{rect}")]:
        assert protocol.handle(lazy, message)["message"] == want
    reply = protocol.handle(lazy, {"type": "details", "page_size": MAX_PAGE_ROWS + 1})
    assert reply["message"].endswith(f"page_size is an integer from 1 to {MAX_PAGE_ROWS:,}")


def test_a_baselines_details_trust_the_checked_request(rich_local, monkeypatch):
    """DuckDB's details of a `details` message: `answer_details` checks neither the bars nor
    the page and columns again, and counts the rows without its Python API's checks."""
    pytest.importorskip("duckdb")
    from brushfire.baselines import base, duckdb, with_engine

    def checked_again(*args, **kwargs):
        msg = "checked again below the protocol"
        raise AssertionError(msg)

    s = with_engine(rich_local, "duckdb").session()
    protocol.handle(s, {"type": "brush", "view": "hx", "interval": [10, 70]})
    messages = [{"type": "details", "view": "cat", "bars": [0, 2], "page_size": 4},
                {"type": "details", "order_by": "x", "page": 2, "page_size": 3}]
    want = [protocol.handle(s, m) for m in messages]
    assert [w["type"] for w in want] == ["details", "details"], want
    monkeypatch.setattr(base, "check_bars", checked_again)
    monkeypatch.setattr(duckdb, "details_request", checked_again)
    for name in ("details", "count_selected"):
        monkeypatch.setattr(duckdb.DuckDBSession, name, checked_again)
    for m, w in zip(messages, want, strict=True):
        assert {**protocol.handle(s, m), "ms": 0} == {**w, "ms": 0}
    assert protocol.handle(s, {"type": "highlight", "source": "cat", "bars": [0]})["message"] == \
        "linked highlighting is not offered by the duckdb baseline"


def test_a_baselines_min_and_max_of_a_date_are_iso_instants_as_the_engines(tmp_path):
    """A min or max over a date field: the engine writes its midnight as an ISO instant;
    the baselines (and the lazy answers on Spark, which number bars through them) gave
    the `datetime.date` SQL returns, so they disagreed with the engine on every bar."""
    pytest.importorskip("duckdb")
    from datetime import date

    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire.baselines import with_engine
    from brushfire.capture.local import capture_table
    from brushfire.dashboard import Dashboard
    from brushfire.plan import plan_capture
    from brushfire.spec import parse_dashboard

    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"c": ["a", "b", "a", None], "d": [date(1850, 3, 1), date(2040, 1, 2),
                                                                 None, date(1969, 12, 31)]}), path)
    views = [{"name": f"{op}_d", "type": "categorical", "field": "c", "aggregate": {"op": op, "field": "d"}}
             for op in ("min", "max")]
    spec = parse_dashboard({"name": "dates", "source": {"path": str(path)}, "views": views,
                            "interactions": {"crossfilter": [{"views": ["min_d", "max_d"]}]}})
    plan = plan_capture(spec)
    dash = Dashboard(spec, plan, capture_table(plan, pq.read_table(path), tmp_path / "cache"))
    own, duck = dash.session(), with_engine(dash, "duckdb").session()
    assert own.view("max_d").values == ["1850-03-01T00:00:00+00:00", "2040-01-02T00:00:00+00:00", None]
    for name in ("min_d", "max_d"):
        assert duck.view(name).values == own.view(name).values
