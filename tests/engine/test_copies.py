"""Clustered key copies (engine/copies.py): which dims get one, and that a session answers
the same whether they are built before it starts, arrive in the middle of a drag, or are
never built (a session without them reads the store's own key order; that one is checked
against DuckDB in test_session_oracle.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushfire import protocol
from brushfire.bench import workloads
from brushfire.capture.local import capture_table
from brushfire.dashboard import Dashboard
from brushfire.describe import describe_dashboard
from brushfire.engine.copies import choose_dims, key_dtype, row_bytes, then_dim
from brushfire.engine.parallel import Job, Pool
from brushfire.engine.session import Session
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard
from oracle import assert_view_matches

pytestmark = pytest.mark.slow  # numba compiles the kernels on a cold cache


def test_copies_are_chosen_in_order_while_they_fit():
    per_row = row_bytes(8, rows_kept=True)
    assert per_row == 21  # 8 keys, the shard row, a chunk's zone maps (32 B per 2,048 rows)
    assert choose_dims([3, 1, 2], 1000, per_row, 63_000) == [3, 1, 2]
    assert choose_dims([3, 1, 2], 1000, per_row, 62_999) == [3, 1]
    assert choose_dims([3, 1, 2], 1000, per_row, 0) == []
    assert choose_dims([3, 1, 2], 0, per_row, 0) == []  # no rows: nothing to copy
    assert row_bytes(8, rows_kept=False) == 17
    assert row_bytes(8, rows_kept=False, hist_slots=2048) == 19  # + 4 KB of histogram per chunk


def test_the_stores_of_a_process_share_one_cap(monkeypatch):
    """A server of many dashboards: each store's copies count against what is left."""
    import gc

    from brushfire.engine import copies as C

    monkeypatch.setenv(C.COPY_MEMORY_ENV, str(C._reserved[0] + 60_000))
    first, size = C.reserve([0, 1, 2], 1000, 20)
    assert (first, size) == ([0, 1, 2], 60_000)
    assert C.reserve([0, 1], 1000, 20) == ([], 0)  # the cap is taken
    copies = C.Copies([], [4, 4, 4], first, rows_kept=True, reserved=size)
    del copies
    gc.collect()  # the copies are gone: their bytes are free again
    second, size2 = C.reserve([0, 1], 1000, 20)
    assert second == [0, 1]
    C._release(size2)


class HeldPool(Pool):
    """A pool whose background jobs wait until the test releases them."""

    def __init__(self) -> None:
        super().__init__(0)
        self.held: list[Job] = []

    def background(self, job: Job) -> Job:
        self.held.append(job)
        return job

    def release(self) -> None:
        for job in self.held:
            self._finish_inline(job)
        self.held.clear()


@pytest.fixture(scope="module")
def rich(small_parquet, tmp_path_factory):
    """The server tests' dashboard (every kind of filter, a mean), over several unequal
    shards (the empty partition leaves none), captured without Spark."""
    from server.conftest import rich_spec

    spec = parse_dashboard(rich_spec(small_parquet))
    plan = plan_capture(spec)
    store = capture_table(plan, pq.read_table(small_parquet), tmp_path_factory.mktemp("copies"),
                          partitions=[1200, 0, 700, 1100])
    return Dashboard(spec, plan, store)


def comparable(reply: dict) -> dict:
    return {k: v for k, v in reply.items() if k not in ("ms", "methods")}


def test_copies_arriving_mid_drag_change_no_reply(rich):
    """A store captured before copies were stored builds them in memory, in the background."""
    pool = HeldPool()  # the store's first session: its pool builds the store's copies
    store = replace(rich.store, copies=None)  # as if its capture stored none
    with_copies = Session(store, rich.plan, pool=pool, prefer="incremental")
    info = workloads.DashboardInfo.from_description(describe_dashboard(rich))
    trace = workloads.human(info, events=400, seed=3)
    without = Session(rich.store, rich.plan, pool=Pool(0), prefer="incremental", copies=False)
    arrived = len(trace.events) // 2
    used = False
    for i, ev in enumerate(trace.events):
        if i == arrived:
            assert not any(with_copies.reads.copy(d) for d in with_copies._copies.dims)
            pool.release()  # the copies arrive while the user brushes
            assert with_copies._copies.dims
            assert all(with_copies.reads.copy(d) is not None for d in with_copies._copies.dims)
        a = protocol.handle(with_copies, ev.message)
        b = protocol.handle(without, ev.message)
        assert comparable(a) == comparable(b), (i, ev.message)
        used |= i >= arrived and "incremental" in str(a.get("methods"))
    assert used


