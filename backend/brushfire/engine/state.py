"""Selections as keys: what a user's brush, selection or parameter means on a dim's keys,
and the arrays (kernels.py's L and Q) that carry a layout and a filter state into the
kernels. Pure functions and small value types; no kernel calls.

A `Test` selects keys of one dim: an interval of keys (mode 1; for fine dims the rows of
the two edge buckets are decided by their raw value), a set of keys (mode 2), or a set
of a view's bars (mode 3, for lineage queries). A `Selection` is a filter's one or two
tests (two for rect brushes) plus what the user asked for.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from brushfire import values as V
from brushfire.errors import InteractionError
from brushfire.lineage.layout import OTHER, Dim, Layout


@dataclass(frozen=True)
class Test:
    mode: int  # 1 interval of keys, 2 set of keys, 3 set of a view's bars
    dim: int
    lo: int = 1  # mode 1: keys lo..hi (lo > hi: none)
    hi: int = 0
    elo: int = -1  # fine dims: the bucket whose rows need raw >= vlo
    ehi: int = -1  # ... and the one whose rows need raw <= vhi
    vlo: float = -math.inf
    vhi: float = math.inf
    keys: tuple[int, ...] = ()  # modes 2 and 3: selected keys / bars, sorted
    view: int = -1  # mode 3

    @property
    def empty(self) -> bool:
        return self.lo > self.hi if self.mode == 1 else not self.keys

    def key_ranges(self, nkeys: int) -> list[tuple[int, int]]:
        """Inclusive key ranges holding every row that may pass (modes 1 and 2)."""
        if self.mode == 1:
            return [] if self.empty else [(self.lo, self.hi)]
        return runs(self.keys)

    def inner_ranges(self) -> list[tuple[int, int]]:
        """Key ranges whose rows all pass (the edge buckets of fine dims left out)."""
        if self.mode != 1:
            return runs(self.keys)
        lo = self.lo + 1 if self.elo == self.lo else self.lo
        hi = self.hi - 1 if self.ehi == self.hi else self.hi
        return [(lo, hi)] if lo <= hi else []

    def edge_keys(self) -> list[int]:
        """Fine dims: the buckets whose rows are decided by raw value."""
        if self.mode != 1 or self.empty:
            return []
        return sorted({k for k in (self.elo, self.ehi) if k >= 0})


@dataclass(frozen=True)
class Selection:
    tests: tuple[Test, ...]
    spec: object = None  # what the user asked for, echoed in `filters`

    @property
    def empty(self) -> bool:
        return any(t.empty for t in self.tests)


def runs(keys) -> list[tuple[int, int]]:
    """Sorted keys as inclusive runs of consecutive keys."""
    out: list[tuple[int, int]] = []
    for k in keys:
        if out and k == out[-1][1] + 1:
            out[-1] = (out[-1][0], k)
        else:
            out.append((k, k))
    return out


def merge_ranges(ranges) -> list[tuple[int, int]]:
    """Inclusive ranges, sorted and merged where they overlap or touch."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(r for r in ranges if r[0] <= r[1]):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def complement(ranges, nkeys: int) -> list[tuple[int, int]]:
    """Keys 0..nkeys (the no-value key included) outside `ranges`."""
    out, at = [], 0
    for a, b in merge_ranges(ranges):
        if a > at:
            out.append((at, a - 1))
        at = max(at, b + 1)
    if at <= nkeys:
        out.append((at, nkeys))
    return out


def changed_keys(old: Test | None, new: Test | None, nkeys: int) -> list[tuple[int, int]]:
    """Key ranges holding every row whose pass/fail may differ between `old` and `new`
    (None: inactive, every row passes): the keys in one inner set but not the other,
    plus the edge buckets of both."""
    def inner(t: Test | None) -> list[tuple[int, int]]:
        return [(0, nkeys)] if t is None else t.inner_ranges()

    a, b = inner(old), inner(new)
    only_a = intersect(a, complement(b, nkeys))
    only_b = intersect(b, complement(a, nkeys))
    edges = [(k, k) for t in (old, new) if t is not None for k in t.edge_keys()]
    # keys neither test passes fully nor as an edge can change only if some test did:
    return merge_ranges(only_a + only_b + edges)


