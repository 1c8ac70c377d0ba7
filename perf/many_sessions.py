"""Many sessions brushing flat out on one server (issue 36, defect 4): reply latency as the
sessions grow, and no error or lost reply.

    python perf/many_sessions.py                       # 1, 25, 50 sessions on dashboards/flights.yaml
    python perf/many_sessions.py --clients 50 --events 1000 --seeds same

Starts `brushfire serve SPEC` on a free loopback port (its own process; or drives --url),
then for each K in --clients replays the human workload
(`brushfire bench --workload human`: zero-width starts, jumps, inverted drags, 1-5 other
brushes, view switches) on K concurrent sessions, each sending its next message as soon as
its last is answered. `--seeds distinct` (default) gives every session its own trace (seed
1000 + k), `same` replays one trace on all, as `brushfire bench --clients K` does.

Prints, per K: reply p50 / p99 / max, the server's engine time p99, messages per second,
errors, skipped, and lost replies (messages with no reply within --timeout seconds), with
the load average before and after (the machine is shared: report it beside any figure);
and the server's RSS when ready, after each K, and after --idle seconds with no client
(issue 36's target for load runs: within 200 MiB of where it started).
The target (issue 36): 50 sessions, p99 <= 50 ms, max <= 150 ms, 0 errors, 0 lost.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from brushfire.bench import harness, replay, workloads

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from session_memory import free_port, rss_mib, wait_ready  # noqa: E402 - a sibling script


async def play(url: str, traces: list, timeout: float) -> tuple[list, float, int]:
    """Every trace on its own session at once; (records, seconds, sessions that failed)."""
    target = replay.ws_url(url, traces[0].dashboard)
    t0 = time.perf_counter()
    runs = await asyncio.gather(*(replay._fast(target, tr, c, t0, 0, timeout)  # noqa: SLF001
                                  for c, tr in enumerate(traces)), return_exceptions=True)
    seconds = time.perf_counter() - t0
    records = [r for run in runs if not isinstance(run, BaseException) for r in run[0]]
    failed = [run for run in runs if isinstance(run, BaseException)]
    for e in failed[:3]:
        print(f"  a session failed: {e}", flush=True)
    return records, seconds, len(failed)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default=str(ROOT / "dashboards" / "flights.yaml"))
    ap.add_argument("--url", default=None, help="drive this running server instead (ws://host:port)")
    ap.add_argument("--clients", default="1,25,50", help="comma-separated session counts")
    ap.add_argument("--events", type=int, default=400, help="messages per session")
    ap.add_argument("--seeds", choices=("distinct", "same"), default="distinct")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds a reply may take before it is lost")
    ap.add_argument("--idle", type=float, default=30.0, help="seconds to watch the idle server at the end")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out", default=None, help="write the summary as JSON here")
    args = ap.parse_args()
    rows: list[dict] = []
    if args.url is None:
        port = free_port()
        cmd = [sys.executable, "-m", "brushfire.cli", "serve", args.spec, "--port", str(port),
               "--max-sessions", "1024", "--max-sessions-per-client", "1024"]
        if args.cache_dir:
            cmd += ["--cache-dir", args.cache_dir]
        with tempfile.TemporaryFile("w+") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
            try:
                wait_ready(f"http://127.0.0.1:{port}", proc, log, 3600.0)
                run(f"ws://127.0.0.1:{port}", args, rows, proc.pid)
            finally:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    else:
        run(args.url, args, rows, None)
    if args.out:
        Path(args.out).write_text(json.dumps({"spec": args.spec, "events": args.events, "seeds": args.seeds,
                                              "rows": rows}, indent=1))
    return 0 if all(r["lost"] == 0 and r["errors"] == 0 for r in rows) else 1


def run(url: str, args, rows: list[dict], pid: int | None) -> None:
    def rss() -> str:
        return f"RSS {rss_mib(pid):,.0f} MiB" if pid else ""

    print(f"server ready {rss()}", flush=True)
    name = harness._only_dashboard(url)  # noqa: SLF001
    info = workloads.DashboardInfo.from_description(harness._get_json(url, f"/api/dashboards/{name}"))  # noqa: SLF001
    warm = workloads.human(info, seed=1, events=200)
    replay.run(play(url, [warm], args.timeout))  # untimed: code paths loaded
    for k in [int(x) for x in args.clients.split(",")]:
        traces = [workloads.human(info, seed=1000 + (c if args.seeds == "distinct" else 0),
                                  events=args.events) for c in range(k)]
        load0 = os.getloadavg()
        gc.disable()
        try:
            records, seconds, failed = replay.run(play(url, traces, args.timeout))
        finally:
            gc.enable()
        load1 = os.getloadavg()
        answered = [r for r in records if r.reply_type != "skipped"]
        lat = np.array([r.latency_ms for r in answered]) if answered else np.zeros(1)
        eng = np.array([r.engine_ms for r in answered if r.engine_ms is not None] or [0.0])
        row = {"clients": k, "messages": k * args.events, "answered": len(answered),
               "lost": k * args.events - len(records), "failed_sessions": failed,
               "errors": sum(r.reply_type == "error" for r in records),
               "skipped": sum(r.reply_type == "skipped" for r in records),
               "p50_ms": float(np.percentile(lat, 50)), "p99_ms": float(np.percentile(lat, 99)),
               "max_ms": float(lat.max()), "engine_p99_ms": float(np.percentile(eng, 99)),
               "msg_per_s": len(answered) / seconds, "load_before": load0, "load_after": load1}
        rows.append(row)
        print(f"{k:3d} sessions: p50 {row['p50_ms']:7.1f}  p99 {row['p99_ms']:7.1f}  max {row['max_ms']:7.1f} ms"
              f"  (engine p99 {row['engine_p99_ms']:.1f})  {row['msg_per_s']:6.0f} msg/s  errors {row['errors']}"
              f"  skipped {row['skipped']}  lost {row['lost']}  load {load0[0]:.2f} -> {load1[0]:.2f}  {rss()}",
              flush=True)
    if pid and args.idle:
        time.sleep(args.idle)
        print(f"after {args.idle:.0f} s idle: {rss()}; /health: "
              f"{json.dumps(harness._get_json(url, '/health'))}", flush=True)  # noqa: SLF001


if __name__ == "__main__":
    sys.exit(main())
