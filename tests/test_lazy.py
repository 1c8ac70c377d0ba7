"""brushfire.lazy: undeclared interactions answered lazily on Spark, exactly as DuckDB's
SQL says (tests/oracle.py), through protocol.handle as the server and widget call it:
brushes on views no crossfilter group declares, filters on columns no view shows,
undeclared highlight pairs, details with unlisted columns (rids as the engine's), a
second filter in cubes-only mode; cancellation by the next interaction."""

from __future__ import annotations

import threading
import time

import pytest

from bars import same
from brushfire import Dashboard, protocol, sql
from brushfire.errors import CaptureError, NotCapturedError
from brushfire.spark_source import source_for
from brushfire.spec import parse_dashboard
from brushfire.views import brush_sql, key_sql
from oracle import Oracle

pytestmark = pytest.mark.spark

VIEWS = ("hx", "cat", "week", "lonely", "sum_m")


def lazy_spec(path) -> dict:
    return {
        "name": "lazy",
        "source": {"path": str(path)},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 5},
            {"name": "week", "type": "temporal", "field": "t", "unit": "week"},
            # in no crossfilter group: its brush is not captured
            {"name": "lonely", "type": "histogram", "field": "k", "bin": {"step": 20, "extent": [-20, 120]}},
            {"name": "sum_m", "type": "categorical", "field": "dest", "aggregate": {"op": "sum", "field": "m"}},
        ],
        "interactions": {
            "crossfilter": [{"views": ["hx", "cat", "week", "sum_m"]}],
            "highlight": [{"source": "cat", "targets": ["hx"]}],
            "details": {"columns": ["x", "cat"], "page_size": 40},
            "parameters": [{"name": "pdest", "field": "dest"}],
        },
    }


