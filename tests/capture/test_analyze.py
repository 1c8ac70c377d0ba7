"""Spark's analysis of a spec's source before any job (capture/analyze.py): errors at the
spec's keys, types checked against the views, decimal warnings; the allow-list and the
kinds spec/expressions.py infers, against Spark; the source materialized for SQL checks."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from brushfire.capture.analyze import analyze_source, materialize_source
from brushfire.errors import SpecError
from brushfire.spec import expressions as ex
from brushfire.spec import load_dashboard

pytestmark = pytest.mark.spark


def write_spec(tmp_path, source: str, views: str = "") -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(f"name: t\nsource:\n{source}views:\n"
                    + (views or "  - {name: hx, type: histogram, field: x, bin: {step: 10, extent: [0, 100]}}\n"))
    return str(path)


def no_jobs(spark):
    tracker = spark.sparkContext.statusTracker()
    return set(tracker.getJobIdsForGroup(None))


def test_a_string_derived_column_used_as_a_histogram_field(spark, tmp_path):
    # a CSV source: its types are known only once Spark has read it
    csv = tmp_path / "rows.csv"
    csv.write_text("x,label\n1,a\n2,b\n")
    spec = write_spec(tmp_path, f"  path: {csv}\n  options: {{header: 'true'}}\n"
                                "  columns:\n    hx_value: concat(label, '!')\n",
                      "  - {name: hx, type: histogram, field: hx_value, bin: {step: 1, extent: [0, 9]}}\n")
    with pytest.raises(SpecError) as info:
        analyze_source(spark, load_dashboard(spec))
    assert str(info.value) == f"""\
{spec}:6: source.columns.hx_value: derived column 'hx_value' is a string, but views[0].field (a histogram view) needs a number column
    hint: make the expression a number, e.g. CAST(... AS DOUBLE)"""


def test_spark_analysis_errors_name_the_key(spark, tmp_path):
    csv = tmp_path / "rows.csv"
    csv.write_text("x,label\n1,a\n")
    spec = write_spec(tmp_path, f"  path: {csv}\n  options: {{header: 'true'}}\n"
                                "  columns:\n    y: x + 1\n  filters:\n    - y > 0\n    - lable = 'a'\n")
    with pytest.raises(SpecError) as info:
        analyze_source(spark, load_dashboard(spec))
    text = str(info.value)
    assert text.startswith(f"{spec}:9: source.filters[1]: Spark cannot analyse it: A column, variable,"
                           " or function parameter with name `lable` cannot be resolved"), text
    assert text.endswith("hint: name a column of the source, or a derived column above this one")



def test_a_type_mismatch_gets_the_types_hint(spark, tmp_path):
    """Spark says 'Cannot resolve "(x AND true)" due to data type mismatch': its 'cannot
    resolve' got the hint of a misspelt column, where x is there."""
    csv = tmp_path / "rows.csv"
    csv.write_text("x,label\n1,a\n")
    spec = write_spec(tmp_path, f"  path: {csv}\n  options: {{header: 'true'}}\n  columns:\n    y: x AND true\n")
    with pytest.raises(SpecError) as info:
        analyze_source(spark, load_dashboard(spec))
    text = str(info.value)
    assert "source.columns.y: Spark cannot analyse it: Cannot resolve" in text and "data type mismatch" in text, text
    assert text.endswith("hint: CAST(x AS DOUBLE) or CAST(x AS STRING) makes the types agree"), text

def test_a_filter_that_is_no_condition(spark, small_parquet, tmp_path):
    spec = write_spec(tmp_path, f"  path: {small_parquet}\n  filters:\n    - cat\n")
    with pytest.raises(SpecError) as info:
        analyze_source(spark, load_dashboard(spec))
    assert str(info.value) == f"""\
{spec}:5: source.filters[0]: a static filter is a condition, but Spark types this STRING
    hint: compare it with something, e.g. x > 0"""


def test_decimal_division_warns_with_sparks_type(spark, small_parquet, tmp_path):
    spec = write_spec(tmp_path, f"  path: {small_parquet}\n  columns:\n    h: hour(t) + minute(t) / 60.0\n",
                      "  - {name: hh, type: histogram, field: h, bin: {step: 1, extent: [0, 24]}}\n")
    warnings: list[str] = []
    before = no_jobs(spark)
    df = analyze_source(spark, load_dashboard(spec), warn=warnings.append)
    # analysed, not run: the one job is Spark reading the Parquet footer for the schema
    assert len(no_jobs(spark) - before) <= 1
    assert dict(df.dtypes)["h"].startswith("decimal")
    assert warnings == [f"{spec}:5: source.columns.h: minute(t) / 60.0 divides decimals (Spark types"
                        " it DECIMAL(18,6)): Spark rounds the quotient to a fixed number of decimal"
                        " places (32/60 becomes 0.533333), so a brush starting at an exact fraction"
                        " misses rows\n    hint: compute in doubles: CAST(... AS DOUBLE), or a double"
                        " literal such as 60.0D"]


