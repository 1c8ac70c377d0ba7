"""Turn the capture job's Arrow output into lineage arrays: forward codes, backward
indexes, cubes and base aggregates. Pure functions of the table and the plan."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from brushfire.engine import kernels as K
from brushfire.lineage.arrays import (
    CODE_DTYPE,
    MAX_BARS,
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

SENTINEL_SQL = 65535
OTHER = "(other)"


def block_size(n: int) -> int:
    """Rows per cube block: small enough that edge corrections stay cheap, large enough
    that the cube has at most ~16K blocks (about 2048 rows per block at 30M rows)."""
    b = 256
    while n // b > 16_384:
        b *= 2
    return b


def build_store(table: pa.Table, plan: CapturePlan, prep, info: CaptureInfo,
                progress=lambda *_: None) -> LineageStore:
    dash = plan.dashboard
    n = table.num_rows
    t0 = time.perf_counter()
    views = view_layouts(dash, prep)
    codes = np.empty((n, len(views)), CODE_DTYPE)
    for i, v in enumerate(views):
        col = _to_numpy(table[f"code__{v.name}"], np.int32, fill=SENTINEL_SQL)
        codes[:, i] = np.where(col == SENTINEL_SQL, v.nbars, col)
    mfields = list(dict.fromkeys(v.aggregate.field for v in dash.views if v.aggregate.field))
    measures = np.empty((n, len(mfields)), np.float64)
    for j, f in enumerate(mfields):
        measures[:, j] = _to_numpy(table[f"measure__{f}"], np.float64, fill=np.nan)
    info.seconds["build codes"] = time.perf_counter() - t0

    progress("building backward indexes", None)
    t0 = time.perf_counter()
    indexes = {f.name: build_index(f, table, prep, n) for f in plan.filters}
    for name in plan.bar_index_views:
        vi = next(i for i, v in enumerate(views) if v.name == name)
        keys = codes[:, vi].astype(np.int32)
        keys[keys == views[vi].nbars] = -1
        order, offsets = K.partition_by_key(keys, views[vi].nbars)
        indexes[f"bars:{name}"] = Index(f"bars:{name}", "bars", name, order, offsets.copy(),
                                        offsets=offsets, keys=list(range(views[vi].nbars)))
    info.seconds["build indexes"] = time.perf_counter() - t0

    progress("building cubes", None)
    t0 = time.perf_counter()
    cubes = {}
    for f in plan.filters:
        ix = indexes[f.name]
        for tname in f.cube_targets:
            v = next(x for x in views if x.name == tname)
            vi = views.index(v)
            cubes[(f.name, tname)] = Cube(*K.block_cube(ix.order, ix.block_starts, codes, vi,
                                                        v.nbars, measures, v.mcol))
    info.seconds["build cubes"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    nslots = views[-1].bar_off + views[-1].nbars + 1
    all_views = np.arange(len(views), dtype=np.int64)
    counts, sums, oks = K.rescan(np.zeros(n, np.uint32), np.zeros(len(views), np.uint32), all_views,
                                 codes, _offsets(views), measures, _mcols(views), nslots, 2)
    base = Aggregates(counts, sums, oks)
    snapshot = None
    if plan.detail_columns:
        snapshot = pa.table({c: table[f"detail__{c}"] for c in plan.detail_columns})
    info.seconds["build base"] = time.perf_counter() - t0
    return LineageStore(dash, n, views, codes, measures, indexes, cubes, base, snapshot, info)


def view_layouts(dash: m.Dashboard, prep) -> list[ViewLayout]:
    out, off = [], 0
    mfields = list(dict.fromkeys(v.aggregate.field for v in dash.views if v.aggregate.field))
    for v in dash.views:
        labels = bar_labels(v, prep)
        if len(labels) > MAX_BARS:
            msg = f"view {v.name} has {len(labels)} bars; at most {MAX_BARS} are supported"
            raise ValueError(msg)
        mcol = mfields.index(v.aggregate.field) if v.aggregate.field else -1
        out.append(ViewLayout(v.name, v.type, v.aggregate.op, len(labels), off, mcol, labels))
        off += len(labels) + 1
    return out


def bar_labels(v, prep) -> list:
    """JSON-able bar descriptions: [lo, hi) pairs, category names, ISO instants, cells."""
    if isinstance(v, m.HistogramView):
        return _bin_edges(v.bin)
    if isinstance(v, m.HeatmapView):
        return [[x, y] for x in _bin_edges(v.x.bin) for y in _bin_edges(v.y.bin)]
    if isinstance(v, m.TemporalView):
        return [datetime.fromtimestamp(t / 1e6, UTC).isoformat() for t in prep.time_starts[v.name]]
    values = prep.dictionaries[v.field]
    top = [_jsonable(x) for x in values[: v.top]]
    return top + [OTHER] if v.other else top


def _bin_edges(b: m.Bin) -> list[list[float]]:
    lo, step = b.extent[0], b.step
    return [[lo + i * step, min(lo + (i + 1) * step, b.extent[1])] for i in range(b.count)]


def build_index(f, table: pa.Table, prep, n: int) -> Index:
    if f.kind in PARTITION_KINDS:
        keys = _to_numpy(table[f"dict__{f.field}"], np.int32, fill=-1)
        values = prep.dictionaries[f.field]
        order, offsets = K.partition_by_key(keys, len(values))
        return Index(f.name, f.kind, f.field, order, offsets.copy(), offsets=offsets,
                     keys=[_jsonable(x) for x in values])
    col = table[f"value__{f.field}"]
    order, sorted_values = sorted_index(col)
    b = block_size(n)
    block_starts = np.append(np.arange(0, len(order), b, dtype=np.int64), len(order))
    if len(order) == 0:
        block_starts = np.zeros(1, np.int64)
    yvalues = None
    if f.y_field:
        yvalues = _to_numpy(table[f"value__{f.y_field}"], np.float64, fill=np.nan)
    vtype = "temporal" if f.field in prep.temporal_fields else "number"
    return Index(f.name, f.kind, f.field, order, block_starts, values=sorted_values,
                 yvalues=yvalues, value_type=vtype)


def sorted_index(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """rids of non-null, non-NaN values in ascending value order (ties by rid), and the
    values in that order. Integers with a small range use a counting sort (O(N))."""
    is_int = pa.types.is_integer(col.type)
    valid = pc.is_valid(col) if is_int else pc.and_(pc.is_valid(col), pc.invert(pc.is_nan(col)))
    valid = valid.to_numpy(zero_copy_only=False)
    values = _to_numpy(col, np.int64 if is_int else np.float64, fill=0)
    rids = np.flatnonzero(valid).astype(np.int32)
    vals = values[rids]
    if len(vals) == 0:
        return rids, vals
    if is_int and int(vals.max()) - int(vals.min()) < 1 << 24:
        lo = int(vals.min())
        keys = np.full(len(values), -1, np.int32)
        keys[rids] = (vals - lo).astype(np.int32)
        order, _ = K.partition_by_key(keys, int(vals.max()) - lo + 1)
    else:
        order = rids[np.argsort(vals, kind="stable")]
    return order, values[order]


def _to_numpy(col: pa.ChunkedArray, dtype, fill) -> np.ndarray:
    """The column as a numpy array of `dtype`, nulls replaced by `fill`."""
    target = pa.from_numpy_dtype(dtype)
    if col.type != target:
        col = pc.cast(col, target)
    if col.null_count:
        col = pc.fill_null(col, pa.scalar(fill, target))
    return col.to_numpy()


def _offsets(views: list[ViewLayout]) -> np.ndarray:
    return np.array([v.bar_off for v in views], np.int64)


def _mcols(views: list[ViewLayout]) -> np.ndarray:
    return np.array([v.mcol for v in views], np.int64)


def _jsonable(x):
    if isinstance(x, datetime):
        return x.isoformat()
    if isinstance(x, (np.integer, np.floating)):
        return x.item()
    return x
