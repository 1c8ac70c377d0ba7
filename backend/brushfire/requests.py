"""Client messages parsed and checked, once, into typed requests: what `protocol.handle`
runs on a session, which trusts it from there down: a filter's request (brush, select,
parameter, clear, filters) is taken by the sessions' `apply_*`, a lineage query's
(details, highlight, forward, dimension) by their `answer_*`.

A message is a JSON object with a lowercase `type` and an optional `id`. `parse` reads it
into its `Message` class (the fields' shapes and limits: pydantic, its errors worded by
`message_problem` as `path: problem; valid choices`); the message's `check` then checks
its values against the dashboard (names, bars, bounds, choices, what the session
declares it can do) and returns its request, a frozen dataclass (`BrushRequest`, ...:
engine/api.py, the sessions' contract), with the session untouched whatever is wrong.
The limits are brushfire/limits.py's, and a part several messages share is checked by the
one function every layer calls (`engine.api.check_bars`, `views.base.check_brush_y`), the
message's path before its words.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Union, cast

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from brushfire import selection as S
from brushfire import values as V
from brushfire.engine.api import (
    BrushRequest,
    Capability,
    ClearRequest,
    DetailsRequest,
    DimensionForwardRequest,
    DimensionRequest,
    FilterRequest,
    FiltersRequest,
    ForwardRequest,
    HighlightRequest,
    LazyAPI,
    ParameterRequest,
    Request,
    SelectRequest,
    SessionAPI,
    StateRequest,
    brush_request,
    check_bars,
    check_join_captured,
    check_page,
    slider_bounds,
)
from brushfire.errors import InteractionError, NotCapturedError
from brushfire.limits import DEFAULT_PAGE, MAX_FORWARD_RIDS, MAX_PAGE, MAX_PAGE_ROWS
from brushfire.views.base import check_brush_y
from brushfire.wire import ProtocolError, decode_message

# --- the messages as sent, each checked into its request -----------------------------------

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
    """A client message as sent. Each type is one class below, registered in MESSAGES: its
    fields (their shapes and limits, checked by `parse`) and `check`, which checks their
    values against the dashboard and returns the typed request the protocol runs."""

    model_config = ConfigDict(extra="forbid")
    # any JSON number (1.5 too, as docs/protocol.md says), echoed as sent; true is no number
    id: Annotated[int | float | str | None, pydantic.BeforeValidator(_not_bool)] = None

    def check(self, session: SessionAPI) -> Request:
        """The checked request; raises InteractionError naming the bad part, the session
        untouched."""
        raise NotImplementedError


class Brush(Message):
    """Interval brush on a view: lo <= x <= hi (rect brushes also give y)."""

    type: Literal["brush"]
    view: str
    interval: tuple[Bound, Bound]
    y: tuple[Bound, Bound] | None = None

    def check(self, session: SessionAPI) -> BrushRequest:
        kind = _check_name(session, "brush.view", self.view, ("interval", "rect"))
        check_brush_y(self.view, kind, self.y, "brush.y")
        return brush_request(session.plan.dashboard.view(self.view), self.interval, self.y,
                             f"brush on view {self.view!r}: ")


class Select(Message):
    """Select categories of a categorical view ('(other)': everything beyond the top N)."""

    type: Literal["select"]
    view: str
    values: list[Value]

    def check(self, session: SessionAPI) -> SelectRequest:
        _check_name(session, "select.view", self.view, ("points",))
        values = _check_values(session, self.view, self.values, f"select on view {self.view!r}: values")
        return SelectRequest(self.view, values)


class Clear(Message):
    """Clear one view's brush or a parameter (by its name, in `view`), or every filter
    when `view` is omitted."""

    type: Literal["clear"]
    view: str | None = None

    def check(self, session: SessionAPI) -> ClearRequest:
        if self.view is not None:
            _check_name(session, "clear.view", self.view, None)
        return ClearRequest(self.view)


class Parameter(Message):
    """Set a parameter (None: inactive)."""

    type: Literal["parameter"]
    name: str
    value: Value

    def check(self, session: SessionAPI) -> ParameterRequest:
        _check_name(session, "parameter.name", self.name, ("param_eq", "param_range"))
        value, bounds = _check_parameter(session, self.name, self.value, f"parameter {self.name!r}")
        return ParameterRequest(self.name, value, bounds)


class Filters(Message):
    """Set the whole selection state at once (brushfire/selection.py): every entry is
    checked first; then the session's filters are replaced. All or nothing: on any
    error the session keeps its filters, and the error names the entry."""

    type: Literal["filters"]
    filters: dict[str, Any]

    def check(self, session: SessionAPI) -> FiltersRequest:
        state = S.parse_state(self.filters)
        lazy = answers_lazily(session)
        columns = {n for n in state if lazy and n.startswith(S.COLUMN)}  # checked by the session
        S.check_names(state, S.tags_of_kinds(filter_kinds(session)), columns=lazy)
        return FiltersRequest(state, tuple(_entry_request(session, name, f, name in columns)
                                           for name, f in state.items()))


class Highlight(Message):
    """Linked highlighting: the share of each target's bars coming from `bars` of `source`
    (targets: the declared ones by default; a lazy session answers undeclared pairs on
    Spark, brushfire/lazy.py)."""

    type: Literal["highlight"]
    source: str
    bars: list[Index]
    targets: list[str] | None = None

    def check(self, session: SessionAPI) -> HighlightRequest:
        _check_view(session, "highlight.source", self.source)
        _check_bars(session, "highlight.bars", self.source, self.bars)
        for i, t in enumerate(self.targets or ()):
            _check_view(session, f"highlight.targets[{i}]", t)
        if answers_lazily(session):  # undeclared pairs too, on Spark
            return HighlightRequest(self.source, self.bars, self.targets, lazy=True)
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
        return HighlightRequest(self.source, self.bars, self.targets, lazy=False)


class Filter(Message):
    """A filter on any column of the source, `lo <= column <= hi` or its value in `values`
    (null: the null rows); it filters every view, and is answered lazily, on Spark."""

    type: Literal["filter"]
    column: str
    interval: tuple[Bound, Bound] | None = None
    values: list[Value] | None = None

    def check(self, session: SessionAPI) -> FilterRequest:
        if not answers_lazily(session):
            msg = "filter: filters on source columns are answered lazily, which this engine does not do"
            raise NotCapturedError(msg)
        if (self.interval is None) == (self.values is None):
            msg = "filter: give an interval [lo, hi] or a list of values, one of the two"
            raise InteractionError(msg)
        lazy_api(session).check_column(self.column, "filter.column")  # names known without Spark
        return FilterRequest(self.column, self.interval, self.values)


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

    def check(self, session: SessionAPI) -> DetailsRequest:
        if self.descending and self.order_by is None:
            msg = "details.descending: orders by order_by, which is missing; give the column to order by"
            raise InteractionError(msg)
        _check_view_bars(session, "details", self.view, self.bars, "the rows of the selection")
        declared = session.plan.dashboard.interactions.details
        if answers_lazily(session):  # unlisted columns are read on Spark: names known without it
            for i, c in enumerate(self.columns or ()):
                lazy_api(session).check_column(c, f"details.columns[{i}]")
            if self.order_by is not None:
                lazy_api(session).check_column(self.order_by, "details.order_by")
            check_page(self.page, self.page_size or (declared.page_size if declared else DEFAULT_PAGE))
            return self._request()
        if declared is None:
            msg = "details: details on demand is not declared in this dashboard's interactions"
            raise NotCapturedError(msg)
        named = [(f"columns[{i}]", c) for i, c in enumerate(self.columns or ())]
        for where, c in named + ([("order_by", self.order_by)] if self.order_by is not None else []):
            if c not in declared.columns:
                msg = (f"details.{where}: {V.show(c)} is not a details column; columns: "
                       f"{', '.join(declared.columns)}" + S.did_you_mean(c, declared.columns))
                raise InteractionError(msg)
        check_page(self.page, self.page_size or declared.page_size)  # (the declared one, as the spec allows)
        return self._request()

    def _request(self) -> DetailsRequest:
        return DetailsRequest(self.view, self.bars, self.page, self.page_size, self.columns,
                              self.order_by, self.descending)


class Forward(Message):
    """Forward lineage: the bar each view shows rows `rids` in (e.g. the `rid` of a
    details row)."""

    type: Literal["forward"]
    rids: list[Index] = Field(max_length=MAX_FORWARD_RIDS)

    def check(self, session: SessionAPI) -> ForwardRequest:
        if Capability.FORWARD not in session.capabilities:
            msg = "forward: forward lineage (the bars of given rows) is not offered by this engine"
            raise NotCapturedError(msg)
        rows = session.store.n_rows
        for i, r in enumerate(self.rids):
            if not 0 <= r < rows:
                msg = f"forward.rids[{i}]: {V.show(r)} is not a row id; row ids are 0 to {rows - 1:,}"
                raise InteractionError(msg)
        return ForwardRequest(self.rids)


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

    def check(self, session: SessionAPI) -> DimensionRequest:
        _check_join(session, "dimension.join", self.join)
        _check_rows(session, "dimension")
        _check_view_bars(session, "dimension", self.view, self.bars, "the selection")
        check_join_captured(session.plan, self.join)  # (then details are declared)
        check_page(self.page, self.page_size or session.plan.dashboard.interactions.details.page_size)
        return DimensionRequest(self.join, self.view, self.bars, self.page, self.page_size)


class DimensionForward(Message):
    """Lineage through a join, forward: the bars each view shows the rows of one dimension
    row in (the row whose key is `key`: hovering an airport marks its flights' bars)."""

    type: Literal["dimension_forward"]
    join: str
    key: Value

    def check(self, session: SessionAPI) -> DimensionForwardRequest:
        _check_join(session, "dimension_forward.join", self.join)
        if Capability.FORWARD not in session.capabilities:  # (every row is read: not the selection's)
            msg = ("dimension_forward: lineage through joins needs the rows by rid and forward "
                   "lineage, which this session does not have (an engine without per-row lineage)")
            raise NotCapturedError(msg)
        if not isinstance(self.key, (str, int, float)):  # (a bool is an int: a boolean key's)
            msg = f"dimension_forward.key: {V.show(self.key)} is not a key (a string, a number, true or false)"
            raise InteractionError(msg)
        if isinstance(self.key, int) and abs(self.key) > V.FLOAT_MAX:  # (no column holds one; a
            # dict message's integer past Python's 4,300 digits failed to print: an internal error)
            msg = f"dimension_forward.key: {V.show(self.key)} is beyond the range of numbers (±1.8e308)"
            raise InteractionError(msg)
        check_join_captured(session.plan, self.join)
        return DimensionForwardRequest(self.join, self.key)


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

    def check(self, session: SessionAPI) -> StateRequest:
        return StateRequest()


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
    _check_text(raw)
    try:
        return _adapter.validate_python(raw)
    except pydantic.ValidationError as e:
        raise ProtocolError(message_problem(e.errors(), raw), echo_id(raw.get("id"))) from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_text(raw: dict) -> None:
    """JSON's escapes can write half of a UTF-16 pair alone (`"\\ud800"`), which is no
    character: no column holds one, and the libraries a value reaches (Arrow, Spark) fail
    to encode it (an internal error). Refused here, where the message is read, naming it;
    an `id` is only echoed (as JSON's escape), so it may hold one."""
    where = raw.get("type") if isinstance(raw.get("type"), str) and not _SURROGATE.search(raw["type"]) \
        else "message"
    stack: list[tuple[str, Any]] = [(where, {k: v for k, v in raw.items() if k != "id"})]  # (only echoed)
    while stack:
        path, x = stack.pop()
        if isinstance(x, str) and (m := _SURROGATE.search(x)):
            msg = (f"{path}: {V.show(x)} holds a lone UTF-16 surrogate (U+{ord(m.group()):04X}),"
                   " which is no Unicode character")
            raise ProtocolError(msg, echo_id(raw.get("id")))
        if isinstance(x, dict):
            stack.extend((f"{path}.{V.show(k)}" if _SURROGATE.search(k) else f"{path}.{k}", v)
                         for k, v in x.items())
            stack.extend((f"{path} (a key)", k) for k in x)
        elif isinstance(x, list):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(x))


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