def intersect(a, b) -> list[tuple[int, int]]:
    out = []
    for x0, x1 in merge_ranges(a):
        for y0, y1 in merge_ranges(b):
            lo, hi = max(x0, y0), min(x1, y1)
            if lo <= hi:
                out.append((lo, hi))
    return merge_ranges(out)


# --- from what users ask to tests ---------------------------------------------------------


def interval_test(d: Dim, dim: int, lo, hi, strict_lo: bool = False, strict_hi: bool = False,
                  values: np.ndarray | None = None, edges: np.ndarray | None = None) -> Test:
    """lo <= x <= hi (< / > when strict) on dim d's values; None = open end. Bounds are
    numbers (times: UTC microseconds), never NaN."""
    if d.kind == "dense":
        u = values if values is not None else np.asarray(d.values)
        if u.dtype.kind == "i":  # integers (and times)
            times = d.value_type == "temporal"
            klo = 0 if lo is None else _int_key(u, lo, True, strict_lo, times)
            khi = d.nkeys - 1 if hi is None else _int_key(u, hi, False, strict_hi, times)
        else:
            klo = 0 if lo is None else int(np.searchsorted(u, float(lo), "right" if strict_lo else "left"))
            khi = d.nkeys - 1 if hi is None else int(np.searchsorted(
                u, float(hi), "left" if strict_hi else "right")) - 1
        return Test(1, dim, klo, khi)
    if d.kind != "fine":
        msg = f"dim {d.name} is not ordered by value"
        raise InteractionError(msg)
    e = edges if edges is not None else np.asarray(d.edges, np.float64)
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (strict_lo or strict_hi))):
        return Test(1, dim, 1, 0)
    klo, elo, vlo = 0, -1, -math.inf
    if lo is not None:
        flo = float(lo)
        klo = int(np.searchsorted(e, flo, "right")) - 1
        elo, vlo = klo, (math.nextafter(flo, math.inf) if strict_lo else flo)
    khi, ehi, vhi = d.nkeys - 1, -1, math.inf
    if hi is not None:
        fhi = float(hi)
        khi = int(np.searchsorted(e, fhi, "right")) - 1
        ehi, vhi = khi, (math.nextafter(fhi, -math.inf) if strict_hi else fhi)
    if klo < 0:
        klo, elo = 0, -1
    elo, ehi = _beyond_data(d, elo, ehi, vlo, vhi)
    return Test(1, dim, klo, khi, elo, ehi, vlo, vhi)


def _beyond_data(d: Dim, elo: int, ehi: int, vlo: float, vhi: float) -> tuple[int, int]:
    """A fine dim's edge buckets, less those a bound beyond the data decides whole: no row
    of bucket `elo` is below `vlo` when no value of the dim is (a brush begun at an axis's
    end, before the data's first value: bucket 0, from -inf, would otherwise be tested row
    by row on every move), nor above `vhi` when none is. The capture's bounds (`Dim.bounds`,
    of the very values the raw arrays hold) decide; as floats, which keeps the order (a
    value's float is never below the float of a smaller one)."""
    bounds = data_bounds(d)
    if bounds is None:
        return elo, ehi
    if elo >= 0 and vlo <= bounds[0]:
        elo = -1
    if ehi >= 0 and vhi >= bounds[1]:
        ehi = -1
    return elo, ehi


def data_bounds(d: Dim) -> tuple[float, float] | None:
    """A fine dim's smallest and largest value as the capture recorded them (`Dim.bounds`),
    as floats; None where none were recorded, or no row had a value: (None, None)."""
    if d.bounds is None or not all(isinstance(b, int | float) for b in d.bounds):
        return None
    return float(d.bounds[0]), float(d.bounds[1])


