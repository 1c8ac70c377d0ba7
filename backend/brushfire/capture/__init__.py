"""Capture: run a CapturePlan on Spark and turn its output into a lineage store.

`capture_dashboard` is the whole pipeline: check the spec's columns against the source
schema (before any Spark job), run the one capture scan, then build forward codes,
indexes and cubes in the server process.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from brushfire.capture import spark as sp
from brushfire.capture.analyze import analyze_source
from brushfire.capture.budget import decide
from brushfire.capture.build import build_store
from brushfire.capture.cubes import capture_cubes
from brushfire.lineage.arrays import CaptureInfo
from brushfire.lineage.cube_store import CubeStore
from brushfire.lineage.store import LineageStore, source_fingerprint
from brushfire.plan import CapturePlan
from brushfire.source import read_schema
from brushfire.spec.loader import check_columns

Progress = Callable[[str, float | None], None]


def capture_dashboard(plan: CapturePlan, spark=None, master: str | None = None,
                      progress: Progress | None = None, baseline: bool = False,
                      memory_budget: int | None = None) -> LineageStore | CubeStore:
    """Capture the lineage `plan` asks for. With `baseline`, also time the views' plain
    Spark queries on the same session (info.seconds['base queries']). When the per-row
    lineage would exceed `memory_budget` bytes, only cubes computed on Spark are kept
    (a CubeStore; see capture/budget.py and capture/cubes.py)."""
    progress = progress or (lambda *_: None)
    schema = read_schema(plan.dashboard.source)
    if schema is not None:  # Parquet / ORC: check columns before starting Spark at all
        check_columns(plan.dashboard, schema)
    decision = decide(plan, memory_budget)
    progress("starting Spark", None)
    spark = spark or sp.get_spark(master)
    t_all = time.perf_counter()  # capture time excludes starting the JVM, as base queries do
    info = CaptureInfo(n_rows=0, spark_master=spark.sparkContext.master,
                       source_fingerprint=source_fingerprint(plan.dashboard.source.path))
    df = analyze_source(spark, plan.dashboard)  # every spec error found before any job
    check_columns(plan.dashboard, sp.schema_kinds(df))  # now with derived columns' types
    if decision.mode == "cubes":
        info.caveats.append(f"cubes only: {decision.reason}")
        store = capture_cubes(df, plan, info, decision.reason, progress)
        info.seconds["capture"] = time.perf_counter() - t_all
        info.nbytes = store.nbytes()
        return store
    t0 = time.perf_counter()
    table = sp.collect_rows(df, plan, progress)
    info.seconds["capture job"] = time.perf_counter() - t0
    info.n_rows = table.num_rows
    store = build_store(table, plan, info, progress)
    info.seconds["capture"] = time.perf_counter() - t_all
    if baseline:
        progress("running the base queries alone, for comparison", None)
        seconds, results = sp.run_base_queries(df, plan.dashboard)
        info.seconds["base queries"] = seconds
        store.base_query_results = results
    info.nbytes = store.nbytes()
    return store
