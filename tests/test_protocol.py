"""protocol.handle: message validation and replies, against a session on small data."""

from __future__ import annotations

import datetime as dt
import json

import duckdb
import numpy as np
import pytest

from brushfire import Dashboard, protocol, wire
from brushfire.spec import parse_dashboard
from brushfire.views import key_sql, view_type

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
    ("x" * (wire.MAX_MESSAGE_BYTES + 1), "over the 65,536-byte limit"),
], ids=lambda x: str(x)[:40])
def test_bad_messages_get_an_error_and_change_nothing(dash, message, expected):
    session = dash.engine_session()  # its refusals (the lazy answers: test_lazy.py)
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


def sql_bars_of(con, spec, view: str, rids: list[int]) -> set:
    """The bar keys SQL puts rows `rids` (positions in the source) in, for `view`."""
    from brushfire import sql

    v = spec.view(view)
    top = ([r[0] for r in con.execute(sql.top_sql(v)).fetchall()]
           if view_type(v).value_bars else None)
    key = key_sql(v, top)
    got = con.execute(f"SELECT DISTINCT {key} FROM (SELECT *, row_number() OVER () - 1 AS rid "
                      f"FROM src) WHERE rid IN ({', '.join(map(str, rids))})").fetchall()
    return {r[0] for r in got} - {None}


@spark
def test_forward_of_a_details_row_gives_its_bar_in_every_view(dash):
    session = dash.session()
    session.brush("hx", (20, 55))
    rows = protocol.handle(session, {"type": "details", "page": 1})["rows"]
    con = duckdb.connect()
    con.execute(f"CREATE VIEW src AS SELECT * FROM read_parquet('{dash.spec.source.path}')")
    for row in rows[:3]:
        reply = protocol.handle(session, {"type": "forward", "id": 4, "rids": [row["rid"]]})
        assert reply["type"] == "forward" and reply["id"] == 4 and reply["rids"] == [row["rid"]]
        assert reply["pruned"] == [] and "note" not in reply
        for view, bars in reply["views"].items():
            v = dash.spec.view(view)
            keys = dict(enumerate(view_type(v).label_keys(v, dash.store.view(view).labels)))
            assert {keys[b] for b in bars} == sql_bars_of(con, dash.spec, view, [row["rid"]]), view
            assert len(bars) == 1  # a row passing every filter is in one bar of each view
    both = protocol.handle(session, {"type": "forward", "rids": [r["rid"] for r in rows]})
    assert all(len(b) >= 1 for b in both["views"].values())
    bad = protocol.handle(session, {"type": "forward", "rids": [dash.store.n_rows]})
    assert bad["type"] == "error"
    assert bad["message"] == "forward.rids[0]: 3000 is not a row id; row ids are 0 to 2,999"


@spark
def test_forward_says_which_views_were_pruned(spark, small_parquet, tmp_path):
    spec = small_spec(small_parquet)
    spec["views"].append({"name": "lonely", "type": "histogram", "field": "k",
                          "bin": {"step": 10, "extent": [0, 100]}})
    del spec["interactions"]["details"]  # else every view's bars map back to rows
    del spec["interactions"]["parameters"]  # else they filter every view (`lonely` too)
    dash = Dashboard.open(parse_dashboard(spec), spark=spark, cache_dir=tmp_path)
    reply = protocol.handle(dash.session(), {"type": "forward", "rids": [0, 1, 2]})
    kept = [v.name for v in dash.store.views if v.code_dims]
    assert sorted(reply["views"]) == sorted(kept)
    assert reply["pruned"] == [v for v in ("hx", "cat", "week", "lonely") if v not in kept]
    if reply["pruned"]:
        assert reply["note"].startswith("bars per row were not captured for lonely")


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
    assert wire.json_depth(text, 16) == depth


def test_json_depth_is_linear_on_unterminated_strings():
    import time

    text = '"' + '\\"' * 30_000  # every quote escaped, never closed
    t0 = time.perf_counter()
    assert wire.json_depth(text, 16) == 0
    assert time.perf_counter() - t0 < 0.5


