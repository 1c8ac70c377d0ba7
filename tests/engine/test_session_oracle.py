"""The engine against DuckDB: random interaction sequences on awkward random data.

Each spec variant is captured once per store layout on a real local Spark session:
- "dense": few blocks, every brushed field dense (each value its own key);
- "fine": 64-row blocks, fields with more than 40 distinct values in bucketed keys with
  raw values, coarse cube blocks, and Spark splitting the source into many partitions of
  unequal size, some empty (so the store has many shards, some with no rows).
Hypothesis then plays random sequences of brushes, selects, rect brushes, parameter
changes and clears — with the planner's own choices, and with each method forced
whenever it applies (incremental, recompute, scan, conditional cubes built on every
update) — and after every step each view (counts, sums, means, medians, quantiles,
min, max, distinct counts, and its caveats), the selected rows (details), backward lineage
of bars, forward lineage and linked highlighting must equal DuckDB's SQL.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushfire import Dashboard
from brushfire.engine.parallel import Pool
from brushfire.engine.session import Session
from brushfire.errors import InteractionError
from brushfire.lineage.layout import CaptureConfig
from brushfire.spec import parse_dashboard
from oracle import OTHER, Oracle, _norm_row, assert_view_matches

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DETAIL_COLUMNS = ["x", "k", "cat", "dest", "t", "m"]


def spec_a(path) -> dict:
    return {
        "name": "variant_a",
        "source": {"path": str(path)},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
            {"name": "hk", "type": "histogram", "field": "k",
             "bin": {"step": 7, "extent": [-10, 100], "clamp": True}},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 5},
            {"name": "week", "type": "temporal", "field": "t", "unit": "week"},
            {"name": "heat", "type": "heatmap", "x": {"field": "x", "bin": {"step": 25, "extent": [0, 100]}},
             "y": {"field": "k", "bin": {"step": 30, "extent": [0, 120]}}},
            {"name": "mean_m", "type": "histogram", "field": "k", "brush": "none",
             "bin": {"step": 20, "extent": [-20, 120]}, "aggregate": {"op": "mean", "field": "m"}},
            {"name": "sum_m", "type": "categorical", "field": "dest", "top": 3,
             "aggregate": {"op": "sum", "field": "m"}},
            # order statistics: x has nulls, NaN and ties; bars without rows or measures
            {"name": "med_x", "type": "histogram", "field": "k", "brush": "none",
             "bin": {"step": 20, "extent": [-20, 120], "clamp": True},
             "aggregate": {"op": "median", "field": "x"}},
            {"name": "q_m", "type": "categorical", "field": "dest", "top": 3, "other": False,
             "aggregate": {"op": "quantile", "field": "m", "p": 0.9}},
            {"name": "min_t", "type": "histogram", "field": "x", "brush": "none",
             "bin": {"step": 25, "extent": [0, 100]}, "aggregate": {"op": "min", "field": "t"}},
            {"name": "distinct_cat", "type": "temporal", "field": "t", "unit": "month", "brush": "none",
             "aggregate": {"op": "distinct", "field": "cat"}},
            {"name": "max_k", "type": "heatmap", "brush": "none",
             "x": {"field": "x", "bin": {"step": 25, "extent": [0, 100]}},
             "y": {"field": "m", "bin": {"step": 100, "extent": [-100, 300]}},
             "aggregate": {"op": "max", "field": "k"}},
        ],
        "interactions": {
            "crossfilter": [{"views": ["hx", "hk", "cat", "week", "heat", "mean_m", "med_x", "q_m",
                                       "min_t", "distinct_cat", "max_k"]},
                            {"views": ["sum_m", "hk"]}],
            "highlight": [{"source": "cat", "targets": ["hx", "week", "med_x"]}],
            "details": {"columns": DETAIL_COLUMNS, "page_size": 100},
            "parameters": [{"name": "pdest", "field": "dest"},
                           {"name": "kmax", "field": "k", "widget": "slider", "op": "lte"}],
        },
    }


def spec_b(path) -> dict:
    """Derived columns (x2: a float32 column of thirds, which the fine layout keeps as
    offsets of their bits: lineage/lattice.py), a static filter, calendar months, no
    'other' bar, a gt slider."""
    return {
        "name": "variant_b",
        "source": {"path": str(path), "columns": {"x2": "cast(x * 2 / 3.0D + 1 as float)"},
                   "filters": ["k IS NULL OR k > -15"]},
        "views": [
            {"name": "hx2", "type": "histogram", "field": "x2",
             "bin": {"step": 15, "extent": [-20, 220], "clamp": True}},
            {"name": "month", "type": "temporal", "field": "t", "unit": "month"},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 2, "other": False},
            {"name": "hour", "type": "temporal", "field": "t", "unit": "hour", "brush": "none"},
            {"name": "sum_k", "type": "histogram", "field": "m", "bin": {"step": 50, "extent": [-50, 300]},
             "aggregate": {"op": "sum", "field": "k"}},
            {"name": "qd_x2", "type": "histogram", "field": "m", "brush": "none",
             "bin": {"step": 70, "extent": [-50, 300]},
             "aggregate": {"op": "quantile", "field": "x2", "p": 0.25, "method": "discrete"}},
            {"name": "med_k", "type": "categorical", "field": "cat", "top": 4, "brush": "none",
             "aggregate": {"op": "median", "field": "k"}},
            {"name": "max_t", "type": "temporal", "field": "t", "unit": "month", "brush": "none",
             "aggregate": {"op": "max", "field": "t"}},
        ],
        "interactions": {
            "crossfilter": [{"views": ["hx2", "month", "cat", "hour", "sum_k", "qd_x2", "med_k",
                                       "max_t"]}],
            "highlight": [{"source": "month", "targets": ["cat", "hx2", "med_k"]}],
            "details": {"columns": DETAIL_COLUMNS + ["x2"], "page_size": 7},
            "parameters": [{"name": "mmin", "field": "m", "widget": "slider", "op": "gt"}],
        },
    }


LAYOUTS = {  # dense: order statistics of few values read from keys, of many gathered from rows
    "dense": (CaptureConfig(block_rows=1024, shard_rows=2048, max_cells=4000), None),
    "fine": (CaptureConfig(block_rows=64, shard_rows=320, max_keys=40, max_cube_blocks=6), "3k"),
}


@pytest.fixture(scope="module", params=[(a, b) for a in (spec_a, spec_b) for b in LAYOUTS],
                ids=lambda p: f"{p[0].__name__[-1]}-{p[1]}")
def captured(request, spark, small_parquet, tmp_path_factory):
    make_spec, layout = request.param
    config, split = LAYOUTS[layout]
    spec = parse_dashboard(make_spec(small_parquet))
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key)
    if split:  # many small input splits: unequal shards (the splits without rows leave none)
        spark.conf.set(key, split)
    try:
        dash = Dashboard.open(spec, spark=spark, cache_dir=tmp_path_factory.mktemp("cache"),
                              config=config)
    finally:
        spark.conf.set(key, before)
    if split:
        sizes = [s.n_rows for s in dash.store.shards]
        assert len(sizes) > 3 and 0 not in sizes and len(set(sizes)) > 1, sizes
    return dash, Oracle(spec, spark)


# the planner's choice, or a method whenever it applies; the index methods read rows from
# clustered key copies, or (", store order") through the store's own key order
POLICIES = {None: 150, "incremental": 40, "incremental, store order": 20, "recompute": 40, "mixed": 40,
            "complement": 40, "complement, store order": 20,
            "recompute, store order": 20, "scan": 30, "tile": 40}


@pytest.fixture(params=list(POLICIES), ids=lambda p: p or "planner")
def prefer(request):
    return request.param


@pytest.fixture(autouse=True)
def value_ranges_always_read(monkeypatch):
    """Fine edge buckets decided by their values wherever they can be (the engine reads a
    bucket's values only where that spares rows worth more than the reads: here, buckets
    of a few dozen rows, it never would), so that those decisions meet SQL too; a bucket
    left unread is tested row by row, as every bucket was before such decisions."""
    monkeypatch.setattr("brushfire.engine.costs.RANGE_READ", 0.0)


@pytest.fixture(autouse=True)
def checkpoints_always_weighed(monkeypatch):
    """Every move weighs starting from the views as they were when a drag of its filter
    began (multi.Checkpoint), and does wherever fewer rows changed since: the engine weighs
    it only for moves of more than 65,536 changed rows (more than these stores hold), and
    takes it where it spares a quarter of them, so that SQL meets the updates started
    there too."""
    monkeypatch.setattr("brushfire.engine.multi.CHECKPOINT_ROWS", 0)
    monkeypatch.setattr("brushfire.engine.multi.CHECKPOINT_GAIN", 1.0)


def new_session(dash, policy):
    """A session whose planner takes the policy's method whenever it applies; background
    work (clustered copies, conditional cubes) runs inline so it is in place for the next
    update."""
    method, _, order = (policy or "").partition(", ")
    session = Session(dash.store, dash.plan, pool=Pool(0), prefer=method or None,
                      copies=not order)
    if not order:  # every filter dim has its copy (inline, or by an earlier session's pool)
        assert session.wait_for_copies(60)
        dims = {d for f in dash.store.layout.filters for d in f.dims}
        assert all(session.reads.copy(d) is not None for d in dims)
    return session


# --- random interactions ------------------------------------------------------------

NUM = st.one_of(st.none(), st.integers(-40, 140), st.floats(-40, 140).map(lambda x: round(x, 1)),
                st.sampled_from([-1e12, 1e12, -math.inf, math.inf, 0.0, 50.0]))
TIME = st.one_of(  # None, month starts, odd instants, and instants outside the data
    st.none(),
    st.integers(1, 5).map(lambda mo: f"2021-{mo:02d}-01T00:00:00"),
    st.sampled_from(["2020-06-01T00:00:00", "2021-01-15T12:30:00", "2021-02-03T00:00:00",
                     "2021-03-31T23:59:00", "2022-01-01T00:00:00"]))
CATS = st.lists(st.sampled_from([f"c{i:02d}" for i in range(32)] + [OTHER, "zzz"]), max_size=4)


def actions_for(spec) -> st.SearchStrategy:
    choices = []
    for v in spec.views:
        brush = v.brush or {"histogram": "interval", "temporal": "interval",
                            "categorical": "points", "heatmap": "rect"}[v.type]
        in_group = any(v.name in g.views for g in spec.interactions.crossfilter)
        if brush == "none" or not in_group:
            continue
        if brush == "interval":
            bound = TIME if v.type == "temporal" else NUM
            choices.append(st.tuples(st.just("brush"), st.just(v.name), st.tuples(bound, bound)))
        elif brush == "points":
            values = CATS if v.field == "cat" else st.lists(
                st.sampled_from(["AAA", "BBB", "CCC", "DDD", "EEE", OTHER]), max_size=3)
            choices.append(st.tuples(st.just("select"), st.just(v.name), values))
        else:
            choices.append(st.tuples(st.just("rect"), st.just(v.name),
                                     st.tuples(st.tuples(NUM, NUM), st.tuples(NUM, NUM))))
        choices.append(st.tuples(st.just("clear"), st.just(v.name), st.none()))
    for p in spec.interactions.parameters:
        value = st.sampled_from(["AAA", "CCC", "EEE", "nope", None]) if p.widget == "dropdown" \
            else st.one_of(st.none(), st.integers(-60, 320), st.floats(-60, 320))
        choices.append(st.tuples(st.just("param"), st.just(p.name), value))
    choices.append(st.tuples(st.just("clear_all"), st.none(), st.none()))
    return st.one_of(*choices)


def invalid(session, action) -> bool:
    """Is the action's value unknown to the dashboard (an error, the state unchanged)?"""
    kind, name, arg = action
    if not isinstance(session, Session):
        return False
    if kind == "select":
        return any(x not in session.view(name).labels for x in arg)
    if kind == "param" and arg is not None:
        p = session.plan.dashboard.parameter(name)
        if p.widget == "dropdown":
            return arg not in session.store.parameter_domain(name)[1]
    return False


