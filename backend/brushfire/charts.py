"""Vega-Lite specs of a dashboard's views, built with Altair; the browser and the Jupyter
widget render them with vega-embed.

Every view reads one named dataset, `bars`: one row per bar with its geometry (`x0`/`x1`
for binned and temporal views, `label` for categorical ones, plus `y0`/`y1` for heatmaps),
`full` (the bar over all rows), `value` (the bar under the current filters) and `hl` (the
linked-highlight share, null when nothing is highlighted). Clients replace `value` and
`hl` as updates arrive; the geometry never changes. Brushes are Vega-Lite selection
parameters named `brush` (interval and rect) or `pick` (points), which clients watch and
turn into protocol messages.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import altair as alt

from brushfire.lineage.layout import ViewLayout
from brushfire.spec import models as m

FULL_COLOR = "#d5dbe3"  # all rows: a light bar behind the filtered one
VALUE_COLOR = "#4c78a8"  # rows passing the other views' filters
HIGHLIGHT_COLOR = "#f58518"  # rows behind the highlighted bars of a source view
WIDTH, HEIGHT = 360, 150


def view_spec(view: m.View, layout: ViewLayout, full: list, brush: str | None,
              width: int = WIDTH, height: int = HEIGHT) -> dict:
    """The Vega-Lite spec of one view, its `bars` dataset filled with the full-data values."""
    rows = bar_rows(view, layout, full)
    data = alt.NamedData("bars")
    title = view.title or view.name
    y_title = _measure_title(view)
    if isinstance(view, m.HeatmapView):
        chart = _heatmap(data, view, brush)
    elif isinstance(view, m.CategoricalView):
        chart = _categorical(data, view, y_title, brush)
    else:
        chart = _binned(data, view, y_title, brush)
    spec = chart.properties(title=title, width=width, height=height).to_dict()
    spec["datasets"] = {"bars": rows}
    return spec


def bar_rows(view: m.View, layout: ViewLayout, full: list) -> list[dict]:
    """One row per bar: geometry, the full-data value, and `value`/`hl` for clients to fill."""
    rows = []
    for i, (label, f) in enumerate(zip(layout.labels, full, strict=True)):
        row: dict = {"bar": i, "full": f, "value": f, "hl": None}
        if isinstance(view, m.HeatmapView):
            (row["x0"], row["x1"]), (row["y0"], row["y1"]) = label
        elif isinstance(view, m.HistogramView):
            row["x0"], row["x1"] = label
        elif isinstance(view, m.TemporalView):
            row["x0"], row["x1"] = label, _bar_end(label, view.unit)
        else:
            row["label"] = label
        rows.append(row)
    return rows


def _binned(data, view: m.HistogramView | m.TemporalView, y_title: str, brush: str | None):
    temporal = isinstance(view, m.TemporalView)
    xtype = "temporal" if temporal else "quantitative"
    # temporal bars are UTC calendar units: a utc scale shows them as captured
    scale = alt.Scale(type="utc") if temporal else alt.Scale(zero=False, nice=False)
    x = alt.X("x0", type=xtype, title=None if temporal else view.field, scale=scale)
    # y2 = 0: bars with x, x2 and y alone are drawn as horizontal ranges (Gantt bars)
    base = alt.Chart(data).encode(x=x, x2="x1", y2=alt.datum(0))
    full = base.mark_bar(color=FULL_COLOR, binSpacing=0 if temporal else 1).encode(
        y=alt.Y("full:Q", title=y_title), tooltip=_tooltip(xtype))
    if brush == "interval":
        full = full.add_params(alt.selection_interval(name="brush", encodings=["x"]))
    value = base.mark_bar(color=VALUE_COLOR, binSpacing=0 if temporal else 1).encode(
        y="value:Q", tooltip=_tooltip(xtype))
    hl = base.mark_bar(color=HIGHLIGHT_COLOR, binSpacing=0 if temporal else 1).encode(y="hl:Q")
    return alt.layer(full, value, hl)


def _categorical(data, view: m.CategoricalView, y_title: str, brush: str | None):
    x = alt.X("label:N", sort=None, title=None, axis=alt.Axis(labelAngle=-45))
    base = alt.Chart(data).encode(x=x)
    full = base.mark_bar(color=FULL_COLOR).encode(y=alt.Y("full:Q", title=y_title),
                                                  tooltip=["label:N", "value:Q", "full:Q"])
    value = base.mark_bar().encode(y="value:Q", tooltip=["label:N", "value:Q", "full:Q"])
    if brush == "points":
        pick = alt.selection_point(name="pick", fields=["label"])  # shift-click toggles
        full = full.add_params(pick)
        value = value.encode(color=alt.condition(pick, alt.value(VALUE_COLOR), alt.value("#9db4cf")))
    else:
        value = value.mark_bar(color=VALUE_COLOR)
    hl = base.mark_bar(color=HIGHLIGHT_COLOR).encode(y="hl:Q")
    return alt.layer(full, value, hl)


def _heatmap(data, view: m.HeatmapView, brush: str | None):
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("x0:Q", title=view.x.field, scale=alt.Scale(zero=False, nice=False)), x2="x1",
        y=alt.Y("y0:Q", title=view.y.field, scale=alt.Scale(zero=False, nice=False)), y2="y1",
        color=alt.Color("value:Q", title=_measure_title(view), scale=alt.Scale(scheme="blues")),
        tooltip=["x0:Q", "x1:Q", "y0:Q", "y1:Q", "value:Q", "full:Q"])
    if brush == "rect":
        chart = chart.add_params(alt.selection_interval(name="brush", encodings=["x", "y"]))
    return chart


def _tooltip(xtype: str) -> list:
    return [alt.Tooltip("x0", type=xtype, title="from"), alt.Tooltip("x1", type=xtype, title="to"),
            alt.Tooltip("value:Q", format=",.4~f"), alt.Tooltip("full:Q", format=",.4~f")]


def _measure_title(view: m.View) -> str:
    agg = view.aggregate
    return "rows" if agg.op == "count" else f"{agg.op} of {agg.field}"


def _bar_end(start: str, unit: str) -> str:
    """The end of a calendar bar starting at `start` (UTC ISO), as ISO."""
    t = datetime.fromisoformat(start)
    if unit == "month":
        end = t.replace(year=t.year + t.month // 12, month=t.month % 12 + 1)
    elif unit == "year":
        end = t.replace(year=t.year + 1)
    else:
        end = t + timedelta(**{f"{unit}s": 1})
    return end.isoformat()
