"""Capture against the queries it instruments, from scratch and incrementally.

    python perf/bench_capture.py --spec perf/dashboards/flights6-split.yaml
    python perf/bench_capture.py --spec perf/dashboards/flights6.yaml --no-incremental

On ONE Spark session (brushfire.capture.spark.get_spark), in this order:
1. cold: the views' plain base queries (one Spark job per view, as a dashboard without
   lineage runs them), the one aggregation job (every view's aggregate in one job,
   GROUPING SETS: the best a Spark user could write), then a capture into a fresh cache
   (a spec with `maxbins` bins: the capture first, then the queries over the bins it chose);
2. warm: the same three again (the JVM has loaded and compiled what they use);
3. incremental (a source folder of Parquet files): a file of 5% more rows appended
   (jittered copies of the source's rows, perf/split.py) and captured again; then one
   view added over a field already captured; then a display-only edit, opened from the
   cache with no Spark job (counted); the appended file is removed at the end;
4. the peak resident memory of the driver (JVM) and the executors (Python workers) while
   capturing, and the store's bytes per row per view.
Ratios are capture / base queries and capture / one job, same session; targets 1.25x and
2x (issue 33). Writes perf/results/capture-<dashboard>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
from common import Progress, TreeMemory, code_version, parse_conf, spark_session

from brushfire import Dashboard
from brushfire.capture import capture_dashboard
from brushfire.capture import spark as sp
from brushfire.capture.analyze import analyze_source
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard
from brushfire.spec.loader import load_dashboard
from brushfire.views import view_type

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"capture / base queries": 1.25, "capture / one job": 2.0}


def timed_capture(dash, spark, cache: Path, fresh: bool = False):
    """(seconds, store, peak RSS of this process tree) of one capture."""
    t0 = time.perf_counter()
    with TreeMemory(os.getpid()) as mem:
        store = capture_dashboard(plan_capture(dash), spark=spark, cache_dir=cache,
                                  progress=Progress(), fresh=fresh)
    return time.perf_counter() - t0, store, mem.peak


def store_bytes(store) -> dict:
    sizes = store.nbytes()
    lineage = sum(v for k, v in sizes.items() if not k.startswith("_"))
    n, views = max(1, store.n_rows), len(store.layout.views)
    return {"bytes": lineage, "per_row": lineage / n, "per_row_per_view": lineage / n / views,
            "parts": sizes}


def with_view(d: dict) -> dict:
    """The spec with one more histogram over the first histogram's field (another step),
    in the first crossfilter group."""
    d = json.loads(json.dumps(d))
    first = next(v for v in d["views"] if v["type"] == "histogram")
    b = first["bin"]
    bin_ = {"step": b["step"] / 2, "extent": b["extent"]} if "step" in b else {"maxbins": 2 * b["maxbins"]}
    d["views"].append({"name": "added_view", "type": "histogram", "field": first["field"], "bin": bin_})
    if d.get("interactions", {}).get("crossfilter"):
        d["interactions"]["crossfilter"][0]["views"].append("added_view")
    return d


def spark_jobs(spark) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, default=ROOT / "perf" / "dashboards" / "flights6.yaml")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--driver-memory", default=None)
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--no-incremental", action="store_true", help="skip step 3")
    ap.add_argument("--append-fraction", type=float, default=0.05)
    ap.add_argument("--label", default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    dash = load_dashboard(args.spec)
    spec_dict = dash.model_dump(mode="json", exclude_none=True)
    spark = spark_session(args.master, args.driver_memory, parse_conf(args.conf))
    load = [os.getloadavg()]
    df = analyze_source(spark, dash)
    cache = Path(tempfile.mkdtemp(prefix="bench-capture-"))
    out: dict = {"seconds": {}, "ratios": {}, "peak_rss": {}}
    sec = out["seconds"]
    # `maxbins` bins have no step until capture chooses them from the data: the queries
    # then run after the capture, over the spec as it resolved them (the capture pays
    # the cold JVM's costs instead of the queries)
    unresolved = any(not a.bin.resolved for v in dash.views for a in view_type(v).axes(v))
    out["queries after capture"] = unresolved
    for run in ("cold", "warm"):
        if not unresolved:
            print(f"{run}: base queries, one job, capture")
            sec[f"base queries ({run})"], _ = sp.run_base_queries(df, dash)
            sec[f"one job ({run})"] = sp.run_fused_query(df, dash)
        shutil.rmtree(cache, ignore_errors=True)
        seconds, store, peak = timed_capture(dash, spark, cache, fresh=True)
        if unresolved:
            print(f"{run}: capture, then base queries and one job over the bins it chose")
            resolved = parse_dashboard(store.manifest["resolved_spec"])
            sec[f"base queries ({run})"], _ = sp.run_base_queries(df, resolved)
            sec[f"one job ({run})"] = sp.run_fused_query(df, resolved)
        sec[f"capture ({run})"] = seconds
        out["peak_rss"][f"capture ({run})"] = peak
        out[f"breakdown ({run})"] = dict(store.info.seconds)
        for name in TARGETS:
            base = sec[f"base queries ({run})"] if "base" in name else sec[f"one job ({run})"]
            out["ratios"][f"{name} ({run})"] = seconds / base
        print(f"  base {sec[f'base queries ({run})']:.2f} s, one job {sec[f'one job ({run})']:.2f} s, "
              f"capture {seconds:.2f} s")
    out["store"] = store_bytes(store)
    full = sec["capture (warm)"]

    src = Path(dash.source.path)
    if not args.no_incremental and src.is_dir():
        from split import append_file

        extra = append_file(src, args.append_fraction, seed=7)
        try:
            seconds, again, _ = timed_capture(dash, spark, cache)
            sec["append 5% as a file"] = seconds
            out["ratios"]["append / full capture"] = seconds / full
            out["append changes"] = again.info.changes
            out["breakdown (append)"] = dict(again.info.seconds)
            edited = parse_dashboard(with_view(spec_dict))
            seconds, again, _ = timed_capture(edited, spark, cache)
            sec["add one view"] = seconds
            out["ratios"]["add one view / full capture"] = seconds / full
            out["add-view changes"] = again.info.changes
            out["breakdown (add one view)"] = dict(again.info.seconds)
            retitled = parse_dashboard({**with_view(spec_dict), "title": "retitled"})
            jobs = spark_jobs(spark)
            t0 = time.perf_counter()
            opened = Dashboard.open(retitled, spark=spark, cache_dir=cache)
            sec["display-only edit (open)"] = time.perf_counter() - t0
            out["display-only edit"] = {"from_cache": opened.from_cache,
                                        "spark_jobs": spark_jobs(spark) - jobs}
        finally:
            extra.unlink()
    load.append(os.getloadavg())
    n = store.n_rows
    out["meta"] = {"dashboard": dash.name, "spec": str(args.spec), "n_rows": n,
                   "views": len(dash.views), "date": datetime.now(UTC).isoformat(timespec="seconds"),
                   "code": code_version(args.label), "master": spark.sparkContext.master,
                   "cores": spark.sparkContext.defaultParallelism, "spark": spark.version,
                   "load_avg": load,
                   "source_files": len(list(src.glob("*.parquet"))) if src.is_dir() else 1,
                   "source_bytes": sum(f.stat().st_size for f in src.glob("*.parquet"))
                   if src.is_dir() else src.stat().st_size,
                   "parquet_rows": sum(pq.ParquetFile(f).metadata.num_rows for f in src.glob("*.parquet"))
                   if src.is_dir() else pq.ParquetFile(src).metadata.num_rows}
    print(f"\n== capture benchmark: {dash.name}, {n:,} rows, {len(dash.views)} views, "
          f"{out['meta']['master']}, {out['meta']['cores']} cores, load {load[0][0]:.1f} -> {load[1][0]:.1f} ==")
    for k, v in sec.items():
        print(f"  {k:<32} {v:8.2f} s")
    for k, v in out["ratios"].items():
        target = next((t for name, t in TARGETS.items() if k.startswith(name)), None)
        verdict = "" if target is None else f"  ({'MET' if v <= target else 'MISSED'} <= {target})"
        print(f"  {k:<40} {v:6.2f}{verdict}")
    for k, v in out["peak_rss"].items():
        print(f"  peak RSS, {k:<22} {v / 2**30:6.2f} GiB (driver JVM + executors + this process)")
    s = out["store"]
    print(f"  store: {s['per_row']:.2f} bytes per row, {s['per_row_per_view']:.2f} per row per view")
    if "display-only edit" in out:
        print(f"  display-only edit: from cache {out['display-only edit']['from_cache']}, "
              f"{out['display-only edit']['spark_jobs']} Spark jobs")
    path = args.out or ROOT / "perf" / "results" / f"capture-{dash.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, default=str))
    print(f"\nwrote {path}")
    shutil.rmtree(cache, ignore_errors=True)
    spark.stop()


if __name__ == "__main__":
    main()
