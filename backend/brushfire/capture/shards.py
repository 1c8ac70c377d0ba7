"""Lineage shards, built where the data is: one Spark task turns its partition's rows into
shards of the store (lineage/layout.py) and writes them straight into the cache entry
being built. Pure numpy and pyarrow (no numba: executors start no compiler).

A shard directory holds, for its n rows:
- keys.npy   (dims kept per row, n) uint16: each such dim's key per row;
- raw.npy    (fine dims, n) float64: raw values of fine dims (NaN = none);
- meas.npy   (stored measures, n) float64 (NaN = missing);
- order.npy  uint16, optr.npy (indexed dims, blocks) int64: per block, the rows' positions
  in the block ordered by key, at order[optr[i, b]:...]; -1 = the identity (not stored);
- fences.npy (indexed dims, blocks, block rows / FENCE) uint16: the key at every FENCE-th
  position of each block's order (a search reads these, then a few rows);
- zmin.npy, zmax.npy (dims, blocks) uint16: each block's smallest and largest key (data
  skipping; 65535 / 0 when the block has no key);
- snapshot.arrow: the detail columns, rows in order (Arrow IPC, memory-mapped on load);
- partials.npz: this shard's base aggregates, rows per key of each dim and cube cells,
  which the driver sums over shards and then deletes.
"""

from __future__ import annotations

import io
import os
import shutil
import uuid
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from brushfire import bins
from brushfire import values as V
from brushfire.capture import columns as C
from brushfire.lineage.layout import FENCE, KEY_DTYPE, Layout, ViewLayout
from brushfire.spec import models as m
from brushfire.views import view_type

PARTIALS = "partials.npz"
SNAPSHOT = "snapshot.arrow"


@dataclass
class ShardSummary:
    name: str
    n_rows: int
    files: dict[str, dict]  # file -> {"size": bytes, "crc32": int}


def build_partition(batches: Iterable[pa.RecordBatch], layout: Layout, dash: m.DashboardSpec,
                    shard_rows: int, shards_dir: str, pid: int) -> list[ShardSummary]:
    """Turn one partition's rows into shards of at most `shard_rows` rows, written to
    `shards_dir/<pid>-<seq>`. A task attempt writes into a private directory and renames
    each finished shard into place, so a retried or speculative attempt never leaves a
    half-written shard under a final name. An empty partition gives one empty shard."""
    out = []
    attempt = Path(shards_dir) / f".attempt-{pid:05d}-{uuid.uuid4().hex[:8]}"
    attempt.mkdir(parents=True)
    try:
        for seq, table in enumerate(_chunks(batches, shard_rows)):
            name = f"{pid:05d}-{seq:04d}"
            files = write_shard(table, layout, dash, attempt / name)
            final = Path(shards_dir) / name
            if final.exists():
                shutil.rmtree(final)
            os.replace(attempt / name, final)
            out.append(ShardSummary(name, table.num_rows, files))
    finally:
        shutil.rmtree(attempt, ignore_errors=True)
    return out


