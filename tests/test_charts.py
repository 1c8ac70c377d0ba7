"""brushfire.charts: the Vega-Lite spec of each view type and display option (what the
page and the widget embed), checked on the JSON; the browser tests check the drawing."""

from __future__ import annotations

import json

import pytest

from brushfire import charts, marks
from brushfire.lineage.layout import ViewLayout
from brushfire.spec import models as m
from brushfire.spec.models import DashboardSpec


def view(**kw) -> m.View:
    spec = {"name": "d", "source": {"path": "x.parquet"}, "views": [{"name": "v", **kw}]}
    return DashboardSpec.model_validate(spec).views[0]


def layout(v: m.View, labels: list) -> ViewLayout:
    return ViewLayout(v.name, v.type, v.aggregate.op, len(labels), 0, labels)


def spec_of(v: m.View, labels: list, full: list, brush: str | None = None) -> dict:
    return charts.view_spec(v, layout(v, labels), full, brush)


def layers(spec: dict) -> list[dict]:
    return spec.get("layer", [spec])


HIST = {"type": "histogram", "field": "delay", "bin": {"step": 10, "extent": [-20, 20], "clamp": True}}
HIST_LABELS = [[-20.0, -10.0], [-10.0, 0.0], [0.0, 10.0], [10.0, 20.0]]


@pytest.mark.parametrize(("kw", "labels", "want"), [
    (HIST, HIST_LABELS, ["< -10", "-10 – 0", "0 – 10", "≥ 10"]),
    ({**HIST, "bin": {"step": 0.1, "extent": [0, 0.3]}},
     [[0.0, 0.1], [0.1, 0.2], [0.2, 0.30000000000000004]], ["0 – 0.1", "0.1 – 0.2", "0.2 – 0.3"]),
    ({"type": "histogram", "field": "d", "bin": {"step": 1000, "extent": [0, 2000]}},
     [[0.0, 1000.0], [1000.0, 2000.0]], ["0 – 1,000", "1,000 – 2,000"]),
    ({"type": "temporal", "field": "t", "unit": "day"}, ["2001-01-05T00:00:00+00:00"], ["2001-01-05"]),
    ({"type": "temporal", "field": "t", "unit": "hour"}, ["2001-01-05T14:00:00"], ["2001-01-05 14:00"]),
    ({"type": "temporal", "field": "t", "unit": "month"}, ["2001-03-01T00:00:00"], ["2001-03"]),
    ({"type": "categorical", "field": "o", "top": 2}, ["ORD", "ATL", "(other)"], ["ORD", "ATL", "(other)"]),
])
def test_bars_carry_readable_labels(kw, labels, want):
    rows = charts.bar_rows(view(**kw), layout(view(**kw), labels), [1] * len(labels))
    assert [r["label"] for r in rows] == want


def test_a_histogram_has_fixed_domains_a_count_axis_and_a_brush():
    spec = spec_of(view(**HIST), HIST_LABELS, [5, 40, 3, 0], "interval")
    full, value, hl, clamp = layers(spec)
    assert full["encoding"]["x"]["scale"]["domain"] == [-20.0, 20.0]
    assert full["encoding"]["x"]["scale"]["round"] is True
    assert full["encoding"]["y"]["scale"]["domain"] == [0, 40]  # the largest full bar
    assert "format(datum.value, '~s')" in full["encoding"]["y"]["axis"]["labelExpr"]
    assert spec["params"][0]["name"] == "brush" and spec["params"][0]["select"]["type"] == "interval"
    assert full["encoding"]["tooltip"] == {"field": "bar", "type": "nominal"}  # the page writes it
    meta = spec["usermeta"]["brushfire"]
    assert meta["shape"] == "bars" and meta["bars"] == 4
    assert meta["tooltip"] == {"key": "delay", "measure": "rows"}
    # caveats: what each reason means; the clamped edge bars get a marker when they hold rows
    assert meta["caveats"]["clamped_below"] == "in the first bar: delay below -20"
    assert meta["caveats"]["null"] == "not shown: delay is null"
    assert meta["clamped"] == {"clamped_below": 0, "clamped_above": 3}
    assert {"filter": "datum.clamp > 0"} in clamp["transform"]
    rows = spec["datasets"]["bars"]
    assert "clamp" in rows[0] and "clamp" in rows[3] and "clamp" not in rows[1]
    assert spec["description"].startswith("Histogram of rows by delay: 4 bins of 10 from -20 to 20")
    json.dumps(spec)


