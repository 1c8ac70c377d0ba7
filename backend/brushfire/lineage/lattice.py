"""A fine dim's raw values on a decimal lattice: 2 or 4 bytes a row instead of 8, exactly.

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
Rows without a value (the no-value key) decode to NaN. A fine dim whose values a sum or mean
reads stays float64: an update reads those for every row it counts, where decoding costs
~2 ns a row (TPC-H SF1's revenue over extended prices: incremental updates 20 % slower).

A shard's raw arrays (`RawArrays`, the store's files of those names): `raw` (float64
rows), `lat` (uint32 rows), `lat16` (uint16 rows), `xrows` / `xvals` (exceptions: rows,
ascending per raw row, and values) and `rinfo` (raw rows, 6) int64: [kind, its row in the
kind's array, j, base of bucket 0, first and end exception]. The kernels decode with
engine/kernels.py `_raw_at`, this module's `decode` in numba (the tests check one against
the other).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

FLOAT, LAT32, LAT16 = 0, 1, 2
OFFSETS = ((LAT16, np.uint16), (LAT32, np.uint32))  # narrowest first
POW10 = np.array([10.0**i for i in range(19)])  # exact: every power of ten up to 1e22 is a double
STEPS = (9, 6, 3, 0, -1, -2, -3, -4, -5, -6, -7, -8, -9)  # coarsest first: the smallest offsets
EXACT = 2.0**52  # |n| below this: n, and each step's arithmetic on it, is exact in float64
PROBE = 512  # values tried first, before every row is checked at a step
EXCEPTIONS = 0.01  # share of a shard's rows with a value that may be exceptions


class RawArrays(NamedTuple):
    """A shard's raw values (module docstring)."""

    raw: np.ndarray
    lat: np.ndarray
    lat16: np.ndarray
    xrows: np.ndarray
    xvals: np.ndarray
    rinfo: np.ndarray


class Coded(NamedTuple):
    kind: int
    j: int
    base0: int
    off: np.ndarray  # uint16 or uint32 per row; the type's largest value: an exception
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


def bases(edges: np.ndarray, j: int) -> np.ndarray | None:
    """int64 base per key (its bucket's lower edge in steps of 10^j, less one; key 0 and
    the no-value key: 0), or None when an edge is too far from 0 to be exact."""
    with np.errstate(all="ignore"):
        b = np.floor(_steps(np.asarray(edges[1:], np.float64), j)) - 1
    if len(b) and not np.all(np.abs(b) < EXACT):
        return None
    return np.concatenate([[0], b, [0]]).astype(np.int64)


def encode(x: np.ndarray, keys: np.ndarray, nkeys: int, edges: np.ndarray) -> Coded | None:
    """x's offsets on the coarsest step of STEPS that holds every value with a key below
    nkeys exactly, in the narrowest type that leaves at most EXCEPTIONS of them out; None
    when no step does."""
    k = np.asarray(keys, np.int64)
    has = k < nkeys
    v = np.asarray(x, np.float64)[has]
    none = np.zeros(0, np.uint32), np.zeros(0, np.float64)
    if not len(v):  # (a step whose bases are exact: the loader makes them)
        j = next((j for j in STEPS if bases(edges, j) is not None), None)
        return None if j is None else Coded(LAT16, j, 0, np.zeros(len(k), np.uint16), *none)
    with np.errstate(all="ignore"):
        if not np.all(np.abs(v) < EXACT):  # (also: no NaN or ±inf)
            return None
        probe = v[:: max(1, len(v) // PROBE)]
        for j in STEPS:
            p = np.rint(_steps(probe, j))
            if not (np.all(np.abs(p) < EXACT) and _same(_value(p, j), probe)):
                continue
            n = np.rint(_steps(v, j))
            if not (np.all(np.abs(n) < EXACT) and _same(_value(n, j), v)):
                continue
            base = bases(edges, j)
            if base is None:
                continue
            n = n.astype(np.int64)
            kk = k[has]
            first = kk == 0
            base0 = int(n[first].min()) if first.any() else 0
            b = base[kk]
            b[first] = base0
            off = n - b
            rows = np.flatnonzero(has)
            for kind, t in OFFSETS:
                top = np.iinfo(t).max  # (the exceptions' mark)
                out = (off < 0) | (off >= top)
                if np.count_nonzero(out) > EXCEPTIONS * len(v):
                    continue
                coded = np.zeros(len(k), t)
                coded[has] = np.where(out, top, off)
                c = Coded(kind, j, base0, coded, rows[out].astype(np.uint32), v[out])
                if _same(decode(c, k, nkeys, edges)[has], v):
                    return c
    return None


def decode(c: Coded, keys: np.ndarray, nkeys: int, edges: np.ndarray) -> np.ndarray:
    """float64 values of `encode`'s offsets (NaN where the key is the no-value key)."""
    k = np.asarray(keys, np.int64)
    base = bases(edges, c.j)
    if base is None:  # (encode never chose such a step)
        return np.full(len(k), np.nan)
    b = base[np.minimum(k, nkeys)]
    b[k == 0] = c.base0
    out = _value((b + c.off.astype(np.int64)).astype(np.float64), c.j)
    out[c.xrows.astype(np.int64)] = c.xvals
    out[k >= nkeys] = np.nan
    return out


def pack(rows: Sequence[tuple[np.ndarray, np.ndarray, int, np.ndarray]], n: int,
         floats: set[int] | frozenset[int] = frozenset()) -> RawArrays:
    """A shard's raw rows, each (values, keys, nkeys, edges) of a fine dim: on the lattice
    where `encode` finds one, else (and for the rows `floats`) as they are."""
    coded = [None if i in floats else encode(x, k, nk, e) for i, (x, k, nk, e) in enumerate(rows)]
    of = {kind: [i for i, c in enumerate(coded) if (c.kind if c else FLOAT) == kind]
          for kind in (FLOAT, LAT32, LAT16)}
    raw = np.empty((len(of[FLOAT]), n), np.float64)
    lat = np.empty((len(of[LAT32]), n), np.uint32)
    lat16 = np.empty((len(of[LAT16]), n), np.uint16)
    rinfo = np.zeros((len(rows), 6), np.int64)
    xrows, xvals, at = [], [], 0
    for kind, into in ((FLOAT, raw), (LAT32, lat), (LAT16, lat16)):
        for r, i in enumerate(of[kind]):
            c = coded[i]
            if c is None:
                into[r] = rows[i][0]
                rinfo[i] = (FLOAT, r, 0, 0, at, at)
                continue
            into[r] = c.off
            rinfo[i] = (kind, r, c.j, c.base0, at, at + len(c.xrows))
            xrows.append(c.xrows)
            xvals.append(c.xvals)
            at += len(c.xrows)
    return RawArrays(raw, lat, lat16, np.concatenate([np.zeros(0, np.uint32), *xrows]),
                     np.concatenate([np.zeros(0), *xvals]), rinfo)


def values(a: RawArrays, rc: int, keys: np.ndarray, nkeys: int, edges: np.ndarray) -> np.ndarray:
    """Raw row rc of a shard as float64 (`keys`: the fine dim's keys, `edges` its buckets')."""
    kind, row, j, base0, x0, x1 = (int(v) for v in a.rinfo[rc][:6])
    if kind == FLOAT:
        return np.asarray(a.raw[row])
    off = (a.lat if kind == LAT32 else a.lat16)[row]
    return decode(Coded(kind, j, base0, off, a.xrows[x0:x1], a.xvals[x0:x1]), keys, nkeys,
                  np.asarray(edges, np.float64))
