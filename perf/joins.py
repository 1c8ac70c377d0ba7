"""Joins on TPC-H: capture against the plain joined base queries, then a human workload.

    scripts/tpch-data.sh 1                       # data/tpch-sf1/ (tpchgen-cli, PyPI)
    python perf/joins.py --sf 1                  # perf/dashboards/tpch-sf1.yaml
    python perf/joins.py --sf 10 --skip-capture  # the workload only

1. perf/bench_capture.py on the TPC-H dashboard (lineitem ⋈ orders ⋈ customer ⋈ nation ⋈
   region, part, supplier): the views' plain base queries over the same joins (one Spark
   job per view), the one aggregation job, and the capture, cold and warm, on ONE Spark
   session; target capture <= 1.5x the base queries (issue 34; Smoke's pk-fk joins
   0.23-0.41x).
2. `brushfire bench --workload human` on the same dashboard (the brushfire engine; the
   capture comes from the cache step 1 leaves in --cache-dir): p50, p99 and max per
   reply; targets p99 <= 5 ms and every reply < 150 ms.
The load average is recorded before and after each step (a figure without it is not
worth reporting; the machine is shared). Writes perf/results/joins-tpch-sf<SF>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def step(cmd: list[str], log: Path) -> dict:
    load = [os.getloadavg()]
    t0 = time.perf_counter()
    with open(log, "w") as f:
        code = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
    load.append(os.getloadavg())
    print(log.read_text()[-3000:])
    return {"command": " ".join(cmd), "exit": code, "seconds": time.perf_counter() - t0,
            "load_avg": load, "log": str(log)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sf", default="1")
    ap.add_argument("--cache-dir", type=Path, default=ROOT / ".cache" / "perf-joins")
    ap.add_argument("--events", default="400")
    ap.add_argument("--skip-capture", action="store_true")
    args = ap.parse_args()
    spec = ROOT / "perf" / "dashboards" / f"tpch-sf{args.sf}.yaml"
    results = ROOT / "perf" / "results"
    results.mkdir(parents=True, exist_ok=True)
    out = {}
    if not args.skip_capture:
        out["capture"] = step([PY, "perf/bench_capture.py", "--spec", str(spec), "--no-incremental",
                               "--out", str(results / f"capture-tpch-sf{args.sf}.json")],
                              results / f"joins-capture-sf{args.sf}.log")
    bench = ROOT / ".venv" / "bin" / "brushfire"
    out["human"] = step([str(bench) if bench.exists() else "brushfire", "bench", "--spec", str(spec),
                         "--workload", "human", "--engine", "brushfire", "--events", args.events,
                         "--cache-dir", str(args.cache_dir), "--no-plots",
                         "--out-dir", str(results / f"joins-human-sf{args.sf}")],
                        results / f"joins-human-sf{args.sf}.log")
    path = results / f"joins-tpch-sf{args.sf}.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
