"""Lazy answers for what the capture did not prepare (PredTrace's idea, DESIGN.md): an
interaction the spec did not declare is answered correctly, on Spark, instead of refused.

The top of every session's stack: `Dashboard.session()` wraps the engine's session
(engine/session.py) in a `LazySession`, for the Python API, the server, the widget and
the bench alike, so that each answers the same message the same way. It passes every
interaction the engine can answer to it (under any memory budget), and says it can
answer the rest (`Capability.LAZY`). What it cannot answer is answered by
pushing the predicates down to the source: the current filters plus the new one, as
Spark SQL (`brushfire.sql`, the semantics the engine answers with), run by Spark over
the source as capture reads it (`capture.analyze.analyze_source`). That covers:

- a brush or selection on a view no crossfilter group declares a brush for (it filters
  the other views of its groups, or every other view when it is in none);
- a filter on any column of the source (`filter`: no view needs to show it; it filters
  every view);
- a filter whose dims the memory budget did not keep, combined with others (declared
  semantics);
- highlighting between views no `highlight` pairs (every other view by default);
- details with columns the spec does not list, or of bars whose rows were not indexed,
  or under lazy filters; forward lineage of views whose bars per row were not kept.

Views no lazy filter applies to stay the engine's; the others are recomputed on Spark
(all of them in one job, with the selected rows) after every change that touches them.
Every Spark job of a session runs in a job group of its own, so the next interaction
cancels it (`interrupt`, called by the server when a new filter message arrives); the
views it was computing are then stale and recomputed by the next answer. Replies say
what was answered lazily, why and how long it took (`LazyUpdate`).

The Spark session is the process's (started on first use, `capture.spark.get_spark`),
one `SparkSource` per dashboard (brushfire/spark_source.py: where the queries this
module writes run), whose table Spark caches (memory, then disk) once the first lazy
answer has read it. rids on Spark are row positions in the source's partition order,
as capture numbers them (checked against the store's shards).
"""

from __future__ import annotations

import functools
import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from brushfire import sql
from brushfire import values as V
from brushfire.engine.api import (
    BrushRequest,
    Capability,
    ClearRequest,
    LazyUpdate,
    ParameterRequest,
    SelectRequest,
    Update,
    ViewData,
    brush_request,
)
from brushfire.engine.session import Session
from brushfire.errors import InteractionError, NotCapturedError
from brushfire.lazy_queries import LazyQueries
from brushfire.selection import COLUMN, did_you_mean, state_json
from brushfire.spark_source import Cancelled, SparkSource
from brushfire.spec import aggregates
from brushfire.spec import models as m
from brushfire.views import filter_sql, view_type

# --- the session ------------------------------------------------------------------------


@dataclass
class _Lazy:
    """A filter the engine does not hold: its predicate, and how it was given."""

    pred: str
    given: object
    applies_to: tuple[str, ...]  # the views it filters
    reason: str
    retry: Callable[[], Update] | None = None  # a declared filter the engine refused, set again