def test_a_calendar_part_is_brushed_by_its_values_and_labelled_by_name():
    v = view(type="temporal", field="t", unit="day_of_week")
    labels = list(m.CALENDAR_PARTS["day_of_week"][1])
    spec = spec_of(v, labels, [3] * 7, "interval")
    assert spec["usermeta"]["brushfire"]["part"] == "day_of_week"  # the page sends numbers
    rows = spec["datasets"]["bars"]
    assert [(r["x0"], r["x1"], r["label"]) for r in rows][:2] == [(0.5, 1.5, "Mon"), (1.5, 2.5, "Tue")]
    x = layers(spec)[0]["encoding"]["x"]
    assert x["type"] == "quantitative" and x["scale"]["domain"] == [0.5, 7.5]
    assert x["axis"]["values"] == [1, 2, 3, 4, 5, 6, 7]
    assert x["axis"]["labelExpr"].startswith("['Mon', 'Tue',") and "[datum.value - 1]" in x["axis"]["labelExpr"]
    assert spec["params"][0]["select"]["type"] == "interval"


def test_log_and_sqrt_scales_and_reversed_axes():
    spec = spec_of(view(**HIST, scale="log", reverse=["x"]), HIST_LABELS, [5, 40, 3, 0])
    full, value, _, _ = layers(spec)
    assert full["encoding"]["y"]["scale"]["type"] == "log"
    assert full["encoding"]["y"]["scale"]["domain"] == [0.5, 40]
    assert full["encoding"]["y2"] == {"value": {"expr": "height"}}  # bars from the bottom
    assert {"filter": "datum.value > 0"} in value["transform"]  # log: no zero bars
    assert full["encoding"]["x"]["scale"]["reverse"] is True
    mean = view(**HIST, scale="sqrt", aggregate={"op": "mean", "field": "m"})
    y = layers(spec_of(mean, HIST_LABELS, [1.5, -2.0, None, 3.0]))[0]["encoding"]["y"]
    assert y["scale"]["type"] == "sqrt" and "domain" not in y["scale"]  # a mean may exceed the full bar


def test_a_heatmap_hides_empty_cells_uses_viridis_and_reverses_y():
    v = view(type="heatmap", x={"field": "c", "bin": {"step": 1, "extent": [0, 2]}},
             y={"field": "g", "bin": {"step": 1, "extent": [0, 3]}}, scale="log", reverse=["y"])
    labels = [[[x, x + 1.0], [y, y + 1.0]] for x in (0.0, 1.0) for y in (0.0, 1.0, 2.0)]
    spec = spec_of(v, labels, [0, 1, 2, 3, 4, 5], "rect")
    (chart,) = layers(spec)
    enc = chart["encoding"]
    assert enc["color"]["scale"] == {"type": "log", "scheme": "viridis", "nice": False,
                                     "domainRaw": {"expr": "fit_domain"}}
    assert enc["y"]["scale"]["reverse"] is True and enc["x"]["scale"]["round"] is True
    (blank,) = chart["transform"]
    assert "datum.value !== 0" in blank["filter"] and "datum.value > 0" in blank["filter"]
    assert chart["mark"]["strokeWidth"] == 0
    assert spec["usermeta"]["brushfire"]["cells"] == [2, 3]
    assert spec["datasets"]["bars"][1]["label"] == "c 0 – 1, g 1 – 2"


@pytest.mark.parametrize(("axes", "reversed_"), [
    ({"x": {"reverse": True}}, {"x": True, "y": False}),
    ({"y": {"reverse": True}}, {"x": False, "y": True}),
    ({"x": {"reverse": True}, "reverse": ["y"]}, {"x": True, "y": True}),
    ({}, {"x": False, "y": False}),
], ids=str)
def test_a_heatmap_axis_takes_reverse_of_its_own(axes, reversed_):
    """Image-like data (screen rows, sky coordinates) reverse one axis: `x: {reverse: true}`
    or the view's `reverse: [x]`, either."""
    x = {"field": "c", "bin": {"step": 1, "extent": [0, 2]}, **axes.get("x", {})}
    y = {"field": "g", "bin": {"step": 1, "extent": [0, 3]}, **axes.get("y", {})}
    v = view(type="heatmap", x=x, y=y, reverse=axes.get("reverse", []))
    labels = [[[a, a + 1.0], [b, b + 1.0]] for a in (0.0, 1.0) for b in (0.0, 1.0, 2.0)]
    (chart,) = layers(spec_of(v, labels, [0, 1, 2, 3, 4, 5], "rect"))
    assert {c: chart["encoding"][c]["scale"]["reverse"] for c in "xy"} == reversed_


