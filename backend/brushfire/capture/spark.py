"""Spark: the session, the source as a DataFrame, and the capture's two jobs. With
capture/analyze.py, the only module that imports pyspark.

Both jobs run Brushfire's own Python on the executors: the scan (`mapInArrow`, Arrow
batches in, one small row per task out) encodes each input split's rows into shards
written straight into the cache entry (capture/scan.py) and returns their summaries; the
key job (a task per few shards, `mapInArrow` too, so that it runs in the scan's Python
workers) turns shards into lineage and clustered key copies (capture/keys.py). The driver
collects no per-row data. `run_base_queries` and `run_fused_query` are what capture is
compared with.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC
from pathlib import Path

import pyarrow as pa

from brushfire import sql
from brushfire.errors import CaptureError
from brushfire.lineage.layout import Layout
from brushfire.plan import spec_columns
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
    # executors run Brushfire's Python (capture/scan.py, keys.py): the same interpreter by default
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    memory = driver_memory or os.environ.get("BRUSHFIRE_DRIVER_MEMORY", "8g")
    extra = {**parse_spark_conf(os.environ.get("BRUSHFIRE_SPARK_CONF", "")), **(conf or {})}
    # Spark's log: errors only from the driver JVM's start (setLogLevel below comes after
    # its startup warnings); a deployment's own Java options take the place of ours
    extra.setdefault("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J.as_uri()}")
    if SparkSession.getActiveSession() is None:  # (else getOrCreate returns it, whatever its master)
        check_master_reachable(master)
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
            # input splits of 8 MB: every core busy on a small file too (capture's scan
            # gives each split a task of its own, whatever the size of the source)
            .config("spark.sql.files.maxPartitionBytes", "8m")
        )
        for key, value in extra.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    quiet_query_context_logs()
    # a local file's `.<name>.crc` (Hadoop's checksums, which Spark writes next to its
    # files) gone stale — the file rewritten by another tool, or a stray one — failed the
    # read ('Could not read footer'), where every other reader reads the file: local files
    # are read without verifying them (the file system of this JVM: executors of local[*])
    with contextlib.suppress(Exception):
        spark._jvm.org.apache.hadoop.fs.FileSystem.getLocal(spark._jsc.hadoopConfiguration()) \
            .setVerifyChecksum(False)
    return spark


def check_master_reachable(master: str, timeout: float = 3.0) -> None:
    """A standalone master (`spark://host:port[,host:port...]`) that no address of answers:
    a CaptureError at once, where Spark would try for over a minute and then say only that
    its context was stopped. Other masters are left to Spark."""
    import socket

    if not master.startswith("spark://"):
        return
    why = []
    for address in master[len("spark://"):].split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                return
        except (OSError, ValueError) as e:
            why.append(f"{address.strip()}: {e.strerror or e}" if isinstance(e, OSError) else
                       f"{address.strip()}: not host:port")
    msg = (f"no Spark master answers at {master} ({'; '.join(why)}): is the master running, and "
           "is its address right? (its URL is on the master's web page, spark://host:7077 by default)")
    raise CaptureError(msg)


def quiet_query_context_logs() -> None:
    """pyspark 4 logs every analysis error with its query context and Java stack (a JSON
    line of kilobytes on stderr) as it raises it; Brushfire catches those errors and says
    them at the spec's key (capture/analyze.py), so that log only buried the message."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # (pyspark 3: no such log)
        return
    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True


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
    """The source as a DataFrame: read, derived columns added, static filters applied
    (a source with joins: capture/analyze.py's `analyze_source`)."""
    from pyspark.sql import functions as F

    with spark_errors("reading the source"):
        reader = spark.read.format(source.resolved_format).options(**source.reader_options)
        df = reader.load(source.path)
        for name, expr in source.columns.items():
            df = df.withColumn(name, F.expr(expr))
        for cond in source.filters:
            df = df.where(F.expr(cond))
        _ = df.schema  # analysis happens here: bad expressions fail now, before any job
    return df


