"""The wire format: a message's frame checked and decoded (size, nesting depth, UTF-8,
JSON with finite numbers only) before protocol.parse reads it as a message, and a reply
encoded as JSON text (NaN and infinities as null, times as ISO text, numpy values as
numbers). Limits and errors here are about the text, not its meaning."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection
from decimal import Decimal
from typing import Any

import orjson

from brushfire.errors import BrushfireError

MAX_MESSAGE_BYTES = 64 * 1024  # of UTF-8 (or of a binary frame), not characters
MAX_JSON_DEPTH = 16  # nested arrays and objects; a message needs 2
# The integers a JSON number carries exactly to a browser (a double): replies send the
# ones beyond as their decimal text (`exact_int`), so an int64 key keeps its digits.
MAX_SAFE_INTEGER = 2**53 - 1



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
        return json.loads(raw, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_integer)
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


def _integer(text: str) -> int:
    if len(text) > 4000:  # (Python converts at most 4,300 digits, and says to raise its limit)
        msg = f"number {text[:29]}… of {len(text.lstrip('-')):,} digits is beyond the range of numbers (±1.8e308)"
        raise ProtocolError(msg)
    return int(text)


class ProtocolError(BrushfireError):
    def __init__(self, message: str, msg_id: Any = None) -> None:
        super().__init__(message)
        self.msg_id = msg_id


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


def as_sent(reply: dict) -> dict:
    """A reply (or the dashboard's description) as a client reads the text `dumps` makes
    of it: for a transport that encodes messages itself, a Jupyter comm, whose strict JSON
    would otherwise send NaN and infinities as the text 'nan' and 'inf' (and numpy values
    as it pleases), where the WebSocket sends null."""
    return json.loads(dumps(reply))


def _json_default(x):
    if hasattr(x, "isoformat"):  # pandas' Timestamp
        return x.isoformat()
    if isinstance(x, Decimal):  # its digits, as SQL writes it ('0.0000000000', where str says '0E-10')
        return format(x, "f")
    if hasattr(x, "tolist"):  # numpy (the standard library's fallback)
        return jsonable(x.tolist())
    return str(x)  # Decimal, ...


def jsonable(x, nonfinite_as_null: bool = True):
    """x with NaN and infinities as null, datetimes as ISO strings and numpy values as
    Python's, for JSON. `nonfinite_as_null=False` keeps NaN and infinities as floats: for
    values a person gave (the widget's filters), which the protocol checks, where null
    would silently mean something else (an open end, an inactive parameter)."""
    if isinstance(x, dict):
        return {k: jsonable(v, nonfinite_as_null) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v, nonfinite_as_null) for v in x]
    if isinstance(x, float) and nonfinite_as_null and (x != x or x in (math.inf, -math.inf)):
        return None
    if hasattr(x, "isoformat"):
        return x.isoformat()  # (pandas' NaT: 'NaT')
    if hasattr(x, "tolist"):  # numpy's (np.int64 is no int: json and pydantic refuse it)
        if not nonfinite_as_null and getattr(getattr(x, "dtype", None), "kind", "") == "M":
            if getattr(x, "ndim", 0):  # (numpy's times, each as below)
                return [jsonable(v, nonfinite_as_null) for v in x]
            if x != x:  # NaT: its tolist() is None, an open end, silently; 'NaT' as pandas' NaT
                return "NaT"
        return jsonable(x.tolist(), nonfinite_as_null)
    return x


def exact_int(x):
    """An integer beyond ±(2^53-1) as its decimal text (a page would read the number as the
    nearest double: 9007199254740993 as ...992); anything else as it is."""
    if isinstance(x, int) and not isinstance(x, bool) and not -MAX_SAFE_INTEGER <= x <= MAX_SAFE_INTEGER:
        return str(x)
    return x


def float_text(x: float) -> str:
    """A NaN or infinity as the wire spells it where null would say something else (JSON
    has no such numbers): 'NaN', 'Infinity', '-Infinity'."""
    return "NaN" if math.isnan(x) else "Infinity" if x > 0 else "-Infinity"


def _beyond_safe(col) -> bool:
    """Whether an integer column holds a value beyond ±(2^53-1) (one vector pass)."""
    import pyarrow.compute as pc

    lo, hi = pc.min_max(col).values()
    return hi.is_valid and (hi.as_py() > MAX_SAFE_INTEGER or lo.as_py() < -MAX_SAFE_INTEGER)


def rows_json(table, keys: Collection[str] = ()) -> list[dict]:
    """A details page's rows as `jsonable` makes them ({column: value}, NaN and infinities
    as None, times as ISO text, integers beyond ±(2^53-1) as their decimal text
    (`exact_int`); but in the columns `keys`, joins' key columns, whose null
    says a row has no match, as 'NaN', 'Infinity', '-Infinity': keys Spark's join matches,
    which `dimension_forward` takes back), column by column with Arrow's vector operations instead
    of a Python call per value: a page of 10,000 flights rows took 130-150 ms of Python,
    holding the interpreter's lock all along, which every other session's replies waited
    for (a session brushing beside one paging through details: reply p50 2.6 -> 10 ms,
    p99 19 -> 121 ms); now ~17 ms. Naive timestamps (in s or us), dates and finite-or-not
    floats are converted as vectors; other times and nested values one by one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for name, col in zip(table.column_names, table.columns, strict=True):
        t = col.type
        try:
            if pa.types.is_floating(t) and name in keys:
                values = [None if x is None else x if math.isfinite(x) else float_text(x)
                          for x in col.to_pylist()]
            elif pa.types.is_floating(t):
                values = pc.if_else(pc.is_finite(col), col, pa.scalar(None, t)).to_pylist()
            elif pa.types.is_date(t) or (pa.types.is_timestamp(t) and t.tz is None and t.unit in ("s", "us")):
                text = pc.cast(col, pa.string())  # 2001-01-03 09:40:00.000000, as isoformat but the T
                text = pc.replace_substring(text, " ", "T", max_replacements=1)
                values = pc.replace_substring_regex(text, r"\.000000$", "").to_pylist()
            elif pa.types.is_integer(t) and t.bit_width == 64 and _beyond_safe(col):
                values = [exact_int(x) for x in col.to_pylist()]  # (only a column that has one)
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
