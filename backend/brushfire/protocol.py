"""The interaction protocol: `handle(session, message) -> reply`, the one dispatcher the
WebSocket server, the widget and the perf harness all use.

A message enters here once on its way down and once on its way up: `handle` has it
parsed and checked against the dashboard into its typed request (brushfire/requests.py),
runs the request on the session (`RUNS`: one function per request type, the engine call
and the reply) and makes the reply from what the session returns. Client messages are
JSON objects with a lowercase `type` and an optional `id` that the reply echoes. A
message that fails validation MUST get an `error` reply and MUST leave the session
unchanged; `handle` never raises, whatever it is given. Replies carry the engine's
compute time in `ms`. Limits (docs/protocol.md): a message's text is checked by
brushfire/wire.py (at most MAX_MESSAGE_BYTES of UTF-8, MAX_JSON_DEPTH levels of nesting,
finite numbers), which also encodes replies; the limits of requests (a page's rows, a
forward's rids) are brushfire/limits.py's, which the sessions' Python API keeps too.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import Any, cast

from brushfire import selection as S
from brushfire import values as V
from brushfire.engine import api as R
from brushfire.engine.api import ForwardAPI, LazyUpdate, LineageAPI, SessionAPI, Update, ViewData
from brushfire.errors import BrushfireError
from brushfire.requests import answers_lazily, echo_id, filter_kinds, lazy_api, parse
from brushfire.wire import ProtocolError, decode_message, exact_int, jsonable, rows_json

log = logging.getLogger("brushfire.protocol")


# --- each request run on the session, and its reply ----------------------------------------


def run_brush(session: SessionAPI, r: R.BrushRequest) -> dict:
    return update_reply(session, session.apply_brush(r))


def run_select(session: SessionAPI, r: R.SelectRequest) -> dict:
    return update_reply(session, session.apply_select(r))


def run_clear(session: SessionAPI, r: R.ClearRequest) -> dict:
    return update_reply(session, session.apply_clear(r))


def run_parameter(session: SessionAPI, r: R.ParameterRequest) -> dict:
    return update_reply(session, session.apply_parameter(r))


def run_filters(session: SessionAPI, r: R.FiltersRequest) -> dict:
    """All or nothing: a state the engine refuses (e.g. cubes-only) leaves the previous one."""
    previous = S.state_json(session.filters, filter_kinds(session))
    t0 = time.perf_counter()
    try:
        update = set_filters(session, r.requests)
    except Exception:  # refused by the engine, or failed: restore
        set_filters(session, parse({"type": "filters", "filters": previous}).check(session).requests)
        raise
    update.seconds = time.perf_counter() - t0
    return update_reply(session, update)


def run_highlight(session: SessionAPI, r: R.HighlightRequest) -> dict:
    views = session.answer_highlight(r)  # (r.targets in their order; undeclared pairs: on Spark)
    return {"type": "highlight", "source": r.source, "bars": r.bars,
            "views": {n: view_json(v) for n, v in views.items()}}


def run_filter(session: SessionAPI, r: R.FilterRequest) -> dict:
    return update_reply(session, lazy_api(session).filter_column(r.column, r.interval, r.values))


def run_details(session: SessionAPI, r: R.DetailsRequest) -> dict:
    got = session.answer_details(r)
    return {"type": "details", "page": r.page, "total": got.total,
            "rows": rows_json(got.rows, join_keys(session))}


def join_keys(session: SessionAPI) -> list[str]:
    """The joins' key columns (`<join>.<key>`): null there says a row has no match, so a
    float key's NaN is written as text there (wire.rows_json)."""
    return [f"{j.name}.{j.key}" for j in session.plan.dashboard.source.joins]


def run_forward(session: SessionAPI, r: R.ForwardRequest) -> dict:
    return forward_reply(session, r)


def run_dimension(session: SessionAPI, r: R.DimensionRequest) -> dict:
    from brushfire.engine.dimensions import answer_dimension

    got = answer_dimension(cast(LineageAPI, session), r)  # (Dimension.check: the session declares ROWS)
    return {"type": "dimension", "join": r.join, "page": r.page, "total": got.total,
            "unmatched": got.unmatched, "rows": rows_json(got.table, join_keys(session))}


