"""Plots of bench_engine.py results (PNG, under perf/results/ by default).

    python perf/plot.py perf/results/engine-3m.json perf/results/engine-30m.json

Per JSON file (label = file stem without 'engine-', e.g. 3m):
- latency-<label>.png: per workload, a histogram of update latency (log x) and the CDF,
  with the targets (1 ms sliding, 15 ms multi-brush p99, 150 ms any update) marked;
- trace-<label>.png: latency over the sliding trace (brush's left pixel on x), one panel
  per workload and view, one line per brush width; the methods' mix shows as color bands.
With two or more files, also compare-cdf.png: the CDFs of all files on one chart.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"slide": 1.0, "multi": 15.0, "any": 150.0}
COLORS = {"slide": "tab:blue", "multi2": "tab:orange", "multi3": "tab:red",
          "multi2+origin": "tab:purple"}


def latencies(result: dict) -> dict[str, np.ndarray]:
    """Engine latency (ms) of every sliding update, per workload."""
    out: dict[str, list[float]] = {}
    for t in result["traces"]:
        out.setdefault(t["workload"], []).extend(t["seconds"])
    return {w: np.asarray(v) * 1e3 for w, v in out.items()}


def _target_lines(ax: plt.Axes) -> None:
    """Dotted vertical lines at the latency targets."""
    for name, ms in TARGETS.items():
        ax.axvline(ms, color="gray", ls=":", lw=1)
        ax.text(ms, 1.0, f" {name} {ms:g} ms", transform=ax.get_xaxis_transform(), fontsize=7,
                color="gray", va="top", rotation=90)


def plot_latency(result: dict, label: str, out: Path) -> Path:
    """Histogram (log x) and CDF of update latency per workload."""
    lat = latencies(result)
    fig, (ax_h, ax_c) = plt.subplots(1, 2, figsize=(11, 4))
    lo = max(1e-3, min(a.min() for a in lat.values()))
    hi = max(a.max() for a in lat.values())
    bins = np.logspace(np.log10(lo), np.log10(max(hi, TARGETS["any"])), 60)
    for w, a in lat.items():
        color = COLORS.get(w)
        ax_h.hist(a, bins=bins, histtype="step", lw=1.5, label=w, color=color)
        xs = np.sort(a)
        ax_c.plot(xs, np.arange(1, len(xs) + 1) / len(xs), lw=1.5, color=color,
                  label=f"{w} (p99 {np.percentile(a, 99):.2f} ms)")
    for ax in (ax_h, ax_c):
        ax.set_xscale("log")
        ax.set_xlabel("engine time per update (ms, log)")
        _target_lines(ax)
    ax_h.set_yscale("log")
    ax_h.set_ylabel("updates")
    ax_h.set_title("latency histogram")
    ax_c.set_ylabel("share of updates <= x")
    ax_c.set_title("latency CDF")
    ax_c.axhline(0.99, color="gray", lw=0.5)
    ax_c.legend(fontsize=8, loc="lower right")
    ax_h.legend(fontsize=8)
    meta = result["meta"]
    fig.suptitle(f"{meta['dashboard']}: {meta['n_rows']:,} rows, sliding brushes "
                 f"(1 px of {meta['pixels']} per update)", fontsize=10)
    fig.tight_layout()
    path = out / f"latency-{label}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_trace(result: dict, label: str, out: Path) -> Path:
    """Latency over the sliding trace, per workload (rows) and view (columns)."""
    traces = result["traces"]
    workloads = list(dict.fromkeys(t["workload"] for t in traces))
    views = list(dict.fromkeys(t["view"] for t in traces))
    fig, axes = plt.subplots(len(workloads), len(views), figsize=(4 * len(views), 2.4 * len(workloads)),
                             sharex=True, sharey=True, squeeze=False)
    styles = {0.1: "tab:blue", 0.2: "tab:green", 0.3: "tab:red"}
    for t in traces:
        ax = axes[workloads.index(t["workload"]), views.index(t["view"])]
        ax.plot(t["px"], np.asarray(t["seconds"]) * 1e3, lw=0.7,
                color=styles.get(t["width"], "k"), label=f"{int(t['width'] * 100)}%")
    for i, w in enumerate(workloads):
        for j, v in enumerate(views):
            ax = axes[i, j]
            ax.set_yscale("log")
            ax.axhline(TARGETS["slide" if w == "slide" else "multi"], color="gray", ls=":", lw=1)
            if i == 0:
                ax.set_title(f"brush on {v}", fontsize=9)
            if j == 0:
                ax.set_ylabel(f"{w}\nms (log)", fontsize=8)
            if i == len(workloads) - 1:
                ax.set_xlabel("brush left edge (px of 600)", fontsize=8)
            ax.tick_params(labelsize=7)
    axes[0, 0].legend(fontsize=7, title="width", title_fontsize=7)
    meta = result["meta"]
    fig.suptitle(f"{meta['dashboard']}: {meta['n_rows']:,} rows, engine time per update "
                 "along the sliding trace", fontsize=10)
    fig.tight_layout()
    path = out / f"trace-{label}.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def plot_compare(results: dict[str, dict], out: Path) -> Path:
    """CDFs of every file on one chart: color = workload, line style = file."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for (label, result), ls in zip(results.items(), ["-", "--", ":", "-."], strict=False):
        for w, a in latencies(result).items():
            xs = np.sort(a)
            ax.plot(xs, np.arange(1, len(xs) + 1) / len(xs), ls=ls, lw=1.3,
                    color=COLORS.get(w), label=f"{w} {label}")
    ax.set_xscale("log")
    ax.set_xlabel("engine time per update (ms, log)")
    ax.set_ylabel("share of updates <= x")
    _target_lines(ax)
    ax.axhline(0.99, color="gray", lw=0.5)
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    ax.set_title("sliding-brush latency CDF by data size", fontsize=10)
    fig.tight_layout()
    path = out / "compare-cdf.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main() -> None:
    """Plot every JSON file given; compare them when there are several."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+", type=Path, help="bench_engine.py output files")
    ap.add_argument("--out", type=Path, default=ROOT / "perf" / "results")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for path in args.json:
        label = path.stem.removeprefix("engine-")
        results[label] = json.loads(path.read_text())
        for png in (plot_latency(results[label], label, args.out),
                    plot_trace(results[label], label, args.out)):
            print(f"wrote {png}")
    if len(results) > 1:
        print(f"wrote {plot_compare(results, args.out)}")


if __name__ == "__main__":
    main()
