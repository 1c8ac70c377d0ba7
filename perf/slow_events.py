"""The slow events of a `brushfire bench` run, with the filters they met.

    python perf/slow_events.py perf/results/bench-flights6-3m-human.json \
        perf/results/bench-flights6-3m-human.trace.json [--engine brushfire] [--over 150] [--top 12]

Reads the run's JSON (every message's latency and engine time) and the trace it replayed
(`--save-trace`), and prints: latency and engine-time percentiles, the share under 16.7,
100 and 150 ms, how many replies and engine times were over --over ms (and over 1 s),
the slow events grouped by shape (what the brushed view held before: no brush, a
zero-width, an inverted or an ordinary interval; which message of its drag it was; how
many other filters were active), and the --top slowest as `active filters -> message
-> engine ms (reply ms)`, the form issue 10 quotes.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np

from brushfire.bench.trace import filters_before, load_trace

DRAG_GAP_MS = 20.0  # messages closer than this are frames of one drag


def _short(x):
    if isinstance(x, float):
        return round(x, 2)
    if isinstance(x, list):
        return [_short(v) for v in x]
    if isinstance(x, dict):
        return {k: _short(v) for k, v in x.items()}
    return x


def _text(filters: dict) -> str:
    return "{" + ", ".join(f"{k}: {json.dumps(_short(v))}" for k, v in sorted(filters.items())) + "}"


def _message(m: dict) -> str:
    if m["type"] == "brush":
        y = f" y {json.dumps(_short(m['y']))}" if m.get("y") is not None else ""
        return f"brush {m['view']} {json.dumps(_short(m['interval']))}{y}"
    rest = {k: v for k, v in m.items() if k != "type"}
    return f"{m['type']} {json.dumps(rest)}"


def _held(before) -> str:
    """What a view's brush (a tagged filter, brushfire/selection.py) was before a message:
    none, zero-width, inverted, interval."""
    if before is None:
        return "none"
    spans = [before["rect"]["x"], before["rect"]["y"]] if "rect" in before else [before["interval"]]
    if any(lo is not None and lo == hi for lo, hi in spans):
        return "zero-width"
    if any(lo is not None and hi is not None and lo > hi for lo, hi in spans):
        return "inverted"
    return "interval"


def _frame(trace, i: int) -> str:
    """Which message of its drag event i is: 1st, 2nd, 3rd-5th or 6th+ (frames of a drag
    are under DRAG_GAP_MS apart)."""
    k = 1
    while k < 6 and i - k >= 0 and trace.events[i - k + 1].t - trace.events[i - k].t <= DRAG_GAP_MS \
            and trace.events[i - k].message.get("view") == trace.events[i].message["view"]:
        k += 1
    return {1: "1st", 2: "2nd"}.get(k, "3rd-5th" if k < 6 else "6th+")


def _stats(a: np.ndarray) -> str:
    p50, p99 = np.percentile(a, [50, 99])
    under = [(a < x).mean() for x in (1000 / 60, 100, 150)]
    return (f"p50 {p50:.2f}  p99 {p99:.2f}  max {a.max():,.0f} ms; under 16.7 / 100 / 150 ms: "
            + " / ".join(f"{u:.2%}" for u in under))


def report(result: dict, trace_path: Path, engine: str, over: float, top: int) -> str:
    trace = load_trace(trace_path)
    before = filters_before(trace)
    records = [r for r in result["engines"][engine]["records"] if r["reply_type"] != "skipped"]
    latency = np.array([r["latency_ms"] for r in records])
    engine_ms = np.array([r["engine_ms"] for r in records if r["engine_ms"] is not None])
    lines = [f"{result['meta']['dashboard']} ({result['meta']['rows']:,} rows), {engine}, "
             f"{len(records):,} replies of {len(trace.events):,} events",
             f"  reply:  {_stats(latency)}",
             f"  engine: {_stats(engine_ms)}",
             f"  replies > {over:g} ms: {(latency > over).sum()}; engine > {over:g} ms: "
             f"{(engine_ms > over).sum()}; engine > 1 s: {(engine_ms > 1000).sum()}"]
    slow = sorted((r for r in records if (r["engine_ms"] or 0) > over),
                  key=lambda r: -r["engine_ms"])
    shapes: Counter = Counter()
    others: Counter = Counter()
    for r in slow:
        i = r["index"]
        m = trace.events[i].message
        if m["type"] != "brush":
            shapes[m["type"]] += 1
            continue
        others[sum(k != m["view"] for k in before[i])] += 1
        shapes[f"brush over {_held(before[i].get(m['view']))}, {_frame(trace, i)} message of its drag"] += 1
    if slow:
        lines.append(f"  slow events (engine > {over:g} ms) by shape:")
        lines += [f"    {n:>5}  {shape}" for shape, n in shapes.most_common()]
        lines.append("  slow brushes by number of other active filters: "
                     + ", ".join(f"{k}: {n}" for k, n in sorted(others.items())))
        if top:
            lines.append(f"  the {min(top, len(slow))} slowest (active filters -> message -> engine ms (reply ms)):")
        for r in slow[:top]:
            i = r["index"]
            lines.append(f"    #{i}: {_text(before[i])} -> {_message(trace.events[i].message)} -> "
                         f"{r['engine_ms']:,.0f} ms ({r['latency_ms']:,.0f} ms)")
    return "\n".join(lines)


def main() -> None:
    """Parse arguments and print the report."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result", type=Path, help="the JSON `brushfire bench` wrote")
    ap.add_argument("trace", type=Path, help="the trace it replayed (--save-trace)")
    ap.add_argument("--engine", default="brushfire")
    ap.add_argument("--over", type=float, default=150.0, help="slow: engine time over this (ms)")
    ap.add_argument("--top", type=int, default=12, help="how many of the slowest to print")
    args = ap.parse_args()
    result = json.loads(args.result.read_text())
    print(report(result, args.trace, args.engine, args.over, args.top))


if __name__ == "__main__":
    main()
