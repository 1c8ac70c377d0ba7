"""The source's profile: what the layout needs to know before any row is keyed — each
brushed field's distinct values (or, past `max_keys`, a weighted sample for bucket
edges), each categorical and dropdown field's value counts, each temporal view's first
and last instant, each `maxbins` field's finite min and max.

`profile_partition` runs on an executor over one Spark partition (Arrow batches) and
returns a small picklable dict; `merge_profiles` combines them on the driver. Both are
pure; Spark only carries them (capture/spark.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from brushfire.capture import columns as C

SAMPLE_POINTS = 8192  # per partition, for the bucket edges of fields with many values


@dataclass(frozen=True)
class ProfileSpec:
    """Which fields to profile, and how."""

    values: tuple[str, ...]  # numbers and times: distinct values (dense) or a sample (fine)
    counts: tuple[str, ...]  # categorical and dropdown fields: value counts
    ranges: tuple[str, ...]  # temporal view fields: first and last instant
    max_keys: int
    measures: tuple[str, ...] = ()  # order statistics' measures: as `values`, strings as `counts`
    extents: tuple[str, ...] = ()  # fields of `maxbins` bins: finite min and max


@dataclass
class ValueStats:
    type: str  # int | float | temporal
    dense: bool  # `values` are every distinct value, `counts` exact
    values: np.ndarray  # sorted
    counts: np.ndarray  # int64 rows per value (dense), or per sample point (rows up to it)
    n_valid: int

    @property
    def first(self):
        return self.values[0].item() if len(self.values) else None

    @property
    def last(self):
        return self.values[-1].item() if len(self.values) else None


@dataclass
class Profile:
    n_rows: int
    values: dict[str, ValueStats]
    counts: dict[str, tuple[list, np.ndarray]]  # field -> (distinct values, rows per value)
    ranges: dict[str, tuple[int | None, int | None]]  # field -> (first, last) UTC microseconds
    # field -> (min, max) of its finite values, (None, None) without any (bins.nice_bin)
    extents: dict[str, tuple] = field(default_factory=dict)
    times: set[str] = field(default_factory=set)  # `counts` fields of times: UTC microseconds


def profile_partition(batches: Iterable[pa.RecordBatch], spec: ProfileSpec) -> dict:
    """One partition's profile (executor side)."""
    batches = list(batches)
    table = pa.Table.from_batches(batches) if batches else None
    out: dict = {"n_rows": table.num_rows if table is not None else 0,
                 "values": {}, "counts": {}, "ranges": {}, "extents": {}}
    if table is None or table.num_rows == 0:
        return out
    for f in spec.values:
        out["values"][f] = _value_stats(table[f], spec.max_keys)
    for f in spec.measures:
        if C.kind_of(table[f].type) == "string":
            if f in spec.counts:
                continue  # counted below
            col = table[f]
            vc = pc.value_counts(col.drop_null() if col.null_count else col)
            out["counts"][f] = (vc.field("values"), np.asarray(vc.field("counts"), np.int64))
        else:
            out["values"][f] = _value_stats(table[f], spec.max_keys)
    for f in spec.counts:
        col = table[f]
        vc = pc.value_counts(col.drop_null() if col.null_count else col)
        out["counts"][f] = (vc.field("values"), np.asarray(vc.field("counts"), np.int64))
    for f in spec.ranges:
        values, valid = C.numbers(table[f])
        v = values[valid]
        out["ranges"][f] = (int(v.min()), int(v.max())) if len(v) else (None, None)
    for f in spec.extents:
        values, valid = C.numbers(table[f])
        v = values[valid].astype(np.float64)  # as doubles, as bins compare (and Spark's profile)
        v = v[np.isfinite(v)]
        out["extents"][f] = (float(v.min()), float(v.max())) if len(v) else (None, None)
    return out


def _value_stats(col, max_keys: int) -> ValueStats:
    kind = C.kind_of(col.type)
    values, valid = C.numbers(col)
    v = values[valid]
    if kind == "float":
        v = v + 0.0  # -0.0 and 0.0 are one value
    u, c = np.unique(v, return_counts=True)
    if len(u) <= max_keys:
        return ValueStats(kind, True, u, c.astype(np.int64), int(len(v)))
    cum = np.cumsum(c)
    picks = np.unique(np.searchsorted(cum, np.linspace(0, cum[-1], SAMPLE_POINTS + 1)[1:], "left"))
    picks = np.minimum(picks, len(u) - 1)
    weights = np.diff(np.concatenate([[0], cum[picks]]))
    return ValueStats(kind, False, u[picks], weights.astype(np.int64), int(len(v)))