def collect_utc(df) -> list:
    """`df.collect()`, with its TIMESTAMP (zoned) values as the UTC datetimes (naive) the
    engine reads: pyspark makes them the Python process's local time, so on a host not
    in UTC what the driver collects would be shifted by its offset (a details row of
    04:00 UTC read 23:00 the day before in New York). The lazy answers (spark_source.py)
    and capture's checks that name a value (analyze.py) collect with it."""
    from pyspark.sql import Row
    from pyspark.sql.types import TimestampType

    rows = df.collect()
    zoned = [i for i, f in enumerate(df.schema.fields) if isinstance(f.dataType, TimestampType)]
    if not zoned or not rows:
        return rows
    make = Row(*df.schema.names)
    out = []
    for r in rows:
        values = list(r)
        for i in zoned:
            if values[i] is not None:  # (naive local time -> the instant, in UTC)
                values[i] = values[i].astimezone(UTC).replace(tzinfo=None)
        out.append(make(*values))
    return out


def schema_kinds(df) -> dict[str, str]:
    """{column: 'number' | 'temporal' | 'string' | 'other'} for spec checks; capture's own
    columns (`__bf_...`: where a row comes from) are not the source's and not named."""
    from pyspark.sql import types as T

    out = {}
    for f in df.schema.fields:
        if f.name.startswith("__bf_"):
            continue
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


