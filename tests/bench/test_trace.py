"""The trace format: round trip, subsampling, and bad traces rejected with the place and reason."""

from __future__ import annotations

import json

import pytest

from brushfire.bench.trace import (
    Event,
    Trace,
    TraceError,
    filters_before,
    load_trace,
    save_trace,
    subsample,
)

GOOD = {"format": "brushfire-trace", "version": 1, "dashboard": "flights",
        "events": [{"t": 0, "message": {"type": "brush", "view": "delay", "interval": [-20, 40]}},
                   {"t": 16.7, "message": {"type": "brush", "id": 9, "view": "day",
                                           "interval": ["2001-01-02T00:00:00+00:00", None]}},
                   {"t": 16.7, "message": {"type": "select", "view": "origin", "values": ["ORD"]}},
                   {"t": 900, "message": {"type": "parameter", "name": "destination", "value": None}},
                   {"t": 1000, "message": {"type": "clear"}}],
        "meta": {"recorder": "test"}}


def test_a_trace_round_trips(tmp_path):
    trace = load_trace(_write(tmp_path, GOOD))
    assert trace.dashboard == "flights" and len(trace.events) == 5 and trace.state == {}
    assert trace.start_message() is None
    assert trace.events[1] == Event(16.7, {"type": "brush", "view": "day",
                                           "interval": ["2001-01-02T00:00:00+00:00", None]})
    again = load_trace(save_trace(trace, tmp_path / "again.json"))
    assert again == trace
    assert json.loads((tmp_path / "again.json").read_text())["format"] == "brushfire-trace"


def test_a_trace_saved_with_a_byte_order_mark_loads(tmp_path):
    """Editors on Windows begin UTF-8 files with a byte order mark; it is no JSON error."""
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode())
    assert load_trace(path) == load_trace(_write(tmp_path, GOOD))


def test_a_saved_trace_is_json_with_a_nan_category_as_null(tmp_path):
    trace = Trace("sensors", (Event(0.0, {"type": "select", "view": "level", "values": [float("nan")]}),))
    text = save_trace(trace, tmp_path / "nan.json").read_text()
    assert "NaN" not in text
    assert load_trace(tmp_path / "nan.json").events[0].message["values"] == [None]


def test_a_trace_may_start_from_a_selection_state(tmp_path):
    state = {"delay": {"interval": [-20, None]}, "origin": {"values": ["ORD"]},
             "destination": {"parameter": "LAX"}, "map": {"rect": {"x": [0, 1], "y": [2, 3]}}}
    trace = load_trace(_write(tmp_path, {**GOOD, "state": state}))
    assert trace.state == state
    assert trace.start_message() == {"type": "filters", "filters": state}
    again = load_trace(save_trace(trace, tmp_path / "again.json"))
    assert again == trace and subsample(again, 1).state == state
    assert filters_before(trace)[0] == state
    assert filters_before(trace)[2]["delay"] == {"interval": [-20, 40]}
    assert filters_before(trace)[2]["day"] == {"interval": ["2001-01-02T00:00:00+00:00", None]}


def _bad(**changes) -> dict:
    doc = json.loads(json.dumps(GOOD))
    for path, value in changes.items():
        *head, last = path.split("__")
        target = doc
        for key in head:
            target = target[int(key)] if key.isdigit() else target[key]
        if value is _DELETE:
            del target[int(last) if last.isdigit() else last]
        else:
            target[int(last) if last.isdigit() else last] = value
    return doc


_DELETE = object()


@pytest.mark.parametrize(("doc", "expected"), [
    ([1, 2], "t.json: a trace is a JSON object with format, version, dashboard and events"),
    (_bad(format="mosaic"), "t.json: format: must be 'brushfire-trace', got 'mosaic'"),
    (_bad(version=2), "t.json: version: must be 1, got 2"),
    (_bad(dashboard=""), "t.json: dashboard: must be the dashboard's name (a non-empty string)"),
    (_bad(extra=1), "t.json: unknown key 'extra'; a trace has: dashboard, events, format, meta, state, version"),
    (_bad(events={}), "t.json: events: must be a list of {t, message} objects"),
    (_bad(events__2=[0, {}]), "t.json: events[2]: an event is an object with exactly 't' and 'message', got list"),
    (_bad(events__1__when=3), "t.json: events[1]: an event is an object with exactly 't' and 'message', "
                              "got ['message', 't', 'when']"),
    (_bad(events__3__t=-1), "t.json: events[3].t: must be a number of milliseconds >= 0, got -1"),
    (_bad(events__3__t="soon"), "t.json: events[3].t: must be a number of milliseconds >= 0, got 'soon'"),
    (_bad(events__3__t=None), "t.json: events[3].t: must be a number of milliseconds >= 0, got null"),
    (_bad(events__1=None), "t.json: events[1]: an event is an object with exactly 't' and 'message', got null"),
    (_bad(version=None), "t.json: version: must be 1, got null"),
    (_bad(events__3__t=5), "t.json: events[3].t: 5 is before the previous event's 16.7: times never decrease"),
    (_bad(events__0__message__interval=_DELETE),
     't.json: events[0].message: brush.interval: missing; brush takes: view, interval, y, id '
     '(message: {"type": "brush", "view": "delay"})'),
    (_bad(events__2__message__type="zoom"), "t.json: events[2].message: type: unknown message type 'zoom'; "
                                            "messages: brush, select, clear, parameter, filters, highlight, "
                                            "filter, details, forward, dimension, dimension_forward, state"),
    (_bad(state={"delay": [-20, 40]}), "t.json: state.delay: [-20, 40] is not a tagged filter; a filter is "
                                       'one of {"interval": [lo, hi]}, '),
    (_bad(state={"delay": {"intervall": [-20, 40]}}), "t.json: state.delay: unknown filter 'intervall'"),
    (_bad(events__4__message="clear"), "t.json: events[4].message: must be a client message object"),
])
def test_bad_traces_are_rejected_naming_the_event(tmp_path, doc, expected):
    with pytest.raises(TraceError) as e:
        load_trace(_write(tmp_path, doc))
    assert str(e.value).replace(f"{tmp_path}/", "").startswith(expected)


