"""Capture: run a CapturePlan on Spark into a cache entry of the lineage store.

`capture_dashboard` is the whole pipeline, in order:
1. check the spec's columns against the source schema (before any Spark job);
2. the profile (Spark aggregations, no rows moved): each brushed field's distinct values
   (or quantiles when there are many), each categorical and dropdown field's value
   counts, each temporal field's range;
3. the layout (driver, pure): `maxbins` bins chosen from the profile, then how each
   need of the plan is stored (capture/layout.py);
4. the shard job (executors): every partition's rows keyed, binned, indexed and
   aggregated into shards written straight into the entry (capture/shards.py);
5. the manifest (driver): the shards' partial aggregates summed into base results and
   cubes, then the entry published atomically and older entries of the dashboard pruned.
"""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

from brushfire import versions
from brushfire.capture import spark as sp
from brushfire.capture.analyze import analyze_source
from brushfire.capture.layout import make_layout, profile_spec, resolve_plan
from brushfire.lineage import store as st
from brushfire.lineage.arrays import CaptureInfo
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import CapturePlan
from brushfire.source import read_schema
from brushfire.spec.loader import check_columns
from brushfire.views import source_fields

Progress = Callable[[str, float | None], None]


def capture_dashboard(plan: CapturePlan, spark=None, master: str | None = None,
                      progress: Progress | None = None, baseline: bool = False,
                      cache_dir: str | Path | None = None,
                      config: CaptureConfig | None = None) -> st.LineageStore:
    """Capture the lineage `plan` asks for into an entry of `cache_dir` (a temporary
    directory when None or not writable) and return the loaded store. With `baseline`,
    also time the views' plain Spark queries on the same session. `config.memory_budget`
    bounds the per-row lineage: over it, the most expensive dims keep cubes only
    (capture/budget.py)."""
    progress = progress or (lambda *_: None)
    config = config or CaptureConfig()
    dash = plan.dashboard
    schema = read_schema(dash.source)
    if schema is not None:  # Parquet / ORC: check columns before starting Spark at all
        check_columns(dash, schema)
    progress("starting Spark", None)
    spark = spark or sp.get_spark(master)
    t_all = time.perf_counter()  # capture time excludes starting the JVM, as base queries do
    fingerprint = st.source_fingerprint(dash.source.path)
    info = CaptureInfo(n_rows=0, spark_master=spark.sparkContext.master, source_fingerprint=fingerprint)
    df = analyze_source(spark, dash)  # every spec error found before any job
    check_columns(dash, sp.schema_kinds(df))  # now with derived columns' types
    t0 = time.perf_counter()
    pspec = profile_spec(plan, config)
    profile = sp.profile_job(df, pspec, progress)
    binned = resolve_plan(plan, profile).dashboard  # the spec's bins, maxbins chosen
    layout = make_layout(replace(plan, dashboard=binned), profile, config)
    info.seconds["profile job"] = time.perf_counter() - t0

    cache = _writable(cache_dir)
    staging = cache / f".partial-{uuid.uuid4().hex[:12]}"
    shards_dir = staging / st.SHARDS
    shards_dir.mkdir(parents=True)
    try:
        t0 = time.perf_counter()
        columns = layout.source_columns({v.name: source_fields(v) for v in dash.views})
        summaries = sp.shard_job(df, columns, layout, binned, config.shard_rows, str(shards_dir),
                                 progress)
        info.seconds["shard job"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        info.shards = len(summaries)
        key = st.cache_key(dash, fingerprint, config)
        meta = st.assemble(staging, layout, summaries, info, dash, key, progress)
        info.seconds["manifest"] = time.perf_counter() - t0
        info.seconds["capture"] = time.perf_counter() - t_all
        meta["info"] = asdict(info)
        st.write_manifest(staging, meta)
        entry = st.publish(staging, cache / f"{dash.name}-{key}")
    except BaseException:
        st._remove(staging)
        raise
    st.prune(cache, dash.name, entry)
    versions.record(cache, meta, entry)  # the dashboard's history outlives pruned entries
    store = st.load_store(entry, dash, key, verify=False)
    if baseline:
        progress("running the base queries alone, for comparison", None)
        seconds, results = sp.run_base_queries(df, binned)
        store.info.seconds["base queries"] = seconds
        store.base_query_results = results
    store.info.nbytes = store.nbytes()
    return store


def _writable(cache_dir: str | Path | None) -> Path:
    """The cache directory, created; a temporary one (with a warning) when it is None or
    cannot be written, so a broken cache never costs the dashboard."""
    if cache_dir is not None:
        path = Path(cache_dir)
        try:
            path.mkdir(parents=True, exist_ok=True)
            probe = path / f".probe-{uuid.uuid4().hex[:8]}"
            probe.mkdir()
            probe.rmdir()
            return path
        except OSError as e:
            print(f"brushfire: the lineage cache {path} cannot be written ({e.strerror}); "
                  "capturing into a temporary directory instead", file=sys.stderr)
    return Path(tempfile.mkdtemp(prefix="brushfire-cache-"))
