"""The interaction protocol: typed messages and `handle(session, message) -> reply`, the
one dispatcher the WebSocket server, the widget and the perf harness all use.

Client messages are JSON objects with a lowercase `type` and an optional `id` that the
reply echoes. A message that fails validation MUST get an `error` reply and MUST leave
the session unchanged; `handle` never raises, whatever it is given. Replies carry the
engine's compute time in `ms`. Limits (docs/protocol.md): a message is at most
MAX_MESSAGE_BYTES of UTF-8 and nests at most MAX_JSON_DEPTH arrays and objects; numbers
are finite; the limits of requests (a page's rows, a forward's rids) are brushfire/limits.py's,
which the sessions' Python API keeps too.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from typing import Annotated, Any, Literal, Union, cast

import orjson
import pydantic
from pydantic import BaseModel, ConfigDict, Field

from brushfire import selection as S
from brushfire import values as V
from brushfire.engine.api import (
    Capability,
    ForwardAPI,
    LazyAPI,
    LazyUpdate,
    SessionAPI,
    Update,
    ViewData,
    check_bars,
)
from brushfire.errors import BrushfireError, InteractionError, NotCapturedError
from brushfire.limits import MAX_FORWARD_RIDS, MAX_PAGE, MAX_PAGE_ROWS
from brushfire.views import view_type
from brushfire.views.base import check_brush_y

MAX_MESSAGE_BYTES = 64 * 1024  # of UTF-8 (or of a binary frame), not characters
MAX_JSON_DEPTH = 16  # nested arrays and objects; a message needs 2

log = logging.getLogger("brushfire.protocol")

# Values are taken as sent (no coercion: `true` stays a boolean, `"3"` a string) and checked
# by each message's `check` with brushfire.values, whose errors say which bound or value is wrong.
Bound = Any  # a number, an ISO time on temporal views, or None for an open end
Value = Any  # a category, a dropdown choice, or a slider's number or ISO time


def _not_bool(x: Any) -> Any:
    """JSON's true and false are not numbers (pydantic's lax int would take them as 1, 0)."""
    if isinstance(x, bool):
        msg = "not an integer"
        raise ValueError(msg)
    return x


def _number(x: Any) -> Any:
    """Neither are strings (pydantic's lax int would take "1" as 1)."""
    if isinstance(x, str):
        msg = "not an integer"
        raise ValueError(msg)
    return _not_bool(x)


Index = Annotated[int, pydantic.BeforeValidator(_number)]  # a bar number, row id or page


class Message(BaseModel):
    """A client message. Each type is one class below, registered in MESSAGES: its
    fields, `check` (values against the dashboard, before the engine sees them) and `run`
    (the engine call and the reply). Adding a message type is adding a class here."""

    model_config = ConfigDict(extra="forbid")
    # any JSON number (1.5 too, as docs/protocol.md says), echoed as sent; true is no number
    id: Annotated[int | float | str | None, pydantic.BeforeValidator(_not_bool)] = None

    def check(self, session: SessionAPI) -> None:
        """Raise InteractionError naming the bad part; the session is not touched."""

    def run(self, session: SessionAPI) -> dict:
        raise NotImplementedError


class Brush(Message):
    """Interval brush on a view: lo <= x <= hi (rect brushes also give y)."""

    type: Literal["brush"]
    view: str
    interval: tuple[Bound, Bound]
    y: tuple[Bound, Bound] | None = None

    def check(self, session: SessionAPI) -> None:
        kind = _check_name(session, "brush.view", self.view, ("interval", "rect"))
        axes = [("interval", self.interval), ("y", self.y)]
        check_brush_y(self.view, kind, self.y, "brush.y")
        _check_bounds(session, self.view, [(f": {a}", p) for a, p in axes], f"brush on view {self.view!r}")

    def run(self, session: SessionAPI) -> dict:
        return update_reply(session, session.brush(self.view, self.interval, y=self.y))


class Select(Message):
    """Select categories of a categorical view ('(other)': everything beyond the top N)."""

    type: Literal["select"]
    view: str
    values: list[Value]

    def check(self, session: SessionAPI) -> None:
        _check_name(session, "select.view", self.view, ("points",))
        _check_values(session, self.view, self.values, f"select on view {self.view!r}: values")

    def run(self, session: SessionAPI) -> dict:
        return update_reply(session, session.select(self.view, self.values))


class Clear(Message):
    """Clear one view's brush or a parameter (by its name, in `view`), or every filter
    when `view` is omitted."""

    type: Literal["clear"]
    view: str | None = None

    def check(self, session: SessionAPI) -> None:
        if self.view is not None:
            _check_name(session, "clear.view", self.view, None)

    def run(self, session: SessionAPI) -> dict:
        return update_reply(session, session.clear(self.view))


class Parameter(Message):
    """Set a parameter (None: inactive)."""

    type: Literal["parameter"]
    name: str
    value: Value

    def check(self, session: SessionAPI) -> None:
        _check_name(session, "parameter.name", self.name, ("param_eq", "param_range"))
        _check_parameter(session, self.name, self.value, f"parameter {self.name!r}")

    def run(self, session: SessionAPI) -> dict:
        return update_reply(session, session.set_parameter(self.name, self.value))


class Filters(Message):
    """Set the whole selection state at once (brushfire/selection.py): every entry is
    checked first; then the session's filters are replaced. All or nothing: on any
    error the session keeps its filters, and the error names the entry."""

    type: Literal["filters"]
    filters: dict[str, Any]

    def parsed(self) -> dict[str, S.TaggedFilter]:
        return S.parse_state(self.filters)

    def check(self, session: SessionAPI) -> None:
        state = self.parsed()
        lazy = answers_lazily(session)
        columns = {n for n in state if lazy and n.startswith(S.COLUMN)}  # checked by the session
        S.check_names({n: f for n, f in state.items() if n not in columns},
                      S.tags_of_kinds(filter_kinds(session)))
        for name, f in state.items():
            where = f"filters.{name}"
            if name in columns:
                if not isinstance(f, S.IntervalFilter | S.ValuesFilter):
                    msg = f"{where}: a filter on a source column takes an interval or values"
                    raise InteractionError(msg)
                lazy_api(session).check_column(name[len(S.COLUMN):], where)  # known without Spark
            elif isinstance(f, S.IntervalFilter):
                _check_bounds(session, name, [(".interval", f.interval)], where)
            elif isinstance(f, S.RectFilter):
                _check_bounds(session, name, [(".rect.x", f.rect.x), (".rect.y", f.rect.y)], where)
            elif isinstance(f, S.ValuesFilter):
                _check_values(session, name, f.values, f"{where}.values")
            else:
                _check_parameter(session, name, f.parameter, f"{where}.parameter")

    def run(self, session: SessionAPI) -> dict:
        state = self.parsed()
        previous = S.state_json(session.filters, filter_kinds(session))
        t0 = time.perf_counter()
        try:
            update = set_filters(session, state)
        except Exception:  # refused by the engine (e.g. cubes-only), or failed: restore
            set_filters(session, S.parse_state(previous))
            raise
        update.seconds = time.perf_counter() - t0
        return update_reply(session, update)


class Highlight(Message):
    """Linked highlighting: the share of each target's bars coming from `bars` of `source`
    (targets: the declared ones by default; a lazy session answers undeclared pairs on
    Spark, brushfire/lazy.py)."""

    type: Literal["highlight"]
    source: str
    bars: list[Index]
    targets: list[str] | None = None

    def check(self, session: SessionAPI) -> None:
        _check_view(session, "highlight.source", self.source)
        _check_bars(session, "highlight.bars", self.source, self.bars)
        for i, t in enumerate(self.targets or ()):
            _check_view(session, f"highlight.targets[{i}]", t)
        if answers_lazily(session):
            return
        declared = session.plan.dashboard.interactions.highlight
        sources = list(dict.fromkeys(h.source for h in declared))
        if self.source not in sources:
            msg = (f"highlight.source: no highlight from view {self.source!r} is declared; "
                   f"sources: {', '.join(sources) or 'none'}" + S.did_you_mean(self.source, sources))
            raise NotCapturedError(msg)
        targets = [t for h in declared if h.source == self.source for t in h.targets]
        for i, t in enumerate(self.targets or ()):
            if t not in targets:
                msg = (f"highlight.targets[{i}]: no highlight from {self.source!r} to {t!r} is "
                       f"declared; targets: {', '.join(targets)}")
                raise NotCapturedError(msg)

    def run(self, session: SessionAPI) -> dict:
        if self.targets and answers_lazily(session):  # (undeclared pairs answered on Spark)
            views = lazy_api(session).highlight(self.source, self.bars, targets=self.targets)
        else:
            views = session.highlight(self.source, self.bars)
            if self.targets:  # checked: declared targets of this source
                views = {t: views[t] for t in self.targets}
        return {"type": "highlight", "source": self.source, "bars": self.bars,
                "views": {n: view_json(v) for n, v in views.items()}}


class Filter(Message):
    """A filter on any column of the source, `lo <= column <= hi` or its value in `values`
    (null: the null rows); it filters every view, and is answered lazily, on Spark."""

    type: Literal["filter"]
    column: str
    interval: tuple[Bound, Bound] | None = None
    values: list[Value] | None = None

    def check(self, session: SessionAPI) -> None:
        if not answers_lazily(session):
            msg = "filter: filters on source columns are answered lazily, which this engine does not do"
            raise NotCapturedError(msg)
        if (self.interval is None) == (self.values is None):
            msg = "filter: give an interval [lo, hi] or a list of values, one of the two"
            raise InteractionError(msg)
        lazy_api(session).check_column(self.column, "filter.column")  # names known without Spark

    def run(self, session: SessionAPI) -> dict:
        return update_reply(session, lazy_api(session).filter_column(self.column, self.interval,
                                                                     self.values))


class Details(Message):
    """A page of the input rows behind bars of a view, or behind the current selection."""

    type: Literal["details"]
    view: str | None = None
    bars: list[Index] | None = None
    page: Index = Field(0, ge=0, le=MAX_PAGE)
    page_size: Index | None = Field(None, ge=1, le=MAX_PAGE_ROWS)
    columns: list[str] | None = None
    order_by: str | None = None  # a details column: rows in its order (else rid order)
    descending: pydantic.StrictBool = False

    def check(self, session: SessionAPI) -> None:
        if self.descending and self.order_by is None:
            msg = "details.descending: orders by order_by, which is missing; give the column to order by"
            raise InteractionError(msg)
        if self.view is not None:
            _check_view(session, "details.view", self.view)
            _check_bars(session, "details.bars", self.view, self.bars or [])
        elif self.bars is not None:
            msg = "details.bars: bars need a view; give view with bars, or neither for the rows of the selection"
            raise InteractionError(msg)
        if answers_lazily(session):  # unlisted columns are read on Spark: names known without it
            for i, c in enumerate(self.columns or ()):
                lazy_api(session).check_column(c, f"details.columns[{i}]")
            return
        declared = session.plan.dashboard.interactions.details
        if declared is None:
            msg = "details: details on demand is not declared in this dashboard's interactions"
            raise NotCapturedError(msg)
        named = [(f"columns[{i}]", c) for i, c in enumerate(self.columns or ())]
        for where, c in named + ([("order_by", self.order_by)] if self.order_by is not None else []):
            if c not in declared.columns:
                msg = (f"details.{where}: {V.show(c)} is not a details column; columns: "
                       f"{', '.join(declared.columns)}" + S.did_you_mean(c, declared.columns))
                raise InteractionError(msg)

    def run(self, session: SessionAPI) -> dict:
        table = session.details(self.view, self.bars, self.page, self.page_size, self.columns,
                                self.order_by, self.descending)
        total = session.count_selected(self.view, self.bars)
        return {"type": "details", "page": self.page, "total": total,
                "rows": rows_json(table)}


class Forward(Message):
    """Forward lineage: the bar each view shows rows `rids` in (e.g. the `rid` of a
    details row)."""

    type: Literal["forward"]
    rids: list[Index] = Field(max_length=MAX_FORWARD_RIDS)

    def check(self, session: SessionAPI) -> None:
        if Capability.FORWARD not in session.capabilities:
            msg = "forward: forward lineage (the bars of given rows) is not offered by this engine"
            raise NotCapturedError(msg)
        rows = session.store.n_rows
        for i, r in enumerate(self.rids):
            if not 0 <= r < rows:
                msg = f"forward.rids[{i}]: {r} is not a row id; row ids are 0 to {rows - 1:,}"
                raise InteractionError(msg)

    def run(self, session: SessionAPI) -> dict:
        return forward_reply(session, self.rids)


class Dimension(Message):
    """Lineage through a join, backward: the rows of `join`'s dimension table behind the
    current selection (or behind bars of a view), each with how many rows reach it, most
    first (engine/dimensions.py)."""

    type: Literal["dimension"]
    join: str
    view: str | None = None
    bars: list[Index] | None = None
    page: Index = Field(0, ge=0, le=MAX_PAGE)
    page_size: Index | None = Field(None, ge=1, le=MAX_PAGE_ROWS)

    def check(self, session: SessionAPI) -> None:
        _check_join(session, "dimension.join", self.join)
        _check_rows(session, "dimension")
        if self.view is not None:
            _check_view(session, "dimension.view", self.view)
            _check_bars(session, "dimension.bars", self.view, self.bars or [])
        elif self.bars is not None:
            msg = "dimension.bars: bars need a view; give view with bars, or neither for the selection"
            raise InteractionError(msg)

    def run(self, session: SessionAPI) -> dict:
        from brushfire.engine.dimensions import dimension_rows

        got = dimension_rows(session, self.join, self.view, self.bars, self.page, self.page_size)
        return {"type": "dimension", "join": self.join, "page": self.page, "total": got.total,
                "unmatched": got.unmatched, "rows": rows_json(got.table)}


class DimensionForward(Message):
    """Lineage through a join, forward: the bars each view shows the rows of one dimension
    row in (the row whose key is `key`: hovering an airport marks its flights' bars)."""

    type: Literal["dimension_forward"]
    join: str
    key: Value

    def check(self, session: SessionAPI) -> None:
        _check_join(session, "dimension_forward.join", self.join)
        _check_rows(session, "dimension_forward")
        if not isinstance(self.key, (str, int, float)) or isinstance(self.key, bool):
            msg = f"dimension_forward.key: {V.show(self.key)} is not a key (a string or a number)"
            raise InteractionError(msg)

    def run(self, session: SessionAPI) -> dict:
        from brushfire.engine.dimensions import dimension_forward

        rows, views = dimension_forward(session, self.join, self.key)
        pruned = [v.name for v in session.plan.dashboard.views if v.name not in views]
        return {"type": "dimension_forward", "join": self.join, "key": self.key, "rows": rows,
                "views": views, "pruned": pruned}


def _check_join(session: SessionAPI, where: str, name: str) -> None:
    joins = [j.name for j in session.plan.dashboard.source.joins]
    if name not in joins:
        msg = (f"{where}: {V.show(name)} is not a join of this dashboard; joins: "
               f"{', '.join(joins) or 'none'}" + (S.did_you_mean(name, joins) if joins else ""))
        raise InteractionError(msg)


def _check_rows(session: SessionAPI, where: str) -> None:
    """Lineage through a join reads the rows behind the selection, by rid."""
    if Capability.ROWS not in session.capabilities:
        msg = (f"{where}: lineage through joins needs the rows behind the selection by rid, which "
               "this session does not have (an engine without per-row lineage, or a filter "
               "answered on Spark is active)")
        raise NotCapturedError(msg)


class State(Message):
    """Every view's current bars and the active filters."""

    type: Literal["state"]

    def run(self, session: SessionAPI) -> dict:
        return {"type": "state", "views": {n: view_json(v) for n, v in session.views().items()},
                "filters": filters_json(session), "selected": session.count_selected()}


MESSAGES: tuple[type[Message], ...] = (Brush, Select, Clear, Parameter, Filters, Highlight, Filter,
                                       Details, Forward, Dimension, DimensionForward, State)
TYPES = {m.model_fields["type"].annotation.__args__[0]: m for m in MESSAGES}
ClientMessage = Annotated[Union[MESSAGES], Field(discriminator="type")]  # noqa: UP007 - a runtime tuple
FILTER_TYPES = ("brush", "select", "clear", "parameter", "filters", "filter")  # change filters
_adapter = pydantic.TypeAdapter(ClientMessage)


def parse(raw: str | bytes | dict) -> Message:
    """Validate a client message; raises ProtocolError saying where and what is wrong."""
    raw = decode_message(raw) if isinstance(raw, (str, bytes, bytearray)) else raw
    if not isinstance(raw, dict):
        msg = f"a message is a JSON object with a 'type': one of {', '.join(TYPES)}"
        raise ProtocolError(msg)
    try:
        return _adapter.validate_python(raw)
    except pydantic.ValidationError as e:
        raise ProtocolError(message_problem(e.errors(), raw), echo_id(raw.get("id"))) from None


# how each field is written, for "... is not <shape>"
FIELD_SHAPES = {
    "id": "a number or a string", "view": "a view's name (a string)",
    "source": "a view's name (a string)", "name": "a parameter's name (a string)",
    "column": "a source column's name (a string)", "targets": "a list of view names",
    "interval": "[lo, hi] (null for an open end)", "y": "[lo, hi] (null for an open end)",
    "values": "a list of values", "bars": "a list of bar numbers", "columns": "a list of column names",
    "rids": f"a list of at most {MAX_FORWARD_RIDS:,} row ids",
    "page": f"an integer from 0 to {MAX_PAGE:,}", "page_size": f"an integer from 1 to {MAX_PAGE_ROWS:,}",
    "filters": 'an object of filters, e.g. {"delay": {"interval": [-20, 40]}}',
    "order_by": "a details column's name (a string)", "descending": "true or false",
    "join": "a join's name (a string)",
}
ITEM_SHAPES = {"bars": "a bar number (an integer >= 0)", "columns": "a column name (a string)",
               "targets": "a view's name (a string)",
               "rids": "a row id (an integer >= 0)"}


def message_problem(errors: list[dict], raw: dict) -> str:
    """A pydantic validation failure of a message as `path: problem; valid choices`, at
    the spec loader's standard: the message type and field, what is wrong, what the
    message takes, and a close match for a misspelt name."""
    err = errors[0]
    kind, loc = err["type"], err["loc"]
    types = ", ".join(TYPES)
    if kind == "union_tag_not_found":
        return f"type: missing; a message is a JSON object with a 'type': one of {types}"
    if kind == "union_tag_invalid":
        tag = raw.get("type")
        return (f"type: unknown message type {V.show(tag)}; messages: {types}"
                + (S.did_you_mean(tag, list(TYPES)) if isinstance(tag, str) else ""))
    model = TYPES[loc[0]]
    fields = [f for f in model.model_fields if f not in ("type", "id")] + ["id"]
    path = loc[0] + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[1:])
    field = loc[1] if len(loc) > 1 else ""
    takes = f"{loc[0]} takes: {', '.join(fields)}"
    if kind == "missing" and isinstance(loc[-1], int):  # a tuple too short: its input
        kind, path = "too_short", path.rsplit("[", 1)[0]
    if kind == "extra_forbidden":
        return f"{path}: unknown field {field!r}; {takes}" + S.did_you_mean(field, fields)
    if kind == "missing":
        return f"{path}: missing; {takes}"
    value = err.get("input")
    if field == "id":  # a union of number and string: one error per member
        return f"id: {V.show(value)} is not a number or a string"
    if kind in ("less_than_equal", "greater_than_equal"):
        limit = err["ctx"]["le" if kind == "less_than_equal" else "ge"]
        how = "over" if kind == "less_than_equal" else "below"
        return f"{path}: {V.show(value)} is {how} {limit:,}; {field} is {_shape(field)}"
    if kind in ("too_long", "too_short"):
        return f"{path}: {V.show(value)} has {len(value)} items; {field} is {_shape(field)}"
    if isinstance(loc[-1], int) and field in ITEM_SHAPES:
        return f"{path}: {V.show(value)} is not {ITEM_SHAPES[field]}"
    return f"{path}: {V.show(value)} is not {_shape(field)}"


