"""A client that leaves its replies unread, then breaks the frame limit (issue 36, defect 3):
every message read before the frame is answered, in order, then the close frame (1009,
its reason), then the end of the stream; nothing resets the connection, whose replies
the client's system would drop. Over a real uvicorn server (`brushfire serve`'s options:
server/transport.py), without Spark."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from brushfire.server import create_app, transport
from brushfire.server.app import MAX_FRAME_BYTES, MAX_PENDING, uvicorn_options
from live_server import live_server

REQUESTS = 60


@pytest.fixture
def server(rich_local):
    with live_server(create_app([rich_local]), **uvicorn_options()) as addr:
        yield addr


def test_replies_left_unread_all_arrive_before_the_1009_close(server, rich_local):
    page = {"type": "details", "page_size": 10_000, "columns": ["x", "cat", "t"]}  # every row: ~150 KB
    with connect(f"ws://{server}/ws/rich", max_size=None) as ws:
        for i in range(REQUESTS):
            ws.send(json.dumps({**page, "id": i}))
        time.sleep(1.5)  # the server answers until the socket's buffers are full, then waits
        ws.send("x" * (4 << 20))  # a frame four times the limit
        ids = []
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                reply = json.loads(ws.recv(timeout=30))
                assert reply["type"] == "details" and len(reply["rows"]) == rich_local.store.n_rows
                ids.append(reply["id"])
    assert ids == list(range(REQUESTS))  # none lost
    assert closed.value.rcvd is not None, "no close frame: the connection was reset"
    assert closed.value.rcvd.code == 1009
    assert f"exceeds limit of {MAX_FRAME_BYTES} bytes" in closed.value.rcvd.reason
    with connect(f"ws://{server}/ws/rich") as ws:  # the server is fine
        ws.send(json.dumps({"type": "state"}))
        assert json.loads(ws.recv(timeout=30))["type"] == "state"


def test_a_frame_over_the_limit_closes_with_1009_at_once(server):
    with connect(f"ws://{server}/ws/rich", max_size=None) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            ws.send("x" * (MAX_FRAME_BYTES + 1))
            ws.recv(timeout=30)
        assert closed.value.rcvd.code == 1009


def test_a_client_that_never_reads_is_dropped_after_the_linger(server, monkeypatch):
    """Its replies cannot be sent: LINGER seconds after the frame, the server lets go."""
    monkeypatch.setattr(transport, "LINGER", 1.0)
    with connect(f"ws://{server}/ws/rich", max_size=None, max_queue=1) as ws:
        for i in range(MAX_PENDING):
            ws.send(json.dumps({"type": "details", "page_size": 10_000, "id": i}))
        time.sleep(1.0)
        ws.send("x" * (MAX_FRAME_BYTES + 1))
        deadline = time.monotonic() + 15
        while httpx.get(f"http://{server}/health").json()["sessions"]:  # its session is freed
            assert time.monotonic() < deadline, "the connection was kept"
            time.sleep(0.1)
        ws.close_socket()
