"""A dashboard's source on Spark, for the lazy answers (brushfire/lazy.py): the source
registered as a cached temporary view on the process's Spark session, the queries the
lazy answers write run on it in cancellable job groups, their progress, and the source's
rows numbered as capture numbers them (rids). One `SparkSource` per dashboard
(`source_for`), shared by its sessions; it knows nothing of filters or sessions.
"""

from __future__ import annotations

import threading
import uuid
import weakref

from brushfire import sql
from brushfire.errors import BrushfireError, InteractionError, NotCapturedError
from brushfire.spec import models as m


class Cancelled(BrushfireError):
    """A lazy answer was cancelled by the next interaction."""


class SparkSource:
    """A dashboard's source on Spark, for lazy answers; shared by its sessions."""

    def __init__(self, spec: m.DashboardSpec, store, master: str | None = None) -> None:
        """`store`: the captured store, whose rows and shards rids are checked against
        (not kept: a source must not keep a dashboard's arrays alive)."""
        self.spec, self.master = spec, master
        self.n_rows = store.n_rows
        self.shards = [(*s.source, s.start, s.n_rows) for s in store.shards
                       if s.n_rows]
        # the files the capture read, and only those: a file appended since (not captured
        # until the next reload, serve --watch) must not count in an answer whose other
        # views are the capture's
        self.paths = _local_paths({s.source[0] for s in store.shards})
        self.table = f"brushfire_lazy_{uuid.uuid4().hex[:12]}"
        self._lock = threading.Lock()
        self.spark = None
        self.columns: dict[str, str] = {}  # column -> kind (number, temporal, string, other)
        self._rid_sql: str | None = None
        self._known: tuple[dict[str, str | None] | None] | None = None  # known_columns, once

    def known_columns(self) -> dict[str, str | None] | None:
        """The source's columns as Spark reads it ({column: kind, None where only Spark can
        tell}), known without starting Spark: Spark's own once started, else footers or a
        CSV header (brushfire.source.source_columns), the derived columns and the
        profiling checks' columns. None when only Spark can tell (a JSON source). Names
        are checked against it before any Spark job, so that no message naming a column
        that is not there starts one."""
        if self.spark is not None:
            return self.columns
        if self._known is None:
            from brushfire.source import source_columns

            try:
                found = source_columns(self.spec.source)
            except BrushfireError:  # unreadable now: Spark will say why, at its turn
                found = None
            if found is not None and self.spec.profile is not None:
                found |= {fd.view_name: "string" for fd in self.spec.profile.fd}
            self._known = (found,)
        return self._known[0]

    def start(self):
        """The Spark session, and the source registered as a temporary view (first call)."""
        with self._lock:
            if self.spark is None:
                from pyspark.sql import functions as F

                from brushfire.capture.analyze import analyze_source
                from brushfire.capture.spark import get_spark, schema_kinds

                spark = get_spark(self.master)
                # (a column of its own, so that no other query's plan matches the cached one:
                # Spark would answer it from the cache, with no files to list)
                # (every column of the joined tables: a lazy filter may name any of them)
                df = analyze_source(spark, self.spec, paths=self.paths, origin=True,
                                    all_columns=True).withColumn("__bf_lazy", F.lit(self.table))
                df.createOrReplaceTempView(self.table)
                # kept by Spark (memory, then disk) once the first answer has read it: later
                # answers neither re-read the files nor recompute the profiling checks
                spark.catalog.cacheTable(self.table)
                # ... until this source is gone (its capture replaced by a newer one, serve
                # --watch): else every reload would leave a cached copy of the source
                weakref.finalize(self, _drop_table, spark, self.table).atexit = False  # (Spark ends too)
                self.columns = {c: k for c, k in schema_kinds(df).items() if not c.startswith("__bf_")}
                self.spark = spark
        return self.spark

    def run(self, group: str, query: str, what: str) -> list:
        """Rows of `query`, run in job group `group` (cancelled by `cancel(group)`)."""
        from brushfire.capture.spark import collect_utc

        spark = self.start()
        sc = spark.sparkContext
        sc.setJobGroup(group, what, interruptOnCancel=True)
        try:
            return collect_utc(spark.sql(query))
        except Exception as e:
            if type(e).__module__.split(".")[0] not in ("pyspark", "py4j"):
                raise
            text = str(e)
            if "cancel" in text.lower():
                msg = f"{what}: cancelled by the next interaction"
                raise Cancelled(msg) from None
            from brushfire.capture.analyze import spark_message

            msg = f"Spark failed while {what}: {spark_message(e)}"
            raise InteractionError(msg) from None
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
            sc.setLocalProperty("spark.job.description", None)

    def cancel(self, group: str) -> None:
        if self.spark is not None:
            self.spark.sparkContext.cancelJobGroup(group)

    def progress(self, group: str) -> tuple[str, float | None]:
        """(stage, fraction of its tasks done) of the jobs running in `group`."""
        if self.spark is None:
            return "starting Spark", None
        tracker = self.spark.sparkContext.statusTracker()
        total = done = 0
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            for sid in (info.stageIds if info else []):
                stage = tracker.getStageInfo(sid)
                if stage:
                    total += stage.numTasks
                    done += stage.numCompletedTasks
        return "running on Spark", (done / total if total else None)

    def rid_table(self, group: str) -> str:
        """SQL of the source with each row's rid (`__rid`): its place in capture's order, by
        input file, split and position (capture/analyze.py, `with_row_origin`). Checked
        against the store's shards once."""
        if self._rid_sql is None:
            from brushfire.capture.analyze import ORIGIN, rid_offsets

            self.start()
            file, start, pos = ORIGIN
            counts = self.run(group, f"SELECT {file}, {start}, count(1) AS n FROM {self.table} "
                                     "GROUP BY 1, 2", "numbering the source's rows")
            sizes = {(r[0], int(r[1])): int(r["n"]) for r in counts}
            offsets = rid_offsets(sizes)
            self._check_rids(sizes, offsets)
            cases = " ".join(f"WHEN {file} = {sql.value_lit(f, sql.SPARK)} AND {start} = {s} THEN {o}"
                             for (f, s), o in offsets.items()) or "WHEN false THEN 0"
            self._rid_sql = (f"SELECT *, (CASE {cases} END) + row_number() OVER (PARTITION BY "
                             f"{file}, {start} ORDER BY {pos}) - 1 AS __rid FROM {self.table}")
        return self._rid_sql

    def _check_rids(self, sizes: dict[tuple, int], offsets: dict[tuple, int]) -> None:
        total = sum(sizes.values())
        if total != self.n_rows:
            msg = (f"the source has {total:,} rows now, the capture {self.n_rows:,}: "
                   "recapture the dashboard to answer this")
            raise NotCapturedError(msg)
        # a rid is a row's place in file order, whatever the splits: Spark may split a file
        # otherwise now than capture's scan did (which packs no splits together; here a
        # split's size also depends on the cores), so each file's rows, and its first rid,
        # are what must be the capture's
        captured: dict[str, tuple[int, int]] = {}  # file -> (first rid, rows)
        for file, _split, start, n in self.shards:  # a shard holds rows of one split
            first, rows = captured.get(file, (start, 0))
            captured[file] = (min(first, start), rows + n)
        now: dict[str, tuple[int, int]] = {}
        for (file, split), n in sizes.items():
            first, rows = now.get(file, (offsets[(file, split)], 0))
            now[file] = (min(first, offsets[(file, split)]), rows + n)
        if captured != now:
            msg = ("Spark reads other rows from the source's files than the capture did: rows "
                   "cannot be matched to rids; recapture the dashboard to answer this")
            raise NotCapturedError(msg)