def _shape(field: str) -> str:
    return FIELD_SHAPES.get(field, "valid here")


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


def handle(session: SessionAPI, raw: str | bytes | dict) -> dict:
    """Apply one client message to the session and return the reply. Never raises: bad
    input gets `{"type": "error", ...}` and leaves the session unchanged, and so does an
    unexpected failure (logged with its traceback)."""
    msg_id = None
    kind = "message"
    try:
        if isinstance(raw, (str, bytes, bytearray)):
            raw = decode_message(raw)
        if isinstance(raw, dict):  # echoed by every reply from here on, errors included
            msg_id = echo_id(raw.get("id"))
        msg = parse(raw)
        msg_id, kind = msg.id, msg.type
        t0 = time.perf_counter()
        msg.check(session)
        reply = msg.run(session)
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


def set_filters(session: SessionAPI, state: dict[str, S.TaggedFilter]) -> Update:
    """Replace the session's filters by `state` (checked): clear, then each entry. The
    update holds every view."""
    update = session.clear()
    for name, f in state.items():
        m = S.message_of(name, f)
        if m["type"] == "brush":
            u = session.brush(name, m["interval"], y=m.get("y"))
        elif m["type"] == "select":
            u = session.select(name, m["values"])
        elif m["type"] == "filter":  # (a name on a source column: checked, a LAZY session's)
            u = lazy_api(session).filter_column(m["column"], m.get("interval"), m.get("values"))
        else:
            u = session.set_parameter(name, m["value"])
        update.methods.update(u.methods)
    update.views = session.views()
    return update


