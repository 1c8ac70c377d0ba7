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
import contextlib
import logging
import os
import re
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from fastapi import FastAPI, HTTPException, WebSocket, WebSocketDisconnect
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles

from brushfire import export, protocol, requests, versions, wire
from brushfire.dashboard import Dashboard
from brushfire.describe import describe_dashboard, frontend_dist
from brushfire.engine import memory, parallel
from brushfire.errors import BrushfireError
from brushfire.server.hosting import HostedDashboard
from brushfire.server.security import Security, SecurityMiddleware
from brushfire.server.transport import WebSocketProtocol

PROGRESS_EVERY = 0.25  # seconds between progress messages while a dashboard is captured
WORKING_AFTER = 1.0  # seconds an answer may take before the client hears it is being worked on
WORKING_EVERY = 0.5  # seconds between `working` messages after that
MAX_FRAME_BYTES = 1024 * 1024  # `brushfire serve`'s WebSocket frame limit: above it, close 1009
MAX_PENDING = 64  # messages read ahead of the engine per session; then the reader waits

# WebSocket close codes (docs/protocol.md)
CLOSE_TOO_BIG = 1009  # a frame over MAX_FRAME_BYTES (after the replies to the messages before it)
CLOSE_UNKNOWN_DASHBOARD = 4404
CLOSE_TOO_MANY_SESSIONS = 4429
CLOSE_CAPTURE_FAILED = 1011  # also: no session could be opened, or the server failed

log = logging.getLogger("brushfire.server")


@dataclass(frozen=True)
class Limits:
    """Sessions (WebSocket connections) open at once: in all, and per client address."""

    max_sessions: int = 256
    max_sessions_per_client: int = 128


def uvicorn_options() -> dict:
    """Settings `brushfire serve` and the bench server give uvicorn: the WebSocket frame
    limit and what happens past it (server/transport.py), and no per-message compression.
    Browsers and the bench client ask for it (permessage-deflate) and uvicorn grants it by
    default, but compressing a reply costs more than sending it: with two 100 x 100
    heatmaps (100 KB of JSON), 7 ms of every reply's 9 on this machine, for a transfer
    that takes well under a millisecond on a local network."""
    return {"ws_max_size": MAX_FRAME_BYTES, "ws_per_message_deflate": False, "ws": WebSocketProtocol}


