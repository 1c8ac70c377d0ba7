"""numba kernels: the arithmetic of every interaction, over one shard's blocks at a time.
No classes, no I/O; every kernel is serial and releases the GIL, and `engine/parallel.py`
runs them on worker threads (a block range per task) and sums their partial results.

Arguments (built by engine/state.py from lineage/layout.py):
- S  one shard: (keys (D, n) uint16, raw (R, n) float64, meas (M, n) float64,
     order (T,) uint16, optr (I, nblocks) int64, zmin, zmax (D, nblocks) uint16).
     Block b holds rows [b*bsize, (b+1)*bsize); the rows of indexed dim slot i ordered by
     key are b*bsize + order[optr[i, b] + p] (p = 0..), or b*bsize + p when optr is -1.
- L  the layout: (vdim0, vdim1, vlut0, vlut1, luts, nbars, bar_off, mkind, mdim, mcol,
     moff, mluts, draw, dslot, bsize). A view v's bar for row r is
     min(luts[vlut0[v] + keys[vdim0[v], r]] (+ luts[vlut1[v] + keys[vdim1[v], r]]), nbars[v]);
     its measure is mluts[moff[v] + keys[mdim[v], r]] (mkind 1), meas[mcol[v], r] (mkind 2),
     or none (0). draw[d] is the raw row of fine dim d (-1: none), dslot[d] its index slot
     (-1: not indexed).
- Q  the filter state: (tmode, tlo, thi, telo, tehi, tvlo, tvhi, tbits, bits, tview, tdim).
     Filter f has tests 2f and 2f + 1 on dims tdim[t] (-1: no second test); per test t: mode 0 passes every row, 1 passes keys tlo..thi (empty when tlo > thi) except,
     for fine dims, rows of key telo with raw < tvlo and of key tehi with raw > tvhi; 2
     passes keys k with bits[tbits[t], k]; 3 passes rows whose bar in view tview[t] is b
     with bits[tbits[t], b]. The no-value key never passes modes 1 and 2.
- need (V,) uint64: the filters (bit f) a row must pass to count in view v.
Aggregates: counts (int64), sums (float64: the measure's non-missing values) and oks
(int64: how many) per slot; view v's bars are slots bar_off[v] .. bar_off[v] + nbars[v]
(the last one: rows the view drops).
"""

from __future__ import annotations

import numpy as np
from numba import njit

CHUNK = 2048  # rows tested together (a vectorizable loop per dim), then counted per view


@njit(nogil=True, cache=True, inline="always")
def _test_passes(keys, raw, r, t, L, Q) -> bool:
    """Does row r pass test t (scalar)?"""
    tmode, tlo, thi, telo, tehi, tvlo, tvhi, tbits, bits, tview, tdim = Q
    mode = tmode[t]
    if mode == 0:
        return True
    if mode == 3:
        return bits[tbits[t], _bar(keys, r, tview[t], L)]
    d = tdim[t]
    k = np.int64(keys[d, r])
    if mode == 2:
        return bits[tbits[t], k]
    if k < tlo[t] or k > thi[t]:
        return False
    if k == telo[t] and raw[L[12][d], r] < tvlo[t]:
        return False
    return not (k == tehi[t] and raw[L[12][d], r] > tvhi[t])


@njit(nogil=True, cache=True)
def row_fails(keys, raw, r, union, L, Q) -> np.uint64:
    """The filters in `union` that row r fails (bit f for filter f)."""
    fails = np.uint64(0)
    tdim = Q[10]
    f = 0
    m = union
    while m:
        if m & np.uint64(1):
            for j in range(2):
                t = 2 * f + j
                if tdim[t] < 0:
                    break
                if not _test_passes(keys, raw, r, t, L, Q):
                    fails |= np.uint64(1) << np.uint64(f)
                    break
        m >>= np.uint64(1)
        f += 1
    return fails


