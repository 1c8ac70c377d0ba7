"""Spec conveniences against DuckDB (issue 17): `maxbins` bins chosen from the data,
categorical views sorted by name, calendar parts, `between` and multi-select parameters.

Each dashboard is captured without Spark (capture/local.py) over awkward random rows in
unequal partitions, then random interactions are played on an engine session and on the
oracle (tests/oracle.py: the spec's semantics as SQL, run by DuckDB); after every step
each view, its caveats and the selected rows must be equal. The oracle reads the opened
dashboard's spec (`Dashboard.spec`), in which a `maxbins` bin has the step and extent
capture chose: which is checked apart, from DuckDB's min and max of the field.
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

from brushfire.capture import bins
from brushfire.capture.local import capture_table
from brushfire.dashboard import Dashboard
from brushfire.lineage import store as lstore
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import explain, plan_capture
from brushfire.spec import parse_dashboard
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
            {"name": "mean_k", "type": "histogram", "field": "x", "brush": "none",
             "bin": {"maxbins": 7}, "aggregate": {"op": "mean", "field": "k"}},
            {"name": "heat", "type": "heatmap", "brush": "none",
             "x": {"field": "k", "bin": {"maxbins": 5}},
             "y": {"field": "x", "bin": {"step": 25, "extent": [-50, 100], "clamp": True}}},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 5},
            {"name": "by_name", "type": "categorical", "field": "cat", "top": 5, "sort": "name"},
            {"name": "all_by_name", "type": "categorical", "field": "cat", "sort": "name",
             "other": False, "aggregate": {"op": "sum", "field": "k"}},
        ],
        "interactions": {
            "crossfilter": [{"views": ["hx", "hk", "mean_k", "heat", "cat", "by_name", "all_by_name"]}],
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
    assert dash.plan.dashboard is dash.spec
    for name, maxbins in (("hx", 12), ("hk", 30), ("mean_k", 7)):
        b = dash.spec.view(name).bin
        assert 0 < b.count <= maxbins
        assert len(dash.session().view(name).labels) == b.count
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


def test_sort_orders_the_bars_by_count_or_name(captured):
    _, dash, oracle = captured
    session = dash.session()
    labels = {v.name: session.view(v.name).labels for v in dash.spec.views if v.type == "categorical"}
    # the same top 5 by count, in the order DuckDB's ORDER BY gives them; '(other)' last
    assert labels["cat"] == oracle.top["cat"] + ["(other)"]
    assert labels["by_name"] == oracle.top["by_name"] + ["(other)"]
    assert sorted(labels["cat"][:-1]) == labels["by_name"][:-1] != labels["cat"][:-1]
    counts = dict(oracle.con.execute("SELECT cat, count(*) FROM src GROUP BY 1").fetchall())
    assert [counts[x] for x in labels["cat"][:-1]] == sorted((counts[x] for x in labels["cat"][:-1]),
                                                             reverse=True)
    assert labels["all_by_name"] == sorted(x for x in counts if x is not None)  # no '(other)'


NUM = st.one_of(st.none(), st.floats(-120, 1300).map(lambda x: round(x, 1)),
                st.sampled_from([-math.inf, math.inf, 0.0, 50.0, 100.0]))
NAMES = st.lists(st.sampled_from(["delta", "Alpha", "bravo", "charlie", "echo", "(other)"]),
                 max_size=3)


def actions(dash) -> st.SearchStrategy:
    out = [st.tuples(st.just("clear_all"), st.none())]
    for v in dash.spec.views:
        if not dash.plan.has_filter(v.name):
            continue
        if v.type == "categorical":
            out.append(st.tuples(st.just(("select", v.name)), NAMES))
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
    if kind == "select":
        arg = [x for x in arg if x in session.view(name).labels]
    getattr(session, kind)(name, *([] if arg is None else [arg]))
    getattr(oracle, kind)(name, *([] if arg is None else [arg]))


def bars(vd, vtype: str) -> dict:
    return {(label if vtype == "categorical" else i): (n, value)
            for i, (label, n, value) in enumerate(zip(vd.labels, vd.counts, vd.values, strict=True)) if n}


def check(dash, oracle, session, context) -> None:
    for v in dash.spec.views:
        vd = session.view(v.name)
        got, want = bars(vd, v.type), oracle.view(v.name)
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
        session = dash.session()
        oracle.clear()
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
    a, b = on_spark.session(), dash.session()
    for v in written.views:
        assert a.view(v.name).counts == b.view(v.name).counts, v.name