def create_app(dashboards: Iterable[Dashboard | HostedDashboard] | dict, *,
               security: Security | None = None, limits: Limits | None = None) -> FastAPI:
    """The app serving `dashboards` (ready ones, or ones still being opened). `security`
    (default: loopback hosts, same-origin only, no token) guards every request."""
    if isinstance(dashboards, dict):
        dashboards = dashboards.values()
    hosts = {h.name: h for h in (d if isinstance(d, HostedDashboard) else HostedDashboard.ready(d)
                                 for d in dashboards)}
    security = security or Security()
    limits = limits or Limits()
    sessions: Counter[str] = Counter()  # open sessions per client address
    app = FastAPI(title="Brushfire", docs_url="/api/docs")
    # CORS only for the allowed origins (a Jupyter widget attached to this server reads the
    # descriptions from the notebook's origin); the security middleware runs first
    origins, pattern = security.cors_origins()
    app.add_middleware(CORSMiddleware, allow_origins=origins, allow_origin_regex=pattern,
                       allow_methods=["GET"], allow_headers=["Authorization"])
    app.add_middleware(SecurityMiddleware, security=security)

    @app.get("/health")
    def health() -> dict:
        """Status, open sessions, and the memory the engine's budgets hold (bytes in use
        and the budget: every session's conditional cubes, every store's key copies): the
        answering process's (`serve --workers N`: one of N, `worker` says which)."""
        return {"status": "ok", "dashboards": {n: h.status for n, h in sorted(hosts.items())},
                "sessions": sum(sessions.values()), "memory": memory.usage(),
                "worker": {"pid": os.getpid(), "of": parallel.processes()}}

    @app.get("/api/dashboards")
    def list_dashboards() -> list[dict]:
        return [h.status_json() for _, h in sorted(hosts.items())]

    @app.get("/api/dashboards/{name}")
    def describe(name: str) -> dict:
        host = _get(hosts, name)
        if host.dashboard is None:
            return host.status_json()
        return host.status_json() | describe_dashboard(host.dashboard)

    @app.get("/api/dashboards/{name}/rows")
    def rows(name: str, filters: str = "{}", format: str = "csv", columns: str | None = None,
             limit: str | None = None, join: str | None = None):
        """The rows behind a selection (`filters`: the tagged state, JSON), streamed as CSV
        or Parquet: backward lineage on a session of its own; with `join`, that join's
        dimension rows behind it (as `dimension` lists them). `limit` is taken as text so
        that one that is no integer gets export's 400, not FastAPI's 422 of its own shape."""
        host = _get(hosts, name)
        if host.dashboard is None:
            return JSONResponse({"detail": f"dashboard {name!r} is {host.status}"}, status_code=409)
        try:
            state = wire.decode(filters)
        except protocol.ProtocolError as e:
            return JSONResponse({"detail": f"filters: {e}"}, status_code=400)
        session = host.dashboard.session()
        reply = protocol.handle(session, {"type": "filters", "filters": state})
        if reply["type"] == "error":
            session.close()
            return JSONResponse({"detail": reply["message"]}, status_code=400)
        try:
            wanted = int(limit) if limit is not None and re.fullmatch(r"-?[0-9]{1,4000}", limit) else limit
            format = export.check_format(format)  # (CSV is csv: the file's name and type too)
            declared = session.plan.dashboard.interactions.details
            names = export.split_columns(columns, declared.columns if declared else []) if columns else None
            chunks = export.stream(session, format, names, wanted, join)
        except BrushfireError as e:
            session.close()
            return JSONResponse({"detail": str(e)}, status_code=400)

        # (a join's name is a spec identifier, checked above: safe in the header)
        rows_of = f"{name}-{join}" if join else name
        headers = {"Content-Disposition": f'attachment; filename="{rows_of}-rows.{format}"'}
        return ClosingStream(chunks, session.close, media_type=export.FORMATS[format], headers=headers)

    @app.websocket("/ws/{name}")
    async def interact(ws: WebSocket, name: str) -> None:
        host = hosts.get(name)
        client = ws.client.host if ws.client else "?"
        await ws.accept()
        try:
            if host is None:
                await _refuse(ws, CLOSE_UNKNOWN_DASHBOARD,
                              f"no dashboard named {name!r}; have: {', '.join(sorted(hosts))}")
                return
            problem = _over_limit(sessions, client, limits)
            if problem:
                await _refuse(ws, CLOSE_TOO_MANY_SESSIONS, problem)
                return
            sessions[client] += 1
            try:
                early = await _stream_progress(ws, host) if host.dashboard is None else []
                if early is None:  # the capture failed, or the client left meanwhile
                    return
                await serve_session(ws, host, early)
            finally:
                sessions[client] -= 1
                if sessions[client] <= 0:
                    del sessions[client]
        except WebSocketDisconnect:  # the client left mid-send
            pass
        except Exception as e:  # noqa: BLE001 - never an "Exception in ASGI application"
            log.exception("brushfire: session on %r failed", name)
            with contextlib.suppress(Exception):
                await ws.close(code=CLOSE_CAPTURE_FAILED, reason=close_reason(f"server error: {e}"))

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


class ClosingStream(StreamingResponse):
    """A streamed response that calls `close` when it is over: sent, failed, or its client
    left, even before the first chunk (a generator's `finally` around the chunks missed
    that: a stream cancelled before it began never ran it, and its session stayed open)."""

    def __init__(self, content, close, **kwargs) -> None:
        super().__init__(content, **kwargs)
        self._close = close

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:  # (a chunk being read when the client left is read first: anyio waits for its thread)
            self._close()


def _over_limit(sessions: Counter, client: str, limits: Limits) -> str | None:
    if sum(sessions.values()) >= limits.max_sessions:
        return f"too many sessions: the server holds at most {limits.max_sessions}; try again later"
    if sessions[client] >= limits.max_sessions_per_client:
        return (f"too many sessions from {client}: at most {limits.max_sessions_per_client} "
                "at once; close some")
    return None


async def _refuse(ws: WebSocket, code: int, message: str) -> None:
    """An `error` message with the reason, then the close code (the reason again)."""
    await ws.send_text(wire.dumps(protocol.error_reply(message)))
    await ws.close(code=code, reason=close_reason(message))


