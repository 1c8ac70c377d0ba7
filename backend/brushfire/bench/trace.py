"""Interaction traces: the client messages of one session with their times (docs/trace.md).

    {"format": "brushfire-trace", "version": 1, "dashboard": "flights",
     "events": [{"t": 0, "message": {"type": "brush", "view": "delay", "interval": [-20, 40]}},
                {"t": 16.7, "message": {"type": "clear"}}]}

`t` is milliseconds since the session started (a number >= 0, never decreasing);
`message` is a client message of docs/protocol.md. A message's `id` is ignored: the
replayer numbers the messages itself to match replies. A trace may start from a
selection state (`"state"`: tagged filters, brushfire/selection.py), set before the
first event. A bad trace is rejected with the file, the event and what is wrong.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from brushfire import selection
from brushfire.errors import BrushfireError
from brushfire.values import show

FORMAT = "brushfire-trace"
VERSION = 1
TOP_KEYS = {"format", "version", "dashboard", "events", "meta", "state"}


class TraceError(BrushfireError):
    """A trace file is not a valid brushfire trace; the message says where and why."""


@dataclass(frozen=True)
class Event:
    t: float  # ms since the session started
    message: dict  # a client message (without `id`)


@dataclass(frozen=True)
class Trace:
    dashboard: str
    events: tuple[Event, ...]
    meta: dict = field(default_factory=dict)  # free-form: workload, seed, recorder
    state: dict = field(default_factory=dict)  # the selection state the session starts from

    def to_json(self) -> dict:
        out = {"format": FORMAT, "version": VERSION, "dashboard": self.dashboard}
        if self.state:
            out["state"] = self.state
        out["events"] = [{"t": e.t, "message": e.message} for e in self.events]
        if self.meta:
            out["meta"] = self.meta
        return out

    def start_message(self) -> dict | None:
        """The `filters` message setting the starting state (None: the trace starts from
        no filters)."""
        return {"type": "filters", "filters": self.state} if self.state else None


def parse_trace(data: object, where: str = "trace") -> Trace:
    """Validate a decoded trace document; raises TraceError naming the event and problem."""
    if not isinstance(data, dict):
        _fail(where, "", "a trace is a JSON object with format, version, dashboard and events")
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        _fail(where, "", f"unknown key {unknown[0]!r}; a trace has: {', '.join(sorted(TOP_KEYS))}")
    if data.get("format") != FORMAT:
        _fail(where, "format", f"must be {FORMAT!r}, got {show(data.get('format'))}")
    if data.get("version") != VERSION:
        _fail(where, "version", f"must be {VERSION}, got {show(data.get('version'))}")
    dashboard = data.get("dashboard")
    if not isinstance(dashboard, str) or not dashboard:
        _fail(where, "dashboard", "must be the dashboard's name (a non-empty string)")
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        _fail(where, "meta", "must be an object")
    state = data.get("state", {})
    try:
        state = selection.to_json(selection.parse_state(state, "state"))
    except selection.SelectionError as e:
        _fail(where, "", str(e))
    events = data.get("events")
    if not isinstance(events, list):
        _fail(where, "events", "must be a list of {t, message} objects")
    from brushfire import protocol  # the server's own validation of messages

    out, last = [], 0.0
    for i, ev in enumerate(events):
        at = f"events[{i}]"
        if not isinstance(ev, dict) or set(ev) != {"t", "message"}:
            got = sorted(ev) if isinstance(ev, dict) else "null" if ev is None else type(ev).__name__
            _fail(where, at, f"an event is an object with exactly 't' and 'message', got {got}")
        t = ev["t"]
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            _fail(where, f"{at}.t", f"must be a number of milliseconds >= 0, got {show(t)}")
        if t < last:
            _fail(where, f"{at}.t", f"{t} is before the previous event's {last}: times never decrease")
        last = t
        message = ev["message"]
        if not isinstance(message, dict):
            _fail(where, f"{at}.message", "must be a client message object (docs/protocol.md)")
        try:
            protocol.parse(message)
        except protocol.ProtocolError as e:
            _fail(where, f"{at}.message", f"{e} (message: {json.dumps(message)[:200]})")
        out.append(Event(t, {k: v for k, v in message.items() if k != "id"}))
    return Trace(dashboard, tuple(out), meta, state)


def load_trace(path: str | Path) -> Trace:
    path = Path(path)
    try:
        # (utf-8-sig: a byte order mark, which editors on Windows write, is no JSON error)
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as e:
        msg = f"cannot read the trace {path}: {e.strerror}"
        raise TraceError(msg) from None
    except ValueError as e:
        msg = f"{path}: not valid JSON: {e}"
        raise TraceError(msg) from None
    return parse_trace(data, str(path))


def save_trace(trace: Trace, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    from brushfire import wire  # as the wire writes messages: NaN (a NaN category) as null

    path.write_text(wire.dumps(trace.to_json()) + "\n", encoding="utf-8")
    return path


def subsample(trace: Trace, limit: int | None) -> Trace:
    """At most about `limit` events, evenly spaced over the trace, with their recorded
    times; every event that is not a brush (clears, selects, parameters) is kept too, so
    the sweeps of a sliding brush still end with their clears. Brush messages give their
    whole interval, so the result is still a valid session."""
    n = len(trace.events)
    if limit is None or limit >= n:
        return trace
    if limit < 1:
        msg = "--limit must be at least 1"
        raise TraceError(msg)
    step = n / limit
    picks = {int(i * step) for i in range(limit)}
    picks |= {i for i, e in enumerate(trace.events) if e.message["type"] != "brush"}
    kept = tuple(trace.events[i] for i in sorted(picks))
    return Trace(trace.dashboard, kept, {**trace.meta, "subsample": f"{len(kept)} of {n} events"},
                 trace.state)


def filters_before(trace: Trace) -> list[dict]:
    """For each event, the filters its message meets, in the tagged form
    (brushfire/selection.py): the trace's starting state, then what the messages before
    it left active. For reading replays (which events were slow, and among which
    filters); the server's own state is what replies report."""
    out, active = [], dict(trace.state)
    for e in trace.events:
        out.append(active)
        active = selection.apply_message(active, e.message)
    return out


def _fail(where: str, key: str, problem: str):
    msg = f"{where}: {key}: {problem}" if key else f"{where}: {problem}"
    raise TraceError(msg)
