"""Run a dashboard's queries on Spark and collect, in one scan, the per-row lineage
columns the capture plan asks for. The only module that imports pyspark.

One Spark job reads the source once and emits, for every row (rid = position in the
collected result), each view's bar code (forward lineage and group-by key), the raw
values the brushes and parameters filter on, the measures, and the detail columns.
Small aggregate jobs before it find what the bar codes depend on: the value counts of
categorical fields (top N, dictionaries) and the extents of temporal fields.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa

from brushfire.errors import CaptureError
from brushfire.plan import CapturePlan
from brushfire.spec import models as m

Progress = Callable[[str, float | None], None]
SENTINEL_SQL = 65535  # bar code for rows a view drops; replaced by nbars on the driver

UNIT_MICROS = {"minute": 60_000_000, "hour": 3_600_000_000, "day": 86_400_000_000,
               "week": 7 * 86_400_000_000}


def get_spark(master: str = "local[*]", app_name: str = "brushfire", driver_memory: str = "6g"):
    """A Spark session for capture; UTC so calendar bins do not depend on the host zone."""
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@dataclass
class Prepared:
    """What the bar codes depend on, found by the preliminary aggregate jobs."""

    dictionaries: dict[str, list]  # field -> distinct values, by count desc then value
    value_counts: dict[str, list[int]]  # field -> counts aligned with dictionaries
    time_starts: dict[str, list[int]]  # temporal view -> bar start instants (UTC micros)
    temporal_fields: set[str]  # fields whose brush values are UTC microseconds


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


def prepare(df, plan: CapturePlan, progress: Progress) -> Prepared:
    """Run the small jobs: value counts of categorical fields, extents of time fields."""
    from pyspark.sql import functions as F

    dash = plan.dashboard
    dict_fields = [v.field for v in dash.views if isinstance(v, m.CategoricalView)]
    dict_fields += [f.field for f in plan.filters if f.kind in ("points", "param_eq")]
    dictionaries, value_counts = {}, {}
    for fld in dict.fromkeys(dict_fields):
        progress(f"value counts of {fld}", None)
        with spark_errors(f"counting values of {fld}"):
            rows = (df.where(F.col(fld).isNotNull()).groupBy(fld).count()
                    .orderBy(F.desc("count"), F.asc(fld)).collect())
        dictionaries[fld] = [r[0] for r in rows]
        value_counts[fld] = [int(r[1]) for r in rows]
    time_starts: dict[str, list[int]] = {}
    temporal = [v for v in dash.views if isinstance(v, m.TemporalView)]
    if temporal:
        progress("extents of time fields", None)
        aggs = []
        for v in temporal:
            t = F.date_trunc(v.unit, F.col(v.field).cast("timestamp"))
            aggs += [F.unix_micros(F.min(t)), F.unix_micros(F.max(t))]
        with spark_errors("finding time extents"):
            row = df.agg(*aggs).collect()[0]
        for i, v in enumerate(temporal):
            lo, hi = row[2 * i], row[2 * i + 1]
            time_starts[v.name] = calendar_starts(v.unit, lo, hi) if lo is not None else []
    temporal = {c for c, k in schema_kinds(df).items() if k == "temporal"}
    return Prepared(dictionaries, value_counts, time_starts, temporal)


def calendar_starts(unit: str, lo: int, hi: int) -> list[int]:
    """Bar start instants (UTC micros) from truncated `lo` to truncated `hi`, inclusive."""
    if unit in UNIT_MICROS:
        return list(range(lo, hi + 1, UNIT_MICROS[unit]))
    d = datetime.fromtimestamp(lo / 1e6, UTC)
    end = datetime.fromtimestamp(hi / 1e6, UTC)
    out = []
    while d <= end:
        out.append(int(d.timestamp()) * 1_000_000)
        y, mo = (d.year + 1, 1) if unit == "year" else divmod(d.year * 12 + d.month, 12)
        d = d.replace(year=y, month=1) if unit == "year" else d.replace(year=y - (mo == 0), month=mo or 12)
    return out


def bar_code(view, prep: Prepared):
    """Spark column: the view's bar per row (0..nbars-1), SENTINEL_SQL for dropped rows."""
    from pyspark.sql import functions as F

    sentinel = F.lit(SENTINEL_SQL)
    if isinstance(view, m.HistogramView):
        return _bin_code(F.col(view.field), view.bin)
    if isinstance(view, m.HeatmapView):
        ny = view.y.bin.count
        ix, iy = _bin_code(F.col(view.x.field), view.x.bin), _bin_code(F.col(view.y.field), view.y.bin)
        return F.when((ix == SENTINEL_SQL) | (iy == SENTINEL_SQL), sentinel).otherwise(ix * ny + iy)
    if isinstance(view, m.TemporalView):
        starts = prep.time_starts[view.name]
        if not starts:
            return sentinel
        t = F.date_trunc(view.unit, F.col(view.field).cast("timestamp"))
        if view.unit in UNIT_MICROS:
            code = F.floor((F.unix_micros(t) - F.lit(starts[0])) / F.lit(UNIT_MICROS[view.unit]))
        elif view.unit == "month":
            d0 = datetime.fromtimestamp(starts[0] / 1e6, UTC)
            code = F.year(t) * 12 + F.month(t) - F.lit(d0.year * 12 + d0.month)
        else:
            code = F.year(t) - F.lit(datetime.fromtimestamp(starts[0] / 1e6, UTC).year)
        return F.coalesce(code, sentinel)
    if isinstance(view, m.CategoricalView):
        code = dict_code(view.field, prep)
        top = min(view.top, len(prep.dictionaries[view.field]))
        other = F.lit(top) if view.other else sentinel
        return F.when(code < 0, sentinel).when(code < top, code).otherwise(other)
    raise TypeError(view)


