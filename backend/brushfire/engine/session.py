"""Per-session crossfilter state over a shared, read-only, sharded lineage store.

Semantics: each view aggregates the rows that pass every active filter that applies to
it, except its own brush. Interval brushes select `lo <= x <= hi` on raw values (lo > hi
selects nothing); points select bars of a categorical view ('(other)' is one); rect
brushes select x and y intervals; parameters compare their field with a value. Rows
whose value is null or NaN never pass a brush or parameter.

An update recomputes the views the changed filter applies to, each by the cheapest exact
method: its base result, a group-by push-down cube, a conditional cube of the moving
filter (built in the background while it is dragged or the user pauses, never on the
reply path), only the rows whose membership changed, the rows of its most selective
filter, or a sequential scan — every one bounded by a parallel pass over the compact
per-row keys. Rows reached through a filter dim's keys are read from its clustered copy
once built (engine/copies.py), else through the store's key order. A session keeps no
per-row state: a filter's state is a key range or key set per dim (engine/state.py).

The session keeps the filter state and coordinates; the rest lives apart:
- engine/methods/: each way of answering, its cost estimate next to its executor, and
  engine/planner.py, the pure choice among them; engine/multi.py gathers what the
  planner weighs for the views under several filters and runs its choice;
- engine/builders.py: conditional cubes built in the background;
- engine/reads.py: the kernels on the pool; engine/shared.py: what sessions of a store
  share;
- engine/queries.py: lineage queries (details, forward, highlighting).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence

import numpy as np

from brushfire import values as V
from brushfire.engine import builders, memory, multi, parallel, queries, stats
from brushfire.engine.api import (
    BrushRequest,
    Capability,
    ClearRequest,
    ParameterRequest,
    SelectRequest,
    SessionAPI,
    Update,
    ViewData,
    brush_request,
    find_filter,
    slider_bounds,
)
from brushfire.engine.methods import base, cube
from brushfire.engine.methods.conditional import Tile
from brushfire.engine.reads import Reads
from brushfire.engine.shared import ALL, Shared
from brushfire.engine.state import (
    FilterState,
    Selection,
    Test,
    category_keys,
    category_values,
    dict_key,
    dict_value,
    interval_test,
    set_test,
    within_buckets,
)
from brushfire.errors import InteractionError, NotCapturedError
from brushfire.lineage.arrays import Aggregates
from brushfire.lineage.layout import ViewLayout
from brushfire.lineage.store import Cube, LineageStore
from brushfire.plan import CapturePlan
from brushfire.views.base import check_brush_y

__all__ = ["Session", "SessionAPI", "Update", "ViewData"]

IDLE_SECONDS = 0.12  # a pause after which conditional cubes are prepared for the next brush


class Session(queries.Queries):
    """Filter state of one user; answers every interaction from the store (the lineage
    queries: engine/queries.py, `Queries`)."""

    capabilities = frozenset({Capability.ROWS, Capability.FORWARD})

    def __init__(self, store: LineageStore, plan: CapturePlan, pool: parallel.Pool | None = None,
                 prefer: str | None = None, copies: bool = True) -> None:
        """`prefer` (tests): a method the planner takes whenever it applies (incremental,
        recompute, scan or tile; with tile, conditional cubes are built on every update
        under several filters). `copies`: read rows through clustered key copies once
        built (engine/copies.py); False (tests): only through the store's own order."""
        self.store, self.plan, self.layout = store, plan, store.layout
        self._prefer = prefer
        self._s = Shared.of(store)
        self._pool = pool or parallel.pool()
        self._copies = self._s.copies(self._pool) if copies else None
        self._filters = {f.name: f for f in plan.filters}
        self._fi = {f.name: i for i, f in enumerate(self.layout.filters)}
        self._vindex = {v.name: i for i, v in enumerate(self.layout.views)}
        self._has_all = bool(self.layout.dims)
        if self._has_all:
            self._vindex[ALL] = len(self.layout.views)
        self.active: dict[str, Selection] = {}
        self.state = FilterState(self.layout)
        self.agg: Aggregates = self._s.base.copy()
        self._tiles: dict[str, Tile] = {}  # filter -> its conditional cube (valid or stale)
        self._tiles_lock = threading.Lock()  # background builds add to _tiles
        self._tile_jobs: dict[str, parallel.Job] = {}  # filter -> conditional cube being built
        self._recent: list[str] = []  # filters, most recently changed first
        self._idle: parallel.Later | None = None
        self._drag: tuple[str, tuple, int] | None = None  # the filter dragged, others' key, moves
        self._checkpoints: list[multi.Checkpoint] = []  # the views as drags began, latest first
        self._rows_cache: dict[str, tuple] = {}  # filter -> (selection, multi.filter_rows of it)
        self._answered: float | None = None  # when the last filter change was answered
        self._pauses: deque[float] = deque(maxlen=16)  # seconds from each to the next
        self._applies = {f.name: frozenset(f.views) for f in self.layout.filters}
        self._cube_starts = {d: np.asarray(dim.cube_starts, np.int64)  # dim -> its cube blocks
                             for d, dim in enumerate(self.layout.dims) if dim.cube_starts is not None}
        self._cubes_of: dict[tuple, dict] = {}  # (active filters, views) -> view -> cube filters
        self._others_of: dict[tuple, tuple] = {}  # (active filters, view) -> _filters_of(view)
        self._lock = threading.Lock()  # one interaction at a time
        self._closed = False  # `close`d: no more background work, nothing built kept
        self._budget = memory.cubes()
        self.reads = Reads(store, self._s, self._pool, self._copies, self.state, self.active)

    def close(self) -> None:
        """End the session's background work and drop what it built: the pending call that
        would prepare conditional cubes after a pause, the cubes being built and those
        built, and their room in the process's budget. The server calls it when a client
        leaves. Does not wait for an interaction being answered (it returns at once); one
        answered after it still works, without conditional cubes."""
        self._closed = True
        idle, self._idle = self._idle, None
        if idle is not None:
            idle.cancel()
        for job in list(self._tile_jobs.values()):
            job.cancel()
        self._tile_jobs.clear()
        with self._tiles_lock:
            self._tiles.clear()
        memory.freed(self._budget.release_owner(self), self._pool)
        self._pool.prune()
        self._rows_cache.clear()

    def wait_for_copies(self, timeout: float | None = None) -> bool:
        """Wait until the store's clustered key copies are built and their runs laid out (a
        warm-up before serving; interactions never wait: they read the store's order)."""
        if self._copies is not None and not self._copies.wait(timeout):
            return False
        self._s.warm_copies()
        return True

    # --- public interactions --------------------------------------------------------

    # The Python API (brush, select, set_parameter, clear) checks what it is given, then does
    # what the `apply_*` of a request checked by its message (brushfire/requests.py) does.

    def brush(self, view: str, interval, y=None) -> Update:
        """Interval brush `lo <= x <= hi` on a histogram/temporal view (None = open end);
        for heatmaps, `interval` is the x interval and `y` the y interval."""
        f = self._filter(view, ("interval", "rect"))
        check_brush_y(view, f.kind, y)
        return self.apply_brush(brush_request(self.plan.dashboard.view(view), interval, y,
                                              f"brush on view {view!r}: "))

    def apply_brush(self, r: BrushRequest) -> Update:
        f = self._filters[r.view]
        fl = self.layout.filter(f.name)
        tests = [self._interval(fl.dims[0], r.bounds)]
        if f.kind == "rect":
            tests.append(self._interval(fl.dims[1], r.y_bounds))
        return self._apply(f.name, Selection(tuple(tests), (r.interval, r.y)))

    def select(self, view: str, values: list) -> Update:
        """Select bars of a categorical view by value ('(other)': every value beyond the
        top N). An empty list selects nothing; an unknown value is an error."""
        self._filter(view, ("points",))
        return self.apply_select(SelectRequest(view, values))

    def apply_select(self, r: SelectRequest) -> Update:
        fl = self.layout.filter(r.view)
        vl = self.layout.view(r.view)
        values = category_values(r.values, vl.value_type == "temporal")  # times as the bars spell them
        keys = category_keys(vl.labels, values)
        return self._apply(r.view, Selection((set_test(fl.dims[0], keys),), values))

    def set_parameter(self, name: str, value) -> Update:
        """Set a parameter's value; None makes it inactive."""
        f = self._filter(name, ("param_eq", "param_range"))
        in_list = f.kind == "param_eq" and self.layout.filter(name).op == "in"
        if value is not None and in_list and not isinstance(value, (list, tuple)):
            msg = f"parameter {name!r} takes a list of values, got {V.show(value)}"
            raise InteractionError(msg)
        bounds = None
        if value is not None and f.kind == "param_range":
            fl = self.layout.filter(name)
            bounds = slider_bounds(name, value, self.store.parameter_temporal(name),
                                   fl.op == "between", f"parameter {name!r}")
        return self.apply_parameter(ParameterRequest(name, value, bounds))

    def apply_parameter(self, r: ParameterRequest) -> Update:
        name, value = r.name, r.value
        if value is None:
            return self.apply_clear(ClearRequest(name))
        f = self._filters[name]
        fl = self.layout.filter(name)
        d = fl.dims[0]
        if f.kind == "param_eq" and fl.op == "in":  # a list of values: any of them
            value = [dict_value(self.layout.dims[d], x) for x in value]  # times as the choices
            test = set_test(d, [dict_key(self.layout.dims[d], x) for x in value])
        elif f.kind == "param_eq":
            value = dict_value(self.layout.dims[d], value)
            test = set_test(d, [dict_key(self.layout.dims[d], value)])
        elif fl.op == "between":  # [lo, hi], inclusive, as a brush
            test = self._interval(d, r.bounds)
        else:
            v = r.bounds[0]
            lo, hi = (None, v) if fl.op in ("lt", "lte") else (v, None)
            test = self._decided(interval_test(self.layout.dims[d], d, lo, hi, strict_lo=fl.op == "gt",
                                               strict_hi=fl.op == "lt", values=self._s.values[d],
                                               edges=self._s.edges[d]))
        return self._apply(name, Selection((test,), value))

    def clear(self, name: str | None = None) -> Update:
        """Remove one brush / parameter, or all of them."""
        if name:
            self._filter(name, None)
        return self.apply_clear(ClearRequest(name))

    def apply_clear(self, r: ClearRequest) -> Update:
        name = r.name
        if not name and self.active:  # every filter off: every view is its base result
            with self._lock, self._pool.replying():
                t0 = time.perf_counter()
                for n in list(self.active):
                    self.state.set(self._fi[n], None)
                self.active.clear()
                self.agg = self._s.base.copy()
                self._drag = None
                builders.forget_stale(self)
                views = {v.name: self._view_data(v.name) for v in self.layout.views}
                return Update(views, dict.fromkeys(views, "base"), time.perf_counter() - t0)
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
        return {v.name: self._view_data(v.name) for v in self.layout.views}

    def view(self, name: str) -> ViewData:
        self._view_index(name)
        return self._view_data(name)

    # --- the update machinery -------------------------------------------------------

    def _require_rows(self, views: Sequence[str], filters: Sequence[str], what: str) -> None:
        """NotCapturedError unless the views can be counted and the filters tested row by
        row (over the memory budget some dims keep cubes only)."""
        lay = self.layout
        missing = [f"filter {g!r}" for g in filters if not lay.filter_rows(g)]
        missing += [f"view {v!r}" for v in views
                    if (v == ALL and not lay.row_dims) or (v != ALL and not lay.countable(v))]
        if missing:
            msg = (f"{what} needs per-row lineage of {', '.join(missing)}, which this capture "
                   "keeps as cubes only (over its memory budget: "
                   f"{'; '.join(lay.notes) or 'no per-row keys'})")
            raise NotCapturedError(msg)

    def _check_capturable(self, name: str, new: Selection | None) -> None:
        """Can setting filter `name` to `new` be answered from what was captured?"""
        if self.layout.row_dims == len(self.layout.dims):
            return
        active = [g for g in self.active if g != name] + ([name] if new is not None else [])
        fl = self.layout.filter(name)
        for v in fl.views + ([ALL] if self._has_all else []):
            others = active if v == ALL else [g for g in active if v in self.layout.filter(g).views]
            if not others or (len(others) == 1 and self._cube(others[0], v) is not None):
                continue
            self._require_rows([v], others, f"view {v!r} under {', '.join(others)}"
                               if v != ALL else f"the selection of {', '.join(others)}")

    def _apply(self, name: str, new: Selection | None) -> Update:
        with self._lock, self._pool.replying():
            self._check_capturable(name, new)
            t0 = time.perf_counter()
            if self._answered is not None:
                self._pauses.append(t0 - self._answered)
            f = self._fi[name]
            fl = self.layout.filter(name)
            old = self.active.get(name)
            if new is None:
                self.active.pop(name, None)
            else:
                self.active[name] = new
            self.state.set(f, new)
            methods: dict[str, str] = {}
            several: list[str] = []
            by_cube: dict[str, list[str]] = {}  # filter -> the views its cubes answer
            for v in fl.views + ([ALL] if self._has_all else []):
                others = self._others(v)
                if not others:
                    base.answer(self, v)
                    methods[v] = "base"
                elif len(others) == 1 and self._cube(others[0], v) is not None:
                    by_cube.setdefault(others[0], []).append(v)
                    methods[v] = "cube"
                else:
                    several.append(v)
            for g, views in by_cube.items():  # together: the edge rows read once for all
                cube.from_cube(self, g, views)
            methods.pop(ALL, None)
            if several:
                methods.update(multi.update(self, name, f, old, new, several))
                methods.pop(ALL, None)
            else:
                self._drag = None
            builders.forget_stale(self)
            self._recent = [name] + [g for g in self._recent if g != name]
            if self._idle is not None:
                self._idle.cancel()
                self._idle = None
            if self.active and not self._closed:
                self._idle = self._pool.after(IDLE_SECONDS, self._speculate)
                if self._closed:  # closed meanwhile (close runs on another thread)
                    self._idle.cancel()
            changed = {v: self._view_data(v) for v in fl.views}
            self._answered = time.perf_counter()
            return Update(changed, methods, self._answered - t0)

    def _cube(self, g: str, view: str) -> Cube | None:
        if view == ALL:
            return self._s.all_cubes.get(g)
        return self.store.cubes.get((g, view))

    # --- background: conditional cubes ------------------------------------------------

    def _drop_reserved(self, name: str, token: int) -> None:
        """The process's budget took the room of a conditional cube (engine/memory.py)."""
        builders.drop_reserved(self, name, token)

    def _speculate(self) -> None:
        """After a pause, on the pool's timer thread (engine/builders.py)."""
        builders.speculate(self)

    # --- helpers (the methods, builders and queries read the session through them) ----

    def _others(self, view: str) -> tuple[str, ...]:
        """Active filters that apply to `view` (its own brush never does; every one
        applies to ALL)."""
        return self._filters_of(view)[0]

    def _filters_of(self, view: str) -> tuple[tuple[str, ...], np.uint64]:
        """`_others(view)` and their bits (`_need`), kept per set of active filters: an
        update asks for them a few dozen times (~2 us each, computed)."""
        key = (tuple(self.active), view)
        hit = self._others_of.get(key)
        if hit is None:
            others = tuple(g for g in self.active if view == ALL or view in self._applies[g])
            if len(self._others_of) >= 4096:  # many filters, set in many orders
                self._others_of.clear()
            hit = self._others_of[key] = (others, np.uint64(sum(1 << self._fi[g] for g in others)))
        return hit

    def _vl(self, view: str) -> ViewLayout:
        return self._s.all if view == ALL else self.layout.view(view)

    def _others_key(self, name: str) -> tuple:
        return tuple((g, s.tests) for g, s in self.active.items() if g != name)

    def _need(self, view: str) -> np.uint64:
        return self._filters_of(view)[1]

    def _needs(self, views: list[str]) -> np.ndarray:
        out = np.zeros(len(self._vindex), np.uint64)
        for v in views:
            out[self._vindex[v]] = self._need(v)
        return out

    def _vi(self, views: list[str]) -> np.ndarray:
        return np.array([self._vindex[v] for v in views], np.int64)

    def _view_index(self, name: str) -> int:
        if name not in self._vindex or name == ALL:
            msg = f"unknown view {name!r}; views: {', '.join(self._vindex)}"
            raise InteractionError(msg)
        return self._vindex[name]

    def _view_data(self, name: str) -> ViewData:
        v, need = self.layout.view(name), self._need(name)
        if not need:  # no active filter applies to it: its base result, kept per store
            return self._s.base_view(name, lambda: self._data(v, self._s.base, need))
        return self._data(v, self.agg, need)

    def _data(self, v: ViewLayout, agg: Aggregates, need: np.uint64) -> ViewData:
        """A view's bars as shown (engine/stats.py) from `agg`; an order statistic whose
        blocks hold several keys reads the values of one or two blocks per bar from the
        rows passing `need`."""
        dim = self.layout.dims[v.mdim] if v.cells else None

        def gather(wanted, offs, kranges):
            return queries.gather(self, v, need, wanted, offs, kranges)

        return stats.view_data(v, agg, dim, gather)

    def _filter(self, name: str, kinds: tuple[str, ...] | None):
        return find_filter(self._filters, name, kinds)

    def _interval(self, d: int, bounds: tuple) -> Test:
        """Dim d's test of a checked brush's bounds (numbers; times as UTC microseconds)."""
        return self._decided(interval_test(self.layout.dims[d], d, *bounds, values=self._s.values[d],
                                           edges=self._s.edges[d]))

    def _decided(self, test: Test) -> Test:
        """An interval test with the fine edge buckets its bounds decide whole taken by key
        (`within_buckets`), where the dim's copies tell each bucket's values."""
        if test.elo < 0 and test.ehi < 0:
            return test
        value_range = self.reads.value_range(test.dim)
        return test if value_range is None else within_buckets(test, value_range)
