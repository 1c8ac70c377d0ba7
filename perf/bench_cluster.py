"""Capture on local Spark vs. a loopback Spark standalone cluster; capture cost vs. rows.

    python perf/bench_cluster.py --spec dashboards/flights.yaml                  # local and cluster
    python perf/bench_cluster.py --spec perf/dashboards/flights-30m.yaml --modes local --reps 1

Modes: `local` is local[*] (all cores in the driver's JVM); `cluster` starts a master and
`--workers` workers on 127.0.0.1 from the installed PySpark
(brushfire.capture.standalone), so the scan runs in separate executor JVMs and task
results travel over the network to the driver, as on a real cluster (here on the same
two cores, so it measures the overhead, not a speed-up).

Each mode runs in a fresh driver process (a SparkSession is one per process, and a fresh
JVM makes the modes comparable) that captures `--reps` times, as `capture_dashboard`
does it: one scan collecting the lineage columns as Arrow, then codes, indexes, cubes
and base aggregates built on the driver. Reports the capture's stages, the lineage
store's size, and the peak RSS of the driver's Python process and of its JVM. Nothing is
written to the lineage cache.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from common import code_version, parse_conf

ROOT = Path(__file__).resolve().parents[1]


def run_driver(args: argparse.Namespace) -> None:
    """One mode in this process: start Spark on args.driver, capture args.reps times,
    print one JSON line."""
    from brushfire.capture import capture_dashboard
    from brushfire.capture.spark import get_spark
    from brushfire.plan import plan_capture
    from brushfire.spec.loader import load_dashboard

    plan = plan_capture(load_dashboard(args.spec))
    conf = {"spark.executor.memory": args.executor_memory, **parse_conf(args.conf)}
    t0 = time.perf_counter()
    spark = get_spark(args.driver, driver_memory=args.driver_memory, conf=conf)
    tracker = spark.sparkContext._jsc.sc().statusTracker()
    while len(tracker.getExecutorInfos()) < args.executors + 1:  # the driver is listed too
        if time.perf_counter() - t0 > 120:
            sys.exit(f"only {len(tracker.getExecutorInfos()) - 1} executors registered")
        time.sleep(0.2)
    start = time.perf_counter() - t0
    runs = []
    for _ in range(args.reps):
        t, cpu = time.perf_counter(), time.process_time()
        store = capture_dashboard(plan, spark=spark, progress=progress)
        # the driver's Python CPU time and the load average show how far other processes
        # on the machine slowed the run (the 2 cores are shared)
        runs.append({"wall": time.perf_counter() - t, "stages": dict(store.info.seconds),
                     "python_cpu": time.process_time() - cpu, "loadavg_1min": os.getloadavg()[0]})
        n_rows, nbytes = store.n_rows, sum(store.nbytes().values())
        del store
        gc.collect()
    jvm_peak = jvm_peak_rss()
    print(json.dumps({
        "master": spark.sparkContext.master, "spark": spark.version,
        "executors": len(tracker.getExecutorInfos()) - 1,
        "parallelism": spark.sparkContext.defaultParallelism,
        "spark_start": start, "n_rows": n_rows, "store_bytes": nbytes, "runs": runs,
        "python_peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "jvm_peak_rss": jvm_peak}))
    spark.stop()


def progress(stage: str, fraction: float | None) -> None:
    """Capture stages on stderr (stdout carries the report), so a failed run shows where."""
    if fraction is None:
        print(f"    [{time.strftime('%H:%M:%S')}] {stage}", file=sys.stderr, flush=True)


def jvm_peak_rss() -> int | None:
    """Peak RSS (VmHWM) of this process's Java child: the Spark driver JVM PySpark started."""
    me = str(os.getpid())
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(ln.split(":", 1) for ln in status.read_text().splitlines() if ":" in ln)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == me and fields.get("Name", "").strip() == "java":
            return int(fields["VmHWM"].split()[0]) * 1024
    return None


