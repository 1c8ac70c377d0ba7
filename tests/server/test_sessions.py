"""What a session leaves behind on a real server (issue 36, defect 1): short sessions that
brush and leave, as many users do, must not leave background work or memory behind them;
`/health` reports what the engine's budgets hold. Without Spark (capture/local.py)."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from websockets.sync.client import connect

from brushfire.engine import memory, parallel
from brushfire.engine import session as S
from brushfire.server import create_app
from brushfire.server.app import uvicorn_options
from live_server import live_server


@pytest.fixture
def server(rich_local, monkeypatch):
    monkeypatch.setattr(memory, "_CUBES", memory.Budget(1 << 30))  # this test's sessions only
    with live_server(create_app([rich_local]), **uvicorn_options()) as addr:
        yield addr


def ask(ws, message: dict) -> dict:
    ws.send(json.dumps(message))
    return json.loads(ws.recv(timeout=30))


def tile_jobs() -> list:
    return [j for j in parallel.pool()._jobs if hasattr(j, "tile_key") and not j.cancelled]


def test_sessions_that_brush_and_leave_leave_no_work_and_no_cubes(server):
    """Each brushes under several filters (the engine prepares conditional cubes for the next
    brush after a pause) and leaves at once: none of that work may run for it afterwards."""
    for i in range(12):
        with connect(f"ws://{server}/ws/rich") as ws:
            for m in ({"type": "select", "view": "cat", "values": ["c00", "c01"]},
                      {"type": "brush", "view": "hk", "interval": [0, 60 + i]},
                      {"type": "brush", "view": "hx", "interval": [10, 70 - i]}):
                assert ask(ws, m)["type"] == "update"
            if i % 3 == 0:  # some pause before leaving: speculation starts its builds
                time.sleep(S.IDLE_SECONDS + 0.1)
    deadline = time.monotonic() + 10
    while httpx.get(f"http://{server}/health").json()["sessions"]:
        assert time.monotonic() < deadline, "sessions were not closed"
        time.sleep(0.02)
    time.sleep(S.IDLE_SECONDS + parallel.QUIET + 0.3)  # when a left session would speculate
    health = httpx.get(f"http://{server}/health").json()
    assert health["memory"]["conditional_cubes"] == {"bytes": 0, "budget": 1 << 30, "structures": 0}
    assert health["memory"]["key_copies"]["budget"] > 0
    assert not tile_jobs()


def test_health_reports_the_cubes_of_open_sessions(server):
    with connect(f"ws://{server}/ws/rich") as ws:
        for m in ({"type": "select", "view": "cat", "values": ["c00", "c01"]},
                  {"type": "brush", "view": "hk", "interval": [0, 60]},
                  {"type": "brush", "view": "hx", "interval": [10, 70]}):
            assert ask(ws, m)["type"] == "update"
        deadline = time.monotonic() + 10
        while not (cubes := httpx.get(f"http://{server}/health").json()["memory"]["conditional_cubes"])["bytes"]:
            assert time.monotonic() < deadline, "no conditional cube was prepared"
            time.sleep(0.05)
        assert 0 < cubes["bytes"] <= cubes["budget"] and cubes["structures"] >= 1
    deadline = time.monotonic() + 10
    while httpx.get(f"http://{server}/health").json()["memory"]["conditional_cubes"]["bytes"]:
        assert time.monotonic() < deadline, "the closed session's cubes were kept"
        time.sleep(0.05)


def test_answering_a_message_leaves_no_reference_cycles(server):
    """Cycles are freed only by the collector, whose whole-process collections stop every
    session: answering messages (the event loop's part and the engine's) makes none."""
    import gc

    with connect(f"ws://{server}/ws/rich") as ws:
        for i in range(5):  # code paths warmed
            assert ask(ws, {"type": "brush", "view": "hx", "interval": [i, 60]})["type"] == "update"
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for i in range(100):
                assert ask(ws, {"type": "brush", "view": "hx", "interval": [i % 30, 60]})["type"] == "update"
            gc.collect()
            garbage = [type(o).__name__ for o in gc.garbage]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
    assert garbage == []
