"""`Dashboard`: a spec, its capture plan and its lineage store, ready to open sessions.

    dash = Dashboard.open("dashboards/flights.yaml")   # loads the cache or captures
    s = dash.session()
    s.brush("delay", (-20, 40)); s.select("origin", ["ORD"]); s.details()

`session()` is the one session stack every front uses (the Python API, the server, the
widget, the bench): the engine's session (engine/session.py) under the lazy answers on
Spark (brushfire/lazy.py) of what the capture did not prepare.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from brushfire.cachedir import default_cache_dir
from brushfire.engine import kernels as K
from brushfire.engine.copies import key_dtype, typed_list
from brushfire.engine.session import Session
from brushfire.engine.state import FilterState, layout_arrays
from brushfire.errors import (
    BrushfireError,
    CacheError,
    InteractionError,
    NotCapturedError,
    SpecError,
    SpecProblem,
)
from brushfire.lazy import LazySession
from brushfire.lineage.layout import CaptureConfig
from brushfire.lineage.store import (
    LineageStore,
    entry_dir,
    files_fingerprint,
    load_store,
    read_manifest,
    spec_hash,
)
from brushfire.plan import CapturePlan, plan_capture
from brushfire.sizes import parse_size
from brushfire.source import join_files, local_files, same_files
from brushfire.spark_source import source_for
from brushfire.spec import models as m
from brushfire.spec.checks import spec_error
from brushfire.spec.loader import load_dashboard, parse_dashboard, with_data_options
from brushfire.views import with_recorded_bins

DEFAULT_CACHE = default_cache_dir()  # $BRUSHFIRE_CACHE, else the user's cache directory
DEFAULT_BUDGET = os.environ.get("BRUSHFIRE_MEMORY_BUDGET")  # e.g. "16GB"; unset: no limit


class Dashboard:
    """One captured dashboard. The store is read-only and shared by all its sessions."""

    def __init__(self, spec: m.DashboardSpec, plan: CapturePlan, store: LineageStore,
                 from_cache: bool = False) -> None:
        self.user_spec = spec  # as written (`refresh` captures it again)
        # `maxbins` bins as capture chose them (the layout records them): everything after
        # (charts, SQL, the lazy answers, baselines) sees a plain step and extent
        binned = with_recorded_bins(spec, {v.name: v.bins for v in store.layout.views})
        if binned is not spec:
            spec, plan = binned, replace(plan, dashboard=binned)
        self.spec, self.plan, self.store, self.from_cache = spec, plan, store, from_cache
        self.opened_with: dict = {}  # Dashboard.open's arguments, for `refresh`
        # (the source's and joins' files a `refresh` failed over, and why): not again over them
        self._failed: tuple[str, BrushfireError] | None = None

    @classmethod
    def open(cls, spec: str | Path | dict | m.DashboardSpec, *, cache_dir: str | Path | None = DEFAULT_CACHE,
             spark=None, spark_master: str | None = None, progress=None,
             recapture: bool = False, memory_budget: str | int | None = DEFAULT_BUDGET,
             config: CaptureConfig | None = None, capture: bool = True) -> Dashboard:
        """Load `spec` (a YAML path, a dict or a model) and its lineage: from the cache when
        an entry for this spec and source exists and is sound, else by capturing on Spark
        (`spark_master`, default $BRUSHFIRE_SPARK_MASTER or local[*]) into the cache (a
        temporary directory when `cache_dir` is None or cannot be written). When the
        per-row lineage would exceed `memory_budget` (bytes or "16GB"), the most expensive
        dims keep cubes only (capture/budget.py; `brushfire capture` says which).
        `capture=False`: from the cache only; no current entry raises CacheError (the
        workers of `serve --workers`, whose parent captured: N captures at once, never)."""
        dash = _as_model(spec)
        plan = plan_capture(dash)
        config = config or CaptureConfig()
        if memory_budget is not None:
            config = replace(config, memory_budget=parse_size(memory_budget))
        out = cls._open(dash, plan, cache_dir, config, spark, spark_master, progress, recapture,
                        capture)
        out.user_spec = dash
        out.opened_with = {"cache_dir": cache_dir, "config": config, "spark_master": spark_master}
        return out

    @classmethod
    def _open(cls, dash: m.DashboardSpec, plan: CapturePlan, cache_dir, config: CaptureConfig,
              spark, spark_master, progress, recapture: bool, capture: bool = True) -> Dashboard:
        fresh = recapture
        if cache_dir is not None and not recapture:
            directory = entry_dir(cache_dir, dash)
            meta = read_manifest(directory)
            if meta is not None and is_current(meta, dash, config):
                try:
                    return cls(dash, plan, load_store(directory, dash, meta["cache_key"]),
                               from_cache=True)
                except CacheError as e:
                    print(f"brushfire: {e}; capturing again", file=sys.stderr)
                    fresh = True  # nothing of an entry that failed its checks is reused
        if not capture:
            msg = (f"no current capture of {dash.name} in the lineage cache {cache_dir} (the source "
                   "changed or the entry was removed since it was captured): capture it again")
            raise CacheError(msg)
        from brushfire.capture import capture_dashboard

        store = capture_dashboard(plan, spark=spark, master=spark_master, progress=progress,
                                  cache_dir=cache_dir, config=config, fresh=fresh)
        return cls(dash, plan, store)

    def stale(self) -> bool:
        """Has the source's data changed since this capture (its files' names, sizes or
        modification times; a Delta table's version), or the cache got a newer capture of
        this spec over the data as they are? Checked without Spark, in milliseconds; False
        for a source it cannot list without Spark (a remote one). The entry's newer capture
        of another spec (the spec edited and captured, the same name and source) is no new
        data: the files are compared with this capture's own."""
        if self.store.manifest is None:
            return False
        files = local_files(self.user_spec.source)
        if files is None:
            return False
        if files_fingerprint(files) != self.store.info.source_fingerprint:
            return True
        if self.user_spec.source.joins:  # a dimension table's files changed (cache or none)
            joined = join_files(self.user_spec.source)
            if joined is not None and not same_files(joined, self.store.manifest.get("source", {}).get("join_files", [])):
                return True
        cache = self.opened_with.get("cache_dir")
        if cache is None:  # (opened without a cache: no other process captures into its own)
            return False
        current = read_manifest(entry_dir(cache, self.user_spec))
        if current is None:  # (the entry removed: the data are still this capture's)
            return False
        return current.get("created") != self.store.manifest.get("created") and \
            is_current(current, self.user_spec, self.opened_with["config"])

    def refresh(self, spark=None, progress=None) -> Dashboard | None:
        """This dashboard over its source as it is now: a new Dashboard (loaded from the
        cache when another process captured it, else captured again, reading only what
        changed), or None when nothing changed (`stale`). Raises what capture raises (a
        file that vanished, a changed schema): the caller keeps serving this one. A refresh
        that failed raises the same again, capturing nothing, until the source's files (or
        its joins' tables') change: the watch's checks every few seconds do not capture
        the same failing data again and again (as a dashboard that failed to open waits for
        its files to change, server/hosting.py)."""
        if not self.stale():
            self._failed = None
            return None
        listing = self._listing()
        if self._failed is not None and self._failed[0] == listing:
            raise self._failed[1].with_traceback(None)
        w = self.opened_with
        # without a cache, the temporary one this capture went to: only what changed is read
        cache = w["cache_dir"] if w["cache_dir"] is not None or self.store.directory is None \
            else self.store.directory.parent
        try:
            # (read as the files now say: a CSV file appended with a quoted line break
            # needs multiLine, which the spec loaded before it came did not take)
            spec = with_data_options(self.user_spec)
            out = Dashboard._open(spec, plan_capture(spec), cache,
                                  w["config"], spark, w.get("spark_master"), progress, False)
        except BrushfireError as e:
            self._failed = (listing, e)
            raise
        out.user_spec, out.opened_with = spec, dict(w)
        return out

    def _listing(self) -> str:
        """The source's files and its joins' tables' as they are now (names, sizes, times)."""
        source = self.user_spec.source
        return files_fingerprint((local_files(source) or []) + ((join_files(source) or []) if source.joins else []))

    def session(self) -> LazySession:
        """A new session, with the parameters that have a `default` active: the engine's,
        answering what the capture did not prepare lazily on Spark (brushfire/lazy.py;
        Spark starts on the first such answer). The server, the widget and the bench
        serve this one too."""
        return LazySession(self.engine_session(), source_for(self))

    def engine_session(self) -> Session:
        """A new session of the engine alone (what `session` wraps): an interaction the
        capture did not prepare is refused (NotCapturedError). For warm-up, the engine's
        tests and tools that must not start Spark."""
        return apply_parameter_defaults(Session(self.store, self.plan), self.spec)

    @property
    def mode(self) -> str:
        """'rows' (every dim's per-row lineage kept), 'partial' (some dims keep cubes only,
        over the memory budget) or 'cubes' (no per-row lineage at all)."""
        kept = self.store.layout.row_dims
        return "rows" if kept == len(self.store.layout.dims) else "cubes" if kept == 0 else "partial"

    def warm_up(self, freeze: bool = True) -> float:
        """Load every kernel numba compiled (from its on-disk cache), touch the store and
        wait for its clustered key copies (engine/copies.py), so the first user
        interaction pays for none of them. `freeze` (a server's process, not a notebook's):
        keep the objects alive now out of the garbage collector's sight. Returns the
        seconds taken."""
        t0 = time.perf_counter()
        warm_kernels(self.store)
        s = self.engine_session()
        s.wait_for_copies()
        try:
            if self.spec.interactions.details:
                s.details()
            for h in self.spec.interactions.highlight:
                s.highlight(h.source, [0])
        except NotCapturedError:  # over the memory budget: answered lazily, if at all
            pass
        s.clear()
        s.close()
        # what is alive now lives as long as the server: out of the collector's sight, so a
        # full collection during a reply scans what replies allocate, not every object
        # loaded (tens of milliseconds at 30M rows, measured on the human workload)
        if freeze:
            gc.collect()
            gc.freeze()
        return time.perf_counter() - t0

    @property
    def name(self) -> str:
        return self.spec.name


