"""Vega-Lite specs of a dashboard's views, built with Altair; the browser and the Jupyter
widget render them with vega-embed.

Every view reads one named dataset, `bars`: one row per bar with its geometry (`x0`/`x1`
for binned and temporal views, `label` for categorical ones, plus `y0`/`y1` for heatmaps),
a readable `label` (the name of the bar in tooltips), `full` (the
bar over all rows), `value` (the bar under the current filters) and `hl` (the
linked-highlight share, null when nothing is highlighted). Clients replace `value` and
`hl` as updates arrive; the geometry never changes, so the position scales have fixed
domains (and so do count scales: a filtered count never exceeds the full one), and an
update re-encodes only the bars whose values changed.

Interval brushes are the Vega-Lite selection parameter `brush` (interval or rect), which
clients watch, turn into protocol messages and also set to draw a brush that came from
elsewhere. Categorical views are picked by clicking (the client handles the clicks) and
show the picked bars through the optional field `sel` (false: not picked).

Display options of the spec (`scale`, `reverse`) and layout hints for clients (`usermeta`:
the view's shape, its heatmap cells, how many rows of a long categorical to show) are
applied here; clients size the views to the page.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import altair as alt

from brushfire.lineage.layout import ViewLayout
from brushfire.spec import models as m

FULL_COLOR = "#d5dbe3"  # all rows: a light bar behind the filtered one
VALUE_COLOR = "#4c78a8"  # rows passing the other views' filters
MUTED_COLOR = "#a9bdd6"  # categorical bars outside the picked ones
HIGHLIGHT_COLOR = "#f58518"  # rows behind the highlighted bars of a source view
HEATMAP_SCHEME = "viridis"  # perceptual, readable in grey, and distinct from blank cells
WIDTH, HEIGHT = 360, 160  # defaults; the page fits each view to its card
ROW_STEP = 16  # pixels per bar of a categorical drawn as horizontal rows
MAX_COLUMNS = 24  # categoricals with more bars (or long labels) are drawn as rows
MAX_COLUMN_LABEL = 8  # characters
TOP_SHOWN = 30  # rows of a long categorical shown at first; the page offers more
OTHER = "(other)"


def view_spec(view: m.View, layout: ViewLayout, full: list, brush: str | None,
              width: int = WIDTH, height: int = HEIGHT) -> dict:
    """The Vega-Lite spec of one view, its `bars` dataset filled with the full-data values."""
    rows = bar_rows(view, layout, full)
    data = alt.NamedData("bars")
    meta: dict = {"shape": "bars", "bars": len(rows),
                  "tooltip": {"key": "cell" if isinstance(view, m.HeatmapView) else view.field,
                              "measure": _measure_title(view)},
                  "caveats": caveat_texts(view), "clamped": _clamped_bars(view, len(rows))}
    if m.is_part(view):  # brushed by the part's values (numbers), labelled by name
        meta["part"] = view.unit
    if isinstance(view, m.HeatmapView):
        chart = _heatmap(data, view, full, brush)
        meta.update(shape="cells", cells=[view.x.bin.count, view.y.bin.count])
    elif isinstance(view, m.CategoricalView):
        other = len(rows) - 1 if view.other and rows and rows[-1]["label"] == OTHER else None
        if as_rows(layout.labels):
            chart = _categorical_rows(data, view, full, other)
            meta.update(shape="rows", top=min(TOP_SHOWN, len(rows)), other=other, step=ROW_STEP)
        else:
            chart = _categorical_columns(data, view, full, other)
    else:
        chart = _binned(data, view, layout, full, brush)
    props = {"title": view.title or view.name, "width": width}
    if meta["shape"] != "rows":  # rows: one step per shown bar
        props["height"] = height
    # no per-mark ARIA texts: they are SVG-only, and Vega-Lite would format one for every
    # changed bar on every update; the page describes each view itself
    spec = chart.properties(**props).configure(aria=False).to_dict()
    spec["datasets"] = {"bars": rows}
    spec["description"] = describe_view(view, layout)
    spec["usermeta"] = {"brushfire": meta}
    return spec


def caveat_texts(view: m.View) -> dict[str, str]:
    """What each caveat of the view (engine/stats.py, docs/protocol.md) means, to follow
    "N rows": the page writes the ones that have rows under the view."""
    agg = view.aggregate
    out: dict[str, str] = {}
    if isinstance(view, m.HeatmapView):
        out["not_shown"] = (f"not shown: {view.x.field} or {view.y.field} is null or outside "
                            "the extent")
    else:
        f = view.field
        out["null"] = f"not shown: {f} is null"
    if isinstance(view, m.HistogramView):
        lo, hi = _num(view.bin.extent[0]), _num(view.bin.extent[1])
        out["below"] = f"not shown: {view.field} below {lo}"
        out["above"] = f"not shown: {view.field} above {hi}"
        out["clamped_below"] = f"in the first bar: {view.field} below {lo}"
        out["clamped_above"] = f"in the last bar: {view.field} above {hi}"
    if isinstance(view, m.CategoricalView):
        out["beyond_top"] = f"not shown: {view.field} beyond the top {view.top}"
        out["other"] = f"in {OTHER}: {view.field} beyond the top {view.top}"
    if agg.op != "count":
        out["measure_null"] = f"without a value: {agg.field} is null"
    return out


def _clamped_bars(view: m.View, n: int) -> dict[str, int]:
    """Clamped histograms: the bar holding each clamped side's rows."""
    if isinstance(view, m.HistogramView) and view.bin.clamp and n:
        return {"clamped_below": 0, "clamped_above": n - 1}
    return {}


