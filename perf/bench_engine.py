"""Engine latency benchmark: how long a session takes to answer each interaction.

    python perf/bench_engine.py --spec dashboards/flights.yaml
    python perf/bench_engine.py --spec perf/dashboards/flights-30m.yaml

Opens the dashboard with `Dashboard.open` (captures on local Spark the first time and
caches under .cache/brushfire; later runs load the cache), warms the numba kernels up
with one untimed pass, then measures per update both `Update.seconds` (the engine's own
time, Python + kernels) and the wall time around the `Session` call:

- slide: one brush on a histogram (delay, hour, distance) of width 10/20/30 % of the view's
  extent moved across the extent one pixel of a 600-pixel view at a time, then cleared
  (the Mosaic selection benchmark). Target p99 <= 1 ms.
- multi2 / multi3 / multi2+origin: the same slides while brushes at fixed random (seeded)
  positions are active on two or three other brushable views, or on two plus a select of
  a few airports on `origin`. Target p99 <= 15 ms, no update over 150 ms. Methods used
  (`Update.methods`) are counted.
- details: time to the first page of `Session.details()` right after brushing (one
  filter, several filters, and the rows behind one bar), and to the next page.
  Target <= 20 ms.
- highlight: `Session.highlight` from origin bars, with and without filters.
- memory: `store.nbytes()` per view / filter, as bytes per row.

Writes everything (including the raw traces, for perf/plot.py) to a JSON file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from common import Progress, code_version, parse_conf, spark_session

from brushfire.dashboard import Dashboard
from brushfire.engine.session import Session, Update
from brushfire.lineage.store import entry_dir, source_fingerprint
from brushfire.spec import models as m
from brushfire.spec.loader import load_dashboard

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("BRUSHFIRE_CACHE", ROOT / ".cache" / "brushfire"))  # not cwd-relative

PIXELS = 600  # the view's width in pixels: the brush moves one pixel at a time
WIDTHS = (0.1, 0.2, 0.3)  # brush width as a share of the view's extent
SLIDE_VIEWS = ("delay", "hour", "distance")
TARGETS_MS = {"slide_p99": 1.0, "multi_p99": 15.0, "max_any": 150.0, "details": 20.0}
SEED = 7


@dataclass
class Timing:
    """One timed interaction: engine seconds (Update.seconds), wall seconds, methods."""

    what: str
    seconds: float
    wall: float
    methods: str = ""


@dataclass
class Trace:
    """One sliding-brush run: a brush of `width` moved across `view`, one pixel per update."""

    workload: str
    view: str
    width: float
    fixed: dict[str, object] = field(default_factory=dict)  # filters held while sliding
    setup: list[Timing] = field(default_factory=list)
    px: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)
    clear: Timing | None = None


def method_key(update: Update) -> str:
    """'cube:5' / 'base:1,incremental:4': how many views each method answered."""
    counts = Counter(update.methods.values())
    return ",".join(f"{k}:{counts[k]}" for k in sorted(counts))


def timed(what: str, call: Callable[[], Update]) -> Timing:
    """Run one interaction; its Update.seconds, the wall time around it, its methods."""
    t0 = time.perf_counter()
    u = call()
    wall = time.perf_counter() - t0
    return Timing(what, u.seconds, wall, method_key(u))


# --- dashboard geometry ------------------------------------------------------------------


class Geometry:
    """Value extents of brushable views, and pixel -> value mapping of a 600-pixel view."""

    def __init__(self, dash: Dashboard) -> None:
        self.dash = dash
        self.extents: dict[str, tuple[float, float]] = {}
        self.temporal: set[str] = set()
        for f in dash.plan.filters:
            if f.kind != "interval":
                continue
            view = dash.spec.view(f.name)
            if isinstance(view, m.TemporalView):
                labels = dash.store.view(f.name).labels
                lo = datetime.fromisoformat(labels[0]).timestamp()
                hi = (datetime.fromisoformat(labels[-1]) + _unit(view.unit)).timestamp()
                self.extents[f.name] = (lo, hi)
                self.temporal.add(f.name)
            else:
                self.extents[f.name] = tuple(view.bin.extent)
        points = [f.name for f in dash.plan.filters if f.kind == "points"]
        self.points = points[0] if points else None

    def interval(self, view: str, px0: float, px1: float) -> tuple:
        """The brush [value at px0, value at px1] of `view`."""
        lo, hi = self.extents[view]
        a = lo + (hi - lo) * px0 / PIXELS
        b = lo + (hi - lo) * px1 / PIXELS
        if view in self.temporal:
            return (datetime.fromtimestamp(a, UTC), datetime.fromtimestamp(b, UTC))
        return (a, b)

    def random_brush(self, view: str, rng: np.random.Generator) -> tuple:
        """A brush of random width (15-50 % of the extent) at a random position."""
        w = rng.uniform(0.15, 0.5) * PIXELS
        x0 = rng.uniform(0, PIXELS - w)
        return self.interval(view, x0, x0 + w)

    def random_points(self, rng: np.random.Generator, k: int = 3) -> list:
        """`k` of the ten busiest values of the categorical view."""
        labels = [x for x in self.dash.store.view(self.points).labels if x != "(other)"]
        return sorted(rng.choice(labels[:10], size=k, replace=False).tolist())


def _unit(unit: str) -> timedelta:
    """Length of a temporal bar (months approximated by 31 days)."""
    return {"minute": timedelta(minutes=1), "hour": timedelta(hours=1), "day": timedelta(days=1),
            "week": timedelta(weeks=1)}.get(unit, timedelta(days=31))


def _jsonable(x: object) -> object:
    """Datetimes and numpy scalars as JSON values."""
    if isinstance(x, datetime):
        return x.isoformat()
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    return x


# --- workloads -----------------------------------------------------------------------------


def slide(session: Session, geo: Geometry, trace: Trace, stride: int = 1) -> Trace:
    """Move a brush of trace.width across trace.view, one pixel per update, then clear it."""
    wpx = round(trace.width * PIXELS)
    for px in range(0, PIXELS - wpx + 1, stride):
        t = timed("brush", lambda px=px: session.brush(trace.view, geo.interval(trace.view, px, px + wpx)))
        trace.px.append(px)
        trace.seconds.append(t.seconds)
        trace.wall.append(t.wall)
        trace.methods.append(t.methods)
    trace.clear = timed("clear", lambda: session.clear(trace.view))
    return trace


def multi_fixed(geo: Geometry, workload: str, view: str, rng: np.random.Generator) -> dict:
    """Fixed filters for a multi-brush workload: brushes on 2 or 3 other views (+ origin)."""
    others = [v for v in geo.extents if v != view]
    k = 3 if workload.startswith("multi3") else 2
    chosen = sorted(rng.choice(others, size=min(k, len(others)), replace=False).tolist(),
                    key=others.index)
    fixed: dict[str, object] = {v: geo.random_brush(v, rng) for v in chosen}
    if workload.endswith("+origin") and geo.points:
        fixed[geo.points] = geo.random_points(rng)
    return fixed


def apply_filter(session: Session, geo: Geometry, name: str, value: object) -> Update:
    """Brush an interval view or select values of the categorical one."""
    if name == geo.points:
        return session.select(name, value)
    return session.brush(name, value)


def run_workloads(dash: Dashboard, geo: Geometry, workloads: list[str], views: list[str],
                  stride: int = 1) -> Iterator[Trace]:
    """Every (workload, view, width) trace, in a fresh session each."""
    for workload in workloads:
        for view in views:
            for width in WIDTHS:
                rng = np.random.default_rng([SEED, workloads.index(workload), views.index(view),
                                             WIDTHS.index(width)])
                session = dash.session()
                trace = Trace(workload, view, width)
                if workload != "slide":
                    trace.fixed = multi_fixed(geo, workload, view, rng)
                    for name, value in trace.fixed.items():
                        trace.setup.append(timed(f"filter {name}", lambda s=session, n=name, v=value:
                                                 apply_filter(s, geo, n, v)))
                yield slide(session, geo, trace, stride)


def details_bench(dash: Dashboard, geo: Geometry, reps: int) -> dict[str, list[Timing]]:
    """Time to first page (and next page) of details on demand, right after brushing."""
    rng = np.random.default_rng([SEED, 99])
    out: dict[str, list[Timing]] = {}
    interval_views = list(geo.extents)
    cases = {
        "one filter": lambda s: s.brush("delay", geo.random_brush("delay", rng)),
        "several filters": lambda s: [s.brush(v, geo.random_brush(v, rng)) for v in interval_views[:3]]
        + ([s.select(geo.points, geo.random_points(rng))] if geo.points else []),
    }
    for case, setup in cases.items():
        for _ in range(reps):
            s = dash.session()
            setup(s)
            out.setdefault(f"{case}: first page", []).append(_timed_table(lambda s=s: s.details()))
            out.setdefault(f"{case}: next page", []).append(_timed_table(lambda s=s: s.details(page=1)))
    view = "hour"
    nbars = dash.store.view(view).nbars
    for _ in range(reps):
        s = dash.session()
        s.brush("delay", geo.random_brush("delay", rng))
        bar = int(rng.integers(6, nbars))
        out.setdefault(f"bar of {view} + one filter: first page", []).append(
            _timed_table(lambda s=s, b=bar: s.details(view, [b])))
    return out


def _timed_table(call: Callable[[], object]) -> Timing:
    """Wall time of a call returning a table (details pages)."""
    t0 = time.perf_counter()
    table = call()
    wall = time.perf_counter() - t0
    return Timing(f"{table.num_rows} rows", wall, wall)


def highlight_bench(dash: Dashboard, geo: Geometry, reps: int) -> dict[str, list[Timing]]:
    """Linked highlighting from origin bars to its targets, with and without a brush."""
    out: dict[str, list[Timing]] = {}
    sources = [h.source for h in dash.spec.interactions.highlight]
    if not sources:
        return out
    src = sources[0]
    rng = np.random.default_rng([SEED, 98])
    nbars = dash.store.view(src).nbars
    for case in ("no filter", "one filter"):
        for _ in range(reps):
            s = dash.session()
            if case == "one filter":
                s.brush("delay", geo.random_brush("delay", rng))
            bars = sorted(rng.choice(nbars, size=2, replace=False).tolist())
            t0 = time.perf_counter()
            s.highlight(src, bars)
            wall = time.perf_counter() - t0
            out.setdefault(f"{src} -> targets, {case}", []).append(Timing("highlight", wall, wall))
    return out


# --- statistics and reporting ------------------------------------------------------------


def stats(xs: list[float]) -> dict[str, float]:
    """n and p50/p95/p99/max/mean in milliseconds."""
    a = np.asarray(xs, np.float64) * 1e3
    if not len(a):
        return {"n": 0}
    p50, p95, p99 = np.percentile(a, [50, 95, 99])
    return {"n": len(a), "p50": p50, "p95": p95, "p99": p99, "max": float(a.max()),
            "mean": float(a.mean())}


def method_share(methods: list[str]) -> dict[str, float]:
    """Share of view updates answered by each method."""
    c: Counter[str] = Counter()
    for key in methods:
        for part in filter(None, key.split(",")):
            name, n = part.split(":")
            c[name] += int(n)
    total = sum(c.values()) or 1
    return {k: c[k] / total for k in sorted(c)}


def summarize(traces: list[Trace]) -> dict:
    """Per workload / view / width and per workload: latency stats and methods."""
    out: dict[str, dict] = {}
    for workload in dict.fromkeys(t.workload for t in traces):
        ts = [t for t in traces if t.workload == workload]
        groups = {}
        for t in ts:
            groups[f"{t.view} {int(t.width * 100)}%"] = {
                "engine": stats(t.seconds), "wall": stats(t.wall),
                "methods": method_share(t.methods),
            }
        for view in dict.fromkeys(t.view for t in ts):
            vs = [t for t in ts if t.view == view]
            groups[f"{view} all"] = {
                "engine": stats([x for t in vs for x in t.seconds]),
                "wall": stats([x for t in vs for x in t.wall]),
                "methods": method_share([x for t in vs for x in t.methods]),
            }
        every = [x for t in ts for x in t.seconds]
        extra = [x.seconds for t in ts for x in [*t.setup, t.clear] if x is not None]
        slowest = sorted(((s, t, i) for t in ts for i, s in enumerate(t.seconds)),
                         key=lambda z: -z[0])[:10]
        out[workload] = {
            "groups": groups,
            "overall": {"engine": stats(every), "wall": stats([x for t in ts for x in t.wall]),
                        "methods": method_share([x for t in ts for x in t.methods])},
            "setup_and_clear": {"engine": stats(extra),
                                "methods": method_share([x.methods for t in ts for x in
                                                         [*t.setup, t.clear] if x is not None])},
            "max_any_ms": 1e3 * max(every + extra),
            "slowest": [{"ms": s * 1e3, "view": t.view, "width": t.width, "px": t.px[i],
                         "methods": t.methods[i], "fixed": _jsonable(t.fixed)}
                        for s, t, i in slowest],
        }
    return out


def targets(summary: dict, details: dict[str, dict]) -> dict[str, dict]:
    """Each target: measured value, limit, met or not."""
    out = {}
    if "slide" in summary:
        v = summary["slide"]["overall"]["engine"]["p99"]
        out["slide p99 <= 1 ms"] = {"ms": v, "met": v <= TARGETS_MS["slide_p99"]}
    for w, s in summary.items():
        if w == "slide":
            continue
        v = s["overall"]["engine"]["p99"]
        out[f"{w} p99 <= 15 ms"] = {"ms": v, "met": v <= TARGETS_MS["multi_p99"]}
    worst = max(s["max_any_ms"] for s in summary.values())
    out["no update over 150 ms (all workloads, incl. setup and clear)"] = {
        "ms": worst, "met": worst <= TARGETS_MS["max_any"]}
    for case, st in details.items():
        if "first page" in case:
            out[f"details {case} p99 <= 20 ms"] = {"ms": st["p99"],
                                                     "met": st["p99"] <= TARGETS_MS["details"]}
    return out


def memory(dash: Dashboard) -> dict:
    """Bytes of the lineage store per entry and per view, and per row; peak RSS."""
    store = dash.store
    nb = store.nbytes()
    n = store.n_rows
    per_view = {}
    for v in store.views:
        per_view[v.name] = nb.get(v.name, 0) + nb.get(f"bars:{v.name}", 0)
    for f in dash.plan.filters:
        per_view.setdefault(f.name, nb.get(f.name, 0))
    for k, b in nb.items():  # shared arrays: measures, filter keys, snapshot, ...
        if k.startswith("_"):
            per_view[k] = b
    total = sum(nb.values())
    return {
        "n_rows": n, "total_bytes": total, "bytes_per_row": total / n,
        "entries": {k: {"bytes": b, "bytes_per_row": b / n} for k, b in nb.items()},
        "per_view": {k: {"bytes": b, "bytes_per_row": b / n} for k, b in per_view.items()},
        "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def machine() -> dict[str, object]:
    """CPU model (lscpu), cores, RAM, Python and platform."""
    model = ""
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": round(mem / 2**30, 1),
            "python": platform.python_version(), "platform": platform.platform()}


def fmt(st: dict[str, float]) -> str:
    """p50 p95 p99 max columns."""
    if not st.get("n"):
        return "    -"
    return (f"{st['p50']:8.3f} {st['p95']:8.3f} {st['p99']:8.3f} {st['max']:8.2f}")


def print_report(result: dict) -> None:
    """The summary tables, memory and targets, as text."""
    meta = result["meta"]
    print(f"\n== engine benchmark: {meta['dashboard']} ({meta['n_rows']:,} rows), "
          f"{meta['machine']['cpu']}, {meta['machine']['cores']} cores ==")
    print(f"opened in {meta['open_seconds']:.1f} s ({'cache' if meta['from_cache'] else 'capture'}); "
          f"code: {meta['code']['brushfire']} {meta['code']['commit']} "
          f"{'modified: ' + ', '.join(meta['code']['modified']) if meta['code']['modified'] else ''} "
          f"{meta['code']['label']}")
    head = f"{'workload':<14} {'group':<14} {'n':>5}  {'p50':>8} {'p95':>8} {'p99':>8} {'max':>8}" \
           f"   {'wall p99':>8}  methods (share of view updates)"
    print("\nlatency per update, ms (engine = Update.seconds; wall = around the call)")
    print(head)
    print("-" * len(head))
    for w, s in result["summary"].items():
        for g, st in [*s["groups"].items(), ("OVERALL", s["overall"])]:
            meth = " ".join(f"{k} {v:.0%}" for k, v in st["methods"].items())
            print(f"{w:<14} {g:<14} {st['engine']['n']:>5}  {fmt(st['engine'])}   "
                  f"{st['wall']['p99']:8.3f}  {meth}")
        sc = s["setup_and_clear"]
        meth = " ".join(f"{k} {v:.0%}" for k, v in sc["methods"].items())
        print(f"{w:<14} {'setup+clear':<14} {sc['engine']['n']:>5}  {fmt(sc['engine'])}   "
              f"{'':>8}  {meth}")
        print()
    print("details on demand, ms")
    for case, st in result["details"].items():
        print(f"  {case:<40} n={st['n']:<3} p50 {st['p50']:7.2f}  p99 {st['p99']:7.2f}  max {st['max']:7.2f}")
    if result["highlight"]:
        print("highlight, ms")
        for case, st in result["highlight"].items():
            print(f"  {case:<40} n={st['n']:<3} p50 {st['p50']:7.2f}  p99 {st['p99']:7.2f}  max {st['max']:7.2f}")
    mem = result["memory"]
    print(f"\nindex memory: {mem['total_bytes'] / 2**20:,.0f} MiB, {mem['bytes_per_row']:.1f} bytes/row "
          f"(max RSS {mem['max_rss_bytes'] / 2**30:.2f} GiB)")
    for k, v in mem["per_view"].items():
        print(f"  {k:<16} {v['bytes'] / 2**20:9.1f} MiB  {v['bytes_per_row']:6.2f} bytes/row")
    print("\ntargets")
    for name, t in result["targets"].items():
        print(f"  {'MET   ' if t['met'] else 'MISSED'} {name}: {t['ms']:.3f} ms")


# --- main --------------------------------------------------------------------------------


def main() -> None:
    """Open (or capture) the dashboard, warm up, run every workload, report, write JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, default=ROOT / "dashboards" / "flights.yaml")
    ap.add_argument("--label", default=None, help="free text saved with the results (code version)")
    ap.add_argument("--out", type=Path, default=None,
                    help="JSON output (default perf/results/engine-<rows>.json)")
    ap.add_argument("--workloads", default="slide,multi2,multi3,multi2+origin")
    ap.add_argument("--views", default=",".join(SLIDE_VIEWS))
    ap.add_argument("--reps", type=int, default=20, help="repetitions of details / highlight")
    ap.add_argument("--stride", type=int, default=1, help="pixels per brush move (1 = benchmark)")
    ap.add_argument("--master", default="local[*]", help="Spark master, when capturing")
    ap.add_argument("--driver-memory", default=None,
                    help="Spark driver memory when capturing (default: get_spark's)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra Spark setting when capturing (repeatable)")
    args = ap.parse_args()
    workloads, views = args.workloads.split(","), args.views.split(",")

    t0 = time.perf_counter()
    spec = load_dashboard(args.spec)
    conf = parse_conf(args.conf)
    cached = entry_dir(CACHE, spec, source_fingerprint(spec.source.path)).exists()
    spark = None if cached else spark_session(args.master, args.driver_memory, conf)
    dash = Dashboard.open(spec, cache_dir=CACHE, spark=spark, progress=Progress("  capture: "))
    if spark is not None:
        spark.stop()  # free the driver JVM's memory before measuring
    open_seconds = time.perf_counter() - t0
    print(f"opened {dash.name}: {dash.store.n_rows:,} rows in {open_seconds:.1f} s "
          f"({'from cache' if dash.from_cache else 'captured'})", flush=True)
    geo = Geometry(dash)

    t0 = time.perf_counter()
    for _ in run_workloads(dash, geo, workloads, views, stride=37):  # untimed JIT warm-up
        pass
    details_bench(dash, geo, 2)
    highlight_bench(dash, geo, 2)
    print(f"warm-up pass: {time.perf_counter() - t0:.1f} s", flush=True)

    traces = []
    for trace in run_workloads(dash, geo, workloads, views, stride=args.stride):
        st = stats(trace.seconds)
        print(f"  {trace.workload:<14} {trace.view:<9} {int(trace.width * 100):>2}%  n={st['n']:<4} "
              f"p50 {st['p50']:7.3f}  p99 {st['p99']:7.3f}  max {st['max']:8.2f} ms", flush=True)
        traces.append(trace)
    details = {k: stats([t.wall for t in v]) for k, v in details_bench(dash, geo, args.reps).items()}
    highlight = {k: stats([t.wall for t in v]) for k, v in highlight_bench(dash, geo, args.reps).items()}
    summary = summarize(traces)
    result = {
        "meta": {"dashboard": dash.name, "spec": str(args.spec), "n_rows": dash.store.n_rows,
                 "date": datetime.now(UTC).isoformat(timespec="seconds"),
                 "code": code_version(args.label), "machine": machine(),
                 "from_cache": dash.from_cache, "open_seconds": open_seconds,
                 "pixels": PIXELS, "widths": WIDTHS, "seed": SEED, "stride": args.stride},
        "targets_ms": TARGETS_MS,
        "summary": summary,
        "details": details,
        "highlight": highlight,
        "memory": memory(dash),
        "traces": [{**asdict(t), "fixed": _jsonable(t.fixed)} for t in traces],
    }
    result["targets"] = targets(summary, details)
    print_report(result)
    out = args.out or ROOT / "perf" / "results" / f"engine-{_rows_label(dash.store.n_rows)}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=_jsonable))
    print(f"\nwrote {out}")


def _rows_label(n: int) -> str:
    """3000000 -> '3m'."""
    return f"{n // 1_000_000}m" if n >= 1_000_000 and n % 1_000_000 == 0 else str(n)


if __name__ == "__main__":
    main()