# --- checks of names and values ---------------------------------------------------------

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


def _check_view_bars(session: SessionAPI, kind: str, view: str | None, bars: list[int] | None,
                     otherwise: str) -> None:
    """A lineage request's optional view and its bars (bars only with a view; neither:
    `otherwise`)."""
    if view is not None:
        _check_view(session, f"{kind}.view", view)
        _check_bars(session, f"{kind}.bars", view, bars or [])
    elif bars is not None:
        msg = f"{kind}.bars: bars need a view; give view with bars, or neither for {otherwise}"
        raise InteractionError(msg)


def _check_bars(session: SessionAPI, where: str, view: str, bars: list[int]) -> None:
    """Bar numbers of a view: 0 to its number of bars - 1 (a heatmap's: its cells)."""
    layout = _layout(session, view)
    if layout is not None:  # (None: not a view, which the message's check said first)
        check_bars(layout.nbars, view, bars, where)


def _entry_request(session: SessionAPI, name: str, f: S.TaggedFilter, column: bool) -> Request:
    """One entry of a `filters` message (its names checked) as its checked request; an
    error names it as `filters.<name>...`."""
    where = f"filters.{name}"
    if column:  # a filter on a source column (a LAZY session's)
        f = S.check_column_filter(f, where)
        column_name = name[len(S.COLUMN):]
        lazy_api(session).check_column(column_name, where)  # known without Spark
        interval = list(f.interval) if isinstance(f, S.IntervalFilter) else None
        values = list(f.values) if isinstance(f, S.ValuesFilter) else None
        return FilterRequest(column_name, interval, values)
    if isinstance(f, S.IntervalFilter):
        return brush_request(session.plan.dashboard.view(name), list(f.interval), None, f"{where}.")
    if isinstance(f, S.RectFilter):
        return brush_request(session.plan.dashboard.view(name), list(f.rect.x), list(f.rect.y), f"{where}.",
                             ("rect.x", "rect.y"))
    if isinstance(f, S.ValuesFilter):
        return SelectRequest(name, _check_values(session, name, f.values, f"{where}.values"))
    value, bounds = _check_parameter(session, name, f.parameter, f"{where}.parameter")
    return ParameterRequest(name, value, bounds)