class SparkRunner:
    """capture.Runner on Spark: the source's files as Spark lists them, the scan as one
    `mapInArrow` job over them, the key job as one task per shard. Executors run
    Brushfire's own Python (capture/scan.py, capture/keys.py) and write into the cache
    entry, which they must share with the driver; the driver collects small summaries."""

    def __init__(self, spark, dash: m.DashboardSpec, config, progress: Progress,
                 broadcast_bytes: int | None = None) -> None:
        from brushfire.capture.analyze import (
            BROADCAST_BYTES,
            analyze_source,
            check_join_keys,
            read_raw,
        )
        from brushfire.spec.checks import check_columns

        self.spark, self.dash, self.progress = spark, dash, progress
        self.master = spark.sparkContext.master
        self.broadcast = BROADCAST_BYTES if broadcast_bytes is None else broadcast_bytes
        # (a CSV or JSON source's types are inferred by a Spark job over its rows: shown)
        with track_progress(spark, progress, "reading the source: its columns and types"):
            self.df = analyze_source(spark, dash, origin=True, broadcast_bytes=self.broadcast)
            # (every spec error found before any job)
            check_columns(dash, schema_kinds(self.df))  # now with derived columns' types
            self.raw = read_raw(spark, dash.source)  # the files as read (never a cached plan)
        self.raw_schema = self.raw.schema
        self.split = spark.conf.get("spark.sql.files.maxPartitionBytes")
        self._files: list[dict] | None = None
        self._footers: tuple[list[dict], dict] | None = None
        self._joins: dict[str, str] | None = None
        if dash.source.joins:  # a duplicated dimension key: refused before the scan
            progress("checking that the joins' keys are unique", None)
            fields = {f.name: f.dataType for f in self.df.schema.fields}
            check_join_keys(spark, dash, {j.name: fields.get(j.on) for j in dash.source.joins})

    def source(self):
        """The source as a dashboard without lineage reads it (joins made, no row origin)."""
        from brushfire.capture.analyze import analyze_source

        return analyze_source(self.spark, self.dash, broadcast_bytes=self.broadcast)

    def files(self) -> list[dict]:
        from brushfire.source import file_record

        if self._files is None:
            with spark_errors("listing the source's files"):
                uris = sorted(self.raw.inputFiles())
            out = []
            for u in uris:
                try:
                    out.append(file_record(u))
                except OSError:  # not a local file: never reused (no size or time known)
                    out.append({"uri": u, "path": u, "size": -1, "mtime_ns": -1})
            self._files = out
        return self._files

    def definitions(self, columns: list[str]) -> dict[str, str]:
        from brushfire.lineage.store import files_fingerprint

        types = {f.name: f.dataType.simpleString() for f in self.df.schema.fields}
        folded = {n.lower(): t for n, t in types.items()}  # (as Spark resolves an expression's names)
        src = self.dash.source
        checks = {fd.view_name: fd.model_dump(mode="json") for fd in
                  (self.dash.profile.fd if self.dash.profile else [])}
        joins = self.join_definitions()
        everything = sorted(joins.values())  # (what an expression may read)
        out = {}
        for c in columns:
            if c in checks:  # a profiling check's column depends on every row of the source,
                # and on what its columns are (a derived one's expression, their types)
                reads = set().union(*(expression_reads(src.columns, _quoted(n))
                                      for n in checks[c]["lhs"] + checks[c]["rhs"]))
                what = ["check", checks[c], files_fingerprint(self.files()), everything,
                        sorted((n, src.columns[n]) for n in reads if n in src.columns),
                        sorted((n, folded.get(n.lower())) for n in reads)]
            elif c in src.columns:  # its expression, and what it reads (as Spark types it)
                reads = {c} | expression_reads(src.columns, src.columns[c])
                what = ["derived", c, sorted((n, src.columns[n]) for n in reads if n in src.columns),
                        sorted((n, folded.get(n.lower())) for n in reads), types.get(c), everything]
            elif src.join_of(c) is not None:  # its chain of joins and their tables' files
                what = ["joined", c, types.get(c), [joins[j.name] for j in src.join_chain(c)]]
            else:
                what = ["column", c, types.get(c)]
            out[c] = _digest(what)
        return out

    def join_definitions(self) -> dict[str, str]:
        """A hash of each join: its spec and its table's files (names, sizes, times; a
        remote table's never match, so its columns are scanned again every capture)."""
        import uuid

        from brushfire.lineage.store import files_fingerprint
        from brushfire.source import local_files

        if self._joins is None:
            self._joins = {}
            for j in self.dash.source.joins:
                files = local_files(j)
                what = files_fingerprint(files) if files is not None else uuid.uuid4().hex
                self._joins[j.name] = _digest([j.model_dump(mode="json"), what])
        return self._joins

    def _read_columns(self) -> list:
        """The fields of the source's raw schema that the spec reads (all of them when an
        expression cannot be parsed)."""
        used = spec_columns(self.dash)
        used = None if used is None else {c.lower() for c in used}
        return [f for f in self.raw_schema.fields if used is None or f.name.lower() in used]

    def _schemas(self, files: list[dict]) -> dict:
        """The footers of `files` with rows (source.footer_schemas), read once per capture."""
        from brushfire.source import footer_schemas

        if self._footers is None or self._footers[0] is not files:
            self._footers = (files, footer_schemas(self.dash.source.resolved_format, files, empty=False))
        return self._footers[1]

    def lacking(self, files: list[dict]) -> dict[str, list[str]]:
        from brushfire.source import lacking_columns

        fmt = self.dash.source.resolved_format
        columns = [f.name for f in self._read_columns()]
        return lacking_columns(fmt, files, columns, self._schemas(files)) if columns else {}

    def mistyped(self, files: list[dict]) -> dict[str, list[tuple]]:
        from brushfire.source import footer_schemas, mistyped_columns

        if self.dash.source.resolved_format != "parquet":  # (ORC's reader widens otherwise)
            return {}
        types = {f.name: f.dataType.simpleString() for f in self._read_columns()}
        # (the first file's footer, rows or none: Spark types the folder by it)
        first = footer_schemas("parquet", files[:1]).get(files[0]["uri"]) if files else None
        return mistyped_columns(self._schemas(files), types, first)

    def join_files(self) -> list[dict]:
        from brushfire.source import join_files

        return join_files(self.dash.source) or []

    def rows_identity(self) -> str:
        src = self.dash.source
        reads = set().union(*(expression_reads(src.columns, f) for f in src.filters))
        # the joins that decide which rows pass the filters: a changed dimension table no
        # filter reads (through its chain) rescans only the joined columns
        deciding = joins_read(src, reads)
        joins = sorted(h for name, h in self.join_definitions().items() if name in deciding)
        # the types of what the filters read (a CSV column an appended file widens)
        types = {f.name.lower(): f.dataType.simpleString() for f in self.df.schema.fields}
        return _digest([src.resolved_format, sorted(src.reader_options.items()), src.filters,
                        sorted(src.columns.items()) if src.filters else [], self.split]
                       + ([joins] if joins else [])
                       + ([sorted((c, types.get(c.lower())) for c in reads)] if reads else []))

    def scan(self, files: list[dict], spec, shards_dir, run: str) -> list[dict]:
        from pyspark.sql import functions as F

        from brushfire.capture.analyze import ORIGIN, analyze_source
        from brushfire.capture.scan import FILE_COLUMN, START_COLUMN

        every = {f["uri"] for f in files} == {f["uri"] for f in self.files()}
        df = self.df if every else analyze_source(
            self.spark, self.dash, paths=[f["path"] for f in files], schema=self.raw_schema,
            origin=True, broadcast_bytes=self.broadcast, whole=self.df)
        fields = list(dict.fromkeys(spec.fields + spec.snapshot + spec.nulls))
        # (mapInArrow resolves its input columns by name, where a joined column's dot would
        # read as a struct's field: positional names on the way, the columns' own in the task)
        columns = [F.col(_quoted(c)).alias(f"__bf_c{i}") for i, c in enumerate(fields)]
        origin = [F.hash(F.col(ORIGIN[0])).alias(FILE_COLUMN), F.col(ORIGIN[1]).alias(START_COLUMN)]
        directory = str(shards_dir)

        def job(names: list[str]):
            def run_scan(batches):
                import pickle

                from pyspark import TaskContext

                from brushfire.capture.scan import scan_partition

                pid = TaskContext.get().partitionId()
                named = (pa.RecordBatch.from_arrays(b.columns, names=names) for b in batches)
                out = scan_partition(named, spec, directory, run, pid)
                yield pa.RecordBatch.from_pydict({"payload": [pickle.dumps((pid, out))]})

            return run_scan

        uris = {f["uri"] for f in files}
        # each input split its own partition (no packing of small files), so that a file's
        # splits and shards are the same in every capture, whatever else the source holds
        with self._row_errors(), self._cast_errors(), spark_errors("scanning the source"), _conf(self.spark, {
                "spark.sql.files.openCostInBytes": self.split}), \
                track_progress(self.spark, self.progress, "scan: encoding the source's rows"):
            # where each task reads one split, the driver knows which: the rows carry no
            # origin (tagging each row with its file costs the scan a third more)
            scan = df.select(*columns).mapInArrow(job(fields), "payload binary")
            splits = partition_splits(scan)
            if splits is None or not {s[0] for s in splits if s is not None} <= uris:
                splits = None
                scan = df.select(*columns, *origin).mapInArrow(job([*fields, FILE_COLUMN, START_COLUMN]),
                                                             "payload binary")
            rows = scan.collect()
        out = [(pid, s) for r in rows for pid, shards in [pickle.loads(r["payload"])] for s in shards]
        hashes = self._uri_hashes(sorted(uris)) if splits is None else {}
        for pid, s in out:
            if s["file"] is not None:
                s["file"], s["start"] = splits[pid] if splits is not None else (hashes[s["file"]], s["start"])
        return [s for _, s in out]

    @contextlib.contextmanager
    def _cast_errors(self) -> Iterator[None]:
        """A scan failing on a cast: when a join compares a string `on` with a key of
        another type (Spark casts each `on` to it, as SQL does, and fails on a value that is
        not one), say which join, not only Spark's value and type."""
        try:
            yield
        except CaptureError as e:
            if "cannot be cast to" not in str(e):
                raise
            fields = {f.name: f.dataType for f in self.df.schema.fields}
            for j in self.dash.source.joins:
                on, key = fields.get(j.on), fields.get(f"{j.name}.{j.key}")
                if on is not None and key is not None and on.typeName() == "string" != key.typeName():
                    from brushfire.capture.analyze import key_as_joined

                    t = (key_as_joined(self.spark, on, key) or on.simpleString()).upper()  # (on, cast)
                    msg = (f"{e}; join {j.name!r} compares {j.on!r} (STRING) with key {j.key!r} of "
                           f"{j.path} ({key.simpleString().upper()}): Spark casts each {j.on!r} to {t}, "
                           "as SQL does, and fails "
                           f"on a value that is not one; hint: give {j.on!r} and {j.key!r} one type "
                           "in the files")
                    raise CaptureError(msg) from e
            raise

    @contextlib.contextmanager
    def _row_errors(self) -> Iterator[None]:
        """A scan failing on a row (Spark's ANSI mode: text a cast cannot read, a division by
        zero): say which derived column or static filter fails, with the spec's file and
        line, when one of them fails on the first rows of the source alone."""
        try:
            yield
        except CaptureError as e:
            found = self._failing_expression()
            if found is None:
                raise
            loc, text = found
            from brushfire.capture.analyze import _spec_error

            raise _spec_error(self.dash, loc, f"Spark fails on a row: {text}",
                              row_error_hint(text, self.dash.source, loc)) from e

    def _failing_expression(self, rows: int = 100_000) -> tuple[tuple, str] | None:
        """The first derived column or static filter, in the spec's order, that Spark fails
        to compute over the first `rows` rows (with the derived columns above it, the
        filters before it), and Spark's reason; None if none does."""
        from pyspark.sql import functions as F

        from brushfire.capture.analyze import _join_dimensions, read_raw, spark_message

        def failure(df) -> str | None:
            try:
                df.limit(rows).collect()
            except Exception as e:
                if type(e).__module__.split(".")[0] not in ("pyspark", "py4j"):
                    raise
                return spark_message(e)
            return None

        src = self.dash.source
        try:
            df = read_raw(self.spark, src)
            if src.joins:
                df, _, _ = _join_dimensions(self.spark, self.dash, df, self.broadcast, False)
            if failure(df) is not None:  # (reading or joining fails: no expression to name)
                return None
            for name, text in src.columns.items():
                df = df.withColumn(name, F.expr(text))
                if (why := failure(df.select(_quoted(name)))) is not None:
                    return ("source", "columns", name), why
            for i, text in enumerate(src.filters):
                if (why := failure(df.select(F.expr(text)))) is not None:
                    return ("source", "filters", i), why
                df = df.where(F.expr(text))
        except Exception as e:  # the search is a courtesy: Spark's own error stands
            if type(e).__module__.split(".")[0] not in ("pyspark", "py4j"):
                raise
        return None

    def _uri_hashes(self, uris: list[str]) -> dict[int, str]:
        """{Spark's hash of a file's name: the name} (the scan tags rows with the hash)."""
        out = {spark_string_hash(u): u for u in uris}
        if len(out) != len(set(uris)):
            msg = "two of the source's file names hash alike; rename one of them"
            raise CaptureError(msg)
        return out

    def key(self, tasks: list[dict], layout: Layout, dash: m.DashboardSpec, shards_dir) -> list[dict]:
        directory = str(shards_dir)
        sc = self.spark.sparkContext
        # about as many partitions as the executors run at once (each task costs Spark
        # ~0.1 s to schedule), shards spread over them by rows
        parts = max(1, min(len(tasks), 2 * sc.defaultParallelism))
        ordered = sorted(tasks, key=lambda t: -t["n_rows"])
        slices: list[list[dict]] = [[] for _ in range(parts)]
        load = [0] * parts
        for t in ordered:
            i = load.index(min(load))
            slices[i].append(t)
            load[i] += t["n_rows"] + 1

        def run_key(batches):
            from pathlib import Path

            from pyspark import TaskContext

            from brushfire.capture.keys import key_shard

            for _ in batches:
                pass
            got = [(t["name"], key_shard(Path(directory) / t["name"], t["n_rows"], t["fields"],
                                         layout, dash, t["tag"], t["rows"], t["wanted"],
                                         t.get("previous"), t.get("copies")))
                   for t in slices[TaskContext.get().partitionId()]]
            yield pa.RecordBatch.from_pydict({"payload": [pickle.dumps(got)]})

        # a task per slice, as a SQL job whose Python runs like the scan's: in the Python
        # workers the scan started, Brushfire already imported (an RDD job's Python runs
        # in workers of its own, started and importing Brushfire again: ~1-3 s)
        with spark_errors("building the lineage"), \
                track_progress(self.spark, self.progress, "key job: building the lineage"):
            rows = self.spark.range(0, parts, numPartitions=parts) \
                .mapInArrow(run_key, "payload binary").collect()
        got = dict(item for r in rows for item in pickle.loads(r["payload"]))
        return [got[t["name"]] for t in tasks]


