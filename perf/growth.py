"""Growth with rows: capture, store, restart and latency of one dashboard at one size.

    python perf/growth.py --spec perf/dashboards/flights-30m.yaml [--cache-dir DIR]

1. capture (perf/bench_capture.py's steps, on one Spark session): the plain base
   queries and the one aggregation job (GROUPING SETS), the capture into a fresh cache
   directory, the base queries and the one job again; the peak
   memory of this process and everything it started (the driver JVM, its Python
   workers — in local mode, the executors), sampled every 0.2 s;
2. restart: a fresh process opens the store from the cache (files in the OS page cache:
   checksums, memory maps; Python's imports timed apart) and warms up; its time and
   resident memory;
3. serving: in that process, the engine time of the sliding-brush and multi-brush
   workloads of `brushfire bench` and details on demand; the process's peak resident
   memory at the end.
Writes perf/results/growth-<rows>.json; perf/plot_growth.py plots several.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from common import Progress, TreeMemory, code_version, spark_session

from brushfire.capture import capture_dashboard
from brushfire.capture import spark as sp
from brushfire.capture.analyze import analyze_source
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import plan_capture
from brushfire.spec.loader import load_dashboard

ROOT = Path(__file__).resolve().parents[1]




SERVE = r"""
import json, sys, time, resource
import numpy as np
t0 = time.perf_counter()
from brushfire import Dashboard
from brushfire.bench import workloads
from brushfire.describe import describe_dashboard
imports = time.perf_counter() - t0
spec, cache, events = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter()
dash = Dashboard.open(spec, cache_dir=cache)
opened = time.perf_counter() - t0
warm = dash.warm_up()
rss_open = int(open("/proc/self/statm").read().split()[1]) * 4096
info = workloads.DashboardInfo.from_description(describe_dashboard(dash))
out = {"restart_s": opened, "imports_s": imports, "warm_up_s": warm, "rss_after_open": rss_open, "from_cache": dash.from_cache}
from brushfire import protocol
for name, make in (("slide", lambda: workloads.slide(info)),
                   ("multi", lambda: workloads.multi(info, events=events)),
                   ("human", lambda: workloads.human(info, events=events))):
    s = dash.session()
    times = []
    for ev in make().events:
        r = protocol.handle(s, ev.message)
        if r.get("type") == "update":
            times.append(r["ms"])
    t = np.array(times)
    out[name] = {"n": len(t), "p50": float(np.percentile(t, 50)), "p99": float(np.percentile(t, 99)),
                 "max": float(t.max()), "under_16ms": float((t < 16.7).mean()),
                 "under_100ms": float((t < 100).mean()), "under_150ms": float((t < 150).mean())}
s = dash.session()
if dash.spec.interactions.details:
    lat = []
    for v in [x for x in dash.spec.views if x.type == "histogram"][:3]:
        lo, hi = v.bin.extent
        s.brush(v.name, (lo + (hi - lo) * 0.3, lo + (hi - lo) * 0.6))
        t = time.perf_counter(); s.details(); lat.append((time.perf_counter() - t) * 1e3)
    out["details_first_page_ms"] = lat
out["rss_peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
out["rss_end"] = int(open("/proc/self/statm").read().split()[1]) * 4096
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, required=True)
    ap.add_argument("--cache-dir", type=Path, default=None, help="default: a temporary directory")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--events", type=int, default=5000, help="events of the multi and human workloads")
    ap.add_argument("--skip-capture", action="store_true", help="reuse the store in --cache-dir")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    cache = args.cache_dir or Path(tempfile.mkdtemp(prefix="brushfire-growth-"))
    dash = load_dashboard(args.spec)
    plan = plan_capture(dash)
    result: dict = {"meta": {"dashboard": dash.name, "spec": str(args.spec),
                             "date": datetime.now(UTC).isoformat(timespec="seconds"),
                             "code": code_version(None), "cpus": os.cpu_count(),
                             "load_before": os.getloadavg()}}
    if not args.skip_capture:
        spark = spark_session(args.master, args.driver_memory, {})
        df = analyze_source(spark, dash)
        print("1. base queries and the one aggregation job (cold JVM)", flush=True)
        base1, _ = sp.run_base_queries(df, dash)
        fused1 = sp.run_fused_query(df, dash)
        print(f"   {base1:.1f} s, {fused1:.1f} s\n2. capture", flush=True)
        with TreeMemory(os.getpid()) as mem:
            t0 = time.perf_counter()
            store = capture_dashboard(plan, spark=spark, progress=Progress(), cache_dir=cache,
                                      config=CaptureConfig())
            capture_s = time.perf_counter() - t0
        print(f"   {capture_s:.1f} s, peak {mem.peak / 2**30:.2f} GiB\n3. base queries, one job (warm)",
              flush=True)
        base2, _ = sp.run_base_queries(df, dash)
        fused2 = sp.run_fused_query(df, dash)
        nbytes = store.nbytes()
        lineage = sum(v for k, v in nbytes.items() if not k.startswith("_"))
        result["capture"] = {
            "rows": store.n_rows, "shards": len(store.shards), "seconds": capture_s,
            "breakdown": dict(store.info.seconds), "base_cold": base1, "base_warm": base2,
            "ratio_cold": capture_s / base1, "ratio_warm": capture_s / base2,
            "fused_cold": fused1, "fused_warm": fused2,
            "fused_ratio_cold": capture_s / fused1, "fused_ratio_warm": capture_s / fused2,
            "peak_bytes": mem.peak, "store_bytes": lineage, "snapshot_bytes": nbytes.get("_snapshot", 0),
            "bytes_per_row": lineage / store.n_rows,
            "bytes_per_row_per_view": lineage / store.n_rows / len(store.layout.views),
            "nbytes": nbytes, "entry": str(store.directory)}
        spark.stop()
        print(json.dumps({k: v for k, v in result["capture"].items() if k != "nbytes"}, indent=1))
    print("4. restart and serve (fresh process)", flush=True)
    r = subprocess.run([sys.executable, "-c", SERVE, str(args.spec), str(cache), str(args.events)],
                       capture_output=True, text=True, check=False)
    if r.returncode:
        sys.exit(f"serving process failed:\n{r.stderr[-3000:]}")
    result["serve"] = json.loads(r.stdout.strip().splitlines()[-1])
    result["meta"]["load_after"] = os.getloadavg()
    print(json.dumps(result["serve"], indent=1))
    rows = result.get("capture", {}).get("rows") or 0
    label = f"{rows // 1_000_000}m" if rows else "serve"
    out = args.out or ROOT / "perf" / "results" / f"growth-{dash.name}-{label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
