"""Server memory across many short sessions (issue 36, defect 1): does a closed session
give back what it took?

    python perf/session_memory.py                     # 1,000 sessions on dashboards/flights.yaml
    python perf/session_memory.py --sessions 100 --idle 15

Starts `brushfire serve SPEC` on a free loopback port (its own process; the lineage comes
from the cache, or is captured first), then opens SESSIONS WebSocket sessions one after
another. Each sends, waiting for every reply,

    select origin ["ORD", "ATL"];  brush distance [200 + i, 1800];  brush delay [-10, 30 + i % 20]

and closes. The server's RSS (/proc/<pid>/status) is printed after the first session, every
EVERY sessions, then every 5 s while the server sits idle for IDLE seconds with no client;
`/health` is read at the end (sessions open, the engine's background memory and its budget).
The check (exit status 1 when it fails): RSS at the end of the idle time within LIMIT MiB
of RSS after the first session (the issue's target: 300 MiB after 1,000 sessions and 30 s).
Report `cat /proc/loadavg` next to any figure (the script prints it before and after).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from websockets.sync.client import connect

from brushfire.bench import harness

ROOT = Path(__file__).resolve().parents[1]


def rss_mib(pid: int) -> float:
    """The process's resident memory in MiB; NaN when it has ended."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return float("nan")
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(base: str, proc: subprocess.Popen, log, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            log.seek(0)
            sys.exit(f"the server exited ({proc.returncode}):\n{log.read()[-3000:]}")
        try:
            health = httpx.get(f"{base}/health", timeout=5).json()
            if all(s == "ready" for s in health["dashboards"].values()):
                return health
            if any(s == "failed" for s in health["dashboards"].values()):
                sys.exit(f"the dashboard failed to open: {health}")
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            sys.exit(f"the server was not ready within {timeout:.0f} s")
        time.sleep(0.5)


def one_session(url: str, i: int) -> None:
    messages = [
        {"type": "select", "view": "origin", "values": ["ORD", "ATL"], "id": 1},
        {"type": "brush", "view": "distance", "interval": [200 + i, 1800], "id": 2},
        {"type": "brush", "view": "delay", "interval": [-10, 30 + i % 20], "id": 3},
    ]
    with connect(url, max_size=None, open_timeout=30) as ws:
        for msg in messages:
            ws.send(json.dumps(msg))
            while True:  # (skipped / working messages are not the answer)
                reply = json.loads(ws.recv(timeout=120))
                if reply.get("id") == msg["id"] and reply["type"] not in ("working", "skipped"):
                    break
            if reply["type"] == "error":
                sys.exit(f"session {i}: {msg} -> {reply['message']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default=str(ROOT / "dashboards" / "flights.yaml"))
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--every", type=int, default=100, help="print RSS every this many sessions")
    ap.add_argument("--idle", type=float, default=30.0, help="seconds to watch the idle server")
    ap.add_argument("--limit", type=float, default=300.0, help="MiB of growth the check allows")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--start-timeout", type=float, default=3600.0)
    args = ap.parse_args()

    port = free_port()
    cmd = [sys.executable, "-m", "brushfire.cli", "serve", args.spec, "--port", str(port)]
    if args.cache_dir:
        cmd += ["--cache-dir", args.cache_dir]
    print(f"load before: {loadavg()}", flush=True)
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_ready(base, proc, log, args.start_timeout)
            name = next(iter(httpx.get(f"{base}/health", timeout=5).json()["dashboards"]))
            url = f"ws://127.0.0.1:{port}/ws/{name}"
            print(f"server ready: RSS {rss_mib(proc.pid):,.0f} MiB", flush=True)
            t0 = time.perf_counter()
            first = None
            for i in range(args.sessions):
                one_session(url, i)
                if i == 0:
                    first = rss_mib(proc.pid)
                    print(f"after session 1: RSS {first:,.0f} MiB", flush=True)
                elif (i + 1) % args.every == 0 or i + 1 == args.sessions:
                    print(f"after session {i + 1:,} ({time.perf_counter() - t0:.0f} s): "
                          f"RSS {rss_mib(proc.pid):,.0f} MiB", flush=True)
            idle0 = time.perf_counter()
            while (waited := time.perf_counter() - idle0) < args.idle:
                time.sleep(min(5.0, args.idle - waited))
                print(f"idle {time.perf_counter() - idle0:4.0f} s: RSS {rss_mib(proc.pid):,.0f} MiB",
                      flush=True)
            last = rss_mib(proc.pid)
            health = httpx.get(f"{base}/health", timeout=5).json()
            print(f"/health: {json.dumps(health)}")
        finally:
            harness.stop_server(proc)
    print(f"load after: {loadavg()}")
    grew = last - first
    ok = grew <= args.limit
    print(f"{'PASS' if ok else 'FAIL'}: RSS {first:,.0f} MiB after the first session, {last:,.0f} MiB "
          f"after {args.sessions:,} and {args.idle:.0f} s idle (+{grew:,.0f} MiB; limit {args.limit:,.0f})")
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