@pytest.mark.parametrize(("labels", "shape"), [
    (["ORD", "ATL", "(other)"], "bars"),
    ([f"c{i}" for i in range(24)], "bars"),
    ([f"c{i}" for i in range(25)], "rows"),  # many bars
    (["a label longer than eight", "b"], "rows"),  # long labels
])
def test_categoricals_with_many_or_long_labels_are_rows(labels, shape):
    v = view(type="categorical", field="o", top=len(labels), other=False)
    spec = spec_of(v, labels, [10] * len(labels))
    assert spec["usermeta"]["brushfire"]["shape"] == shape
    if shape == "rows":
        assert {"name": "top_shown", "value": marks.TOP_SHOWN} in spec["params"]
        assert "height" not in spec  # one step per shown row
        assert spec["layer"][0]["encoding"]["y"]["field"] == "label"


@pytest.mark.parametrize(("kind", "channel"), [("bars", "y"), ("rows", "x"), ("cells", "color")])
def test_the_measure_scale_takes_the_domain_a_client_fits_to_the_selection(kind, channel):
    """Scale to the selection: every view has the parameter `fit_domain` (null: the scale
    of all rows), its measure's scale takes it as `domainRaw`, bars are clipped to the
    plot (the bars of all rows then end there), and `usermeta` names the channel."""
    if kind == "cells":
        v = view(type="heatmap", x={"field": "c", "bin": {"step": 1, "extent": [0, 2]}},
                 y={"field": "g", "bin": {"step": 1, "extent": [0, 1]}})
        spec = spec_of(v, [[[0.0, 1.0], [0.0, 1.0]], [[1.0, 2.0], [0.0, 1.0]]], [3, 4], "rect")
    elif kind == "rows":
        labels = [f"c{i}" for i in range(30)]
        spec = spec_of(view(type="categorical", field="o", top=30, other=False), labels, [10] * 30)
    else:
        spec = spec_of(view(**HIST), HIST_LABELS, [5, 40, 3, 0], "interval")
    assert {"name": "fit_domain", "value": None} in spec["params"]
    assert spec["usermeta"]["brushfire"]["fit"] == channel
    scales = [ly["encoding"][channel]["scale"] for ly in layers(spec)
              if channel in ly.get("encoding", {}) and "scale" in ly["encoding"][channel]]
    assert scales and all(sc["domainRaw"] == {"expr": "fit_domain"} for sc in scales)
    assert all(ly["mark"].get("clip") is True for ly in layers(spec) if ly["mark"]["type"] == "bar")
    times = ["2024-01-01T00:00:00+00:00", "2024-01-02T00:00:00+00:00", None, None]
    minimum = view(**HIST, aggregate={"op": "min", "field": "t"})
    assert spec_of(minimum, HIST_LABELS, times)["usermeta"]["brushfire"]["fit"] is None  # a time axis


def test_a_dwarfing_other_bar_is_drawn_on_its_own_scale_and_labelled():
    """The '(other)' bar of 1,400 rows beside categories of 150: the scale ends at 150,
    and '(other)' is drawn scaled by `other_k` (its bar of all rows as long as the plot),
    so the share of it that is selected shows; the client rescales it with the measure."""
    v = view(type="categorical", field="o", top=2)
    spec = spec_of(v, ["ORD", "ATL", "(other)"], [150, 100, 1400])
    full, value, hl = spec["layer"][:3]
    assert full["encoding"]["y"]["scale"]["domain"] == [0, 150]
    assert full["mark"]["clip"] is True
    assert [ly["encoding"]["y"]["field"] for ly in (full, value, hl)] == ["pf", "pv", "ph"]
    calc = {t["as"]: t["calculate"] for t in full["transform"]}
    assert calc["pv"] == "isValid(datum.value) && datum.bar === 2 ? datum.value * other_k : datum.value"
    assert {"name": "other_k", "value": 150 / 1400} in spec["params"]
    assert spec["layer"][-1]["mark"]["type"] == "text"
    meta = spec["usermeta"]["brushfire"]
    assert (meta["other"], meta["other_clipped"], meta["other_top"]) == (2, True, 150)
    calm = spec_of(v, ["ORD", "ATL", "(other)"], [150, 100, 200])
    assert calm["layer"][0]["encoding"]["y"]["scale"]["domain"] == [0, 200]
    assert len(calm["layer"]) == 3 and calm["layer"][1]["encoding"]["y"]["field"] == "value"
    assert calm["usermeta"]["brushfire"]["other_clipped"] is False


