"""numba kernels: the arithmetic of every interaction, over one shard's blocks at a time.
No classes, no I/O; every kernel is serial and releases the GIL, and the session runs
them on worker threads (engine/parallel.py), a block range per task, and sums their
partial results.

Arguments (built by engine/state.py from lineage/layout.py):
- S  one shard: (keys (D, n) uint16, raw (F, n) float64, meas (M, n) float64,
     order (T,) uint16, optr (I, nblocks) int64, zmin, zmax (D, nblocks) uint16,
     fences (I, nblocks, bsize / FENCE) uint16, lat (A, n) uint32, lat16 (B, n) uint16,
     xrows (E,) uint32, xvals (E,) float64, rinfo (R, 9) int64, rbase (C, K) int64, lat8
     (G, n) uint8). Raw row rc (of R: one per fine dim kept per row) is a row of `raw` or,
     on a decimal lattice or as offsets of its bits, offsets in a row of `lat` or `lat16`
     (40 and 48 bits: `lat` and a row of `lat8` or `lat16`; lineage/lattice.py,
     lineage/store.py `kernel_arrays`);
     `_raw_at` reads a row's value either way.
     Block b holds rows [b*bsize, (b+1)*bsize); the rows of indexed dim slot i ordered by
     key are b*bsize + order[optr[i, b] + p] (p = 0..), or b*bsize + p when optr is -1;
     fences[i, b, j] is the key at position j * FENCE of that order, so that a search of a
     block's order reads a short array, then a few of its rows, instead of sixteen rows
     far apart (capture/keys.py writes them all).
- L  the layout: (vdim0, vdim1, vlut0, vlut1, luts, nbars, bar_off, mkind, mdim, mcol,
     moff, mluts, draw, dslot, bsize, width). A view v's code (its "bar" here: a bar, a
     reason pseudo-bar or a cell of either, lineage/layout.py) for row r is
     min(luts[vlut0[v] + keys[vdim0[v], r]] (+ luts[vlut1[v] + keys[vdim1[v], r]]), nbars[v]);
     code // width[v] is its bar or reason (width > 1: order-statistic cells).
     Its measure is mluts[moff[v] + keys[mdim[v], r]] (mkind 1), meas[mcol[v], r] (mkind 2),
     raw row mcol[v]'s value at r when finite (mkind 3: a fine dim's), or none (0). draw[d] is
     the raw row of fine dim d (-1: none), dslot[d] its index slot (-1: not indexed).
- Q  the filter state: (tmode, tlo, thi, telo, tehi, tvlo, tvhi, tbits, bits, tview, tdim).
     Filter f has tests 2f and 2f + 1 on dims tdim[t] (-1: no second test); per test t:
     mode 0 passes every row, 1 passes keys tlo..thi (empty when tlo > thi) except, for
     fine dims, rows of key telo with raw < tvlo and of key tehi with raw > tvhi; 2 passes
     keys k with bits[tbits[t], k]; 3 passes rows whose bar or reason (code // width) in
     view tview[t] is b with bits[tbits[t], b]. The no-value key never passes modes 1 and 2.
- need (V,) uint64: the filters (bit f) a row must pass to count in view v.
Aggregates: counts (int64), sums (float64: the measure's non-missing values) and oks
(int64: how many) per slot; view v's bars are slots bar_off[v] .. bar_off[v] + nbars[v]
(the last one: rows the view drops).

Every kernel works a CHUNK of rows at a time: it gathers their row numbers, tests the
filters one dim at a time over the chunk (vectorizable loops), then counts each view's
passing rows in one tight loop. Arrays are unpacked once per chunk, never per row: numba
reference-counts an array each time one is passed or taken from a tuple, and per row that
costs more than the arithmetic.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic
from numba.typed import List

from brushfire.lineage.lattice import FLOAT, LAT16, LAT32, POW10, SIGN, ULP, ULP16, ULP32, ULP40
from brushfire.lineage.layout import FENCE

CHUNK = 2048
NARROW_ROWS = 256  # a copy's key run at least this long is narrowed by binary searches (`_narrowed`)
_POW10 = POW10  # (a global array: numba freezes it into the code)
_ULP = ULP
_SIGN = SIGN
_FLOAT, _LAT16, _LAT32, _ULP16, _ULP32, _ULP40 = FLOAT, LAT16, LAT32, ULP16, ULP32, ULP40  # raw kinds
_NO_ROWS = np.empty(0, np.uint32)  # no clustered copy: raw values and measures at rows[i]
_NO_ROWS64 = np.empty(0, np.int64)  # rows unread: a sequential chunk's keys are at c0 + i


# --- typed lists (shards, copies), built by compiled code -------------------------------------


@njit(cache=True)
def list_of(item):
    """A typed list holding `item`. Built here, in code numba caches on disk, not by
    `List().append` from Python, which compiles the list's methods for each item type in
    every process (about 0.7 s per type: most of a server's start)."""
    out = List()
    out.append(item)
    return out


@njit(cache=True)
def list_append(items, item):
    """`list_of`'s list, one more item."""
    items.append(item)


# --- per chunk: filter tests, bars, counting ------------------------------------------------


@njit(nogil=True, cache=True, inline="always")
def _raw(S):
    """A shard's raw values as the kernels pass them: (raw, lat, lat16, xrows, xvals,
    rinfo, rbase, lat8)."""
    return S[1], S[8], S[9], S[10], S[11], S[12], S[13], S[14]


@njit(nogil=True, cache=True)
def _exception(xrows, xvals, x0, x1, r) -> np.float64:
    """The value of an exception row r (lineage/lattice.py): rows x0..x1 - 1 of xrows."""
    return xvals[x0 + np.searchsorted(xrows[x0:x1], np.uint32(r))]


@njit(nogil=True, cache=True, inline="always")
def _raw_at(R, rc, r, k) -> np.float64:
    """Raw row rc's value at shard row r, whose key on the fine dim is k (NaN: none), as
    lineage/lattice.py `decode` gives it: R = `_raw(S)`, whose rinfo[rc] = (kind, row in
    the kind's array, step j, base of bucket 0, first and end exception, row of the high
    bits, row of rbase, the no-value key)."""
    raw64, lat, lat16, xrows, xvals, rinfo, rbase, lat8 = R
    kind, row = rinfo[rc, 0], rinfo[rc, 1]
    if kind == _FLOAT:
        return raw64[row, r]
    if k >= rinfo[rc, 8]:
        return np.nan
    if kind in (_LAT16, _ULP16):  # uint16 offsets: on the lattice, or of bits
        o = np.int64(lat16[row, r])
        top = np.int64(0xFFFF)
    elif kind in (_LAT32, _ULP32):
        o = np.int64(lat[row, r])
        top = np.int64(0xFFFFFFFF)
    elif kind == _ULP40:  # the high 8 bits in lat8
        o = np.int64(lat[row, r]) | (np.int64(lat8[rinfo[rc, 6], r]) << 32)
        top = np.int64(0xFFFFFFFFFF)
    else:  # ULP48: the high 16 in lat16
        o = np.int64(lat[row, r]) | (np.int64(lat16[rinfo[rc, 6], r]) << 32)
        top = np.int64(0xFFFFFFFFFFFF)
    if o == top:
        return _exception(xrows, xvals, rinfo[rc, 4], rinfo[rc, 5], r)
    n = (rinfo[rc, 3] if k == 0 else rbase[rinfo[rc, 7], k]) + o
    j = rinfo[rc, 2]
    if j >= _ULP:  # ordered bits (lattice.ordered), shifted
        u = n << (j - _ULP)
        m = u >> 63  # -1 for a negative value, else 0 (no branch: numba's inlining keeps one
        # definition per name)
        return np.int64(((u ^ m) - m) | (m & _SIGN)).view(np.float64)
    return np.float64(n) * _POW10[j] if j >= 0 else np.float64(n) / _POW10[-j]


@njit(nogil=True, cache=True, inline="always")
def _shard_row(rows, crow, c0, i) -> np.int64:
    """The shard row of chunk row i, where raw values and stored measures are: on a
    clustered copy (crow not empty: read only where a value is) crow at the row's position,
    c0 + i or rows[i] (rows gathered from the copy); else rows[i]."""
    if crow.shape[0]:
        return np.int64(crow[c0 + i if c0 >= 0 else rows[i]])
    return np.int64(rows[i])


@njit(nogil=True, cache=True)
def _fails(keys, raw, rows, c0, n, union, L, Q, fail, crow, cdim=-1):
    """fail[i] = the filters in `union` that row i of the chunk fails, for i < n: its keys
    are at column rows[i] of `keys`, or at c0 + i when c0 >= 0 (a sequential pass: the
    tests vectorize); its raw values at `_shard_row` (a clustered copy's keys are in
    another order than the shard's raw values). cdim: the fine dim whose clustered copy
    `keys` is, its keys' rows in raw order (`cluster`), else -1."""
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
                    if hi < lo:  # empty
                        for i in range(n):
                            fail[i] |= bit
                        continue
                    span = np.uint64(hi - lo)
                    elo, ehi = telo[t], tehi[t]
                    fine = (elo >= 0 or ehi >= 0) and draw[d] >= 0
                    if not fine:
                        if c0 >= 0:  # branchless: (k - lo) as unsigned > span  <=>  k outside lo..hi
                            kd = keys[d, c0:c0 + n]
                            for i in range(n):
                                fail[i] |= bit * np.uint64(np.uint64(np.int64(kd[i]) - lo) > span)
                        else:
                            for i in range(n):
                                fail[i] |= bit * np.uint64(np.uint64(np.int64(keys[d, rows[i]]) - lo) > span)
                        continue
                    # fine dims: the rows of the edge buckets elo, ehi are decided by their raw
                    # values; they are few, so the test's pass also finds the span from the
                    # first to the last, and only that span is read again
                    e0 = np.uint16(elo if elo >= 0 else 65535)  # 65535: no uint16 key
                    e1 = np.uint16(ehi if ehi >= 0 else 65535)
                    first, last = n, -1  # the span of the chunk's edge-bucket rows
                    if c0 >= 0:
                        kd = keys[d, c0:c0 + n]
                        for i in range(n):
                            k = kd[i]
                            fail[i] |= bit * np.uint64(np.uint64(np.int64(k) - lo) > span)
                            h = (k == e0) | (k == e1)
                            first = min(first, i if h else n)
                            last = max(last, i if h else -1)
                    else:
                        for i in range(n):
                            k = keys[d, rows[i]]
                            fail[i] |= bit * np.uint64(np.uint64(np.int64(k) - lo) > span)
                            h = (k == e0) | (k == e1)
                            first = min(first, i if h else n)
                            last = max(last, i if h else -1)
                    rc = draw[d]
                    vlo, vhi = tvlo[t], tvhi[t]
                    if d == cdim and c0 >= 0:
                        _edge_runs(keys[d], raw, rc, crow, c0, first, last, elo, ehi, vlo, vhi, bit, fail)
                        continue
                    for i in range(first, last + 1):
                        k = np.int64(keys[d, c0 + i if c0 >= 0 else rows[i]])
                        if k in (elo, ehi):
                            x = _raw_at(raw, rc, _shard_row(rows, crow, c0, i), k)
                            if (k == elo and x < vlo) or (k == ehi and x > vhi):
                                fail[i] |= bit
                elif mode == 2:
                    row = tbits[t]
                    for i in range(n):
                        r = c0 + i if c0 >= 0 else rows[i]
                        fail[i] |= bit * np.uint64(not bits[row, keys[d, r]])
                elif mode == 3:
                    row = tbits[t]
                    rr = np.empty(n, np.int64)
                    for i in range(n):
                        rr[i] = c0 + i if c0 >= 0 else rows[i]
                    bars = np.empty(n, np.int64)
                    _bars(keys, rr, -1, n, tview[t], L, bars)
                    w = L[15][tview[t]]
                    for i in range(n):
                        fail[i] |= bit * np.uint64(not bits[row, bars[i] // w])
        m >>= np.uint64(1)
        f += 1


@njit(nogil=True, cache=True)
def _edge_runs(kd, raw, rc, crow, c0, first, last, elo, ehi, vlo, vhi, bit, fail) -> None:
    """`_fails`' fine edge buckets on the dim's own clustered copy (`cluster`: a key's rows
    in raw order): chunk rows first..last, at positions c0 + i, hold runs of one key each;
    in key elo's run the rows with raw < vlo are a prefix, in key ehi's those with
    raw > vhi a suffix, each found by a binary search that reads a few raw values instead
    of every row's (scattered over the shard: ~75 ns each)."""
    i = first
    while i <= last:
        k = np.int64(kd[c0 + i])
        j = i + 1
        while j <= last and kd[c0 + j] == kd[c0 + i]:
            j += 1
        if k == elo:  # the first row of the run with raw >= vlo
            a, z = i, j
            while a < z:
                mid = (a + z) // 2
                if _raw_at(raw, rc, np.int64(crow[c0 + mid]), k) < vlo:
                    a = mid + 1
                else:
                    z = mid
            for r in range(i, a):
                fail[r] |= bit
        if k == ehi:  # the first row of the run with raw > vhi
            a, z = i, j
            while a < z:
                mid = (a + z) // 2
                if _raw_at(raw, rc, np.int64(crow[c0 + mid]), k) > vhi:
                    z = mid
                else:
                    a = mid + 1
            for r in range(a, j):
                fail[r] |= bit
        i = j


@njit(nogil=True, cache=True)
def _passes(keys, raw, rows, n, f, L, Q, out):
    """out[i] = does row rows[i] pass filter f?"""
    fail = np.empty(n, np.uint64)
    _fails(keys, raw, rows, -1, n, np.uint64(1) << np.uint64(f), L, Q, fail, _NO_ROWS)
    for i in range(n):
        out[i] = fail[i] == 0


@njit(nogil=True, cache=True)
def _bars(keys, rows, c0, n, v, L, out):
    """out[i] = the bar of view v that row i of the chunk falls in (nbars[v]: dropped);
    the chunk's rows are rows[i], or c0 + i when c0 >= 0."""
    vdim0, vdim1, vlut0, vlut1, luts, nbars = L[0], L[1], L[2], L[3], L[4], L[5]
    d0, o0, d1, o1, nb = vdim0[v], vlut0[v], vdim1[v], vlut1[v], nbars[v]
    if c0 >= 0:
        k0 = keys[d0, c0:c0 + n]
        for i in range(n):
            out[i] = luts[o0 + k0[i]]
        if d1 >= 0:
            k1 = keys[d1, c0:c0 + n]
            for i in range(n):
                code = out[i] + luts[o1 + k1[i]]
                out[i] = code if code < nb else nb
    else:
        for i in range(n):
            out[i] = luts[o0 + keys[d0, rows[i]]]
        if d1 >= 0:
            for i in range(n):
                code = out[i] + luts[o1 + keys[d1, rows[i]]]
                out[i] = code if code < nb else nb


@njit(nogil=True, cache=True)
def _raw_values(kd, R, rc, rows, c0, n, out, crow):
    """out[i] = raw row rc's value at row i of the chunk (found as in `_fails`; kd: the fine
    dim's keys), as `_raw_at` gives it. A row a sum reads is float64 (capture/keys.py), read
    here with the arrays taken from R once a chunk, not once a row; one coded otherwise (on
    the lattice or as bits' offsets: a store packed without `floats`) is decoded row by row."""
    raw64, rinfo = R[0], R[5]
    row = rinfo[rc, 1]
    if rinfo[rc, 0] == _FLOAT:
        for i in range(n):
            out[i] = raw64[row, _shard_row(rows, crow, c0, i)]
        return
    for i in range(n):
        out[i] = _raw_at(R, rc, _shard_row(rows, crow, c0, i), np.int64(kd[c0 + i if c0 >= 0 else rows[i]]))


@njit(nogil=True, cache=True)
def _measures(keys, raw, meas, rows, c0, n, v, L, out, crow):
    """out[i] = view v's measure of row i of the chunk (NaN: missing); keys, raw values and
    stored measures are found as in `_fails`. A raw value (kind 3) is a measure when
    finite, as a stored one (capture/columns.measure: ±inf is missing)."""
    kind, md, mc, mo, mluts = L[7][v], L[8][v], L[9][v], L[10][v], L[11]
    if kind == 3:
        _raw_values(keys[md], raw, mc, rows, c0, n, out, crow)
        for i in range(n):
            out[i] = out[i] if np.isfinite(out[i]) else np.nan
        return
    for i in range(n):
        out[i] = (mluts[mo + keys[md, c0 + i if c0 >= 0 else rows[i]]] if kind == 1
                  else meas[mc, _shard_row(rows, crow, c0, i)])


@njit(nogil=True, cache=True)
def _count_chunk(keys, raw, meas, rows, c0, n, fail, wts, views, need, L, counts, sums, oks,
                 bars, xs, crow, inv=False):
    """Add each row i of the chunk wts[i] times to its bar of each view v it passes
    (fail[i] & need[v] == 0; with `inv`, each view it fails instead: a complement). Views
    with few bars count without a branch per row (rows that do not count go to a spare
    bar) into four copies of their bars, so that rows landing in the same bar one after
    another do not wait for each other's store. crow: the shard rows of a clustered copy's
    positions (`_shard_row`), where stored measures are read only for the rows that count."""
    bar_off, nbars, mkind = L[6], L[5], L[7]
    for j in range(views.shape[0]):
        v = views[j]
        nv = need[v]
        base, nb = bar_off[v], nbars[v]
        if nb < 256:
            # rows that fail go to a spare bar: the loop below stores unconditionally
            spare = nb + 1
            if L[1][v] < 0:  # one dim: its bar looked up and the spare chosen in one loop
                d0, lut = L[0][v], L[4][L[2][v]:]
                if c0 >= 0:
                    k0 = keys[d0, c0:c0 + n]
                    for q in range(n):  # the bar read for every row: a select, no branch
                        b = lut[k0[q]]
                        bars[q] = b if ((fail[q] & nv) == 0) != inv else spare
                else:
                    for q in range(n):
                        b = lut[keys[d0, rows[q]]]
                        bars[q] = b if ((fail[q] & nv) == 0) != inv else spare
            else:
                _bars(keys, rows, c0, n, v, L, bars)
                for q in range(n):
                    bars[q] = bars[q] if ((fail[q] & nv) == 0) != inv else spare
            h = np.zeros((4, nb + 2), np.int64)
            q = 0
            while q + 4 <= n:
                h[0, bars[q]] += wts[q]
                h[1, bars[q + 1]] += wts[q + 1]
                h[2, bars[q + 2]] += wts[q + 2]
                h[3, bars[q + 3]] += wts[q + 3]
                q += 4
            while q < n:
                h[0, bars[q]] += wts[q]
                q += 1
            for b in range(nb + 1):
                counts[base + b] += h[0, b] + h[1, b] + h[2, b] + h[3, b]
        else:
            _bars(keys, rows, c0, n, v, L, bars)
            for q in range(n):
                if ((fail[q] & nv) == 0) != inv:
                    counts[base + bars[q]] += wts[q]
        if mkind[v] >= 2 and crow.shape[0]:
            # stored measures (and raw values) are at shard rows, scattered: read only those
            # of the rows that count, gathered first without a branch (a branch taken at
            # random would keep the reads from overlapping)
            at, pos = np.empty(n, np.int64), np.empty(n, np.int64)
            k = 0
            for q in range(n):
                at[k] = q
                pos[k] = c0 + q if c0 >= 0 else rows[q]
                k += 1 if ((fail[q] & nv) == 0) != inv else 0
            _measures(keys, raw, meas, pos, -1, k, v, L, xs, crow)
            for t in range(k):
                x = xs[t]
                if x == x:
                    q = at[t]
                    sums[base + bars[q]] += wts[q] * x
                    oks[base + bars[q]] += wts[q]
        elif mkind[v] != 0:
            _measures(keys, raw, meas, rows, c0, n, v, L, xs, crow)
            for q in range(n):
                x = xs[q]
                if ((fail[q] & nv) == 0) != inv and x == x:  # others' bars may be the spare one
                    sums[base + bars[q]] += wts[q] * x
                    oks[base + bars[q]] += wts[q]


@njit(nogil=True, cache=True)
def _block_skipped(zmin, zmax, b, skip, Q) -> bool:
    """Can block b be skipped? True when some filter in `skip` (filters every counted row
    must pass) has an interval test whose keys miss the block's key range (zone maps)."""
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
def _lower(keys, order, ob, base, cnt, d, key, lo=0) -> np.int64:
    """First position p in [lo, cnt) of the block's key order whose key is >= `key` (the
    keys before lo are below it)."""
    hi = cnt
    while lo < hi:
        mid = (lo + hi) >> 1
        r = base + (mid if ob < 0 else np.int64(order[ob + mid]))
        if np.int64(keys[d, r]) < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(nogil=True, cache=True)
def _lower_fenced(keys, order, fences, slot, b, ob, base, cnt, d, key, lo) -> np.int64:
    """As `_lower` (positions below lo known below `key`), the fence keys first: the
    answer lies between two fences."""
    jl, jh = 0, (cnt + FENCE - 1) // FENCE
    while jl < jh:  # the first fence at or above key
        mid = (jl + jh) >> 1
        if np.int64(fences[slot, b, mid]) < key:
            jl = mid + 1
        else:
            jh = mid
    hi = min(cnt, jl * FENCE)
    if lo >= hi:
        return lo
    return _lower(keys, order, ob, base, hi, d, key, max(lo, (jl - 1) * FENCE + 1 if jl else 0))


@njit(nogil=True, cache=True)
def _gallop(keys, order, ob, base, start, cnt, d, key) -> np.int64:
    """As `_lower` from position `start`, in O(log(answer - start)) steps: the end of a key
    range, found from its start (ranges hold few rows of a block: a few steps, where a
    binary search of the whole block takes sixteen, each a read from memory)."""
    step = 1
    lo = start
    while lo + step <= cnt:
        p = lo + step - 1
        r = base + (p if ob < 0 else np.int64(order[ob + p]))
        if np.int64(keys[d, r]) >= key:
            return _lower(keys, order, ob, base, p, d, key, lo)
        lo = p + 1
        step <<= 1
    return _lower(keys, order, ob, base, cnt, d, key, lo)


@njit(nogil=True, cache=True)
def _span(keys, order, fences, slot, b, ob, base, cnt, d, lo_key, hi_key, prev, prev_hi) -> tuple:
    """Positions [a, z) of keys lo_key..hi_key in block b's key order; `prev`: where the
    last range searched, of keys up to prev_hi, ended (a start when this one is above it)."""
    a = _lower_fenced(keys, order, fences, slot, b, ob, base, cnt, d, lo_key,
                      prev if lo_key > prev_hi else 0)
    return a, _gallop(keys, order, ob, base, a, cnt, d, hi_key + 1)


# --- kernels ---------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def scan(S, L, Q, views, need, skip, b0, b1, counts, sums, oks):
    """Add every row of blocks [b0, b1) that passes need[v] to view v, for v in `views`:
    a sequential pass. A view skips the blocks where one of its filters selects no key
    (zone maps), and a block no view needs is not read; rows that count in no view are
    dropped before counting. `skip` is unused (kept for callers' symmetry with count).
    Cost: O(rows x (filters + views))."""
    keys, raw, meas, zmin, zmax = S[0], _raw(S), S[2], S[5], S[6]
    n = keys.shape[1]
    bsize = L[14]
    fail = np.empty(CHUNK, np.uint64)
    rows = np.empty(CHUNK, np.int64)
    wts = np.ones(CHUNK, np.int64)
    rows2 = np.empty(2 * CHUNK, np.int64)
    fail2 = np.empty(2 * CHUNK, np.uint64)
    wts2 = np.empty(2 * CHUNK, np.int64)
    bars = np.empty(2 * CHUNK, np.int64)
    xs = np.empty(2 * CHUNK, np.float64)
    here = np.empty(views.shape[0], np.int64)
    for b in range(b0, b1):
        nv = 0
        for j in range(views.shape[0]):  # the views this block can count in
            v = views[j]
            if not (need[v] and _block_skipped(zmin, zmax, b, need[v], Q)):
                here[nv] = v
                nv += 1
        if nv == 0:
            continue
        vb = here[:nv]
        union = np.uint64(0)
        common = ~np.uint64(0)  # filters every view needs: a row failing one counts in none
        for j in range(nv):
            union |= need[vb[j]]
            common &= need[vb[j]]
        dead2 = union != 0 and _dead_when_two_fail(union, vb, need)
        e = min(n, (b + 1) * bsize)
        m = 0  # rows gathered, not yet counted (the block's views count them)
        for c0 in range(b * bsize, e, CHUNK):
            cn = min(CHUNK, e - c0)
            for i in range(cn):  # where raw values and stored measures are read
                rows[i] = c0 + i
            _fails(keys, raw, rows, c0, cn, union, L, Q, fail, _NO_ROWS)
            alive = _alive_count(fail, wts, cn, common, dead2) if dead2 or common else cn
            if _worth_gathering(alive, cn, nv):
                m = _alive(fail, wts, c0, cn, common, dead2, rows2, fail2, wts2, m, alive)
                m = _flush(keys, raw, meas, rows2, m, False, fail2, wts2, vb, need, L, counts, sums,
                           oks, bars, xs, _NO_ROWS)
                continue
            _count_chunk(keys, raw, meas, rows, c0, cn, fail, wts, vb, need, L, counts, sums, oks,
                         bars, xs, _NO_ROWS)
        _flush(keys, raw, meas, rows2, m, True, fail2, wts2, vb, need, L, counts, sums, oks,
               bars, xs, _NO_ROWS)


@njit(nogil=True, cache=True)
def scan_units(shards, units, L, Q, views, need, skip, counts, sums, oks):
    """`scan` over units (shard, first block, end block), shards[i] the shard's arrays in a
    typed list: one call for many shards (see `clustered_units`)."""
    for u in range(units.shape[0]):
        scan(shards[units[u, 0]], L, Q, views, need, skip, units[u, 1], units[u, 2], counts, sums, oks)


@njit(nogil=True, cache=True)
def _dead(f, w, common, dead2) -> bool:
    """Does a row failing filters `f`, of weight w, count in no view? (`common`: filters
    every view needs; dead2: no view leaves out two filters.)"""
    return w == 0 or (f & common) != 0 or (dead2 and (f & (f - np.uint64(1))) != 0)


@njit(nogil=True, cache=True)
def _alive_count(fail, wts, n, common, dead2) -> np.int64:
    """How many of the chunk's rows count in some view: a pass without stores (it
    vectorizes), so that a chunk where most rows count pays little for asking."""
    alive = 0
    for i in range(n):
        alive += 0 if _dead(fail[i], wts[i], common, dead2) else 1
    return alive


@njit(nogil=True, cache=True)
def _worth_gathering(alive, n, nv) -> bool:
    """Would gathering a chunk's `alive` rows of n that count somewhere and counting them in
    `nv` views through their positions beat counting every row sequentially? Estimated per
    row: 1 ns to gather, 1.5 ns a view through positions, 1.2 ns a view in sequence — with
    one view, when under 13 % of the rows count; with five, under 67 %."""
    return alive * 15 * nv < n * (12 * nv - 10)


@njit(nogil=True, cache=True)
def _alive(fail, wts, c0, n, common, dead2, pos, fail2, wts2, m, alive) -> np.int64:
    """Gather the chunk's rows (at c0 + i) that count in some view (`alive` of them): their
    positions, fails and weights into pos, fail2, wts2 from index m on; returns the new
    end. Few: a branch per row, rarely taken; else without a branch, every row stored and
    the dead ones overwritten (a branch taken at random costs more than the stores).
    Callers gather from several chunks before counting (`_flush`): counting has a cost
    per call."""
    if alive * 8 < n:
        for i in range(n):
            f = fail[i]
            if not _dead(f, wts[i], common, dead2):
                pos[m] = c0 + i
                fail2[m] = f
                wts2[m] = wts[i]
                m += 1
        return m
    for i in range(n):
        f = fail[i]
        pos[m] = c0 + i
        fail2[m] = f
        wts2[m] = wts[i]
        m += 0 if _dead(f, wts[i], common, dead2) else 1
    return m


@njit(nogil=True, cache=True)
def _flush(keys, raw, meas, pos, m, force, fail2, wts2, views, need, L, counts, sums, oks, bars, xs,
           crow, inv=False) -> np.int64:
    """Count the gathered rows (`inv`: as a complement) once there are a chunk's worth (or
    any, with `force`); returns how many are left gathered (0 or m). `pos` etc. hold
    2 x CHUNK; crow: as in `_count_chunk` (pos: a clustered copy's positions)."""
    if m == 0 or (m < CHUNK and not force):
        return m
    _count_chunk(keys, raw, meas, pos, -1, m, fail2, wts2, views, need, L, counts, sums, oks,
                 bars, xs, crow, inv)
    return 0


@njit(nogil=True, cache=True)
def _failing_count(fail, n) -> np.int64:
    """How many of the chunk's rows fail some filter (vectorizes)."""
    k = 0
    for i in range(n):
        k += 1 if fail[i] != 0 else 0
    return k


@njit(nogil=True, cache=True)
def _failing(fail, c0, n, w, pos, fail2, wts2, m) -> np.int64:
    """Gather the chunk's rows (at c0 + i) that fail some filter, with weight w, into pos,
    fail2, wts2 from index m on (every row stored, the passing ones overwritten); returns
    the new end."""
    for i in range(n):
        f = fail[i]
        pos[m] = c0 + i
        fail2[m] = f
        wts2[m] = w
        m += 1 if f != 0 else 0
    return m


@njit(nogil=True, cache=True)
def _add_hist(hist, c, w, views, L, counts) -> None:
    """Add w times grid chunk c's histogram (every row of it, unfiltered) to the views'
    bars."""
    bar_off, nbars = L[6], L[5]
    for j in range(views.shape[0]):
        v = views[j]
        base = bar_off[v]
        for b in range(nbars[v] + 1):
            counts[base + b] += w * np.int64(hist[c, base + b])


@njit(nogil=True, cache=True)
def chunk_zones(C, grid, out):
    """Zone maps of a clustered copy's grid chunks: out[c, e] and out[c, D + e] = the least
    and greatest key on dim e of positions [c * grid, (c + 1) * grid). On a dim correlated
    with the copy's (air time with distance, arrival with departure) a chunk's keys span
    little, so that a filter on it passes or fails the whole chunk."""
    nd, n = C.shape
    for c in range(out.shape[0]):
        c0 = c * grid
        c1 = min(n, c0 + grid)
        for e in range(nd):
            col = C[e, c0:c1]
            lo, hi = col[0], col[0]
            for i in range(1, c1 - c0):
                lo = min(lo, col[i])
                hi = max(hi, col[i])
            out[c, e] = lo
            out[c, nd + e] = hi


@njit(nogil=True, cache=True)
def _decided(L, Q, union, zones, c) -> tuple:
    """Of the filters in `union`, (those every row of grid chunk c passes, those every
    row fails), as the chunk's zone maps decide them (`_key_pass` on each test)."""
    nd = zones.shape[1] // 2
    tdim = Q[10]
    passing = np.uint64(0)
    failing = np.uint64(0)
    f = 0
    m = union
    while m:
        if m & np.uint64(1):
            bit = np.uint64(1) << np.uint64(f)
            verdict = 1
            for j in range(2):
                t = 2 * f + j
                d = tdim[t]
                if d < 0:
                    break
                k = _key_pass(L, Q, t, zones[c, d], zones[c, nd + d])
                if k == 0:
                    verdict = 0
                    break
                if k < 0:
                    verdict = -1
            if verdict == 1:
                passing |= bit
            elif verdict == 0:
                failing |= bit
        m >>= np.uint64(1)
        f += 1
    return passing, failing


@njit(nogil=True, cache=True)
def chunk_hist(C, L, grid, out):
    """out[c, s] (zeroed by the caller) = how many rows of positions [c * grid, (c + 1) *
    grid) of a clustered copy fall in slot s: every view's bar of every row, unfiltered.
    `by_keys_clustered` counts a chunk where most rows pass as this less the rows that
    fail."""
    n = C.shape[1]
    bar_off = L[6]
    bars = np.empty(grid, np.int64)
    for c in range(out.shape[0]):
        c0 = c * grid
        cn = min(grid, n - c0)
        for v in range(L[5].shape[0]):
            _bars(C, _NO_ROWS64, c0, cn, v, L, bars)
            base = bar_off[v]
            for i in range(cn):
                out[c, base + bars[i]] += 1


@njit(nogil=True, cache=True)
def _dead_when_two_fail(union, views, need) -> bool:
    """Does a row failing two filters of `union` count in none of the views? True when each
    view leaves at most one of them out of its need (a crossfilter group: its own brush)."""
    for j in range(views.shape[0]):
        out = union & ~need[views[j]]
        if out & (out - np.uint64(1)):
            return False
    return True


@njit(nogil=True, cache=True)
def by_keys(S, L, Q, Qold, d, kranges, signs, mf, views, need, b0, b1, counts, sums, oks):
    """Rows of blocks [b0, b1) whose key on indexed dim d lies in one of `kranges`
    ((P, 2): lo, hi inclusive, disjoint), found through the backward index, each added to
    the views where it passes need[v]:
    - mf < 0: `signs[p]` times (recompute from a filter's rows; edge corrections);
    - mf >= 0: +1 if it passes filter mf under Q and not under Qold, -1 for the reverse,
      not at all when both agree (incremental update of moving filter mf; leave mf out of
      `need`). Each block's rows are visited in row order (a bitmap of the block sorts
      them), so the reads of the other columns go forward through the block.
    Cost: O(rows in the ranges x views) + O(blocks x ranges x log(block))."""
    keys, raw, meas, order, optr, fences = S[0], _raw(S), S[2], S[3], S[4], S[7]
    n = keys.shape[1]
    bsize = L[14]
    slot = L[13][d]
    union = np.uint64(0)
    for j in range(views.shape[0]):
        union |= need[views[j]]
    fail = np.empty(CHUNK, np.uint64)
    rows = np.empty(CHUNK, np.int64)
    wts = np.empty(CHUNK, np.int64)
    now = np.empty(CHUNK, np.bool_)
    was = np.empty(CHUNK, np.bool_)
    bars = np.empty(CHUNK, np.int64)
    xs = np.empty(CHUNK, np.float64)
    words = np.zeros((bsize + 63) // 64, np.uint64)  # the block's candidate rows, a bit each
    summary = np.zeros((words.shape[0] + 63) // 64, np.uint64)  # ... its words in use
    distinct = np.unique(signs) if mf < 0 else np.ones(1, np.int64)
    cn = 0
    for b in range(b0, b1):
        base = b * bsize
        cnt = min(n, base + bsize) - base
        ob = optr[slot, b]
        for sg in distinct:
            z, zk = 0, np.int64(1 << 62)
            for p in range(kranges.shape[0]):
                if mf < 0 and signs[p] != sg:
                    continue
                a, z = _span(keys, order, fences, slot, b, ob, base, cnt, d, kranges[p, 0],
                             kranges[p, 1], z, zk)
                zk = kranges[p, 1]
                for q in range(a, z):
                    r = q if ob < 0 else np.int64(order[ob + q])
                    w = r >> 6
                    words[w] |= np.uint64(1) << np.uint64(r & 63)
                    summary[w >> 6] |= np.uint64(1) << np.uint64(w & 63)
            # the block's rows in order, through the words in use (few rows: few words),
            # every word cleared on the way
            for sw in range(summary.shape[0]):
                used = summary[sw]
                summary[sw] = 0
                while used:
                    wlow = used & (~used + np.uint64(1))
                    w = (sw << 6) + _DEBRUIJN[(wlow * _MAGIC) >> np.uint64(58)]
                    used ^= wlow
                    bits = words[w]
                    words[w] = 0
                    while bits:
                        low = bits & (~bits + np.uint64(1))
                        rows[cn] = base + (w << 6) + _DEBRUIJN[(low * _MAGIC) >> np.uint64(58)]
                        wts[cn] = sg
                        cn += 1
                        bits ^= low
                        if cn == CHUNK:
                            _by_keys_chunk(keys, raw, meas, rows, cn, mf, union, L, Q, Qold, fail,
                                           wts, now, was, views, need, counts, sums, oks, bars, xs)
                            cn = 0
    if cn:
        _by_keys_chunk(keys, raw, meas, rows, cn, mf, union, L, Q, Qold, fail, wts, now, was,
                       views, need, counts, sums, oks, bars, xs)


_MAGIC = np.uint64(0x03F79D71B4CB0A89)  # de Bruijn sequence: the index of a power of two
_DEBRUIJN = np.zeros(64, np.int64)
for _i in range(64):
    _DEBRUIJN[(((1 << _i) * int(_MAGIC)) % (1 << 64)) >> 58] = _i


@njit(nogil=True, cache=True)
def _by_keys_chunk(keys, raw, meas, rows, cn, mf, union, L, Q, Qold, fail, wts, now, was,
                   views, need, counts, sums, oks, bars, xs):
    if mf >= 0:
        _passes(keys, raw, rows, cn, mf, L, Q, now)
        _passes(keys, raw, rows, cn, mf, L, Qold, was)
        for i in range(cn):
            wts[i] = np.int64(now[i]) - np.int64(was[i])
    _fails(keys, raw, rows, -1, cn, union, L, Q, fail, _NO_ROWS)
    _count_chunk(keys, raw, meas, rows, -1, cn, fail, wts, views, need, L, counts, sums, oks,
                 bars, xs, _NO_ROWS)


@njit(nogil=True, cache=True)
def cluster(keys, d, nkeys, out, rows, starts, raw, then=-1) -> bool:
    """A clustered copy of one shard for dim d (engine/copies.py), by a counting sort:
    rows[p] is the shard row at position p of the rows ordered by their key on d, then by
    their raw value on d (`raw`, a fine dim's values; empty: not sorted) or, without raw
    order, by their key on dim `then` (-1: none), then by row;
    out[e, p] is its key on kept dim e, and the rows of key k are positions
    starts[k] .. starts[k + 1] - 1 (k = nkeys: no value). `rows` may be empty: not kept.
    True when the rows of every key are in raw order (`raw` given and no NaN among them;
    vacuously with no rows): a fine edge bucket's rows failing its test are then a prefix
    or a suffix of the bucket's run. Else, with `then`, a key range of `then` is a
    sub-run of every key's run (`_clustered` reads only that one)."""
    n = keys.shape[1]
    starts[:] = 0
    col = keys[d]
    for r in range(n):
        starts[np.int64(col[r]) + 1] += 1
    for k in range(nkeys + 1):
        starts[k + 1] += starts[k]
    by_raw = raw.shape[0] == n
    if by_raw:
        for r in range(n):  # the no-value key's rows may be NaN
            if col[r] < nkeys and np.isnan(raw[r]):
                by_raw = False
                break
    order = np.arange(n)  # the rows in the order a stable counting sort by d's key takes them
    if not by_raw and then >= 0:  # by then's key first (a counting sort: no per-run sorts)
        sec = keys[then]
        at = np.zeros(np.int64(sec.max()) + 2 if n else 1, np.int64)
        for r in range(n):
            at[np.int64(sec[r]) + 1] += 1
        for k in range(at.shape[0] - 1):
            at[k + 1] += at[k]
        for r in range(n):
            k = np.int64(sec[r])
            order[at[k]] = r
            at[k] += 1
    fill = starts[:nkeys + 1].copy()
    perm = np.empty(n, np.int64)
    for r in order:
        k = np.int64(col[r])
        perm[fill[k]] = r
        fill[k] += 1
    if by_raw:
        for k in range(nkeys):
            a, z = starts[k], starts[k + 1]
            if z - a > 1:
                run = perm[a:z].copy()
                perm[a:z] = run[np.argsort(raw[run], kind="mergesort")]  # stable: then by row
    for e in range(keys.shape[0]):
        src = keys[e]
        dst = out[e]
        for p in range(n):
            dst[p] = src[perm[p]]
    if rows.shape[0]:
        for p in range(n):
            rows[p] = perm[p]
    return by_raw


@njit(nogil=True, cache=True)
def _key_pass(L, Q, t, k0, k1) -> np.int64:
    """Do all rows with keys k0..k1 on test t's dim pass it (1), all fail (0), or does it
    depend on the row (-1: a fine edge bucket, a bound inside, a set or bar test)? As
    `_fails` decides."""
    mode = Q[0][t]
    if mode == 0:
        return 1
    if mode != 1:
        return -1
    lo, hi = Q[1][t], Q[2][t]
    if hi < lo:
        return 0
    elo, ehi = Q[3][t], Q[4][t]
    if L[12][Q[10][t]] >= 0 and ((k0 <= elo <= k1) or (k0 <= ehi <= k1)):
        return -1
    if k1 < lo or k0 > hi:
        return 0
    return 1 if lo <= k0 and k1 <= hi else -1


@njit(nogil=True, cache=True)
def _key_move(L, Q, Qold, t, k0, k1) -> np.int64:
    """The weight every row with keys k0..k1 on test t's dim gets in an incremental update
    of its filter, when that is its only test (pass now - pass before: -1, 0, 1), or 2 when
    it depends on the row: a clustered copy's chunk lies in a few keys, so most chunks are
    decided without a test of their rows."""
    now, was = _key_pass(L, Q, t, k0, k1), _key_pass(L, Qold, t, k0, k1)
    return 2 if now < 0 or was < 0 else now - was


@njit(nogil=True, cache=True)
def _scratch() -> tuple:
    """Buffers of a clustered pass (`_clustered`), allocated once per kernel call."""
    return (np.empty(2 * CHUNK, np.int64), np.empty(2 * CHUNK, np.uint64), np.empty(2 * CHUNK, np.int64),
            np.empty(2 * CHUNK, np.int64), np.empty(2 * CHUNK, np.uint64), np.empty(2 * CHUNK, np.int64),
            np.empty(CHUNK, np.uint64), np.empty(CHUNK, np.uint64), np.empty(CHUNK, np.uint64),
            np.zeros(CHUNK, np.int64), np.empty(CHUNK, np.int64), np.empty(2 * CHUNK, np.int64),
            np.empty(2 * CHUNK, np.float64))


@njit(nogil=True, cache=True)
def _narrowing(L, Q, edim, mf, needed) -> tuple:
    """The keys on edim (lo, hi) a row must have to pass every interval test on edim of the
    filters in `needed` other than the moving filter mf; (0, -1) when none can, (-1, -1)
    when no such test (or edim < 0): `_clustered` reads only those rows of a copy in
    edim's order within each key (`cluster`'s `then`). And the filters every row with
    such a key passes (all their tests such, none with a fine bucket's edge inside)."""
    tmode, tlo, thi, telo, tehi, tdim = Q[0], Q[1], Q[2], Q[3], Q[4], Q[10]
    lo, hi = np.int64(-1), np.int64(-1)
    passed, other = np.uint64(0), np.uint64(0)
    if edim < 0:
        return lo, hi, passed
    for t in range(tmode.shape[0]):
        f = t // 2
        bit = np.uint64(1) << np.uint64(f)
        if tdim[t] < 0:
            continue
        if f == mf or tdim[t] != edim or tmode[t] != 1 or not needed & bit:
            other |= bit
            continue
        a, z = max(np.int64(tlo[t]), np.int64(0)), np.int64(thi[t])
        if lo < 0:
            lo, hi = a, z
        else:
            lo, hi = max(lo, a), min(hi, z)
        if L[12][edim] >= 0 and (telo[t] >= 0 or tehi[t] >= 0):
            other |= bit  # its edge buckets' rows are decided by their raw values
        else:
            passed |= bit
    if lo >= 0 and hi < lo:
        return np.int64(0), np.int64(-1), np.uint64(0)
    return lo, hi, passed & ~other


@njit(nogil=True, cache=True)
def _keys_fail(L, Q, d, k0, k1, needed) -> bool:
    """Do the rows with keys k0..k1 on dim d all fail a test of a filter in `needed`?"""
    for t in range(Q[0].shape[0]):
        if Q[10][t] == d and (needed >> np.uint64(t // 2)) & np.uint64(1) and _key_pass(L, Q, t, k0, k1) == 0:
            return True
    return False


@njit(nogil=True, cache=True)
def _narrowed(ce, starts, k0, k1, a, z, lo, hi, segs, least=NARROW_ROWS) -> np.int64:
    """Per key k0..k1 of a copy's dim, the positions of its run within [a, z) whose key on
    the copy's `then` dim (ce: those keys, in order within each run) is in lo..hi, written
    to segs as (first, end, 1); returns how many (empty ones left out). A run under
    `least` rows is not searched (two binary searches cost about what testing its rows
    does): consecutive ones are written as one segment (first, end, 0), rows to test."""
    nstart = starts.shape[0] - 1
    m = 0
    for k in range(max(k0, 0), min(k1, nstart - 1) + 1):
        ra, rz = max(a, starts[k]), min(z, starts[k + 1])
        if ra >= rz:
            continue
        if rz - ra < least:
            if m and segs[m - 1, 2] == 0 and segs[m - 1, 1] == ra:
                segs[m - 1, 1] = rz
            else:
                segs[m, 0], segs[m, 1], segs[m, 2] = ra, rz, 0
                m += 1
            continue
        s0 = ra + np.searchsorted(ce[ra:rz], lo, side="left")
        s1 = ra + np.searchsorted(ce[ra:rz], hi, side="right")
        if s0 < s1:
            segs[m, 0], segs[m, 1], segs[m, 2] = s0, s1, 1
            m += 1
    return m


@njit(nogil=True, cache=True)
def by_keys_clustered(S, C, crow, starts, hist, zones, grid, d, cdim, edim, L, Q, Qold, kranges,
                      signs, mf, views, need, b0, b1, counts, sums, oks, narrow_rows=NARROW_ROWS):
    """`_clustered` over one shard's copy."""
    _clustered(S, C, crow, starts, hist, zones, grid, d, cdim, edim, L, Q, Qold, kranges, signs, mf,
               views, need, b0, b1, counts, sums, oks, _scratch(), narrow_rows)


@njit(nogil=True, cache=True)
def clustered_units(shards, copies, units, d, cdim, edim, L, Q, Qold, kranges, signs, mf, views,
                    need, counts, sums, oks):
    """`_clustered` over units (shard, first block, end block) of rows: shards[i] the
    shard's arrays, copies[i] its copy for d (keys, rows, starts, hist, zones), both typed
    lists; cdim: d when the copies keep each key's rows in raw order (`cluster`), else -1;
    edim: the dim by whose keys they order each key's rows otherwise (`cluster`'s `then`),
    else -1. One call for many shards: a call costs ~9 us to unpack its arguments' arrays,
    and a pass's buffers are allocated once."""
    buf = _scratch()
    for u in range(units.shape[0]):
        i = units[u, 0]
        S = shards[i]
        c = copies[i]
        _clustered(S, c[0], c[1], c[2], c[3], c[4], CHUNK, d, cdim, edim, L, Q, Qold, kranges, signs,
                   mf, views, need, units[u, 1], units[u, 2], counts, sums, oks, buf)


@njit(nogil=True, cache=True)
def _clustered(S, C, crow, starts, hist, zones, grid, d, cdim, edim, L, Q, Qold, kranges, signs, mf,
               views, need, b0, b1, counts, sums, oks, buf, narrow_rows=NARROW_ROWS):
    """As `by_keys`, over the shard's clustered copy for the ranges' dim d (C, crow, starts:
    `cluster`): the rows of a key range are one run of positions, read sequentially, of
    which this call takes those in [b0, b1) x block size (so that threads split them as
    they split blocks); raw values and stored measures are read at the shard rows `crow`
    names (d's own fine edge buckets by a binary search when cdim == d: `_edge_runs`), and
    measures there only for the rows that count (`_count_chunk`). As in `scan`, the rows
    that count in no view (or whose weight is 0) are dropped before counting.
    Chunks follow the copy's grid of `grid` rows (<= CHUNK). With `zones` (`chunk_zones`,
    not empty), a filter that a chunk's zone maps decide is not tested on its rows, and a
    chunk failing one that every view needs (or two, in a crossfilter) is skipped. With
    `hist` (`chunk_hist`, not empty) and only count views, a whole grid chunk whose rows
    share one weight and mostly pass is counted as a complement: its histogram, less the
    rows failing (fewer to count). With `edim` (the copy orders each key's rows by their key
    on edim: `cluster`'s `then`), a filter every view needs, other than the moving one, with
    an interval test on edim keeps each key's run to the sub-run its keys pass (`_narrowed`):
    the rows outside fail it, so they count in no view; runs under `narrow_rows` are read
    whole, as without edim. A key range its own keys fail is skipped whole
    (`_keys_fail`); a sub-run shorter than a grid chunk (one key's rows in a shard: one
    weight) is gathered with its weight and counted a chunk's worth at a time, without a
    test of the filters its keys pass (`_narrowing`'s, but at a fine edge bucket); a longer
    one goes by chunks as above.
    Cost: O(rows in the ranges x (filters + views)), sequential."""
    raw, meas = _raw(S), S[2]
    n = C.shape[1]
    bsize = L[14]
    lo_pos, hi_pos = b0 * bsize, min(n, b1 * bsize)
    nstart = starts.shape[0] - 1
    union = np.uint64(0)
    common = ~np.uint64(0)  # filters every view needs: a row failing one counts in none
    measured = False
    for j in range(views.shape[0]):
        union |= need[views[j]]
        common &= need[views[j]]
        measured |= L[7][views[j]] != 0
    complements = hist.shape[0] > 0 and not measured  # a histogram has no sums
    dead2 = union != 0 and _dead_when_two_fail(union, views, need)
    # pos3 etc.: the rows of complemented chunks; rows: unread (shard rows come from crow)
    pos2, fail2, wts2, pos3, fail3, wts3, fail, fnow, fwas, rows, wts, bars, xs = buf
    m3 = 0
    mbit = np.uint64(1) << np.uint64(mf) if mf >= 0 else np.uint64(0)
    m = 0  # rows gathered, not yet counted
    # a moving filter of one test on the copy's dim: the keys decide most chunks
    keyed = mf >= 0 and Q[10][2 * mf] == d and Q[10][2 * mf + 1] < 0
    elo, ehi, npass = _narrowing(L, Q, edim, mf, common & union)
    narrow = elo >= 0
    segs = np.empty((nstart + 1 if narrow else 1, 3), np.int64)  # runs of positions to read (narrowed: 1)
    # narrowed runs under a chunk (a key's rows in a shard where another filter passes) are
    # gathered with their weight and counted a chunk's worth at a time
    npos, nwts = np.empty(CHUNK if narrow else 0, np.int64), np.empty(CHUNK if narrow else 0, np.int64)
    nb = 0
    for p in range(kranges.shape[0]):
        a = max(lo_pos, starts[min(max(kranges[p, 0], 0), nstart)])
        z = min(hi_pos, starts[min(max(kranges[p, 1] + 1, 0), nstart)])
        nseg = 1
        segs[0, 0], segs[0, 1], segs[0, 2] = a, z, 0
        if narrow:
            nseg = 0 if _keys_fail(L, Q, d, kranges[p, 0], kranges[p, 1], common & union) else \
                _narrowed(C[edim], starts, kranges[p, 0], kranges[p, 1], a, z, elo, ehi, segs, narrow_rows)
        for g in range(nseg):
            c0, z = segs[g, 0], segs[g, 1]
            if segs[g, 2] and z - c0 < grid:  # one key's few rows: one weight (but at a fine
                # bucket's edge); a longer run goes by chunks, whose zone maps and histograms
                # may decide them whole (each key's rows being in order of edim's keys)
                w = signs[p]
                if mf >= 0:
                    w = _key_move(L, Q, Qold, 2 * mf, C[d, c0], C[d, c0]) if keyed else 2
                if w == 0:
                    continue
                if zones.shape[0]:  # a filter its chunks' zone maps fail: counts in no view
                    failing = _decided(L, Q, union, zones, c0 // grid)[1] \
                        & _decided(L, Q, union, zones, (z - 1) // grid)[1]
                    if failing & common or (dead2 and failing & (failing - np.uint64(1))):
                        continue
                if mf < 0 or w != 2:
                    while c0 < z:
                        t = min(z - c0, CHUNK - nb)
                        for i in range(t):
                            npos[nb + i] = c0 + i
                            nwts[nb + i] = w
                        nb += t
                        c0 += t
                        if nb == CHUNK:
                            _count_gathered(C, raw, meas, npos, nb, nwts, union & ~npass, L, Q, views, need,
                                            counts, sums, oks, fail, bars, xs, crow, cdim)
                            nb = 0
                    continue
            while c0 < z:
                cn = min(z, (c0 // grid + 1) * grid) - c0  # up to the grid's next line
                c1 = c0 + cn
                wu = 0  # the weight every row of the chunk has (0: they differ)
                if mf >= 0:  # +1: passes the moving filter now and did not before, -1: the reverse
                    w = _key_move(L, Q, Qold, 2 * mf, C[d, c0], C[d, c1 - 1]) if keyed else 2
                    if w == 0:
                        c0 = c1
                        continue
                    if w != 2:
                        wts[:cn] = w
                        wu = w
                    else:
                        _fails(C, raw, rows, c0, cn, mbit, L, Q, fnow, crow, cdim)
                        _fails(C, raw, rows, c0, cn, mbit, L, Qold, fwas, crow, cdim)
                        for i in range(cn):
                            wts[i] = np.int64(fwas[i] != 0) - np.int64(fnow[i] != 0)
                else:
                    wts[:cn] = signs[p]
                    wu = signs[p]
                tested, failing = union, np.uint64(0)
                if zones.shape[0]:
                    passing, failing = _decided(L, Q, union, zones, c0 // grid)
                    if failing & common or (dead2 and failing & (failing - np.uint64(1))):
                        c0 = c1  # counts in no view (`_dead`)
                        continue
                    tested = union & ~(passing | failing)
                _fails(C, raw, rows, c0, cn, tested, L, Q, fail, crow, cdim)
                if failing:
                    for i in range(cn):
                        fail[i] |= failing
                alive = _alive_count(fail, wts, cn, common, dead2)
                if complements and wu != 0 and cn == grid and _failing_count(fail, cn) < alive:
                    _add_hist(hist, c0 // grid, wu, views, L, counts)
                    m3 = _failing(fail, c0, cn, -wu, pos3, fail3, wts3, m3)
                    if m3 >= CHUNK:  # (see below: a call costs even when it does nothing)
                        m3 = _flush(C, raw, meas, pos3, m3, False, fail3, wts3, views, need, L, counts,
                                    sums, oks, bars, xs, crow, True)
                elif _worth_gathering(alive, cn, views.shape[0]):
                    m = _alive(fail, wts, c0, cn, common, dead2, pos2, fail2, wts2, m, alive)
                    if m >= CHUNK:
                        m = _flush(C, raw, meas, pos2, m, False, fail2, wts2, views, need, L, counts, sums,
                                   oks, bars, xs, crow)
                else:
                    _count_chunk(C, raw, meas, rows, c0, cn, fail, wts, views, need, L, counts,
                                 sums, oks, bars, xs, crow)
                c0 = c1
    if nb:
        _count_gathered(C, raw, meas, npos, nb, nwts, union & ~npass, L, Q, views, need, counts, sums, oks,
                        fail, bars, xs, crow, cdim)
    # called only with rows: a call that returns at once still costs ~0.35 us (measured: these
    # two were 40 % of a pass over 55 shards reading no row, ~30 us of a slide's 0.2 ms pass)
    if m:
        _flush(C, raw, meas, pos2, m, True, fail2, wts2, views, need, L, counts, sums, oks, bars, xs,
               crow)
    if m3:
        _flush(C, raw, meas, pos3, m3, True, fail3, wts3, views, need, L, counts, sums, oks, bars,
               xs, crow, True)


@njit(nogil=True, cache=True)
def _count_gathered(C, raw, meas, pos, m, wts, union, L, Q, views, need, counts, sums, oks, fail,
                    bars, xs, crow, cdim) -> None:
    """Count m gathered positions `pos` of a clustered copy C (weights `wts`), testing the
    filters of `union` on each (`_fails`, `_count_chunk` through positions)."""
    _fails(C, raw, pos, -1, m, union, L, Q, fail, crow, cdim)
    _count_chunk(C, raw, meas, pos, -1, m, fail, wts, views, need, L, counts, sums, oks, bars, xs, crow)


@njit(nogil=True, cache=True)
def key_value_range(shards, copies, rc, k) -> tuple:
    """The smallest and largest value of a fine dim's key k (bucket) in every shard (raw row
    rc; shards[i] a shard's arrays, copies[i] its copy for the dim as in `clustered_units`,
    each key's rows in raw order: `cluster` with raw), read at both ends of the key's run
    in each shard: 4 values a shard. (inf, -inf): no row has the key; (-inf, inf) where a
    value reads as NaN (none: nothing can be concluded)."""
    lo, hi = np.inf, -np.inf
    for i in range(len(copies)):
        crow, starts = copies[i][1], copies[i][2]
        a, z = starts[k], starts[k + 1]
        if a < z:
            R = _raw(shards[i])
            x0 = _raw_at(R, rc, np.int64(crow[a]), k)
            x1 = _raw_at(R, rc, np.int64(crow[z - 1]), k)
            if x0 != x0 or x1 != x1:
                return -np.inf, np.inf
            lo = min(lo, x0)
            hi = max(hi, x1)
    return lo, hi


@njit(nogil=True, cache=True)
def split_runs(starts, at, lo, hi, shard, block, kr, n, segs) -> np.int64:
    """Blocks of a dim's clustered copies shared among n threads by the rows of the key
    ranges' runs they hold: block j (positions lo[j]..hi[j] of the copy whose key starts
    are starts[at[j]]; shard[j], number block[j]) goes to the thread whose equal share
    of those rows holds the block's middle one. Writes (thread, shard, first block, end
    block) per run of blocks to segs; returns how many."""
    nb = at.shape[0]
    last = starts.shape[1] - 1
    rows = np.zeros(nb, np.int64)
    total = 0
    for j in range(nb):
        for p in range(kr.shape[0]):
            a = starts[at[j], min(max(kr[p, 0], 0), last)]
            z = starts[at[j], min(max(kr[p, 1] + 1, 0), last)]
            rows[j] += max(0, min(z, hi[j]) - max(a, lo[j]))
        total += rows[j]
    m = 0
    acc = 0
    for j in range(nb):
        t = min((2 * acc + rows[j]) * n // max(1, 2 * total), n - 1)
        acc += rows[j]
        if m and segs[m - 1, 0] == t and segs[m - 1, 1] == shard[j] and segs[m - 1, 3] == block[j]:
            segs[m - 1, 3] = block[j] + 1
        else:
            segs[m, 0], segs[m, 1], segs[m, 2], segs[m, 3] = t, shard[j], block[j], block[j] + 1
            m += 1
    return m


@njit(nogil=True, cache=True)
def _candidates(keys, order, optr, fences, slot, bsize, n, b, d, kranges, buf) -> np.int64:
    """Rows of block b (shard rows) whose key on dim d is in `kranges`, in rid order, into
    `buf`; returns how many."""
    base = b * bsize
    cnt = min(n, base + bsize) - base
    if d < 0:
        for q in range(cnt):
            buf[q] = base + q
        return cnt
    ob = optr[slot, b]
    m = 0
    z, zk = 0, np.int64(1 << 62)
    for p in range(kranges.shape[0]):
        a, z = _span(keys, order, fences, slot, b, ob, base, cnt, d, kranges[p, 0], kranges[p, 1],
                     z, zk)
        zk = kranges[p, 1]
        for q in range(a, z):
            buf[m] = base + (q if ob < 0 else np.int64(order[ob + q]))
            m += 1
    buf[:m].sort()
    return m


@njit(nogil=True, cache=True)
def rows_passing(S, L, Q, need, d, kranges, b0, b1, skip, limit, out, start):
    """Write into `out` the global rids (shard rows + `start`) of rows in blocks [b0, b1)
    that pass `need`, in rid order, after skipping the first `skip` such rows; at most
    `limit`. With d >= 0 only rows whose key on indexed dim d is in `kranges` are
    candidates (found through the index), else every row. Returns (written, skipped)."""
    keys, raw, order, optr = S[0], _raw(S), S[3], S[4]
    n = keys.shape[1]
    bsize = L[14]
    slot = L[13][d] if d >= 0 else -1
    written = 0
    skipped = 0
    buf = np.empty(bsize, np.int64)
    fail = np.empty(bsize, np.uint64)
    for b in range(b0, b1):
        m = _candidates(keys, order, optr, S[7], slot, bsize, n, b, d, kranges, buf)
        _fails(keys, raw, buf, -1, m, need, L, Q, fail, _NO_ROWS)
        for q in range(m):
            if fail[q]:
                continue
            if skipped < skip:
                skipped += 1
                continue
            if written == limit:
                return written, skipped
            out[written] = start + buf[q]
            written += 1
    return written, skipped


@njit(nogil=True, cache=True)
def rids_pass(shards, starts, L, Q, need, rids, out):
    """out[i]: whether global rid rids[i] (ascending) passes every filter in `need`, the
    test rows_passing makes, for rows named one by one (a sorted details page walking a
    column's order). shards: every shard's arrays (a typed list); starts: each
    shard's first rid."""
    buf = np.empty(CHUNK, np.int64)
    fail = np.empty(CHUNK, np.uint64)
    n = len(rids)
    i = 0
    while i < n:
        s = np.searchsorted(starts, rids[i], side="right") - 1
        end = starts[s + 1] if s + 1 < len(starts) else rids[n - 1] + 1
        j = i
        while j < n and rids[j] < end and j - i < CHUNK:
            buf[j - i] = rids[j] - starts[s]
            j += 1
        S = shards[s]
        _fails(S[0], _raw(S), buf, -1, j - i, need, L, Q, fail, _NO_ROWS)
        for q in range(j - i):
            out[i + q] = fail[q] == 0
        i = j
    return out


@njit(nogil=True, cache=True)
def count_passing(S, L, Q, need, d, kranges, b0, b1, skip) -> np.int64:
    """How many rows of blocks [b0, b1) pass `need` (candidates as in rows_passing;
    without an index, blocks where a filter in `skip` selects no key are skipped)."""
    keys, raw, order, optr, zmin, zmax = S[0], _raw(S), S[3], S[4], S[5], S[6]
    n = keys.shape[1]
    bsize = L[14]
    slot = L[13][d] if d >= 0 else -1
    total = 0
    buf = np.empty(bsize, np.int64)
    fail = np.empty(bsize, np.uint64)
    for b in range(b0, b1):
        if d < 0 and skip and _block_skipped(zmin, zmax, b, skip, Q):
            continue
        m = _candidates(keys, order, optr, S[7], slot, bsize, n, b, d, kranges, buf)
        _fails(keys, raw, buf, -1, m, need, L, Q, fail, _NO_ROWS)
        for q in range(m):
            total += 1 if fail[q] == 0 else 0
    return total


@njit(nogil=True, cache=True)
def tile(S, L, Q, views, need, cols, d, cblut, width, b0, b1, counts, sums, oks):
    """A conditional cube (Falcon's data tile) of the moving filter's dim d: for every row
    of blocks [b0, b1) with a key on d, the aggregates per (tile block of its key, bar of
    view v) over rows passing need[v] (which leaves the moving filter out), into cell
    cblut[key] * width + cols[j] + bar of views[j]; cblut[nkeys] (the no-value key) is -1:
    those rows are left out. `counts` has one spare cell at the end for rows a view does
    not count. As `scan`: zone maps skip blocks, and rows that count in no view are
    dropped before counting. Cost: a sequential pass, as `scan`."""
    keys, raw, meas, zmin, zmax = S[0], _raw(S), S[2], S[5], S[6]
    n = keys.shape[1]
    bsize = L[14]
    mkind = L[7]
    spare = counts.shape[0] - 1
    fail = np.empty(CHUNK, np.uint64)
    rows = np.empty(CHUNK, np.int64)
    rows2 = np.empty(CHUNK, np.int64)
    fail2 = np.empty(CHUNK, np.uint64)
    at = np.empty(CHUNK, np.int64)
    bars = np.empty(CHUNK, np.int64)
    xs = np.empty(CHUNK, np.float64)
    here = np.empty(views.shape[0], np.int64)
    hcol = np.empty(views.shape[0], np.int64)
    for b in range(b0, b1):
        nv = 0
        for j in range(views.shape[0]):  # the views this block can count in
            v = views[j]
            if not (need[v] and _block_skipped(zmin, zmax, b, need[v], Q)):
                here[nv] = v
                hcol[nv] = cols[j]
                nv += 1
        if nv == 0:
            continue
        union = np.uint64(0)
        common = ~np.uint64(0)
        for j in range(nv):
            union |= need[here[j]]
            common &= need[here[j]]
        dead2 = union != 0 and _dead_when_two_fail(union, here[:nv], need)
        e = min(n, (b + 1) * bsize)
        for c0 in range(b * bsize, e, CHUNK):
            cn = min(CHUNK, e - c0)
            for i in range(cn):
                rows[i] = c0 + i
            _fails(keys, raw, rows, c0, cn, union, L, Q, fail, _NO_ROWS)
            kd = keys[d, c0:c0 + cn]
            m = 0
            for i in range(cn):  # the rows that count somewhere, with their tile block
                f = fail[i]
                blk = cblut[kd[i]]
                rows2[m] = c0 + i
                fail2[m] = f
                at[m] = blk * width
                dead = blk < 0 or (f & common) != 0 or (dead2 and (f & (f - np.uint64(1))) != 0)
                m += 0 if dead else 1
            for j in range(nv):
                v = here[j]
                nd = need[v]
                _bars(keys, rows2, -1, m, v, L, bars)
                for q in range(m):  # branchless: a row the view does not count goes to the spare cell
                    cell = at[q] + hcol[j] + bars[q]
                    bars[q] = cell if (fail2[q] & nd) == 0 else spare
                for q in range(m):
                    counts[bars[q]] += 1
                if mkind[v] != 0:
                    _measures(keys, raw, meas, rows2, -1, m, v, L, xs, _NO_ROWS)
                    for q in range(m):
                        x = xs[q]
                        if bars[q] != spare and x == x:
                            sums[bars[q]] += x
                            oks[bars[q]] += 1


@njit(nogil=True, cache=True)
def bars_of(S, L, rows, v, out):
    """Bar of view v for each shard row in `rows` (forward lineage)."""
    _bars(S[0], rows, -1, rows.shape[0], v, L, out)


@njit(nogil=True, cache=True)
def gather(S, L, Q, v, need, d, kranges, md, wanted, offs, fill, out, b0, b1):
    """The measures of an order-statistic view's rows, for the blocks a rank falls in: each
    row of blocks [b0, b1) that passes `need` and whose code in view v is wanted
    (t = wanted[code] >= 0) writes its measure to out[offs[t] + fill[t]], fill[t] += 1
    (never past offs[t + 1]). Candidates are the rows whose key on indexed dim d is in
    `kranges` (d < 0: every row). The measure is the row's raw value on fine dim md, else
    its key on md (the caller maps keys to values).
    Cost: O(candidates x filters) + O(blocks x ranges x log(block))."""
    keys, raw, order, optr = S[0], _raw(S), S[3], S[4]
    n = keys.shape[1]
    bsize = L[14]
    slot = L[13][d] if d >= 0 else -1
    rc = L[12][md]
    buf = np.empty(bsize, np.int64)
    fail = np.empty(bsize, np.uint64)
    codes = np.empty(bsize, np.int64)
    for b in range(b0, b1):
        m = _candidates(keys, order, optr, S[7], slot, bsize, n, b, d, kranges, buf)
        if m == 0:
            continue
        _fails(keys, raw, buf, -1, m, need, L, Q, fail, _NO_ROWS)
        _bars(keys, buf, -1, m, v, L, codes)
        for q in range(m):
            if fail[q]:
                continue
            t = wanted[codes[q]]
            if t >= 0 and offs[t] + fill[t] < offs[t + 1]:
                r = buf[q]
                out[offs[t] + fill[t]] = (_raw_at(raw, rc, r, np.int64(keys[md, r])) if rc >= 0
                                          else np.float64(keys[md, r]))
                fill[t] += 1


# --- order statistics: a rank per segment, and quantile_cont's interpolation ----------------


@njit(nogil=True, cache=True)
def _select(a, lo, hi, k):
    """a[k] once a[lo:hi + 1] is rearranged in place so that a[k] is its (k - lo)-th
    smallest value, none larger before it, none smaller after (lo <= k <= hi): quickselect
    with Hoare partitions around a median of three, which split runs of ties evenly and
    take sorted runs in stride. No NaN. Expected cost O(hi - lo)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < a[lo]:
            a[mid], a[lo] = a[lo], a[mid]
        if a[hi] < a[mid]:
            a[hi], a[mid] = a[mid], a[hi]
            if a[mid] < a[lo]:
                a[mid], a[lo] = a[lo], a[mid]
        pivot = a[mid]
        i, j = lo, hi
        while i <= j:  # a[lo:i] <= pivot <= a[j + 1:hi + 1]; each scan stops at the pivot
            while a[i] < pivot:
                i += 1
            while pivot < a[j]:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if k <= j:  # a[j + 1:i] equal the pivot: k there is done
            hi = j
        elif k >= i:
            lo = i
        else:
            break
    return a[k]


@njit(nogil=True, cache=True)
def select_ranks(values, offs, targets, ranks, out):
    """out[i] = the ranks[i]-th smallest (0-based) of segment t = targets[i] of `values`,
    values[offs[t]:offs[t + 1]] (ranks[i] < its length). values: numeric (float64 or
    int64), no NaN; each segment is reordered in place. targets, ranks (Q,) int64; offs
    (T + 1,) int64; out (Q,) of values' dtype. The order statistics of many cells at once,
    the rows of each cell's block side by side (stats.py): expected cost O(sum over
    queries of their segment's length), so O(values) with a query or two per segment."""
    for i in range(targets.shape[0]):
        t = targets[i]
        out[i] = _select(values, offs[t], offs[t + 1] - 1, offs[t] + ranks[i])


@njit(nogil=True, cache=True)
def rank_blocks(cells, m, bars, lo, hi, jl, rl, jh, rh):
    """Where the ranks lo[i] <= hi[i] (0-based) of bar bars[i]'s measures fall among its
    blocks, cells[bars[i], :m] (the rows of each, in value order; hi < their sum): the
    block jl[i] holding rank lo[i] and the rank rl[i] within it; jh[i], rh[i] for hi[i].
    cells (nbars, width) int64; the others (Q,) int64. One pass over each bar's blocks up
    to its hi-th row: the numpy of it (a cumulative sum and two comparisons of the whole
    grid, stats.py had) took a quarter of a brush's reply on flights' median view."""
    for i in range(bars.shape[0]):
        b = bars[i]
        before = 0
        j = 0
        while before + cells[b, j] <= lo[i]:
            before += cells[b, j]
            j += 1
        jl[i] = j
        rl[i] = lo[i] - before
        while before + cells[b, j] <= hi[i]:
            before += cells[b, j]
            j += 1
        jh[i] = j
        rh[i] = hi[i] - before


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c rounded once: LLVM's fma, the processor's instruction or libm's fma
    (correctly rounded either way, never a separate multiply and add)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        f = builder.module.declare_intrinsic("llvm.fma", [d], ir.FunctionType(d, [d, d, d]))
        return builder.call(f, args)

    return sig, codegen


@njit(nogil=True, cache=True)
def interpolate(lo, hi, d, out):
    """out[i] = lo[i] (1 - d[i]) + hi[i] d[i] as DuckDB's quantile_cont computes it: hi d
    rounded, then lo (1 - d) added with one rounding (a fused multiply-add), so results
    agree to the last bit; lo[i] itself where d[i] == 0 (the rank is a whole number), and
    non-finite operands unfused. An exact zero is +0.0 (`+ 0.0`: IEEE's -0 + +0), as the
    rational arithmetic this replaced gave it. All arrays float64 (n,); cost O(n)."""
    for i in range(lo.shape[0]):
        x, w = lo[i], d[i]
        if w == 0:
            out[i] = x
            continue
        b = hi[i] * w
        a = 1.0 - w
        if np.isfinite(x) and np.isfinite(a) and np.isfinite(b):
            out[i] = _fma(x, a, b) + 0.0
        else:
            out[i] = x * a + b
