"""Cubes-only capture: when per-row lineage would not fit the server's memory budget,
Spark computes the group-by push-down cubes itself and only those reach the driver.

Jobs: one group-by per view (its base bars; a categorical view's top N and a temporal
view's calendar bars come from it), one per filter (rows per key), and one per (filter,
target view) pair, grouped by the filter's raw key and the target's bar key. Nothing per
row is collected, so the driver's memory grows with distinct keys × bars, not with rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from brushfire.capture import bins
from brushfire.capture import spark as sp
from brushfire.lineage.arrays import OTHER, Aggregates, CaptureInfo
from brushfire.lineage.cube_store import CubeStore, FilterKeys, PairCube
from brushfire.lineage.layout import ViewLayout
from brushfire.plan import CapturePlan
from brushfire.spec import models as m

Progress = Callable[[str, float | None], None]
BarMapper = Callable[[pa.Array], np.ndarray]  # bar keys -> bar numbers, -1 where dropped


def capture_cubes(df, plan: CapturePlan, info: CaptureInfo, reason: str,
                  progress: Progress) -> CubeStore:
    dash = plan.dashboard
    filters = [f for f in plan.filters if f.kind != "rect"]  # 2-D keys need per-row lineage
    from pyspark import StorageLevel

    # every job below reads the same columns: keep them in executor memory (spilling to
    # disk) instead of reading the source once per job
    df = df.select(*sorted({c for v in dash.views for c in m.fields_of(v)} |
                           {f.field for f in filters})).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        return _capture(df, plan, filters, info, reason, progress)
    finally:
        df.unpersist()


def _capture(df, plan: CapturePlan, filters: list, info: CaptureInfo, reason: str,
             progress: Progress) -> CubeStore:
    dash = plan.dashboard
    jobs = len(dash.views) + sum(1 + len(f.filters_views) for f in filters)
    done = 0

    def step(what: str) -> None:
        nonlocal done
        done += 1
        progress(f"cubes on Spark: {what}", done / jobs)

    t0 = time.perf_counter()
    mfields = list(plan.measure_fields)
    layouts, mappers, grouped, off = [], {}, [], 0
    for v in dash.views:
        g = group_by(df, [bar_key(v)], v.aggregate.field)
        step(f"bars of {v.name}")
        labels, mappers[v.name] = bar_mapping(v, g["k0"], g["n"])
        mcol = mfields.index(v.aggregate.field) if v.aggregate.field else -1
        layouts.append(ViewLayout(v.name, v.type, v.aggregate.op, len(labels), off, labels, mcol=mcol))
        grouped.append(g)
        off += len(labels) + 1
    base = Aggregates.zeros(off)
    for layout, g in zip(layouts, grouped, strict=True):
        bars = mappers[layout.name](g["k0"])
        ok = bars >= 0
        for target, source in ((base.counts, g["n"]), (base.sums, g["s"]), (base.oks, g["ok"])):
            np.add.at(target, layout.bar_off + bars[ok], source[ok])
    info.n_rows = int(grouped[0]["n"].sum()) if grouped else 0
    info.seconds["cubes: base"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    keys, cubes = {}, {}
    views = {v.name: v for v in dash.views}
    for f in filters:
        key, value_type = filter_key(df, f)
        g = group_by(df.where(key.isNotNull()), [key], None)
        step(f"keys of {f.name}")
        domain = key_domain(g["k0"], value_type)
        pos = key_positions(g["k0"], domain)
        totals = np.zeros(len(domain), np.int64)
        np.add.at(totals, pos, g["n"])
        keys[f.name] = FilterKeys(f.kind, value_type, domain, totals)
        for t in f.filters_views:
            v = views[t]
            g = group_by(df.where(key.isNotNull()), [key, bar_key(v)], v.aggregate.field)
            step(f"cube {f.name} -> {t}")
            pos, bars = key_positions(g["k0"], domain), mappers[t](g["k1"])
            keep = np.flatnonzero(bars >= 0)
            keep = keep[np.argsort(pos[keep], kind="stable")]
            cubes[(f.name, t)] = PairCube(pos[keep], bars[keep], g["n"][keep], g["s"][keep], g["ok"][keep])
    info.seconds["cubes: pairs"] = time.perf_counter() - t0
    return CubeStore(dash, info.n_rows, layouts, base, keys, cubes, info, reason)


def bar_key(v):
    """Spark column that decides a row's bar: the bin (histogram, heatmap), the calendar
    bucket's start in UTC microseconds (temporal), the value (categorical)."""
    from pyspark.sql import functions as F

    if isinstance(v, (m.HistogramView, m.HeatmapView)):
        return sp.bin_code(v)
    if isinstance(v, m.TemporalView):
        return F.unix_micros(F.date_trunc(v.unit, F.col(v.field).cast("timestamp")))
    return F.col(v.field)


