"""Latency through the server: WebSocket round trips of sliding brushes, and brush-to-render
in the browser (Debian's chromium driven by Playwright, real mouse drags).

    python perf/bench_server.py --spec perf/dashboards/flights-30m.yaml --label 30m

Starts `brushfire serve SPEC` as a separate process (the client must not share its
GIL), waits until the dashboard is ready (loaded from the lineage cache, or captured),
then:
- round trip: for each interval view and brush width (10/20/30 % of the view), the brush
  slides across the view one pixel of a 600-pixel view at a time; each step sends a
  `brush` and waits for its `update` (time from send to the parsed reply);
- browser: in the page, a brush of 20 % is drawn with the mouse, then dragged by one
  pixel per frame (16 ms); the page's own metrics give, per answered move, the time from
  the brush signal to the re-rendered views (`total`), split into the WebSocket round
  trip and the Vega re-render.
Writes perf/results/server-<label>.json and server-<label>.png.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import matplotlib
import numpy as np
from websockets.sync.client import connect

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PIXELS = 600


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default="dashboards/flights.yaml")
    ap.add_argument("--label", default=None, help="results name (default: the dashboard name)")
    ap.add_argument("--widths", default="0.1,0.2,0.3")
    ap.add_argument("--stride", type=int, default=1, help="pixels per round-trip step")
    ap.add_argument("--browser-moves", type=int, default=200, help="1-px drag moves per view")
    ap.add_argument("--skip-browser", action="store_true")
    args = ap.parse_args()

    port = _free_port()
    log = open(ROOT / "perf" / "results" / "server.log", "w")  # noqa: SIM115 - lives with the server
    server = subprocess.Popen([sys.executable, "-m", "brushfire.cli", "serve", args.spec,
                               "--port", str(port)], stdout=log, stderr=log, cwd=ROOT)
    try:
        desc = _wait_ready(f"http://127.0.0.1:{port}", server)
        label = args.label or desc["name"]
        widths = [float(w) for w in args.widths.split(",")]
        result = {"spec": args.spec, "rows": desc["rows"], "machine": _machine(),
                  "round_trip": round_trips(port, desc, widths, args.stride)}
        if not args.skip_browser:
            result["browser"] = browser(port, desc, args.browser_moves)
    finally:
        server.terminate()
        server.wait(30)
    out = ROOT / "perf" / "results" / f"server-{label}.json"
    out.write_text(json.dumps(result))
    report(result)
    plot(result, label, out.with_suffix(".png"))
    print(f"wrote {out} and {out.with_suffix('.png')}")


def _wait_ready(base: str, server: subprocess.Popen) -> dict:
    """Poll the dashboard's status (printing capture progress) until it is ready."""
    last = None
    while True:
        if server.poll() is not None:
            msg = f"the server exited ({server.returncode}); see perf/results/server.log"
            raise SystemExit(msg)
        try:
            status = httpx.get(f"{base}/api/dashboards", timeout=5).json()[0]
        except httpx.HTTPError:
            time.sleep(0.5)
            continue
        if status["status"] == "failed":
            msg = f"the dashboard failed to open: {status['error']}"
            raise SystemExit(msg)
        if status["status"] == "ready":
            return httpx.get(f"{base}/api/dashboards/{status['name']}", timeout=60).json()
        if (status["stage"], status["fraction"]) != last:
            last = (status["stage"], status["fraction"])
            print(f"  {status['stage']} {status['fraction'] or ''}", flush=True)
        time.sleep(0.5)


def interval_views(desc: dict) -> list[dict]:
    return [v for v in desc["views"] if v["brush"] == "interval" and v["type"] == "histogram"]


def round_trips(port: int, desc: dict, widths: list[float], stride: int) -> list[dict]:
    """Sliding brushes over one WebSocket: per step, send -> matching reply (ms)."""
    runs = []
    with connect(f"ws://127.0.0.1:{port}/ws/{desc['name']}", max_size=None) as ws:
        for v in interval_views(desc):
            lo, hi = v["labels"][0][0], v["labels"][-1][1]
            px = (hi - lo) / PIXELS
            for w in widths:
                width = (hi - lo) * w
                rtt, engine, nbytes = [], [], []
                for i, step in enumerate(range(0, int(PIXELS * (1 - w)), stride)):
                    a = lo + step * px
                    t0 = time.perf_counter()
                    ws.send(json.dumps({"type": "brush", "id": i, "view": v["name"],
                                        "interval": [a, a + width]}))
                    text = ws.recv(timeout=60)
                    rtt.append((time.perf_counter() - t0) * 1e3)
                    reply = json.loads(text)
                    assert reply["type"] == "update" and reply["id"] == i, reply
                    engine.append(reply["ms"])
                    nbytes.append(len(text))
                ws.send(json.dumps({"type": "clear"}))
                ws.recv(timeout=60)
                runs.append({"view": v["name"], "width": w, "rtt_ms": rtt, "engine_ms": engine,
                             "reply_bytes": int(np.median(nbytes))})
                print(f"  round trip {v['name']:<10} {w:4.0%}: p50 {np.percentile(rtt, 50):6.2f} ms "
                      f"p99 {np.percentile(rtt, 99):6.2f} ms (engine p99 "
                      f"{np.percentile(engine, 99):.2f} ms, {len(rtt)} steps)", flush=True)
    return runs