def carry_over(old: SessionAPI, new: SessionAPI) -> list[str]:
    """Give `new` (a session of a newer capture of the same dashboard) the filters of
    `old`, each as a `filters` message checks it; returns the names of those the new
    data refuse (a category or choice gone, a slider's value out of range), left off."""
    state = filters_json(old)
    dropped: list[str] = []
    while True:
        reply = handle(new, {"type": "filters", "filters": state})
        if reply["type"] != "error" or not state:
            return dropped
        bad = next((n for n in state if f"filters.{n}" in reply["message"]), None)
        bad = bad or next(iter(state))  # (the message names the entry; else drop the first)
        dropped.append(bad)
        state = {n: f for n, f in state.items() if n != bad}


def filters_json(session: SessionAPI) -> dict[str, dict]:
    """The session's active filters in the tagged form (brushfire/selection.py), as JSON."""
    return jsonable(S.state_json(session.filters, filter_kinds(session)))


# --- checks of names and values, before the engine sees them ------------------------------

# (what one is, what they are) of each group of filter kinds a message takes
_WHICH = {("interval", "rect"): ("brushable view", "brushable views (histogram, temporal, heatmap)"),
          ("points",): ("categorical view", "categorical views"),
          ("param_eq", "param_range"): ("parameter", "parameters"),
          None: ("brushable view or parameter", "brushable views and parameters")}
