"""The Jupyter widget: a dashboard in a notebook, with the web page's interactions, whose
filter state Python can read, watch and set. The only module that imports anywidget.

    w = brushfire.widget("dashboards/flights.yaml")   # engine in this kernel
    w                                                  # show it; brush, click, pick
    w.filters = {"delay": [-20, 40]}                   # set from Python: the views follow
    w.observe(print, names="filters")                  # watch the user's interactions
    w.details().head()                                 # the rows behind the selection

By default the engine runs in the kernel: the dashboard is opened here (the lineage
cache, or a capture on this kernel's Spark session), each widget has its own `Session`,
and the front end (`frontend/src/widget.js`, the page's DashboardUI) sends protocol
messages as the widget's custom comm messages, answered by `protocol.handle`. With
`url=`, the widget attaches to a running `brushfire serve`: the front end opens its own
WebSocket session and mirrors that session's filters into `filters`. The server must
allow the notebook's origin (`brushfire serve --allow-origin http://localhost:8888`), and
a server with an access token needs it: `token=`, `?token=` in `url`, or
$BRUSHFIRE_TOKEN.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import types
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit, urlunsplit

import anywidget
import pyarrow as pa
import traitlets as t

from brushfire import protocol
from brushfire.dashboard import DEFAULT_CACHE, Dashboard
from brushfire.describe import describe_dashboard, frontend_dist
from brushfire.engine.session import Session
from brushfire.errors import BrushfireError, InteractionError
from brushfire.fallback import FallbackSession, fallback_session
from brushfire.spec import models as m

DETAILS_PAGE = 10_000  # rows per details request to a server: the protocol's maximum
TIMEOUT = 60.0  # seconds to wait for a server's reply


def widget(spec: str | Path | dict | m.Dashboard | Dashboard | None = None, *,
           url: str | None = None, dashboard: str | None = None, token: str | None = None,
           cache_dir: str | Path | None = DEFAULT_CACHE, spark=None,
           spark_master: str | None = None) -> DashboardWidget:
    """A widget showing the dashboard `spec` (a YAML path, a dict, a spec model or an open
    `Dashboard`), with the engine in this kernel: the lineage comes from the cache, or is
    captured on Spark (`spark`, else the kernel's active session or a new local one;
    `spark_master` or $BRUSHFIRE_SPARK_MASTER picks another master).

    Or, with `url`, a widget attached to a running `brushfire serve` (its dashboard named
    `dashboard`, default the first one it serves; its access token `token`, else the
    URL's `?token=`, else $BRUSHFIRE_TOKEN)."""
    if url is not None:
        if spec is not None:
            msg = "give brushfire.widget a spec or url=, not both"
            raise BrushfireError(msg)
        return DashboardWidget.attach(url, dashboard, token=token)
    if spec is None:
        msg = ("brushfire.widget needs a spec (a YAML path, a dict or a model), "
               "or url= of a running `brushfire serve`")
        raise BrushfireError(msg)
    if isinstance(spec, Dashboard):
        return DashboardWidget(spec)
    dash = Dashboard.open(spec, cache_dir=cache_dir, spark=spark, spark_master=spark_master,
                          progress=_Progress())
    dash.warm_up()  # load the compiled kernels now, not on the first brush
    return DashboardWidget(dash)


class DashboardWidget(anywidget.AnyWidget):
    """A dashboard in a notebook. `filters` holds the session's active filters in the
    protocol's format ({view: [[lo, hi], None]} for an interval brush, [[xlo, xhi],
    [ylo, yhi]] for a rect, [values] for a categorical view, a parameter's value); set it
    to replace them all (an interval may be given as [lo, hi]). `details()` returns the
    rows behind the current selection."""

    _esm = t.Unicode().tag(sync=True)
    _css = t.Unicode().tag(sync=True)
    _description = t.Dict().tag(sync=True)  # engine in the kernel: what the front end draws
    _url = t.Unicode("").tag(sync=True)  # attached to a server: its base URL ...
    _dashboard_name = t.Unicode("").tag(sync=True)  # ... and the dashboard's name there
    _token = t.Unicode("").tag(sync=True)  # ... and its access token, if it needs one
    filters = t.Dict().tag(sync=True)

    def __init__(self, dashboard: Dashboard | None = None, *, url: str = "", name: str = "",
                 token: str = "", **kwargs: Any) -> None:
        """The engine in this kernel for `dashboard`, else attached to `url` (see `attach`)."""
        if (dashboard is None) == (not url):
            msg = "DashboardWidget takes an open Dashboard, or the url and name of a server's"
            raise BrushfireError(msg)
        esm, css = _frontend()
        # plain attributes first: the trait validator below reads them
        self._dash = dashboard
        # undeclared interactions answered lazily, on Spark (brushfire/fallback.py)
        self._session = fallback_session(dashboard) if dashboard is not None else None
        self._lock = threading.RLock()  # comm messages and Python code may come from two threads
        self._mirroring = False  # True while `filters` is set from the session's own state
        self._server: dict | None = None  # attached: the server's description, once read
        description = describe_dashboard(dashboard) if dashboard is not None else {}
        super().__init__(_esm=esm, _css=css, _description=description, _url=url.rstrip("/"),
                         _dashboard_name=name, _token=token or "", **kwargs)
        if self._session is not None:
            self.on_msg(self._on_message)
            self._mirror(protocol.jsonable(self._session.filters))

    @classmethod
    def attach(cls, url: str, dashboard: str | None = None, *, token: str | None = None) -> DashboardWidget:
        """A widget on the dashboard `dashboard` (default: the first) of the `brushfire
        serve` at `url` (the URL it printed, `?token=` included, will do); its front end
        talks to that server itself."""
        base, in_url = _split_token(url)
        token = token or in_url or os.environ.get("BRUSHFIRE_TOKEN") or ""
        names = [d["name"] for d in _get_json(f"{base}/api/dashboards", base, token)]
        name = dashboard or (names[0] if names else None)
        if name not in names:
            msg = (f"the server at {base} has no dashboard named {name!r}; it has: "
                   f"{', '.join(names) or 'none'}")
            raise BrushfireError(msg)
        return cls(url=base, name=name, token=token)

    @property
    def dashboard(self) -> Dashboard | None:
        """The dashboard when its engine runs in this kernel (None when attached)."""
        return self._dash

    @property
    def session(self) -> FallbackSession | Session | None:
        """This widget's session when the engine runs in this kernel (None when attached):
        the engine's, answering undeclared interactions lazily on Spark."""
        return self._session

    def details(self, limit: int | None = None, *, columns: list[str] | None = None,
                arrow: bool = False):
        """The input rows behind the current selection (backward lineage), with their
        `rid`: all of them, or the first `limit`. A pandas DataFrame, or a pyarrow Table
        with `arrow=True`. Attached to a server, the rows travel as JSON: times arrive as
        ISO strings and NaN as null."""
        if limit is not None and limit < 0:
            msg = f"limit must be >= 0, not {limit}"
            raise InteractionError(msg)
        table = self._local_details(limit, columns) if self._session is not None \
            else self._server_details(limit, columns)
        return table if arrow else table.to_pandas()

    def __repr__(self) -> str:
        if self._dash is None:
            where = f"{self._dashboard_name!r} served at {self._url}"
        else:
            where = f"{self._dash.name!r}, {self._dash.store.n_rows:,} rows, engine in this kernel"
        return f"<brushfire DashboardWidget {where}; filters={self.filters}>"

    # --- engine in the kernel ------------------------------------------------------------

    def _on_message(self, _widget: object, content: Any, _buffers: object) -> None:
        """A protocol message from the front end: answer it, and mirror the new filters."""
        with self._lock:
            reply = protocol.handle(self._session, content)
            if reply["type"] == "update":
                self._mirror(reply["filters"])
        self.send(reply)

    def _mirror(self, filters: dict) -> None:
        self._mirroring = True
        try:
            self.filters = filters
        finally:
            self._mirroring = False

    @t.validate("filters")
    def _set_filters(self, proposal: dict) -> dict:
        """Python set `filters`: apply them (engine here: to the session, then push the new
        views to the front end; attached: check the names, the front end applies them)."""
        value = dict(proposal["value"])
        if self._mirroring:
            return value
        if self._session is None:
            if self._server_ready():
                protocol.filter_messages(value, self._kinds())  # unknown names raise here
            return protocol.jsonable(value)
        with self._lock:
            state = self._apply_filters(value)
        self.send(state)  # `state` without an id: every view of this widget applies it
        return state["filters"]

    def _apply_filters(self, filters: dict) -> dict:
        """Clear the session, then one interaction per filter; on an error the previous
        filters are restored and the error raised. Returns the new `state` reply."""
        kinds = self._kinds()
        messages = protocol.filter_messages(filters, kinds)
        previous = protocol.jsonable(self._session.filters)
        try:
            self._run([{"type": "clear"}, *messages])
        except BrushfireError:
            self._run([{"type": "clear"}, *protocol.filter_messages(previous, kinds)])
            raise
        return protocol.handle(self._session, {"type": "state"})

    def _run(self, messages: list[dict]) -> None:
        for message in messages:
            reply = protocol.handle(self._session, message)
            if reply["type"] == "error":
                msg = f"filters[{message.get('view') or message.get('name')!r}]: {reply['message']}"
                raise InteractionError(msg)

    def _local_details(self, limit: int | None, columns: list[str] | None) -> pa.Table:
        with self._lock:
            total = self._session.count_selected()
            size = total if limit is None else min(limit, total)
            table = self._session.details(page=0, page_size=max(size, 1), columns=columns)
        return table.slice(0, size)

    def _kinds(self) -> dict[str, str]:
        """Each brush's and parameter's filter kind, as `protocol.filter_messages` wants."""
        if self._dash is not None:  # declared filters, and the brushes answered lazily
            lazy = {v.name: m.brush_of(v) for v in self._dash.spec.views if m.brush_of(v) != "none"}
            return lazy | {f.name: f.kind for f in self._dash.plan.filters}
        d = self._server_description()
        kinds = {v["name"]: v["brush"] for v in d["views"] if v["brush"]}
        kinds.update({p["name"]: "param_eq" if p["op"] == "eq" else "param_range"
                      for p in d["parameters"]})
        return kinds

    # --- attached to a server --------------------------------------------------------------

    def _server_description(self) -> dict:
        if self._server is None:
            d = _get_json(f"{self._url}/api/dashboards/{quote(self._dashboard_name)}", self._url,
                          self._token)
            if d.get("status") != "ready":
                msg = (f"dashboard {self._dashboard_name!r} at {self._url} is {d.get('status')}"
                       f"{': ' + d['error'] if d.get('error') else ''}")
                raise BrushfireError(msg)
            self._server = d
        return self._server

    def _server_ready(self) -> bool:
        """Whether the server's description can be read now (it may still be capturing)."""
        try:
            self._server_description()
        except BrushfireError:
            return False
        return True

    def _server_details(self, limit: int | None, columns: list[str] | None) -> pa.Table:
        """A session of our own on the server: the current filters, then details pages."""
        from websockets.sync.client import connect

        declared = self._server_description().get("details") or {}
        columns = columns or declared.get("columns") or []
        messages = protocol.filter_messages(self.filters, self._kinds())
        size = DETAILS_PAGE if limit is None else max(1, min(limit, DETAILS_PAGE))
        rows: list[dict] = []
        url = f"{self._url.replace('http', 'ws', 1)}/ws/{quote(self._dashboard_name)}"
        headers = {"Authorization": f"token {self._token}"} if self._token else None
        with connect(url, open_timeout=TIMEOUT, max_size=2**27, additional_headers=headers) as ws:
            for i, message in enumerate(messages):
                reply = _ask(ws, {**message, "id": f"f{i}"})
                if reply["type"] == "error":
                    msg = f"filters[{message.get('view') or message.get('name')!r}]: {reply['message']}"
                    raise InteractionError(msg)
            page = 0
            while limit is None or len(rows) < limit:
                reply = _ask(ws, {"type": "details", "id": f"d{page}", "page": page,
                                  "page_size": size, "columns": columns})
                if reply["type"] == "error":
                    raise InteractionError(reply["message"])
                rows += reply["rows"]
                if len(reply["rows"]) < size:
                    break
                page += 1
        rows = rows if limit is None else rows[:limit]
        return pa.table({c: [r.get(c) for r in rows] for c in ["rid", *columns]})


def _ask(ws, message: dict) -> dict:
    """Send one message; its reply (progress messages while the server captures skipped)."""
    ws.send(json.dumps(message))
    while True:
        reply = json.loads(ws.recv(timeout=TIMEOUT))
        if reply["type"] == "failed":
            raise BrushfireError(reply["message"])
        if reply["type"] == "working":  # a lazy answer's progress, not its reply
            continue
        if reply.get("id") == message["id"] or reply["type"] == "error":
            return reply


def _get_json(url: str, server: str, token: str = "") -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return json.load(response)
    except urllib.error.HTTPError as e:
        msg = f"{url}: HTTP {e.code}: {e.read().decode('utf-8', 'replace')[:300]}"
        if e.code == 401:
            msg += ("\n    the server needs its access token: brushfire.widget(url=..., token=...), "
                    "or the URL it printed (with ?token=...)")
        raise BrushfireError(msg) from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        msg = (f"cannot reach a Brushfire server at {server} ({reason}); "
               "start one with `brushfire serve SPEC`")
        raise BrushfireError(msg) from None


def _split_token(url: str) -> tuple[str, str | None]:
    """(the server's base URL, the `?token=` it carried, if any)."""
    parts = urlsplit(url)
    token = parse_qs(parts.query).get("token", [None])[0]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")).rstrip("/"), token


def _frontend() -> tuple[str, str]:
    """The built front end: the widget's ES module and the dashboard's CSS."""
    dist = frontend_dist()
    esm, css = dist / "widget.js", dist / "style.css"
    if not (esm.is_file() and css.is_file()):
        msg = (f"the widget's front end is not built ({esm} is missing): run `make frontend`, "
               "or point $BRUSHFIRE_FRONTEND at a built frontend/dist")
        raise BrushfireError(msg)
    return esm.read_text(encoding="utf-8"), css.read_text(encoding="utf-8")


class _Progress:
    """Capture progress on one line of the cell's stderr (only a capture reports any)."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def __call__(self, stage: str, fraction: float | None) -> None:
        pct = f" {fraction:4.0%}" if fraction is not None else ""
        end = "\n" if fraction is None or fraction >= 1 else ""
        print(f"\r[{time.perf_counter() - self.t0:6.1f}s] {stage}{pct}", end=end,
              file=sys.stderr, flush=True)


class _CallableModule(types.ModuleType):
    """`brushfire.widget` is both this module and the `widget` function: importing a
    submodule makes it an attribute of its package, which would hide a function of the
    same name, so the module itself is callable."""

    def __call__(self, *args: Any, **kwargs: Any) -> DashboardWidget:
        return widget(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
