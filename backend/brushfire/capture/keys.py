"""The key job, on the executors: a shard's encoded columns (capture/scan.py) turned into
the lineage the layout asks for (lineage/layout.py), without reading the source again.

Each dim's key, each view's bar and each measure is a function of one field's value, so
it is computed once per entry of the shard's dictionary and then looked up per row
(`lut[codes]`); only views over two fields (heatmaps) read both fields per row. A dense
or fine dim keeps the field's value order, so the scan's per-block order by value is its
backward index as it is; other indexed dims (bars, dropdowns, calendar parts) sort their
keys per block here.

A keyed shard holds, for its n rows (shapes as the engine reads them, engine/kernels.py):
- keys   (dims kept per row, n) uint16; a fine dim's value per row in raw (rows, n) float64
  (NaN = none) or, on a decimal lattice or as offsets of their bits, in lat (uint32), lat16
  (uint16), or lat and a row of lat8 or lat16 (40 or 48 bits), with exceptions in xrows /
  xvals, as rinfo (fine dims, 7) says (lineage/lattice.py);
- meas   (stored measures, n) float64 (NaN = missing);
- order  uint16, optr (indexed dims, blocks) int64: per block, the rows' positions in the
  block ordered by key, at order[optr[i, b]:...]; -1 = the identity (not stored);
- fences (indexed dims, blocks, block rows / FENCE) uint16: the key at every FENCE-th
  position of each block's order;
- zmin, zmax (dims, blocks) uint16: each block's smallest and largest key;
and its partial results: each view's base aggregates, rows per key of each dim and cube
cells, which the driver sums over shards (lineage/store.py). Pure numpy and pyarrow.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from brushfire import bins
from brushfire import values as V
from brushfire.capture import columns as C
from brushfire.capture import kernels
from brushfire.capture.copies import shard_copies
from brushfire.capture.scan import Encoded, block_order, encode_column
from brushfire.lineage import lattice
from brushfire.lineage.files import part_name, read_arrow, read_npy, write_bytes, write_npy
from brushfire.lineage.layout import FENCE, KEY_DTYPE, Dim, Layout, ViewLayout
from brushfire.spec import models as m
from brushfire.views import view_type

# --- a shard's encoded fields --------------------------------------------------------


class ShardFields:
    """A shard's encoded fields, each read once (memory-mapped)."""

    def __init__(self, n: int, encoded: dict[str, Encoded]) -> None:
        self.n = n
        self._encoded = encoded

    @classmethod
    def read(cls, directory: Path, n: int, summary: dict[str, dict]) -> ShardFields:
        """The fields the scan wrote into `directory` (`summary`: its `fields`)."""
        out = {}
        for f, info in summary.items():
            stem = directory / part_name(f)
            order = Path(f"{stem}.order.npy")
            order = read_npy(order) if order.exists() else None
            if info["entries"] is None:  # mostly distinct numbers, as they are
                valid = Path(f"{stem}.valid.npy")
                out[f] = Encoded(info["kind"], None, None, None, order, False,
                                 read_npy(Path(f"{stem}.values.npy")),
                                 read_npy(valid) if valid.exists() else None)
                continue
            if info["kind"] == "string":
                dictionary = read_arrow(Path(f"{stem}.dict.arrow")).column("v").combine_chunks()
            else:
                dictionary = read_npy(Path(f"{stem}.dict.npy"))
            out[f] = Encoded(info["kind"], dictionary, read_npy(Path(f"{stem}.codes.npy")),
                             read_npy(Path(f"{stem}.counts.npy")), order, info["has_nan"])
        return cls(n, out)

    @classmethod
    def of_table(cls, table: pa.Table, block_rows: int = 65_536, exact: bool = True) -> ShardFields:
        """Every column of an in-memory table, encoded as the scan would (`exact`: always
        as dictionaries)."""
        return cls(table.num_rows, {c: encode_column(table[c], False, block_rows, exact)
                                    for c in table.column_names})

    def field(self, f: str) -> Encoded:
        return self._encoded[f]

    def entries(self, f: str) -> _Entries:
        return _Entries(self._encoded[f])

    def rows(self) -> _Rows:
        return _Rows(self)