_TAKES = {"interval": "an interval brush (brush with interval [lo, hi])",
          "rect": "a rect brush (brush with interval and y)",
          "points": "a selection of bars (select with values)",
          "param_eq": "a parameter value (parameter)", "param_range": "a parameter value (parameter)"}


def answers_lazily(session: SessionAPI) -> bool:
    """Whether the session answers what capture did not prepare, on Spark
    (engine/lazy.py): then undeclared views, pairs and columns are its to check."""
    return Capability.LAZY in session.capabilities


def lazy_api(session: SessionAPI) -> LazyAPI:
    """The session as the `LazyAPI` it declares itself (checked: a message that needs one
    is refused before, by `answers_lazily`)."""
    if not answers_lazily(session):  # a bug of the caller, not of the message
        msg = "this engine does not answer lazily"
        raise NotCapturedError(msg)
    return cast(LazyAPI, session)


def filter_kinds(session: SessionAPI) -> dict[str, str]:
    """Each filter name the session takes and its kind: the plan's, and for a lazy session
    also the undeclared brushes and the active filters on source columns."""
    if answers_lazily(session):
        return lazy_api(session).filter_kinds()
    return {f.name: f.kind for f in session.plan.filters}


def _check_name(session: SessionAPI, where: str, name: str, kinds: tuple[str, ...] | None) -> str:
    """The kind of filter `name` has; raises naming the valid choices unless it takes
    one of `kinds` (None: any)."""
    filters = filter_kinds(session)
    valid = [n for n, k in filters.items() if kinds is None or k in kinds]
    kind = filters.get(name)
    if kind is None:
        one, many = _WHICH[kinds]
        msg = (f"{where}: {V.show(name)} is not a {one} of this dashboard; "
               f"{many}: {', '.join(valid) or 'none'}" + S.did_you_mean(name, valid))
        raise InteractionError(msg)
    if kinds is not None and kind not in kinds:
        msg = (f"{where}: {name!r} takes {_TAKES[kind]}, not {where.split('.')[0]}; "
               f"{_WHICH[kinds][1]}: {', '.join(valid) or 'none'}")
        raise InteractionError(msg)
    return kind


