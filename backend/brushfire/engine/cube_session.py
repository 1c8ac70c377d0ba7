"""A session over a cubes-only store (memory-budget mode): the same interface as
`Session`, answered from Spark-computed group-by cubes.

Exact while at most one brush or parameter is active: each view under that filter is a
sum over the cube rows whose key the filter selects. Interactions that need per-row
lineage (a second simultaneous filter, rect brushes, details, highlighting) raise
NotCapturedError saying why they are not available at this size.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

import numpy as np

from brushfire.engine.api import Update, ViewData, find_filter
from brushfire.engine.session import _view_data
from brushfire.errors import InteractionError, NotCapturedError
from brushfire.lineage.arrays import OTHER, Aggregates
from brushfire.lineage.cube_store import CubeStore
from brushfire.plan import CapturePlan


class CubeSession:
    def __init__(self, store: CubeStore, plan: CapturePlan) -> None:
        self.store, self.plan = store, plan
        self._filters = {f.name: f for f in plan.filters}
        self.active: dict[str, tuple[np.ndarray, object]] = {}  # name -> (selected keys, spec)

    # --- interactions ---------------------------------------------------------------

    def brush(self, view: str, interval, y=None) -> Update:
        f = self._filter(view, ("interval", "rect"))
        if f.kind == "rect":
            raise NotCapturedError(self._too_big("rect brushes (two-dimensional keys)"))
        keys = self.store.keys[f.name]
        start, stop = _value_range(keys, *_interval(interval, keys))
        return self._apply(f.name, np.arange(start, stop), (interval, y))

    def select(self, view: str, values: list) -> Update:
        f = self._filter(view, ("points",))
        if not isinstance(values, (list, tuple)):
            msg = f"select takes a list of values, got {values!r}"
            raise InteractionError(msg)
        keys = self.store.keys[f.name]
        labels = self.store.view(view).labels
        top = set(labels) - {OTHER}
        # '(other)': every value beyond the top N, whether or not the view draws that bar
        chosen = [i for i, x in enumerate(keys.values)
                  if x in values or (OTHER in values and x not in top)]
        return self._apply(f.name, np.array(chosen, np.int64), list(values))

    def set_parameter(self, name: str, value) -> Update:
        f = self._filter(name, ("param_eq", "param_range"))
        if value is None:
            return self.clear(name)
        keys = self.store.keys[name]
        if f.kind == "param_eq":
            chosen = [i for i, x in enumerate(keys.values) if x == value]
            return self._apply(name, np.array(chosen, np.int64), value)
        start, stop = _param_range(keys, self.plan.dashboard.parameter(name).op, value)
        return self._apply(name, np.arange(start, stop), value)

    def clear(self, name: str | None = None) -> Update:
        if name:
            self._filter(name, None)
        t0 = time.perf_counter()
        names = [name] if name else list(self.active)
        for n in names:
            self.active.pop(n, None)
        views = list(dict.fromkeys(v for n in names for v in self._filters[n].filters_views))
        return Update({v: self.view(v) for v in views}, dict.fromkeys(views, "cube"),
                      time.perf_counter() - t0)

    @property
    def filters(self) -> dict[str, object]:
        return {n: spec for n, (_, spec) in self.active.items()}

    def views(self) -> dict[str, ViewData]:
        return {v.name: self.view(v.name) for v in self.store.views}

    def view(self, name: str) -> ViewData:
        layout = self.store.view(name)
        on = [f for f in self.active if name in self._filters[f].filters_views]
        if not on:
            return _view_data(layout, self.store.base)
        chosen, _ = self.active[on[0]]
        c = self.store.cubes[(on[0], name)]
        rows = np.isin(c.keys, chosen)
        agg = Aggregates.zeros(layout.bar_off + layout.nbars + 1)
        bars = layout.bar_off + c.bars[rows]
        np.add.at(agg.counts, bars, c.counts[rows])
        np.add.at(agg.sums, bars, c.sums[rows])
        np.add.at(agg.oks, bars, c.oks[rows])
        return _view_data(layout, agg)

    def count_selected(self, view: str | None = None, bars: list[int] | None = None) -> int:
        if view is not None or bars is not None:
            raise NotCapturedError(self._too_big("the rows behind bars"))
        if not self.active:
            return self.store.n_rows
        (name, (chosen, _)), = self.active.items()
        return int(self.store.keys[name].totals[chosen].sum())

    def details(self, *_, **__):
        raise NotCapturedError(self._too_big("details on demand (the rows behind a selection)"))

    def backward_rids(self, *_, **__):
        raise NotCapturedError(self._too_big("backward lineage (rids)"))

    def forward(self, *_, **__):
        raise NotCapturedError(self._too_big("forward lineage (bars of given rows)"))

    def highlight(self, *_, **__):
        raise NotCapturedError(self._too_big("linked highlighting"))

    # --- helpers ----------------------------------------------------------------------

    def _apply(self, name: str, chosen: np.ndarray, spec) -> Update:
        t0 = time.perf_counter()
        others = [n for n in self.active if n != name]
        if others:
            raise NotCapturedError(self._too_big(
                f"combining filters ({others[0]!r} is active; clear it before filtering on {name!r})"))
        self.active[name] = (chosen, spec)
        views = self._filters[name].filters_views
        return Update({v: self.view(v) for v in views}, dict.fromkeys(views, "cube"),
                      time.perf_counter() - t0)

    def _filter(self, name: str, kinds: tuple[str, ...] | None):
        return find_filter(self._filters, name, kinds)

    def _too_big(self, what: str) -> str:
        return (f"{what} needs per-row lineage, which is not kept for this dashboard: "
                f"{self.store.reason}")


# --- user values to key positions (value keys sorted ascending) ---------------------------


def _bound(x, ix):
    """A user bound as the index's value type: time as UTC microseconds."""
    if x is None:
        return None
    if ix.value_type == "temporal":
        if isinstance(x, str):
            x = datetime.fromisoformat(x)
        if isinstance(x, datetime):
            if x.tzinfo is None:
                x = x.replace(tzinfo=UTC)
            return int(round(x.timestamp() * 1_000_000))
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        msg = f"bound {x!r} is not a number" + (" or time" if ix.value_type == "temporal" else "")
        raise InteractionError(msg)
    if isinstance(x, float) and math.isnan(x):
        msg = "bound is NaN"
        raise InteractionError(msg)
    return x