class _Entries:
    """A field's dictionary entries as the view types read rows (views/base.py): one
    "row" per entry, then one for null (code len(dictionary)), so that `f(entries)[codes]`
    is f of every row."""

    def __init__(self, enc: Encoded) -> None:
        self.enc = enc
        self.n = len(enc.dictionary) + 1

    def numbers(self, field: str) -> tuple[np.ndarray, np.ndarray]:
        d = self.enc.dictionary
        if self.enc.kind == "string":
            msg = f"a {d.type} column has no numeric values"
            raise TypeError(msg)
        values = np.concatenate([np.asarray(d), np.zeros(1, d.dtype)])
        valid = np.ones(self.n, bool)
        valid[-1] = False
        if self.enc.has_nan:
            valid[-2] = False
        return values, valid

    def positions(self, field: str, values: list) -> tuple[np.ndarray, np.ndarray]:
        d = self.enc.dictionary
        if self.enc.kind == "string":
            pos = C.lookup(d, values) if len(d) else np.zeros(0, np.int64)
        elif self.enc.kind == "temporal":  # values: UTC microseconds, as the entries
            pos = _lookup_numbers(np.asarray(d, np.int64), values)
        else:
            pos = C.lookup(pa.array(np.asarray(d)), values) if len(d) else np.zeros(0, np.int64)
        valid = np.ones(self.n, bool)
        valid[-1] = False
        return np.concatenate([pos, [-1]]), valid


def _lookup_numbers(entries: np.ndarray, values: list) -> np.ndarray:
    if not values:
        return np.full(len(entries), -1, np.int64)
    want = np.asarray(values, np.int64)
    order = np.argsort(want, kind="stable")
    i = np.minimum(np.searchsorted(want[order], entries), len(want) - 1)
    return np.where(want[order][i] == entries, order[i], -1).astype(np.int64)


class _Rows:
    """A shard's rows as the view types read them (views/base.py), each field's values
    looked up from its dictionary per row."""

    def __init__(self, fields: ShardFields) -> None:
        self.fields, self.n = fields, fields.n

    def numbers(self, field: str) -> tuple[np.ndarray, np.ndarray]:
        enc = self.fields.field(field)
        if enc.values is not None:
            if enc.kind == "float":
                return enc.values, ~np.isnan(enc.values)
            return enc.values, enc.valid if enc.valid is not None else np.ones(self.n, bool)
        values, valid = self.fields.entries(field).numbers(field)
        return values[enc.codes], valid[enc.codes]

    def positions(self, field: str, values: list) -> tuple[np.ndarray, np.ndarray]:
        pos, valid = self.fields.entries(field).positions(field, values)
        codes = self.fields.field(field).codes
        return pos[codes], valid[codes]


def per_row(fields: ShardFields, field: str, per_entry: np.ndarray) -> np.ndarray:
    """`per_entry` (one value per dictionary entry, then null's) of every row."""
    return per_entry[fields.field(field).codes]


def of_numbers(fields: ShardFields, field: str, fn) -> np.ndarray:
    """fn(values, valid) of every row: computed once per dictionary entry, then looked up,
    or row by row for a field kept as its values."""
    if fields.field(field).values is not None:
        return fn(*fields.rows().numbers(field))
    return per_row(fields, field, fn(*fields.entries(field).numbers(field)))


# --- keys per row ----------------------------------------------------------------------


def dim_keys(d: Dim, fields: ShardFields, layout: Layout, dash: m.DashboardSpec) -> np.ndarray:
    """A dim's key per row (int64, nkeys = no value)."""
    if d.kind == "bars":
        view = dash.view(d.view)
        code = view_codes(view, layout.view(d.view), fields)
        return np.where(code >= 0, code, d.nkeys)
    if d.kind == "dict":
        choices = d.values if d.value_type != "temporal" else [V.parse_instant(x) for x in d.values]
        pos, _ = fields.entries(d.field).positions(d.field, choices)
        return per_row(fields, d.field, np.where(pos >= 0, pos, d.nkeys).astype(KEY_DTYPE))
    if d.kind == "fine":
        edges = np.asarray(d.edges, np.float64)
        enc = fields.field(d.field)
        if enc.values is not None and enc.order is not None:
            return _sorted_buckets(enc, edges, d.nkeys, layout.block_rows)

        def bucket(v, ok):
            k = np.searchsorted(edges, v.astype(np.float64), "right") - 1
            return np.where(ok, k, d.nkeys).astype(KEY_DTYPE)
        return of_numbers(fields, d.field, bucket)

    def rank(v, ok):
        if d.part:  # keyed by the calendar part of the time
            v = bins.calendar_part(d.part, v)
        u = np.asarray(d.values, v.dtype if len(d.values) else np.float64)
        k = np.searchsorted(u, v) if len(u) else np.zeros(len(v), np.int64)
        kk = np.minimum(k, max(len(u) - 1, 0))
        found = u[kk] == v if len(u) else np.zeros(len(v), bool)
        if not np.all(found | ~ok):
            msg = (f"column {d.field}: a value is not among the distinct values the scan found; "
                   "is the source changing, or a derived column random?")
            raise RuntimeError(msg)
        return np.where(ok, k, d.nkeys).astype(KEY_DTYPE)
    return of_numbers(fields, d.field, rank)


