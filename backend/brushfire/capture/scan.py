"""The capture's one pass over the source, on the executors: each partition's rows become
self-describing shards of encoded columns, and each shard sends the driver a small
summary of what it holds.

A shard holds rows of one input file split, at most `shard_rows` of them. Which split: where
a task reads one split alone (a file source, nothing shuffled), the driver knows it from
the task's partition and the rows carry nothing; else two helper columns, FILE_COLUMN and
START_COLUMN, ride along with each row (spark.py's `partition_splits`). For every field the dashboard reads it writes:
- `<f>.dict.npy` (numbers: int64 / float64 / UTC microseconds, sorted, a float column's
  NaN as one last entry) or `<f>.dict.arrow` (strings and other kinds, in no order): the
  shard's own dictionary of the field's distinct values;
- `<f>.codes.npy` (uint16, or uint32 past 65,535 entries): each row's position in the
  dictionary, `len(dict)` for null;
- `<f>.counts.npy` (int64): rows per dictionary entry;
- `<f>.order.npy` (uint16, fields brushed by value): each block's positions ordered by
  value (NaN and null last, ties by position) — a backward index that stays valid when
  the driver maps the shard's dictionary onto the global one, which keeps value order.
and each detail column as `<c>.snap.arrow` (the rows as they are, for details on demand);
the summary also counts the nulls of `nulls` columns (a join's key: its rows without a match).

The driver merges the summaries and dictionaries into the dashboard's global keys
(capture/stats.py) and the key job turns encoded columns into lineage (capture/keys.py)
without reading the source again. numpy, pandas and pyarrow, and one numba kernel
(capture/kernels.py `block_argsort`: each block's rows by value).
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from brushfire.capture import columns as C
from brushfire.capture import kernels as K
from brushfire.lineage.files import part_name, write_arrow, write_npy

FILE_COLUMN = "__bf_file"  # hash of the row's input file name (Spark's input_file_name())
START_COLUMN = "__bf_start"  # the byte offset of the row's input split in that file
SAMPLE_POINTS = 32768  # weighted sample points a shard sends for a field with many values:
# two shards (3M rows) give a fine dim its 65k buckets, whose narrower ranges keep its raw
# values in fewer bits (lineage/lattice.py; flights6 at 3M: 48 -> 40 bits, 8,192 a shard)


@dataclass(frozen=True)
class ScanSpec:
    """What the scan encodes: `fields` as dictionaries and codes, or, numbers with mostly
    distinct values (and not `exact`), as the values themselves (`ordered` ones with a
    per-block order by value too); `snapshot` columns as they are."""

    fields: tuple[str, ...]
    ordered: tuple[str, ...]
    snapshot: tuple[str, ...]
    block_rows: int
    shard_rows: int
    sample_keys: int  # over this many distinct values, a shard sends a sample, not its dictionary
    exact: tuple[str, ...] = ()  # fields always kept as a dictionary (their value counts matter)
    nulls: tuple[str, ...] = ()  # columns whose nulls a shard counts (joins' keys: rows unmatched)


def scan_partition(batches: Iterable[pa.RecordBatch], spec: ScanSpec, shards_dir: str,
                   run: str, pid: int) -> list[dict]:
    """Encode one partition's rows into shards written to `shards_dir/<run>-<pid>-<seq>`;
    returns each shard's summary (`encode_shard`, plus the shard's `name`, input `file`
    hash and split `start`). A task attempt writes into a private directory and renames
    each finished shard into place, so a retried attempt never leaves half a shard under a
    final name. A partition without rows gives one empty shard of no file (the driver keeps
    one only for a source without rows: `run_capture`)."""
    out = []
    attempt = Path(shards_dir) / f".attempt-{run}-{pid:05d}-{uuid.uuid4().hex[:8]}"
    attempt.mkdir(parents=True)
    try:
        for seq, (file, start, table) in enumerate(_shards(batches, spec.shard_rows)):
            name = f"{run}-{pid:05d}-{seq:04d}"
            cpu = time.process_time()
            summary = encode_shard(table, spec, attempt / name)
            summary["cpu"] = time.process_time() - cpu  # (the task's own, not Spark's)
            final = Path(shards_dir) / name
            if final.exists():
                shutil.rmtree(final)
            os.replace(attempt / name, final)
            out.append({**summary, "name": name, "file": file, "start": start})
    finally:
        shutil.rmtree(attempt, ignore_errors=True)
    return out


def _shards(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[tuple]:
    """(file hash, split start, table) per shard: runs of one input split, cut into tables
    of at most `rows` rows; one empty table of no file when there are no rows at all.
    Batches without the origin columns are one split's rows, (0, 0) here (the driver knows
    which)."""
    pending: list[pa.RecordBatch] = []
    have, current, schema, any_rows = 0, None, None, False
    origin = [FILE_COLUMN, START_COLUMN]

    def flush():
        table = pa.Table.from_batches(pending, schema).combine_chunks()
        return (*current, table.drop_columns([c for c in origin if c in table.column_names]))

    for b in batches:
        schema = b.schema
        if not b.num_rows:
            continue
        any_rows = True
        for a, e, split in _splits(b):
            piece = b.slice(a, e - a)
            if current is not None and split != current and pending:
                yield flush()
                pending, have = [], 0
            current = split
            while piece.num_rows:
                take = min(piece.num_rows, rows - have)
                pending.append(piece.slice(0, take))
                have += take
                piece = piece.slice(take)
                if have == rows:
                    yield flush()
                    pending, have = [], 0
    if pending:
        yield flush()
    elif not any_rows:
        empty = schema.empty_table() if schema is not None else pa.table({})
        yield None, 0, empty.drop_columns([c for c in origin if c in empty.column_names])


def _splits(b: pa.RecordBatch) -> Iterator[tuple[int, int, tuple[int, int]]]:
    """(first row, end, (file hash, split start)) of each run of one split in a batch."""
    if FILE_COLUMN not in b.schema.names:
        yield 0, b.num_rows, (0, 0)
        return
    files = np.asarray(b.column(FILE_COLUMN).to_numpy(zero_copy_only=False), np.int64)
    starts = np.asarray(b.column(START_COLUMN).to_numpy(zero_copy_only=False), np.int64)
    cut = np.flatnonzero((files[1:] != files[:-1]) | (starts[1:] != starts[:-1])) + 1
    for a, e in zip(np.concatenate([[0], cut]), np.concatenate([cut, [b.num_rows]]), strict=True):
        yield int(a), int(e), (int(files[a]), int(starts[a]))


# --- one shard -----------------------------------------------------------------------


def encode_shard(table: pa.Table, spec: ScanSpec, directory: Path) -> dict:
    """Write one shard's encoded fields and snapshot columns into `directory`; returns
    {"n_rows", "files": {file: {size, crc32}}, "fields": {field: summary}, "nulls":
    {column: nulls}}."""
    directory.mkdir(parents=True)
    files: dict[str, dict] = {}
    fields = {}
    for f in spec.fields:
        enc = encode_column(table[f] if table.num_rows else _empty(table, f),
                            f in spec.ordered, spec.block_rows, f in spec.exact, spec.sample_keys)
        stem = part_name(f)
        if enc.values is not None:  # mostly distinct numbers: the values, and which are valid
            files[f"{stem}.values.npy"] = write_npy(directory / f"{stem}.values.npy", enc.values)
            if enc.valid is not None:
                files[f"{stem}.valid.npy"] = write_npy(directory / f"{stem}.valid.npy", enc.valid)
        elif isinstance(enc.dictionary, np.ndarray):
            files[f"{stem}.dict.npy"] = write_npy(directory / f"{stem}.dict.npy", enc.dictionary)
        else:
            files[f"{stem}.dict.arrow"] = write_arrow(directory / f"{stem}.dict.arrow",
                                                      pa.table({"v": enc.dictionary}))
        if enc.values is None:
            files[f"{stem}.codes.npy"] = write_npy(directory / f"{stem}.codes.npy", enc.codes)
            files[f"{stem}.counts.npy"] = write_npy(directory / f"{stem}.counts.npy", enc.counts)
        if enc.order is not None:
            files[f"{stem}.order.npy"] = write_npy(directory / f"{stem}.order.npy", enc.order)
        fields[f] = enc.summary(spec.sample_keys)
        sample = fields[f].pop("sample", None)
        if sample is not None:  # (in files: the manifest keeps only small summaries)
            fields[f]["sampled"] = True
            files[f"{stem}.sample.npy"] = write_npy(directory / f"{stem}.sample.npy", sample[0])
            files[f"{stem}.weights.npy"] = write_npy(directory / f"{stem}.weights.npy", sample[1])
    for c in spec.snapshot:
        if table.num_rows:
            name = f"{part_name(c)}.snap.arrow"
            files[name] = write_arrow(directory / name, table.select([c]))
    nulls = {c: table[c].null_count if table.num_rows else 0 for c in spec.nulls}
    return {"n_rows": table.num_rows, "files": files, "fields": fields, "nulls": nulls}


def _empty(table: pa.Table, f: str) -> pa.Array:
    """A field of no rows, of its type when the shard knows it (a partition without rows
    may have no schema: then a number's, which every reader of a field takes)."""
    return pa.array([], table.schema.field(f).type) if f in table.column_names else \
        pa.array([], pa.float64())


@dataclass
class Encoded:
    """A column of a shard: its dictionary and each row's code, or (`values`) numbers
    that are mostly distinct, as they are."""

    kind: str  # int | float | temporal | string
    dictionary: np.ndarray | pa.Array | None  # None: `values` instead
    codes: np.ndarray | None  # uint16 / uint32; len(dictionary) = null
    counts: np.ndarray | None  # int64 rows per entry
    order: np.ndarray | None  # uint16 positions per block, ordered by value
    has_nan: bool = False  # a float column's NaN is the dictionary's last entry
    values: np.ndarray | None = None  # float64 (NaN: none) / int64; without a dictionary
    valid: np.ndarray | None = None  # of `values` (ints and times with nulls), else None
    sample: tuple | None = None  # (values, weights) of `values`, for the driver

    def summary(self, sample_keys: int) -> dict:
        """What the driver merges: the dictionary's size and range, and a weighted sample
        of its values when it has more than `sample_keys` or there is none (else the
        driver reads the dictionary itself)."""
        if self.values is not None:
            ok = ~np.isnan(self.values) if self.kind == "float" else \
                (self.valid if self.valid is not None else slice(None))
            x = self.values[ok]
            out = {"kind": self.kind, "entries": None, "has_nan": False, "rows": int(len(x)),
                   "valid": int(len(x)), "sample": self.sample}
            return {**out, **_ranges(np.sort(x) if len(x) < 2 else _ends(x), self.kind)}
        out = {"kind": self.kind, "entries": len(self.dictionary), "has_nan": self.has_nan,
               "rows": int(self.counts.sum())}
        if self.kind == "string":
            return out
        finite = self.dictionary[:len(self.dictionary) - self.has_nan]
        counts = self.counts[:len(finite)]
        out["valid"] = int(counts.sum())  # rows with a value that is not NaN
        out.update(_ranges(finite, self.kind))
        if len(finite) > sample_keys:
            out["sample"] = weighted_sample(finite, counts, SAMPLE_POINTS)
        return out


def _ends(x: np.ndarray) -> np.ndarray:
    """The smallest and largest values, and the finite ones among them, sorted."""
    out = [x.min(), x.max()]
    if x.dtype.kind == "f":
        fin = x[np.isfinite(x)]
        if len(fin):
            out += [fin.min(), fin.max()]
    return np.sort(np.asarray(out, x.dtype))


def _ranges(sorted_values: np.ndarray, kind: str) -> dict:
    """min, max and the finite (min, max) as floats, of sorted values."""
    v = sorted_values
    fin = v[np.isfinite(v.astype(np.float64))] if kind == "float" else v
    return {"min": v[0].item() if len(v) else None, "max": v[-1].item() if len(v) else None,
            "finite": (float(fin[0]), float(fin[-1])) if len(fin) else (None, None)}


def weighted_sample(values: np.ndarray, counts: np.ndarray, points: int) -> tuple:
    """About `points` sorted values at equal steps of the cumulative row count, each with
    the rows up to it since the previous point (for bucket edges of equal depth)."""
    cum = np.cumsum(counts)
    picks = np.unique(np.searchsorted(cum, np.linspace(0, cum[-1], points + 1)[1:], "left"))
    picks = np.minimum(picks, len(values) - 1)
    weights = np.diff(np.concatenate([[0], cum[picks]]))
    return values[picks], weights.astype(np.int64)


def encode_column(col: pa.Array | pa.ChunkedArray, ordered: bool, block_rows: int,
                  exact: bool = True, max_keys: int = 65_534) -> Encoded:
    """A column as its own dictionary and each row's code (module docstring), or, when not
    `exact`, numbers with more than `max_keys` mostly distinct values as they are;
    `ordered`: with each block's positions ordered by value."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    kind = C.kind_of(col.type)
    enc = _encode_values(col) if kind == "string" else \
        _encode_numbers(col, kind, exact, block_rows, max_keys)
    if ordered and enc.order is None:
        enc.order = block_order(enc, block_rows)
    return enc


def _encode_values(col: pa.Array) -> Encoded:
    d = pc.dictionary_encode(pa.array(col, pa.string()) if pa.types.is_large_string(col.type) else col)
    dictionary = d.dictionary
    codes = C.to_numpy(d.indices, np.int64, len(dictionary))
    dtype = np.uint16 if len(dictionary) < 65_535 else np.uint32
    counts = np.bincount(codes, minlength=len(dictionary) + 1)[:len(dictionary)].astype(np.int64)
    return Encoded("string", dictionary, codes.astype(dtype), counts, None)


def _encode_numbers(col: pa.Array, kind: str, exact: bool, block_rows: int, max_keys: int) -> Encoded:
    values, _ = C.numbers(col)  # (a float's NaN and null both not valid there: told apart here)
    notnull = C.valid_mask(col)
    n = len(values)
    if kind == "float":
        values = values + 0.0  # -0.0 and 0.0 are one value
        nan = notnull & np.isnan(values)
        present = notnull & ~nan
    else:
        nan = None
        present = notnull
    x = values[present]
    if not exact and _mostly_distinct(x, kind, max_keys):
        return _encode_distinct(values, present, kind, block_rows)
    dictionary, codes_present = _dictionary(x, kind)
    has_nan = nan is not None and bool(nan.any())
    entries = len(dictionary) + has_nan
    dtype = np.uint16 if entries < 65_535 else np.uint32
    codes = np.full(n, entries, dtype)  # null
    codes[present] = codes_present
    if has_nan:
        codes[nan] = len(dictionary)
        dictionary = np.concatenate([dictionary, [np.nan]])
    counts = np.bincount(codes, minlength=entries + 1)[:entries].astype(np.int64)
    return Encoded(kind, dictionary, codes, counts, None, has_nan)


def _mostly_distinct(x: np.ndarray, kind: str, max_keys: int) -> bool:
    """Would the dictionary have more than `max_keys` entries (the field then gets bucketed
    keys, and the values are kept as they are)? Judged by `_distinct_estimate`; integers
    of a small range never are (they are counted)."""
    if len(x) < 256:
        return False
    if kind != "float" and int(x.max()) - int(x.min()) < max(1 << 20, 4 * len(x)):
        return False
    return _distinct_estimate(x) > max_keys


def _distinct_estimate(x: np.ndarray) -> float:
    """About how many distinct values `x` has, from an even sample of 4,096 of them: Chao's
    estimate (those seen, plus those seen once squared over twice those seen twice), or
    the count itself when every value was seen."""
    step = max(1, len(x) // 4096)
    _, seen = np.unique(x[::step], return_counts=True)
    if step == 1:
        return float(len(seen))
    once, twice = int(np.count_nonzero(seen == 1)), int(np.count_nonzero(seen == 2))
    return len(seen) + (once * once / (2 * twice) if twice else once * (once - 1) / 2)


def _encode_distinct(values: np.ndarray, present: np.ndarray, kind: str, block_rows: int) -> Encoded:
    """Mostly distinct numbers as they are: a float's missing values as NaN, an integer's
    or time's in a valid mask; each block ordered by value (missing last, ties by position)
    and sampled at equal steps of rows."""
    n = len(values)
    if kind == "float":
        values = np.where(present, values, np.nan)
        valid = None
    else:
        valid = None if present.all() else present
    order = np.empty(n, np.uint16)
    if n:  # (NaN and the invalid last, ties by position)
        K.block_argsort(K.sort_keys(values, valid), block_rows, order)
    ok = ~np.isnan(values) if kind == "float" else (np.ones(n, bool) if valid is None else valid)
    counted = np.add.reduceat(ok, np.arange(0, n, block_rows), dtype=np.int64) if n else np.zeros(0, np.int64)
    picks, weights = [], []
    per_block = max(1, SAMPLE_POINTS * block_rows // max(n, 1))
    for s, k in zip(range(0, n, block_rows), counted.tolist(), strict=True):
        if k:
            o = order[s:s + block_rows]
            at = np.unique(np.linspace(0, k - 1, min(k, per_block)).round().astype(np.int64))
            picks.append(values[s:s + block_rows][o[at]])
            weights.append(np.diff(np.concatenate([[0], at + 1])))
    sample = (np.concatenate(picks), np.concatenate(weights).astype(np.int64)) if picks else \
        (values[:0], np.zeros(0, np.int64))
    return Encoded(kind, None, None, None, order, False, values, valid, sample)


def _dictionary(x: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct values, each value's position among them) of a column without
    null or NaN: by counting for integers of a small range, by hashing when values repeat,
    else by sorting."""
    dtype = np.float64 if kind == "float" else np.int64
    if not len(x):
        return np.zeros(0, dtype), np.zeros(0, np.int64)
    if kind != "float":
        lo, hi = int(x.min()), int(x.max())
        if hi - lo < max(1 << 20, 4 * len(x)):
            off = (x - lo).astype(np.int64)
            seen = np.bincount(off, minlength=hi - lo + 1) > 0
            rank = np.cumsum(seen) - 1
            return (np.flatnonzero(seen) + lo).astype(dtype), rank[off]
    # values repeat: hashing them, then sorting the few distinct ones, is up to 10x faster
    # than sorting every row (measured at 2M rows: 21k distinct 0.03 s against 0.36 s)
    if _distinct_estimate(x) < len(x) / 4:
        codes, uniques = pd.factorize(x, sort=True)
        return np.asarray(uniques, dtype), codes
    uniques, codes = np.unique(x, return_inverse=True)
    return uniques.astype(dtype), codes


def block_order(enc: Encoded, block_rows: int) -> np.ndarray:
    """Each block's row positions (uint16) ordered by value, NaN and null last, ties by
    position: the order of the codes, which are in value order."""
    codes = enc.codes
    invalid = len(enc.dictionary) - enc.has_nan  # NaN and null alike
    if enc.has_nan:
        codes = np.minimum(codes, invalid).astype(codes.dtype)
    n = len(codes)
    out = np.empty(n, np.uint16)
    if codes.dtype == np.uint16:  # a radix sort per block
        for s in range(0, n, block_rows):
            out[s:s + block_rows] = np.argsort(codes[s:s + block_rows], kind="stable")
        return out
    order = np.argsort(codes, kind="stable")  # one sort, then split by block (stable)
    block = (order // block_rows).astype(np.uint16 if n // block_rows < 65_535 else np.int64)
    by_block = order[np.argsort(block, kind="stable")]
    starts = np.arange(n, dtype=np.int64) // block_rows * block_rows
    out[:] = by_block - starts
    return out
