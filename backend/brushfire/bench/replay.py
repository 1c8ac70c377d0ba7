"""Replay a trace over WebSockets: K concurrent clients, each its own session, each
sending every event of the trace and timing it from the send to the reply with the
same `id`.

Two modes. As fast as possible (default): a client sends the next message when the
reply to the previous one has arrived. Paced: a client sends each message at its
recorded time without waiting, as a user's browser would; the server may then answer a
brush that a newer brush on the same view replaced with `{"type": "skipped"}`, counted
apart from the latencies.
"""

from __future__ import annotations

import asyncio
import gc
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import orjson
from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

from brushfire.bench.trace import Trace
from brushfire.errors import BrushfireError


def run(coro):
    """Run a replay on uvloop (a dependency where it builds: not on Windows), else on
    asyncio's loop: the client's own event loop is part of every latency it measures.
    Called where a loop is already running in this thread (Jupyter; Playwright's sync
    API leaves one), the replay gets a thread and a loop of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_here(coro)
    with ThreadPoolExecutor(1, thread_name_prefix="brushfire-replay") as pool:
        return pool.submit(_run_here, coro).result()


def _run_here(coro):
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


class ReplayError(BrushfireError):
    """The server could not be reached or stopped answering."""


@dataclass
class Record:
    """One message of one client: when it was sent, how it was answered and how fast."""

    client: int
    index: int  # the event's position in the trace
    kind: str  # message type, and the view or parameter it names
    sent: float  # seconds since the replay started
    reply_type: str  # update, skipped, error, state, details, highlight
    latency_ms: float  # send -> matching reply (for skipped: -> the skip notice)
    engine_ms: float | None = None  # the server's own compute time (`ms` of the reply)
    selected: int | None = None
    error: str | None = None
    methods: str | None = None  # how the views were computed, e.g. "cube:4,base:1"


@dataclass
class ReplayResult:
    records: list[Record]
    seconds: float  # wall time of the whole replay, all clients
    # (client, index, update reply as JSON text) of the events kept: text, which the
    # collector does not walk (a 2,000-cell view is a list of 2,000 numbers to it)
    replies: list[tuple[int, int, str]] = field(default_factory=list)


def at(url: str, path: str) -> str:
    """`url` (optionally with a path prefix, and a query: a server's `?token=`) with `path`
    added to its path, the query kept after it."""
    base, sep, query = url.partition("?")
    return f"{base.rstrip('/')}{path}{sep}{query}"


def ws_url(url: str, dashboard: str) -> str:
    """ws://host:port (optionally with a path prefix, and `?token=` for a server that needs
    its access token: docs/protocol.md, "Access") -> the dashboard's session URL."""
    return at(url, f"/ws/{dashboard}")


async def replay(url: str, trace: Trace, clients: int = 1, paced: bool = False,
                 keep_every: int = 0, timeout: float = 3600.0) -> ReplayResult:
    """Replay `trace` on `clients` concurrent sessions of the server at `url`, keeping
    every `keep_every`-th update reply of each (0: none; `Keep`)."""
    target = ws_url(url, trace.dashboard)
    play = _paced if paced else _fast
    collecting = gc.isenabled()
    gc.disable()  # this client's own collections (its records grow by the event) are not replies'
    try:
        t0 = time.perf_counter()
        results = await asyncio.gather(*(play(target, trace, c, t0, keep_every, timeout)
                                         for c in range(clients)))
        seconds = time.perf_counter() - t0
    finally:
        if collecting:
            gc.enable()
    records = [r for recs, _ in results for r in recs]
    replies = [x for _, reps in results for x in reps]
    return ReplayResult(records, seconds, replies)


def kind_of(message: dict) -> str:
    name = message.get("view") or message.get("name") or message.get("source")
    return f"{message['type']} {name}" if name else message["type"]


def _connect(target: str):
    # no keepalive pings: a slow baseline may hold a reply for minutes
    return connect(target, max_size=None, ping_interval=None, open_timeout=30)


async def _start(ws, trace: Trace, target: str, timeout: float) -> None:
    """Set the trace's starting state (untimed) before its first event."""
    message = trace.start_message()
    if message is None:
        return
    await ws.send(message_text({**message, "id": "start"}))
    while True:
        reply = loads(await _recv(ws, timeout))
        if _reply(reply, target) and reply.get("id") == "start":
            break
    if reply.get("type") == "error":
        msg = f"{target}: the trace's starting state was refused: {reply.get('message')}"
        raise ReplayError(msg)


NOTICES = frozenset({"working", "progress", "ready", "reloaded"})  # sent without being replies


def _reply(reply: dict, target: str) -> bool:
    """Is a received message a reply (with its message's `id`)? Not the server's notices
    (docs/protocol.md: a lazy answer's `working`, a capture's `progress` and `ready`, a
    `reloaded` session), which a client skips; an `error` without an `id` (the session
    cannot go on) or a capture's `failed` ends the replay."""
    if reply.get("type") in NOTICES:
        return False
    if reply.get("type") in ("error", "failed") and reply.get("id") is None:
        msg = f"{target}: {reply.get('message')}"
        raise ReplayError(msg)
    return True


