"""Capture on a real local Spark session: results, errors, and the base-query baseline."""

from __future__ import annotations

import pytest

from brushfire.capture import capture_dashboard
from brushfire.capture import spark as sp
from brushfire.engine import stats
from brushfire.errors import CaptureError, SpecError
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard

pytestmark = pytest.mark.spark


def views_spec(path, **source) -> dict:
    return {
        "name": "capture_test",
        "source": {"path": str(path), **source},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x",
             "bin": {"step": 10, "extent": [0, 100], "clamp": True}},
            {"name": "heat", "type": "heatmap", "x": {"field": "x", "bin": {"step": 50, "extent": [0, 100]}},
             "y": {"field": "k", "bin": {"step": 40, "extent": [0, 120]}}},
            {"name": "day", "type": "temporal", "field": "t", "unit": "day"},
            {"name": "month", "type": "temporal", "field": "t", "unit": "month"},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 6},
            {"name": "sum_m", "type": "histogram", "field": "k", "bin": {"step": 30, "extent": [-30, 120]},
             "aggregate": {"op": "sum", "field": "m"}},
        ],
        "interactions": {"crossfilter": [{"views": ["hx", "day", "cat", "sum_m"]}]},
    }


def test_captured_base_views_equal_the_plain_spark_queries(spark, small_parquet):
    plan = plan_capture(parse_dashboard(views_spec(small_parquet)))
    store = capture_dashboard(plan, spark=spark, baseline=True)
    assert store.info.seconds["base queries"] > 0
    expected = store.base_query_results
    for v, layout in zip(plan.dashboard.views, store.views, strict=True):
        counts = stats.bar_counts(layout, store.base).tolist()  # clamped rows in the edge bars
        sums = stats.per_bar(layout, store.base.sums[layout.all_slots]).sum(axis=1).tolist()
        want = expected[v.name]
        if v.type == "categorical":
            ordered = sorted(want.items(), key=lambda kv: (-kv[1][0], kv[0]))
            top = ordered[: v.top]
            rest = sum(n for _, (n, _) in ordered[v.top:])
            assert counts == [n for _, (n, _) in top] + [rest]
            assert layout.labels[:-1] == [k for k, _ in top]
        elif v.type == "temporal":
            from datetime import datetime
            starts = [int(datetime.fromisoformat(lab).timestamp() * 1e6) for lab in layout.labels]
            assert {s: c for s, c in zip(starts, counts, strict=True) if c} == {k: n for k, (n, _) in want.items()}
        else:
            assert {i: c for i, c in enumerate(counts) if c} == {k: n for k, (n, _) in want.items()}
            if v.aggregate.field:
                for k, (_, s) in want.items():
                    assert sums[k] == pytest.approx(s or 0.0)


def test_the_base_queries_of_order_statistics_of_times(spark, small_parquet):
    """The plain base query of a min / max view computes its op (it summed the measure cast
    to a double, which Spark refuses for a timestamp: `capture` failed after capturing)."""
    d = views_spec(small_parquet)
    d["views"] += [{"name": "last_t", "type": "categorical", "field": "dest", "brush": "none",
                    "aggregate": {"op": "max", "field": "t"}},
                   {"name": "first_t", "type": "histogram", "field": "x", "brush": "none",
                    "bin": {"step": 10, "extent": [0, 100], "clamp": True},
                    "aggregate": {"op": "min", "field": "t"}}]
    plan = plan_capture(parse_dashboard(d))
    store = capture_dashboard(plan, spark=spark, baseline=True)
    from brushfire.dashboard import Dashboard
    from brushfire.values import datetime_micros, format_instant

    views = Dashboard(plan.dashboard, plan, store).session().views()
    last = store.base_query_results["last_t"]
    assert views["last_t"].values[:5] == [format_instant(datetime_micros(last[k][1]))
                                          for k in views["last_t"].labels[:5]]
    first = store.base_query_results["first_t"]
    assert {i: x for i, x in enumerate(views["first_t"].values) if x is not None} == \
        {k: format_instant(datetime_micros(s)) for k, (_, s) in first.items()}


