"""A benchmark server: one dashboard served by one engine on the real WebSocket server.

    python -m brushfire.bench.server SPEC --engine duckdb --port 8123 [--cache-dir DIR]

`brushfire bench --spec` starts one per engine, in its own process so that the replaying
clients never share an interpreter (or its lock) with the engine they time.
"""

from __future__ import annotations

import argparse
import sys
import time

from brushfire.baselines import ENGINES, with_engine
from brushfire.errors import BrushfireError


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m brushfire.bench.server", description=__doc__)
    ap.add_argument("spec")
    ap.add_argument("--engine", choices=ENGINES, default="brushfire")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--spark-master", default=None)
    args = ap.parse_args(argv)

    import uvicorn

    from brushfire.dashboard import DEFAULT_CACHE, Dashboard
    from brushfire.server import create_app
    from brushfire.server.app import uvicorn_options

    try:
        t0 = time.perf_counter()
        dash = Dashboard.open(args.spec, cache_dir=args.cache_dir or DEFAULT_CACHE,
                              spark_master=args.spark_master)
        served = with_engine(dash, args.engine, args.spark_master)
        del dash  # a baseline keeps only the labels; the lineage arrays can go
        warm = served.warm_up()
    except BrushfireError as e:
        print(f"brushfire bench server: {e}", file=sys.stderr)
        return 1
    print(f"bench server: {served.name} on {args.engine}, ready in "
          f"{time.perf_counter() - t0:.1f} s (warm-up {warm:.2f} s)", file=sys.stderr, flush=True)
    uvicorn.run(create_app({served.name: served}), host=args.host, port=args.port,
                log_level="warning", **uvicorn_options())
    return 0


if __name__ == "__main__":
    sys.exit(main())
