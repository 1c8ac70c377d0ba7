"""What every baseline engine shares: crossfilter state as SQL predicates, and views
rebuilt from group-by results, behind the `Session` API that `protocol.handle` calls.

A baseline answers an interaction by running each affected view's group-by with the
filters that apply to it (`brushfire.sql`); a backend (DuckDB, Spark) runs the queries.
Bars are numbered as the captured dashboard numbers them, so replies have the same
shape as Brushfire's. Highlighting is not offered (NotCapturedError).

Sessions implement `engine.api.SessionAPI`; their `store` is a `BaselineStore`: the
captured dashboard's bars, rows and parameter domains, without the lineage.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from brushfire import sql
from brushfire.engine.api import (
    BrushRequest,
    Capability,
    ClearRequest,
    DetailsPage,
    DetailsRequest,
    HighlightRequest,
    ParameterRequest,
    SelectRequest,
    Update,
    ViewData,
    brush_request,
    check_bars,
    find_filter,
)
from brushfire.errors import InteractionError, NotCapturedError
from brushfire.lineage.layout import ViewLayout
from brushfire.plan import CapturePlan, Filter
from brushfire.spec import aggregates
from brushfire.spec import models as m
from brushfire.values import datetime_micros, format_instant
from brushfire.views import brush_sql, key_sql, view_type

if TYPE_CHECKING:
    import pyarrow as pa

# bar key (None: dropped rows) -> (count, sum, non-null measures[, order statistic])
Groups = dict[object, tuple]


@dataclass
class Bars:
    """One view's group-by result mapped onto its bars."""

    data: ViewData
    total: int  # rows behind the view, dropped ones included


@dataclass(frozen=True)
class BaselineStore:
    """What a baseline keeps of a captured store (`engine.api.StoreInfo`): each view's
    bars, the number of rows, and each parameter's domain; no lineage."""

    views: list[ViewLayout]
    n_rows: int
    domains: dict[str, tuple[str, list]] = field(default_factory=dict)
    temporal: frozenset[str] = frozenset()  # the parameters over time fields

    @classmethod
    def of(cls, dash) -> BaselineStore:
        """Copied from a captured dashboard's store (which can then be freed)."""
        names = [p.name for p in dash.spec.interactions.parameters]
        return cls(list(dash.store.views), dash.store.n_rows,
                   {p: dash.store.parameter_domain(p) for p in names},
                   frozenset(p for p in names if dash.store.parameter_temporal(p)))

    def view(self, name: str) -> ViewLayout:
        return next(v for v in self.views if v.name == name)

    def parameter_domain(self, name: str) -> tuple[str, list]:
        return self.domains[name]

    def parameter_temporal(self, name: str) -> bool:
        return name in self.temporal


class Backend(ABC):
    """Runs a dashboard's SQL on one engine; shared by all sessions of a dashboard."""

    dialect: sql.Dialect = sql.DUCKDB

    def __init__(self, spec: m.DashboardSpec, layouts: list[ViewLayout]) -> None:
        self.spec = spec
        self.layouts = {v.name: v for v in layouts}
        # each categorical view's top values are its bars but '(other)' (as captured; times
        # as datetimes; a value '(other)' of the field is one of them)
        self.tops = {v.name: view_type(v).top_values(spec.view(v.name), view_type(v).sql_values(v))
                     for v in layouts if view_type(v).value_bars}
        self.keys = {v.name: _key_index(spec.view(v.name), v) for v in layouts}
        self.bar_sql = {v.name: key_sql(v, self.tops.get(v.name), self.dialect)
                        for v in spec.views}
        self._base: dict[str, Bars] | None = None

    @abstractmethod
    def groups(self, view: str, where: str, cursor=None) -> Groups:
        """{bar key: (count, sum, non-null measures, order statistic)} of `view` over rows
        passing `where` (the statistic of order-statistic views, else None)."""

    def measure_kind(self, view: str) -> str:
        """The view's measure type for `sql.aggregate_sql`: number, temporal or string."""
        return "number"

    def stat_sql(self, view: str) -> str:
        """The view's order statistic as SQL (NULL for other views)."""
        agg = self.spec.view(view).aggregate
        return sql.aggregate_sql(agg, self.measure_kind(view), self.dialect) if agg.order else "NULL"

    @abstractmethod
    def count(self, where: str, cursor=None) -> int:
        """Rows passing `where`."""

    def cursor(self):
        """A handle for one session's queries (sessions run on different threads)."""
        return None

    def bars(self, view: str, groups: Groups) -> Bars:
        layout = self.layouts[view]
        counts, sums, oks = [0] * layout.nbars, [0.0] * layout.nbars, [0] * layout.nbars
        op = aggregates.op(layout.op)
        stats: list = [op.empty] * layout.nbars  # a bar without rows: count(DISTINCT) is 0
        index = self.keys[view]
        total = 0
        for key, (n, s, k, *stat) in groups.items():
            total += n
            i = index.get(_norm_key(key))
            if i is not None:
                counts[i], sums[i], oks[i] = n, s or 0.0, k
                stats[i] = _instant(stat[0]) if stat else None
        if op.kind == "order":
            values = stats
        elif op.kind == "count":
            values = [float(n) for n in counts]
        else:
            values = [op.value(s, k) for s, k in zip(sums, oks, strict=True)]
        return Bars(ViewData(view, layout.labels, counts, values), total)

    def base(self) -> dict[str, Bars]:
        """Every view over all rows, computed once per dashboard."""
        if self._base is None:
            self._base = {v: self.bars(v, self.groups(v, "TRUE")) for v in self.layouts}
        return self._base


