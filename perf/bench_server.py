"""Latency through the server: a thin driver of `brushfire bench` (WebSocket round trips of
sliding brushes) plus brush-to-render in the browser (Debian's chromium driven by
Playwright, real mouse drags), on one server that `brushfire bench`'s machinery starts.

    python perf/bench_server.py --spec perf/dashboards/flights-30m.yaml --label 30m

- round trip: `brushfire bench --url <that server> --workload slide` on the histograms
  (10/20/30 % brushes moved one pixel of a 600-pixel view at a time; `--stride k` replays
  every k-th move): perf/results/server-<label>-roundtrip.json and its PNGs;
- browser: in the page, a brush of 20 % is drawn with the mouse, then dragged by one pixel
  per frame (16 ms); the page's own metrics give, per answered move, the time from the
  brush signal to the re-rendered views (`total`), split into the WebSocket round trip
  and the Vega re-render: perf/results/server-<label>-browser.json.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import httpx
import numpy as np

from brushfire.bench import harness, workloads
from brushfire.cli import main as brushfire

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default="dashboards/flights.yaml")
    ap.add_argument("--label", default=None, help="results name (default: the dashboard name)")
    ap.add_argument("--stride", type=int, default=1, help="replay every k-th sliding move")
    ap.add_argument("--browser-moves", type=int, default=200, help="1-px drag moves per view")
    ap.add_argument("--skip-browser", action="store_true")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out-dir", default=str(ROOT / "perf" / "results"))
    args = ap.parse_args()
    server = argparse.Namespace(url=None, spec=args.spec, cache_dir=args.cache_dir, spark_master=None,
                                start_timeout=3600.0)
    with harness.serve(server, "brushfire") as url:
        base = "http" + url[2:]
        name = httpx.get(f"{base}/api/dashboards", timeout=60).json()[0]["name"]
        desc = httpx.get(f"{base}/api/dashboards/{name}", timeout=60).json()
        label = args.label or name
        views = [v["name"] for v in desc["views"] if v["brush"] == "interval" and v["type"] == "histogram"]
        events = len(workloads.slide(workloads.DashboardInfo.from_description(desc), views=views).events)
        code = brushfire(["bench", "--url", url, "--spec", args.spec, "--workload", "slide", "--views",
                          ",".join(views), "--limit", str(events // args.stride), "--out-dir", args.out_dir,
                          "--name", f"server-{label}-roundtrip"])
        if not args.skip_browser:
            runs = browser(base, desc, views, args.browser_moves)
            out = Path(args.out_dir) / f"server-{label}-browser.json"
            out.write_text(json.dumps({"spec": args.spec, "rows": desc["rows"], "browser": runs}))
            print(f"wrote {out}")
    return code


def browser(base: str, desc: dict, views: list[str], moves: int) -> list[dict]:
    """Mouse-drawn 20 % brushes dragged one pixel per frame; the page's metrics per move."""
    from playwright.sync_api import sync_playwright

    runs = []
    idle = "window.brushfire.ui.pending.size === 0 && !window.brushfire.ui.busy"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=os.environ.get("BRUSHFIRE_CHROMIUM", "/usr/bin/chromium"),
                              args=CHROMIUM_ARGS)
        page = b.new_page(viewport={"width": 1500, "height": 1100})
        page.goto(f"{base}/?dashboard={desc['name']}")
        page.wait_for_function("window.brushfire.ready || window.brushfire.error", timeout=120_000)
        for view in views:
            labels = next(v["labels"] for v in desc["views"] if v["name"] == view)
            lo, hi = labels[0][0], labels[-1][1]
            (ax, y), (bx, _) = _pixel(page, view, lo + 0.1 * (hi - lo)), _pixel(page, view, lo + 0.3 * (hi - lo))
            page.mouse.move(ax, y)
            page.mouse.down()
            page.mouse.move(bx, y, steps=10)
            page.mouse.up()
            page.wait_for_function(idle)
            page.evaluate("window.brushfire.ui.metrics.length = 0")
            grab = (ax + bx) / 2  # inside the brush: dragging moves it
            page.mouse.move(grab, y)
            page.mouse.down()
            for i in range(1, moves + 1):
                page.mouse.move(grab + i, y)
                page.wait_for_timeout(16)
            page.mouse.up()
            page.wait_for_function(idle)
            metrics = page.evaluate("window.brushfire.ui.metrics.filter(m => m.type === 'brush')")
            page.click("[data-action=clear-all]")
            page.wait_for_function(idle)
            total = [m["total"] for m in metrics]
            runs.append({"view": view, "moves": moves, "total_ms": total,
                         "round_trip_ms": [m["roundTrip"] for m in metrics],
                         "render_ms": [m["render"] for m in metrics]})
            print(f"  browser {view:<10}: {len(total)} updates for {moves} moves, brush-to-render "
                  f"p50 {np.percentile(total, 50):6.2f} ms p99 {np.percentile(total, 99):6.2f} ms", flush=True)
        b.close()
    return runs


def _pixel(page, view: str, x: float) -> tuple[float, float]:
    return tuple(page.evaluate("""([name, x]) => {
        const v = window.brushfire.ui.charts.get(name).view;
        const r = v.container().querySelector('canvas').getBoundingClientRect();
        const pad = v.padding(), o = v.origin();
        return [r.left + pad.left + o[0] + v.scale('x')(x), r.top + pad.top + o[1] + v.height() / 2];
    }""", [view, x]))


if __name__ == "__main__":
    raise SystemExit(main())