def test_the_one_job_computes_an_order_statistic_for_its_own_view_only(spark, small_parquet, monkeypatch):
    """The fused baseline's GROUPING SETS hold counts and sums; a median view gets its own
    group-by (in the GROUPING SETS Spark computed the median for every set: the fused job
    of movies-3m took 109 s, 4.4 s without it)."""
    d = views_spec(small_parquet)
    d["views"] += [{"name": "median_m", "type": "categorical", "field": "dest", "brush": "none",
                    "aggregate": {"op": "median", "field": "m"}}]
    dash = parse_dashboard(d)
    df = spark.read.parquet(str(small_parquet))
    statements = []
    session_sql = type(spark).sql
    monkeypatch.setattr(type(spark), "sql", lambda self, q, *a, **k: (statements.append(q),
                                                                       session_sql(self, q, *a, **k))[1])
    assert sp.run_fused_query(df, dash) > 0
    (fused,) = statements
    assert "GROUPING SETS" in fused and "sum(" in fused and "percentile" not in fused
    assert fused.count("(k") == len(d["views"]) - 1  # every view but the median's


def test_time_fields_as_categories_and_dropdowns_capture_as_in_process(spark, tmp_path):
    """Spark's profile gives a time field's value counts as instants too (it gave datetimes,
    which no manifest stores), and profiles the max's measure by value though a categorical
    view counts it (else 'aggregate op 'distinct' needs every value of 'ts'')."""
    import pyarrow.parquet as pq

    from brushfire.capture.local import capture_table
    from brushfire.lineage.layout import CaptureConfig
    from views.test_categorical import rows, spec

    pq.write_table(rows(), tmp_path / "rows.parquet")
    plan = plan_capture(parse_dashboard(spec(tmp_path / "rows.parquet")))
    config = CaptureConfig(max_keys=6)  # ts has 7 values: a fine dim for the max
    on_spark = capture_dashboard(plan, spark=spark, cache_dir=tmp_path / "spark", config=config)
    local = capture_table(plan, rows(), tmp_path / "local", config)
    assert [(v.labels, v.value_type) for v in on_spark.views] == \
        [(v.labels, v.value_type) for v in local.views]
    assert on_spark.view("tcat").value_type == "temporal"
    assert on_spark.parameter_domain("pday") == local.parameter_domain("pday")
    assert on_spark.base.counts.tolist() == local.base.counts.tolist()


def test_derived_columns_and_static_filters_are_applied(spark, small_parquet):
    d = views_spec(small_parquet, columns={"x": "x * 0 + 5"}, filters=["cat = 'c00'"])
    store = capture_dashboard(plan_capture(parse_dashboard(d)), spark=spark)
    hx = store.view("hx")
    counts = store.base.counts[hx.slots].tolist()
    assert counts[0] == store.n_rows - store.base.counts[hx.bar_off + hx.nbars]  # all in bin 0
    assert store.view("cat").labels == ["c00"] + ["(other)"]


def test_a_column_missing_from_the_source_fails_before_any_spark_job(spark, small_parquet):
    d = views_spec(small_parquet)
    d["views"][0]["field"] = "nope"
    tracker = spark.sparkContext.statusTracker()
    jobs_before = set(tracker.getJobIdsForGroup(None))
    with pytest.raises(SpecError, match=r"views\[0\]\.field: column 'nope' is not in the source"):
        capture_dashboard(plan_capture(parse_dashboard(d)), spark=spark)
    assert set(tracker.getJobIdsForGroup(None)) == jobs_before