def _interval(interval, ix) -> tuple:
    try:
        lo, hi = interval
    except (TypeError, ValueError):
        msg = f"an interval is [lo, hi], got {interval!r}"
        raise InteractionError(msg) from None
    return _bound(lo, ix), _bound(hi, ix)

def _param_range(ix, op: str, value) -> tuple[int, int]:
    """Positions [start, stop) of the values a range parameter `field <op> value` keeps."""
    v = _bound(value, ix)
    lo, hi = {"lt": (None, v), "lte": (None, v), "gt": (v, None), "gte": (v, None)}[op]
    return _value_range(ix, lo, hi, strict_lo=op == "gt", strict_hi=op == "lt")

def _value_range(ix, lo, hi, strict_lo: bool = False, strict_hi: bool = False):
    """Positions [start, stop) of rows with lo <= value <= hi (< / > when strict)."""
    vals = ix.values
    is_int = vals.dtype.kind == "i"
    if lo is None:
        start = 0
    else:
        if is_int:  # compare in integers: no O(N) conversion of the index to float
            lo = _int_bound(lo, up=True, strict=strict_lo)
            strict_lo = False
        start = int(np.searchsorted(vals, lo, side="right" if strict_lo else "left"))
    if hi is None:
        stop = len(vals)
    else:
        if is_int:
            hi = _int_bound(hi, up=False, strict=strict_hi)
            strict_hi = False
        stop = int(np.searchsorted(vals, hi, side="left" if strict_hi else "right"))
    return start, max(start, stop)

def _int_bound(x, up: bool, strict: bool) -> np.int64:
    """The integer bound equivalent to comparing integers with x (ceil / floor)."""
    if math.isinf(x):
        x = np.iinfo(np.int64).min if x < 0 else np.iinfo(np.int64).max
        return np.int64(x)
    if up:
        v = math.ceil(x) if not (strict and float(x).is_integer()) else int(x) + 1
    else:
        v = math.floor(x) if not (strict and float(x).is_integer()) else int(x) - 1
    return np.int64(max(min(v, np.iinfo(np.int64).max), np.iinfo(np.int64).min))
