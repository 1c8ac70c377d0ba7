"""Fuzzing `protocol.handle` in this process (no Spark, no server): every message type
(the twelve of docs/protocol.md), each field mutated (wrong types, missing, extra, NaN and
infinities given in Python, huge numbers and arrays, deep nesting, strings of 1 MB,
unknown names, filters of the wrong kind for their view, bad ISO times, out-of-range
pages, fields of another message type), as dicts and as JSON text. Every message gets one
reply, never an internal error; an error leaves the session as it was; the next message is
answered as a fresh session replaying the accepted ones answers it; and the selection
state a reply gives, applied by a `filters` message to a fresh session, filters the same
rows. On the rich dashboard (every kind of filter) and a star schema (joins, dimension
lineage); tests/server/test_fuzz.py sends such messages over real WebSockets.

BRUSHFIRE_PROTOCOL_FUZZ (default 3,000) sets the messages per run; the seeds are fixed."""

from __future__ import annotations

import copy
import json
import math
import os
import random

import pytest

from brushfire import protocol, wire
from star_schemas import open_star

MESSAGES = int(os.environ.get("BRUSHFIRE_PROTOCOL_FUZZ", "3000"))
TYPES = ["brush", "select", "clear", "parameter", "filters", "highlight", "filter", "details",
         "forward", "dimension", "dimension_forward", "state"]
WEIRD = [None, True, False, 0, -1, 1.5, -0.0, 2**63, -(2**63) - 1, 10**30, 10**400, 1e308, -1e308,
         5e-324, math.nan, math.inf, -math.inf, "", "x", "yesterday", "2009-13-01", "2021-01-01",
         "2021-02-03T04:05:06.789+25:00", "9999-12-31T23:59:59-01:00", "2021-01-01T24:00:00", "NaN",
         "Infinity", "-Infinity", "(other)", "c01", "AAA", "\u0000", "\ud800", "é🔥\u202e\ufeff",
         "a" * 1_000_000, [], [1], [[1, 2]], [None, None], ["2021-01-01", None], [1, 2, 3],
         [math.inf, None], {}, {"a": 1}, {"interval": [1, 2]}, {"values": ["c01"]}, {"parameter": 1},
         {"rect": {"x": [1, 2], "y": [1, 2]}}, {"type": "state"}, list(range(20_000)),
         [[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]], "hx", "cat", "heat", "week", "mean_m", "pdest", "pm",
         "store", "region", "item", "zone", "amount", "column:x", "t", "rid", "store.city",
         9007199254740993, "9007199254740993"]


def rich_messages(rng: random.Random) -> list[dict]:
    def num(lo, hi):
        return rng.choice([round(rng.uniform(lo, hi), 1), None, rng.randint(lo, hi)])

    def day():
        return rng.choice([f"2021-{rng.randint(1, 4):02d}-{rng.randint(1, 28):02d}", None, "2021-02-03T12:30:00Z"])

    return [
        {"type": "brush", "view": "hx", "interval": [num(-10, 60), num(40, 110)]},
        {"type": "brush", "view": "week", "interval": [day(), day()]},
        {"type": "brush", "view": "heat", "interval": [num(0, 50), num(50, 100)], "y": [num(-20, 50), num(50, 120)]},
        {"type": "select", "view": "cat", "values": rng.sample(["c00", "c01", "c02", "c29", "(other)"], 2)},
        {"type": "parameter", "name": "pdest", "value": rng.choice(["AAA", "BBB", None])},
        {"type": "parameter", "name": "pm", "value": num(-60, 320)},
        {"type": "parameter", "name": "pt", "value": day()},
        {"type": "clear", "view": rng.choice(["hx", "cat", "heat", "pdest", "pt"])},
        {"type": "filters", "filters": {"hx": {"interval": [num(0, 50), num(50, 100)]}, "cat": {"values": ["c01"]},
                                        "heat": {"rect": {"x": [1, 50], "y": [0, 80]}}, "pm": {"parameter": 100},
                                        "week": {"interval": [day(), None]}}},
        {"type": "highlight", "source": "cat", "bars": [rng.randrange(5)], "targets": ["hx"]},
        {"type": "details", "view": "hx", "bars": [1, 2], "page": rng.choice([0, 1, 10**6]), "page_size": 5,
         "columns": ["x", "t"], "order_by": rng.choice(["x", "cat", "t"]), "descending": rng.random() < 0.5},
        {"type": "forward", "rids": rng.sample(range(3000), 3)},
        {"type": "filter", "column": "x", "interval": [1, 2]},
        {"type": "dimension", "join": "store"},
        {"type": "state"},
    ]


