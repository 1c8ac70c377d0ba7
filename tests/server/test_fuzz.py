"""Fuzzing the WebSocket server: thousands of mutated and malformed messages (wrong types,
huge and non-finite numbers, deep nesting, unicode, truncated JSON, binary frames,
oversized messages, bursts that coalesce) from several real clients against a real
uvicorn server. Every message gets exactly one reply, no connection drops, nothing
fails inside the server, each session's state is exactly what its accepted messages
make it, and an observing session's state never changes.

BRUSHFIRE_FUZZ_MESSAGES (default 10,000) sets how many; BRUSHFIRE_FUZZ_SEED the seed.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from brushfire import protocol, wire
from brushfire.server import create_app
from brushfire.server.app import MAX_FRAME_BYTES, uvicorn_options
from live_server import live_server

pytestmark = pytest.mark.spark

MESSAGES = int(os.environ.get("BRUSHFIRE_FUZZ_MESSAGES", "10000"))
SEED = int(os.environ.get("BRUSHFIRE_FUZZ_SEED", "20261123"))
CLIENTS = 3
REPLY_TIMEOUT = 30.0
FIRST_ID = 10_000  # above every id a mutation may put in (0, 1 for true, -1, ...)
CHANGING = {"brush", "select", "clear", "parameter"}  # the message types that change a session

RAW = "@@raw{}@@"  # a placeholder replaced by a raw JSON literal after json.dumps
RAW_LITERALS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e999", "1" + "0" * 400, "-" + "9" * 4400,
                "1e-400", "0.1e1", "-0", "123456789012345678901234567890", "1E308", "\"\\ud800\"",
                "\"\\u0000\"", "[" * 40 + "]" * 40, "[" * 3000, "{\"a\":" * 20 + "1" + "}" * 20]
WEIRD = [None, True, False, 0, -1, 1.5, -0.0, 2**63, -(2**63) - 1, 10**30, 1e308, -1e308, 5e-324,
         "", "x", "yesterday", "2009-13-01", "2021-01-01", "2021-02-03T04:05:06.789Z", "1e9",
         "(other)", "c01", "c99", "AAA", "aaa", "\u0000", "é🔥\u202e\ufeff", "a" * 2000, "🔥" * 300,
         [], [1], [[1, 2]], [None, None], ["2021-01-01", None], [1e308, -1e308], [1, 2, 3], {},
         {"a": 1}, {"type": "state"}, list(range(200))]


def valid_messages(rng: random.Random) -> list[dict]:
    """One well-formed message of each kind, with random but sensible values."""
    def num(lo, hi):
        return rng.choice([round(rng.uniform(lo, hi), rng.choice([0, 1, 3])), None, rng.randint(lo, hi)])

    def day():
        return rng.choice([f"2021-{rng.randint(1, 4):02d}-{rng.randint(1, 28):02d}", None,
                           f"2021-02-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:30:00Z"])

    cats = [f"c{i:02d}" for i in range(30)] + ["(other)"]
    return [
        {"type": "brush", "view": "hx", "interval": [num(-10, 60), num(40, 110)]},
        {"type": "brush", "view": "hk", "interval": [num(-30, 50), num(30, 130)]},
        {"type": "brush", "view": "week", "interval": [day(), day()]},
        {"type": "brush", "view": "heat", "interval": [num(0, 50), num(50, 100)],
         "y": [num(-20, 50), num(50, 120)]},
        {"type": "select", "view": "cat", "values": rng.sample(cats, rng.randint(0, 3))},
        {"type": "parameter", "name": "pdest", "value": rng.choice(["AAA", "BBB", "CCC", "DDD", "EEE", None])},
        {"type": "parameter", "name": "pm", "value": num(-60, 320)},
        {"type": "parameter", "name": "pt", "value": day()},
        {"type": "clear", "view": rng.choice(["hx", "hk", "cat", "week", "heat", "pdest", "pm", "pt"])},
        {"type": "clear"},
        {"type": "highlight", "source": "cat", "bars": rng.sample(range(5), rng.randint(0, 2))},
        {"type": "details", "page": rng.choice([0, 1, 7, 10**6]), "page_size": rng.choice([None, 1, 5, 50]),
         **rng.choice([{}, {"view": "hx"}, {"view": "cat", "bars": [0, 1]}, {"columns": ["x", "t"]}])},
        {"type": "state"},
    ]


def mutate(rng: random.Random, msg: dict) -> str | bytes:
    """A message as the frame to send: valid, or broken in one or two ways."""
    msg = json.loads(json.dumps(msg))
    raws: list[str] = []

    def weird():
        if rng.random() < 0.3:
            raws.append(rng.choice(RAW_LITERALS))
            return RAW.format(len(raws) - 1)
        return rng.choice(WEIRD)

    how = rng.random()
    if how < 0.30:
        pass  # valid
    elif how < 0.55:  # one field's value replaced
        key = rng.choice(list(msg))
        msg[key] = weird()
    elif how < 0.65:  # inside a list field
        lists = [k for k, v in msg.items() if isinstance(v, list) and v]
        if lists:
            k = rng.choice(lists)
            msg[k][rng.randrange(len(msg[k]))] = weird()
        else:
            msg["id"] = weird()
    elif how < 0.72:  # a field removed or added
        if rng.random() < 0.5 and len(msg) > 1:
            del msg[rng.choice(list(msg))]
        else:
            msg[rng.choice(["extra", "view", "name", "values", "bars", "y", "page", "\u00e9"])] = weird()
    elif how < 0.76:  # an unknown or odd type
        msg["type"] = rng.choice(["zoom", "BRUSH", "", None, 3, ["brush"], "brush\u0000", "state "])
    elif how < 0.80:
        msg = weird()  # not an object at all
    text = json.dumps(msg)
    for i, raw in enumerate(raws):
        text = text.replace(json.dumps(RAW.format(i)), raw)
    how = rng.random()
    if how < 0.06:  # truncated or corrupted text
        cut = rng.randrange(len(text) + 1)
        text = text[:cut] + rng.choice(["", "}", "]", "\"", ",", "\\", "\u2028", "\ud7ff"])
    elif how < 0.09:
        return text.encode()  # the same JSON as a binary frame
    elif how < 0.11:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))  # binary garbage
    elif how < 0.12:
        return rng.choice([" " * 70_000, '{"type": "state", "pad": "' + "\u20ac" * 25_000 + '"}',
                           "[" * rng.randint(17, 200_000)])  # over 64 KiB or too deep
    elif how < 0.14:
        text = "[" * rng.randint(17, 5000) + text
    return text


def fuzz_client(addr: str, seed: int, count: int, out: dict) -> None:
    """Send `count` fuzzed messages in bursts of 1-4 and read exactly one reply each. Logs
    the messages the session applied (their `update` replies, by id) in order."""
    rng = random.Random(seed)
    applied: list[dict] = []
    problems: list[str] = []
    stats = {"update": 0, "error": 0, "skipped": 0, "other": 0}
    sent_by_id: dict[int, dict] = {}
    with connect(f"ws://{addr}/ws/rich", max_size=None, open_timeout=30) as ws:
        n, next_id = 0, FIRST_ID
        while n < count:
            burst = min(rng.choice([1, 1, 1, 2, 4]), count - n)
            for _ in range(burst):
                msg = rng.choice(valid_messages(rng))
                next_id += 1
                if rng.random() < 0.9:
                    msg = {**msg, "id": next_id}
                frame = mutate(rng, msg)
                try:  # what the server will see
                    seen = wire.decode_message(frame)
                except protocol.ProtocolError:
                    seen = None
                if seen is not None and str(seen.get("type")) in CHANGING and seen.get("id") != next_id:
                    seen = {**seen, "id": next_id}  # whatever may change the state is tracked
                    frame = json.dumps(seen)
                if seen is not None and seen.get("id") == next_id:
                    sent_by_id[next_id] = seen
                ws.send(frame)
            for _ in range(burst):
                try:
                    reply = json.loads(ws.recv(timeout=REPLY_TIMEOUT))
                except TimeoutError:
                    problems.append(f"no reply after message {n} (seed {seed})")
                    break
                kind = reply["type"] if reply["type"] in stats else "other"
                stats[kind] += 1
                if reply["type"] == "error" and "internal error" in reply["message"]:
                    problems.append(reply["message"])
                sent = sent_by_id.get(reply.get("id"))
                if reply["type"] == "update" and sent is not None:
                    applied.append(sent)
            n += burst
            if problems:
                break
        final = json.loads(_ask(ws, {"type": "state", "id": "final"}))
    out[seed] = {"applied": applied, "problems": problems, "stats": stats, "final": final}


def _ask(ws, message: dict) -> str:
    ws.send(json.dumps(message))
    while True:
        text = ws.recv(timeout=REPLY_TIMEOUT)
        if json.loads(text).get("id") == message["id"]:
            return text


@pytest.fixture
def server(rich_dash):
    with live_server(create_app([rich_dash]), **uvicorn_options()) as addr:
        yield addr


class ErrorLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))


def test_fuzzed_messages_all_get_a_reply_and_leak_nothing(server, rich_dash):
    errors = ErrorLog()
    loggers = [logging.getLogger(n) for n in ("uvicorn.error", "brushfire.server", "brushfire.protocol")]
    for lg in loggers:
        lg.addHandler(errors)
    try:
        t0 = time.perf_counter()
        with connect(f"ws://{server}/ws/rich") as observer:
            for m in [{"type": "brush", "id": "o1", "view": "hx", "interval": [10, 70]},
                      {"type": "select", "id": "o2", "view": "cat", "values": ["c00", "c02"]},
                      {"type": "parameter", "id": "o3", "name": "pdest", "value": "BBB"}]:
                _ask(observer, m)
            before = json.loads(_ask(observer, {"type": "state", "id": "o4"}))
            results: dict[int, dict] = {}
            threads = [threading.Thread(target=fuzz_client,
                                        args=(server, SEED + i, MESSAGES // CLIENTS, results))
                       for i in range(CLIENTS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=600)
            after = json.loads(_ask(observer, {"type": "state", "id": "o5"}))
        seconds = time.perf_counter() - t0
    finally:
        for lg in loggers:
            lg.removeHandler(errors)

    assert len(results) == CLIENTS, "a fuzz client failed (connection dropped?)"
    for seed, r in results.items():
        assert not r["problems"], (seed, r["problems"][:3])
        total = sum(r["stats"].values())
        assert total == MESSAGES // CLIENTS, (seed, r["stats"])
        assert r["stats"]["error"] > total // 10 and r["stats"]["update"] > total // 20, r["stats"]
        # the session's state is exactly what the messages it accepted make it
        replay = rich_dash.session()
        for msg in r["applied"]:
            assert protocol.handle(replay, msg)["type"] == "update", msg
        want = protocol.handle(replay, {"type": "state"})
        assert r["final"]["filters"] == want["filters"], seed
        assert r["final"]["views"] == want["views"], seed
    # another session's state never changed
    assert after["filters"] == before["filters"] and after["views"] == before["views"]
    assert not errors.records, errors.records[:3]
    health = httpx.get(f"http://{server}/health").json()
    assert health["status"] == "ok"
    print(f"\n{MESSAGES} fuzzed messages from {CLIENTS} clients in {seconds:.1f} s: "
          + ", ".join(f"seed {s}: {r['stats']}" for s, r in sorted(results.items())))


def test_frames_over_the_transport_limit_close_only_their_connection(server):
    with connect(f"ws://{server}/ws/rich") as bystander:
        _ask(bystander, {"type": "brush", "id": 1, "view": "hx", "interval": [0, 30]})
        for frame in ["x" * (MAX_FRAME_BYTES + 1), b"\x00" * (2 * MAX_FRAME_BYTES)]:
            with connect(f"ws://{server}/ws/rich", max_size=None) as ws:
                with pytest.raises(ConnectionClosed) as closed:  # on sending it, or after
                    ws.send(frame)
                    ws.recv(timeout=REPLY_TIMEOUT)
                # the close frame, never a reset (server/transport.py reads the frame's bytes)
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
        state = json.loads(_ask(bystander, {"type": "state", "id": 2}))
        assert state["filters"] == {"hx": {"interval": [0, 30]}}
