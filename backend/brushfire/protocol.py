"""The interaction protocol: typed messages and `handle(session, message) -> reply`, the
one dispatcher the WebSocket server, the widget and the perf harness all use.

Client messages are JSON objects with a lowercase `type` and an optional `id` that the
reply echoes. A message that fails validation MUST get an `error` reply and MUST leave
the session unchanged; `handle` never raises, whatever it is given. Replies carry the
engine's compute time in `ms`. Limits (docs/protocol.md): a message is at most
MAX_MESSAGE_BYTES of UTF-8 and nests at most MAX_JSON_DEPTH arrays and objects; numbers
are finite; a details page is at most MAX_PAGE_SIZE rows.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from typing import Annotated, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from brushfire import values as V
from brushfire.engine.session import Session, Update, ViewData
from brushfire.errors import BrushfireError, InteractionError, NotCapturedError

MAX_MESSAGE_BYTES = 64 * 1024  # of UTF-8 (or of a binary frame), not characters
MAX_JSON_DEPTH = 16  # nested arrays and objects; a message needs 2
MAX_PAGE_SIZE = 10_000  # rows of one details page
MAX_PAGE = 2**31 - 1  # details page number
MAX_FORWARD_RIDS = 10_000  # rows of one forward message

log = logging.getLogger("brushfire.protocol")

# Values are taken as sent (no coercion: `true` stays a boolean, `"3"` a string) and checked
# by `check_values` with brushfire.values, whose errors say which bound or value is wrong.
Bound = Any  # a number, an ISO time on temporal views, or None for an open end
Value = Any  # a category, a dropdown choice, or a slider's number or ISO time


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int | str | None = None


class Brush(Message):
    """Interval brush on a view: lo <= x <= hi (rect brushes also give y)."""

    type: Literal["brush"]
    view: str
    interval: tuple[Bound, Bound]
    y: tuple[Bound, Bound] | None = None


class Select(Message):
    """Select categories of a categorical view ('(other)': everything beyond the top N)."""

    type: Literal["select"]
    view: str
    values: list[Value]


class Clear(Message):
    """Clear one view's brush or parameter, or every filter when `view` is omitted."""

    type: Literal["clear"]
    view: str | None = None


class Parameter(Message):
    type: Literal["parameter"]
    name: str
    value: Value


class Highlight(Message):
    """Linked highlighting from bars of `source` to `targets` (default: the declared ones,
    else every other view; undeclared pairs are answered lazily, on Spark)."""

    type: Literal["highlight"]
    source: str
    bars: list[int]
    targets: list[str] | None = None


class Filter(Message):
    """A filter on any column of the source, `lo <= column <= hi` or its value in `values`
    (null: the null rows); it filters every view, and is answered lazily, on Spark."""

    type: Literal["filter"]
    column: str
    interval: tuple[Bound, Bound] | None = None
    values: list[Value] | None = None


class Details(Message):
    """A page of the input rows behind bars of a view, or behind the current selection."""

    type: Literal["details"]
    view: str | None = None
    bars: list[int] | None = None
    page: int = Field(0, ge=0, le=MAX_PAGE)
    page_size: int | None = Field(None, ge=1, le=MAX_PAGE_SIZE)
    columns: list[str] | None = None


class Forward(Message):
    """Forward lineage: the bar each view shows rows `rids` in (e.g. the `rid` of a
    details row)."""

    type: Literal["forward"]
    rids: list[int] = Field(max_length=MAX_FORWARD_RIDS)


class State(Message):
    """Every view's current bars and the active filters."""

    type: Literal["state"]


ClientMessage = Annotated[Brush | Select | Clear | Parameter | Highlight | Details | Forward | Filter
                          | State, Field(discriminator="type")]
FILTER_TYPES = ("brush", "select", "clear", "parameter", "filter")  # messages that change filters
_adapter = pydantic.TypeAdapter(ClientMessage)


def parse(raw: str | bytes | dict) -> ClientMessage:
    """Validate a client message; raises ProtocolError with a readable reason."""
    raw = decode_message(raw) if isinstance(raw, (str, bytes, bytearray)) else raw
    if not isinstance(raw, dict):
        msg = "a message is a JSON object with a 'type'"
        raise ProtocolError(msg)
    try:
        return _adapter.validate_python(raw)
    except pydantic.ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        msg = f"{where}: {first['msg']}" if where else first["msg"]
        raise ProtocolError(msg, echo_id(raw.get("id"))) from None