def apply(session, oracle, action) -> None:
    kind, name, arg = action
    if invalid(session, action):
        before = (session.filters, {n: v.counts for n, v in session.views().items()})
        with pytest.raises(InteractionError):
            {"select": lambda: session.select(name, arg),
             "param": lambda: session.set_parameter(name, arg)}[kind]()
        after = (session.filters, {n: v.counts for n, v in session.views().items()})
        assert before == after
        return
    if kind == "brush":
        session.brush(name, arg)
        oracle.brush(name, arg)
    elif kind == "rect":
        session.brush(name, arg[0], y=arg[1])
        oracle.brush(name, arg[0], y=arg[1])
    elif kind == "select":
        session.select(name, arg)
        oracle.select(name, arg)
    elif kind == "param":
        session.set_parameter(name, arg)
        oracle.set_parameter(name, arg)
    elif kind == "clear":
        session.clear(name)
        oracle.clear(name)
    else:
        session.clear()
        oracle.clear()


# --- comparisons ----------------------------------------------------------------------


def check_all(dash, oracle, session, context) -> None:
    # the selection's size: kept by the same updates as the views (or summed from one)
    assert session.count_selected() == oracle.selected(), (context, "selected")
    for v in dash.spec.views:
        vd = session.view(v.name)
        assert_view_matches(vd, oracle.view(v.name), v.aggregate.op, v.type, context, oracle)
        # caveats: the rows each view does not show (or clamps, or folds), and why
        assert vd.caveats == oracle.caveats(v.name), (context, v.name, vd.caveats)


