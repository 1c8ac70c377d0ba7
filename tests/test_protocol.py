"""protocol.handle: message validation and replies, against a session on small data."""

from __future__ import annotations

import json

import duckdb
import pytest

from brushfire import Dashboard, protocol
from brushfire.spec import parse_dashboard

spark = pytest.mark.spark  # the tests on a captured dashboard


def small_spec(path) -> dict:
    return {
        "name": "proto",
        "source": {"path": str(path)},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 4},
            {"name": "week", "type": "temporal", "field": "t", "unit": "week"},
        ],
        "interactions": {"crossfilter": [{"views": ["hx", "cat", "week"]}],
                         "highlight": [{"source": "cat", "targets": ["hx"]}],
                         "details": {"columns": ["x", "cat", "t"], "page_size": 5},
                         "parameters": [{"name": "pdest", "field": "dest"}]},
    }


@pytest.fixture(scope="module")
def dash(spark, small_parquet, tmp_path_factory):
    return Dashboard.open(parse_dashboard(small_spec(small_parquet)), spark=spark,
                          cache_dir=tmp_path_factory.mktemp("cache"))


@spark
def test_a_brush_reply_equals_the_session_result(dash):
    reply = protocol.handle(dash.session(), json.dumps(
        {"type": "brush", "id": 7, "view": "hx", "interval": [20, 55]}))
    direct = dash.session().brush("hx", (20, 55))
    assert reply["type"] == "update" and reply["id"] == 7
    assert reply["views"]["cat"]["counts"] == direct.views["cat"].counts
    assert reply["methods"] == direct.methods
    sql = (f"SELECT count(*) FROM read_parquet('{dash.spec.source.path}') "
           "WHERE x BETWEEN 20 AND 55 AND NOT isnan(x)")
    assert reply["selected"] == duckdb.connect().execute(sql).fetchall()[0][0]
    assert reply["ms"] >= 0


@spark
@pytest.mark.parametrize(("message", "expected"), [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "a message is a JSON object with a 'type'"),
    ({"type": "zoom"}, "type: unknown message type 'zoom'; messages: brush, select"),
    ({"type": "brush", "view": "hx"}, "brush.interval: missing; brush takes: view, interval, y, id"),
    ({"type": "brush", "view": "hx", "interval": ["a", "b", "c"]}, "brush.interval"),
    ({"type": "brush", "view": "nope", "interval": [1, 2]}, "brush.view: 'nope' is not a brushable view"),
    ({"type": "brush", "view": "hx", "interval": [1, 2], "extra": 1}, "brush.extra: unknown field 'extra'"),
    ({"type": "select", "view": "hx", "values": ["a"]}, "select.view: 'hx' takes an interval brush"),
    ({"type": "highlight", "source": "hx", "bars": [0]}, "no highlight from view 'hx'"),
    ({"type": "details", "page": -1}, "details.page"),
    ({"type": "brush", "id": 3, "view": "hx", "interval": [1, 2], "y": 5}, "brush.y"),
    ("x" * (protocol.MAX_MESSAGE_BYTES + 1), "over the 65,536-byte limit"),
], ids=lambda x: str(x)[:40])
def test_bad_messages_get_an_error_and_change_nothing(dash, message, expected):
    session = dash.session()
    session.brush("hx", (10, 30))
    before = {n: v.counts for n, v in session.views().items()}
    raw = message if isinstance(message, str) else json.dumps(message)
    reply = protocol.handle(session, raw)
    assert reply["type"] == "error", reply
    assert expected in reply["message"], reply["message"]
    assert {n: v.counts for n, v in session.views().items()} == before
    assert session.filters == {"hx": ((10, 30), None)}


@spark
def test_details_highlight_parameter_and_state(dash):
    session = dash.session()
    handle = lambda m: protocol.handle(session, m)  # noqa: E731
    assert handle({"type": "parameter", "name": "pdest", "value": "AAA"})["type"] == "update"
    details = handle({"type": "details", "id": "d1"})
    assert details["id"] == "d1" and len(details["rows"]) == 5
    assert details["total"] == session.count_selected()
    assert all(isinstance(r["t"], (str, type(None))) for r in details["rows"])
    hl = handle({"type": "highlight", "source": "cat", "bars": [0]})
    assert set(hl["views"]) == {"hx"}
    state = handle({"type": "state"})
    assert state["filters"] == {"pdest": {"parameter": "AAA"}} and set(state["views"]) == {"hx", "cat", "week"}
    cleared = handle({"type": "clear"})
    assert cleared["filters"] == {} and cleared["selected"] == dash.store.n_rows


@spark
def test_warm_up_runs_every_interaction_kind_and_leaves_no_state(dash):
    assert dash.warm_up() > 0
    fresh = dash.session()
    assert fresh.filters == {}
    assert fresh.view("hx").counts == dash.store.base.counts[dash.store.view("hx").slots].tolist()


# --- decoding, before any session sees a message (no Spark) -----------------------------------


@pytest.mark.parametrize(("text", "depth"), [
    ("{}", 1), ("[]", 1), ('{"a": [1, {"b": []}]}', 4), ("1", 0), ('"[[[["', 0),
    ('["\\"[[[", [1]]', 2), ('"unterminated [[[', 0), ("[" * 5000, 17), ('{"a":' * 30, 17),
    ('[1, "a\\\\", [2]]', 2),
])
def test_json_depth_skips_strings_and_stops_past_the_limit(text, depth):
    assert protocol.json_depth(text, 16) == depth


def test_json_depth_is_linear_on_unterminated_strings():
    import time

    text = '"' + '\\"' * 30_000  # every quote escaped, never closed
    t0 = time.perf_counter()
    assert protocol.json_depth(text, 16) == 0
    assert time.perf_counter() - t0 < 0.5


@pytest.mark.parametrize(("raw", "size"), [
    ("abc", 3), ("\u20ac", 3), ("\U0001f525", 4), (b"\xff\x00", 2), ("x" * 5_000_000, 5_000_000),
])
def test_message_size_is_in_bytes(raw, size):
    assert protocol.message_bytes(raw) == size


@pytest.mark.parametrize(("raw", "expected"), [
    ('{"type": "state"}', {"type": "state"}),
    (b'{"type": "state", "id": 1}', {"type": "state", "id": 1}),
    ('{"a": 10000000000000000000000}', {"a": 10**22}),  # big integers stay exact
    ('{"a": 1.5e308}', {"a": 1.5e308}),
])
def test_decode_accepts_json_objects(raw, expected):
    assert protocol.decode_message(raw) == expected


@pytest.mark.parametrize(("raw", "expected"), [
    ("[1]", "a message is a JSON object with a 'type'"),
    ('"[1]"', "a message is a JSON object"),
    ("NaN", "NaN is not a JSON number"),
    ('{"a": Infinity}', "Infinity is not a JSON number"),
    ('{"a": -2e308}', "number -2e308 is beyond the range of numbers"),
    ('{"a": ' + "9" * 5000 + "}", "not valid JSON: Exceeds the limit (4300 digits)"),
    ("[" * 100 + "]" * 100, "nests arrays and objects more than 16 deep"),
    ("\u20ac" * 21846, "message of 65,538 bytes is over the 65,536-byte limit"),
    (b"\xc3\x28", "not valid UTF-8 at byte 0"),
    ("", "not valid JSON"),
])
def test_decode_refuses_with_the_reason(raw, expected):
    with pytest.raises(protocol.ProtocolError) as e:
        protocol.decode_message(raw)
    assert expected in str(e.value)