def decode_message(raw: str | bytes | bytearray) -> dict:
    """A message's JSON object (`decode`); anything else raises ProtocolError."""
    msg = decode(raw)
    if not isinstance(msg, dict):
        text = "a message is a JSON object with a 'type'"
        raise ProtocolError(text)
    return msg


def decode(raw: str | bytes | bytearray):
    """The JSON value of a message's text (or a binary frame's UTF-8), checked in this
    order: size in bytes, nesting depth (before parsing: a deep message never reaches
    the recursive parser), then JSON with finite numbers only."""
    size = message_bytes(raw)
    if size > MAX_MESSAGE_BYTES:
        msg = f"message of {size:,} bytes is over the {MAX_MESSAGE_BYTES:,}-byte limit"
        raise ProtocolError(msg)
    if not isinstance(raw, str):
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as e:
            msg = f"not valid UTF-8 at byte {e.start}"
            raise ProtocolError(msg) from None
    opened = raw.count("[") + raw.count("{")  # fewer brackets than the limit: no need to scan
    if opened > MAX_JSON_DEPTH and json_depth(raw, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        msg = f"message nests arrays and objects more than {MAX_JSON_DEPTH} deep"
        raise ProtocolError(msg)
    try:
        return json.loads(raw, parse_constant=_no_constant, parse_float=_finite_float)
    except ProtocolError:
        raise
    except (ValueError, RecursionError) as e:
        msg = f"not valid JSON: {e}"
        raise ProtocolError(msg) from None


def message_bytes(raw: str | bytes | bytearray) -> int:
    """Size of a message in bytes (UTF-8 for text); above 4 MiB of text, a lower bound
    (every character is at least a byte): a huge text is not encoded just to measure it."""
    if not isinstance(raw, str):
        return len(raw)
    if len(raw) > 4 * 1024 * 1024:
        return len(raw)
    return len(raw.encode("utf-8", "surrogatepass"))


# a string (to its closing quote, or to the end if it has none: no rescans) or a bracket
_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


def json_depth(text: str, limit: int) -> int:
    """How deep arrays and objects nest in JSON text (strings skipped); stops counting
    once past `limit`. Linear, and never recursive."""
    depth = deepest = 0
    for m in _STRING_OR_BRACKET.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        elif c in "]}":
            depth -= 1
    return deepest


def _no_constant(name: str):
    msg = f"not valid JSON: {name} is not a JSON number (use null for an open end)"
    raise ProtocolError(msg)


def _finite_float(text: str) -> float:
    x = float(text)
    if x in (float("inf"), float("-inf")):
        msg = f"number {text if len(text) <= 30 else text[:29] + '…'} is beyond the range of numbers (±1.8e308)"
        raise ProtocolError(msg)
    return x


class ProtocolError(BrushfireError):
    def __init__(self, message: str, msg_id: Any = None) -> None:
        super().__init__(message)
        self.msg_id = msg_id


def handle(session: Session, raw: str | bytes | dict) -> dict:
    """Apply one client message to the session and return the reply. Never raises: bad
    input gets `{"type": "error", ...}` and leaves the session unchanged, and so does an
    unexpected failure (logged with its traceback)."""
    msg_id = echo_id(raw.get("id")) if isinstance(raw, dict) else None
    kind = "message"
    try:
        msg = parse(raw)
        msg_id, kind = msg.id, msg.type
        t0 = time.perf_counter()
        check_values(session, msg)
        reply = _dispatch(session, msg)
        reply.setdefault("ms", (time.perf_counter() - t0) * 1e3)
    except ProtocolError as e:
        return error_reply(str(e), e.msg_id if e.msg_id is not None else msg_id)
    except BrushfireError as e:
        return error_reply(str(e), msg_id)
    except Exception as e:  # noqa: BLE001 - one message must never end a session
        log.exception("brushfire: internal error handling a %s message", kind)
        return error_reply(f"internal error handling this {kind} message: {type(e).__name__}: "
                           f"{V.show(str(e), 200)}", msg_id)
    reply["id"] = msg_id
    return reply


def check_values(session: Session, msg) -> None:
    """Check a message's values against the dashboard before the engine sees them, so
    that the error names where the bad value is: bounds (numbers, or ISO times on
    temporal views and parameters), categories of a `select`, a dropdown's value. Uses
    only what every session offers (`plan`, `view`, `store.parameter_domain`); names the
    engine does not know are left to it (its error lists the known ones)."""
    kinds = {f.name: f.kind for f in session.plan.filters}
    if isinstance(msg, Brush) and kinds.get(msg.view) in ("interval", "rect"):
        temporal = _is_temporal(session, msg.view)
        for axis, pair in (("interval", msg.interval), ("y", msg.y)):
            for i, x in enumerate(pair or ()):
                _check(lambda x=x: V.time_bound(x) if temporal else V.number_bound(x),
                       f"brush on view {msg.view!r}: {axis}[{i}]")
    elif isinstance(msg, Select) and kinds.get(msg.view) == "points":
        choices = _choices(session.view(msg.view).labels)
        for i, x in enumerate(msg.values):
            _check(lambda x=x: choices.check(x), f"select on view {msg.view!r}: values[{i}]")
    elif isinstance(msg, Parameter) and msg.value is not None:
        if kinds.get(msg.name) == "param_eq":
            domain = session.store.parameter_domain(msg.name)[1]
            _check(lambda: _choices(domain).check(msg.value), f"parameter {msg.name!r}")
        elif kinds.get(msg.name) == "param_range":
            temporal = _is_temporal(session, msg.name)
            _check(lambda: V.time_bound(msg.value) if temporal else V.number_bound(msg.value),
                   f"parameter {msg.name!r}")


def _check(test, where: str) -> None:
    try:
        test()
    except InteractionError as e:
        msg = f"{where}: {e}"
        raise InteractionError(msg) from None


def _is_temporal(session, name: str) -> bool:
    """Whether a filter compares times: a temporal view's brush, or a slider whose range
    the store gives as ISO times."""
    view = next((v for v in session.plan.dashboard.views if v.name == name), None)
    if view is not None:
        return view.type == "temporal"
    kind, domain = session.store.parameter_domain(name)
    return kind == "range" and bool(domain) and isinstance(domain[0], str)


_choice_sets: dict[int, tuple[object, V.Choices]] = {}  # id(domain) -> (domain, its Choices)


def _choices(domain: list) -> V.Choices:
    """The values a categorical view (its bars) or a dropdown parameter takes, built once
    per domain list."""
    cached = _choice_sets.get(id(domain))
    if cached is None or cached[0] is not domain:
        cached = (domain, V.Choices(list(domain)))
        _choice_sets[id(domain)] = cached
    return cached[1]


def echo_id(msg_id):
    """A message's `id` as a reply may echo it: a number or a string, else None."""
    return msg_id if isinstance(msg_id, (int, float, str)) and not isinstance(msg_id, bool) else None


def filter_messages(filters: dict, kinds: dict[str, str]) -> list[dict]:
    """The messages that set `filters` on a cleared session, one per filter.

    `filters` is in the format replies carry (an interval brush `[[lo, hi], None]`, a rect
    brush `[[xlo, xhi], [ylo, yhi]]`, a categorical view's `[values]`, a parameter's value)
    or, for interval brushes, simply `[lo, hi]`. `kinds` maps every view with a brush and
    every parameter to its filter kind (interval, rect, points, param_eq, param_range).
    Values are checked when the messages are handled; unknown names raise here."""
    out: list[dict] = []
    for name, value in jsonable(filters).items():  # datetimes as ISO strings, tuples as lists
        kind = kinds.get(name)
        if kind is None:
            msg = f"no brush or parameter named {name!r}; have: {', '.join(sorted(kinds))}"
            raise InteractionError(msg)
        if kind.startswith("param_"):
            out.append({"type": "parameter", "name": name, "value": value})
        elif kind == "points":
            values = list(value) if isinstance(value, (list, tuple)) else [value]
            out.append({"type": "select", "view": name, "values": values})
        elif kind == "rect" and isinstance(value, (list, tuple)) and len(value) == 2:
            out.append({"type": "brush", "view": name, "interval": value[0], "y": value[1]})
        else:
            nested = isinstance(value, (list, tuple)) and value and isinstance(value[0], (list, tuple))
            out.append({"type": "brush", "view": name, "interval": value[0] if nested else value})
    return out


def error_reply(message: str, msg_id: Any = None) -> dict:
    return {"type": "error", "id": msg_id, "message": message}


def _dispatch(session: Session, msg) -> dict:
    if isinstance(msg, Brush):
        return update_reply(session, session.brush(msg.view, msg.interval, y=msg.y))
    if isinstance(msg, Select):
        return update_reply(session, session.select(msg.view, msg.values))
    if isinstance(msg, Clear):
        return update_reply(session, session.clear(msg.view))
    if isinstance(msg, Parameter):
        return update_reply(session, session.set_parameter(msg.name, msg.value))
    if isinstance(msg, Filter):
        filter_column = getattr(session, "filter_column", None)
        if filter_column is None:
            text = "filters on source columns are answered lazily, which this engine does not do"
            raise NotCapturedError(text)
        return update_reply(session, filter_column(msg.column, msg.interval, msg.values))
    if isinstance(msg, Highlight):
        views = (session.highlight(msg.source, msg.bars, targets=msg.targets) if msg.targets
                 else session.highlight(msg.source, msg.bars))
        return {"type": "highlight", "source": msg.source, "bars": msg.bars,
                "views": {n: view_json(v) for n, v in views.items()}}
    if isinstance(msg, Details):
        table = session.details(msg.view, msg.bars, msg.page, msg.page_size, msg.columns)
        total = session.count_selected(msg.view, msg.bars)
        return {"type": "details", "page": msg.page, "total": total,
                "rows": _jsonable_rows(table.to_pylist())}
    if isinstance(msg, Forward):
        return forward_reply(session, msg.rids)
    return {"type": "state", "views": {n: view_json(v) for n, v in session.views().items()},
            "filters": jsonable(session.filters), "selected": session.count_selected()}


def forward_reply(session: Session, rids: list[int]) -> dict:
    """The bars rows `rids` fall in, per view; `pruned`: the views whose bars per row were
    not captured (nothing filters or highlights them), so they are left out."""
    forward = getattr(session, "forward", None)
    if forward is None:
        msg = "forward lineage (the bars of given rows) is not offered by this engine"
        raise NotCapturedError(msg)
    views = forward(rids)
    pruned = [v.name for v in session.plan.dashboard.views if v.name not in views]
    reply = {"type": "forward", "rids": rids, "views": views, "pruned": pruned}
    if pruned:
        reply["note"] = (f"bars per row were not captured for {', '.join(pruned)}: nothing filters"
                         " or highlights them (brushfire plan)")
    return reply


def update_reply(session: Session, update: Update) -> dict:
    """The views an interaction changed, how each was computed, and the selected rows.
    Answered lazily (brushfire/fallback.py), also `lazy`: the views computed on Spark, why
    and in how long; cancelled by the next interaction, `cancelled` and no `selected`."""
    reply = {"type": "update", "views": {n: view_json(v) for n, v in update.views.items()},
             "methods": update.methods, "ms": update.seconds * 1e3,
             "filters": jsonable(session.filters)}
    lazy = getattr(update, "lazy", None)
    if lazy is not None:
        reply["lazy"] = {"views": lazy, "reason": update.reason, "ms": update.lazy_seconds * 1e3}
    if getattr(update, "cancelled", False):
        reply["cancelled"] = True
    else:
        reply["selected"] = session.count_selected()
    return reply


def working_message(session: Session, msg_id, seconds: float) -> dict:
    """What the server tells a client still waiting for the answer to message `msg_id`
    after `seconds`: with a lazy answer running, its stage and the share of its Spark
    tasks done."""
    progress = getattr(session, "progress", lambda: None)()
    out = {"type": "working", "id": msg_id, "seconds": round(seconds, 2), "lazy": progress is not None}
    if progress is not None:
        out["stage"], out["fraction"] = progress
    return out


def view_json(v: ViewData) -> dict:
    return {"counts": v.counts, "values": v.values}


def jsonable(x):
    """x with NaN and infinities as null and datetimes as ISO strings, for JSON."""
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, float) and (x != x or x in (math.inf, -math.inf)):
        return None
    if hasattr(x, "isoformat"):
        return x.isoformat()
    return x


def _jsonable_rows(rows: list[dict]) -> list[dict]:
    return [{k: jsonable(v) for k, v in r.items()} for r in rows]