def test_the_trace_doc_quotes_the_rejections_as_sent(tmp_path):
    """docs/trace.md's examples of rejected traces are load_trace's messages, word for word
    up to their "…" (it quoted a trace without `format` as "got None", Python's spelling,
    where the message says "got null", as JSON does)."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "trace.md").read_text()
    quoted = doc.split("## Validation", 1)[1].split("```")[1].strip().splitlines()
    brush = {"t": 0, "message": {"type": "brush", "view": "delay", "interval": [-20, 40]}}
    clear = {"t": 180, "message": {"type": "clear"}}
    bad = [{**GOOD, "events": [brush] * 12 + [{"t": 0, "message": {"type": "brush", "view": "delay"}}]},
           {**GOOD, "events": [brush, brush, clear, {**clear, "t": 120}]},
           {k: v for k, v in GOOD.items() if k != "format"},
           {**GOOD, "state": {"delay": [-20, 40]}}]
    sent = []
    for trace in bad:
        with pytest.raises(TraceError) as e:
            load_trace(_write(tmp_path, trace))
        sent.append(str(e.value).replace(f"{tmp_path}/", ""))
    assert len(quoted) == len(sent)
    for line, message in zip(quoted, sent, strict=True):
        assert message.startswith(line.removesuffix("…")), (line, message)


def test_unreadable_files_say_so(tmp_path):
    (tmp_path / "t.json").write_text("{oops")
    with pytest.raises(TraceError, match=r"t.json: not valid JSON"):
        load_trace(tmp_path / "t.json")
    with pytest.raises(TraceError, match="cannot read the trace"):
        load_trace(tmp_path / "missing.json")


def test_subsample_keeps_every_non_brush_message_and_spreads_the_brushes():
    events = []
    for _ in range(3):
        events += [Event(float(len(events)), {"type": "brush", "view": "v", "interval": [i, i + 5]})
                   for i in range(100)]
        events.append(Event(float(len(events)), {"type": "clear", "view": "v"}))
    trace = Trace("d", tuple(events))
    small = subsample(trace, 30)
    brushes = [e for e in small.events if e.message["type"] == "brush"]
    assert [e for e in small.events if e.message["type"] == "clear"] == \
        [e for e in events if e.message["type"] == "clear"]
    assert 25 <= len(brushes) <= 30
    assert list(small.events) == sorted(small.events, key=lambda e: e.t)  # order and times kept
    assert small.meta["subsample"] == f"{len(small.events)} of {len(events)} events"
    assert subsample(trace, None) is trace and subsample(trace, 10_000) is trace


def _write(tmp_path, doc) -> str:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_filters_before_each_event_follow_brushes_selects_parameters_and_clears():
    m = [{"type": "brush", "view": "a", "interval": [17.35, 17.35]},
         {"type": "brush", "view": "map", "interval": [1, 2], "y": [4, 3]},
         {"type": "select", "view": "origin", "values": ["ORD"]},
         {"type": "parameter", "name": "dest", "value": "LAX"},
         {"type": "brush", "view": "a", "interval": [17.35, 17.42]},
         {"type": "clear", "view": "map"},
         {"type": "parameter", "name": "dest", "value": None},
         {"type": "clear"},
         {"type": "state"}]
    trace = Trace("d", tuple(Event(float(i), x) for i, x in enumerate(m)))
    before = filters_before(trace)
    a, a2 = {"interval": [17.35, 17.35]}, {"interval": [17.35, 17.42]}
    assert before[0] == {} and before[1] == {"a": a}
    assert before[4] == {"a": a, "map": {"rect": {"x": [1, 2], "y": [4, 3]}}, "origin": {"values": ["ORD"]},
                         "dest": {"parameter": "LAX"}}
    assert before[6] == {"a": a2, "origin": {"values": ["ORD"]}, "dest": {"parameter": "LAX"}}
    assert before[7] == {"a": a2, "origin": {"values": ["ORD"]}} and before[8] == {}
