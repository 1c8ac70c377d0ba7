"""The Vega-Lite marks that views are drawn with, built with Altair (the one module that
imports it): bars along x, categorical bars, heatmap cells, the measure's axis, and the
number and time formats of labels. Each view type (views/) picks its marks; charts.py
assembles a view's spec. The browser and the Jupyter widget render them with vega-embed.

The marks read the named dataset `bars` and the fields charts.py documents (geometry,
`label`, `full`, `value`, `hl`, `sel`, `clamp`); they apply the spec's display options
(`scale`, `reverse`). The measure's scale takes its domain from the parameter
`fit_domain` when a client sets it (scale to the selection; null: the scale of all rows),
and bars are clipped to the plot, where the bars of all rows then end.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import altair as alt

from brushfire.spec import aggregates
from brushfire.spec import models as m

FULL_COLOR = "#d5dbe3"  # all rows: a light bar behind the filtered one
VALUE_COLOR = "#4c78a8"  # rows passing the other views' filters
MUTED_COLOR = "#a9bdd6"  # categorical bars outside the picked ones
HIGHLIGHT_COLOR = "#f58518"  # rows behind the highlighted bars of a source view
HEATMAP_SCHEME = "viridis"  # perceptual, readable in grey, and distinct from blank cells
ROW_STEP = 16  # pixels per bar of a categorical drawn as horizontal rows
MAX_COLUMNS = 24  # categoricals with more bars (or long labels) are drawn as rows
MAX_COLUMN_LABEL = 8  # characters
TOP_SHOWN = 30  # rows of a long categorical shown at first; the page offers more
OTHER = "(other)"
FIT = {"expr": "fit_domain"}  # a measure scale's domain when the client sets one (charts.py)
# a colour legend's label: none where its scale has no domain (every cell blank: no rows
# selected), which Vega would label NaN
NO_NAN_LABEL = "isValid(datum.value) && isFinite(datum.value) ? datum.label : ''"


def as_rows(labels: list) -> bool:
    """Whether a categorical view is drawn as horizontal rows: many bars or long labels."""
    return len(labels) > MAX_COLUMNS or any(len(str(x)) > MAX_COLUMN_LABEL for x in labels)


def x_position(xtype: str, title: str | None, view, scale: dict, axis: dict | None = None):
    """The x encoding of a binned view's bars (`x0`): a fixed domain (no extents to
    recompute on updates), whole pixels (adjacent bars meet without anti-aliased seams)."""
    scale = {"nice": False, "round": True, "reverse": "x" in view.reverse, **scale}
    return alt.X("x0", type=xtype, title=title, scale=alt.Scale(**scale), axis=alt.Axis(**(axis or {})))


def binned(view, full: list, brush: str | None, x, spacing: int, clamp_marker: bool = False):
    """Bars from `x0` to `x1` (histograms, temporal views): the full bar, the filtered one
    and the highlighted share, and on clamped edge bars a marker."""
    data = alt.NamedData("bars")
    y, base_y, keep = _measure(view, full, "y", measure_title(view))
    # y2 = the baseline: bars with x, x2 and y alone are drawn as horizontal ranges
    base = alt.Chart(data).encode(x=x, x2="x1", y2=base_y, tooltip=_tooltip())
    full_layer = base.mark_bar(color=FULL_COLOR, binSpacing=spacing, clip=True).encode(y=y)
    if brush == "interval":
        full_layer = full_layer.add_params(alt.selection_interval(name="brush", encodings=["x"]))
    vtype = "temporal" if temporal_measure(full) else "quantitative"
    value = base.mark_bar(color=VALUE_COLOR, binSpacing=spacing, clip=True).encode(
        y=alt.Y("value", type=vtype))
    hl = base.mark_bar(color=HIGHLIGHT_COLOR, binSpacing=spacing, clip=True).encode(
        y=alt.Y("hl", type=vtype))
    layers = _kept(full_layer, value, hl, keep=keep)
    if clamp_marker:
        # a marker on an edge bar holding clamped rows: its tooltip says how many
        layers.append(alt.Chart(data).transform_filter("datum.clamp > 0").mark_text(
            text="◆", color="#b35806", fontSize=9, baseline="bottom", dy=-2).encode(
            x=alt.X("xm:Q"), y=alt.value(0), tooltip=_tooltip()).transform_calculate(
            xm="(datum.x0 + datum.x1) / 2"))
    return alt.layer(*layers)


def categorical_columns(view, full: list, other: int | None):
    """Up to MAX_COLUMNS short labels: vertical bars in the view's order (`sort`)."""
    data = alt.NamedData("bars")
    x = alt.X("label:N", sort=None, title=None,
              scale=alt.Scale(reverse="x" in view.reverse),
              axis=alt.Axis(labelAngle=-45, labelLimit=80))
    clip = dwarfing(view, full, other)
    y, base_y, keep = _measure(view, full, "y", measure_title(view), skip=other if clip else None,
                               field="pf" if clip else "full")
    base = _scaled_other(alt.Chart(data).encode(x=x, y2=base_y, tooltip=_tooltip()), other, clip)
    layers = _kept(*_category_layers(base, y, "y", other, clip, temporal_measure(full)), keep=keep)
    if clip:  # the '(other)' bar says how many rows it has selected
        layers.append(alt.Chart(data).transform_filter(f"datum.bar === {other}").mark_text(
            baseline="top", dy=2, fontSize=10, color="#333").encode(
            x=x, y=alt.value(0), text=alt.Text("value:Q", format=".3~s")))
    chart = alt.layer(*layers)
    return chart.add_params(alt.param(name="other_k", value=other_scale(full, other))) if clip else chart


