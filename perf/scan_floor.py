"""What capture's scan costs beside what any Python pass over the same columns costs.

    python perf/scan_floor.py --spec perf/dashboards/flights6-30m.yaml

The scan (capture/scan.py) is one `mapInArrow` job: Spark reads the source, computes the
derived columns, converts its rows to Arrow batches and streams them to a Python worker
per task, which encodes them into shards. On one Spark session, after a warm-up, each of
these over the spec's fields, as the scan reads them (one input split per task), the
median of `--runs`:
- JVM only: one aggregate per field, no Python (what Spark alone needs to read and derive);
- one job: every view's aggregate in one job (GROUPING SETS, capture's baseline);
- to Python, dropped: the fields streamed to Python workers, which only count the rows;
- ... with the rows' origin: plus the input file (hashed) and split columns the scan reads;
- ... held: each task keeps its batches until its end (as a shard gathers its rows);
then one capture from scratch (no reuse), with its scan's wall and executor CPU time.
The differences say what the scan's own encoding costs and what no Python scan avoids.
Writes perf/results/scan-floor-<dashboard>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
from common import code_version, parse_conf, spark_session

from brushfire.capture import capture_dashboard, scan_spec
from brushfire.capture import spark as sp
from brushfire.capture.analyze import ORIGIN
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import plan_capture
from brushfire.spec.loader import load_dashboard

ROOT = Path(__file__).resolve().parents[1]


def _count(batches):
    n = 0
    for b in batches:
        n += b.num_rows
    yield pa.RecordBatch.from_pydict({"n": [n]})


def _hold(batches):
    held = list(batches)
    yield pa.RecordBatch.from_pydict({"n": [sum(b.num_rows for b in held)]})


def main() -> None:
    from pyspark.sql import functions as F

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, default=ROOT / "perf" / "dashboards" / "flights6-30m.yaml")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    dash = load_dashboard(args.spec)
    spark = spark_session(args.master, None, parse_conf(args.conf))
    config = CaptureConfig()
    runner = sp.SparkRunner(spark, dash, config, lambda *_: None)
    spec = scan_spec(plan_capture(dash), config)
    fields = list(dict.fromkeys(spec.fields + spec.snapshot + spec.nulls))  # (what the scan reads)
    cols = [F.col("`" + c.replace("`", "``") + "`").alias(f"c{i}") for i, c in enumerate(fields)]
    plain = runner.df.select(*cols)
    origin = runner.df.select(*cols, F.hash(F.col(ORIGIN[0])).alias("file"), F.col(ORIGIN[1]).alias("split"))
    jobs = {
        "JVM only": lambda: plain.agg(*[F.count(c) for c in plain.columns]).collect(),
        "one job": lambda: sp.run_fused_query(runner.source(), dash),
        "to Python, dropped": lambda: plain.mapInArrow(_count, "n long").collect(),
        "to Python, with the rows' origin": lambda: origin.mapInArrow(_count, "n long").collect(),
        "to Python, with the rows' origin, held": lambda: origin.mapInArrow(_hold, "n long").collect(),
    }
    load = [os.getloadavg()[0]]
    seconds: dict[str, float] = {}
    spark.conf.set("spark.sql.files.openCostInBytes", runner.split)  # each split a task, as the scan
    jobs["to Python, dropped"]()  # warm-up: the JVM's code and the Python workers
    for name, job in jobs.items():
        runs = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            job()
            runs.append(time.perf_counter() - t0)
        seconds[name] = statistics.median(runs)
        print(f"  {name:42s} {seconds[name]:7.2f} s  (runs: {', '.join(f'{r:.2f}' for r in runs)})", flush=True)
    spark.conf.unset("spark.sql.files.openCostInBytes")
    with tempfile.TemporaryDirectory(prefix="scan-floor-") as cache:
        store = capture_dashboard(plan_capture(dash), spark=spark, cache_dir=cache, fresh=True)
        info = store.info.seconds
        seconds["capture's scan"] = info["scan"]
        seconds["capture's scan, executors' cpu"] = info["scan, executors' cpu"]
        seconds["capture"] = info["capture"]
    load.append(os.getloadavg()[0])
    for name in ("capture's scan", "capture's scan, executors' cpu", "capture"):
        print(f"  {name:42s} {seconds[name]:7.2f} s")
    out = {"spec": str(args.spec), "rows": store.n_rows, "fields": fields, "seconds": seconds,
           "partitions": plain.rdd.getNumPartitions(), "load": load, "cores": os.cpu_count(),
           "at": datetime.now(UTC).isoformat(timespec="seconds"), "code": code_version()}
    path = args.out or ROOT / "perf" / "results" / f"scan-floor-{dash.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