class LazySession(LazyQueries):
    """A session answering what the engine can, and the rest lazily on Spark."""

    @property
    def capabilities(self) -> frozenset[Capability]:
        """Everything, the engine's ROWS and FORWARD included, but no ROWS while a filter is
        answered on Spark: the engine's rids behind the selection would not apply it (an
        export then pages through details, which do)."""
        return frozenset(Capability) - ({Capability.ROWS} if self.lazy else set())

    def __init__(self, inner: Session, source: SparkSource) -> None:
        """`inner`: the engine's session, with the spec's parameter defaults applied."""
        self.inner, self.source = inner, source
        self.plan, self.store = inner.plan, inner.store
        self.spec: m.DashboardSpec = inner.plan.dashboard
        self.lazy: dict[str, _Lazy] = {}
        self.order: list[str] = list(inner.filters)  # filter names, first given first (defaults)
        self.current: dict[str, ViewData] = {}  # views computed on Spark, under the lazy filters
        self.stale: set[str] = set()
        self._selected: int | None = None
        self._group: str | None = None  # the job group of the Spark job running now
        self._cancelled: set[str] = set()  # job groups `interrupt` cancelled
        self._bars = None

    # --- interactions ----------------------------------------------------------------

    # The Python API (brush, select, set_parameter, clear) checks what it is given: a name
    # that takes no such filter gets the engine's error, and the engine's Python API checks
    # the rest; `apply_*`, of a request checked by its message (brushfire/requests.py),
    # checks nothing again and hands the engine the request.

    def brush(self, view: str, interval, y=None) -> Update:
        if not self._takes(view, ("interval", "rect")):
            return self.inner.brush(view, interval, y)  # the engine's error says what it takes
        r = brush_request(self.plan.dashboard.view(view), interval, y, f"brush on view {view!r}: ")
        return self._brush(r, lambda: self.inner.brush(view, interval, y))

    def apply_brush(self, r: BrushRequest) -> Update:
        return self._brush(r, lambda: self.inner.apply_brush(r))

    def _brush(self, r: BrushRequest, engine: Callable[[], Update]) -> Update:
        v = self.spec.view(r.view)
        if self.plan.has_filter(r.view):  # declared: the engine's, unless it refuses
            return self._engine(r.view, engine, lambda: view_type(v).brush_sql(
                v, r.bounds, r.y_bounds, sql.SPARK), (r.interval, r.y))
        # (the view type's brush_sql refuses a missing or extra y)
        pred = view_type(v).brush_sql(v, r.bounds, r.y_bounds, sql.SPARK)
        return self._set_lazy(r.view, pred, (r.interval, r.y), self._brush_targets(r.view),
                              f"no crossfilter group declares a brush on {r.view!r}")

    def select(self, view: str, values: list) -> Update:
        if not self._takes(view, ("points",)):
            return self.inner.select(view, values)  # the engine's error
        return self._select(SelectRequest(view, values), lambda: self.inner.select(view, values))

    def apply_select(self, r: SelectRequest) -> Update:
        return self._select(r, lambda: self.inner.apply_select(r))

    def _select(self, r: SelectRequest, engine: Callable[[], Update]) -> Update:
        v = self.spec.view(r.view)

        def pred() -> str:
            return sql.select_sql(v, r.values, self._bars_of().tops.get(r.view), sql.SPARK)

        if self.plan.has_filter(r.view):  # declared: the engine's, unless it refuses
            return self._engine(r.view, engine, pred, list(r.values))
        return self._set_lazy(r.view, pred(), list(r.values), self._brush_targets(r.view),
                              f"no crossfilter group declares a brush on {r.view!r}")

    def _takes(self, name: str, kinds: tuple[str, ...]) -> bool:
        """Whether view `name` takes a brush of `kinds`: declared so, or undeclared and of
        such a view type (answered lazily)."""
        f, v = self._declared(name), self._find(name)
        if f is not None:
            return f.kind in kinds
        return v is not None and m.brush_of(v) in kinds

    def set_parameter(self, name: str, value) -> Update:
        f = self._declared(name)
        if f is None or not f.kind.startswith("param"):
            return self.inner.set_parameter(name, value)  # the engine's error
        if value is None:
            return self.clear(name)
        return self._engine(name, lambda: self.inner.set_parameter(name, value), lambda: sql.parameter_sql(
            self.spec.parameter(name), value, sql.SPARK), value)

    def apply_parameter(self, r: ParameterRequest) -> Update:
        if r.value is None:
            return self.apply_clear(ClearRequest(r.name))
        return self._engine(r.name, lambda: self.inner.apply_parameter(r), lambda: sql.parameter_sql(
            self.spec.parameter(r.name), r.value, sql.SPARK), r.value)

    def filter_column(self, column: str, interval=None, values: list | None = None,
                      where: str | None = None) -> Update:
        """Filter the rows on any column of the source: `lo <= column <= hi`, or its value
        in `values`; applies to every view. Always answered lazily. `where`: the part of a
        message it is (a `filters` entry, `filters.column:<name>`), which its errors name."""
        at, path = (f"{where}: ", where) if where else ("", column)  # (path: of its bounds' errors)
        if (interval is None) == (values is None):
            msg = "a filter takes an interval [lo, hi] or a list of values"
            raise InteractionError(msg)
        self.check_column(column, where or "filter.column")  # what can be checked, before Spark starts
        if values is not None:
            if not isinstance(values, (list, tuple)):
                msg = f"{at}values is a list, got {values!r}"
                raise InteractionError(msg)
            bad = [x for x in values if x is not None and not isinstance(x, (str, int, float))]
            if bad:
                msg = f"{at}values are strings, numbers or booleans, got {V.show(values)}"
                raise InteractionError(msg)
        else:
            lo, hi = sql.pair(interval)
        known = self.source.known_columns()
        kind = (known or {}).get(column)
        if kind is None:
            self.source.start()  # a JSON source's names, or a derived column's kind: Spark's
            kind = self.source.columns.get(column)
            if kind is None:
                msg = (f"{where or 'filter.column'}: no column {column!r} in the source; columns: "
                       f"{', '.join(sorted(self.source.columns))}")
                raise InteractionError(msg)
        if values is not None:
            plain = [x for x in values if x is not None]
            c = sql.ident(column, sql.SPARK)
            if kind == "temporal":  # ISO times, compared as UTC microseconds
                c = sql.time_us(column, sql.SPARK)
                plain = [_checked(V.time_bound, x, path, i, "values") for i, x in enumerate(plain)]
            elif kind == "number":
                plain = [_checked(_finite, x, path, i, "values") for i, x in enumerate(plain)]
            elif kind == "string" and any(not isinstance(x, str) for x in plain):
                msg = f"{at}column {column!r} holds strings: values {V.show(values)} must be strings"
                raise InteractionError(msg)
            elif kind not in ("string", "number", "temporal") and \
                    any(not isinstance(x, bool) for x in plain):  # (a boolean column's kind)
                msg = f"{at}column {column!r} holds {kind} values: values {V.show(values)} must be true or false"
                raise InteractionError(msg)
            parts = [f"{c} IN ({', '.join(sql.lit(x, sql.SPARK) for x in plain)})"] if plain else []
            parts += [f"{sql.ident(column, sql.SPARK)} IS NULL"] if None in values else []
            pred = " OR ".join(parts) or "FALSE"
            given = list(values)
        else:
            if kind not in ("number", "temporal"):
                msg = f"{at}column {column!r} holds {kind} values: filter it by values, not an interval"
                raise InteractionError(msg)
            bound = V.time_bound if kind == "temporal" else V.number_bound
            pred = sql.interval_sql(column, (_checked(bound, lo, path, 0), _checked(bound, hi, path, 1)),
                                    kind == "temporal", sql.SPARK)
            given = [list(interval), None]
        views = tuple(v.name for v in self.spec.views)
        return self._set_lazy(COLUMN + column, pred, given, views,
                              f"no view brushes column {column!r}")

    def clear(self, name: str | None = None) -> Update:
        return self._clear(name, self.inner.clear)

    def apply_clear(self, r: ClearRequest) -> Update:
        def engine(name: str | None) -> Update:
            if name is not None and not self.plan.has_filter(name):  # not the engine's: the
                return self.inner.clear(name)  # engine's error for an unknown name
            return self.inner.apply_clear(ClearRequest(name))

        return self._clear(r.name, engine)

    def _clear(self, name: str | None, engine: Callable[[str | None], Update]) -> Update:
        t0 = time.perf_counter()
        touched: set[str] = set()
        if name is not None and name not in self.lazy and name in self._declared_kinds \
                and not self.plan.has_filter(name):  # a brush answered lazily, not active:
            update = Update({})  # nothing to clear, as a declared brush not active
        elif name is not None and name not in self.lazy:
            update = engine(name)  # (the engine's error for an unknown name)
        else:
            names = [name] if name else list(self.lazy)
            touched = {v for n in names for v in self.lazy[n].applies_to}
            for n in names:
                del self.lazy[n]
            update = engine(None) if name is None else Update({})
        if name is None:
            self.order.clear()
        else:
            self._forget(name)
        touched |= self._promote()  # over the budget: a filter the engine refused may fit now
        for v in touched - set(update.views):
            update.views[v], update.methods[v] = self.inner.view(v), "engine"
        return self._merge(update, "", t0)

    # --- state -------------------------------------------------------------------------

    @property
    def filters(self) -> dict[str, object]:
        inner = self.inner.filters
        given = {n: self.lazy[n].given for n in self.lazy}
        return {n: (given[n] if n in given else inner[n]) for n in self.order
                if n in given or n in inner} | {n: v for n, v in inner.items() if n not in self.order}

    def check_column(self, name, where: str) -> None:
        """Raise InteractionError, before Spark starts, unless `name` is a column of the
        source (known without Spark: `SparkSource.known_columns`; of a JSON source, only
        Spark knows them)."""
        if not isinstance(name, str):
            msg = f"{where}: {V.show(name)} is not a column's name (a string)"
            raise InteractionError(msg)
        known = self.source.known_columns()
        if known is not None and name not in known:
            names = sorted(known)
            msg = (f"{where}: no column {V.show(name)} in the source; columns: {', '.join(names)}"
                   + did_you_mean(name, names))
            raise InteractionError(msg)

    @functools.cached_property
    def _declared_kinds(self) -> dict[str, str]:
        """`filter_kinds` but the active filters on columns: the spec's and plan's, fixed
        (asked twice a message: its check and its reply's filters)."""
        kinds = {v.name: m.brush_of(v) for v in self.spec.views if m.brush_of(v) != "none"}
        return kinds | {f.name: f.kind for f in self.plan.filters}

    def filter_kinds(self) -> dict[str, str]:
        """Each filter name this session takes and its kind (the protocol checks messages
        by it): the plan's filters, every brushable view (undeclared brushes are answered
        lazily) and the active filters on source columns."""
        kinds = dict(self._declared_kinds)
        for n, f in self.lazy.items():
            if n.startswith(COLUMN):
                kinds[n] = "interval" if f.given and isinstance(f.given[0], list) else "points"
        return kinds

    def views(self) -> dict[str, ViewData]:
        self._fresh()
        return {v.name: self.view(v.name) for v in self.spec.views}

    def view(self, name: str) -> ViewData:
        if name in self.current and self._lazy_for(name):
            return self.current[name]
        return self.inner.view(name)

    # --- lazy machinery ----------------------------------------------------------------

    def close(self) -> None:
        """The user left: cancel a lazy answer still running on Spark, and close the
        engine's session (its background work stops, what it built is freed)."""
        self.interrupt()
        self.inner.close()
        self.current.clear()

    def interrupt(self) -> None:
        """Cancel the Spark jobs of the lazy answer running now, if any (from any thread):
        also those it starts after this call, until it gives up (Spark cancels only the
        jobs running when asked)."""
        group = self._group
        if group is None:
            return
        self._cancelled.add(group)

        def keep_cancelling() -> None:
            while self._group == group:
                self.source.cancel(group)
                time.sleep(0.05)

        threading.Thread(target=keep_cancelling, name="brushfire-cancel", daemon=True).start()

    def progress(self) -> tuple[str, float | None] | None:
        """What a running lazy answer is doing, for `working` messages; None if nothing."""
        group = self._group
        return None if group is None else self.source.progress(group)

    def _engine(self, name: str, call: Callable[[], Update], pred, given) -> Update:
        """A declared filter: the engine's, unless it refuses (over the memory budget); then lazy,
        with the declared semantics (a brush filters the other views of its groups)."""
        try:
            update = call()
        except NotCapturedError as e:
            f = self.plan.filter(name)
            return self._set_lazy(name, pred(), given, tuple(f.filters_views), str(e),
                                  retry=call)
        self.lazy.pop(name, None)
        self._note(name)
        return self._merge(update, "")

    def _set_lazy(self, name: str, pred: str, given, views: tuple[str, ...], reason: str,
                  retry: Callable[[], Update] | None = None) -> Update:
        t0 = time.perf_counter()
        old = self.lazy.get(name)
        self.lazy[name] = _Lazy(pred, given, views, reason, retry)
        self._note(name)
        touched = set(views) | (set(old.applies_to) if old else set())
        update = Update({v: self.inner.view(v) for v in touched}, dict.fromkeys(touched, "engine"))
        try:
            return self._merge(update, reason, t0)
        except BaseException:  # Spark refused or failed: the session keeps its filters as they were
            if old is None:
                self.lazy.pop(name, None)
                self._forget(name)
            else:
                self.lazy[name] = old
            raise

    def _merge(self, update: Update, reason: str, t0: float | None = None) -> Update:
        """`update` (the engine's) with the views the lazy filters apply to recomputed on
        Spark, with the selected rows, in one job."""
        t0 = time.perf_counter() - update.seconds if t0 is None else t0
        self._selected = None
        views = [v for v in {**dict.fromkeys(update.views), **dict.fromkeys(self.stale)}
                 if self._lazy_for(v)]
        if not views and not self.lazy:
            self.current.clear()
            self.stale.clear()
            return update
        reason = reason or "; ".join(dict.fromkeys(f.reason for f in self.lazy.values()))
        out = LazyUpdate(dict(update.views), dict(update.methods), reason=reason, lazy=views)
        t1 = time.perf_counter()
        try:
            got = self._groups(views, self._where, "answering lazily", selected=True)
        except Cancelled:
            self.stale |= set(views)
            out.cancelled = True
            for v in views:
                out.views.pop(v, None)
                out.methods.pop(v, None)
        else:
            self.stale -= set(views)
            self.current.update(got)
            for v in views:
                out.views[v] = got[v]
                out.methods[v] = "lazy (Spark)"
        out.lazy_seconds = time.perf_counter() - t1
        out.seconds = time.perf_counter() - t0
        return out

    def _fresh(self) -> None:
        """Recompute views left stale by a cancelled answer."""
        if self.stale:
            self._merge(Update({}), "")

    def _groups(self, views: list[str], where, what: str, selected: bool = False) -> dict[str, ViewData]:
        """Each view's bars over the rows passing `where(view)`, and the rows passing every
        filter (`_selected`) when asked: one Spark job, one scan."""
        b = self._bars_of()
        parts = []
        for i, name in enumerate(views):
            v = self.spec.view(name)
            key = b.bar_sql[name]
            numeric = not view_type(v).value_bars
            ki = f"CAST(({key}) AS BIGINT)" if numeric else "CAST(NULL AS BIGINT)"
            ks = "CAST(NULL AS STRING)" if numeric else f"CAST(({key}) AS STRING)"
            mf = v.aggregate.field if not v.aggregate.order else None  # (statistics: below)
            x = f"CAST({sql.ident(mf, sql.SPARK)} AS DOUBLE)" if mf else None
            measure = (f"CASE WHEN isnan({x}) OR abs({x}) = CAST('Infinity' AS DOUBLE) THEN NULL "
                       f"ELSE {x} END") if x else "CAST(NULL AS DOUBLE)"
            parts.append(f"named_struct('v', {i}, 'ki', {ki}, 'ks', {ks}, 'm', {measure}, "
                         f"'r', CAST(({view_type(v).reason_sql(v, key, sql.SPARK)}) AS INT), "
                         f"'mm', {self._missing_sql(name)}, 'p', coalesce(({where(name)}), false))")
        if selected:
            parts.append(f"named_struct('v', -1, 'ki', CAST(0 AS BIGINT), 'ks', CAST(NULL AS STRING), "
                         f"'m', CAST(NULL AS DOUBLE), 'r', CAST(NULL AS INT), 'mm', 0, "
                         f"'p', coalesce(({self._where(None)}), false))")
        if not parts:
            return {}
        query = (f"SELECT v, ki, ks, r, count(1), sum(m), count(m), sum(mm) FROM (SELECT inline(array("
                 f"{', '.join(parts)})) FROM {self.source.table}) AS e WHERE p GROUP BY v, ki, ks, r")
        rows = self._spark(query, what)
        groups: dict[int, dict] = {}
        caveats: dict[int, dict[str, int]] = {}
        for r in rows:
            i, key, reason, n, total, k, missing = int(r[0]), r[1] if r[1] is not None else r[2], \
                r[3], int(r[4]), r[5], int(r[6]), int(r[7] or 0)
            g = groups.setdefault(i, {})
            if key in g:  # (a clamped edge bar's rows: two groups, with and without a reason)
                n0, s0, k0 = g[key]
                g[key] = (n0 + n, total if s0 is None else s0 if total is None else s0 + total, k0 + k)
            else:
                g[key] = (n, total, k)
            if i < 0:
                continue
            names = self.store.view(views[i]).reasons  # (as captured: no_match:<join> for null)
            cav = caveats.setdefault(i, {})
            why = names[reason] if reason is not None else "not_shown" if key is None else None
            if why is not None:
                cav[why] = cav.get(why, 0) + n
            if key is not None and missing:
                cav["measure_null"] = cav.get("measure_null", 0) + missing
        for i, name in enumerate(views):  # order statistics: a group-by of their own each
            if self.spec.view(name).aggregate.order:
                stats = self._order_statistic(name, where(name), what)
                groups[i] = {k: (*g, stats.get(k)) for k, g in groups.get(i, {}).items()}
        if selected:
            self._selected = sum(n for n, _, _ in groups.get(-1, {}).values())
        out = {}
        for i, name in enumerate(views):
            data = b.bars(name, groups.get(i, {})).data
            cav = caveats.get(i, {})
            if view_type(self.spec.view(name)).value_bars and self.spec.view(name).other \
                    and data.counts[-1]:  # (the '(other)' bar: a value '(other)' is a bar of its own)
                cav["other"] = data.counts[-1]
            data.caveats = {r: c for r, c in cav.items() if c}
            out[name] = data
        return out

    def _missing_sql(self, name: str) -> str:
        """1 for a row whose measure the view's value leaves out (null or NaN; for a sum or
        a mean ±inf too: the `measure_null` caveat), else 0."""
        agg = self.spec.view(name).aggregate
        if not agg.field or aggregates.op(agg.op).kind == "count":
            return "0"
        self.source.start()  # (the measure's type: Spark's)
        f = sql.ident(agg.field, sql.SPARK)
        missing = f"{f} IS NULL"
        if self._bars_of().measure_kind(name) == "number":
            missing += f" OR isnan(CAST({f} AS DOUBLE))"
            if not agg.order:
                missing += f" OR abs(CAST({f} AS DOUBLE)) = CAST('Infinity' AS DOUBLE)"
        return f"CASE WHEN {missing} THEN 1 ELSE 0 END"

    def _order_statistic(self, name: str, where: str, what: str) -> dict:
        """{bar key: the view's order statistic} over the rows passing `where`, as SQL's
        aggregate (sql.aggregate_sql: percentile, min, max, count(DISTINCT ...))."""
        b = self._bars_of()
        key = b.bar_sql[name]
        key = f"CAST(({key}) AS {'STRING' if view_type(self.spec.view(name)).value_bars else 'BIGINT'})"
        self.source.start()  # (the measure's type: Spark's)
        agg = self.spec.view(name).aggregate
        if aggregates.op(agg.op).takes_method:
            return self._ranked(agg, key, where, what)
        query = (f"SELECT {key}, {b.stat_sql(name)} FROM {self.source.table} "
                 f"WHERE coalesce(({where}), false) GROUP BY 1")
        return {r[0]: r[1] for r in self._spark(query, what)}

    def _ranked(self, agg: m.Aggregate, key: str, where: str, what: str) -> dict:
        """{bar key: median or quantile} as the engine gives it, to DuckDB's last bit: the
        values at the ranks `stats.ranks` takes of each bar, from Spark; a continuous one
        interpolated by the engine's kernel (Spark's `percentile` rounds otherwise), a
        discrete one the value in the field's type (Spark's `percentile_disc` gives a bigint
        as a double: 2^53 + 1 was 2^53)."""
        import numpy as np

        from brushfire.engine.stats import interpolate, ranks

        f = sql.ident(agg.field, sql.SPARK)
        x = f"CAST({f} AS DOUBLE)"
        p = sql.num(float(agg.p if agg.p is not None else aggregates.op(agg.op).p))
        if agg.method == "discrete":  # (rank max(1, n - floor(n - n p)) - 1, with doubles' rounding)
            wanted, value = f"r >= floor(n * {p}) - 1 AND r <= ceil(n * {p})", f
        else:
            wanted, value = f"r = floor((n - 1) * {p}) OR r = ceil((n - 1) * {p})", x
        values = (f"SELECT {key} AS k, {value} AS x FROM {self.source.table} WHERE coalesce(({where}), "
                  f"false) AND {x} IS NOT NULL AND NOT isnan({x})")
        ranked = (f"SELECT k, x, row_number() OVER (PARTITION BY k ORDER BY x) - 1 AS r, "
                  f"count(1) OVER (PARTITION BY k) AS n FROM ({values}) AS a")
        query = f"SELECT k, n, r, x FROM ({ranked}) AS b WHERE {wanted}"
        bars: dict = {}
        for k, n, r, v in self._spark(query, what):
            bars.setdefault(k, (int(n), {}))[1][int(r)] = v
        if not bars:
            return {}
        keys = list(bars)
        lo, hi, d = ranks(agg.op, agg.p, agg.method, np.array([bars[k][0] for k in keys]))
        if agg.method == "discrete":
            return {k: bars[k][1][i] for k, i in zip(keys, lo.tolist(), strict=True)}
        xl = np.array([bars[k][1][i] for k, i in zip(keys, lo.tolist(), strict=True)], np.float64)
        xh = np.array([bars[k][1][i] for k, i in zip(keys, hi.tolist(), strict=True)], np.float64)
        return dict(zip(keys, interpolate(xl, xh, d).tolist(), strict=True))

    def _spark(self, query: str, what: str, group: str | None = None) -> list:
        own = group is None
        group = group or self._begin()
        try:
            rows = self.source.run(group, query, what)
            if group in self._cancelled:  # finished before the cancel reached Spark
                msg = f"{what}: cancelled by the next interaction"
                raise Cancelled(msg)
            return rows
        finally:
            if own:
                self._end(group)

    def _end(self, group: str) -> None:
        self._group = None
        self._cancelled.discard(group)

    def _begin(self) -> str:
        self.source.start()
        self._group = f"brushfire-{uuid.uuid4().hex[:12]}"
        return self._group

    def _promote(self) -> set[str]:
        """Give back to the engine the declared filters it refused, now that it may take
        them (over the budget: the other filters were cleared); returns the views touched."""
        touched: set[str] = set()
        for name, f in list(self.lazy.items()):
            if f.retry is None:
                continue
            try:
                f.retry()
            except NotCapturedError:
                continue
            del self.lazy[name]
            touched |= set(f.applies_to)
        return touched

    def _where(self, view: str | None) -> str:
        """Every active filter that applies to `view` (all for None), as Spark SQL."""
        preds = []
        for name in self.order + [n for n in self.inner.filters if n not in self.order]:
            if name in self.lazy:
                f = self.lazy[name]
                if view is None or view in f.applies_to:
                    preds.append(f.pred)
            elif name in self.inner.filters and (view is None or sql.applies(self.spec, name, view)):
                preds.append(filter_sql(self.spec, name, self._given(name), self._bars_of().tops,
                                            sql.SPARK))
        return " AND ".join(f"({p})" for p in preds) or "TRUE"

    def _given(self, name: str) -> dict:
        """An engine filter as a tagged entry of a selection state (views.filter_sql takes
        those), a temporal view's bounds as UTC microseconds."""
        value = self.inner.filters[name]
        view = next((v for v in self.spec.views if v.name == name), None)
        if view is not None and view_type(view).bound(view) == "time":  # as the engine keeps them
            interval, y = value
            value = (self._times(name, interval), y)
        return state_json({name: value}, {f.name: f.kind for f in self.plan.filters})[name]

    def _lazy_for(self, view: str) -> bool:
        return any(view in f.applies_to for f in self.lazy.values())

    def _brush_targets(self, view: str) -> tuple[str, ...]:
        """The views an undeclared brush filters: the other views of its groups, else all."""
        groups = [g.views for g in self.spec.interactions.crossfilter if view in g.views]
        names = [v for g in groups for v in g] or [v.name for v in self.spec.views]
        return tuple(dict.fromkeys(v for v in names if v != view))

    def _declared(self, name: str):
        return self.plan.filter(name) if self.plan.has_filter(name) else None

    def _find(self, name: str):
        return next((v for v in self.spec.views if v.name == name), None)

    def _view(self, name: str):
        try:
            return self.spec.view(name)
        except KeyError as e:
            raise InteractionError(str(e.args[0])) from None

    def _note(self, name: str) -> None:
        if name not in self.order:
            self.order.append(name)

    def _forget(self, name: str) -> None:
        if name in self.order and name not in self.inner.filters and name not in self.lazy:
            self.order.remove(name)

    def _times(self, view: str, interval):
        """A temporal view's bounds as UTC microseconds (checked), others as given."""
        v = next((x for x in self.spec.views if x.name == view), None)
        lo, hi = sql.pair(interval)
        kind = None if v is None else view_type(v).bound(v)
        if kind is None:
            return interval
        bound = V.time_bound if kind == "time" else V.number_bound
        return (_checked(bound, lo, view, 0), _checked(bound, hi, view, 1))

    def _bars_of(self):
        """Bar numbering and bar-key SQL (Spark) of every view, as captured."""
        if self._bars is None:
            from brushfire.baselines.base import Backend

            source = self.source

            class _Keys(Backend):
                dialect = sql.SPARK

                def measure_kind(self, view):  # Spark's type of the measure (started by then)
                    return source.columns.get(self.spec.view(view).aggregate.field, "number")

                def groups(self, view, where, cursor=None):  # not used: LazySession runs SQL
                    raise NotImplementedError

                def count(self, where, cursor=None):
                    raise NotImplementedError

            self._bars = _Keys(self.spec, self.store.views)
        return self._bars


def _finite(x):
    """A number a values filter compares with: finite (V.number_bound's checks)."""
    v = V.number_bound(x)
    if v is None or not math.isfinite(v):
        msg = f"{V.show(x)} is not a finite number"
        raise InteractionError(msg)
    return v


def _checked(convert, x, where: str, i: int, key: str = "interval"):
    try:
        return convert(x)
    except InteractionError as e:
        msg = f"{where}: {key}[{i}]: {e}"
        raise InteractionError(msg) from None