def test_views_equal_sql_after_every_interaction(captured, prefer):
    dash, oracle = captured

    @settings(max_examples=POLICIES[prefer], deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        session = new_session(dash, prefer)
        oracle.clear()
        actions = data.draw(st.lists(actions_for(dash.spec), max_size=10))
        for step, action in enumerate(actions):
            apply(session, oracle, action)
            check_all(dash, oracle, session, (step, action))

    run()


def test_dragging_among_fixed_filters(captured, prefer):
    """A brush dragged in many small steps while other filters stay put (where conditional
    cubes are built and used), including empty, zero-width and inverted positions."""
    dash, oracle = captured
    brushes = [v for v in dash.spec.views if (v.brush or "interval") == "interval"
               and v.type == "histogram" and dash.plan.has_filter(v.name)]
    if len(brushes) < 2:
        pytest.skip("needs two interval brushes")
    moving, fixed = brushes[0], brushes[1]

    @settings(max_examples=max(10, POLICIES[prefer] // 4), deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(start=st.floats(-20, 100), width=st.floats(-30, 60), steps=st.lists(
        st.floats(-15, 15), min_size=3, max_size=12), other=st.tuples(NUM, NUM))
    def run(start, width, steps, other):
        session = new_session(dash, prefer)
        oracle.clear()
        for act in [("brush", fixed.name, other), ("brush", moving.name, (start, start))]:
            apply(session, oracle, act)
        lo, hi = start, start + width
        for k, dx in enumerate(steps):
            lo, hi = lo + dx, hi + dx * (k % 2)
            apply(session, oracle, ("brush", moving.name, (round(lo, 2), round(hi, 2))))
            check_all(dash, oracle, session, ("drag", k, lo, hi))

    run()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_lineage_queries_equal_sql(captured, data):
    dash, oracle = captured
    session = new_session(dash, None)
    oracle.clear()
    for action in data.draw(st.lists(actions_for(dash.spec), max_size=6)):
        apply(session, oracle, action)
    columns = dash.spec.interactions.details.columns
    # backward(current selection): every page, together, is exactly the SQL result
    got, page = [], 0
    while True:
        table = session.details(page=page)
        got += [_norm_row(tuple(r.values())) for r in table.select(columns).to_pylist()]
        if table.num_rows < dash.spec.interactions.details.page_size:
            break
        page += 1
    assert sorted(got, key=repr) == oracle.rows(columns, oracle.where(None))
    assert session.count_selected() == len(got)
    # backward(view, bars): the rows behind some bars of a view, as that view shows them
    v = data.draw(st.sampled_from(dash.spec.views))
    nbars = len(session.view(v.name).labels)
    bars = data.draw(st.lists(st.integers(0, nbars - 1), max_size=3, unique=True))
    rids = session.backward_rids(v.name, bars)
    labels = session.view(v.name).labels
    keys = [engine_key(labels[b], b, v.type) for b in bars]
    in_bars = f"({oracle.bar_sql(v)}) IN ({', '.join(_sql_key(k) for k in keys)})" if keys else "FALSE"
    expected = oracle.rows(columns, f"({oracle.where(v.name)}) AND {in_bars}")
    got = sorted((_norm_row(tuple(r.values())) for r in
                  dash.store.take(rids, columns).to_pylist()), key=repr)
    assert got == expected
    # forward(rids): each row's bar in every view is the bar SQL puts it in
    fwd = session.forward(rids[:5])
    for w in dash.spec.views:
        wl = session.view(w.name).labels
        got_keys = {engine_key(wl[b], b, w.type) for b in fwd[w.name]}
        if len(rids[:5]):
            rid_list = ", ".join(str(int(r)) for r in rids[:5])
            sql = (f"SELECT DISTINCT {oracle.bar_sql(w)} FROM (SELECT *, row_number() OVER () - 1 "
                   f"AS rid FROM src) WHERE rid IN ({rid_list})")
            want = {r[0] for r in oracle.con.execute(sql).fetchall()} - {None}
            assert got_keys == want, (w.name, got_keys, want)
    # highlight: the share of each target bar that comes from the selected source bars
    for h in dash.spec.interactions.highlight:
        src = dash.spec.view(h.source)
        sl = session.view(h.source).labels
        hb = data.draw(st.lists(st.integers(0, len(sl) - 1), max_size=3, unique=True))
        result = session.highlight(h.source, hb)
        hk = [engine_key(sl[b], b, src.type) for b in hb]
        cond = f"({oracle.bar_sql(src)}) IN ({', '.join(_sql_key(k) for k in hk)})" if hk else "FALSE"
        for t in h.targets:
            tv = dash.spec.view(t)
            assert_view_matches(result[t], oracle.view(t, extra=cond), tv.aggregate.op, tv.type,
                                ("highlight", h.source, hb, t), oracle)


def engine_key(label, index: int, vtype: str):
    if vtype == "temporal":
        return label.replace("+00:00", "")
    if vtype == "categorical":
        return label
    return index


def _sql_key(k) -> str:
    return "'" + k.replace("'", "''") + "'" if isinstance(k, str) else str(k)


def test_prepared_conditional_cubes_answer_a_jump(captured):
    """After a pause the session prepares conditional cubes of the other brushes given the
    fixed filters; a brush jumping from nothing to half its view is then answered from
    them (and equals SQL), and a change of the fixed filters makes them stale."""
    dash, oracle = captured
    brushes = [v for v in dash.spec.views if v.type == "histogram" and dash.plan.has_filter(v.name)
               and (v.brush or "interval") == "interval"]
    if len(brushes) < 2:
        pytest.skip("needs two interval brushes")
    fixed, jumper = brushes[0], brushes[1]
    session = new_session(dash, "tile")  # tiles win whenever they apply (3,000 rows: a scan is cheaper)
    oracle.clear()
    lo, hi = fixed.bin.extent
    apply(session, oracle, ("brush", fixed.name, (lo + (hi - lo) / 5, hi - (hi - lo) / 5)))
    session._speculate()  # what the pool's timer does after a pause (inline with Pool(0))
    assert jumper.name in session._tiles
    lo, hi = jumper.bin.extent
    action = ("brush", jumper.name, (lo + (hi - lo) / 4, hi - (hi - lo) / 4))
    methods = session.brush(jumper.name, action[2]).methods  # the first brush: a jump
    oracle.brush(jumper.name, action[2])
    check_all(dash, oracle, session, action)
    assert "conditional cube" in methods.values(), methods
    apply(session, oracle, ("brush", fixed.name, (lo, hi)))
    assert jumper.name not in session._tiles  # its fixed filter moved


@pytest.mark.parametrize("policy", [None, "incremental", "mixed"])
def test_a_brush_released_after_a_leftward_drag_starts_from_the_views_before_it(captured, policy,
                                                                               monkeypatch):
    """A brush drawn leftwards is inverted (it selects nothing) until it is released in
    order; the release then changes far fewer rows from the views as they were before the
    drag (the brush off) than from the views as they are (every row it selects). The
    update starts there, and equals SQL, as do the moves after it and a clear."""
    from brushfire.engine import multi

    dash, oracle = captured
    brushes = [v for v in dash.spec.views if v.type == "histogram" and dash.plan.has_filter(v.name)
               and (v.brush or "interval") == "interval"]
    if len(brushes) < 2:
        pytest.skip("needs two interval brushes")
    fixed, moving = brushes[0], brushes[1]
    restored = []
    restore = multi.Checkpoint.restore
    monkeypatch.setattr(multi.Checkpoint, "restore",
                        lambda cp, s, views: (restored.append(cp.selection), restore(cp, s, views)))
    session = new_session(dash, policy)
    oracle.clear()
    lo, hi = fixed.bin.extent
    apply(session, oracle, ("brush", fixed.name, (lo + (hi - lo) / 5, hi - (hi - lo) / 5)))
    lo, hi = moving.bin.extent
    a, b = lo + (hi - lo) / 20, hi - (hi - lo) / 20  # nearly all of the view
    for k, act in enumerate([("brush", moving.name, (b, b)), ("brush", moving.name, (b, (a + b) / 2)),
                             ("brush", moving.name, (b, a)), ("brush", moving.name, (a, b)),
                             ("brush", moving.name, (a, b - (b - a) / 3)), ("clear", moving.name, None)]):
        apply(session, oracle, act)
        check_all(dash, oracle, session, (k, act))
    assert restored and restored[0] is None, restored  # from the brush off, before the drag

