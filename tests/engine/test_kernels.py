"""The numba kernels against plain numpy, on random shards (hypothesis): random dims and
keys, random block sizes and backward indexes (identity blocks included), views reading
their bar through one or two lookup tables (codes of one or two cells per bar), measures
from lookups or stored columns (NaN included), fine dims' raw values as float64 or on a
decimal lattice, and random filter states of every test mode."""

from __future__ import annotations

import math
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushfire.capture.keys import block_fences
from brushfire.engine import kernels as K
from brushfire.lineage import lattice
from brushfire.lineage.layout import Dim
from brushfire.lineage.store import base_table, kernel_arrays

pytestmark = pytest.mark.slow  # numba compiles the kernels on a cold cache


# --- a random shard, layout and filter state ------------------------------------------------


def make_case(rng: np.random.Generator, n: int, bsize: int):
    nd = int(rng.integers(1, 5))
    nkeys = rng.integers(1, 12, nd)
    keys = np.stack([rng.integers(0, k + 1, n) for k in nkeys]).astype(np.uint16).reshape(nd, n)
    fine = rng.random(nd) < 0.4
    draw = np.full(nd, -1, np.int64)
    raw = np.zeros((int(fine.sum()), n))
    for j, d in enumerate(np.flatnonzero(fine)):
        draw[d] = j
        raw[j] = keys[d] + raw_fraction(rng, n)  # raw values ordered with keys, as capture keeps them
    indexed = rng.random(nd) < 0.8
    indexed[0] = True
    dslot = np.full(nd, -1, np.int64)
    nb = -(-n // bsize)
    optr = np.full((int(indexed.sum()), nb), -1, np.int64)
    pieces, total = [], 0
    for slot, d in enumerate(np.flatnonzero(indexed)):
        dslot[d] = slot
        for b in range(nb):
            seg = keys[d, b * bsize:(b + 1) * bsize]
            order = np.lexsort((raw[draw[d], b * bsize:(b + 1) * bsize], seg)) if fine[d] else \
                np.argsort(seg, kind="stable")
            if np.array_equal(order, np.arange(len(seg))):
                continue
            optr[slot, b] = total
            pieces.append(order.astype(np.uint16))
            total += len(seg)
    order = np.concatenate(pieces) if pieces else np.zeros(0, np.uint16)
    zmin = np.full((nd, nb), 65535, np.uint16)
    zmax = np.zeros((nd, nb), np.uint16)
    for d in range(nd):
        for b in range(nb):
            seg = keys[d, b * bsize:(b + 1) * bsize]
            seg = seg[seg < nkeys[d]]
            if len(seg):
                zmin[d, b], zmax[d, b] = seg.min(), seg.max()
    meas = np.where(rng.random((2, n)) < 0.2, np.nan, rng.integers(-5, 9, (2, n)).astype(float))
    S = (keys, raw, meas, order, optr, zmin, zmax)

    nv = int(rng.integers(1, 5))
    vdim0 = rng.integers(0, nd, nv)
    vdim1 = np.where(rng.random(nv) < 0.3, rng.integers(0, nd, nv), -1)
    nbars = rng.integers(1, 7, nv)
    luts, vlut0, vlut1, at = [np.zeros(1, np.int32)], np.zeros(nv, np.int64), np.zeros(nv, np.int64), 1
    for v in range(nv):
        lut = rng.integers(0, nbars[v] + 1, nkeys[vdim0[v]] + 1).astype(np.int32)
        vlut0[v] = at
        luts.append(lut)
        at += len(lut)
        if vdim1[v] >= 0:
            lut = rng.integers(0, 2, nkeys[vdim1[v]] + 1).astype(np.int32)
            vlut1[v] = at
            luts.append(lut)
            at += len(lut)
    bar_off = np.concatenate([[0], np.cumsum(nbars + 1)[:-1]]).astype(np.int64)
    mkind = rng.integers(0, 4, nv)
    mdim = rng.integers(0, nd, nv)
    mcol = rng.integers(0, 2, nv)
    raws = draw[mdim] >= 0  # kind 3: a fine dim's raw values
    mkind = np.where(mkind == 3, np.where(raws, 3, 0), mkind)
    mcol = np.where(mkind == 3, draw[mdim], mcol)
    moff = np.zeros(nv, np.int64)
    mluts, at = [np.zeros(1)], 1
    for v in range(nv):
        ml = np.where(rng.random(nkeys[mdim[v]] + 1) < 0.2, np.nan, rng.integers(-3, 5, nkeys[mdim[v]] + 1))
        moff[v] = at
        mluts.append(ml.astype(float))
        at += len(ml)
    width = rng.integers(1, 3, nv).astype(np.int64)  # cells per bar (order statistics: > 1)
    L = (vdim0.astype(np.int64), vdim1.astype(np.int64), vlut0, vlut1, np.concatenate(luts),
         nbars.astype(np.int64), bar_off, mkind.astype(np.int64), mdim.astype(np.int64),
         mcol.astype(np.int64), moff, np.concatenate(mluts), draw, dslot, np.int64(bsize), width)
    nslots = int(bar_off[-1] + nbars[-1] + 1)
    slot_dims = np.zeros(len(optr), np.int64)
    for d, slot in enumerate(dslot):
        if slot >= 0:
            slot_dims[slot] = d
    S = (*S, block_fences(keys, order, optr, slot_dims, bsize))  # as capture writes them
    R = raw_arrays(keys, nkeys, draw, raw)
    S = (S[0], R[0], *S[2:], *R[1:])

    nf = int(rng.integers(1, 4))
    Q = random_state(rng, nf, nd, nkeys, fine, nv, nbars)
    return S, L, Q, nf, nkeys, nslots, indexed


def raw_fraction(rng: np.random.Generator, n: int) -> np.ndarray:
    """A fine dim's value within its key k's bucket [k, k + 1): arbitrary doubles (offsets of
    their bits, or float64 where they span too many), cents (uint16 offsets on the lattice),
    millionths (uint32), millionths mostly below 0.06 and a few far up (uint16, those few
    exceptions), or arbitrary doubles in a narrow band of each bucket (bits' offsets in
    uint32; lineage/lattice.py)."""
    style = rng.integers(0, 5)
    if style == 0:
        return rng.random(n)
    if style == 4:
        return 0.5 + rng.random(n) * 1e-6
    if style == 1:
        return rng.integers(0, 100, n) / 100
    if style == 2:
        return rng.integers(0, 10**6, n) / 1e6
    return np.where(rng.random(n) < 0.005, rng.integers(100_000, 10**6, n), rng.integers(0, 60_000, n)) / 1e6


def raw_arrays(keys: np.ndarray, nkeys: np.ndarray, draw: np.ndarray, raw: np.ndarray) -> tuple:
    """The raw values of the fine dims as a store's loader gives them to the kernels: S[1]
    and S[8:15] (lineage/lattice.py `pack`, lineage/store.py `kernel_arrays`); key k's
    bucket is [k, k + 1), the no-value key's rows NaN."""
    dims, rows = [], []
    for d in np.flatnonzero(draw >= 0):
        edges = np.concatenate([[-np.inf], np.arange(1, nkeys[d], dtype=np.float64)])
        dims.append(Dim(f"value:{d}", "fine", str(d), None, "float", int(nkeys[d]), True,
                        raw=int(draw[d]), edges=edges.tolist()))
        rows.append((np.where(keys[d] < nkeys[d], raw[draw[d]], np.nan), keys[d], int(nkeys[d]), edges))
    rows = [rows[i] for i in np.argsort([dm.raw for dm in dims])]
    packed = lattice.pack(rows, keys.shape[1])
    layout = SimpleNamespace(dims=dims)
    arrays = kernel_arrays((None, packed.raw, *[None] * 6, *packed[1:]), layout,
                           *base_table(layout, [packed.rinfo]))
    return (arrays[1], *arrays[8:])


def plain_raw(S, L) -> np.ndarray:
    """The fine dims' raw values, (raw rows, n) float64 (NaN: no value), as the kernels
    read them (kernels._raw_at)."""
    n = S[0].shape[1]
    out = np.full((len(S[12]), n), np.nan)
    R = K._raw(S)
    for d, rc in enumerate(L[12]):
        if rc >= 0:
            out[rc] = [K._raw_at(R, rc, r, np.int64(S[0][d, r])) for r in range(n)]
    return out


def random_state(rng, nf, nd, nkeys, fine, nv, nbars):
    nt = 2 * nf
    width = int(max(nkeys.max(), nbars.max())) + 1
    tmode = np.zeros(nt, np.int64)
    tlo, thi = np.ones(nt, np.int64), np.zeros(nt, np.int64)
    telo, tehi = np.full(nt, -1, np.int64), np.full(nt, -1, np.int64)
    tvlo, tvhi = np.full(nt, -np.inf), np.full(nt, np.inf)
    tbits = np.arange(nt, dtype=np.int64)
    bits = rng.random((nt, width)) < 0.5
    tview = np.full(nt, -1, np.int64)
    tdim = np.full(nt, -1, np.int64)
    for f in range(nf):
        for j in range(1 + int(rng.random() < 0.3)):
            t = 2 * f + j
            d = int(rng.integers(0, nd))
            tdim[t] = d
            mode = int(rng.choice([0, 1, 1, 2, 3]))
            tmode[t] = mode
            if mode == 1:
                a, b = sorted(rng.integers(0, nkeys[d], 2))  # the no-value key never passes
                tlo[t], thi[t] = (a, b) if rng.random() < 0.9 else (b + 1, a)
                if fine[d]:
                    telo[t], tehi[t] = tlo[t], thi[t]
                    tvlo[t], tvhi[t] = tlo[t] + rng.random(), thi[t] + rng.random()
            elif mode == 2:
                bits[t, nkeys[d]:] = False  # the no-value key never passes
            elif mode == 3:
                tview[t] = int(rng.integers(0, nv))
    return (tmode, tlo, thi, telo, tehi, tvlo, tvhi, tbits, bits, tview, tdim)


# --- the plain numpy reference --------------------------------------------------------------


def ref_bars(S, L, v):
    keys = S[0]
    code = L[4][L[2][v] + keys[L[0][v]].astype(np.int64)].astype(np.int64)
    if L[1][v] >= 0:
        code = np.minimum(code + L[4][L[3][v] + keys[L[1][v]].astype(np.int64)], L[5][v])
    return code


def ref_measure(S, L, v):
    kind = L[7][v]
    if kind == 1:
        return L[11][L[10][v] + S[0][L[8][v]].astype(np.int64)]
    if kind == 2:
        return S[2][L[9][v]]
    if kind == 3:
        x = plain_raw(S, L)[L[9][v]]
        return np.where(np.isfinite(x), x, np.nan)
    return None


def ref_test(S, L, Q, t):
    keys, raw = S[0], plain_raw(S, L)
    tmode, tlo, thi, telo, tehi, tvlo, tvhi, tbits, bits, tview, tdim = Q
    n = keys.shape[1]
    mode = tmode[t]
    if mode == 0:
        return np.ones(n, bool)
    if mode == 3:
        return bits[tbits[t], ref_bars(S, L, tview[t]) // L[15][tview[t]]]
    k = keys[tdim[t]].astype(np.int64)
    if mode == 2:
        return bits[tbits[t], k]
    ok = (k >= tlo[t]) & (k <= thi[t])
    rc = L[12][tdim[t]]
    if rc >= 0:
        ok &= ~((k == telo[t]) & (raw[rc] < tvlo[t])) & ~((k == tehi[t]) & (raw[rc] > tvhi[t]))
    return ok


def ref_passes(S, L, Q, f):
    ok = np.ones(S[0].shape[1], bool)
    for j in range(2):
        t = 2 * f + j
        if Q[10][t] < 0:
            break
        ok &= ref_test(S, L, Q, t)
    return ok


def ref_fails(S, L, Q, nf):
    out = np.zeros(S[0].shape[1], np.uint64)
    for f in range(nf):
        out |= np.where(ref_passes(S, L, Q, f), np.uint64(0), np.uint64(1 << f))
    return out


def ref_add(S, L, rows, weights, v, counts, sums, oks):
    code = ref_bars(S, L, v)[rows]
    np.add.at(counts, L[6][v] + code, weights)
    x = ref_measure(S, L, v)
    if x is not None:
        x = x[rows]
        ok = ~np.isnan(x)
        np.add.at(sums, L[6][v] + code[ok], weights[ok] * x[ok])
        np.add.at(oks, L[6][v] + code[ok], weights[ok])


# --- tests ------------------------------------------------------------------------------------

# (seed, rows, block size): blocks of 300 rows hold several fences (kernels.FENCE)
CASE = st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 700), st.sampled_from([1, 3, 16, 64, 300]))


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=CASE)
def test_scan_counts_every_passing_row(case):
    seed, n, bsize = case
    rng = np.random.default_rng(seed)
    S, L, Q, nf, nkeys, nslots, _ = make_case(rng, n, bsize)
    nv = len(L[5])
    views = np.flatnonzero(rng.random(nv) < 0.7).astype(np.int64)
    need = rng.integers(0, 1 << nf, nv).astype(np.uint64)
    skip = np.uint64(np.bitwise_and.reduce(need[views])) if len(views) else np.uint64(0)
    got = [np.zeros(nslots, np.int64), np.zeros(nslots), np.zeros(nslots, np.int64)]
    nb = S[4].shape[1]
    K.scan(S, L, Q, views, need, skip, 0, nb, *got)
    want = [np.zeros(nslots, np.int64), np.zeros(nslots), np.zeros(nslots, np.int64)]
    fails = ref_fails(S, L, Q, nf)
    for v in views:
        rows = np.flatnonzero((fails & need[v]) == 0)
        ref_add(S, L, rows, np.ones(len(rows), np.int64), v, *want)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[2], want[2])
    assert np.allclose(got[1], want[1])


