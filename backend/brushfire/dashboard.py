"""`Dashboard`: a spec, its capture plan and its lineage store, ready to open sessions.

    dash = Dashboard.open("dashboards/flights.yaml")   # loads the cache or captures
    s = dash.session()
    s.brush("delay", (-20, 40)); s.select("origin", ["ORD"]); s.details()
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from brushfire.engine.session import Session
from brushfire.errors import CacheError
from brushfire.lineage.store import (
    LineageStore,
    entry_dir,
    load_store,
    save_store,
    source_fingerprint,
)
from brushfire.plan import CapturePlan, plan_capture
from brushfire.spec import models as m
from brushfire.spec.loader import load_dashboard, parse_dashboard

DEFAULT_CACHE = os.environ.get("BRUSHFIRE_CACHE", ".cache/brushfire")


class Dashboard:
    """One captured dashboard. The store is read-only and shared by all its sessions."""

    def __init__(self, spec: m.Dashboard, plan: CapturePlan, store: LineageStore,
                 from_cache: bool = False) -> None:
        self.spec, self.plan, self.store, self.from_cache = spec, plan, store, from_cache

    @classmethod
    def open(cls, spec: str | Path | dict | m.Dashboard, *, cache_dir: str | Path | None = DEFAULT_CACHE,
             spark=None, spark_master: str | None = None, progress=None,
             recapture: bool = False) -> Dashboard:
        """Load `spec` (a YAML path, a dict or a model) and its lineage: from the cache when
        an entry for this spec and source exists and is sound, else by capturing on Spark
        (`spark_master`, default $BRUSHFIRE_SPARK_MASTER or local[*])."""
        dash = _as_model(spec)
        plan = plan_capture(dash)
        if cache_dir is not None:
            directory = entry_dir(cache_dir, dash, source_fingerprint(dash.source.path))
            if not recapture and directory.exists():
                try:
                    return cls(dash, plan, load_store(directory, dash), from_cache=True)
                except CacheError as e:
                    print(f"brushfire: {e}; recapturing", file=sys.stderr)
                    shutil.rmtree(directory, ignore_errors=True)
        from brushfire.capture import capture_dashboard

        store = capture_dashboard(plan, spark=spark, master=spark_master, progress=progress)
        if cache_dir is not None:
            save_store(store, directory)
        return cls(dash, plan, store)

    def session(self) -> Session:
        return Session(self.store, self.plan)

    @property
    def name(self) -> str:
        return self.spec.name


def _as_model(spec) -> m.Dashboard:
    if isinstance(spec, m.Dashboard):
        return spec
    if isinstance(spec, dict):
        return parse_dashboard(spec)
    return load_dashboard(spec)
