"""A dashboard's recorded workload (the spec's `workload`, docs/spec.md): how often a
recorded session (a trace, docs/trace.md) changes each filter, and which other filters are
active while it does, for what capture keeps per filter (engine/copies.py `choices`,
`then_dim`). Read when the capture is planned, before any Spark
work; a trace that cannot be read is a spec error naming the spec's file, line and key.

Only what capture needs is read: the filters each message changes (a brush's or a
selection's view, a parameter's name, every filter of a `filters` message). Replaying a
trace (`brushfire bench --trace`) checks each message whole."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from brushfire.errors import SpecError, SpecProblem
from brushfire.sizes import parse_size
from brushfire.spec import models as m
from brushfire.spec.problems import line_of

KEY = "workload.trace"


@dataclass(frozen=True)
class Workload:
    """The filters a recorded trace changes: messages per filter name (`moves`), out of
    `messages` filter changes in all; the copies' byte budget (None: the default,
    engine/copies.py `stored_budget`); and per pair of filters, the messages changing the
    first while the second is active (`beside`)."""

    trace: str | None
    moves: tuple[tuple[str, int], ...]  # (filter, messages), most first
    messages: int
    copy_budget: int | None
    beside: tuple[tuple[str, str, int], ...] = ()  # (changed, active, messages), most first

    def besides(self, changed: str, active: str) -> int:
        """Messages of the trace changing filter `changed` while `active` is active."""
        return next((n for a, b, n in self.beside if a == changed and b == active), 0)


def read_workload(dash: m.DashboardSpec) -> Workload | None:
    """The spec's workload, its trace read (None: the spec declares none)."""
    w = dash.workload
    if w is None:
        return None
    budget = None if w.copy_budget is None else parse_size(w.copy_budget)
    if w.trace is None:
        return Workload(None, (), 0, budget)
    events = _read(dash, w.trace)
    names = known_filters(dash)
    _check_names(dash, w.trace, events, names)
    counts = filter_moves(events, names)
    beside = tuple((a, b, n) for (a, b), n in filters_beside(events, names).most_common())
    return Workload(w.trace, tuple(counts.most_common()), sum(counts.values()), budget, beside)


def known_filters(dash: m.DashboardSpec) -> set[str]:
    """The names a message may change: brushable and selectable views, and parameters."""
    return {v.name for v in dash.views if m.brush_of(v) != "none"} | {
        p.name for p in dash.interactions.parameters}


def changed_filters(event) -> list[str]:
    """The filter names a trace event's message changes: a brush's or a selection's view,
    a parameter's name, every filter of a `filters` message (none for other events)."""
    msg = event.get("message") if isinstance(event, dict) else None
    if not isinstance(msg, dict):
        return []
    kind = msg.get("type")
    if kind in ("brush", "select"):
        changed = [msg.get("view")]
    elif kind == "parameter":
        changed = [msg.get("name")]
    elif kind == "filters" and isinstance(msg.get("filters"), dict):
        changed = list(msg["filters"])
    else:
        return []
    return [n for n in changed if isinstance(n, str)]


def filter_moves(events: list, names: set[str]) -> Counter:
    """Messages per filter of `names` among a trace's events (others: not counted)."""
    return Counter(n for e in events for n in changed_filters(e) if n in names)


def _check_names(dash: m.DashboardSpec, path: str, events: list, names: set[str]) -> None:
    """A trace changing filters the dashboard does not have (one recorded on another
    dashboard, or before views were renamed) is refused, naming them and their events:
    taken silently, their changes went uncounted and the copies were chosen from what
    was left, often nothing."""
    unknown: dict[str, list[int]] = {}
    for i, e in enumerate(events):
        for n in changed_filters(e):
            if n not in names:
                unknown.setdefault(n, []).append(i)
    if not unknown:
        return
    shown = [f"{n!r} ({', '.join(f'events[{i}]' for i in at[:3])}{', ...' if len(at) > 3 else ''})"
             for n, at in list(unknown.items())[:5]]
    more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
    msg = (f"the trace {path} changes filters the dashboard does not have: {', '.join(shown)}{more}; "
           f"its filters: {', '.join(sorted(names)) or 'none'}")
    _fail(dash, msg, "give the trace of a session of this dashboard (the page's Record control), "
                     "or remove those events")


def filters_beside(events: list, names: set[str]) -> Counter:
    """Messages of a trace changing filter a (of `names`) while filter b is active, per
    (a, b): the filters a session holds, followed through brushes and selections (an
    empty one, or a null interval, clears), parameters (null clears), clears and
    `filters` messages. Pure."""
    out: Counter = Counter()
    active: set[str] = set()
    for e in events:
        msg = e.get("message") if isinstance(e, dict) else None
        if not isinstance(msg, dict):
            continue
        kind = msg.get("type")
        if kind == "clear":
            view = msg.get("view")
            active = active - {view} if isinstance(view, str) else set()
            continue
        if kind == "filters" and isinstance(msg.get("filters"), dict):
            now = {n for n, f in msg["filters"].items() if isinstance(n, str) and f}
            out.update((a, b) for a in now ^ active for b in now & active if a in names and b in names)
            active = now
            continue
        if kind in ("brush", "select"):
            name, value = msg.get("view"), msg.get("interval", msg.get("values"))
            on = isinstance(value, list) and bool(value) and not (
                kind == "brush" and all(x is None for x in value))
        elif kind == "parameter":
            name, on = msg.get("name"), msg.get("value") is not None
        else:
            continue
        if not isinstance(name, str) or name not in names:
            continue
        out.update((name, b) for b in active if b != name)
        active = active | {name} if on else active - {name}
    return out


def _read(dash: m.DashboardSpec, path: str) -> list:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        _fail(dash, f"cannot read the trace {path}: {e.strerror}",
              "record one with the page's Record control, or `brushfire bench --save-trace FILE`")
    except ValueError as e:
        _fail(dash, f"the trace {path} is not valid JSON: {e}")
    if not isinstance(data, dict) or data.get("format") != "brushfire-trace" \
            or not isinstance(data.get("events"), list):
        _fail(dash, f"{path} is not a brushfire trace (docs/trace.md: an object with "
                    "\"format\": \"brushfire-trace\" and a list of \"events\")")
    return data["events"]


def _fail(dash: m.DashboardSpec, msg: str, hint: str = ""):
    line = line_of(getattr(dash, "_lines", {}), ("workload", "trace"))
    raise SpecError([SpecProblem(getattr(dash, "_filename", "<spec>"), line, KEY, msg, hint)])
