"""What an order-statistic view adds to capture, against a count view (issue 15).

    python perf/order_overhead.py [--spec dashboards/flights.yaml] [--reps 2]

From the spec, three dashboards that differ in one view: `base` (the spec without its
order-statistic views), `+count` (base plus a count histogram over the order view's
bins) and `+order` (base plus the spec's first order-statistic view). Each is captured
`--reps` times on ONE Spark session (interleaved, after one untimed capture to warm the
JVM), nothing cached. Prints the median capture seconds and store bytes of each, and the
overhead ratio (+order - base) / (+count - base) for bytes, and for time when the count
view's overhead is above the spread of repeated captures (target ≤ 1.5).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from common import code_version, spark_session

from brushfire.capture import capture_dashboard
from brushfire.plan import plan_capture
from brushfire.spec import models as m
from brushfire.spec.loader import load_dashboard

ROOT = Path(__file__).resolve().parents[1]


def variants(spec: m.DashboardSpec) -> dict[str, m.DashboardSpec]:
    order = next(v for v in spec.views if v.aggregate.order)
    others = [v for v in spec.views if not v.aggregate.order]
    count = order.model_copy(update={"name": f"{order.name}_count",
                                     "aggregate": m.Aggregate(op="count")})

    def with_views(views: list) -> m.DashboardSpec:
        names = {v.name for v in views}
        groups = [g.model_copy(update={"views": [n for n in g.views if n in names]
                                       + [v.name for v in views if v.name not in g.views
                                          and v.name in (order.name, count.name)]})
                  for g in spec.interactions.crossfilter]
        return spec.model_copy(update={"views": views, "interactions": spec.interactions.model_copy(
            update={"crossfilter": groups})})

    return {"base": with_views(others), "+count": with_views([*others, count]),
            "+order": with_views([*others, order])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, default=ROOT / "dashboards" / "flights.yaml")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "perf" / "results" / "order-overhead.json")
    args = ap.parse_args()
    spark = spark_session("local[*]", None, {})
    specs = variants(load_dashboard(args.spec))
    capture_dashboard(plan_capture(specs["base"]), spark=spark)  # JVM and Python workers warm
    seconds: dict[str, list[float]] = {k: [] for k in specs}
    nbytes: dict[str, int] = {}
    for rep in range(args.reps):
        for name, spec in specs.items():
            t0 = time.perf_counter()
            store = capture_dashboard(plan_capture(spec), spark=spark)
            seconds[name].append(time.perf_counter() - t0)
            nbytes[name] = sum(v for k, v in store.nbytes().items() if not k.startswith("_"))
            print(f"rep {rep} {name:7s} {seconds[name][-1]:6.1f} s  {nbytes[name] / 1e6:8.1f} MB", flush=True)
    med = {k: statistics.median(v) for k, v in seconds.items()}
    added = {k: med[k] - med["base"] for k in ("+count", "+order")}
    noise = max(max(v) - min(v) for v in seconds.values())  # spread of repeated captures
    out = {"spec": str(args.spec), "code": code_version(), "seconds": seconds, "median_s": med,
           "added_s": added, "noise_s": noise, "bytes": nbytes,
           # a ratio of two differences within the noise says nothing: then None
           "time_ratio": added["+order"] / added["+count"] if added["+count"] > noise else None,
           "bytes_ratio": (nbytes["+order"] - nbytes["base"]) / max(1, nbytes["+count"] - nbytes["base"])}
    print(json.dumps({k: out[k] for k in ("median_s", "added_s", "noise_s", "bytes", "time_ratio",
                                          "bytes_ratio")}, indent=1))
    args.out.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
