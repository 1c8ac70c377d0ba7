"""The selection state: every active filter of a session, each a tagged value. This
module owns its shape and every conversion to and from it; the protocol's replies, the
`filters` message, the page's address (`#filters=`), the widget's `filters` trait,
traces that start from a state and `brushfire bench --check` all use it.

    {"delay":  {"interval": [-20, 40]},                         # histogram / temporal brush
     "heat":   {"rect": {"x": [0, 50], "y": [10, 90]}},         # heatmap brush
     "origin": {"values": ["ORD", "(other)"]},                  # categorical selection
     "destination": {"parameter": "LAX"}}                       # parameter

Bounds are numbers, ISO times on temporal views and time sliders, or null for an open
end. The tag says what the filter is, so turning a state into the messages that set it
is a lookup, never a guess from the value's shape; which tag a name takes comes from
the dashboard (`tags_of_plan`, `tags_of_description`).

Pure: no session, no I/O. Structural problems raise `SelectionError` naming the entry
(`filters.delay.interval: ...`), the problem and the valid choices.
"""

from __future__ import annotations

from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict

from brushfire.errors import InteractionError
from brushfire.spec.problems import did_you_mean as spec_did_you_mean
from brushfire.values import show, wire_bound, wire_choice, wire_dropdown

Bound = Any  # a number, an ISO time, or None for an open end (checked by brushfire.values)


class SelectionError(InteractionError):
    """A selection state (or one of its entries) is not well-formed."""


