"""Protocol errors, pinned: a catalogue of bad messages, each with the exact `error` reply
it gets (the spec loader's standard: where, what is wrong, the valid choices, a close
match). Every one leaves the session as it was. On the rich dashboard (every kind of
filter), captured without Spark."""

from __future__ import annotations

import json
import math

import pytest

from brushfire import protocol, requests

BIG = "1" + "0" * 400  # an integer beyond the float range
TYPES = "brush, select, clear, parameter, filters, highlight, filter, details, forward, dimension, dimension_forward, state"

CATALOGUE = [
    ('{"type": "zoom"}',
     "type: unknown message type 'zoom'; messages: " + TYPES),
    ('{"type": "Brush", "view": "hx", "interval": [1, 2]}',
     "type: unknown message type 'Brush'; messages: brush, select, clear, parameter, filters, highlight, filter, details, forward, dimension, dimension_forward, state; did you mean 'brush'?"),
    ('{"type": 7}',
     'type: unknown message type 7; messages: brush, select, clear, parameter, filters, highlight, filter, details, forward, dimension, dimension_forward, state'),
    ('{"view": "hx"}',
     "type: missing; a message is a JSON object with a 'type': one of " + TYPES),
    ('[1, 2]',
     "a message is a JSON object with a 'type'"),
    ('{not json',
     'not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)'),
    ('{"type": "brush", "view": "hx"}',
     'brush.interval: missing; brush takes: view, interval, y, id'),
    ('{"type": "brush", "view": "hx", "interval": [1, 2], "intervl": [1, 2]}',
     "brush.intervl: unknown field 'intervl'; brush takes: view, interval, y, id; did you mean 'interval'?"),
    ('{"type": "brush", "view": "hx", "interval": [1, 2, 3]}',
     'brush.interval: [1, 2, 3] has 3 items; interval is [lo, hi] (null for an open end)'),
    ('{"type": "brush", "view": "hx", "interval": [1]}',
     'brush.interval: [1] has 1 items; interval is [lo, hi] (null for an open end)'),
    ('{"type": "brush", "view": "hx", "interval": {"lo": 1}}',
     "brush.interval: {'lo': 1} is not [lo, hi] (null for an open end)"),
    ('{"type": "brush", "view": 5, "interval": [1, 2]}',
     "brush.view: 5 is not a view's name (a string)"),
    ('{"type": "brush", "view": "hz", "interval": [1, 2]}',
     "brush.view: 'hz' is not a brushable view of this dashboard; brushable views (histogram, temporal, heatmap): hx, hk, week, heat"),
    ('{"type": "brush", "view": "cat", "interval": [1, 2]}',
     "brush.view: 'cat' takes a selection of bars (select with values), not brush; brushable views (histogram, temporal, heatmap): hx, hk, week, heat"),
    ('{"type": "brush", "view": "hx", "interval": [1, 2], "y": [0, 1]}',
     "brush.y: view 'hx' takes an interval brush; y is only for heatmaps"),
    ('{"type": "brush", "view": "heat", "interval": [1, 2]}',
     "brush.y: missing; view 'heat' is a heatmap: its brush gives interval (x) and y"),
    ('{"type": "brush", "view": "hx", "interval": ["a", 2]}',
     "brush on view 'hx': interval[0]: 'a' is not a number"),
    ('{"type": "brush", "view": "week", "interval": ["yesterday", null]}',
     "brush on view 'week': interval[0]: 'yesterday' is not an ISO time; write e.g. 2021-03-01 or 2021-03-01T12:30:00Z"),
    ('{"type": "brush", "view": "week", "interval": [1, 2]}',
     "brush on view 'week': interval[0]: 1 is a number, not a time; temporal bounds are ISO times, e.g. 2021-03-01 or 2021-03-01T12:30:00Z"),
    ('{"type": "brush", "view": "week", "interval": [true, null]}',
     "brush on view 'week': interval[0]: true is a boolean, not a time; temporal bounds are ISO times, e.g. 2021-03-01 or 2021-03-01T12:30:00Z"),
    ('{"type": "brush", "view": "week", "interval": [null, [1]]}',
     "brush on view 'week': interval[1]: [1] is a list, not a time; temporal bounds are ISO times, e.g. 2021-03-01 or 2021-03-01T12:30:00Z"),
    (f'{{"type": "brush", "view": "hx", "interval": [{BIG}, null]}}',
     "brush on view 'hx': interval[0]: an integer of 401 digits is beyond the range of numbers (±1.8e308)"),
    ('{"type": "select", "view": "cat", "values": "c01"}',
     "select.values: 'c01' is not a list of values"),
    # half a UTF-16 pair, alone: no character (Arrow and Spark failed to encode it)
    ('{"type": "select", "view": "cat", "values": ["c01", "\\ud800"]}',
     "select.values[1]: '\\ud800' holds a lone UTF-16 surrogate (U+D800), which is no Unicode character"),
    ('{"type": "filters", "filters": {"cat": {"values": ["x\\udfff"]}}}',
     "filters.filters.cat.values[0]: 'x\\udfff' holds a lone UTF-16 surrogate (U+DFFF), which is no Unicode character"),
    ('{"type": "select", "view": "cat", "values": ["C01"]}',
     "select on view 'cat': values[0]: 'C01' is not one of the values: 'c00', 'c01', 'c29', 'c02', '(other)'; did you mean 'c01'?"),
    ('{"type": "select", "view": "hx", "values": [1]}',
     "select.view: 'hx' takes an interval brush (brush with interval [lo, hi]), not select; categorical views: cat"),
    ('{"type": "parameter", "name": "pdst", "value": "AAA"}',
     "parameter.name: 'pdst' is not a parameter of this dashboard; parameters: pdest, pm, pt; did you mean 'pdest'?"),
    ('{"type": "parameter", "name": "pdest", "value": "aaa"}',
     "parameter 'pdest': 'aaa' is not one of the values: 'CCC', 'BBB', 'EEE', 'AAA', 'DDD'; did you mean 'AAA'?"),
    ('{"type": "parameter", "name": "pt", "value": "noon"}',
     "parameter 'pt': 'noon' is not an ISO time; write e.g. 2021-03-01 or 2021-03-01T12:30:00Z"),
    ('{"type": "parameter", "value": 1}',
     'parameter.name: missing; parameter takes: name, value, id'),
    ('{"type": "clear", "view": "hxx"}',
     "clear.view: 'hxx' is not a brushable view or parameter of this dashboard; brushable views and parameters: hx, hk, cat, week, heat, pdest, pm, pt; did you mean 'hx'?"),
    ('{"type": "highlight", "source": "hx", "bars": [0]}',
     "highlight.source: no highlight from view 'hx' is declared; sources: cat"),
    ('{"type": "highlight", "source": "cat", "bars": ["a"]}',
     "highlight.bars[0]: 'a' is not a bar number (an integer >= 0)"),
    ('{"type": "highlight", "source": "cat", "bars": [true]}',
     "highlight.bars[0]: true is not a bar number (an integer >= 0)"),
    ('{"type": "highlight", "source": "cat", "bars": [0], "targets": "hx"}',
     "highlight.targets: 'hx' is not a list of view names"),
    ('{"type": "highlight", "source": "cat", "bars": [0], "targets": [1]}',
     "highlight.targets[0]: 1 is not a view's name (a string)"),
    ('{"type": "filter", "column": 3, "interval": [1, 2]}',
     "filter.column: 3 is not a source column's name (a string)"),
    ('{"type": "highlight", "source": "cat", "bars": ["1"]}',
     "highlight.bars[0]: '1' is not a bar number (an integer >= 0)"),
    ('{"type": "forward", "rids": ["7"]}',
     "forward.rids[0]: '7' is not a row id (an integer >= 0)"),
    ('{"type": "details", "page": "1"}',
     "details.page: '1' is not an integer from 0 to 2,147,483,647"),
    ('{"type": "details", "page": true}',
     'details.page: true is not an integer from 0 to 2,147,483,647'),
    ('{"type": "details", "page_size": "5"}',
     "details.page_size: '5' is not an integer from 1 to 10,000"),
    ('{"type": "highlight", "source": "cat", "bars": [5]}',
     "highlight.bars[0]: 5 is not a bar of view 'cat'; its bars are 0 to 4"),
    ('{"type": "highlight", "source": "cat", "bars": [0, -1]}',
     "highlight.bars[1]: -1 is not a bar of view 'cat'; its bars are 0 to 4"),
    ('{"type": "details", "view": "heat", "bars": [99999999999]}',
     "details.bars[0]: 99999999999 is not a bar of view 'heat'; its bars are 0 to 15"),
    ('{"type": "details", "bars": [1]}',
     'details.bars: bars need a view; give view with bars, or neither for the rows of the selection'),
    ('{"type": "forward", "rids": [3000]}',
     'forward.rids[0]: 3000 is not a row id; row ids are 0 to 2,999'),
    ('{"type": "forward", "rids": [-1]}',
     'forward.rids[0]: -1 is not a row id; row ids are 0 to 2,999'),
    ('{"type": "forward", "rids": [99999999999999999999999]}',
     'forward.rids[0]: 99999999999999999999999 is not a row id; row ids are 0 to 2,999'),
    ('{"type": "forward", "rids": [1.5]}',
     "forward.rids[0]: 1.5 is not a row id (an integer >= 0)"),
    ('{"type": "forward", "rids": [false]}',
     "forward.rids[0]: false is not a row id (an integer >= 0)"),
    (json.dumps({"type": "forward", "rids": list(range(10_001))}),
     "forward.rids: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, … has 10001 items; rids is a list of at most 10,000 row ids"),
    ('{"type": "details", "page": -1}',
     'details.page: -1 is below 0; page is an integer from 0 to 2,147,483,647'),
    ('{"type": "details", "page": 10000000000}',
     'details.page: 10000000000 is over 2,147,483,647; page is an integer from 0 to 2,147,483,647'),
    ('{"type": "details", "page_size": 0}',
     'details.page_size: 0 is below 1; page_size is an integer from 1 to 10,000'),
    ('{"type": "details", "page_size": 10001}',
     'details.page_size: 10001 is over 10,000; page_size is an integer from 1 to 10,000'),
    ('{"type": "details", "view": "hxx"}',
     "details.view: 'hxx' is not a view of this dashboard; views: hx, hk, cat, week, heat, mean_m; did you mean 'hx'?"),
    ('{"type": "details", "columns": ["nope"]}',
     "details.columns[0]: 'nope' is not a details column; columns: x, cat, t"),
    ('{"type": "details", "order_by": "cats"}',
     "details.order_by: 'cats' is not a details column; columns: x, cat, t; did you mean 'cat'?"),
    ('{"type": "details", "order_by": "CAT"}',  # (another case: no match by difflib's characters)
     "details.order_by: 'CAT' is not a details column; columns: x, cat, t; did you mean 'cat'?"),
    ('{"type": "details", "order_by": 3}',
     "details.order_by: 3 is not a details column's name (a string)"),
    ('{"type": "details", "order_by": "x", "descending": "yes"}',
     "details.descending: 'yes' is not true or false"),
    ('{"type": "details", "order_by": "x", "descending": 1}',
     "details.descending: 1 is not true or false"),
    ('{"type": "details", "descending": true}',
     "details.descending: orders by order_by, which is missing; give the column to order by"),
    ('{"type": "state", "id": [1]}',
     'id: [1] is not a number or a string'),
    ('{"type": "state", "id": true}',
     'id: true is not a number or a string'),
    ('{"type": "state", "extra": 1}',
     "state.extra: unknown field 'extra'; state takes: id"),
    ('{"type": "filters"}',
     'filters.filters: missing; filters takes: filters, id'),
    ('{"type": "filters", "filters": [1]}',
     'filters.filters: [1] is not an object of filters, e.g. {"delay": {"interval": [-20, 40]}}'),
    ('{"type": "filters", "filters": {"hx": [1, 2]}}',
     'filters.hx: [1, 2] is not a tagged filter; a filter is one of {"interval": [lo, hi]}, {"rect": {"x": [lo, hi], "y": [lo, hi]}}, {"values": [...]}, {"parameter": value}'),
    ('{"type": "filters", "filters": {"hx": {"interval": [1, 2], "values": [1]}}}',
     'filters.hx: an object with keys \'interval\', \'values\' is not a tagged filter; a filter is one of {"interval": [lo, hi]}, {"rect": {"x": [lo, hi], "y": [lo, hi]}}, {"values": [...]}, {"parameter": value}'),
    ('{"type": "filters", "filters": {"hx": {"intervals": [1, 2]}}}',
     'filters.hx: unknown filter \'intervals\'; a filter is one of {"interval": [lo, hi]}, {"rect": {"x": [lo, hi], "y": [lo, hi]}}, {"values": [...]}, {"parameter": value}; did you mean \'interval\'?'),
    ('{"type": "filters", "filters": {"hx": {"interval": [1, 2, 3]}}}',
     'filters.hx.interval: [1, 2, 3] has 3 items; an interval is [lo, hi] (null for an open end)'),
    ('{"type": "filters", "filters": {"hx": {"interval": 5}}}',
     'filters.hx.interval: 5 is not [lo, hi]'),
    ('{"type": "filters", "filters": {"heat": {"rect": {"x": [1, 2]}}}}',
     'filters.heat.rect.y: missing; a rect is {"x": [lo, hi], "y": [lo, hi]}'),
    ('{"type": "filters", "filters": {"heat": {"rect": {"x": [1, 2], "z": [1, 2]}}}}',
     'filters.heat.rect.z: unknown key \'z\'; a rect is {"x": [lo, hi], "y": [lo, hi]}'),
    ('{"type": "filters", "filters": {"cat": {"values": "c01"}}}',
     "filters.cat.values: 'c01' is not a list of values"),
    ('{"type": "filters", "filters": {"hz": {"interval": [1, 2]}}}',
     "filters.hz: no brushable view or parameter named 'hz'; known: hx, hk, cat, week, heat, pdest, pm, pt"),
    ('{"type": "filters", "filters": {"cat": {"interval": [1, 2]}}}',
     'filters.cat: \'cat\' takes a selection of bars, {"values": [...]}, not {"interval": [lo, hi]}'),
    ('{"type": "filters", "filters": {"pdest": {"values": ["AAA"]}}}',
     'filters.pdest: \'pdest\' takes a parameter value, {"parameter": value}, not {"values": [...]}'),
    ('{"type": "filters", "filters": {"hx": {"interval": [1, 2]}, "week": {"interval": ["2021-13-01", null]}}}',
     "filters.week.interval[0]: '2021-13-01' is not an ISO time; write e.g. 2021-03-01 or 2021-03-01T12:30:00Z"),
    ('{"type": "filters", "filters": {"heat": {"rect": {"x": [0, 1], "y": [null, "a"]}}}}',
     "filters.heat.rect.y[1]: 'a' is not a number"),
    ('{"type": "filters", "filters": {"cat": {"values": ["c01", "zzz"]}}}',
     "filters.cat.values[1]: 'zzz' is not one of the values: 'c00', 'c01', 'c29', 'c02', '(other)'"),
    ('{"type": "filters", "filters": {"pdest": {"parameter": "aaa"}}}',
     "filters.pdest.parameter: 'aaa' is not one of the values: 'CCC', 'BBB', 'EEE', 'AAA', 'DDD'; did you mean 'AAA'?"),
    ('{"type": "filters", "filters": {"pm": {"parameter": "x"}}}',
     "filters.pm.parameter: 'x' is not a number"),
]