def _kranges(rng, nkeys):
    cuts = sorted(set(rng.integers(0, nkeys + 2, int(rng.integers(0, 6))).tolist()))
    pairs = [(cuts[i], cuts[i + 1] - 1) for i in range(0, len(cuts) - 1, 2) if cuts[i] <= cuts[i + 1] - 1]
    if rng.random() < 0.5:  # disjoint, in any order (the kernels search from the last range's end)
        pairs = [pairs[i] for i in rng.permutation(len(pairs))]
    return np.array(pairs, np.int64).reshape(-1, 2)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=CASE, moving=st.booleans(), clustered=st.booleans(), grid=st.sampled_from([0, 1, 5, 64]))
def test_by_keys_adds_the_rows_of_key_ranges(case, moving, clustered, grid):
    """As the store's key order reaches them, or as a clustered copy (engine/copies.py):
    without chunk histograms (grid 0), or with them on a grid of `grid` rows, where chunks
    that mostly pass are counted as their histogram less their failing rows."""
    seed, n, bsize = case
    rng = np.random.default_rng(seed)
    S, L, Q, nf, nkeys, nslots, indexed = make_case(rng, n, bsize)
    if grid and rng.random() < 0.6:  # count views only: chunks may be complemented
        L = (*L[:7], np.zeros_like(L[7]), *L[8:])
    nv = len(L[5])
    d = int(rng.choice(np.flatnonzero(indexed)))
    kr = _kranges(rng, nkeys[d])
    signs = rng.choice([-1, 1, 2], len(kr)).astype(np.int64)
    views = np.flatnonzero(rng.random(nv) < 0.7).astype(np.int64)
    need = rng.integers(0, 1 << nf, nv).astype(np.uint64)
    mf = int(rng.integers(0, nf)) if moving else -1
    Qold = Q
    if moving:
        Qold = random_state(rng, nf, len(nkeys), nkeys, L[12] >= 0, nv, L[5])
        # the filter's old state: other bounds, modes and sets on the same dims
        Qold = tuple(_swap_filter(new, old, mf) if i in (0, 1, 2, 3, 4, 5, 6, 8, 9) else new
                     for i, (new, old) in enumerate(zip(Q, Qold, strict=True)))
        Qold[0][2 * mf:2 * mf + 2] = np.where(Q[10][2 * mf:2 * mf + 2] >= 0, Qold[0][2 * mf:2 * mf + 2], 0)
        need = need & ~np.uint64(1 << mf)
        if indexed[Q[10][2 * mf]] and rng.random() < 0.7:  # as sessions do: the filter's own dim,
            d = int(Q[10][2 * mf])  # whose copy's keys decide most chunks' weights
            kr = _kranges(rng, nkeys[d])
            signs = np.ones(len(kr), np.int64)
    got = [np.zeros(nslots, np.int64), np.zeros(nslots), np.zeros(nslots, np.int64)]
    if clustered:
        C, crow, starts = np.empty_like(S[0]), np.empty(n, np.uint32), np.empty(nkeys[d] + 2, np.int64)
        by_raw = rng.random() < 0.7  # a fine dim's copy in raw order within keys: edge buckets searched
        raw = plain_raw(S, L)[L[12][d]] if by_raw and L[12][d] >= 0 else np.zeros(0)
        # else, mostly, each key's rows in order of another dim's keys: runs read only where
        # that dim's tests pass
        then = int(rng.integers(0, len(nkeys))) if rng.random() < 0.7 else -1
        cdim = d if K.cluster(S[0], d, nkeys[d], C, crow, starts, raw, then) else -1
        edim = then if raw.size == 0 else -1
        narrow = int(rng.choice([0, 3, K.NARROW_ROWS]))  # runs this long are narrowed
        on_edim = [f for f in range(nf) if edim >= 0 and edim in Q[10][2 * f:2 * f + 2]]
        if on_edim and rng.random() < 0.6:  # every view needs a filter on edim: runs are narrowed
            need = need | np.uint64(1 << int(rng.choice(on_edim)))
        hist = np.zeros((-(-n // grid) if grid else 0, nslots), np.uint16)
        zones = np.zeros((len(hist), 2 * len(nkeys)), np.uint16)
        if grid:
            K.chunk_hist(C, L, grid, hist)
            K.chunk_zones(C, grid, zones)
        nb = S[4].shape[1]
        for b0, b1 in ((0, nb // 2), (nb // 2, nb)):  # as two threads split the positions
            K.by_keys_clustered(S, C, crow, starts, hist, zones, grid or K.CHUNK, d, cdim, edim, L, Q, Qold, kr,
                                signs, mf, views, need, b0, b1, *got, narrow)
    else:
        K.by_keys(S, L, Q, Qold, d, kr, signs, mf, views, need, 0, S[4].shape[1], *got)
    want = [np.zeros(nslots, np.int64), np.zeros(nslots), np.zeros(nslots, np.int64)]
    k = S[0][d].astype(np.int64)
    weight = np.zeros(n, np.int64)
    for (a, b), s in zip(kr, signs, strict=True):
        weight[(k >= a) & (k <= b)] = s
    if moving:
        now, was = ref_passes(S, L, Q, mf), ref_passes(S, L, Qold, mf)
        weight = np.where(weight != 0, now.astype(np.int64) - was.astype(np.int64), 0)
    fails = ref_fails(S, L, Q, nf)
    for v in views:
        rows = np.flatnonzero(((fails & need[v]) == 0) & (weight != 0))
        ref_add(S, L, rows, weight[rows], v, *want)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[2], want[2])
    assert np.allclose(got[1], want[1])


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=CASE, keep_rows=st.booleans(), by_raw=st.booleans(), nan=st.booleans(), then=st.booleans())
def test_cluster_orders_the_shards_rows_by_key(case, keep_rows, by_raw, nan, then):
    """By key, then (given a fine dim's raw values) by raw value, or else (given `then`) by
    the key on another dim, then by row; a NaN among the rows of a key (not the no-value
    key) leaves them in row order (or `then`'s), and says so."""
    seed, n, bsize = case
    rng = np.random.default_rng(seed)
    S, L, _, _, nkeys, _, _ = make_case(rng, n, bsize)
    d = int(rng.integers(0, len(nkeys)))
    keys = S[0]
    raw = np.round(plain_raw(S, L)[L[12][d]], 1) if by_raw and L[12][d] >= 0 else np.zeros(0)  # with ties
    if raw.size and nan:
        raw[rng.integers(0, n)] = np.nan
    C, crow, starts = np.empty_like(keys), np.empty(n if keep_rows else 0, np.uint32), \
        np.empty(nkeys[d] + 2, np.int64)
    e = int(rng.integers(0, len(nkeys))) if then else -1
    sorted_ = K.cluster(keys, d, nkeys[d], C, crow, starts, raw, e)
    valued = keys[d] < nkeys[d]
    want_sorted = raw.size == n and not np.isnan(raw[valued]).any()  # no rows: vacuously
    assert sorted_ == want_sorted
    within = np.where(valued, raw, 0) if want_sorted else np.zeros(n)  # the no-value key: by row
    if e >= 0 and not want_sorted:
        within = keys[e].astype(np.float64)
    perm = np.lexsort((within, keys[d]))
    assert np.array_equal(C, keys[:, perm])
    if keep_rows:
        assert np.array_equal(crow, perm)
    want = np.concatenate([[0], np.cumsum(np.bincount(keys[d], minlength=nkeys[d] + 1))])
    assert np.array_equal(starts, want)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=CASE, grid=st.sampled_from([1, 7, 64, 2048]))
def test_chunk_zones_are_each_grid_chunks_least_and_greatest_keys(case, grid):
    seed, n, bsize = case
    rng = np.random.default_rng(seed)
    S, _, _, _, nkeys, _, _ = make_case(rng, n, bsize)
    out = np.zeros((-(-n // grid), 2 * len(nkeys)), np.uint16)
    K.chunk_zones(S[0], grid, out)
    for c in range(len(out)):
        part = S[0][:, c * grid:(c + 1) * grid]
        assert np.array_equal(out[c], np.concatenate([part.min(axis=1), part.max(axis=1)]))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=CASE, grid=st.sampled_from([1, 7, 64, 2048]))
def test_chunk_hist_counts_every_views_bar_per_grid_chunk(case, grid):
    seed, n, bsize = case
    rng = np.random.default_rng(seed)
    S, L, _, _, _, nslots, _ = make_case(rng, n, bsize)
    out = np.zeros((-(-n // grid), nslots), np.uint16)
    K.chunk_hist(S[0], L, grid, out)
    want = np.zeros((len(out), nslots), np.int64)
    for v in range(len(L[5])):
        np.add.at(want, (np.arange(n) // grid, L[6][v] + ref_bars(S, L, v)), 1)
    assert np.array_equal(out, want)


def _swap_filter(new, old, f):
    """Q arrays equal to `new` except filter f's two tests, taken from `old`."""
    out = new.copy()
    out[2 * f:2 * f + 2] = old[2 * f:2 * f + 2]
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=CASE, use_index=st.booleans(), skip=st.integers(0, 50), limit=st.integers(0, 80))
def test_rows_passing_and_count_in_rid_order(case, use_index, skip, limit):
    seed, n, bsize = case
    rng = np.random.default_rng(seed)
    S, L, Q, nf, nkeys, nslots, indexed = make_case(rng, n, bsize)
    need = np.uint64(rng.integers(0, 1 << nf))
    d = int(rng.choice(np.flatnonzero(indexed))) if use_index else -1
    kr = _kranges(rng, nkeys[max(d, 0)])
    cand = np.ones(n, bool)
    if d >= 0:
        k = S[0][d].astype(np.int64)
        cand = np.zeros(n, bool)
        for a, b in kr:
            cand |= (k >= a) & (k <= b)
    passing = np.flatnonzero(cand & ((ref_fails(S, L, Q, nf) & need) == 0))
    out = np.zeros(limit, np.int64)
    nb = S[4].shape[1]
    written, skipped = K.rows_passing(S, L, Q, need, d, kr, 0, nb, skip, limit, out, 1000)
    assert list(out[:written]) == list(passing[skip:skip + limit] + 1000)
    assert skipped == min(skip, len(passing))
    assert K.count_passing(S, L, Q, need, d, kr, 0, nb, need) == len(passing)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=CASE)
def test_tile_cells_are_aggregates_per_key_block_and_bar(case):
    seed, n, bsize = case
    rng = np.random.default_rng(seed)
    S, L, Q, nf, nkeys, nslots, _ = make_case(rng, n, bsize)
    nv = len(L[5])
    d = int(rng.integers(0, len(nkeys)))
    nblocks = int(rng.integers(1, nkeys[d] + 1))
    cblut = np.append(np.sort(rng.integers(0, nblocks, nkeys[d])), -1).astype(np.int64)
    views = np.flatnonzero(rng.random(nv) < 0.8).astype(np.int64)
    need = rng.integers(0, 1 << nf, nv).astype(np.uint64)
    cols = np.concatenate([[0], np.cumsum(L[5][views] + 1)[:-1]]).astype(np.int64)
    width = int((L[5][views] + 1).sum()) if len(views) else 1
    cells = nblocks * width + 1  # and the spare cell
    got = [np.zeros(cells, np.int64), np.zeros(cells), np.zeros(cells, np.int64)]
    K.tile(S, L, Q, views, need, cols, d, cblut, width, 0, S[4].shape[1], *got)
    got = [a[:-1] for a in got]
    want = [np.zeros(nblocks * width, np.int64), np.zeros(nblocks * width), np.zeros(nblocks * width, np.int64)]
    fails = ref_fails(S, L, Q, nf)
    k = S[0][d].astype(np.int64)
    for j, v in enumerate(views):
        rows = np.flatnonzero(((fails & need[v]) == 0) & (k < nkeys[d]))
        cell = cblut[k[rows]] * width + cols[j] + ref_bars(S, L, v)[rows]
        np.add.at(want[0], cell, 1)
        x = ref_measure(S, L, v)
        if x is not None:
            x = x[rows]
            ok = ~np.isnan(x)
            np.add.at(want[1], cell[ok], x[ok])
            np.add.at(want[2], cell[ok], 1)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[2], want[2])
    assert np.allclose(got[1], want[1])


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=CASE)
def test_bars_of_reads_each_rows_bar(case):
    seed, n, bsize = case
    rng = np.random.default_rng(seed)
    S, L, *_ = make_case(rng, n, bsize)
    rows = rng.integers(0, max(n, 1), 10).astype(np.int64) if n else np.zeros(0, np.int64)
    for v in range(len(L[5])):
        out = np.zeros(len(rows), np.int64)
        K.bars_of(S, L, rows, v, out)
        assert list(out) == list(ref_bars(S, L, v)[rows])


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=CASE, use_index=st.booleans())
def test_gather_writes_the_measures_of_wanted_codes(case, use_index):
    seed, n, bsize = case
    rng = np.random.default_rng(seed)
    S, L, Q, nf, nkeys, nslots, indexed = make_case(rng, n, bsize)
    nv = len(L[5])
    v = int(rng.integers(0, nv))
    md = int(rng.integers(0, len(nkeys)))
    need = np.uint64(rng.integers(0, 1 << nf))
    d = int(rng.choice(np.flatnonzero(indexed))) if use_index else -1
    kr = _kranges(rng, nkeys[max(d, 0)])
    cand = np.ones(n, bool)
    if d >= 0:
        k = S[0][d].astype(np.int64)
        cand = np.zeros(n, bool)
        for a, b in kr:
            cand |= (k >= a) & (k <= b)
    ntargets = int(rng.integers(1, 4))
    wanted = np.where(rng.random(L[5][v] + 1) < 0.5, rng.integers(0, ntargets, L[5][v] + 1), -1)
    passing = cand & ((ref_fails(S, L, Q, nf) & need) == 0)
    codes = ref_bars(S, L, v)
    rc = L[12][md]
    measure = plain_raw(S, L)[rc] if rc >= 0 else S[0][md].astype(np.float64)
    want = [np.sort(measure[passing & (wanted[codes] == t)]) for t in range(ntargets)]
    offs = np.concatenate([[0], np.cumsum([len(w) for w in want])]).astype(np.int64)
    out = np.full(offs[-1], np.nan)
    fill = np.zeros(ntargets, np.int64)
    K.gather(S, L, Q, v, need, d, kr, md, wanted.astype(np.int64), offs, fill, out, 0, S[4].shape[1])
    assert list(fill) == [len(w) for w in want]
    for t in range(ntargets):
        assert np.array_equal(np.sort(out[offs[t]:offs[t + 1]]), want[t], equal_nan=True)  # (no value: NaN)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 4))
def test_split_runs_gives_every_block_once_and_the_run_rows_evenly(seed, n):
    """Blocks of several shards' clustered copies, shared among n threads by the rows of
    random key ranges' runs: each block goes to one thread, in runs of blocks, and each
    thread's rows are its even share, within one block's rows (plain numpy counts them)."""
    rng = np.random.default_rng(seed)
    bsize, nkeys = int(rng.integers(1, 9)), int(rng.integers(1, 12))
    sizes = rng.integers(0, 40, int(rng.integers(1, 5)))
    starts = np.zeros((len(sizes), nkeys + 2), np.int64)
    units = [(i, -(-int(m) // bsize)) for i, m in enumerate(sizes) if m]
    for i, m in enumerate(sizes):  # rows per key, as kernels.cluster counts them
        starts[i, 1:] = np.cumsum(rng.multinomial(m, np.ones(nkeys + 1) / (nkeys + 1)))
    if not units:
        return
    at = np.concatenate([np.full(nb, i) for i, nb in units])
    block = np.concatenate([np.arange(nb) for _, nb in units])
    lo = np.minimum(block * bsize, starts[at, -1])
    hi = np.minimum(lo + bsize, starts[at, -1])
    cuts = np.sort(rng.choice(nkeys + 3, int(rng.integers(1, 3)) * 2, replace=False)) - 1
    kr = cuts.reshape(-1, 2).astype(np.int64)  # disjoint ranges, some past either end
    segs = np.empty((len(at), 4), np.int64)
    m = K.split_runs(starts, at, lo, hi, at.copy(), block, kr, n, segs)
    got = sorted((i, b) for _, i, b0, b1 in segs[:m] for b in range(b0, b1))
    assert got == sorted(zip(at.tolist(), block.tolist(), strict=True))
    member = np.zeros((len(sizes), max(sizes) + 1), bool)
    for i in range(len(sizes)):
        for a, z in kr:
            member[i, starts[i, np.clip(a, 0, nkeys + 1)]:starts[i, np.clip(z + 1, 0, nkeys + 1)]] = True
    share = np.zeros(n, np.int64)
    for t, i, b0, b1 in segs[:m]:
        share[t] += member[i, b0 * bsize:b1 * bsize].sum()
    assert np.all(np.abs(share - share.sum() / n) <= bsize)


# --- order statistics -------------------------------------------------------------------------


def _segment(rng: np.random.Generator, n: int, dtype) -> np.ndarray:
    """n values of one cell's block: many ties, or sorted, reversed, all equal, or spread."""
    shape = int(rng.integers(0, 5))
    x = rng.integers(-3, 4, n) if shape == 0 else rng.normal(0, 10, n).round(int(rng.integers(0, 3)))
    if shape == 1:
        x = np.sort(x)
    elif shape == 2:
        x = np.sort(x)[::-1]
    elif shape == 3:
        x = np.full(n, x[0] if n else 0)
    return np.asarray(x).astype(dtype)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_rank_blocks_equals_cumulative_sums(seed):
    """Bars of empty, one-row and many-row blocks (zeros between, before and after), the
    ranks at both ends and between: the block and the rank within it, as numpy finds
    them from each bar's cumulative counts."""
    rng = np.random.default_rng(seed)
    nbars, m = int(rng.integers(1, 12)), int(rng.integers(1, 40))
    cells = rng.choice([0, 0, 0, 1, 2, 7, 100], (nbars, m + 1)).astype(np.int64)
    n = cells[:, :m].sum(axis=1)
    bars = np.flatnonzero(n > 0).astype(np.int64)
    if not len(bars):
        return
    lo = (rng.random(len(bars)) * n[bars]).astype(np.int64)
    hi = np.minimum(lo + rng.integers(0, 3, len(bars)), n[bars] - 1)
    got = [np.empty(len(bars), np.int64) for _ in range(4)]
    K.rank_blocks(cells, m, bars, lo, hi, *got)
    cum = np.cumsum(cells[bars, :m], axis=1)
    before = np.concatenate([np.zeros((len(bars), 1), np.int64), cum[:, :-1]], axis=1)
    for k, (ranks, j, r) in enumerate([(lo, got[0], got[1]), (hi, got[2], got[3])]):
        want = (cum <= ranks[:, None]).sum(axis=1)
        assert j.tolist() == want.tolist(), k
        assert r.tolist() == (ranks - before[np.arange(len(bars)), want]).tolist(), k
        assert (cells[bars, j] > r).all()  # the block holds that many rows


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), integers=st.booleans())
def test_select_ranks_equals_sorting_each_segment(seed, integers):
    """Ranks in segments of ties, sorted and reversed runs, one value or many (empty
    segments among them, never asked): each equals its segment sorted by numpy."""
    rng = np.random.default_rng(seed)
    dtype = np.int64 if integers else np.float64
    sizes = rng.choice([0, 1, 2, 3, 5, 17, 200], int(rng.integers(1, 30)))
    segs = [_segment(rng, int(m), dtype) for m in sizes]
    values = np.concatenate(segs).astype(dtype)
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    full = np.flatnonzero(sizes)
    if not len(full):
        return
    targets = rng.choice(full, int(rng.integers(1, 3 * len(full) + 1))).astype(np.int64)
    ranks = (rng.random(len(targets)) * sizes[targets]).astype(np.int64)
    out = np.empty(len(targets), dtype)
    K.select_ranks(values, offs, targets, ranks, out)
    want = [np.sort(segs[t])[r] for t, r in zip(targets, ranks, strict=True)]
    assert out.tolist() == [x.item() for x in want]
    for t in range(len(sizes)):  # each segment keeps its values, only reordered
        assert np.array_equal(np.sort(values[offs[t]:offs[t + 1]]), np.sort(segs[t]))


def ref_interpolate(lo: float, hi: float, d: float) -> float:
    """quantile_cont's lo (1 - d) + hi d in rationals, rounded once (plain Python)."""
    if d == 0:
        return lo
    b, a = hi * d, 1.0 - d
    if not (math.isfinite(lo) and math.isfinite(a) and math.isfinite(b)):
        return lo * a + b
    return float(Fraction(lo) * Fraction(a) + Fraction(b))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6),
                          st.one_of(st.just(0.0), st.floats(0, 1, exclude_max=True))),
                min_size=1, max_size=20))
def test_interpolate_rounds_once(rows):
    """Subnormals, signed zeros, exact cancellations (hypothesis' favourite floats), and
    random bars of a quantile: bit for bit the rational computation, rounded once."""
    rows += [(0.1, 0.1 * 3, 0.5), (-0.0, -0.0, 0.25), (-0.0, 5e-324, 0.5), (1e308, 1e308, 0.5)]
    lo, hi, d = (np.array(c, np.float64) for c in zip(*rows, strict=True))
    out = np.empty(len(lo))
    K.interpolate(lo, hi, d, out)
    want = np.array([ref_interpolate(*r) for r in rows])
    assert out.view(np.int64).tolist() == want.view(np.int64).tolist()