def browser(port: int, desc: dict, moves: int) -> list[dict]:
    """Mouse-drawn 20 % brushes dragged one pixel per frame; the page's metrics per move."""
    from playwright.sync_api import sync_playwright

    runs = []
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=os.environ.get("BRUSHFIRE_CHROMIUM", "/usr/bin/chromium"),
                              args=CHROMIUM_ARGS)
        page = b.new_page(viewport={"width": 1500, "height": 1100})
        page.goto(f"http://127.0.0.1:{port}/?dashboard={desc['name']}")
        page.wait_for_function("window.brushfire.ready || window.brushfire.error", timeout=120_000)
        for v in interval_views(desc):
            lo, hi = v["labels"][0][0], v["labels"][-1][1]
            (ax, y), (bx, _) = _pixel(page, v["name"], lo + 0.1 * (hi - lo)), _pixel(page, v["name"], lo + 0.3 * (hi - lo))
            page.evaluate("window.brushfire.ui.metrics.length = 0")
            page.mouse.move(ax, y)
            page.mouse.down()
            page.mouse.move(bx, y, steps=10)
            page.mouse.up()
            page.wait_for_function("window.brushfire.ui.pending.size === 0 && !window.brushfire.ui.busy")
            page.evaluate("window.brushfire.ui.metrics.length = 0")
            grab = (ax + bx) / 2  # inside the brush: dragging moves it
            page.mouse.move(grab, y)
            page.mouse.down()
            for i in range(1, moves + 1):
                page.mouse.move(grab + i, y)
                page.wait_for_timeout(16)
            page.mouse.up()
            page.wait_for_function("window.brushfire.ui.pending.size === 0 && !window.brushfire.ui.busy")
            metrics = page.evaluate("window.brushfire.ui.metrics.filter(m => m.type === 'brush')")
            page.click("[data-action=clear-all]")
            page.wait_for_function("window.brushfire.ui.pending.size === 0 && !window.brushfire.ui.busy")
            total = [m["total"] for m in metrics]
            runs.append({"view": v["name"], "moves": moves, "total_ms": total,
                         "round_trip_ms": [m["roundTrip"] for m in metrics],
                         "render_ms": [m["render"] for m in metrics],
                         "engine_ms": [m["engine"] for m in metrics]})
            print(f"  browser {v['name']:<10}: {len(total)} updates for {moves} moves, brush-to-render "
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


def report(result: dict) -> None:
    rtt = np.concatenate([r["rtt_ms"] for r in result["round_trip"]])
    print(f"\n{result['rows']:,} rows: WebSocket round trip over {len(rtt)} sliding-brush steps: "
          f"p50 {np.percentile(rtt, 50):.2f} ms, p99 {np.percentile(rtt, 99):.2f} ms, "
          f"max {rtt.max():.2f} ms (target p99 <= 5 ms)")
    if "browser" in result:
        for key in ("total_ms", "round_trip_ms", "render_ms"):
            x = np.concatenate([r[key] for r in result["browser"]])
            print(f"browser {key:<14} p50 {np.percentile(x, 50):6.2f} ms  p99 {np.percentile(x, 99):6.2f} ms  "
                  f"max {x.max():6.2f} ms  ({len(x)} updates)")


def plot(result: dict, label: str, out: Path) -> None:
    """CDFs: WebSocket round trip per view, and brush-to-render in the browser."""
    fig, axes = plt.subplots(1, 2 if "browser" in result else 1, figsize=(11, 4), squeeze=False)
    ax = axes[0][0]
    for view in dict.fromkeys(r["view"] for r in result["round_trip"]):
        x = np.sort(np.concatenate([r["rtt_ms"] for r in result["round_trip"] if r["view"] == view]))
        ax.plot(x, np.arange(1, len(x) + 1) / len(x), label=view)
    ax.axvline(5, color="gray", ls=":", lw=1)
    ax.set(xscale="log", xlabel="ms", ylabel="share of steps",
           title=f"WebSocket round trip, sliding brushes ({result['rows']:,} rows)")
    ax.legend(fontsize=8)
    if "browser" in result:
        ax = axes[0][1]
        for key, name in (("total_ms", "brush → render"), ("round_trip_ms", "round trip"),
                          ("render_ms", "re-render")):
            x = np.sort(np.concatenate([r[key] for r in result["browser"]]))
            ax.plot(x, np.arange(1, len(x) + 1) / len(x), label=name)
        ax.set(xscale="log", xlabel="ms", title="Browser: 1-px drag moves (chromium)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=90)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "?")
    return f"{os.cpu_count()} cores, {cpu}"


if __name__ == "__main__":
    main()
