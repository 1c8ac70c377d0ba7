"""Per-session crossfilter state over a shared, read-only, sharded lineage store.

Semantics: each view aggregates the rows that pass every active filter that applies to
it, except its own brush. Interval brushes select `lo <= x <= hi` on raw values (lo > hi
selects nothing); points select bars of a categorical view ('(other)' is one); rect
brushes select x and y intervals; parameters compare their field with a value. Rows
whose value is null or NaN never pass a brush or parameter.

An update recomputes the views the changed filter applies to, each by the cheapest exact
method (engine/planner.py): its base result, a group-by push-down cube, a conditional
cube of the moving filter (built in the background while it is dragged or the user
pauses, never on the reply path), only the rows whose membership changed, the rows of
its most selective filter, or a sequential scan — every one bounded by a parallel pass
over the compact per-row keys. Rows reached through a filter dim's keys are read from
its clustered copy once built (engine/copies.py), else through the store's key order. A session keeps no per-row state: a filter's state is a
key range or key set per dim (engine/state.py).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from brushfire import values as V
from brushfire.engine import kernels as K
from brushfire.engine import memory, ordering, parallel, stats
from brushfire.engine import planner as P
from brushfire.engine.api import SessionAPI, Update, ViewData, details_request, find_filter
from brushfire.engine.copies import Copies, Copy, hist_slots, reserve, row_bytes, typed_list
from brushfire.engine.state import (
    FilterState,
    Selection,
    Test,
    bars_test,
    category_keys,
    category_values,
    changed_keys,
    dict_key,
    dict_value,
    interval_test,
    layout_arrays,
    merge_ranges,
    set_test,
)
from brushfire.errors import InteractionError, NotCapturedError
from brushfire.lineage.arrays import Aggregates
from brushfire.lineage.layout import ViewLayout
from brushfire.lineage.store import Cube, LineageStore
from brushfire.plan import CapturePlan

__all__ = ["Session", "SessionAPI", "Update", "ViewData"]

SMALL_WORK = 2_000_000.0  # ns of estimated work below which an update runs on one thread
TILE_BYTES = 4 << 20  # memory of one conditional cube (cache-sized: built fast)
SESSION_TILE_BYTES = 64 << 20  # all of a session's conditional cubes (all sessions': engine/memory.py)
TILE_CHUNK_BLOCKS = 4  # store blocks per background chunk (a reply waits at most for one)
IDLE_SECONDS = 0.12  # a pause after which conditional cubes are prepared for the next brush


@dataclass
class Tile:
    """A conditional cube: for moving filter `filter`, per tile block of its keys (`starts`)
    and bar of each view, the aggregates of the rows passing the view's other filters as
    they were (`key`). Valid while only `filter` moves."""

    filter: str
    key: tuple
    views: list[str]
    starts: np.ndarray  # tile blocks over the filter's keys, ending with nkeys
    cols: dict[str, int]
    counts: np.ndarray  # (blocks + 1, width) prefix sums over blocks
    sums: np.ndarray
    oks: np.ndarray
    token: int | None = None  # its reservation in the process's budget (engine/memory.py)

    @property
    def nbytes(self) -> int:
        return self.counts.nbytes + self.sums.nbytes + self.oks.nbytes


@dataclass
class TileBuild:
    """What building one conditional cube reads: the views and their needs, the filter
    state it was started under (`q`, a copy), and the cell of each (key, bar)."""

    filter: str
    key: tuple
    views: list[str]
    starts: np.ndarray
    cblut: np.ndarray  # key -> tile block (-1: the no-value key)
    cols: dict[str, int]
    vi: np.ndarray
    colarr: np.ndarray
    need: np.ndarray
    q: tuple
    dim: int
    width: int
    measured: bool
    count_dtype: type = np.int32  # a builder's counts: half the cache of int64 (int64 past 2^31 rows)

    @property
    def cells(self) -> int:
        return (len(self.starts) - 1) * self.width

    def tile_bytes(self) -> int:
        """The memory of the conditional cube it builds (prefix sums: one more block)."""
        return (len(self.starts) * self.width) * 8 * (3 if self.measured else 1)

    def builder_bytes(self) -> int:
        """The memory of one builder's accumulators (`zeros`)."""
        return (self.cells + 1) * (np.dtype(self.count_dtype).itemsize + (16 if self.measured else 0))

    def zeros(self) -> list[np.ndarray]:
        """Accumulators of a build (or a part of one), with the kernel's spare cell."""
        n = self.cells + 1
        return [np.zeros(n, self.count_dtype)] + (
            [np.zeros(n, np.float64), np.zeros(n, np.int64)] if self.measured else
            [np.zeros(1, np.float64), np.zeros(1, np.int64)])


def tile_starts(keyprefix: np.ndarray, nkeys: int, max_blocks: int) -> np.ndarray:
    """The blocks of a dim's keys a conditional cube keeps: a block per key when they fit
    in `max_blocks`, else blocks of about equal rows (`keyprefix[k]`: rows with a key
    below k), so that a lookup reads the rows of at most two partial blocks, each a
    1 / max_blocks share of the rows."""
    if nkeys <= max_blocks:
        return np.arange(nkeys + 1, dtype=np.int64)
    total = int(keyprefix[nkeys])
    cuts = np.searchsorted(keyprefix[:nkeys + 1], np.linspace(0, total, max(1, max_blocks) + 1)[1:-1])
    return np.unique(np.concatenate([[0], np.clip(cuts, 1, nkeys - 1), [nkeys]])).astype(np.int64)


# the planner's methods as replies name them
METHODS = {"incremental": "incremental", "tile": "conditional cube", "recompute": "recompute",
           "scan": "scan", "complement": "cube less complement", "mixed": "incremental"}

ALL = "__all__"  # a view of one bar that every filter applies to: the selected rows