def test_categorical_columns_have_rows_for_narrow_cards():
    """On a phone 21 rotated labels crowd: a view drawn as columns also has a spec drawn
    as rows, which the page uses on a narrow card; views drawn one way only have none."""
    v = view(type="categorical", field="o", top=2)
    narrow = charts.narrow_spec(v, layout(v, ["ORD", "ATL", "(other)"]), [150, 100, 1400], "points")
    assert narrow["usermeta"]["brushfire"]["shape"] == "rows"
    assert narrow["usermeta"]["brushfire"]["other_clipped"] is True
    assert narrow["layer"][0]["encoding"]["y"]["field"] == "label"
    many = view(type="categorical", field="o", top=30, other=False)
    labels = [f"c{i}" for i in range(30)]
    assert charts.narrow_spec(many, layout(many, labels), [10] * 30, "points") is None
    hist = view(**HIST)
    assert charts.narrow_spec(hist, layout(hist, HIST_LABELS), [5, 40, 3, 0], "interval") is None


def test_order_statistics_are_plain_numbers_or_times():
    med = view(**HIST, aggregate={"op": "quantile", "field": "m", "p": 0.9})
    spec = spec_of(med, HIST_LABELS, [1.5, -2.0, None, 3.0])
    y = layers(spec)[0]["encoding"]["y"]
    assert "domain" not in y["scale"] and y["axis"]["title"] == "p90 of m"
    assert spec["usermeta"]["brushfire"]["caveats"]["measure_null"] == "without a value: m is null"
    first = view(**HIST, aggregate={"op": "min", "field": "t"})
    spec = spec_of(first, HIST_LABELS, ["2001-01-01T00:00:00+00:00", None, None, None])
    y = layers(spec)[1]["encoding"]["y"]
    assert y["type"] == "temporal"


@pytest.mark.parametrize("rows", [False, True], ids=["columns", "rows"])
def test_a_categoricals_bars_of_times_draw_the_selected_and_highlighted_times(rows):
    """A categorical view of the latest time per category (max of a timestamp, e.g. a
    joined orders.o_ts per weekday): its selected and highlighted bars are times on the
    time axis, as its bars of all rows (they were read as numbers: no selected bar was
    drawn, and a second axis said 0.000000)."""
    last = view(type="categorical", field="c", aggregate={"op": "max", "field": "t"})
    labels = [f"category-{i}" for i in range(3)] if rows else ["a", "b", "c"]
    spec = spec_of(last, labels, ["2001-01-01T00:00:00+00:00", None, "2001-03-01T00:00:00+00:00"], "points")
    channel = "x" if rows else "y"
    assert spec["usermeta"]["brushfire"]["shape"] == ("rows" if rows else "bars")
    types = [layer["encoding"][channel]["type"] for layer in layers(spec) if channel in layer.get("encoding", {})]
    assert types == ["temporal"] * 3, types


@pytest.mark.parametrize("unit", ["minute", "hour", "day", "week", "month", "year"])
def test_the_last_bar_of_year_9999_ends_at_the_last_instant(unit):
    """A date of 9999-12-31 (Spark's and Parquet's largest) is a bar whose end, 10000-01-01,
    no datetime holds: describing the view failed with 'year 10000 is out of range'."""
    start = {"week": "9999-12-27T00:00:00+00:00", "month": "9999-12-01T00:00:00+00:00",
             "year": "9999-01-01T00:00:00+00:00"}.get(unit, "9999-12-31T23:59:00+00:00")
    v = view(type="temporal", field="t", unit=unit)
    spec = spec_of(v, ["0001-01-01T00:00:00+00:00", start], [1, 2])
    rows = spec["datasets"]["bars"]
    assert [r["x1"] for r in rows][-1] == "9999-12-31T23:59:59.999999+00:00"
    assert rows[0]["x1"] == marks.bar_end("0001-01-01T00:00:00+00:00", unit) > rows[0]["x0"]
