"""The test suite's oracle (tests/oracle.py) itself: it must say what docs/spec.md says, or
it reports false mismatches."""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq

from brushfire.spec.loader import parse_dashboard
from oracle import Oracle


def test_sums_and_means_skip_nan_and_infinite_measures(tmp_path):
    """docs/spec.md: null and NaN measures are skipped, and for sum and mean ±inf too."""
    path = tmp_path / "m.parquet"
    pq.write_table(pa.table({"k": [1.0, 1.0, 1.0, 1.0, 2.0, 2.0],
                             "m": [3.0, math.nan, math.inf, None, -math.inf, 4.5]}), path)
    spec = parse_dashboard({
        "name": "nan_measures", "source": {"path": str(path)},
        "views": [{"name": "s", "type": "histogram", "field": "k", "bin": {"step": 1, "extent": [0, 3]},
                   "aggregate": {"op": "sum", "field": "m"}}]})
    oracle = Oracle(spec)
    bars = oracle.view("s")
    assert {b: v[:3] for b, v in bars.items()} == {1: (4, 3.0, 3.0), 2: (2, 4.5, 4.5)}
    assert oracle.agrees("s", 1, 3.0, bars[1][1]) and not oracle.agrees("s", 1, 3.5, bars[1][1])


def test_categorical_views_over_times_and_decimals_and_decimal_sums_beyond_duckdbs_range(tmp_path):
    """A categorical view's top values from DuckDB are dates and Decimals: the caveats
    compare a time's bars as instants and a decimal's as the nearest double (as the
    engine reads decimals), and a DECIMAL(38) sum beyond DuckDB's decimals is summed in
    doubles (it failed with an overflow); a table without rows still has its types."""
    from datetime import date
    from decimal import Decimal

    path = tmp_path / "t.parquet"
    big = Decimal("9" * 37)
    pq.write_table(pa.table({
        "d": pa.array([date(2020, 1, 1), date(2020, 1, 1), date(1969, 3, 1), None]),
        "m": pa.array([Decimal("1.10"), Decimal("1.10"), Decimal("2.20"), None], pa.decimal128(10, 2)),
        "big": pa.array([big, big, big, big], pa.decimal128(38, 0))}), path)
    views = [{"name": "d", "type": "categorical", "field": "d", "top": 1},
             {"name": "m", "type": "categorical", "field": "m", "top": 1, "other": False},
             {"name": "s", "type": "categorical", "field": "d", "top": 1,
              "aggregate": {"op": "sum", "field": "big"}}]
    d = {"name": "times_decimals", "source": {"path": str(path)}, "views": views}
    oracle = Oracle(parse_dashboard(d))
    assert oracle.caveats("d") == {"null": 1, "other": 1}
    assert oracle.caveats("m") == {"null": 1, "beyond_top": 1}
    assert {k: v[0] for k, v in oracle.view("m").items()} == {"1.1": 2}
    assert oracle.view("s")["(other)"][1] == float(big)
    pq.write_table(pa.table({"d": pa.array([], pa.date32()), "big": pa.array([], pa.decimal128(38, 0))}), path)
    empty = Oracle(parse_dashboard({**d, "views": views[2:]}))
    assert empty.kind("d") == "temporal" and empty.view("s") == {}


def test_an_engines_boolean_and_time_categorical_bars_match_the_oracles(tmp_path):
    """A categorical view over a (joined) boolean, date or timestamp: the engine's bars
    (True, '2020-01-01T00:00:00+00:00') are the oracle's ('true', the instant's UTC
    microseconds); assert_view_matches reported every such view as a mismatch."""
    from datetime import date, datetime

    from brushfire import Dashboard
    from brushfire.capture.local import capture_tables
    from brushfire.plan import plan_capture
    from oracle import assert_view_matches
    from star_schemas import CONFIG

    fact = pa.table({"k": pa.array([1, 2, 1, None, 9, 3], pa.int64()), "x": pa.array(range(6), pa.int64())})
    dim = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "b": pa.array([True, None, False]),
                    "d": pa.array([date(2020, 1, 1), None, date(2021, 2, 3)], pa.date32()),
                    "t": pa.array([datetime(2020, 1, 1, 5), datetime(2020, 1, 1, 6), None], pa.timestamp("us"))})
    pq.write_table(fact, tmp_path / "f.parquet")
    pq.write_table(dim, tmp_path / "d.parquet")
    views = [{"name": n, "type": "categorical", "field": f"d.{n}"} for n in ("b", "d", "t")]
    spec = parse_dashboard({"name": "o", "source": {"path": str(tmp_path / "f.parquet"), "joins": [
        {"name": "d", "path": str(tmp_path / "d.parquet"), "key": "id", "on": "k"}]}, "views": views,
        "interactions": {"crossfilter": [{"views": ["b", "d", "t"]}]}})
    store = capture_tables(plan_capture(spec), {"a": fact}, tmp_path / "cache", CONFIG, None, {"d": dim})
    session = Dashboard(spec, plan_capture(spec), store).session()
    oracle = Oracle(spec)
    for v in spec.views:
        assert_view_matches(session.view(v.name), oracle.view(v.name), "count", v.type, "base", oracle)
    session.select("b", [False])
    oracle.select("b", [False])
    for v in spec.views:
        assert_view_matches(session.view(v.name), oracle.view(v.name), "count", v.type, "selected", oracle)


def test_an_engines_calendar_part_bars_match_the_oracles(tmp_path):
    """A temporal view over a calendar part (hour_of_day, day_of_week, month_of_year):
    the engine labels its bars '0' ... '23', 'Mon' ... 'Sun', 'Jan' ... 'Dec' and the
    oracle keys them by bar number; assert_view_matches took the labels for times and
    reported every such view as a mismatch."""
    from datetime import datetime

    from brushfire import Dashboard
    from brushfire.capture.local import capture_table
    from brushfire.plan import plan_capture
    from oracle import assert_view_matches

    table = pa.table({"t": pa.array([datetime(2024, 1, 1, 5), datetime(2024, 3, 2, 23), None,
                                     datetime(1969, 12, 31, 5)], pa.timestamp("us"))})
    pq.write_table(table, tmp_path / "t.parquet")
    views = [{"name": u, "type": "temporal", "field": "t", "unit": u}
             for u in ("hour_of_day", "day_of_week", "month_of_year")]
    spec = parse_dashboard({"name": "parts", "source": {"path": str(tmp_path / "t.parquet")}, "views": views,
                            "interactions": {"crossfilter": [{"views": [v["name"] for v in views]}]}})
    plan = plan_capture(spec)
    session = Dashboard(spec, plan, capture_table(plan, table, tmp_path / "cache")).session()
    oracle = Oracle(spec)
    assert oracle.view("hour_of_day")[5][0] == 2
    for v in spec.views:
        assert_view_matches(session.view(v.name), oracle.view(v.name), "count", v.type, "base", oracle)
    session.brush("hour_of_day", [5, 5])
    oracle.brush("hour_of_day", [5, 5])
    for v in spec.views:
        assert_view_matches(session.view(v.name), oracle.view(v.name), "count", v.type, "brushed", oracle)
