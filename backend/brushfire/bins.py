"""The arithmetic of bars: which bar a value falls in, and the bars' labels, for the view
types (views/) to use. Pure numpy, run on Spark's executors (bar per row) and on the
driver (labels, lookups from keys).

The rules are the spec's (docs/spec.md) and `sql.py`'s:
- histogram: bar floor((x - lo) / step) in double arithmetic, the last bar closed; values
  outside the extent go to the edge bars when clamped, else are dropped; a `maxbins` bin
  gets its step and extent from the data's range once, at capture (`nice_bin`), a bin of
  a step alone its extent (`step_bin`), and everything after sees a plain step and extent;
- temporal: UTC calendar units from the first to the last instant in the data; weeks
  start on Monday (as SQL's date_trunc('week')); a calendar part (hour of day, day of
  week, month of year: models.CALENDAR_PARTS) has a bar per value of the part, always;
- categorical: the `top` values by count (descending), then by value, in that order or
  (`sort: name`) by value, plus '(other)' last;
- heatmap: x bar * (y bars) + y bar, dropped when either is.
Dropped rows get bar -1 here. `hist_slot` says, instead, why a row is not in a bar: codes
nbars + i for the view type's `reasons(view)[i]` (lineage/layout.py), clamped rows included.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from brushfire import values as V
from brushfire.errors import CaptureError
from brushfire.limits import MAX_BARS
from brushfire.lineage.layout import OTHER
from brushfire.spec import models as m

DAY_US = 86_400_000_000
UNIT_US = {"minute": 60_000_000, "hour": 3_600_000_000, "day": DAY_US}


NICE_STEPS = (1, 2, 5)  # steps are these times a power of ten (Vega-Lite's nice bins)


def nice_bin(lo: float | None, hi: float | None, maxbins: int, clamp: bool = False) -> m.Bin:
    """The bins `maxbins` chooses for data whose finite values span [lo, hi] (None: no
    finite value, taken as [0, 0]): the smallest step of {1, 2, 5} x 10^k whose extent of
    whole steps, [floor(lo / step), ceil(hi / step)] x step (one step when that is empty),
    has at most `maxbins` bars and whose `maxbins` steps cover the span (max - min, else
    |min|, else 1, as Vega-Lite's span). Like Vega-Lite's nice rule, except that the bars
    of the extended extent are what is counted, so there are never more than `maxbins`.
    Steps and bounds are exact rationals, each rounded to the nearest double once: the
    extent holds every value."""
    if lo is None or hi is None:
        lo = hi = 0.0
    a, b = Fraction(lo), Fraction(hi)
    span = (b - a) or abs(a) or Fraction(1)
    least = span / maxbins
    k = math.floor(math.log10(least.numerator) - math.log10(least.denominator)) - 1
    while True:  # ends: once step >= |lo| and |hi|, two bars at most (models.Bin: maxbins >= 2)
        for mult in NICE_STEPS:
            step = mult * Fraction(10) ** k
            if step < least or float(step) == 0.0:  # (below the least subnormal: no step)
                continue
            first, last = math.floor(a / step), math.ceil(b / step)
            last = max(last, first + 1)
            if last - first > maxbins:
                continue
            try:
                out = m.Bin(step=float(step), extent=(float(first * step), float(last * step)),
                            clamp=clamp)
            except OverflowError:  # a whole step past the largest double
                msg = (f"maxbins: the values reach {max(abs(lo), abs(hi)):g}, too close to the "
                       "largest double for an extent of whole steps; give step and extent instead")
                raise CaptureError(msg) from None
            if out.count <= maxbins:  # (as the double arithmetic counts it)
                return out
        k += 1


def step_bars(lo: float, hi: float, step: float) -> int:
    """How many bars `step_bin` gives data spanning [lo, hi] (exact, before the bounds are
    rounded to doubles)."""
    s = Fraction(step)
    first = math.floor(Fraction(lo) / s)
    return max(math.ceil(Fraction(hi) / s), first + 1) - first


def step_bin(lo: float | None, hi: float | None, step: float, clamp: bool = False,
             what: str = "bin") -> m.Bin:
    """The extent a bin of `step` alone gets for data whose finite values span [lo, hi]
    (None: no finite value, taken as [0, 0]): whole steps from 0, [floor(lo / step),
    ceil(hi / step)] x step, one step when that is empty (as `nice_bin` widens its extent).
    Bounds are exact rationals rounded to the nearest double once: the extent holds every
    value. More than MAX_BARS bars is a CaptureError naming `what`."""
    if lo is None or hi is None:
        lo = hi = 0.0
    s = Fraction(step)
    first = math.floor(Fraction(lo) / s)
    last = first + step_bars(lo, hi, step)
    out = None
    if last - first <= MAX_BARS:
        try:
            out = m.Bin(step=step, extent=(float(first * s), float(last * s)), clamp=clamp)
        except OverflowError:  # a whole step past the largest double
            msg = (f"{what}: the values reach {max(abs(lo), abs(hi)):g}, too close to the "
                   "largest double for an extent of whole steps; give the extent too")
            raise CaptureError(msg) from None
    if out is None or out.count > MAX_BARS:  # (the latter as the double arithmetic counts)
        msg = (f"{what}: step {step:g} over the data's values from {lo:g} to {hi:g} makes "
               f"{last - first:,} bars; a view has at most {MAX_BARS:,}: give a larger step, "
               "or an extent and clamp: true")
        raise CaptureError(msg)
    return out


def hist_code(x: np.ndarray, valid: np.ndarray, b: m.Bin) -> np.ndarray:
    """Bar per value (int64, -1 dropped) of equal-width bins `b`."""
    x = x.astype(np.float64, copy=False)
    nb, lo, hi = b.count, b.extent[0], b.extent[1]
    ok = valid & ~np.isnan(x)
    with np.errstate(invalid="ignore", over="ignore"):
        inside = np.floor((x - lo) / b.step)
    code = np.where(ok & (x >= lo) & (x <= hi), np.minimum(np.nan_to_num(inside, nan=0.0), nb - 1), -1)
    if b.clamp:
        code = np.where(ok & (x < lo), 0, code)
        code = np.where(ok & (x > hi), nb - 1, code)
    return code.astype(np.int64)


def hist_slot(x: np.ndarray, valid: np.ndarray, b: m.Bin) -> np.ndarray:
    """Bar per value of equal-width bins `b`, or the reason it is in none (lineage/layout.py):
    nbars + 0 null or NaN, + 1 below the extent, + 2 above it (clamped or not)."""
    x = x.astype(np.float64, copy=False)
    nb, lo, hi = b.count, b.extent[0], b.extent[1]
    ok = valid & ~np.isnan(x)
    with np.errstate(invalid="ignore", over="ignore"):
        inside = np.floor((x - lo) / b.step)
    code = np.where(ok & (x >= lo) & (x <= hi), np.minimum(np.nan_to_num(inside, nan=0.0), nb - 1), nb)
    code = np.where(ok & (x < lo), nb + 1, code)
    code = np.where(ok & (x > hi), nb + 2, code)
    return code.astype(np.int64)


def hist_order(x: np.ndarray, b: m.Bin) -> np.ndarray:
    """A histogram's bar per value as a non-decreasing function of the value: -1 below the
    extent, the bar, nbars above (clamped or not: `hist_slot`'s reasons, in value order)."""
    nb = b.count
    slot = hist_slot(x, np.ones(len(x), bool), b)
    return np.where(slot == nb + 1, -1, np.where(slot == nb + 2, nb, slot))


def change_points(code, lo: float, hi: float, integral: bool) -> list[float]:
    """The values in (lo, hi] at which `code` (a non-decreasing function of a number,
    vectorized over numpy arrays) changes: each the smallest value (an integer when
    `integral`, else any double) with a larger code than the values before it. Found by
    bisection over the values' order (doubles through their bits), so exactly."""
    if not (lo < hi):
        return []
    out: list[float] = []

    def keys_of(v: np.ndarray) -> np.ndarray:  # values to integers in the same order
        if integral:  # (saturated: 2^63 - 1, the largest int64, is 2^63 as a double)
            with np.errstate(invalid="ignore"):
                return np.where(v >= 2.0**63, np.iinfo(np.int64).max, v.astype(np.int64))
        bits = v.astype(np.float64).view(np.int64)
        return np.where(bits < 0, np.int64(-(2**63)) - bits, bits)

    def values_of(k: np.ndarray) -> np.ndarray:
        if integral:
            return k.astype(np.float64)
        bits = np.where(k < 0, np.int64(-(2**63)) - k, k)
        return bits.view(np.float64)

    a, b = keys_of(np.array([lo])), keys_of(np.array([hi]))
    first = code(values_of(a))[0]
    last = code(values_of(b))[0]
    probe = keys_of(np.linspace(0.0, 1.0, 4097) * (b[0] / 2 - a[0] / 2) * 2 + a[0]) if integral else \
        (np.linspace(0.0, 1.0, 4097) * (b[0] / 2 - a[0] / 2) * 2 + a[0]).astype(np.int64)
    targets = np.unique(code(values_of(np.clip(probe, a[0], b[0]))))
    targets = np.union1d(targets, np.arange(first, last + 1)) if last - first < 100_000 else targets
    targets = targets[targets > first]
    if not len(targets):
        return out
    left = np.full(len(targets), a[0], np.int64)  # code(left) < target <= code(right)
    right = np.full(len(targets), b[0], np.int64)
    while True:  # (distances as unsigned: the keys span all of int64)
        open_ = right.view(np.uint64) - left.view(np.uint64) > 1
        if not open_.any():
            break
        mid = (left >> 1) + (right >> 1) + (left & right & 1)
        below = code(values_of(mid)) < targets
        left = np.where(open_ & below, mid, left)
        right = np.where(open_ & ~below, mid, right)
    found = values_of(right)
    reached = code(found) >= targets
    return sorted({float(x) for x in found[reached]})


def hist_labels(b: m.Bin) -> list[list[float]]:
    lo, step = b.extent[0], b.step

    def edge(i: int) -> float:  # lo + i * step, also where i * step alone overflows (an
        # extent wider than the largest double, [-1e308, 1e308]): halved, the same double
        x = lo + i * step
        return x if math.isfinite(x) else (lo / 2 + i * (step / 2)) * 2

    return [[edge(i), min(edge(i + 1), b.extent[1])] for i in range(b.count)]


def calendar_part(unit: str, us: np.ndarray) -> np.ndarray:
    """The calendar part's value of each UTC instant (int64): SQL's hour(t) (0-23),
    isodow(t) (1 Monday .. 7 Sunday) or month(t) (1-12)."""
    us = np.asarray(us, np.int64)
    if unit == "hour_of_day":
        return np.floor_divide(us, UNIT_US["hour"]) % 24
    if unit == "day_of_week":  # 1970-01-01 was a Thursday (4)
        return (np.floor_divide(us, DAY_US) + 3) % 7 + 1
    return us.astype("datetime64[us]").astype("datetime64[M]").astype(np.int64) % 12 + 1


def part_values(unit: str) -> list[int]:
    """Every value of a calendar part, in bar order."""
    first, labels = m.CALENDAR_PARTS[unit]
    return list(range(first, first + len(labels)))


def calendar_key(unit: str, us: np.ndarray) -> np.ndarray:
    """The calendar unit each UTC instant falls in, as an integer counted from 1970."""
    us = np.asarray(us, np.int64)
    if unit in UNIT_US:
        return np.floor_divide(us, UNIT_US[unit])
    if unit == "week":  # 1970-01-01 was a Thursday: week w starts on Monday, day 7w - 3
        return np.floor_divide(np.floor_divide(us, DAY_US) + 3, 7)
    dt = us.astype("datetime64[us]").astype("datetime64[M]" if unit == "month" else "datetime64[Y]")
    return dt.astype(np.int64)


def calendar_start(unit: str, key: int) -> int:
    """UTC microseconds at which calendar unit `key` starts."""
    if unit in UNIT_US:
        return key * UNIT_US[unit]
    if unit == "week":
        return (key * 7 - 3) * DAY_US
    kind = "datetime64[M]" if unit == "month" else "datetime64[Y]"
    return int(np.array(key, np.int64).astype(kind).astype("datetime64[us]").astype(np.int64))


def calendar_labels(unit: str, first_us: int | None, last_us: int | None) -> list[str]:
    """ISO labels of the bars from the unit holding `first_us` to the one holding `last_us`;
    a calendar part's names, whatever the data."""
    if unit in m.CALENDAR_PARTS:
        return list(m.CALENDAR_PARTS[unit][1])
    if first_us is None or last_us is None:
        return []
    a = int(calendar_key(unit, np.array([first_us]))[0])
    b = int(calendar_key(unit, np.array([last_us]))[0])
    return [iso_label(calendar_start(unit, k)) for k in range(a, b + 1)]


def calendar_code(unit: str, us: np.ndarray, valid: np.ndarray, first_us: int | None) -> np.ndarray:
    """Bar per instant (int64, -1: no value): its unit counted from the one holding
    `first_us`, or its calendar part's value minus the first."""
    if unit in m.CALENDAR_PARTS:
        return np.where(valid, calendar_part(unit, us) - m.CALENDAR_PARTS[unit][0], -1).astype(np.int64)
    if first_us is None:
        return np.full(len(us), -1, np.int64)
    first = int(calendar_key(unit, np.array([first_us]))[0])
    return np.where(valid, calendar_key(unit, us) - first, -1).astype(np.int64)


def iso_label(us: int) -> str:
    return V.format_instant(us)


def top_labels(values: list, counts: np.ndarray, top: int, other: bool, sort: str = "count") -> list:
    """The `top` values by count (descending) then value, ordered so (`sort: count`) or by
    value (`sort: name`), plus '(other)' when kept."""
    order = sorted(range(len(values)), key=lambda i: (-int(counts[i]), _value_order(values[i])))
    labels = [values[i] for i in order[:top]]
    if sort == "name":
        labels.sort(key=_value_order)
    return labels + ([OTHER] if other else [])


def _value_order(x) -> tuple:
    """A value's place in SQL's ascending order: NaN after every number, as DuckDB and
    Spark order it (Python's comparisons with NaN are all false: no order at all)."""
    nan = isinstance(x, (float, np.floating)) and math.isnan(x)
    return (nan, 0.0 if nan else x)


def heat_labels(v: m.HeatmapView) -> list:
    return [[x, y] for x in hist_labels(v.x.bin) for y in hist_labels(v.y.bin)]