def categorical_rows(view, full: list, other: int | None):
    """Many or long labels: horizontal rows in the view's order (`sort`), one ROW_STEP each; the page
    shows the first `top_shown` (and the '(other)' row) and offers more."""
    data = alt.NamedData("bars")
    y = alt.Y("label:N", sort=None, title=None,
              scale=alt.Scale(reverse="x" in view.reverse, paddingInner=0.15),
              axis=alt.Axis(labelLimit=180, labelOverlap=False))
    clip = dwarfing(view, full, other)
    x, base_x, keep = _measure(view, full, "x", measure_title(view), reverse_key="y",
                               skip=other if clip else None, field="pf" if clip else "full")
    base = _scaled_other(alt.Chart(data).encode(y=y, x2=base_x, tooltip=_tooltip()), other, clip)
    layers = _kept(*_category_layers(base, x, "x", other, clip, temporal_measure(full)), keep=keep)
    if clip:
        layers.append(alt.Chart(data).transform_filter(f"datum.bar === {other}").mark_text(
            align="right", dx=-3, fontSize=10, color="#333").encode(
            y=y, x=alt.value({"expr": "width"}), text=alt.Text("value:Q", format=".3~s")))
    shown = "datum.bar < top_shown" + (f" || datum.bar === {other}" if other is not None else "")
    params = [alt.param(name="top_shown", value=TOP_SHOWN)]
    if clip:
        params.append(alt.param(name="other_k", value=other_scale(full, other)))
    return alt.layer(*layers).add_params(*params).transform_filter(shown)


def dwarfing(view: m.View, full: list, other: int | None) -> bool:
    """Whether the '(other)' bar would flatten the categories' bars (on a linear or sqrt
    count scale): then the scale ends at the largest category (`other_top`) and '(other)'
    is drawn on a scale of its own, as long as the plot (`_scaled_other`), with its value
    written on it."""
    if other is None or view.scale == "log" or aggregates.op(view.aggregate.op).kind != "count":
        return False
    rest = [v for i, v in enumerate(full) if i != other and v is not None]
    return bool(rest) and full[other] is not None and full[other] > 1.5 * max(max(rest), 1)


def other_top(full: list, other: int) -> float:
    """The end of a dwarfed categorical's count scale: its largest category (at least 1)."""
    return max(max((v for i, v in enumerate(full) if i != other and v is not None), default=1), 1)


