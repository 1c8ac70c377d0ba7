"""The interaction protocol: typed messages and `handle(session, message) -> reply`, the
one dispatcher the WebSocket server, the widget and the perf harness all use.

Client messages are JSON objects with a lowercase `type` and an optional `id` that the
reply echoes. A message that fails validation MUST get an `error` reply and MUST leave
the session unchanged. Replies carry the engine's compute time in `ms`.
"""

from __future__ import annotations

import json
import time
from typing import Annotated, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from brushfire.engine.session import Session, Update, ViewData
from brushfire.errors import BrushfireError

MAX_MESSAGE_BYTES = 64 * 1024

Bound = float | int | str | None  # a number, an ISO time, or None for an open end


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
    values: list[str | int | float]


class Clear(Message):
    """Clear one view's brush or parameter, or every filter when `view` is omitted."""

    type: Literal["clear"]
    view: str | None = None


class Parameter(Message):
    type: Literal["parameter"]
    name: str
    value: str | int | float | None


class Highlight(Message):
    type: Literal["highlight"]
    source: str
    bars: list[int]


class Details(Message):
    """A page of the input rows behind bars of a view, or behind the current selection."""

    type: Literal["details"]
    view: str | None = None
    bars: list[int] | None = None
    page: int = Field(0, ge=0)
    page_size: int | None = Field(None, ge=1, le=10_000)
    columns: list[str] | None = None


class State(Message):
    """Every view's current bars and the active filters."""

    type: Literal["state"]


ClientMessage = Annotated[Brush | Select | Clear | Parameter | Highlight | Details | State,
                          Field(discriminator="type")]
_adapter = pydantic.TypeAdapter(ClientMessage)


def parse(raw: str | bytes | dict) -> ClientMessage:
    """Validate a client message; raises ProtocolError with a readable reason."""
    if isinstance(raw, (str, bytes)):
        if len(raw) > MAX_MESSAGE_BYTES:
            msg = f"message of {len(raw):,} bytes is over the {MAX_MESSAGE_BYTES:,}-byte limit"
            raise ProtocolError(msg)
        try:
            raw = json.loads(raw)
        except ValueError as e:
            msg = f"not valid JSON: {e}"
            raise ProtocolError(msg) from None
    if not isinstance(raw, dict):
        msg = "a message is a JSON object with a 'type'"
        raise ProtocolError(msg)
    try:
        return _adapter.validate_python(raw)
    except pydantic.ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        msg = f"{where}: {first['msg']}" if where else first["msg"]
        raise ProtocolError(msg, raw.get("id")) from None


class ProtocolError(BrushfireError):
    def __init__(self, message: str, msg_id: Any = None) -> None:
        super().__init__(message)
        self.msg_id = msg_id


def handle(session: Session, raw: str | bytes | dict) -> dict:
    """Apply one client message to the session and return the reply (never raises for
    bad input: the reply is then `{"type": "error", ...}` and the session is unchanged)."""
    msg_id = raw.get("id") if isinstance(raw, dict) else None
    try:
        msg = parse(raw)
        msg_id = msg.id
        t0 = time.perf_counter()
        reply = _dispatch(session, msg)
        reply.setdefault("ms", (time.perf_counter() - t0) * 1e3)
    except ProtocolError as e:
        return error_reply(str(e), e.msg_id if e.msg_id is not None else msg_id)
    except BrushfireError as e:
        return error_reply(str(e), msg_id)
    reply["id"] = msg_id
    return reply


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
    if isinstance(msg, Highlight):
        views = session.highlight(msg.source, msg.bars)
        return {"type": "highlight", "source": msg.source, "bars": msg.bars,
                "views": {n: view_json(v) for n, v in views.items()}}
    if isinstance(msg, Details):
        table = session.details(msg.view, msg.bars, msg.page, msg.page_size, msg.columns)
        total = session.count_selected(msg.view, msg.bars)
        return {"type": "details", "page": msg.page, "total": total,
                "rows": _jsonable_rows(table.to_pylist())}
    return {"type": "state", "views": {n: view_json(v) for n, v in session.views().items()},
            "filters": jsonable(session.filters), "selected": session.count_selected()}


def update_reply(session: Session, update: Update) -> dict:
    """The views an interaction changed, how each was computed, and the selected rows."""
    return {"type": "update", "views": {n: view_json(v) for n, v in update.views.items()},
            "methods": update.methods, "ms": update.seconds * 1e3,
            "selected": session.count_selected(), "filters": jsonable(session.filters)}


def view_json(v: ViewData) -> dict:
    return {"counts": v.counts, "values": v.values}


def jsonable(x):
    """x with NaN as null and datetimes as ISO strings, for JSON."""
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, float) and x != x:
        return None
    if hasattr(x, "isoformat"):
        return x.isoformat()
    return x


def _jsonable_rows(rows: list[dict]) -> list[dict]:
    return [{k: jsonable(v) for k, v in r.items()} for r in rows]