def as_rows(labels: list) -> bool:
    """Whether a categorical view is drawn as horizontal rows: many bars or long labels."""
    return len(labels) > MAX_COLUMNS or any(len(str(x)) > MAX_COLUMN_LABEL for x in labels)


def bar_rows(view: m.View, layout: ViewLayout, full: list) -> list[dict]:
    """One row per bar: geometry, readable label, the full-data value, `value`/`hl` to fill."""
    rows = []
    n = len(layout.labels)
    for i, (label, f) in enumerate(zip(layout.labels, full, strict=True)):
        row: dict = {"bar": i, "full": f, "value": f, "hl": None}
        if isinstance(view, m.HeatmapView):
            (row["x0"], row["x1"]), (row["y0"], row["y1"]) = label
            row["label"] = (f"{view.x.field} {_range(*label[0])}, "
                            f"{view.y.field} {_range(*label[1])}")
        elif isinstance(view, m.HistogramView):
            row["x0"], row["x1"] = label
            row["label"] = _range(*label, clamped=view.bin.clamp and (i == 0, i == n - 1))
            if view.bin.clamp and i in (0, n - 1):
                row["clamp"] = None  # rows clamped into this bar (clients fill it)
        elif m.is_part(view):  # centred on the part's value: a brush over bars ends between values
            value = m.CALENDAR_PARTS[view.unit][0] + i
            row["x0"], row["x1"] = value - 0.5, value + 0.5
            row["label"] = label
        elif isinstance(view, m.TemporalView):
            row["x0"], row["x1"] = label, _bar_end(label, view.unit)
            row["label"] = _time_label(label, view.unit)
        else:
            row["label"] = label
        rows.append(row)
    return rows


def describe_view(view: m.View, layout: ViewLayout) -> str:
    """One sentence saying what the view shows, for screen readers (ARIA description)."""
    measure = _measure_title(view)
    n = len(layout.labels)
    if isinstance(view, m.HeatmapView):
        return (f"Heatmap of {measure} over {view.x.field} ({view.x.bin.count} bins from "
                f"{_num(view.x.bin.extent[0])} to {_num(view.x.bin.extent[1])}) and {view.y.field} "
                f"({view.y.bin.count} bins from {_num(view.y.bin.extent[0])} to "
                f"{_num(view.y.bin.extent[1])}); colour: {view.scale} scale.")
    if isinstance(view, m.HistogramView):
        return (f"Histogram of {measure} by {view.field}: {n} bins of {_num(view.bin.step)} "
                f"from {_num(view.bin.extent[0])} to {_num(view.bin.extent[1])}.")
    if m.is_part(view):
        return f"Bars of {measure} per {view.unit.replace('_', ' ')} of {view.field} ({n} bars, UTC)."
    if isinstance(view, m.TemporalView):
        span = f" from {_time_label(layout.labels[0], view.unit)} to " \
               f"{_time_label(layout.labels[-1], view.unit)}" if n else ""
        return f"Bars of {measure} per {view.unit} of {view.field}{span} ({n} bars)."
    return (f"Bars of {measure} for the {view.top} most frequent values of {view.field}"
            f"{', then all others' if view.other else ''} ({n} bars, most frequent first).")


