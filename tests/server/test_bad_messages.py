"""Issue 12's protocol defects, over a real uvicorn server and real WebSocket clients: each
bad message gets an `error` reply naming what is wrong, the connection stays open, the
session's state is unchanged, and sessions are freed when their clients leave."""

from __future__ import annotations

import contextlib
import json
import time

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from brushfire import protocol
from brushfire.server import create_app
from brushfire.server.app import MAX_FRAME_BYTES, Limits, uvicorn_options
from live_server import live_server

pytestmark = pytest.mark.spark

BIG = "1" + "0" * 400  # an integer literal beyond the float range
SET_UP = [{"type": "brush", "view": "hx", "interval": [20, 60]},
          {"type": "select", "view": "cat", "values": ["c01"]}]


@pytest.fixture(scope="module")
def server(rich_dash):
    with live_server(create_app([rich_dash]), **uvicorn_options()) as addr:
        yield addr


def ask(ws, message) -> dict:
    ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
    return json.loads(ws.recv(timeout=30))


def brush(view: str, interval: str, y: str | None = None) -> str:
    """A brush message as raw JSON text (so literals Python cannot make stay literal)."""
    extra = f', "y": {y}' if y else ""
    return f'{{"type": "brush", "id": 9, "view": "{view}", "interval": {interval}{extra}}}'


BAD = [
    # temporal bounds: unparsable, impossible, numbers
    (brush("week", '["yesterday", null]'),
     "brush on view 'week': interval[0]: 'yesterday' is not an ISO time; write e.g. 2021-03-01"),
    (brush("week", '["2009-13-01", null]'), "brush on view 'week': interval[0]: '2009-13-01' is not an ISO time"),
    (brush("week", '[null, "2021-02-30T00:00:00"]'), "interval[1]: '2021-02-30T00:00:00' is not an ISO time"),
    (brush("week", "[1, 2]"), "interval[0]: 1 is a number, not a time; temporal bounds are ISO times"),
    (brush("week", '["2021-01-01", true]'), "interval[1]: true is a boolean, not a time"),
    ('{"type": "parameter", "name": "pt", "value": "noon"}', "parameter 'pt': 'noon' is not an ISO time"),
    ('{"type": "parameter", "name": "pt", "value": 1612137600000000}', "parameter 'pt': 1612137600000000 is a number"),
    # categories and dropdown values
    ('{"type": "select", "view": "cat", "values": ["c01", "zzz"]}',
     "select on view 'cat': values[1]: 'zzz' is not one of the values: 'c0"),
    ('{"type": "select", "view": "cat", "values": ["C02"]}', "did you mean 'c02'?"),
    ('{"type": "select", "view": "cat", "values": [3]}', "values[0]: 3 is not one of the values"),
    ('{"type": "parameter", "name": "pdest", "value": 3}',
     "parameter 'pdest': 3 is not one of the values: '"),
    ('{"type": "parameter", "name": "pdest", "value": "sideways"}', "parameter 'pdest': 'sideways' is not one"),
    ('{"type": "parameter", "name": "pdest", "value": "aaa"}', "did you mean 'AAA'?"),
    # integers beyond the float range, in every kind of bound
    (brush("hx", f"[{BIG}, null]"), "brush on view 'hx': interval[0]: an integer of 401 digits is beyond"),
    (brush("hk", f"[null, -{BIG}]"), "brush on view 'hk': interval[1]: an integer of 401 digits"),
    (brush("heat", "[0, 50]", f"[{BIG}, null]"), "brush on view 'heat': y[0]: an integer of 401 digits"),
    (f'{{"type": "parameter", "name": "pm", "value": {BIG}}}', "parameter 'pm': an integer of 401 digits"),
    # non-finite numbers
    (brush("hx", "[NaN, 1]"), "not valid JSON: NaN is not a JSON number"),
    (brush("hx", "[-Infinity, 1]"), "-Infinity is not a JSON number"),
    (brush("hx", "[1e400, null]"), "number 1e400 is beyond the range of numbers"),
    ('{"type": "parameter", "name": "pm", "value": -1E+999}', "beyond the range of numbers"),
    # huge page numbers, bad pages
    ('{"type": "details", "view": "hx", "page": 1000000000000000000000000000000}',
     "details.page: 1000000000000000000000000000000 is over 2,147,483,647"),
    ('{"type": "details", "page_size": 10001}', "details.page_size: 10001 is over 10,000"),
    ('{"type": "details", "page": -1}', "details.page: -1 is below 0"),
    ('{"type": "highlight", "source": "cat", "bars": [1000000000000000000000000000000]}', "highlight.bars[0]: 1000000000000000000000000000000 is not a bar of view 'cat'"),
    ('{"type": "details", "view": "hx", "bars": [-1]}', "details.bars[0]: -1 is not a bar of view 'hx'"),
    # wrong types, unknown names
    ('{"type": "brush", "view": 5, "interval": [1, 2]}', "brush.view: 5 is not a view's name (a string)"),
    ('{"type": "select", "view": "cat", "values": "c01"}', "select.values: 'c01' is not a list of values"),
    ('{"type": "brush", "view": "hx", "interval": {"lo": 1}}', "brush.interval"),
    ('{"type": "state", "id": {"nested": true}}', "id"),
    ('{"type": 7}', "type"),
    ('{"type": "brush", "view": "\\u0000\u00e9\U0001f525", "interval": [1, 2]}', "is not a brushable view"),
    ('{"type": "clear", "view": "nope"}', "clear.view: 'nope' is not a brushable view or parameter"),
    # a whole state: all or nothing, the bad entry named
    ('{"type": "filters", "filters": {"hk": {"interval": [0, 50]}, "week": {"interval": ["soon", null]}}}',
     "filters.week.interval[0]: 'soon' is not an ISO time"),
    ('{"type": "filters", "filters": {"hx": [1, 2]}}', "filters.hx: [1, 2] is not a tagged filter"),
    ('"just a string"', "a message is a JSON object with a 'type'"),
    ("", "not valid JSON"),
    # depth and size
    ("[" * 5000, "message nests arrays and objects more than 16 deep"),
    ('{"a":' * 5000 + "1" + "}" * 5000, "more than 16 deep"),
    ('{"type": "state", "x": "' + "[" * 60_000 + '"}', "state.x: unknown field 'x'"),  # brackets in a string
    ('"' + "\u20ac" * 40_000 + '"', "message of 120,002 bytes is over the 65,536-byte limit"),
    (b"\xff\xfe{}", "not valid UTF-8 at byte 0"),
    (b'{"type": "state", "id": "b"}' + b" " * 70_000, "message of 70,028 bytes is over"),
]


