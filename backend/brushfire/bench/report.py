"""Latency statistics of replays, Brushfire's ratio to each baseline, and plots.

Latencies are client-side: send -> the matching reply, in ms, over the messages that
got an answer other than `skipped` (skipped brushes are counted apart). Throughput is
answered messages per second of replay wall time, over all clients.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from brushfire.bench.replay import Record

INTERACTIVE_MS = 150.0  # the latency interactive analysis needs (DESIGN.md)


def stats(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    a = np.asarray(values, float)
    p50, p95, p99 = np.percentile(a, [50, 95, 99])
    return {"n": int(a.size), "p50": float(p50), "p95": float(p95), "p99": float(p99),
            "max": float(a.max()), "mean": float(a.mean()),
            "under_100ms": float((a < 100.0).mean()),
            "under_150ms": float((a < INTERACTIVE_MS).mean())}


def summarize(records: list[Record], seconds: float) -> dict:
    """Overall and per-kind (message type and view) latency, counts of reply types."""
    answered = [r for r in records if r.reply_type != "skipped"]
    by_kind: dict[str, list[Record]] = defaultdict(list)
    for r in answered:
        by_kind[r.kind].append(r)
    types: dict[str, int] = defaultdict(int)
    for r in records:
        types[r.reply_type] += 1
    engine = [r.engine_ms for r in answered if r.engine_ms is not None]
    return {
        "latency_ms": stats([r.latency_ms for r in answered]),
        "engine_ms": stats(engine),
        "by_kind": {k: stats([r.latency_ms for r in v]) for k, v in sorted(by_kind.items())},
        "replies": dict(types),
        "messages": len(records),
        "skipped": types.get("skipped", 0),
        "errors": types.get("error", 0),
        "seconds": seconds,
        "throughput_per_s": len(answered) / seconds if seconds > 0 else None,
        "first_errors": [r.error for r in records if r.error][:3],
        "methods": method_share([r.methods for r in answered if r.methods]),
    }


def method_share(keys: list[str]) -> dict[str, float]:
    """Share of view updates answered by each method (`Update.methods`), from records'
    "cube:4,base:1" keys."""
    counts: dict[str, int] = defaultdict(int)
    for key in keys:
        for part in key.split(","):
            name, n = part.rsplit(":", 1)
            counts[name] += int(n)
    total = sum(counts.values()) or 1
    return {k: counts[k] / total for k in sorted(counts)}


def ratios(summaries: dict[str, dict], reference: str = "brushfire") -> dict[str, dict]:
    """Per baseline: Brushfire's latency divided by the baseline's (p50, p99, max), and the
    baseline's divided by Brushfire's (how many times faster Brushfire is)."""
    ref = summaries.get(reference, {}).get("latency_ms", {})
    out = {}
    for engine, s in summaries.items():
        lat = s["latency_ms"]
        if engine == reference or not ref.get("n") or not lat.get("n"):
            continue
        out[engine] = {f"{q}_ratio": ref[q] / lat[q] for q in ("p50", "p99", "max")}
        out[engine] |= {f"{q}_speedup": lat[q] / ref[q] for q in ("p50", "p99", "max")}
    return out


def table(summaries: dict[str, dict], checks: dict[str, dict] | None = None,
          reference: str = "brushfire", failures: dict[str, str] | None = None) -> str:
    """A text table: one row per engine, ratios to the reference engine side by side."""
    rats = ratios(summaries, reference)
    head = (f"{'engine':<10} {'n':>6} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'max ms':>9} "
            f"{'<100ms':>7} {'<150ms':>7} {'msg/s':>8} {'skipped':>7} {'errors':>6} {'mismatch':>8} "
            f"{'bf/p50':>8} {'bf/p99':>8}")
    lines = [head, "-" * len(head)]
    for engine, s in summaries.items():
        lat = s["latency_ms"]
        if not lat.get("n"):
            lines.append(f"{engine:<10} {0:>6} (no answered messages)")
            continue
        r = rats.get(engine, {})
        mism = (checks or {}).get(engine, {}).get("mismatches", "")
        lines.append(
            f"{engine:<10} {lat['n']:>6} {lat['p50']:>9.3f} {lat['p95']:>9.3f} {lat['p99']:>9.3f} "
            f"{lat['max']:>9.1f} {share(lat['under_100ms']):>7} {share(lat['under_150ms']):>7} "
            f"{s['throughput_per_s'] or 0:>8.1f} "
            f"{s['skipped']:>7} {s['errors']:>6} {mism!s:>8} "
            f"{_ratio(r.get('p50_ratio')):>8} {_ratio(r.get('p99_ratio')):>8}")
    for engine, why in (failures or {}).items():
        lines.append(f"{engine:<10} FAILED: {why.splitlines()[0][:200]}")
    lines.append(f"bf/p50, bf/p99: {reference}'s latency divided by the engine's")
    return "\n".join(lines)


def share(x: float) -> str:
    """A share as a percentage rounded down, so that 1,999 of 2,000 reads 99.95 %, never
    100 %."""
    if x >= 1.0:
        return "100%"
    return f"{np.floor(x * 10_000) / 100:.2f}%"


def _ratio(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.2g}" if x < 0.01 else f"{x:.3f}"


# --- plots ----------------------------------------------------------------------------


def plot(runs: dict[str, dict], prefix: str | Path, title: str) -> list[Path]:
    """PNGs: latency distribution (CDF and histogram), latency along the trace, latency vs
    selected rows, and p50 / p99 per engine. `runs[engine]` holds `records` (as dicts)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    out = []
    lat = {e: np.array([r["latency_ms"] for r in run["records"] if r["reply_type"] != "skipped"])
           for e, run in runs.items()}
    lat = {e: a for e, a in lat.items() if a.size}
    if not lat:
        return out
    lo = max(min(a.min() for a in lat.values()) / 1.5, 1e-3)
    hi = max(a.max() for a in lat.values()) * 1.5
    bins = np.geomspace(lo, hi, 60)

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for e, a in lat.items():
        s = np.sort(a)
        ax1.plot(s, np.arange(1, s.size + 1) / s.size, label=f"{e} (n={s.size})")
        ax2.hist(a, bins=bins, histtype="step", label=e)
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.axvline(INTERACTIVE_MS, color="grey", ls="--", lw=1)
        ax.set_xlabel("latency, send to reply (ms, log)")
    ax1.set_ylabel("share of messages answered within")
    ax1.legend(fontsize=8)
    ax2.set_ylabel("messages")
    fig.suptitle(f"{title}: latency distribution (dashed: 150 ms)")
    out.append(_save(fig, prefix, "latency"))

    fig, ax = plt.subplots(figsize=(12, 4.5))
    for e, run in runs.items():
        recs = [r for r in run["records"] if r["reply_type"] != "skipped" and r["client"] == 0]
        ax.plot([r["index"] for r in recs], [r["latency_ms"] for r in recs], ".", ms=2, label=e)
    ax.set_yscale("log")
    ax.axhline(INTERACTIVE_MS, color="grey", ls="--", lw=1)
    ax.set_xlabel("event of the trace (client 0)")
    ax.set_ylabel("latency (ms, log)")
    ax.legend(fontsize=8, markerscale=4)
    ax.set_title(f"{title}: latency along the trace")
    out.append(_save(fig, prefix, "trace"))

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for e, run in runs.items():
        recs = [r for r in run["records"] if r["reply_type"] == "update" and r["selected"] is not None]
        ax.plot([r["selected"] for r in recs], [r["latency_ms"] for r in recs], ".", ms=2, label=e)
    ax.set_yscale("log")
    ax.set_xlabel("rows selected (passing every filter)")
    ax.set_ylabel("latency (ms, log)")
    ax.legend(fontsize=8, markerscale=4)
    ax.set_title(f"{title}: latency vs selected rows")
    out.append(_save(fig, prefix, "selected"))

    engines = list(lat)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    x = np.arange(len(engines))
    for j, q in enumerate((50, 99)):
        vals = [np.percentile(lat[e], q) for e in engines]
        bars = ax.bar(x + (j - 0.5) * 0.38, vals, 0.38, label=f"p{q}")
        ax.bar_label(bars, fmt="%.3g", fontsize=7)
    ax.set_xticks(x, engines)
    ax.set_yscale("log")
    ax.axhline(INTERACTIVE_MS, color="grey", ls="--", lw=1)
    ax.set_ylabel("latency (ms, log)")
    ax.legend(fontsize=8)
    ax.set_title(f"{title}: p50 and p99 per engine")
    out.append(_save(fig, prefix, "compare"))
    return out


def _save(fig, prefix: Path, what: str) -> Path:
    path = prefix.with_name(f"{prefix.name}-{what}.png")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
