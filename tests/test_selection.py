"""brushfire.selection: the tagged selection state, its checks and its conversions; and
the `filters` message that sets one, all or nothing."""

from __future__ import annotations

import pytest

from brushfire import protocol, selection
from brushfire.errors import NotCapturedError
from brushfire.selection import SelectionError

STATE = {"delay": {"interval": [-20, None]}, "heat": {"rect": {"x": [0, 50], "y": [10, 90]}},
         "origin": {"values": ["ORD", "(other)"]}, "destination": {"parameter": "LAX"}}
TAGS = {"delay": "interval", "heat": "rect", "origin": "values", "destination": "parameter",
        "day": "interval"}


def test_a_state_round_trips_through_its_messages():
    state = selection.parse_state(STATE)
    assert selection.to_json(state) == STATE
    messages = [selection.message_of(n, f) for n, f in state.items()]
    assert messages == [
        {"type": "brush", "view": "delay", "interval": [-20, None]},
        {"type": "brush", "view": "heat", "interval": [0, 50], "y": [10, 90]},
        {"type": "select", "view": "origin", "values": ["ORD", "(other)"]},
        {"type": "parameter", "name": "destination", "value": "LAX"}]
    rebuilt = {}
    for m in messages:
        rebuilt = selection.apply_message(rebuilt, m)
    assert rebuilt == STATE
    assert selection.apply_message(rebuilt, {"type": "parameter", "name": "destination", "value": None}) == \
        {k: v for k, v in STATE.items() if k != "destination"}
    assert selection.apply_message(rebuilt, {"type": "clear", "view": "heat"}).keys() == \
        {"delay", "origin", "destination"}
    assert selection.apply_message(rebuilt, {"type": "clear"}) == {}
    assert selection.apply_message(rebuilt, {"type": "filters", "filters": {"day": {"interval": [1, 2]}}}) == \
        {"day": {"interval": [1, 2]}}
    selection.check_names(state, TAGS)


def test_the_tag_a_name_takes_comes_from_the_dashboard_never_from_the_value():
    description = {"views": [{"name": "delay", "brush": "interval"}, {"name": "heat", "brush": "rect"},
                             {"name": "origin", "brush": "points"}, {"name": "hour", "brush": None}],
                   "parameters": [{"name": "destination", "op": "eq"}, {"name": "late", "op": "gte"}]}
    assert selection.tags_of_description(description) == {
        "delay": "interval", "heat": "rect", "origin": "values", "destination": "parameter",
        "late": "parameter"}


@pytest.mark.parametrize(("state", "message"), [
    ([1], "filters: [1] is not an object of filters"),
    ({"delay": [-20, 40]}, 'filters.delay: [-20, 40] is not a tagged filter; a filter is one of '
                           '{"interval": [lo, hi]}, {"rect": {"x": [lo, hi], "y": [lo, hi]}}, '
                           '{"values": [...]}, {"parameter": value}'),
    ({"delay": {}}, "filters.delay: {} is not a tagged filter"),
    ({"delay": {"range": [1, 2]}}, "filters.delay: unknown filter 'range'; a filter is one of"),
    ({"delay": {"interval": [1]}}, "filters.delay.interval: [1] has 1 items; an interval is [lo, hi]"),
    ({"heat": {"rect": [[1, 2], [3, 4]]}}, 'filters.heat.rect: [[1, 2], [3, 4]] is not {"x": [lo, hi], "y": [lo, hi]}'),
    ({"heat": {"rect": {"x": [1, 2], "yy": [3, 4]}}}, "filters.heat.rect.yy: unknown key 'yy'"),
    ({"origin": {"values": "ORD"}}, "filters.origin.values: 'ORD' is not a list of values"),
    ({"delays": {"interval": [1, 2]}}, "filters.delays: no brushable view or parameter named 'delays'; "
                                       "known: delay, heat, origin, destination, day; did you mean 'delay'?"),
    ({"origin": {"interval": [1, 2]}}, "filters.origin: 'origin' takes a selection of bars, "
                                       '{"values": [...]}, not {"interval": [lo, hi]}'),
    ({"destination": {"values": ["LAX"]}}, "filters.destination: 'destination' takes a parameter value"),
])
def test_bad_states_name_the_entry_the_problem_and_the_choices(state, message):
    with pytest.raises(SelectionError) as e:
        selection.check_names(selection.parse_state(state), TAGS)
    assert str(e.value).startswith(message)


def test_a_filters_message_is_all_or_nothing_even_when_the_engine_refuses(rich_local, monkeypatch):
    session = rich_local.session()
    first = {"hx": {"interval": [20, 60]}, "pdest": {"parameter": "AAA"}}
    assert protocol.handle(session, {"type": "filters", "filters": first})["filters"] == first
    before = protocol.handle(session, {"type": "state"})

    def refuse(r):  # (a checked request's select: the protocol's)
        msg = f"select on {r.view!r} needs per-row lineage, which is not kept"
        raise NotCapturedError(msg)

    monkeypatch.setattr(session, "apply_select", refuse)
    reply = protocol.handle(session, {"type": "filters", "id": 1, "filters": {
        "hk": {"interval": [0, 40]}, "cat": {"values": ["c01"]}}})
    assert reply == {"type": "error", "id": 1, "message": "select on 'cat' needs per-row lineage, which is not kept"}
    after = protocol.handle(session, {"type": "state"})
    assert after["filters"] == before["filters"] == first
    assert {n: v["counts"] for n, v in after["views"].items()} == \
        {n: v["counts"] for n, v in before["views"].items()}
