"""bins.py: `maxbins` resolved into a nice step and extent, a step alone into an extent (pure,
table-tested), through views."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brushfire import bins, views
from brushfire.errors import CaptureError
from brushfire.spec import models as m
from brushfire.spec import parse_dashboard


@pytest.mark.parametrize(("lo", "hi", "maxbins", "step", "extent"), [
    (0, 100, 10, 10, (0, 100)),  # 100 lands in the last, closed bar
    (0.3, 99.1, 20, 5, (0, 100)),
    (0.3, 99.1, 10, 10, (0, 100)),
    (1, 99, 9, 20, (0, 100)),  # 10 would need 10 bars
    (-3, 7, 2, 10, (-10, 10)),  # a range across 0 takes two whole steps
    (-7, -3, 4, 1, (-7, -3)),
    (5, 5, 10, 0.5, (5, 5.5)),  # one value: span |min|, one bar
    (0, 0, 10, 0.1, (0, 0.1)),  # zero: span 1
    (None, None, 10, 0.1, (0, 0.1)),  # no finite value
    (0.1, 0.3, 10, 0.02, (0.1, 0.3)),
    (-2.5, 17.25, 20, 2, (-4, 18)),  # step 1 would take 21 bars: [-3, 18]
    (3, 1e17, 65534, 2e12, (0, 1e17)),
    (1003, 1004, 3, 0.5, (1003, 1004)),
], ids=str)
def test_nice_bin(lo, hi, maxbins, step, extent) -> None:
    b = bins.nice_bin(lo, hi, maxbins)
    assert (b.step, b.extent) == (step, extent)
    assert b.count <= maxbins


def _is_nice(step: float) -> bool:
    k = math.floor(math.log10(step))
    return any(float(mult * Fraction(10) ** j) == step for mult in bins.NICE_STEPS for j in (k - 1, k, k + 1))


FINITE = st.floats(-1e12, 1e12, allow_nan=False).map(lambda x: round(x, 3))


@settings(max_examples=300, deadline=None)
@given(a=FINITE, b=FINITE, maxbins=st.integers(2, 200))
def test_nice_bin_holds_every_value_in_at_most_maxbins_bars(a, b, maxbins) -> None:
    lo, hi = min(a, b), max(a, b)
    got = bins.nice_bin(lo, hi, maxbins, clamp=True)
    assert got.clamp and _is_nice(got.step)
    assert got.extent[0] <= lo and hi <= got.extent[1]
    assert 1 <= got.count <= maxbins
    # the smallest such step: the next smaller nice step needs more bars (or cannot cover
    # the span in maxbins steps)
    k = math.floor(math.log10(got.step))
    smaller = max(s for mult in bins.NICE_STEPS for j in (k - 1, k)
                  if (s := mult * Fraction(10) ** j) < Fraction(got.step) * Fraction(999, 1000))
    span = (Fraction(hi) - Fraction(lo)) or abs(Fraction(lo)) or Fraction(1)
    n = max(math.ceil(Fraction(hi) / smaller) - math.floor(Fraction(lo) / smaller), 1)
    assert n > maxbins or smaller * maxbins < span


@pytest.mark.parametrize(("lo", "hi"), [(5e-324, 5e-324), (0.0, 5e-324), (-5e-324, 1e-323), (1e-322, 1e-322)])
def test_subnormal_values_get_a_step_a_double_holds(lo, hi) -> None:
    # the smallest nice step of a span of a few subnormals is below the least double: it
    # rounded to 0, and the Bin made of it failed validation (a crash of the capture)
    got = bins.nice_bin(lo, hi, 10)
    assert got.step > 0 and got.extent[0] <= lo and hi <= got.extent[1]
    assert 1 <= got.count <= 10


def test_values_at_the_edge_of_doubles_ask_for_a_step() -> None:
    with pytest.raises(CaptureError, match="give step and extent instead"):
        bins.nice_bin(-1.7e308, 1.7e308, 10)


@pytest.mark.parametrize(("lo", "hi", "step", "extent"), [
    (0.3, 99.1, 10, (0, 100)),
    (0, 100, 10, (0, 100)),  # 100 lands in the last, closed bar
    (-3, 7, 2.5, (-5, 7.5)),
    (-7, -3, 1, (-7, -3)),
    (5, 5, 10, (0, 10)),  # one value: one step
    (-5, -5, 10, (-10, 0)),
    (20, 20, 10, (20, 30)),  # on a step: the bar starting there
    (None, None, 2.5, (0, 2.5)),  # no finite value
    (1003, 1004, 0.5, (1003, 1004)),
], ids=str)
def test_step_bin(lo, hi, step, extent) -> None:
    assert bins.step_bin(lo, hi, step) == m.Bin(step=step, extent=extent)


@settings(max_examples=300, deadline=None)
@given(a=FINITE, b=FINITE, step=st.sampled_from([0.1, 0.25, 1, 7.5, 1e3, 3e7, 1e10]))
def test_step_bin_holds_every_value_in_whole_steps(a, b, step) -> None:
    lo, hi = min(a, b), max(a, b)
    s = Fraction(step)
    first, last = math.floor(Fraction(lo) / s), max(math.ceil(Fraction(hi) / s), math.floor(Fraction(lo) / s) + 1)
    if last - first > 65_534:
        with pytest.raises(CaptureError, match="a view has at most 65,534: give a larger step"):
            bins.step_bin(lo, hi, step, what="view h, bin")
        return
    got = bins.step_bin(lo, hi, step, clamp=True)
    assert got.clamp and got.step == step
    assert got.extent[0] <= lo and hi <= got.extent[1]
    # the bounds are whole steps (each rounded to a double once) ...
    assert got.extent == (float(first * s), float(last * s))
    # ... and no more of them than the values need (the bars as the double arithmetic
    # counts them: one more where the bounds' rounding widens the extent)
    assert last - first <= got.count <= last - first + 1


def test_a_step_too_fine_for_the_data_is_refused_at_capture() -> None:
    with pytest.raises(CaptureError, match=r"view h, bin: step 0.001 over the data's values from 0 to "
                                           r"1e\+06 makes 1,000,000,000 bars"):
        bins.step_bin(0, 1e6, 0.001, what="view h, bin")
    with pytest.raises(CaptureError, match="give the extent too"):
        bins.step_bin(0, 1.7e308, 1e308)
    heat = parse_dashboard({"name": "d", "source": {"path": "x.parquet"}, "views": [
        {"name": "heat", "type": "heatmap", "x": {"field": "x", "bin": {"step": 1}},
         "y": {"field": "k", "bin": {"step": 1}}}]})
    views.resolve_bins(heat, {"x": (0, 200), "k": (0, 300)})  # 60,000 cells
    with pytest.raises(CaptureError, match="view heat: its bins fitted to the data make 300 × 300 = "
                                           "90,000 cells; a heatmap has at most 65,534"):
        views.resolve_bins(heat, {"x": (0, 300), "k": (0, 300)})


@pytest.mark.parametrize(("top", "other", "sort", "labels"), [
    (3, True, "count", ["b", "a", "c", "(other)"]),  # by count, ties by value
    (3, True, "name", ["a", "b", "c", "(other)"]),  # the same top 3, by name
    (2, False, "name", ["a", "b"]),
    (9, False, "name", ["B", "a", "b", "c", "d"]),  # code point order, as SQL's ORDER BY
], ids=str)
def test_top_labels(top, other, sort, labels) -> None:
    values = ["a", "b", "c", "d", "B"]
    counts = [5, 9, 5, 1, 2]
    assert bins.top_labels(values, counts, top, other, sort) == labels


SPEC = {
    "name": "t", "source": {"path": "t.parquet"},
    "views": [
        {"name": "h", "type": "histogram", "field": "x", "bin": {"maxbins": 10}},
        {"name": "fixed", "type": "histogram", "field": "x", "bin": {"step": 1, "extent": [0, 5]}},
        {"name": "heat", "type": "heatmap", "x": {"field": "k", "bin": {"maxbins": 4, "clamp": True}},
         "y": {"field": "x", "bin": {"step": 2, "extent": [0, 10]}}},
        {"name": "c", "type": "categorical", "field": "s"},
        {"name": "stepped", "type": "histogram", "field": "w", "bin": {"step": 0.25}},
    ],
}


def test_resolve_bins_replaces_only_bins_fitted_to_the_data() -> None:
    dash = parse_dashboard(SPEC)
    assert views.maxbins_fields(dash) == ["x", "k", "w"]
    got = views.resolve_bins(dash, {"x": (0.5, 42.0), "k": (-3.0, 30.0), "w": (-0.1, 0.6)})
    assert got.view("stepped").bin == m.Bin(step=0.25, extent=(-0.25, 0.75))
    assert got.view("h").bin == m.Bin(step=5, extent=(0, 45))
    assert got.view("heat").x.bin == m.Bin(step=10, extent=(-10, 30), clamp=True)
    assert got.view("fixed") is dash.view("fixed") and got.view("c") is dash.view("c")
    assert got.view("heat").y.bin is dash.view("heat").y.bin
    assert views.maxbins_fields(got) == []
    assert views.resolve_bins(got, {}) is got  # nothing left to choose
    # what the layout records brings the same bins back to the spec as written
    recorded = {v.name: views.bins_record(v) for v in got.views}
    assert views.with_recorded_bins(dash, recorded) == got


@pytest.mark.parametrize("sort", ["count", "name"])
@pytest.mark.parametrize("top", [1, 2, 3, 4])
def test_top_values_with_nan_are_ordered_as_sql_orders_them(sort, top):
    """NaN is a category of its own; SQL orders it after every number (DuckDB, Spark), so
    ties at the top-N cut and `sort: name` put it where `sql.top_sql` does."""
    import duckdb
    import numpy as np

    from brushfire import sql

    values, counts = [math.nan, 2.5, -1.0, 7.0], np.array([3, 3, 5, 3])
    con = duckdb.connect()
    rows = [(x,) for x, c in zip(values, counts, strict=True) for _ in range(c)]
    con.execute("CREATE TABLE src (x DOUBLE)")
    con.executemany("INSERT INTO src VALUES (?)", rows)
    view = m.CategoricalView(name="c", type="categorical", field="x", top=top, sort=sort)
    want = [r[0] for r in con.execute(sql.top_sql(view)).fetchall()]
    got = bins.top_labels(values, counts, top, False, sort)
    assert [("nan" if x != x else x) for x in got] == [("nan" if x != x else x) for x in want]


def test_bars_the_data_decides_at_capture_are_an_error_at_the_specs_key(tmp_path) -> None:
    """What validate says from Parquet statistics, capture says from the data when validate
    could not know (a derived field, static filters, a CSV or JSON source): the file, line
    and key, and a step or unit that fits; a newcomer's day bars over 1565-1821 too."""
    from datetime import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire.capture.local import capture_table
    from brushfire.errors import SpecError
    from brushfire.plan import plan_capture
    from brushfire.spec.loader import load_dashboard

    rows = pa.table({"when": pa.array([datetime(1565, 1, 1), datetime(1821, 1, 1)], pa.timestamp("us", "UTC")),
                     "x": [0.0, 1.0]})
    pq.write_table(rows, tmp_path / "rows.parquet")
    spec = tmp_path / "wheat.yaml"
    spec.write_text("name: wheat\nsource:\n  path: rows.parquet\n  filters: [x >= 0]\nviews:\n"
                    "  - {name: days, type: temporal, field: when, unit: day}\n"
                    "  - {name: h, type: histogram, field: x, bin: {step: 0.001}}\n")
    dash = load_dashboard(spec)
    with pytest.raises(SpecError) as info:
        views.resolve_bins(dash, {"x": (0.0, 1e6)})
    assert str(info.value) == f"""\
{spec}:7: views[1].bin.step: step 0.001 makes 1,000,000,000 bars from 0 to 1e+06 (the smallest and largest x in the source); a view has at most 65,534 bars
    hint: use a step of at least 15.3, or give an extent and clamp: true"""
    # (a Parquet file without statistics, as a CSV or JSON source: validate cannot count)
    pq.write_table(rows, tmp_path / "rows.parquet", write_statistics=False)
    spec.write_text(spec.read_text().replace("step: 0.001", "step: 1, extent: [0, 2]")
                    .replace("  filters: [x >= 0]\n", ""))
    dash = load_dashboard(spec)
    with pytest.raises(SpecError) as info:
        capture_table(plan_capture(dash), rows, tmp_path / "cache")
    assert str(info.value) == f"""\
{spec}:5: views[0].unit: 93,503 day bars from 1565-01-01 00:00 to 1821-01-01 00:00 (the first and last when in the source); a view has at most 65,534 bars
    hint: use unit: week (13,359 bars)"""


def test_labels_of_an_extent_wider_than_the_largest_double_are_finite():
    """[-1e308, 1e308] in steps of 1e307: 20 bars whose edges are doubles, though 20 × 1e307
    is not (the page's description of such a view failed on an infinite edge)."""
    b = m.Bin(step=1e307, extent=(-1e308, 1e308))
    labels = bins.hist_labels(b)
    assert len(labels) == 20 and labels[0] == [-1e308, -9e307] and labels[-1][1] == 1e308
    assert all(math.isfinite(x) for pair in labels for x in pair)
    assert labels[10][0] == 0.0 and all(a < b for a, b in labels)