def _sorted_buckets(enc: Encoded, edges: np.ndarray, none: int, bsize: int) -> np.ndarray:
    """Bucket keys of a field kept as its values, from each block's order by value: the
    edges are found among the block's sorted values (edges x log(block rows) steps instead
    of rows x log(edges)), and each run between two edges is one key."""
    values, order = enc.values, enc.order
    n = len(values)
    out = np.empty(n, KEY_DTYPE)
    valid = ~np.isnan(values) if enc.kind == "float" else enc.valid
    for s in range(0, n, bsize):
        o = order[s:s + bsize].astype(np.int64)
        v = values[s:s + bsize][o].astype(np.float64)
        k = len(o) if valid is None else int(np.count_nonzero(valid[s:s + bsize]))
        # sorted: the valid values first; bucket b holds edges[b] <= x < edges[b + 1]
        cut = np.searchsorted(v[:k], edges[1:], "left")
        keys = np.full(len(o), none, KEY_DTYPE)
        keys[:k] = np.repeat(np.arange(len(edges), dtype=KEY_DTYPE), np.diff(np.concatenate([[0], cut, [k]])))
        out[s + o] = keys
    return out


def view_codes(view, vl: ViewLayout, fields: ShardFields) -> np.ndarray:
    """A view's bar per row (views/base.py `row_codes`): from its field's dictionary entries
    when one field decides the bar, else row by row."""
    key_fields = view_type(view).key_fields(view)
    f = key_fields[0]
    if len(set(key_fields)) == 1 and fields.field(f).values is None:
        return per_row(fields, f, view_type(view).row_codes(view, vl, fields.entries(f)))
    return view_type(view).row_codes(view, vl, fields.rows())


def measure(fields: ShardFields, f: str) -> np.ndarray:
    """A measure per row as float64, NaN for null, NaN and ±inf (columns.measure)."""
    def fn(v, ok):
        x = v.astype(np.float64)
        x[~ok | ~np.isfinite(x)] = np.nan
        return x
    return of_numbers(fields, f, fn)


def raw_values(fields: ShardFields, f: str) -> np.ndarray:
    """A fine dim's raw value per row (float64, NaN = none)."""
    return of_numbers(fields, f, lambda v, ok: np.where(ok, v.astype(np.float64), np.nan))


