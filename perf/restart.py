"""A server's restart from the lineage cache, with the clustered key copies the capture
stored (mapped) and, for comparison, without them (built in memory at start, as before
issue 37), and what the copies cost per row.

    python perf/restart.py --spec dashboards/flights.yaml --cache-dir /tmp/cache [--runs 3]

The cache must hold a current capture of SPEC with copies (`brushfire capture SPEC
--cache-dir DIR` makes one; this script never captures). Each run starts `brushfire serve
SPEC --cache-dir DIR` (perf/first_run.py's `serve_until_ready`: from the process's start
to the dashboard's status "ready" on /health, which includes `Dashboard.warm_up`) twice:
- "stored": the entry as captured: its copies mapped;
- "built": a second entry beside it whose files are hard links to the first's and whose
  manifest records no copies (a capture from before they were stored): the server builds
  them in memory under the cap, and warm_up waits for them.
Prints the seconds, the 1-minute load average before and after each, and the copies'
bytes per row (per dim and in all, from the manifest's file sizes); writes JSON (--out).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from first_run import ROOT, load, serve_until_ready

from brushfire.lineage import store as st
from brushfire.spec import load_dashboard


def copy_bytes(entry: Path) -> dict:
    """The stored copies' bytes per row: per dim and part, and in all (the manifest's sizes)."""
    meta = st.read_manifest(entry)
    if meta is None or "copies" not in meta:
        msg = f"{entry} holds no capture with stored copies: run brushfire capture first"
        raise SystemExit(msg)
    layout = st.read_layout(entry, meta)
    n = max(1, meta["n_rows"])
    per: dict[str, dict[str, float]] = {}
    for s in meta["shards"]:
        for d, names in st.copy_files(s).items():
            dim = per.setdefault(layout.dims[d].name, {})
            for part, name in zip(st.COPY_PARTS, names, strict=True):
                dim[part] = dim.get(part, 0.0) + s["files"][name]["size"] / n
    total = sum(sum(p.values()) for p in per.values())
    return {"rows": meta["n_rows"], "dims": per, "per_row": total,
            "per_row_per_dim": total / max(1, len(per))}


def without_copies(entry: Path, work: Path) -> Path:
    """A cache directory whose entry is `entry` hard-linked, its manifest without copies."""
    cache = work / "cache"
    cache.mkdir()
    twin = cache / entry.name
    shutil.copytree(entry, twin, copy_function=os.link)
    meta = st.read_manifest(twin)
    meta.pop("copies")
    (twin / st.MANIFEST).unlink()  # (a hard link: the original's stays as it is)
    st.write_manifest(twin, meta)
    return cache


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, default=ROOT / "dashboards" / "flights.yaml")
    ap.add_argument("--cache-dir", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--skip-built", action="store_true", help="only the restart with stored copies")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--out", type=Path, default=ROOT / "perf" / "results" / "restart.json")
    args = ap.parse_args()
    dash = load_dashboard(args.spec)
    entry = st.entry_dir(args.cache_dir, dash)
    sizes = copy_bytes(entry)
    print(f"{sizes['rows']:,} rows: copies {sizes['per_row']:.1f} bytes per row "
          f"({sizes['per_row_per_dim']:.1f} per dim)")
    for name, parts in sizes["dims"].items():
        print(f"  {name:<24} " + ", ".join(f"{p} {b:.2f}" for p, b in parts.items()))
    numba = Path(os.environ.get("NUMBA_CACHE_DIR", tempfile.mkdtemp(prefix="brushfire-numba-")))
    runs = []
    work = Path(tempfile.mkdtemp(prefix="brushfire-restart-"))
    try:
        built_cache = None if args.skip_built else without_copies(entry, work)
        serve_until_ready([args.spec], args.cache_dir, numba, args.timeout)  # numba's cache filled
        for i in range(args.runs):
            for kind, cache in (("stored", args.cache_dir), ("built", built_cache)):
                if cache is None:
                    continue
                before = load()
                r = serve_until_ready([args.spec], cache, numba, args.timeout)
                run = {"kind": kind, "seconds": r["seconds"], "status": r["status"],
                       "load_before": before, "load_after": load(), "output": r["output"]}
                runs.append(run)
                print(f"run {i + 1} {kind}: ready in {r['seconds']:.1f} s ({r['status']}); load "
                      f"{before:.2f} before, {run['load_after']:.2f} after", flush=True)
                if any("capturing" in line.lower() or "spark" in line.lower() for line in r["output"]):
                    print("    (the server captured: the cache was not current)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "spec": str(args.spec), "cores": os.cpu_count(), "when": datetime.now(UTC).isoformat(),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                                 capture_output=True).stdout.strip(),
        "copies": sizes, "runs": runs}, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
