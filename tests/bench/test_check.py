"""The correctness check (bench/check.py) on a dashboard whose derived columns mean
different things in Spark SQL and DuckDB's SQL, with a float32 column brushed at bounds a
float cannot hold: no false mismatches, and the DuckDB baselines agree too (issue 12).
Then, without Spark (captured in this process), measures and categories the check once
got wrong: NaN and infinite measures, decimal measures, a NaN category."""

from __future__ import annotations

import copy
import json
import math
import time
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from brushfire import Dashboard, protocol, wire
from brushfire.baselines import with_engine
from brushfire.bench.check import Checker
from brushfire.capture.local import capture_table
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard

MAG = np.float32(17.247666)  # a float32 value: 17.247665405273438 as a double


def dialect_rows(n: int = 2000) -> pa.Table:
    rng = np.random.default_rng(11)
    mag = (rng.normal(18, 1.5, n)).astype(np.float32)
    mag[:50] = MAG  # many rows exactly at the value a brush edge will graze
    z = rng.choice([0.0, 0.5, 10.0, 1000.0, -1.0], n)
    slope = rng.normal(0, 10, n)
    slope[:20] = -np.inf  # an infinite raw value: below every extent
    return pa.table({
        "px": rng.normal(0, 3, n).round(2),  # CAST(px AS BIGINT): Spark truncates, DuckDB rounds
        "secs": rng.integers(978_307_200, 978_307_200 + 90 * 86_400, n),  # epoch seconds
        "z": z,  # log10(0) and log10(-1): NULL in Spark, -inf and an error in DuckDB
        "mag": pa.array(mag, pa.float32()),
        "slope": slope,
        "m": rng.integers(-50, 300, n).astype(float) + 0.1,
    })


def dialect_spec(path) -> dict:
    return {
        "name": "dialect",
        "source": {"path": str(path), "columns": {
            "ipx": "CAST(px AS BIGINT)", "when": "timestamp_seconds(secs)", "lz": "log10(z)"}},
        "views": [
            {"name": "ipx", "type": "histogram", "field": "ipx", "bin": {"step": 1, "extent": [-10, 10]}},
            {"name": "day", "type": "temporal", "field": "when", "unit": "day"},
            {"name": "lz", "type": "histogram", "field": "lz", "bin": {"step": 0.5, "extent": [-1, 4]},
             "aggregate": {"op": "mean", "field": "m"}},
            {"name": "mag", "type": "histogram", "field": "mag", "bin": {"step": 0.25, "extent": [12, 24]}},
            {"name": "slope", "type": "histogram", "field": "slope",
             "bin": {"step": 5, "extent": [-40, 40], "clamp": True}, "aggregate": {"op": "sum", "field": "m"}},
            # an order statistic of a float32 column, and the last instant per bar
            {"name": "med_mag", "type": "histogram", "field": "ipx", "brush": "none",
             "bin": {"step": 4, "extent": [-10, 10]}, "aggregate": {"op": "median", "field": "mag"}},
            {"name": "last", "type": "histogram", "field": "lz", "brush": "none",
             "bin": {"step": 1, "extent": [-1, 4]}, "aggregate": {"op": "max", "field": "when"}},
        ],
        "interactions": {"crossfilter": [{"views": ["ipx", "day", "lz", "mag", "slope", "med_mag",
                                                    "last"]}]},
    }


@pytest.fixture(scope="module")
def dialect(spark, tmp_path_factory):
    folder = tmp_path_factory.mktemp("dialect")
    pq.write_table(dialect_rows(), folder / "rows.parquet")
    spec = parse_dashboard(dialect_spec(folder / "rows.parquet"))
    dash = Dashboard.open(spec, spark=spark, cache_dir=folder / "cache")
    labels = {v.name: v.labels for v in dash.store.views}
    return dash, Checker(spec, labels, cache_dir=str(folder / "cache")), folder


def messages() -> list[dict]:
    edge = float(np.nextafter(float(MAG), math.inf))  # just above the float32 value, as a double
    return [
        {"type": "brush", "view": "mag", "interval": [edge, 18.667666666666666]},
        {"type": "brush", "view": "ipx", "interval": [-2, 1]},
        {"type": "brush", "view": "lz", "interval": [-0.5, 2.5]},
        {"type": "brush", "view": "day", "interval": ["2001-01-10", "2001-02-20T12:00:00"]},
        {"type": "brush", "view": "mag", "interval": [float(MAG), None]},
        {"type": "brush", "view": "slope", "interval": [None, 3.3]},
        {"type": "brush", "view": "slope", "interval": [-12.5, 40]},
        {"type": "clear", "view": "ipx"},
        {"type": "brush", "view": "mag", "interval": [None, float(np.nextafter(float(MAG), -math.inf))]},
    ]


