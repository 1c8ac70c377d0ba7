"""`brushfire bench`: for each engine, start a server (or use a running one, or with
--in-process none: the engine in this process), replay a trace with K clients, optionally
check every update reply against DuckDB, and report latencies side by side with
Brushfire's ratio to each baseline (JSON, a table, PNGs)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from brushfire import selection
from brushfire.baselines import ENGINES
from brushfire.bench import report, workloads
from brushfire.bench.trace import Trace, load_trace, save_trace, subsample
from brushfire.errors import BrushfireError

if TYPE_CHECKING:  # (check.py needs DuckDB, imported only for --check)
    from brushfire.bench.check import CheckResult

# the WebSocket client (websockets) is imported when a replay runs: `brushfire validate`
# builds this command's options too, and stays light


class BenchError(BrushfireError):
    """A benchmark run could not be set up (server, options)."""


def add_arguments(p) -> None:
    """The options of `brushfire bench` (on an argparse parser)."""
    where = p.add_argument_group("what to drive")
    where.add_argument("--spec", help="dashboard spec: start a server per engine on a free port "
                                      "(with --url: only the source for --check)")
    where.add_argument("--url", help="drive this running server instead, e.g. ws://127.0.0.1:8000 "
                                       "(ws://HOST:PORT/?token=... when it needs its access token)")
    where.add_argument("--engine", default="brushfire",
                       help=f"comma-separated engines to compare: {', '.join(ENGINES)} or all "
                            "(with --url: a label for that server)")
    where.add_argument("--cache-dir", default=None, help="lineage cache (default: $BRUSHFIRE_CACHE, else the user's cache "
                       "directory, brushfire/cachedir.py)")
    where.add_argument("--spark-master", default=None, help="Spark master for capture and lazy")
    what = p.add_argument_group("what to replay")
    what.add_argument("--trace", help="replay this trace file (docs/trace.md)")
    what.add_argument("--workload", default="slide", choices=sorted(workloads.WORKLOADS),
                      help="generate the trace from the dashboard (default slide)")
    takes = {w: workloads.options(w) for w in sorted(workloads.WORKLOADS)}
    what.add_argument("--views", help="comma-separated views for "
                      f"{' / '.join(w for w, o in takes.items() if 'views' in o)} (default: all)")
    what.add_argument("--seed", type=int, default=7,
                      help=f"seed of {', '.join(w for w, o in takes.items() if 'seed' in o)} (default 7)")
    what.add_argument("--events", type=int, default=None,
                      help="events of " + ", ".join(f"{w} (default {o['events']})"
                                                    for w, o in takes.items() if "events" in o))
    what.add_argument("--limit", type=int, default=None,
                      help="replay about N events, evenly spaced over the trace, and every one "
                           "that is not a brush (clears, selects, parameters)")
    what.add_argument("--state", help="start every session from this selection state: tagged "
                                      "filters as JSON text or a JSON file (docs/trace.md)")
    what.add_argument("--save-trace", help="write the trace replayed to this file")
    how = p.add_argument_group("how")
    how.add_argument("--in-process", action="store_true",
                     help="no server: open the dashboard here and send every message straight to "
                          "protocol.handle (the engine's latency without the network; needs --spec)")
    how.add_argument("--clients", type=int, default=1, help="concurrent clients (sessions)")
    how.add_argument("--paced", action="store_true",
                     help="send at the recorded times without waiting (default: next after reply)")
    how.add_argument("--warmup", type=int, default=50,
                     help="events replayed untimed first, on a separate session (default 50)")
    how.add_argument("--check", action="store_true", help="compare every update reply with DuckDB")
    how.add_argument("--check-every", type=int, default=1,
                     help="check every k-th update reply of each client (default 1: all)")
    how.add_argument("--out-dir", default="perf/results", help="where JSON and PNGs go")
    how.add_argument("--name", default=None, help="file name prefix (default bench-<dashboard>-<workload>)")
    how.add_argument("--no-plots", action="store_true")
    how.add_argument("--start-timeout", type=float, default=3600.0,
                     help="seconds to wait for a server to load or capture its dashboard")


def run(args) -> int:
    engines = _engines(args.engine)
    if not args.spec and not args.url:
        msg = "give --spec (start a server per engine) or --url (drive a running server)"
        raise BenchError(msg)
    if args.url and len(engines) > 1:
        msg = "with --url there is one server: --engine only labels it"
        raise BenchError(msg)
    unknown = [e for e in engines if e not in ENGINES]
    if not args.url and unknown:
        msg = f"unknown engine {unknown[0]!r}; engines: {', '.join(ENGINES)} (or all)"
        raise BenchError(msg)
    if args.in_process and (args.url or not args.spec or args.paced):
        msg = "--in-process opens --spec here: not with --url or --paced"
        raise BenchError(msg)
    if args.clients < 1 or args.check_every < 1:
        msg = "--clients and --check-every must be at least 1"
        raise BenchError(msg)
    given = load_trace(args.trace) if args.trace else None
    out_dir = Path(args.out_dir)
    runs: dict[str, dict] = {}
    trace: Trace | None = None
    checker = None
    description: dict = {}
    failures: dict[str, str] = {}  # engine -> why its run failed (with its server's log)
    for engine in engines:
        try:
            with _target(args, engine) as (play, description, memory):
                name = description["name"]
                if given and given.dashboard != name:
                    msg = f"the trace is of dashboard {given.dashboard!r}, not {name!r}"
                    raise BenchError(msg)
                if trace is None:
                    trace = _with_state(subsample(given or _generate(args, description), args.limit),
                                        args.state)
                    if args.save_trace:
                        print(f"trace written to {save_trace(trace, args.save_trace)}")
                print(f"{engine}: replaying {len(trace.events)} events of {name} "
                      f"({trace.meta.get('workload', 'trace')}), {args.clients} client(s), "
                      f"{'paced' if args.paced else 'as fast as possible'}", flush=True)
                if args.warmup:  # untimed, on its own session: loads code paths, not session state
                    play(_warmup(trace, args.warmup), 1, 0)
                load_before = os.getloadavg()
                result = play(trace, args.clients, args.check_every if args.check else 0)
                load_after = os.getloadavg()
                served_memory = memory()
        except BrushfireError as e:  # this engine failed; the others still run and are reported
            failures[engine] = str(e)
            runs[engine] = {"error": str(e)}
            print(f"{engine}: FAILED: {e}", flush=True)
            continue
        summary = report.summarize(result.records, result.seconds)
        runs[engine] = {"summary": summary, "load_avg": [load_before, load_after],
                        "server_memory": served_memory, "records": [asdict(r) for r in result.records]}
        lat = summary["latency_ms"]
        print(f"  p50 {lat.get('p50', 0):.3f} ms  p99 {lat.get('p99', 0):.3f} ms  "
              f"max {lat.get('max', 0):.1f} ms  skipped {summary['skipped']}  errors {summary['errors']}"
              + (f"  first error: {summary['first_errors'][0]}" if summary["first_errors"] else ""),
              flush=True)
        if served_memory:
            gib = {k: v / 2**30 for k, v in served_memory.items()}
            print(f"  {'this process' if args.in_process else 'the server'}'s resident memory after "
                  f"the replay: {gib['rss']:.2f} GiB ({gib['anon']:.2f} built, {gib['file']:.2f} "
                  "file-backed: mapped store and copies)", flush=True)
        if args.check:
            checker = checker or _checker(args, description)
            t0 = time.perf_counter()
            check = checker.check(result.replies, _check_progress(t0))  # (as text: decoded one by one)
            runs[engine]["check"] = check.to_json()
            print(f"  check: {check.mismatches} mismatches in {check.checked} update replies "
                  f"({check.distinct_states} distinct states, {time.perf_counter() - t0:.1f} s)")
            for ex in check.examples[:3]:
                print(f"    e.g. {json.dumps(ex)[:400]}")
    if trace is None:
        msg = "no engine ran:\n" + "\n".join(failures.values())
        raise BenchError(msg)
    summaries = {e: r["summary"] for e, r in runs.items() if "summary" in r}
    checks = {e: r["check"] for e, r in runs.items() if "check" in r}
    text = report.table(summaries, checks, failures=failures)
    print("\n" + text)
    prefix = out_dir / (args.name or f"bench-{trace.dashboard}-{trace.meta.get('workload', 'trace')}")
    result_json = {
        "meta": _meta(args, trace, description, engines),
        "table": text,
        "ratios": report.ratios(summaries),
        "engines": runs,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = prefix.with_name(prefix.name + ".json")
    path.write_text(json.dumps(result_json, indent=1))
    print(f"\nwrote {path}")
    if not args.no_plots:
        title = f"{trace.dashboard} ({description.get('rows', 0):,} rows), " \
                f"{trace.meta.get('workload', 'trace')}"
        for p in report.plot({e: r for e, r in runs.items() if "records" in r}, prefix, title):
            print(f"wrote {p}")
    failed = any(c["mismatches"] for c in checks.values()) or bool(failures)
    return 1 if failed else 0


def _warmup(trace: Trace, n: int) -> Trace:
    """About `n` events spread over `trace`, untimed: all at t = 0, so that a paced warm-up
    does not wait out the recorded times (the subsample's events span the whole trace: a
    ten-minute recording kept a paced warm-up waiting ten minutes)."""
    warm = subsample(trace, n)
    return Trace(warm.dashboard, tuple(replace(e, t=0.0) for e in warm.events[:n]))


def _engines(text: str) -> list[str]:
    engines = list(ENGINES) if text == "all" else [e.strip() for e in text.split(",") if e.strip()]
    return engines


def _generate(args, description: dict) -> Trace:
    info = workloads.DashboardInfo.from_description(description)
    takes = workloads.options(args.workload)
    given = {"views": args.views.split(",") if args.views else None, "seed": args.seed,
             "events": args.events or None}
    kwargs = {k: v for k, v in given.items() if k in takes and v is not None}
    try:
        return workloads.WORKLOADS[args.workload](info, **kwargs)
    except ValueError as e:
        msg = f"cannot generate the {args.workload} workload: {e}"
        raise BenchError(msg) from None


def _with_state(trace: Trace, state: str | None) -> Trace:
    """`trace` starting from the selection state `state` (JSON text, or a file of it)."""
    if state is None:
        return trace
    text = Path(state).read_text(encoding="utf-8") if not state.lstrip().startswith("{") else state
    try:
        parsed = selection.to_json(selection.parse_state(json.loads(text), "--state"))
    except ValueError as e:
        msg = f"--state: not valid JSON: {e}"
        raise BenchError(msg) from None
    except selection.SelectionError as e:
        raise BenchError(str(e)) from None
    return replace(trace, state=parsed)


def _check_progress(t0: float, every: float = 10.0):
    """What the check has done, said at most every `every` seconds, and at the end of a
    check that took longer."""
    said = [t0]

    def tell(so_far: CheckResult, of: int) -> None:
        now = time.perf_counter()
        if now - said[0] >= every or (so_far.checked == of and now - t0 >= every):
            said[0] = now
            print(f"  checking: {so_far.checked:,} of {of:,} update replies, {so_far.mismatches} "
                  f"mismatches so far ({now - t0:.0f} s)", flush=True)
    return tell


def _checker(args, description: dict):
    try:
        from brushfire.bench.check import Checker
    except ImportError:
        msg = "--check needs DuckDB: pip install 'brushfire[bench]'"
        raise BenchError(msg) from None
    from brushfire.spec import load_dashboard
    from brushfire.views import with_recorded_bins

    if not args.spec:
        msg = "--check needs --spec too: the SQL runs on the spec's source"
        raise BenchError(msg)
    labels = {v["name"]: v["labels"] for v in description["views"]}
    # `maxbins` bins as the served capture chose them (the SQL needs a step and extent)
    spec = with_recorded_bins(load_dashboard(args.spec), {v["name"]: v["bins"] for v in description["views"]})
    return Checker(spec, labels, cache_dir=args.cache_dir)


# --- servers -------------------------------------------------------------------------


@contextlib.contextmanager
def _target(args, engine: str):
    """(play(trace, clients, keep_every) -> ReplayResult, the dashboard's description):
    over WebSockets to a server (--url, or one started for `engine`), or in this process."""
    if args.in_process:
        from brushfire.bench.local import replay_in_process
        from brushfire.describe import describe_dashboard
        from brushfire.engine import memory

        served = _open_here(args, engine)
        yield (lambda trace, clients, keep: replay_in_process(served, trace, clients, keep),
               describe_dashboard(_open_here(args, "brushfire")), memory.process)
        return
    from brushfire.bench.replay import replay
    from brushfire.bench.replay import run as run_replay

    with serve(args, engine) as url:
        name = _only_dashboard(url) if not args.trace else load_trace(args.trace).dashboard
        description = _get_json(url, f"/api/dashboards/{name}")
        yield (lambda trace, clients, keep: run_replay(replay(url, trace, clients, args.paced,
                                                              keep_every=keep)), description,
               lambda: _server_memory(url))


_opened: dict = {}  # (spec, engine) -> the dashboard served in this process


def _open_here(args, engine: str):
    """The dashboard of --spec as `engine` serves it, opened once in this process."""
    key = (args.spec, engine)
    if key not in _opened:
        from brushfire.baselines import with_engine
        from brushfire.dashboard import DEFAULT_CACHE, Dashboard

        if (args.spec, "brushfire") not in _opened:
            dash = Dashboard.open(args.spec, cache_dir=args.cache_dir or DEFAULT_CACHE,
                                  spark_master=args.spark_master)
            dash.warm_up()
            _opened[(args.spec, "brushfire")] = dash
        served = with_engine(_opened[(args.spec, "brushfire")], engine, args.spark_master)
        if engine != "brushfire":
            served.warm_up()
        _opened[key] = served
    return _opened[key]



@contextlib.contextmanager
def serve(args, engine: str) -> Iterator[str]:
    """The URL of a server for `engine`: --url, or a bench server started on a free port
    (in its own process) and stopped afterwards."""
    from brushfire.bench.replay import ReplayError

    if args.url:
        yield args.url
        return
    port = _free_port()
    cmd = [sys.executable, "-m", "brushfire.bench.server", args.spec, "--engine", engine,
           "--port", str(port)]
    for opt in ("cache_dir", "spark_master"):
        if getattr(args, opt):
            cmd += [f"--{opt.replace('_', '-')}", getattr(args, opt)]
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        url = f"ws://127.0.0.1:{port}"
        try:
            _wait_ready(url, proc, log, args.start_timeout, engine)
            yield url
        except ReplayError as e:  # the server broke off: say which engine, and why it did
            log.seek(0)
            tail = "\n".join(log.read().splitlines()[-30:])
            code = proc.poll()
            msg = (f"the {engine} engine failed: {e}"
                   + (f" (its server exited with {code})" if code is not None else "")
                   + f"\n--- the end of the {engine} server's log ---\n{tail}")
            raise BenchError(msg) from None
        finally:
            stop_server(proc)


def _wait_ready(url: str, proc: subprocess.Popen, log, timeout: float, engine: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            log.seek(0)
            msg = f"the {engine} server exited ({proc.returncode}):\n{log.read()[-3000:]}"
            raise BenchError(msg)
        with contextlib.suppress(OSError, BenchError):
            _get_json(url, "/health")
            log.seek(0)
            ready = [x for x in log.read().splitlines() if x.startswith("bench server:")]
            print(ready[-1] if ready else f"{engine} server ready", flush=True)
            return
        if time.monotonic() > deadline:
            msg = f"the {engine} server did not start within {timeout:.0f} s"
            raise BenchError(msg)
        time.sleep(0.25)


def _server_memory(url: str) -> dict[str, int]:
    """The server's resident memory (/health: engine.memory.process), {} if it says none
    (a baseline's server reports it too: the same /health)."""
    try:
        health = _get_json(url, "/health")
    except (BrushfireError, OSError, ValueError):  # (a server gone: the replay says why)
        return {}
    got = health.get("memory", {}).get("process", {}) if isinstance(health, dict) else {}
    return got if {"rss", "anon", "file"} <= set(got) else {}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _http(url: str) -> str:
    return "http" + url[2:] if url.startswith("ws") else url


def _get_json(url: str, path: str) -> object:
    from brushfire.bench.replay import at  # (the path before a `?token=` of the URL)

    try:
        with urllib.request.urlopen(at(_http(url), path), timeout=30) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        msg = f"{at(_http(url), path)}: HTTP {e.code}: {e.read().decode(errors='replace')[:300]}"
        raise BenchError(msg) from None
    except (OSError, ValueError, http.client.HTTPException) as e:  # no server there, a bad URL, not JSON
        why = e.reason if isinstance(e, urllib.error.URLError) else e
        msg = f"cannot read {at(_http(url), path)}: {getattr(why, 'strerror', None) or why}"
        raise BenchError(msg) from None


def _only_dashboard(url: str) -> str:
    names = [d["name"] for d in _get_json(url, "/api/dashboards")]
    if len(names) != 1:
        msg = f"{url} serves {len(names)} dashboards ({', '.join(names)}): give a --trace for one"
        raise BenchError(msg)
    return names[0]


def _meta(args, trace: Trace, description: dict, engines: list[str]) -> dict:
    url = (args.url or "").partition("?")[0]
    return {
        "dashboard": trace.dashboard, "rows": description.get("rows"),
        "trace": {"events": len(trace.events), **trace.meta},
        "engines": engines, "clients": args.clients, "paced": args.paced,
        "in_process": bool(getattr(args, "in_process", False)),
        "warmup": args.warmup, "check_every": args.check_every if args.check else None,
        "spec": args.spec, "url": url or None,  # (without a `?token=`: not in result files)
        "ws": f"{url.rstrip('/')}/ws/{trace.dashboard}" if url else None,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "cpu": _cpu_model(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "code": _git_commit(),
    }


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parent
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        return subprocess.run(["git", "-C", str(here), "describe", "--always", "--dirty"],
                              capture_output=True, text=True, check=True).stdout.strip()
    return None


__all__ = ["BenchError", "add_arguments", "run", "serve"]


def stop_server(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """Stop a server process: terminate, then kill after `grace` seconds."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