def _check_values(session: SessionAPI, view: str, values: list, where: str) -> list:
    """Categories of a categorical view: values of its field (of a time field, ISO times),
    or '(other)'; returned as the engine takes them (`Choices.resolve`: 'Infinity' is a
    float field's inf)."""
    layout = _layout(session, view)
    times = layout is not None and layout.value_type == "temporal"
    choices = _choices(session.view(view).labels, times)
    for i, x in enumerate(values):
        _check(lambda x=x: choices.check(x), f"{where}[{i}]")
    return [choices.resolve(x) for x in values]


def _check_parameter(session: SessionAPI, name: str, value, where: str) -> tuple:
    """A dropdown's value (one of its choices, as the engine takes it: `Choices.resolve`),
    or a slider's number or ISO time; and a slider's value as compared (`slider_bounds`),
    else None."""
    if value is None:
        return None, None
    kind, domain = session.store.parameter_domain(name)
    dropdown = kind in ("values", "times")  # (times: a time field's, any ISO spelling)
    if dropdown and session.plan.filter(name).op == "in":  # multiple: a list
        if not isinstance(value, list):
            msg = f"{where} takes a list of values, got {V.show(value)}"
            raise InteractionError(msg)
        choices = _choices(domain, kind == "times", "NaN")
        for i, x in enumerate(value):
            _check(lambda x=x: choices.check(x), f"{where}[{i}]")
        return [choices.resolve(x) for x in value], None
    if dropdown:
        choices = _choices(domain, kind == "times", "NaN")
        _check(lambda: choices.check(value), where)
        return choices.resolve(value), None
    return value, slider_bounds(name, value, session.store.parameter_temporal(name),
                                session.plan.filter(name).op == "between", where)


def _check(test, where: str) -> None:
    try:
        test()
    except InteractionError as e:
        msg = f"{where}: {e}"
        raise InteractionError(msg) from None


def _choices(domain: list, times: bool = False, nan: str | None = None) -> V.Choices:
    """The values a categorical view (its bars) or a dropdown parameter takes, built once
    per domain list (`values.per_list`); `times`: ISO instants of a time field, matched as
    instants; `nan`: how errors spell a float field's NaN (a bar's null, a dropdown's 'NaN')."""
    return V.per_list(domain, f"choices times={times} nan={nan}",
                      lambda d: V.Choices(list(d), times=times, nan=nan))


def echo_id(msg_id):
    """A message's `id` as a reply may echo it: a number or a string, else None."""
    return msg_id if isinstance(msg_id, (int, float, str)) and not isinstance(msg_id, bool) else None