def value_stats(table: pa.Table, max_keys: int, sample: bool = False,
                kind: str | None = None) -> ValueStats:
    """ValueStats of a column's (value, count) table — its exact value counts (dense when
    at most `max_keys` values), or, with `sample`, weighted sample points (numbers, times
    as UTC microseconds; `kind` is the column's)."""
    values, valid = C.numbers(table.column(0))
    kind = kind or C.kind_of(table.column(0).type)
    counts = np.asarray(table.column(1), np.int64)
    v, c = values[valid], counts[valid]
    if kind == "float":
        v = v + 0.0
    u, inverse = np.unique(v, return_inverse=True)
    c = np.bincount(inverse, weights=c, minlength=len(u)).astype(np.int64)
    dense = not sample and len(u) <= max_keys
    return ValueStats(kind, dense, u, c, int(c.sum()))


def merge_profiles(parts: list[dict], spec: ProfileSpec) -> Profile:
    """Combine the partitions' profiles (driver side)."""
    n = sum(p["n_rows"] for p in parts)
    values = {f: _merge_values([p["values"][f] for p in parts if f in p["values"]], spec.max_keys)
              for f in spec.values}
    counts, times = {}, set()
    for f in spec.counts:
        pieces = [p["counts"][f] for p in parts if f in p["counts"]]
        counts[f] = _merge_counts(pieces)
        if pieces and C.kind_of(pieces[0][0].type) == "temporal":
            times.add(f)
    for f in spec.measures:  # numbers and times as values, strings as counts
        if any(f in p["values"] for p in parts):
            values[f] = _merge_values([p["values"][f] for p in parts if f in p["values"]],
                                      spec.max_keys)
        elif any(f in p["counts"] for p in parts):
            if f not in counts:
                counts[f] = _merge_counts([p["counts"][f] for p in parts if f in p["counts"]])
        else:  # no rows at all
            values[f] = _merge_values([], spec.max_keys)
    ranges = {}
    for f in spec.ranges:
        lo = [p["ranges"][f][0] for p in parts if f in p["ranges"] and p["ranges"][f][0] is not None]
        hi = [p["ranges"][f][1] for p in parts if f in p["ranges"] and p["ranges"][f][1] is not None]
        ranges[f] = (min(lo) if lo else None, max(hi) if hi else None)
    extents = {}
    for f in spec.extents:
        got = [p["extents"][f] for p in parts if p["extents"].get(f, (None, None))[0] is not None]
        extents[f] = (min(e[0] for e in got), max(e[1] for e in got)) if got else (None, None)
    return Profile(n, values, counts, ranges, extents, times)


def _merge_values(stats: list[ValueStats], max_keys: int) -> ValueStats:
    if not stats:
        return ValueStats("float", True, np.zeros(0), np.zeros(0, np.int64), 0)
    kind = stats[0].type
    values = np.concatenate([s.values for s in stats])
    counts = np.concatenate([s.counts for s in stats])
    u, inverse = np.unique(values, return_inverse=True)
    c = np.bincount(inverse, weights=counts, minlength=len(u)).astype(np.int64)
    dense = all(s.dense for s in stats) and len(u) <= max_keys
    return ValueStats(kind, dense, u, c, sum(s.n_valid for s in stats))


def _merge_counts(pieces: list[tuple]) -> tuple[list, np.ndarray]:
    if not pieces:
        return [], np.zeros(0, np.int64)
    values = pa.concat_arrays([_plain(v) for v, _ in pieces])
    counts = np.concatenate([c for _, c in pieces])
    table = pa.table({"v": values, "n": counts}).group_by("v").aggregate([("n", "sum")])
    return count_values(table["v"]), np.asarray(table["n_sum"], np.int64)


def count_values(col: pa.Array | pa.ChunkedArray) -> list:
    """The distinct values of value counts as Python values; times (timestamps, dates) as
    UTC microseconds, as every other step keys them (a datetime is no manifest's value)."""
    if C.kind_of(col.type) == "temporal":
        return C.numbers(col)[0].tolist()
    return col.to_pylist()


def _plain(values: pa.Array) -> pa.Array:
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if pa.types.is_large_string(values.type):
        values = pc.cast(values, pa.string())
    return values


def fine_edges(stats: ValueStats, max_keys: int) -> list[float]:
    """Bucket starts for a field with many distinct values: about equally many rows per
    bucket (from the merged sample), edges[0] = -inf."""
    cum = np.cumsum(stats.counts)
    if not len(cum):
        return [-np.inf]
    k = max(1, min(max_keys, len(stats.values)))
    targets = cum[-1] * np.arange(1, k) / k
    picks = np.searchsorted(cum, targets, "right")
    picks = picks[picks < len(stats.values)]
    edges = np.unique(stats.values[picks].astype(np.float64))
    return [-np.inf] + [float(e) for e in edges if e > -np.inf]