@njit(nogil=True, cache=True)
def _chunk_fails(keys, raw, c0, n, union, L, Q, fail):
    """fail[i] = the filters in `union` row c0 + i fails, for i < n (vectorized per dim)."""
    tmode, tlo, thi, telo, tehi, tvlo, tvhi, tbits, bits, tview, tdim = Q
    draw = L[12]
    for i in range(n):
        fail[i] = 0
    f = 0
    m = union
    while m:
        if m & np.uint64(1):
            bit = np.uint64(1) << np.uint64(f)
            for j in range(2):
                t = 2 * f + j
                d = tdim[t]
                if d < 0:
                    break
                mode = tmode[t]
                if mode == 1:
                    lo, hi = tlo[t], thi[t]
                    for i in range(n):
                        k = np.int64(keys[d, c0 + i])
                        if k < lo or k > hi:
                            fail[i] |= bit
                    elo, ehi = telo[t], tehi[t]
                    if elo >= 0 or ehi >= 0:  # fine dims: the edge buckets' rows by raw value
                        rc = draw[d]
                        vlo, vhi = tvlo[t], tvhi[t]
                        for i in range(n):
                            k = np.int64(keys[d, c0 + i])
                            if k == elo and raw[rc, c0 + i] < vlo:
                                fail[i] |= bit
                            if k == ehi and raw[rc, c0 + i] > vhi:
                                fail[i] |= bit
                elif mode == 2:
                    row = tbits[t]
                    for i in range(n):
                        if not bits[row, keys[d, c0 + i]]:
                            fail[i] |= bit
                elif mode == 3:
                    row, v = tbits[t], tview[t]
                    for i in range(n):
                        if not bits[row, _bar(keys, c0 + i, v, L)]:
                            fail[i] |= bit
        m >>= np.uint64(1)
        f += 1


@njit(nogil=True, cache=True, inline="always")
def _bar(keys, r, v, L) -> np.int64:
    vdim0, vdim1, vlut0, vlut1, luts, nbars = L[0], L[1], L[2], L[3], L[4], L[5]
    code = np.int64(luts[vlut0[v] + keys[vdim0[v], r]])
    if vdim1[v] >= 0:
        code += luts[vlut1[v] + keys[vdim1[v], r]]
        if code > nbars[v]:
            code = nbars[v]
    return code


@njit(nogil=True, cache=True, inline="always")
def _add(keys, meas, r, v, sign, L, counts, sums, oks):
    """Add row r, `sign` times, to its bar of view v."""
    slot = L[6][v] + _bar(keys, r, v, L)
    counts[slot] += sign
    kind = L[7][v]
    if kind != 0:
        x = L[11][L[10][v] + keys[L[8][v], r]] if kind == 1 else meas[L[9][v], r]
        if x == x:
            sums[slot] += sign * x
            oks[slot] += sign


@njit(nogil=True, cache=True)
def _block_skipped(S, b, skip, L, Q) -> bool:
    """Can block b be skipped? True when some filter in `skip` (filters every counted row
    must pass) has an interval test whose keys miss the block's key range (zone maps)."""
    zmin, zmax = S[5], S[6]
    tmode, tlo, thi, tdim = Q[0], Q[1], Q[2], Q[10]
    f = 0
    m = skip
    while m:
        if m & np.uint64(1):
            for j in range(2):
                t = 2 * f + j
                d = tdim[t]
                if d < 0:
                    break
                if tmode[t] == 1 and (thi[t] < zmin[d, b] or tlo[t] > zmax[d, b]):
                    return True
        m >>= np.uint64(1)
        f += 1
    return False


@njit(nogil=True, cache=True)
def scan(S, L, Q, views, need, skip, b0, b1, counts, sums, oks):
    """Add every row of blocks [b0, b1) that passes need[v] to view v, for v in `views`:
    a sequential pass, filters tested CHUNK rows at a time. Blocks where a filter in `skip`
    selects no key are skipped. Cost: O(rows x (filters + views))."""
    keys, raw, meas = S[0], S[1], S[2]
    n = keys.shape[1]
    bsize = L[14]
    union = np.uint64(0)
    for j in range(views.shape[0]):
        union |= need[views[j]]
    fail = np.empty(CHUNK, np.uint64)
    idx = np.empty(CHUNK, np.int64)
    for b in range(b0, b1):
        if skip and _block_skipped(S, b, skip, L, Q):
            continue
        e = min(n, (b + 1) * bsize)
        for c0 in range(b * bsize, e, CHUNK):
            cn = min(CHUNK, e - c0)
            _chunk_fails(keys, raw, c0, cn, union, L, Q, fail)
            for j in range(views.shape[0]):
                v = views[j]
                nv = need[v]
                m = 0
                for i in range(cn):  # compaction: no branch per row
                    idx[m] = i
                    m += 1 if (fail[i] & nv) == 0 else 0
                for q in range(m):
                    _add(keys, meas, c0 + idx[q], v, 1, L, counts, sums, oks)


