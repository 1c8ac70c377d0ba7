"""Per-session crossfilter state over a shared, read-only lineage store.

Semantics: each view aggregates the rows that pass every active filter that applies to
it, except its own brush. Interval brushes select `lo <= x <= hi` on raw values;
points select values (or the 'other' bar); rect brushes select x and y intervals;
parameters compare their field with a value. Rows whose value is null or NaN never
pass a brush or parameter.

Each update picks, per affected view, the cheapest exact method:
- base:   no filter applies → the store's base aggregates;
- cube:   one filter applies and it has a cube to this view → prefix-sum lookup plus
          an exact correction for the partial blocks at the selection's edges;
- incremental: only the rows that entered or left the moving filter are traced
          forward to their bars (per-row pass bits tell visibility, as in crossfilter.js);
- recompute: the rows of the most selective other filter are re-aggregated;
- rescan: every row is re-aggregated in rid order (used when the others are not selective).
Pass bits are kept lazily: a filter answered from cubes alone updates its bits only
when a later update needs them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pyarrow as pa

from brushfire.engine import kernels as K
from brushfire.engine import ranges as R
from brushfire.errors import InteractionError, NotCapturedError
from brushfire.lineage.arrays import Aggregates, Index
from brushfire.lineage.store import LineageStore
from brushfire.plan import CapturePlan, Filter

OTHER = "(other)"
RESCAN_FRACTION = 0.25  # recompute from an index slice only below this share of rows


@dataclass(frozen=True)
class Selection:
    """A filter's state: position ranges in its index, plus a y interval for rect brushes."""

    ranges: R.Ranges
    y: tuple[float, float] | None = None
    spec: object = None  # what the user asked for, echoed in `filters`

    @property
    def size(self) -> int:
        return R.size(self.ranges)


@dataclass
class ViewData:
    """A view's current bars: count per bar, and sum / mean when the view has a measure."""

    name: str
    labels: list
    counts: list[int]
    values: list[float | None]  # the aggregate the view shows (count, sum or mean)


@dataclass
class Update:
    """The result of one interaction: the views that changed and how they were computed."""

    views: dict[str, ViewData]
    methods: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


