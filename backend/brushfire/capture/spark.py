"""Spark: the session, the source as a DataFrame, and the capture's two jobs. The only
module that imports pyspark.

Both jobs run Brushfire's own Python on the executors (`mapInArrow`, Arrow batches in,
one small row per task out): the profile job returns each partition's distinct values
and value counts (capture/profile.py); the shard job turns each partition's rows into
lineage shards written straight into the cache entry (capture/shards.py) and returns
their summaries. The driver collects no per-row data.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa

from brushfire import sql
from brushfire.capture import columns as C
from brushfire.capture.profile import Profile, ProfileSpec, count_values, value_stats
from brushfire.errors import CaptureError
from brushfire.lineage.layout import Layout
from brushfire.spec import models as m
from brushfire.views import view_type

Progress = Callable[[str, float | None], None]
LOG4J = Path(__file__).with_name("log4j2.properties")


def get_spark(master: str | None = None, app_name: str = "brushfire", driver_memory: str | None = None,
              conf: Mapping[str, str] | None = None):
    """A Spark session for capture, on `master` (default: $BRUSHFIRE_SPARK_MASTER, else
    local[*]); UTC, so calendar bins do not depend on the host's time zone.

    Extra Spark settings come from $BRUSHFIRE_SPARK_CONF, then `conf` (later wins over
    earlier and over the defaults below). On a cluster they carry what only the
    deployment knows, e.g. `spark.driver.host` (the address executors reach the driver
    at) and `spark.executor.memory`; see docs/deploy.md. Like any getOrCreate, this
    returns the process's running session if there is one, whatever its master.
    """
    from pyspark.sql import SparkSession

    master = master or os.environ.get("BRUSHFIRE_SPARK_MASTER") or "local[*]"
    # executors run Brushfire's Python (capture/shards.py): the same interpreter by default
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    memory = driver_memory or os.environ.get("BRUSHFIRE_DRIVER_MEMORY", "8g")
    extra = {**parse_spark_conf(os.environ.get("BRUSHFIRE_SPARK_CONF", "")), **(conf or {})}
    # Spark's log: errors only from the driver JVM's start (setLogLevel below comes after
    # its startup warnings); a deployment's own Java options take the place of ours
    extra.setdefault("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J.as_uri()}")
    with spark_errors(f"starting a Spark session on {master} (is Java 17+ installed?)"):
        builder = (
            SparkSession.builder.master(master)
            .appName(app_name)
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.memory", memory)
            .config("spark.driver.maxResultSize", "0")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.sql.shuffle.partitions", "8")
            # small input splits: many small task results instead of a few huge ones,
            # which at 30M rows ran the driver out of heap while collecting
            .config("spark.sql.files.maxPartitionBytes", "32m")
        )
        for key, value in extra.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def parse_spark_conf(text: str) -> dict[str, str]:
    """'key=value key=value' (whitespace-separated, as in $BRUSHFIRE_SPARK_CONF) -> dict.
    Values cannot contain spaces; put such settings in Spark's spark-defaults.conf."""
    out = {}
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep or not key.startswith("spark."):
            msg = (f"BRUSHFIRE_SPARK_CONF: {item!r} is not spark.<key>=<value>; "
                   "hint: separate settings with spaces, e.g. "
                   "'spark.driver.host=brushfire spark.executor.memory=2g'")
            raise CaptureError(msg)
        out[key] = value
    return out


def read_source(spark, source: m.Source):
    """The source as a DataFrame: read, derived columns added, static filters applied."""
    from pyspark.sql import functions as F

    with spark_errors("reading the source"):
        reader = spark.read.format(source.resolved_format).options(**source.options)
        df = reader.load(source.path)
        for name, expr in source.columns.items():
            df = df.withColumn(name, F.expr(expr))
        for cond in source.filters:
            df = df.where(F.expr(cond))
        _ = df.schema  # analysis happens here: bad expressions fail now, before any job
    return df


def schema_kinds(df) -> dict[str, str]:
    """{column: 'number' | 'temporal' | 'string' | 'other'} for spec checks."""
    from pyspark.sql import types as T

    out = {}
    for f in df.schema.fields:
        t = f.dataType
        if isinstance(t, T.NumericType):
            out[f.name] = "number"
        elif isinstance(t, (T.TimestampType, T.TimestampNTZType, T.DateType)):
            out[f.name] = "temporal"
        elif isinstance(t, T.StringType):
            out[f.name] = "string"
        else:
            out[f.name] = "other"
    return out


