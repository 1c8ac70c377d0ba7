"""brushfire.sql: literals of the same value in both dialects, quoted column names, numbers
compared as Spark compares them, and the documented numeric guarantee."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pytest

from brushfire import sql
from brushfire.spec import models as m
from brushfire.views import key_sql


@pytest.mark.parametrize(("x", "text"), [
    (0.1, "0.1e0"), (-60.0, "-60.0e0"), (1e-300, "1e-300"), (17.247666666666667, "17.247666666666667e0"),
    (5, "5"), (math.inf, "CAST('Infinity' AS DOUBLE)"),
])
def test_numbers_are_double_literals(x, text):
    assert sql.num(x) == text
    if isinstance(x, float) and math.isfinite(x):
        got = duckdb.sql(f"SELECT {text}, typeof({text})").fetchall()[0]
        assert got == (x, "DOUBLE")  # not a DECIMAL, and the very same double


def test_column_names_are_quoted():
    con = duckdb.connect()
    con.execute('CREATE TABLE src AS SELECT 1.5 AS "when", \'a"b\' AS "order"')
    view = m.HistogramView(name="w", type="histogram", field="when",
                           bin=m.Bin(step=1, extent=(0, 10)))
    assert con.execute(f"SELECT {key_sql(view, None)} FROM src").fetchone() == (1,)
    assert con.execute(f"SELECT count(*) FROM src WHERE {sql.interval_sql('when', (1, 2))}").fetchone() == (1,)
    assert sql.ident('a"b') == '"a""b"' and sql.ident("a`b", sql.SPARK) == "`a``b`"


def test_float32_columns_compare_widened_to_double():
    x32 = np.float32(17.247666)
    edge = float(np.nextafter(float(x32), math.inf))
    con = duckdb.connect()
    con.execute(f"CREATE TABLE src AS SELECT CAST({float(x32)!r} AS FLOAT) AS mag")
    assert con.execute(f"SELECT count(*) FROM src WHERE mag >= {edge!r}").fetchone() == (1,)  # DuckDB's rounding
    assert con.execute(f"SELECT count(*) FROM src WHERE {sql.interval_sql('mag', (edge, None))}").fetchone() == (0,)
    assert con.execute(f"SELECT count(*) FROM src WHERE {sql.interval_sql('mag', (float(x32), None))}").fetchone() == (1,)
    p = m.Parameter(name="p", field="mag", widget="slider", op="gte")
    assert con.execute(f"SELECT count(*) FROM src WHERE {sql.parameter_sql(p, edge)}").fetchone() == (0,)


def test_a_float_categorical_keys_each_row_as_its_bar_label():
    """A row's key is its bar's `label_keys` text: -0.0 is 0.0's bar, and a float32 value
    is its bar's double (DuckDB's text of a FLOAT is its own shortest digits, '0.1')."""
    from brushfire.views import view_type

    con = duckdb.connect()
    con.execute("CREATE TABLE src AS SELECT CAST(x AS FLOAT) AS f FROM (VALUES (-0.0), (0.0), (0.1), "
                "('nan'::DOUBLE), ('-inf'::DOUBLE), (2.5), (NULL)) t(x)")
    view = m.CategoricalView(name="c", type="categorical", field="f", top=4)
    top = [0.0, float(np.float32(0.1)), math.nan, -math.inf]
    keys = view_type(view).label_keys(view, top)
    got = con.execute(f"SELECT {key_sql(view, top)} AS k, count(*) FROM src GROUP BY 1").fetchall()
    assert sorted(got, key=repr) == sorted([(keys[0], 2), (keys[1], 1), (keys[2], 1), (keys[3], 1),
                                            (sql.OTHER, 1), (None, 1)], key=repr)


def test_infinite_values_fall_in_no_bin_or_the_clamped_edges():
    con = duckdb.connect()
    con.execute("CREATE TABLE src AS SELECT * FROM (VALUES ('-inf'::DOUBLE), ('inf'::DOUBLE), (5.0)) t(x)")
    for clamp, want in ((False, [None, None, 0]), (True, [0, 9, 0])):
        b = m.Bin(step=10, extent=(0, 100), clamp=clamp)
        assert [r[0] for r in con.execute(f"SELECT {sql.bin_sql('x', b)} FROM src").fetchall()] == want


@pytest.mark.parametrize(("got", "want", "op", "count", "abs_sum", "integer", "ok"), [
    (3.0, 3, "count", 0, 0, False, True),
    (3.0, 4, "count", 0, 0, False, False),
    (10.0, 10, "sum", 3, 30, True, True),  # integer measures: exact
    (10.000000001, 10, "sum", 3, 30, True, False),
    (2.0**53 + 2, 2**53 + 1, "sum", 3, 2.0**53 + 9, True, True),  # beyond 2^53: within the bound
    (2.0**53 + 2e8, 2**53 + 1, "sum", 3, 2.0**53 + 9, True, False),
    (100.0 + 2e-8, 100.0, "sum", 10, 1e2, False, True),  # 1e-9 × Σ|x| = 1e-7
    (100.0 + 2e-7, 100.0, "sum", 10, 1e2, False, False),
    (0.0 + 5e-7, 0.0, "sum", 10, 1e3, False, True),  # cancellation: relative to Σ|x|, not the sum
    (10.0 + 5e-9, 10.0, "mean", 10, 1e2, False, True),  # mean: the sum's bound / count
    (10.0 + 5e-8, 10.0, "mean", 10, 1e2, False, False),
    (None, None, "mean", 0, 0, False, True),
    (0.0, None, "sum", 0, 0, False, False),
    (math.inf, math.inf, "sum", 2, math.inf, False, True),  # finite values summing past 1.8e308
    (math.nan, 1.0, "sum", 2, math.inf, False, False),
])
def test_value_agrees_is_the_documented_guarantee(got, want, op, count, abs_sum, integer, ok):
    assert sql.value_agrees(got, want, op, count, abs_sum, integer) is ok


def test_null_names_the_nan_category_as_in_replies():
    """A float field's NaN bar is labelled null in replies (JSON has no NaN): selecting
    null, or a dropdown set to it, finds the NaN rows, as the engine does."""
    con = duckdb.connect()
    con.execute("CREATE TABLE src AS SELECT * FROM (VALUES ('NaN'::DOUBLE), (NULL), (2.0)) t(x)")
    view = m.CategoricalView(name="c", type="categorical", field="x")
    p = m.Parameter(name="p", field="x")
    for where in (sql.select_sql(view, [None], [2.0, math.nan]), sql.select_sql(view, [math.nan], None),
                  sql.parameter_sql(p, math.nan),
                  sql.parameter_sql(m.Parameter(name="q", field="x", multiple=True), [None])):
        assert con.execute(f"SELECT count(*), count(x) FROM src WHERE {where}").fetchone() == (1, 1), where


@pytest.mark.parametrize(("column", "op", "value", "want"), [
    ("TIMESTAMP '1999-12-31 23:30:00'", "lt", "2000-01-01T00:00:00+01:00", 0),  # 23:00 UTC
    ("TIMESTAMP '1999-12-31 23:30:00'", "gte", "2000-01-01T00:00:00+01:00", 1),
    ("DATE '2000-01-01'", "lt", "2000-01-01T12:00:00Z", 1),  # a date is its midnight
    ("DATE '2000-01-01'", "gt", "1999-12-31T23:00:00-02:00", 0),  # 2000-01-01T01:00Z
    ("TIMESTAMPTZ '2000-01-01 00:30:00+00'", "lte", "2000-01-01T01:00:00+01:00", 0),
])
def test_a_time_slider_compares_its_value_as_an_instant(column, op, value, want):
    """A slider's time is an instant (an offset counts; a date is its midnight), as the
    engine and interval_sql read it; DuckDB's cast of the text to a naive TIMESTAMP drops
    the offset, and to a DATE the time of day."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"CREATE TABLE src AS SELECT {column} AS t UNION ALL SELECT NULL")
    p = m.Parameter(name="p", field="t", widget="slider", op=op)
    assert con.execute(f"SELECT count(*) FROM src WHERE {sql.parameter_sql(p, value)}").fetchone() == (want,)