class Session:
    """Filter state of one user; answers every interaction from the store."""

    def __init__(self, store: LineageStore, plan: CapturePlan) -> None:
        self.store, self.plan = store, plan
        self._filters: dict[str, Filter] = {f.name: f for f in plan.filters}
        if len(self._filters) > 32:
            msg = "at most 32 brushes and parameters per dashboard"
            raise InteractionError(msg)
        self._bit = {name: 1 << i for i, name in enumerate(self._filters)}
        self._vindex = {v.name: i for i, v in enumerate(store.views)}
        self._bar_off = np.array([v.bar_off for v in store.views], np.int64)
        self._mcol = np.array([v.mcol for v in store.views], np.int64)
        self.active: dict[str, Selection] = {}
        self._materialized: dict[str, Selection] = {}  # what each filter's bits encode
        self._bits: np.ndarray | None = None
        self.agg: Aggregates = store.base.copy()
        self._empty = np.zeros(0, np.float64)

    # --- public interactions --------------------------------------------------------

    def brush(self, view: str, interval, y=None) -> Update:
        """Interval brush `lo <= x <= hi` on a histogram/temporal view (None = open end);
        for heatmaps, `interval` is the x interval and `y` the y interval."""
        f = self._filter(view, ("interval", "rect"))
        ix = self.store.indexes[f.name]
        ranges = [_value_range(ix, *_interval(interval, ix))]
        ysel = None
        if f.kind == "rect":
            if y is None:
                msg = f"view {view!r} takes a rect brush: give x and y intervals"
                raise InteractionError(msg)
            ylo, yhi = _interval(y, ix)
            ysel = (-math.inf if ylo is None else float(ylo), math.inf if yhi is None else float(yhi))
        return self._apply(f.name, Selection(R.normalize(ranges), ysel, (interval, y)))

    def select(self, view: str, values: list) -> Update:
        """Select categories of a categorical view by value; '(other)' selects every value
        outside the top N. An empty list selects nothing."""
        f = self._filter(view, ("points",))
        ix = self.store.indexes[f.name]
        top = len(self.store.view(view).labels) - (1 if self.store.view(view).labels[-1:] == [OTHER] else 0)
        return self._apply(f.name, Selection(_key_ranges(ix, values, top), None, list(values)))

    def set_parameter(self, name: str, value) -> Update:
        """Set a parameter's value; None makes it inactive."""
        f = self._filter(name, ("param_eq", "param_range"))
        if value is None:
            return self.clear(name)
        ix = self.store.indexes[name]
        if f.kind == "param_eq":
            return self._apply(name, Selection(_key_ranges(ix, [value], None), None, value))
        op = self.plan.dashboard.parameter(name).op
        v = _bound(value, ix)
        lo, hi = {"lt": (None, v), "lte": (None, v), "gt": (v, None), "gte": (v, None)}[op]
        s, e = _value_range(ix, lo, hi, strict_lo=op == "gt", strict_hi=op == "lt")
        return self._apply(name, Selection(R.normalize([(s, e)]), None, value))

    def clear(self, name: str | None = None) -> Update:
        """Remove one brush / parameter, or all of them."""
        names = [name] if name else list(self.active)
        if name:
            self._filter(name, None)
        t0 = time.perf_counter()
        update = Update({})
        for n in names:
            if n in self.active:
                u = self._apply(n, None)
                update.views.update(u.views)
                update.methods.update(u.methods)
        update.seconds = time.perf_counter() - t0
        return update

    @property
    def filters(self) -> dict[str, object]:
        """The active filters as the user gave them: {view or parameter: value}."""
        return {n: s.spec for n, s in self.active.items()}

    def views(self) -> dict[str, ViewData]:
        return {v.name: self._view_data(v.name) for v in self.store.views}

    def view(self, name: str) -> ViewData:
        self._view_index(name)
        return self._view_data(name)

    # --- lineage queries ------------------------------------------------------------

    def backward_rids(self, view: str | None = None, bars: list[int] | None = None,
                      offset: int = 0, limit: int | None = None) -> np.ndarray:
        """rids behind bars of a view as currently shown (rows in the bars passing the
        view's other filters), or behind the current selection (rows passing every
        active filter) when `view` is None. In index order; `offset`/`limit` page."""
        order, ranges, need = self._backward_source(view, bars)
        limit = self.store.n_rows if limit is None else limit
        out = np.empty(max(0, min(limit, self.store.n_rows)), np.int32)
        if order is None:  # no filter: all rows in rid order
            stop = min(self.store.n_rows, offset + len(out))
            return np.arange(offset, max(offset, stop), dtype=np.int32)
        starts, stops, _ = R.as_arrays(ranges)
        bits = self._bits_or_dummy()
        n = K.selected_rids(order, starts, stops, need != 0, bits, np.uint32(need),
                            offset, len(out), out)
        return out[:n]

    def count_selected(self, view: str | None = None, bars: list[int] | None = None) -> int:
        """Number of rows `backward_rids` would return without paging."""
        order, ranges, need = self._backward_source(view, bars)
        if order is None:
            return self.store.n_rows
        if need == 0:
            return R.size(ranges)
        starts, stops, _ = R.as_arrays(ranges)
        return int(K.count_passing(order, starts, stops, self._bits, np.uint32(need)))

    def details(self, view: str | None = None, bars: list[int] | None = None, page: int = 0,
                page_size: int | None = None, columns: list[str] | None = None) -> pa.Table:
        """A page of the input rows behind bars or the current selection (details on
        demand), from the capture's snapshot, with their rids."""
        spec = self.plan.dashboard.interactions.details
        if spec is None or self.store.snapshot is None:
            msg = "details on demand is not declared in this dashboard's interactions"
            raise NotCapturedError(msg)
        columns = columns or spec.columns
        unknown = [c for c in columns if c not in spec.columns]
        if unknown:
            msg = f"details columns {unknown} were not captured; declared: {spec.columns}"
            raise InteractionError(msg)
        size = page_size or spec.page_size
        rids = self.backward_rids(view, bars, offset=page * size, limit=size)
        table = self.store.snapshot.select(columns).take(pa.array(rids))
        return table.add_column(0, "rid", pa.array(rids, pa.int32()))

    def forward(self, rids) -> dict[str, list[int]]:
        """Bars each view's rows `rids` contribute to (forward lineage)."""
        rids = np.asarray(rids, np.int64)
        if len(rids) and (rids.min() < 0 or rids.max() >= self.store.n_rows):
            msg = f"rids must be in [0, {self.store.n_rows})"
            raise InteractionError(msg)
        out = {}
        for i, v in enumerate(self.store.views):
            bars = np.unique(self.store.codes[rids, i])
            out[v.name] = [int(b) for b in bars if b < v.nbars]
        return out

    def highlight(self, source: str, bars: list[int]) -> dict[str, ViewData]:
        """Linked highlighting: for each declared target, the aggregate per bar of the rows
        in the selected `bars` of `source` that the target currently shows."""
        targets = [t for h in self.plan.dashboard.interactions.highlight if h.source == source
                   for t in h.targets]
        if not targets:
            msg = f"no highlight from view {source!r} is declared"
            raise NotCapturedError(msg)
        ix = self.store.indexes[f"bars:{source}"]
        ranges = _bar_ranges(ix, bars, self.store.view(source).nbars)
        starts, stops, _ = R.as_arrays(ranges)
        out = {}
        for t in dict.fromkeys(targets):
            v = self._vindex[t]
            need = self._need(t)
            self._sync_all(self._others(t))
            agg = Aggregates.zeros(self.store.nslots)
            needs = np.zeros(len(self.store.views), np.uint32)
            needs[v] = need
            K.accumulate_ranges(ix.order, starts, stops, need != 0, self._bits_or_dummy(), needs,
                                np.array([v], np.int64), 1, self.store.codes, self._bar_off,
                                self.store.measures, self._mcol, agg.counts, agg.sums, agg.oks)
            out[t] = _view_data(self.store.view(t), agg)
        return out

    # --- the update machinery -------------------------------------------------------

    def _apply(self, name: str, new: Selection | None) -> Update:
        t0 = time.perf_counter()
        old = self.active.get(name)
        if new is None:
            self.active.pop(name, None)
        else:
            self.active[name] = new
        affected = self._filters[name].filters_views
        methods: dict[str, str] = {}
        by_method: dict[str, list[str]] = {"base": [], "cube": [], "mask": []}
        for v in affected:
            others = self._others(v)
            if not others:
                m = "base"
            elif len(others) == 1 and (others[0], v) in self.store.cubes \
                    and self.active[others[0]].y is None:
                m = "cube"
            else:
                m = "mask"
            by_method[m].append(v)
        for v in by_method["base"]:
            self._copy_base(v)
            methods[v] = "base"
        for v in by_method["cube"]:
            self._from_cube(self._others(v)[0], v)
            methods[v] = "cube"
        if by_method["mask"]:
            methods.update(self._update_masked(name, old, new, by_method["mask"]))
        changed = {v: self._view_data(v) for v in affected}
        return Update(changed, methods, time.perf_counter() - t0)

    def _update_masked(self, name: str, old: Selection | None, new: Selection | None,
                       views: list[str]) -> dict[str, str]:
        """Views that need per-row pass bits: incremental when the moving filter's change
        is smaller than re-aggregating the most selective other filter's rows."""
        n = self.store.n_rows
        for g in {g for v in views for g in self._others(v)} - {name}:
            self._sync(g)
        drivers = {v: min(self._others(v), key=lambda g: self.active[g].size) for v in views}
        recompute_cost = sum(min(self.active[drivers[v]].size, n * RESCAN_FRACTION) for v in views)
        incremental_cost = math.inf
        if old is not None and new is not None:
            mat = self._materialized.get(name, Selection([]))
            incremental_cost = (self._delta_size(mat, old) + self._delta_size(old, new)) * len(views)
        if incremental_cost <= recompute_cost:
            self._sync(name, target=old)
            self._flip(name, old, new, views)
            return dict.fromkeys(views, "incremental")
        self._sync(name)
        methods = {}
        rescan = [v for v in views if self.active[drivers[v]].size > n * RESCAN_FRACTION]
        if rescan:
            self._rescan(rescan)
            methods.update(dict.fromkeys(rescan, "rescan"))
        for v in views:
            if v not in rescan:
                self._recompute(v, drivers[v])
                methods[v] = "recompute"
        return methods

    def _others(self, view: str) -> list[str]:
        """Active filters that apply to `view` (its own brush never does)."""
        return [g for g in self.active if view in self._filters[g].filters_views]

    def _need(self, view: str) -> int:
        need = 0
        for g in self._others(view):
            need |= self._bit[g]
        return need

    def _needs(self, views: list[str]) -> np.ndarray:
        out = np.zeros(len(self.store.views), np.uint32)
        for v in views:
            out[self._vindex[v]] = self._need(v)
        return out

    def _copy_base(self, view: str) -> None:
        s = self._slots(view)
        self.agg.counts[s], self.agg.sums[s], self.agg.oks[s] = (
            self.store.base.counts[s], self.store.base.sums[s], self.store.base.oks[s])

    def _from_cube(self, g: str, view: str) -> None:
        cube, ix, sel = self.store.cubes[(g, view)], self.store.indexes[g], self.active[g]
        s = self._slots(view)
        self.agg.counts[s], self.agg.sums[s], self.agg.oks[s] = 0, 0.0, 0
        starts, stops, _ = R.as_arrays(sel.ranges)
        sums = self.agg.sums[s] if cube.sums.size else self._empty
        oks = self.agg.oks[s] if cube.oks.size else self.agg.oks[s][:0]
        c = self._mcol[self._vindex[view]] if cube.sums.size else -1
        K.cube_lookup(cube.counts, cube.sums, cube.oks, ix.block_starts, starts, stops, ix.order,
                      self.store.codes, self._vindex[view], self.store.measures, c,
                      self.agg.counts[s], sums, oks)

    def _recompute(self, view: str, driver: str) -> None:
        s = self._slots(view)
        self.agg.counts[s], self.agg.sums[s], self.agg.oks[s] = 0, 0.0, 0
        starts, stops, _ = R.as_arrays(self.active[driver].ranges)
        K.accumulate_ranges(self.store.indexes[driver].order, starts, stops, True, self._bits,
                            self._needs([view]), np.array([self._vindex[view]], np.int64), 1,
                            self.store.codes, self._bar_off, self.store.measures, self._mcol,
                            self.agg.counts, self.agg.sums, self.agg.oks)

    def _rescan(self, views: list[str]) -> None:
        vi = np.array([self._vindex[v] for v in views], np.int64)
        counts, sums, oks = K.rescan(self._bits, self._needs(views), vi, self.store.codes,
                                     self._bar_off, self.store.measures, self._mcol,
                                     self.store.nslots, 2)
        for v in views:
            s = self._slots(v)
            self.agg.counts[s], self.agg.sums[s], self.agg.oks[s] = counts[s], sums[s], oks[s]

    def _flip(self, name: str, old: Selection, new: Selection, views: list[str]) -> None:
        """Move filter `name` from `old` to `new` (its bits encode `old`), adjusting the
        aggregates of `views` for exactly the rows whose bit changes."""
        self._flip_bits(name, old, new, views)

    def _sync(self, name: str, target: Selection | None = None) -> None:
        """Bring filter `name`'s bits up to `target` (default: its active selection)."""
        target = target if target is not None else self.active.get(name)
        if target is None:
            return
        mat = self._materialized.get(name, Selection([]))
        if mat is not target and mat != target:
            self._flip_bits(name, mat, target, [])

    def _sync_all(self, names: list[str]) -> None:
        for g in names:
            self._sync(g)

    def _flip_bits(self, name: str, old: Selection, new: Selection, views: list[str]) -> None:
        if self._bits is None:
            self._bits = np.zeros(self.store.n_rows, np.uint32)
        ix = self.store.indexes[name]
        if new.y is not None or old.y is not None:
            pieces = R.segments(old.ranges, new.ranges) if old.y != new.y else \
                R.changes(old.ranges, new.ranges)
        else:
            pieces = R.changes(old.ranges, new.ranges)
        starts, stops, flags = R.as_arrays(pieces)
        ylo, yhi = new.y if new.y is not None else (0.0, 0.0)
        yvals = ix.yvalues if ix.yvalues is not None else self._empty
        vi = np.array([self._vindex[v] for v in views], np.int64)
        K.flip_bits(ix.order, starts, stops, flags, new.y is not None, yvals, float(ylo), float(yhi),
                    self._bits, np.uint32(self._bit[name]), self._needs(views), vi,
                    self.store.codes, self._bar_off, self.store.measures, self._mcol,
                    self.agg.counts, self.agg.sums, self.agg.oks)
        self._materialized[name] = new

    def _delta_size(self, a: Selection, b: Selection) -> int:
        if a.y != b.y:
            return sum(e - s for s, e, _ in R.segments(a.ranges, b.ranges))
        return sum(e - s for s, e, _ in R.changes(a.ranges, b.ranges))

    def _backward_source(self, view: str | None, bars: list[int] | None):
        """(index order, ranges, need bits) whose passing rows are the requested rows."""
        if view is None:
            if not self.active:
                return None, [], 0
            driver = min(self.active, key=lambda g: self.active[g].size)
            self._sync_all(list(self.active))
            need = 0
            for g in self.active:
                need |= self._bit[g]
            if len(self.active) == 1 and self.active[driver].y is None:
                need = 0
            return self.store.indexes[driver].order, self.active[driver].ranges, need
        self._view_index(view)
        key = f"bars:{view}"
        if key not in self.store.indexes:
            msg = f"backward lineage of view {view!r} was not captured: declare it as a " \
                  "highlight source"
            raise NotCapturedError(msg)
        ix = self.store.indexes[key]
        ranges = _bar_ranges(ix, bars if bars is not None else list(range(self.store.view(view).nbars)),
                             self.store.view(view).nbars)
        others = self._others(view)
        self._sync_all(others)
        return ix.order, ranges, self._need(view)

    def _bits_or_dummy(self) -> np.ndarray:
        return self._bits if self._bits is not None else np.zeros(1, np.uint32)

    def _slots(self, view: str) -> slice:
        v = self.store.views[self._vindex[view]]
        return slice(v.bar_off, v.bar_off + v.nbars + 1)

    def _view_index(self, name: str) -> int:
        if name not in self._vindex:
            msg = f"unknown view {name!r}; views: {', '.join(self._vindex)}"
            raise InteractionError(msg)
        return self._vindex[name]

    def _view_data(self, name: str) -> ViewData:
        return _view_data(self.store.views[self._vindex[name]], self.agg)

    def _filter(self, name: str, kinds: tuple[str, ...] | None) -> Filter:
        f = self._filters.get(name)
        if f is None:
            known = ", ".join(self._filters) or "none"
            msg = f"{name!r} is not a brushable view or parameter of this dashboard; known: {known}"
            raise InteractionError(msg)
        if kinds and f.kind not in kinds:
            msg = f"{name!r} takes a {f.kind.replace('param_', '')} filter, not this interaction"
            raise InteractionError(msg)
        return f