def backward_index(keys: np.ndarray, fields: ShardFields, layout: Layout, bsize: int,
                   previous: dict | None = None, old: dict | None = None) -> dict:
    """Per indexed dim and block: positions in the block ordered by key (fine dims: by raw
    value, which orders keys too; ties by position). Identity blocks are not stored.
    `previous` {dim: (keys row, raw row, index slot)}: dims whose blocks' orders are taken
    from the `old` arrays of the shard."""
    n = keys.shape[1]
    nb = -(-n // bsize)
    idims = layout.indexed_dims
    optr = np.full((len(idims), nb), -1, np.int64)
    pieces, total = [], 0
    for j, i in enumerate(idims):
        d = layout.dims[i]
        reused = previous is not None and i in previous
        by_value = d.kind == "fine" or (d.kind == "dense" and not d.part)
        if reused:
            slot = previous[i][2]
        elif by_value:  # the field's own order by value (the scan's, or made here)
            enc = fields.field(d.field)
            order_all = enc.order if enc.order is not None else block_order(enc, bsize)
        for b in range(nb):
            s, e = b * bsize, min(n, (b + 1) * bsize)
            if reused:
                at = old["optr"][slot, b]
                if at < 0:
                    continue
                order = old["order"][at:at + e - s]
            else:
                order = order_all[s:e] if by_value else np.argsort(keys[i, s:e], kind="stable")
            if _identity(order):
                continue
            optr[j, b] = total
            pieces.append(np.asarray(order, np.uint16))
            total += e - s
    order = np.concatenate(pieces) if pieces else np.zeros(0, np.uint16)
    return {"order": order, "optr": optr,
            "fences": block_fences(keys, order, optr, np.asarray(idims, np.int64), bsize)}


def _identity(order: np.ndarray) -> bool:
    return bool(len(order) == 0 or (order[0] == 0 and np.all(np.diff(order.astype(np.int64)) == 1)))


def zone_maps(keys: np.ndarray, nkeys: list[int], bsize: int) -> tuple[np.ndarray, np.ndarray]:
    """Each block's smallest and largest key per dim, the no-value key left out (a block
    with none: 65535 and 0)."""
    d, n = keys.shape
    nb = -(-n // bsize)
    lo = np.full((d, nb), 65535, KEY_DTYPE)
    hi = np.zeros((d, nb), KEY_DTYPE)
    full = n // bsize * bsize
    for i in range(d):
        k, none = keys[i], KEY_DTYPE(nkeys[i])  # the no-value key is the largest
        for part, blocks in ((k[:full].reshape(-1, bsize), slice(0, n // bsize)),
                             (k[full:].reshape(1, -1), slice(n // bsize, nb))):
            if not part.size:
                continue
            low = part.min(axis=1)
            lo[i, blocks] = np.where(low == none, 65535, low)
            hi[i, blocks] = np.where(part == none, 0, part).max(axis=1)
    return lo, hi


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


# --- partial results -----------------------------------------------------------------------


def cube_block_lut(d: Dim) -> np.ndarray:
    """Key -> cube block of a dim (the no-value key -> the extra last block)."""
    starts = np.asarray(d.cube_starts, np.int64)
    lut = np.searchsorted(starts, np.arange(d.nkeys + 1), "right") - 1
    lut[d.nkeys] = len(starts) - 1
    return lut.astype(np.int64)


class Keyed:
    """A shard's keys, codes and measures as the layout defines them, each computed once
    when first asked for (a key job computes only the parts it writes)."""

    def __init__(self, fields: ShardFields, layout: Layout, dash: m.DashboardSpec) -> None:
        self.fields, self.layout, self.dash = fields, layout, dash
        self._keys: dict[int, np.ndarray] = {}
        self._meas: dict[str, np.ndarray] = {}
        self._codes: dict[str, np.ndarray] = {}

    def key(self, i: int) -> np.ndarray:
        if i not in self._keys:
            self._keys[i] = np.asarray(dim_keys(self.layout.dims[i], self.fields, self.layout,
                                                self.dash), KEY_DTYPE)
        return self._keys[i]

    def meas(self, j: int) -> np.ndarray:
        return self.field_measure(self.layout.measure_fields[j])

    def field_measure(self, f: str) -> np.ndarray:
        """Field f as a measure (`measure`), computed once."""
        if f not in self._meas:
            self._meas[f] = measure(self.fields, f)
        return self._meas[f]

    def code(self, v: ViewLayout) -> np.ndarray:
        """Code per row in 0..ncodes (lineage/layout.py; ncodes = dropped), as the engine
        reads it."""
        if v.name not in self._codes:
            self._codes[v.name] = self._view_code(v)
        return self._codes[v.name]

    def code32(self, v: ViewLayout) -> np.ndarray:
        """`code` as int32 (what the cube kernels read), kept for the shard's other cubes."""
        key = f"{v.name}\0int32"
        if key not in self._codes:
            self._codes[key] = self.code(v).astype(np.int32)
        return self._codes[key]

    def _view_code(self, v: ViewLayout) -> np.ndarray:
        layout = self.layout
        if v.code_dims:
            code = layout.lut(v.name, 0)[self.key(v.code_dims[0])].astype(np.int64)
            if len(v.code_dims) > 1:
                code = np.minimum(code + layout.lut(v.name, 1)[self.key(v.code_dims[1])], v.ncodes)
            return code
        code = view_codes(self.dash.view(v.name), v, self.fields)
        if v.cells:
            block = layout.mblock(v.name)[self.key(v.mdim)]
            return np.where(code >= 0, code * v.width + block, v.ncodes)
        return np.where(code >= 0, code, v.ncodes)

    def value(self, v: ViewLayout) -> np.ndarray | None:
        """The view's measure per row (float64, NaN = missing), or None (no measure)."""
        if v.measure == "lut":
            return self.layout.mlut(v.name)[self.key(v.mdim)]
        if v.measure == "stored":
            return self.meas(v.mcol)
        if v.measure == "raw":
            return self.field_measure(self.layout.dims[v.mdim].field)
        return None


def partial_names(layout: Layout) -> list[str]:
    """Every partial result a shard gives for `layout` (`partials`)."""
    out = [f"base.{v.name}" for v in layout.views]
    out += [f"keycount.{d.name}" for d in layout.dims]
    for f in layout.filters:
        if f.cube_targets and layout.dims[f.dims[0]].cube_starts is not None:
            out += [f"cube.{f.name}.{t}" for t in f.cube_targets]
    return out


def partials(k: Keyed, wanted: list[str]) -> dict[str, np.ndarray]:
    """A shard's partial results named in `wanted` (`partial_names`): `base.<view>` (3,
    nslots: rows, sum of measures, measures present), `keycount.<dim>` and, for
    `cube.<filter>.<target>`, arrays `.counts`, `.sums`, `.oks` of cells (cube block x the
    target's slots, the no-value block last). A filter's cubes are counted in one pass
    (capture/kernels.py); a view's base result is its cube's cells summed over blocks when
    one is counted here."""
    layout = k.layout
    out: dict[str, np.ndarray] = {}
    by_filter: dict[str, list[str]] = {}
    for name in wanted:
        if name.startswith("cube."):
            fname, t = _cube_parts(layout, name[len("cube."):])
            by_filter.setdefault(fname, []).append(t)
    for fname, targets in by_filter.items():
        out.update(_cubes(k, fname, targets))
    for name in wanted:
        kind, _, rest = name.partition(".")
        if kind == "base":
            v = layout.view(rest)
            cube = next((f"cube.{f}.{rest}" for f, ts in by_filter.items() if rest in ts), None)
            if cube is not None:  # every row is in one of the cube's blocks (no value too)
                base = np.zeros((3, v.nslots), np.float64)
                for row, part in enumerate(("counts", "sums", "oks")):
                    if f"{cube}.{part}" in out:
                        base[row] = out[f"{cube}.{part}"].reshape(-1, v.nslots).sum(axis=0)
                out[name] = base
                continue
            c, x = k.code(v), k.value(v)
            base = np.zeros((3, v.nslots), np.float64)
            base[0] = np.bincount(c, minlength=v.nslots)
            if x is not None:
                ok = ~np.isnan(x)
                base[1] = np.bincount(c[ok], weights=x[ok], minlength=v.nslots)
                base[2] = np.bincount(c[ok], minlength=v.nslots)
            out[name] = base
        elif kind == "keycount":
            i = layout.dim_index(rest)
            out[name] = np.bincount(k.key(i), minlength=layout.dims[i].nkeys + 1).astype(np.int64)
    return out


def _cubes(k: Keyed, fname: str, targets: list[str]) -> dict[str, np.ndarray]:
    """The cells of filter `fname`'s cubes towards `targets`, counted in one pass."""
    layout = k.layout
    f = layout.filter(fname)
    d = layout.dims[f.dims[0]]
    block = cube_block_lut(d)[k.key(f.dims[0])]
    nblocks = len(d.cube_starts)  # cube blocks + the no-value block
    views = [layout.view(t) for t in targets]
    widths = np.array([v.nslots for v in views], np.int64)
    sizes = nblocks * widths
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    codes = np.stack([k.code32(v) for v in views]) if views else np.zeros((0, k.fields.n), np.int32)
    cells = np.zeros(int(sizes.sum()), np.int64)
    kernels.cube_counts(block, codes, widths, offsets, cells)
    out = {}
    for j, (t, v) in enumerate(zip(targets, views, strict=True)):
        name = f"cube.{fname}.{t}"
        out[f"{name}.counts"] = cells[offsets[j]:offsets[j] + sizes[j]]
        x = k.value(v)
        if x is not None:
            sums, oks = np.zeros(sizes[j], np.float64), np.zeros(sizes[j], np.int64)
            kernels.cube_sums(block, codes[j], int(widths[j]), x, sums, oks)
            out[f"{name}.sums"], out[f"{name}.oks"] = sums, oks
    return out


def _cube_parts(layout: Layout, rest: str) -> tuple[str, str]:
    """(filter, target) of a cube part's name `<filter>.<target>` (names are identifiers)."""
    fname, _, t = rest.partition(".")
    return fname, t


def row_arrays(k: Keyed, previous: dict | None = None, old: dict | None = None) -> dict[str, np.ndarray]:
    """A shard's per-row arrays (module docstring), as the engine reads them. `previous`
    {dim: (keys row, raw row, index slot)}: dims whose keys, raw values and order are
    copied from the shard's `old` arrays (an earlier capture's, whose keys they are)."""
    layout, fields = k.layout, k.fields
    n, bsize = fields.n, layout.block_rows
    kept = layout.row_dims  # dims kept per row come first; the others feed cubes only
    previous = previous or {}
    keys = np.empty((kept, n), KEY_DTYPE)
    raws: list = [None] * layout.n_raw
    for i in range(kept):
        d = layout.dims[i]
        if i in previous:
            keys[i] = old["keys"][previous[i][0]]
            k._keys[i] = keys[i]  # (and the partial results read these)
        else:
            keys[i] = k.key(i)
        if d.kind == "fine" and d.raw >= 0:
            edges = np.asarray(d.edges, np.float64)
            x = lattice.values(lattice.RawArrays(*(old[a] for a in lattice.RawArrays._fields)),
                               previous[i][1], keys[i], d.nkeys, edges) \
                if i in previous else raw_values(fields, d.field)
            raws[d.raw] = (x, keys[i], d.nkeys, edges)
    meas = np.empty((layout.n_meas, n), np.float64)
    for j in range(layout.n_meas):
        meas[j] = k.meas(j)
    summed = {layout.dims[v.mdim].raw for v in layout.views if v.measure == "raw"}  # (lattice.py)
    out = {"keys": keys, "meas": meas, **lattice.pack(raws, n, summed)._asdict()}
    out.update(backward_index(keys, fields, layout, bsize, previous, old))
    out["zmin"], out["zmax"] = zone_maps(keys, [d.nkeys for d in layout.dims[:kept]], bsize)
    return out


def _narrow(a: np.ndarray) -> np.ndarray:
    """A shard's partial counts in the narrowest unsigned type that holds them (exact;
    `store.assemble` sums them as int64): a cube of 8,138 blocks at 100M rows takes 7 MB
    a shard instead of 39 (the counts of one shard's cells are small)."""
    if a.dtype.kind not in "iu" or not a.size or a.min() < 0:
        return a
    top = int(a.max())
    for t in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(t).max:
            return a.astype(t)
    return a


def key_shard(directory: Path, n_rows: int, fields: dict[str, dict], layout: Layout,
              dash: m.DashboardSpec, tag: str, rows: bool, wanted: list[str],
              previous: dict | None = None, copies: dict | None = None) -> dict:
    """The key job's work on one shard: its per-row arrays (when `rows`) as
    `<array>-<tag>.npy` and the partial results `wanted` in `partials-<tag>.npz`; returns
    {"files": {file: {size, crc32}}, "partials": [names written], "copies": {dim: (files,
    record)}}. `previous`: {"tag": of the shard's arrays from an earlier capture, "dims":
    {dim: (keys row, raw row, index slot)}} whose keys are copied from them
    (capture/parts.py, `reusable_rows`). `copies`: the clustered key copies to build from
    the per-row arrays while they are in memory (capture/copies.py `shard_copies`)."""
    cpu = time.process_time()
    k = Keyed(ShardFields.read(directory, n_rows, fields), layout, dash)
    files, built = {}, {}
    if rows:
        old = reuse = None
        if previous and previous["dims"]:
            old = {a: read_npy(directory / f"{a}-{previous['tag']}.npy")
                   for a in ("keys", "order", "optr", *lattice.RawArrays._fields)}
            reuse = {int(i): tuple(v) for i, v in previous["dims"].items()}
        arrays = row_arrays(k, reuse, old)
        for name, arr in arrays.items():
            files[f"{name}-{tag}.npy"] = write_npy(directory / f"{name}-{tag}.npy", arr)
        if copies:
            stored = lattice.RawArrays(*(arrays[a] for a in lattice.RawArrays._fields))
            built = shard_copies(directory, arrays["keys"], stored, layout, copies)
    if wanted:
        buf = io.BytesIO()
        np.savez(buf, **{name: _narrow(a) for name, a in partials(k, wanted).items()})
        files[f"partials-{tag}.npz"] = write_bytes(directory / f"partials-{tag}.npz", buf.getvalue())
    return {"files": files, "partials": list(wanted), "copies": built, "cpu": time.process_time() - cpu}