def _check_view(session: SessionAPI, where: str, name: str) -> None:
    views = [v.name for v in session.plan.dashboard.views]
    if name not in views:
        msg = (f"{where}: {V.show(name)} is not a view of this dashboard; views: {', '.join(views)}"
               + S.did_you_mean(name, views))
        raise InteractionError(msg)


def _layout(session: SessionAPI, view: str):
    """The store's layout of a view (None: no such view)."""
    return next((v for v in session.store.views if v.name == view), None)


def _check_bars(session: SessionAPI, where: str, view: str, bars: list[int]) -> None:
    """Bar numbers of a view: 0 to its number of bars - 1 (a heatmap's: its cells)."""
    layout = _layout(session, view)
    if layout is not None:  # (None: not a view, which the message's check said first)
        check_bars(layout.nbars, view, bars, where)


def _check_bounds(session: SessionAPI, name: str, axes: list, where: str) -> None:
    """Interval bounds: numbers, or ISO times on temporal views. `axes`: (path, [lo, hi])."""
    temporal = _is_temporal(session, name)
    for axis, pair in axes:
        for i, x in enumerate(pair or ()):
            _check(lambda x=x: V.time_bound(x) if temporal else V.number_bound(x), f"{where}{axis}[{i}]")


def _check_values(session: SessionAPI, view: str, values: list, where: str) -> None:
    """Categories of a categorical view: values of its field (of a time field, ISO times),
    or '(other)'."""
    layout = _layout(session, view)
    times = layout is not None and layout.value_type == "temporal"
    choices = _choices(session.view(view).labels, times)
    for i, x in enumerate(values):
        _check(lambda x=x: choices.check(x), f"{where}[{i}]")


