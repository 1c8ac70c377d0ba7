"""Tests for brushfire.spec.expressions: the sandbox for derived columns and static filters
(what is refused, with which message), the opt-out for trusted deployments, and the kinds
it infers (a string used as a number, decimal division)."""

from __future__ import annotations

import pytest

from brushfire.errors import SpecError
from brushfire.spec import expressions as ex
from brushfire.spec.checks import check_columns, expression_warnings
from brushfire.spec.loader import parse_dashboard

COLUMNS = {"date": "temporal", "delay": "int", "distance": "double", "origin": "string",
           "price": "decimal"}

ALLOWED = [
    # (expression, kind)
    ("hour(date) + minute(date) / 60.0", "decimal"),
    ("CAST(hour(date) AS DOUBLE) + CAST(minute(date) AS DOUBLE) / 60", "double"),
    ("hour(date) + minute(date) / 60", "double"),  # int / int is a double in Spark
    ("hour(date) + minute(date) / 60.0D", "double"),
    ("delay * 2 + 1", "int"),
    ("distance / 1.6", "double"),
    ("delay IS NULL OR delay > -15", "boolean"),
    ("delay NOT BETWEEN 1 AND 2 AND origin NOT IN ('ORD', 'ATL') AND origin LIKE 'A%'", "boolean"),
    ("origin IS NOT DISTINCT FROM 'ORD'", "boolean"),
    ("concat(origin, '-', upper(origin))", "string"),
    ("origin || '!'", "string"),
    ("CASE WHEN delay > 15 THEN 'late' WHEN delay < 0 THEN 'early' ELSE 'on time' END", "string"),
    ("CASE delay WHEN 0 THEN 1.5 ELSE 2 END", "decimal"),
    ("coalesce(delay, 0)", "int"),
    ("greatest(delay, distance)", "double"),
    ("if(delay > 0, delay, NULL)", "int"),
    ("extract(HOUR FROM date)", "int"),
    ("date_trunc('week', date)", "temporal"),
    ("date + INTERVAL 1 DAY", "temporal"),
    ("DATE '2001-01-01' + INTERVAL '2' HOUR", "temporal"),
    ("timestamp_seconds(delay)", "temporal"),
    ("timestampadd(HOUR, 1, date)", "temporal"),
    ("datediff(date, DATE '2001-01-01')", "int"),
    ("trim(BOTH ' ' FROM origin)", "string"),
    ("position('A' IN origin)", "int"),
    ("substring(origin FROM 1 FOR 2)", "string"),
    ("log10(nullif(distance, 0))", "double"),
    ("delay::double / 3", "double"),
    ("`delay` + 1", "int"),
    ("isnan(distance) OR NOT isnull(delay)", "boolean"),
    ("-delay", "int"),
    ("1e3 * delay", "double"),
    ("price / 2", "decimal"),
    ("unknown_column + 1", "value"),
]


@pytest.mark.parametrize(("text", "kind"), ALLOWED, ids=[t for t, _ in ALLOWED])
def test_allowed_expressions_and_their_kinds(text: str, kind: str) -> None:
    assert ex.analyze(text, COLUMNS).kind == kind


