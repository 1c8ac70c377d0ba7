"""What every session of one store shares, computed once per store (`Shared.of(store)`):
the kernels' layout arrays, the base result, zone maps, the clustered key copies, the
views' base results as shown."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from brushfire.engine import memory, parallel
from brushfire.engine.api import ViewData
from brushfire.engine.copies import (
    Copies,
    Copy,
    candidate_dims,
    hist_slots,
    keeps_rows,
    key_dtype,
    reserve,
    row_bytes,
    typed_list,
)
from brushfire.engine.ordering import Orders
from brushfire.engine.state import layout_arrays
from brushfire.lineage.arrays import Aggregates
from brushfire.lineage.layout import Layout, ViewLayout
from brushfire.lineage.store import Cube, LineageStore

ALL = "__all__"  # a view of one bar that every filter applies to: the selected rows


def kernel_layout(lay: Layout) -> tuple[ViewLayout, tuple]:
    """The ALL view of a layout (`Shared`) and the layout arrays the kernels take, with it
    last (the copies' chunk histograms count its bar too: capture/copies.py)."""
    all_view = ViewLayout(ALL, "all", "count", 1, lay.nslots, [None], code_dims=[0] if lay.dims else [])
    return all_view, layout_arrays(lay, extra=all_view if lay.dims else None)


def every_row(store: LineageStore | None, column: str) -> pa.ChunkedArray:
    """A details column of every row, in rid order, from the shards' snapshots."""
    if store is None:
        msg = "the store was replaced"
        raise ValueError(msg)
    tables = [s.snapshot for s in store.shards if s.snapshot is not None]
    if len(tables) < sum(1 for s in store.shards if s.n_rows):
        msg = "a shard has no detail snapshot"
        raise ValueError(msg)
    if not tables:
        msg = "no detail snapshot"
        raise ValueError(msg)
    # shards' types may differ (a column all null in one): promoted as store.take does
    return pa.concat_tables([t.select([column]) for t in tables], promote_options="permissive").column(0)


class Shared:
    """Per-store values every session uses, computed once. Besides the dashboard's views
    the kernels count one more, ALL: a single bar every filter applies to, so the rows
    passing every filter (the selection's size, in every reply) are kept up to date by
    the same updates as the views, never counted separately."""

    def __init__(self, store: LineageStore) -> None:
        lay = store.layout
        self.all, self.L = kernel_layout(lay)
        self.nslots = lay.nslots + 2
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
        # weakly: the store keeps this (store._engine), and a cycle would leave a store
        # replaced by a newer capture (serve --watch) to the cyclic collector, which a
        # server's frozen objects never see
        self._store_ref = weakref.ref(store)
        self._zones: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._short: tuple[int, list[tuple[int, int]]] | None = None  # rows_in_blocks' sizes
        self._copies: Copies | None = None
        self._copies_lock = threading.Lock()
        self._run_layouts: dict[int, tuple] = {}  # id of a dim's copies -> (them, run_layout)
        self._base_views: dict[str, ViewData] = {}  # view -> base_view's result
        # the shards' arrays as the kernels' *_units take them (None: no shard has rows)
        self.shard_list = typed_list(s.arrays for s in store.shards) if self.units else None
        self.shard_starts = np.array([s.start for s in store.shards], np.int64)
        # sorted details pages' column orders (no cycle: the column is read via the weakref)
        self.orders = Orders(lambda column, ref=self._store_ref: every_row(ref(), column), memory.orders())

    def copies(self, pool: parallel.Pool) -> Copies:
        """The store's clustered key copies (engine/copies.py): those its capture stored,
        mapped; for a store captured without them, built in memory, their build started on
        the first call: the filters' indexed dims with per-row keys, in the layout's
        order, under the memory cap."""
        with self._copies_lock:
            if self._copies is None:
                store = self._store
                if store.copies is not None:
                    self._copies = Copies.stored(store.shards, {
                        d: [Copy.of(*c) for c in cs]
                        for d, cs in store.copies.items()})
                    return self._copies
                lay = store.layout
                rows_kept = keeps_rows(lay)
                dtype = key_dtype(lay)
                dims, size = reserve(candidate_dims(lay), store.n_rows,
                                     row_bytes(lay.row_dims, rows_kept, hist_slots(self.L), dtype.itemsize))
                self._copies = Copies(store.shards, [d.nkeys for d in lay.dims], dims, rows_kept,
                                      size, self.L, store.raw_values)
                self._copies.dtype = dtype
                self._copies.start(pool)
            return self._copies

    def run_layout(self, copy: list) -> tuple:
        """A dim's copies' key starts side by side (shards x keys) and, per block of every
        shard with blocks: its shard's row there, its first and end position, its shard and
        its number in it (Reads.split_runs). Once per store and dim (`warm_copies` makes
        them before a dashboard is served): at 100M rows a fine dim's starts are 29 MB,
        stacked from 55 files, ~100 ms that a reply must not pay."""
        with self._copies_lock:
            cached = self._run_layouts.get(id(copy))
        if cached is None or cached[0] is not copy:
            bsize = self._store.layout.block_rows
            starts = np.stack([copy[i].starts for i, _ in self.units])
            at = np.concatenate([np.full(nb, j) for j, (_, nb) in enumerate(self.units)])
            block = np.concatenate([np.arange(nb, dtype=np.int64) for _, nb in self.units])
            shard = np.concatenate([np.full(nb, i) for i, nb in self.units])
            ends = starts[at, -1]
            lo = np.minimum(block * bsize, ends)
            hi = np.minimum(lo + bsize, ends)
            cached = (copy, (starts, at, lo, hi, shard, block))
            with self._copies_lock:
                self._run_layouts[id(copy)] = cached
        return cached[1]

    def warm_copies(self) -> None:
        """The run layouts of every dim whose copies are ready (`run_layout`)."""
        copies = self._copies
        for d in copies.dims if copies is not None and self.units else ():
            copy = copies.of(d)
            if copy is not None:
                self.run_layout(copy)

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

    @property
    def _store(self) -> LineageStore:
        store = self._store_ref()
        assert store is not None, "a store's shared values outlived it"
        return store

    @staticmethod
    def of(store: LineageStore) -> Shared:
        """The store's, made on first use and kept on the store."""
        cached = getattr(store, "_engine", None)
        if cached is None:
            cached = Shared(store)
            store._engine = cached
        return cached