@pytest.mark.parametrize(("raw", "size"), [
    ("abc", 3), ("\u20ac", 3), ("\U0001f525", 4), (b"\xff\x00", 2), ("x" * 5_000_000, 5_000_000),
])
def test_message_size_is_in_bytes(raw, size):
    assert wire.message_bytes(raw) == size


@pytest.mark.parametrize(("raw", "expected"), [
    ('{"type": "state"}', {"type": "state"}),
    (b'{"type": "state", "id": 1}', {"type": "state", "id": 1}),
    ('{"a": 10000000000000000000000}', {"a": 10**22}),  # big integers stay exact
    ('{"a": 1.5e308}', {"a": 1.5e308}),
])
def test_decode_accepts_json_objects(raw, expected):
    assert wire.decode_message(raw) == expected


@pytest.mark.parametrize(("raw", "expected"), [
    ("[1]", "a message is a JSON object with a 'type'"),
    ('"[1]"', "a message is a JSON object"),
    ("NaN", "NaN is not a JSON number"),
    ('{"a": Infinity}', "Infinity is not a JSON number"),
    ('{"a": -2e308}', "number -2e308 is beyond the range of numbers"),
    ('{"a": ' + "9" * 5000 + "}", "of 5,000 digits is beyond the range of numbers (±1.8e308)"),
    ("[" * 100 + "]" * 100, "nests arrays and objects more than 16 deep"),
    ("\u20ac" * 21846, "message of 65,538 bytes is over the 65,536-byte limit"),
    (b"\xc3\x28", "not valid UTF-8 at byte 0"),
    ("", "not valid JSON"),
])
def test_decode_refuses_with_the_reason(raw, expected):
    with pytest.raises(protocol.ProtocolError) as e:
        wire.decode_message(raw)
    assert expected in str(e.value)


@spark
def test_highlight_targets_are_the_declared_ones_of_an_engine_session(dash):
    """A bare engine session answers declared pairs only: given targets pick among them,
    an undeclared target is refused (a lazy session answers it on Spark: test_lazy)."""
    s = dash.engine_session()
    whole = protocol.handle(s, {"type": "highlight", "source": "cat", "bars": [0]})
    picked = protocol.handle(s, {"type": "highlight", "source": "cat", "bars": [0], "targets": ["hx"]})
    assert picked["type"] == "highlight" and picked["views"] == whole["views"] == {
        "hx": protocol.view_json(dash.session().highlight("cat", [0])["hx"])}
    bad = protocol.handle(s, {"type": "highlight", "source": "cat", "bars": [0], "targets": ["week"]})
    assert bad["type"] == "error" and "highlight.targets[0]" in bad["message"]
    assert "no highlight from 'cat' to 'week'" in bad["message"]


def test_replies_as_json_text():
    """NaN and infinities as null, numpy arrays and numbers as numbers, datetimes as ISO
    text, integers past 64 bits (echoed from a bad message) kept."""
    reply = {"counts": np.array([1, 2]), "values": np.array([0.5, np.nan]), "n": np.int64(7),
             "x": float("inf"), "t": dt.datetime(2021, 1, 2, 3, 4, 5, tzinfo=dt.UTC)}
    assert json.loads(wire.dumps(reply)) == {"counts": [1, 2], "values": [0.5, None], "n": 7,
                                                 "x": None, "t": "2021-01-02T03:04:05+00:00"}
    assert json.loads(wire.dumps({"echo": [10**30, np.float64("nan")]})) == {"echo": [10**30, None]}


def test_a_decimal_is_written_as_its_digits_as_sql_writes_it():
    """A decimal of a details row is the text of its exact value with its scale's digits
    (docs/protocol.md: "0.10"), as SQL casts it to text: a zero or a small value of a
    scale above 6 too, which Python's str writes in exponent notation ('0E-10', '1E-7')."""
    import decimal

    rows = {"zero": decimal.Decimal("0E-10"), "small": decimal.Decimal("1E-7"),
            "cents": decimal.Decimal("-0.10"), "big": decimal.Decimal("-12345678901234567890.1234567890")}
    assert json.loads(wire.dumps(rows)) == {"zero": "0.0000000000", "small": "0.0000001", "cents": "-0.10",
                                            "big": "-12345678901234567890.1234567890"}