def other_scale(full: list, other: int) -> float:
    """The factor drawing a dwarfed '(other)' bar of all rows as long as the plot."""
    return other_top(full, other) / full[other]


def _scaled_other(base, other: int | None, clip: bool):
    """Bars drawn from `pf`, `pv`, `ph`: `full`, `value` and `hl`, except the dwarfed
    '(other)' bar's, which are scaled by the parameter `other_k` (its bar of all rows as
    long as the plot; the client rescales it with the measure), so the share of it that is
    selected or highlighted shows, rather than a bar cut off at the top."""
    if not clip:
        return base
    scaled = {f"p{f[0]}": f"isValid(datum.{f}) && datum.bar === {other} ? datum.{f} * other_k : datum.{f}"
              for f in ("full", "value", "hl")}
    return base.transform_calculate(**scaled)


def _category_layers(base, measure, channel: str, other: int | None, clip: bool, times: bool = False):
    """The bars of all rows (`measure`), of the selected rows and of the highlighted ones;
    `times`: the values are times (min / max of a timestamp), on the measure's time axis."""
    enc = alt.X if channel == "x" else alt.Y
    t = "T" if times else "Q"
    full = base.mark_bar(color=FULL_COLOR, clip=True).encode(**{channel: measure})
    # picked bars: `sel` is false for the bars left out of a pick (absent: none is picked);
    # `cur`: the bar the keyboard is on
    color = alt.condition("datum.sel === false", alt.value(MUTED_COLOR), alt.value(VALUE_COLOR))
    cursor = alt.condition("datum.cur === true", alt.value("#1f2328"), alt.value(None))
    v, h = ("pv", "ph") if clip else ("value", "hl")
    value = base.mark_bar(strokeWidth=1.5, clip=True).encode(
        **{channel: enc(f"{v}:{t}")}, color=color, stroke=cursor)
    if other is not None:  # '(other)' is not a category but everything else: lighter
        value = value.encode(opacity=alt.condition(f"datum.bar === {other}", alt.value(0.6),
                                                   alt.value(1)))
    hl = base.mark_bar(color=HIGHLIGHT_COLOR, clip=True).encode(**{channel: enc(f"{h}:{t}")})
    return full, value, hl


def heatmap(view, full: list, brush: str | None):
    data = alt.NamedData("bars")
    op = aggregates.op(view.aggregate.op)

    def position(axis: m.Axis, name: str):
        return alt.Scale(domain=list(axis.bin.extent), zero=False, nice=False, round=True,
                         reverse=axis.reverse or name in view.reverse)

    ctype = "temporal" if temporal_measure(full) else "quantitative"
    fit = {} if ctype == "temporal" else {"domainRaw": FIT}
    color_scale = alt.Scale(type=view.scale, scheme=HEATMAP_SCHEME, **fit)
    if view.scale == "log":
        color_scale = alt.Scale(type="log", scheme=HEATMAP_SCHEME, nice=False, **fit)
    # empty cells stay blank: no rows (count 0), no measure (null), or off a log scale
    blank = ("isValid(datum.value) && (isString(datum.value) || isFinite(datum.value))"
             + (" && datum.value !== 0" if op.kind == "count" else "")
             + (" && datum.value > 0" if view.scale == "log" else ""))
    chart = alt.Chart(data).transform_filter(blank).mark_rect(strokeWidth=0).encode(
        x=alt.X("x0:Q", title=view.x.field, scale=position(view.x, "x")), x2="x1",
        y=alt.Y("y0:Q", title=view.y.field, scale=position(view.y, "y")), y2="y1",
        color=alt.Color("value", type=ctype, title=measure_title(view), scale=color_scale,
                        legend=alt.Legend(orient="right", gradientLength=120,
                                          format="~s" if op.sums
                                          else alt.Undefined, labelExpr=NO_NAN_LABEL)),
        tooltip=_tooltip())
    if brush == "rect":
        chart = chart.add_params(alt.selection_interval(name="brush", encodings=["x", "y"]))
    return chart