def _check_parameter(session: SessionAPI, name: str, value, where: str) -> None:
    """A dropdown's value (one of its choices), or a slider's number or ISO time."""
    if value is None:
        return
    kind, domain = session.store.parameter_domain(name)
    dropdown = kind in ("values", "times")  # (times: a time field's, any ISO spelling)
    if dropdown and session.plan.filter(name).op == "in":  # multiple: a list
        if not isinstance(value, list):
            msg = f"{where}: parameter {name!r} takes a list of values, got {V.show(value)}"
            raise InteractionError(msg)
        for i, x in enumerate(value):
            _check(lambda x=x: _choices(domain, kind == "times").check(x), f"{where}[{i}]")
        return
    if dropdown:
        _check(lambda: _choices(domain, kind == "times").check(value), where)
        return
    temporal = _is_temporal(session, name)
    bound = V.time_bound if temporal else V.number_bound
    if session.plan.filter(name).op == "between":  # [lo, hi]
        if not isinstance(value, list) or len(value) != 2 or None in value:
            msg = f"{where}: parameter {name!r} takes a range [lo, hi], got {V.show(value)}"
            raise InteractionError(msg)
        for i, x in enumerate(value):
            _check(lambda x=x: bound(x), f"{where}[{i}]")
    else:
        _check(lambda: bound(value), where)


