"""Clustered key copies (engine/copies.py): which dims get one, and that a session answers
the same whether they are built before it starts, arrive in the middle of a drag, or are
never built (a session without them reads the store's own key order; that one is checked
against DuckDB in test_session_oracle.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow.parquet as pq
import pytest

from brushfire import protocol
from brushfire.bench import workloads
from brushfire.capture.local import capture_table
from brushfire.dashboard import Dashboard
from brushfire.describe import describe_dashboard
from brushfire.engine.copies import choose_dims, row_bytes
from brushfire.engine.parallel import Job, Pool
from brushfire.engine.session import Session
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard

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
    and empty shards, captured without Spark."""
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
    from brushfire.engine.copies import key_dtype

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