def _measure(view: m.View, full: list, channel: str, title: str, reverse_key: str = "y",
             skip: int | None = None, field: str = "full"):
    """The measure's position encoding (of `full`), its baseline and which layers' values
    the scale can show (log: positive ones). Counts get a fixed domain, [0, the largest
    full bar] (but bar `skip`), as a filtered count never exceeds the full one."""
    op, kind = aggregates.op(view.aggregate.op), view.scale
    if temporal_measure(full):  # min / max of times: a time axis, bars from its start
        enc = alt.X if channel == "x" else alt.Y
        scale = alt.Scale(type="utc", reverse=reverse_key in view.reverse)
        return enc("full:T", scale=scale, axis=alt.Axis(title=title)), \
            _log_baseline(channel, reverse_key in view.reverse), None
    finite = [v for i, v in enumerate(full) if i != skip and isinstance(v, (int, float))
              and math.isfinite(v)]
    # whole pixels: crisp bar ends, and a change too small to move one draws nothing
    scale: dict = {"type": kind, "reverse": reverse_key in view.reverse, "round": True, "domainRaw": FIT}
    if op.kind == "count" and finite:
        top = max(max(finite), 1)
        scale["domain"] = [0.5, top] if kind == "log" else [0, top]
        scale["nice"] = kind != "log"
    elif kind == "log":
        scale["nice"] = False
    if not op.sums:  # means and order statistics: plain numbers
        axis = alt.Axis(title=title)
    elif kind == "log":  # decades only
        axis = alt.Axis(title=title, format="~s", tickCount=3)
    else:  # 0, 200k, 1.4M, 2B; whole numbers of rows even when scaled to a small selection
        axis = alt.Axis(title=title, labelExpr=(
            "datum.value === 0 ? '0' : replace(format(datum.value, '~s'), 'G', 'B')"),
            **({"tickMinStep": 1} if op.whole else {}))
    enc = alt.X if channel == "x" else alt.Y
    measure = enc(f"{field}:Q", scale=alt.Scale(**scale), axis=axis)
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


def measure_title(view: m.View) -> str:
    agg = view.aggregate
    return aggregates.op(agg.op).title(agg.field, agg.p, agg.method)


def temporal_measure(full: list) -> bool:
    """Are the values times (min / max of a timestamp: ISO text)?"""
    return any(isinstance(x, str) for x in full)


def num(x: float) -> str:
    """A bin edge as people write it: no float noise, thousands separators."""
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:,.6g}"


def range_text(lo: float, hi: float, clamped: tuple[bool, bool] | bool = False) -> str:
    below, above = clamped if clamped else (False, False)
    if below:
        return f"< {num(hi)}"
    if above:
        return f"≥ {num(lo)}"
    return f"{num(lo)} – {num(hi)}"


_TIME_FORMATS = {"minute": "%Y-%m-%d %H:%M", "hour": "%Y-%m-%d %H:00", "day": "%Y-%m-%d",
                 "week": "week of %Y-%m-%d", "month": "%Y-%m", "year": "%Y"}


def time_label(start: str, unit: str) -> str:
    return datetime.fromisoformat(start).strftime(_TIME_FORMATS[unit])


def epoch_ms(iso: str) -> float:
    t = datetime.fromisoformat(iso)
    if t.tzinfo is None:  # naive instants are UTC
        t = t.replace(tzinfo=UTC)
    return t.timestamp() * 1000


def bar_end(start: str, unit: str) -> str:
    """The end of a calendar bar starting at `start` (UTC ISO), as ISO; the last bar of
    year 9999 ends at the last instant a datetime holds (10000-01-01 is none: describing
    a view over such a date failed)."""
    t = datetime.fromisoformat(start)
    try:
        if unit == "month":
            end = t.replace(year=t.year + t.month // 12, month=t.month % 12 + 1)
        elif unit == "year":
            end = t.replace(year=t.year + 1)
        else:
            end = t + timedelta(**{f"{unit}s": 1})
    except (ValueError, OverflowError):  # past year 9999
        end = datetime.max.replace(tzinfo=t.tzinfo)
    return end.isoformat()
