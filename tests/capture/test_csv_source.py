"""A CSV source as people write them, captured on Spark with no reader options: its first
line names the columns (spaces and symbols included), numbers and dates are typed, a bin
of a step alone gets its extent from the data; answers equal pandas' over the same file."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from brushfire import Dashboard
from brushfire.errors import SpecError

pytestmark = pytest.mark.spark

SPEC = """\
name: sales
source: {{path: {path}}}
views:
  - {{name: amount, type: histogram, field: "amount ($)", bin: {{step: 10}}}}
  - {{name: region, type: categorical, field: {region}}}
  - {{name: when, type: temporal, field: "order date", unit: month}}
interactions:
  crossfilter:
    - views: [amount, region, when]
"""


@pytest.fixture(scope="module")
def sales(tmp_path_factory):
    rng = np.random.default_rng(5)
    n = 700
    frame = pd.DataFrame({
        "order date": pd.to_datetime("2024-01-01") + pd.to_timedelta(rng.integers(0, 366, n), unit="D"),
        "Region": rng.choice(["North", "South", "East", "West"], n, p=[0.4, 0.3, 0.2, 0.1]),
        "amount ($)": rng.lognormal(3, 1, n).round(2),
        "qty": rng.integers(1, 9, n),
    })
    path = tmp_path_factory.mktemp("csv") / "sales.csv"
    frame.to_csv(path, index=False, date_format="%Y-%m-%d")
    return path, frame


def test_a_csv_with_a_header_is_captured_with_its_names_and_types(spark, sales, tmp_path):
    path, frame = sales
    spec = tmp_path / "sales.yaml"
    spec.write_text(SPEC.format(path=path, region="Region"))
    dash = Dashboard.open(str(spec), spark=spark, cache_dir=tmp_path / "cache")
    amount = frame["amount ($)"]
    assert dash.spec.view("amount").bin.extent == (math.floor(amount.min() / 10) * 10,
                                                    math.ceil(amount.max() / 10) * 10)
    s = dash.engine_session()
    counts = dict(zip(s.view("region").labels, s.view("region").counts, strict=True))
    assert counts == {**frame["Region"].value_counts().to_dict(), "(other)": 0}
    assert len(s.view("when").labels) == 12 and sum(s.view("when").counts) == len(frame)
    s.brush("amount", (0, 50))
    inside = frame[(amount >= 0) & (amount <= 50)]
    assert s.count_selected() == len(inside)
    counts = dict(zip(s.view("region").labels, s.view("region").counts, strict=True))
    assert counts == {**inside["Region"].value_counts().to_dict(), "(other)": 0}


def test_a_misspelt_csv_column_is_named_among_the_files_own(spark, sales, tmp_path):
    path, _ = sales
    spec = tmp_path / "sales.yaml"
    spec.write_text(SPEC.format(path=path, region="Regoin"))
    with pytest.raises(SpecError) as info:
        Dashboard.open(str(spec), spark=spark, cache_dir=tmp_path / "cache")
    text = str(info.value)
    assert "views[1].field: column 'Regoin' is not in the source" in text, text
    assert "Region" in text and "__bf_" not in text, text


def test_a_misspelt_csv_column_is_refused_before_spark_starts(sales, tmp_path, monkeypatch):
    """`brushfire validate` names a local CSV's columns from its first line; capture (so
    serve, demo and the widget) started Spark first, and the analyst waited for its JVM
    (about a minute) to be told the same."""
    import brushfire.capture.spark as sp

    def no_spark(*_, **__):
        msg = "Spark started"
        raise AssertionError(msg)

    monkeypatch.setattr(sp, "get_spark", no_spark)
    path, _ = sales
    spec = tmp_path / "sales.yaml"
    spec.write_text(SPEC.format(path=path, region="Regoin"))
    with pytest.raises(SpecError) as info:
        Dashboard.open(str(spec), cache_dir=tmp_path / "cache")
    assert f"{spec}:5: views[1].field: column 'Regoin' is not in the source" in str(info.value)


def test_a_default_of_the_wrong_type_is_refused_before_the_first_job(spark, sales, tmp_path):
    """A CSV column's type is Spark's: capture's analysis refuses a default its field
    never takes (a time for a number) before any job, at its file, line and key."""
    path, _ = sales
    spec = tmp_path / "sales.yaml"
    spec.write_text(SPEC.format(path=path, region="Region") + "  parameters:\n"
                    "    - {name: most, field: qty, widget: slider, op: lte, default: 2024-01-01}\n")
    with pytest.raises(SpecError) as info:
        Dashboard.open(str(spec), spark=spark, cache_dir=tmp_path / "cache")
    assert str(info.value).startswith(
        f"{spec}:11: interactions.parameters[0].default: the default cannot be applied to column 'qty' "
        "(a number): '2024-01-01' is not a number"), str(info.value)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.npy"))


def test_a_derived_column_spark_fails_on_is_named_with_its_line(spark, tmp_path):
    """Spark's ANSI mode fails the scan on the first text a cast cannot read (a newcomer's
    to_timestamp(date) over '2010/01/31 00:00'): the error names the derived column that
    fails, its file and line, and the pattern that reads the text."""
    data = tmp_path / "temps.csv"
    data.write_text("date,temp,n\n2010/01/31 00:00,39.4,0\n2010/01/31 01:00,39.2,2\n")
    spec = tmp_path / "temps.yaml"
    spec.write_text(f"""\
