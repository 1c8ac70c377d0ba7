"""One event of a trace, alone: replay the trace up to event N on a fresh engine session
(`Dashboard.engine_session`), then time event N, several times, with the methods each
view was answered by. For a slow event a benchmark found (its `index` in the results'
`records`), to see whether it is slow every time and why.

    .venv/bin/python perf/replay_event.py TRACE SPEC N [--cache-dir DIR] [--repeat 3]

A trace comes from `brushfire bench ... --save-trace FILE` (or the page's Record).
Prints the filters before the event, the event, then ms and methods per repeat, and the
load average before and after (times are only comparable on a quiet machine).
"""

from __future__ import annotations

import argparse
import json
import os
import time

from brushfire import Dashboard, protocol
from brushfire.bench.trace import load_trace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("spec")
    ap.add_argument("index", type=int, help="the event to time (0-based, as in the results' records)")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    messages = [e.message for e in load_trace(args.trace).events]
    if not 0 <= args.index < len(messages):
        msg = f"the trace has {len(messages)} events: index from 0 to {len(messages) - 1}"
        raise SystemExit(msg)
    dash = Dashboard.open(args.spec, **({"cache_dir": args.cache_dir} if args.cache_dir else {}))
    print(f"load average before {os.getloadavg()[0]:.2f}")
    for rep in range(args.repeat):
        s = dash.engine_session()
        for m in messages[:args.index]:
            protocol.handle(s, m)
        if rep == 0:
            print("filters before:", json.dumps(protocol.filters_json(s)))
            print("event:", json.dumps(messages[args.index]))
        t0 = time.perf_counter()
        reply = protocol.handle(s, messages[args.index])
        ms = (time.perf_counter() - t0) * 1e3
        print(f"{rep}: {ms:.1f} ms (engine {reply.get('ms')})  selected {reply.get('selected')}  methods {reply.get('methods')}")
        s.close()
    print(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
