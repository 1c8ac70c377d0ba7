"""Each view type's bars: which bar a value falls in, and the bars' labels. Pure numpy,
run on Spark's executors (bar per row) and on the driver (labels, lookups from keys).

The rules are the spec's (docs/spec.md) and `sql.py`'s:
- histogram: bar floor((x - lo) / step) in double arithmetic, the last bar closed; values
  outside the extent go to the edge bars when clamped, else are dropped;
- temporal: UTC calendar units from the first to the last instant in the data; weeks
  start on Monday (as SQL's date_trunc('week'));
- categorical: the `top` values by count (descending), then by value, plus '(other)';
- heatmap: x bar * (y bars) + y bar, dropped when either is.
Dropped rows get bar -1 here. `slot_code` says, instead, why a row is not in a bar: codes
nbars + i for the view's `reasons(view)[i]` (lineage/layout.py), clamped rows included.
"""

from __future__ import annotations

import numpy as np

from brushfire import values as V
from brushfire.lineage.layout import OTHER
from brushfire.spec import models as m

DAY_US = 86_400_000_000
UNIT_US = {"minute": 60_000_000, "hour": 3_600_000_000, "day": DAY_US}


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


def reasons(view) -> list[str]:
    """Why a view may not show a row (or, clamped, shows it in an edge bar), in the order
    of its pseudo-bars. Heatmaps count their rows outside the cells together (the slot
    after their codes), so they have none."""
    if isinstance(view, m.HistogramView):
        return ["null"] + (["clamped_below", "clamped_above"] if view.bin.clamp else ["below", "above"])
    if isinstance(view, m.TemporalView):
        return ["null"]
    if isinstance(view, m.CategoricalView):
        return ["null"] + ([] if view.other else ["beyond_top"])
    return []


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


def hist_labels(b: m.Bin) -> list[list[float]]:
    lo, step = b.extent[0], b.step
    return [[lo + i * step, min(lo + (i + 1) * step, b.extent[1])] for i in range(b.count)]


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
    """ISO labels of the bars from the unit holding `first_us` to the one holding `last_us`."""
    if first_us is None or last_us is None:
        return []
    a = int(calendar_key(unit, np.array([first_us]))[0])
    b = int(calendar_key(unit, np.array([last_us]))[0])
    return [iso_label(calendar_start(unit, k)) for k in range(a, b + 1)]


def calendar_code(unit: str, us: np.ndarray, valid: np.ndarray, first_us: int | None) -> np.ndarray:
    if first_us is None:
        return np.full(len(us), -1, np.int64)
    first = int(calendar_key(unit, np.array([first_us]))[0])
    return np.where(valid, calendar_key(unit, us) - first, -1).astype(np.int64)


def iso_label(us: int) -> str:
    return V.format_instant(us)


def top_labels(values: list, counts: np.ndarray, top: int, other: bool) -> list:
    """The `top` values by count (descending) then value, plus '(other)' when kept."""
    order = sorted(range(len(values)), key=lambda i: (-int(counts[i]), values[i]))
    labels = [values[i] for i in order[:top]]
    return labels + ([OTHER] if other else [])


def heat_labels(v: m.HeatmapView) -> list:
    return [[x, y] for x in hist_labels(v.x.bin) for y in hist_labels(v.y.bin)]
