"""Capture overhead benchmark: lineage capture vs. the views' plain Spark queries.

    python perf/bench_capture.py --spec dashboards/flights.yaml
    python perf/bench_capture.py --spec perf/dashboards/flights-30m.yaml

On ONE Spark session (brushfire.capture.spark.get_spark), in this order:
1. base:     the views' plain aggregate queries (`run_base_queries`: one Spark job per
             view, as a dashboard without lineage would run them);
2. capture:  the full `capture_dashboard(plan, spark=spark)`: the profile job (Spark
             aggregations) and the shard job (executors write lineage shards; the
             driver merges their summaries: base aggregates, cubes, manifest);
3. base again, so JVM warm-up (the first run pays class loading and JIT) is visible.

Prints seconds, capture's own breakdown (store.info.seconds) and the ratio
capture / base (target <= 1.25), and checks that the captured base aggregates equal the
plain queries' results. Nothing is written to the cache.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from common import Progress, code_version, parse_conf, spark_session

from brushfire.capture import capture_dashboard
from brushfire.capture import spark as sp
from brushfire.engine import stats
from brushfire.lineage.store import LineageStore
from brushfire.plan import plan_capture
from brushfire.spec.loader import load_dashboard

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 1.25


def results_match(store: LineageStore, results: dict[str, dict]) -> list[str]:
    """Views whose captured base aggregates differ from the plain Spark query's result.
    Query keys are bar numbers (histograms), bar starts in UTC micros (temporal views) or
    values (categorical views; values beyond the top N count in '(other)')."""
    bad = []
    for v in store.views:
        got = stats.bar_counts(v, store.base)  # clamped rows shown in the edge bars
        want = np.zeros(v.nbars, np.int64)
        if v.type == "temporal":
            pos = {int(datetime.fromisoformat(x).timestamp() * 1_000_000): i
                   for i, x in enumerate(v.labels)}
        elif v.type == "categorical":
            pos = {x: i for i, x in enumerate(v.labels) if x != "(other)"}
        else:
            pos = None
        other = v.labels.index("(other)") if "(other)" in v.labels else None
        for key, (n, _) in results[v.name].items():
            i = int(key) if pos is None else pos.get(key, other)
            if i is not None:
                want[i] += n
        if not np.array_equal(got, want):
            bad.append(v.name)
    return bad


def main() -> None:
    """Base queries, capture, base queries again on one session; report and write JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, default=ROOT / "dashboards" / "flights.yaml")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--driver-memory", default=None,
                    help="Spark driver memory (default: get_spark's)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra Spark setting (repeatable)")
    ap.add_argument("--label", default=None, help="free text saved with the results (code version)")
    ap.add_argument("--out", type=Path, default=None,
                    help="JSON output (default perf/results/capture-<rows>.json)")
    args = ap.parse_args()

    dash = load_dashboard(args.spec)
    plan = plan_capture(dash)
    t0 = time.perf_counter()
    conf = parse_conf(args.conf)
    spark = spark_session(args.master, args.driver_memory, conf)
    spark_start = time.perf_counter() - t0
    print(f"Spark {spark.version} on {spark.sparkContext.master}: started in {spark_start:.1f} s")

    df = sp.read_source(spark, dash.source)
    print("1. base queries (cold JVM)")
    base1, results = sp.run_base_queries(df, dash)
    print(f"   {base1:.2f} s")

    print("2. full capture")
    t0 = time.perf_counter()
    store = capture_dashboard(plan, spark=spark, progress=Progress())
    capture_s = time.perf_counter() - t0
    print(f"   {capture_s:.2f} s for {store.n_rows:,} rows")

    print("3. base queries again (warm JVM)")
    base2, results2 = sp.run_base_queries(df, dash)
    print(f"   {base2:.2f} s")

    mismatch = sorted(set(results_match(store, results)) | set(results_match(store, results2)))
    breakdown = dict(store.info.seconds)
    ratios = {"capture / base (1st, cold)": capture_s / base1,
              "capture / base (2nd, warm)": capture_s / base2}
    print(f"\n== capture benchmark: {dash.name}, {store.n_rows:,} rows, "
          f"{spark.sparkContext.master}, {spark.sparkContext.defaultParallelism} cores ==")
    print(f"  base queries, 1st run      {base1:8.2f} s")
    print(f"  capture (total, wall)      {capture_s:8.2f} s")
    for k, v in breakdown.items():
        print(f"    {k:<24} {v:8.2f} s")
    print(f"  base queries, 2nd run      {base2:8.2f} s")
    for k, v in ratios.items():
        print(f"  {k:<30} {v:6.2f}  ({'MET' if v <= TARGET_RATIO else 'MISSED'} target <= {TARGET_RATIO})")
    print(f"  captured base aggregates == plain query results: "
          f"{'yes' if not mismatch else 'NO, differ in ' + ', '.join(mismatch)}")
    print(f"  lineage store: {sum(store.nbytes().values()) / 2**20:,.0f} MiB")

    result = {
        "meta": {"dashboard": dash.name, "spec": str(args.spec), "n_rows": store.n_rows,
                 "date": datetime.now(UTC).isoformat(timespec="seconds"),
                 "code": code_version(args.label),
                 "master": spark.sparkContext.master, "spark": spark.version,
                 "driver_memory": args.driver_memory, "extra_conf": conf,
                 "partitions": df.rdd.getNumPartitions()},
        "seconds": {"spark start": spark_start, "base 1st": base1,
                    "capture": capture_s, "base 2nd": base2},
        "capture_breakdown": breakdown,
        "ratios": ratios,
        "target_ratio": TARGET_RATIO,
        "base_matches_capture": not mismatch,
    }
    n = store.n_rows
    label = f"{n // 1_000_000}m" if n % 1_000_000 == 0 and n else str(n)
    out = args.out or ROOT / "perf" / "results" / f"capture-{label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"\nwrote {out}")
    spark.stop()


if __name__ == "__main__":
    main()