name: temps
source:
  path: {data}
  columns:
    double_temp: temp * 2
    t: to_timestamp(date)
views:
  - {{name: t, type: temporal, field: t, unit: day}}
  - {{name: temp, type: histogram, field: double_temp, bin: {{step: 1}}}}
""")
    with pytest.raises(SpecError) as info:
        Dashboard.open(str(spec), spark=spark, cache_dir=tmp_path / "cache")
    text = str(info.value)
    assert text.startswith(f"{spec}:6: source.columns.t: Spark fails on a row: "), text
    assert "'2010/01/31 00:00'" in text, text
    assert "hint: give the text's format: to_timestamp(date, 'yyyy/MM/dd HH:mm')" in text, text
    # a filter that fails (a division by zero) is named too
    spec.write_text(spec.read_text().replace("t: to_timestamp(date)", "t: to_timestamp(date, 'yyyy/MM/dd HH:mm')")
                    .replace("views:", "  filters:\n    - temp / n > 1\nviews:"))
    with pytest.raises(SpecError) as info:
        Dashboard.open(str(spec), spark=spark, cache_dir=tmp_path / "cache")
    text = str(info.value)
    assert text.startswith(f"{spec}:8: source.filters[0]: Spark fails on a row: "), text
    assert "try_divide" in text, text


@pytest.mark.parametrize("price", ["price", "unit\nprice"])
def test_quoted_line_breaks_and_commas_are_read_as_duckdb_reads_them(spark, tmp_path, price):
    """A quoted field holding a line break (\\n or \\r\\n) was read line by line, as broken
    rows (and capture blamed a column's type); the loader finds one and has Spark read the
    file whole (multiLine): every record as DuckDB's reader reads the file, a header
    name's line break included."""
    import json

    import duckdb

    rng = np.random.default_rng(11)
    notes = ["plain", "two\nlines", "crlf\r\ninside", "a, comma", "both,\nof them", "\n",
             'say ""hi""', '""""', '"",\n""']  # (a quote doubled: RFC 4180, DuckDB's)
    cats = ["a,b", "c", "d\ne", "f"]
    rows = [f'id,"{price}",note,cat']
    for i in range(400):
        note, cat = notes[rng.integers(len(notes))], cats[rng.integers(len(cats))]
        rows.append(f'{i},{rng.integers(0, 1000) / 10},"{note}","{cat}"')
    data = tmp_path / "q.csv"
    data.write_bytes(("\n".join(rows) + "\n").encode())
    spec = tmp_path / "q.yaml"
    spec.write_text(f"""\
name: quoted
source: {{path: {data}}}
views:
  - {{name: price, type: histogram, field: {json.dumps(price)}, bin: {{step: 10, extent: [0, 100]}}}}
  - {{name: cat, type: categorical, field: cat}}
  - {{name: note, type: categorical, field: note}}
interactions:
  crossfilter:
    - views: [price, cat, note]
""")
    dash = Dashboard.open(str(spec), spark=spark, cache_dir=tmp_path / "cache")
    assert dash.spec.source.options == {"multiLine": "true"}
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_csv('{data}')")

    def counts(column: str, where: str = "TRUE") -> dict:
        return dict(con.execute(f'SELECT "{column}", count(*) FROM t WHERE {where} GROUP BY 1').fetchall())

    s = dash.engine_session()
    assert s.count_selected() == 400
    for view in ("cat", "note"):
        got = {k: c for k, c in zip(s.view(view).labels, s.view(view).counts, strict=True) if c}
        assert got == counts(view), view
    s.brush("price", (0, 50))
    where = f'"{price}" >= 0 AND "{price}" <= 50'
    assert s.count_selected() == con.execute(f"SELECT count(*) FROM t WHERE {where}").fetchone()[0]
    got = {k: c for k, c in zip(s.view("cat").labels, s.view("cat").counts, strict=True) if c}
    assert got == counts("cat", where)


def test_a_csv_file_appended_with_its_columns_in_another_order_is_named(spark, tmp_path):
    """Spark reads a folder of CSV files by its first file's header and every file's fields
    by position: a file appended with the same columns in another order read its values
    under the other columns (or, where the types are inferred, its header line as data:
    'column x is a string column', naming no file). It is refused by name before Spark
    reads it, and the last capture stays the entry's."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "a.csv").write_text("x,k,cat\n" + "".join(f"{i % 90}.5,{i % 7},c{i % 3}\n" for i in range(60)))
    spec = {"name": "reordered", "source": {"path": str(folder), "format": "csv"},
            "views": [{"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10}},
                      {"name": "cat", "type": "categorical", "field": "cat"}]}
    Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache")
    (folder / "b.csv").write_text("k,x,cat\n" + "".join(f"{i % 7},{i % 90}.5,c{i % 3}\n" for i in range(40)))
    with pytest.raises(SpecError, match=r"b\.csv: its first line names the columns k, x, cat, where the "
                                        r"folder's first file a\.csv names x, k, cat"):
        Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache")
    (folder / "b.csv").unlink()
    assert Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache").from_cache


@pytest.mark.parametrize("line", ["7,8,c3,99", "7,8"])
def test_a_csv_file_without_a_header_appended_with_another_number_of_fields_is_named(spark, tmp_path, line):
    """Without headers Spark reads every file of a folder as as many columns as one file's
    first line has: a file appended with a field more lost its values, and one with a
    field less read it as null, without a word (with headers such a file is refused). It
    is refused by name before Spark reads it, and the last capture stays the entry's."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "a.csv").write_text("".join(f"{i % 9},{i % 7},c{i % 3}\n" for i in range(60)))
    spec = {"name": "fields", "source": {"path": str(folder), "format": "csv", "options": {"header": "false"}},
            "views": [{"name": "h0", "type": "histogram", "field": "_c0", "bin": {"step": 1}},
                      {"name": "c2", "type": "categorical", "field": "_c2"}]}
    Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache")
    (folder / "b.csv").write_text(f"{line}\n" * 5)
    n = line.count(",") + 1
    with pytest.raises(SpecError, match=rf"b\.csv: its first line has {n} fields, where the folder's first "
                                        r"file a\.csv has 3: Spark reads every file's fields by position as 3 "
                                        r"columns \(a field more is dropped, one less read as null\)"):
        Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache")
    (folder / "b.csv").unlink()
    assert Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache").from_cache


def test_a_csv_file_appended_with_text_in_a_number_column_is_named(spark, tmp_path):
    """Spark types a CSV column by every file's values: a file appended with 'n/a' among
    the numbers of x made x text in every file, and the capture that worked until then
    failed at the histogram ('column x is a string column') naming no file. The file is
    named, and the last capture stays the entry's."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "a.csv").write_text("x,cat\n" + "".join(f"{i % 90}.5,c{i % 3}\n" for i in range(60)))
    (folder / "b.csv").write_text("x,cat\n" + "".join(f"{i % 50}.25,c{i % 4}\n" for i in range(30)))
    (folder / "d.csv").write_text("x,cat\n,c1\n,c2\n")  # (x of no value: typed string alone, not named)
    spec = {"name": "texted", "source": {"path": str(folder), "format": "csv"},
            "views": [{"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10}},
                      {"name": "cat", "type": "categorical", "field": "cat"}]}
    Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache")
    (folder / "c.csv").write_text("x,cat\n" + "".join(f"{'n/a' if i == 3 else i},c1\n" for i in range(20)))
    with pytest.raises(SpecError, match=r"column 'x' is a string column.*: \S*c\.csv makes it string "
                                        r"\(Spark types a CSV column by every file's values; the other "
                                        r"files' are double\)"):
        Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache")
    (folder / "c.csv").unlink()
    assert Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache").from_cache
    # pandas writes an infinity 'inf', which the reader reads only as its options spell it
    (folder / "c.csv").write_text("x,cat\n" + "".join(f"{'inf' if i == 3 else i},c1\n" for i in range(20)))
    with pytest.raises(SpecError) as info:
        Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache")
    assert "c.csv makes it string" in str(info.value) and "with 'inf' among them" in str(info.value)
    assert "hint: set them in source.options (positiveInf: 'inf')" in str(info.value), str(info.value)
    spec["source"]["options"] = {"positiveInf": "inf"}
    assert Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache").store.n_rows == 112



@pytest.mark.parametrize("fmt, xs, says, hint", [
    # sp500.csv's dates: the pattern that reads them (the hint gave 'yyyy/MM/dd HH:mm')
    ("csv", ["Jan 1 2000", "Feb 1 2000", "Mar 1 2000"],
     "temporal view needs a temporal column: its text is times such as 'Jan 1 2000'",
     "`x_time: to_timestamp(x, 'MMM d yyyy')`"),
    # a column of no value (CSV's empty fields, JSON's nulls): Spark types it a string
    ("csv", ["", "", ""], "it holds no value (Spark types a CSV column of no value as a string)",
     "`x_number: CAST(x AS DOUBLE)`"),
    ("json", ["null", "null", "null"], "it holds no value (Spark types a JSON column of no value as "
     "a string)", "`x_number: CAST(x AS DOUBLE)`"),
    ("json", ['"1565"', '"12"', '"7.5"'], "its 3 values are numbers written as text",
     "`x_number: CAST(x AS DOUBLE)`"),
    ("csv", ["n/a", "12", "7.5"], "1 of its 3 values are not numbers, e.g. 'n/a'",
     "`x_number: try_cast(x AS DOUBLE)` (null where the text is no number)"),
    # pyarrow writes NaN as 'nan', pandas an infinity as 'inf': Spark's CSV reader reads NaN, Inf
    ("csv", ["nan", "12", "inf"], "its 3 values are numbers written as text, with 'inf', 'nan' among "
     "them, which Spark's CSV reader reads as numbers only as its options nanValue, positiveInf and "
     "negativeInf spell them (NaN, Inf, -Inf unless set)",
     "hint: set them in source.options (nanValue: 'nan', positiveInf: 'inf') to read the column as numbers"),
    # a European CSV (sep: ";") of decimal commas
    ("csv", ['"1,5"', "12", '"7,25"'], "its values are numbers written with a decimal comma, e.g. '1,5'",
     "`x_number: CAST(replace(x, ',', '.') AS DOUBLE)`"),
])
def test_a_text_column_a_histogram_needs_says_what_its_text_holds(spark, tmp_path, fmt, xs, says, hint):
    """A view that needs a number or a time over a column Spark reads as text was refused
    with 'column x is a string column' alone: of a column with no value (Spark types CSV's
    empty fields and JSON's nulls as strings), of numbers written as text (vega-datasets'
    wheat.json has "year": "1565"), with 'n/a' among them or with a decimal comma ('1,5')
    the analyst could not tell why, and dates such as 'Jan 1 2000' got the pattern of other
    text. The message says what
    the text holds, and the hint the derived column that reads it."""
    if fmt == "json":
        body = "".join(f'{{"x": {x}, "cat": "c{i}"}}\n' for i, x in enumerate(xs))
    else:
        body = "x,cat\n" + "".join(f"{x},c{i}\n" for i, x in enumerate(xs))
    data = tmp_path / f"t.{fmt}"
    data.write_text(body)
    spec = {"name": "texted", "source": {"path": str(data)},
            "views": [{"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10}},
                      {"name": "cat", "type": "categorical", "field": "cat"}]}
    if "temporal" in says:
        spec["views"][0] = {"name": "tx", "type": "temporal", "field": "x", "unit": "month"}
    else:
        says = f"histogram view needs a number column: {says}"
    with pytest.raises(SpecError) as info:
        Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache")
    message = str(info.value)
    assert f"views[0].field: column 'x' is a string column, but a {says}\n" in message, message
    assert hint in message, message


def test_a_header_with_spaces_after_its_commas_is_read_as_its_options_say(spark, tmp_path):
    """'date, value, cat' (a space after each comma, as people type CSV) names ' value' and
    ' cat': a view of 'value' got "did you mean ' value'?", and with the options that make
    Spark read names and values without the spaces, `brushfire validate` (which reads the
    first line itself) still refused 'value' though capture would read it. The hint names
    the options, and validate reads the names as Spark does with them."""
    from brushfire.source import csv_source_names
    from brushfire.spec.checks import check_columns
    from brushfire.spec.loader import load_dashboard

    data = tmp_path / "spaced.csv"
    data.write_text("date, value, cat\n2020-01-01, 1.5, a\n2020-01-02, 2.5, b\n2020-01-03, 12, a\n")
    spec = tmp_path / "spaced.yaml"
    text = f"""\
name: spaced
source:
  path: {data}{{options}}
views:
  - {{{{name: value, type: histogram, field: value, bin: {{{{step: 1}}}}}}}}
  - {{{{name: cat, type: categorical, field: cat}}}}
interactions:
  crossfilter:
    - views: [value, cat]
"""
    def validate():  # as `brushfire validate` checks a local CSV source
        dash = load_dashboard(str(spec))
        names = csv_source_names(dash.source)
        check_columns(dash, names)
        return names

    spec.write_text(text.format(options=""))
    with pytest.raises(SpecError) as info:
        validate()
    assert "views[0].field: column 'value' is not in the source" in str(info.value)
    assert "hint: the file's first line writes it with white space, ' value': give source.options: " \
           '{ignoreLeadingWhiteSpace: "true", ignoreTrailingWhiteSpace: "true"}' in str(info.value)
    spec.write_text(text.format(options='\n  options: {ignoreLeadingWhiteSpace: "true", '
                                        'ignoreTrailingWhiteSpace: "true"}'))
    assert list(validate()) == ["date", "value", "cat"]
    dash = Dashboard.open(str(spec), spark=spark, cache_dir=tmp_path / "cache")
    s = dash.engine_session()
    assert dict(zip(s.view("cat").labels, s.view("cat").counts, strict=True)) == {"a": 2, "b": 1, "(other)": 0}
    s.brush("value", (1, 3))
    assert s.count_selected() == 2


def test_a_temporal_view_of_years_gets_the_date_that_reads_them(spark, tmp_path):
    """A temporal view of a column of years (gapminder's, population's `year: 1955`), the
    first thing an analyst tries, got the hint timestamp_millis(year): 1955 milliseconds
    after 1970. The message says its values are years, the hint the date that reads them,
    and that date captures."""
    data = tmp_path / "years.csv"
    data.write_text("year,pop\n" + "".join(f"{1950 + 5 * (i % 12)},{i * 7}\n" for i in range(30)))
    spec = {"name": "years", "source": {"path": str(data)},
            "views": [{"name": "year", "type": "temporal", "field": "year", "unit": "year"}]}
    with pytest.raises(SpecError) as info:
        Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache")
    assert str(info.value).endswith(
        "views[0].field: column 'year' is a number column, but a temporal view needs a temporal column: "
        "its values are years (1950 to 2005)\n    hint: derive a date in source.columns, e.g. `year_date: "
        "make_date(CAST(year AS INT), 1, 1)`, and give the view that field (unit: year); or use a "
        "histogram view of the number"), str(info.value)
    spec["source"]["columns"] = {"year_date": "make_date(CAST(year AS INT), 1, 1)"}
    spec["views"][0]["field"] = "year_date"
    s = Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache").engine_session()
    assert sum(s.view("year").counts) == 30 and len(s.view("year").counts) == 56
