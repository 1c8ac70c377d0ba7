"""Arrow columns as numpy values, the same way on Spark's executors and on the driver.

Numbers become float64 (decimals rounded once to the nearest float) or int64 (integers),
times become UTC microseconds (int64), and every kind comes with a `valid` mask: null,
and NaN for floats, are not valid. Strings (and booleans) stay Arrow arrays: they are
only ever looked up in a dictionary.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def kind_of(t: pa.DataType) -> str:
    """'int', 'float', 'temporal' or 'string' (anything else is treated as a string)."""
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "float"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "temporal"
    return "string"


def numbers(col: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(values as int64 / float64 / UTC microseconds, valid mask) of a numeric or time column."""
    kind = kind_of(col.type)
    if kind == "temporal":
        if pa.types.is_date(col.type):
            col = pc.cast(col, pa.timestamp("us"))
        col = pc.cast(col, pa.timestamp("us", tz=getattr(col.type, "tz", None)))
        return to_numpy(pc.cast(col, pa.int64()), np.int64, 0), valid_mask(col)
    if kind == "int":
        return to_numpy(col, np.int64, 0), valid_mask(col)
    if kind == "float":
        values = to_numpy(to_float64(col), np.float64, np.nan)
        return values, ~np.isnan(values)
    msg = f"a {col.type} column has no numeric values"
    raise TypeError(msg)


def measure(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A measure as float64 with NaN for null, NaN and ±inf (missing: SUM and AVG skip them,
    and prefix sums cannot carry inf - inf)."""
    values, valid = numbers(col)
    out = values.astype(np.float64)
    out[~valid | ~np.isfinite(out)] = np.nan
    return out


def to_float64(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray:
    """The column as float64, decimals rounded to the nearest float. pyarrow's cast
    multiplies the unscaled integer by 10^-scale, which is one ulp off for many values
    (0.200000 becomes 0.19999999999999998), so a brush at 0.2 would drop rows that SQL
    keeps; dividing the unscaled integer by 10^scale rounds once, exactly."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    if not pa.types.is_decimal(col.type):
        return pa.chunked_array([pc.cast(c, pa.float64()) for c in chunks], pa.float64())
    return pa.chunked_array([_decimal_to_float64(c) for c in chunks], pa.float64())


def _decimal_to_float64(c: pa.Array) -> pa.Array:
    scale = c.type.scale
    valid = ~np.asarray(c.is_null().to_numpy(zero_copy_only=False), bool)
    if c.type.bit_width == 128 and 0 <= scale <= 22 and len(c):  # 10^scale is an exact float
        words = np.frombuffer(c.buffers()[1], np.int64).reshape(-1, 2)[c.offset:c.offset + len(c)]
        low, high = words[:, 0][valid], words[:, 1][valid]
        # the unscaled value fits an int64 and converts to float exactly below 2^53
        if np.array_equal(high, low >> 63) and (not low.size or np.abs(low).max() < 2**53):
            out = np.zeros(len(c), np.float64)
            out[valid] = low / 10.0**scale
            return pa.array(out, mask=~valid)
    return pc.cast(pc.cast(c, pa.string()), pa.float64())  # text to float rounds exactly too


def valid_mask(col) -> np.ndarray:
    if not col.null_count:
        return np.ones(len(col), np.bool_)
    return to_numpy(pc.is_valid(col), np.bool_, False)


def to_numpy(col, dtype, fill) -> np.ndarray:
    """The column as a numpy array of `dtype`, nulls replaced by `fill`."""
    target = pa.from_numpy_dtype(dtype)
    if col.type != target:
        col = pc.cast(col, target)
    if col.null_count:
        col = pc.fill_null(col, pa.scalar(fill, target))
    if isinstance(col, pa.ChunkedArray):
        arr = col.to_numpy() if col.num_chunks else np.zeros(0, dtype)
    else:
        arr = col.to_numpy(zero_copy_only=False)
    return np.asarray(arr, dtype=dtype)


def lookup(col: pa.Array | pa.ChunkedArray, values: list) -> np.ndarray:
    """Position of each row's value in `values` (int64), -1 for null or absent values. A
    time column's rows match as UTC microseconds (`values`: ints), as `numbers` gives them."""
    if not values:
        return np.full(len(col), -1, np.int64)
    if kind_of(col.type) == "temporal":
        us, valid = numbers(col)
        want = np.asarray(values, np.int64)
        order = np.argsort(want, kind="stable")
        i = np.minimum(np.searchsorted(want[order], us), len(want) - 1)
        return np.where(valid & (want[order][i] == us), order[i], -1).astype(np.int64)
    value_set = pa.array(values, type=_set_type(col.type, values))
    if value_set.type != col.type:
        col = pc.cast(col, value_set.type)
    return to_numpy(pc.index_in(col, value_set=value_set), np.int64, -1)


def _set_type(t: pa.DataType, values: list) -> pa.DataType:
    if pa.types.is_large_string(t) or pa.types.is_string(t) or pa.types.is_dictionary(t):
        return pa.large_string() if pa.types.is_large_string(t) else pa.string()
    return pa.array(values).type
