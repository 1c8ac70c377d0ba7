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
the CPU time per message of the server process (all its threads: /proc/<pid>/stat) and of
this client process (getrusage), which share the machine; and the server's RSS when
ready, after each K, and after --idle seconds with no client (issue 36's target for load
runs: within 200 MiB of where it started).
The target (issue 36): 50 sessions, p99 <= 50 ms, max <= 150 ms, 0 errors, 0 lost.

Before and after, in one run: `--src LABEL=DIR` (repeatable) starts one server per source
tree (DIR: a checkout's `backend/` folder, put first on the server's PYTHONPATH; e.g. from
`git archive COMMIT backend | tar -x -C /tmp/base`), and `--repeat N` plays every K on
every server in turn, N times, alternating the order, so that a change of the machine's
load falls on both:

    python perf/many_sessions.py --src before=/tmp/base/backend --src after=backend
        --clients 1,10,25,50 --events 300 --repeat 2 --idle 0     (one command line)

`--workers N` serves with `brushfire serve --workers N` (N processes on the port; CPU and
RSS summed over the server's processes). One count per --src compares them:
`--src one=backend --src two=backend --workers 1,2`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from brushfire.bench import harness, replay, workloads
from brushfire.bench.processes import family

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from session_memory import free_port, rss_mib, wait_ready  # noqa: E402 - a sibling script

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of process `pid` (all its threads), or of this process."""
    if pid is None:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return ru.ru_utime + ru.ru_stime
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:  # a process that ended
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14, 15 of stat)


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
    ap.add_argument("--src", action="append", default=[], metavar="LABEL=DIR",
                    help="a server per source tree (DIR: a backend/ folder), played in turn")
    ap.add_argument("--repeat", type=int, default=1, help="play every K on every server this many times")
    ap.add_argument("--workers", default="1",
                    help="`serve --workers` per source tree (comma-separated: one per --src)")
    ap.add_argument("--clients", default="1,25,50", help="comma-separated session counts")
    ap.add_argument("--events", type=int, default=400, help="messages per session")
    ap.add_argument("--seeds", choices=("distinct", "same"), default="distinct")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds a reply may take before it is lost")
    ap.add_argument("--idle", type=float, default=30.0, help="seconds to watch the idle server at the end")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out", default=None, help="write the summary as JSON here")
    args = ap.parse_args()
    rows: list[dict] = []
    if args.url is not None:
        run([("", args.url, None)], args, rows)
    else:
        with contextlib.ExitStack() as stack:
            servers = []
            variants = [x.split("=", 1) for x in args.src or ["="]]
            counts = [int(n) for n in args.workers.split(",")]
            for (label, src), n in zip(variants, counts * len(variants) if len(counts) == 1 else counts,
                                       strict=True):
                servers.append((label, *stack.enter_context(serve(args, src, label, n))))
            run(servers, args, rows)
    if args.out:
        Path(args.out).write_text(json.dumps({"spec": args.spec, "events": args.events, "seeds": args.seeds,
                                              "rows": rows}, indent=1))
    return 0 if all(r["lost"] == 0 and r["errors"] == 0 for r in rows) else 1


@contextlib.contextmanager
def serve(args, src: str, label: str = "", workers: int = 1):
    """`brushfire serve` on a free port (from source tree `src` when given; in `workers`
    processes): (url, pid).
    Each labelled source tree keeps its captures under `--cache-dir`/LABEL: another
    commit's store format is not this one's, and one cache would re-capture at each start."""
    port = free_port()
    cmd = [sys.executable, "-m", "brushfire.cli", "serve", args.spec, "--port", str(port),
           "--max-sessions", "1024", "--max-sessions-per-client", "1024"]
    if workers != 1:  # (a tree from before `--workers` serves in one process)
        cmd += ["--workers", str(workers)]
    if args.cache_dir:
        cmd += ["--cache-dir", str(Path(args.cache_dir) / label) if label else args.cache_dir]
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(src).resolve()), *filter(None, [env.get("PYTHONPATH")])])
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        try:
            wait_ready(f"http://127.0.0.1:{port}", proc, log, 3600.0)
            yield f"ws://127.0.0.1:{port}", proc.pid
        finally:
            harness.stop_server(proc)


def run(servers: list[tuple[str, str, int | None]], args, rows: list[dict]) -> None:
    """Every K on every server (label, URL, pid: None when driven by --url) in turn,
    --repeat times."""
    def rss(pid) -> str:  # summed over the server's processes (their shared pages counted in each)
        each = [rss_mib(p) for p in family(pid)]
        return f"RSS {sum(x for x in each if x == x):,.0f} MiB" if pid else ""  # (NaN: a process gone)

    url = servers[0][1]
    name = harness._only_dashboard(url)  # noqa: SLF001
    info = workloads.DashboardInfo.from_description(harness._get_json(url, f"/api/dashboards/{name}"))  # noqa: SLF001
    warm = workloads.human(info, seed=1, events=200)
    for label, u, pid in servers:
        print(f"server {label} ready {rss(pid)}", flush=True)
        for _ in range(4):  # untimed: code paths loaded (in each worker, likely)
            replay.run(play(u, [warm] * 4, args.timeout))
    for rep in range(args.repeat):
        for k in [int(x) for x in args.clients.split(",")]:
            for label, u, pid in servers if rep % 2 == 0 else servers[::-1]:
                rows.append(one(label, u, pid, k, info, args))
                print(f"{label:>8} {fmt(rows[-1])}  {rss(pid)}", flush=True)
    for label, u, pid in servers:
        if pid and args.idle:
            time.sleep(args.idle)
            print(f"{label} after {args.idle:.0f} s idle: {rss(pid)}; /health (one worker's): "
                  f"{json.dumps(harness._get_json(u, '/health'))}", flush=True)  # noqa: SLF001


def fmt(row: dict) -> str:
    cpu = (f"  CPU/msg server {row['server_cpu_ms']:.2f} client {row['client_cpu_ms']:.2f} ms"
           if row["server_cpu_ms"] is not None else f"  CPU/msg client {row['client_cpu_ms']:.2f} ms")
    workers = f" ({row['workers']} workers)" if row["workers"] > 1 else ""
    return (f"{row['clients']:3d} sessions{workers}: p50 {row['p50_ms']:7.1f}  p99 {row['p99_ms']:7.1f}  max "
            f"{row['max_ms']:7.1f} ms  (engine p99 {row['engine_p99_ms']:.1f})  {row['msg_per_s']:6.0f} msg/s"
            f"{cpu}  errors {row['errors']}  skipped {row['skipped']}  lost {row['lost']}"
            f"  load {row['load_before'][0]:.2f} -> {row['load_after'][0]:.2f}")


def one(label: str, url: str, pid: int | None, k: int, info, args) -> dict:
    """K sessions flat out on the server: the summary row."""
    traces = [workloads.human(info, seed=1000 + (c if args.seeds == "distinct" else 0),
                              events=args.events) for c in range(k)]
    load0 = os.getloadavg()
    pids = family(pid) if pid else []
    workers = harness._get_json(url, "/health").get("worker", {}).get("of", 1)  # noqa: SLF001
    gc.disable()
    try:
        server0, client0 = sum(cpu_seconds(p) for p in pids), cpu_seconds(None)
        records, seconds, failed = replay.run(play(url, traces, args.timeout))
        server1, client1 = sum(cpu_seconds(p) for p in pids), cpu_seconds(None)
    finally:
        gc.enable()
    load1 = os.getloadavg()
    answered = [r for r in records if r.reply_type != "skipped"]
    lat = np.array([r.latency_ms for r in answered]) if answered else np.zeros(1)
    eng = np.array([r.engine_ms for r in answered if r.engine_ms is not None] or [0.0])
    row = {"server": label, "workers": workers, "clients": k, "messages": k * args.events, "answered": len(answered),
           "lost": k * args.events - len(records), "failed_sessions": failed,
           "errors": sum(r.reply_type == "error" for r in records),
           "skipped": sum(r.reply_type == "skipped" for r in records),
           "p50_ms": float(np.percentile(lat, 50)), "p99_ms": float(np.percentile(lat, 99)),
           "max_ms": float(lat.max()), "engine_p99_ms": float(np.percentile(eng, 99)),
           "msg_per_s": len(answered) / seconds, "load_before": load0, "load_after": load1,
           "server_cpu_ms": (server1 - server0) * 1e3 / max(len(records), 1) if pids else None,
           "client_cpu_ms": (client1 - client0) * 1e3 / max(len(records), 1)}
    return row


if __name__ == "__main__":
    sys.exit(main())