def test_a_failing_spark_job_is_reported_not_hung_on(spark, small_parquet):
    d = views_spec(small_parquet, columns={"x": "CASE WHEN k > 100 THEN raise_error('bad row') ELSE x END"})
    with pytest.raises(SpecError, match="source.columns.x: Spark fails on a row: bad row") as info:
        capture_dashboard(plan_capture(parse_dashboard(d)), spark=spark)
    assert "hint: the expression's raise_error(...) fails the capture" in str(info.value)


def test_a_bad_derived_expression_is_reported(spark, small_parquet):
    d = views_spec(small_parquet, columns={"x": "x +* 2"})  # refused before Spark: spec/expressions.py
    with pytest.raises(SpecError, match=r"source\.columns\.x: unexpected '\*' \(at character 4"):
        capture_dashboard(plan_capture(parse_dashboard(d)), spark=spark)
    d = views_spec(small_parquet, columns={"x": "x * t"})  # Spark's analysis: capture/analyze.py
    with pytest.raises(SpecError, match=r"source\.columns\.x: Spark cannot analyse it: .*data type mismatch"):
        capture_dashboard(plan_capture(parse_dashboard(d)), spark=spark)


def test_schema_kinds(spark, small_parquet):
    df = sp.read_source(spark, parse_dashboard(views_spec(small_parquet)).source)
    assert sp.schema_kinds(df) == {"x": "number", "k": "number", "cat": "string", "dest": "string",
                                   "t": "temporal", "m": "number"}


@pytest.mark.parametrize(("text", "expected"), [
    ("", {}),
    ("spark.driver.host=brushfire", {"spark.driver.host": "brushfire"}),
    ("  spark.driver.host=h\n spark.executor.memory=2g ",
     {"spark.driver.host": "h", "spark.executor.memory": "2g"}),
    ("spark.jars=a.jar,b.jar spark.x=k=v", {"spark.jars": "a.jar,b.jar", "spark.x": "k=v"}),
])
def test_parse_spark_conf(text, expected):
    assert sp.parse_spark_conf(text) == expected


@pytest.mark.parametrize("text", ["spark.driver.host", "driver.host=x", "spark.a=1 =3"])
def test_a_bad_spark_conf_names_the_setting(text):
    with pytest.raises(CaptureError, match=r"BRUSHFIRE_SPARK_CONF: .* is not spark.<key>=<value>"):
        sp.parse_spark_conf(text)


def test_a_standalone_master_nothing_answers_at_is_named_at_once():
    """get_spark on spark://host:port with no master there waited 80 s for Spark's three
    registration attempts, then said 'Cannot call methods on a stopped SparkContext'
    under '(is Java 17+ installed?)'."""
    import socket

    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    master = f"spark://127.0.0.1:{port}"
    with pytest.raises(CaptureError, match=rf"no Spark master answers at {master} \(127.0.0.1:{port}: "
                       r"Connection refused\): is the master running, and is its address right\?"):
        sp.check_master_reachable(master)
    with socket.socket() as s:  # one of two addresses answering is enough
        s.bind(("127.0.0.1", 0))
        s.listen()
        sp.check_master_reachable(f"spark://127.0.0.1:{port},127.0.0.1:{s.getsockname()[1]}")
    sp.check_master_reachable("local[2]")  # (other masters: Spark's to judge)


def test_spark_conf_from_the_environment_reaches_the_session(spark, monkeypatch):
    # getOrCreate applies settings to the running session: runtime SQL settings show it
    monkeypatch.setenv("BRUSHFIRE_SPARK_CONF", "spark.sql.shuffle.partitions=3")
    session = sp.get_spark(app_name="brushfire-tests", driver_memory="2g",
                           conf={"spark.sql.files.maxPartitionBytes": "16m"})
    try:
        assert session is spark
        assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
        assert spark.conf.get("spark.sql.files.maxPartitionBytes") == "16m"
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "8")
        spark.conf.set("spark.sql.files.maxPartitionBytes", "32m")


