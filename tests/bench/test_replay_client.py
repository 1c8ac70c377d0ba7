"""The replay client's own costs kept down (it shares the machine with the server it
measures): messages written by orjson, replies received as bytes within a timeout."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import serve

from brushfire.bench import replay


@pytest.mark.parametrize("message", [
    {"type": "brush", "view": "delay", "interval": [-12.5, 33.25], "id": 7},
    {"type": "brush", "view": "day", "interval": ["2001-01-31T06:17:59+00:00", None], "id": "start"},
    {"type": "select", "view": "origin", "values": ["Zürich", "ATL"], "id": 0},
    {"type": "brush", "view": "delay", "interval": [np.float64(0.1), np.int64(3)], "id": 1},
    {"type": "select", "view": "x", "values": [2**70], "id": 2},  # past 64 bits: the standard library's
])
def test_a_message_is_written_as_the_json_of_its_values(message):
    assert json.loads(replay.message_text(message)) == json.loads(json.dumps(message, default=float))


def test_replies_are_received_as_bytes_and_a_silent_server_times_out():
    async def main():
        async def handler(ws):
            async for text in ws:
                if text != "quiet":
                    await ws.send(json.dumps({"type": "update", "echo": text}))

        async with serve(handler, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            async with connect(f"ws://127.0.0.1:{port}") as ws:
                await ws.send("hé")
                raw = await replay._recv(ws, 5.0)  # noqa: SLF001
                assert isinstance(raw, bytes) and replay.loads(raw) == {"type": "update", "echo": "hé"}
                await ws.send("quiet")
                with pytest.raises(TimeoutError):
                    await replay._recv(ws, 0.2)  # noqa: SLF001

    asyncio.run(main())


def test_a_replay_runs_where_an_event_loop_is_already_running():
    # Jupyter runs cells inside a loop, and Playwright's sync API leaves one on the main
    # thread: asyncio.run would refuse ("cannot be called from a running event loop")
    async def answer():
        return 42

    async def cell():
        return replay.run(answer())

    assert asyncio.run(cell()) == 42


def test_an_update_cancelled_by_the_next_interaction_is_not_kept_for_the_check():
    # a paced client sends on while a lazy answer runs: that answer's reply is an update
    # with `cancelled` and no `selected`, which the check would count as a mismatch
    answered = {"type": "update", "id": 4, "views": {"hx": {"counts": [1], "values": [1]}},
                "filters": {"hx": {"interval": [0, 1]}}, "selected": 1}
    cancelled = {"type": "update", "id": 4, "views": {}, "filters": {"hx": {"interval": [0, 1]}},
                 "lazy": {"views": [], "reason": "undeclared", "ms": 3.0}, "cancelled": True}
    keep = replay.Keep(1)
    assert keep(answered) and not keep(cancelled) and keep(answered)
    assert not replay.Keep(0)(answered)


def test_every_kth_update_reply_is_kept_whatever_replies_come_between():
    # --check-every 2 on a session alternating a hover's highlight and a brush: by the
    # event's index, every update (or none) was kept
    update = {"type": "update", "views": {}, "filters": {}, "selected": 1}
    highlight = {"type": "highlight", "source": "cat", "bars": [0], "views": {}}
    keep = replay.Keep(2)
    assert [keep(r) for r in [highlight, update] * 6] == [False, True, False, False] * 3


@pytest.mark.parametrize("paced", [False, True])
def test_the_servers_notices_are_skipped_as_no_reply(paced):
    # a server still capturing sends `progress` and `ready` first; a lazy answer `working`;
    # a session moved to a new capture `reloaded` (docs/protocol.md): none is a reply
    from brushfire.bench.trace import Event, Trace

    async def handler(ws):
        await ws.send(json.dumps({"type": "progress", "stage": "capture", "fraction": 0.5}))
        await ws.send(json.dumps({"type": "ready", "rows": 10}))
        async for text in ws:
            msg = json.loads(text)
            await ws.send(json.dumps({"type": "working", "id": msg["id"], "seconds": 1.0, "lazy": False}))
            await ws.send(json.dumps({"type": "reloaded", "rows": 10, "version": "v2", "filters": {},
                                      "dropped": []}))
            await ws.send(json.dumps({"type": "update", "id": msg["id"], "views": {}, "filters": {},
                                      "selected": 10, "ms": 0.1}))

    trace = Trace("d", tuple(Event(t, {"type": "clear"}) for t in (0.0, 1.0, 1.0)),
                  state={"hx": {"interval": [0, 1]}})

    async def main():
        async with serve(handler, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            return await replay.replay(f"ws://127.0.0.1:{port}", trace, paced=paced, keep_every=1,
                                       timeout=5.0)

    result = asyncio.run(main())
    assert [(r.index, r.reply_type) for r in result.records] == [(0, "update"), (1, "update"), (2, "update")]
    assert [i for _, i, _ in result.replies] == [0, 1, 2]
