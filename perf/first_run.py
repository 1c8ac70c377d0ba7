"""What a new user waits for: `brushfire serve SPEC` with an empty lineage cache, until the
dashboard is ready (its page shows the capture's progress meanwhile); then a restart.

    python perf/first_run.py [--spec dashboards/flights.yaml ...] [--runs 2]

Each run starts `brushfire serve SPEC...` (this interpreter's) on a free loopback port with a new,
empty lineage cache and an empty numba cache (as on a new machine), and polls GET /health
every 0.2 s: the time is from starting the process to the dashboard's status "ready"
(Python's imports, the Spark driver's start, the capture, the engine's warm-up). A second
server then starts on the same caches: the restart. The 1-minute load average before and
after each run goes with its times: on a shared machine it says how busy the machine was.
The servers' output goes to the JSON too (their progress lines: where the time went).
Writes perf/results/first-run.json (--out).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_until_ready(specs: list[Path], cache: Path, numba: Path, timeout: float) -> dict:
    """Start a server, wait for every dashboard to be ready (or failed), stop it."""
    port = free_port()
    env = {**os.environ, "NUMBA_CACHE_DIR": str(numba)}
    env.pop("BRUSHFIRE_CACHE", None)
    brushfire = Path(sys.executable).with_name("brushfire")
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(brushfire), "serve", *map(str, specs), "--port", str(port),
                             "--cache-dir", str(cache)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    status: dict = {}
    try:
        while time.perf_counter() - t0 < timeout:
            if proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    status = json.load(r)["dashboards"]
            except OSError:  # not listening yet
                status = {}
            if status and all(s in ("ready", "failed") for s in status.values()):
                break
            time.sleep(0.2)
        seconds = time.perf_counter() - t0
    finally:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    return {"seconds": round(seconds, 1), "status": status, "output": out.splitlines()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, nargs="+", default=[ROOT / "dashboards" / "flights.yaml"],
                    help="one server for them all (default dashboards/flights.yaml)")
    ap.add_argument("--runs", type=int, default=1, help="first runs, each from empty caches")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds a server may take")
    ap.add_argument("--out", type=Path, default=ROOT / "perf" / "results" / "first-run.json")
    args = ap.parse_args()
    runs = []
    for i in range(args.runs):
        work = Path(tempfile.mkdtemp(prefix="brushfire-first-run-"))
        try:
            before = load()
            first = serve_until_ready(args.spec, work / "cache", work / "numba", args.timeout)
            after = load()
            restart = serve_until_ready(args.spec, work / "cache", work / "numba", args.timeout)
            run = {"first": first, "restart": restart, "load_before": before, "load_after": after,
                   "load_after_restart": load()}
        finally:
            shutil.rmtree(work, ignore_errors=True)
        runs.append(run)
        print(f"run {i + 1}: first start {first['seconds']:.1f} s ({first['status']}), restart "
              f"{restart['seconds']:.1f} s; load {before:.2f} before, {after:.2f} after", flush=True)
        for line in first["output"]:
            print(f"    {line}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "specs": [str(p.resolve().relative_to(ROOT)) if p.resolve().is_relative_to(ROOT) else str(p)
                  for p in args.spec], "cores": os.cpu_count(), "when": datetime.now(UTC).isoformat(),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                                 capture_output=True).stdout.strip(),
        "runs": runs}, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