def _check(test, where: str) -> None:
    try:
        test()
    except InteractionError as e:
        msg = f"{where}: {e}"
        raise InteractionError(msg) from None


def _is_temporal(session: SessionAPI, name: str) -> bool:
    """Whether a filter compares times: a temporal view's brush, or a slider whose range
    the store gives as ISO times."""
    view = next((v for v in session.plan.dashboard.views if v.name == name), None)
    if view is not None:  # (a calendar part's brush is over its values: numbers)
        return view_type(view).bound(view) == "time"
    kind, domain = session.store.parameter_domain(name)
    return kind == "range" and bool(domain) and isinstance(domain[0], str)


_choice_sets: dict[tuple[int, bool], tuple[object, V.Choices]] = {}  # -> (domain, its Choices)


def _choices(domain: list, times: bool = False) -> V.Choices:
    """The values a categorical view (its bars) or a dropdown parameter takes, built once
    per domain list; `times`: ISO instants of a time field, matched as instants."""
    cached = _choice_sets.get((id(domain), times))
    if cached is None or cached[0] is not domain:
        cached = (domain, V.Choices(list(domain), times=times))
        _choice_sets[(id(domain), times)] = cached
    return cached[1]


def echo_id(msg_id):
    """A message's `id` as a reply may echo it: a number or a string, else None."""
    return msg_id if isinstance(msg_id, (int, float, str)) and not isinstance(msg_id, bool) else None


def error_reply(message: str, msg_id: Any = None) -> dict:
    return {"type": "error", "id": msg_id, "message": message}