def within_buckets(t: Test, value_range: Callable[[int], tuple[float, float] | None]) -> Test:
    """Interval test t on a fine dim with the edge buckets its bounds decide whole decided
    by key: bucket `elo` taken whole where no value in it is below `vlo`, left out where
    every one is (`ehi` and `vhi` likewise), given value_range(k), the smallest and largest
    value of bucket k's rows ((inf, -inf): none; None: not known, the bucket left to be
    tested). Where values repeat (whole minutes, cents, a lattice), a bucket may be one
    value held by tens of thousands of rows: a bound between two values then tests none
    of them row by row. Pure."""
    if t.mode != 1 or t.empty or (t.elo < 0 and t.ehi < 0):
        return t
    lo, hi, elo, ehi = t.lo, t.hi, t.elo, t.ehi
    low = value_range(elo) if elo >= 0 else None
    if low is not None:
        least, most = low
        if t.vlo <= least:
            elo = -1
        elif t.vlo > most:
            lo, elo = elo + 1, -1
    high = value_range(ehi) if ehi >= 0 else None
    if high is not None:
        least, most = high
        if t.vhi >= most:
            ehi = -1
        elif t.vhi < least:
            hi, ehi = ehi - 1, -1
    if lo > hi:
        return Test(1, t.dim, 1, 0)
    return replace(t, lo=lo, hi=hi, elo=elo, ehi=ehi)


def decidable_share(least: float, most: float, lo_edge: float, hi_edge: float) -> float:
    """The share of the bounds that fall in bucket [lo_edge, hi_edge) which its values
    [least, most] decide (`within_buckets`: below or above them all): 1 for an empty
    bucket, one of a single value or an unbounded one; about 0 for values spread over
    the whole bucket (continuous data: a bound almost always falls between two of them)."""
    if not most >= least:  # empty: (inf, -inf)
        return 1.0
    width = hi_edge - lo_edge
    if not (math.isfinite(width) and width > 0):
        return 1.0
    return min(1.0, max(0.0, 1.0 - (most - least) / width))


def _int_key(u: np.ndarray, x, up: bool, strict: bool, times: bool = False) -> int:
    """In sorted integers `u`, the first that passes `x <= u` (`up`; `<` when strict), or
    the last that passes `u <= x` (`<`), compared as SQL compares them (docs/spec.md:
    CAST(x AS DOUBLE) with the bound as a double): beyond 2^53 both rounded to doubles
    (2^53 + 1 <= 2^53 is true), below, exactly (the bound's ceil / floor). `times`: UTC
    microseconds, which SQL compares as the instants they are, exactly, also beyond 2^53
    (before 1685 or after 2255: a 0001-01-01 or 9999-12-31 placeholder)."""
    if not times and len(u) and (int(u[0]) < -(2**53) or int(u[-1]) > 2**53):
        side = ("right" if strict else "left") if up else ("left" if strict else "right")
        k = int(np.searchsorted(u.astype(np.float64), float(x), side))
    else:
        k = int(np.searchsorted(u, V.int_bound(x, up, strict), "left" if up else "right"))
    return k if up else k - 1


def set_test(dim: int, keys) -> Test:
    return Test(2, dim, keys=tuple(sorted(set(int(k) for k in keys))))


def bars_test(dim: int, view: int, bars) -> Test:
    return Test(3, dim, keys=tuple(sorted(set(int(b) for b in bars))), view=view)


def category_values(values, times: bool) -> list:
    """The values a select names, as a categorical view's labels spell them: over a time
    field (`times`), each the ISO instant it names (`values.time_choice`; '(other)' as it
    is), else as given. An error says which value is not a time."""
    if not isinstance(values, (list, tuple)):
        msg = f"select takes a list of values, got {V.show(values)}"
        raise InteractionError(msg)
    if not times:
        return list(values)
    out = []
    for i, x in enumerate(values):
        try:
            out.append(x if isinstance(x, str) and x == OTHER else V.time_choice(x))
        except InteractionError as e:
            msg = f"values[{i}]: {e}"
            raise InteractionError(msg) from None
    return out


