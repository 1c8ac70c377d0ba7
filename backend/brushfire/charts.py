"""A view's Vega-Lite spec, as the browser and the Jupyter widget render it.

Every view reads one named dataset, `bars`: one row per bar with its geometry (`x0`/`x1`
for binned and temporal views, plus `y0`/`y1` for heatmaps), a readable `label` (the
name of the bar in tooltips; a categorical bar's value), `full` (the bar over all rows),
`value` (the bar under the current filters) and `hl` (the linked-highlight share, null
when nothing is highlighted). Clients replace `value` and `hl` as updates arrive; the
geometry never changes, so the position scales have fixed domains (and so do count
scales: a filtered count never exceeds the full one), and an update re-encodes only the
bars whose values changed.

Interval brushes are the Vega-Lite selection parameter `brush` (interval or rect), which
clients watch, turn into protocol messages and also set to draw a brush that came from
elsewhere. Categorical views are picked by clicking (the client handles the clicks) and
show the picked bars through the optional field `sel` (false: not picked).

Each view type (views/) draws its chart from the marks of brushfire/marks.py and says
its bars' geometry, labels, caveats and description; this module puts them together with
the layout hints for clients (`usermeta`: the view's shape, its heatmap cells, how many
rows of a long categorical to show, `fit`: the channel of the measure's scale). Clients
size the views to the page, and may scale the measure to the selection by setting the
parameter `fit_domain` to a domain (null: the scale of all rows).
"""

from __future__ import annotations

from brushfire import marks
from brushfire.lineage.layout import ViewLayout
from brushfire.spec import aggregates
from brushfire.spec import models as m
from brushfire.views import view_type

WIDTH, HEIGHT = 360, 160  # defaults; the page fits each view to its card
FIT_CHANNEL = {"bars": "y", "rows": "x", "cells": "color"}  # the measure's channel, by shape
# what the bars' colours mean, for the page's legend
COLORS = {"full": marks.FULL_COLOR, "value": marks.VALUE_COLOR, "muted": marks.MUTED_COLOR,
          "highlight": marks.HIGHLIGHT_COLOR}


def view_spec(view: m.View, layout: ViewLayout, full: list, brush: str | None,
              width: int = WIDTH, height: int = HEIGHT) -> dict:
    """The Vega-Lite spec of one view, its `bars` dataset filled with the full-data values."""
    vt = view_type(view)
    rows = bar_rows(view, layout, full)
    return _spec(view, layout, full, rows, vt.chart(view, layout, full, brush, rows), width, height)


def narrow_spec(view: m.View, layout: ViewLayout, full: list, brush: str | None,
                width: int = WIDTH, height: int = HEIGHT) -> dict | None:
    """The spec of the view for a narrow card (a phone), if it draws differently there
    (`ViewType.narrow_chart`); clients switch by the card's width."""
    vt = view_type(view)
    rows = bar_rows(view, layout, full)
    drawn = vt.narrow_chart(view, layout, full, brush, rows)
    return None if drawn is None else _spec(view, layout, full, rows, drawn, width, height)


def _spec(view: m.View, layout: ViewLayout, full: list, rows: list[dict], drawn: tuple,
          width: int, height: int) -> dict:
    vt = view_type(view)
    meta: dict = {"shape": "bars", "bars": len(rows),
                  "tooltip": {"key": vt.tooltip_key(view), "measure": marks.measure_title(view)},
                  "caveats": caveat_texts(view), "clamped": {}}
    chart, more = drawn
    meta.update(more)
    props = {"title": view.title or view.name, "width": width}
    if meta["shape"] != "rows":  # rows: one step per shown bar
        props["height"] = height
    # no per-mark ARIA texts: they are SVG-only, and Vega-Lite would format one for every
    # changed bar on every update; the page describes each view itself
    spec = chart.properties(**props).configure(aria=False).to_dict()
    # scale to the selection: the client sets the measure scale's domain (null: all rows)
    meta["fit"] = None if marks.temporal_measure(full) else FIT_CHANNEL[meta["shape"]]
    spec["params"] = [*spec.get("params", []), {"name": "fit_domain", "value": None}]
    spec["datasets"] = {"bars": rows}
    spec["description"] = describe_view(view, layout)
    spec["usermeta"] = {"brushfire": meta}
    return spec


def caveat_texts(view: m.View) -> dict[str, str]:
    """What each caveat of the view (engine/stats.py, docs/protocol.md) means, to follow
    "N rows": the page writes the ones that have rows under the view."""
    out = view_type(view).caveats(view)
    for f in view_type(view).key_fields(view):  # (lineage/store.py, name_unmatched_rows)
        join, dot, column = f.partition(".")
        if dot:
            out[f"no_match:{join}"] = f"not shown: no row of join {join} matches ({f} is null)"
    agg = view.aggregate
    if aggregates.op(agg.op).kind != "count":
        out["measure_null"] = f"without a value: {agg.field} is null"
    return out


def bar_rows(view: m.View, layout: ViewLayout, full: list) -> list[dict]:
    """One row per bar: geometry, readable label, the full-data value, `value`/`hl` to fill."""
    vt, n = view_type(view), len(layout.labels)
    return [{"bar": i, "full": f, "value": f, "hl": None, **vt.bar_row(view, i, label, n)}
            for i, (label, f) in enumerate(zip(layout.labels, full, strict=True))]


def describe_view(view: m.View, layout: ViewLayout) -> str:
    """One sentence saying what the view shows, for screen readers (ARIA description)."""
    return view_type(view).describe(view, layout, marks.measure_title(view))