def partition_splits(df) -> list[tuple[str, int] | None] | None:
    """Per partition of `df`, the input split it reads — (file URI as input_file_name()
    gives it, split start), None for none — where `df` reads one file source, one split
    in each partition, and shuffles nothing; else None (and on anything unexpected: the
    plan's classes are Spark's internals, read through py4j)."""
    try:
        plan = df._jdf.queryExecution().executedPlan()
        leaves = plan.collectLeaves()
        if leaves.size() != 1 or "Exchange" in plan.toString():
            return None
        scan = leaves.apply(0)
        if scan.getClass().getSimpleName() != "FileSourceScanExec":
            return None
        parts = scan.inputRDD().filePartitions()
        out: list[tuple[str, int] | None] = []
        for i in range(parts.size()):
            part = parts.apply(i)
            files = list(part.files())
            if part.index() != i or len(files) > 1:
                return None
            out.append((str(files[0].urlEncodedPath()), int(files[0].start())) if files else None)
        return out
    except Exception:  # noqa: BLE001 (another Spark, Spark Connect: rows tagged instead)
        return None


def spark_string_hash(text: str, seed: int = 42) -> int:
    """Spark SQL's `hash(text)` (Murmur3 x86 32-bit, as Spark runs it over a string's
    UTF-8 bytes: whole 4-byte words, then each remaining byte as a word of its own)."""
    data = text.encode("utf-8")
    whole = len(data) - len(data) % 4
    h = seed
    words = [int.from_bytes(data[i:i + 4], "little") for i in range(0, whole, 4)]
    words += [b - 256 if b > 127 else b for b in data[whole:]]  # (signed bytes)
    for k in words:
        k = (k & 0xFFFFFFFF) * 0xCC9E2D51 & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        k = k * 0x1B873593 & 0xFFFFFFFF
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= len(data)
    h ^= h >> 16
    h = h * 0x85EBCA6B & 0xFFFFFFFF
    h ^= h >> 13
    h = h * 0xC2B2AE35 & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def _quoted(c: str) -> str:
    return "`" + c.replace("`", "``") + "`"


