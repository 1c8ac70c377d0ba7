"""The lineage store: one captured dashboard's read-only arrays, shared by all sessions,
kept in a cache entry per dashboard and source.

An entry (`<cache>/<dashboard>-<source key>/`) holds every capture of the dashboard over
that source, as parts that later captures reuse:
- shards/<shard>/: one shard per piece of an input file (capture/scan.py): its encoded
  fields and detail columns, written by the scan; its per-row lineage (`keys-<tag>.npy`,
  ... as the engine reads them) and partial results (`partials-<tag>.npz`), written by
  the key job (capture/keys.py). A file is never rewritten: a new version gets a new tag;
- g-<tag>.*.npy: the small global arrays (base results, rows per key, cubes, the layout's
  lookups), sums of the shards' partial results in rid order;
- shards/<shard>/copy-<key>-<dim>.<part>.npy: the shard's clustered key copies
  (engine/copies.py), built by the capture's key job, or by the driver for a shard the
  key job did not key (capture/copies.py);
  the manifest's `copies` says for which dims. Optional: a copy that is missing or fails
  its checksum leaves its dim reading the store's own order, and the loader says so;
- manifest.json: the current capture, replaced atomically: the spec (as written and as
  resolved), the layout, the source's files and their shards in rid order, and the size
  and CRC32 of every file it uses.
Loading checks the manifest and every file it maps (size and checksum), so an entry that
fails is never served. A file whose checksum passed is recorded in `checked.json` with its
`stat_stamp` (lineage/checks.py); a later load reads again only the files whose stamp changed (as git's index
does: at 100M rows the files are 15 GB, seconds of reading at every start). A capture
holds the entry's lock, then removes what no manifest uses. A process that still maps a
removed file keeps reading it (Linux frees it on unmap).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from brushfire.errors import CacheError
from brushfire.lineage import lattice
from brushfire.lineage.arrays import Aggregates, CaptureInfo
from brushfire.lineage.checks import Checked, prefetch
from brushfire.lineage.files import (
    part_name,
    read_arrow,
    read_npy,
    write_npy,
)
from brushfire.lineage.layout import CaptureConfig, Layout, ViewLayout
from brushfire.spec.models import DashboardSpec, Details, Source
from brushfire.values import choice_order, format_instant, raw_instant

FORMAT_VERSION = 12  # 12: ... or as offsets of their bits (lat8); 11: fine dims' raw values
# on a decimal lattice (lineage/lattice.py);
# 10: entries per dashboard and source, shards per input file, reusable parts; 9: a time
# field's categorical bars and dropdown choices as ISO instants
MANIFEST = "manifest.json"
SHARDS = "shards"
LOCK = ".lock"
ROW_ARRAYS = ("keys", "raw", "meas", "order", "optr", "zmin", "zmax", "fences", "lat", "lat16", "xrows",
              "xvals", "rinfo", "lat8")
COPY_PARTS = ("keys", "rows", "starts", "zones", "hist")  # engine/copies.py Copy.PARTS
COPY_FORMAT = 2  # how a copy's arrays are laid out (2: uint8 keys where they fit); copies of
# another format are not mapped (the engine builds them, as for a capture that stored none)


@dataclass
class Cube:
    """Prefix sums over a dim's cube blocks of one target view's aggregates:
    counts[j] = rows of cube blocks 0..j-1, shape (blocks + 1, the view's nslots); counts
    and oks as stored, in the narrowest unsigned type that holds them (`narrow_counts`)."""

    counts: np.ndarray
    sums: np.ndarray  # (0, 0) when the target has no measure
    oks: np.ndarray


@dataclass
class Shard:
    name: str
    start: int  # global rid of its first row
    n_rows: int
    # (keys, raw, meas, order, optr, zmin, zmax, fences, lat, lat16, xrows, xvals, rinfo,
    # rbase, lat8), as the kernels take them (engine/kernels.py; `kernel_arrays`)
    arrays: tuple
    snapshot: pa.Table | None
    # the input file (as Spark names it) and split (its byte offset) the rows come from:
    # rids follow (file, split, position), whichever capture scanned each shard
    source: tuple[str | None, int] = (None, 0)

    @property
    def nblocks(self) -> int:
        return self.arrays[4].shape[1]


@dataclass
class LineageStore:
    dashboard: DashboardSpec
    layout: Layout
    shards: list[Shard]
    n_rows: int
    base: Aggregates  # every view over all rows
    keycounts: list[np.ndarray]  # per dim: rows per key (the no-value key last)
    cubes: dict[tuple[str, str], Cube]  # (filter, target view) -> cube
    info: CaptureInfo
    directory: Path | None = None
    # the plain Spark queries' results when capture ran them for comparison (not persisted)
    base_query_results: dict[str, dict] | None = None
    # the manifest it was loaded from, without its shards (which capture this is: versions.py)
    manifest: dict | None = None
    # the clustered key copies the capture stored, mapped: dim -> per shard ({part: array},
    # by_raw, then) (engine/copies.py Copy.of); None: the capture stored none (the engine
    # builds them)
    copies: dict[int, list[tuple[dict[str, np.ndarray], bool, int]]] | None = None
    copy_notes: list[str] = field(default_factory=list)  # copies found unusable, and why

    @property
    def views(self) -> list[ViewLayout]:
        return self.layout.views

    def view(self, name: str) -> ViewLayout:
        return self.layout.view(name)

    @property
    def nslots(self) -> int:
        return self.layout.nslots

    @property
    def snapshot(self) -> bool:
        return bool(self.layout.detail_columns)

    def parameter_domain(self, name: str) -> tuple[str, list]:
        """('values', choices) of a dropdown parameter, ('times', ISO instants) of a
        dropdown over a time field, ('range', [lo, hi]) of a slider (times as ISO strings)."""
        cache = self.__dict__.setdefault("_domains", {})
        if name not in cache:  # one list per parameter: callers may key on it
            f = self.layout.filter(name)
            d = self.layout.dims[f.dims[0]]
            if d.kind == "dict":  # (listed as a capture from scratch keys them: `choice_order`)
                order = choice_order(d.values, self.keycounts[f.dims[0]][:d.nkeys])
                cache[name] = ("times" if d.value_type == "temporal" else "values", [d.values[i] for i in order])
            else:
                lo, hi = self.value_range(f.dims[0])
                ends = [] if lo is None or hi is None else [format_instant(lo), format_instant(hi)] \
                    if d.value_type == "temporal" else [lo, hi]
                cache[name] = ("range", ends)
        return cache[name]

    def parameter_temporal(self, name: str) -> bool:
        """Is parameter `name` over a time field (its values ISO times), whatever values
        the field holds (a slider over a time field without a value is one over times)?"""
        return self.layout.dims[self.layout.filter(name).dims[0]].value_type == "temporal"

    def value_range(self, dim: int) -> tuple:
        """Smallest and largest finite value of a dense or fine dim (None, None when it has
        none): a slider's range, which JSON could not carry as ±inf (they were sent as null,
        and the page's slider had no range)."""
        d = self.layout.dims[dim]
        counts = self.keycounts[dim][:d.nkeys]
        present = np.flatnonzero(counts)
        if d.kind == "dense":
            finite = [d.values[k] for k in present if math.isfinite(d.values[k])]
            return (finite[0], finite[-1]) if finite else (None, None)
        if not len(present):
            return None, None
        lo = hi = None  # fine: the raw values of the first and last buckets (doubles)
        cast = raw_instant if d.value_type == "temporal" else int if d.value_type == "int" else float
        if not d.rows and d.bounds is not None:  # no raw values kept: the capture's bounds
            return cast(d.bounds[0]), cast(d.bounds[1])
        if not d.rows:  # (a capture that recorded none: the buckets' edges)
            first, last = present[0], present[-1]
            edges = d.edges + [float("inf")]
            lo, hi = edges[max(first, 1)], edges[last + 1]
            return cast(lo) if lo != float("inf") else None, cast(hi) if hi != float("inf") else None
        for i in range(len(self.shards)):
            raw = self.raw_values(i, dim)
            if raw is not None and len(raw):
                ok = raw[np.isfinite(raw)]
                if len(ok):
                    lo = ok.min() if lo is None else min(lo, ok.min())
                    hi = ok.max() if hi is None else max(hi, ok.max())
        return (None, None) if lo is None else (cast(lo), cast(hi))

    def raw_values(self, shard: int, dim: int) -> np.ndarray | None:
        """A fine dim's values in a shard as float64 (NaN: none), or None when the dim
        keeps none per row (lineage/lattice.py: stored as float64 or on a lattice)."""
        d = self.layout.dims[dim]
        if d.kind != "fine" or d.raw < 0:
            return None
        a = self.shards[shard].arrays
        return lattice.values(lattice.RawArrays(a[1], *a[8:13], a[14]), d.raw, a[0][dim], d.nkeys,
                              np.asarray(d.edges, np.float64))

    def raw_coding(self) -> dict[str, tuple[dict[str, int], list[int], int]]:
        """How each fine dim's raw values are kept (lineage/lattice.py), for reports: {dim:
        (shards with rows per coding `lattice.NAMES`, the lattice's steps j (values in steps
        of 10^j; bits' offsets: j = lattice.ULP + their shift), exception rows)}."""
        names = lattice.NAMES
        out = {}
        for d in self.layout.dims:
            if d.kind != "fine" or d.raw < 0:
                continue
            shards: dict[str, int] = {}
            steps, exceptions = set(), 0
            for s in self.shards:
                if not s.n_rows:
                    continue
                kind, _, j, _, x0, x1 = s.arrays[12][d.raw, :6].tolist()
                shards[names[kind]] = shards.get(names[kind], 0) + 1
                if kind != lattice.FLOAT:
                    steps.add(j)
                exceptions += x1 - x0
            out[d.name] = (shards, sorted(steps), exceptions)
        return out

    def locate(self, rids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(shard index, row in shard) of global rids."""
        starts = np.array([s.start for s in self.shards], np.int64)
        si = np.searchsorted(starts, rids, "right") - 1
        return si, rids - starts[si]

    def take(self, rids: np.ndarray, columns: list[str]) -> pa.Table:
        """The detail columns of rows `rids` (global), in that order."""
        rids = np.asarray(rids, np.int64)
        si, local = self.locate(rids)
        parts, positions = [], []
        for s in np.unique(si):
            sel = np.flatnonzero(si == s)
            parts.append(self.shards[s].snapshot.select(columns).take(pa.array(local[sel])))
            positions.append(sel)
        if not parts:
            schema = next((s.snapshot.select(columns).schema for s in self.shards
                           if s.snapshot is not None), None)
            if schema is not None:
                return schema.empty_table()
            return pa.table({c: pa.array([], pa.null()) for c in columns})  # (a source of no rows)
        table = pa.concat_tables(parts, promote_options="permissive")
        back = np.argsort(np.concatenate(positions), kind="stable")
        return table.take(pa.array(back))

    def nbytes(self) -> dict[str, int]:
        """Bytes per part of the store, for reports: per dim (keys, raw values, index
        positions), stored measures, cubes, and (their names start with "_": not the
        lineage proper) the clustered key copies per dim and the detail snapshot."""
        out: dict[str, int] = {}
        lay = self.layout
        idims = lay.indexed_dims
        for i, d in enumerate(lay.dims):
            if not d.rows:
                continue
            size = 2 * self.n_rows
            if d.kind == "fine" and d.raw >= 0:
                for s in self.shards:
                    kind, _, _, _, x0, x1 = s.arrays[12][d.raw, :6].tolist()
                    size += lattice.WIDTH[kind] * s.n_rows
                    size += 12 * (x1 - x0)
            if d.indexed:
                slot = idims.index(i)
                for s in self.shards:
                    optr = s.arrays[4][slot]
                    bsize = lay.block_rows
                    for b in range(len(optr)):
                        if optr[b] >= 0:
                            size += 2 * (min(s.n_rows, (b + 1) * bsize) - b * bsize)
            out[f"dim {d.name}"] = size
        out["measures"] = 8 * self.n_rows * lay.n_meas
        out["cubes"] = sum(c.counts.nbytes + c.sums.nbytes + c.oks.nbytes for c in self.cubes.values())
        out["zone maps"] = sum(s.arrays[5].nbytes + s.arrays[6].nbytes for s in self.shards)
        out["fences"] = sum(s.arrays[7].nbytes for s in self.shards)
        for d, cs in sorted((self.copies or {}).items()):  # mapped, not in the lineage's sum
            out[f"_copy {lay.dims[d].name}"] = sum(a.nbytes for parts, *_ in cs for a in parts.values())
        if self.snapshot:
            out["_snapshot"] = sum(s.snapshot.nbytes for s in self.shards if s.snapshot is not None)
        return out


# --- identities ---------------------------------------------------------------------------

DISPLAY_ONLY = ("title", "scale", "reverse", "snap")  # how a view is drawn, never what it counts


def view_definition(view) -> dict:
    """What a view counts, as JSON: its spec without how it is drawn (title, scale,
    reverse, snap; a heatmap axis's reverse)."""
    v = view.model_dump(mode="json")
    for k in DISPLAY_ONLY:
        v.pop(k, None)
    for axis in ("x", "y"):
        if isinstance(v.get(axis), dict):
            v[axis].pop("reverse", None)
    return v


def spec_hash(dash: DashboardSpec) -> str:
    """A hash of what the spec asks to capture: titles, the page's layout, display
    options (scale, reverse, snap), the details' page size and the parameters' defaults
    left out, so editing them keeps the capture; keys sorted, so the order of a mapping
    in the YAML does not matter."""
    d = dash.model_dump(mode="json", exclude={"title", "layout", "views"})
    d["views"] = [view_definition(v) for v in dash.views]
    # where a session starts and how many rows a details page shows: not what is captured
    # (set to what a spec that leaves them out says: captures of such specs stay current)
    if d["interactions"].get("details"):
        d["interactions"]["details"]["page_size"] = Details.model_fields["page_size"].default
    for p in d["interactions"].get("parameters", []):
        p["default"] = None
    if not d["source"].get("joins"):  # (as before joins were: captures of such specs stay current)
        d["source"].pop("joins", None)
    if d.get("workload") is None:  # (as before it was: captures of such specs stay current)
        d.pop("workload", None)
    return _hash(d)


def source_key(source: Source) -> str:
    """The entry of a dashboard's captures over `source`: where the rows come from (path,
    format and reader options). Another sample of the data is another entry; derived
    columns and filters are not part of it (a capture reuses what they leave unchanged)."""
    path = source.path if "://" in source.path else os.path.abspath(source.path)
    return _hash([path, source.resolved_format, source.reader_options])[:16]


def spec_file(dash: DashboardSpec) -> str | None:
    """The absolute path of the file `dash` was loaded from; None for a spec given as a
    dict or as text (the loader's `<spec>`)."""
    name = getattr(dash, "_filename", None)
    return None if not name or name.startswith("<") else os.path.abspath(name)


def entry_dir(cache_dir: str | Path, dash: DashboardSpec) -> Path:
    """The entry of the dashboard's captures over its source: `<name>-<source key>`, kept
    by the spec file whose capture made it (its manifest's `spec_file`; so a spec edited
    in place or moved, and entries made before it was recorded, reuse it); another spec file of the
    same name over the same source gets an entry of its own, `<name>-<source key>-<file
    hash>`: sharing one, each capture rebuilt the other's parts."""
    base = Path(cache_dir) / f"{dash.name}-{source_key(dash.source)}"
    own = spec_file(dash)
    if own is None:
        return base
    apart = base.with_name(f"{base.name}-{_hash(own)[:8]}")
    if apart.is_dir():
        return apart
    owner = (read_manifest(base) or {}).get("spec_file")
    # (the owner's file gone: the spec was moved or renamed, and keeps its captures)
    return base if owner in (None, own) or not os.path.exists(owner) else apart


def files_fingerprint(files: list[dict]) -> str:
    """Names, sizes and modification times of the source's files: changes when data does."""
    h = hashlib.sha256()
    for f in sorted(files, key=lambda f: f["path"]):
        h.update(f"{f['path']}|{f['size']}|{f['mtime_ns']}\n".encode())
    return h.hexdigest()


def capture_key(dash: DashboardSpec, fingerprint: str, config: CaptureConfig | None = None) -> str:
    """What identifies a capture: format, spec, the source's files and the capture's sizes."""
    sizes = json.dumps(asdict(config or CaptureConfig()), sort_keys=True)
    text = f"{FORMAT_VERSION}|{spec_hash(dash)}|{fingerprint}|{sizes}"
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=_json_default).encode()).hexdigest()


# --- the manifest ---------------------------------------------------------------------------


def read_manifest(entry: Path) -> dict | None:
    """The entry's current manifest, or None when there is none of this format."""
    try:
        meta = json.loads((Path(entry) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format_version") != FORMAT_VERSION:
        return None
    return meta


def write_manifest(entry: Path, meta: dict) -> None:
    """Replace the entry's manifest atomically (readers see the old one or the new one)."""
    tmp = Path(entry) / f".{MANIFEST}.{os.getpid()}"
    tmp.write_text(json.dumps(meta, default=_json_default))
    os.replace(tmp, Path(entry) / MANIFEST)


@contextlib.contextmanager
def locked(entry: Path) -> Iterator[None]:
    """The entry for one capture at a time (other processes wait); readers never lock."""
    Path(entry).mkdir(parents=True, exist_ok=True)
    with open(Path(entry) / LOCK, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def collect_garbage(entry: Path, meta: dict) -> list[Path]:
    """Remove every shard, shard file and global file of the entry that `meta` does not
    use, and work directories older than a day; returns what was removed."""
    removed: list[Path] = []
    shards = {s["name"]: s for s in meta["shards"]}
    shard_root = Path(entry) / SHARDS
    for p in shard_root.iterdir() if shard_root.exists() else []:
        if p.name.startswith("."):
            if _age(p) > 24 * 3600:
                removed.append(p)
        elif p.name not in shards:
            removed.append(p)
        else:
            used = set(shards[p.name]["files"])
            removed += [f for f in p.iterdir() if f.name not in used and not f.name.startswith(".")]
    for p in Path(entry).iterdir():
        unused = p.name.startswith("g-") and p.name not in meta["files"]
        stale = p.name.startswith((".partial-", f".{MANIFEST}.")) and _age(p) > 24 * 3600
        if unused or stale:
            removed.append(p)
    for p in removed:
        _remove(p)
    return removed


def prune_entries(cache_dir: Path, dashboard: str, keep: Path) -> list[Path]:
    """Remove the dashboard's entries of earlier formats (a format change re-captures);
    entries over other sources are kept: each serves its own source."""
    removed = []
    for p in Path(cache_dir).iterdir() if Path(cache_dir).exists() else []:
        if p == keep or not p.name.startswith(f"{dashboard}-") or not p.is_dir():
            continue
        try:
            meta = json.loads((p / MANIFEST).read_text())
        except (OSError, ValueError):
            meta = None
        if isinstance(meta, dict) and meta.get("dashboard") == dashboard \
                and meta.get("format_version") != FORMAT_VERSION:
            _remove(p)
            removed.append(p)
    return removed


def _age(p: Path) -> float:
    try:
        return time.time() - p.stat().st_mtime
    except OSError:
        return 0.0


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        p.unlink(missing_ok=True)


# --- the global arrays -------------------------------------------------------------------


def assemble(entry: Path, layout: Layout, shards: list[dict], tag: str, progress=None,
             packed: dict[str, np.ndarray] | None = None) -> dict:
    """Sum the shards' partial results (in rid order, so a sum is the same whichever
    capture wrote each part) into the global arrays, written as `g-<tag>.*.npy` with the
    layout's arrays and its `packed` lists (Layout.to_json); returns
    {"files": {name: {size, crc32}}, "cubes": [[filter, target], ...]}."""
    totals: dict[str, np.ndarray] = {}
    opened: dict[Path, np.lib.npyio.NpzFile] = {}
    try:
        for i, s in enumerate(shards):
            if progress:
                progress("summing shard results", i / max(1, len(shards)))
            for part, (fname, _, *stored) in s["partials"].items():
                path = Path(entry) / SHARDS / s["name"] / fname
                if path not in opened:
                    opened[path] = np.load(path, allow_pickle=False)
                key = stored[0] if stored else part  # (the name it was written under: renamed since)
                suffixes = [""] if not part.startswith("cube.") else \
                    [f".{x}" for x in ("counts", "sums", "oks") if f"{key}.{x}" in opened[path]]
                for suffix in suffixes:
                    name = part + suffix
                    a = opened[path][key + suffix]
                    if a.dtype.kind in "iu":  # (counts are written narrow: capture/keys.py)
                        a = a.astype(np.int64)
                    totals[name] = totals[name] + a if name in totals else a.copy()
            for path in [p for p in opened if p.parent.name == s["name"]]:
                opened.pop(path).close()
    finally:
        for z in opened.values():
            z.close()
    arrays = {f"layout.{k}": v for k, v in (layout.arrays | (packed or {})).items()}
    base = np.zeros((3, layout.nslots))
    for v in layout.views:
        part = totals.get(f"base.{v.name}")
        if part is not None:
            base[:, v.all_slots] = part
    arrays["base_counts"] = base[0].astype(np.int64)
    arrays["base_sums"] = base[1]
    arrays["base_oks"] = base[2].astype(np.int64)
    for d in layout.dims:
        arrays[f"keycount.{d.name}"] = totals.get(f"keycount.{d.name}", np.zeros(d.nkeys + 1, np.int64))
    cubes = []
    for f in layout.filters:
        d = layout.dims[f.dims[0]]
        if not f.cube_targets or d.cube_starts is None:
            continue
        nblocks = len(d.cube_starts) - 1
        for t in f.cube_targets:
            width = layout.view(t).nslots
            for part in ("counts", "sums", "oks"):
                cells = totals.get(f"cube.{f.name}.{t}.{part}")
                if cells is None and part == "counts":  # (no shard at all: no rows)
                    cells = np.zeros((nblocks + 1) * width, np.int64)
                if cells is None:
                    continue
                # drop the no-value block, then prefix sums over blocks
                cells = cells.reshape(nblocks + 1, width)[:nblocks]
                prefix = np.zeros((nblocks + 1, width), cells.dtype)
                np.cumsum(cells, axis=0, out=prefix[1:])
                arrays[f"cube.{f.name}.{t}.{part}"] = narrow_counts(prefix) if part != "sums" else prefix
            cubes.append([f.name, t])
    files = {}
    for name, arr in arrays.items():
        fname = f"g-{tag}.{name}.npy"
        files[fname] = write_npy(Path(entry) / fname, arr)
    return {"files": files, "cubes": cubes}


def narrow_counts(prefix: np.ndarray) -> np.ndarray:
    """A cube's prefix counts in the narrowest of uint16 / uint32 that holds its largest
    (its last row: prefix sums only grow), else as they are (int64): a store of up to
    4G rows keeps its cubes in half the bytes. Readers only add differences of two
    prefix rows (non-negative) to int64 aggregates, which numpy does without loss."""
    top = int(prefix[-1].max()) if prefix.size else 0
    for t in (np.uint16, np.uint32):
        if top <= np.iinfo(t).max:
            return prefix.astype(t)
    return prefix


# --- load --------------------------------------------------------------------------------


def load_store(entry: str | Path, dash: DashboardSpec, key: str | None = None,
               verify: bool = True) -> LineageStore:
    """Load an entry's current capture, checking that it was made for `dash`'s spec (and
    for capture `key`, when given) and every mapped file's size (and, with `verify`, its
    CRC32, unless unchanged since it last passed: `Checked`); CacheError if it is not
    sound. Arrays are memory-mapped, and (with `verify`) read into the page cache in the
    background (`prefetch`)."""
    entry = Path(entry)
    try:
        meta = json.loads((entry / MANIFEST).read_text())
        if not isinstance(meta, dict):
            msg = "the manifest is not a JSON object"
            raise ValueError(msg)
        if meta.get("format_version") != FORMAT_VERSION:
            msg = f"format {meta.get('format_version')}, need {FORMAT_VERSION}"
            raise ValueError(msg)
        if key is not None and meta.get("cache_key") != key:
            msg = (f"it was written for capture {meta.get('cache_key')}, not {key} "
                   "(copied from another spec or source?)")
            raise ValueError(msg)
        if meta.get("spec_sha256") != spec_hash(dash) or meta.get("dashboard") != dash.name:
            msg_0 = "it was captured for another spec"
            raise ValueError(msg_0)
        files = mapped_files(entry, meta)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        msg = f"cache entry {entry} is not usable: {e}"
        raise CacheError(msg) from None
    for path, want in files:
        try:
            size = path.stat().st_size
        except OSError:
            size = -1
        if not path.is_file() or size != want["size"]:
            msg = f"cache file {path} is missing or has the wrong size"
            raise CacheError(msg)
    checked = Checked(entry) if verify else None
    if checked is not None:
        bad = checked.first_bad([(path, want["crc32"]) for path, want in files])
        if bad is not None:
            msg = f"cache file {bad} fails its checksum"
            raise CacheError(msg)
    try:
        store = _store_from(entry, meta, dash)
    except (KeyError, ValueError, TypeError, AssertionError, OSError, pa.ArrowInvalid) as e:
        msg = f"cache entry {entry} is inconsistent: {e!r}"
        raise CacheError(msg) from None
    store.copies, store.copy_notes = load_copies(entry, meta, store, checked)
    for note in store.copy_notes:
        print(f"brushfire: {note}", file=sys.stderr)
    if checked is not None:
        checked.save()
        # the files a load did not read (unchanged since checked) may have left the page
        # cache: a reply's first touch of such a page waits for the disk (a brush at 100M
        # rows took 2.6 s so, 6 ms once cached); those it read are cached
        prefetch(checked.unread)
    return store


def copy_files(s: dict) -> dict[int, list[str]]:
    """A shard's stored copies' files (COPY_PARTS), per dim, as its record names them: the
    chunk histograms under their own key (capture/copies.py hist_key; records without
    one keep them under the copy's)."""
    c = s.get("copies") or {}
    return {int(d): copy_names(c, int(d)) for d in c.get("dims", {})}


def copy_names(c: dict, d: int) -> list[str]:
    """The files (COPY_PARTS) of dim d's copy under a shard's copies record `c`."""
    return [f"copy-{c.get('hist', c['key']) if p == 'hist' else c['key']}-{d}.{p}.npy"
            for p in COPY_PARTS]


def load_copies(entry: Path, meta: dict, store: LineageStore, checked: Checked | None
                ) -> tuple[dict[int, list[tuple[dict[str, np.ndarray], bool]]] | None, list[str]]:
    """The clustered key copies the manifest records (`copies`), mapped, each file's size
    (and, with `checked`, CRC32) checked: a dim whose files are all sound gets its copies,
    any other reads the store's own order (never a wrong answer), with a note saying why.
    None when the capture stored none (an entry from before copies were stored)."""
    if "copies" not in meta:
        return None, []
    if meta["copies"].get("format") != COPY_FORMAT:
        return None, [f"the clustered key copies in {entry.name} were stored in format "
                      f"{meta['copies'].get('format')}, this version reads {COPY_FORMAT}: they are "
                      "built in memory instead until the dashboard is captured again"]
    lay = store.layout
    out, notes = {}, []
    dims = [int(d) for d in meta["copies"].get("dims", [])]
    checks: list[tuple[int, Path, dict]] = []
    bad: dict[int, str] = {}
    for d in dims:
        for s in meta["shards"]:
            names = copy_files(s).get(d)
            if names is None:
                bad.setdefault(d, f"shard {s['name']} has none")
                continue
            checks += [(d, entry / SHARDS / s["name"] / n, s["files"].get(n, {})) for n in names]
    for d, path, want in checks:
        try:
            size = path.stat().st_size
        except OSError:
            size = -1
        if d not in bad and size != want.get("size"):
            bad[d] = f"{path.name} is missing or has the wrong size"
    if checked is not None:
        for d in dims:
            if d not in bad:
                path = checked.first_bad([(p, w.get("crc32", -1)) for e, p, w in checks if e == d])
                if path is not None:
                    bad[d] = f"{path.name} fails its checksum"
    for d in dims:
        name = lay.dims[d].name if d < len(lay.dims) else str(d)
        if d not in bad:
            try:
                out[d] = [_copy_of(entry, s, d, lay, shard) for s, shard
                          in zip(meta["shards"], store.shards, strict=True)]
                continue
            except (KeyError, ValueError, TypeError, AssertionError, OSError) as e:
                bad[d] = f"its files do not fit the store ({e})"
        notes.append(f"the clustered key copy of dim {name!r} in {entry.name} is not usable: "
                     f"{bad[d]}; dim {name!r} reads rows through the store's own order "
                     "(exact, slower) until the dashboard is captured again")
    return out, notes


def _copy_of(entry: Path, s: dict, d: int, lay: Layout,
             shard: Shard) -> tuple[dict[str, np.ndarray], bool, int]:
    """Shard `s`'s copy for dim d, mapped, its shapes checked against the shard's, with
    whether each key's rows are in raw order and the dim they are ordered by otherwise."""
    names = copy_files(s)[d]
    parts = {p: read_npy(entry / SHARDS / s["name"] / n) for p, n in zip(COPY_PARTS, names, strict=True)}
    n = shard.n_rows
    assert parts["keys"].shape == (lay.row_dims, n), "keys shape"
    assert parts["keys"].dtype == (np.uint8 if max(x.nkeys for x in lay.dims[:lay.row_dims]) <= 255
                                   else np.uint16), "keys dtype"  # (engine/copies.py key_dtype)
    assert parts["rows"].shape in ((n,), (0,)), "rows shape"
    assert parts["starts"].shape == (lay.dims[d].nkeys + 2,), "starts shape"
    assert parts["zones"].shape == (-(-n // s["copies"]["chunk"]), 2 * lay.row_dims), "zones shape"
    record = s["copies"]["dims"][str(d)]
    then = int(record.get("then", -1))  # (copies stored before rows were ordered by one: -1)
    assert then < lay.row_dims, "then"
    return parts, bool(record["by_raw"]), then


def base_table(layout: Layout, rinfos: list[np.ndarray]) -> tuple[np.ndarray, dict]:
    """The bucket bases (lineage/lattice.py `bases`) of every (raw row, step) the shards'
    `rinfos` code on the lattice, one row each, read-only (the kernels' `rbase`, shared by
    every shard), and {(raw row, step): its row}."""
    fine = {d.raw: d for d in layout.dims if d.kind == "fine" and d.raw >= 0}
    used = sorted({(rc, row[2]) for r in rinfos for rc, row in enumerate(np.asarray(r).tolist())
                   if row[0] != lattice.FLOAT})
    table = np.zeros((len(used), max((d.nkeys for d in fine.values()), default=0) + 1), np.int64)
    for i, (rc, j) in enumerate(used):
        b = lattice.bases(np.asarray(fine[rc].edges, np.float64), j)
        if b is None:  # (encode never chooses such a step)
            msg = f"raw row {rc} on a lattice of steps 1e{j}, whose bucket bases are not exact"
            raise ValueError(msg)
        table[i, :len(b)] = b
    table.setflags(write=False)
    return table, {u: i for i, u in enumerate(used)}


def kernel_arrays(arrays: tuple, layout: Layout, table: np.ndarray, index: dict) -> tuple:
    """A shard's stored per-row arrays (ROW_ARRAYS) as the kernels take them: `rinfo` with
    two more columns, each raw row's row of `table` (`base_table`) and its dim's no-value
    key, then the table itself, then lat8."""
    nkeys = {d.raw: d.nkeys for d in layout.dims if d.kind == "fine" and d.raw >= 0}
    rinfo = np.zeros((len(arrays[12]), 9), np.int64)
    for rc, row in enumerate(np.asarray(arrays[12]).tolist()):
        rinfo[rc] = (*row, index.get((rc, row[2]), -1), nkeys[rc])
    rinfo.setflags(write=False)
    return (*arrays[:12], rinfo, table, arrays[13])


def shard_row_files(s: dict) -> list[str]:
    return [f"{a}-{s['rows']}.npy" for a in ROW_ARRAYS]


def snapshot_files(s: dict, columns: list[str]) -> list[str]:
    return [f"{part_name(c)}.snap.arrow" for c in columns] if s["n_rows"] else []


def mapped_files(entry: Path, meta: dict) -> list[tuple[Path, dict]]:
    """Every file a loaded store maps, with its size and CRC32 from the manifest."""
    out = [(entry / name, f) for name, f in meta["files"].items()]
    detail = meta["layout"]["detail_columns"]
    for s in meta["shards"]:
        for name in shard_row_files(s) + snapshot_files(s, detail):
            out.append((entry / SHARDS / s["name"] / name, s["files"][name]))
    for p, f in out:
        if not isinstance(f, dict) or "size" not in f or "crc32" not in f:
            msg = f"the manifest's entry for {p.name} has no size and checksum"
            raise ValueError(msg)
        if ".." in p.relative_to(entry).parts:
            msg = f"the manifest names a file outside the entry: {p}"
            raise ValueError(msg)
    return out


def read_layout(entry: Path, meta: dict) -> Layout:
    """The layout of an entry's manifest `meta`, with its arrays (mapped)."""
    arrays = {k: np.asarray(read_npy(entry / f"g-{meta['tag']}.layout.{k}.npy"))
              for k in meta["layout_arrays"]}
    return Layout.from_json(meta["layout"], arrays)


def _store_from(entry: Path, meta: dict, dash: DashboardSpec) -> LineageStore:
    def arr(name: str) -> np.ndarray:
        return read_npy(entry / f"g-{meta['tag']}.{name}.npy")

    layout = read_layout(entry, meta)
    stored = {s["name"]: tuple(read_npy(entry / SHARDS / s["name"] / name) for name in shard_row_files(s))
              for s in meta["shards"]}
    table, index = base_table(layout, [a[12] for a in stored.values()])
    stored = {name: kernel_arrays(a, layout, table, index) for name, a in stored.items()}
    shards, start = [], 0
    for s in meta["shards"]:
        sd = entry / SHARDS / s["name"]
        arrays = stored[s["name"]]
        n = s["n_rows"]
        assert arrays[0].shape == (layout.row_dims, n), f"shard {s['name']} keys shape"
        assert arrays[4].shape[0] == len(layout.indexed_dims), f"shard {s['name']} index slots"
        assert arrays[7].shape[:2] == arrays[4].shape, f"shard {s['name']} fences shape"
        high16 = int(np.count_nonzero(np.asarray(arrays[12])[:, 0] == lattice.ULP48))  # (lattice.pack)
        assert arrays[1].shape[0] + arrays[8].shape[0] + arrays[9].shape[0] - high16 == layout.n_raw \
            == arrays[12].shape[0], f"shard {s['name']} raw rows"
        snapshot = None
        if layout.detail_columns and n:
            cols = [read_arrow(sd / name).column(0)
                    for name in snapshot_files(s, layout.detail_columns)]
            snapshot = pa.table(dict(zip(layout.detail_columns, cols, strict=True)))
            assert snapshot.num_rows == n, f"shard {s['name']} snapshot rows"
        shards.append(Shard(s["name"], start, n, arrays, snapshot, (s["file"], s["split"])))
        start += n
    cubes = {}
    for f, t in meta["cubes"]:
        parts = [arr(f"cube.{f}.{t}.{p}") if f"g-{meta['tag']}.cube.{f}.{t}.{p}.npy" in meta["files"]
                 else None for p in ("counts", "sums", "oks")]
        cubes[(f, t)] = Cube(parts[0], parts[1] if parts[1] is not None else np.zeros((0, 0)),
                             parts[2] if parts[2] is not None else np.zeros((0, 0), np.int64))
    base = Aggregates(np.asarray(arr("base_counts")), np.asarray(arr("base_sums")),
                      np.asarray(arr("base_oks")))
    keycounts = [np.asarray(arr(f"keycount.{d.name}")) for d in layout.dims]
    info = CaptureInfo(**meta["info"])
    name_unmatched_rows(layout, dash, base, info.unmatched)
    head = {k: v for k, v in meta.items() if k not in ("shards", "source", "files", "layout")}
    # (the source's files apart: the dimension tables' are few, and tell a change of them)
    head["source"] = {k: v for k, v in meta.get("source", {}).items() if k != "files"}
    return LineageStore(dash, layout, shards, meta["n_rows"], base, keycounts, cubes, info, entry,
                        manifest=head)


def name_unmatched_rows(layout: Layout, dash: DashboardSpec, base: Aggregates,
                        unmatched: dict[str, int]) -> None:
    """A view over a joined column `<join>.<c>` says `no_match:<join>` for the rows it does
    not show for a null value when all of them are the rows without a match on that join
    (or one before it in its chain: the join's key column is null on them): as many of
    them as unmatched rows, a subset of them (docs/protocol.md). Its reason `null` is
    renamed in `layout`; the rows counted are the same, under any filters."""
    for v in layout.views:
        spec_view = next((w for w in dash.views if w.name == v.name), None)
        field = getattr(spec_view, "field", None)
        j = dash.source.join_of(field) if field else None
        if j is None or "null" not in v.reasons or not unmatched.get(j.name):
            continue
        at = v.bar_off + (v.nbars + v.reasons.index("null")) * v.width
        if int(base.counts[at:at + v.width].sum()) == unmatched[j.name]:
            v.reasons[v.reasons.index("null")] = f"no_match:{j.name}"


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, tuple):
        return list(o)
    msg = f"cannot store {type(o).__name__} in a manifest"
    raise TypeError(msg)


def brushfire_version() -> str:
    from brushfire import __version__

    return __version__


__all__ = ["Cube", "LineageStore", "Shard", "assemble", "capture_key", "collect_garbage", "copy_files",
           "entry_dir", "files_fingerprint", "load_store", "locked", "prune_entries",
           "read_manifest", "source_key", "spec_hash", "write_manifest"]
