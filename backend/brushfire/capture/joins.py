"""Joins: the dimension tables of `source.joins`, joined many-to-one to the source's rows
as SQL's LEFT JOIN (docs/spec.md, "Joins"; DESIGN.md, "Joins").

Each row of the source keeps its place (capture's rid order is the source's) and gains
the columns of its dimension row as `<join>.<column>`, null when no row matches (a null
`on`, or a value the dimension's key does not hold). A dimension key must be unique: a
duplicated key would repeat source rows, so capture refuses it (`duplicate_error`) before
any long job. `<join>.<key>` is null exactly for the rows without a match (through every
join of the chain), so the scan counts them from its nulls (`key_column`).

What is here is pure (the spec, and Arrow tables in this process: capture/local.py);
Spark does the same in capture/analyze.py, with the columns `plan.needed_columns` names.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from brushfire.errors import CaptureError
from brushfire.spec import models as m
from brushfire.values import datetime_micros, format_instant


def key_column(j: m.Join) -> str:
    """The joined column that holds the dimension row's key: null exactly when the row
    had no match on `j` (or on a join before it in its chain)."""
    return f"{j.name}.{j.key}"


def join_columns(dash: m.DashboardSpec) -> list[str]:
    """The joins' key columns (`key_column`): the scan counts their nulls (rows without a
    match) and details on demand carry them (the dimension rows behind a selection)."""
    return [key_column(j) for j in dash.source.joins]


def name_clash(j: m.Join, columns) -> tuple[str, str, str] | None:
    """(the column of the source, message, hint) when `j`'s name clashes with a column of
    the source (`columns`: its names), compared as Spark resolves names (case-insensitively):
    the name itself, or a name `<join>.<...>`, which a joined column would take too (Spark's
    reference to it is then ambiguous, and the scan failed on it). None when it does not."""
    name = j.name.lower()
    same = [c for c in columns if c.lower() == name]
    dotted = [c for c in columns if c.lower().startswith(f"{name}.")]
    hint = "a join's columns are <join>.<column>: give the join another name"
    if same:
        return same[0], f"join name {j.name!r} is a column of the source ({same[0]!r})", hint
    if dotted:
        msg = (f"join name {j.name!r} begins the name of the source's column {dotted[0]!r}, "
               f"which the join's columns would be named as ({j.name}.<column>)")
        return dotted[0], msg, f"{hint}, or rename the source's column"
    return None


MAX_NAMED_FILES = 3  # files of a folder named where a duplicated key is


def duplicate_error(j: m.Join, value, as_joined=None, files: list[str] | None = None) -> CaptureError:
    """`as_joined`: the value as the join compares it with `on`, when that differs;
    `files`: those holding the value, of a table of several files (a folder), which the
    message names (a folder's path alone left the duplicate to be searched for)."""
    where = "on more than one row" if as_joined is None or as_joined == value else \
        f"equal to another row's as the join compares it with {j.on!r}: {key_text(as_joined)}"
    if files:
        names = [Path(f).name for f in files[:MAX_NAMED_FILES]]
        more = len(files) - len(names)
        listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
        where += f", in {listed}" + (f" and {more} other file{'s' * (more > 1)}" if more else "")
    msg = (f"join {j.name!r}: key {j.key!r} of {j.path} is not unique (the value {key_text(value)} is "
           f"{where}), so a row of the source would match several rows; "
           f"hint: join on a unique column of {j.path}, or remove its duplicate rows")
    return CaptureError(msg)


def key_text(x) -> str:
    """A key's value as an error names it: repr, but a time (a datetime, naive = UTC) as
    the ISO instant in UTC Brushfire shows times as (views' labels, replies), and a date
    as its ISO date, not as Python's `datetime.datetime(...)`."""
    if isinstance(x, datetime):
        return repr(format_instant(datetime_micros(x)))
    if isinstance(x, date):
        return repr(x.isoformat())
    return repr(x)


def check_unique(j: m.Join, dim: pa.Table, compared=None) -> None:
    """CaptureError when the dimension's key holds a (non-null) value twice: as the join
    compares it (`compared`: the key in the join's type, e.g. '007' and '7' as integers),
    or as it is."""
    raw = _decoded(dim.column(j.key)).combine_chunks()  # (Arrow's index has no kernel for dictionaries)
    keys = raw if compared is None else compared.combine_chunks()
    counts = pc.value_counts(keys.drop_null())
    dup = pc.filter(counts, pc.greater(counts.field("counts"), 1))
    if len(dup):
        value = dup.field("values")[0]
        first = pc.index(keys, value).as_py()  # (-1 for NaN, which equals no value)
        raise duplicate_error(j, raw[first].as_py() if first >= 0 else value.as_py(), value.as_py())


def join_tables(fact: pa.Table, source: m.Source, dims: dict[str, pa.Table]) -> pa.Table:
    """`fact` LEFT JOIN each join's table in `dims` (by join name), in the spec's order:
    the rows of `fact` in their order, then every column of each dimension table as
    `<join>.<column>` (null without a match). CaptureError on a duplicated key."""
    out = fact
    for j in source.joins:
        dim = dims[j.name]
        left, right = _comparable(out.column(j.on), dim.column(j.key))
        check_unique(j, dim, right)
        # the matching dimension row of each row (null: none; nulls never match)
        at = pc.index_in(left, value_set=right.combine_chunks(), skip_nulls=True)
        for c in dim.column_names:
            out = out.append_column(f"{j.name}.{c}", dim.column(c).take(at))
    return out


def _comparable(left, right) -> tuple:
    """The two key columns in one type (`_common_type`), compared as SQL (and Spark's
    join) compares them: text with integers as integers (`_text_as_int`), a float's -0.0
    as 0.0 (Spark normalizes join keys so: -0.0 = 0.0), dictionary-encoded columns (a
    pandas category) by their values."""
    left, right = _decoded(left), _decoded(right)
    t, u = left.type, right.type
    if (_is_text(t) and pa.types.is_integer(u)) or (pa.types.is_integer(t) and _is_text(u)):
        # text with integers: the text as a BIGINT, as Spark (and DuckDB) cast it: '007' and
        # ' 7' are 7 (Arrow's cast refused ' 7', and casting the integers to text instead
        # matched '7' alone)
        return _text_as_int(left), _text_as_int(right)
    common = _common_type(t, u)
    left, right = left.cast(common), right.cast(common)
    if pa.types.is_floating(common):
        left, right = pc.add(left, 0.0), pc.add(right, 0.0)  # (-0.0 + 0.0 is 0.0)
    return left, right


def _common_type(t: pa.DataType, u: pa.DataType) -> pa.DataType:
    """The type SQL compares a `t` and a `u` in, holding the values of both exactly (an
    Arrow cast to either failed the capture on a value the other cannot hold, or matched
    a date with any time of its day): integers of any width as int64 (an int64 key beyond
    an int32 `on` matches nothing, it is no error); integers (an unsigned 64-bit one a
    DECIMAL(20, 0), as Spark reads it) with decimals as a decimal of the larger scale
    (1 = 1.00, 2 != 2.50); numbers with floats as doubles; a date with a time as the time
    (the date at midnight UTC), times of two units in the finer one; otherwise `t`."""
    if t == u:
        return t
    exact = [_as_decimal(x) for x in (t, u)]
    if None not in exact and any(pa.types.is_decimal(x) or pa.types.is_uint64(x) for x in (t, u)):
        scale = max(x.scale for x in exact)
        digits = max(x.precision - x.scale for x in exact) + scale
        return pa.decimal128(digits, scale) if digits <= 38 else pa.float64()
    if None not in exact:
        return pa.int64()
    if all(x is not None or pa.types.is_floating(y) for x, y in zip(exact, (t, u), strict=True)):
        return pa.float64()
    if all(pa.types.is_timestamp(x) or pa.types.is_date(x) for x in (t, u)):
        units = [x.unit for x in (t, u) if pa.types.is_timestamp(x)]
        if units:
            return pa.timestamp(max(units, key=["s", "ms", "us", "ns"].index))
    return t


_INTEGER_DIGITS = {8: 3, 16: 5, 32: 10, 64: 19}


def _as_decimal(t: pa.DataType) -> pa.DataType | None:
    """An integer or decimal type as the decimal that holds its values; None for others."""
    if pa.types.is_decimal(t):
        return t
    if pa.types.is_integer(t):
        return pa.decimal128(_INTEGER_DIGITS[t.bit_width] + (pa.types.is_uint64(t)), 0)
    return None


def _decoded(column):
    t = column.type
    return column.cast(t.value_type) if pa.types.is_dictionary(t) else column


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _text_as_int(column):
    """Integers as int64; text as the integer it spells (whitespace around it and a leading
    '+' aside, as SQL's cast reads it), null when it spells none."""
    if not _is_text(column.type):
        return column.cast(pa.int64())
    text = pc.replace_substring_regex(pc.utf8_trim_whitespace(column), r"^\+", "")
    ok = pc.match_substring_regex(text, r"^-?[0-9]{1,18}$")
    return pc.if_else(ok, text, pa.scalar(None, text.type)).cast(pa.int64())


__all__ = ["check_unique", "duplicate_error", "join_columns", "join_tables", "key_column", "key_text",
           "name_clash"]

