"""The Jupyter widget: a dashboard in a notebook, with the web page's interactions, whose
filter state Python can read, watch and set. The only module that imports anywidget.

    w = brushfire.widget("dashboards/flights.yaml")   # engine in this kernel
    w                                                  # show it; brush, click, pick
    w.filters = {"delay": {"interval": [-20, 40]}}     # set from Python: the views follow
    w.observe(print, names="filters")                  # watch the user's interactions
    w.details().head()                                 # the rows behind the selection
    w.export("rows.parquet")                           # all of them, streamed to a file
    w.export("stores.csv", join="store")               # a join's rows behind it, as listed

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

import contextlib
import io
import json
import math
import os
import sys
import threading
import time
import types
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit, urlunsplit

import anywidget
import pyarrow as pa
import pyarrow.parquet as pq
import traitlets as t

from brushfire import export, protocol, selection, wire
from brushfire.dashboard import DEFAULT_CACHE, Dashboard
from brushfire.describe import describe_dashboard, frontend_dist
from brushfire.engine.api import check_columns
from brushfire.errors import BrushfireError, InteractionError
from brushfire.lazy import LazySession
from brushfire.spec import models as m

TIMEOUT = 60.0  # seconds to wait for a server's reply


def widget(spec: str | Path | dict | m.DashboardSpec | Dashboard | None = None, *,
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
    # the kernels loaded now, not on the first brush; the notebook's objects not frozen
    dash.warm_up(freeze=False)
    return DashboardWidget(dash)


class DashboardWidget(anywidget.AnyWidget):
    """A dashboard in a notebook. `filters` holds the session's selection state, each
    filter tagged as the protocol's replies carry it ({"interval": [lo, hi]}, {"rect":
    {"x": [lo, hi], "y": [lo, hi]}}, {"values": [...]}, {"parameter": value}); set it to
    replace them all. `details()` returns the rows behind the current selection,
    `export(path)` writes them to a file."""

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
        if dashboard is not None and not isinstance(dashboard, Dashboard):
            msg = (f"dashboard: {type(dashboard).__name__} {dashboard!r:.80} is not an open Dashboard "
                   "(brushfire.widget(spec) opens one from a spec)")
            raise BrushfireError(msg)
        esm, css = _frontend()
        # plain attributes first: the trait validator below reads them
        self._dash = dashboard
        # undeclared interactions answered lazily, on Spark (brushfire/lazy.py)
        self._session = dashboard.session() if dashboard is not None else None
        self._lock = threading.RLock()  # comm messages and Python code may come from two threads
        # one reload at a time (watch's, the user's), apart from `_lock`: interactions are
        # answered on this capture while the next one is made
        self._reloading = threading.Lock()
        self._mirroring = False  # True while `filters` is set from the session's own state
        self._server: dict | None = None  # attached: the server's description, once read
        description = wire.as_sent(describe_dashboard(dashboard)) if dashboard is not None else {}
        super().__init__(_esm=esm, _css=css, _description=description, _url=url.rstrip("/"),
                         _dashboard_name=name, _token=token or "", **kwargs)
        if self._session is not None:
            self.on_msg(self._on_message)
            self._mirror(protocol.filters_json(self._session))

    @classmethod
    def attach(cls, url: str, dashboard: str | None = None, *, token: str | None = None) -> DashboardWidget:
        """A widget on the dashboard `dashboard` (default: the first) of the `brushfire
        serve` at `url` (the URL it printed, `?token=` included, will do); its front end
        talks to that server itself."""
        if not isinstance(url, str):
            msg = f"url: {url!r:.80} is not a server's address (e.g. 'http://127.0.0.1:8000')"
            raise BrushfireError(msg)
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
    def session(self) -> LazySession | None:
        """This widget's session when the engine runs in this kernel (None when attached):
        the engine's, answering undeclared interactions lazily on Spark."""
        return self._session

    def close(self) -> None:
        """Close the widget and its session (its background work stops, what it built is
        freed); the dashboard stays open for other widgets."""
        if getattr(self, "_session", None) is not None:  # (None: a widget that failed to start)
            self._session.close()
        super().close()

    def details(self, limit: int | None = None, *, columns: list[str] | None = None,
                arrow: bool = False, join: str | None = None):
        """The input rows behind the current selection (backward lineage), with their
        `rid`: all of them, or the first `limit`; with `join`, that join's rows behind it
        (its key, its details columns and `rows`, as the panel lists them). A pandas
        DataFrame, or a pyarrow Table with `arrow=True`. Attached to a server, the server
        sends them as Parquet."""
        limit = export.check_limit(limit)  # (before asking a server)
        table = self._local_details(limit, columns, join) if self._session is not None \
            else self._server_details(limit, columns, join)
        return table if arrow else _as_pandas(table)

    def reload(self) -> bool:
        """Pick up a newer capture of this dashboard when its source's data changed
        (captured again, reading only what changed; or loaded, when another process
        captured it): the session keeps its filters (those the new data refuse are left
        off, and said so) and the views redraw. Returns whether a newer capture is shown
        than when it was called: one asked for while another reload runs (`watch`'s)
        waits for it, then checks again (new data that came meanwhile are captured then,
        nothing twice). For the engine in this kernel; attached to a server, `brushfire
        serve --watch` reloads."""
        if self._dash is None:
            msg = "this widget is attached to a server: the server picks up new data (serve --watch)"
            raise BrushfireError(msg)
        asked = self._dash
        with self._reloading:
            return self._reload() or self._dash is not asked

    def _reload(self) -> bool:
        """`reload` itself, under `_reloading`: whether it moved to a newer capture."""
        new = self._dash.refresh()
        if new is None:
            return False
        session = new.session()
        with self._lock:
            try:
                dropped = protocol.carry_over(self._session, session)
            except BaseException:
                session.close()
                raise
            old, self._dash, self._session = self._session, new, session
            self._description = wire.as_sent(describe_dashboard(new))
            self._mirror(protocol.filters_json(session))
        old.close()  # its background work stops and the replaced capture can be freed
        if dropped:
            print(f"brushfire: the new data refuse the filters on {', '.join(dropped)}: left off")
        return True

    def watch(self, every: float = 5.0) -> threading.Event:
        """Check every `every` seconds for new data, and `reload` when there is some; a
        reload that fails is printed (once while it fails alike), this capture stays and
        the watch goes on. Returns an Event: set it to stop watching."""
        if isinstance(every, bool) or not isinstance(every, (int, float)) or not 0 < every < math.inf:
            # (0 or less: a thread checking the source's files without a pause; not a
            # number: the thread died at its first wait, unsaid)
            msg = f"every: {every!r} is not a number of seconds > 0"
            raise BrushfireError(msg)
        stop = threading.Event()

        def run() -> None:
            said = None  # the last failure, said once while it stays (as serve --watch does)
            while not stop.wait(every):
                try:
                    self.reload()
                    said = None
                # (any failure, not only a BrushfireError: an OSError or Spark's own error
                # must not end the watch; this capture stays)
                except Exception as e:  # noqa: BLE001
                    error = str(e) if isinstance(e, BrushfireError) else f"{type(e).__name__}: {e}"
                    if error != said:
                        print(f"brushfire: new data not picked up: {error}")
                    said = error

        threading.Thread(target=run, name="brushfire-watch", daemon=True).start()
        return stop

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
        self.send(wire.as_sent(reply))  # (as the page gets it: NaN and ±inf as null)

    def _mirror(self, filters: dict) -> None:
        self._mirroring = True
        try:
            self.filters = filters
        finally:
            self._mirroring = False

    @t.validate("filters")
    def _set_filters(self, proposal: dict) -> dict:
        """Python set `filters` (the tagged state, brushfire/selection.py): engine here, a
        `filters` message to the session (all or nothing: a bad entry raises and changes
        nothing), then the new state pushed to the front end; attached, the state is
        checked against the server's dashboard and the front end applies it."""
        # datetimes as ISO strings; NaN, NaT and infinities kept for the protocol, which
        # refuses NaN and NaT and takes an infinity as a bound (as null, [nan, 5] was an
        # open end, a slider's inf made it inactive and [inf, None] selected every row)
        value = wire.jsonable(dict(proposal["value"]), nonfinite_as_null=False)
        if self._mirroring:
            return value
        state = selection.parse_state(value)
        if self._session is None:
            if self._server_ready():
                # (a filter on a source column, `column:<name>`, as the server's lazy sessions
                # take it: its column is checked by the server, when the front end applies it)
                selection.check_names(state, selection.tags_of_description(self._server_description()),
                                      columns=True)
            return selection.to_json(state)
        with self._lock:
            reply = protocol.handle(self._session, {"type": "filters", "filters": value})
            if reply["type"] == "error":
                raise InteractionError(reply["message"])
            state_reply = protocol.handle(self._session, {"type": "state"})
        state_reply["id"] = None
        self.send(wire.as_sent(state_reply))  # `state` without an id: every view of this widget applies it
        return state_reply["filters"]

    def export(self, path: str | Path, format: str | None = None, *,
               columns: list[str] | None = None, join: str | None = None) -> Path:
        """Write the input rows behind the current selection (with their `rid`) to `path`
        as CSV or Parquet (`format`, default from the file's suffix), streamed: any
        number of rows; with `join`, that join's rows behind it (as `details(join=)`).
        Attached to a server, the server streams them (its `/api/dashboards/<name>/rows`)."""
        path = Path(path)
        format = export.check_format(format or path.suffix.lstrip(".").lower())
        if self._session is not None:
            with self._lock:
                return export.write(self._session, path, format, columns, join)
        with self._rows(format, columns, join=join) as response, open(path, "wb") as f:
            while chunk := response.read(1 << 20):
                f.write(chunk)
        return path

    def _local_details(self, limit: int | None, columns: list[str] | None,
                       join: str | None = None) -> pa.Table:
        with self._lock:
            return export.selection_table(self._session, columns, limit, join)

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

    def _rows(self, format: str, columns: list[str] | None, limit: int | None = None,
              join: str | None = None):
        """The server's export of the rows behind `filters` (an open HTTP response)."""
        query = {"filters": json.dumps(self.filters), "format": format}
        columns = check_columns(columns)  # (as the engine in the kernel checks them)
        if columns:
            query["columns"] = ",".join(columns)
        if join is not None:
            query["join"] = join
        if limit is not None:
            query["limit"] = str(limit)
        url = f"{self._url}/api/dashboards/{quote(self._dashboard_name)}/rows?{urlencode(query)}"
        return _open(url, self._url, self._token)

    def _server_details(self, limit: int | None, columns: list[str] | None,
                        join: str | None = None) -> pa.Table:
        """The server's rows behind `filters`, as Parquet."""
        with self._rows("parquet", columns, limit, join) as response:
            return pq.read_table(io.BytesIO(response.read()))