# --- pure helpers: user values to index positions ---------------------------------------


def _view_data(v, agg: Aggregates) -> ViewData:
    s = v.slots
    counts = agg.counts[s]
    if v.op == "count":
        values = counts.astype(float).tolist()
    elif v.op == "sum":
        values = [float(x) if k else None for x, k in zip(agg.sums[s], agg.oks[s], strict=True)]
    else:
        values = [float(x) / k if k else None for x, k in zip(agg.sums[s], agg.oks[s], strict=True)]
    return ViewData(v.name, v.labels, counts.tolist(), values)


def _bound(x, ix: Index):
    """A user bound as the index's value type: time as UTC microseconds."""
    if x is None:
        return None
    if ix.value_type == "temporal":
        if isinstance(x, str):
            x = datetime.fromisoformat(x)
        if isinstance(x, datetime):
            if x.tzinfo is None:
                from datetime import UTC
                x = x.replace(tzinfo=UTC)
            return int(round(x.timestamp() * 1_000_000))
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        msg = f"bound {x!r} is not a number" + (" or time" if ix.value_type == "temporal" else "")
        raise InteractionError(msg)
    if isinstance(x, float) and math.isnan(x):
        msg = "bound is NaN"
        raise InteractionError(msg)
    return x


def _interval(interval, ix: Index) -> tuple:
    try:
        lo, hi = interval
    except (TypeError, ValueError):
        msg = f"an interval is [lo, hi], got {interval!r}"
        raise InteractionError(msg) from None
    return _bound(lo, ix), _bound(hi, ix)


