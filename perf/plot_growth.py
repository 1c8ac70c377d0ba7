"""Growth with rows, from several `perf/growth.py` results: capture time and its ratio to
the plain queries, store bytes per row per view, peak memory, and the engine's p99 and
max per workload.

    python perf/plot_growth.py perf/results/growth-flights-3m.json \
        perf/results/growth-flights_30m-30m.json ... --out perf/results/growth.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

WORKLOADS = ("slide", "multi", "human")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, nargs="+")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    runs = sorted((json.loads(p.read_text()) for p in args.results), key=lambda r: r["capture"]["rows"])
    rows = [r["capture"]["rows"] / 1e6 for r in runs]
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))

    ax = axes[0]
    ax.plot(rows, [r["capture"]["seconds"] for r in runs], "o-", label="capture")
    ax.plot(rows, [r["capture"]["base_warm"] for r in runs], "s--", label="plain base queries (warm)")
    for x, r in zip(rows, runs, strict=True):
        ax.annotate(f"{r['capture']['ratio_warm']:.1f}×", (x, r["capture"]["seconds"]),
                    textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set(title="capture (s)", xlabel="rows (M)")
    ax.legend(fontsize=8)

    ax = axes[1]
    ax.plot(rows, [r["capture"]["bytes_per_row_per_view"] for r in runs], "o-")
    ax.axhline(6, color="grey", ls=":", lw=1)
    ax.set(title="store, bytes / row / view (snapshot apart)", xlabel="rows (M)", ylim=(0, None))

    ax = axes[2]
    ax.plot(rows, [r["capture"]["peak_bytes"] / 2**30 for r in runs], "o-", label="capture (driver + JVM)")
    ax.plot(rows, [r["serve"]["rss_after_open"] / 2**30 for r in runs], "s-", label="server after open")
    ax.set(title="memory (GiB)", xlabel="rows (M)", ylim=(0, None))
    ax.legend(fontsize=8)

    ax = axes[3]
    for w in WORKLOADS:
        have = [(x, r["serve"][w]) for x, r in zip(rows, runs, strict=True) if w in r["serve"]]
        if have:
            line, = ax.plot([x for x, _ in have], [s["p99"] for _, s in have], "o-", label=f"{w} p99")
            ax.plot([x for x, _ in have], [s["max"] for _, s in have], "^:", color=line.get_color(),
                    label=f"{w} max")
    ax.axhline(150, color="red", ls=":", lw=1)
    ax.set(title="engine ms per update", xlabel="rows (M)", yscale="log")
    ax.legend(fontsize=7, ncol=2)

    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(rows, [f"{x:g}M" for x in rows])
        ax.minorticks_off()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
