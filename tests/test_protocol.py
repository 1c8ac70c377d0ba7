"""protocol.handle: message validation and replies, against a session on small data."""

from __future__ import annotations

import json

import duckdb
import pytest

from brushfire import Dashboard, protocol
from brushfire.spec import parse_dashboard

pytestmark = pytest.mark.spark


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


@pytest.mark.parametrize(("message", "expected"), [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "a message is a JSON object with a 'type'"),
    ({"type": "zoom"}, "does not match any of the expected tags"),
    ({"type": "brush", "view": "hx"}, "brush.interval: Field required"),
    ({"type": "brush", "view": "hx", "interval": ["a", "b", "c"]}, "brush.interval"),
    ({"type": "brush", "view": "nope", "interval": [1, 2]}, "'nope' is not a brushable view"),
    ({"type": "brush", "view": "hx", "interval": [1, 2], "extra": 1}, "Extra inputs are not permitted"),
    ({"type": "select", "view": "hx", "values": ["a"]}, "'hx' takes an interval brush"),
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
    assert state["filters"] == {"pdest": "AAA"} and set(state["views"]) == {"hx", "cat", "week"}
    cleared = handle({"type": "clear"})
    assert cleared["filters"] == {} and cleared["selected"] == dash.store.n_rows


def test_warm_up_runs_every_interaction_kind_and_leaves_no_state(dash):
    assert dash.warm_up() > 0
    fresh = dash.session()
    assert fresh.filters == {}
    assert fresh.view("hx").counts == dash.store.base.counts[dash.store.view("hx").slots].tolist()