def star_messages(rng: random.Random) -> list[dict]:
    return [
        {"type": "brush", "view": "amount", "interval": [rng.choice([None, 0, 10.5]), rng.choice([None, 60, 200])]},
        {"type": "brush", "view": "opened", "interval": ["2016-01-01", None]},
        {"type": "select", "view": "zone", "values": rng.sample(["north", "south", "east"], rng.randint(0, 2))},
        {"type": "parameter", "name": "pbrand", "value": rng.choice(["b0", "b1", None])},
        {"type": "parameter", "name": "pprice", "value": rng.choice([100, 250.5, None])},
        {"type": "filters", "filters": {"amount": {"interval": [0, 50]}, "pbrand": {"parameter": "b1"}}},
        {"type": "highlight", "source": "zone", "bars": [0], "targets": ["amount", "brand"]},
        {"type": "details", "view": "city", "bars": [0], "page_size": 5, "columns": ["qty", "store.city"],
         "order_by": rng.choice(["qty", "store.city", "item.brand"]), "descending": rng.random() < 0.5},
        {"type": "forward", "rids": rng.sample(range(2000), 3)},
        {"type": "dimension", "join": rng.choice(["store", "region", "item"]), "view": "zone", "bars": [0],
         "page_size": 3},
        {"type": "dimension_forward", "join": rng.choice(["store", "item", "region"]),
         "key": rng.choice([0, 1, 999, "3", "sku-001", "R0"])},
        {"type": "clear"},
        {"type": "state"},
    ]


def mutate(rng: random.Random, msg: dict) -> dict:
    """The message valid, or broken in one or two ways."""
    msg = copy.deepcopy(msg)

    def weird():
        return copy.deepcopy(rng.choice(WEIRD))

    how = rng.random()
    if how < 0.2:
        return msg
    if how < 0.45:
        msg[rng.choice(list(msg))] = weird()
    elif how < 0.7:  # anywhere inside: replaced, removed or added to
        paths = []

        def walk(x, p):
            for k, v in (x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()):
                paths.append((*p, k))
                walk(v, (*p, k))
        walk(msg, ())
        *up, last = rng.choice(paths)
        parent = msg
        for k in up:
            parent = parent[k]
        r = rng.random()
        if r < 0.6:
            parent[last] = weird()
        elif isinstance(parent, dict):
            parent.pop(last) if r < 0.8 else parent.__setitem__(f"{last}x", weird())
        else:
            parent.append(weird())
    elif how < 0.85:
        msg[rng.choice(["extra", "view", "name", "values", "bars", "y", "page", "page_size", "interval",
                        "key", "join", "column", "order_by", "descending", "targets", "columns", "rids"])] = weird()
    else:
        msg["type"] = rng.choice(TYPES)  # the fields of another type
    return msg


def shown(x) -> str:
    try:
        return str(x)[:300]
    except ValueError:  # (an integer of more digits than Python prints)
        return "(a message holding an integer of over 4,300 digits)"


@pytest.fixture(scope="module")
def star(tmp_path_factory):
    return open_star(tmp_path_factory.mktemp("star"), 4)


@pytest.mark.parametrize("which", ["rich", "star"])
def test_fuzzed_messages_get_one_reply_and_change_only_what_they_say(which, rich_local, star):
    dash = rich_local if which == "rich" else star
    messages = rich_messages if which == "rich" else star_messages
    rng = random.Random(f"{which}-20261207")
    session, accepted, stats = dash.engine_session(), [], {"error": 0, "update": 0, "other": 0}
    state = protocol.handle(session, {"type": "state"})
    for n in range(MESSAGES):
        msg = mutate(rng, rng.choice(messages(rng)))
        try:
            given = json.dumps(msg, allow_nan=True) if rng.random() < 0.2 else msg
        except (TypeError, ValueError):
            given = msg
        reply = protocol.handle(session, given)
        where = f"message {n}: {shown(msg)} -> {shown(reply)}"
        assert isinstance(reply, dict) and reply.get("type"), where
        wire.dumps(reply)  # sendable
        stats[reply["type"] if reply["type"] in stats else "other"] += 1
        if reply["type"] == "error":
            text = reply["message"]
            assert "internal error" not in text and len(text) < 2000, where
            assert not any(raw in text for raw in ("Input should", "Field required", "valid here")), where
            after = protocol.handle(session, {"type": "state"})
            assert (after["filters"], after["views"]) == (state["filters"], state["views"]), where
            continue
        if reply["type"] == "update":
            accepted.append(msg)
            state = protocol.handle(session, {"type": "state"})
            # the selection state says what the session filters: applied afresh, the same rows
            fresh = dash.engine_session()
            again = protocol.handle(fresh, {"type": "filters", "filters": reply["filters"]})
            assert again["type"] == "update", (where, again)
            assert protocol.handle(fresh, {"type": "state"})["views"] == state["views"], where
            fresh.close()
    replay = dash.engine_session()
    for msg in accepted:
        assert protocol.handle(replay, msg)["type"] == "update", shown(msg)
    assert protocol.handle(replay, {"type": "state"})["views"] == state["views"]
    assert stats["error"] > MESSAGES // 4 and stats["update"] > MESSAGES // 20, stats