def test_a_float_value_names_one_integer_category_exactly():
    """A category or dropdown value names one value of an integer column exactly, as the
    engine's choices compare (values.choice_key): 2^62 + 1 and 2^62 (or 4.611686018427388e18,
    2^62 as a double) are two choices, which a dropdown's SQL compared as doubles, and a
    float value's DOUBLE literal compared so in any SQL: both rows."""
    con = duckdb.connect()
    con.execute(f"CREATE TABLE src AS SELECT * FROM (VALUES ({2**62}), ({2**62 + 1}), (0)) t(k)")
    con.execute("CREATE TABLE f AS SELECT CAST(k AS DOUBLE) AS k FROM src")
    view = m.CategoricalView(name="c", type="categorical", field="k")
    p = m.Parameter(name="p", field="k")
    for value in (float(2**62), 2**62, 2**62 + 1):
        for where in (sql.select_sql(view, [value], [2**62, 2**62 + 1]), sql.parameter_sql(p, value)):
            assert con.execute(f"SELECT count(*) FROM src WHERE {where}").fetchone() == (1,), where
            if value != 2**62 + 1:  # doubles: 2^62 + 1 is 2^62, one value of two rows
                assert con.execute(f"SELECT count(*) FROM f WHERE {where}").fetchone() == (2,), where