def _rows_one_by_one(table) -> list[dict]:
    """Details rows as they were made before rows_json: a Python call per value."""
    return [{k: wire.jsonable(v) for k, v in r.items()} for r in table.to_pylist()]


def test_details_rows_are_made_by_columns_exactly_as_value_by_value():
    import decimal

    import pyarrow as pa

    t0 = dt.datetime(2001, 1, 3, 9, 40)
    times = [t0, t0.replace(microsecond=120000), t0.replace(microsecond=5), None]
    table = pa.table({
        "rid": pa.array([0, 1, 2, 3], pa.int64()),
        "us": pa.array(times, pa.timestamp("us")),
        "s": pa.array([t0, None, t0, t0], pa.timestamp("s")),
        "ms": pa.array(times, pa.timestamp("ms")),
        "utc": pa.array(times, pa.timestamp("us", tz="UTC")),
        "day": pa.array([t0.date(), None, dt.date(1999, 12, 31), dt.date(2024, 2, 29)]),
        "f64": [1.5, float("nan"), float("inf"), None],
        "f32": pa.array([-0.0, float("-inf"), 2.25, None], pa.float32()),
        "text": ["a", None, "é🔥", ""],
        "cat": pa.array(["x", "y", None, "x"]).dictionary_encode(),
        "dec": pa.array([decimal.Decimal("1.10"), None, decimal.Decimal("-3"), decimal.Decimal("0")]),
        "list": [[1.0, float("nan")], None, [], [2.0]],
        "flag": [True, False, None, True],
    })
    assert wire.rows_json(table) == _rows_one_by_one(table)
    assert wire.rows_json(table)[1]["us"] == "2001-01-03T09:40:00.120000"
    assert wire.rows_json(table.slice(0, 0)) == []


def test_a_details_page_calls_no_python_per_value(rich_local, monkeypatch):
    """A page of rows is converted by columns (Arrow's vector operations), not by a Python
    call per value: that held the interpreter's lock ~130 ms per 10,000 rows, and every
    other session's replies waited (issue 36, defect 4)."""
    calls = []
    plain = wire.jsonable
    monkeypatch.setattr(protocol, "jsonable", lambda x: calls.append(1) or plain(x))
    reply = protocol.handle(rich_local.session(), {"type": "details", "page_size": 1000})
    assert reply["type"] == "details" and len(reply["rows"]) == 1000
    assert set(reply["rows"][0]) == {"rid", "x", "cat", "t"} and calls == []


def test_a_message_from_the_wire_is_checked_once(rich_local, monkeypatch):
    """A filter message is checked by its `check` into a request (brushfire/requests.py);
    the session stack below (the lazy answers, the engine) trusts it: neither layer's
    Python API, nor the engine's checks of a name and a brush's y, runs again. The replies
    are those of the Python API's path (perf/replies.py --check)."""
    from brushfire.engine import session as engine
    from brushfire.lazy import LazySession

    def checked_again(*args, **kwargs):
        msg = "checked again below the protocol"
        raise AssertionError(msg)

    session = rich_local.session()
    for layer in (LazySession, engine.Session):
        for name in ("brush", "select", "set_parameter", "clear"):
            monkeypatch.setattr(layer, name, checked_again)
    monkeypatch.setattr(engine, "find_filter", checked_again)
    monkeypatch.setattr(engine, "check_brush_y", checked_again)
    messages = [
        {"type": "brush", "view": "hx", "interval": [20, 60]},
        {"type": "brush", "view": "heat", "interval": [0, 50], "y": [0, 60]},
        {"type": "brush", "view": "week", "interval": ["2024-01-01", None]},
        {"type": "select", "view": "cat", "values": ["c01"]},
        {"type": "parameter", "name": "pdest", "value": "AAA"},
        {"type": "parameter", "name": "pm", "value": 50},
        {"type": "parameter", "name": "pm", "value": None},
        {"type": "clear", "view": "hx"},
        {"type": "filters", "filters": {"hk": {"interval": [0, 40]}, "cat": {"values": ["c02"]}}},
        {"type": "clear"},
    ]
    for message in messages:
        reply = protocol.handle(session, message)
        assert reply["type"] == "update", (message, reply)
    assert reply["filters"] == {}