def close_reason(text: str) -> str:
    """`text` cut to a close frame's 123 bytes of UTF-8."""
    return text.encode("utf-8")[:120].decode("utf-8", "ignore")


async def _stream_progress(ws: WebSocket, host: HostedDashboard) -> list[dict] | None:
    """Send `progress` while the dashboard opens; then `ready` and the client's messages
    received meanwhile (at most MAX_PENDING, then TCP pushes back), which the session
    answers first, in order; or None: the capture failed (`failed` sent and the socket
    closed), or the client left. Reading meanwhile is what tells that a client left: its
    session ends then, not when the capture does (it counted against the session limits
    until then)."""
    last = None
    early: list[dict] = []
    receiving: asyncio.Task | None = None
    try:
        while not host.wait(0):
            if host.progress != last:
                last = host.progress
                await ws.send_json({"type": "progress", "stage": last[0], "fraction": last[1]})
            if receiving is None and len(early) < MAX_PENDING and not _ends(early):
                receiving = asyncio.ensure_future(ws.receive())
            if receiving is None:
                await asyncio.sleep(PROGRESS_EVERY)
                continue
            done, _ = await asyncio.wait({receiving}, timeout=PROGRESS_EVERY)
            if done:
                early.append(receiving.result())
                receiving = None
                if _ends(early) and early[-1].get("code") != CLOSE_TOO_BIG:
                    return None  # (a frame over the limit: the messages before it are answered)
    finally:
        if receiving is not None:  # (a message it got is kept; a cancelled wait loses none)
            receiving.cancel()
            await asyncio.wait({receiving})  # (not `await receiving`: its cancellation is not ours)
            if not receiving.cancelled() and receiving.exception() is None:
                early.append(receiving.result())
    if host.status == "failed":
        await ws.send_json({"type": "failed", "message": host.error})
        await ws.close(code=CLOSE_CAPTURE_FAILED)
        return None
    await ws.send_json({"type": "ready", "rows": host.dashboard.store.n_rows})
    return early


def _ends(received: list[dict]) -> bool:
    """Whether the last of the client's ASGI messages ends the connection."""
    return bool(received) and received[-1]["type"] == "websocket.disconnect"


