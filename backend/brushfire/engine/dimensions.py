"""Lineage through a join (Smoke 3.2.4; DESIGN.md, "Joins"): a dimension table's rows
behind a selection, and the bars a dimension row leads to.

A pk-fk join gives each row of the source at most one dimension row; the capture keeps
which one as the join's key column `<join>.<key>` in the details snapshot (plan.py adds
it when details on demand are declared), in rid order. So:
- backward (`dimension_rows`): the rows behind a selection (`backward_rids`), grouped by
  that key: one row per dimension row they reach, with how many of them reach it, and the
  join's columns the details declare; the rows that reach none (no match) are counted;
- forward (`dimension_forward`): the rows whose key is a dimension row's, then the bars
  each view shows them in (the session's `forward`).
Both read the snapshot (Arrow) and cost a pass over the rows they touch; they are not on
the interaction path of brushes. Pure functions of a session; no state of their own.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from datetime import time
from decimal import Decimal, InvalidOperation

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from brushfire import values as V
from brushfire.engine.api import (
    DimensionForwardRequest,
    DimensionRequest,
    check_join_captured,
    details_request,
)
from brushfire.errors import InteractionError
from brushfire.spec import models as m

ROWS = "rows"  # the column of `dimension_rows` that counts the source's rows per dimension row
_INTEGER_TEXT = re.compile(r"-?[0-9]+")  # an integer key's decimal text (as replies write it)


@dataclass
class DimensionRows:
    """A page of the dimension rows behind a selection (`dimension_rows`)."""

    table: pa.Table  # <join>.<key>, the join's declared details columns, `rows`
    total: int  # dimension rows behind the selection
    unmatched: int  # rows of the selection without a dimension row (no match)


def _join(session, name: str) -> m.Join:
    src = session.plan.dashboard.source
    names = [j.name for j in src.joins]
    if name not in names:
        msg = f"no join named {name!r}; joins: {', '.join(names) or 'none'}"
        raise InteractionError(msg)
    check_join_captured(session.plan, name)
    return src.join(name)


def dimension_rows(session, join: str, view: str | None = None, bars: list[int] | None = None,
                   page: int = 0, page_size: int | None = None) -> DimensionRows:
    """The rows of `join`'s dimension table behind the current selection (or behind bars
    of a view, as it shows them): each with `rows`, how many rows of the selection reach
    it, most first (ties by key); paged as details are. Checks what it is given, then does
    what `answer_dimension` does."""
    j = _join(session, join)
    _, size = details_request(session.plan, page, page_size, [f"{j.name}.{j.key}"])
    return _rows(session, j, session.backward_rids(view, bars), page, size)


def answer_dimension(session, r: DimensionRequest) -> DimensionRows:
    """`dimension_rows` of a request checked by its message (brushfire/requests.py: the
    join's lineage captured, the view, bars and page): not checked again."""
    j = session.plan.dashboard.source.join(r.join)
    size = r.page_size or session.plan.dashboard.interactions.details.page_size
    return _rows(session, j, session.rids_behind(r.view, r.bars), r.page, size)


def answer_dimension_all(session, r: DimensionRequest) -> DimensionRows:
    """Every dimension row `answer_dimension` lists, page after page, as one table (in its
    order): what the export of a join's rows writes (brushfire/export.py)."""
    j = session.plan.dashboard.source.join(r.join)
    return _grouped(session, j, session.rids_behind(r.view, r.bars))


def dimension_columns(session, j: m.Join) -> list[str]:
    """The columns of a join's dimension rows but `rows`: its key, then its details columns."""
    key = f"{j.name}.{j.key}"
    # (each once: details columns may name one twice, as plan.detail_columns says them once)
    return list(dict.fromkeys([key, *[c for c in session.plan.dashboard.interactions.details.columns
                                      if c.startswith(f"{j.name}.") and c != key]]))


def _rows(session, j: m.Join, rids: np.ndarray, page: int, size: int) -> DimensionRows:
    got = _grouped(session, j, rids)
    return DimensionRows(got.table.slice(page * size, size), got.total, got.unmatched)


def _grouped(session, j: m.Join, rids: np.ndarray) -> DimensionRows:
    """All the dimension rows `rids` reach, most first (ties by key), unpaged."""
    columns = dimension_columns(session, j)
    key = columns[0]
    table = session.store.take(np.asarray(rids, np.int64), columns)
    if not table.num_rows:  # (of a source of no rows, the columns' types are unknown)
        return DimensionRows(table.select(columns).append_column(ROWS, pa.array([], pa.int64())), 0, 0)
    # each dimension row's columns from its first row (taken by position: Arrow's `first`
    # has no kernel for decimals, durations or dictionaries)
    at = "__brushfire_at"
    keys = table[key]  # (a dictionary's by its values: Arrow sorts no dictionary, and they are the keys)
    keys = keys.cast(keys.type.value_type) if pa.types.is_dictionary(keys.type) else keys
    indexed = pa.table({key: keys, at: pa.array(np.arange(table.num_rows, dtype=np.int64))})
    grouped = indexed.group_by(key, use_threads=False).aggregate(
        [(key, "count", pc.CountOptions(mode="all")), (at, "min")])
    none = pc.is_null(grouped[key])
    unmatched = int(pc.sum(pc.filter(grouped[f"{key}_count"], none)).as_py() or 0)
    grouped = grouped.filter(pc.invert(none))
    grouped = grouped.sort_by([(f"{key}_count", "descending"), (key, "ascending")])
    grouped = table.take(grouped[f"{at}_min"]).select(columns).append_column(
        ROWS, grouped[f"{key}_count"].cast(pa.int64()))
    return DimensionRows(grouped, grouped.num_rows, unmatched)


def dimension_forward(session, join: str, key) -> tuple[int, dict[str, list[int]]]:
    """(rows of the source whose `join` row has key `key`, the bars each view shows them
    in): forward lineage from a dimension row. Views whose bars per row were pruned are
    left out (as `forward` leaves them out). Checks the join, then does what
    `answer_dimension_forward` does."""
    return _forward(session, _join(session, join), key)


def answer_dimension_forward(session, r: DimensionForwardRequest) -> tuple[int, dict[str, list[int]]]:
    """`dimension_forward` of a request checked by its message (the join's lineage
    captured, the key a string, a number or a bool): the join not checked again (the key's type
    against the column's is known only here; the rows found are the engine's, checked by
    `forward` as any caller's)."""
    return _forward(session, session.plan.dashboard.source.join(r.join), r.key)


def _forward(session, j: m.Join, key) -> tuple[int, dict[str, list[int]]]:
    column = f"{j.name}.{j.key}"
    rids = []
    for s in session.store.shards:
        if s.snapshot is None or not s.n_rows:
            continue
        col = s.snapshot.column(column)
        value = _key_value(key, col.type, column)
        if value is None:  # a number no value of the column equals
            continue
        # (NaN is a key like any other: Spark's join matches NaN with NaN, as SQL's `=` does)
        same = pc.is_nan(col) if _is_nan(value) else pc.equal(col, value)
        hit = pc.fill_null(same, False).to_numpy(zero_copy_only=False)
        rids.append(np.flatnonzero(hit) + s.start)
    rids = np.concatenate(rids) if rids else np.zeros(0, np.int64)
    return len(rids), session.forward(rids)


def _is_nan(value: pa.Scalar) -> bool:
    return pa.types.is_floating(value.type) and value.is_valid and value.as_py() != value.as_py()


def _key_value(key, t: pa.DataType, column: str):
    """`key` as a scalar of the key column's type `t`, or None when it is a number no value
    of a decimal column equals (7.001 of a decimal(10, 2): SQL's `=` finds no row, where
    Arrow's cast would round it to 7.00). InteractionError for a key of another type, and
    for a number given for a key of strings: a string key is compared by its text, and a
    number has many ('7', '07', '7.0'; SQL engines disagree: Spark casts the text to a
    number, DuckDB refuses the comparison), so the number matched nothing, silently. A
    float key's NaN and infinities are given as 'NaN', 'Infinity', '-Infinity' (as
    replies write them: JSON has no such numbers). A boolean key is given as a bool, and
    only it (Python's True is also the integer 1). An integer key may be given as its
    decimal text, as replies write one beyond ±(2^53-1) (a page's JSON numbers are
    doubles: the number would name another key). A binary key is given as replies write
    bytes, `b'...'` (`_bytes_key`); a time-of-day key as its ISO text ('09:30:00')."""
    text = t.value_type if pa.types.is_dictionary(t) else t
    given = key
    if isinstance(key, bool) != pa.types.is_boolean(text):  # (true is no 1, nor 'true' true)
        msg = f"key {V.show(key)} is not a value of {column} ({t})"
        raise InteractionError(msg)
    if pa.types.is_integer(text) and isinstance(key, str):
        try:  # (Arrow's cast would take ' 7' or '+7' too; Python converts at most 4,300 digits)
            key = int(key) if _INTEGER_TEXT.fullmatch(key) else None
        except ValueError:
            key = None
        if key is None:
            msg = f"key {V.show(given)} is not a value of {column} ({t})"
            raise InteractionError(msg)
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return _time_key(key, t, column)
    if _is_binary(text) and isinstance(key, str):
        key = _bytes_key(key)
    if pa.types.is_time(t) and isinstance(key, str):  # (a time of day, as replies write it: '09:30:00')
        try:
            key = time.fromisoformat(key)
        except ValueError:
            msg = f"key {given!r} is not a value of {column} ({t}): give it as a time of day, e.g. '09:30:00'"
            raise InteractionError(msg) from None
    if (pa.types.is_string(text) or pa.types.is_large_string(text)) and not isinstance(key, str):
        msg = (f"key {V.show(key)} is a number and {column} is a column of strings ({t}): give the "
               f"key as its text, e.g. {V.show(str(key))}")
        raise InteractionError(msg)
    if pa.types.is_decimal(t) and isinstance(key, (int, float, str)) and not isinstance(key, bool):
        try:
            exact = Decimal(str(key))
            if exact.is_finite() and exact == exact.quantize(Decimal(1).scaleb(-t.scale)):
                return pa.scalar(exact, pa.decimal128(38, t.scale) if t.precision <= 38 else t).cast(t)
            if exact.is_finite():
                return None
        except (InvalidOperation, pa.ArrowInvalid):
            if isinstance(key, (int, float)):
                return None  # (beyond the column's precision: no value of it)
    try:
        return pa.scalar(key).cast(t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, OverflowError):
        msg = f"key {V.show(given)} is not a value of {column} ({t})"
        raise InteractionError(msg) from None


def _is_binary(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


_BYTES_TEXT = re.compile(r"b(['\"]).*\1", re.S)  # Python's bytes literal: b'\x00a'


def _bytes_key(text: str) -> bytes:
    """A binary key as replies write bytes (wire: Python's literal, `b'\\x00a'`, which
    `dimension` rows and details carry), or else the UTF-8 bytes of the text."""
    if _BYTES_TEXT.fullmatch(text):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, bytes):
            return value
    return text.encode()


def _time_key(key, t: pa.DataType, column: str):
    """A time key as the protocol takes times (V.time_bound: ISO text, naive = UTC, so a
    details row's '2023-03-01T02:00:00', a reply's '...+00:00' and a brush's '...Z' name one
    instant) as a scalar of `t`, or None when no value of `t` is that instant (05:30 of a
    date, a microsecond of a column of seconds): SQL's `=` finds no row."""
    if not isinstance(key, str):
        msg = (f"key {V.show(key)} is a number and {column} is a column of times ({t}): give the "
               f"key as an ISO time, e.g. {V.ISO_EXAMPLE}")
        raise InteractionError(msg)
    try:
        micros = V.time_bound(key)
    except InteractionError:
        msg = f"key {V.show(key)} is not a value of {column} ({t}): give it as an ISO time, e.g. {V.ISO_EXAMPLE}"
        raise InteractionError(msg) from None
    if pa.types.is_date(t):
        days, rest = divmod(micros, 86_400_000_000)
        return None if rest else pa.scalar(days, pa.date32()).cast(t)
    try:  # (a zoned column holds UTC instants, as a naive one is read: the same micros)
        return pa.scalar(micros, pa.timestamp("us", tz=t.tz)).cast(t)
    except (pa.ArrowInvalid, OverflowError):  # (truncated to the column's unit, or beyond it)
        return None


__all__ = ["ROWS", "DimensionRows", "answer_dimension", "answer_dimension_all", "answer_dimension_forward",
           "dimension_columns", "dimension_forward", "dimension_rows"]