@pytest.fixture(scope="module")
def session(rich_local):
    s = rich_local.engine_session()  # the engine's refusals (the lazy answers: test_lazy.py)
    for m in ({"type": "brush", "view": "hx", "interval": [20, 60]},
              {"type": "select", "view": "cat", "values": ["c01"]}):
        assert protocol.handle(s, m)["type"] == "update"
    return s


@pytest.mark.parametrize(("message", "expected"), CATALOGUE, ids=lambda x: x[:70])
def test_each_bad_message_gets_its_exact_error_and_changes_nothing(session, message, expected):
    before = protocol.handle(session, {"type": "state"})
    reply = protocol.handle(session, message)
    assert reply["type"] == "error"
    assert reply["message"] == expected
    after = protocol.handle(session, {"type": "state"})
    assert after["filters"] == before["filters"] == {"hx": {"interval": [20, 60]}, "cat": {"values": ["c01"]}}
    assert after["views"] == before["views"]


def test_no_reply_is_raw_validator_text(session):
    for message, _ in CATALOGUE:
        text = protocol.handle(session, message)["message"]
        assert not any(raw in text for raw in ("Input tag", "Input should", "Field required",
                                               "Extra inputs", "validation error", "valid here")), text


def test_the_error_echoes_the_id(session):
    assert protocol.handle(session, {"type": "zoom", "id": 4})["id"] == 4
    assert protocol.handle(session, json.dumps({"type": "filters", "id": "f", "filters": {"hx": [1, 2]}}))["id"] == "f"
    too_many = json.dumps({"type": "forward", "id": 9, "rids": list(range(10_001))})  # 48,9xx bytes
    assert protocol.handle(session, too_many)["id"] == 9


