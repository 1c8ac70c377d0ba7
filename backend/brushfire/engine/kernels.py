"""numba kernels: the arithmetic of capture and of every interaction. No classes, no I/O.

Shared layouts (see lineage/arrays.py):
- codes    (N, V) uint16: codes[rid, v] = bar of row rid in view v; nbars[v] = dropped.
- bar_off  (V,) int64: view v's bars live at counts[bar_off[v] : bar_off[v] + nbars[v] + 1]
           in the flat aggregate arrays (the last slot collects dropped rows).
- measures (N, M) float64, NaN for null; mcol[v] = measure column of view v, or -1.
- ft       the filter test (a tuple, see `passes`): per row and filter f, fkeys[rid, f] is
           the row's position in f's sorted index (value filters) or its value key
           (partitioned filters), -1 when null; the session's state for f is a position
           range [lo[f], hi[f]) or a set of selected keys sel[f, key], plus a y interval
           for rect brushes.
- need     (V,) uint32: filters (bit f) a row must pass to count in view v: the active
           filters that apply to v, except its own.
- order    (n,) int32: rids in index order; a selection is position ranges
           [starts[k], stops[k]) of it.
Aggregates per slot: counts (int64), sums (float64, sum of non-null measure),
oks (int64, number of non-null measures).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

BATCH = 1024  # rows per call of `fail_masks`: per-row calls with the filter tuple are slow


@njit(cache=True)
def fail_masks(order, start, stop, identity, union, ft, out):
    """For the rows at order[start:stop] (rids start..stop-1 when `identity`), write into
    `out` the bitmask of the filters in `union` each row fails.
    A row passes filter f iff lo[f] <= fkeys[r, f] < hi[f] (kind 0: a position range)
    or sel[f, fkeys[r, f]] (kind 1: selected keys; -1 never passes), and, for rect
    brushes, ylo[f] <= yvals[r, ycols[f]] <= yhi[f] (NaN fails)."""
    fkeys, kinds, lo, hi, sel, ycols, yvals, ylo, yhi = ft
    for i in range(stop - start):
        r = start + i if identity else order[start + i]
        failed = np.uint32(0)
        m, f = union, 0
        while m:
            if m & 1:
                x = fkeys[r, f]
                ok = (lo[f] <= x < hi[f]) if kinds[f] == 0 else (x >= 0 and sel[f, x])
                if ok and ycols[f] >= 0:
                    ok = ylo[f] <= yvals[r, ycols[f]] <= yhi[f]
                if not ok:
                    failed |= np.uint32(1) << np.uint32(f)
            m >>= 1
            f += 1
        out[i] = failed


def no_filters(n: int) -> tuple:
    """A filter test with no filters, for aggregating every row."""
    return (np.zeros((n, 0), np.int32), np.zeros(0, np.int8), np.zeros(0, np.int64),
            np.zeros(0, np.int64), np.zeros((0, 1), np.bool_), np.zeros(0, np.int64),
            np.zeros((n, 0), np.float64), np.zeros(0, np.float64), np.zeros(0, np.float64))


@njit(cache=True)
def accumulate_ranges(order, starts, stops, signs, identity, need, views, ft,
                      codes, bar_off, measures, mcol, counts, sums, oks):
    """Add signs[k] x each row at order[starts[k]:stops[k]] (rids themselves when
    `identity`) to its bar in each view v of `views` where it passes need[v]. Used to
    recompute views from the rows of one filter (signs +1), to rescan all rows, and for
    incremental updates: the rows entering (+1) or leaving (-1) a moving filter, with
    that filter left out of `need`. Cost: O(rows x len(views)), random reads."""
    union = np.uint32(0)
    for i in range(views.shape[0]):
        union |= need[views[i]]
    failed = np.zeros(BATCH, np.uint32)
    for k in range(starts.shape[0]):
        sign = signs[k]
        for b in range(starts[k], stops[k], BATCH):
            e = min(stops[k], b + BATCH)
            if union:
                fail_masks(order, b, e, identity, union, ft, failed)
            for pos in range(b, e):
                r = pos if identity else order[pos]
                fm = failed[pos - b]
                for j in range(views.shape[0]):
                    v = views[j]
                    if fm & need[v] == 0:  # the row counts in v (hot loop, kept inline)
                        slot = bar_off[v] + codes[r, v]
                        counts[slot] += sign
                        c = mcol[v]
                        if c >= 0:
                            x = measures[r, c]
                            if x == x:
                                sums[slot] += sign * x
                                oks[slot] += sign


@njit(cache=True, parallel=True)
def accumulate_parallel(order, starts, stops, signs, identity, need, views, ft, codes, bar_off,
                        measures, mcol, nslots, nthreads):
    """`accumulate_ranges` into fresh (counts, sums, oks), the rows split evenly among
    `nthreads` threads with partial results merged. For many rows only: each thread
    allocates its own nslots-long arrays. Cost: O(rows x len(views)) / nthreads."""
    counts = np.zeros((nthreads, nslots), np.int64)
    sums = np.zeros((nthreads, nslots), np.float64)
    oks = np.zeros((nthreads, nslots), np.int64)
    cum = np.zeros(starts.shape[0] + 1, np.int64)  # rows before range k
    for k in range(starts.shape[0]):
        cum[k + 1] = cum[k] + max(0, stops[k] - starts[k])
    chunk = (cum[-1] + nthreads - 1) // nthreads
    for t in prange(nthreads):
        lo_row, hi_row = t * chunk, min(cum[-1], (t + 1) * chunk)
        for k in range(starts.shape[0]):  # this thread's share of each range
            a = max(lo_row, cum[k]) - cum[k]
            b = min(hi_row, cum[k + 1]) - cum[k]
            if a < b:
                accumulate_ranges(order, starts[k:k + 1] + a, starts[k:k + 1] + b, signs[k:k + 1],
                                  identity, need, views, ft, codes, bar_off, measures, mcol,
                                  counts[t], sums[t], oks[t])
    return counts.sum(axis=0), sums.sum(axis=0), oks.sum(axis=0)


def rescan(need, views, ft, codes, bar_off, measures, mcol, nslots, nthreads):
    """Aggregate every row passing need[v] into fresh (counts, sums, oks) for each view
    of `views`, scanning rids in order on `nthreads` threads. Cost: O(N x len(views))."""
    one = np.ones(1, np.int64)
    return accumulate_parallel(np.zeros(1, np.int32), one * 0, one * codes.shape[0], one, True,
                               need, views, ft, codes, bar_off, measures, mcol, nslots, nthreads)


@njit(cache=True, parallel=True)
def block_cubes(order, block_starts, codes, views, nbars, measures, mcols):
    """Group-by push-down cubes of one index for several target views at once: per block
    b of the index (positions block_starts[b]..block_starts[b+1]), the count / sum / ok
    per bar of each view in `views`, as prefix sums over blocks. Target i's cube is
    rows [0, nblocks] x columns [col_off[i], col_off[i] + nbars[i] + 1) of the returned
    (counts, sums, oks, col_off). Blocks are split among threads (disjoint rows, no
    conflicts). Cost: O(index rows x len(views)) / threads + O(blocks x bars)."""
    nb = block_starts.shape[0] - 1
    col_off = np.zeros(views.shape[0] + 1, np.int64)
    for i in range(views.shape[0]):
        col_off[i + 1] = col_off[i] + nbars[i] + 1
    width = col_off[-1]
    counts = np.zeros((nb + 1, width), np.int64)
    sums = np.zeros((nb + 1, width), np.float64)
    oks = np.zeros((nb + 1, width), np.int64)
    for b in prange(nb):
        for pos in range(block_starts[b], block_starts[b + 1]):
            r = order[pos]
            for i in range(views.shape[0]):
                col = col_off[i] + codes[r, views[i]]
                counts[b + 1, col] += 1
                c = mcols[i]
                if c >= 0:
                    x = measures[r, c]
                    if x == x:
                        sums[b + 1, col] += x
                        oks[b + 1, col] += 1
    for b in range(1, nb + 1):  # prefix sums: row b = blocks before b
        counts[b] += counts[b - 1]
        sums[b] += sums[b - 1]
        oks[b] += oks[b - 1]
    return counts, sums, oks, col_off


@njit(cache=True, parallel=True)
def conditional_cubes(order, starts, stops, identity, fm, bsize, nblocks, need, views, nbars,
                      ft, codes, measures, mcols, nthreads):
    """Cubes of filter `fm`'s index (blocks of `bsize` positions) over only the rows that
    pass the other filters: for each view i, the aggregates per (block, bar) of rows at
    order[starts[k]:stops[k]] (a driver filter's rows; rids themselves when `identity`)
    that pass need[views[i]] and are
    in fm's index (fkeys[r, fm] >= 0), as prefix sums over blocks. Built once when fm
    starts moving while other filters stay fixed (Falcon's data tile); each move is then
    a lookup. Layout as `block_cubes`. Cost: O(driver rows x views) / nthreads."""
    fkeys = ft[0]
    col_off = np.zeros(views.shape[0] + 1, np.int64)
    for i in range(views.shape[0]):
        col_off[i + 1] = col_off[i] + nbars[i] + 1
    width = col_off[-1]
    counts = np.zeros((nthreads, nblocks + 1, width), np.int64)
    sums = np.zeros((nthreads, nblocks + 1, width), np.float64)
    oks = np.zeros((nthreads, nblocks + 1, width), np.int64)
    union = np.uint32(0)
    for i in range(views.shape[0]):
        union |= need[views[i]]
    cum = np.zeros(starts.shape[0] + 1, np.int64)
    for k in range(starts.shape[0]):
        cum[k + 1] = cum[k] + stops[k] - starts[k]
    chunk = (cum[-1] + nthreads - 1) // nthreads
    for t in prange(nthreads):
        failed = np.zeros(BATCH, np.uint32)
        for k in range(starts.shape[0]):
            a = max(t * chunk, cum[k]) - cum[k] + starts[k]
            e = min((t + 1) * chunk, cum[k + 1]) - cum[k] + starts[k]
            for b in range(a, e, BATCH):
                be = min(e, b + BATCH)
                fail_masks(order, b, be, identity, union, ft, failed)
                for pos in range(b, be):
                    r = pos if identity else order[pos]
                    p = fkeys[r, fm]
                    if p < 0:
                        continue
                    blk = p // bsize + 1
                    for i in range(views.shape[0]):
                        v = views[i]
                        if failed[pos - b] & need[v] == 0:
                            col = col_off[i] + codes[r, v]
                            counts[t, blk, col] += 1
                            c = mcols[i]
                            if c >= 0:
                                x = measures[r, c]
                                if x == x:
                                    sums[t, blk, col] += x
                                    oks[t, blk, col] += 1
    tc, ts, to = counts.sum(axis=0), sums.sum(axis=0), oks.sum(axis=0)
    for blk in range(1, nblocks + 1):
        tc[blk] += tc[blk - 1]
        ts[blk] += ts[blk - 1]
        to[blk] += to[blk - 1]
    return tc, ts, to, col_off


@njit(cache=True)
def cube_lookup(pc, ps, po, block_starts, starts, stops, order, codes, v, measures, c,
                out_counts, out_sums, out_oks):
    """Aggregate of view v over rows at positions [starts[k], stops[k]) from the prefix cube
    (pc counts, ps sums, po oks): whole blocks by prefix differences, the partial blocks at
    each edge by scanning their rows, from whichever side of the edge is shorter.
    Output arrays have nbars + 1 slots. Cost: O(nbars + block size) per range."""
    nb = block_starts.shape[0] - 1
    has_m = c >= 0
    for k in range(starts.shape[0]):
        s, e = starts[k], stops[k]
        if s >= e:
            continue
        # a = first block boundary >= s, b = last block boundary <= e (as block indices)
        a = np.searchsorted(block_starts, s)
        b = np.searchsorted(block_starts, e, side="right") - 1
        if a > b:  # the range lies inside one block: scan it
            _scan(order, s, e, 1, codes, v, measures, c, out_counts, out_sums, out_oks)
            continue
        # snap each edge to the nearer boundary, correcting for the rows in between
        if a > 0 and block_starts[a] - s > s - block_starts[a - 1]:
            a -= 1
            _scan(order, block_starts[a], s, -1, codes, v, measures, c, out_counts, out_sums, out_oks)
        else:
            _scan(order, s, block_starts[a], 1, codes, v, measures, c, out_counts, out_sums, out_oks)
        if b < nb and block_starts[b + 1] - e < e - block_starts[b]:
            b += 1
            _scan(order, e, block_starts[b], -1, codes, v, measures, c, out_counts, out_sums, out_oks)
        else:
            _scan(order, block_starts[b], e, 1, codes, v, measures, c, out_counts, out_sums, out_oks)
        for j in range(out_counts.shape[0]):
            out_counts[j] += pc[b, j] - pc[a, j]
            if has_m:
                out_sums[j] += ps[b, j] - ps[a, j]
                out_oks[j] += po[b, j] - po[a, j]


@njit(cache=True)
def _scan(order, s, e, sign, codes, v, measures, c, counts, sums, oks):
    for pos in range(s, e):
        r = order[pos]
        code = codes[r, v]
        counts[code] += sign
        if c >= 0:
            x = measures[r, c]
            if x == x:
                sums[code] += sign * x
                oks[code] += sign


@njit(cache=True)
def partition_by_key(keys, nkeys):
    """Counting sort: rids grouped by key (keys < 0 are left out). Returns (order int32,
    offsets int64 of nkeys + 1) so that key k's rids are order[offsets[k]:offsets[k+1]],
    ascending. Cost: O(N + nkeys), two passes."""
    offsets = np.zeros(nkeys + 1, np.int64)
    for r in range(keys.shape[0]):
        if keys[r] >= 0:
            offsets[keys[r] + 1] += 1
    for k in range(nkeys):
        offsets[k + 1] += offsets[k]
    order = np.empty(offsets[nkeys], np.int32)
    fill = offsets[:-1].copy()
    for r in range(keys.shape[0]):
        k = keys[r]
        if k >= 0:
            order[fill[k]] = r
            fill[k] += 1
    return order, offsets


@njit(cache=True)
def selected_rids(order, starts, stops, need, ft, skip, limit, out):
    """Write into `out` up to `limit` rids at order[starts[k]:stops[k]] that pass `need`,
    after skipping the first `skip` that do. Returns how many were written."""
    n = 0
    failed = np.zeros(BATCH, np.uint32)
    for k in range(starts.shape[0]):
        for b in range(starts[k], stops[k], BATCH):
            e = min(stops[k], b + BATCH)
            fail_masks(order, b, e, False, need, ft, failed)
            for pos in range(b, e):
                if failed[pos - b]:
                    continue
                if skip > 0:
                    skip -= 1
                    continue
                if n == limit:
                    return n
                out[n] = order[pos]
                n += 1
    return n


@njit(cache=True)
def count_passing(order, starts, stops, need, ft):
    """Number of rows at order[starts[k]:stops[k]] that pass `need`."""
    n = 0
    failed = np.zeros(BATCH, np.uint32)
    for k in range(starts.shape[0]):
        for b in range(starts[k], stops[k], BATCH):
            e = min(stops[k], b + BATCH)
            fail_masks(order, b, e, False, need, ft, failed)
            for i in range(e - b):
                n += failed[i] == 0
    return n