def test_a_file_rewritten_next_to_a_stale_checksum_is_read(spark, tmp_path):
    """Spark writes a `.<name>.crc` next to each file: a file rewritten since by another
    tool (pandas, pyarrow) failed Spark's read of the folder ('Could not read footer ...
    ensure that the file is in either ORC or Parquet format'), though it is valid Parquet
    that every other reader reads."""
    import pyarrow.parquet as pq

    from rows import make_rows

    folder = tmp_path / "data"
    spark.createDataFrame(make_rows(200, 1).to_pandas()).coalesce(1).write.parquet(str(folder))
    (part,) = folder.glob("part-*.parquet")
    assert (folder / f".{part.name}.crc").exists()
    pq.write_table(make_rows(150, 2), part)
    dash = parse_dashboard({"name": "crc", "source": {"path": str(folder), "format": "parquet"},
                            "views": [{"name": "c", "type": "categorical", "field": "cat"}]})
    store = capture_dashboard(plan_capture(dash), spark=spark, cache_dir=tmp_path / "cache")
    assert store.n_rows == 150


def test_the_drivers_memory_does_not_grow_with_rows(spark, tmp_path):
    """The executors build the lineage; the driver (this process) holds the profile, the
    layout and the summed cubes, whose size depends on distinct values and bars, not rows,
    and builds the key copies a shard at a time (bounded by a shard's rows). Measured at
    two sizes of full shards and cube blocks (a small config: as a 3M-row and a 30M-row
    source are at the default one), after a first capture that pays the one-time costs
    (imports, caches: 25 MB, which hid a copy growing with a shard of fewer rows)."""
    import tracemalloc

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from brushfire.lineage.layout import CaptureConfig
    from rows import make_rows

    config = CaptureConfig(block_rows=4096, shard_rows=16_384, max_cube_blocks=64)
    peaks = []
    for i, n in enumerate((20_000, 20_000, 200_000)):
        path = tmp_path / f"rows-{n}.parquet"
        table = make_rows(n, seed=3)  # x has one decimal: few distinct values at any size
        hours = pc.floor_temporal(table["t"], unit="hour")  # times: few distinct values too
        table = table.set_column(table.schema.get_field_index("t"), "t", hours)
        pq.write_table(table, path, row_group_size=50_000)
        plan = plan_capture(parse_dashboard(views_spec(path)))
        tracemalloc.start()
        store = capture_dashboard(plan, spark=spark, cache_dir=tmp_path / f"cache-{i}", config=config)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert store.n_rows == n
    assert peaks[2] < 1.5 * peaks[1] + (4 << 20), peaks


def test_the_scans_file_tags_are_sparks_hash_of_the_names(spark):
    from pyspark.sql import functions as F

    names = ["file:///tmp/a%20b/part-0.parquet", "", "x", "héllo wörld", "file:///data/k=é/f.parquet",
             "s3a://bucket/path/with/many/parts/file-000123.snappy.parquet"]
    want = [r[0] for r in spark.createDataFrame([(n,) for n in names], "u string")
            .select(F.hash("u")).collect()]
    assert [sp.spark_string_hash(n) for n in names] == want


COLUMNS = {"y": "pmod(k, 7)", "y2": "Y * 2 + x", "t": "to_timestamp(s)", "other": "m"}


@pytest.mark.parametrize(("expression", "reads"), [
    ("y2 > 3", {"y2", "y", "k", "x"}),  # through y2 and y, names as Spark resolves them
    ("pmod(k, 7)", {"k"}),
    ("length(CAST(k AS STRING)) < 3", {"k"}),
    ("t IS NOT NULL AND other > 0", {"t", "s", "other", "m"}),
    ("SELECT 1", set(COLUMNS)),  # does not parse (a trusted deployment's): every derived column
])
def test_what_an_expression_reads(expression, reads):
    """What decides whether a derived column or a static filter still holds for the files
    captured before (capture/spark.py `definitions`, `rows_identity`)."""
    assert sp.expression_reads(COLUMNS, expression) == reads