def profile_job(df, spec: ProfileSpec, progress: Progress) -> Profile:
    """The source's profile (capture/profile.py) from Spark aggregations, without moving
    rows to Python: one job for the row count, approximate distinct counts and time
    ranges; one GROUPING SETS job for the exact value counts of every field with few
    enough distinct values (and of categorical and dropdown fields); one job for the
    quantiles of fields with many (their bucket edges)."""
    from pyspark.sql import functions as F

    strings = [c for c in spec.measures if _kind(df, c) == "string"]  # order statistics'
    values = list(dict.fromkeys(spec.values + tuple(c for c in spec.measures if c not in strings)))
    counts, ranges = list(dict.fromkeys(spec.counts + tuple(strings))), list(spec.ranges)
    grouped = list(dict.fromkeys(values + counts))
    progress("profile: distinct values of the brushed fields", 0.0)
    with spark_errors("profiling the source"), track_progress(df.sparkSession, progress,
                                                              "profile: distinct values"):
        aggs = [F.count(F.lit(1)).alias("__n")]
        aggs += [F.approx_count_distinct(F.col(c)).alias(f"__d{i}") for i, c in enumerate(values)]
        for i, c in enumerate(ranges):
            aggs += [F.min(F.col(c)).alias(f"__lo{i}"), F.max(F.col(c)).alias(f"__hi{i}")]
        for i, c in enumerate(spec.extents):  # finite values only, as doubles (bins are)
            x = F.col(c).cast("double")
            finite = F.when(~F.isnan(x) & (F.abs(x) < F.lit(float("inf"))), x)
            aggs += [F.min(finite).alias(f"__elo{i}"), F.max(finite).alias(f"__ehi{i}")]
        first = df.agg(*aggs).collect()[0]
        approx = {c: first[f"__d{i}"] for i, c in enumerate(values)}
        exact = [c for c in grouped if c in counts or approx[c] <= 1.2 * spec.max_keys + 100]
        tables = _value_counts(df, exact) if exact else {}
        many = [c for c in values if c not in exact]
        edges = _quantiles(df, many, min(spec.max_keys, 16_384)) if many else {}
    out = Profile(int(first["__n"]), {}, {}, {})
    for c in values:
        if c in tables:
            out.values[c] = value_stats(tables[c], spec.max_keys)
        else:
            out.values[c] = value_stats(edges[c], spec.max_keys, sample=True, kind=_kind(df, c))
    for c in counts:
        t = tables[c]
        ok = t.column(0).is_valid()
        kept = t.filter(ok)
        out.counts[c] = (count_values(kept.column(0)), np.asarray(kept.column(1), np.int64))
        if C.kind_of(kept.column(0).type) == "temporal":
            out.times.add(c)
    for i, c in enumerate(ranges):
        lo, hi = first[f"__lo{i}"], first[f"__hi{i}"]
        out.ranges[c] = (None, None) if lo is None else tuple(
            int(x) for x in C.numbers(pa.array([lo, hi]))[0])
    out.extents = {c: (first[f"__elo{i}"], first[f"__ehi{i}"]) for i, c in enumerate(spec.extents)}
    progress("profile: distinct values", 1.0)
    return out


def _kind(df, c: str) -> str:
    """'int', 'float', 'temporal' or 'string' of a column (as capture/columns.kind_of)."""
    from pyspark.sql import types as T

    t = df.schema[c].dataType
    if isinstance(t, (T.TimestampType, T.TimestampNTZType, T.DateType)):
        return "temporal"
    if isinstance(t, T.IntegralType):
        return "int"
    return "float" if isinstance(t, T.FractionalType) else "string"


def _value_counts(df, cols: list[str]) -> dict[str, pa.Table]:
    """{column: table (value, count)} of each column's distinct values, in one job."""
    name = f"brushfire_profile_{abs(hash(tuple(cols)))}"
    df.createOrReplaceTempView(name)
    q = ", ".join(f"`{c}`" for c in cols)
    sets = ", ".join(f"(`{c}`)" for c in cols)
    table = df.sparkSession.sql(
        f"SELECT {q}, grouping_id() AS __gid, count(*) AS __n FROM {name} "
        f"GROUP BY GROUPING SETS ({sets})").toArrow()
    k = len(cols)
    gid = np.asarray(table["__gid"])
    out = {}
    for i, c in enumerate(cols):  # grouping_id: a 1 bit for each column not grouped
        sel = np.flatnonzero(gid == (1 << k) - 1 - (1 << (k - 1 - i)))
        out[c] = pa.table({"v": table[c].take(sel), "n": table["__n"].take(sel)})
    return out


