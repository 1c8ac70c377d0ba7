"""A fine dim's raw values on a decimal lattice, or as offsets of their bits: 2 to 6 bytes a
row instead of 8, exactly.

A fine dim keeps each row's value beside its bucket key, so that a brush edge inside a
bucket is decided exactly (lineage/layout.py). Columns in the wild are rarely arbitrary
doubles: counts are integers, money has cents, instants are whole milliseconds or seconds
(epoch microseconds here), measurements have a decimal or two. Such a value is
x = n * 10^j (j >= 0) or x = n / 10^-j (j < 0) for an integer n, and in bucket k,
n - base[k] is small: base[k] = floor(edges[k] / 10^j) - 1, computed from the layout's
edges alone (bucket 0, whose lower edge is -inf, takes the shard's smallest n there).

A shard keeps a raw row as offsets n - base[key], uint16 or uint32, when every row with a
value decodes to that value (`encode` checks each one with `decode` itself; bit for bit,
but for -0.0, which comes back as the equal 0.0); the few rows of sparse buckets whose
offset does not fit (at most 1 %) hold the type's largest value and are exceptions, their
values kept as float64 beside their row. Else the row stays float64: exact either way.
A shard whose values are on no decimal lattice (arbitrary doubles: quotients, float32
columns read as doubles, noise) keeps them as offsets of their *ordered bits*: a double's
bits as an int64 that orders like the values (the bits' magnitude, negated for negative
values), shifted right by the bits every value leaves zero (29 for a float32 column),
less its bucket's lower edge's: a bucket of an equi-depth fine dim is narrow, so its
values share their sign, exponent and leading mantissa bits — uint16, uint32, 40 or 48
bits (`lat` for the low 32, a row of `lat8` or `lat16` for the high 8 or 16) by how narrow
(flights' air times in 14k buckets: 39 bits for half the rows, 44 for 99 %), the rows of
the widest buckets (at most 10 %: the tails, and next to zero, where values span many
exponents) kept aside as exceptions where that takes fewer bytes. `rinfo`'s step j is
then ULP + the shift.
Rows without a value (the no-value key) decode to NaN. A fine dim whose values a sum or mean
reads stays float64: an update reads those for every row it counts, where decoding costs
~2 ns a row (TPC-H SF1's revenue over extended prices: incremental updates 20 % slower).

A shard's raw arrays (`RawArrays`, the store's files of those names): `raw` (float64
rows), `lat` (uint32 rows: offsets, or their low 32 bits), `lat16` (uint16 rows: offsets, or
48-bit offsets' high bits), `xrows` / `xvals` (exceptions: rows, ascending per raw row, and
values), `rinfo` (raw rows, 7) int64: [kind, its row in the kind's array, j, base of bucket
0, first and end exception, the row of its high bits (-1: none)], and `lat8` (uint8 rows:
40-bit offsets' high bits).
The kernels decode with
engine/kernels.py `_raw_at`, this module's `decode` in numba (the tests check one against
the other).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numba import njit

FLOAT, LAT32, LAT16, ULP16, ULP32, ULP40, ULP48 = 0, 1, 2, 3, 4, 5, 6
# (kind, type, the largest offset: an exception's mark), narrowest first
OFFSETS = ((LAT16, np.uint16, 0xFFFF), (LAT32, np.uint32, 0xFFFFFFFF))
ULPS = ((ULP16, np.uint16, 0xFFFF), (ULP32, np.uint32, 0xFFFFFFFF), (ULP40, np.uint64, 2**40 - 1),
        (ULP48, np.uint64, 2**48 - 1))
WIDTH = {FLOAT: 8, LAT32: 4, LAT16: 2, ULP16: 2, ULP32: 4, ULP40: 5, ULP48: 6}  # bytes a row
NAMES = {FLOAT: "float64", LAT32: "uint32", LAT16: "uint16", ULP16: "uint16 bits", ULP32: "uint32 bits",
         ULP40: "40 bits", ULP48: "48 bits"}
ULP = 100  # a step j >= ULP: offsets of ordered bits shifted right by j - ULP, not of 10^j
MAGNITUDE = np.int64(0x7FFFFFFFFFFFFFFF)
SIGN = np.int64(-(2**63))
SIGN_INT = -(2**63)  # (as the kernels take it)
POW10 = np.array([10.0**i for i in range(19)])  # exact: every power of ten up to 1e22 is a double
STEPS = (9, 6, 3, 0, -1, -2, -3, -4, -5, -6, -7, -8, -9)  # coarsest first: the smallest offsets
EXACT = 2.0**52  # |n| below this: n, and each step's arithmetic on it, is exact in float64
PROBE = 512  # values tried first, before every row is checked at a step
EXCEPTIONS = 0.01  # share of a shard's rows with a value that may be exceptions, on a lattice
ULP_EXCEPTIONS = 0.1  # ... as bits' offsets: an equi-depth dim's widest buckets (its tails,
# and the buckets next to zero, whose values span many exponents) hold a few percent of the
# rows. Within the share, the type of the fewest bytes is taken: an exception costs
# EXCEPTION_BYTES, a row one byte less a step narrower (40 of 48 bits: worth it up to 1/12)
EXCEPTION_BYTES = 12  # its row (uint32) and value (float64)


class RawArrays(NamedTuple):
    """A shard's raw values (module docstring)."""

    raw: np.ndarray
    lat: np.ndarray
    lat16: np.ndarray
    xrows: np.ndarray
    xvals: np.ndarray
    rinfo: np.ndarray
    lat8: np.ndarray