def _local_paths(uris: set) -> list[str] | None:
    """The local files a capture read, as capture reads them (their paths, as
    `file_record`); None when it read no files or other than local ones (a remote source,
    not watched; tables given to capture/local.py): the source is read as it is."""
    from brushfire.source import local_path

    if not uris or not all(isinstance(u, str) and u.startswith("file:") for u in uris):
        return None
    return [local_path(u) for u in sorted(uris)]


def _drop_table(spark, table: str) -> None:
    """Uncache and drop a released source's view, in a thread of its own (a finalizer may
    run inside another call to Spark's gateway, on any thread)."""

    def run() -> None:
        try:
            spark.catalog.uncacheTable(table)
            spark.catalog.dropTempView(table)
        except Exception:  # noqa: BLE001, S110 - Spark stopped meanwhile: nothing is kept
            pass

    threading.Thread(target=run, name="brushfire-drop-lazy-table", daemon=True).start()


_sources: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # dashboard -> SparkSource
_sources_lock = threading.Lock()


def source_for(dash, master: str | None = None) -> SparkSource:
    """The dashboard's SparkSource (one per dashboard while it lives; `master` sets its
    Spark master, default $BRUSHFIRE_SPARK_MASTER or the process's running session)."""
    with _sources_lock:
        source = _sources.get(dash)
        if source is None:
            source = _sources[dash] = SparkSource(dash.spec, dash.store, master)
        elif master is not None:
            source.master = master
        return source
