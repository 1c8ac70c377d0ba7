"""Engine latency: a thin driver of `brushfire bench --in-process` (the engine alone, every
message through `protocol.handle` in this process; workloads, replay and report are the
package's, `backend/brushfire/bench/`).

    python perf/bench_engine.py --spec dashboards/flights.yaml
    python perf/bench_engine.py --spec perf/dashboards/flights-30m.yaml --views delay --limit 300

Runs, each written by `brushfire bench` as perf/results/engine-<rows>-<run>.json (+ PNGs):
- slide: the `slide` workload (10/20/30 % brushes moved one pixel at a time) on `--views`;
- multi2 / multi3 / multi2+origin: the same slides on one view at a time, every session
  starting from a state of two or three brushes held elsewhere (+ three busiest origins):
  `fixed_state`, passed as `--state`;
- lookups: details pages and linked highlighting among random filters;
then prints the store's memory per part (`store.nbytes()`), bytes per row.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from brushfire.bench import workloads
from brushfire.cli import main as brushfire
from brushfire.dashboard import DEFAULT_CACHE, Dashboard
from brushfire.describe import describe_dashboard

ROOT = Path(__file__).resolve().parents[1]
MULTI = {"multi2": (2, 0), "multi3": (3, 0), "multi2+origin": (2, 3)}  # (brushes, origin values)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default=str(ROOT / "dashboards" / "flights.yaml"))
    ap.add_argument("--views", default="delay,hour,distance", help="views to slide")
    ap.add_argument("--workloads", default="slide,multi2,multi3,multi2+origin,lookups")
    ap.add_argument("--limit", type=int, default=None, help="events per run (brushfire bench --limit)")
    ap.add_argument("--reps", type=int, default=20, help="rounds of the lookups workload")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cache-dir", default=DEFAULT_CACHE)
    ap.add_argument("--out-dir", default=str(ROOT / "perf" / "results"))
    args = ap.parse_args()
    dash = Dashboard.open(args.spec, cache_dir=args.cache_dir)  # captures on first use
    info = workloads.DashboardInfo.from_description(describe_dashboard(dash))
    rows = _rows_label(dash.store.n_rows)
    common = ["bench", "--spec", args.spec, "--cache-dir", args.cache_dir, "--in-process",
              "--out-dir", args.out_dir] + (["--limit", str(args.limit)] if args.limit else [])
    failed = 0
    for workload in args.workloads.split(","):
        if workload == "slide":
            failed |= brushfire([*common, "--workload", "slide", "--views", args.views,
                                 "--name", f"engine-{rows}-slide"])
        elif workload in MULTI:
            brushes, points = MULTI[workload]
            for view in args.views.split(","):
                state = workloads.fixed_state(info, brushes=brushes, points=points, exclude=view,
                                              seed=args.seed)
                failed |= brushfire([*common, "--workload", "slide", "--views", view, "--state",
                                     json.dumps(state), "--name", f"engine-{rows}-{workload}-{view}"])
        elif workload == "lookups":
            failed |= brushfire([*common, "--workload", "lookups", "--events", str(args.reps),
                                 "--seed", str(args.seed), "--name", f"engine-{rows}-lookups"])
        else:
            ap.error(f"unknown workload {workload!r}; workloads: slide, {', '.join(MULTI)}, lookups")
    memory(dash)
    return failed


def memory(dash: Dashboard) -> None:
    """The lineage store's bytes per part, and per row."""
    parts, n = dash.store.nbytes(), dash.store.n_rows
    print(f"\nindex memory: {sum(parts.values()) / 2**20:,.0f} MiB, {sum(parts.values()) / n:.1f} bytes/row")
    for name, size in parts.items():
        print(f"  {name:<24} {size / 2**20:9.1f} MiB  {size / n:6.2f} bytes/row")


def _rows_label(n: int) -> str:
    """3000000 -> '3m'."""
    return f"{n // 1_000_000}m" if n >= 1_000_000 and n % 1_000_000 == 0 else str(n)


if __name__ == "__main__":
    raise SystemExit(main())