def category_keys(labels: list, values) -> list[int]:
    """Bars of a categorical view named by `values` ('(other)' included when it is a bar),
    spelt as its labels (`category_values`); an unknown value is an error naming the bars."""
    if not isinstance(values, (list, tuple)):
        msg = f"select takes a list of values, got {V.show(values)}"
        raise InteractionError(msg)
    pos = _positions(labels)
    out = []
    for i, x in enumerate(values):  # ('(other)' is the last bar, even with a value '(other)')
        k = len(labels) - 1 if isinstance(x, str) and x == OTHER and labels[-1:] == [OTHER] else _position(pos, x)
        if k is None:  # not as the labels hold it: a wire spelling ('Infinity'), or no value
            try:
                k = _spelt_key(labels, x)
            except InteractionError as e:
                msg = f"values[{i}]: {e}"
                raise InteractionError(msg) from None
        out.append(k)
    return out


def dict_value(d: Dim, value):
    """A dropdown's value as its choices spell it: over a time field, the ISO instant it
    names (`values.time_choice`), else as given."""
    return V.time_choice(value) if d.value_type == "temporal" else value


def dict_key(d: Dim, value) -> int:
    """A dropdown's key for `value` (spelt as `dict_value` gives it); an error naming the
    choices when it is not one."""
    k = _position(_positions(d.values), value)
    return _spelt_key(d.values, value) if k is None else k


def _spelt_key(choices: list, value) -> int:
    """The position of the choice `value` names as replies spell it (values.Choices: a
    float's 'Infinity', 'NaN', an integer's decimal text), which the Python API may be given
    as the protocol is; an error naming the choices when it names none."""
    names = V.Choices(choices, nan="NaN")
    names.check(value)
    k = _position(_positions(choices), names.resolve(value))
    if k is None:  # (checked: a choice, but of another spelling than resolve gives)
        msg = f"{V.show(value)} is not one of the values"
        raise InteractionError(msg)
    return k


def _positions(choices: list) -> dict:
    """{choice key: position} of a list of choices, built once per list (`values.per_list`)."""
    return V.per_list(choices, "positions", _position_table)


def _position_table(choices: list) -> dict:
    table: dict = {}
    for i, c in enumerate(choices):
        try:
            table.setdefault(V.choice_key(c), i)
        except TypeError:
            continue
    return table


def _position(table: dict, value) -> int | None:
    try:
        return table.get(V.choice_key(value))
    except TypeError:
        return None


# --- kernel arrays ---------------------------------------------------------------------------


def layout_arrays(layout: Layout, extra=None) -> tuple:
    """kernels.py's L for a layout; `extra`: one more view (a ViewLayout of one bar whose
    lookup table is all zeros on dim 0: every row in bar 0), appended last."""
    views = list(layout.views) + ([extra] if extra is not None else [])
    nv = len(views)
    vdim0 = np.zeros(nv, np.int64)
    vdim1 = np.full(nv, -1, np.int64)
    vlut0 = np.zeros(nv, np.int64)
    vlut1 = np.zeros(nv, np.int64)
    luts: list[np.ndarray] = [np.zeros(1, np.int32)]
    mluts: list[np.ndarray] = [np.zeros(1, np.float64)]
    lut_at, mlut_at = 1, 1
    mkind = np.zeros(nv, np.int64)
    mdim = np.zeros(nv, np.int64)
    mcol = np.zeros(nv, np.int64)
    moff = np.zeros(nv, np.int64)
    for i, v in enumerate(views):
        if v is extra:
            vdim0[i], vlut0[i] = 0, lut_at
            lut = np.zeros(layout.dims[0].nkeys + 1, np.int32)
            luts.append(lut)
            lut_at += len(lut)
        elif v.code_dims:
            vdim0[i] = v.code_dims[0]
            lut = layout.lut(v.name, 0)
            vlut0[i] = lut_at
            luts.append(lut.astype(np.int32))
            lut_at += len(lut)
            if len(v.code_dims) > 1:
                vdim1[i] = v.code_dims[1]
                lut = layout.lut(v.name, 1)
                vlut1[i] = lut_at
                luts.append(lut.astype(np.int32))
                lut_at += len(lut)
        else:  # pruned: never counted per row (the planner keeps such views on base)
            vdim0[i], vlut0[i] = 0, 0
        if v.measure == "lut":
            mkind[i], mdim[i], moff[i] = 1, v.mdim, mlut_at
            ml = layout.mlut(v.name)
            mluts.append(ml.astype(np.float64))
            mlut_at += len(ml)
        elif v.measure == "stored":
            mkind[i], mcol[i] = 2, v.mcol
        elif v.measure == "raw":
            mkind[i], mdim[i], mcol[i] = 3, v.mdim, layout.dims[v.mdim].raw
    draw = np.array([d.raw for d in layout.dims], np.int64)
    idims = layout.indexed_dims
    dslot = np.array([idims.index(i) if i in idims else -1 for i in range(len(layout.dims))], np.int64)
    return (vdim0, vdim1, vlut0, vlut1, np.concatenate(luts), np.array([v.ncodes for v in views], np.int64),
            np.array([v.bar_off for v in views], np.int64), mkind, mdim, mcol, moff,
            np.concatenate(mluts), draw, dslot, np.int64(layout.block_rows),
            np.array([v.width for v in views], np.int64))