def test_every_bad_message_gets_a_clear_error_and_changes_nothing(server):
    with connect(f"ws://{server}/ws/rich", max_size=None) as ws:
        for m in SET_UP:
            assert ask(ws, m)["type"] == "update"
        before = ask(ws, {"type": "state"})
        for message, expected in BAD:
            reply = ask(ws, message)
            assert reply["type"] == "error", (message[:80], reply)
            assert expected in reply["message"], (message[:80], reply["message"])
        after = ask(ws, {"type": "state"})
        assert after["filters"] == before["filters"] == {"hx": {"interval": [20, 60]}, "cat": {"values": ["c01"]}}
        assert after["views"] == before["views"]


def test_the_error_echoes_the_id_when_it_can(server):
    with connect(f"ws://{server}/ws/rich") as ws:
        assert ask(ws, brush("week", '["yesterday", null]'))["id"] == 9
        assert ask(ws, {"type": "select", "id": "s1", "view": "cat", "values": ["zzz"]})["id"] == "s1"
        assert ask(ws, {"type": "details", "id": 4, "page": 10**30})["id"] == 4


@pytest.mark.parametrize("message", [
    {"type": "brush", "view": "week", "interval": ["2021-01-01", "2021-01-01T00:00:00.0000009Z"]},
    {"type": "brush", "view": "hx", "interval": [60, 20]},  # lo > hi: selects nothing
    {"type": "brush", "view": "hx", "interval": [-(10**300), 10**300]},
    {"type": "brush", "view": "hk", "interval": [2**70, None]},
    {"type": "select", "view": "cat", "values": ["(other)", "c01"]},
    {"type": "select", "view": "cat", "values": []},
    {"type": "parameter", "name": "pm", "value": -(10**300)},
    {"type": "parameter", "name": "pt", "value": "1900-01-01"},
    {"type": "details", "page": 2**31 - 1, "page_size": 10_000},  # past the end: no rows
], ids=lambda m: json.dumps(m)[:60])
def test_valid_values_that_match_no_row_are_answered_normally(server, message):
    with connect(f"ws://{server}/ws/rich") as ws:
        reply = ask(ws, message)
        assert reply["type"] in ("update", "details"), reply
        if reply["type"] == "details":
            assert reply["rows"] == []


def test_a_category_excluded_by_another_filter_is_answered_normally(server, rich_dash):
    """A valid category whose rows another filter removes: an update with zero rows."""
    session = rich_dash.session()
    labels = rich_dash.store.view("cat").labels
    with connect(f"ws://{server}/ws/rich") as ws:
        assert ask(ws, {"type": "brush", "view": "hx", "interval": [1000, 2000]})["selected"] == 0
        reply = ask(ws, {"type": "select", "view": "cat", "values": [labels[0]]})
        assert reply["type"] == "update" and reply["selected"] == 0
    assert session.filters == {}