def joins_read(src: m.Source, reads: set[str]) -> set[str]:
    """The names of the joins whose tables decide the columns `reads` (expression_reads'):
    each joined column's join and the joins before it in its chain (names compared as
    Spark resolves them, case-insensitively); every join when an expression does not
    parse (a trusted deployment's: what it reads is not known)."""
    from brushfire.spec.expressions import ExpressionError, analyze

    try:
        for text in [*src.filters, *src.columns.values()]:
            analyze(text, check=False)
    except ExpressionError:
        return {j.name for j in src.joins}
    by_name = {j.name.lower(): j for j in src.joins}
    out: set[str] = set()
    for c in reads:
        head, dot, _ = c.partition(".")
        j = by_name.get(head.lower()) if dot else None
        if j is not None:
            out |= {x.name for x in src.join_chain(f"{j.name}.{j.key}")}
    return out


def expression_reads(columns: Mapping[str, str], text: str) -> set[str]:
    """The columns an expression over the source reads: the derived columns (`columns`)
    it names, and theirs, transitively, and the source columns they name, as the spec
    spells them (Spark resolves names case-insensitively). Every derived column, when an
    expression does not parse (a trusted deployment's: BRUSHFIRE_TRUSTED_EXPRESSIONS)."""
    from brushfire.spec.expressions import ExpressionError, analyze

    derived = {c.lower(): c for c in columns}
    out: set[str] = set()
    todo = [text]
    while todo:
        try:
            read = [c for c, _ in analyze(todo.pop(), check=False).columns]
        except ExpressionError:
            return out | set(columns)
        for c in read:
            c = derived.get(c.lower(), c)
            if c not in out:
                out.add(c)
                if c in columns:
                    todo.append(columns[c])
    return out


