"""Replay in this process: each client a session of a dashboard opened here, every message
through `protocol.handle` (the server's own dispatcher) without a network in between.
`brushfire bench --in-process` uses it to time the engine alone, with the same traces,
check and report as the WebSocket replay (bench/replay.py).

Latency is the wall time of the `protocol.handle` call; `engine_ms` the reply's `ms`.
Clients run on threads, each on its own session; messages are answered one at a time per
client, as fast as possible (a trace's times are ignored).
"""

from __future__ import annotations

import threading
import time

from brushfire import protocol, wire
from brushfire.bench.replay import Keep, ReplayError, ReplayResult, _record
from brushfire.bench.trace import Trace


def replay_in_process(served, trace: Trace, clients: int = 1, keep_every: int = 0) -> ReplayResult:
    """Replay `trace` on `clients` sessions of `served` (a Dashboard, or a baseline's),
    keeping every `keep_every`-th update reply of each (0: none; replay.Keep) as JSON text, as
    they are sent: kept as dicts, their lists made the collector pause the replay for up
    to 0.7 s (250,000 rows, two heatmaps of 20,000 and 30,000 cells, 3,000 events)."""
    t0 = time.perf_counter()
    results: list = [None] * clients
    errors: list[BaseException] = []

    def play(client: int) -> None:
        try:
            results[client] = _play(served, trace, client, t0, keep_every)
        except BaseException as e:  # noqa: BLE001 - reported by the caller's thread
            errors.append(e)

    threads = [threading.Thread(target=play, args=(c,), name=f"bench-client-{c}") for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    seconds = time.perf_counter() - t0
    return ReplayResult([r for recs, _ in results for r in recs], seconds,
                        [x for _, reps in results for x in reps])


def _play(served, trace: Trace, client: int, t0: float, keep_every: int):
    session = served.session()
    start = trace.start_message()
    if start is not None:
        reply = protocol.handle(session, start)
        if reply["type"] == "error":
            msg = f"the trace's starting state was refused: {reply['message']}"
            raise ReplayError(msg)
    records, replies, keep = [], [], Keep(keep_every)
    for i, ev in enumerate(trace.events):
        sent = time.perf_counter()
        reply = protocol.handle(session, {**ev.message, "id": i})
        received = time.perf_counter()
        records.append(_record(client, i, ev.message, sent, received, reply, t0))
        if keep(reply):
            replies.append((client, i, wire.dumps(reply)))
    return records, replies