class SqlSession:
    """One user's filters as SQL predicates; each interaction re-runs the group-by of every
    view it affects with the filters that apply to that view."""

    engine = "sql"
    capabilities: frozenset[Capability] = frozenset()  # no lineage: no rows, forward or lazy answers

    def __init__(self, backend: Backend, plan: CapturePlan, store: BaselineStore) -> None:
        self.backend, self.plan, self.spec, self.store = backend, plan, plan.dashboard, store
        self._filters: dict[str, Filter] = {f.name: f for f in plan.filters}
        self.preds: dict[str, str] = {}
        self._given: dict[str, object] = {}
        self.current: dict[str, Bars] = dict(backend.base())
        self.cur = backend.cursor()

    def close(self) -> None:
        """Release the session's query handle (a DuckDB cursor)."""
        if self.cur is not None:  # (None: a backend without handles)
            self.cur.close()

    # --- interactions ------------------------------------------------------------------

    # The Python API (brush, select, set_parameter, clear) checks the filter's name and
    # kind, then does what `apply_*`, of a request checked by its message
    # (brushfire/requests.py), does; the SQL's own checks of values run in both.

    def brush(self, view: str, interval, y=None) -> Update:
        self._filter(view, ("interval", "rect"))
        return self.apply_brush(brush_request(self.spec.view(view), interval, y, f"brush on view {view!r}: "))

    def apply_brush(self, r: BrushRequest) -> Update:
        pred = brush_sql(self.spec.view(r.view), r.interval, r.y, self.backend.dialect)
        return self._apply(r.view, pred, (r.interval, r.y))

    def select(self, view: str, values: list) -> Update:
        self._filter(view, ("points",))
        return self.apply_select(SelectRequest(view, values))

    def apply_select(self, r: SelectRequest) -> Update:
        pred = sql.select_sql(self.spec.view(r.view), r.values, self.backend.tops[r.view],
                              self.backend.dialect)
        return self._apply(r.view, pred, list(r.values))

    def set_parameter(self, name: str, value) -> Update:
        self._filter(name, ("param_eq", "param_range"))
        p = self.spec.parameter(name)
        listed = p.multiple or p.op == "between"  # a list of values, or [lo, hi]: sql checks it
        if value is not None and not listed and (
                isinstance(value, bool) or not isinstance(value, (str, int, float))):
            msg = f"parameter {name!r} takes a string or a number, got {value!r}"
            raise InteractionError(msg)
        return self.apply_parameter(ParameterRequest(name, value))

    def apply_parameter(self, r: ParameterRequest) -> Update:
        if r.value is None:
            return self.apply_clear(ClearRequest(r.name))
        pred = sql.parameter_sql(self.spec.parameter(r.name), r.value, self.backend.dialect)
        return self._apply(r.name, pred, r.value)

    def clear(self, name: str | None = None) -> Update:
        if name:
            self._filter(name, None)
        return self.apply_clear(ClearRequest(name))

    def apply_clear(self, r: ClearRequest) -> Update:
        name = r.name
        t0 = time.perf_counter()
        names = [name] if name else list(self.preds)
        views = self._affected(names)
        for n in names:
            self.preds.pop(n, None)
            self._given.pop(n, None)
        update = self._refresh(views) if views else Update({})
        update.seconds = time.perf_counter() - t0
        return update

    @property
    def filters(self) -> dict[str, object]:
        return dict(self._given)

    def views(self) -> dict[str, ViewData]:
        return {v: b.data for v, b in self.current.items()}

    def view(self, name: str) -> ViewData:
        if name not in self.current:
            msg = f"unknown view {name!r}; views: {', '.join(self.current)}"
            raise InteractionError(msg)
        return self.current[name].data

    def count_selected(self, view: str | None = None, bars: list[int] | None = None) -> int:
        """Rows passing every filter, or behind bars of a view (`_count`)."""
        return self._count(view, self._checked_bars(view, bars))

    def _count(self, view: str | None, bars: list[int] | None) -> int:
        """`count_selected` of a checked view and bars: read off a view that every active
        filter applies to (its total includes the rows it drops), else counted."""
        if view is None and bars is None:
            for v, b in self.current.items():
                if all(sql.applies(self.spec, f, v) for f in self.preds):
                    return b.total
            return self.backend.count(sql.where_sql(self.spec, self.preds, None), self.cur)
        return self.backend.count(self._bars_where(view, bars), self.cur)

    # details and highlighting are not offered (DuckDB's session offers details)

    def details(self, view=None, bars=None, page=0, page_size=None, columns=None, order_by=None,
                descending=False) -> pa.Table:
        msg = f"details on demand is not offered by the {self.engine} baseline"
        raise NotCapturedError(msg)

    def answer_details(self, r: DetailsRequest) -> DetailsPage:
        return self.details()

    def highlight(self, source: str, bars: list[int]) -> dict[str, ViewData]:
        msg = f"linked highlighting is not offered by the {self.engine} baseline"
        raise NotCapturedError(msg)

    def answer_highlight(self, r: HighlightRequest) -> dict[str, ViewData]:
        return self.highlight(r.source, r.bars)

    # --- machinery -----------------------------------------------------------------------

    def _apply(self, name: str, pred: str, given) -> Update:
        t0 = time.perf_counter()
        self.preds[name], self._given[name] = pred, given
        update = self._refresh(self._affected([name]))
        update.seconds = time.perf_counter() - t0
        return update

    def _refresh(self, views: list[str]) -> Update:
        """Re-run the group-by of each view with the filters that apply to it."""
        for v in views:
            where = sql.where_sql(self.spec, self.preds, v)
            self.current[v] = self.backend.bars(v, self.backend.groups(v, where, self.cur))
        return Update({v: self.current[v].data for v in views}, dict.fromkeys(views, self.engine))

    def _affected(self, names: list[str]) -> list[str]:
        out: list[str] = []
        for n in names:
            out += [v for v in self._filters[n].filters_views if v not in out]
        return out

    def _checked_bars(self, view: str | None, bars) -> list[int] | None:
        """The Python API's view and its bars (without a view, bars are not read)."""
        if view is None:
            return bars
        layout = self.backend.layouts.get(view)
        if layout is None:
            msg = f"unknown view {view!r}"
            raise InteractionError(msg)
        return None if bars is None else check_bars(layout.nbars, view, bars)

    def _bars_where(self, view: str | None, bars: list[int] | None) -> str:
        """The filters and bars of a view (checked), as SQL."""
        if view is None:
            return sql.where_sql(self.spec, self.preds, None)
        layout = self.backend.layouts[view]
        bars = list(range(layout.nbars)) if bars is None else bars
        keys = {i: k for k, i in self.backend.keys[view].items()}
        wanted = ", ".join(sql.lit(keys[b], self.backend.dialect) for b in bars)
        in_bars = f"({self.backend.bar_sql[view]}) IN ({wanted})" if bars else "FALSE"
        return f"({sql.where_sql(self.spec, self.preds, view)}) AND {in_bars}"

    def _filter(self, name: str, kinds: tuple[str, ...] | None) -> Filter:
        return find_filter(self._filters, name, kinds)