@pytest.mark.parametrize("prefer", ["recompute", "complement", "incremental"])
def test_passes_over_copies_split_among_threads_change_no_reply(rich, monkeypatch, prefer):
    """Passes over clustered copies split among threads by their runs' rows (a thread per
    share of them, `Reads.split_runs`) answer what one thread does."""
    from brushfire.engine import reads

    monkeypatch.setattr(reads, "SMALL_WORK", 0.0)  # every pass on every thread
    threaded = Session(rich.store, rich.plan, pool=Pool(2), prefer=prefer)
    serial = Session(rich.store, rich.plan, pool=Pool(0), prefer=prefer)
    assert threaded.wait_for_copies(60) and serial.wait_for_copies(60)
    info = workloads.DashboardInfo.from_description(describe_dashboard(rich))
    for ev in workloads.human(info, events=300, seed=5).events:
        assert comparable(protocol.handle(threaded, ev.message)) == comparable(
            protocol.handle(serial, ev.message)), ev.message
    d = rich.store.layout.filters[0].dims[0]
    copy = threaded.reads.copy(d)
    nkeys = rich.store.layout.dims[d].nkeys
    for n in (2, 3):
        for kr in ([[0, nkeys // 3]], [[1, 2], [nkeys // 2, nkeys]]):
            split = threaded.reads.split_runs(copy, np.asarray(kr, np.int64), n)
            blocks = sorted((i, b) for units in split for i, b0, b1 in units for b in range(b0, b1))
            assert blocks == sorted((i, b) for i, nb in threaded._s.units for b in range(nb))


@pytest.fixture(scope="module")
def rich_fine(small_parquet, tmp_path_factory):
    """`rich` with fields of over 40 distinct values in fine keys (raw values decide the
    rows of a bound's bucket)."""
    from server.conftest import rich_spec

    spec = parse_dashboard(rich_spec(small_parquet))
    plan = plan_capture(spec)
    store = capture_table(plan, pq.read_table(small_parquet), tmp_path_factory.mktemp("copies-fine"),
                          CaptureConfig(block_rows=64, shard_rows=320, max_keys=40),
                          partitions=[1200, 0, 700, 1100])
    return Dashboard(spec, plan, store)


def test_a_fine_dims_copies_keep_each_keys_rows_in_raw_order(rich_fine):
    """So that the rows of a bound's bucket failing it are a prefix or a suffix of the
    bucket's run, found by a binary search (kernels._edge_runs): the replies are those of a
    session without copies."""
    with_copies = Session(rich_fine.store, rich_fine.plan, pool=Pool(0))
    assert with_copies.wait_for_copies(60)
    lay = rich_fine.store.layout
    fine = [d for d in with_copies._copies.dims if lay.dims[d].kind == "fine"]
    assert fine
    for d in fine:
        assert with_copies._copies.cdim(d) == d
        for i, copy in enumerate(with_copies._copies.of(d)):
            raw = rich_fine.store.raw_values(i, d)[copy.rows]
            for k in range(lay.dims[d].nkeys):
                assert (np.diff(raw[copy.starts[k]:copy.starts[k + 1]]) >= 0).all()
    without = Session(rich_fine.store, rich_fine.plan, pool=Pool(0), copies=False)
    info = workloads.DashboardInfo.from_description(describe_dashboard(rich_fine))
    for ev in workloads.human(info, events=400, seed=11).events:
        assert comparable(protocol.handle(with_copies, ev.message)) == comparable(
            protocol.handle(without, ev.message)), ev.message


def test_a_copy_keeps_its_keys_in_a_byte_where_every_kept_dim_has_at_most_255(rich_fine, rich):
    """Exact: the same keys, one byte each instead of two; the replies are those of a
    session without copies (rich_fine's dims have at most 40 keys; rich's some more)."""
    lay = rich_fine.store.layout
    assert max(d.nkeys for d in lay.dims[:lay.row_dims]) <= 255
    assert key_dtype(lay) == np.uint8
    assert key_dtype(rich.store.layout) == (
        np.uint8 if max(d.nkeys for d in rich.store.layout.dims[:rich.store.layout.row_dims]) <= 255
        else np.uint16)
    with_copies = Session(rich_fine.store, rich_fine.plan, pool=Pool(0), prefer="incremental")
    assert with_copies.wait_for_copies(60)
    for d in with_copies._copies.dims:
        for shard, copy in zip(rich_fine.store.shards, with_copies._copies.of(d), strict=True):
            assert copy.keys.dtype == np.uint8
            assert copy.keys.nbytes == shard.arrays[0].nbytes // 2
            rows = copy.rows if len(copy.rows) else np.argsort(shard.arrays[0][d], kind="stable")
            assert np.array_equal(copy.keys, shard.arrays[0][:, rows])
    assert row_bytes(8, rows_kept=True, key_bytes=1) == 13
    without = Session(rich_fine.store, rich_fine.plan, pool=Pool(0), prefer="incremental", copies=False)
    info = workloads.DashboardInfo.from_description(describe_dashboard(rich_fine))
    for ev in workloads.human(info, events=300, seed=13).events:
        assert comparable(protocol.handle(with_copies, ev.message)) == comparable(
            protocol.handle(without, ev.message)), ev.message


# --- copies whose key runs are narrowed by another filter's keys ------------------------------


def narrowed_spec(path, fine: bool) -> dict:
    """Interval views of a, b and c (9, 9 and 8 keys: runs of hundreds of rows per key in
    a shard, so each copy's runs, ordered by the next filter's keys, are narrowed), sliders
    on their fields (filters every view needs), a set filter and measures; `fine`: also a
    view of 300 bars (the copies' keys in two bytes)."""
    views = [{"name": f"h{f}", "type": "histogram", "field": f, "bin": {"step": 1, "extent": [0, 8]}}
             for f in "abc"] + [
        {"name": "g", "type": "categorical", "field": "g", "top": 3},
        {"name": "mean_m", "type": "histogram", "field": "a", "brush": "none",
         "bin": {"step": 2, "extent": [0, 8]}, "aggregate": {"op": "mean", "field": "m"}},
        {"name": "sum_m", "type": "categorical", "field": "g", "top": 4, "brush": "none",
         "aggregate": {"op": "sum", "field": "m"}}]
    if fine:
        views.append({"name": "hu", "type": "histogram", "field": "u", "brush": "none",
                      "bin": {"step": 1, "extent": [0, 300]}})
    return {"name": "narrowed", "source": {"path": str(path)}, "views": views,
            "interactions": {"crossfilter": [{"views": [v["name"] for v in views]}],
                             "parameters": [{"name": f"p{f}", "field": f, "widget": "slider", "op": op}
                                            for f, op in (("a", "gte"), ("b", "lte"), ("c", "between"))]}}


def narrowed_rows(n: int, seed: int, fine: bool):
    """a, b, c of 0..8 (nulls), b near a; `fine`: c in hundredths (fine keys: a bound's
    bucket split by raw values) and u of 300 values."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    a = rng.integers(0, 9, n)
    b = np.clip(a + rng.integers(-2, 3, n), 0, 8)
    c = (rng.random(n) * 8).round(2) if fine else rng.integers(0, 8, n)

    def nulls(x, p=0.03):
        return pa.array(x, mask=rng.random(n) < p)

    return pa.table({"a": nulls(a), "b": nulls(b), "c": nulls(c),
                     "g": pa.array(np.array(["u", "v", "w", "x", "y"])[rng.integers(0, 5, n)]),
                     "m": nulls(rng.integers(-5, 20, n).astype(float), 0.05),
                     "u": pa.array(rng.integers(0, 300, n))})


@pytest.fixture(scope="module", params=["dense", "fine"])
def narrowed(request, tmp_path_factory):
    """`narrowed_spec` over 4,000 rows in shards of 2,600, none and 1,400 rows, and its
    DuckDB oracle: each interval dim's copy orders a key's rows by the next filter's keys
    (copies.then_dim), a's by b's, b's by c's (fine ones with `fine`)."""
    from oracle import Oracle

    fine = request.param == "fine"
    path = tmp_path_factory.mktemp("narrowed") / "rows.parquet"
    pq.write_table(narrowed_rows(4000, 3, fine), path)
    spec = parse_dashboard(narrowed_spec(path, fine))
    plan = plan_capture(spec)
    store = capture_table(plan, pq.read_table(path), tmp_path_factory.mktemp("narrowed-cache"),
                          CaptureConfig(block_rows=256, shard_rows=4096, max_keys=40),
                          partitions=[2600, 0, 1400])
    lay = store.layout
    a, b, c = (lay.filters[i].dims[0] for i in range(3))
    assert [then_dim(lay, a), then_dim(lay, b)] == [b, c]
    assert (lay.dims[c].kind == "fine") == fine
    assert key_dtype(lay) == (np.uint16 if fine else np.uint8)
    return Dashboard(spec, plan, store), Oracle(spec)


BOUND = st.one_of(st.none(), st.integers(-1, 9), st.floats(-1, 9).map(lambda x: round(x, 1)))
NARROWED_ACTIONS = st.one_of(
    st.tuples(st.just("brush"), st.sampled_from(["ha", "hb", "hc"]), st.tuples(BOUND, BOUND)),
    st.tuples(st.just("param"), st.sampled_from(["pa", "pb"]), st.one_of(st.none(), st.integers(-1, 9))),
    st.tuples(st.just("param"), st.just("pc"),
              st.one_of(st.none(), st.lists(st.integers(-1, 9), min_size=2, max_size=2).map(sorted))),
    st.tuples(st.just("select"), st.just("g"), st.lists(st.integers(0, 3), max_size=2)),
    st.tuples(st.just("clear"), st.sampled_from(["ha", "hb", "hc", "g"]), st.none()))


def play(session, oracle, action) -> None:
    kind, name, arg = action
    if kind == "brush":
        session.brush(name, arg)
        oracle.brush(name, arg)
    elif kind == "param":
        session.set_parameter(name, arg)
        oracle.set_parameter(name, arg)
    elif kind == "select":  # bars by position ((other) last)
        labels = session.view(name).labels
        session.select(name, [labels[i] for i in arg])
        oracle.select(name, [labels[i] for i in arg])
    else:
        session.clear(name)
        oracle.clear(name)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(prefer=st.sampled_from([None, "incremental", "recompute", "complement", "mixed"]),
       actions=st.lists(NARROWED_ACTIONS, min_size=1, max_size=8))
def test_copies_narrowed_by_another_filters_keys_equal_sql(narrowed, prefer, actions):
    """Passes over copies whose key runs are read only where a filter on their `then` dim
    passes (kernels._narrowed: runs of NARROW_ROWS rows or more searched, shorter ones read
    whole; sub-runs under a chunk gathered) against DuckDB: every view's counts and values,
    and the selection's size. (The session oracle's stores, of 2,048-row shards and many
    keys per dim, seldom hold such runs.)"""
    dash, oracle = narrowed
    session = Session(dash.store, dash.plan, pool=Pool(0), prefer=prefer)
    assert session.wait_for_copies(60)
    oracle.clear()
    for action in actions:
        play(session, oracle, action)
        assert session.count_selected() == oracle.selected(), action
        for v in dash.spec.views:
            assert_view_matches(session.view(v.name), oracle.view(v.name), v.aggregate.op, v.type, action, oracle)


def test_narrowed_copies_are_read_by_the_property_test_above(narrowed, monkeypatch):
    """The moves above reach runs of NARROW_ROWS rows or more that a filter on their copy's
    `then` dim narrows (kernels._narrowing gives keys), incremental and recomputed."""
    from brushfire.engine import kernels as K

    dash, oracle = narrowed
    reached = set()
    run = K.clustered_units

    def counted(shards, copies, units, d, cdim, edim, L, Q, Qold, kr, signs, mf, views, need, *out):
        needed = np.bitwise_and.reduce(need[views]) & np.bitwise_or.reduce(need[views])
        lo, hi, _ = K._narrowing(L, Q, edim, mf, needed)
        runs = [np.diff(copies[i][2])[max(a, 0):b + 1] for i in units[:, 0] for a, b in kr]
        if lo <= hi and lo >= 0 and max(r.max(initial=0) for r in runs) >= K.NARROW_ROWS:
            reached.add(mf >= 0)
        run(shards, copies, units, d, cdim, edim, L, Q, Qold, kr, signs, mf, views, need, *out)

    monkeypatch.setattr(K, "clustered_units", counted)
    for prefer in ("incremental", "recompute"):
        session = Session(dash.store, dash.plan, pool=Pool(0), prefer=prefer)
        assert session.wait_for_copies(60)
        for action in [("param", "pb", 5), ("brush", "ha", (1, 6)), ("brush", "ha", (2, 7))]:
            play(session, oracle, action)
    assert reached == {True, False}
