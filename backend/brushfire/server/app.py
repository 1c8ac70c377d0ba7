"""FastAPI app serving captured dashboards: one WebSocket session per connection over a
shared lineage store. The only module that imports FastAPI; all message logic is in
`brushfire.protocol`.

Brush messages that arrive while the engine is busy are coalesced per view (the latest
wins), so a fast drag never builds a queue; the replaced messages are answered with
`{"type": "skipped", "id": ...}`.
"""

from __future__ import annotations

import asyncio
import json

from fastapi import FastAPI, HTTPException, WebSocket, WebSocketDisconnect

from brushfire import protocol
from brushfire.dashboard import Dashboard


def create_app(dashboards: dict[str, Dashboard]) -> FastAPI:
    app = FastAPI(title="Brushfire", docs_url="/api/docs")

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "dashboards": sorted(dashboards)}

    @app.get("/api/dashboards")
    def list_dashboards() -> list[dict]:
        return [{"name": n, "title": d.spec.title or n, "rows": d.store.n_rows}
                for n, d in sorted(dashboards.items())]

    @app.get("/api/dashboards/{name}")
    def describe(name: str) -> dict:
        return describe_dashboard(_get(dashboards, name))

    @app.websocket("/ws/{name}")
    async def interact(ws: WebSocket, name: str) -> None:
        dash = dashboards.get(name)
        await ws.accept()
        if dash is None:
            await ws.send_json(protocol.error_reply(f"no dashboard named {name!r}"))
            await ws.close(code=4404)
            return
        await serve_session(ws, dash)

    return app


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


def describe_dashboard(dash: Dashboard) -> dict:
    """What a client needs to draw a dashboard: views with their bars and initial values."""
    session = dash.session()
    views = []
    for v, layout in zip(dash.spec.views, dash.store.views, strict=True):
        data = session.view(v.name)
        views.append({"name": v.name, "title": v.title or v.name, "type": v.type,
                      "brush": dash.plan.filter(v.name).kind if dash.plan.has_filter(v.name) else None,
                      "aggregate": v.aggregate.op, "labels": layout.labels,
                      "counts": data.counts, "values": data.values})
    details = dash.spec.interactions.details
    return {
        "name": dash.name, "title": dash.spec.title or dash.name, "rows": dash.store.n_rows,
        "views": views,
        "parameters": [{"name": p.name, "field": p.field, "widget": p.widget, "op": p.op,
                        "values": dash.store.indexes[p.name].keys if p.widget == "dropdown" else None}
                       for p in dash.spec.interactions.parameters],
        "highlight": [h.model_dump() for h in dash.spec.interactions.highlight],
        "details": details.model_dump() if details else None,
    }


def _get(dashboards: dict[str, Dashboard], name: str) -> Dashboard:
    if name not in dashboards:
        raise HTTPException(404, f"no dashboard named {name!r}; have: {', '.join(sorted(dashboards))}")
    return dashboards[name]


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