async def serve_session(ws: WebSocket, host: HostedDashboard, early: list[dict] | tuple = ()) -> None:
    """Read messages as they come (`early`: those received while the dashboard was
    captured, first); answer them one at a time off the event loop, in order.

    No message ends the session: one that cannot be decoded is answered with an `error`
    in its turn, and any failure while reading or answering one becomes an `error` reply.
    The reader stops reading while MAX_PENDING messages wait (TCP pushes back). When the
    host serves a newer capture (`serve --watch`), the session moves to it between two
    messages, with its filters, and the client is told (`reloaded`). A move that fails
    is said once (`error`) and tried again before each next message (or at the next
    reload) until it succeeds; meanwhile the session answers on the capture it has."""
    dash = host.dashboard  # the capture the session is on
    try:
        session = open_session(dash)
    except Exception as e:  # noqa: BLE001 - say why, and close
        await _refuse(ws, CLOSE_CAPTURE_FAILED, f"cannot open a session: {e}")
        return
    pending: list[tuple[str, object, str]] = []  # (kind: "msg" | "reply", payload, coalescing key)
    wake, room = asyncio.Event(), asyncio.Event()
    closed = False
    too_big: str | None = None  # a frame over the limit came: answer what was read, then close 1009
    answering = False  # a message is being answered now
    failed = None  # the newer capture the session could not move to: tried again at a message
    interrupt = _interrupt(session)  # cancels a lazy answer (engine/lazy.py)

    def queue(kind: str, payload, key: str = "") -> dict | None:
        """Add an item; a brush replacing a waiting one on the same view returns the
        `skipped` reply for the replaced one. Only the last item waiting is replaced: a
        message after it (a `clear`, `filters`, `details`...) is answered after the brush
        before it and before the brush after it, as they were sent (the newer brush put in
        the older one's place ran before a `clear` sent between them, which then cleared it)."""
        if key and pending and pending[-1][0] == "msg" and pending[-1][2] == key:
            old = pending[-1][1]
            pending[-1] = (kind, payload, key)
            return {"type": "skipped", "id": protocol.echo_id(old.get("id"))}
        pending.append((kind, payload, key))
        wake.set()
        return None

    async def take(message: dict) -> bool:
        """One of the client's ASGI messages queued (or its `error`); False: the end."""
        nonlocal too_big
        if message["type"] == "websocket.disconnect":
            if message.get("code") == CLOSE_TOO_BIG:  # (server/transport.py)
                too_big = message.get("reason") or "message too big"
            return False
        try:
            raw = message.get("text")
            if raw is None:  # a binary frame: UTF-8 JSON too
                raw = message.get("bytes") or b""
            msg = wire.decode_message(raw)  # parsed once; protocol.handle takes the dict
            key = _brush_key(msg, session)
            skipped = queue("msg", msg, key)
            if answering and interrupt is not None and _interrupts(msg, key):
                interrupt()  # the next interaction cancels a lazy answer still running
        except protocol.ProtocolError as e:
            skipped = queue("reply", protocol.error_reply(str(e)))
        except Exception as e:  # noqa: BLE001 - one message must never end a session
            log.exception("brushfire: error reading a message")
            skipped = queue("reply", protocol.error_reply(f"cannot read this message: {e}"))
        if skipped is not None:
            await _send(ws, skipped)
        return True

    async def reader() -> None:
        nonlocal closed
        try:
            for message in early:
                if not await take(message):
                    return
            while True:
                while len(pending) >= MAX_PENDING:
                    room.clear()
                    await room.wait()
                if not await take(await ws.receive()):
                    break
        except Exception:  # noqa: BLE001 - disconnected (or the transport failed): end the session
            pass
        finally:
            closed = True
            wake.set()
            if answering and interrupt is not None and too_big is None:
                interrupt()  # the client left: a lazy answer still running on Spark is for no one

    loop = asyncio.get_running_loop()
    unlisten = host.listen(lambda: loop.call_soon_threadsafe(wake.set))
    task = asyncio.create_task(reader())
    try:
        while not closed or (too_big is not None and pending):
            newer = host.dashboard
            # a newer capture: move to it (one it failed to move to: again before a message)
            if newer is not dash and not closed and (newer is not failed or pending):
                try:
                    session, reply = await asyncio.to_thread(_move, session, newer)
                except Exception as e:  # noqa: BLE001 - the session stays on the capture it has
                    reply = None
                    if newer is not failed:  # (said once per capture, not at every message)
                        log.exception("brushfire: a session could not move to the new capture")
                        reply = protocol.error_reply(
                            f"new data not shown in this session yet (tried again at the next message): {e}")
                    failed = newer
                else:
                    dash, failed = newer, None
                    interrupt = _interrupt(session)
                if reply is not None and not await _send(ws, reply):
                    break
                if dash is newer:
                    continue
                # (it failed: a message waiting is answered on the capture the session has)
            if not pending:
                wake.clear()
                await wake.wait()
                continue
            kind, payload, _ = pending.pop(0)
            room.set()
            if kind == "msg":
                answering = True
                try:
                    reply = await _answer(ws, session, payload)
                except Exception as e:  # noqa: BLE001 - protocol.handle does not raise; in case
                    log.exception("brushfire: error answering a message")
                    reply = protocol.error_reply(f"internal error: {e}")
                finally:
                    answering = False
            else:
                reply = payload
            if (not closed or too_big is not None) and not await _send(ws, reply):
                break
        if too_big is not None:  # every message read before the frame answered: now the close
            with contextlib.suppress(Exception):
                await ws.close(code=CLOSE_TOO_BIG, reason=close_reason(too_big))
    finally:
        unlisten()
        task.cancel()
        pending.clear()
        session.close()  # its background work stops and what it built is freed (returns at once)


def _interrupt(session):
    """What cancels the session's lazy answer running on Spark; None: it answers none."""
    return protocol.lazy_api(session).interrupt if protocol.answers_lazily(session) else None


def _move(old, dash):
    """A session of `dash` (a newer capture) with `old`'s filters, `old` closed, and the
    `reloaded` message telling the client (docs/protocol.md); the filters the new data
    refuse are left off and named."""
    new = open_session(dash)
    try:
        dropped = protocol.carry_over(old, new)
    except BaseException:
        new.close()
        raise
    old.close()
    return new, {"type": "reloaded", "rows": dash.store.n_rows,
                 "version": versions.public(versions.served(dash)),
                 "filters": protocol.filters_json(new), "dropped": dropped}