def _chunks(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """The batches regrouped into tables of `rows` rows (the last one shorter); one empty
    table when there are no rows at all."""
    pending: list[pa.RecordBatch] = []
    have, yielded, schema = 0, False, None
    for b in batches:
        schema = b.schema
        while b.num_rows:
            take = min(b.num_rows, rows - have)
            pending.append(b.slice(0, take))
            have += take
            b = b.slice(take)
            if have == rows:
                yield pa.Table.from_batches(pending).combine_chunks()
                pending, have, yielded = [], 0, True
    if pending:
        yield pa.Table.from_batches(pending).combine_chunks()
    elif not yielded:
        yield schema.empty_table() if schema is not None else pa.table({})


# --- one shard ---------------------------------------------------------------------------


class _Rows:
    """A shard's source columns as numpy values, each converted once."""

    def __init__(self, table: pa.Table) -> None:
        self.table, self.n = table, table.num_rows
        self._numbers: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def numbers(self, field: str) -> tuple[np.ndarray, np.ndarray]:
        if field not in self._numbers:
            if self.n == 0:
                self._numbers[field] = (np.zeros(0), np.zeros(0, bool))
            else:
                values, valid = C.numbers(self.table[field])
                if values.dtype.kind == "f":
                    values = values + 0.0  # -0.0 is 0.0, as in the profile
                self._numbers[field] = (values, valid)
        return self._numbers[field]

    def positions(self, field: str, values: list) -> tuple[np.ndarray, np.ndarray]:
        """Each row's position of its value in `values` (-1: not there), and whether it
        has a value (not null); a time column's values are UTC microseconds."""
        if self.n == 0:
            return np.zeros(0, np.int64), np.zeros(0, bool)
        col = self.table[field]
        return C.lookup(col, values), C.valid_mask(col)


def shard_arrays(table: pa.Table, layout: Layout, dash: m.DashboardSpec) -> dict[str, np.ndarray]:
    """Every per-row array of one shard, and its partial aggregates (keys 'partial.*')."""
    rows = _Rows(table)
    n, bsize = rows.n, layout.block_rows
    nd = len(layout.dims)
    keys = np.empty((nd, n), KEY_DTYPE)
    raw = np.full((layout.n_raw, n), np.nan, np.float64)
    for i, d in enumerate(layout.dims):
        if d.kind == "dense":
            v, ok = rows.numbers(d.field)
            if d.part:  # keyed by the calendar part of the time
                v = bins.calendar_part(d.part, v)
            u = np.asarray(d.values, v.dtype if len(d.values) else np.float64)
            k = np.searchsorted(u, v) if len(u) else np.zeros(n, np.int64)
            kk = np.minimum(k, max(len(u) - 1, 0))
            found = u[kk] == v if len(u) else np.zeros(n, bool)
            if not np.all(found | ~ok):
                msg = (f"column {d.field}: a value is not among the distinct values profiled "
                       "moments ago; is the source changing, or a derived column random?")
                raise RuntimeError(msg)
            keys[i] = np.where(ok, k, d.nkeys)
        elif d.kind == "fine":
            v, ok = rows.numbers(d.field)
            k = np.searchsorted(np.asarray(d.edges, np.float64), v.astype(np.float64), "right") - 1
            keys[i] = np.where(ok, k, d.nkeys)
            if d.raw >= 0:  # kept per row
                raw[d.raw] = np.where(ok, v.astype(np.float64), np.nan)
        elif d.kind == "dict":
            choices = d.values if d.value_type != "temporal" else \
                [V.parse_instant(x) for x in d.values]  # times match as UTC microseconds
            pos = C.lookup(table[d.field], choices) if n else np.zeros(0, np.int64)
            keys[i] = np.where(pos >= 0, pos, d.nkeys)
        else:  # bars of a view, and its reasons
            view = dash.view(d.view)
            code = view_type(view).row_codes(view, layout.view(d.view), rows)
            keys[i] = np.where(code >= 0, code, d.nkeys)
    meas = np.empty((layout.n_meas, n), np.float64)
    for j, f in enumerate(layout.measure_fields):
        meas[j] = C.measure(table[f]) if n else np.zeros(0)

    kept = layout.row_dims  # dims kept per row come first; the others feed cubes only
    out = {"keys": np.ascontiguousarray(keys[:kept]), "raw": raw, "meas": meas}
    out.update(_backward_index(keys, raw, layout, bsize))
    out["zmin"], out["zmax"] = zone_maps(keys[:kept], [d.nkeys for d in layout.dims[:kept]], bsize)

    # partial aggregates: base result, rows per key, cube cells
    codes = {v.name: view_code(v, layout, keys, dash, rows) for v in layout.views}
    values = {v.name: view_measure(v, layout, keys, meas) for v in layout.views}
    nslots = layout.nslots
    base = np.zeros((3, nslots), np.float64)
    for v in layout.views:
        c, x = codes[v.name], values[v.name]
        base[0, v.all_slots] = np.bincount(c, minlength=v.nslots)
        if x is not None:
            ok = ~np.isnan(x)
            base[1, v.all_slots] = np.bincount(c[ok], weights=x[ok], minlength=v.nslots)
            base[2, v.all_slots] = np.bincount(c[ok], minlength=v.nslots)
    out["partial.base"] = base
    for i, d in enumerate(layout.dims):
        out[f"partial.keycount.{d.name}"] = np.bincount(keys[i], minlength=d.nkeys + 1).astype(np.int64)
    for f in layout.filters:
        d = layout.dims[f.dims[0]]
        if not f.cube_targets or d.cube_starts is None:
            continue
        block = cube_block_lut(d)[keys[f.dims[0]]]
        nblocks = len(d.cube_starts)  # cube blocks + the no-value block
        for t in f.cube_targets:
            tv = layout.view(t)
            cell = block * tv.nslots + codes[t]
            size = nblocks * tv.nslots
            out[f"partial.cube.{f.name}.{t}.counts"] = np.bincount(cell, minlength=size).astype(np.int64)
            x = values[t]
            if x is not None:
                ok = ~np.isnan(x)
                out[f"partial.cube.{f.name}.{t}.sums"] = np.bincount(cell[ok], weights=x[ok], minlength=size)
                out[f"partial.cube.{f.name}.{t}.oks"] = np.bincount(cell[ok], minlength=size).astype(np.int64)
    return out


def zone_maps(keys: np.ndarray, nkeys: list[int], bsize: int) -> tuple[np.ndarray, np.ndarray]:
    """Each block's smallest and largest key per dim, the no-value key left out (a block
    with none: 65535 and 0)."""
    d, n = keys.shape
    nb = -(-n // bsize)
    pad = np.full((d, nb * bsize), 65535, KEY_DTYPE)
    pad[:, :n] = keys
    novalue = pad >= np.asarray(nkeys, np.int64)[:, None]
    lo = np.where(novalue, 65535, pad).reshape(d, nb, bsize).min(axis=2).astype(KEY_DTYPE)
    hi = np.where(novalue, 0, pad).reshape(d, nb, bsize).max(axis=2).astype(KEY_DTYPE)
    return lo, hi


def cube_block_lut(d) -> np.ndarray:
    """Key -> cube block of a dim (the no-value key -> the extra last block)."""
    starts = np.asarray(d.cube_starts, np.int64)
    lut = np.searchsorted(starts, np.arange(d.nkeys + 1), "right") - 1
    lut[d.nkeys] = len(starts) - 1
    return lut.astype(np.int64)


def _backward_index(keys: np.ndarray, raw: np.ndarray, layout: Layout, bsize: int) -> dict:
    """Per indexed dim and block: positions in the block ordered by key (fine dims: by
    raw value, which orders keys too; ties by position). Identity blocks are not stored."""
    n = keys.shape[1]
    nb = -(-n // bsize)
    idims = layout.indexed_dims
    optr = np.full((len(idims), nb), -1, np.int64)
    pieces, total = [], 0
    for j, i in enumerate(idims):
        d = layout.dims[i]
        for b in range(nb):
            s, e = b * bsize, min(n, (b + 1) * bsize)
            if d.kind == "fine":
                order = np.argsort(raw[d.raw, s:e], kind="stable")
            else:
                order = np.argsort(keys[i, s:e], kind="stable")
            if np.array_equal(order, np.arange(e - s)):
                continue
            optr[j, b] = total
            pieces.append(order.astype(np.uint16))
            total += e - s
    order = np.concatenate(pieces) if pieces else np.zeros(0, np.uint16)
    return {"order": order, "optr": optr,
            "fences": block_fences(keys, order, optr, np.asarray(idims, np.int64), bsize)}


def block_fences(keys: np.ndarray, order: np.ndarray, optr: np.ndarray, dims: np.ndarray,
                 bsize: int) -> np.ndarray:
    """fences[j, b, f]: the key on dim dims[j] at position f * FENCE of block b's key order
    (the rows past a short last block: 0, never read)."""
    n = keys.shape[1]
    out = np.zeros((len(dims), optr.shape[1], -(-bsize // FENCE)), KEY_DTYPE)
    for j, d in enumerate(dims):
        for b in range(optr.shape[1]):
            s, e = b * bsize, min(n, (b + 1) * bsize)
            at = np.arange(0, e - s, FENCE)
            rows = at if optr[j, b] < 0 else order[optr[j, b] + at].astype(np.int64)
            out[j, b, :len(at)] = keys[d, s + rows]
    return out


def view_code(v: ViewLayout, layout: Layout, keys: np.ndarray, dash: m.DashboardSpec,
              rows: _Rows) -> np.ndarray:
    """Code per row in 0..ncodes (lineage/layout.py; ncodes = dropped), as the engine
    reads it."""
    if v.code_dims:
        code = layout.lut(v.name, 0)[keys[v.code_dims[0]]].astype(np.int64)
        if len(v.code_dims) > 1:
            code = np.minimum(code + layout.lut(v.name, 1)[keys[v.code_dims[1]]], v.ncodes)
        return code
    view = dash.view(v.name)
    code = view_type(view).row_codes(view, v, rows)
    if v.cells:
        block = layout.mblock(v.name)[keys[v.mdim]]
        return np.where(code >= 0, code * v.width + block, v.ncodes)
    return np.where(code >= 0, code, v.ncodes)


def view_measure(v: ViewLayout, layout: Layout, keys: np.ndarray, meas: np.ndarray):
    if v.measure == "lut":
        return layout.mlut(v.name)[keys[v.mdim]]
    if v.measure == "stored":
        return meas[v.mcol]
    return None


def write_shard(table: pa.Table, layout: Layout, dash: m.DashboardSpec, directory: Path) -> dict:
    """Write one shard's files into `directory`; returns {file: {size, crc32}}."""
    directory.mkdir(parents=True)
    arrays = shard_arrays(table, layout, dash)
    files = {}
    partials = {k[len("partial."):]: v for k, v in arrays.items() if k.startswith("partial.")}
    for name, arr in arrays.items():
        if not name.startswith("partial."):
            files[f"{name}.npy"] = write_npy(directory / f"{name}.npy", arr)
    buf = io.BytesIO()
    np.savez(buf, **partials)
    files[PARTIALS] = write_bytes(directory / PARTIALS, buf.getvalue())
    if layout.detail_columns and table.num_rows:  # an empty shard has no snapshot
        snap = table.select(layout.detail_columns)
        with pa.OSFile(str(directory / SNAPSHOT), "wb") as sink, \
                pa.ipc.new_file(sink, snap.schema) as writer:
            writer.write_table(snap)
        files[SNAPSHOT] = file_crc(directory / SNAPSHOT)
    return files


def write_npy(path: Path, arr: np.ndarray) -> dict:
    """Write `arr` as .npy (no copy of the data) and return its size and CRC32."""
    arr = np.ascontiguousarray(arr)
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, np.lib.format.header_data_from_array_1_0(arr))
    header = head.getvalue()
    data = memoryview(arr.reshape(-1).view(np.uint8)) if arr.size else b""
    with open(path, "wb") as f:
        f.write(header)
        f.write(data)
    return {"size": len(header) + len(data), "crc32": zlib.crc32(data, zlib.crc32(header))}


def file_crc(path: Path) -> dict:
    crc, size = 0, 0
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            crc = zlib.crc32(chunk, crc)
            size += len(chunk)
    return {"size": size, "crc32": crc}


def write_bytes(path: Path, data) -> dict:
    with open(path, "wb") as f:
        f.write(data)
    return {"size": len(data), "crc32": zlib.crc32(data)}