def forward_reply(session: SessionAPI, rids: list[int]) -> dict:
    """The bars rows `rids` fall in, per view; `pruned`: the views whose bars per row were
    not captured (nothing filters or highlights them), so they are left out."""
    views = cast(ForwardAPI, session).forward(rids)  # (Forward.check: the session declares it)
    pruned = [v.name for v in session.plan.dashboard.views if v.name not in views]
    reply = {"type": "forward", "rids": rids, "views": views, "pruned": pruned}
    if pruned:
        reply["note"] = (f"bars per row were not captured for {', '.join(pruned)}: nothing filters"
                         " or highlights them (brushfire plan)")
    return reply


def update_reply(session: SessionAPI, update: Update) -> dict:
    """The views an interaction changed, how each was computed, the selected rows and the
    filters (tagged). Answered lazily (brushfire/lazy.py), also `lazy`: the views
    computed on Spark, why and in how long; cancelled by the next interaction,
    `cancelled` and no `selected`."""
    reply = {"type": "update", "views": {n: view_json(v) for n, v in update.views.items()},
             "methods": update.methods, "ms": update.seconds * 1e3,
             "filters": filters_json(session)}
    if isinstance(update, LazyUpdate):
        reply["lazy"] = {"views": update.lazy, "reason": update.reason, "ms": update.lazy_seconds * 1e3}
    if isinstance(update, LazyUpdate) and update.cancelled:
        reply["cancelled"] = True
    else:
        reply["selected"] = session.count_selected()
    return reply


def working_message(session: SessionAPI, msg_id, seconds: float) -> dict:
    """What the server tells a client still waiting for the answer to message `msg_id`
    after `seconds`: with a lazy answer running, its stage and the share of its Spark
    tasks done."""
    progress = lazy_api(session).progress() if answers_lazily(session) else None
    out = {"type": "working", "id": msg_id, "seconds": round(seconds, 2), "lazy": progress is not None}
    if progress is not None:
        out["stage"], out["fraction"] = progress
    return out


def view_json(v: ViewData) -> dict:
    """A view's bars as sent: rows and value per bar, and its caveats (the rows it does
    not show, by reason: docs/protocol.md)."""
    return {"counts": v.counts, "values": v.values, "caveats": v.caveats}


def dumps(reply: dict) -> str:
    """A reply as JSON text: NaN and infinities as null, numpy arrays and numbers as
    numbers, datetimes as ISO strings, anything else as its str. orjson: a reply with two
    10,000-cell heatmaps takes 0.5 ms where the standard library takes 5; the standard
    library for what orjson refuses (integers past 64 bits, echoed from a bad message)."""
    try:
        return orjson.dumps(reply, default=_json_default,
                            option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(jsonable(reply), allow_nan=False, default=_json_default)


def _json_default(x):
    if hasattr(x, "isoformat"):  # pandas' Timestamp
        return x.isoformat()
    if hasattr(x, "tolist"):  # numpy (the standard library's fallback)
        return jsonable(x.tolist())
    return str(x)  # Decimal, ...


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


def rows_json(table) -> list[dict]:
    """A details page's rows as `jsonable` makes them ({column: value}, NaN and infinities
    as None, times as ISO text), column by column with Arrow's vector operations instead
    of a Python call per value: a page of 10,000 flights rows took 130-150 ms of Python,
    holding the interpreter's lock all along, which every other session's replies waited
    for (a session brushing beside one paging through details: reply p50 2.6 -> 10 ms,
    p99 19 -> 121 ms); now ~17 ms. Naive timestamps (in s or us), dates and finite-or-not
    floats are converted as vectors; other times and nested values one by one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for col in table.columns:
        t = col.type
        try:
            if pa.types.is_floating(t):
                values = pc.if_else(pc.is_finite(col), col, pa.scalar(None, t)).to_pylist()
            elif pa.types.is_date(t) or (pa.types.is_timestamp(t) and t.tz is None and t.unit in ("s", "us")):
                text = pc.cast(col, pa.string())  # 2001-01-03 09:40:00.000000, as isoformat but the T
                text = pc.replace_substring(text, " ", "T", max_replacements=1)
                values = pc.replace_substring_regex(text, r"\.000000$", "").to_pylist()
            elif pa.types.is_temporal(t) or pa.types.is_nested(t):
                values = [jsonable(x) for x in col.to_pylist()]
            else:  # numbers, strings, decimals, bytes: as they are
                values = col.to_pylist()
        except pa.ArrowNotImplementedError:  # (a type a kernel does not take)
            values = [jsonable(x) for x in col.to_pylist()]
        columns.append(values)
    names = table.column_names
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)] if columns else \
        [{} for _ in range(table.num_rows)]
