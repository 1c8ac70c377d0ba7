"""Replies recorded, then required byte for byte: the check that a refactor of the engine
changed no answer (issue 35: "behaviour is unchanged").

    python perf/replies.py                     # record into .cache/replies/<dashboard>.jsonl
    python perf/replies.py --check             # replay, compare with that file
    python perf/replies.py --cache-dir /work/main/.cache/brushfire --out /tmp/replies.jsonl

Opens SPEC's dashboard from the lineage cache (it refuses to start a capture on Spark
unless given --capture: the point is to replay the same store) and replays, each on a
fresh session of `Dashboard.session()` (after `warm_up`: the clustered key copies built,
so the planner sees the same costs every run) with every message through `protocol.handle` (the
dispatcher the server, the widget and `brushfire bench --in-process` share), the
workloads of `brushfire bench` (bench/workloads.py):

- human:  --events messages of the human model (zero-width starts, flicks, inverted drags,
          1-5 brushes held while another moves, clicks, clears);
- multi:  --events messages of several brushes, one dragged at a time;
- slide:  the Mosaic slide on every interval view, its pixel grid coarsened so that the
          whole trace has at most --events messages (each sweep still crosses the view);
- lookups: --lookups rounds of details pages and linked highlighting among random
          filters (the lineage queries; 0 leaves it out).

Each reply is written as `wire.dumps` makes it for the wire, less its `ms` (the time
it took: the one field that differs run to run). The methods that answered each view stay
in: a refactor that answers with another method is a change worth seeing. The first line
of the file says what was replayed (spec, rows, the capture's cache key, the code's
commit); --check replays what it says and stops at the first reply that differs, printing
the message, the first differing field and both replies; exit status 1. The recording is
not for git (.cache/ is ignored): the script regenerates it from any commit.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from common import code_version

from brushfire import protocol, wire
from brushfire.bench import pixels, workloads
from brushfire.dashboard import DEFAULT_CACHE, Dashboard, is_current
from brushfire.describe import describe_dashboard
from brushfire.lineage.layout import CaptureConfig
from brushfire.lineage.store import entry_dir, read_manifest
from brushfire.spec.loader import load_dashboard

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ("human", "multi", "slide", "lookups")


def traces(info: workloads.DashboardInfo, events: int, lookups: int, seed: int) -> dict:
    """The workloads' traces, each at most about `events` messages (multi ends its last
    drag and a clear past it)."""
    out = {"human": workloads.human(info, seed=seed, events=events),
           "multi": workloads.multi(info, seed=seed, events=events)}
    n = pixels.PIXELS
    while True:  # the slide's pixels, coarsened until the trace fits
        slide = workloads.slide(info, n_pixels=n)
        if len(slide.events) <= events or n <= 10:
            break
        n = max(10, int(n * events / len(slide.events)))
    out["slide"] = slide
    if lookups and (info.details or info.highlight_sources):
        out["lookups"] = workloads.lookups(info, seed=seed, events=lookups)
    return out


def reply_text(reply: dict) -> str:
    """A reply as sent, less the time it took."""
    return wire.dumps({k: v for k, v in reply.items() if k != "ms"})


def replay(dash: Dashboard, trace) -> list[tuple[dict, str]]:
    session = dash.session()
    out = []
    for i, ev in enumerate(trace.events):
        message = {**ev.message, "id": i}
        out.append((message, reply_text(protocol.handle(session, message))))
    close = getattr(session, "close", None)
    if close is not None:
        close()
    return out


def first_difference(a, b, path: str = "") -> str:
    """Where two JSON values first differ, as a path and the two values."""
    if type(a) is not type(b):
        return f"{path or '(reply)'}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}"
    if isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return f"{path}.{k}: only in the {'recording' if k in a else 'replay'}"
            if a[k] != b[k]:
                return first_difference(a[k], b[k], f"{path}.{k}")
        if list(a) != list(b):
            return f"{path or '(reply)'}: keys in another order: {list(a)} != {list(b)}"
    elif isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return first_difference(x, y, f"{path}[{i}]")
    same = " (equal values, other text)" if a == b else ""
    return f"{path or '(reply)'}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}{same}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default=str(ROOT / "dashboards" / "flights.yaml"))
    ap.add_argument("--cache-dir", default=DEFAULT_CACHE)
    ap.add_argument("--out", type=Path, default=None,
                    help="the recording (default: .cache/replies/<dashboard>.jsonl in this checkout)")
    ap.add_argument("--check", action="store_true", help="replay the recording's workloads and compare")
    ap.add_argument("--events", type=int, default=300, help="messages per workload (about)")
    ap.add_argument("--lookups", type=int, default=10, help="rounds of the lookups workload (0: none)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--capture", action="store_true",
                    help="capture on Spark when the cache holds no current capture of the spec")
    args = ap.parse_args()

    spec = load_dashboard(args.spec)
    out = args.out or ROOT / ".cache" / "replies" / f"{spec.name}.jsonl"
    meta = read_manifest(entry_dir(args.cache_dir, spec))
    if not args.capture and (meta is None or not is_current(meta, spec, CaptureConfig())):
        print(f"no current capture of {args.spec} in {args.cache_dir} (give --cache-dir, or "
              "--capture to capture it on Spark)", file=sys.stderr)
        return 2
    recorded: list[dict] = []
    if args.check:
        lines = out.read_text().splitlines()
        head = json.loads(lines[0])
        recorded = [json.loads(x) for x in lines[1:]]
        args.events, args.lookups, args.seed = head["events"], head["lookups"], head["seed"]
    dash = Dashboard.open(spec, cache_dir=args.cache_dir, memory_budget=None)
    if args.check and head["cache_key"] != dash.store.manifest["cache_key"]:
        print(f"the recording is of capture {head['cache_key']}, the cache holds "
              f"{dash.store.manifest['cache_key']}: record again", file=sys.stderr)
        return 2
    # the clustered key copies built (their build runs in the background from the first
    # session on, and the planner's costs, so the methods it picks, depend on them)
    dash.warm_up(freeze=False)
    info = workloads.DashboardInfo.from_description(describe_dashboard(dash))
    t0 = time.perf_counter()
    rows = []
    for name, trace in traces(info, args.events, args.lookups, args.seed).items():
        rows += [{"workload": name, "i": i, "message": msg, "reply": text}
                 for i, (msg, text) in enumerate(replay(dash, trace))]
        print(f"{name}: {len(trace.events)} messages", flush=True)
    seconds = time.perf_counter() - t0
    if not args.check:
        head = {"spec": args.spec, "rows": dash.store.n_rows, "cache_key": dash.store.manifest["cache_key"],
                "events": args.events, "lookups": args.lookups, "seed": args.seed,
                "code": code_version(None)}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(json.dumps(x) for x in [head, *rows]) + "\n")
        print(f"{len(rows)} replies in {seconds:.1f} s, written to {out}")
        return 0
    for want, got in zip(recorded, rows, strict=False):
        if (want["workload"], want["message"]) != (got["workload"], got["message"]):
            print(f"the workloads' messages differ at {want['workload']} #{want['i']}: the trace "
                  "generator changed; record again", file=sys.stderr)
            return 1
        if want["reply"] != got["reply"]:
            print(f"reply {got['workload']} #{got['i']} differs; message: {json.dumps(got['message'])}\n"
                  f"  first difference: {first_difference(json.loads(want['reply']), json.loads(got['reply']))}\n"
                  f"  recorded: {want['reply'][:2000]}\n  replayed: {got['reply'][:2000]}")
            return 1
    if len(recorded) != len(rows):
        print(f"{len(recorded)} replies recorded, {len(rows)} replayed", file=sys.stderr)
        return 1
    print(f"{len(rows)} replies identical to {out} (recorded at {head['code']['commit']}) "
          f"in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