def test_a_lineage_query_from_the_wire_is_checked_once(rich_local, monkeypatch):
    """Details, highlighting and forward lineage are checked by their message's `check` too
    (the view, its bars, the page, the columns, the rids); the sessions' `answer_*` trust
    the request: neither layer's Python API (which checks its arguments), nor the engine's
    checks of bars, page and columns, runs again."""
    from brushfire import lazy, lazy_queries
    from brushfire.engine import queries
    from brushfire.engine import session as engine

    def checked_again(*args, **kwargs):
        msg = "checked again below the protocol"
        raise AssertionError(msg)

    session = rich_local.session()
    want = {}  # the replies of the Python API's path, before it is patched
    messages = [
        {"type": "details"},
        {"type": "details", "view": "hx", "bars": [0, 3], "page": 1, "page_size": 2},
        {"type": "details", "view": "cat", "order_by": "x", "descending": True},
        {"type": "highlight", "source": "cat", "bars": [0, 1]},
        {"type": "highlight", "source": "cat", "bars": [2], "targets": ["hx"]},
        {"type": "forward", "rids": [0, 5, 7]},
    ]
    protocol.handle(session, {"type": "brush", "view": "hx", "interval": [20, 60]})
    for message in messages:
        want[str(message)] = protocol.handle(session, message)
    for layer in (lazy.LazySession, engine.Session):
        for name in ("details", "highlight", "forward", "backward_rids", "count_selected"):
            monkeypatch.setattr(layer, name, checked_again)
    for module, name in ((queries, "check_bars"), (queries, "details_request"),
                         (queries, "check_view_bars"), (lazy_queries, "check_bars"),
                         (lazy_queries, "check_page")):
        monkeypatch.setattr(module, name, checked_again)
    for message in messages:
        reply = protocol.handle(session, message)
        assert reply["type"] == message["type"], (message, reply)
        assert {**reply, "ms": 0} == {**want[str(message)], "ms": 0}


def test_a_float_fields_infinite_categories_travel_as_text_and_select_their_rows(tmp_path):
    """JSON has no infinity: a categorical bar or dropdown choice of +inf was sent as null,
    the NaN bar's name, so a click on the inf bar (the page sends its label back) selected
    the NaN rows, and +inf could not be picked at all. They travel as 'Infinity' and
    '-Infinity' (values.wire_choice): labels, choices, the selection state, and back."""
    import math

    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire.capture.local import capture_table
    from brushfire.describe import describe_dashboard
    from brushfire.plan import plan_capture
    from oracle import Oracle

    path = tmp_path / "inf.parquet"
    table = pa.table({"f": [1.0, math.inf, math.inf, -math.inf, 2.0, math.nan, None],
                      "y": [1, 2, 3, 4, 5, 6, 7]})
    pq.write_table(table, path)
    spec = parse_dashboard({
        "name": "inf", "source": {"path": str(path)},
        "views": [{"name": "c", "type": "categorical", "field": "f"},
                  {"name": "h", "type": "histogram", "field": "y", "bin": {"step": 1, "extent": [0, 8]}}],
        "interactions": {"crossfilter": [{"views": ["c", "h"]}],
                         "parameters": [{"name": "p", "field": "f", "multiple": True}]}})
    plan = plan_capture(spec)
    dash = Dashboard(spec, plan, capture_table(plan, table, tmp_path / "cache"))
    described = json.loads(wire.dumps(describe_dashboard(dash)))
    labels = described["views"][0]["labels"]
    assert labels == ["Infinity", "-Infinity", 1.0, 2.0, None, "(other)"]
    assert [b["label"] for b in described["views"][0]["spec"]["datasets"]["bars"]] == labels
    assert described["parameters"][0]["values"] == ["Infinity", "-Infinity", 1.0, 2.0, "NaN"]  # (null: inactive)
    oracle, s = Oracle(dash.spec), dash.session()
    for picked, sql_values in [(["Infinity"], [math.inf]), (["-Infinity", None], [-math.inf, math.nan]),
                               ([None], [math.nan])]:
        reply = protocol.handle(s, json.dumps({"type": "select", "view": "c", "values": picked}))
        oracle.select("c", sql_values)
        assert reply["filters"] == {"c": {"values": picked}}
        assert (reply["selected"], reply["views"]["h"]["counts"][1:7]) == \
            (oracle.selected(), [oracle.view("h").get(i, (0,))[0] for i in range(1, 7)])
    reply = protocol.handle(s, {"type": "parameter", "name": "p", "value": ["Infinity", 1.0]})
    assert reply["selected"] == 0 and reply["filters"]["p"] == {"parameter": ["Infinity", 1.0]}
    state = protocol.handle(s, {"type": "state"})["filters"]
    again = dash.session()  # the state as JSON gives the same selection
    assert protocol.handle(again, {"type": "filters", "filters": {"c": state["c"]}})["selected"] == 1
    assert protocol.handle(again, {"type": "parameter", "name": "p", "value": ["Infinity"]})["selected"] == 0
    assert protocol.handle(again, {"type": "clear", "view": "c"})["selected"] == 2