@njit(nogil=True, cache=True, inline="always")
def _lower(keys, order, optr_ib, base, cnt, d, key) -> np.int64:
    """First position p in [0, cnt) of the block's key order whose key is >= `key`."""
    lo, hi = 0, cnt
    while lo < hi:
        mid = (lo + hi) >> 1
        r = base + (mid if optr_ib < 0 else np.int64(order[optr_ib + mid]))
        if np.int64(keys[d, r]) < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(nogil=True, cache=True)
def by_keys(S, L, Q, Qold, d, kranges, signs, mf, views, need, b0, b1, counts, sums, oks):
    """Rows of blocks [b0, b1) whose key on indexed dim d lies in one of `kranges`
    ((P, 2): lo, hi inclusive, disjoint), found through the backward index, each added to
    the views where it passes need[v]:
    - mf < 0: `signs[p]` times (recompute from a filter's rows; edge corrections);
    - mf >= 0: +1 if it passes filter mf under Q and not under Qold, -1 for the reverse,
      not at all when both agree (incremental update of moving filter mf; leave mf out of
      `need`). Cost: O(rows in the ranges x views), random reads within a block."""
    keys, raw, meas, order, optr = S[0], S[1], S[2], S[3], S[4]
    n = keys.shape[1]
    bsize = L[14]
    slot = L[13][d]
    union = np.uint64(0)
    for j in range(views.shape[0]):
        union |= need[views[j]]
    tdim = Q[10]
    for b in range(b0, b1):
        base = b * bsize
        cnt = min(n, base + bsize) - base
        ob = optr[slot, b]
        for p in range(kranges.shape[0]):
            a = _lower(keys, order, ob, base, cnt, d, kranges[p, 0])
            z = _lower(keys, order, ob, base, cnt, d, kranges[p, 1] + 1)
            for q in range(a, z):
                r = base + (q if ob < 0 else np.int64(order[ob + q]))
                if mf >= 0:
                    now = True
                    was = True
                    for jj in range(2):
                        t = 2 * mf + jj
                        if tdim[t] < 0:
                            break
                        now = now and _test_passes(keys, raw, r, t, L, Q)
                        was = was and _test_passes(keys, raw, r, t, L, Qold)
                    if now == was:
                        continue
                    sign = 1 if now else -1
                else:
                    sign = signs[p]
                fails = row_fails(keys, raw, r, union, L, Q) if union else np.uint64(0)
                for j in range(views.shape[0]):
                    v = views[j]
                    if (fails & need[v]) == 0:
                        _add(keys, meas, r, v, sign, L, counts, sums, oks)


@njit(nogil=True, cache=True)
def rows_passing(S, L, Q, need, d, kranges, b0, b1, skip, limit, out, start):
    """Write into `out` the global rids (shard rows + `start`) of rows in blocks [b0, b1)
    that pass `need`, in rid order, after skipping the first `skip` such rows; at most
    `limit`. With d >= 0 only rows whose key on indexed dim d is in `kranges` are
    candidates (found through the index), else every row. Returns (written, skipped)."""
    keys, raw, order, optr = S[0], S[1], S[3], S[4]
    n = keys.shape[1]
    bsize = L[14]
    written = 0
    skipped = 0
    buf = np.empty(bsize, np.int64)
    for b in range(b0, b1):
        base = b * bsize
        cnt = min(n, base + bsize) - base
        m = 0
        if d >= 0:
            slot = L[13][d]
            ob = optr[slot, b]
            for p in range(kranges.shape[0]):
                a = _lower(keys, order, ob, base, cnt, d, kranges[p, 0])
                z = _lower(keys, order, ob, base, cnt, d, kranges[p, 1] + 1)
                for q in range(a, z):
                    buf[m] = q if ob < 0 else np.int64(order[ob + q])
                    m += 1
            buf[:m].sort()
        else:
            for q in range(cnt):
                buf[q] = q
            m = cnt
        for q in range(m):
            r = base + buf[q]
            if need and row_fails(keys, raw, r, need, L, Q):
                continue
            if skipped < skip:
                skipped += 1
                continue
            if written == limit:
                return written, skipped
            out[written] = start + r
            written += 1
    return written, skipped


