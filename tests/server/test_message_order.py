"""The order of a session's messages over a real server (no Spark: captured in this
process): a brush that waits is replaced by a newer one on the same view only when
nothing was sent between them, so that the session ends in the state the client's
messages, in their order, make; messages sent while the dashboard is captured are
answered once it is ready, in order, and a client leaving meanwhile ends its session."""

from __future__ import annotations

import json
import threading
import time
import types

import httpx
import numpy as np
import pyarrow as pa
import pytest
from websockets.sync.client import connect

from brushfire import Dashboard
from brushfire.capture.local import capture_table
from brushfire.plan import plan_capture
from brushfire.server import create_app, hosting
from brushfire.server.app import uvicorn_options
from brushfire.spec import parse_dashboard
from live_server import live_server


@pytest.fixture(scope="module")
def dash(tmp_path_factory) -> Dashboard:
    folder = tmp_path_factory.mktemp("order")
    rng = np.random.default_rng(3)
    n = 20_000
    table = pa.table({"x": rng.uniform(0, 100, n), "k": rng.integers(0, 100, n)})
    spec = parse_dashboard({
        "name": "order", "source": {"path": str(folder / "rows.parquet")},
        "views": [{"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
                  {"name": "hk", "type": "histogram", "field": "k", "bin": {"step": 10, "extent": [0, 100]}}],
        "interactions": {"crossfilter": [{"views": ["hx", "hk"]}],
                         "details": {"columns": ["x", "k"], "page_size": 5}}})
    plan = plan_capture(spec)
    return Dashboard(spec, plan, capture_table(plan, table, folder / "cache"))


@pytest.fixture(scope="module")
def server(dash):
    with live_server(create_app([dash]), **uvicorn_options()) as addr:
        yield addr


def answers(ws, messages: list[dict]) -> dict:
    """Send `messages` at once (the first keep the engine busy while the rest wait), then
    read every reply: {id: reply}."""
    for m in messages:
        ws.send(json.dumps(m))
    got: dict = {}
    while len(got) < len(messages):
        r = json.loads(ws.recv(timeout=30))
        got[r["id"]] = r
    return got


BUSY = [{"type": "details", "id": f"busy{i}", "page_size": 2000} for i in range(10)]


def test_a_clear_between_two_brushes_is_not_overtaken_by_the_second(server):
    """brush A, clear, brush B on one view, sent while the engine was busy: B took A's
    place in the queue, before the clear, which then cleared B: the session ended with no
    brush (and the replies came B before the clear) where the client's last word was B."""
    with connect(f"ws://{server}/ws/order") as ws:
        got = answers(ws, [*BUSY, {"type": "brush", "id": "A", "view": "hx", "interval": [10, 20]},
                           {"type": "clear", "id": "C", "view": "hx"},
                           {"type": "brush", "id": "B", "view": "hx", "interval": [30, 40]},
                           {"type": "state", "id": "S"}])
    assert got["S"]["filters"] == {"hx": {"interval": [30, 40]}}
    assert got["C"]["type"] == "update" and got["B"]["type"] == "update"


def test_brushes_sent_back_to_back_are_still_coalesced(server):
    with connect(f"ws://{server}/ws/order") as ws:
        got = answers(ws, [*BUSY, *({"type": "brush", "id": i, "view": "hx", "interval": [i, 50 + i]}
                                    for i in range(20)),
                           {"type": "state", "id": "S"}])
    assert got[19]["type"] == "update" and got["S"]["filters"] == {"hx": {"interval": [19, 69]}}
    assert sum(got[i]["type"] == "skipped" for i in range(19)) >= 10  # (the engine was busy)


def test_a_malformed_brush_replaces_no_brush_waiting_before_it(server):
    """A brush waiting its turn was replaced by a newer brush of the same view even when
    the newer one was malformed: the waiting one was answered 'skipped', the newer one an
    error, and the view was left without the brush the client had set."""
    with connect(f"ws://{server}/ws/order") as ws:
        got = answers(ws, [*BUSY, {"type": "brush", "id": "A", "view": "hx", "interval": [10, 20]},
                           {"type": "brush", "id": "B", "view": "hx", "interval": "wide"},
                           {"type": "state", "id": "S"}])
    assert got["A"]["type"] == "update" and got["B"]["type"] == "error", got
    assert got["S"]["filters"] == {"hx": {"interval": [10, 20]}}


def test_a_client_leaving_while_the_dashboard_is_captured_ends_its_session_at_once(dash, monkeypatch):
    """Nothing was read from a client until the dashboard was ready: one that left
    during the capture held its session (the sessions in /health, the per-client limit)
    until the capture ended, however long. Messages sent meanwhile are still answered once
    it is ready, in order."""
    gate = threading.Event()

    def slow_open(spec, **_):
        gate.wait(30)
        return dash

    monkeypatch.setattr(hosting, "Dashboard", types.SimpleNamespace(open=slow_open))
    host = hosting.HostedDashboard.opening(dash.spec, cache_dir=None, warm=False)
    with live_server(create_app([host]), **uvicorn_options()) as addr:
        def sessions() -> int:
            return httpx.get(f"http://{addr}/health").json()["sessions"]

        with connect(f"ws://{addr}/ws/order") as ws:
            ws.send(json.dumps({"type": "brush", "id": 1, "view": "hx", "interval": [10, 20]}))
            ws.send("not json")
            ws.send(json.dumps({"type": "state", "id": 2}))
            with connect(f"ws://{addr}/ws/order") as leaving:
                assert json.loads(leaving.recv(timeout=10))["type"] == "progress"
            deadline = time.monotonic() + 5
            while sessions() != 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert sessions() == 1
            gate.set()
            replies = []
            while not replies or replies[-1].get("id") != 2:
                replies.append(json.loads(ws.recv(timeout=30)))
        assert [(r["type"], r.get("id")) for r in replies if r["type"] != "progress"] == \
            [("ready", None), ("update", 1), ("error", None), ("state", 2)]
        assert replies[-1]["filters"] == {"hx": {"interval": [10, 20]}}


@pytest.mark.parametrize("bad", [{"interval": ["a", 20]}, {"interval": [1, 2], "y": [0, 1]}])
def test_a_brush_the_view_refuses_replaces_no_brush_waiting_before_it(server, bad):
    """A brush well-formed but refused by its view (a bound that is no number, a y on a
    histogram) still took the place of a brush of the same view waiting its turn: that one
    was answered 'skipped', this one an error, and the view was left without the brush the
    client had set."""
    with connect(f"ws://{server}/ws/order") as ws:
        got = answers(ws, [*BUSY, {"type": "brush", "id": "A", "view": "hx", "interval": [10, 20]},
                           {"type": "brush", "id": "B", "view": "hx", **bad},
                           {"type": "state", "id": "S"}])
    assert got["A"]["type"] == "update" and got["B"]["type"] == "error", got
    assert got["S"]["filters"] == {"hx": {"interval": [10, 20]}}


def test_a_malformed_filter_message_cancels_no_lazy_answer(server, monkeypatch):
    """A filter message (brush, select, clear, ...) arriving while a lazy answer runs on
    Spark cancels it, as the next interaction; a malformed one did too, though it changes
    nothing (its error): the answer came back cancelled and its views stale. (The answer
    is made slow here, and the session's `interrupt` recorded.)"""
    from brushfire.lazy import LazySession
    from brushfire.server import app as server_app

    deadline = time.monotonic() + 10  # (a session closing calls interrupt too: the earlier tests' first)
    while httpx.get(f"http://{server}/health").json()["sessions"] and time.monotonic() < deadline:
        time.sleep(0.05)
    interrupted = []
    monkeypatch.setattr(LazySession, "interrupt", lambda self: interrupted.append(1))
    handled = server_app._handled

    def slowly(session, payload):
        if payload.get("id") == "slow":
            time.sleep(1.0)
        return handled(session, payload)

    monkeypatch.setattr(server_app, "_handled", slowly)
    bad = [{"type": "brush", "id": "b1", "view": "hx", "interval": "wide"},
           {"type": "brush", "id": "b2", "view": "hx", "interval": ["a", 2]},
           {"type": "select", "id": "b3", "view": "hx", "values": "c"},
           {"type": "clear", "id": "b4", "view": 3},
           {"type": "parameter", "id": "b5"}]
    def while_slow(ws, messages: list[dict]) -> dict:
        ws.send(json.dumps({"type": "state", "id": "slow"}))
        time.sleep(0.3)  # (being answered)
        got = answers(ws, messages)
        while "slow" not in got or any(m["id"] not in got for m in messages):
            r = json.loads(ws.recv(timeout=30))
            got[r["id"]] = r
        return got

    with connect(f"ws://{server}/ws/order") as ws:
        got = while_slow(ws, bad)
        assert all(got[m["id"]]["type"] == "error" for m in bad), got
        assert interrupted == []
        got = while_slow(ws, [{"type": "brush", "id": "ok", "view": "hx", "interval": [10, 20]}])
        assert got["ok"]["type"] == "update" and interrupted == [1]