class FilterState:
    """kernels.py's Q: the tests of every filter (2 per filter: slots 2f, 2f + 1), plus
    one spare filter (`adhoc`) for lineage queries (bars of a view)."""

    def __init__(self, layout: Layout) -> None:
        nf = len(layout.filters) + 1
        self.adhoc = len(layout.filters)
        nt = 2 * nf
        self.tmode = np.zeros(nt, np.int64)
        self.tlo = np.ones(nt, np.int64)
        self.thi = np.zeros(nt, np.int64)
        self.telo = np.full(nt, -1, np.int64)
        self.tehi = np.full(nt, -1, np.int64)
        self.tvlo = np.full(nt, -math.inf)
        self.tvhi = np.full(nt, math.inf)
        self.tbits = np.arange(nt, dtype=np.int64)
        width = max([d.nkeys for d in layout.dims] + [v.kbars for v in layout.views] + [0]) + 1
        self.bits = np.zeros((nt, width), np.bool_)
        self.tview = np.full(nt, -1, np.int64)
        self.tdim = np.full(nt, -1, np.int64)
        for f, fl in enumerate(layout.filters):
            for j, d in enumerate(fl.dims):
                self.tdim[2 * f + j] = d

    @property
    def q(self) -> tuple:
        return (self.tmode, self.tlo, self.thi, self.telo, self.tehi, self.tvlo, self.tvhi,
                self.tbits, self.bits, self.tview, self.tdim)

    def set(self, f: int, sel: Selection | None) -> None:
        """Point filter f's tests at `sel` (None: inactive, every row passes)."""
        for j in range(2):
            t = 2 * f + j
            test = sel.tests[j] if sel is not None and j < len(sel.tests) else None
            if test is None:
                self.tmode[t] = 0
                if f >= self.adhoc:
                    self.tdim[t] = -1
                continue
            self.tmode[t] = test.mode
            self.tdim[t] = test.dim
            if test.mode == 0:
                continue
            if test.mode == 1:
                self.tlo[t], self.thi[t] = test.lo, test.hi
                self.telo[t], self.tehi[t] = test.elo, test.ehi
                self.tvlo[t], self.tvhi[t] = test.vlo, test.vhi
            else:
                self.bits[t] = False
                if test.keys:
                    self.bits[t, list(test.keys)] = True
                self.tview[t] = test.view

    def copy_with(self, f: int, sel: Selection | None) -> tuple:
        """Q as it would be with filter f set to `sel` (the state before an update)."""
        other = FilterState.__new__(FilterState)
        other.adhoc = self.adhoc
        for name in ("tmode", "tlo", "thi", "telo", "tehi", "tvlo", "tvhi", "tbits", "tview", "tdim"):
            setattr(other, name, getattr(self, name).copy())
        other.bits = self.bits  # shared: only filter f's rows would change, and then it is copied
        if sel is not None and any(t.mode != 1 for t in sel.tests):
            other.bits = self.bits.copy()
        other.set(f, sel)
        return other.q