def test_a_decimal_value_beyond_2_53_names_its_nearest_double():
    """A decimal column's values are the nearest doubles (docs/spec.md), as the engine reads
    them: 12345678901234567.89 is the category 12345678901234568.0, and DECIMAL(20, 0) ids
    (Spark's unsigned int64) 2^62 + 1 and 2^62 + 3 are one category with 2^62. Such a float
    value was written as the exact integer it is (for an integer column's ids) and
    compared with the decimal as it is: no row, where the engine's view and dropdown had
    them (the oracle, bench --check and lazy answers disagreed with the engine)."""
    con = duckdb.connect()
    con.execute("CREATE TABLE src AS SELECT CAST(k AS DECIMAL(22, 2)) AS k FROM (VALUES "
                f"('12345678901234567.89'), ('{2**62}'), ('{2**62 + 1}'), ('{2**62 + 3}'), ('7')) t(k)")
    view = m.CategoricalView(name="c", type="categorical", field="k", top=2)
    top = [float(2**62), 12345678901234568.0]
    for value, want in ((12345678901234568.0, 1), (float(2**62), 3), (2**62, 3)):
        for p in (m.Parameter(name="p", field="k"), m.Parameter(name="p", field="k", multiple=True)):
            where = sql.parameter_sql(p, [value] if p.multiple else value)
            assert con.execute(f"SELECT count(*) FROM src WHERE {where}").fetchone() == (want,), where
        where = sql.select_sql(view, [value], top)
        assert con.execute(f"SELECT count(*) FROM src WHERE {where}").fetchone() == (want,), where
    where = sql.select_sql(view, [sql.OTHER], top)
    assert con.execute(f"SELECT count(*) FROM src WHERE {where}").fetchone() == (1,), where
    bars = dict(con.execute(f"SELECT {key_sql(view, top)}, count(*) FROM src GROUP BY 1").fetchall())
    assert bars[str(float(2**62))] == 3 and bars[str(12345678901234568.0)] == 1, bars  # and 7: '(other)'


def test_a_column_filter_of_a_selection_state_is_its_predicate():
    """`column:<name>` entries (a `filter` message's, docs/protocol.md) in a reply's state:
    the check (bench/check.py) raised KeyError on them ('no view named column:...')."""
    from brushfire.views import filter_sql

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE TABLE src AS SELECT * FROM (VALUES ('north', 5.0, TIMESTAMP '1999-12-31 23:30:00'), "
                "(NULL, 50.0, TIMESTAMP '2000-01-01 00:30:00'), ('south', NULL, NULL)) t(region, amount, t)")
    dash = m.DashboardSpec.model_validate({
        "name": "d", "source": {"path": "x.parquet"},
        "views": [{"name": "c", "type": "categorical", "field": "region"}]})
    for entry, want in (({"values": ["north", None]}, 2), ({"values": []}, 0),
                        ({"interval": [0, 10]}, 1), ({"interval": [None, None]}, 2)):
        where = filter_sql(dash, "column:" + ("amount" if "interval" in entry else "region"), entry, {})
        assert con.execute(f"SELECT count(*) FROM src WHERE {where}").fetchone() == (want,), where
    for entry, want in (({"interval": ["2000-01-01T00:00:00+01:00", None]}, 2),
                        ({"values": ["1999-12-31T23:30:00Z"]}, 1)):
        where = filter_sql(dash, "column:t", entry, {}, times=frozenset({"t"}))
        assert con.execute(f"SELECT count(*) FROM src WHERE {where}").fetchone() == (want,), where


def test_a_float_value_beyond_an_int64_stays_a_double_literal():
    """1e300 is an integer too, of 301 digits, which Spark's SQL cannot read as a literal
    (a DECIMAL holds 38): a value beyond an int64 names a double, and no integer column
    holds it."""
    assert sql.value_lit(1e300) == "1e+300" and sql.value_lit(-2.0**64) == repr(-2.0**64)
    assert sql.value_lit(float(2**62)) == str(2**62)
    p = m.Parameter(name="p", field="k")
    assert sql.parameter_sql(p, 1e300, sql.SPARK) == "CAST(`k` AS DOUBLE) = 1e+300"


def test_other_names_the_text_other_in_a_view_without_an_other_bar():
    """'(other)' names the '(other)' bar of a view with one, and in a view without one
    (other: false) the field's text '(other)', a value like any (docs/protocol.md), as the
    engine selects it; the SQL (the oracle, lazy answers on Spark, bench --check) took it
    for every value beyond the top N there too: rows the engine did not select."""
    con = duckdb.connect()
    con.execute("CREATE TABLE src AS SELECT * FROM (VALUES ('a'), ('a'), ('(other)'), ('b'), ('c'), "
                "(NULL)) t(s)")
    top = ["a", "(other)"]
    view = m.CategoricalView(name="c", type="categorical", field="s", top=2, other=False)
    where = sql.select_sql(view, [sql.OTHER], top)
    assert con.execute(f"SELECT count(*) FROM src WHERE {where}").fetchone() == (1,), where
    where = sql.select_sql(view, ["a", sql.OTHER], top)
    assert con.execute(f"SELECT count(*) FROM src WHERE {where}").fetchone() == (3,), where
    with_other = m.CategoricalView(name="c", type="categorical", field="s", top=2)
    where = sql.select_sql(with_other, [sql.OTHER], top)
    assert con.execute(f"SELECT count(*) FROM src WHERE {where}").fetchone() == (2,), where