@pytest.mark.parametrize(("filters", "joins"), [
    (["`Nation`.`n_name` <> 'x'"], {"orders", "customer", "nation"}),  # a chain, any case
    (["q > 1"], {"ship"}),  # through a derived column
    (["amount > 1"], set()),
    (["SELECT 1"], {"orders", "customer", "nation", "ship"}),  # does not parse: every join
])
def test_the_joins_a_static_filter_reads(filters, joins, monkeypatch):
    """Which dimension tables decide the rows that pass the static filters (capture/spark.py
    `joins_read`): a change of another table rescans only the joined columns."""
    monkeypatch.setenv("BRUSHFIRE_TRUSTED_EXPRESSIONS", "1")  # (a query: a trusted deployment's)
    src = parse_dashboard({"name": "j", "source": {
        "path": "/nonexistent/f.parquet", "columns": {"q": "`ship`.`d_q` * 2"}, "filters": filters,
        "joins": [{"name": "orders", "path": "/n/o.parquet", "key": "o_key", "on": "l_order"},
                  {"name": "customer", "path": "/n/c.parquet", "key": "c_key", "on": "orders.o_cust"},
                  {"name": "nation", "path": "/n/n.parquet", "key": "n_key", "on": "customer.c_nation"},
                  {"name": "ship", "path": "/n/d.parquet", "key": "d_date", "on": "l_ship"}]},
        "views": [{"name": "v", "type": "categorical", "field": "nation.n_name"}]}).source
    reads = set().union(*(sp.expression_reads(src.columns, f) for f in src.filters))
    assert sp.joins_read(src, reads) == joins