def bar_mapping(v, keys: pa.Array, counts: np.ndarray) -> tuple[list, BarMapper]:
    """A view's bar labels from its base group-by (keys, row counts), and the mapping
    from bar keys to bar numbers: the bars `capture.build.forward_codes` gives per row."""
    if isinstance(v, (m.HistogramView, m.HeatmapView)):
        labels = bins.hist_labels(v.bin) if isinstance(v, m.HistogramView) else bins.heat_labels(v)

        def binned(k: pa.Array) -> np.ndarray:
            a = _numpy(k, np.int64, -1)
            return np.where((a >= 0) & (a < len(labels)), a, -1)
        return labels, binned
    if isinstance(v, m.TemporalView):
        us, valid = _numpy(keys, np.int64, 0), np.asarray(keys.is_valid())
        ok = us[valid]
        labels = bins.calendar_labels(v.unit, int(ok.min()), int(ok.max())) if len(ok) else []
        starts = np.array([_micros(label) for label in labels], np.int64)

        def calendar(k: pa.Array) -> np.ndarray:
            a, ok = _numpy(k, np.int64, 0), np.asarray(k.is_valid())
            if not len(starts):
                return np.full(len(a), -1, np.int64)
            i = np.minimum(np.searchsorted(starts, a), len(starts) - 1)
            return np.where(ok & (starts[i] == a), i, -1)
        return labels, calendar
    # categorical: values by count desc, then value (as capture.build.Columns.dictionary)
    valid = [(int(n), x) for x, n in zip(keys.to_pylist(), counts, strict=True) if x is not None]
    ranked = [x for _, x in sorted(valid, key=lambda p: (-p[0], p[1]))]
    top = ranked[:v.top]
    labels = top + ([OTHER] if v.other else [])
    where = {x: i for i, x in enumerate(top)}
    other = len(top) if v.other else -1

    def categorical(k: pa.Array) -> np.ndarray:
        return np.array([-1 if x is None else where.get(x, other) for x in k.to_pylist()], np.int64)
    return labels, categorical


def filter_key(df, f) -> tuple:
    """The Spark column a filter tests (null where no filter value can match: null, NaN)
    and its value type (number, temporal or string)."""
    from pyspark.sql import functions as F

    kind = sp.schema_kinds(df.select(f.field))[f.field]
    col = F.col(f.field)
    if kind == "temporal":
        return F.unix_micros(col.cast("timestamp")), "temporal"
    if kind == "string" or f.kind in ("points", "param_eq"):
        return col, "string" if kind == "string" else "number"
    x = col.cast("double")
    return F.when(F.isnan(x), F.lit(None)).otherwise(x), "number"


def group_by(df, keys: list, measure: str | None) -> dict:
    """df.groupBy(keys) with count, sum and count of the measure: {k0.. (Arrow), n, s, ok}."""
    from pyspark.sql import functions as F

    aggs = [F.count(F.lit(1)).alias("n")]
    if measure:
        x = F.col(measure).cast("double")
        x = F.when(F.isnan(x), F.lit(None)).otherwise(x)  # NaN counts as missing, as in capture
        aggs += [F.sum(x).alias("s"), F.count(x).alias("ok")]
    with sp.spark_errors("computing cubes on Spark"):
        t = df.groupBy(*[k.alias(f"k{i}") for i, k in enumerate(keys)]).agg(*aggs).toArrow()
    out: dict = {f"k{i}": t[f"k{i}"].combine_chunks() for i in range(len(keys))}
    out["n"] = _numpy(t["n"], np.int64, 0)
    out["s"] = _numpy(t["s"], np.float64, 0.0) if measure else np.zeros(t.num_rows)
    out["ok"] = _numpy(t["ok"], np.int64, 0) if measure else np.zeros(t.num_rows, np.int64)
    return out


def key_domain(keys: pa.Array, value_type: str):
    """The sorted distinct non-null keys: a numpy array (numbers, UTC microseconds) or a
    list (strings)."""
    distinct = pc.unique(keys.drop_null())
    if value_type == "string":
        return sorted(distinct.to_pylist())
    return np.sort(_numpy(distinct, np.int64 if value_type == "temporal" else np.float64, 0))


def key_positions(keys: pa.Array, domain) -> np.ndarray:
    """Position of each (non-null) key in its domain."""
    if isinstance(domain, list):
        where = {x: i for i, x in enumerate(domain)}
        return np.array([where[x] for x in keys.to_pylist()], np.int64)
    return np.searchsorted(domain, _numpy(keys, domain.dtype, 0)).astype(np.int64)


def _numpy(a, dtype, fill) -> np.ndarray:
    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if pa.types.is_timestamp(a.type):
        a = a.cast(pa.int64())
    return np.asarray(pc.fill_null(a, fill).to_numpy(zero_copy_only=False), dtype)


def _micros(label: str) -> int:
    t = datetime.fromisoformat(label)
    return round(t.replace(tzinfo=t.tzinfo or UTC).timestamp() * 1_000_000)