class Coded(NamedTuple):
    kind: int
    j: int
    base0: int
    off: np.ndarray  # uint16, uint32 or (40, 48 bits) uint64 per row; its largest: an exception
    xrows: np.ndarray  # uint32, ascending
    xvals: np.ndarray


def _steps(x: np.ndarray, j: int) -> np.ndarray:
    """x in steps of 10^j (not rounded)."""
    return x / POW10[j] if j >= 0 else x * POW10[-j]


def _value(n: np.ndarray, j: int) -> np.ndarray:
    """The double of n steps of 10^j, as `decode` and the kernels compute it."""
    return n * POW10[j] if j >= 0 else n / POW10[-j]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """The same values (no NaN here; -0.0 comes back as 0.0, which every comparison, sum
    and SQL answer takes as the same value: rounded negatives are -0.0 in the wild)."""
    return bool(np.array_equal(a, b))


def step_text(j: int) -> str:
    """How a step j codes values, for reports."""
    if j < ULP:
        return f"on a lattice of steps of 1e{j}"
    return "as offsets of their bits" + (f" (the low {j - ULP} of them zero)" if j > ULP else "")


def ordered(x: np.ndarray) -> np.ndarray:
    """Doubles as int64 that order as they do: the bits' magnitude, negated for negative
    values (-0.0 is 0, as 0.0; NaN orders past inf)."""
    b = np.asarray(x, np.float64).view(np.int64)
    m = b & MAGNITUDE
    return np.where(b < 0, -m, m)


def from_ordered(u: np.ndarray) -> np.ndarray:
    """The doubles of `ordered` values."""
    u = np.asarray(u, np.int64)
    return np.where(u < 0, (-u) | SIGN, u).view(np.float64)


def bases(edges: np.ndarray, j: int) -> np.ndarray | None:
    """int64 base per key (its bucket's lower edge in steps of 10^j, less one; for j >= ULP,
    its ordered bits shifted right by j - ULP; key 0 and the no-value key: 0), or None when
    an edge is too far from 0 to be exact."""
    if j >= ULP:
        b = ordered(np.asarray(edges[1:], np.float64)) >> (j - ULP)
        return np.concatenate([[0], b, [0]]).astype(np.int64)
    with np.errstate(all="ignore"):
        b = np.floor(_steps(np.asarray(edges[1:], np.float64), j)) - 1
    if len(b) and not np.all(np.abs(b) < EXACT):
        return None
    return np.concatenate([[0], b, [0]]).astype(np.int64)