class _Tagged(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IntervalFilter(_Tagged):
    """An interval brush on a histogram or temporal view: lo <= x <= hi."""

    interval: tuple[Bound, Bound]


class RectBounds(_Tagged):
    x: tuple[Bound, Bound]
    y: tuple[Bound, Bound]


class RectFilter(_Tagged):
    """A rect brush on a heatmap: an x and a y interval."""

    rect: RectBounds


class ValuesFilter(_Tagged):
    """Bars of a categorical view by value ('(other)': every value beyond the top N)."""

    values: list[Any]


class ParameterFilter(_Tagged):
    """A parameter's value (a dropdown's choice, a slider's number or ISO time)."""

    parameter: Any


TaggedFilter = IntervalFilter | RectFilter | ValuesFilter | ParameterFilter

FILTER_TYPES: dict[str, type[_Tagged]] = {
    "interval": IntervalFilter, "rect": RectFilter, "values": ValuesFilter,
    "parameter": ParameterFilter,
}
# how each tag is written, for error messages
SHAPES = {"interval": '{"interval": [lo, hi]}', "rect": '{"rect": {"x": [lo, hi], "y": [lo, hi]}}',
          "values": '{"values": [...]}', "parameter": '{"parameter": value}'}
# the tag of each filter kind of the capture plan (plan.Filter.kind)
TAG_OF_KIND = {"interval": "interval", "rect": "rect", "points": "values",
               "param_eq": "parameter", "param_range": "parameter"}
WHAT = {"interval": "an interval brush", "rect": "a rect brush", "values": "a selection of bars",
        "parameter": "a parameter value"}


# --- reading a state -----------------------------------------------------------------------


def parse_state(raw: object, where: str = "filters") -> dict[str, TaggedFilter]:
    """A state's entries as typed filters, in order; raises SelectionError naming the
    first bad entry. Checks the shape only: names and values are the dashboard's to
    check (`check_names`, then the session)."""
    if not isinstance(raw, dict):
        msg = (f"{where}: {show(raw)} is not an object of filters; write e.g. "
               '{"delay": {"interval": [-20, 40]}, "origin": {"values": ["ORD"]}}')
        raise SelectionError(msg)
    out: dict[str, TaggedFilter] = {}
    for name, entry in raw.items():
        if not isinstance(name, str):
            msg = f"{where}: {show(name)} is not a name (a string)"
            raise SelectionError(msg)
        out[name] = parse_filter(entry, f"{where}.{name}")
    return out


def parse_filter(raw: object, where: str) -> TaggedFilter:
    """One tagged filter: an object with one of the keys interval, rect, values,
    parameter."""
    if isinstance(raw, _Tagged):
        return raw
    if not isinstance(raw, dict) or len(raw) != 1:
        got = f"an object with keys {', '.join(map(repr, raw))}" if isinstance(raw, dict) and raw \
            else show(raw)
        msg = f"{where}: {got} is not a tagged filter; a filter is one of {_shapes()}"
        raise SelectionError(msg)
    (tag, value), = raw.items()
    if tag not in FILTER_TYPES:
        msg = f"{where}: unknown filter {show(tag)}; a filter is one of {_shapes()}" + \
            did_you_mean(tag, list(FILTER_TYPES))
        raise SelectionError(msg)
    try:
        return FILTER_TYPES[tag].model_validate(raw)
    except pydantic.ValidationError as e:
        errors = sorted(e.errors(), key=lambda err: err["type"] != "extra_forbidden")  # a misspelt key first
        raise SelectionError(_shape_problem(errors[0], where)) from None


def check_names(state: dict[str, TaggedFilter], tags: dict[str, str], where: str = "filters",
                columns: bool = False) -> None:
    """Every name must be a brushable view or parameter (`tags`: name -> the tag it takes,
    e.g. from `tags_of_plan`), with a filter of the tag it takes; with `columns` (a session
    that answers lazily), a `column:<name>` entry too, a filter on a source column: its
    shape is checked here (`check_column_filter`), its column by the session applying it."""
    for name, f in state.items():
        if columns and name.startswith(COLUMN):
            check_column_filter(f, f"{where}.{name}")
            continue
        tag = tag_of(f)
        if name not in tags:
            msg = (f"{where}.{name}: no brushable view or parameter named {show(name)}; "
                   f"known: {', '.join(tags) or 'none'}" + did_you_mean(name, list(tags)))
            raise SelectionError(msg)
        if tags[name] != tag:
            msg = (f"{where}.{name}: {name!r} takes {WHAT[tags[name]]}, {SHAPES[tags[name]]}, "
                   f"not {SHAPES[tag]}")
            raise SelectionError(msg)


def tags_of_plan(plan) -> dict[str, str]:
    """Each brushable view's and parameter's tag, from a capture plan."""
    return tags_of_kinds({f.name: f.kind for f in plan.filters})


def tags_of_kinds(kinds: dict[str, str]) -> dict[str, str]:
    """Each filter's tag, from its kind (interval, rect, points, param_eq, param_range)."""
    return {name: TAG_OF_KIND[kind] for name, kind in kinds.items()}


def tags_of_description(description: dict) -> dict[str, str]:
    """Each brushable view's and parameter's tag, from a dashboard's description
    (`GET /api/dashboards/<name>`: views' `brush` kinds, and the parameters)."""
    tags = {v["name"]: TAG_OF_KIND[v["brush"]] for v in description["views"] if v.get("brush")}
    tags.update({p["name"]: "parameter" for p in description["parameters"]})
    return tags


def tag_of(f: TaggedFilter) -> str:
    return next(iter(type(f).model_fields))


# --- states and messages -------------------------------------------------------------------


COLUMN = "column:"  # the name prefix of a filter on a source column (`filter` message)


def check_column_filter(f: TaggedFilter, where: str) -> IntervalFilter | ValuesFilter:
    """A filter on a source column (`column:<name>`): an interval or values, as a `filter`
    message takes them."""
    if not isinstance(f, IntervalFilter | ValuesFilter):
        msg = f"{where}: a filter on a source column takes an interval or values"
        raise SelectionError(msg)
    return f


def message_of(name: str, f: TaggedFilter) -> dict:
    """The client message (docs/protocol.md) that sets filter `f` on `name`."""
    if name.startswith(COLUMN) and isinstance(f, IntervalFilter | ValuesFilter):
        column = name[len(COLUMN):]
        if isinstance(f, IntervalFilter):
            return {"type": "filter", "column": column, "interval": list(f.interval)}
        return {"type": "filter", "column": column, "values": list(f.values)}
    if isinstance(f, IntervalFilter):
        return {"type": "brush", "view": name, "interval": list(f.interval)}
    if isinstance(f, RectFilter):
        return {"type": "brush", "view": name, "interval": list(f.rect.x), "y": list(f.rect.y)}
    if isinstance(f, ValuesFilter):
        return {"type": "select", "view": name, "values": list(f.values)}
    return {"type": "parameter", "name": name, "value": f.parameter}


def entry_of_message(message: dict) -> tuple[str, dict | None] | None:
    """(name, its tagged filter as JSON, or None when the message makes it inactive) of a
    brush, select or parameter message; None for other messages."""
    kind = message.get("type")
    if kind == "brush":
        if message.get("y") is not None:
            return message["view"], {"rect": {"x": list(message["interval"]), "y": list(message["y"])}}
        return message["view"], {"interval": list(message["interval"])}
    if kind == "select":
        return message["view"], {"values": list(message["values"])}
    if kind == "parameter":
        value = message.get("value")
        return message["name"], None if value is None else {"parameter": value}
    return None


def apply_message(state: dict, message: dict) -> dict:
    """The state (JSON) after a client message: brushes, selects and parameters set
    their entry, clears remove one or all; other messages leave it."""
    if message.get("type") == "filters":
        return dict(message.get("filters") or {})
    if message.get("type") == "clear":
        name = message.get("view")
        return {} if name is None else {n: f for n, f in state.items() if n != name}
    entry = entry_of_message(message)
    if entry is None:
        return state
    name, f = entry
    out = {n: v for n, v in state.items() if n != name} if f is None else {**state, name: f}
    return out


def state_json(filters: dict[str, object], kinds: dict[str, str]) -> dict[str, dict]:
    """A session's active filters (`SessionAPI.filters`: each as it was given — a brush's
    `(interval, y)`, a select's values, a parameter's value) in the tagged form, by the
    kind each name has (`kinds`: name -> the plan's filter kind)."""
    out = {}
    for name, given in filters.items():
        kind = kinds[name]
        if kind == "interval":  # (an infinite bound as 'Infinity': `wire_bound`)
            out[name] = {"interval": [wire_bound(b) for b in given[0]]}
        elif kind == "rect":
            out[name] = {"rect": {"x": [wire_bound(b) for b in given[0]],
                                  "y": [wire_bound(b) for b in given[1]]}}
        elif kind == "points":  # (a float field's ±inf as 'Infinity': JSON has none)
            out[name] = {"values": [wire_choice(x) for x in given]}
        elif kind == "param_eq":  # (a float field's NaN as 'NaN': a parameter's null is inactive)
            out[name] = {"parameter": wire_dropdown(given)}
        else:
            out[name] = {"parameter": [wire_bound(b) for b in given] if isinstance(given, (list, tuple))
                         else wire_bound(given)}
    return out


def to_json(state: dict[str, TaggedFilter]) -> dict[str, dict]:
    return {name: f.model_dump(mode="json") for name, f in state.items()}


# --- messages --------------------------------------------------------------------------------


def did_you_mean(name: object, choices: list[str]) -> str:
    """'; did you mean 'x'?' for the closest choice (spec/problems.py's), or ''."""
    hint = spec_did_you_mean(str(name), choices)
    return f"; {hint}" if hint else ""


def _shapes() -> str:
    return ", ".join(SHAPES.values())


_EXPECTED = {"interval": "[lo, hi]", "x": "[lo, hi]", "y": "[lo, hi]", "values": "a list of values",
             "rect": '{"x": [lo, hi], "y": [lo, hi]}'}


def _shape_problem(err: dict, where: str) -> str:
    """A curated message for the first pydantic error of a tagged filter."""
    loc = [p for p in err["loc"] if p != "parameter"]
    path = where + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
    field = next((p for p in reversed(loc) if isinstance(p, str)), "")
    kind = err["type"]
    if kind == "missing" and loc and isinstance(loc[-1], int):  # a tuple too short: its input
        kind, path = "too_short", path.rsplit("[", 1)[0]
    if kind == "missing":
        return f"{path}: missing; a rect is {_EXPECTED['rect']}"
    if kind == "extra_forbidden":
        return f"{path}: unknown key {field!r}; a rect is {_EXPECTED['rect']}" + \
            did_you_mean(field, ["x", "y"])
    value = err.get("input")
    if kind in ("too_long", "too_short"):
        return f"{path}: {show(value)} has {len(value)} items; an interval is [lo, hi] (null for an open end)"
    return f"{path}: {show(value)} is not {_EXPECTED.get(field, 'valid')}"