async def _recv(ws, timeout: float) -> bytes:
    """The next message's bytes (a text frame's UTF-8, not decoded to a str: `loads` parses
    bytes), within `timeout` seconds. The client shares the machine with the server it
    measures, so its own cost per message is kept down: `asyncio.timeout`, not `wait_for`
    (which wraps every receive in a task of its own)."""
    async with asyncio.timeout(timeout):
        return await ws.recv(decode=False)


def message_text(message: dict) -> str:
    """A message as JSON text: orjson (the standard library took ~10x longer), the standard
    library for what orjson refuses."""
    try:
        return orjson.dumps(message, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(message)


def loads(raw):
    """A reply's JSON: orjson (a reply with two heatmaps is 100 KB: the standard library
    takes 3-8 ms of the client's time), the standard library for what orjson refuses."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def _record(client: int, index: int, message: dict, sent: float, received: float, reply: dict,
            t0: float) -> Record:
    methods = reply.get("methods")
    counts: dict | None = None
    if isinstance(methods, dict):  # (a loop: Counter's checks cost more, on the client's share)
        counts = {}
        for m in methods.values():
            counts[m] = counts.get(m, 0) + 1
    return Record(client, index, kind_of(message), sent - t0, reply.get("type", "?"),
                  (received - sent) * 1e3, reply.get("ms"), reply.get("selected"),
                  reply.get("message") if reply.get("type") == "error" else None,
                  ",".join(f"{k}:{counts[k]}" for k in sorted(counts)) if counts else None)


class Keep:
    """Which update replies a client keeps for the check: every `every`-th of its update
    replies (0: none), counted over the updates, not the events (a session alternating a
    hover's highlight and a brush kept every update or none at --check-every 2); not an
    update cancelled by the next interaction (docs/protocol.md): it has no `selected` and
    leaves out the views it was computing, so there is nothing to check."""

    def __init__(self, every: int) -> None:
        self.every, self.updates = every, 0

    def __call__(self, reply: dict) -> bool:
        if self.every <= 0 or reply.get("type") != "update" or reply.get("cancelled"):
            return False
        self.updates += 1
        return (self.updates - 1) % self.every == 0


def _text(raw: str | bytes) -> str:
    return raw if isinstance(raw, str) else raw.decode()


async def _fast(target: str, trace: Trace, client: int, t0: float, keep_every: int, timeout: float):
    records, replies, keep = [], [], Keep(keep_every)
    try:
        async with _connect(target) as ws:
            await _start(ws, trace, target, timeout)
            for i, ev in enumerate(trace.events):
                text = message_text({**ev.message, "id": i})
                sent = time.perf_counter()
                await ws.send(text)
                while True:
                    raw = await _recv(ws, timeout)
                    received = time.perf_counter()
                    reply = loads(raw)
                    if _reply(reply, target) and reply.get("id") == i:
                        break
                records.append(_record(client, i, ev.message, sent, received, reply, t0))
                if keep(reply):
                    replies.append((client, i, _text(raw)))
    except (OSError, TimeoutError, WebSocketException) as e:
        msg = f"replay on {target} failed: {e or type(e).__name__}"
        raise ReplayError(msg) from None
    return records, replies


async def _paced(target: str, trace: Trace, client: int, t0: float, keep_every: int, timeout: float):
    records, replies, keep = [], [], Keep(keep_every)
    sent: dict[int, float] = {}
    try:
        async with _connect(target) as ws:
            await _start(ws, trace, target, timeout)

            async def sender() -> None:
                start = time.perf_counter()
                for i, ev in enumerate(trace.events):
                    delay = start + ev.t / 1e3 - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    sent[i] = time.perf_counter()
                    await ws.send(message_text({**ev.message, "id": i}))

            task = asyncio.create_task(sender())
            try:
                answered = 0
                while answered < len(trace.events):
                    raw = await _recv(ws, timeout)
                    received = time.perf_counter()
                    reply = loads(raw)
                    if not _reply(reply, target):
                        continue
                    answered += 1
                    i = reply.get("id")
                    if not isinstance(i, int) or i not in sent:
                        msg = f"{target}: a reply to no message sent: {_text(raw)[:200]}"
                        raise ReplayError(msg)
                    records.append(_record(client, i, trace.events[i].message, sent[i], received,
                                           reply, t0))
                    if keep(reply):
                        replies.append((client, i, _text(raw)))
                await task
            finally:
                task.cancel()
    except (OSError, TimeoutError, WebSocketException) as e:
        msg = f"replay on {target} failed: {e or type(e).__name__}"
        raise ReplayError(msg) from None
    return sorted(records, key=lambda r: r.index), replies