def run_mode(args: argparse.Namespace, master: str, executors: int) -> dict:
    """Run one mode in a fresh driver process; its JSON report."""
    from brushfire.capture.standalone import LOOPBACK_ENV

    cmd = [sys.executable, __file__, "--spec", str(args.spec), "--reps", str(args.reps),
           "--driver", master, "--executors", str(executors),
           "--executor-memory", args.executor_memory]
    if args.driver_memory:
        cmd += ["--driver-memory", args.driver_memory]
    for item in args.conf:
        cmd += ["--conf", item]
    r = subprocess.run(cmd, env={**os.environ, **LOOPBACK_ENV}, stdout=subprocess.PIPE, text=True,
                       check=False)
    if r.returncode:
        sys.exit(f"the {master} driver failed ({r.returncode}); its stderr is above")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, default=ROOT / "dashboards" / "flights.yaml")
    ap.add_argument("--modes", default="local,cluster", help="comma-separated: local, cluster")
    ap.add_argument("--reps", type=int, default=2, help="captures per mode (the first warms the JVM)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cores", type=int, default=1, help="cores per worker")
    ap.add_argument("--executor-memory", default="1g", help="per executor (= per worker)")
    ap.add_argument("--driver-memory", default=None, help="driver JVM heap (default: get_spark's)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra Spark setting for the drivers (repeatable)")
    ap.add_argument("--label", default=None, help="free text saved with the results")
    ap.add_argument("--out", type=Path, default=None,
                    help="JSON output (default perf/results/cluster-<rows>.json)")
    ap.add_argument("--driver", default=None, help=argparse.SUPPRESS)  # internal: one mode
    ap.add_argument("--executors", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.driver:
        run_driver(args)
        return

    from brushfire.capture.standalone import start_cluster

    results = {}
    for mode in args.modes.split(","):
        print(f"== {mode}", flush=True)
        if mode == "local":
            results[mode] = run_mode(args, "local[*]", 0)
        elif mode == "cluster":
            with tempfile.TemporaryDirectory(prefix="bench-cluster-") as root, \
                    start_cluster(root, args.workers, args.cores, args.executor_memory) as cluster:
                results[mode] = run_mode(args, cluster.master_url, args.workers)
        else:
            sys.exit(f"unknown mode {mode!r}: use local, cluster")
        report(mode, results[mode])

    n = next(iter(results.values()))["n_rows"]
    out = args.out or ROOT / "perf" / "results" / f"cluster-{n // 1_000_000}m.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "meta": {"spec": str(args.spec), "n_rows": n, "reps": args.reps,
                 "workers": args.workers, "cores_per_worker": args.cores,
                 "executor_memory": args.executor_memory, "driver_memory": args.driver_memory,
                 "extra_conf": parse_conf(args.conf),
                 "date": datetime.now(UTC).isoformat(timespec="seconds"),
                 "code": code_version(args.label), "loadavg": os.getloadavg()},
        "results": results}, indent=1))
    print(f"\nwrote {out}")


def report(mode: str, r: dict) -> None:
    gib = 2**30
    print(f"  {r['master']} (Spark {r['spark']}, {r['executors']} executors, parallelism "
          f"{r['parallelism']}): {r['n_rows']:,} rows, session started in {r['spark_start']:.1f} s")
    for i, run in enumerate(r["runs"], 1):
        stages = ", ".join(f"{k} {v:.2f}" for k, v in run["stages"].items() if k != "capture")
        print(f"  capture {i}: {run['stages']['capture']:7.2f} s  ({stages}; driver Python CPU "
              f"{run['python_cpu']:.1f} s, load {run['loadavg_1min']:.1f})")
    jvm = f"{r['jvm_peak_rss'] / gib:.1f} GiB" if r["jvm_peak_rss"] else "?"
    print(f"  lineage store {r['store_bytes'] / gib:.2f} GiB ({r['store_bytes'] / r['n_rows']:.0f} "
          f"bytes/row); peak RSS: Python {r['python_peak_rss'] / gib:.1f} GiB, driver JVM {jvm}")


if __name__ == "__main__":
    main()
