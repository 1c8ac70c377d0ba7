"""One overview plot from several `brushfire bench` results: p50 and p99 per engine and
data size, Brushfire's ratio written above each baseline.

    python perf/plot_bench.py perf/results/bench-3m-slide-rerun.json \
        perf/results/bench-3m-slide-limit300.json ... --out perf/results/bench-overview.png

For each data size, an engine's numbers come from the first file (in the order given)
that has it; the ratio uses Brushfire's numbers from that same file (the same messages).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ORDER = ("brushfire", "preagg", "duckdb", "lazy")


def collect(paths: list[Path]) -> dict[str, dict[str, tuple[dict, dict, str]]]:
    """{rows label: {engine: (latency stats, brushfire's stats in that file, file name)}}"""
    out: dict[str, dict] = {}
    for path in paths:
        result = json.loads(path.read_text())
        rows = result["meta"]["rows"]
        label = f"{rows / 1e6:g}M rows"
        runs = result["engines"]
        ref = runs.get("brushfire", {}).get("summary", {}).get("latency_ms", {})
        for engine, run in runs.items():
            out.setdefault(label, {}).setdefault(engine, (run["summary"]["latency_ms"], ref, path.name))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("perf/results/bench-overview.png"))
    args = ap.parse_args()
    data = collect(args.results)
    fig, axes = plt.subplots(1, len(data), figsize=(6 * len(data), 4.8), sharey=True, squeeze=False)
    for ax, (label, engines) in zip(axes[0], data.items(), strict=True):
        names = [e for e in ORDER if e in engines] + [e for e in engines if e not in ORDER]
        x = np.arange(len(names))
        for j, q in enumerate(("p50", "p99")):
            vals = [engines[e][0][q] for e in names]
            bars = ax.bar(x + (j - 0.5) * 0.38, vals, 0.38, label=q)
            ax.bar_label(bars, fmt="%.3g", fontsize=7)
        for i, e in enumerate(names):
            stats, ref, _ = engines[e]
            if e != "brushfire" and ref.get("p50"):
                ax.annotate(f"Brushfire p50\n= {ref['p50'] / stats['p50']:.2g} ×", (i, stats["p99"] * 2.2),
                            ha="center", fontsize=7)
        ax.set_xticks(x, names)
        ax.set_yscale("log")
        ax.set_ylim(0.3, 1e5)
        ax.axhline(150, color="grey", ls="--", lw=1)
        ax.set_title(f"sliding brush over WebSocket, {label}")
        ax.set_ylabel("latency per message (ms, log); dashed: 150 ms")
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=90)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