class _Store:
    """Per-store values every session uses, computed once. Besides the dashboard's views
    the kernels count one more, ALL: a single bar every filter applies to, so the rows
    passing every filter (the selection's size, in every reply) are kept up to date by
    the same updates as the views, never counted separately."""

    def __init__(self, store: LineageStore) -> None:
        lay = store.layout
        self.all = ViewLayout(ALL, "all", "count", 1, lay.nslots, [None],
                              code_dims=[0] if lay.dims else [])
        self.nslots = lay.nslots + 2
        self.L = layout_arrays(lay, extra=self.all if lay.dims else None)
        base = store.base
        self.base = Aggregates(np.append(base.counts, [store.n_rows, 0]), np.append(base.sums, [0.0, 0.0]),
                               np.append(base.oks, [0, 0]))
        self.all_cubes = {}
        for f in lay.filters:
            d = lay.dims[f.dims[0]]
            if f.cube_targets and d.cube_starts is not None:
                per_key = store.keycounts[f.dims[0]][:d.nkeys]
                prefix = np.concatenate([[0], np.cumsum(per_key)])[np.asarray(d.cube_starts)]
                self.all_cubes[f.name] = Cube(np.stack([prefix, np.zeros_like(prefix)], axis=1),
                                              np.zeros((0, 0)), np.zeros((0, 0), np.int64))
        self.keyprefix = [np.concatenate([[0], np.cumsum(c)]) for c in store.keycounts]
        self.values = [np.asarray(d.values) if d.kind == "dense" else None for d in store.layout.dims]
        self.edges = [np.asarray(d.edges, np.float64) if d.kind == "fine" else None
                      for d in store.layout.dims]
        self.blocks = sum(s.nblocks for s in store.shards)
        self.units = [(i, s.nblocks) for i, s in enumerate(store.shards) if s.nblocks]
        self._store = store
        self._zones: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._short: tuple[int, list[tuple[int, int]]] | None = None  # rows_in_blocks' sizes
        self._copies: Copies | None = None
        self._copies_lock = threading.Lock()
        self._base_views: dict[str, ViewData] = {}  # view -> base_view's result
        # the shards' arrays as the kernels' *_units take them (None: no shard has rows)
        self.shard_list = typed_list(s.arrays for s in store.shards) if self.units else None

    def copies(self, pool: parallel.Pool) -> Copies:
        """The store's clustered key copies, their build started on the first call: the
        filters' indexed dims with per-row keys, in the layout's order, under the memory
        cap (the updates read rows through them; lineage queries, rarer, go without)."""
        with self._copies_lock:
            if self._copies is None:
                lay = self._store.layout
                candidates = [d for d in dict.fromkeys(d for f in lay.filters for d in f.dims)
                              if d < lay.row_dims and lay.dims[d].indexed]
                # shard rows are kept where raw values or stored measures are read
                rows_kept = bool(lay.n_meas) or any(d.kind == "fine" for d in lay.dims[:lay.row_dims])
                dims, size = reserve(candidates, self._store.n_rows,
                                     row_bytes(lay.row_dims, rows_kept, hist_slots(self.L)))
                self._copies = Copies(self._store.shards, [d.nkeys for d in lay.dims], dims, rows_kept,
                                      size, self.L)
                self._copies.start(pool)
            return self._copies

    def zones(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every block's zone maps, all shards side by side: (zmin, zmax (D, blocks), rows
        per block) — read from the shards once, so a plan costs a few vector operations."""
        if self._zones is None:
            shards = [s for s in self._store.shards if s.nblocks]
            bsize = self._store.layout.block_rows
            sizes = [np.full(s.nblocks, bsize, np.int64) for s in shards]
            for s, z in zip(shards, sizes, strict=True):
                z[-1] = s.n_rows - bsize * (s.nblocks - 1)
            if not shards:
                none = np.zeros((self._store.layout.row_dims, 0), np.uint16)
                self._zones = (none, none, np.zeros(0, np.int64))
            else:
                zmin, zmax = (np.concatenate([np.asarray(s.arrays[i]) for s in shards], axis=1)
                              for i in (5, 6))
                self._zones = (zmin, zmax, np.concatenate(sizes))
        return self._zones

    def rows_in_blocks(self, mask: int) -> int:
        """The rows of the blocks of `zones` whose bits `mask` sets: a block's rows, less
        what the short ones (a shard's last) lack."""
        if self._short is None:
            sizes = self.zones()[2]
            full = int(sizes.max()) if len(sizes) else 0
            self._short = (full, [(int(j), full - int(sizes[j])) for j in np.flatnonzero(sizes < full)])
        full, short = self._short
        return full * mask.bit_count() - sum(lack for j, lack in short if mask >> j & 1)

    def base_view(self, name: str, compute: Callable[[], ViewData]) -> ViewData:
        """A view's base result as shown, `compute()`d on first use and kept: the same for
        every session, and an order statistic's costs a read of the rows (each reply gets
        its own lists, so that no caller can change the kept one)."""
        kept = self._base_views.get(name)
        if kept is None:  # two sessions at once may both compute it: the same result
            kept = self._base_views[name] = compute()
        return ViewData(kept.name, kept.labels, list(kept.counts), list(kept.values),
                        dict(kept.caveats))

    @staticmethod
    def of(store: LineageStore) -> _Store:
        cached = getattr(store, "_engine", None)
        if cached is None:
            cached = _Store(store)
            store._engine = cached
        return cached


class Session:
    """Filter state of one user; answers every interaction from the store."""

    def __init__(self, store: LineageStore, plan: CapturePlan, pool: parallel.Pool | None = None,
                 prefer: str | None = None, copies: bool = True) -> None:
        """`prefer` (tests): a method the planner takes whenever it applies (incremental,
        recompute, scan or tile; with tile, conditional cubes are built on every update
        under several filters). `copies`: read rows through clustered key copies once
        built (engine/copies.py); False (tests): only through the store's own order."""
        self.store, self.plan, self.layout = store, plan, store.layout
        self._prefer = prefer
        self._s = _Store.of(store)
        self._pool = pool or parallel.pool()
        self._copies = self._s.copies(self._pool) if copies else None
        self._filters = {f.name: f for f in plan.filters}
        self._fi = {f.name: i for i, f in enumerate(self.layout.filters)}
        self._vindex = {v.name: i for i, v in enumerate(self.layout.views)}
        self._has_all = bool(self.layout.dims)
        if self._has_all:
            self._vindex[ALL] = len(self.layout.views)
        self.active: dict[str, Selection] = {}
        self.state = FilterState(self.layout)
        self.agg: Aggregates = self._s.base.copy()
        self._tiles: dict[str, Tile] = {}  # filter -> its conditional cube (valid or stale)
        self._tiles_lock = threading.Lock()  # background builds add to _tiles
        self._tile_jobs: dict[str, parallel.Job] = {}  # filter -> conditional cube being built
        self._recent: list[str] = []  # filters, most recently changed first
        self._idle: parallel.Later | None = None
        self._drag: tuple[str, tuple, int] | None = None  # the filter dragged, others' key, moves
        self._rows_cache: dict[str, tuple] = {}  # filter -> (selection, _filter_rows of it)
        self._answered: float | None = None  # when the last filter change was answered
        self._pauses: deque[float] = deque(maxlen=16)  # seconds from each to the next
        self._run_layouts: dict[int, tuple] = {}  # id of a dim's copies -> (them, _run_layout)
        self._applies = {f.name: frozenset(f.views) for f in self.layout.filters}
        self._cube_starts = {d: np.asarray(dim.cube_starts, np.int64)  # dim -> its cube blocks
                             for d, dim in enumerate(self.layout.dims) if dim.cube_starts is not None}
        self._cubes_of: dict[tuple, dict] = {}  # (active filters, views) -> view -> cube filters
        self._others_of: dict[tuple, tuple] = {}  # (active filters, view) -> _filters_of(view)
        self._splits: dict[int, list] = {}  # n -> _split(n)
        self._lock = threading.Lock()  # one interaction at a time
        self._closed = False  # `close`d: no more background work, nothing built kept
        self._budget = memory.cubes()

    def close(self) -> None:
        """End the session's background work and drop what it built: the pending call that
        would prepare conditional cubes after a pause, the cubes being built and those
        built, and their room in the process's budget. The server calls it when a client
        leaves. Does not wait for an interaction being answered (it returns at once); one
        answered after it still works, without conditional cubes."""
        self._closed = True
        idle, self._idle = self._idle, None
        if idle is not None:
            idle.cancel()
        for job in list(self._tile_jobs.values()):
            job.cancel()
        self._tile_jobs.clear()
        with self._tiles_lock:
            self._tiles.clear()
        memory.freed(self._budget.release_owner(self), self._pool)
        self._pool.prune()
        self._rows_cache.clear()
        self._run_layouts.clear()

    def wait_for_copies(self, timeout: float | None = None) -> bool:
        """Wait until the store's clustered key copies are built (a warm-up before serving;
        interactions never wait, they read the store's own order meanwhile)."""
        return self._copies is None or self._copies.wait(timeout)

    # --- public interactions --------------------------------------------------------

    def brush(self, view: str, interval, y=None) -> Update:
        """Interval brush `lo <= x <= hi` on a histogram/temporal view (None = open end);
        for heatmaps, `interval` is the x interval and `y` the y interval."""
        f = self._filter(view, ("interval", "rect"))
        fl = self.layout.filter(f.name)
        tests = [self._interval(view, fl.dims[0], interval)]
        if f.kind == "rect":
            if y is None:
                msg = f"view {view!r} takes a rect brush: give x and y intervals"
                raise InteractionError(msg)
            tests.append(self._interval(view, fl.dims[1], y, "y"))
        elif y is not None:
            msg = f"view {view!r} takes an interval brush: y is only for heatmaps"
            raise InteractionError(msg)
        return self._apply(f.name, Selection(tuple(tests), (interval, y)))

    def select(self, view: str, values: list) -> Update:
        """Select bars of a categorical view by value ('(other)': every value beyond the
        top N). An empty list selects nothing; an unknown value is an error."""
        f = self._filter(view, ("points",))
        fl = self.layout.filter(f.name)
        vl = self.layout.view(view)
        values = category_values(values, vl.value_type == "temporal")  # times as the bars spell them
        keys = category_keys(vl.labels, values)
        return self._apply(f.name, Selection((set_test(fl.dims[0], keys),), values))

    def set_parameter(self, name: str, value) -> Update:
        """Set a parameter's value; None makes it inactive."""
        f = self._filter(name, ("param_eq", "param_range"))
        if value is None:
            return self.clear(name)
        fl = self.layout.filter(name)
        d = fl.dims[0]
        if f.kind == "param_eq" and fl.op == "in":  # a list of values: any of them
            if not isinstance(value, (list, tuple)):
                msg = f"parameter {name!r} takes a list of values, got {V.show(value)}"
                raise InteractionError(msg)
            value = [dict_value(self.layout.dims[d], x) for x in value]  # times as the choices
            test = set_test(d, [dict_key(self.layout.dims[d], x) for x in value])
        elif f.kind == "param_eq":
            value = dict_value(self.layout.dims[d], value)
            test = set_test(d, [dict_key(self.layout.dims[d], value)])
        elif fl.op == "between":  # [lo, hi], inclusive, as a brush
            test = self._interval(name, d, value, "value")
        else:
            v = self._bound(name, d, value, "value")  # named "value of 'p'"
            lo, hi = (None, v) if fl.op in ("lt", "lte") else (v, None)
            test = interval_test(self.layout.dims[d], d, lo, hi, strict_lo=fl.op == "gt",
                                 strict_hi=fl.op == "lt", values=self._s.values[d],
                                 edges=self._s.edges[d])
        return self._apply(name, Selection((test,), value))

    def clear(self, name: str | None = None) -> Update:
        """Remove one brush / parameter, or all of them."""
        if name:
            self._filter(name, None)
        elif self.active:  # every filter off: every view is its base result
            with self._lock, self._pool.replying():
                t0 = time.perf_counter()
                for n in list(self.active):
                    self.state.set(self._fi[n], None)
                self.active.clear()
                self.agg = self._s.base.copy()
                self._drag = None
                self._forget_stale_tiles()
                views = {v.name: self._view_data(v.name) for v in self.layout.views}
                return Update(views, dict.fromkeys(views, "base"), time.perf_counter() - t0)
        t0 = time.perf_counter()
        update = Update({})
        for n in [name] if name else list(self.active):
            if n in self.active:
                u = self._apply(n, None)
                update.views.update(u.views)
                update.methods.update(u.methods)
        update.seconds = time.perf_counter() - t0
        return update

    @property
    def filters(self) -> dict[str, object]:
        """The active filters as the user gave them: {view or parameter: value}."""
        return {n: s.spec for n, s in self.active.items()}

    def views(self) -> dict[str, ViewData]:
        return {v.name: self._view_data(v.name) for v in self.layout.views}

    def view(self, name: str) -> ViewData:
        self._view_index(name)
        return self._view_data(name)

    # --- lineage queries ------------------------------------------------------------

    def backward_rids(self, view: str | None = None, bars: list[int] | None = None,
                      offset: int = 0, limit: int | None = None) -> np.ndarray:
        """rids behind bars of a view as currently shown (rows in the bars passing the
        view's other filters), or behind the current selection (rows passing every active
        filter) when `view` is None; in rid order, `offset` / `limit` page."""
        with self._lock, self._pool.replying():
            need, driver = self._lineage_source(view, bars)
            limit = self.store.n_rows if limit is None else max(0, min(int(limit), self.store.n_rows))
            offset = max(0, int(offset))
            if offset >= self.store.n_rows:
                return np.zeros(0, np.int64)
            out = np.empty(limit, np.int64)
            written, skip = 0, offset
            d, kr = driver
            for s in self.store.shards:
                if written >= limit:
                    break
                if not s.nblocks:
                    continue
                w, skipped = K.rows_passing(s.arrays, self._s.L, self.state.q, need, d, kr, 0,
                                            s.nblocks, skip, limit - written, out[written:], s.start)
                written += w
                skip -= skipped
            return out[:written]

    def count_selected(self, view: str | None = None, bars: list[int] | None = None) -> int:
        """Number of rows `backward_rids` would return without paging."""
        if view is None and bars is None:
            if not self.active or not self._has_all:
                return self.store.n_rows
            return int(self.agg.counts[self._s.all.bar_off])
        if view is not None and bars is None:
            self._view_index(view)
            return int(stats.bar_counts(self.layout.view(view), self.agg).sum())
        with self._lock, self._pool.replying():
            need, (d, kr) = self._lineage_source(view, bars)
            skip = need & ~np.uint64(1 << self.state.adhoc)

            def task(units):
                return sum(K.count_passing(self.store.shards[i].arrays, self._s.L, self.state.q, need,
                                           d, kr, b0, b1, skip) for i, b0, b1 in units)
            return int(sum(self._pool.run([lambda u=u: task(u) for u in self._split(self._threads(
                self._rows_cost(d, kr)))])))

    def details(self, view: str | None = None, bars: list[int] | None = None, page: int = 0,
                page_size: int | None = None, columns: list[str] | None = None,
                order_by: str | None = None, descending: bool = False) -> pa.Table:
        """A page of the input rows behind bars or the current selection (details on
        demand), from the capture's snapshot, with their rids: in rid order, or ordered by
        the details column `order_by` (engine/ordering.py: SQL's ORDER BY with NULLS LAST,
        then rid)."""
        columns, size = details_request(self.plan, page, page_size, columns)
        if order_by is not None:
            details_request(self.plan, 0, None, [order_by])  # a details column
        if page * size >= self.store.n_rows:
            rids = np.zeros(0, np.int64)
        elif order_by is None:
            rids = self.backward_rids(view, bars, offset=page * size, limit=size)
        else:  # every row behind the selection, then the page of them in that order
            every = self.backward_rids(view, bars)
            key = self.store.take(every, [order_by]).column(0)
            rids = every[ordering.page_order(key, descending, page * size, size)]
        table = self.store.take(rids, columns)
        return table.add_column(0, "rid", pa.array(rids, pa.int64()))

    def forward(self, rids) -> dict[str, list[int]]:
        """Bars each view's rows `rids` contribute to (forward lineage); views whose bars
        per row were pruned (nothing needs them) are left out."""
        try:
            rids = np.asarray(rids, np.int64).reshape(-1)
        except (TypeError, ValueError, OverflowError):
            msg = "rids must be a list of row ids (integers)"
            raise InteractionError(msg) from None
        if len(rids) and (rids.min() < 0 or rids.max() >= self.store.n_rows):
            msg = f"rids must be in [0, {self.store.n_rows})"
            raise InteractionError(msg)
        si, local = self.store.locate(rids)
        out = {}
        for vi, v in enumerate(self.layout.views):
            if not v.code_dims:
                continue
            bars = np.empty(len(rids), np.int64)
            for s in np.unique(si):
                sel = np.flatnonzero(si == s)
                part = np.empty(len(sel), np.int64)
                K.bars_of(self.store.shards[s].arrays, self._s.L, local[sel], vi, part)
                bars[sel] = part
            out[v.name] = [int(b) for b in np.unique(stats.bars_of_codes(v, bars)) if b >= 0]
        return out

    def highlight(self, source: str, bars: list[int]) -> dict[str, ViewData]:
        """Linked highlighting: for each declared target, the aggregate per bar of the rows
        in the selected `bars` of `source` that the target currently shows."""
        targets = [t for h in self.plan.dashboard.interactions.highlight if h.source == source
                   for t in h.targets]
        if not targets:
            msg = f"no highlight from view {source!r} is declared"
            raise NotCapturedError(msg)
        with self._lock, self._pool.replying():
            views = list(dict.fromkeys(targets))
            self._require_rows([source, *views], list(self.active), f"highlighting from {source!r}")
            adhoc, (d, kr) = self._bars_adhoc(source, bars)
            bit = np.uint64(1 << self.state.adhoc)
            need = np.zeros(len(self._vindex), np.uint64)
            for t in views:
                need[self._vindex[t]] = self._need(t) | bit
            vi = np.array([self._vindex[t] for t in views], np.int64)
            rows = self._rows_of(d, kr)
            agg = Aggregates.zeros(self._s.nslots)
            if P.index_cost(rows, len(kr), self._s.blocks, len(views), self.store.n_rows,
                            len(self.active) + 1, self._copy(d) is not None) < \
                    P.scan_cost(self.store.n_rows, len(self.active) + 1, len(views)):
                self._by_keys(d, kr, np.ones(len(kr), np.int64), -1, None, vi, need, agg)
            else:
                self._scan(vi, need, agg)
            return {t: self._data(self.layout.view(t), agg, need[self._vindex[t]]) for t in views}

    # --- the update machinery -------------------------------------------------------

    def _require_rows(self, views: Sequence[str], filters: Sequence[str], what: str) -> None:
        """NotCapturedError unless the views can be counted and the filters tested row by
        row (over the memory budget some dims keep cubes only)."""
        lay = self.layout
        missing = [f"filter {g!r}" for g in filters if not lay.filter_rows(g)]
        missing += [f"view {v!r}" for v in views
                    if (v == ALL and not lay.row_dims) or (v != ALL and not lay.countable(v))]
        if missing:
            msg = (f"{what} needs per-row lineage of {', '.join(missing)}, which this capture "
                   "keeps as cubes only (over its memory budget: "
                   f"{'; '.join(lay.notes) or 'no per-row keys'})")
            raise NotCapturedError(msg)

    def _check_capturable(self, name: str, new: Selection | None) -> None:
        """Can setting filter `name` to `new` be answered from what was captured?"""
        if self.layout.row_dims == len(self.layout.dims):
            return
        active = [g for g in self.active if g != name] + ([name] if new is not None else [])
        fl = self.layout.filter(name)
        for v in fl.views + ([ALL] if self._has_all else []):
            others = active if v == ALL else [g for g in active if v in self.layout.filter(g).views]
            if not others or (len(others) == 1 and self._cube(others[0], v) is not None):
                continue
            self._require_rows([v], others, f"view {v!r} under {', '.join(others)}"
                               if v != ALL else f"the selection of {', '.join(others)}")

    def _apply(self, name: str, new: Selection | None) -> Update:
        with self._lock, self._pool.replying():
            self._check_capturable(name, new)
            t0 = time.perf_counter()
            if self._answered is not None:
                self._pauses.append(t0 - self._answered)
            f = self._fi[name]
            fl = self.layout.filter(name)
            old = self.active.get(name)
            if new is None:
                self.active.pop(name, None)
            else:
                self.active[name] = new
            self.state.set(f, new)
            methods: dict[str, str] = {}
            multi: list[str] = []
            by_cube: dict[str, list[str]] = {}  # filter -> the views its cubes answer
            for v in fl.views + ([ALL] if self._has_all else []):
                others = self._others(v)
                if not others:
                    self.agg.set(self._s.base, self._vl(v).all_slots)
                    methods[v] = "base"
                elif len(others) == 1 and self._cube(others[0], v) is not None:
                    by_cube.setdefault(others[0], []).append(v)
                    methods[v] = "cube"
                else:
                    multi.append(v)
            for g, views in by_cube.items():  # together: the edge rows read once for all
                self._from_cube(g, views)
            methods.pop(ALL, None)
            if multi:
                methods.update(self._update_multi(name, f, old, new, multi))
                methods.pop(ALL, None)
            else:
                self._drag = None
            self._forget_stale_tiles()
            self._recent = [name] + [g for g in self._recent if g != name]
            if self._idle is not None:
                self._idle.cancel()
                self._idle = None
            if self.active and not self._closed:
                self._idle = self._pool.after(IDLE_SECONDS, self._speculate)
                if self._closed:  # closed meanwhile (close runs on another thread)
                    self._idle.cancel()
            changed = {v: self._view_data(v) for v in fl.views}
            self._answered = time.perf_counter()
            return Update(changed, methods, self._answered - t0)

    def _update_multi(self, name: str, f: int, old: Selection | None, new: Selection | None,
                      views: list[str]) -> dict[str, str]:
        """Views under several filters, by the planner's cheapest exact method. ALL is not
        counted when a view every active filter applies to (and no brush of its own) is
        among them: the rows passing every filter are then that view's rows, all its slots
        summed — one view fewer for every row an update reads."""
        whole = self._whole_view(views)
        if whole is not None:
            views = [v for v in views if v != ALL]
        key = self._others_key(name)
        drag = self._drag
        moves = drag[2] + 1 if drag and drag[0] == name and drag[1] == key else 1
        self._drag = (name, key, moves)
        steps = self._incremental_steps(f, old, new)
        delta_rows = sum(self._rows_of(d, kr) for d, kr, _, _ in steps)
        tile = self._tiles.get(name)
        if tile is None or tile.key != key or not set(views) <= set(tile.views) or new is None:
            tile = None
        drivers, fails, cube_rows = {}, {}, {}
        clustered = {""} if all(self._copy(d) is not None for d, _, _, _ in steps) else set()
        tested = set() if all(_keyed(x) for x in (old, new)) else {""}
        for g, sel in self.active.items():
            drivers[g], fails[g], edge, _ = self._filter_rows(g, sel)
            if edge is not None:
                cube_rows[g] = edge
            if all(self._copy(t.dim) is not None for t in sel.tests):
                clustered.add(g)
            if not _keyed(sel):
                tested.add(g)
        ckey = (tuple((g, len(sel.tests)) for g, sel in self.active.items()), tuple(views))
        cubes = self._cubes_of.get(ckey)
        if cubes is None:
            cubes = self._cubes_of[ckey] = {
                v: tuple(g for g in self._others(v) if len(self.active[g].tests) == 1
                         and self._cube(g, v) is not None) for v in views}
        work = P.Work(
            n_rows=self.store.n_rows, n_blocks=self._s.blocks, views=tuple(views),
            scan_rows=tuple(self._scan_rows([self._need(v) for v in views])),
            n_filters=len(self.active), delta_rows=delta_rows,
            delta_ranges=max(1, sum(len(kr) for _, kr, _, _ in steps)),
            drivers=drivers, needs={v: tuple(self._others(v)) for v in views},
            tile_rows=self._tile_edge_rows(tile) if tile is not None else None,
            tile_cells=sum(self._vl(v).nslots for v in views), prefer=self._prefer,
            threads=self._pool.workers + 1, clustered=frozenset(clustered),
            fails=fails, cubes=cubes, cube_rows=cube_rows, tested=frozenset(tested))
        choice = P.choose(work)
        if choice.method == "tile":
            self._budget.touch(tile.token)
            self._from_prefix(name, views, tile_prefix(tile), tile.starts, others=True)
        elif choice.method in ("incremental", "mixed"):
            moved = [v for v in views if v not in choice.drivers]
            vi = self._vi(moved)
            need = self._needs(moved) & ~np.uint64(1 << f)
            for d, kr, q_new, q_old in steps:
                if kr:
                    self._by_keys(d, kr, np.ones(len(kr), np.int64), f, q_old, vi, need, self.agg,
                                  q=q_new)
            self._recompute(choice.drivers)
        elif choice.method == "recompute":
            self._recompute(choice.drivers)
        elif choice.method == "complement":
            self._recompute(choice.drivers)
            self._complement(choice.bases)
        else:
            for v in views:
                self.agg.clear(self._vl(v).all_slots)
            self._scan(self._vi(views), self._needs(views), self.agg)
        if choice.method != "tile" and new is not None and (
                (P.worth_a_tile(moves, choice.cost, self._pause(), parallel.QUIET) and self._pool.has_room())
                or self._prefer == "tile"):
            self._start_tile(name, key, views)
        if whole is not None:
            counts = self.agg.counts
            slots = self._s.all.all_slots
            counts[slots] = 0
            counts[slots.start] = counts[self._vl(whole).all_slots].sum()
        return {**dict.fromkeys(views, METHODS[choice.method]),
                **{v: METHODS[m] for v, m in choice.view_methods().items()}}

    def _recompute(self, drivers: dict[str, str]) -> None:
        """Each view from the rows passing its driver filter, found through that filter's
        index, counted where they pass the view's other filters."""
        by: dict[str, list[str]] = {}
        for v, g in drivers.items():
            by.setdefault(g, []).append(v)
        for g, group in by.items():
            for v in group:
                self.agg.clear(self._vl(v).all_slots)
            t = self.active[g].tests[0]
            kr = t.key_ranges(self.layout.dims[t.dim].nkeys)
            self._by_keys(t.dim, kr, np.ones(len(kr), np.int64), -1, None, self._vi(group),
                          self._needs(group), self.agg)

    def _complement(self, bases: dict[str, str]) -> None:
        """Each view from its base filter's cube (its rows under that filter alone), then,
        filter by filter of its others, less the rows that fail that filter and pass the
        base and the others before it: each row failing some filter is taken away once.
        The rows failing a filter are those an incremental update switching it on from
        inactive reads (its changed keys: the rest of its keys, its fine edge buckets)."""
        by: dict[str, list[str]] = {}
        for v, b in bases.items():
            by.setdefault(b, []).append(v)
        for b, group in by.items():
            self._from_cube(b, group)
        need = np.zeros(len(self._vindex), np.uint64)
        for v, b in bases.items():
            need[self._vindex[v]] = np.uint64(1 << self._fi[b])
        for c in self.active:
            fc = self._fi[c]
            part = [v for v, b in bases.items() if c != b and c in self._others(v)]
            if not part:
                continue
            vi = self._vi(part)
            for d, kr, q_new, q_old in self._incremental_steps(fc, None, self.active[c]):
                if kr:
                    self._by_keys(d, kr, np.ones(len(kr), np.int64), fc, q_old, vi, need, self.agg,
                                  q=q_new)
            need[vi] |= np.uint64(1 << fc)

    def _filter_rows(self, g: str, sel: Selection) -> tuple:
        """What the planner needs of active filter g, kept while its selection stays:
        (rows, key ranges) passing it and where it may fail, its cubes' edge rows (None: no
        cube), and the blocks its interval tests cannot skip (bit j: block j of
        `_Store.zones`; None: no interval test)."""
        cached = self._rows_cache.get(g)
        if cached is not None and cached[0] is sel:
            return cached[1]
        t = sel.tests[0]
        kr = t.key_ranges(self.layout.dims[t.dim].nkeys)
        fkr = [changed_keys(None, u, self.layout.dims[u.dim].nkeys) for u in sel.tests]
        keep = None
        if any(u.mode == 1 for u in sel.tests):
            zmin, zmax, sizes = self._s.zones()
            kept = np.ones(len(sizes), bool)
            for u in sel.tests:
                if u.mode == 1:
                    kept &= (zmax[u.dim] >= u.lo) & (zmin[u.dim] <= u.hi)
            keep = int.from_bytes(np.packbits(kept, bitorder="little").tobytes(), "little")
        out = ((self._rows_of(t.dim, kr), max(1, len(kr))),
               (sum(self._rows_of(u.dim, k) for u, k in zip(sel.tests, fkr, strict=True)),
                max(1, sum(len(k) for k in fkr))),
               self._edge_rows(t, self._cube_starts[t.dim])
               if len(sel.tests) == 1 and t.dim in self._cube_starts else None,
               keep)
        self._rows_cache[g] = (sel, out)
        return out

    def _pause(self) -> float:
        """The typical pause between a filter change's answer and the next (seconds; the
        median of the last 16): a person's frames leave ~15 ms, a replay almost none."""
        return sorted(self._pauses)[len(self._pauses) // 2] if self._pauses else math.inf

    def _whole_view(self, views: list[str]) -> str | None:
        """A view of `views` that counts exactly ALL's rows: every active filter applies to
        it (none is its own) — when ALL is among `views`."""
        if ALL not in views:
            return None
        need = self._need(ALL)
        return next((v for v in views if v != ALL and self._need(v) == need), None)

    def _incremental_steps(self, f: int, old: Selection | None, new: Selection | None) -> list:
        """The steps of an incremental update of filter f, one per test: (dim, candidate key
        ranges, Q after the step, Q before it). A rect brush moves x, then y."""
        fl = self.layout.filters[f]
        old_t = list(old.tests) if old else [None] * len(fl.dims)
        new_t = list(new.tests) if new else [None] * len(fl.dims)
        steps = []
        prev = old
        for j, d in enumerate(fl.dims):
            mixed = [new_t[i] if i <= j else old_t[i] for i in range(len(fl.dims))]
            cur = Selection(tuple(t if t is not None else Test(0, fl.dims[i]) for i, t in enumerate(mixed)))
            kr = changed_keys(old_t[j], new_t[j], self.layout.dims[d].nkeys)
            q_after = self.state.copy_with(f, cur) if j < len(fl.dims) - 1 else self.state.q
            q_before = self.state.copy_with(f, prev)
            steps.append((d, kr, q_after, q_before))
            prev = cur
        return steps

    def _cube(self, g: str, view: str) -> Cube | None:
        if view == ALL:
            return self._s.all_cubes.get(g)
        return self.store.cubes.get((g, view))

    def _from_cube(self, g: str, views: list[str]) -> None:
        cubes = {v: self._cube(g, v) for v in views}
        starts = self._cube_starts[self.active[g].tests[0].dim]
        self._from_prefix(g, views, {v: (c.counts, c.sums, c.oks) for v, c in cubes.items()},
                          starts, others=False)

    def _from_prefix(self, g: str, views: list[str], prefix: dict, starts: np.ndarray,
                     others: bool) -> None:
        """Views under filter g from prefix sums over blocks of g's keys (a cube: g is the
        only filter; a tile: over the rows passing the others): whole blocks by prefix
        differences, the rows of partial blocks through g's index (added, or the block
        taken whole and the rest subtracted, whichever touches fewer rows), the rows of
        fine dims' edge buckets tested one by one."""
        test = self.active[g].tests[0]
        d = test.dim
        seg_lo: list[tuple[int, int]] = []
        seg_sign: list[int] = []
        whole: list[tuple[int, int]] = []  # block ranges [ja, jb) taken whole
        for a, b in test.inner_ranges():
            ja = int(np.searchsorted(starts, a, "right")) - 1
            jb = int(np.searchsorted(starts, b, "right")) - 1
            first = ja if starts[ja] == a else ja + 1
            last = jb if starts[jb + 1] - 1 == b else jb - 1
            if first > last:  # no whole block inside: the rows themselves
                seg_lo.append((a, b))
                seg_sign.append(1)
                continue
            whole.append((first, last + 1))
            for lo, hi, blk in ((a, int(starts[first]) - 1, ja), (int(starts[last + 1]), b, jb)):
                if lo > hi:
                    continue
                rest = (int(starts[blk]), lo - 1) if blk == ja else (hi + 1, int(starts[blk + 1]) - 1)
                if self._rows_of(d, [rest]) < self._rows_of(d, [(lo, hi)]):
                    whole.append((blk, blk + 1))
                    if rest[0] <= rest[1]:
                        seg_lo.append(rest)
                        seg_sign.append(-1)
                else:
                    seg_lo.append((lo, hi))
                    seg_sign.append(1)
        for v in views:
            sl = self._vl(v).all_slots
            pc, ps, po = prefix[v]
            self.agg.clear(sl)
            for ja, jb in whole:
                self.agg.counts[sl] += pc[jb] - pc[ja]
                if ps.size:
                    self.agg.sums[sl] += ps[jb] - ps[ja]
                    self.agg.oks[sl] += po[jb] - po[ja]
        vi = self._vi(views)
        bit = np.uint64(1 << self._fi[g])
        base_need = (self._needs(views) & ~bit) if others else np.zeros(len(self._vindex), np.uint64)
        if seg_lo:
            order = np.argsort([s[0] for s in seg_lo])
            kr = [seg_lo[i] for i in order]
            signs = np.array([seg_sign[i] for i in order], np.int64)
            self._by_keys(d, kr, signs, -1, None, vi, base_need, self.agg)
        edges = test.edge_keys()
        if edges:
            need = base_need.copy()
            need[vi] |= bit
            self._by_keys(d, [(k, k) for k in edges], np.ones(len(edges), np.int64), -1, None, vi,
                          need, self.agg)

    def _tile_edge_rows(self, tile: Tile) -> int:
        return self._edge_rows(self.active[tile.filter].tests[0], tile.starts)

    def _edge_rows(self, test: Test, starts: np.ndarray) -> int:
        """About the rows `_from_prefix` reads for `test` over blocks `starts`: half a block
        per range end, and the fine edge buckets."""
        d = test.dim
        rows = 0
        for a, b in test.inner_ranges():
            for k in (a, b):
                j = int(np.searchsorted(starts, k, "right")) - 1
                rows += self._rows_of(d, [(int(starts[j]), int(starts[j + 1]) - 1)]) // 2
        return rows + sum(self._rows_of(d, [(k, k)]) for k in test.edge_keys())

    # --- background: conditional cubes ------------------------------------------------

    def _forget_stale_tiles(self) -> None:
        """Drop conditional cubes, and stop building those, whose other filters changed."""
        for g, job in list(self._tile_jobs.items()):
            if job.finished.is_set() or job.tile_key != self._others_key(g):
                if not job.finished.is_set():
                    self._budget.release(job.token)
                job.cancel()
                del self._tile_jobs[g]
        with self._tiles_lock:
            for g, tile in list(self._tiles.items()):
                if tile.key != self._others_key(g):
                    self._budget.release(tile.token)
                    del self._tiles[g]

    def _drop_reserved(self, name: str, token: int) -> None:
        """(engine/memory.py) The process's budget took the room of this session's
        conditional cube of filter `name` (`token`) for another: forget it, or stop
        building it."""
        job = self._tile_jobs.get(name)
        if job is not None and job.token == token:
            job.cancel()
        with self._tiles_lock:
            tile = self._tiles.get(name)
            if tile is not None and tile.token == token:
                del self._tiles[name]

    def _speculate(self) -> None:
        """After a pause (the pool's timer thread): prepare conditional cubes of the filters
        the user is likely to brush next, given the other filters as they are now, most
        recently used first — so that starting or jumping a brush among fixed filters is a
        lookup. Skipped when an interaction is being answered (it will reschedule), and
        when the pool has had no quiet moment lately (other sessions keep it busy: the
        builds would wait, their plans spent for nothing)."""
        if self._closed or not self._pool.has_room() or not self._lock.acquire(blocking=False):
            return
        try:
            order = self._recent + [f.name for f in self.layout.filters if f.name not in self._recent]
            for g in order:
                fl = self.layout.filter(g)
                if len(fl.dims) != 1 or not self.layout.dims[fl.dims[0]].indexed:
                    continue
                views = [v for v in fl.views + ([ALL] if self._has_all else [])
                         if set(self._others(v)) - {g}]
                if views:
                    self._start_tile(g, self._others_key(g), views)
        finally:
            self._lock.release()

    def _tile_plan(self, name: str, key: tuple, views: list[str]) -> TileBuild | None:
        """The build of filter `name`'s conditional cube over the rows passing the other
        filters as they are now (`key`), within TILE_BYTES; None when it cannot have one (a
        rect brush, an unindexed dim, rows over the memory budget)."""
        if not self._tileable(name, views):
            return None
        d = self.layout.filter(name).dims[0]
        nkeys = self.layout.dims[d].nkeys
        width = sum(self._vl(v).nslots for v in views)
        measured = any(self._vl(v).measure != "none" for v in views)
        starts = tile_starts(self._s.keyprefix[d], nkeys, self._tile_blocks(name, views))
        cblut = np.append(np.searchsorted(starts, np.arange(nkeys), "right") - 1, -1).astype(np.int64)
        cols, at = {}, 0
        for v in views:
            cols[v] = at
            at += self._vl(v).nslots
        q = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in self.state.q)
        return TileBuild(name, key, list(views), starts, cblut, cols, self._vi(views),
                         np.array([cols[v] for v in views], np.int64),
                         self._needs(views) & ~np.uint64(1 << self._fi[name]), q, d, width, measured,
                         np.int32 if self.store.n_rows < 2**31 else np.int64)

    def _tileable(self, name: str, views: list[str]) -> bool:
        """Can filter `name` have a conditional cube for `views`? Not a rect brush, nor an
        unindexed dim, nor rows the memory budget did not keep."""
        lay = self.layout
        fl = lay.filter(name)
        if len(fl.dims) != 1 or not lay.dims[fl.dims[0]].indexed or not lay.dims[fl.dims[0]].nkeys:
            return False
        return lay.filter_rows(name) and all(lay.filter_rows(g) for g in self.active) and all(
            (v == ALL and lay.row_dims) or (v != ALL and lay.countable(v)) for v in views)

    def _tile_blocks(self, name: str, views: list[str]) -> int:
        """How many blocks of its keys a conditional cube within TILE_BYTES keeps."""
        width = sum(self._vl(v).nslots for v in views)
        measured = any(self._vl(v).measure != "none" for v in views)
        nkeys = self.layout.dims[self.layout.filter(name).dims[0]].nkeys
        return min(nkeys, max(1, TILE_BYTES // (width * 8 * (3 if measured else 1))))

    def _tile_kernel(self, tb: TileBuild, units, acc: list[np.ndarray]) -> None:
        shards, L = self.store.shards, self._s.L
        for i, b0, b1 in units:
            K.tile(shards[i].arrays, L, tb.q, tb.vi, tb.need, tb.colarr, tb.dim, tb.cblut, tb.width,
                   b0, b1, *acc)

    def _tile_done(self, tb: TileBuild, parts: list[list[np.ndarray]]) -> Tile:
        """The conditional cube from its builders' accumulators: prefix sums over blocks."""
        nblocks = len(tb.starts) - 1
        pre = []
        for j in range(3):
            if j and not tb.measured:
                pre.append(np.zeros((nblocks + 1, 0)))
                continue
            total = parts[0][j][:-1].astype(np.int64 if j != 1 else np.float64)
            for part in parts[1:]:
                total += part[j][:-1]
            p = np.zeros((nblocks + 1, tb.width), total.dtype)
            np.cumsum(total.reshape(nblocks, tb.width), axis=0, out=p[1:])
            pre.append(p)
        return Tile(tb.filter, tb.key, tb.views, tb.starts, tb.cols, *pre)

    def _start_tile(self, name: str, key: tuple, views: list[str]) -> None:
        """Build, in the background, the conditional cube of filter `name` over the rows
        passing the other filters as they are now (`key`)."""
        job = self._tile_jobs.get(name)
        if job is not None and job.tile_key == key and not job.finished.is_set():
            return
        tile = self._tiles.get(name)
        if tile is not None and tile.key == key and set(views) <= set(tile.views):
            return
        if self._closed:
            return
        tb = self._tile_plan(name, key, views)
        if tb is None:
            return
        # its room in the process's budget: the cube, and a builder's accumulators per
        # background thread while it is built
        token = self._budget.reserve(self, name, tb.tile_bytes()
                                     + (self._pool.workers + 1) * tb.builder_bytes())
        if token is None:  # larger than the whole budget: answered without one
            return
        accs: dict[int, list[np.ndarray]] = {}  # per worker thread
        lock = threading.Lock()

        def chunks():
            for i, s in enumerate(self.store.shards):
                for b0 in range(0, s.nblocks, TILE_CHUNK_BLOCKS):
                    units = [(i, b0, min(s.nblocks, b0 + TILE_CHUNK_BLOCKS))]

                    def run(units=units):
                        me = threading.get_ident()
                        with lock:
                            if me not in accs:
                                accs[me] = tb.zeros()
                        self._tile_kernel(tb, units, accs[me])
                    yield run

        def done():
            tile = self._tile_done(tb, list(accs.values()) or [tb.zeros()])
            tile.token = token
            accs.clear()
            with self._tiles_lock:  # (dropped by the budget, or the session closed: not kept)
                if self._closed or not self._budget.resize(token, tile.nbytes):
                    self._budget.release(token)
                    return
                old = self._tiles.get(name)
                if old is not None:
                    self._budget.release(old.token)
                self._tiles[name] = tile
                self._evict_tiles(name)

        job = parallel.Job(chunks(), done)
        job.tile_key, job.token = key, token
        old = self._tile_jobs.get(name)
        if old is not None and not old.finished.is_set():
            old.cancel()
            self._budget.release(old.token)
        self._tile_jobs[name] = job
        self._pool.background(job)
        if self._closed:  # closed meanwhile (close runs on another thread)
            job.cancel()
            self._budget.release(token)

    def _evict_tiles(self, keep: str) -> None:
        """Keep the session's conditional cubes within SESSION_TILE_BYTES, dropping the
        least recently used filters' first (called holding _tiles_lock)."""
        order = {g: i for i, g in enumerate(self._recent)}
        while sum(t.nbytes for t in list(self._tiles.values())) > SESSION_TILE_BYTES:
            victims = [g for g in list(self._tiles) if g != keep]
            if not victims:
                break
            victim = max(victims, key=lambda g: order.get(g, len(order)))
            self._budget.release(self._tiles.pop(victim).token)

    # --- kernels on the pool --------------------------------------------------------

    def _threads(self, cost: float) -> int:
        return 1 if cost < SMALL_WORK else self._pool.workers + 1

    def _split(self, n: int) -> list[list[tuple[int, int, int]]]:
        """The store's blocks as `n` lists of (shard, first block, end block), about equal
        (the same lists every time: callers only read them)."""
        out = self._splits.get(n)
        if out is None:
            out = self._splits[n] = self._split_blocks(n)
        return out

    def _split_blocks(self, n: int) -> list[list[tuple[int, int, int]]]:
        units = self._s.units
        total = self._s.blocks
        per = max(1, math.ceil(total / max(1, n)))
        out: list[list[tuple[int, int, int]]] = [[]]
        room = per
        for i, nb in units:
            b = 0
            while b < nb:
                take = min(room, nb - b)
                out[-1].append((i, b, b + take))
                b += take
                room -= take
                if room == 0:
                    out.append([])
                    room = per
        return [u for u in out if u]

    def _run(self, kernel_units, agg: Aggregates, threads: int, split=None) -> None:
        """Run `kernel_units(units, counts, sums, oks)` over the blocks, on `threads` (or
        on one thread per list of `split`)."""
        if threads <= 1:
            kernel_units(self._split(1)[0] if self._s.units else [], agg.counts, agg.sums, agg.oks)
            return
        nslots = self._s.nslots

        def task(units):
            c, s, o = np.zeros(nslots, np.int64), np.zeros(nslots, np.float64), np.zeros(nslots, np.int64)
            kernel_units(units, c, s, o)
            return c, s, o

        for c, s, o in self._pool.run([lambda u=u: task(u) for u in split or self._split(threads)]):
            agg.counts += c
            agg.sums += s
            agg.oks += o

    def _rows_guard(self, d: int, vi, need) -> None:
        """The kernels read keys of kept dims only (an index past them reads foreign
        memory): refuse anything else, whatever a caller missed."""
        lay, kept = self.layout, self.layout.row_dims
        if kept == len(lay.dims):
            return
        dims = [d] if d >= 0 else []
        for i in vi:
            v = self._s.all if i == len(lay.views) else lay.views[i]
            dims += list(v.code_dims) + ([v.mdim] if v.measure == "lut" else [])
        union = int(np.bitwise_or.reduce(need[vi])) if len(vi) else 0
        dims += [int(t) for f in range(len(lay.filters) + 1) if union >> f & 1
                 for t in self.state.tdim[2 * f:2 * f + 2] if t >= 0]
        if any(x >= kept for x in dims):
            msg = "this needs per-row lineage the capture kept as cubes only (memory budget)"
            raise NotCapturedError(msg)

    def _by_keys(self, d: int, kranges, signs, mf: int, q_old, vi, need, agg: Aggregates,
                 q=None) -> None:
        if not len(kranges):
            return
        self._rows_guard(d, vi, need)
        kr = np.asarray(kranges, np.int64).reshape(-1, 2)
        q = self.state.q if q is None else q
        q_old = q if q_old is None else q_old
        shards, L = self.store.shards, self._s.L
        copy = self._copy(d)

        typed = (self._s.shard_list, self._copies.typed(d)) if copy else None  # none: no shards
        cdim = self._copies.cdim(d) if copy else -1

        def units(us, c, s, o):
            if typed is not None:
                if us:
                    K.clustered_units(*typed, _units(us), d, cdim, L, q, q_old, kr, signs, mf, vi, need,
                                      c, s, o)
                return
            for i, b0, b1 in us:
                K.by_keys(shards[i].arrays, L, q, q_old, d, kr, signs, mf, vi, need, b0, b1, c, s, o)

        cost = P.index_cost(self._rows_of(d, kranges), len(kranges), self._s.blocks, len(vi),
                            self.store.n_rows, len(self.active), copy is not None)
        threads = self._threads(cost)
        split = self._split_runs(copy, kr, threads) if copy is not None and threads > 1 else None
        self._run(units, agg, threads, split)

    def _split_runs(self, copy: list[Copy], kr: np.ndarray, n: int) -> list[list[tuple[int, int, int]]]:
        """The blocks of clustered copies as `n` lists of (shard, first block, end block)
        holding about equally many rows of the key ranges' runs. A copy's rows are in key
        order, so a range's run sits in a few of its blocks: split by blocks alone, one
        thread could get a whole run and the other none."""
        starts, at, lo, hi, shard, block = self._run_layout(copy)
        segs = np.empty((len(at), 4), np.int64)
        m = K.split_runs(starts, at, lo, hi, shard, block, kr, n, segs)
        out: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        for t, i, b0, b1 in segs[:m].tolist():
            out[t].append((i, b0, b1))
        return [u for u in out if u]

    def _run_layout(self, copy: list[Copy]) -> tuple:
        """A dim's copies' key starts side by side (shards x keys) and, per block of every
        shard with blocks: its shard's row there, its first and end position, its shard and
        its number in it."""
        cached = self._run_layouts.get(id(copy))
        if cached is None or cached[0] is not copy:
            bsize = self.layout.block_rows
            units = self._s.units
            starts = np.stack([copy[i].starts for i, _ in units])
            at = np.concatenate([np.full(nb, j) for j, (_, nb) in enumerate(units)])
            block = np.concatenate([np.arange(nb, dtype=np.int64) for _, nb in units])
            shard = np.concatenate([np.full(nb, i) for i, nb in units])
            ends = starts[at, -1]
            lo = np.minimum(block * bsize, ends)
            hi = np.minimum(lo + bsize, ends)
            cached = self._run_layouts[id(copy)] = (copy, (starts, at, lo, hi, shard, block))
        return cached[1]

    def _copy(self, d: int) -> list[Copy] | None:
        """Dim d's clustered copy per shard, when built (and this session uses copies)."""
        return self._copies.of(d) if self._copies is not None and d in self._copies.dims else None

    def _scan(self, vi, need, agg: Aggregates) -> None:
        self._rows_guard(-1, vi, need)
        skip = np.uint64(np.bitwise_and.reduce(need[vi])) if len(vi) else np.uint64(0)
        L, q = self._s.L, self.state.q
        shards = self._s.shard_list

        def units(us, c, s, o):
            if us:
                K.scan_units(shards, _units(us), L, q, vi, need, skip, c, s, o)

        cost = P.scan_cost(self.store.n_rows, len(self.active), len(vi))
        self._run(units, agg, self._threads(cost))

    def _scan_rows(self, needs: list[np.uint64]) -> list[int]:
        """Per need mask, the rows a scan reads for it: those of the blocks its zone maps
        cannot skip (one of its filters selects no key of the block). Data sorted by a
        brushed field skips most."""
        keeps = [(self._fi[g], k) for g, sel in self.active.items()
                 if (k := self._filter_rows(g, sel)[3]) is not None]
        out: dict[int, int] = {}
        for nd in needs:
            nd = int(nd)
            if nd not in out:
                mask = -1  # every block
                for f, k in keeps:
                    if nd >> f & 1:
                        mask &= k
                out[nd] = self._s.rows_in_blocks(mask) if mask != -1 else self.store.n_rows
        return [out[int(nd)] for nd in needs]

    # --- helpers ----------------------------------------------------------------------

    def _lineage_source(self, view: str | None, bars: list[int] | None):
        """(need, (driver dim or -1, key ranges)) of the rows behind bars of a view (as it
        shows them) or behind the current selection."""
        self._require_rows([] if view is None else [view],
                           list(self.active) if view is None else self._others(view),
                           "the rows behind " + ("the selection" if view is None else f"view {view!r}"))
        if view is None:
            if bars is not None:
                msg = "bars need a view"
                raise InteractionError(msg)
            need = np.uint64(0)
            for g in self.active:
                need |= np.uint64(1 << self._fi[g])
            return need, self._driver(list(self.active))
        self._view_index(view)
        vl = self.layout.view(view)
        if not (self.plan.view(view).bar_index and vl.code_dims):
            msg = (f"backward lineage of view {view!r} was not captured: declare details on "
                   "demand, or the view as a highlight source")
            raise NotCapturedError(msg)
        adhoc, driver = self._bars_adhoc(view, list(range(vl.nbars)) if bars is None else bars)
        need = self._need(view) | np.uint64(1 << self.state.adhoc)
        own = self._driver(self._others(view))
        if own[0] >= 0 and self._rows_of(*own) < self._rows_of(*driver):
            driver = own
        return need, driver

    def _bars_adhoc(self, view: str, bars) -> tuple[Test, tuple[int, list]]:
        """Point the spare filter at `bars` of `view`; (its test, (dim, candidate keys))."""
        vl = self.layout.view(view)
        if not isinstance(bars, (list, tuple)) or not all(
                isinstance(b, (int, np.integer)) and not isinstance(b, bool) for b in bars):
            msg = f"bars is a list of bar numbers, got {bars!r}"
            raise InteractionError(msg)
        bad = [b for b in bars if not 0 <= b < vl.nbars]
        if bad:
            msg = f"bars {bad} out of range: view {view!r} has bars 0..{vl.nbars - 1}"
            raise InteractionError(msg)
        if not vl.code_dims:
            msg = f"the bars of view {view!r} per row were not captured"
            raise NotCapturedError(msg)
        d = vl.code_dims[0]
        where = stats.shown(vl)
        kbars = np.flatnonzero(np.isin(where, list(bars)))  # clamped rows are in edge bars
        test = bars_test(d, self._vindex[view], kbars)
        self.state.set(self.state.adhoc, Selection((test,)))
        lut = self.layout.lut(view, 0)
        if len(vl.code_dims) > 1 and not vl.cells:  # heatmap: x part of the chosen cells
            ny = len({tuple(lab[1]) for lab in vl.labels}) if vl.labels else 1
            keys = np.flatnonzero(np.isin(lut[:-1], list({b - b % ny for b in bars})))
        else:
            keys = np.flatnonzero(np.isin(lut[:-1] // vl.width, kbars))
        kr = merge_ranges([(int(k), int(k)) for k in keys])
        return test, (d, np.asarray(kr, np.int64).reshape(-1, 2))

    def _driver(self, names: Sequence[str]) -> tuple[int, list]:
        """The indexed dim and key ranges of the most selective of filters `names`, or
        (-1, []) when scanning every row is cheaper."""
        best, best_rows = (-1, []), self.store.n_rows // 4
        for g in names:
            t = self.active[g].tests[0]
            kr = t.key_ranges(self.layout.dims[t.dim].nkeys)
            rows = self._rows_of(t.dim, kr)
            if rows < best_rows:
                best, best_rows = (t.dim, kr), rows
        return best[0], np.asarray(best[1], np.int64).reshape(-1, 2)

    def _rows_cost(self, d: int, kr) -> float:
        if d < 0:
            return P.scan_cost(self.store.n_rows, len(self.active), 0)
        return P.index_cost(self._rows_of(d, kr), len(kr), self._s.blocks, 0, self.store.n_rows,
                            len(self.active))

    def _rows_of(self, d: int, kranges) -> int:
        if d < 0:
            return self.store.n_rows
        p = self._s.keyprefix[d]
        return int(sum(p[b + 1] - p[a] for a, b in kranges))

    def _others(self, view: str) -> tuple[str, ...]:
        """Active filters that apply to `view` (its own brush never does; every one
        applies to ALL)."""
        return self._filters_of(view)[0]

    def _filters_of(self, view: str) -> tuple[tuple[str, ...], np.uint64]:
        """`_others(view)` and their bits (`_need`), kept per set of active filters: an
        update asks for them a few dozen times (~2 us each, computed)."""
        key = (tuple(self.active), view)
        hit = self._others_of.get(key)
        if hit is None:
            others = tuple(g for g in self.active if view == ALL or view in self._applies[g])
            if len(self._others_of) >= 4096:  # many filters, set in many orders
                self._others_of.clear()
            hit = self._others_of[key] = (others, np.uint64(sum(1 << self._fi[g] for g in others)))
        return hit

    def _vl(self, view: str) -> ViewLayout:
        return self._s.all if view == ALL else self.layout.view(view)

    def _others_key(self, name: str) -> tuple:
        return tuple((g, s.tests) for g, s in self.active.items() if g != name)

    def _need(self, view: str) -> np.uint64:
        return self._filters_of(view)[1]

    def _needs(self, views: list[str]) -> np.ndarray:
        out = np.zeros(len(self._vindex), np.uint64)
        for v in views:
            out[self._vindex[v]] = self._need(v)
        return out

    def _vi(self, views: list[str]) -> np.ndarray:
        return np.array([self._vindex[v] for v in views], np.int64)

    def _view_index(self, name: str) -> int:
        if name not in self._vindex or name == ALL:
            msg = f"unknown view {name!r}; views: {', '.join(self._vindex)}"
            raise InteractionError(msg)
        return self._vindex[name]

    def _view_data(self, name: str) -> ViewData:
        v, need = self.layout.view(name), self._need(name)
        if not need:  # no active filter applies to it: its base result, kept per store
            return self._s.base_view(name, lambda: self._data(v, self._s.base, need))
        return self._data(v, self.agg, need)

    def _data(self, v: ViewLayout, agg: Aggregates, need: np.uint64) -> ViewData:
        """A view's bars as shown (engine/stats.py) from `agg`; an order statistic whose
        blocks hold several keys reads the values of one or two blocks per bar from the
        rows passing `need`."""
        dim = self.layout.dims[v.mdim] if v.cells else None

        def gather(wanted, offs, kranges):
            return self._gather(v, need, wanted, offs, kranges)

        return stats.view_data(v, agg, dim, gather)

    def _gather(self, v: ViewLayout, need: np.uint64, wanted: np.ndarray, offs: np.ndarray,
                kranges) -> np.ndarray | None:
        """The measures of the rows passing `need` whose code in view v is wanted
        (wanted[code] = t: into out[offs[t]:offs[t + 1]]), candidates found through the
        measure dim's index when `kranges` of its keys hold few rows, else by a scan;
        None when the rows were not kept (memory budget)."""
        vi = self._vindex[v.name]
        lay = self.layout
        if not v.code_dims:  # pruned (capture keeps the cells of gathering views)
            return None
        needs = np.zeros(len(self._vindex), np.uint64)
        needs[vi] = need
        d = v.mdim
        kr = np.asarray(kranges, np.int64).reshape(-1, 2)
        rows = self._rows_of(d, kranges)
        driver = d if lay.dims[d].indexed and rows < self.store.n_rows // 4 else -1
        try:
            self._rows_guard(driver, np.array([vi]), needs)
            self._rows_guard(d, np.array([vi]), needs)
        except NotCapturedError:
            return None
        total, ntargets = int(offs[-1]), len(offs) - 1
        shards, L, q = self.store.shards, self._s.L, self.state.q

        def task(units):
            out = np.empty(total, np.float64)
            fill = np.zeros(ntargets, np.int64)
            for i, b0, b1 in units:
                K.gather(shards[i].arrays, L, q, vi, need, driver, kr, d, wanted, offs, fill,
                         out, b0, b1)
            return out, fill

        if driver >= 0:
            cost = P.index_cost(rows, len(kr), self._s.blocks, 1, self.store.n_rows, len(self.active))
        else:
            cost = P.scan_cost(self.store.n_rows, len(self.active), 1)
        parts = self._pool.run([lambda u=u: task(u) for u in self._split(self._threads(cost))]) \
            if self._s.units else []
        sizes = np.diff(offs)
        if len(parts) == 1 and np.array_equal(parts[0][1], sizes):  # one task read them all
            return parts[0][0]
        # each part's first fill[t] values of target t follow the earlier parts' (vector
        # operations over the values: a heatmap has tens of thousands of targets)
        result = np.empty(total, np.float64)
        at = offs[:-1].copy()
        tpos = np.repeat(np.arange(ntargets), sizes)  # the target of each value
        k = np.arange(total) - offs[tpos]  # and its place in the target's values
        for out, fill in parts:
            ok = k < fill[tpos]
            result[at[tpos[ok]] + k[ok]] = out[ok]
            at += fill
        if not np.array_equal(at, offs[1:]):
            msg = f"view {v.name}: the rows gathered disagree with the counts"
            raise RuntimeError(msg)
        return result

    def _filter(self, name: str, kinds: tuple[str, ...] | None):
        return find_filter(self._filters, name, kinds)

    def _interval(self, view: str, d: int, interval, axis: str = "interval") -> Test:
        if not isinstance(interval, (list, tuple)) or len(interval) != 2:
            msg = f"{axis} of view {view!r} is [lo, hi] (null for an open end), got {interval!r}"
            raise InteractionError(msg)
        lo, hi = (self._bound(view, d, x, f"{axis}[{i}]") for i, x in enumerate(interval))
        return interval_test(self.layout.dims[d], d, lo, hi, values=self._s.values[d],
                             edges=self._s.edges[d])

    def _bound(self, view: str, d: int, x, what: str):
        """A user bound as the dim's value type: numbers, times as UTC microseconds."""
        try:
            if self.layout.dims[d].value_type == "temporal":
                return V.time_bound(x)
            return V.number_bound(x)
        except InteractionError as e:
            msg = f"{what} of {view!r}: {e}"
            raise InteractionError(msg) from None


def _units(us: list[tuple[int, int, int]]) -> np.ndarray:
    """(shard, first block, end block) units as the kernels' *_units take them."""
    return np.array(us, np.int64).reshape(-1, 3)


def _keyed(sel: Selection | None) -> bool:
    """Does a clustered copy's keys decide, chunk by chunk, whether rows pass `sel` (none
    or one interval test), so that an incremental pass tests no row on it?"""
    return sel is None or (len(sel.tests) == 1 and sel.tests[0].mode == 1)


def tile_prefix(tile: Tile) -> dict[str, tuple]:
    out = {}
    for v, c in tile.cols.items():
        w = slice(c, c + _width(tile, v))
        out[v] = (tile.counts[:, w], tile.sums[:, w], tile.oks[:, w])
    return out


def _width(tile: Tile, view: str) -> int:
    cols = sorted(tile.cols.values()) + [tile.counts.shape[1]]
    c = tile.cols[view]
    return cols[cols.index(c) + 1] - c
