"""Versioned dashboards (Vizier's reproducible specs): which capture of a dashboard is
served, and the captures made before it.

A capture is identified by what it was made from: the spec's content hash (what it asks
to capture; titles and display options left out, `lineage.store.spec_hash`), the source
fingerprint (names, sizes and modification times of its files) and the Brushfire
version, with the time it was made and its cache key. The lineage cache keeps the newest
entry of a dashboard only (older ones are pruned when a newer capture completes), so each
capture also appends these few fields to a small history file per dashboard,
`<cache>/history/<dashboard>.json`, which keeps the last HISTORY_KEEP captures.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

HISTORY_KEEP = 50  # captures remembered per dashboard (their manifests' summaries)
HISTORY_DIR = "history"
MANIFEST = "manifest.json"  # lineage/store.py's


def summary(meta: dict, directory: str | Path | None = None) -> dict:
    """What identifies a capture, from its manifest (`lineage.store.assemble`)."""
    info = meta.get("info") or {}
    return {"dashboard": meta.get("dashboard"), "created": meta.get("created"),
            "cache_key": meta.get("cache_key"), "spec_sha256": meta.get("spec_sha256"),
            "source_fingerprint": info.get("source_fingerprint"),
            "brushfire_version": meta.get("brushfire_version"), "rows": meta.get("n_rows"),
            "mode": info.get("mode", "rows"), "spark_master": info.get("spark_master"),
            "seconds": (info.get("seconds") or {}).get("capture"),
            "entry": str(directory) if directory is not None else None}


def record(cache_dir: str | Path, meta: dict, directory: str | Path | None = None) -> None:
    """Remember a capture in its dashboard's history file (the last HISTORY_KEEP). Never
    fails a capture: a history that cannot be written is reported and skipped."""
    entry = summary(meta, directory)
    path = history_file(cache_dir, str(entry["dashboard"]))
    try:
        kept = [e for e in _read(path) if (e.get("cache_key"), e.get("created"))
                != (entry["cache_key"], entry["created"])]
        kept = (kept + [entry])[-HISTORY_KEEP:]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
        tmp.write_text(json.dumps(kept, indent=1))
        os.replace(tmp, path)
    except OSError as e:
        print(f"brushfire: cannot record the capture in {path} ({e.strerror}); history skipped",
              file=sys.stderr)


def history_file(cache_dir: str | Path, dashboard: str) -> Path:
    return Path(cache_dir) / HISTORY_DIR / f"{dashboard}.json"


def history(cache_dir: str | Path, dashboard: str) -> list[dict]:
    """The captures of `dashboard` known to the cache, newest first: those of the history
    file and the entries still in the cache (`cached`: its lineage can still be loaded)."""
    out: dict[tuple, dict] = {}
    for e in _read(history_file(cache_dir, dashboard)):
        out[(e.get("cache_key"), e.get("created"))] = {**e, "cached": False}
    for p in Path(cache_dir).glob(f"{dashboard}-*"):
        try:
            meta = json.loads((p / MANIFEST).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict) and meta.get("dashboard") == dashboard:
            e = summary(meta, p)
            out[(e["cache_key"], e["created"])] = {**e, "cached": True}
    return sorted(out.values(), key=lambda e: e.get("created") or "", reverse=True)


def served(dash) -> dict:
    """The version a dashboard (`brushfire.dashboard.Dashboard`) serves: its capture's
    summary, from the manifest its store was loaded from (the entry may hold a newer
    capture since); for a store without an entry, what identifies it without a manifest."""
    from brushfire import __version__
    from brushfire.lineage.store import spec_hash

    meta = getattr(dash.store, "manifest", None)
    if meta:
        return summary(meta, dash.store.directory)
    info = getattr(dash.store, "info", None)
    return {"dashboard": dash.name, "created": None, "cache_key": None,
            "spec_sha256": spec_hash(dash.spec),
            "source_fingerprint": getattr(info, "source_fingerprint", None),
            "brushfire_version": __version__, "rows": dash.store.n_rows,
            "mode": getattr(dash, "mode", "rows"), "spark_master": getattr(info, "spark_master", None),
            "seconds": (getattr(info, "seconds", None) or {}).get("capture"), "entry": None}


PUBLIC = ("created", "cache_key", "spec_sha256", "source_fingerprint", "brushfire_version", "rows",
          "mode")


def public(version: dict) -> dict:
    """What clients are told (`/api/dashboards`, the page, the widget): no paths or hosts."""
    return {k: version.get(k) for k in PUBLIC}


def _read(path: Path) -> list[dict]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