def test_where_each_task_reads_one_split_the_driver_names_it_and_the_rows_carry_none(spark, tmp_path,
                                                                                     monkeypatch):
    """A plain file source's scan: `partition_splits` names each partition's input split as
    the rows themselves would (input_file_name, input_file_block_start), and a capture
    so equals one whose rows carry their origin, array for array; a joined source's scan
    (two tables read) is left to the rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from brushfire.capture.analyze import analyze_source
    from brushfire.lineage.layout import CaptureConfig
    from capture.test_incremental import assert_same, lineage
    from rows import make_rows

    folder = tmp_path / "data"
    folder.mkdir()
    for i, n in enumerate([4000, 700, 2500]):
        pq.write_table(make_rows(n, seed=i), folder / f"part-{i}.parquet", row_group_size=500)
    d = views_spec(folder, format="parquet")
    dash = parse_dashboard(d)
    small = {"spark.sql.files.maxPartitionBytes": "16k", "spark.sql.files.openCostInBytes": "16k"}
    with sp._conf(spark, small):
        df = analyze_source(spark, dash)
        scan = df.select("x").mapInArrow(lambda it: it, "x double")
        splits = sp.partition_splits(scan)
        seen = df.select(F.input_file_name().alias("u"), F.input_file_block_start().alias("s")).rdd \
            .mapPartitionsWithIndex(lambda i, rows: [(i, r.u, r.s) for r in rows]).distinct().collect()
    assert splits is not None
    # (a split holding no row group's middle reads no rows)
    assert len({i for i, _, _ in seen}) == len(seen) > 3
    assert all(splits[i] == (u, s) for i, u, s in seen)
    config = CaptureConfig(block_rows=256, shard_rows=1000)
    with sp._conf(spark, small):
        mapped = capture_dashboard(plan_capture(dash), spark=spark, cache_dir=tmp_path / "a", config=config)
        monkeypatch.setattr(sp, "partition_splits", lambda df: None)
        tagged = capture_dashboard(plan_capture(dash), spark=spark, cache_dir=tmp_path / "b", config=config)
    assert len(mapped.shards) > 3
    assert_same(lineage(mapped), lineage(tagged))

    dim = tmp_path / "dim.parquet"
    pq.write_table(pa.table({"key": list(range(200)), "label": [f"k{i}" for i in range(200)]}), dim)
    stars = parse_dashboard({**d, "source": {"path": str(folder), "format": "parquet", "joins": [
        {"name": "kd", "path": str(dim), "key": "key", "on": "k"}]}})
    joined = analyze_source(spark, stars, origin=True).select("x").mapInArrow(lambda it: it, "x double")
    assert sp.partition_splits(joined) is None


def test_input_splits_without_rows_leave_no_shards(spark, tmp_path):
    """A Parquet file whose row groups are wider than Spark's input splits (a wide table:
    1M-row groups of 47 MB in 8 MB splits) reads its rows in one split of each group's
    and none in the others; those gave a shard of no rows each (112 of 142 at 30M rows),
    each with a key job task and partial results as large as a full shard's. None now:
    the lineage equals a capture in one split."""
    import pyarrow.parquet as pq

    from brushfire.lineage.layout import CaptureConfig
    from capture.test_incremental import assert_same, lineage
    from rows import make_rows

    path = tmp_path / "wide.parquet"
    pq.write_table(make_rows(3000, seed=5), path, row_group_size=1500)
    dash = parse_dashboard(views_spec(path))
    config = CaptureConfig(block_rows=256, shard_rows=1000)
    with sp._conf(spark, {"spark.sql.files.maxPartitionBytes": "4k", "spark.sql.files.openCostInBytes": "4k"}):
        split = capture_dashboard(plan_capture(dash), spark=spark, cache_dir=tmp_path / "a", config=config)
    whole = capture_dashboard(plan_capture(dash), spark=spark, cache_dir=tmp_path / "b", config=config)
    assert [s.n_rows for s in split.shards] == [1000, 500, 1000, 500]  # (a split per row group)
    assert [s.n_rows for s in whole.shards] == [1000, 1000, 1000]

    def global_arrays(store) -> dict:  # (the shards' cuts differ)
        return {k: v for k, v in lineage(store).items() if not k.startswith("shard ") and k != "sizes"}

    assert_same(global_arrays(split), global_arrays(whole))
    from brushfire.lineage.store import read_manifest

    assert sorted(p.name for p in (split.directory / "shards").iterdir()) == \
        sorted(s["name"] for s in read_manifest(split.directory)["shards"])


DATETIME_TEXTS = [  # a text, its pattern, the time it reads as
    ("2010/01/31 00:47", "yyyy/MM/dd HH:mm", "2010-01-31 00:47:00"),
    ("Jan 1 2000", "MMM d yyyy", "2000-01-01 00:00:00"),
    # the shapes whose failure gave the example 'yyyy/MM/dd HH:mm' instead of their pattern
    ("1/31/2010", "M/d/yyyy", "2010-01-31 00:00:00"),
    ("01/31/2010 10:05", "M/d/yyyy HH:mm", "2010-01-31 10:05:00"),
    ("31.01.2010", "d.M.yyyy", "2010-01-31 00:00:00"),
    ("June 12, 1998", "MMMM d, yyyy", "1998-06-12 00:00:00"),
    ("12/31/1999 23:59:59.125", "M/d/yyyy HH:mm:ss.SSS", "1999-12-31 23:59:59.125"),
]


@pytest.mark.parametrize("text, pattern, time", DATETIME_TEXTS)
def test_the_pattern_of_a_datetime_text_reads_it(spark, text, pattern, time):
    """A derived column's to_timestamp over text Spark cannot read names the pattern that
    reads it (docs/spec.md, "Expressions"): US dates, day-first dates, a month's full name
    and fractions of a second got an example pattern of another shape."""
    assert sp.datetime_pattern(text) == pattern
    assert spark.sql(f"SELECT CAST(to_timestamp('{text}', '{pattern}') AS STRING)").first()[0] == time