def _digest(obj) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:20]


@contextlib.contextmanager
def _conf(spark, settings: dict[str, str]) -> Iterator[None]:
    """Spark SQL settings for the duration of a job, restored after."""
    before = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def run_base_queries(df, dash: m.DashboardSpec) -> tuple[float, dict[str, dict]]:
    """Each view's plain aggregate query on Spark, one job per view, as a dashboard
    without lineage would run them. Returns (seconds, {view: {key: (count, value)}}) with
    key = bar number (histogram, heatmap, calendar part), bar start in UTC microseconds (temporal) or
    value (categorical; the top N is left to the caller), and value the sum of the
    measure (sum and mean views), the view's order statistic (median, quantile, min, max,
    distinct: of any measure type, times too), or None (count views)."""
    t0 = time.perf_counter()
    kinds = schema_kinds(df)
    out = {}
    for v in dash.views:
        with spark_errors(f"running the base query of view {v.name}"):
            rows = _base_query(df, v, kinds).collect()
        out[v.name] = {r["key"]: (r["n"], r["s"] if v.aggregate.field else None)
                       for r in rows if r["key"] is not None}
    return time.perf_counter() - t0, out


def _base_query(df, v, kinds: dict[str, str]):
    """View v's plain aggregate query: its rows per key (`key`, `n`) and, with a measure,
    its value (`s`): the measure's sum, or its order statistic."""
    from pyspark.sql import functions as F

    key = F.expr(view_type(v).base_key_sql(v, sql.SPARK))
    aggs = [F.count(F.lit(1)).alias("n")]
    agg = v.aggregate
    if agg.field and agg.order:  # (a sum of a time has no meaning: Spark refuses the cast)
        aggs.append(F.expr(sql.aggregate_sql(agg, kinds.get(agg.field, "number"), sql.SPARK)).alias("s"))
    elif agg.field:
        aggs.append(F.sum(F.col(_quoted(agg.field)).cast("double")).alias("s"))
    return df.groupBy(key.alias("key")).agg(*aggs)


