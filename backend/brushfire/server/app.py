"""FastAPI app serving captured dashboards: one WebSocket session per connection over a
shared lineage store. The only module that imports FastAPI; all message logic is in
`brushfire.protocol`.

Brush messages that arrive while the engine is busy are coalesced per view (the latest
wins), so a fast drag never builds a queue; the replaced messages are answered with
`{"type": "skipped", "id": ...}`. While a dashboard is still being captured, its
WebSocket streams `progress` messages, then `ready` (or `failed`, with the reason).
The built frontend (`frontend/dist`) is served at `/`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable

from fastapi import FastAPI, HTTPException, WebSocket, WebSocketDisconnect
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from brushfire import protocol
from brushfire.dashboard import Dashboard
from brushfire.describe import describe_dashboard, frontend_dist
from brushfire.server.hosting import HostedDashboard

PROGRESS_EVERY = 0.25  # seconds between progress messages while a dashboard is captured


def create_app(dashboards: Iterable[Dashboard | HostedDashboard] | dict) -> FastAPI:
    """The app serving `dashboards` (ready ones, or ones still being opened)."""
    if isinstance(dashboards, dict):
        dashboards = dashboards.values()
    hosts = {h.name: h for h in (d if isinstance(d, HostedDashboard) else HostedDashboard.ready(d)
                                 for d in dashboards)}
    app = FastAPI(title="Brushfire", docs_url="/api/docs")
    # a Jupyter widget attached to this server reads the descriptions from the notebook's
    # origin; the HTTP API only reads, and the WebSockets take any origin already
    app.add_middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["GET"])

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "dashboards": {n: h.status for n, h in sorted(hosts.items())}}

    @app.get("/api/dashboards")
    def list_dashboards() -> list[dict]:
        return [h.status_json() for _, h in sorted(hosts.items())]

    @app.get("/api/dashboards/{name}")
    def describe(name: str) -> dict:
        host = _get(hosts, name)
        if host.dashboard is None:
            return host.status_json()
        return host.status_json() | describe_dashboard(host.dashboard)

    @app.websocket("/ws/{name}")
    async def interact(ws: WebSocket, name: str) -> None:
        host = hosts.get(name)
        await ws.accept()
        if host is None:
            await ws.send_json(protocol.error_reply(f"no dashboard named {name!r}"))
            await ws.close(code=4404)
            return
        if host.dashboard is None and not await _stream_progress(ws, host):
            return
        await serve_session(ws, host.dashboard)

    dist = frontend_dist()
    if (dist / "index.html").exists():
        app.mount("/", StaticFiles(directory=dist, html=True), name="frontend")
    else:
        @app.get("/", response_class=HTMLResponse)
        def no_frontend() -> str:
            return (f"<h1>Brushfire</h1><p>The frontend is not built ({dist} has no index.html): "
                    "run <code>make frontend</code>. The API is at <a href='/api/dashboards'>"
                    "/api/dashboards</a>.</p>")

    return app


async def _stream_progress(ws: WebSocket, host: HostedDashboard) -> bool:
    """Send `progress` while the dashboard opens; then `ready` (True) or `failed` (False,
    and the socket is closed)."""
    last = None
    while not host.wait(0):
        if host.progress != last:
            last = host.progress
            await ws.send_json({"type": "progress", "stage": last[0], "fraction": last[1]})
        await asyncio.sleep(PROGRESS_EVERY)
    if host.status == "failed":
        await ws.send_json({"type": "failed", "message": host.error})
        await ws.close(code=1011)
        return False
    await ws.send_json({"type": "ready", "rows": host.dashboard.store.n_rows})
    return True


async def serve_session(ws: WebSocket, dash: Dashboard) -> None:
    """Read messages as they come; answer them one at a time off the event loop."""
    session = dash.session()
    pending: list[tuple[dict | str, str]] = []  # (message, coalescing key or "")
    wake = asyncio.Event()
    closed = False

    async def reader() -> None:
        nonlocal closed
        try:
            while True:
                message = await ws.receive()
                if message["type"] == "websocket.disconnect":
                    raise WebSocketDisconnect(message.get("code", 1000))
                text = message.get("text")
                if text is None:  # a binary frame: decode it, or let the protocol reject it
                    text = (message.get("bytes") or b"").decode("utf-8", errors="replace")
                msg = _decode(text)  # parsed once; protocol.handle takes the dict
                key = _brush_key(msg)
                if key:
                    for i, (old, old_key) in enumerate(pending):
                        if old_key == key:  # latest wins: answer the replaced one as skipped
                            pending[i] = (msg, key)
                            await ws.send_json({"type": "skipped", "id": old.get("id")})
                            break
                    else:
                        pending.append((msg, key))
                else:
                    pending.append((msg, ""))
                wake.set()
        except WebSocketDisconnect:
            closed = True
            wake.set()

    task = asyncio.create_task(reader())
    try:
        while not closed or pending:
            if not pending:
                wake.clear()
                await wake.wait()
                continue
            msg, _ = pending.pop(0)
            reply = await asyncio.to_thread(protocol.handle, session, msg)
            if not closed:
                await ws.send_json(reply)
    except WebSocketDisconnect:
        pass
    finally:
        task.cancel()


def _get(hosts: dict[str, HostedDashboard], name: str) -> HostedDashboard:
    if name not in hosts:
        raise HTTPException(404, f"no dashboard named {name!r}; have: {', '.join(sorted(hosts))}")
    return hosts[name]


def _decode(text: str) -> dict | str:
    """The message as a dict, or the text itself when it is oversized or not a JSON
    object: `protocol.handle` answers those with an error."""
    if len(text) > protocol.MAX_MESSAGE_BYTES:
        return text
    try:
        msg = json.loads(text)
    except ValueError:
        return text
    return msg if isinstance(msg, dict) else text


def _brush_key(msg: dict | str) -> str:
    """'brush:<view>' for a brush message (the coalescing key), else ''."""
    if isinstance(msg, dict) and msg.get("type") == "brush" and isinstance(msg.get("view"), str):
        return f"brush:{msg['view']}"
    return ""