def _value_range(ix: Index, lo, hi, strict_lo: bool = False, strict_hi: bool = False):
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


def _key_ranges(ix: Index, values: list, top: int | None) -> R.Ranges:
    """Index ranges of the rows whose value is in `values` ('(other)': beyond the top)."""
    if not isinstance(values, (list, tuple)):
        msg = f"select takes a list of values, got {values!r}"
        raise InteractionError(msg)
    pos = {k: i for i, k in enumerate(ix.keys)}
    out = []
    for x in values:
        if x == OTHER and top is not None:
            out.append((int(ix.offsets[top]), int(ix.offsets[-1])))
        elif x in pos:
            k = pos[x]
            out.append((int(ix.offsets[k]), int(ix.offsets[k + 1])))
    return R.normalize(out)


def _bar_ranges(ix: Index, bars: list[int], nbars: int) -> R.Ranges:
    if not isinstance(bars, (list, tuple)) or not all(isinstance(b, (int, np.integer)) for b in bars):
        msg = f"bars is a list of bar numbers, got {bars!r}"
        raise InteractionError(msg)
    bad = [b for b in bars if not 0 <= b < nbars]
    if bad:
        msg = f"bars {bad} out of range: this view has bars 0..{nbars - 1}"
        raise InteractionError(msg)
    return R.normalize([(int(ix.offsets[b]), int(ix.offsets[b + 1])) for b in bars])
