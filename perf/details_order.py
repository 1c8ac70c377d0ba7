"""Details in a column's order (`details` with `order_by`, engine/ordering.py): the time of
one page, in process, for each details column, ascending and descending, on the first
page and a deep one, over every row and over a brush's selection, once each column's
order is built (its build time is printed first; until then a page reads every selected
row's value, the old way).

    .venv/bin/python perf/details_order.py dashboards/flights.yaml [--cache-dir DIR]
        [--repeat 7] [--brush view:lo:hi]

Opens the dashboard as `Dashboard.open` does (its lineage cache, else a capture on
Spark); prints ms p50 / p99 / max per case and the load average before and after (figures
are only comparable on a quiet machine).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from brushfire import Dashboard, protocol


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--brush", default=None, help="view:lo:hi, a brush for the second selection")
    ap.add_argument("--pages", default="0,100", help="page numbers to time")
    args = ap.parse_args()
    load = os.getloadavg()
    dash = Dashboard.open(args.spec, **({"cache_dir": args.cache_dir} if args.cache_dir else {}))
    details = dash.spec.interactions.details
    if details is None:
        msg = "the dashboard declares no details"
        raise SystemExit(msg)
    selections = [("every row", None)]
    if args.brush:
        view, lo, hi = args.brush.split(":")
        selections.append((f"brush {view} [{lo}, {hi}]", {"type": "brush", "view": view,
                                                          "interval": [float(lo), float(hi)]}))
    print(f"{dash.name}: {dash.store.n_rows:,} rows; load average before {load[0]:.2f} {load[1]:.2f}")
    orders = dash.engine_session()._s.orders
    for column in details.columns:  # each column's order, as its first order_by starts it
        t0 = time.perf_counter()
        orders.get(column, dash.store.n_rows)
        built = orders.wait(column, timeout=600)
        print(f"order of {column}: built in {time.perf_counter() - t0:.2f} s, "
              f"{built.nbytes / dash.store.n_rows:.1f} B/row" if built else f"order of {column}: not built")
    print(f"{'selection':<28} {'order':<22} {'page':>5} {'rows':>11} {'p50':>8} {'p99':>8} {'max':>8}  ms")
    for label, brush in selections:
        s = dash.session()
        if brush:
            protocol.handle(s, brush)
        total = s.count_selected()
        for column in ["(rid)", *details.columns]:
            for descending in ([False] if column == "(rid)" else [False, True]):
                for page in (int(p) for p in args.pages.split(",")):
                    msg = {"type": "details", "page": page}
                    if column != "(rid)":
                        msg.update(order_by=column, descending=descending)
                    times = []
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        reply = protocol.handle(s, msg)
                        times.append((time.perf_counter() - t0) * 1000)
                    assert reply["type"] == "details", reply
                    order = f"{column} {'desc' if descending else 'asc'}"
                    t = np.array(times)
                    print(f"{label:<28} {order:<22} {page:>5} {total:>11,} {np.percentile(t, 50):8.1f} "
                          f"{np.percentile(t, 99):8.1f} {t.max():8.1f}")
    load = os.getloadavg()
    print(f"load average after {load[0]:.2f} {load[1]:.2f}")


if __name__ == "__main__":
    main()