def run_fused_query(df, dash: m.DashboardSpec) -> float:
    """Every view's aggregate in one Spark job (one scan, GROUPING SETS over the views'
    keys): the best a Spark user could write for the dashboard without lineage. Returns
    its seconds. A view of an order statistic (median, quantile, min, max, distinct) gets a
    job of its own: over GROUPING SETS Spark computes an aggregate for every set, and an
    order statistic keeps each group's values, so one median made the fused job of
    movies-3m 109 s where the job without it took 4.4 s and the median's own 6.5 s."""
    from pyspark.sql import functions as F

    kinds = schema_kinds(df)
    fused = [v for v in dash.views if not (v.aggregate.field and v.aggregate.order)]
    alone = [v for v in dash.views if v not in fused]
    keys = [F.expr(view_type(v).base_key_sql(v, sql.SPARK)).alias(f"k{i}")
            for i, v in enumerate(fused)]
    measures = list(dict.fromkeys(v.aggregate.field for v in fused if v.aggregate.field))
    name = f"brushfire_fused_{abs(hash(dash.name))}"
    df.select(*keys, *[F.col(_quoted(f)) for f in measures]).createOrReplaceTempView(name)
    select = ", ".join(f"k{i}" for i in range(len(fused)))
    sets = ", ".join(f"(k{i})" for i in range(len(fused)))
    aggs = "".join(f", sum(CAST({_quoted(v.aggregate.field)} AS DOUBLE)) AS s{i}"
                   for i, v in enumerate(fused) if v.aggregate.field)  # (sums: no order statistic)
    t0 = time.perf_counter()
    with spark_errors("running every view's aggregate in one job"):
        if fused:
            df.sparkSession.sql(f"SELECT {select}, grouping_id() AS g, count(1) AS n{aggs} FROM {name} "
                                f"GROUP BY GROUPING SETS ({sets})").collect()
        for v in alone:
            _base_query(df, v, kinds).collect()
    return time.perf_counter() - t0


_CAST_TEXT = re.compile(r"The value '(?P<value>[^']*)' of the type \"STRING\" cannot be cast to "
                        r"\"(?P<type>TIMESTAMP|TIMESTAMP_NTZ|DATE)\"")
_TIME_FUNCTIONS = re.compile(r"\b(to_timestamp|to_date|timestamp|date|to_timestamp_ntz|to_timestamp_ltz)"
                             r"\s*\(\s*([^,()]+?)\s*\)", re.IGNORECASE)


def row_error_hint(text: str, source: m.Source, loc: tuple) -> str:
    """What to write instead, for Spark's failure on a row of an expression at `loc`: a
    text's datetime pattern (guessed from the value Spark names), the try_ functions."""
    cast = _CAST_TEXT.search(text)
    expr = source.columns[loc[2]] if loc[1] == "columns" else source.filters[loc[2]]
    if cast:
        pattern = datetime_pattern(cast["value"])
        call = _TIME_FUNCTIONS.search(expr)
        if pattern and call:
            return (f"give the text's format: {call[1]}({call[2]}, '{pattern}') (Spark's datetime "
                    f"patterns), or try_to_timestamp({call[2]}, '{pattern}') to read text that does "
                    "not match as null")
        return ("give the text's format, e.g. to_timestamp(x, 'yyyy/MM/dd HH:mm') (Spark's datetime "
                "patterns), or try_to_timestamp(x, '...') to read text that does not match as null")
    low = text.lower()
    if "raise_error" in expr.lower():
        return "the expression's raise_error(...) fails the capture on such a row, as written"
    if "divide" in low and "zero" in low:
        return "try_divide(a, b) is null where b is 0 (Spark's ANSI mode fails on a / 0)"
    return ("Spark's ANSI mode fails on such a value; the try_ functions (try_cast, "
            "try_to_timestamp, try_divide, try_add) give null instead")