def test_the_checks_duckdb_holds_a_quarter_of_the_memory_and_spills_outside_the_working_directory(dialect):
    """At 100M rows DuckDB's default (80 % of the memory) took 18 GB beside the server under
    test, and spilled 6 GB into `.tmp` of the working directory (the repository)."""
    import os
    import tempfile

    _, checker, _ = dialect
    limit, spill = checker.con.execute(
        "SELECT current_setting('memory_limit'), current_setting('temp_directory')").fetchone()
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    number, unit = limit.split()
    held = float(number) * {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}[unit]
    assert abs(held - total / 4) < 0.02 * total, limit
    assert spill.startswith(tempfile.gettempdir()) and os.path.isdir(spill), spill


def test_a_long_check_says_how_far_it_is(dialect, capsys):
    """At 100M rows a reply's SQL takes seconds: 500 checked replies ran for many minutes
    without a word. `brushfire bench --check` says how far it is every 10 s."""
    from brushfire.bench.harness import _check_progress

    dash, checker, _ = dialect
    session = dash.session()
    replies = [(0, i, protocol.handle(session, msg)) for i, msg in enumerate(messages())]
    seen = []
    result = checker.check(replies, lambda so_far, of: seen.append((so_far.checked, so_far.mismatches, of)))
    assert seen == [(i, 0, len(replies)) for i in range(1, len(replies) + 1)] and result.checked == len(replies)
    checker.check(replies, _check_progress(time.perf_counter(), every=0.0))
    said = capsys.readouterr().out.splitlines()
    assert said[-1].startswith(f"  checking: {len(replies):,} of {len(replies):,} update replies, 0 mismatches")
    assert len(said) == len(replies)


@pytest.mark.spark
@pytest.mark.parametrize("engine", ["brushfire", "duckdb", "preagg"])
def test_no_false_mismatches_on_spark_semantics(dialect, engine):
    dash, checker, _ = dialect
    session = with_engine(dash, engine).session()
    replies = [protocol.handle(session, msg) for msg in messages()]
    assert [r["type"] for r in replies] == ["update"] * len(replies), replies  # -inf: no crash
    # preagg moves a brush end between two pixel edges to the nearer one and says so
    exact = [(0, i, r) for i, r in enumerate(replies)
             if not any("snapped" in m for m in r["methods"].values())]
    assert len(exact) >= (2 if engine == "preagg" else len(replies))
    result = checker.check(exact)
    assert result.mismatches == 0, result.examples


@pytest.mark.spark
def test_the_float32_edge_is_compared_as_spark_compares(dialect):
    dash, checker, _ = dialect
    session = dash.session()
    reply = protocol.handle(session, messages()[0])
    # the 50 rows at MAG lie below the bound as doubles: not selected (DuckDB comparing
    # the FLOAT column with the bound rounded to a float would select them)
    con = checker.con
    n_at = con.execute(f"SELECT count(*) FROM chk WHERE mag = CAST({float(MAG)!r} AS FLOAT)").fetchone()[0]
    assert n_at >= 50
    edge = messages()[0]["interval"][0]
    # the SQL brushfire.sql used to write: DuckDB rounds the literal to the column's FLOAT
    wrong = con.execute(f"SELECT count(*) FROM chk WHERE mag >= {edge!r} AND mag <= 18.667666666666666"
                        ).fetchone()[0]
    assert reply["selected"] == wrong - n_at
    assert checker.compare(reply) == []


@pytest.mark.spark
def test_derived_columns_are_spark_values_in_the_check(dialect):
    dash, checker, _ = dialect
    rows = checker.con.execute("SELECT px, ipx, z, lz FROM chk").fetchall()
    assert all(ipx == math.trunc(px) for px, ipx, _, _ in rows)  # Spark truncates
    assert all(lz is None for _, _, z, lz in rows if z <= 0)  # NULL, not -inf


