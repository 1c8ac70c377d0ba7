"""The server over real HTTP and WebSockets: a uvicorn server on loopback, real clients."""

from __future__ import annotations

import json
import os

import httpx
import pytest
from websockets.sync.client import connect

from brushfire import Dashboard
from brushfire.server import create_app
from brushfire.server.hosting import HostedDashboard
from brushfire.spec import parse_dashboard
from live_server import live_server
from test_protocol import small_spec

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def server(spark, small_parquet, tmp_path_factory):
    dash = Dashboard.open(parse_dashboard(small_spec(small_parquet)), spark=spark,
                          cache_dir=tmp_path_factory.mktemp("cache"))
    with live_server(create_app([dash])) as addr:
        yield addr, dash


def ask(ws, message) -> dict:
    ws.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(ws.recv(timeout=30))


def test_http_endpoints(server):
    addr, dash = server
    health = httpx.get(f"http://{addr}/health").json()
    assert health | {"memory": None} == {"status": "ok", "sessions": 0, "dashboards": {"proto": "ready"},
                                         "memory": None, "worker": {"pid": os.getpid(), "of": 1}}
    assert set(health["memory"]) == {"conditional_cubes", "key_copies", "details_orders", "process"}  # tests/server/test_sessions.py
    rss = health["memory"]["process"]  # Linux: /proc/self/status
    assert rss["rss"] >= rss["anon"] > 10 << 20 and rss["file"] > 0
    assert httpx.get(f"http://{addr}/api/dashboards").json()[0]["rows"] == dash.store.n_rows
    d = httpx.get(f"http://{addr}/api/dashboards/proto").json()
    assert d["status"] == "ready"
    assert [v["name"] for v in d["views"]] == ["hx", "cat", "week"]
    assert d["views"][0]["counts"] == dash.session().view("hx").counts
    spec = d["views"][0]["spec"]  # Vega-Lite from Altair, with the full-data bars inline
    assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/v6")
    assert [r["full"] for r in spec["datasets"]["bars"]] == dash.session().view("hx").values
    assert spec["params"][0]["name"] == "brush"
    assert d["parameters"][0]["values"][:1] and d["details"]["page_size"] == 5
    missing = httpx.get(f"http://{addr}/api/dashboards/nope")
    assert missing.status_code == 404 and "no dashboard named 'nope'" in missing.text


def test_bad_input_keeps_the_connection_and_the_state(server):
    addr, dash = server
    with connect(f"ws://{addr}/ws/proto") as ws:
        first = ask(ws, {"type": "brush", "id": 1, "view": "hx", "interval": [20, 60]})
        assert first["type"] == "update" and first["id"] == 1
        for bad in ["{oops", {"type": "warp"}, {"type": "brush", "view": "zz", "interval": [0, 1]},
                    {"type": "brush", "view": "hx", "interval": "wide"}, "y" * 70_000]:
            assert ask(ws, bad)["type"] == "error"
        ws.send(b'{"type": "state"}')  # a binary frame is read as UTF-8 text
        state = json.loads(ws.recv(timeout=30))
        assert state["filters"] == {"hx": {"interval": [20, 60]}}
        assert state["views"]["cat"]["counts"] == first["views"]["cat"]["counts"]


def test_concurrent_sessions_stay_separate(server):
    addr, dash = server
    with connect(f"ws://{addr}/ws/proto") as a, connect(f"ws://{addr}/ws/proto") as b:
        ra = ask(a, {"type": "brush", "view": "hx", "interval": [0, 30]})
        rb = ask(b, {"type": "select", "view": "cat", "values": ["c00"]})
        assert ask(a, {"type": "state"})["filters"] == {"hx": {"interval": [0, 30]}}
        assert ask(b, {"type": "state"})["filters"] == {"cat": {"values": ["c00"]}}
        assert ra["views"]["cat"]["counts"] == dash.session().brush("hx", (0, 30)).views["cat"].counts
        assert rb["views"]["hx"]["counts"] == dash.session().select("cat", ["c00"]).views["hx"].counts


