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
          forward to their bars, counted where they pass the view's other filters;
- conditional cube: a brush moving while other filters stay fixed is answered from
          cubes of its blocks over the rows passing the others (Falcon's data tile),
          built on its first large update, plus the rows of the two partial edge blocks;
- recompute: the rows of the most selective other filter are re-aggregated;
- rescan: every row is re-aggregated in rid order (used when the others are not selective).
No method needs per-session per-row state: a row's position in every index is in the
shared store (`fkeys`), and a filter's state is a position range or a set of keys.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from brushfire import values as V
from brushfire.engine import kernels as K
from brushfire.engine import ranges as R
from brushfire.errors import InteractionError, NotCapturedError
from brushfire.lineage.arrays import OTHER, Aggregates, Index
from brushfire.lineage.store import LineageStore
from brushfire.plan import CapturePlan, Filter

RESCAN_FRACTION = 0.25  # recompute from an index slice only below this share of rows
PARALLEL_ROWS = 200_000  # aggregate on two threads from this many rows on
COND_MIN_ROWS = 50_000  # build conditional cubes when an update would touch more rows
COND_MAX_BLOCKS = 4096  # blocks of a conditional cube (its size: blocks x bars of the views)


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
class Conditional:
    """Cubes of one filter's index blocks over the rows passing the other active filters
    (as they were when built): valid while only that filter moves."""

    filter: str
    key: tuple  # the other filters' selections when built
    views: list[str]
    bsize: int
    counts: np.ndarray
    sums: np.ndarray
    oks: np.ndarray
    col_off: np.ndarray


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
    """Filter state of one user; answers every interaction from the store.

    A session holds no per-row state: each active filter is a position range (or a set of
    keys) in its index, and the shared `store.fkeys` tells any row's position in every
    index, so testing a row against the filters is one lookup per filter.
    """

    def __init__(self, store: LineageStore, plan: CapturePlan) -> None:
        self.store, self.plan = store, plan
        self._filters: dict[str, Filter] = {f.name: f for f in plan.filters}
        if len(self._filters) > 32:
            msg = "at most 32 brushes and parameters per dashboard"
            raise InteractionError(msg)
        self._fi = {name: i for i, name in enumerate(self._filters)}
        self._vindex = {v.name: i for i, v in enumerate(store.views)}
        self._bar_off = np.array([v.bar_off for v in store.views], np.int64)
        self._mcol = np.array([v.mcol for v in store.views], np.int64)
        self.active: dict[str, Selection] = {}
        self.agg: Aggregates = store.base.copy()
        self._cond: Conditional | None = None  # cubes of the moving filter given the others
        self._empty = np.zeros(0, np.float64)
        nf = len(self._filters)
        nkeys = max([len(store.indexes[f].keys) for f in self._filters
                     if store.indexes[f].keys is not None] + [1])
        kinds = np.array([0 if store.indexes[f].offsets is None else 1 for f in self._filters], np.int8)
        ycols = np.array([store.ycols.get(f, -1) for f in self._filters], np.int64)
        # the filter test's state; lo/hi/sel/ylo/yhi change as filters change
        self._lo, self._hi = np.zeros(nf, np.int64), np.zeros(nf, np.int64)
        self._sel = np.zeros((nf, nkeys), np.bool_)
        self._ylo, self._yhi = np.zeros(nf, np.float64), np.zeros(nf, np.float64)
        self._ft = (store.fkeys, kinds, self._lo, self._hi, self._sel, ycols, store.fy,
                    self._ylo, self._yhi)

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
        labels = self.store.view(view).labels
        top = len(labels) - (1 if labels[-1:] == [OTHER] else 0)
        return self._apply(f.name, Selection(_key_ranges(ix, values, top), None, list(values)))

    def set_parameter(self, name: str, value) -> Update:
        """Set a parameter's value; None makes it inactive."""
        f = self._filter(name, ("param_eq", "param_range"))
        if value is None:
            return self.clear(name)
        ix = self.store.indexes[name]
        if f.kind == "param_eq":
            return self._apply(name, Selection(_key_ranges(ix, [value], None), None, value))
        s, e = _param_range(ix, self.plan.dashboard.parameter(name).op, value)
        return self._apply(name, Selection(R.normalize([(s, e)]), None, value))

    def clear(self, name: str | None = None) -> Update:
        """Remove one brush / parameter, or all of them."""
        if name:
            self._filter(name, None)
        t0 = time.perf_counter()
        update = Update({})
        for n in [name] if name else list(self.active):
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
        limit = self.store.n_rows if limit is None else max(0, min(limit, self.store.n_rows))
        if order is None:  # no filter: all rows in rid order
            return np.arange(offset, max(offset, min(self.store.n_rows, offset + limit)), dtype=np.int32)
        out = np.empty(limit, np.int32)
        starts, stops, _ = R.as_arrays(ranges)
        n = K.selected_rids(order, starts, stops, np.uint32(need), self._ft, offset, limit, out)
        return out[:n]

    def count_selected(self, view: str | None = None, bars: list[int] | None = None) -> int:
        """Number of rows `backward_rids` would return without paging."""
        if view is None and bars is None:
            total = self._total_from_views()
            if total is not None:
                return total
        order, ranges, need = self._backward_source(view, bars)
        if order is None:
            return self.store.n_rows
        starts, stops, _ = R.as_arrays(ranges)
        return int(K.count_passing(order, starts, stops, np.uint32(need), self._ft))

    def details(self, view: str | None = None, bars: list[int] | None = None, page: int = 0,
                page_size: int | None = None, columns: list[str] | None = None) -> pa.Table:
        """A page of the input rows behind bars or the current selection (details on
        demand), from the capture's snapshot, with their rids."""
        if self.store.snapshot is None:
            msg = "details on demand is not declared in this dashboard's interactions"
            raise NotCapturedError(msg)
        columns, size = details_request(self.plan, page, page_size, columns)
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
        starts, stops, _ = R.as_arrays(_bar_ranges(ix, bars, self.store.view(source).nbars))
        agg = Aggregates.zeros(self.store.nslots)
        views = list(dict.fromkeys(targets))
        K.accumulate_ranges(ix.order, starts, stops, np.ones(len(starts), np.int64), False,
                            self._needs(views), self._vi(views), self._ft, self.store.codes,
                            self._bar_off, self.store.measures, self._mcol,
                            agg.counts, agg.sums, agg.oks)
        return {t: _view_data(self.store.view(t), agg) for t in views}

    # --- the update machinery -------------------------------------------------------

    def _apply(self, name: str, new: Selection | None) -> Update:
        t0 = time.perf_counter()
        old = self.active.get(name)
        if new is None:
            self.active.pop(name, None)
        else:
            self.active[name] = new
        self._set_test(name, new)
        if self._cond is not None and self._cond.filter != name:
            self._cond = None  # built for other fixed filters: stale from now on
        methods: dict[str, str] = {}
        masked: list[str] = []
        for v in self._filters[name].filters_views:
            others = self._others(v)
            if not others:
                self._copy_base(v)
                methods[v] = "base"
            elif len(others) == 1 and (others[0], v) in self.store.cubes \
                    and self.active[others[0]].y is None:
                self._from_cube(others[0], v)
                methods[v] = "cube"
            else:
                masked.append(v)
        if masked:
            methods.update(self._update_filtered(name, old, new, masked))
        changed = {v: self._view_data(v) for v in self._filters[name].filters_views}
        return Update(changed, methods, time.perf_counter() - t0)

    def _update_filtered(self, name: str, old: Selection | None, new: Selection | None,
                         views: list[str]) -> dict[str, str]:
        """Views under several filters: conditional cubes while one brush moves among fixed
        filters (built on its first large update); otherwise incremental when the moving
        filter's change is smaller than re-aggregating the most selective other filter's
        rows, else recompute or rescan."""
        n = self.store.n_rows
        drivers = {v: min(self._others(v), key=lambda g: self.active[g].size) for v in views}
        recompute_cost = sum(min(self.active[drivers[v]].size, n * RESCAN_FRACTION) for v in views)
        incremental_cost = math.inf
        if old is not None and new is not None and old.y is None and new.y is None:
            incremental_cost = R.size([(s, e) for s, e, _ in R.changes(old.ranges, new.ranges)]) * len(views)
        valid = self._cond_valid(name, views)
        if self._conditional_fits(name, new, views) and (
                valid or min(incremental_cost, recompute_cost) > COND_MIN_ROWS):
            if not valid:
                self._build_conditional(name, views)
            self._from_conditional(views)
            return dict.fromkeys(views, "conditional cube")
        if incremental_cost <= recompute_cost:
            pieces = R.changes(old.ranges, new.ranges)
            signs = np.array([1 if entering else -1 for _, _, entering in pieces], np.int64)
            needs = self._needs(views) & ~np.uint32(1 << self._fi[name])  # membership is known
            self._accumulate(self.store.indexes[name].order, pieces, signs, needs, views)
            return dict.fromkeys(views, "incremental")
        rescan = [v for v in views if self.active[drivers[v]].size > n * RESCAN_FRACTION]
        if rescan:
            counts, sums, oks = K.rescan(self._needs(rescan), self._vi(rescan), self._ft,
                                         self.store.codes, self._bar_off, self.store.measures,
                                         self._mcol, self.store.nslots, 2)
            for v in rescan:
                s = self._slots(v)
                self.agg.counts[s], self.agg.sums[s], self.agg.oks[s] = counts[s], sums[s], oks[s]
        by_driver: dict[str, list[str]] = {}
        for v in views:
            if v not in rescan:
                by_driver.setdefault(drivers[v], []).append(v)
        for driver, group in by_driver.items():  # one pass over each driver's rows
            self._recompute(group, driver)
        return {v: "rescan" if v in rescan else "recompute" for v in views}

    def _conditional_fits(self, name: str, new: Selection | None, views: list[str]) -> bool:
        """Can a moving filter be answered from conditional cubes? (value index, no y)"""
        return (new is not None and new.y is None and self.store.indexes[name].offsets is None
                and all(name in self._others(v) for v in views))

    def _others_key(self, name: str) -> tuple:
        return tuple((g, tuple(sel.ranges), sel.y) for g, sel in self.active.items() if g != name)

    def _cond_valid(self, name: str, views: list[str]) -> bool:
        c = self._cond
        return (c is not None and c.filter == name and c.key == self._others_key(name)
                and set(views) <= set(c.views))

    def _build_conditional(self, name: str, views: list[str]) -> None:
        """Cubes of `name`'s blocks over the rows passing every other active filter, from
        the most selective other filter's rows (or all rows, in rid order)."""
        ix, n = self.store.indexes[name], self.store.n_rows
        bsize = max(int(ix.block_starts[1]) if len(ix.block_starts) > 1 else 1,
                    -(-len(ix.order) // COND_MAX_BLOCKS))
        nblocks = -(-len(ix.order) // bsize)
        needs = self._needs(views) & ~np.uint32(1 << self._fi[name])
        # the driver's rows must hold every row any of the views counts: a filter that
        # applies to all of them (not one view's own brush); else scan every row
        common = set.intersection(*(set(self._others(v)) for v in views)) - {name}
        driver = min(common, key=lambda g: self.active[g].size) if common else name  # unused order
        identity = not common or self.active[driver].size > n * RESCAN_FRACTION
        ranges = [(0, n)] if identity else self.active[driver].ranges
        starts, stops, _ = R.as_arrays(ranges)
        vi = self._vi(views)
        counts, sums, oks, col_off = K.conditional_cubes(
            self.store.indexes[driver].order, starts, stops, identity, self._fi[name], bsize,
            nblocks, needs, vi, np.array([self.store.views[i].nbars for i in vi], np.int64),
            self._ft, self.store.codes, self.store.measures, self._mcol[vi], 2)
        self._cond = Conditional(name, self._others_key(name), list(views), bsize, counts, sums,
                                 oks, col_off)

    def _from_conditional(self, views: list[str]) -> None:
        """Views from the conditional cubes: whole blocks by prefix differences, the rows
        of the partial blocks at the two edges traced and tested one by one."""
        c = self._cond
        (s, e), = self.active[c.filter].ranges or [(0, 0)]
        a, b = -(-s // c.bsize), e // c.bsize  # whole blocks a..b-1 lie inside [s, e)
        edges = [(s, e)] if a > b else [(s, a * c.bsize), (b * c.bsize, e)]
        for v in views:
            sl = self._slots(v)
            i = c.views.index(v)
            cols = slice(c.col_off[i], c.col_off[i + 1])
            if a > b:
                self.agg.counts[sl], self.agg.sums[sl], self.agg.oks[sl] = 0, 0.0, 0
            else:
                self.agg.counts[sl] = c.counts[b, cols] - c.counts[a, cols]
                self.agg.sums[sl] = c.sums[b, cols] - c.sums[a, cols]
                self.agg.oks[sl] = c.oks[b, cols] - c.oks[a, cols]
        edges = [p for p in edges if p[0] < p[1]]
        needs = self._needs(views) & ~np.uint32(1 << self._fi[c.filter])
        self._accumulate(self.store.indexes[c.filter].order, edges, np.ones(len(edges), np.int64),
                         needs, views)

    def _accumulate(self, order, ranges_or_pieces, signs, needs, views: list[str]) -> None:
        """Add the rows at the given index ranges (with per-range signs) to the views'
        aggregates: serially, or on two threads when there are many rows."""
        starts, stops, _ = R.as_arrays(ranges_or_pieces)
        vi = self._vi(views)
        if int((stops - starts).sum()) < PARALLEL_ROWS:
            K.accumulate_ranges(order, starts, stops, signs, False, needs, vi, self._ft,
                                self.store.codes, self._bar_off, self.store.measures, self._mcol,
                                self.agg.counts, self.agg.sums, self.agg.oks)
            return
        counts, sums, oks = K.accumulate_parallel(
            order, starts, stops, signs, False, needs, vi, self._ft, self.store.codes,
            self._bar_off, self.store.measures, self._mcol, self.store.nslots, 2)
        for v in views:
            s = self._slots(v)
            self.agg.counts[s] += counts[s]
            self.agg.sums[s] += sums[s]
            self.agg.oks[s] += oks[s]

    def _set_test(self, name: str, sel: Selection | None) -> None:
        """Point filter `name`'s row test at its new selection."""
        f = self._fi[name]
        ix = self.store.indexes[name]
        if sel is None:
            return  # an inactive filter is in no view's need mask
        if ix.offsets is None:  # value index: one position range
            (lo, hi), = sel.ranges or [(0, 0)]
            self._lo[f], self._hi[f] = lo, hi
        else:  # partitioned: the keys whose segments the ranges cover
            self._sel[f] = False
            for s, e in sel.ranges:
                a = int(np.searchsorted(ix.offsets, s, side="right")) - 1
                b = int(np.searchsorted(ix.offsets, e, side="left"))
                self._sel[f, a:b] = True
        if sel.y is not None:
            self._ylo[f], self._yhi[f] = sel.y

    def _others(self, view: str) -> list[str]:
        """Active filters that apply to `view` (its own brush never does)."""
        return [g for g in self.active if view in self._filters[g].filters_views]

    def _need(self, view: str) -> int:
        need = 0
        for g in self._others(view):
            need |= 1 << self._fi[g]
        return need

    def _needs(self, views: list[str]) -> np.ndarray:
        out = np.zeros(len(self.store.views), np.uint32)
        for v in views:
            out[self._vindex[v]] = self._need(v)
        return out

    def _vi(self, views: list[str]) -> np.ndarray:
        return np.array([self._vindex[v] for v in views], np.int64)

    def _copy_base(self, view: str) -> None:
        s = self._slots(view)
        self.agg.counts[s], self.agg.sums[s], self.agg.oks[s] = (
            self.store.base.counts[s], self.store.base.sums[s], self.store.base.oks[s])

    def _from_cube(self, g: str, view: str) -> None:
        cube, ix, sel = self.store.cubes[(g, view)], self.store.indexes[g], self.active[g]
        s = self._slots(view)
        self.agg.counts[s], self.agg.sums[s], self.agg.oks[s] = 0, 0.0, 0
        starts, stops, _ = R.as_arrays(sel.ranges)
        has_measure = cube.sums.size > 0
        sums = self.agg.sums[s] if has_measure else self._empty
        oks = self.agg.oks[s] if has_measure else self.agg.oks[s][:0]
        c = self._mcol[self._vindex[view]] if has_measure else -1
        K.cube_lookup(cube.counts, cube.sums, cube.oks, ix.block_starts, starts, stops, ix.order,
                      self.store.codes, self._vindex[view], self.store.measures, c,
                      self.agg.counts[s], sums, oks)

    def _recompute(self, views: list[str], driver: str) -> None:
        """Re-aggregate `views` from the rows of filter `driver`, in one pass."""
        for v in views:
            s = self._slots(v)
            self.agg.counts[s], self.agg.sums[s], self.agg.oks[s] = 0, 0.0, 0
        ranges = self.active[driver].ranges
        self._accumulate(self.store.indexes[driver].order, ranges, np.ones(len(ranges), np.int64),
                         self._needs(views), views)

    def _total_from_views(self) -> int | None:
        """Rows passing every active filter, read off a view that every active filter
        applies to (its slots, dropped rows included, sum to that number)."""
        for v in self.store.views:
            if all(v.name in self._filters[g].filters_views for g in self.active):
                return int(self.agg.counts[self._slots(v.name)].sum())
        return None

    def _backward_source(self, view: str | None, bars: list[int] | None):
        """(index order, ranges, need) whose passing rows are the requested rows."""
        if view is None:
            if not self.active:
                return None, [], 0
            driver = min(self.active, key=lambda g: self.active[g].size)
            need = 0
            for g in self.active:
                need |= 1 << self._fi[g]
            return self.store.indexes[driver].order, self.active[driver].ranges, need
        self._view_index(view)
        key = f"bars:{view}"
        if key not in self.store.indexes:
            msg = f"backward lineage of view {view!r} was not captured: declare details on " \
                  "demand, or the view as a highlight source"
            raise NotCapturedError(msg)
        nbars = self.store.view(view).nbars
        ranges = _bar_ranges(self.store.indexes[key], list(range(nbars)) if bars is None else bars,
                             nbars)
        return self.store.indexes[key].order, ranges, self._need(view)

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
        return find_filter(self._filters, name, kinds)


# --- request checks, shared with the baseline engines -------------------------------------


def find_filter(filters: dict[str, Filter], name: str, kinds: tuple[str, ...] | None) -> Filter:
    """The filter an interaction names, if it takes one of `kinds` (None: any)."""
    f = filters.get(name)
    if f is None:
        known = ", ".join(filters) or "none"
        msg = f"{name!r} is not a brushable view or parameter of this dashboard; known: {known}"
        raise InteractionError(msg)
    if kinds and f.kind not in kinds:
        msg = f"{name!r} takes a {f.kind.replace('param_', '')} filter, not this interaction"
        raise InteractionError(msg)
    return f


def details_request(plan: CapturePlan, page: int, page_size: int | None,
                    columns: list[str] | None) -> tuple[list[str], int]:
    """(columns, page size) of a details request, checked against the declaration."""
    spec = plan.dashboard.interactions.details
    if spec is None:
        msg = "details on demand is not declared in this dashboard's interactions"
        raise NotCapturedError(msg)
    columns = columns or spec.columns
    unknown = [c for c in columns if c not in spec.columns]
    if unknown:
        msg = f"details columns {unknown} were not captured; declared: {spec.columns}"
        raise InteractionError(msg)
    size = page_size or spec.page_size
    if page < 0 or size < 1:
        msg = "page must be >= 0 and page_size >= 1"
        raise InteractionError(msg)
    return columns, size


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
    """A user bound as the index's value type: time as UTC microseconds (brushfire.values)."""
    return V.time_bound(x) if ix.value_type == "temporal" else V.number_bound(x)


def _interval(interval, ix: Index) -> tuple:
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
    return np.int64(V.int_bound(x, up, strict))


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
