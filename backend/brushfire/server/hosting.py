"""A dashboard as the server hosts it: opened (loaded from the cache or captured on Spark)
in a background thread, so the server answers at once and clients can watch the capture's
progress, then see either the dashboard or why it failed; with `watch`, captured again
when its source's data change (reading only what changed) and served anew, the open
sessions moved to the new capture with their filters."""

from __future__ import annotations

import gc
import logging
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from brushfire import versions
from brushfire.dashboard import DEFAULT_CACHE, Dashboard
from brushfire.errors import BrushfireError
from brushfire.spec import models as m
from brushfire.spec.loader import load_dashboard

Status = Literal["capturing", "ready", "failed"]
log = logging.getLogger(__name__)


class HostedDashboard:
    """One dashboard's lifecycle on the server: capturing -> ready | failed.

    `progress` (stage, fraction) and `error` are written by the opening thread and read by
    request handlers; each is a single attribute assignment, so readers see whole values.
    """

    def __init__(self, spec: m.DashboardSpec, dashboard: Dashboard | None = None) -> None:
        self.spec = spec
        self.dashboard = dashboard
        self.status: Status = "ready" if dashboard is not None else "capturing"
        self.progress: tuple[str, float | None] = ("ready", 1.0) if dashboard else ("starting", None)
        self.error: str | None = None
        self.seconds: float | None = None
        self._version: dict | None = None
        self._done = threading.Event()
        if dashboard is not None:
            self._done.set()
        self.reloads = 0  # newer captures served since it opened (watch)
        self.reload_error: str | None = None  # why the last one failed (the last good is served)
        self._listeners: set[Callable[[], None]] = set()  # told when `dashboard` changes
        self._open: Callable[[], None] | None = None  # opens it (again, after a failure: watch)
        # one reload at a time (the watch's, a caller's): two would capture the same new
        # data twice, into one cache entry, and the slower could serve the older capture
        self._reloading = threading.Lock()

    @classmethod
    def ready(cls, dashboard: Dashboard) -> HostedDashboard:
        return cls(dashboard.spec, dashboard)

    @classmethod
    def opening(cls, spec: str | Path | m.DashboardSpec, *, cache_dir: str | Path | None = DEFAULT_CACHE,
                spark_master: str | None = None, spark=None, echo=None,
                memory_budget: str | int | None = None, warm: bool = True,
                capture: bool = True) -> HostedDashboard:
        """Start opening `spec` in a daemon thread. A bad spec raises here, at once; a
        failing capture is reported through `status`/`error`. `echo(stage, fraction)`
        also receives the progress (the command line prints it). `warm=False`: only make
        sure the capture is in the cache (`serve --workers`' parent, which serves nothing
        itself): no engine warm-up, no reading of the source's column names.
        `capture=False`: from the cache only (`Dashboard.open`)."""
        model = spec if isinstance(spec, m.DashboardSpec) else load_dashboard(spec)
        host = cls(model)

        def run() -> None:
            t0 = time.perf_counter()

            def progress(stage: str, fraction: float | None) -> None:
                host.progress = (stage, fraction)
                if echo is not None:
                    echo(stage, fraction)

            try:
                dash = Dashboard.open(model, cache_dir=cache_dir, spark=spark,
                                      spark_master=spark_master, progress=progress,
                                      memory_budget=memory_budget, capture=capture)
                if warm:
                    progress("warming up the engine", None)
                    dash.warm_up()
                    from brushfire.spark_source import source_for

                    # lazy answers run on the same master; the source's column names are
                    # read now (footers), so that no message naming a column that is not
                    # there starts Spark
                    source_for(dash, master=spark_master).known_columns()
                host.dashboard = dash
                how = "from the lineage cache" if dash.from_cache else "captured on Spark"
                progress(f"{model.name} ready: {dash.store.n_rows:,} rows {how}", 1.0)
                host.status = "ready"
            except BrushfireError as e:
                host._fail(str(e), echo)
            except Exception as e:  # noqa: BLE001 - any failure must reach the clients, not hang them
                host._fail(f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}", echo)
            finally:
                host.seconds = time.perf_counter() - t0
                host._done.set()

        host._open = run
        threading.Thread(target=run, name=f"open-{model.name}", daemon=True).start()
        return host

    @property
    def name(self) -> str:
        return self.spec.name

    def listen(self, notify: Callable[[], None]) -> Callable[[], None]:
        """Call `notify()` (from the watching thread) whenever a newer capture is served;
        returns the function that stops it."""
        self._listeners.add(notify)
        return lambda: self._listeners.discard(notify)

    def watch(self, every: float = 5.0, *, spark=None, echo=None) -> threading.Event:
        """Every `every` seconds, once the dashboard is ready: has its source's data changed
        (`Dashboard.stale`: file listings and the cache's manifest, no Spark)? Then capture
        it again, reading only what changed (`Dashboard.refresh`), warm it up and serve it:
        each open session moves to it with its filters (server/app.py). While that runs
        the last capture is served; a failing one is reported (`reload_error`, `echo`) and
        the last good capture stays. A dashboard whose opening failed (no capture to serve:
        a bad file, at the start) is opened again once its source's files change. Returns
        an Event: set it to stop watching."""
        stop = threading.Event()

        def run() -> None:
            self._done.wait()
            failed_over = self._listing()
            while not stop.wait(every):
                if self.dashboard is not None:
                    self.reload(spark=spark, echo=echo)
                elif self._open is not None and (now := self._listing()) != failed_over:
                    failed_over = now
                    if echo is not None:
                        echo(f"{self.name}: the source's data changed: opening it again", None)
                    self.error, self.progress, self.status = None, ("starting", None), "capturing"
                    self._done.clear()
                    self._open()  # (here, in the watching thread: one opening at a time)

        threading.Thread(target=run, name=f"watch-{self.name}", daemon=True).start()
        return stop

    def reload(self, *, spark=None, echo=None) -> bool:
        """One check of `watch`: serve a newer capture when the data changed. Asked for
        while another reload runs (the watch's), it waits for that one, then checks again
        (new data that came meanwhile are captured then, nothing twice). Returns whether
        a newer capture is served than when it was asked for."""
        asked = self.dashboard
        with self._reloading:
            return self._reload(spark, echo) or self.dashboard is not asked

    def _reload(self, spark, echo) -> bool:
        """`reload` itself, under `_reloading`: whether it served a newer capture."""
        old = self.dashboard
        if old is None:  # (not opened yet, or its opening failed: nothing to refresh)
            return False
        try:
            if not old.stale():  # (what failed before went away: the capture served is current)
                self.reload_error = None
                return False
            if echo is not None:
                echo(f"{self.name}: the source's data changed: capturing what is new", None)
            new = old.refresh(spark=spark, progress=echo)
            if new is None:
                return False
            new.warm_up()
            from brushfire.spark_source import source_for

            source_for(new, master=new.opened_with.get("spark_master")).known_columns()
        except Exception as e:  # noqa: BLE001 - a failed reload must not stop the serving
            error = str(e) if isinstance(e, BrushfireError) else f"{type(e).__name__}: {e}"
            if error == self.reload_error:  # (the same failure at each check: said once)
                return False
            self.reload_error = error
            log.warning("brushfire: %s: new data not picked up (the last capture is served): %s",
                        self.name, self.reload_error)
            if echo is not None:
                echo(f"{self.name}: new data not picked up: {self.reload_error}", None)
            return False
        self.dashboard, self._version, self.reload_error = new, None, None
        self.reloads += 1
        if echo is not None:
            echo(f"{self.name}: now serving {new.store.n_rows:,} rows", 1.0)
        for notify in list(self._listeners):
            notify()
        _free_when_left(weakref.ref(old.store))
        del old
        return True

    def _listing(self) -> str | None:
        """The fingerprint of the source's files as they are now (None: not listed
        without Spark, or not listable now)."""
        from brushfire.lineage.store import files_fingerprint
        from brushfire.source import local_files

        try:
            files = local_files(self.spec.source)
        except (BrushfireError, OSError):  # (a Delta log naming a file that is gone; no access)
            return None
        return None if files is None else files_fingerprint(files)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until ready or failed; False on timeout."""
        return self._done.wait(timeout)

    def status_json(self) -> dict:
        stage, fraction = self.progress
        out = {"name": self.name, "title": self.spec.title or self.name, "status": self.status,
               "stage": stage, "fraction": fraction}
        if self.error:
            out["error"] = self.error
        if self.reloads or self.reload_error:
            out["reloads"] = self.reloads
        if self.reload_error:
            out["reload_error"] = self.reload_error
        if self.dashboard is not None:
            out["rows"] = self.dashboard.store.n_rows
            if self._version is None:  # read once per capture served
                self._version = versions.public(versions.served(self.dashboard))
            out["version"] = self._version
        return out

    def _fail(self, message: str, echo) -> None:
        self.error = message
        self.progress = ("failed", None)
        self.status = "failed"
        if echo is not None:
            echo(f"{self.name} failed: {message}", None)


def _free_when_left(store: weakref.ref, waits: tuple[float, ...] = (1.0, 5.0, 30.0)) -> None:
    """Give a replaced capture's memory back once its sessions have moved on: warm_up froze
    the objects alive when it was served (gc.freeze), out of the collector's sight, so
    whatever of it sits in reference cycles is collected here, once the sessions left it
    (after 1 s, else 5 s, else 30 s: a lazy answer on Spark may still hold it), then
    the survivors are frozen again."""

    def run() -> None:
        for wait in waits:
            time.sleep(wait)
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            if store() is None:
                return

    threading.Thread(target=run, name="free-replaced-capture", daemon=True).start()