REFUSED = [
    # (expression, message, offset of the problem)
    ("(SELECT max(value) FROM text.`/etc/passwd`)",
     "SELECT is not allowed: a spec expression is a scalar expression over the source's columns,"
     " not a query", 1),
    ("reflect('java.lang.System','getProperty','user.name')",
     "function 'reflect' is not allowed in spec expressions: it calls Java methods", 0),
    ("REFLECT('java.lang.System','getProperty','user.name')",
     "function 'reflect' is not allowed in spec expressions: it calls Java methods", 0),
    ("try_reflect('java.lang.System','exit', 0)",
     "function 'try_reflect' is not allowed in spec expressions: it calls Java methods", 0),
    ("java_method('java.lang.Runtime', 'getRuntime')",
     "function 'java_method' is not allowed in spec expressions: it calls Java methods", 0),
    ("system.builtin.reflect('a', 'b')",
     "function 'system.builtin.reflect' is not allowed: qualified function names are not", 0),
    ("`reflect`('a', 'b')", "unexpected '(' after a complete expression", 9),
    ("read_files('/etc/passwd')", "function 'read_files' is not allowed in spec expressions: it reads files", 0),
    ("input_file_name()", "function 'input_file_name' is not allowed in spec expressions: it reveals file paths", 0),
    ("my_udf(delay)", "function 'my_udf' is not allowed in spec expressions", 0),
    ("delay IN (SELECT 1)", "SELECT is not allowed: a spec expression is a scalar expression over"
     " the source's columns, not a query", 10),
    ("EXISTS (SELECT 1)", "EXISTS is not allowed: a spec expression is a scalar expression over"
     " the source's columns, not a query", 0),
    ("delay FROM t", "FROM is not allowed: a spec expression is a scalar expression over the"
     " source's columns, not a query", 6),
    ("transform(array(delay), x -> x + 1)",
     "function 'transform' is not allowed: it takes a lambda function", 0),
    ("filter(array(delay), x -> x > 1)", "function 'filter' is not allowed in spec expressions", 0),
    ("delay -> 1", "lambda functions (x -> ...) are not allowed", 6),
    ("count(*)", "function 'count' is not allowed in spec expressions: it is an aggregate", 0),
    ("abs(DISTINCT delay)", "DISTINCT in a function call is for aggregates, which are not allowed here", 4),
    ("abs(delay) OVER (ORDER BY delay)", "window functions are not allowed in spec expressions", 11),
    ("current_user", "current_user is not allowed in spec expressions: it reveals the server's user", 0),
    ("user || delay", "user is not allowed in spec expressions: it reveals the server's user", 0),
    ("current_timestamp()", "function 'current_timestamp' is not allowed in spec expressions: it is"
     " not deterministic", 0),
    ("unix_timestamp()", "unix_timestamp() without arguments is not allowed: it is not deterministic", 0),
    ("rand() < 0.5", "function 'rand' is not allowed in spec expressions: it is not deterministic", 0),
    ("delay; DROP TABLE x", "';' is not allowed: an expression is one value, not statements", 5),
    ("delay -- comment", "comments are not allowed in spec expressions", 6),
    ("delay /* comment */", "comments are not allowed in spec expressions", 6),
    ("'${env:AWS_SECRET_ACCESS_KEY}'", "'${' is not allowed: Spark would substitute a variable there", 1),
    ("${hivevar:x}", "'${' is not allowed: Spark would substitute a variable there", 0),
    ("delay @ 1", "unexpected character '@'", 6),
    ("hour(date", "expected ')' to close hour(...), but the expression ended", 9),
    ("delay +", "expected a value, but the expression ended", 7),
    ("CAST(delay AS MAP<STRING, INT>)", "expected a type such as DOUBLE, BIGINT, DECIMAL(p, s), STRING,"
     " DATE or TIMESTAMP, got 'MAP'", 14),
    ("'unclosed", "unclosed '", 0),
    ("", "the expression is empty", 0),
    ("(" * 60 + "delay" + ")" * 60, "the expression nests more than 50 levels deep", 50),
]


@pytest.mark.parametrize("text", ["user.country", "`user`.country", "`user`", "upper(`session_user`)"])
def test_a_column_named_as_a_function_of_no_arguments_is_a_column(text: str) -> None:
    # `user` quoted, or a field of it: Spark reads a column there, never current_user()
    assert ex.analyze(text, {}).columns[0][0].split(".")[0] in ("user", "session_user")


@pytest.mark.parametrize(("text", "message", "pos"), REFUSED, ids=[t[:40] for t, _, _ in REFUSED])
def test_refused_expressions(text: str, message: str, pos: int) -> None:
    with pytest.raises(ex.ExpressionError) as info:
        ex.analyze(text, COLUMNS)
    assert (info.value.message, info.value.pos) == (message, pos)


def test_every_allowed_function_is_documented() -> None:
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "spec.md").read_text()
    missing = [f for f in ex.allowed_functions() if f"`{f}`" not in doc]
    assert not missing, f"docs/spec.md does not list {missing}"


def _spec(columns: dict | None = None, filters: list | None = None, field: str = "delay") -> str:
    import json

    source = {"path": "flights.parquet", "columns": columns or {}, "filters": filters or []}
    return (f"name: t\nsource: {json.dumps(source)}\nviews:\n"
            f"  - {{name: h, type: histogram, field: {field}, bin: {{step: 1, extent: [0, 24]}}}}\n")


PROBE = "(SELECT max(value) FROM text.`/etc/passwd`)"