def _binned(data, view: m.HistogramView | m.TemporalView, layout: ViewLayout, full: list,
            brush: str | None):
    temporal = isinstance(view, m.TemporalView) and not view.part
    xtype = "temporal" if temporal else "quantitative"
    # a fixed domain (no extents to recompute on updates): the bars' span
    # whole pixels: adjacent bars meet without anti-aliased seams
    xscale: dict = {"nice": False, "round": True, "reverse": "x" in view.reverse}
    if temporal:  # UTC calendar units: a utc scale shows them as captured
        xscale["type"] = "utc"
        if layout.labels:  # as an expression: a layered temporal literal domain is doubled
            ends = _epoch_ms(layout.labels[0]), _epoch_ms(_bar_end(layout.labels[-1], view.unit))
            xscale["domain"] = {"expr": f"[{ends[0]:.0f}, {ends[1]:.0f}]"}
    elif m.is_part(view):
        first = m.CALENDAR_PARTS[view.unit][0]
        xscale.update(zero=False, domain=[first - 0.5, first + len(layout.labels) - 0.5])
    else:
        xscale["zero"] = False
        if layout.labels:
            xscale["domain"] = [layout.labels[0][0], layout.labels[-1][1]]
    axis = alt.Axis()
    if m.is_part(view):  # a tick per part value, named (Mon, Jan, ...)
        first, names = m.CALENDAR_PARTS[view.unit]
        axis = alt.Axis(values=list(range(first, first + len(names))), labelOverlap=True,
                        labelExpr=f"{list(names)!r}[datum.value - {first}]")
    title = f"{view.unit.replace('_', ' ')} of {view.field} (UTC)" if m.is_part(view) \
        else None if temporal else view.field
    x = alt.X("x0", type=xtype, title=title, scale=alt.Scale(**xscale), axis=axis)
    y, base_y, keep = _measure(view, full, "y", _measure_title(view))
    # y2 = the baseline: bars with x, x2 and y alone are drawn as horizontal ranges
    base = alt.Chart(data).encode(x=x, x2="x1", y2=base_y, tooltip=_tooltip())
    spacing = 0 if temporal else 1
    full_layer = base.mark_bar(color=FULL_COLOR, binSpacing=spacing).encode(y=y)
    if brush == "interval":
        full_layer = full_layer.add_params(alt.selection_interval(name="brush", encodings=["x"]))
    vtype = "temporal" if _temporal_measure(full) else "quantitative"
    value = base.mark_bar(color=VALUE_COLOR, binSpacing=spacing).encode(y=alt.Y("value", type=vtype))
    hl = base.mark_bar(color=HIGHLIGHT_COLOR, binSpacing=spacing).encode(y=alt.Y("hl", type=vtype))
    layers = _kept(full_layer, value, hl, keep=keep)
    if isinstance(view, m.HistogramView) and view.bin.clamp:
        # a marker on an edge bar holding clamped rows: its tooltip says how many
        layers.append(alt.Chart(data).transform_filter("datum.clamp > 0").mark_text(
            text="◆", color="#b35806", fontSize=9, baseline="bottom", dy=-2).encode(
            x=alt.X("xm:Q"), y=alt.value(0), tooltip=_tooltip()).transform_calculate(
            xm="(datum.x0 + datum.x1) / 2"))
    return alt.layer(*layers)


def _categorical_columns(data, view: m.CategoricalView, full: list, other: int | None):
    """Up to MAX_COLUMNS short labels: vertical bars in the view's order (`sort`)."""
    x = alt.X("label:N", sort=None, title=None,
              scale=alt.Scale(reverse="x" in view.reverse),
              axis=alt.Axis(labelAngle=-45, labelLimit=80))
    clip = _dwarfing(view, full, other)
    y, base_y, keep = _measure(view, full, "y", _measure_title(view), skip=other if clip else None)
    base = alt.Chart(data).encode(x=x, y2=base_y, tooltip=_tooltip())
    layers = _kept(*_category_layers(base, y, "y", other, clip), keep=keep)
    if clip:  # the clipped '(other)' bar says how tall it is
        layers.append(alt.Chart(data).transform_filter(f"datum.bar === {other}").mark_text(
            baseline="top", dy=2, fontSize=10, color="#333").encode(
            x=x, y=alt.value(0), text=alt.Text("value:Q", format=".3~s")))
    return alt.layer(*layers)


