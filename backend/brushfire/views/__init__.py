"""View types: one module each (histogram, temporal, categorical, heatmap), every one a
`ViewType` (views/base.py: the contract), registered here. A new view type is a module
here, its spec model in spec/models.py (the `View` union) and a line in `VIEW_TYPES`.

Also here, the functions over a dashboard's views that dispatch to their types: bins
chosen at capture, and the SQL predicate of a selection entry.
"""

from __future__ import annotations

import math
from typing import Any

from brushfire import selection, sql
from brushfire.bins import nice_bin, step_bin
from brushfire.errors import CaptureError
from brushfire.limits import MAX_BARS
from brushfire.spec import models as m
from brushfire.views.base import BinnedAxis, FieldNeed, ViewType
from brushfire.views.categorical import Categorical
from brushfire.views.heatmap import Heatmap
from brushfire.views.histogram import Histogram
from brushfire.views.temporal import Temporal

VIEW_TYPES: dict[str, ViewType] = {t.name: t for t in (Histogram(), Temporal(), Categorical(), Heatmap())}

__all__ = ["VIEW_TYPES", "BinnedAxis", "FieldNeed", "ViewType", "bins_record", "brush_sql",
           "filter_sql", "key_sql", "maxbins_fields", "resolve_bins", "source_fields",
           "view_type", "with_recorded_bins"]


def view_type(view: Any) -> ViewType:
    """The type of a view: its spec model, or anything with the spec's `type` tag (a
    `ViewLayout`, a view's description)."""
    return VIEW_TYPES[view.type]


def source_fields(view: Any) -> list[str]:
    """Source columns a view reads: its key field(s) and its measure."""
    agg = view.aggregate.field
    return view_type(view).key_fields(view) + ([agg] if agg else [])


# --- bins chosen at capture (`maxbins`: bins.nice_bin) ------------------------------


def maxbins_fields(dash: m.DashboardSpec) -> list[str]:
    """Fields with a bin fitted to the data (`maxbins`, or a step alone): capture finds
    their finite min and max."""
    out = [a.field for v in dash.views for a in view_type(v).axes(v) if not a.bin.resolved]
    return list(dict.fromkeys(out))


def resolve_bins(dash: m.DashboardSpec, extents: dict[str, tuple]) -> m.DashboardSpec:
    """`dash` with each bin fitted to the data replaced by the step and extent `nice_bin`
    (maxbins) or `step_bin` (a step alone) chooses for its field's finite (min, max) in
    `extents`. More than MAX_BARS bars (or a heatmap's cells) is a SpecError at the spec's
    key of a spec read from a file, as `brushfire validate` says it from Parquet statistics
    (else a CaptureError)."""
    from brushfire.spec.checks import check_data_bars

    if getattr(dash, "_filename", "<spec>") != "<spec>":  # (read from a file)
        check_data_bars(dash, {f: (float(lo), float(hi)) for f, (lo, hi) in extents.items()
                               if isinstance(lo, (int, float)) and isinstance(hi, (int, float))
                               and not isinstance(lo, bool)}, exact=True)

    def fit(v, i: int, a: BinnedAxis) -> m.Bin:
        b = a.bin
        if b.resolved:
            return b
        lo, hi = extents.get(a.field, (None, None))
        if b.maxbins is not None:
            return nice_bin(lo, hi, b.maxbins, b.clamp)
        return step_bin(lo, hi, b.step, b.clamp, f"view {v.name}, {'.'.join(map(str, a.path))}")

    out = _replace_bins(dash, fit)
    for v in out.views:
        counts = [a.bin.count for a in view_type(v).axes(v)]
        if len(counts) > 1 and math.prod(counts) > MAX_BARS:
            msg = (f"view {v.name}: its bins fitted to the data make {' × '.join(f'{n:,}' for n in counts)}"
                   f" = {math.prod(counts):,} cells; a {v.type} has at most {MAX_BARS:,}: give larger steps")
            raise CaptureError(msg)
    return out


def bins_record(view) -> list[list[float]]:
    """A view's bins as [step, start, stop] each (kept in the layout, so that a dashboard
    loaded from the cache sees the bins capture chose)."""
    return [[a.bin.step, a.bin.extent[0], a.bin.extent[1]] for a in view_type(view).axes(view)
            if a.bin.resolved]


def with_recorded_bins(dash: m.DashboardSpec, recorded: dict[str, list[list[float]]]) -> m.DashboardSpec:
    """`dash` with each `maxbins` bin replaced by the one `bins_record` kept for its view."""
    def fit(v, i: int, a: BinnedAxis) -> m.Bin:
        if a.bin.resolved:
            return a.bin
        step, lo, hi = recorded[v.name][i]
        return m.Bin(step=step, extent=(lo, hi), clamp=a.bin.clamp)

    return _replace_bins(dash, fit)


def _replace_bins(dash: m.DashboardSpec, fit) -> m.DashboardSpec:
    """`dash` with the bin of every axis a (i-th of view v) as fit(v, i, a); the same
    object when no bin changes."""
    views = []
    for v in dash.views:
        axes = view_type(v).axes(v)
        new = [fit(v, i, a) for i, a in enumerate(axes)]
        if any(b is not a.bin for b, a in zip(new, axes, strict=True)):
            v = view_type(v).with_bins(v, new)
        views.append(v)
    if all(a is b for a, b in zip(views, dash.views, strict=True)):
        return dash
    return dash.model_copy(update={"views": views})


# --- SQL (sql.py's dialects) --------------------------------------------------------


def key_sql(view: Any, top: list | None, d: sql.Dialect = sql.DUCKDB) -> str:
    """The key of a row's bar in `view` (its type's `key_sql`)."""
    return view_type(view).key_sql(view, top, d)


def brush_sql(view: Any, interval, y=None, d: sql.Dialect = sql.DUCKDB) -> str:
    """The rows an interval (with y: rect) brush on `view` selects (its type's `brush_sql`)."""
    return view_type(view).brush_sql(view, interval, y, d)


def filter_sql(dash: m.DashboardSpec, name: str, entry, tops: dict[str, list],
               d: sql.Dialect = sql.DUCKDB, times: frozenset[str] = frozenset()) -> str:
    """The predicate of one entry of a selection state (brushfire/selection.py: a tagged
    filter, or its JSON); `tops`: the categorical views' top values; `times`: the source's
    time columns (a `column:<name>` filter's values on one are instants)."""
    f = selection.parse_filter(entry, f"filters.{name}")
    if name.startswith(selection.COLUMN):  # a `filter` on a source column: every view
        column = name[len(selection.COLUMN):]
        if isinstance(f, selection.ValuesFilter):
            return sql.column_values_sql(column, f.values, column in times, d)
        if isinstance(f, selection.IntervalFilter):
            temporal = column in times or any(isinstance(x, str) for x in f.interval)
            return sql.interval_sql(column, f.interval, temporal, d)
    if isinstance(f, selection.ParameterFilter):
        return sql.parameter_sql(dash.parameter(name), f.parameter, d)
    view = dash.view(name)
    if isinstance(f, selection.ValuesFilter):
        return sql.select_sql(view, f.values, tops.get(name), d)
    if isinstance(f, selection.RectFilter):
        return brush_sql(view, f.rect.x, f.rect.y, d)
    return brush_sql(view, f.interval, None, d)