def _quantiles(df, cols: list[str], k: int) -> dict[str, pa.Table]:
    """{column: table (value, weight)} of k approximate quantiles of each column."""
    from pyspark.sql import functions as F

    probs = [float(p) for p in np.linspace(0, 1, k + 1)]

    def numeric(c):  # times as UTC microseconds, as the shards key them
        return F.unix_micros(F.col(c).cast("timestamp")) if _kind(df, c) == "temporal" else F.col(c)

    row = df.agg(*[F.percentile_approx(numeric(c).cast("double"), probs, 10_000).alias(f"__q{i}")
                   for i, c in enumerate(cols)]).collect()[0]
    return {c: pa.table({"v": pa.array(row[f"__q{i}"] or [], pa.float64()),
                         "n": pa.array(np.ones(len(row[f"__q{i}"] or []), np.int64))})
            for i, c in enumerate(cols)}


def shard_job(df, columns: list[str], layout: Layout, dash: m.DashboardSpec, shard_rows: int,
              shards_dir: str, progress: Progress) -> list:
    """Job 2: every partition's rows turned into lineage shards by the executors
    (capture/shards.py), written into `shards_dir`; returns the shards' summaries."""

    def run(batches):
        import pickle

        from pyspark import TaskContext

        from brushfire.capture.shards import build_partition

        pid = TaskContext.get().partitionId()
        out = build_partition(batches, layout, dash, shard_rows, shards_dir, pid)
        yield pa.RecordBatch.from_pydict({"payload": [pickle.dumps(out)]})

    progress("shard job: lineage built by the executors", 0.0)
    with spark_errors("building lineage shards"), track_progress(df.sparkSession, progress,
                                                                 "shard job: building lineage"):
        rows = df.select(*columns).mapInArrow(run, "payload binary").collect()
    return [s for r in rows for s in pickle.loads(r["payload"])]


def run_base_queries(df, dash: m.DashboardSpec) -> tuple[float, dict[str, dict]]:
    """Each view's plain aggregate query on Spark, one job per view, as a dashboard
    without lineage would run them. Returns (seconds, {view: {key: (count, value)}}) with
    key = bar number (histogram, heatmap, calendar part), bar start in UTC microseconds (temporal) or
    value (categorical; the top N is left to the caller), and value the sum of the
    measure (sum and mean views), the view's order statistic (median, quantile, min, max,
    distinct: of any measure type, times too), or None (count views)."""
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    kinds = schema_kinds(df)
    out = {}
    for v in dash.views:
        key = F.expr(view_type(v).base_key_sql(v, sql.SPARK))
        aggs = [F.count(F.lit(1)).alias("n")]
        agg = v.aggregate
        if agg.field and agg.order:  # (a sum of a time has no meaning: Spark refuses the cast)
            aggs.append(F.expr(sql.aggregate_sql(agg, kinds.get(agg.field, "number"), sql.SPARK))
                        .alias("s"))
        elif agg.field:
            aggs.append(F.sum(F.col(agg.field).cast("double")).alias("s"))
        with spark_errors(f"running the base query of view {v.name}"):
            rows = df.groupBy(key.alias("key")).agg(*aggs).collect()
        out[v.name] = {r["key"]: (r["n"], r["s"] if v.aggregate.field else None)
                       for r in rows if r["key"] is not None}
    return time.perf_counter() - t0, out


@contextlib.contextmanager
def spark_errors(what: str) -> Iterator[None]:
    """Turn a failing Spark job or analysis error into a CaptureError that says why."""
    try:
        yield
    except CaptureError:
        raise
    except Exception as e:  # py4j and pyspark raise many types; all end the capture
        if type(e).__module__.split(".")[0] not in ("pyspark", "py4j"):
            raise
        lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
        first = lines[0] if lines else type(e).__name__
        if "PythonException" in type(e).__name__ and len(lines) > 1:
            first = lines[-1]  # the Python error itself, after the worker's traceback
        msg = f"Spark failed while {what}: {first[:500]}"
        raise CaptureError(msg) from e


@contextlib.contextmanager
def track_progress(spark, progress: Progress, stage: str = "capture job",
                   every: float = 0.5) -> Iterator[None]:
    """Report the running jobs' task progress (completed / total tasks of the active
    stages) while they run; never backwards within the stage (a step of several jobs
    starts each at 0)."""
    tracker = spark.sparkContext.statusTracker()
    done = threading.Event()

    def poll() -> None:
        shown = 0.0
        while not done.wait(every):
            total = finished = 0
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info:
                    total += info.numTasks
                    finished += info.numCompletedTasks
            if total:
                shown = max(shown, finished / total)
                progress(stage, shown)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