def _month_day(g) -> str:
    """'1/31/2010' (the US order) is 'M/d/yyyy'; '31/1/2010', whose first number is no
    month, 'd/M/yyyy' (one letter reads one digit or two: '01' too)."""
    return f"d{g[2]}M{g[2]}yyyy" if int(g[1]) > 12 else f"M{g[2]}d{g[2]}yyyy"


_PATTERN_PARTS = [  # a datetime text's shapes, as Spark's datetime patterns
    (re.compile(r"^(\d{4})([-/.])(\d{1,2})\2(\d{1,2})"),  # one letter: one digit or two
     lambda g: f"yyyy{g[2]}{'MM' if len(g[3]) == 2 else 'M'}{g[2]}{'dd' if len(g[4]) == 2 else 'd'}"),
    (re.compile(r"^(\d{1,2})([-/.])(\d{1,2})\2\d{4}"), _month_day),
    # 'Jan 1 2000' (MMM), 'June 12, 1998' (MMMM: a month's full name)
    (re.compile(r"^([A-Z][a-z]{2,8}) (\d{1,2}),? (\d{4})"),
     lambda g: f"{'MMM' if len(g[1]) == 3 else 'MMMM'} d{',' if ',' in g[0] else ''} yyyy"),
]
_TIME_PARTS = [(re.compile(r"^[ T](\d{1,2}):(\d{2}):(\d{2})(\.\d{1,9})?$"), ":ss"),
               (re.compile(r"^[ T](\d{1,2}):(\d{2})$"), "")]


def datetime_pattern(value: str) -> str | None:
    """Spark's datetime pattern of a common date or time text ('2010/01/31 00:00':
    'yyyy/MM/dd HH:mm'; 'Jan 1 2000': 'MMM d yyyy'; '1/31/2010 10:00:00.5': 'M/d/yyyy
    H:mm:ss.S'), or None."""
    for shape, pattern in _PATTERN_PARTS:
        if (found := shape.match(value)) is None:
            continue
        date_part, rest = pattern(found), value[found.end():]
        if not rest:
            return date_part
        for time_shape, seconds in _TIME_PARTS:
            if (t := time_shape.match(rest)) is not None:
                hours = "HH" if len(t[1]) == 2 else "H"
                fraction = "." + "S" * (len(t[4]) - 1) if seconds and t[4] else ""  # ('.123': '.SSS')
                return (f"{date_part}{' ' if rest[0] == ' ' else chr(39) + 'T' + chr(39)}{hours}:mm"
                        f"{seconds}{fraction}")
        return None
    return None


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
        from brushfire.capture.analyze import spark_message

        lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
        first = spark_message(e)  # the Java cause (a file that vanished or changed its types, named)
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


# seconds a job may wait with no executor at all before it is cancelled and said: a
# standalone cluster's executors register within seconds, YARN's or Kubernetes' containers
# within a minute or two; past that, the master has none to give (no worker, or none with
# the cores and memory an executor asks), and Spark would wait for ever
EXECUTOR_WAIT = 180.0


@contextlib.contextmanager
def executors_watched(spark, every: float = 0.5) -> Iterator[None]:
    """Run the block's Spark jobs; one that waits EXECUTOR_WAIT seconds with no executor
    registered (not on a local master) is cancelled, and the block fails saying why."""
    sc = spark.sparkContext
    if sc.master.startswith("local"):
        yield
        return
    tracker = sc.statusTracker()
    done = threading.Event()
    starved: list[str] = []

    def watch() -> None:
        since = None
        while not done.wait(every):
            if not tracker.getActiveJobsIds() or _executors(sc) > 0:
                since = None
                continue
            since = since or time.monotonic()
            if time.monotonic() - since > EXECUTOR_WAIT:
                memory = sc.getConf().get("spark.executor.memory", "1g")
                starved.append(f"the Spark master {sc.master} gave this capture no executor in "
                               f"{EXECUTOR_WAIT:.0f} s: are its workers up, with a free core and "
                               f"the memory an executor asks (spark.executor.memory={memory})?")
                sc.cancelAllJobs()
                return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield
    except Exception as e:
        if starved:
            raise CaptureError(starved[0]) from e
        raise
    finally:
        done.set()
        thread.join()


def _executors(sc) -> int:
    """The executors registered with the application now (the driver is listed too)."""
    try:
        return len(sc._jsc.sc().statusTracker().getExecutorInfos()) - 1
    except Exception:  # (a context stopping: say there is one, never cancel on a guess)
        return 1
