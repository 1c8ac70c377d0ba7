"""`Dashboard`: a spec, its capture plan and its lineage store, ready to open sessions.

    dash = Dashboard.open("dashboards/flights.yaml")   # loads the cache or captures
    s = dash.session()
    s.brush("delay", (-20, 40)); s.select("origin", ["ORD"]); s.details()
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from brushfire.capture.budget import decide, parse_size
from brushfire.engine.cube_session import CubeSession
from brushfire.engine.session import Session
from brushfire.errors import CacheError
from brushfire.lineage.cube_store import CubeStore
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
DEFAULT_BUDGET = os.environ.get("BRUSHFIRE_MEMORY_BUDGET")  # e.g. "16GB"; unset: no limit


class Dashboard:
    """One captured dashboard. The store is read-only and shared by all its sessions."""

    def __init__(self, spec: m.Dashboard, plan: CapturePlan, store: LineageStore | CubeStore,
                 from_cache: bool = False) -> None:
        self.spec, self.plan, self.store, self.from_cache = spec, plan, store, from_cache

    @classmethod
    def open(cls, spec: str | Path | dict | m.Dashboard, *, cache_dir: str | Path | None = DEFAULT_CACHE,
             spark=None, spark_master: str | None = None, progress=None,
             recapture: bool = False, memory_budget: str | int | None = DEFAULT_BUDGET) -> Dashboard:
        """Load `spec` (a YAML path, a dict or a model) and its lineage: from the cache when
        an entry for this spec and source exists and is sound, else by capturing on Spark
        (`spark_master`, default $BRUSHFIRE_SPARK_MASTER or local[*]). When the per-row
        lineage would exceed `memory_budget` (bytes or "16GB"), only cubes computed on
        Spark are kept, which answer single-filter interactions (not cached yet)."""
        dash = _as_model(spec)
        plan = plan_capture(dash)
        budget = None if memory_budget is None else parse_size(memory_budget)
        if budget is not None and decide(plan, budget).mode == "cubes":
            from brushfire.capture import capture_dashboard

            return cls(dash, plan, capture_dashboard(plan, spark=spark, master=spark_master,
                                                     progress=progress, memory_budget=budget))
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

    def session(self) -> Session | CubeSession:
        if isinstance(self.store, CubeStore):
            return CubeSession(self.store, self.plan)
        return Session(self.store, self.plan)

    @property
    def mode(self) -> str:
        """'rows' (per-row lineage) or 'cubes' (memory-budget mode: cubes only)."""
        return "cubes" if isinstance(self.store, CubeStore) else "rows"

    def warm_up(self) -> float:
        """Run each kind of interaction once on tiny selections, so numba's compiled
        kernels are loaded before the first user interaction. Returns the seconds taken."""
        t0 = time.perf_counter()
        if self.mode == "cubes":  # numpy only: nothing to compile
            return 0.0
        s = self.session()
        for f in self.plan.filters:  # rare values: every method runs on a handful of rows
            ix = self.store.indexes[f.name]
            if f.kind in ("interval", "param_range", "rect") and len(ix.values):
                v = ix.values[0].item()
                bound = _iso(v) if ix.value_type == "temporal" else v
                if f.kind == "param_range":
                    s.set_parameter(f.name, bound)
                else:
                    s.brush(f.name, (bound, bound), y=(None, None) if f.kind == "rect" else None)
            elif f.kind == "points" and ix.keys:
                s.select(f.name, [ix.keys[-1]])
            elif f.kind == "param_eq" and ix.keys:
                s.set_parameter(f.name, ix.keys[-1])
        if self.spec.interactions.details:
            s.details()
        for h in self.spec.interactions.highlight:
            s.highlight(h.source, [0])
        s.clear()
        return time.perf_counter() - t0

    @property
    def name(self) -> str:
        return self.spec.name


def _iso(micros: int) -> str:
    return datetime.fromtimestamp(micros / 1e6, UTC).isoformat()


def _as_model(spec) -> m.Dashboard:
    if isinstance(spec, m.Dashboard):
        return spec
    if isinstance(spec, dict):
        return parse_dashboard(spec)
    return load_dashboard(spec)