@njit(nogil=True, cache=True)
def count_passing(S, L, Q, need, d, kranges, b0, b1, skip) -> np.int64:
    """How many rows of blocks [b0, b1) pass `need` (candidates as in rows_passing)."""
    keys, raw, order, optr = S[0], S[1], S[3], S[4]
    n = keys.shape[1]
    bsize = L[14]
    total = 0
    if d < 0:
        fail = np.empty(CHUNK, np.uint64)
        for b in range(b0, b1):
            if skip and _block_skipped(S, b, skip, L, Q):
                continue
            e = min(n, (b + 1) * bsize)
            for c0 in range(b * bsize, e, CHUNK):
                cn = min(CHUNK, e - c0)
                _chunk_fails(keys, raw, c0, cn, need, L, Q, fail)
                for i in range(cn):
                    total += 1 if fail[i] == 0 else 0
        return total
    slot = L[13][d]
    for b in range(b0, b1):
        base = b * bsize
        cnt = min(n, base + bsize) - base
        ob = optr[slot, b]
        for p in range(kranges.shape[0]):
            a = _lower(keys, order, ob, base, cnt, d, kranges[p, 0])
            z = _lower(keys, order, ob, base, cnt, d, kranges[p, 1] + 1)
            for q in range(a, z):
                r = base + (q if ob < 0 else np.int64(order[ob + q]))
                if row_fails(keys, raw, r, need, L, Q) == 0:
                    total += 1
    return total


@njit(nogil=True, cache=True)
def tile(S, L, Q, views, need, cols, d, cblut, width, skip, b0, b1, counts, sums, oks):
    """A conditional cube (Falcon's data tile) of moving filter's dim d: for every row of
    blocks [b0, b1) with a key on d, the aggregates per (cube block of its key, bar of view
    v) over rows passing need[v] (which leaves the moving filter out), into cell
    cblut[key] * width + cols[j] + bar of views[j]. Rows without a key on d are left out.
    Cost: a sequential pass, as `scan`."""
    keys, raw, meas = S[0], S[1], S[2]
    n = keys.shape[1]
    bsize = L[14]
    union = np.uint64(0)
    for j in range(views.shape[0]):
        union |= need[views[j]]
    fail = np.empty(CHUNK, np.uint64)
    idx = np.empty(CHUNK, np.int64)
    nkey = cblut.shape[0] - 1
    for b in range(b0, b1):
        if skip and _block_skipped(S, b, skip, L, Q):
            continue
        e = min(n, (b + 1) * bsize)
        for c0 in range(b * bsize, e, CHUNK):
            cn = min(CHUNK, e - c0)
            _chunk_fails(keys, raw, c0, cn, union, L, Q, fail)
            for j in range(views.shape[0]):
                v = views[j]
                nv = need[v]
                col = cols[j]
                m = 0
                for i in range(cn):
                    idx[m] = i
                    ok = (fail[i] & nv) == 0 and np.int64(keys[d, c0 + i]) < nkey
                    m += 1 if ok else 0
                for q in range(m):
                    r = c0 + idx[q]
                    cell = cblut[keys[d, r]] * width + col + _bar(keys, r, v, L)
                    counts[cell] += 1
                    kind = L[7][v]
                    if kind != 0:
                        x = L[11][L[10][v] + keys[L[8][v], r]] if kind == 1 else meas[L[9][v], r]
                        if x == x:
                            sums[cell] += x
                            oks[cell] += 1


@njit(nogil=True, cache=True)
def bars_of(S, L, rows, v, out):
    """Bar of view v for each shard row in `rows` (forward lineage)."""
    keys = S[0]
    for i in range(rows.shape[0]):
        out[i] = _bar(keys, rows[i], v, L)