def test_the_probes_are_refused_at_validate_with_file_line_and_key() -> None:
    with pytest.raises(SpecError) as info:
        parse_dashboard(_spec({"secret": PROBE}, ["reflect('java.lang.System','getProperty','user.name') = 'root'"]),
                        filename="probe.yaml")
    lines = str(info.value).splitlines()
    assert lines[0].startswith("probe.yaml:2: source.columns.secret: SELECT is not allowed")
    assert lines[2].startswith("probe.yaml:2: source.filters[0]: function 'reflect' is not allowed")


def test_trusted_deployments_opt_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ex.TRUSTED_ENV, "1")
    dash = parse_dashboard(_spec({"secret": PROBE, "who": "reflect('a', 'b')"}))
    assert dash.source.columns["secret"] == PROBE
    monkeypatch.setenv(ex.TRUSTED_ENV, "0")
    with pytest.raises(SpecError):
        parse_dashboard(_spec({"secret": PROBE}))


# --- kinds against the source's columns ---------------------------------------------------


def test_a_string_derived_column_used_as_a_histogram_field() -> None:
    dash = parse_dashboard(_spec({"label": "concat(origin, '-', origin)"}, field="label"),
                           filename="s.yaml")
    with pytest.raises(SpecError) as info:
        check_columns(dash, COLUMNS)
    assert str(info.value) == """\
s.yaml:2: source.columns.label: derived column 'label' is a string, but views[0].field (a histogram view) needs a number column
    hint: make the expression a number, e.g. CAST(... AS DOUBLE)"""


def test_a_derived_timestamp_as_a_histogram_field_is_pointed_to_a_temporal_view() -> None:
    # a newcomer parses a date string, then bins it as a number: the fix is the view's type,
    # not CAST(... AS DOUBLE) (epoch seconds)
    dash = parse_dashboard(_spec({"day": "to_date(origin, 'MMM d yyyy')"}, field="day"),
                           filename="s.yaml")
    with pytest.raises(SpecError) as info:
        check_columns(dash, COLUMNS)
    assert str(info.value) == """\
s.yaml:2: source.columns.day: derived column 'day' is a timestamp, but views[0].field (a histogram view) needs a number column
    hint: use a temporal view for timestamps (type: temporal, unit: day), or make the expression a number"""


def test_derived_columns_read_existing_columns_above_them() -> None:
    dash = parse_dashboard(_spec({"a": "dealy + b", "b": "delay * 2"}, ["a > 0 AND b > 0"]),
                           filename="s.yaml")
    with pytest.raises(SpecError) as info:
        check_columns(dash, COLUMNS)
    assert str(info.value) == """\
s.yaml:2: source.columns.a: column 'dealy' is not in the source
    columns: date, delay, distance, origin, price
    hint: did you mean 'delay'?
s.yaml:2: source.columns.a: column 'b' is derived below this one: a derived column reads the ones above it
    hint: move it above in source.columns"""
    # Spark resolves names case-insensitively
    check_columns(parse_dashboard(_spec({"a": "DELAY + 1"}, ["A > 0"])), COLUMNS)


def test_a_derived_column_that_reads_itself_is_not_said_to_be_below_itself() -> None:
    """`x: x + 1` (x no source column) was 'column 'x' is derived below this one'."""
    dash = parse_dashboard(_spec({"x": "x + 1"}, field="x"), filename="s.yaml")
    with pytest.raises(SpecError) as info:
        check_columns(dash, COLUMNS)
    assert str(info.value) == """\
s.yaml:2: source.columns.x: derived column 'x' reads itself
    hint: name a column of the source, or a derived column above this one"""
    check_columns(parse_dashboard(_spec({"delay": "delay + 1"})), COLUMNS)  # the source's delay


def test_decimal_division_is_a_warning() -> None:
    dash = parse_dashboard(_spec({"hour": "hour(date) + minute(date) / 60.0"}, field="hour"),
                           filename="s.yaml")
    check_columns(dash, COLUMNS)  # a decimal is a number: not an error
    [w] = expression_warnings(dash, COLUMNS)
    assert w.render() == """\
s.yaml:2: source.columns.hour: minute(date) / 60.0 divides decimals: Spark rounds the quotient to a fixed number of decimal places (32/60 becomes 0.533333), so a brush starting at an exact fraction misses rows
    hint: compute in doubles: CAST(... AS DOUBLE), or a double literal such as 60.0D"""
    fixed = _spec({"hour": "CAST(hour(date) AS DOUBLE) + CAST(minute(date) AS DOUBLE) / 60"})
    assert expression_warnings(parse_dashboard(fixed), COLUMNS) == []