def run_dimension_forward(session: SessionAPI, r: R.DimensionForwardRequest) -> dict:
    from brushfire.engine.dimensions import answer_dimension_forward

    rows, views = answer_dimension_forward(cast(LineageAPI, session), r)
    pruned = [v.name for v in session.plan.dashboard.views if v.name not in views]
    return {"type": "dimension_forward", "join": r.join, "key": exact_int(r.key), "rows": rows,
            "views": views, "pruned": pruned}


def run_state(session: SessionAPI, r: R.StateRequest) -> dict:
    return {"type": "state", "views": {n: view_json(v) for n, v in session.views().items()},
            "filters": filters_json(session), "selected": session.count_selected()}


RUNS: dict[type[R.Request], Callable[[SessionAPI, Any], dict]] = {
    R.BrushRequest: run_brush, R.SelectRequest: run_select, R.ClearRequest: run_clear,
    R.ParameterRequest: run_parameter, R.FiltersRequest: run_filters,
    R.HighlightRequest: run_highlight, R.FilterRequest: run_filter,
    R.DetailsRequest: run_details, R.ForwardRequest: run_forward,
    R.DimensionRequest: run_dimension, R.DimensionForwardRequest: run_dimension_forward,
    R.StateRequest: run_state,
}


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
        request = msg.check(session)  # once: not checked again below
        reply = RUNS[type(request)](session, request)
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


def set_filters(session: SessionAPI, requests: tuple[R.Request, ...]) -> Update:
    """Replace the session's filters by a `filters` message's checked `requests` (or the
    session's own before it): clear, then each request. The update holds every view."""
    update = session.apply_clear(R.ClearRequest(None))
    for r in requests:
        if isinstance(r, R.BrushRequest):
            u = session.apply_brush(r)
        elif isinstance(r, R.SelectRequest):
            u = session.apply_select(r)
        elif isinstance(r, R.FilterRequest):  # (a name on a source column: a LAZY session's)
            u = lazy_api(session).filter_column(r.column, r.interval, r.values, f"filters.{S.COLUMN}{r.column}")
        else:
            u = session.apply_parameter(cast(R.ParameterRequest, r))
        update.methods.update(u.methods)
    update.views = session.views()
    return update


def carry_over(old: SessionAPI, new: SessionAPI) -> list[str]:
    """Give `new` (a session of a newer capture of the same dashboard) the filters of
    `old`, each as a `filters` message checks it; returns the names of those the new
    data refuse (a category or dropdown choice gone), left off. A selection of several
    values keeps those the new data still take (a category now among '(other)' is no bar
    to select: the others stay selected). (A slider's value beyond the new data's range is
    kept: a filter as SQL applies it, which may select no row.)"""
    state = filters_json(old)
    dropped: list[str] = []
    while True:
        reply = handle(new, {"type": "filters", "filters": state})
        if reply["type"] != "error" or not state:
            return dropped
        # (the entry's whole name: c2's error is not c's)
        bad = next((n for n in state if re.search(rf"filters\.{re.escape(n)}(?=[.:\s]|$)", reply["message"])),
                   None)
        bad = bad or next(iter(state))  # (the message names the entry; else drop the first)
        value = re.match(rf"filters\.{re.escape(bad)}\.values\[(\d+)\]", reply["message"])
        values = state[bad].get("values") if isinstance(state[bad], dict) else None
        if value and isinstance(values, list) and len(values) > 1 and int(value[1]) < len(values):
            state = {**state, bad: {**state[bad], "values": [v for i, v in enumerate(values)
                                                             if i != int(value[1])]}}
            continue
        dropped.append(bad)
        state = {n: f for n, f in state.items() if n != bad}


def filters_json(session: SessionAPI) -> dict[str, dict]:
    """The session's active filters in the tagged form (brushfire/selection.py), as JSON."""
    return jsonable(S.state_json(session.filters, filter_kinds(session)))


def error_reply(message: str, msg_id: Any = None) -> dict:
    return {"type": "error", "id": msg_id, "message": message}


def forward_reply(session: SessionAPI, r: R.ForwardRequest) -> dict:
    """The bars rows `r.rids` fall in, per view; `pruned`: the views whose bars per row were
    not captured (nothing filters or highlights them), so they are left out."""
    views = cast(ForwardAPI, session).answer_forward(r)  # (Forward.check: the session declares it)
    pruned = [v.name for v in session.plan.dashboard.views if v.name not in views]
    reply = {"type": "forward", "rids": r.rids, "views": views, "pruned": pruned}
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


