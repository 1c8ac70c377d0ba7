"""A dashboard as the server hosts it: opened (loaded from the cache or captured on Spark)
in a background thread, so the server answers at once and clients can watch the capture's
progress, then see either the dashboard or why it failed."""

from __future__ import annotations

import threading
import time
import traceback
from pathlib import Path
from typing import Literal

from brushfire import versions
from brushfire.dashboard import DEFAULT_CACHE, Dashboard
from brushfire.errors import BrushfireError
from brushfire.spec import models as m
from brushfire.spec.loader import load_dashboard

Status = Literal["capturing", "ready", "failed"]


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

    @classmethod
    def ready(cls, dashboard: Dashboard) -> HostedDashboard:
        return cls(dashboard.spec, dashboard)

    @classmethod
    def opening(cls, spec: str | Path | m.DashboardSpec, *, cache_dir: str | Path | None = DEFAULT_CACHE,
                spark_master: str | None = None, spark=None, echo=None,
                memory_budget: str | int | None = None) -> HostedDashboard:
        """Start opening `spec` in a daemon thread. A bad spec raises here, at once; a
        failing capture is reported through `status`/`error`. `echo(stage, fraction)`
        also receives the progress (the command line prints it)."""
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
                                      memory_budget=memory_budget)
                progress("warming up the engine", None)
                dash.warm_up()
                from brushfire.fallback import source_for

                # lazy answers run on the same master; the source's column names are read
                # now (footers), so that no message naming a column that is not there
                # starts Spark
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

        threading.Thread(target=run, name=f"open-{model.name}", daemon=True).start()
        return host

    @property
    def name(self) -> str:
        return self.spec.name

    def wait(self, timeout: float | None = None) -> bool:
        """Block until ready or failed; False on timeout."""
        return self._done.wait(timeout)

    def status_json(self) -> dict:
        stage, fraction = self.progress
        out = {"name": self.name, "title": self.spec.title or self.name, "status": self.status,
               "stage": stage, "fraction": fraction}
        if self.error:
            out["error"] = self.error
        if self.dashboard is not None:
            out["rows"] = self.dashboard.store.n_rows
            if self._version is None:  # read once: the store does not change
                self._version = versions.public(versions.served(self.dashboard))
            out["version"] = self._version
        return out

    def _fail(self, message: str, echo) -> None:
        self.error = message
        self.progress = ("failed", None)
        self.status = "failed"
        if echo is not None:
            echo(f"{self.name} failed: {message}", None)