def test_integer_categories_beyond_2_53_travel_as_text_and_select_their_rows(tmp_path):
    """A browser reads every JSON number as a double: an int64 category beyond ±(2^53-1)
    was sent as a number (a bar's label, a dropdown's choice, the selection state), which
    a page read rounded (9007199254740993 as ...992), so a click on its bar, which sends
    the label back, selected another value's rows. They travel as their decimal text
    (values.wire_choice), which select, parameter and filters take back."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire.capture.local import capture_table
    from brushfire.describe import describe_dashboard
    from brushfire.plan import plan_capture

    big = [2**53] * 5 + [2**53 + 1] * 4 + [2**53 + 2] * 3 + [7] * 2 + [-(2**62) - 1]
    table = pa.table({"big": pa.array(big, pa.int64()), "y": list(range(len(big)))})
    path = tmp_path / "big.parquet"
    pq.write_table(table, path)
    spec = parse_dashboard({
        "name": "big", "source": {"path": str(path)},
        "views": [{"name": "c", "type": "categorical", "field": "big", "top": 4},
                  {"name": "h", "type": "histogram", "field": "y", "bin": {"step": 1, "extent": [0, 15]}}],
        "interactions": {"crossfilter": [{"views": ["c", "h"]}],
                         "parameters": [{"name": "p", "field": "big"},
                                        {"name": "ps", "field": "big", "multiple": True}]}})
    plan = plan_capture(spec)
    dash = Dashboard(spec, plan, capture_table(plan, table, tmp_path / "cache"))
    as_read = json.loads(wire.dumps(describe_dashboard(dash)), parse_int=float)  # as a browser reads it
    labels = as_read["views"][0]["labels"]
    assert labels == [str(2**53), str(2**53 + 1), str(2**53 + 2), 7, "(other)"], labels
    assert [b["label"] for b in as_read["views"][0]["spec"]["datasets"]["bars"]] == labels
    assert as_read["parameters"][0]["values"] == [str(2**53), str(2**53 + 1), str(2**53 + 2), 7,
                                                  str(-(2**62) - 1)]
    s = dash.session()
    want = dict(zip(labels, s.view("c").counts, strict=True))
    for label in labels:  # a click on each bar sends its label back: its own rows
        reply = protocol.handle(s, json.dumps({"type": "select", "view": "c", "values": [label]}))
        assert reply["selected"] == want[label] and reply["filters"] == {"c": {"values": [label]}}, label
    p = as_read["parameters"]
    protocol.handle(s, {"type": "clear"})
    reply = protocol.handle(s, json.dumps({"type": "parameter", "name": "p", "value": p[0]["values"][1]}))
    assert reply["selected"] == 4 and reply["filters"]["p"] == {"parameter": str(2**53 + 1)}
    reply = protocol.handle(s, json.dumps({"type": "parameter", "name": "ps", "value": p[1]["values"][:3:2]}))
    assert reply["filters"]["ps"] == {"parameter": [str(2**53), str(2**53 + 2)]}
    state = json.loads(wire.dumps(protocol.handle(s, {"type": "state"})))["filters"]
    again = dash.session()
    assert protocol.handle(again, {"type": "filters", "filters": state})["selected"] == \
        protocol.handle(s, {"type": "state"})["selected"] == 0
    assert protocol.handle(again, {"type": "filters", "filters": {"ps": state["ps"]}})["selected"] == 8
    # the text of an integer that a number carries exactly is no value, as before
    reply = protocol.handle(again, {"type": "select", "view": "c", "values": ["7"]})
    assert reply["type"] == "error" and "did you mean 7?" in reply["message"], reply
    reply = protocol.handle(again, {"type": "select", "view": "c", "values": [str(2**53 + 3)]})
    assert reply["type"] == "error" and "is not one of the values" in reply["message"], reply
    # the benchmarks' check reads the labels and filters so too (bench/check.py)
    from brushfire.bench.check import Checker

    described = json.loads(wire.dumps(describe_dashboard(dash)))  # (as the harness reads it)
    checker = Checker(dash.spec, {v["name"]: v["labels"] for v in described["views"]})
    assert checker.problems_once == []
    replies = [json.loads(wire.dumps(protocol.handle(again, json.dumps(m)))) for m in (
        {"type": "select", "view": "c", "values": labels[1:2]}, {"type": "clear"},
        {"type": "parameter", "name": "p", "value": p[0]["values"][2]},
        {"type": "parameter", "name": "ps", "value": p[1]["values"][3:]})]
    result = checker.check([(0, i, r) for i, r in enumerate(replies)])
    assert (result.checked, result.mismatches) == (4, 0), result.examples


def test_a_dropdowns_nan_choice_travels_as_text_and_is_chosen_by_parameter(tmp_path):
    """A float field's NaN is a dropdown's choice (docs/spec.md), which JSON writes as
    null; but a parameter's null is "inactive": a page that sent the choice back as it
    came (null) cleared the parameter, and no `parameter` message could choose NaN. A
    dropdown's NaN travels as 'NaN' (values.wire_dropdown: the choices, the default, the
    selection state), which parameter and filters take back; a text field's 'NaN' is
    itself."""
    import math

    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire.capture.local import capture_table
    from brushfire.describe import describe_dashboard
    from brushfire.plan import plan_capture
    from oracle import Oracle

    path = tmp_path / "nan.parquet"
    table = pa.table({"f": [1.0, math.nan, math.nan, 2.0, math.nan, None, 1.0],
                      "t": ["NaN", "a", "NaN", "b", "a", "a", None], "y": [1, 2, 3, 4, 5, 6, 7]})
    pq.write_table(table, path)
    spec = parse_dashboard({
        "name": "nan", "source": {"path": str(path)},
        "views": [{"name": "h", "type": "histogram", "field": "y", "bin": {"step": 1, "extent": [0, 8]}}],
        "interactions": {"parameters": [{"name": "p", "field": "f"},
                                        {"name": "ps", "field": "f", "multiple": True},
                                        {"name": "pt", "field": "t"}]}})
    plan = plan_capture(spec)
    dash = Dashboard(spec, plan, capture_table(plan, table, tmp_path / "cache"))
    described = json.loads(wire.dumps(describe_dashboard(dash)))
    p, ps, pt = described["parameters"]
    assert p["values"] == ps["values"] == ["NaN", 1.0, 2.0] and pt["values"] == ["a", "NaN", "b"]
    oracle, s = Oracle(dash.spec), dash.session()
    # the page's plain dropdown sends back the choice whose text was picked
    value = next(v for v in p["values"] if str(v) == "NaN")
    reply = json.loads(wire.dumps(protocol.handle(s, json.dumps({"type": "parameter", "name": "p", "value": value}))))
    oracle.set_parameter("p", math.nan)
    assert reply["type"] == "update" and reply["filters"] == {"p": {"parameter": "NaN"}}, reply
    assert reply["selected"] == oracle.selected() == 3
    assert reply["views"]["h"]["counts"][1:8] == [oracle.view("h").get(i, (0,))[0] for i in range(1, 8)]
    again = dash.session()  # the state as JSON gives the same selection
    assert protocol.handle(again, {"type": "filters", "filters": reply["filters"]})["selected"] == 3
    reply = protocol.handle(s, {"type": "parameter", "name": "ps", "value": ["NaN", 2.0]})
    assert reply["filters"]["ps"] == {"parameter": ["NaN", 2.0]} and reply["selected"] == 3  # (p: NaN)
    protocol.handle(s, {"type": "clear", "view": "p"})
    assert protocol.handle(s, {"type": "state"})["selected"] == 4
    assert protocol.handle(s, {"type": "parameter", "name": "ps", "value": [None]})["selected"] == 3  # (as before)
    reply = protocol.handle(s, {"type": "parameter", "name": "pt", "value": "NaN"})  # a text field's own
    assert (reply["selected"], reply["filters"]["pt"]) == (1, {"parameter": "NaN"})  # (ps: NaN rows)
    protocol.handle(s, {"type": "clear"})
    assert protocol.handle(s, {"type": "parameter", "name": "pt", "value": "NaN"})["selected"] == 2


def test_carrying_filters_over_drops_only_those_the_new_data_refuse(tmp_path):
    """A view named as the start of another's (c, c2): the new data refusing c2's value
    leave off c2 alone (an error naming `filters.c2.values` was read as naming c too)."""
    import pyarrow as pa

    from brushfire.capture.local import capture_tables
    from brushfire.lineage.layout import CaptureConfig
    from brushfire.plan import plan_capture

    spec = parse_dashboard({
        "name": "carry", "source": {"path": str(tmp_path / "data"), "format": "parquet"},
        "views": [{"name": "c", "type": "categorical", "field": "a"},
                  {"name": "c2", "type": "categorical", "field": "b"}],
        "interactions": {"crossfilter": [{"views": ["c", "c2"]}]}})

    def dash(b: list[str], cache: str) -> Dashboard:
        table = pa.table({"a": ["x", "y", "x"], "b": b})
        plan = plan_capture(spec)
        return Dashboard(spec, plan, capture_tables(plan, {"part-0": table}, tmp_path / cache,
                                                    CaptureConfig(block_rows=64, shard_rows=300)))

    old, new = dash(["p", "q", "z"], "old").engine_session(), dash(["p", "q", "r"], "new").engine_session()
    protocol.handle(old, {"type": "filters", "filters": {"c": {"values": ["x"]}, "c2": {"values": ["z"]}}})
    assert protocol.carry_over(old, new) == ["c2"]
    assert protocol.filters_json(new) == {"c": {"values": ["x"]}}
    # a selection of several values keeps those the new data take (z is gone: p stays)
    protocol.handle(old, {"type": "filters", "filters": {"c": {"values": ["x"]}, "c2": {"values": ["z", "p"]}}})
    assert protocol.carry_over(old, new) == []
    assert protocol.filters_json(new) == {"c": {"values": ["x"]}, "c2": {"values": ["p"]}}


@pytest.mark.parametrize(("entry", "error"), [
    ({"values": ["AAA", 5]}, "filters.column:dest: column 'dest' holds strings: values ['AAA', 5] must be strings"),
    ({"values": [{}]}, "filters.column:dest: values are strings, numbers or booleans, got [{}]"),
    ({"interval": [0, 1]}, "filters.column:dest: column 'dest' holds string values: filter it by values, not an interval"),
])
def test_a_bad_column_entry_of_filters_is_named_and_changes_nothing(rich_local, entry, error):
    """A `filters` entry on a source column whose values the column refuses (checked before
    Spark starts) got an error that did not name the entry ('column 'dest' holds strings:
    ...'), where docs/protocol.md says the error names it; reloading (`carry_over`), which
    leaves off the entry an error names, then left off another."""
    s = rich_local.session()
    assert protocol.handle(s, {"type": "brush", "view": "hx", "interval": [20, 60]})["type"] == "update"
    reply = protocol.handle(s, {"type": "filters", "filters": {"cat": {"values": ["c01"]}, "column:dest": entry}})
    assert reply == {"type": "error", "id": None, "message": error}
    assert protocol.filters_json(s) == {"hx": {"interval": [20, 60]}}


def test_a_closed_stores_labels_and_choices_are_let_go(tmp_path, monkeypatch):
    """The tables a message's check builds per list of labels or choices (requests'
    Choices, engine/state's positions) were cached by the list's id, holding the list
    for ever: every store opened (each reload of `serve --watch`, a dashboard opened again
    in a kernel) left its labels and dropdown choices, with their tables, in memory after
    the store itself was freed. They are kept for the last lists used only
    (values.per_list)."""
    import gc

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire import values
    from brushfire.capture.local import capture_table
    from brushfire.plan import plan_capture

    monkeypatch.setattr(values, "PER_LIST_KEPT", 4, raising=False)
    rng = np.random.default_rng(5)
    table = pa.table({"c": rng.choice(["a", "b", "c"], 50), "d": rng.choice(["x", "y"], 50)})
    pq.write_table(table, tmp_path / "t.parquet")

    def opened(i: int) -> Dashboard:
        spec = parse_dashboard({
            "name": "kept", "source": {"path": str(tmp_path / "t.parquet")},
            "views": [{"name": "c", "type": "categorical", "field": "c"}],
            "interactions": {"parameters": [{"name": "p", "field": "d"}]}})
        plan = plan_capture(spec)
        return Dashboard(spec, plan, capture_table(plan, table, tmp_path / f"cache{i}"))

    first = None
    for i in range(4):
        dash = opened(i)
        s = dash.session()
        assert protocol.handle(s, {"type": "select", "view": "c", "values": ["a"]})["type"] == "update"
        assert protocol.handle(s, {"type": "parameter", "name": "p", "value": "x"})["type"] == "update"
        if first is None:
            first = (dash.store.view("c").labels, dash.store.parameter_domain("p")[1])
        s.close()
        del s, dash
    gc.collect()
    held = [[type(r).__name__ for r in gc.get_referrers(x) if r is not first] for x in first]
    assert held == [[], []]  # (only `first` holds them)


def test_a_slider_over_a_time_field_without_values_takes_iso_times(tmp_path):
    """A slider over a timestamp column holding only nulls has no range: the protocol took
    it for a slider over numbers (it told times by the range's ISO ends), refused an ISO
    time ('is not a number') and took a number, where the session's Python API and
    docs/protocol.md take ISO times and refuse numbers on a time field."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire.capture.local import capture_table
    from brushfire.plan import plan_capture
    from oracle import Oracle

    path = tmp_path / "t.parquet"
    table = pa.table({"t": pa.array([None] * 4, pa.timestamp("us")), "y": [1, 2, 3, 4]})
    pq.write_table(table, path)
    spec = parse_dashboard({
        "name": "nulltimes", "source": {"path": str(path)},
        "views": [{"name": "h", "type": "histogram", "field": "y", "bin": {"step": 1, "extent": [0, 5]}}],
        "interactions": {"parameters": [{"name": "p", "field": "t", "widget": "slider", "op": "gte"},
                                        {"name": "pb", "field": "t", "widget": "slider", "op": "between"}]}})
    plan = plan_capture(spec)
    dash = Dashboard(spec, plan, capture_table(plan, table, tmp_path / "cache"))
    s, oracle = dash.session(), Oracle(dash.spec)
    reply = protocol.handle(s, {"type": "parameter", "name": "p", "value": "2020-01-01"})
    oracle.set_parameter("p", "2020-01-01")
    assert reply["type"] == "update" and reply["selected"] == oracle.selected() == 0, reply
    reply = protocol.handle(s, {"type": "parameter", "name": "pb", "value": ["1900-01-01", "2100-01-01T00:00:00Z"]})
    assert reply["type"] == "update" and reply["selected"] == 0, reply
    reply = protocol.handle(s, {"type": "parameter", "name": "p", "value": 5})
    assert reply["type"] == "error" and "not a time" in reply["message"], reply