def _bin_code(x, b: m.Bin):
    from pyspark.sql import functions as F

    x = x.cast("double")
    nb, lo, hi = b.count, b.extent[0], b.extent[1]
    sentinel = F.lit(SENTINEL_SQL)
    inside = F.least(F.floor((x - F.lit(lo)) / F.lit(b.step)), F.lit(nb - 1))
    return (F.when(x.isNull() | F.isnan(x), sentinel)
            .when(x < lo, F.lit(0) if b.clamp else sentinel)
            .when(x > hi, F.lit(nb - 1) if b.clamp else sentinel)
            .otherwise(inside))


def dict_code(fld: str, prep: Prepared):
    """Spark column: position of the value in the field's dictionary, -1 for null."""
    from pyspark.sql import functions as F

    values = prep.dictionaries[fld]
    if not values:
        return F.lit(-1)
    mapping = F.create_map(*[x for i, v in enumerate(values) for x in (F.lit(v), F.lit(i))])
    return F.coalesce(F.try_element_at(mapping, F.col(fld)), F.lit(-1))


def index_value(df, fld: str):
    """Spark column: the raw value a brush compares, as long (ints, time in micros) or double."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    t = df.schema[fld].dataType
    if isinstance(t, (T.TimestampType, T.TimestampNTZType, T.DateType)):
        return F.unix_micros(F.col(fld).cast("timestamp"))
    if isinstance(t, T.IntegralType):
        return F.col(fld).cast("long")
    return F.col(fld).cast("double")


def collect_rows(df, plan: CapturePlan, prep: Prepared, progress: Progress) -> pa.Table:
    """The one capture job: every lineage column the plan needs, per row, as Arrow.

    Columns: code__<view>, value__<field>, dict__<field>, measure__<field>, detail__<col>.
    """
    from pyspark.sql import functions as F

    dash = plan.dashboard
    cols = [bar_code(v, prep).cast("int").alias(f"code__{v.name}") for v in dash.views]
    for fld in plan.index_fields:
        if fld in prep.dictionaries and any(
            f.field == fld and f.kind in ("points", "param_eq") for f in plan.filters
        ):
            cols.append(dict_code(fld, prep).cast("int").alias(f"dict__{fld}"))
        if any((f.field == fld or f.y_field == fld) and f.kind in ("interval", "rect", "param_range")
               for f in plan.filters):
            cols.append(index_value(df, fld).alias(f"value__{fld}"))
    for fld in dict.fromkeys(v.aggregate.field for v in dash.views if v.aggregate.field):
        cols.append(F.col(fld).cast("double").alias(f"measure__{fld}"))
    for c in plan.detail_columns:
        cols.append(F.col(c).alias(f"detail__{c}"))
    progress("capture job: scanning the source", 0.0)
    with spark_errors("running the capture job"), track_progress(df.sparkSession, progress):
        return df.select(*cols).toArrow()


def run_base_queries(df, dash: m.Dashboard, prep: Prepared) -> tuple[float, dict[str, dict]]:
    """The views' plain aggregate queries on Spark, one job per view, as a dashboard
    without lineage would run them. Returns (seconds, {view: {bar: (count, sum)}})."""
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    out = {}
    for v in dash.views:
        aggs = [F.count(F.lit(1)).alias("n")]
        if v.aggregate.field:
            aggs += [F.sum(F.col(v.aggregate.field).cast("double")).alias("s")]
        with spark_errors(f"running the base query of view {v.name}"):
            rows = df.groupBy(bar_code(v, prep).alias("bar")).agg(*aggs).collect()
        out[v.name] = {r["bar"]: (r["n"], r["s"] if v.aggregate.field else None)
                       for r in rows if r["bar"] != SENTINEL_SQL}
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
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        msg = f"Spark failed while {what}: {first[:500]}"
        raise CaptureError(msg) from e


@contextlib.contextmanager
def track_progress(spark, progress: Progress, every: float = 0.5) -> Iterator[None]:
    """Report the running job's task progress (completed / total tasks) while it runs."""
    tracker = spark.sparkContext.statusTracker()
    done = threading.Event()

    def poll() -> None:
        while not done.wait(every):
            total = finished = 0
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info:
                    total += info.numTasks
                    finished += info.numCompletedTasks
            if total:
                progress("capture job: scanning the source", finished / total)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