def is_current(meta: dict, dash: m.DashboardSpec, config: CaptureConfig) -> bool:
    """Is an entry's capture (its manifest) one of `dash`'s spec with `config`, over the
    source's files as they are now? (No Spark: a remote source is checked by capture.)"""
    if meta.get("spec_sha256") != spec_hash(dash) or meta.get("config") != asdict(config):
        return False
    files = local_files(dash.source)
    if files is None or not same_files(files, meta["source"]["files"]):
        return False
    if not dash.source.joins:
        return True
    joined = join_files(dash.source)  # the dimension tables' files, unchanged too
    return joined is not None and same_files(joined, meta["source"].get("join_files", []))


def apply_parameter_defaults(session, spec: m.DashboardSpec):
    """`session` with each parameter that has a `default` set to it (a session starts as
    the spec says); a default the data does not take is a SpecError at its key."""
    for i, p in enumerate(spec.interactions.parameters):
        if p.default is not None:
            try:
                session.set_parameter(p.name, p.default)
            except InteractionError as e:
                msg = f"the default {p.default!r} cannot be applied: {e}"
                raise spec_error(spec, ("interactions", "parameters", i, "default"), msg,
                                 "give a value of the field, or leave default out") from None
    return session


def warm_kernels(store: LineageStore) -> None:
    """Call each kernel once on no rows (numba loads or compiles it on first call)."""
    shard = next((s for s in store.shards if s.nblocks), None)
    if shard is None:
        return
    if not store.layout.row_dims:
        return
    L = layout_arrays(store.layout)
    q = FilterState(store.layout).q
    nv = len(store.layout.views)
    views = np.zeros(0, np.int64)
    need = np.zeros(nv, np.uint64)
    kr = np.zeros((0, 2), np.int64)
    c, s, o = np.zeros(store.nslots, np.int64), np.zeros(store.nslots), np.zeros(store.nslots, np.int64)
    S = shard.arrays
    K.scan_units(typed_list([S]), np.zeros((0, 3), np.int64), L, q, views, need, np.uint64(0), c, s, o)
    d = next((i for i, dim in enumerate(store.layout.dims) if dim.indexed), -1)
    if d >= 0:
        K.by_keys(S, L, q, q, d, kr, np.zeros(0, np.int64), -1, views, need, 0, 0, c, s, o)
        starts = np.zeros(store.layout.dims[d].nkeys + 2, np.int64)  # clustered copies, of no rows
        ckeys = np.zeros((S[0].shape[0], 0), key_dtype(store.layout))  # their keys' dtype
        K.cluster(S[0][:, :0], d, store.layout.dims[d].nkeys, ckeys.copy(),
                  np.zeros(0, np.uint32), starts, np.zeros(0), -1)
        none = np.zeros((0, 0), np.uint16)
        K.chunk_hist(ckeys.copy(), L, K.CHUNK, none)
        K.chunk_zones(ckeys.copy(), K.CHUNK, none)
        copy = (ckeys.copy(), np.zeros(0, np.uint32), starts.copy(), none.copy(), none.copy())
        for a in copy:
            a.setflags(write=False)  # as copies are (engine/copies.py): the kernels' types
        copies = typed_list([copy])
        K.clustered_units(typed_list([S]), copies, np.zeros((0, 3), np.int64), d, d, -1, L, q, q, kr,
                          np.zeros(0, np.int64), -1, views, need, c, s, o)
        K.key_value_range(typed_list([S]), copies, 0, 0)  # (a copy of no rows: nothing read)
        none = np.zeros(0, np.int64)
        K.split_runs(np.zeros((1, 2), np.int64), none, none, none, none, none, kr, 2,
                     np.zeros((0, 4), np.int64))
        K.rows_passing(S, L, q, np.uint64(0), d, kr, 0, 0, 0, 0, np.zeros(0, np.int64), 0)
        K.count_passing(S, L, q, np.uint64(0), d, kr, 0, 0, np.uint64(0))
        K.tile(S, L, q, views, need, np.zeros(0, np.int64), d,
               np.zeros(store.layout.dims[d].nkeys + 1, np.int64), 1, 0, 0,
               np.zeros(1, np.int32), s, o)  # a tile's builders count in int32
    K.count_passing(S, L, q, np.uint64(0), -1, kr, 0, 0, np.uint64(0))
    K.rows_passing(S, L, q, np.uint64(0), -1, kr, 0, 0, 0, 0, np.zeros(0, np.int64), 0)
    K.bars_of(S, L, np.zeros(0, np.int64), 0, np.zeros(0, np.int64))
    if any(v.cells for v in store.layout.views):  # order statistics gather values of blocks
        K.gather(S, L, q, 0, np.uint64(0), -1, kr, 0, np.full(1, -1, np.int64),
                 np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), 0, 0)


def _as_model(spec) -> m.DashboardSpec:
    if isinstance(spec, m.DashboardSpec):
        return spec
    if isinstance(spec, dict):
        return parse_dashboard(spec)
    if not isinstance(spec, str | os.PathLike):  # (Path(3) said "expected str, bytes or os.PathLike")
        msg = f"{type(spec).__name__} {spec!r:.80} is not a spec: give a YAML file's path, a dict or a DashboardSpec"
        raise SpecError([SpecProblem("<spec>", None, "", msg)])
    return load_dashboard(spec)