def _categorical_rows(data, view: m.CategoricalView, full: list, other: int | None):
    """Many or long labels: horizontal rows in the view's order (`sort`), one ROW_STEP each; the page
    shows the first `top_shown` (and the '(other)' row) and offers more."""
    y = alt.Y("label:N", sort=None, title=None,
              scale=alt.Scale(reverse="x" in view.reverse, paddingInner=0.15),
              axis=alt.Axis(labelLimit=180, labelOverlap=False))
    clip = _dwarfing(view, full, other)
    x, base_x, keep = _measure(view, full, "x", _measure_title(view), reverse_key="y",
                               skip=other if clip else None)
    base = alt.Chart(data).encode(y=y, x2=base_x, tooltip=_tooltip())
    layers = _kept(*_category_layers(base, x, "x", other, clip), keep=keep)
    if clip:
        layers.append(alt.Chart(data).transform_filter(f"datum.bar === {other}").mark_text(
            align="right", dx=-3, fontSize=10, color="#333").encode(
            y=y, x=alt.value({"expr": "width"}), text=alt.Text("value:Q", format=".3~s")))
    shown = "datum.bar < top_shown" + (f" || datum.bar === {other}" if other is not None else "")
    return alt.layer(*layers).add_params(
        alt.param(name="top_shown", value=TOP_SHOWN)).transform_filter(shown)


def _dwarfing(view: m.View, full: list, other: int | None) -> bool:
    """Whether the '(other)' bar would flatten the categories' bars (on a linear or sqrt
    count scale): then the scale ends at the largest category and '(other)' is clipped,
    with its value written on it."""
    if other is None or view.scale == "log" or view.aggregate.op != "count":
        return False
    rest = [v for i, v in enumerate(full) if i != other and v is not None]
    return bool(rest) and full[other] is not None and full[other] > 1.5 * max(max(rest), 1)


def _category_layers(base, measure, channel: str, other: int | None, clip: bool):
    enc = alt.X if channel == "x" else alt.Y
    full = base.mark_bar(color=FULL_COLOR, clip=clip).encode(**{channel: measure})
    # picked bars: `sel` is false for the bars left out of a pick (absent: none is picked);
    # `cur`: the bar the keyboard is on
    color = alt.condition("datum.sel === false", alt.value(MUTED_COLOR), alt.value(VALUE_COLOR))
    cursor = alt.condition("datum.cur === true", alt.value("#1f2328"), alt.value(None))
    value = base.mark_bar(strokeWidth=1.5, clip=clip).encode(
        **{channel: enc("value:Q")}, color=color, stroke=cursor)
    if other is not None:  # '(other)' is not a category but everything else: lighter
        value = value.encode(opacity=alt.condition(f"datum.bar === {other}", alt.value(0.6),
                                                   alt.value(1)))
    hl = base.mark_bar(color=HIGHLIGHT_COLOR, clip=clip).encode(**{channel: enc("hl:Q")})
    return full, value, hl


def _heatmap(data, view: m.HeatmapView, full: list, brush: str | None):
    op = view.aggregate.op

    def position(axis: m.Axis, name: str):
        return alt.Scale(domain=list(axis.bin.extent), zero=False, nice=False, round=True,
                         reverse=name in view.reverse)

    ctype = "temporal" if _temporal_measure(full) else "quantitative"
    color_scale = alt.Scale(type=view.scale, scheme=HEATMAP_SCHEME)
    if view.scale == "log":
        color_scale = alt.Scale(type="log", scheme=HEATMAP_SCHEME, nice=False)
    # empty cells stay blank: no rows (count 0), no measure (null), or off a log scale
    blank = ("isValid(datum.value) && (isString(datum.value) || isFinite(datum.value))"
             + (" && datum.value !== 0" if op == "count" else "")
             + (" && datum.value > 0" if view.scale == "log" else ""))
    chart = alt.Chart(data).transform_filter(blank).mark_rect(strokeWidth=0).encode(
        x=alt.X("x0:Q", title=view.x.field, scale=position(view.x, "x")), x2="x1",
        y=alt.Y("y0:Q", title=view.y.field, scale=position(view.y, "y")), y2="y1",
        color=alt.Color("value", type=ctype, title=_measure_title(view), scale=color_scale,
                        legend=alt.Legend(orient="right", gradientLength=120,
                                          format="~s" if op in ("count", "sum", "distinct")
                                          else alt.Undefined)),
        tooltip=_tooltip())
    if brush == "rect":
        chart = chart.add_params(alt.selection_interval(name="brush", encodings=["x", "y"]))
    return chart