def test_a_fast_drag_is_coalesced_and_every_message_answered(server):
    addr, dash = server
    n = 200
    with connect(f"ws://{addr}/ws/proto") as ws:
        for i in range(n):
            ws.send(json.dumps({"type": "brush", "id": i, "view": "hx", "interval": [i / 4, 40 + i / 4]}))
        replies = [json.loads(ws.recv(timeout=30)) for _ in range(n)]
    assert sorted(r["id"] for r in replies) == list(range(n))  # each id answered once
    updates = [r for r in replies if r["type"] == "update"]
    assert {r["type"] for r in replies} <= {"update", "skipped"}
    last = max(updates, key=lambda r: r["id"])
    assert last["id"] == n - 1  # the latest brush always wins
    expected = dash.session().brush("hx", ((n - 1) / 4, 40 + (n - 1) / 4)).views["cat"].counts
    assert last["views"]["cat"]["counts"] == expected


def test_an_unknown_dashboard_is_refused_with_a_reason(server):
    addr, _ = server
    with connect(f"ws://{addr}/ws/nope") as ws:
        reply = json.loads(ws.recv(timeout=30))
    assert reply["type"] == "error" and "no dashboard named 'nope'" in reply["message"]


def test_clients_see_capture_progress_then_the_dashboard(spark, small_parquet, tmp_path):
    spec = parse_dashboard(small_spec(small_parquet))
    host = HostedDashboard.opening(spec, cache_dir=tmp_path, spark=spark)
    with live_server(create_app([host])) as addr, connect(f"ws://{addr}/ws/proto") as ws:
        status = httpx.get(f"http://{addr}/api/dashboards/proto").json()
        assert status["status"] in ("capturing", "ready")
        seen = []
        while (msg := json.loads(ws.recv(timeout=120)))["type"] == "progress":
            seen.append(msg)
        assert msg == {"type": "ready", "rows": 3000}
        assert seen and all(0 <= (m["fraction"] or 0) <= 1 for m in seen)
        assert any(m["stage"] != "starting" for m in seen)  # real stages, not only the first
        assert ask(ws, {"type": "select", "id": 1, "view": "cat", "values": ["c01"]})["type"] == "update"
        assert httpx.get(f"http://{addr}/api/dashboards/proto").json()["status"] == "ready"


def test_a_failing_capture_is_reported_to_clients(small_parquet, tmp_path):
    spec = parse_dashboard(small_spec(small_parquet) | {"source": {"path": str(tmp_path / "gone.parquet")}})
    host = HostedDashboard.opening(spec, cache_dir=tmp_path)
    assert host.wait(60)
    with live_server(create_app([host])) as addr, connect(f"ws://{addr}/ws/proto") as ws:
        msg = json.loads(ws.recv(timeout=30))
        assert msg["type"] == "failed" and "gone.parquet" in msg["message"]
        status = httpx.get(f"http://{addr}/api/dashboards/proto").json()
        assert status["status"] == "failed" and "gone.parquet" in status["error"]
        assert httpx.get(f"http://{addr}/health").json()["dashboards"] == {"proto": "failed"}


@pytest.mark.parametrize("leaves_after", [None, 0.0, 0.001])
def test_a_rows_download_closes_its_session_even_when_its_client_leaves_before_the_first_chunk(
        rich_local, monkeypatch, leaves_after):
    """uvicorn's ASGI 2.3 streams a response while it listens for the client leaving, and
    cancels the stream when it does: before the first chunk, the generator whose
    `finally` closed the export's session had not begun, and the session (its filters,
    the cubes it schedules after a pause) stayed open."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    opened = []
    session = type(rich_local).session
    monkeypatch.setattr(type(rich_local), "session", lambda self, *a, **k: opened.append(session(self, *a, **k))
                        or opened[-1])
    app = create_app([rich_local])
    query = "filters=" + json.dumps({"hx": {"interval": [20, 60]}})
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": "GET", "scheme": "http", "path": "/api/dashboards/rich/rows",
             "raw_path": b"/api/dashboards/rich/rows", "query_string": query.encode(), "root_path": "",
             "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 5), "server": ("127.0.0.1", 80)}
    sent = []

    async def receive():
        if leaves_after is None:  # (stays: the whole download is sent)
            await asyncio.Event().wait()
        await asyncio.sleep(leaves_after)
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)
        await asyncio.sleep(0.01)

    # on a thread of its own: a test before this one may leave this thread's loop running
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, asyncio.wait_for(app(scope, receive, send), 60)).result(70)
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    if leaves_after is None:
        assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    (s,) = opened
    assert getattr(s, "inner", s)._closed  # (at once: not when the collector finds the stream)
