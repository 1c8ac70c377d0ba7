"""Spec conveniences against DuckDB (issue 17): `maxbins` bins chosen from the data (and a
step's extent fitted to it),
categorical views sorted by name, calendar parts, `between` and multi-select parameters.

Each dashboard is captured without Spark (capture/local.py) over awkward random rows in
unequal partitions, then random interactions are played on an engine session and on the
oracle (tests/oracle.py: the spec's semantics as SQL, run by DuckDB); after every step
each view, its caveats and the selected rows must be equal. The oracle reads the opened
dashboard's spec (`Dashboard.spec`), in which a `maxbins` bin has the step and extent
capture chose (a step alone, its extent): which is checked apart, from DuckDB's min and
max of the field.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushfire import bins
from brushfire.capture.local import capture_table
from brushfire.dashboard import Dashboard
from brushfire.lineage import store as lstore
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import explain, plan_capture
from brushfire.spec import parse_dashboard
from brushfire.views import key_sql
from oracle import Oracle


def rows(n: int = 2500, seed: int = 11) -> pa.Table:
    """Floats with nulls, NaN and infinities; integers; strings with nulls; times."""
    rng = np.random.default_rng(seed)
    x = rng.normal(30, 25, n).round(2)
    x[rng.random(n) < 0.03] = np.nan
    x[rng.random(n) < 0.01] = np.inf
    x[rng.random(n) < 0.01] = -np.inf
    k = rng.integers(-7, 1234, n)
    cats = np.array(["delta", "Alpha", "bravo", "charlie", "echo", "foxtrot", "golf", "hotel"])
    cat = cats[np.minimum(rng.zipf(1.5, n) - 1, len(cats) - 1)]
    t0 = datetime(2021, 1, 1)
    t = [t0 + timedelta(minutes=int(mm)) for mm in rng.integers(0, 60 * 24 * 400, n)]
    return pa.table({
        "x": pa.array(x, mask=rng.random(n) < 0.03),
        "k": pa.array(k),
        "cat": pa.array(cat, mask=rng.random(n) < 0.03),
        "t": pa.array(t, type=pa.timestamp("us"), mask=rng.random(n) < 0.02),
    })


def spec(path) -> dict:
    return {
        "name": "conveniences",
        "source": {"path": str(path)},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x", "bin": {"maxbins": 12}},
            {"name": "hk", "type": "histogram", "field": "k", "bin": {"maxbins": 30}},
            {"name": "hx_step", "type": "histogram", "field": "x", "bin": {"step": 7.5}},
            {"name": "mean_k", "type": "histogram", "field": "x", "brush": "none",
             "bin": {"maxbins": 7}, "aggregate": {"op": "mean", "field": "k"}},
            {"name": "heat", "type": "heatmap", "brush": "none",
             "x": {"field": "k", "bin": {"maxbins": 5}},
             "y": {"field": "x", "bin": {"step": 25, "extent": [-50, 100], "clamp": True}}},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 5},
            {"name": "by_name", "type": "categorical", "field": "cat", "top": 5, "sort": "name"},
            {"name": "all_by_name", "type": "categorical", "field": "cat", "sort": "name",
             "other": False, "aggregate": {"op": "sum", "field": "k"}},
            {"name": "hod", "type": "temporal", "field": "t", "unit": "hour_of_day"},
            {"name": "dow", "type": "temporal", "field": "t", "unit": "day_of_week"},
            {"name": "moy", "type": "temporal", "field": "t", "unit": "month_of_year", "brush": "none",
             "aggregate": {"op": "mean", "field": "k"}},
            {"name": "moy_brushed", "type": "temporal", "field": "t", "unit": "month_of_year"},
            {"name": "day", "type": "temporal", "field": "t", "unit": "week"},
        ],
        "interactions": {
            "crossfilter": [{"views": ["hx", "hk", "hx_step", "mean_k", "heat", "cat", "by_name",
                                       "all_by_name", "hod", "dow", "moy", "day"]},
                            {"views": ["moy_brushed", "hk"]}],
            "parameters": [
                {"name": "krange", "field": "k", "widget": "slider", "op": "between",
                 "default": [0, 900]},
                {"name": "trange", "field": "t", "widget": "slider", "op": "between"},
                {"name": "cats", "field": "cat", "multiple": True},
            ],
            "details": {"columns": ["x", "k", "cat"]},
        },
    }


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "rows.parquet"
    table = rows()
    pq.write_table(table, path)
    written = parse_dashboard(spec(path))
    plan = plan_capture(written)
    cache = tmp_path_factory.mktemp("cache")
    store = capture_table(plan, table, cache, CaptureConfig(block_rows=128, shard_rows=512, max_keys=300),
                          partitions=[700, 0, 1100, 700])
    dash = Dashboard(written, plan, store)
    return written, dash, Oracle(dash.spec)


def test_maxbins_chooses_from_the_data_min_and_max(captured):
    written, dash, oracle = captured
    lo_x, hi_x, lo_k, hi_k = oracle.con.execute(
        "SELECT min(x) FILTER (WHERE isfinite(x)), max(x) FILTER (WHERE isfinite(x)), "
        "min(k), max(k) FROM src").fetchone()
    assert dash.spec.view("hx").bin == bins.nice_bin(lo_x, hi_x, 12)
    assert dash.spec.view("hk").bin == bins.nice_bin(lo_k, hi_k, 30)
    assert dash.spec.view("mean_k").bin == bins.nice_bin(lo_x, hi_x, 7)
    assert dash.spec.view("heat").x.bin == bins.nice_bin(lo_k, hi_k, 5)
    assert dash.spec.view("heat").y.bin == written.view("heat").y.bin
    # a step alone: whole steps of 7.5 from the one below the min to the one above the max
    assert dash.spec.view("hx_step").bin == bins.step_bin(lo_x, hi_x, 7.5)
    got = dash.spec.view("hx_step").bin
    assert got.extent == (math.floor(lo_x / 7.5) * 7.5, math.ceil(hi_x / 7.5) * 7.5)
    assert dash.plan.dashboard is dash.spec
    for name, maxbins in (("hx", 12), ("hk", 30), ("mean_k", 7)):
        b = dash.spec.view(name).bin
        assert 0 < b.count <= maxbins
        assert len(dash.engine_session().view(name).labels) == b.count
    # the same bins when the store is loaded again from its cache entry
    entry = dash.store.directory
    again = Dashboard(written, plan_capture(written), lstore.load_store(entry, written))
    assert again.spec == dash.spec
    # `brushfire capture` prints the plan with the layout: the chosen step and extent
    text = explain(plan_capture(written), layout=dash.store.layout)
    b = dash.spec.view("hk").bin
    assert (f"bins: maxbins 30 chose step {b.step:g} over [{b.extent[0]:g}, {b.extent[1]:g}] "
            f"({b.count} bars") in text
    assert "bins: at most 30; a nice step and extent chosen at capture" in explain(plan_capture(written))
    b = dash.spec.view("hx_step").bin
    assert f"bins: step 7.5 over [{b.extent[0]:g}, {b.extent[1]:g}] ({b.count} bars" in text
    assert "bins: step 7.5; the extent, whole steps around the data's min and max, fitted at capture" \
        in explain(plan_capture(written))


def test_sort_orders_the_bars_by_count_or_name(captured):
    _, dash, oracle = captured
    session = dash.engine_session()
    labels = {v.name: session.view(v.name).labels for v in dash.spec.views if v.type == "categorical"}
    # the same top 5 by count, in the order DuckDB's ORDER BY gives them; '(other)' last
    assert labels["cat"] == oracle.top["cat"] + ["(other)"]
    assert labels["by_name"] == oracle.top["by_name"] + ["(other)"]
    assert sorted(labels["cat"][:-1]) == labels["by_name"][:-1] != labels["cat"][:-1]
    counts = dict(oracle.con.execute("SELECT cat, count(*) FROM src GROUP BY 1").fetchall())
    assert [counts[x] for x in labels["cat"][:-1]] == sorted((counts[x] for x in labels["cat"][:-1]),
                                                             reverse=True)
    assert labels["all_by_name"] == sorted(x for x in counts if x is not None)  # no '(other)'


def test_calendar_parts_have_a_bar_per_value(captured):
    _, dash, oracle = captured
    session = dash.engine_session()
    session.clear("krange")  # (a parameter with a default)
    assert session.view("hod").labels == [str(h) for h in range(24)]
    assert session.view("dow").labels == ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    assert session.view("moy").labels[::11] == ["Jan", "Dec"]
    # DuckDB's hour(t), isodow(t) and month(t), bar by bar
    for name, part, first in (("hod", "hour", 0), ("dow", "isodow", 1), ("moy", "month", 1)):
        want = dict(oracle.con.execute(
            f"SELECT {part}(t) - {first}, count(*) FROM src WHERE t IS NOT NULL GROUP BY 1").fetchall())
        got = {i: n for i, n in enumerate(session.view(name).counts) if n}
        assert got == want, name
    # a brush selects the values of the part: hours 6 to 9 (6.5 starts at 7)
    session.brush("hod", (6, 9))
    n = oracle.con.execute("SELECT count(*) FROM src WHERE hour(t) BETWEEN 6 AND 9").fetchone()[0]
    assert session.count_selected() == n
    session.brush("hod", (6.5, 9))
    assert session.count_selected() == n - oracle.con.execute(
        "SELECT count(*) FROM src WHERE hour(t) = 6").fetchone()[0]
    session.brush("dow", (6, 7))  # the weekend
    n = oracle.con.execute("SELECT count(*) FROM src WHERE hour(t) BETWEEN 6.5 AND 9 "
                           "AND isodow(t) >= 6").fetchone()[0]
    assert session.count_selected() == n


PART = st.one_of(st.none(), st.integers(-1, 25), st.floats(-1, 25).map(lambda x: round(x, 1)))
NUM = st.one_of(st.none(), st.floats(-120, 1300).map(lambda x: round(x, 1)),
                st.sampled_from([-math.inf, math.inf, 0.0, 50.0, 100.0]))
NAMES = st.lists(st.sampled_from(["delta", "Alpha", "bravo", "charlie", "echo", "(other)"]),
                 max_size=3)


def actions(dash) -> st.SearchStrategy:
    out = [st.tuples(st.just("clear_all"), st.none())]
    for p in dash.spec.interactions.parameters:
        if p.op == "between" and p.field == "k":
            value = st.tuples(st.integers(-20, 1300), st.floats(-20, 1300).map(lambda x: round(x, 1)))
        elif p.op == "between":
            value = st.tuples(*[st.sampled_from(["2021-01-01T00:00:00", "2021-03-15T06:30:00",
                                                 "2021-11-30T23:59:59", "2022-06-01T00:00:00"])] * 2)
        elif p.multiple:
            value = NAMES
        out.append(st.tuples(st.just(("set_parameter", p.name)), st.one_of(
            st.none(), value.map(list))))
    for v in dash.spec.views:
        if not dash.plan.has_filter(v.name):
            continue
        if v.type == "categorical":
            out.append(st.tuples(st.just(("select", v.name)), NAMES))
        elif v.type == "temporal" and v.part:
            out.append(st.tuples(st.just(("brush", v.name)), st.tuples(PART, PART)))
        elif v.type == "temporal":
            times = st.one_of(st.none(), st.sampled_from(["2021-02-01T00:00:00", "2021-06-15T12:30:00",
                                                          "2021-12-31T23:59:00", "2023-01-01T00:00:00"]))
            out.append(st.tuples(st.just(("brush", v.name)), st.tuples(times, times)))
        else:
            out.append(st.tuples(st.just(("brush", v.name)), st.tuples(NUM, NUM)))
        out.append(st.tuples(st.just(("clear", v.name)), st.none()))
    return st.one_of(*out)


def play(session, oracle, action) -> None:
    what, arg = action
    if what == "clear_all":
        session.clear()
        oracle.clear()
        return
    kind, name = what
    if kind == "set_parameter":
        if isinstance(arg, list) and dash_multiple(session, name):
            arg = [x for x in arg if x in session.store.parameter_domain(name)[1]]
        session.set_parameter(name, arg)
        oracle.set_parameter(name, arg)
        return
    if kind == "select":
        arg = [x for x in arg if x in session.view(name).labels]
    getattr(session, kind)(name, *([] if arg is None else [arg]))
    getattr(oracle, kind)(name, *([] if arg is None else [arg]))


def dash_multiple(session, name: str) -> bool:
    return session.plan.dashboard.parameter(name).multiple


def bars(vd, view) -> dict:
    """{the oracle's key of a bar: (count, value)}: categorical values, temporal bar starts
    (ISO, no offset), else the bar number (calendar parts too)."""
    def key(i: int, label):
        if view.type == "categorical":
            return label
        return label.replace("+00:00", "") if view.type == "temporal" and not view.part else i

    return {key(i, label): (n, value)
            for i, (label, n, value) in enumerate(zip(vd.labels, vd.counts, vd.values, strict=True)) if n}


def check(dash, oracle, session, context) -> None:
    for v in dash.spec.views:
        vd = session.view(v.name)
        got, want = bars(vd, v), oracle.view(v.name)
        assert set(got) == set(want), (context, v.name, got, want)
        for key, (n, value) in got.items():
            count, total, mean, _ = want[key]
            assert n == count, (context, v.name, key)
            expect = {"count": count, "sum": total, "mean": mean}[v.aggregate.op]
            assert oracle.agrees(v.name, key, value, expect), (context, v.name, key, value, expect)
        assert vd.caveats == oracle.caveats(v.name), (context, v.name)
    assert session.count_selected() == oracle.con.execute(
        f"SELECT count(*) FROM src WHERE {oracle.where(None)}").fetchone()[0]


def test_views_equal_sql_after_every_interaction(captured):
    _, dash, oracle = captured

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        session = dash.engine_session()
        oracle.clear()
        oracle.set_parameter("krange", [0, 900])  # its default
        check(dash, oracle, session, "start")
        for step, action in enumerate(data.draw(st.lists(actions(dash), max_size=6))):
            play(session, oracle, action)
            check(dash, oracle, session, (step, action))

    run()


@pytest.mark.spark
def test_a_spark_capture_chooses_the_same_bins(captured, spark, tmp_path):
    """Capture on Spark (its profile job finds the min and max from Spark aggregates:
    finite values only, as doubles) chooses the bins the local capture does, and its
    views are the same."""
    written, dash, _ = captured
    on_spark = Dashboard.open(written, spark=spark, cache_dir=tmp_path)
    assert on_spark.spec == dash.spec
    a, b = on_spark.engine_session(), dash.engine_session()
    for v in written.views:
        assert a.view(v.name).counts == b.view(v.name).counts, v.name
    # calendar parts in Spark SQL (the lazy answers' dialect) put rows in the same bars
    from pyspark.sql import functions as F

    from brushfire import sql
    from brushfire.capture.spark import read_source

    df = read_source(spark, written.source)
    b.clear("krange")  # (the parameter's default)
    for name in ("hod", "dow", "moy"):
        key = F.expr(key_sql(written.view(name), None, sql.SPARK)).alias("bar")
        got = {r["bar"]: r["count"] for r in df.groupBy(key).count().collect() if r["bar"] is not None}
        assert got == {i: n for i, n in enumerate(b.view(name).counts) if n}, name
    # between and multiple parameters in Spark SQL select the engine's rows
    for name, value in (("krange", [10, 500.5]), ("cats", ["Alpha", "echo"]), ("cats", []),
                        ("trange", ["2021-02-01T00:00:00", "2021-03-15T06:30:00"])):
        b.clear()
        b.set_parameter(name, value)
        where = sql.parameter_sql(written.parameter(name), value, sql.SPARK)
        assert df.where(F.expr(where)).count() == b.count_selected(), (name, value)


@pytest.mark.parametrize(("value", "error"), [
    ([5], "parameter 'krange' takes a range [lo, hi], got [5]"),
    (5, "parameter 'krange' takes a range [lo, hi], got 5"),
    ([1, None], "parameter 'krange' takes a range [lo, hi], got [1, null]"),
    (["a", 3], "parameter 'krange'[0]:"),
    ([10, 20], None),
    ([20, 10], None),  # empty: no row
    (["2021-03-01T00:00:00", "2021-03-31T23:59:59"], "parameter 'krange'[0]:"),
], ids=str)
def test_a_between_parameter_takes_a_range(captured, value, error):
    from brushfire import protocol

    _, dash, oracle = captured
    session = dash.engine_session()
    reply = protocol.handle(session, {"type": "parameter", "name": "krange", "value": value})
    if error:
        assert reply["type"] == "error" and reply["message"].startswith(error), reply
        assert session.filters["krange"] == [0, 900]  # unchanged: its default
        return
    assert reply["type"] == "update", reply
    lo, hi = value
    want = oracle.con.execute(f"SELECT count(*) FROM src WHERE k >= {lo} AND k <= {hi}").fetchone()[0]
    assert session.count_selected() == want
    t = protocol.handle(session, {"type": "parameter", "name": "trange",
                                  "value": ["2021-03-01T00:00:00", "2021-03-31T23:59:59"]})
    assert t["type"] == "update", t
    want = oracle.con.execute(f"SELECT count(*) FROM src WHERE k >= {lo} AND k <= {hi} AND t >= "
                              "'2021-03-01' AND t <= '2021-03-31 23:59:59'").fetchone()[0]
    assert session.count_selected() == want


@pytest.mark.parametrize(("value", "error"), [
    (["Alpha", "bravo"], None),
    (["delta"], None),
    ([], None),  # no value: no row
    ("Alpha", "parameter 'cats' takes a list of values, got 'Alpha'"),
    (["Alpha", "nope"], "parameter 'cats'[1]: "),
], ids=str)
def test_a_multiple_dropdown_takes_a_list_of_values(captured, value, error):
    from brushfire import protocol

    _, dash, oracle = captured
    session = dash.engine_session()
    session.clear("krange")
    reply = protocol.handle(session, {"type": "parameter", "name": "cats", "value": value})
    if error:
        assert reply["type"] == "error" and reply["message"].startswith(error), reply
        assert "cats" not in session.filters
        return
    assert reply["type"] == "update", reply
    inside = ", ".join(f"'{x}'" for x in value) or "NULL"
    want = oracle.con.execute(f"SELECT count(*) FROM src WHERE cat IN ({inside})").fetchone()[0]
    assert session.count_selected() == want


def test_a_multiple_dropdown_default_is_a_list() -> None:
    base = {"name": "d", "source": {"path": "x.parquet"},
            "views": [{"name": "c", "type": "categorical", "field": "cat"}]}
    p = {"name": "cats", "field": "cat", "multiple": True, "default": ["a", "b"]}
    dash = parse_dashboard({**base, "interactions": {"parameters": [p]}})
    assert dash.parameter("cats").default == ["a", "b"]
    assert plan_capture(dash).filter("cats").op == "in"


@pytest.mark.parametrize("engine", ["brushfire", "duckdb", "preagg"])
def test_the_bench_brushes_calendar_parts_by_value_and_checks_them(captured, tmp_path, engine):
    """`brushfire bench`'s workloads brush a calendar part by its values (not times); the
    check and the DuckDB baselines read the part's bars by bar number: replies equal SQL."""
    from brushfire import protocol
    from brushfire.baselines import with_engine
    from brushfire.bench import workloads
    from brushfire.bench.check import Checker
    from brushfire.describe import describe_dashboard

    _, dash, _ = captured
    info = workloads.DashboardInfo.from_description(describe_dashboard(dash))
    assert [v.part for v in info.views if v.name in ("hod", "dow")] == [(0, 24), (1, 7)]
    trace = workloads.slide(info, views=["hod", "dow"], n_pixels=40)
    # the parameters people set: between ([lo, hi]), multiple (lists), a time slider
    picks = [e.message for e in workloads.human(info, events=20_000, seed=3).events
             if e.message["type"] == "parameter"]
    assert {m["name"] for m in picks} == {p.name for p in info.parameters}
    assert any(isinstance(m["value"], list) for m in picks)
    session = with_engine(dash, engine).session()
    replies = [protocol.handle(session, msg) for msg in [e.message for e in trace.events] + picks]
    assert {r["type"] for r in replies} == {"update"}, [r for r in replies if r["type"] != "update"][:1]
    checker = Checker(dash.spec, {v.name: v.labels for v in dash.store.views}, cache_dir=str(tmp_path))
    result = checker.check([(0, i, r) for i, r in enumerate(replies)])
    assert result.checked == len(replies) and result.mismatches == 0, result.examples