def _as_pandas(table: pa.Table):
    """`table` as a pandas DataFrame, an integer column with nulls (a joined column's rows
    without a match) as pandas' nullable integers (`Int64`): pandas' default made it
    floats, ids 3.0 and int64 ids beyond 2^53 other numbers."""
    import pandas as pd

    df = table.to_pandas()
    for name, col in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_integer(col.type) and col.null_count:
            dtype = pd.api.types.pandas_dtype(f"{'U' if pa.types.is_unsigned_integer(col.type) else ''}"
                                              f"Int{col.type.bit_width}")
            df[name] = col.to_pandas(types_mapper={col.type: dtype}.get)
    return df


def _get_json(url: str, server: str, token: str = "") -> Any:
    with _open(url, server, token) as response:
        return json.load(response)


def _open(url: str, server: str, token: str = ""):
    """An HTTP GET of the server's API (with its access token); errors say what to do."""
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"} if token else {})
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT)
    except urllib.error.HTTPError as e:
        body = e.read().decode("utf-8", "replace")
        with contextlib.suppress(ValueError, KeyError, TypeError):
            if e.code == 400:  # a bad request: the server's reason is the message
                raise InteractionError(json.loads(body)["detail"]) from None
        msg = f"{url.split('?')[0]}: HTTP {e.code}: {body[:300]}"
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
