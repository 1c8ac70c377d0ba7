"""The kernels on the pool: a session's reads of the store's rows (engine/kernels.py), split
into units of (shard, first block, end block) among threads when the work is large, and
the guard that keeps them on the dims whose per-row keys were kept.

`Reads` is one session's: it reads the session's filter state (`state.q`, the active
filters) as it is at each call, and keeps how it split the store's blocks."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from brushfire.engine import kernels as K
from brushfire.engine import parallel
from brushfire.engine.copies import Copies, Copy
from brushfire.engine.costs import index_cost, worth_a_value_range
from brushfire.engine.shared import Shared
from brushfire.engine.state import FilterState, Selection, data_bounds, decidable_share
from brushfire.errors import NotCapturedError
from brushfire.lineage.arrays import Aggregates
from brushfire.lineage.store import LineageStore

SMALL_WORK = 2_000_000.0  # ns of estimated work below which an update runs on one thread


class Reads:
    """A session's reads of the store through the kernels, on its pool's threads."""

    def __init__(self, store: LineageStore, shared: Shared, pool: parallel.Pool, copies: Copies | None,
                 state: FilterState, active: dict[str, Selection]) -> None:
        self.store, self.layout, self._s = store, store.layout, shared
        self._pool, self._copies = pool, copies
        self.state, self.active = state, active  # the session's, as they change
        self._splits: dict[int, list] = {}  # n -> split(n)
        self._value_ranges: dict[tuple[int, int], tuple[float, float]] = {}  # (dim, key) -> value_range
        self._decidable: dict[int, list[float]] = {}  # dim -> value ranges' decidable shares summed, count

    def by_keys(self, d: int, kranges, signs, mf: int, q_old, vi, need, agg: Aggregates,
                q=None) -> None:
        """The rows of key ranges `kranges` of dim d counted into `agg` (with `signs`), through
        its clustered copy once built, else the store's key order: engine/kernels.py `by_keys`."""
        if not len(kranges):
            return
        self.rows_guard(d, vi, need)
        kr = np.asarray(kranges, np.int64).reshape(-1, 2)
        q = self.state.q if q is None else q
        q_old = q if q_old is None else q_old
        shards, L = self.store.shards, self._s.L
        copy = self.copy(d)

        typed = (self._s.shard_list, self._copies.typed(d)) if copy else None  # none: no shards
        cdim = self._copies.cdim(d) if copy else -1
        edim = self._copies.edim(d) if copy else -1

        def units(us, c, s, o):
            if typed is not None:
                if us:
                    K.clustered_units(*typed, as_units(us), d, cdim, edim, L, q, q_old, kr, signs, mf,
                                      vi, need, c, s, o)
                return
            for i, b0, b1 in us:
                K.by_keys(shards[i].arrays, L, q, q_old, d, kr, signs, mf, vi, need, b0, b1, c, s, o)

        cost = index_cost(self.rows_of(d, kranges), len(kranges), self._s.blocks, len(vi),
                            self.store.n_rows, len(self.active), copy is not None)
        threads = self.threads(cost)
        split = self.split_runs(copy, kr, threads) if copy is not None and threads > 1 else None
        self.run(units, agg, threads, split)

    def run(self, kernel_units, agg: Aggregates, threads: int, split=None) -> None:
        """Run `kernel_units(units, counts, sums, oks)` over the blocks, on `threads` (or
        on one thread per list of `split`)."""
        if threads <= 1:
            kernel_units(self.split(1)[0] if self._s.units else [], agg.counts, agg.sums, agg.oks)
            return
        nslots = self._s.nslots

        def task(units):
            c, s, o = np.zeros(nslots, np.int64), np.zeros(nslots, np.float64), np.zeros(nslots, np.int64)
            kernel_units(units, c, s, o)
            return c, s, o

        for c, s, o in self._pool.run([lambda u=u: task(u) for u in split or self.split(threads)]):
            agg.counts += c
            agg.sums += s
            agg.oks += o

    def threads(self, cost: float) -> int:
        """How many threads work of `cost` ns is split among."""
        return 1 if cost < SMALL_WORK else self._pool.workers + 1

    def split(self, n: int) -> list[list[tuple[int, int, int]]]:
        """The store's blocks as `n` lists of (shard, first block, end block), about equal
        (the same lists every time: callers only read them)."""
        out = self._splits.get(n)
        if out is None:
            out = self._splits[n] = self.split_blocks(n)
        return out

    def split_blocks(self, n: int) -> list[list[tuple[int, int, int]]]:
        """`split(n)` computed."""
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

    def split_runs(self, copy: list[Copy], kr: np.ndarray, n: int) -> list[list[tuple[int, int, int]]]:
        """The blocks of clustered copies as `n` lists of (shard, first block, end block)
        holding about equally many rows of the key ranges' runs. A copy's rows are in key
        order, so a range's run sits in a few of its blocks: split by blocks alone, one
        thread could get a whole run and the other none."""
        starts, at, lo, hi, shard, block = self._s.run_layout(copy)
        segs = np.empty((len(at), 4), np.int64)
        m = K.split_runs(starts, at, lo, hi, shard, block, kr, n, segs)
        out: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        for t, i, b0, b1 in segs[:m].tolist():
            out[t].append((i, b0, b1))
        return [u for u in out if u]

    def rows_guard(self, d: int, vi, need) -> None:
        """The kernels read keys of kept dims only (an index past them reads foreign
        memory): refuse anything else, whatever a caller missed."""
        lay, kept = self.layout, self.layout.row_dims
        if kept == len(lay.dims):
            return
        dims = [d] if d >= 0 else []
        for i in vi:
            v = self._s.all if i == len(lay.views) else lay.views[i]
            dims += list(v.code_dims) + ([v.mdim] if v.measure in ("lut", "raw") else [])
        union = int(np.bitwise_or.reduce(need[vi])) if len(vi) else 0
        dims += [int(t) for f in range(len(lay.filters) + 1) if union >> f & 1
                 for t in self.state.tdim[2 * f:2 * f + 2] if t >= 0]
        if any(x >= kept for x in dims):
            msg = "this needs per-row lineage the capture kept as cubes only (memory budget)"
            raise NotCapturedError(msg)

    def copy(self, d: int) -> list[Copy] | None:
        """Dim d's clustered copy per shard, when built (and this session uses copies)."""
        return self._copies.of(d) if self._copies is not None and d in self._copies.dims else None

    def value_range(self, d: int) -> Callable[[int], tuple[float, float] | None] | None:
        """Fine dim d's key k -> the smallest and largest value of its rows, read at the ends
        of its runs in copies that keep each key's rows in raw order
        (kernels.key_value_range), or None where reading them is not worth it
        (costs.worth_a_value_range: a bucket of few rows, of a dim whose buckets read so
        far had their values spread over them); None without such copies."""
        if self.copy(d) is None or self._copies.cdim(d) != d:
            return None
        typed, rc = (self._s.shard_list, self._copies.typed(d)), int(self._s.L[12][d])
        known = self._value_ranges  # (a store's values never change: each key read once)
        seen = self._decidable.setdefault(d, [1.0, 1])  # (shares summed, buckets): one decided at first
        edges = self._s.edges[d]
        bounds = data_bounds(self.layout.dims[d]) or (-math.inf, math.inf)  # (the outer buckets' ends)
        shards = len(self.store.shards)

        def value_range(k: int) -> tuple[float, float] | None:
            got = known.get((d, k))
            if got is None:
                if not worth_a_value_range(self.rows_of(d, [(k, k)]), shards, seen[0] / seen[1]):
                    return None
                got = known[(d, k)] = K.key_value_range(*typed, rc, k)
                lo_edge = float(edges[k]) if k > 0 else bounds[0]
                hi_edge = float(edges[k + 1]) if k + 1 < len(edges) else bounds[1]
                seen[0] += decidable_share(*got, lo_edge, hi_edge)
                seen[1] += 1
            return got

        return value_range

    def rows_of(self, d: int, kranges) -> int:
        """The rows with a key of dim d in `kranges` (d < 0: every row)."""
        if d < 0:
            return self.store.n_rows
        p = self._s.keyprefix[d]
        return int(sum(p[b + 1] - p[a] for a, b in kranges))


def as_units(us: list[tuple[int, int, int]]) -> np.ndarray:
    """(shard, first block, end block) units as the kernels' *_units take them."""
    return np.array(us, np.int64).reshape(-1, 3)