def encode(x: np.ndarray, keys: np.ndarray, nkeys: int, edges: np.ndarray) -> Coded | None:
    """x's offsets on the coarsest step of STEPS that holds every value with a key below
    nkeys exactly, else as offsets of their ordered bits; in the type of the fewest bytes
    that leaves at most EXCEPTIONS (as bits: ULP_EXCEPTIONS) of them out; None when neither does (NaN
    among them, or offsets wider than 48 bits for too many)."""
    k = np.asarray(keys, np.int64)
    has = k < nkeys
    v = np.asarray(x, np.float64)[has]
    none = np.zeros(0, np.uint32), np.zeros(0, np.float64)
    if not len(v):  # (a step whose bases are exact: the loader makes them)
        j = next((j for j in STEPS if bases(edges, j) is not None), None)
        return None if j is None else Coded(LAT16, j, 0, np.zeros(len(k), np.uint16), *none)
    with np.errstate(all="ignore"):
        if np.isnan(v).any():
            return None
        finite = bool(np.all(np.abs(v) < EXACT))  # (a decimal step's arithmetic is exact)
        probe = v[:: max(1, len(v) // PROBE)]
        for j in STEPS if finite else ():
            p = np.rint(_steps(probe, j))
            if not (np.all(np.abs(p) < EXACT) and _same(_value(p, j), probe)):
                continue
            n = np.rint(_steps(v, j))
            if not (np.all(np.abs(n) < EXACT) and _same(_value(n, j), v)):
                continue
            c = _narrowest(n.astype(np.int64), j, OFFSETS, EXCEPTIONS, k, has, v, nkeys, edges)
            if c is not None:
                return c
        u = ordered(v)
        low = int(np.bitwise_or.reduce(u))
        shift = (low & -low).bit_length() - 1 if low else 0
        return _narrowest(u >> shift, ULP + shift, ULPS, ULP_EXCEPTIONS, k, has, v, nkeys, edges)


def _narrowest(n: np.ndarray, j: int, kinds, share: float, k: np.ndarray, has: np.ndarray,
               v: np.ndarray, nkeys: int, edges: np.ndarray) -> Coded | None:
    """Integers n (one per row with a value) as offsets from their bucket's base at step j,
    in the one of `kinds` that leaves at most `share` of them out, decodes to v and takes
    the fewest bytes with its exceptions (of equal ones, the narrowest). One pass counts
    what each kind leaves out (`_left_out`), one codes the rows and checks each decodes
    to its value (`_code_rows`): no temporaries per row."""
    base = bases(edges, j)
    if base is None:
        return None
    kk = np.ascontiguousarray(k[has])
    first = kk == 0
    base0 = int(n[first].min()) if first.any() else 0
    tops = np.array([top for _, _, top in kinds], np.int64)
    nouts = _left_out(n, kk, base, base0, tops)
    fits = [(WIDTH[kind] * len(k) + EXCEPTION_BYTES * int(nout), kind, t, top)
            for (kind, t, top), nout in zip(kinds, nouts, strict=True) if nout <= share * len(v)]
    rows = np.flatnonzero(has)
    for _, kind, t, top in sorted(fits, key=lambda f: f[0]):  # (stable: narrowest first)
        coded = np.zeros(len(k), t)
        out = np.empty(len(n), np.int64)
        nout = _code_rows(n, kk, base, base0, top, j - ULP if j >= ULP else j, j >= ULP, v, rows,
                          coded, out)
        if nout >= 0:
            out = out[:nout]
            return Coded(kind, j, base0, coded, rows[out].astype(np.uint32), v[out])
    return None


@njit(nogil=True, cache=True)
def _left_out(n, kk, base, base0, tops):  # pragma: no cover (compiled; tests/lineage)
    """How many of the offsets n[i] - base[kk[i]] (base0 for key 0) each of `tops` leaves
    out: negative, at or over it, or overflowing int64."""
    out = np.zeros(tops.shape[0], np.int64)
    for i in range(n.shape[0]):
        b = base0 if kk[i] == 0 else base[kk[i]]
        o = n[i] - b  # (wraps on overflow, as numpy's)
        wrapped = ((n[i] ^ b) & (n[i] ^ o)) < 0
        for t in range(tops.shape[0]):
            if wrapped or o < 0 or o >= tops[t]:
                out[t] += 1
    return out


@njit(nogil=True, cache=True)
def _code_rows(n, kk, base, base0, top, shift_or_j, bits, v, rows, coded, out):  # pragma: no cover
    """Write each row's offset n[i] - base into coded[rows[i]], or `top` where it does not
    fit (the positions i of those into `out`), and
    check that each coded row decodes to v[i] as `decode` computes it (bits: ordered bits
    shifted by shift_or_j; else n steps of 10^j); the exceptions' count, or -1 when a row
    does not decode to its value."""
    cell = np.empty(1, np.int64)
    as_float = cell.view(np.float64)
    x = 0
    for i in range(n.shape[0]):
        b = base0 if kk[i] == 0 else base[kk[i]]
        o = n[i] - b
        if ((n[i] ^ b) & (n[i] ^ o)) < 0 or o < 0 or o >= top:
            o = top
            out[x] = i
            x += 1
        else:
            m = b + o
            if bits:
                u = m << shift_or_j
                cell[0] = ((-u) | SIGN_INT) if u < 0 else u
                y = as_float[0]
            elif shift_or_j >= 0:
                y = m * POW10[shift_or_j]
            else:
                y = m / POW10[-shift_or_j]
            if y != v[i]:
                return -1
        coded[rows[i]] = o
    return x


def decode(c: Coded, keys: np.ndarray, nkeys: int, edges: np.ndarray) -> np.ndarray:
    """float64 values of `encode`'s offsets (NaN where the key is the no-value key)."""
    k = np.asarray(keys)
    base = bases(edges, c.j)
    if base is None:  # (encode never chose such a step)
        return np.full(len(k), np.nan)
    out = np.empty(len(k), np.float64)
    _decode_rows(k, np.asarray(c.off), base, c.base0, nkeys, c.j - ULP if c.j >= ULP else c.j, c.j >= ULP,
                 np.asarray(c.xrows), np.asarray(c.xvals), out)
    return out


@njit(nogil=True, cache=True)
def _decode_rows(k, off, base, base0, nkeys, shift_or_j, bits, xrows, xvals, out):  # pragma: no cover
    """out[i]: row i's value from its offset off[i] on its key's base (base0 for key 0) as
    `_code_rows` checks it, the exceptions' values at their rows, NaN at the no-value key."""
    cell = np.empty(1, np.int64)
    as_float = cell.view(np.float64)
    for i in range(k.shape[0]):
        kk = np.int64(k[i])
        if kk >= nkeys:
            out[i] = np.nan
            continue
        m = (base0 if kk == 0 else base[kk]) + np.int64(off[i])  # (an exception's: replaced below)
        if bits:
            u = m << shift_or_j
            cell[0] = ((-u) | SIGN_INT) if u < 0 else u
            out[i] = as_float[0]
        elif shift_or_j >= 0:
            out[i] = m * POW10[shift_or_j]
        else:
            out[i] = m / POW10[-shift_or_j]
    for x in range(xrows.shape[0]):
        r = np.int64(xrows[x])
        if np.int64(k[r]) < nkeys:
            out[r] = xvals[x]


def pack(rows: Sequence[tuple[np.ndarray, np.ndarray, int, np.ndarray]], n: int,
         floats: set[int] | frozenset[int] = frozenset()) -> RawArrays:
    """A shard's raw rows, each (values, keys, nkeys, edges) of a fine dim: on the lattice
    or as their bits' offsets where `encode` finds one, else (and for the rows `floats`) as
    they are."""
    coded = [None if i in floats else encode(x, k, nk, e) for i, (x, k, nk, e) in enumerate(rows)]
    of = {kind: [i for i, c in enumerate(coded) if (c.kind if c else FLOAT) == kind] for kind in WIDTH}
    lows = {FLOAT: of[FLOAT], 32: of[LAT32] + of[ULP32] + of[ULP40] + of[ULP48], 16: of[LAT16] + of[ULP16]}
    raw = np.empty((len(lows[FLOAT]), n), np.float64)
    lat = np.empty((len(lows[32]), n), np.uint32)
    lat16 = np.empty((len(lows[16]) + len(of[ULP48]), n), np.uint16)  # 48 bits' high ones last
    lat8 = np.empty((len(of[ULP40]), n), np.uint8)
    high = {i: r for r, i in enumerate(of[ULP40])} | {i: len(lows[16]) + r for r, i in enumerate(of[ULP48])}
    rinfo = np.zeros((len(rows), 7), np.int64)
    xrows, xvals, at = [], [], 0
    for array, at_rows in ((raw, lows[FLOAT]), (lat, lows[32]), (lat16, lows[16])):
        for r, i in enumerate(at_rows):
            c = coded[i]
            if c is None:
                array[r] = rows[i][0]
                rinfo[i] = (FLOAT, r, 0, 0, at, at, -1)
                continue
            array[r] = c.off & 0xFFFFFFFF if c.kind in (ULP40, ULP48) else c.off
            if c.kind in (ULP40, ULP48):
                (lat8 if c.kind == ULP40 else lat16)[high[i]] = c.off >> 32
            rinfo[i] = (c.kind, r, c.j, c.base0, at, at + len(c.xrows), high.get(i, -1))
            xrows.append(c.xrows)
            xvals.append(c.xvals)
            at += len(c.xrows)
    return RawArrays(raw, lat, lat16, np.concatenate([np.zeros(0, np.uint32), *xrows]),
                     np.concatenate([np.zeros(0), *xvals]), rinfo, lat8)


def offsets(a: RawArrays, kind: int, row: int, hi: int) -> np.ndarray:
    """A raw row's offsets of `kind` (rinfo's row and high row; 40 and 48 bits as uint64)."""
    if kind in (ULP40, ULP48):
        top = a.lat8[hi] if kind == ULP40 else a.lat16[hi]
        return a.lat[row].astype(np.uint64) | (top.astype(np.uint64) << np.uint64(32))
    return a.lat[row] if kind in (LAT32, ULP32) else a.lat16[row]


def values(a: RawArrays, rc: int, keys: np.ndarray, nkeys: int, edges: np.ndarray) -> np.ndarray:
    """Raw row rc of a shard as float64 (`keys`: the fine dim's keys, `edges` its buckets')."""
    kind, row, j, base0, x0, x1, hi = (int(v) for v in a.rinfo[rc][:7])
    if kind == FLOAT:
        return np.asarray(a.raw[row])
    return decode(Coded(kind, j, base0, offsets(a, kind, row, hi), a.xrows[x0:x1], a.xvals[x0:x1]), keys,
                  nkeys, np.asarray(edges, np.float64))