@pytest.mark.parametrize("msg_id", [1.5, 2.0, 1e300, -3, "a"])
def test_any_number_or_string_is_an_id_and_echoed_as_sent(session, msg_id):
    reply = protocol.handle(session, json.dumps({"type": "state", "id": msg_id}))
    assert reply["type"] == "state"
    assert reply["id"] == msg_id and type(reply["id"]) is type(msg_id)


def test_every_checked_field_has_a_shape_for_its_errors():
    """A field without one was answered '... is not valid here' (filter.column, highlight.targets)."""
    fields = {f for m in requests.MESSAGES for f, info in m.model_fields.items()
              if f != "type" and info.annotation is not requests.Value}
    assert fields - set(requests.FIELD_SHAPES) == set()


@pytest.mark.parametrize("message", [
    {"type": "brush", "view": "hx", "interval": [math.inf, None]},
    {"type": "brush", "view": "hx", "interval": [None, -math.inf]},
    {"type": "brush", "view": "heat", "interval": [0, 50], "y": [-math.inf, 60]},
    {"type": "parameter", "name": "pm", "value": math.inf},
    {"type": "filters", "filters": {"hk": {"interval": ["-Infinity", 50]}}},
])
def test_an_infinite_bound_given_in_python_is_kept_in_the_state(session, message):
    """JSON has no infinity, but a dict message (Python's, the widget's filters) may: it
    was compared as the number it is ([inf, null]: the +inf rows) while the selection state
    wrote it as null, an open end, which a `filters` message or a reload then applied as
    every row. The state spells it 'Infinity', which applies as the infinity again."""
    fresh = session.__class__(session.store, session.plan)  # (the module's session unchanged)
    reply = protocol.handle(fresh, message)
    assert reply["type"] == "update", reply
    state = protocol.handle(fresh, {"type": "state"})
    assert "Infinity" in json.dumps(state["filters"]) and "null, null" not in json.dumps(state["filters"])
    again = session.__class__(session.store, session.plan)
    assert protocol.handle(again, {"type": "filters", "filters": state["filters"]})["type"] == "update"
    assert protocol.handle(again, {"type": "state"})["views"] == state["views"]


def test_nan_given_in_python_is_refused(session):
    before = protocol.handle(session, {"type": "state"})
    reply = protocol.handle(session, {"type": "parameter", "name": "pm", "value": math.nan})
    assert (reply["type"], reply.get("message")) == ("error", "parameter 'pm': NaN is not a bound (use null for an open end)")
    assert protocol.handle(session, {"type": "state"})["filters"] == before["filters"]