@pytest.fixture(scope="module")
def dash(spark, small_parquet, tmp_path_factory):
    return Dashboard.open(parse_dashboard(lazy_spec(small_parquet)), spark=spark,
                          cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def oracle(dash):
    return Oracle(dash.spec)


class Expect:
    """SQL's view of a session whose filters include undeclared ones: each filter's
    predicate and the views it filters."""

    def __init__(self, dash, oracle) -> None:
        self.dash, self.oracle = dash, oracle
        self.preds: dict[str, tuple[str, set[str]]] = {}

    def declared(self, name: str, pred: str) -> None:
        self.preds[name] = (pred, {v for v in VIEWS if sql.applies(self.dash.spec, name, v)})

    def lazy(self, name: str, pred: str, views) -> None:
        self.preds[name] = (pred, set(views))

    def where(self, view: str | None) -> str:
        return " AND ".join(f"({p})" for p, vs in self.preds.values() if view is None or view in vs) or "TRUE"

    def check(self, reply_or_session) -> None:
        session = reply_or_session
        self.oracle.clear()
        for v in VIEWS:
            got = session.view(v).values
            want = _values(self.oracle, self.dash, v, self.where(v))
            assert same(got, want), (v, got, want)
        count = self.oracle.con.execute(f"SELECT count(*) FROM src WHERE {self.where(None)}").fetchone()[0]
        assert session.count_selected() == count


def _values(oracle, dash, view, where):
    from bars import sql_values

    return sql_values(oracle, dash, view, where)


def test_a_brush_on_a_view_outside_every_group_filters_every_other_view(dash, oracle):
    s = dash.session()
    exp = Expect(dash, oracle)
    reply = protocol.handle(s, {"type": "brush", "id": 1, "view": "lonely", "interval": [10, 60]})
    assert reply["type"] == "update", reply
    assert sorted(reply["views"]) == ["cat", "hx", "sum_m", "week"]
    assert reply["lazy"]["views"] and reply["lazy"]["ms"] > 0
    assert reply["lazy"]["reason"] == "no crossfilter group declares a brush on 'lonely'"
    assert set(reply["methods"].values()) == {"lazy (Spark)"}
    assert reply["filters"] == {"lonely": {"interval": [10, 60]}}
    exp.lazy("lonely", "k IS NOT NULL AND k >= 10 AND k <= 60", {"hx", "cat", "week", "sum_m"})
    exp.check(s)
    assert reply["selected"] == s.count_selected()
    # declared filters go on combining with it: the engine's where no lazy filter applies
    protocol.handle(s, {"type": "brush", "view": "hx", "interval": [20, 55]})
    exp.declared("hx", brush_sql(dash.spec.view("hx"), (20, 55)))
    protocol.handle(s, {"type": "select", "view": "cat", "values": ["c00", "(other)"]})
    exp.declared("cat", sql.select_sql(dash.spec.view("cat"), ["c00", "(other)"], oracle.top["cat"]))
    protocol.handle(s, {"type": "parameter", "name": "pdest", "value": "BBB"})
    exp.declared("pdest", "dest = 'BBB'")
    protocol.handle(s, {"type": "brush", "view": "week", "interval": ["2021-02-01", "2021-03-15T12:00:00"]})
    exp.declared("week", brush_sql(dash.spec.view("week"), ("2021-02-01", "2021-03-15T12:00:00")))
    exp.check(s)
    # a temporal bound that is not a time is refused, naming the bound, and changes nothing
    bad = protocol.handle(s, {"type": "brush", "view": "lonely", "interval": ["a", 3]})
    assert bad["type"] == "error" and "'lonely': interval[0]: 'a' is not a number" in bad["message"]
    exp.check(s)
    # clearing the lazy brush gives the views back to the engine
    reply = protocol.handle(s, {"type": "clear", "view": "lonely"})
    assert "lonely" not in reply["filters"]
    del exp.preds["lonely"]
    exp.check(s)
    # clearing it again (a double-click on its view without a brush) changes nothing, as on
    # a declared brush not active: it was the engine's "'lonely' is not a brushable view"
    again = protocol.handle(s, {"type": "clear", "view": "lonely"})
    assert again["type"] == "update" and "lonely" not in again["filters"], again
    s.clear("lonely")
    exp.check(s)
    inner_only = dash.engine_session()
    for name, value in (("hx", (20, 55)), ("week", ("2021-02-01", "2021-03-15T12:00:00"))):
        inner_only.brush(name, value)
    inner_only.select("cat", ["c00", "(other)"])
    inner_only.set_parameter("pdest", "BBB")
    for v in VIEWS:
        assert s.view(v).counts == inner_only.view(v).counts
    assert not s.lazy and s.current == {}


def test_the_python_api_answers_the_brush_the_page_answers(dash, oracle):
    """`Dashboard.session()` is the stack the server and the widget serve: a brush on a view
    outside every group is answered lazily, as SQL says and as through the protocol (the
    Python API refused it: issue 35)."""
    s = dash.session()
    update = s.brush("lonely", (10, 60))
    assert sorted(update.lazy) == ["cat", "hx", "sum_m", "week"]
    exp = Expect(dash, oracle)
    exp.lazy("lonely", "k IS NOT NULL AND k >= 10 AND k <= 60", {"hx", "cat", "week", "sum_m"})
    exp.check(s)
    page = dash.session()
    reply = protocol.handle(page, {"type": "brush", "view": "lonely", "interval": [10, 60]})
    assert reply["views"] == {v: protocol.view_json(d) for v, d in update.views.items()}
    assert reply["selected"] == s.count_selected()


def test_a_filter_on_a_column_no_view_shows(dash, oracle):
    s = dash.session()
    exp = Expect(dash, oracle)
    reply = protocol.handle(s, {"type": "filter", "column": "m", "interval": [0, 120.5]})
    assert reply["filters"] == {"column:m": {"interval": [0, 120.5]}}
    assert sorted(reply["lazy"]["views"]) == sorted(VIEWS)
    exp.lazy("column:m", "m IS NOT NULL AND NOT isnan(m) AND m >= 0 AND m <= 120.5", VIEWS)
    exp.check(s)
    protocol.handle(s, {"type": "filter", "column": "dest", "values": ["AAA", "CCC", None]})
    exp.lazy("column:dest", "dest IN ('AAA', 'CCC') OR dest IS NULL", VIEWS)
    protocol.handle(s, {"type": "brush", "view": "hx", "interval": [30, None]})
    exp.declared("hx", "x IS NOT NULL AND NOT isnan(x) AND x >= 30")
    exp.check(s)
    for message, error in [
            ({"type": "filter", "column": "nope", "values": [1]}, "no column 'nope' in the source"),
            ({"type": "filter", "column": "cat", "interval": [0, 1]}, "filter it by values"),
            ({"type": "filter", "column": "m"}, "an interval [lo, hi] or a list of values"),
            # values of another type than the column's: refused before Spark
            ({"type": "filter", "column": "t", "values": [1, 2]}, "t: values[0]: 1 is a number, not a time"),
            ({"type": "filter", "column": "dest", "values": ["AAA", 5]}, "holds strings: values ['AAA', 5]"),
            ({"type": "filter", "column": "m", "values": [1, "x"]}, "m: values[1]:"),
            ({"type": "filter", "column": "m", "values": [1e400]}, "m: values[0]: inf is not a finite number")]:
        reply = protocol.handle(s, message)
        assert reply["type"] == "error" and error in reply["message"], reply
    exp.check(s)
    # values of a time column: ISO times, compared as instants
    when = ["2021-01-03T00:00:00", "2021-02-01T05:00:00+01:00"]
    protocol.handle(s, {"type": "filter", "column": "t", "values": [*when, None]})
    exp.lazy("column:t", "t IN (TIMESTAMP '2021-01-03 00:00:00', TIMESTAMP '2021-02-01 04:00:00') "
                         "OR t IS NULL", VIEWS)
    exp.check(s)
    protocol.handle(s, {"type": "clear"})
    assert s.filters == {} and s.count_selected() == dash.store.n_rows


def test_a_lazy_filter_spark_fails_on_leaves_the_filters_as_they_were(dash, oracle, monkeypatch):
    s = dash.session()
    exp = Expect(dash, oracle)
    protocol.handle(s, {"type": "filter", "column": "m", "interval": [0, 120.5]})
    exp.lazy("column:m", "m IS NOT NULL AND NOT isnan(m) AND m >= 0 AND m <= 120.5", VIEWS)
    before = protocol.filters_json(s)

    def fails(*args, **kwargs):
        msg = "Spark failed while answering lazily: the executors are gone"
        raise CaptureError(msg)

    with monkeypatch.context() as m:
        m.setattr(s.source, "run", fails)
        for message in ({"type": "filter", "column": "dest", "values": ["AAA"]},  # a new filter
                        {"type": "filter", "column": "m", "interval": [5, 6]}):  # a filter changed
            reply = protocol.handle(s, message)
            assert reply["type"] == "error" and "the executors are gone" in reply["message"], reply
            assert protocol.filters_json(s) == before
    exp.check(s)  # and the next answers are of those filters
    reply = protocol.handle(s, {"type": "filter", "column": "dest", "values": ["AAA"]})
    assert reply["type"] == "update", reply


def test_an_undeclared_highlight_pair(dash, oracle):
    s = dash.session()
    s.brush("lonely", (0, 80))
    exp = Expect(dash, oracle)
    exp.lazy("lonely", "k IS NOT NULL AND k >= 0 AND k <= 80", {"hx", "cat", "week", "sum_m"})
    reply = protocol.handle(s, {"type": "highlight", "source": "hx", "bars": [2, 5]})
    assert sorted(reply["views"]) == ["cat", "lonely", "sum_m", "week"]  # every other view
    in_bars = f"({key_sql(dash.spec.view('hx'), None)}) IN (2, 5)"
    for t, got in reply["views"].items():
        want = _values(oracle, dash, t, f"({exp.where(t)}) AND {in_bars}")
        assert same(got["values"], want), t
    # a declared pair with no lazy filter on its targets stays the engine's
    s.clear()
    reply = protocol.handle(s, {"type": "highlight", "source": "cat", "bars": [0], "targets": ["hx"]})
    assert reply["views"]["hx"] == protocol.view_json(dash.engine_session().highlight("cat", [0])["hx"])


def test_details_with_unlisted_columns_have_the_engines_rids(dash, oracle):
    s = dash.session()
    s.brush("hx", (25, 60))
    s.select("cat", ["c01", "c02"])
    engine = s.inner.details(page=0, page_size=10_000)  # declared columns: the engine's answer
    lazy = s.details(page=0, page_size=10_000, columns=["x", "cat", "k", "m", "t"])
    assert lazy.column("rid").to_pylist() == engine.column("rid").to_pylist()
    assert lazy.column("x").to_pylist() == engine.column("x").to_pylist()
    reply = protocol.handle(s, {"type": "details", "page": 1, "page_size": 7, "columns": ["k", "dest"]})
    assert reply["total"] == len(engine)
    assert [r["rid"] for r in reply["rows"]] == engine.column("rid").to_pylist()[7:14]
    # under a lazy filter, and behind bars of a view: the rows SQL selects
    s.filter_column("m", interval=(0, 50))
    where = "m >= 0 AND m <= 50 AND NOT isnan(m)"  # hx and cat do not filter `lonely`: m does
    table = s.details("lonely", [1, 2], page_size=10_000, columns=["k", "dest"])
    bars = f"({key_sql(dash.spec.view('lonely'), None)}) IN (1, 2)"
    oracle.clear()
    assert sorted(map(tuple, (r.values() for r in table.select(["k", "dest"]).to_pylist())),
                  key=repr) == oracle.rows(["k", "dest"], f"{where} AND {bars}")


def test_an_export_under_a_filter_answered_on_spark_applies_it(dash, oracle):
    """Under a lazy filter the engine's rids behind the selection would not apply it: the
    session no longer offers them (ROWS), and an export pages through details instead,
    whose rows are SQL's."""
    from brushfire.engine.api import Capability
    from brushfire.export import selection_batches

    s = dash.session()
    s.brush("hx", (25, 60))
    assert Capability.ROWS in s.capabilities
    s.filter_column("m", interval=(0, 50))
    assert Capability.ROWS not in s.capabilities
    with pytest.raises(NotCapturedError, match="ask for details instead"):
        s.backward_rids()
    _, batches = selection_batches(s, ["x", "cat"])
    got = sorted((tuple(r.values()) for b in batches for r in b.select(["x", "cat"]).to_pylist()), key=repr)
    oracle.clear()
    where = "x IS NOT NULL AND NOT isnan(x) AND x >= 25 AND x <= 60 AND m >= 0 AND m <= 50 AND NOT isnan(m)"
    assert got and got == oracle.rows(["x", "cat"], where)
    s.clear()
    assert Capability.ROWS in s.capabilities


def test_order_statistics_answered_on_spark_equal_sql(spark, small_parquet, tmp_path):
    """Under a filter answered on Spark every view is answered there: a median's and a
    timestamp max's bars too (they were null: the lazy group-by summed measures only)."""
    from bars import sql_values

    spec = lazy_spec(small_parquet)
    spec["name"] = "lazy_order"
    spec["views"] += [
        {"name": "med_x", "type": "histogram", "field": "k", "bin": {"step": 20, "extent": [-20, 120]},
         "aggregate": {"op": "median", "field": "x"}},
        {"name": "tmax", "type": "categorical", "field": "cat", "top": 5, "aggregate": {"op": "max", "field": "t"}}]
    spec["interactions"]["crossfilter"][0]["views"] += ["med_x", "tmax"]
    dash = Dashboard.open(parse_dashboard(spec), spark=spark, cache_dir=tmp_path)
    oracle = Oracle(dash.spec)
    s = dash.session()
    engine = {v: s.view(v).values for v in ("med_x", "tmax")}
    s.filter_column("m", interval=(0, 50))
    for v in ("med_x", "tmax"):
        got = s.view(v).values
        want = sql_values(oracle, dash, v, "m >= 0 AND m <= 50 AND NOT isnan(m)")
        assert any(x is not None for x in got) and got != engine[v], v
        if v == "tmax":
            assert got == want, (v, got, want)
        else:
            assert same(got, want), (v, got, want)


def test_lazy_forward_equals_the_engines(dash):
    s = dash.session()
    rids = [0, 5, 17, 2999]
    engine = dash.engine_session().forward(rids)

    def refuse(_):  # as in cubes-only mode: the engine cannot say
        from brushfire.errors import NotCapturedError

        msg = "no per-row lineage"
        raise NotCapturedError(msg)
    s.inner.forward = refuse
    assert s.forward(rids) == engine


def test_a_second_filter_in_cubes_only_mode(spark, small_parquet, tmp_path, oracle):
    spec = lazy_spec(small_parquet)
    dash = Dashboard.open(parse_dashboard(spec), spark=spark, cache_dir=tmp_path, memory_budget=1)
    assert dash.mode == "cubes"
    s = dash.session()
    exp = Expect(dash, oracle)
    first = protocol.handle(s, {"type": "brush", "view": "hx", "interval": [10, 40]})
    assert "lazy" not in first, first.get("lazy")  # one filter: the cubes answer it
    exp.declared("hx", brush_sql(dash.spec.view("hx"), (10, 40)))
    second = protocol.handle(s, {"type": "parameter", "name": "pdest", "value": "CCC"})
    assert "lazy" in second and "per-row lineage" in second["lazy"]["reason"]
    exp.declared("pdest", "dest = 'CCC'")
    exp.check(s)
    protocol.handle(s, {"type": "clear", "view": "hx"})  # one filter again: back to the cubes
    del exp.preds["hx"]
    assert not s.lazy and s.inner.filters == {"pdest": "CCC"}
    exp.check(s)


def test_the_next_interaction_cancels_a_lazy_answer(dash, oracle, spark):
    s = dash.session()
    s.brush("lonely", (0, 100))  # Spark started, the source registered
    tracker = spark.sparkContext.statusTracker()
    cancelled = []

    def cancel_when_running():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            group = s._group
            if group and tracker.getJobIdsForGroup(group):
                s.interrupt()
                cancelled.append(group)
                return
            time.sleep(0.002)

    slow = source_for(dash).run

    def run_slowly(group, query, what):  # a job that takes long enough to be cancelled
        return slow(group, f"SELECT * FROM ({query}) AS q CROSS JOIN "
                           "(SELECT count(1) FROM range(3000000000)) AS r", what)

    source_for(dash).run = run_slowly
    try:
        thread = threading.Thread(target=cancel_when_running)
        thread.start()
        update = s.brush("lonely", (20, 60))
        thread.join()
    finally:
        del source_for(dash).run
    assert cancelled and update.cancelled and not update.views
    reply = protocol.update_reply(s, update)
    assert reply["cancelled"] and "selected" not in reply
    assert s.filters == {"lonely": ((20, 60), None)} and s.stale
    # the next answer recomputes what was left stale
    s.brush("hx", (0, 70))
    assert not s.stale
    exp = Expect(dash, oracle)
    exp.lazy("lonely", "k IS NOT NULL AND k >= 20 AND k <= 60", {"hx", "cat", "week", "sum_m"})
    exp.declared("hx", brush_sql(dash.spec.view("hx"), (0, 70)))
    exp.check(s)


def test_the_server_says_it_is_working_and_the_next_interaction_cancels(dash, oracle, monkeypatch):
    import json

    from websockets.sync.client import connect

    from brushfire.server import app as server_app
    from brushfire.server import create_app
    from live_server import live_server

    monkeypatch.setattr(server_app, "WORKING_AFTER", 0.3)
    monkeypatch.setattr(server_app, "WORKING_EVERY", 0.3)
    source = source_for(dash)
    source.start()
    plain, slowed = source.run, []

    def run_slowly_once(group, query, what):
        if not slowed:
            slowed.append(group)
            query = (f"SELECT * FROM ({query}) AS q CROSS JOIN "
                     "(SELECT count(1) FROM range(30000000000)) AS r")
        return plain(group, query, what)

    monkeypatch.setattr(source, "run", run_slowly_once)
    with live_server(create_app([dash])) as addr, connect(f"ws://{addr}/ws/lazy") as ws:
        ws.send(json.dumps({"type": "brush", "id": 1, "view": "lonely", "interval": [10, 60]}))
        working = json.loads(ws.recv(timeout=60))
        assert working["type"] == "working" and working["id"] == 1 and working["lazy"] is True
        assert working["stage"] == "running on Spark" and working["seconds"] >= 0.3
        ws.send(json.dumps({"type": "brush", "id": 2, "view": "hx", "interval": [0, 70]}))
        replies = {}
        while 2 not in replies:
            msg = json.loads(ws.recv(timeout=120))
            if msg["type"] != "working":
                replies[msg["id"]] = msg
    assert replies[1]["type"] == "update" and replies[1]["cancelled"] is True
    assert replies[1]["filters"] == {"lonely": {"interval": [10, 60]}} and "selected" not in replies[1]
    last = replies[2]
    assert last["type"] == "update" and "cancelled" not in last
    assert sorted(last["lazy"]["views"]) == ["cat", "hx", "sum_m", "week"]  # the stale ones too
    exp = Expect(dash, oracle)
    exp.lazy("lonely", "k IS NOT NULL AND k >= 10 AND k <= 60", {"hx", "cat", "week", "sum_m"})
    exp.declared("hx", brush_sql(dash.spec.view("hx"), (0, 70)))
    oracle.clear()
    for v, got in last["views"].items():
        assert same(got["values"], _values(oracle, dash, v, exp.where(v))), v
    assert last["selected"] == oracle.con.execute(
        f"SELECT count(*) FROM src WHERE {exp.where(None)}").fetchone()[0]


def test_a_parameter_default_counts_in_lazy_answers(dash, oracle):
    ix = dash.spec.interactions
    params = [p.model_copy(update={"default": "DDD"}) for p in ix.parameters]
    spec = dash.spec.model_copy(update={"interactions": ix.model_copy(update={"parameters": params})})
    s = Dashboard(spec, dash.plan, dash.store).session()
    assert s.filters == {"pdest": "DDD"}
    s.brush("lonely", (0, 40))
    assert s.filters == {"pdest": "DDD", "lonely": ((0, 40), None)}
    exp = Expect(dash, oracle)
    exp.declared("pdest", "dest = 'DDD'")
    exp.lazy("lonely", "k IS NOT NULL AND k >= 0 AND k <= 40", {"hx", "cat", "week", "sum_m"})
    exp.check(s)


def test_a_client_that_leaves_cancels_its_lazy_answer(dash, monkeypatch):
    """Work for a closed session stops (issue 36): the Spark job of a lazy answer still
    running when its client leaves is cancelled, and the session ends at once."""
    import json

    import httpx
    from websockets.sync.client import connect

    from brushfire.server import app as server_app
    from brushfire.server import create_app
    from live_server import live_server

    monkeypatch.setattr(server_app, "WORKING_AFTER", 0.3)
    source = source_for(dash)
    source.start()
    plain = source.run

    def run_slowly(group, query, what):  # minutes, unless cancelled
        return plain(group, f"SELECT * FROM ({query}) AS q CROSS JOIN "
                            "(SELECT count(1) FROM range(30000000000)) AS r", what)

    monkeypatch.setattr(source, "run", run_slowly)
    with live_server(create_app([dash])) as addr:
        with connect(f"ws://{addr}/ws/lazy") as ws:
            ws.send(json.dumps({"type": "brush", "id": 1, "view": "lonely", "interval": [10, 60]}))
            assert json.loads(ws.recv(timeout=60))["type"] == "working"  # running on Spark
        deadline = time.monotonic() + 20
        while httpx.get(f"http://{addr}/health").json()["sessions"]:
            assert time.monotonic() < deadline, "the lazy answer ran on for a client that had left"
            time.sleep(0.1)


@pytest.mark.parametrize(("order_by", "error"), [
    ("", "details.order_by: no column '' in the source; columns: "),
    ("mm", "details.order_by: no column 'mm' in the source; columns: cat, dest, k, m, t, x; did you mean 'm'?"),
])
def test_details_ordered_by_no_column_is_an_error_before_spark(dash, order_by, error):
    s = dash.session()
    reply = protocol.handle(s, {"type": "details", "order_by": order_by, "descending": True})
    assert reply["type"] == "error" and reply["message"].startswith(error), reply


def test_a_details_page_past_the_last_row_is_empty_without_spark(dash, monkeypatch):
    s = dash.session()
    monkeypatch.setattr(s.source, "run", lambda *a, **k: pytest.fail("no Spark job for a page past the end"))
    reply = protocol.handle(s, {"type": "details", "page": 10**9, "page_size": 50, "columns": ["k", "dest"]})
    assert reply["type"] == "details" and reply["rows"] == [], reply


def test_a_filter_on_a_boolean_column_takes_true_and_false(spark, tmp_path):
    """A boolean column's values filter takes true / false (and null): booleans were
    refused for every column ('values are strings or numbers'), so no filter could name a
    boolean column's rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ok = [True, False, None, True, True, False] * 5
    pq.write_table(pa.table({"ok": pa.array(ok), "x": [float(i) for i in range(len(ok))]}),
                   tmp_path / "b.parquet")
    dash = Dashboard.open(parse_dashboard({
        "name": "booleans", "source": {"path": str(tmp_path / "b.parquet")},
        "views": [{"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 30]}}]}),
        spark=spark, cache_dir=tmp_path / "cache")
    s = dash.session()
    for values, want in [([True], 15), ([False, None], 15), ([None], 5)]:
        reply = protocol.handle(s, {"type": "filter", "column": "ok", "values": values})
        assert (reply["selected"], reply["filters"]) == (want, {"column:ok": {"values": values}})
    for message, error in [({"type": "filter", "column": "ok", "values": [1]}, "must be true or false"),
                           ({"type": "filter", "column": "x", "values": [True]}, "true is not a number")]:
        reply = protocol.handle(s, message)
        assert reply["type"] == "error" and error in reply["message"], reply


def test_a_boolean_dropdown_under_a_lazy_filter_is_answered_on_spark(spark, tmp_path):
    """A dropdown over a boolean field (a dimension's holiday flag, say) set while a filter
    is answered on Spark: its predicate was CAST(flag AS DOUBLE) = true, which Spark
    refuses (DuckDB takes it), so every lazy answer, highlight and details page of the
    session failed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ok = [True, False, None, True, True, False] * 5
    pq.write_table(pa.table({"ok": pa.array(ok), "x": [float(i) for i in range(len(ok))]}),
                   tmp_path / "b.parquet")
    dash = Dashboard.open(parse_dashboard({
        "name": "booleans", "source": {"path": str(tmp_path / "b.parquet")},
        "views": [{"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 30]}}],
        "interactions": {"parameters": [{"name": "pok", "field": "ok"}]}}),
        spark=spark, cache_dir=tmp_path / "cache")
    s = dash.session()
    assert protocol.handle(s, {"type": "parameter", "name": "pok", "value": True})["selected"] == 15
    reply = protocol.handle(s, {"type": "filter", "column": "x", "interval": [0, 11]})
    assert reply["type"] == "update" and reply["selected"] == 6, reply
    assert reply["views"]["hx"]["counts"] == [5, 1, 0], reply
    reply = protocol.handle(s, {"type": "parameter", "name": "pok", "value": False})
    assert reply["type"] == "update" and reply["selected"] == 4, reply


def test_caveats_answered_on_spark_equal_sqls(spark, tmp_path):
    """Views answered on Spark say which rows they do not show, as the engine's do
    (docs/protocol.md, caveats): null, outside the extent, clamped, folded into (other),
    without a measure, no_match:<join> on a star schema (they said nothing: {})."""
    from brushfire.capture.local import capture_tables
    from brushfire.lineage.layout import CaptureConfig
    from brushfire.plan import plan_capture
    from star_schemas import make_star, star_spec, write_star

    fact, dims = make_star(1500, 4)
    write_star(tmp_path, fact, dims)
    d = star_spec(tmp_path)
    d["views"].append({"name": "clamped", "type": "histogram", "field": "amount",
                       "bin": {"step": 20, "extent": [0, 80], "clamp": True}})
    d["views"].append({"name": "cells", "type": "heatmap", "x": {"field": "amount", "bin": {"step": 50, "extent": [0, 100]}},
                       "y": {"field": "store.size", "bin": {"step": 100, "extent": [0, 200]}}})
    d["interactions"]["crossfilter"][0]["views"] += ["clamped", "cells"]
    spec = parse_dashboard(d)
    store = capture_tables(plan_capture(spec), {"fact": fact}, tmp_path / "cache",
                           CaptureConfig(block_rows=64, shard_rows=300), None, dims)
    dash = Dashboard(spec, plan_capture(spec), store)
    oracle = Oracle(dash.spec)
    s = dash.session()
    engine = {v.name: s.view(v.name).caveats for v in spec.views}
    assert engine["zone"] == oracle.caveats("zone") and "no_match:region" in engine["zone"]
    reply = protocol.handle(s, {"type": "filter", "column": "qty", "interval": [3, 12]})
    assert set(reply["lazy"]["views"]) == {v.name for v in spec.views}, reply
    oracle.where = lambda view: "qty IS NOT NULL AND qty >= 3 AND qty <= 12"
    for v in spec.views:
        assert reply["views"][v.name]["caveats"] == oracle.caveats(v.name), v.name


def test_quantiles_answered_on_spark_equal_sqls_to_the_last_bit(spark, tmp_path):
    """A continuous quantile answered on Spark is the engine's and DuckDB's to the last bit
    (docs/spec.md): Spark's `percentile` interpolates with other roundings (7.9 for the 0.9
    quantile of 3.4, 3.9, 8.9, where DuckDB and the engine give 7.900000000000001)."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"g": ["a", "a", "a", "b", "b"], "x": [3.4, 3.9, 8.9, 3.0, 6.7],
                             "y": [1, 2, 3, 4, 5]}), tmp_path / "q.parquet")
    dash = Dashboard.open(parse_dashboard({
        "name": "quantiles", "source": {"path": str(tmp_path / "q.parquet")},
        "views": [{"name": "q", "type": "categorical", "field": "g", "other": False,
                   "aggregate": {"op": "quantile", "field": "x", "p": 0.9}}]}),
        spark=spark, cache_dir=tmp_path / "cache")
    s = dash.session()
    want = dict(duckdb.sql(f"SELECT g, quantile_cont(x, 0.9) FROM '{tmp_path / 'q.parquet'}' GROUP BY g").fetchall())
    assert want["a"] == 7.900000000000001
    engine = s.view("q")
    assert dict(zip(engine.labels, engine.values, strict=True)) == want
    reply = protocol.handle(s, {"type": "filter", "column": "y", "interval": [0, 10]})
    assert reply["lazy"]["views"] == ["q"], reply
    assert dict(zip(engine.labels, reply["views"]["q"]["values"], strict=True)) == want


def test_discrete_quantiles_answered_on_spark_are_values_of_the_bar_in_its_type(spark, tmp_path):
    """A discrete median or quantile answered on Spark is a value of the bar, the engine's
    and DuckDB's: of integers beyond 2^53 exactly (Spark's `percentile_disc` gave a bigint
    as a double, 2^53 + 1 as 2^53.0)."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    big = 2**53 + 1
    pq.write_table(pa.table({"g": ["a", "a", "a", "b", "b", "b", "b"],
                             "x": pa.array([big, big, 3, -big, -big, big + 2, 0], pa.int64()),
                             "y": [1, 2, 3, 4, 5, 6, 7]}), tmp_path / "q.parquet")
    views = [{"name": f"q{int(p * 10)}", "type": "categorical", "field": "g", "other": False,
              "aggregate": {"op": "quantile", "field": "x", "p": p, "method": "discrete"}} for p in (0.1, 0.5, 0.9)]
    dash = Dashboard.open(parse_dashboard({"name": "discrete", "source": {"path": str(tmp_path / "q.parquet")},
                                           "views": views}), spark=spark, cache_dir=tmp_path / "cache")
    s = dash.session()
    engine = {v["name"]: dict(zip(s.view(v["name"]).labels, s.view(v["name"]).values, strict=True))
              for v in views}
    reply = protocol.handle(s, {"type": "filter", "column": "y", "interval": [0, 10]})  # every row
    assert sorted(reply["lazy"]["views"]) == ["q1", "q5", "q9"], reply
    for p in (0.1, 0.5, 0.9):
        want = dict(duckdb.sql(f"SELECT g, quantile_disc(x, {p}) FROM '{tmp_path / 'q.parquet'}' GROUP BY g")
                    .fetchall())
        name = f"q{int(p * 10)}"
        got = dict(zip(engine[name], reply["views"][name]["values"], strict=True))
        assert got == want == engine[name] and all(type(x) is int for x in got.values()), (p, got, want)
    assert want["a"] == big


@pytest.mark.spark
def test_zoned_times_from_spark_are_utc_on_a_host_in_another_zone(spark, monkeypatch):
    """pyspark's collect gives a TIMESTAMP as the Python process's local time: on a host
    in New York a lazy details row of 04:00 UTC (a zoned column, or a joined table's key)
    read 23:00 the day before, where the engine's said 04:00. TIMESTAMP_NTZ is as written."""
    from datetime import datetime

    from brushfire.capture.spark import collect_utc

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        rows = collect_utc(spark.sql("SELECT TIMESTAMP '2023-03-01 04:00:00' AS t, "
                                     "TIMESTAMP_NTZ '2023-03-01 04:00:00' AS n, "
                                     "CAST(NULL AS TIMESTAMP) AS z, 7 AS k"))
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert [tuple(r) for r in rows] == [(datetime(2023, 3, 1, 4), datetime(2023, 3, 1, 4), None, 7)]
    assert rows[0]["t"] == rows[0].t == datetime(2023, 3, 1, 4)


def test_lazy_answers_read_the_files_captured_not_those_appended_since(spark, tmp_path):
    """A file appended to the source's folder is not in the capture until the next reload
    (serve --watch): an answer on Spark meanwhile counts the rows the capture has, as its
    other views do, not the new file's too. And a source whose capture is gone (replaced
    by a newer one) leaves no cached copy in Spark."""
    import gc

    import pyarrow.parquet as pq

    from rows import make_rows

    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(make_rows(600, 1), folder / "part-0.parquet")
    d = lazy_spec(folder)
    d["source"]["format"] = "parquet"
    dash = Dashboard.open(parse_dashboard(d), spark=spark, cache_dir=tmp_path / "cache")
    pq.write_table(make_rows(300, 2), folder / "part-1.parquet")
    oracle = Oracle(parse_dashboard(lazy_spec(folder / "part-0.parquet")))
    s = dash.session()
    reply = protocol.handle(s, {"type": "brush", "view": "lonely", "interval": [0, 60]})
    assert reply["type"] == "update" and reply["lazy"], reply
    oracle.brush("lonely", [0, 60])
    assert reply["selected"] == oracle.selected()
    table = source_for(dash).table
    assert spark.catalog.tableExists(table)
    s.close()
    del s, dash, reply
    deadline = time.monotonic() + 60
    while spark.catalog.tableExists(table):
        assert time.monotonic() < deadline, "the released source's table is still there"
        gc.unfreeze()  # (a server's warm-up in an earlier test may have frozen it: gc.freeze)
        gc.collect()
        time.sleep(0.2)
