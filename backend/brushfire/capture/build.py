"""Turn the capture job's Arrow output into lineage arrays: forward codes, backward
indexes, cubes and base aggregates. Pure functions of the collected table and the plan.

Categorical dictionaries (values by count, then value) and calendar bins (UTC) are
computed here, vectorized, from the raw columns the capture job returned.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from brushfire.engine import kernels as K
from brushfire.lineage.arrays import (
    CODE_DTYPE,
    MAX_BARS,
    OTHER,
    PARTITION_KINDS,
    Aggregates,
    CaptureInfo,
    Cube,
    Index,
    ViewLayout,
)
from brushfire.lineage.store import LineageStore
from brushfire.plan import CapturePlan
from brushfire.spec import models as m

DAY_US = 86_400_000_000
UNIT_US = {"minute": 60_000_000, "hour": 3_600_000_000, "day": DAY_US}


def block_size(n: int) -> int:
    """Rows per cube block: small enough that edge corrections stay cheap, large enough
    that the cube has at most ~16K blocks (about 2048 rows per block at 30M rows)."""
    b = 256
    while n // b > 16_384:
        b *= 2
    return b


@dataclass
class Columns:
    """Per-row arrays derived from the collected table, computed once each."""

    table: pa.Table
    _cache: dict

    def raw(self, field: str) -> pa.ChunkedArray:
        return self.table[f"raw__{field}"]

    def dictionary(self, field: str) -> tuple[list, np.ndarray]:
        """(distinct non-null values by count desc then value, code per row or -1)."""
        key = ("dict", field)
        if key not in self._cache:
            col = self.raw(field)
            counts = pc.value_counts(col.drop_null() if col.null_count else col)
            if len(counts):
                counts = counts.take(pc.sort_indices(pa.table(
                    {"v": counts.field("values"), "n": counts.field("counts")}),
                    sort_keys=[("n", "descending"), ("v", "ascending")]))
            values = counts.field("values") if len(counts) else pa.array([], col.type)
            codes = _to_numpy(pc.index_in(col, value_set=values), np.int32, -1)
            self._cache[key] = (values.to_pylist(), codes)
        return self._cache[key]

    def micros(self, field: str) -> tuple[np.ndarray, np.ndarray]:
        """(UTC microseconds as int64, valid mask) of a timestamp or date column."""
        key = ("us", field)
        if key not in self._cache:
            col = self.raw(field)
            if pa.types.is_date(col.type):
                col = pc.cast(col, pa.timestamp("us"))
            col = pc.cast(col, pa.timestamp("us", tz=getattr(col.type, "tz", None)))
            valid = _valid(col)
            self._cache[key] = (_to_numpy(pc.cast(col, pa.int64()), np.int64, 0), valid)
        return self._cache[key]

    def values(self, field: str) -> tuple[np.ndarray, np.ndarray, bool]:
        """(value per row as int64 or float64, valid mask, is_temporal) for brushes."""
        col = self.raw(field)
        if pa.types.is_timestamp(col.type) or pa.types.is_date(col.type):
            us, valid = self.micros(field)
            return us, valid, True
        if pa.types.is_integer(col.type):
            return _to_numpy(col, np.int64, 0), _valid(col), False
        col = to_float64(col)
        valid = _valid(col) & ~np.isnan(_to_numpy(col, np.float64, 0.0))
        return _to_numpy(col, np.float64, 0.0), valid, False


def build_store(table: pa.Table, plan: CapturePlan, info: CaptureInfo,
                progress: Callable = lambda *_: None) -> LineageStore:
    dash = plan.dashboard
    n = table.num_rows
    cols = Columns(table, {})
    t0 = time.perf_counter()
    progress("building forward codes", None)
    views, codes = forward_codes(dash, plan.measure_fields, cols, n)
    measures = np.empty((n, len(plan.measure_fields)), np.float64)
    for j, f in enumerate(plan.measure_fields):
        measures[:, j] = _to_numpy(to_float64(cols.raw(f)), np.float64, np.nan)
        infinite = np.isinf(measures[:, j])
        if infinite.any():  # inf - inf is NaN: prefix sums and incremental updates need finite values
            measures[infinite, j] = np.nan
            info.caveats.append(f"measure {f}: {int(infinite.sum()):,} infinite values treated as missing")
    info.seconds["build codes"] = time.perf_counter() - t0

    progress("building backward indexes", None)
    t0 = time.perf_counter()
    indexes = {f.name: build_index(f, cols, n) for f in plan.filters}
    fkeys = np.empty((n, len(plan.filters)), np.int32)
    for j, f in enumerate(plan.filters):
        if f.kind in PARTITION_KINDS:
            fkeys[:, j] = cols.dictionary(f.field)[1]
        else:
            fkeys[:, j] = -1
            fkeys[indexes[f.name].order, j] = np.arange(len(indexes[f.name].order), dtype=np.int32)
    rects = [f for f in plan.filters if f.y_field]
    ycols = {f.name: i for i, f in enumerate(rects)}
    fy = np.empty((n, len(rects)), np.float64)
    for f in rects:
        yv, yvalid, _ = cols.values(f.y_field)
        fy[:, ycols[f.name]] = np.where(yvalid, yv.astype(np.float64), np.nan)
    for name in plan.bar_index_views:
        vi = next(i for i, v in enumerate(views) if v.name == name)
        keys = codes[:, vi].astype(np.int32)
        keys[keys == views[vi].nbars] = -1
        order, offsets = K.partition_by_key(keys, views[vi].nbars)
        indexes[f"bars:{name}"] = Index(f"bars:{name}", "bars", name, order, offsets,
                                        offsets=offsets, keys=list(range(views[vi].nbars)))
    info.seconds["build indexes"] = time.perf_counter() - t0

    progress("building cubes", None)
    t0 = time.perf_counter()
    cubes = {}
    for f in plan.filters:
        if not f.cube_targets:
            continue
        ix = indexes[f.name]
        targets = [next(i for i, v in enumerate(views) if v.name == t) for t in f.cube_targets]
        counts, sums, oks, col_off = K.block_cubes(
            ix.order, ix.block_starts, codes, np.array(targets, np.int64),
            np.array([views[i].nbars for i in targets], np.int64), measures,
            np.array([views[i].mcol for i in targets], np.int64))
        for j, i in enumerate(targets):
            part = slice(col_off[j], col_off[j + 1])
            has_measure = views[i].mcol >= 0  # cubes of count-only views keep no sums
            cubes[(f.name, views[i].name)] = Cube(
                np.ascontiguousarray(counts[:, part]),
                np.ascontiguousarray(sums[:, part]) if has_measure else np.zeros((0, 0)),
                np.ascontiguousarray(oks[:, part]) if has_measure else np.zeros((0, 0), np.int64))
    info.seconds["build cubes"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    nslots = views[-1].bar_off + views[-1].nbars + 1
    counts, sums, oks = K.rescan(
        np.zeros(len(views), np.uint32), np.arange(len(views), dtype=np.int64), K.no_filters(n),
        codes, np.array([v.bar_off for v in views], np.int64), measures,
        np.array([v.mcol for v in views], np.int64), nslots, 2)
    snapshot = detail_snapshot(cols, plan.detail_columns) if plan.detail_columns else None
    info.seconds["build base"] = time.perf_counter() - t0
    return LineageStore(dash, n, views, codes, measures, fkeys, fy, ycols, indexes, cubes,
                        Aggregates(counts, sums, oks), snapshot, info)


def detail_snapshot(cols: Columns, columns: tuple[str, ...]) -> pa.Table:
    """Detail columns in rid order as one contiguous chunk: `take` on the hundreds of
    small batches Spark returns costs milliseconds per page, on one chunk microseconds.
    Strings become large strings so a column may exceed 2 GiB."""
    out = {}
    for c in columns:
        col = cols.raw(c)
        if pa.types.is_string(col.type):
            col = pc.cast(col, pa.large_string())
        out[c] = col
    return pa.table(out).combine_chunks()


def forward_codes(dash: m.Dashboard, mfields: tuple[str, ...], cols: Columns,
                  n: int) -> tuple[list[ViewLayout], np.ndarray]:
    """Each view's layout and bar per row: codes (N, V) uint16, nbars(v) where dropped;
    `mfields` are the measure columns (a view's mcol indexes them)."""
    layouts, codes, off = [], np.empty((n, len(dash.views)), CODE_DTYPE), 0
    for i, v in enumerate(dash.views):
        if isinstance(v, (m.HistogramView, m.HeatmapView)):
            labels = _hist_labels(v)
            code = _to_numpy(cols.table[f"code__{v.name}"], np.int32, -1)
        elif isinstance(v, m.TemporalView):
            labels, code = calendar_bins(v.unit, *cols.micros(v.field))
        else:
            values, dcode = cols.dictionary(v.field)
            top = min(v.top, len(values))
            labels = values[:top] + ([OTHER] if v.other else [])
            code = np.where(dcode < top, dcode, top if v.other else -1)
        if len(labels) > MAX_BARS:
            msg = f"view {v.name} has {len(labels)} bars; at most {MAX_BARS} are supported"
            raise ValueError(msg)
        codes[:, i] = np.where(code < 0, len(labels), code)
        mcol = mfields.index(v.aggregate.field) if v.aggregate.field else -1
        layouts.append(ViewLayout(v.name, v.type, v.aggregate.op, len(labels), off, mcol, labels))
        off += len(labels) + 1
    return layouts, codes


def calendar_bins(unit: str, us: np.ndarray, valid: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Bars of UTC calendar `unit` from the first to the last valid instant: (ISO labels of
    bar starts, bar per row with -1 for invalid rows). Weeks start on Monday, as SQL's
    date_trunc('week')."""
    if not valid.any():
        return [], np.full(len(us), -1, np.int32)
    if unit in UNIT_US:
        key = np.floor_divide(us, UNIT_US[unit])
        first = int(key[valid].min())
        starts = np.arange(first, int(key[valid].max()) + 1) * UNIT_US[unit]
    elif unit == "week":
        # 1970-01-01 was a Thursday: week w starts on Monday, day 7w - 3
        key = np.floor_divide(np.floor_divide(us, DAY_US) + 3, 7)
        first = int(key[valid].min())
        starts = (np.arange(first, int(key[valid].max()) + 1) * 7 - 3) * DAY_US
    else:
        dt = us.astype("datetime64[us]").astype("datetime64[M]" if unit == "month" else "datetime64[Y]")
        key = dt.astype(np.int64)
        first = int(key[valid].min())
        span = np.arange(first, int(key[valid].max()) + 1)
        starts = span.astype("datetime64[M]" if unit == "month" else "datetime64[Y]") \
            .astype("datetime64[us]").astype(np.int64)
    code = np.where(valid, key - first, -1).astype(np.int32)
    labels = [str(np.datetime64(int(s), "us").astype("datetime64[s]")) + "+00:00" for s in starts]
    return labels, code


def _hist_labels(v) -> list:
    if isinstance(v, m.HistogramView):
        return _bin_edges(v.bin)
    return [[x, y] for x in _bin_edges(v.x.bin) for y in _bin_edges(v.y.bin)]


def _bin_edges(b: m.Bin) -> list[list[float]]:
    lo, step = b.extent[0], b.step
    return [[lo + i * step, min(lo + (i + 1) * step, b.extent[1])] for i in range(b.count)]


def build_index(f, cols: Columns, n: int) -> Index:
    if f.kind in PARTITION_KINDS:
        values, keys = cols.dictionary(f.field)
        order, offsets = K.partition_by_key(keys, len(values))
        return Index(f.name, f.kind, f.field, order, offsets, offsets=offsets, keys=values)
    values, valid, temporal = cols.values(f.field)
    order, sorted_values = sorted_index(values, valid)
    b = block_size(n)
    block_starts = np.append(np.arange(0, len(order), b, dtype=np.int64), len(order))
    return Index(f.name, f.kind, f.field, order, block_starts, values=sorted_values,
                 value_type="temporal" if temporal else "number")


def sorted_index(values: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """rids of valid values in ascending value order (ties by rid), and the values in that
    order. Integers with a small range use a counting sort (O(N))."""
    rids = np.flatnonzero(valid).astype(np.int32)
    vals = values[rids]
    if len(vals) == 0:
        return rids, vals
    lo, hi = vals.min(), vals.max()
    keys = np.full(len(values), -1, np.int32)
    if values.dtype.kind == "i" and int(hi) - int(lo) < 1 << 24:
        keys[rids] = (vals - lo).astype(np.int32)
        order, _ = K.partition_by_key(keys, int(hi) - int(lo) + 1)
        return order, values[order]
    codes, uniques = pd.factorize(vals, sort=True)  # hashing: O(N), then sorts the uniques
    if len(uniques) <= len(vals) // 8:  # few distinct values: counting sort by their rank
        keys[rids] = codes
        order, _ = K.partition_by_key(keys, len(uniques))
    else:
        order = rids[np.argsort(vals, kind="stable")]
    return order, values[order]


def _valid(col: pa.ChunkedArray) -> np.ndarray:
    if not col.null_count:
        return np.ones(len(col), np.bool_)
    return _to_numpy(pc.is_valid(col), np.bool_, False)


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


def _to_numpy(col, dtype, fill) -> np.ndarray:
    """The column as a numpy array of `dtype`, nulls replaced by `fill`."""
    target = pa.from_numpy_dtype(dtype)
    if col.type != target:
        col = pc.cast(col, target)
    if col.null_count:
        col = pc.fill_null(col, pa.scalar(fill, target))
    arr = col.to_numpy() if isinstance(col, pa.ChunkedArray) else col.to_numpy(zero_copy_only=False)
    return np.asarray(arr, dtype=dtype)