@pytest.mark.spark
def test_a_failing_engine_is_reported_under_its_name_with_its_log(dialect, tmp_path, capsys):
    import yaml

    from brushfire.cli import main

    _, _, folder = dialect
    spec = tmp_path / "dialect.yaml"
    spec.write_text(yaml.safe_dump(dialect_spec(folder / "rows.parquet"), sort_keys=False))
    # the captured lineage is in the cache, so only the lazy baseline starts Spark, and fails
    code = main(["bench", "--spec", str(spec), "--cache-dir", str(folder / "cache"), "--engine",
                 "lazy,brushfire", "--spark-master", "local[two]", "--limit", "20", "--warmup", "0",
                 "--check", "--no-plots", "--out-dir", str(tmp_path), "--name", "failing"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert not err.startswith("brushfire:"), err
    assert "lazy: FAILED: the lazy server exited (1):" in out
    assert "Could not parse Master URL: 'local[two]'" in out  # from the lazy server's log
    result = json.loads((tmp_path / "failing.json").read_text())
    assert "local[two]" in result["engines"]["lazy"]["error"]
    assert result["engines"]["brushfire"]["check"]["mismatches"] == 0  # the other engine ran
    assert "lazy       FAILED: the lazy server exited (1):" in result["table"]


# --- without Spark: values the check once got wrong ----------------------------------------


def awkward_rows(n: int = 400) -> pa.Table:
    """Bars g 0-3 of measures with NaN, ±inf and nulls (bar 3: none finite)."""
    rng = np.random.default_rng(5)
    g = np.arange(n) % 4
    m = rng.normal(100, 50, n).round(3)
    m[g == 3] = np.resize([math.nan, math.inf, -math.inf], int((g == 3).sum()))
    m[[0, 1, 2]] = [math.nan, math.inf, -math.inf]  # bar 0 has a few among its values
    return pa.table({
        "g": g,
        "x": rng.uniform(0, 10, n),
        "m": pa.array(m, mask=np.arange(n) % 37 == 5),
    })


def captured(tmp_path, rows: pa.Table, views: list[dict],
             parameters: tuple[dict, ...] = ()) -> tuple[Dashboard, Checker]:
    """`views` (and `hx`, a histogram of x to brush) and `parameters` over `rows`, captured
    in this process, with a check of it."""
    pq.write_table(rows, tmp_path / "rows.parquet")
    views = [{"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 1, "extent": [0, 10]}},
             *views]
    spec = parse_dashboard({"name": "awkward", "source": {"path": str(tmp_path / "rows.parquet")},
                            "views": views,
                            "interactions": {"crossfilter": [{"views": [v["name"] for v in views]}],
                                             "parameters": list(parameters)}})
    plan = plan_capture(spec)
    dash = Dashboard(spec, plan, capture_table(plan, rows, tmp_path / "cache"))
    return dash, Checker(spec, {v.name: v.labels for v in dash.store.views})


def played(dash: Dashboard, messages: list[dict]) -> list[tuple[int, int, dict]]:
    """The update replies to `messages`, as a client reads them (JSON: NaN is null)."""
    session = dash.session()
    replies = [json.loads(wire.dumps(protocol.handle(session, msg))) for msg in messages]
    assert [r["type"] for r in replies] == ["update"] * len(replies), replies
    return [(0, i, r) for i, r in enumerate(replies)]


BRUSHES = [{"type": "brush", "view": "hx", "interval": [2, 7.5]},
           {"type": "brush", "view": "hx", "interval": [None, 4]},
           {"type": "clear", "view": "hx"}]


def test_nan_and_infinite_measures_are_skipped_as_the_engine_skips_them(tmp_path):
    by_g = {"type": "histogram", "field": "g", "bin": {"step": 1, "extent": [0, 4]}, "brush": "none"}
    ops = [{"op": "sum"}, {"op": "mean"}, {"op": "min"}, {"op": "max"}, {"op": "median"},
           {"op": "quantile", "p": 0.9, "method": "discrete"}, {"op": "distinct"}]
    dash, checker = captured(tmp_path, awkward_rows(), [
        {**by_g, "name": f"{a['op']}_m", "aggregate": {**a, "field": "m"}} for a in ops])
    replies = played(dash, BRUSHES)
    result = checker.check(replies)
    assert result.checked == 3
    assert result.mismatches == 0, result.examples
    last = replies[-1][2]["views"]
    assert last["sum_m"]["values"][3] is None  # no finite measure: no sum, as SQL's NULL
    assert last["max_m"]["values"][3] is None  # inf is a value of order statistics (null in JSON)
    # a bar with an inf among its measures still has a finite tolerance: a wrong sum is caught
    wrong = copy.deepcopy(replies[-1][2])
    wrong["views"]["sum_m"]["values"][0] += 1.0
    problems = checker.compare(wrong)
    assert len(problems) == 1 and problems[0].startswith("sum_m[[0.0, 1.0]]: sum "), problems


def test_replies_kept_as_text_are_checked_as_the_replies_they_are(tmp_path, monkeypatch):
    # a replay keeps its update replies as JSON text; decoded all at once before the
    # check, 100,000 replies of a long recording held 3 GB (six 50-bar histograms)
    import brushfire.bench.check as check_module

    dash, checker = captured(tmp_path, awkward_rows(), [
        {"name": "sum_m", "type": "histogram", "field": "g", "bin": {"step": 1, "extent": [0, 4]},
         "brush": "none", "aggregate": {"op": "sum", "field": "m"}}])
    replies = played(dash, BRUSHES)
    texts = [(c, i, json.dumps(r)) for c, i, r in replies]
    wrong = copy.deepcopy(replies[1][2])
    wrong["views"]["sum_m"]["counts"][0] += 1
    texts[1] = (0, 1, json.dumps(wrong))
    decoded: list[int] = []
    monkeypatch.setattr(check_module, "loads", lambda text: decoded.append(1) or json.loads(text))
    seen: list[int] = []
    result = checker.check(texts, lambda so_far, of: seen.append(len(decoded)))
    assert (result.checked, result.mismatches) == (3, 1)
    assert result.examples[0]["event"] == 1 and "sum_m[" in result.examples[0]["problems"][0]
    assert seen == [1, 2, 3]  # each decoded when its turn came


def test_the_checks_cache_of_expected_bars_is_bounded_and_clients_still_share_it(tmp_path, monkeypatch):
    # every evaluation was kept: a 100,000-event recording of six 50-bar histograms held
    # 4 GB; bounded, the clients' replies to one event (client by client, far apart) must
    # still share one evaluation
    import brushfire.bench.check as check_module

    dash, checker = captured(tmp_path, awkward_rows(), [
        {"name": "hg", "type": "histogram", "field": "g", "bin": {"step": 1, "extent": [0, 4]}, "brush": "none"}])
    brushes = [{"type": "brush", "view": "hx", "interval": [i / 4, 5 + i / 4]} for i in range(12)]
    one = played(dash, brushes)
    replies = [(c, i, r) for c in range(3) for _, i, r in one]  # 3 clients, as a replay keeps them
    evaluations: list[str] = []
    evaluate = checker._evaluate  # noqa: SLF001
    monkeypatch.setattr(checker, "_evaluate", lambda f, v: evaluations.append(json.dumps(f)) or evaluate(f, v))
    monkeypatch.setattr(check_module, "CACHE_BARS", 12)  # two evaluations of hg's 4 bars (and one)
    result = checker.check(replies)
    assert (result.checked, result.mismatches, result.distinct_states) == (36, 0, 12)
    assert len(evaluations) == 12  # one per state
    assert checker._cached_bars <= 12 and len(checker._cache) == 2  # noqa: SLF001


def test_min_and_max_of_a_date_field_are_compared_as_the_instants_replies_write(tmp_path):
    """A date's min or max is written as its midnight in UTC ('1600-01-01T00:00:00+00:00',
    docs/spec.md); DuckDB gives a datetime.date, which the check once wrote '1600-01-01':
    every reply with such a view was a false mismatch (vega-datasets' wheat, 1565-1821)."""
    import datetime as dt

    rng = np.random.default_rng(8)
    n = 200
    days = rng.integers(-150_000, 20_000, n)  # from 1559 to 2024
    rows = pa.table({
        "g": np.arange(n) % 4,
        "x": rng.uniform(0, 10, n),
        "when": pa.array([dt.date(1970, 1, 1) + dt.timedelta(days=int(d)) for d in days], pa.date32(),
                         mask=np.arange(n) % 31 == 4),
    })
    by_g = {"type": "histogram", "field": "g", "bin": {"step": 1, "extent": [0, 4]}, "brush": "none"}
    dash, checker = captured(tmp_path, rows, [
        {**by_g, "name": f"{op}_when", "aggregate": {"op": op, "field": "when"}} for op in ("min", "max")])
    replies = played(dash, BRUSHES)
    first = replies[0][2]["views"]["min_when"]["values"][0]
    assert first.endswith("T00:00:00+00:00"), first
    result = checker.check(replies)
    assert result.checked == 3
    assert result.mismatches == 0, result.examples
    wrong = copy.deepcopy(replies[0][2])  # a day off is caught
    wrong["views"]["max_when"]["values"][1] = "1500-01-01T00:00:00+00:00"
    problems = checker.compare(wrong)
    assert len(problems) == 1 and problems[0].startswith("max_when[[1.0, 2.0]]: max "), problems


def test_decimal_measures_are_compared_as_the_doubles_the_engine_reads(tmp_path):
    """DuckDB sums decimals exactly, as decimals; the engine reads each value as its nearest
    double (capture/columns.py). The check compares them as doubles, not as Decimal."""
    rng = np.random.default_rng(6)
    n = 300
    cents = rng.integers(-50_000, 500_000, n)
    rows = pa.table({
        "g": np.arange(n) % 4,
        "x": rng.uniform(0, 10, n),
        "price": pa.array([Decimal(int(c)).scaleb(-2) for c in cents], pa.decimal128(10, 2),
                          mask=np.arange(n) % 29 == 3),
        "big": pa.array([Decimal(int(c) * 10_007) for c in cents], pa.decimal128(20, 0)),
    })
    by_g = {"type": "histogram", "field": "g", "bin": {"step": 1, "extent": [0, 4]}, "brush": "none"}
    aggs = [{"op": "sum", "field": "price"}, {"op": "mean", "field": "price"},
            {"op": "min", "field": "price"}, {"op": "quantile", "field": "price", "p": 0.3,
                                               "method": "discrete"},
            {"op": "sum", "field": "big"}, {"op": "mean", "field": "big"}]
    dash, checker = captured(tmp_path, rows, [
        {**by_g, "name": f"{a['op']}_{a['field']}", "aggregate": a} for a in aggs])
    result = checker.check(played(dash, BRUSHES))
    assert result.checked == 3
    assert result.mismatches == 0, result.examples


def test_a_nan_category_is_a_bar_and_a_choice_as_the_engine_has_it(tmp_path):
    """A float field's NaN is one of its values, as in the engine: a categorical view's bar
    and a dropdown's choice, which select its rows; a reply's JSON writes a bar's as null
    (no bar is null) and a dropdown's as 'NaN' (a parameter's null is inactive)."""
    rng = np.random.default_rng(7)
    n = 300
    level = rng.choice([math.nan, 1.5, 0.5, 2.5], n, p=[0.4, 0.3, 0.2, 0.1])
    rows = pa.table({"x": rng.uniform(0, 10, n), "level": pa.array(level, mask=np.arange(n) % 31 == 4),
                     "m": rng.normal(10, 3, n)})
    dash, checker = captured(tmp_path, rows, [
        {"name": "level", "type": "categorical", "field": "level", "top": 2},
        {"name": "sum_by_level", "type": "categorical", "field": "level", "top": 2, "brush": "none",
         "aggregate": {"op": "sum", "field": "m"}}],
        [{"name": "plevel", "field": "level", "widget": "dropdown"},
         {"name": "plevels", "field": "level", "widget": "dropdown", "multiple": True}])
    labels = dash.store.view("level").labels
    nan = labels[0]  # this very object: the engine refuses any other NaN (values.Choices: a set)
    assert math.isnan(nan) and labels[1:] == [1.5, "(other)"]
    replies = played(dash, [{"type": "select", "view": "level", "values": [nan]},
                            {"type": "brush", "view": "hx", "interval": [1, 6]},
                            {"type": "select", "view": "level", "values": [nan, "(other)"]},
                            {"type": "select", "view": "level", "values": ["(other)"]},
                            {"type": "clear"},
                            {"type": "parameter", "name": "plevel", "value": nan},
                            {"type": "parameter", "name": "plevel", "value": 1.5},
                            {"type": "parameter", "name": "plevels", "value": [0.5, nan]}])
    assert replies[0][2]["filters"]["level"] == {"values": [None]}
    assert replies[5][2]["filters"]["plevel"] == {"parameter": "NaN"}  # (null: inactive)
    assert replies[5][2]["selected"] == replies[0][2]["selected"]
    assert replies[0][2]["selected"] == int(np.isnan(level[np.arange(n) % 31 != 4]).sum())
    # the labels as the engine holds them, and as a client reads them (NaN as null)
    as_read = json.loads(wire.dumps({v.name: v.labels for v in dash.store.views}))
    for labels in ({v.name: v.labels for v in dash.store.views}, as_read):
        checker = Checker(dash.spec, labels)
        assert checker.problems_once == []
        result = checker.check(replies)
        assert result.checked == 8
        assert result.mismatches == 0, result.examples


def test_infinite_categories_as_a_client_reads_them(tmp_path):
    """A float field's ±inf categories travel as 'Infinity' / '-Infinity' (the labels of
    the description, the filters of replies): the check reads them back as ±inf."""
    from brushfire.describe import describe_dashboard

    rng = np.random.default_rng(8)
    n = 200
    level = rng.choice([math.inf, -math.inf, 1.5, math.nan], n)
    rows = pa.table({"x": rng.uniform(0, 10, n), "level": pa.array(level)})
    dash, _ = captured(tmp_path, rows, [{"name": "level", "type": "categorical", "field": "level", "top": 3}],
                       [{"name": "plevel", "field": "level", "widget": "dropdown"}])
    as_read = {v["name"]: v["labels"] for v in json.loads(wire.dumps(describe_dashboard(dash)))["views"]}
    assert "Infinity" in as_read["level"] and "-Infinity" in as_read["level"]
    replies = played(dash, [{"type": "select", "view": "level", "values": ["Infinity", "(other)"]},
                            {"type": "brush", "view": "hx", "interval": [1, 6]},
                            {"type": "clear", "view": "level"},
                            {"type": "parameter", "name": "plevel", "value": "-Infinity"}])
    checker = Checker(dash.spec, as_read)
    assert checker.problems_once == []
    result = checker.check(replies)
    assert (result.checked, result.mismatches) == (4, 0), result.examples


def test_a_brush_on_a_view_in_no_crossfilter_group_filters_every_other_view(tmp_path):
    """docs/spec.md: an undeclared brush (a view outside every crossfilter group) filters
    the other views of its groups, or every other view when it is in none, as the engine
    answers it (lazily, on Spark). The check's SQL (and the baselines', sql.applies) once
    let it filter no view: every reply after a click on such a view was a false mismatch
    (a first-time analyst's mean-price-by-symbol bars next to the crossfilter group)."""
    from brushfire import sql

    rows = pa.table({"x": np.arange(40) / 4.0, "g": np.arange(40) % 4})
    pq.write_table(rows, tmp_path / "rows.parquet")
    spec = parse_dashboard({
        "name": "loose", "source": {"path": str(tmp_path / "rows.parquet")},
        "views": [{"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 1, "extent": [0, 10]}},
                  {"name": "hg", "type": "histogram", "field": "g", "bin": {"step": 1, "extent": [0, 4]}},
                  {"name": "free", "type": "histogram", "field": "g", "bin": {"step": 1, "extent": [0, 4]}}],
        "interactions": {"crossfilter": [{"views": ["hx", "hg"]}]}})
    assert sql.applies(spec, "hx", "hg") and not sql.applies(spec, "hx", "free")
    assert sql.applies(spec, "free", "hx") and sql.applies(spec, "free", "hg")
    assert not sql.applies(spec, "free", "free")
    assert sql.applies(spec, "column:x", "free") and sql.applies(spec, "column:x", "hx")  # every view
    plan = plan_capture(spec)
    dash = Dashboard(spec, plan, capture_table(plan, rows, tmp_path / "cache"))
    checker = Checker(spec, {v.name: v.labels for v in dash.store.views})
    expected, selected = checker.expected({"free": {"interval": [1, 1]}}, ["hx", "hg", "free"])
    assert selected == 10
    assert sum(n for n, *_ in expected["hx"].values()) == 10  # g == 1 only
    assert sum(n for n, *_ in expected["free"].values()) == 40  # not its own brush


def test_a_category_of_zero_and_negative_zero_is_the_engines_bar_0(tmp_path):
    """-0.0 = 0.0: SQL groups them under either (the first row's), the engine's bar is 0.0.
    The check's top values took DuckDB's -0.0, keyed its rows '-0.0', and every reply with
    the view was a false mismatch ('SQL has 300 rows in bar '-0.0', which the view lacks')."""
    rng = np.random.default_rng(9)
    n = 300
    rows = pa.table({"x": rng.uniform(0, 10, n), "z": np.where(np.arange(n) % 2 == 0, -0.0, 0.0)})
    dash, checker = captured(tmp_path, rows, [{"name": "z", "type": "categorical", "field": "z"}])
    assert checker.problems_once == []
    result = checker.check(played(dash, BRUSHES))
    assert (result.checked, result.mismatches) == (3, 0), result.examples


def test_a_sum_past_the_largest_double_is_null_in_a_reply_as_in_the_check(tmp_path):
    """Finite measures whose sum passes 1.8e308 sum to inf, in SQL and in the engine; a
    reply writes it null (JSON has no infinity), which the check compared with SQL's inf:
    a false mismatch on every reply showing the bar."""
    n = 200
    rng = np.random.default_rng(10)
    g = np.arange(n) % 4
    rows = pa.table({"g": g, "x": rng.uniform(0, 10, n),
                     "m": np.where(g == 0, 1e308, rng.normal(5, 1, n))})
    by_g = {"type": "histogram", "field": "g", "bin": {"step": 1, "extent": [0, 4]}, "brush": "none"}
    dash, checker = captured(tmp_path, rows, [
        {**by_g, "name": f"{op}_m", "aggregate": {"op": op, "field": "m"}} for op in ("sum", "mean")])
    replies = played(dash, BRUSHES)
    assert replies[-1][2]["views"]["sum_m"]["values"][0] is None
    result = checker.check(replies)
    assert (result.checked, result.mismatches) == (3, 0), result.examples
    wrong = copy.deepcopy(replies[-1][2])  # a wrong finite bar is still caught
    wrong["views"]["mean_m"]["values"][1] += 1.0
    assert len(checker.compare(wrong)) == 1


def test_the_baselines_count_no_distinct_value_in_a_bar_without_rows(tmp_path):
    """count(DISTINCT x) over no rows is 0 (docs/spec.md), as the engine and SQL have it; the
    SQL baselines and lazy answers on Spark (baselines/base.py's bars) said null for a bar
    whose rows the filters left out: a mismatch of every lazy answer with such a bar."""
    rng = np.random.default_rng(12)
    n = 200
    rows = pa.table({"g": np.arange(n) % 4, "x": np.where(np.arange(n) % 4 == 3, 9.5, rng.uniform(0, 5, n)),
                     "s": rng.choice(["a", "b", "c"], n)})
    dash, checker = captured(tmp_path, rows, [
        {"name": "dist_s", "type": "histogram", "field": "g", "bin": {"step": 1, "extent": [0, 4]},
         "brush": "none", "aggregate": {"op": "distinct", "field": "s"}}])
    session = with_engine(dash, "duckdb").session()
    replies = [(0, i, json.loads(wire.dumps(protocol.handle(session, msg)))) for i, msg in enumerate(BRUSHES)]
    assert replies[0][2]["views"]["dist_s"]["values"][3] == 0  # x in [2, 7.5]: no row of g = 3
    result = checker.check(replies)
    assert (result.checked, result.mismatches) == (3, 0), result.examples


def test_a_value_spelt_like_the_other_bar_is_keyed_apart_from_it(tmp_path):
    """A text field may hold '(other)' among its top values, a bar of its own beside the
    '(other)' bar of the values beyond them. SQL keyed both bars '(other)'
    (`Categorical.key_sql`: the value as text, else '(other)'; `label_keys` alike), so the
    check summed their rows into one bar and reported the engine's exact bars as
    mismatches; the SQL baselines (which also answer lazily, on Spark) left the value out of
    the top values, counting its rows in the '(other)' bar; tests' oracle keyed them alike."""
    from oracle import Oracle, assert_view_matches

    rng = np.random.default_rng(12)
    n = 240
    s = rng.choice(["a", "(other)", "b", "c", "d"], n, p=[0.35, 0.3, 0.15, 0.1, 0.1])
    rows = pa.table({"x": rng.uniform(0, 10, n), "s": pa.array(s, mask=np.arange(n) % 23 == 2)})
    dash, checker = captured(tmp_path, rows, [{"name": "s", "type": "categorical", "field": "s", "top": 2}])
    assert dash.store.view("s").labels == ["a", "(other)", "(other)"]
    messages = [{"type": "brush", "view": "hx", "interval": [2, 7.5]},
                {"type": "select", "view": "s", "values": ["a"]},
                {"type": "select", "view": "s", "values": ["(other)"]},
                {"type": "clear", "view": "s"}]
    replies = played(dash, messages)
    assert checker.problems_once == []
    result = checker.check(replies)
    assert (result.checked, result.mismatches) == (4, 0), result.examples
    baseline = with_engine(dash, "duckdb").session()
    for (_, _, want), msg in zip(replies, messages, strict=True):
        got = json.loads(wire.dumps(protocol.handle(baseline, msg)))
        assert (got["selected"], {n: v["counts"] for n, v in got["views"].items()}) == \
            (want["selected"], {n: v["counts"] for n, v in want["views"].items()}), msg
    oracle, session = Oracle(dash.spec), dash.session()
    oracle.brush("hx", [2, 7.5])
    protocol.handle(session, messages[0])
    assert_view_matches(session.view("s"), oracle.view("s"), "count", "categorical", "brushed", oracle)


def test_text_keys_join_numbers_as_sparks_join_compares_them(tmp_path):
    """A join of a decimal or int32 `on` with a key of text (Parquet files): Spark's join,
    so the capture, compares them as DOUBLE and BIGINT. DuckDB's `=` cast the text to the
    on's own type: '7.001' was 7.00 as '7' is, and the source's row of 7.00 was joined
    twice (the check counted a row the engine has once: false mismatches); '3000000000'
    is no INTEGER (a Conversion Error ended the check)."""
    from brushfire.baselines.duckdb import connect_source

    pq.write_table(pa.table({"dec": pa.array([Decimal("7.00"), Decimal("1.50"), Decimal("2.00")],
                                             pa.decimal128(10, 2)),
                             "k": pa.array([7, 1, None], pa.int32())}), tmp_path / "f.parquet")
    pq.write_table(pa.table({"id": ["7", "1.5", "7.001"], "name": ["seven", "half", "other"]}),
                   tmp_path / "d.parquet")
    pq.write_table(pa.table({"id": ["7", "3000000000"], "label": ["k7", "big"]}), tmp_path / "e.parquet")
    dash = parse_dashboard({"name": "textkeys", "source": {"path": str(tmp_path / "f.parquet"), "joins": [
        {"name": "d", "path": str(tmp_path / "d.parquet"), "key": "id", "on": "dec"},
        {"name": "e", "path": str(tmp_path / "e.parquet"), "key": "id", "on": "k"}]},
        "views": [{"name": "name", "type": "categorical", "field": "d.name"}]})
    con = connect_source(dash, threads=1, cache_dir=str(tmp_path))
    assert con.execute('SELECT "d.name", "e.label" FROM src').fetchall() == \
        [("seven", "k7"), ("half", None), (None, None)]


def test_unsigned_64_bit_ids_are_the_decimals_spark_reads(tmp_path):
    """Spark reads a Parquet UINT64 column as DECIMAL(20, 0) (its longs are signed), so
    capture keys such ids by their nearest doubles, as decimals: 2^63 + 1 and 2^63 + 3 are
    one category. DuckDB read them as UBIGINT, compared exactly: the check (and the duckdb
    baseline) found one row of three for that category, a mismatch of the engine's."""
    from brushfire import sql
    from brushfire.baselines.duckdb import connect_source
    from brushfire.spec import models as m

    path = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"id": pa.array([2**63 + 1, 2**63 + 3, 2**64 - 1, 7], pa.uint64())}), path)
    dash = parse_dashboard({"name": "ids", "source": {"path": str(path)},
                            "views": [{"name": "id", "type": "categorical", "field": "id"}]})
    con = connect_source(dash, threads=1, cache_dir=str(tmp_path))
    assert con.execute("SELECT typeof(id) FROM src LIMIT 1").fetchone() == ("DECIMAL(20,0)",)
    top = [float(2**63), float(2**64), 7.0]
    where = sql.select_sql(dash.view("id"), [float(2**63)], top)
    assert con.execute(f"SELECT count(*) FROM src WHERE {where}").fetchone() == (2,), where
    where = sql.parameter_sql(m.Parameter(name="p", field="id"), float(2**64))
    assert con.execute(f"SELECT count(*) FROM src WHERE {where}").fetchone() == (1,), where