def test_a_deeply_nested_message_no_longer_wedges_the_session(server):
    with connect(f"ws://{server}/ws/rich") as ws:
        for _ in range(3):
            assert "more than 16 deep" in ask(ws, "[" * 5000)["message"]
        assert ask(ws, {"type": "brush", "view": "hx", "interval": [0, 50]})["type"] == "update"


def test_clients_that_leave_free_their_sessions(server):
    with contextlib.ExitStack() as stack:
        clients = [stack.enter_context(connect(f"ws://{server}/ws/rich")) for _ in range(20)]
        for ws in clients:
            ws.send("[" * 5000)
        for ws in clients:
            assert json.loads(ws.recv(timeout=30))["type"] == "error"
        assert httpx.get(f"http://{server}/health").json()["sessions"] >= 20
    deadline = time.monotonic() + 10
    while httpx.get(f"http://{server}/health").json()["sessions"] > 0:
        assert time.monotonic() < deadline, "sessions were not freed"
        time.sleep(0.05)


def test_a_frame_over_the_transport_limit_closes_with_1009(server):
    """Over 64 KiB: an error reply. Over MAX_FRAME_BYTES (`brushfire serve`'s 1 MiB; a bare
    uvicorn's is 16 MiB): the server closes the connection with 1009, message too big."""
    with connect(f"ws://{server}/ws/rich", max_size=None) as ws:
        assert "over the 65,536-byte limit" in ask(ws, "x" * (MAX_FRAME_BYTES - 100))["message"]
        with pytest.raises(ConnectionClosed) as closed:  # on sending it, or after
            ws.send("x" * (MAX_FRAME_BYTES + 1024))
            ws.recv(timeout=30)
        # the close frame, never a reset (server/transport.py reads the frame's bytes)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    with connect(f"ws://{server}/ws/rich") as ws:  # the server is fine
        assert ask(ws, {"type": "state"})["type"] == "state"


def test_session_limits_close_with_4429_and_free_on_leave(rich_dash):
    app = create_app([rich_dash], limits=Limits(max_sessions=3, max_sessions_per_client=2))
    with live_server(app) as addr, contextlib.ExitStack() as stack:
        a, b = (stack.enter_context(connect(f"ws://{addr}/ws/rich")) for _ in range(2))
        for ws in (a, b):
            assert ask(ws, {"type": "state"})["type"] == "state"
        with connect(f"ws://{addr}/ws/rich") as c:
            reply = json.loads(c.recv(timeout=30))
            assert reply["type"] == "error" and "too many sessions from 127.0.0.1: at most 2" in reply["message"]
            with pytest.raises(ConnectionClosed) as closed:
                c.recv(timeout=30)
            assert closed.value.rcvd.code == 4429
        a.close()
        deadline = time.monotonic() + 10
        while True:  # a's session is freed: a new one opens
            with connect(f"ws://{addr}/ws/rich") as d:
                if ask(d, {"type": "state"})["type"] == "state":
                    break
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_protocol_handle_never_raises(rich_dash):
    """Whatever Python hands it, including what JSON cannot carry."""
    session = rich_dash.session()
    for raw in [None, 3, [1], {"type": "brush", "view": "hx", "interval": [float("nan"), 1]},
                {"type": "brush", "view": "hx", "interval": [object(), 1]}, b"\x00" * 10,
                {"type": "select", "view": "cat", "values": [[1]]}, {"type": "parameter", "name": "pdest",
                                                                    "value": float("inf")}]:
        reply = protocol.handle(session, raw)
        assert reply["type"] == "error", (raw, reply)
    assert session.filters == {}


@pytest.mark.slow  # a cubes-only capture
def test_cubes_only_dashboards_check_values_the_same_way(spark, small_parquet):
    """Memory-budget mode keeps no per-row lineage; its sessions' values are checked
    against the cubes' keys, with the same messages."""
    from brushfire import Dashboard
    from brushfire.spec import parse_dashboard
    from server.conftest import rich_spec

    spec = rich_spec(small_parquet)
    spec["views"] = [v for v in spec["views"] if v["type"] != "heatmap"]  # rect: per-row only
    spec["interactions"]["crossfilter"] = [{"views": [v["name"] for v in spec["views"]]}]
    spec["interactions"].pop("highlight")
    spec["interactions"].pop("details")
    dash = Dashboard.open(parse_dashboard(spec), spark=spark, cache_dir=None, memory_budget="1KB")
    assert dash.mode == "cubes"
    session = dash.session()
    cases = [(m, e) for m, e in BAD if isinstance(m, str) and "heat" not in m and "details" not in m
             and "highlight" not in m]
    for message, expected in cases:
        reply = protocol.handle(session, message)
        assert reply["type"] == "error" and expected in reply["message"], (message[:80], reply)
        assert session.filters == {}
    assert protocol.handle(session, {"type": "select", "view": "cat", "values": ["c01"]})["type"] == "update"