def open_session(dash):
    """A session of `dash` (Brushfire's answers undeclared interactions lazily on Spark,
    brushfire/lazy.py: `Dashboard.session`; a baseline engine's as it is)."""
    return dash.session()


async def _answer(ws: WebSocket, session, payload: dict) -> str:
    """protocol.handle off the event loop, and the reply as JSON text (also off the loop,
    which every session's messages and replies go through); while a lazy answer on Spark
    takes longer than WORKING_AFTER, `working` messages tell the client how far it is
    (sent before the answer). A timer, not a wait with a timeout: that costs ~0.08 ms of
    every reply."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    sends: list[asyncio.Task] = []

    def tick() -> None:
        nonlocal timer
        working = protocol.working_message(session, protocol.echo_id(payload.get("id")), loop.time() - t0)
        if working["lazy"]:  # only lazy answers say so: other slow ones just take their time
            sends.append(asyncio.ensure_future(_send(ws, working)))
        timer = loop.call_later(WORKING_EVERY, tick)

    timer = loop.call_later(WORKING_AFTER, tick)
    try:
        reply = await loop.run_in_executor(REPLIES, _handled, session, payload)
    finally:
        timer.cancel()
        # `tick` holds itself and the timer (which holds `tick`: uvloop keeps a cancelled
        # timer's callback) in its closure: reference cycles, 15 objects per message that
        # only the collector frees, whose garbage made its slowest collections, the
        # whole-process ones, frequent (measured with 50 sessions: every few seconds,
        # 0.1-0.9 s each on a loaded machine, every session waiting)
        timer = tick = None
    for t in sends:
        await t
    return reply


# The threads that answer messages, every session's: one per core. The engine's kernels
# release the interpreter's lock, its Python around them does not, so more threads than
# cores only wait for the lock and for each other (50 sessions flat out on flights 3M,
# perf/README.md: 2 threads on 2 cores answered 506-535 messages/s, p99 140-145 ms; 3
# threads 462-485, p99 150-202; asyncio's default 6, 399-410, p99 200-205).
CORES = parallel.cores()
REPLIES = ThreadPoolExecutor(max_workers=CORES, thread_name_prefix="brushfire-reply")


def _handled(session, payload: dict) -> str:
    return wire.dumps(protocol.handle(session, payload))


async def _send(ws: WebSocket, reply: dict | str) -> bool:
    """Send a reply as JSON (non-finite numbers as null; text: already JSON); False when
    the socket is gone."""
    text = reply if isinstance(reply, str) else wire.dumps(reply)
    try:
        await ws.send_text(text)
    except Exception:  # noqa: BLE001 - closed under us
        return False
    return True


def _get(hosts: dict[str, HostedDashboard], name: str) -> HostedDashboard:
    if name not in hosts:
        raise HTTPException(404, f"no dashboard named {name!r}; have: {', '.join(sorted(hosts))}")
    return hosts[name]


def _interrupts(msg: dict, key: str) -> bool:
    """Whether a message cancels the lazy answer running when it arrives: a filter message
    (requests.FILTER_TYPES) that may change the filters, i.e. a brush the session takes
    (`key`, `_brush_key`) or another that parses. A malformed one changes nothing (its
    error), so it cancels nothing: it left the views that answer was computing stale."""
    if msg.get("type") == "brush":
        return bool(key)
    if msg.get("type") not in requests.FILTER_TYPES:
        return False
    try:
        protocol.parse(msg)
    except protocol.ProtocolError:
        return False
    return True


def _brush_key(msg, session) -> str:
    """'brush:<view>' for a brush message the session takes (the coalescing key), else '':
    a malformed one, or one its view refuses (a bound that is no number, a y on a
    histogram), is answered its error in turn and replaces no brush waiting before it.
    (A brush's check reads the dashboard, not the session's state, so it may run here while
    another message is answered; should it fail anyhow, the brush is answered in turn.)"""
    if isinstance(msg, dict) and msg.get("type") == "brush" and isinstance(msg.get("view"), str):
        try:
            protocol.parse(msg).check(session)
        except Exception:  # noqa: BLE001 - refused (or not checkable now): not coalesced
            return ""
        return f"brush:{msg['view']}"
    return ""