@pytest.mark.parametrize("case", ["missing", "empty directory", "corrupt", "nanoseconds"])
def test_unreadable_sources_are_reported_at_source_path(spark, tmp_path, case):
    data = tmp_path / "data"
    if case == "nanoseconds":  # (as pandas writes a datetime column)
        (data / "rows.parquet").mkdir(parents=True)
        pq.write_table(pa.table({"x": [1.0], "t": pa.array([0], pa.timestamp("ns"))}),
                       data / "rows.parquet" / "part-0.parquet")
    if case == "empty directory":
        (data / "rows.parquet").mkdir(parents=True)
        (data / "rows.parquet" / "_SUCCESS").write_text("")
    elif case == "corrupt":
        data.mkdir()
        (data / "rows.parquet").write_bytes(b"PAR1 not really")
    spec = write_spec(tmp_path, "  path: data/rows.parquet\n")
    want = {"missing": f"no such file or directory\n    hint: {tmp_path} has no 'data'; fix the path, or"
                       " make it absolute",
            "empty directory": "the directory holds no data files\n    hint: Spark reads its files (and"
                               " its subfolders' if they are `key=value` partitions), except names"
                               " starting with '_' or '.'",
            "corrupt": "cannot read it as parquet: ",
            "nanoseconds": "Illegal Parquet type: INT64 (TIMESTAMP(NANOS,false)).\n    hint: Spark reads"
                           " times to the microsecond"}[case]
    with pytest.raises(SpecError) as info:
        analyze_source(spark, load_dashboard(spec))
    assert str(info.value).startswith(
        f"{spec}:3: source.path: 'data/rows.parquet' (relative paths are relative to the spec's"
        f" folder {tmp_path}: {data / 'rows.parquet'}): {want}")


# --- the allow-list and the inferred kinds, against Spark ----------------------------------


def test_every_allowed_function_exists_in_spark(spark):
    missing = [f for f in ex.allowed_functions()
               if f not in ex.SYNTAX_FUNCTIONS and not spark.catalog.functionExists(f)]
    assert missing == []


def test_inferred_kinds_agree_with_spark(spark):
    import importlib.util
    from pathlib import Path

    from brushfire.capture.analyze import _fine_kind

    path = Path(__file__).parents[1] / "spec" / "test_expressions.py"
    module_spec = importlib.util.spec_from_file_location("spec_expression_cases", path)
    cases = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(cases)

    df = spark.sql("SELECT TIMESTAMP '2001-01-01 10:32:00' AS date, 5 AS delay, 1.5D AS distance,"
                   " 'ORD' AS origin, CAST(2.5 AS DECIMAL(10, 2)) AS price")
    wrong = []
    for text, kind in cases.ALLOWED:
        if kind == "value":
            continue
        got = _fine_kind(df.selectExpr(text).schema.fields[0].dataType)
        if got != kind:
            wrong.append((text, kind, got))
    assert wrong == []


def test_materialized_source_is_the_captured_rows(spark, small_parquet, tmp_path):
    spec = write_spec(tmp_path, f"  path: {small_parquet}\n  columns:\n    x2: x * 2 + 1\n"
                                "    h: CAST(hour(t) AS DOUBLE) + CAST(minute(t) AS DOUBLE) / 60\n"
                                "  filters:\n    - k IS NULL OR k > -15\n")
    dash = load_dashboard(spec)
    files = materialize_source(dash, tmp_path / "cache", spark)
    assert files and materialize_source(dash, tmp_path / "cache", spark) == files  # reused
    got = pa.concat_tables([pq.read_table(f) for f in files])
    want = analyze_source(spark, dash).toArrow()
    assert got.column_names == want.column_names
    for c in ("x2", "h", "cat"):  # the same values in the same (rid) order; NaN as 'nan'
        assert [repr(v) for v in got.column(c).to_pylist()] == [repr(v) for v in want.column(c).to_pylist()]
    assert got.num_rows < pq.read_metadata(small_parquet).num_rows