def _measure(view: m.View, full: list, channel: str, title: str, reverse_key: str = "y",
             skip: int | None = None):
    """The measure's position encoding (of `full`), its baseline and which layers' values
    the scale can show (log: positive ones). Counts get a fixed domain, [0, the largest
    full bar] (but bar `skip`), as a filtered count never exceeds the full one."""
    op, kind = view.aggregate.op, view.scale
    if _temporal_measure(full):  # min / max of times: a time axis, bars from its start
        enc = alt.X if channel == "x" else alt.Y
        scale = alt.Scale(type="utc", reverse=reverse_key in view.reverse)
        return enc("full:T", scale=scale, axis=alt.Axis(title=title)), \
            _log_baseline(channel, reverse_key in view.reverse), None
    finite = [v for i, v in enumerate(full) if i != skip and isinstance(v, (int, float))
              and math.isfinite(v)]
    # whole pixels: crisp bar ends, and a change too small to move one draws nothing
    scale: dict = {"type": kind, "reverse": reverse_key in view.reverse, "round": True}
    if op == "count" and finite:
        top = max(max(finite), 1)
        scale["domain"] = [0.5, top] if kind == "log" else [0, top]
        scale["nice"] = kind != "log"
    elif kind == "log":
        scale["nice"] = False
    if op not in ("count", "sum", "distinct"):  # means and order statistics: plain numbers
        axis = alt.Axis(title=title)
    elif kind == "log":  # decades only
        axis = alt.Axis(title=title, format="~s", tickCount=3)
    else:  # 0, 200k, 1.4M, 2B
        axis = alt.Axis(title=title, labelExpr=(
            "datum.value === 0 ? '0' : replace(format(datum.value, '~s'), 'G', 'B')"))
    enc = alt.X if channel == "x" else alt.Y
    measure = enc("full:Q", scale=alt.Scale(**scale), axis=axis)
    # no zero on a log scale: there, bars start at the plot's edge
    baseline = _log_baseline(channel, scale["reverse"]) if kind == "log" else alt.datum(0)
    keep = "datum.{f} > 0" if kind == "log" else None
    return measure, baseline, keep


def _log_baseline(channel: str, reverse: bool):
    """Pixel position of a log scale's lower end (bars grow from it)."""
    if channel == "x":
        return alt.value({"expr": "width"}) if reverse else alt.value(0)
    return alt.value(0) if reverse else alt.value({"expr": "height"})


def _kept(*layers, keep: str | None):
    """Layers restricted to the bars their scale can draw (log: positive values)."""
    if keep is None:
        return list(layers)
    return [layer.transform_filter(keep.format(f=f)) for layer, f in zip(layers, ("full", "value", "hl"), strict=True)]


def _tooltip():
    """The bar's number only: clients build the tooltip (label, value, full) when it
    shows, so an update does not format text for every changed bar (`usermeta` has the
    names to show)."""
    return alt.Tooltip("bar:N")


def _measure_title(view: m.View) -> str:
    agg = view.aggregate
    if agg.op == "count":
        return "rows"
    if agg.op == "quantile":
        p = agg.p * 100
        return f"p{p:g}{' (discrete)' if agg.method == 'discrete' else ''} of {agg.field}"
    if agg.op == "distinct":
        return f"distinct {agg.field}"
    return f"{agg.op} of {agg.field}"


def _temporal_measure(full: list) -> bool:
    """Are the values times (min / max of a timestamp: ISO text)?"""
    return any(isinstance(x, str) for x in full)


def _num(x: float) -> str:
    """A bin edge as people write it: no float noise, thousands separators."""
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:,.6g}"


def _range(lo: float, hi: float, clamped: tuple[bool, bool] | bool = False) -> str:
    below, above = clamped if clamped else (False, False)
    if below:
        return f"< {_num(hi)}"
    if above:
        return f"≥ {_num(lo)}"
    return f"{_num(lo)} – {_num(hi)}"


_TIME_FORMATS = {"minute": "%Y-%m-%d %H:%M", "hour": "%Y-%m-%d %H:00", "day": "%Y-%m-%d",
                 "week": "week of %Y-%m-%d", "month": "%Y-%m", "year": "%Y"}


def _time_label(start: str, unit: str) -> str:
    return datetime.fromisoformat(start).strftime(_TIME_FORMATS[unit])


def _epoch_ms(iso: str) -> float:
    t = datetime.fromisoformat(iso)
    if t.tzinfo is None:  # naive instants are UTC
        t = t.replace(tzinfo=UTC)
    return t.timestamp() * 1000


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