class BaselineDashboard:
    """A captured dashboard's description (labels, plan, parameter values) whose sessions
    are baseline sessions: what the server needs (`session()`, `spec`, `plan`, `name`,
    `store`: a BaselineStore) without the lineage."""

    def __init__(self, dash, backend: Backend, session_class: type[SqlSession]) -> None:
        self.spec, self.plan, self.name = dash.spec, dash.plan, dash.name
        self.store = BaselineStore.of(dash)  # copied: the lineage can go
        self.backend, self.session_class = backend, session_class

    def session(self) -> SqlSession:
        from brushfire.dashboard import apply_parameter_defaults

        return apply_parameter_defaults(self.session_class(self.backend, self.plan, self.store),
                                        self.spec)

    def warm_up(self) -> float:
        t0 = time.perf_counter()
        self.backend.base()
        return time.perf_counter() - t0


def _key_index(view, layout: ViewLayout) -> dict:
    """Bar key as the view type's `key_sql` gives it -> bar number."""
    vt = view_type(view)
    return {k: i for i, k in enumerate(vt.label_keys(view, vt.sql_values(layout)))}


def _norm_key(key):
    if isinstance(key, float) and key.is_integer():
        return int(key)
    return key


def _instant(x):
    """An order statistic as the engine writes it: times as ISO text in UTC, a date as its
    midnight (values.format_instant), a decimal as its nearest double (as the engine reads
    decimals: a Decimal went out as JSON text)."""
    if isinstance(x, Decimal):
        return float(x)
    if isinstance(x, datetime):
        return (x if x.tzinfo else x.replace(tzinfo=UTC)).isoformat()
    if isinstance(x, date):
        return format_instant(datetime_micros(x))
    return x
