"""What capture knows about the data before it keys a row: the source's statistics, merged
on the driver from the scan's per-shard summaries and dictionaries (capture/scan.py) —
never from a scan of their own.

- each brushed field's distinct values and their rows (exact, when at most `max_keys`),
  or a weighted sample of them (bucket edges of equal depth, `fine_edges`);
- each categorical and dropdown field's exact value counts (times as UTC microseconds);
- each temporal view's first and last instant, each `maxbins` field's finite min and max.

Pure: the scan's summaries and the dictionaries `read` gives are all it sees.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from brushfire.capture import columns as C


@dataclass(frozen=True)
class StatsSpec:
    """Which fields' statistics the layout needs, and how."""

    values: tuple[str, ...]  # numbers and times: distinct values (dense) or a sample (fine)
    counts: tuple[str, ...]  # categorical and dropdown fields: value counts
    ranges: tuple[str, ...]  # temporal view fields: first and last instant
    max_keys: int
    measures: tuple[str, ...] = ()  # order statistics' measures: as `values`, strings as `counts`
    extents: tuple[str, ...] = ()  # fields of `maxbins` bins: finite min and max

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.values + self.counts + self.ranges + self.measures
                                   + self.extents))


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
class SourceStats:
    n_rows: int
    values: dict[str, ValueStats]
    counts: dict[str, tuple[list, np.ndarray]]  # field -> (distinct values, rows per value)
    ranges: dict[str, tuple[int | None, int | None]]  # field -> (first, last) UTC microseconds
    # field -> (min, max) of its finite values, (None, None) without any (bins.nice_bin)
    extents: dict[str, tuple] = field(default_factory=dict)
    times: set[str] = field(default_factory=set)  # `counts` fields of times: UTC microseconds
    kinds: dict[str, str] = field(default_factory=dict)  # field -> int | float | temporal | string


# (shard, field, what) -> (values, rows per value): a shard's dictionary ("dict") or its
# weighted sample ("sample") of a field, as the scan wrote them
Reader = Callable[[dict, str, str], tuple]


def merge_stats(spec: StatsSpec, shards: list[dict], read: Reader) -> SourceStats:
    """The source's statistics from the scan's shard summaries (each with its `fields`),
    reading a shard's dictionary (`read`) only where its summary does not say enough."""
    out = SourceStats(sum(s["n_rows"] for s in shards), {}, {}, {}, {}, set())
    for f in spec.fields:
        parts = [s for s in shards if f in s["fields"]]
        kind = next((s["fields"][f]["kind"] for s in parts if s["n_rows"]), None) or \
            (parts[0]["fields"][f]["kind"] if parts else "float")
        out.kinds[f] = kind
        numbers = kind != "string"
        if f in spec.values or (f in spec.measures and numbers):
            out.values[f] = _merge_values(parts, f, kind, spec.max_keys, read)
        if f in spec.counts or (f in spec.measures and not numbers):
            out.counts[f] = _merge_counts(parts, f, read)
            if kind == "temporal":
                out.times.add(f)
        if f in spec.ranges:
            lo = [s["fields"][f]["min"] for s in parts if s["fields"][f].get("min") is not None]
            hi = [s["fields"][f]["max"] for s in parts if s["fields"][f].get("max") is not None]
            out.ranges[f] = (int(min(lo)), int(max(hi))) if lo else (None, None)
        if f in spec.extents:
            got = [s["fields"][f]["finite"] for s in parts
                   if s["fields"][f].get("finite", (None, None))[0] is not None]
            out.extents[f] = (min(g[0] for g in got), max(g[1] for g in got)) if got else (None, None)
    return out


def _merge_values(parts: list[dict], f: str, kind: str, max_keys: int, read: Reader) -> ValueStats:
    """Every distinct value with its rows while there are at most `max_keys`; past that (a
    shard sent a sample, or their union grew too large) weighted sample points."""
    dtype = np.float64 if kind == "float" else np.int64
    values, counts, dense = np.zeros(0, dtype), np.zeros(0, np.int64), True
    n_valid = 0
    for s in parts:
        info = s["fields"][f]
        n_valid += info.get("valid", 0)
        if not info.get("valid"):
            continue
        if info.get("sampled"):
            v, c = read(s, f, "sample")
            dense = False
        else:
            v, c = read(s, f, "dict")
            keep = len(v) - info["has_nan"]  # the NaN entry is no value here
            v, c = np.asarray(v[:keep], dtype), np.asarray(c[:keep], np.int64)
        values, counts = _union(values, counts, v.astype(dtype), c)
        if len(values) > max_keys:
            dense = False
        if not dense and len(values) > 4 * SAMPLE_KEEP:  # keep the driver's memory bounded
            values, counts = _resample(values, counts, SAMPLE_KEEP)
    return ValueStats(kind, dense, values, counts, n_valid)


SAMPLE_KEEP = 65_536  # sample points the driver keeps for a field with many values


def _union(va: np.ndarray, ca: np.ndarray, vb: np.ndarray, cb: np.ndarray) -> tuple:
    v = np.concatenate([va, vb])
    u, inverse = np.unique(v, return_inverse=True)
    c = np.bincount(inverse, weights=np.concatenate([ca, cb]), minlength=len(u))
    return u, c.astype(np.int64)


def _resample(values: np.ndarray, counts: np.ndarray, points: int) -> tuple:
    cum = np.cumsum(counts)
    picks = np.unique(np.searchsorted(cum, np.linspace(0, cum[-1], points + 1)[1:], "left"))
    picks = np.minimum(picks, len(values) - 1)
    return values[picks], np.diff(np.concatenate([[0], cum[picks]])).astype(np.int64)


def _merge_counts(parts: list[dict], f: str, read: Reader) -> tuple[list, np.ndarray]:
    """Exact rows per value over all shards (a float's NaN is one value; null none)."""
    pieces = [read(s, f, "dict") for s in parts if s["fields"][f]["rows"]]
    if not pieces:
        return [], np.zeros(0, np.int64)
    if isinstance(pieces[0][0], np.ndarray):  # numbers and times
        v, c = _union(np.zeros(0, pieces[0][0].dtype), np.zeros(0, np.int64),
                      np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces]))
        return v.tolist(), c
    values = pa.concat_arrays([_plain(v) for v, _ in pieces])
    counts = np.concatenate([c for _, c in pieces])
    table = pa.table({"v": values, "n": counts}).group_by("v").aggregate([("n", "sum")])
    return table["v"].to_pylist(), np.asarray(table["n_sum"], np.int64)


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


def count_values(col: pa.Array | pa.ChunkedArray) -> list:
    """The distinct values of value counts as Python values; times (timestamps, dates) as
    UTC microseconds, as every other step keys them (a datetime is no manifest's value)."""
    if C.kind_of(col.type) == "temporal":
        return C.numbers(col)[0].tolist()
    return col.to_pylist()
