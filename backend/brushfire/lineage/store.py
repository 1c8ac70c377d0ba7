"""The lineage store: one captured dashboard's read-only arrays, shared by all sessions,
kept in a cache entry keyed by the spec and a fingerprint of the source.

An entry is a directory:
- shards/<name>/*.npy, snapshot.arrow: per-row arrays, written by Spark's executors
  (capture/shards.py), memory-mapped on load, so a restart copies nothing and the OS pages
  in only what is touched;
- base.npy, keycount.*.npy, cube.*.npy, layout.*.npy: the small global arrays the driver
  sums from the shards' partial results;
- manifest.json, written last: the layout, the shards, the size and CRC32 of every file,
  the cache key and a hash of the spec.
An entry is built in a `.partial-*` directory and renamed into place, so a partial entry
is never seen; on load every file's size and checksum, and the key, are checked, and an
entry that fails is never served.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from brushfire.errors import CacheError, CaptureError
from brushfire.lineage.arrays import Aggregates, CaptureInfo
from brushfire.lineage.layout import CaptureConfig, Layout, ViewLayout
from brushfire.spec.models import DashboardSpec
from brushfire.values import format_instant

FORMAT_VERSION = 9  # 9: a time field's categorical bars and dropdown choices as ISO
# instants (the layout's value_type 'temporal'); 8: fence keys of the block orders
MANIFEST = "manifest.json"
SHARDS = "shards"
SNAPSHOT = "snapshot.arrow"
PARTIALS = "partials.npz"


@dataclass
class Cube:
    """Prefix sums over a dim's cube blocks of one target view's aggregates:
    counts[j] = rows of cube blocks 0..j-1, shape (blocks + 1, the view's nslots)."""

    counts: np.ndarray
    sums: np.ndarray  # (0, 0) when the target has no measure
    oks: np.ndarray


@dataclass
class Shard:
    name: str
    start: int  # global rid of its first row
    n_rows: int
    arrays: tuple  # (keys, raw, meas, order, optr, zmin, zmax, fences), as the kernels take them
    snapshot: pa.Table | None

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
            if d.kind == "dict":
                cache[name] = ("times" if d.value_type == "temporal" else "values", list(d.values))
            else:
                lo, hi = self.value_range(f.dims[0])
                ends = [] if lo is None else [format_instant(lo), format_instant(hi)] \
                    if d.value_type == "temporal" else [lo, hi]
                cache[name] = ("range", ends)
        return cache[name]

    def value_range(self, dim: int) -> tuple:
        """Smallest and largest value of a dense or fine dim (None, None when empty)."""
        d = self.layout.dims[dim]
        counts = self.keycounts[dim][:d.nkeys]
        present = np.flatnonzero(counts)
        if not len(present):
            return None, None
        if d.kind == "dense":
            return d.values[present[0]], d.values[present[-1]]
        lo = hi = None  # fine: the raw values of the first and last buckets
        if not d.rows:  # no raw values kept: the buckets' edges
            first, last = present[0], present[-1]
            edges = d.edges + [float("inf")]
            lo, hi = edges[max(first, 1)], edges[last + 1]
            cast = int if d.value_type in ("int", "temporal") else float
            return cast(lo) if lo != float("inf") else None, cast(hi) if hi != float("inf") else None
        for s in self.shards:
            raw = s.arrays[1][d.raw]
            if len(raw):
                ok = raw[~np.isnan(raw)]
                if len(ok):
                    lo = ok.min() if lo is None else min(lo, ok.min())
                    hi = ok.max() if hi is None else max(hi, ok.max())
        cast = int if d.value_type in ("int", "temporal") else float
        return cast(lo), cast(hi)

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
            return schema.empty_table() if schema is not None else pa.table({})
        table = pa.concat_tables(parts, promote_options="permissive")
        back = np.argsort(np.concatenate(positions), kind="stable")
        return table.take(pa.array(back))

    def nbytes(self) -> dict[str, int]:
        """Bytes per part of the store, for reports: per dim (keys, raw values, index
        positions), stored measures, cubes, and the detail snapshot."""
        out: dict[str, int] = {}
        lay = self.layout
        idims = lay.indexed_dims
        for i, d in enumerate(lay.dims):
            if not d.rows:
                continue
            size = 2 * self.n_rows
            if d.kind == "fine":
                size += 8 * self.n_rows
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
        if self.snapshot:
            out["_snapshot"] = sum(s.snapshot.nbytes for s in self.shards if s.snapshot is not None)
        return out


# --- cache keys -------------------------------------------------------------------------


def source_fingerprint(path: str) -> str:
    """Names, sizes and modification times of the source file(s): changes when data does."""
    p = Path(path)
    if not p.exists():
        msg = f"the source {path} does not exist (source.path in the spec)"
        raise CaptureError(msg)
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        h.update(f"{f}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


DISPLAY_ONLY = ("title", "scale", "reverse")  # how a view is drawn, never what it counts


def spec_hash(dash: DashboardSpec) -> str:
    """A hash of what the spec asks to capture: titles and display options (scale,
    reverse) left out, so editing them keeps the cache; keys sorted, so the order of a
    mapping in the YAML does not matter."""
    d = dash.model_dump(mode="json", exclude={"title"})
    for v in d["views"]:
        for k in DISPLAY_ONLY:
            v.pop(k, None)
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()


def cache_key(dash: DashboardSpec, fingerprint: str, config=None) -> str:
    """The entry's key: format, spec, source and the capture's sizes (CaptureConfig)."""
    sizes = json.dumps(asdict(config or CaptureConfig()), sort_keys=True)
    text = f"{FORMAT_VERSION}|{spec_hash(dash)}|{fingerprint}|{sizes}"
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def entry_dir(cache_dir: str | Path, dash: DashboardSpec, fingerprint: str, config=None) -> Path:
    return Path(cache_dir) / f"{dash.name}-{cache_key(dash, fingerprint, config)}"


# --- write --------------------------------------------------------------------------------


def assemble(staging: Path, layout: Layout, summaries: list, info: CaptureInfo,
             dash: DashboardSpec, key: str, progress=None) -> dict:
    """Finish a cache entry whose shards the executors wrote into `staging/shards`: sum
    the shards' partial results into the global arrays and write them; returns the
    manifest for `write_manifest` (written last). Only the shards in `summaries` (the
    tasks' reported outputs) are kept."""
    shards_dir = staging / SHARDS
    keep = {s.name for s in summaries}
    for d in (shards_dir.iterdir() if shards_dir.exists() else []):
        if d.name not in keep:  # a failed or speculative attempt's leftovers
            shutil.rmtree(d, ignore_errors=True)
    summaries = sorted(summaries, key=lambda s: s.name)
    totals: dict[str, np.ndarray] = {}
    for i, s in enumerate(summaries):
        if progress:
            progress("merging shard results", i / max(1, len(summaries)))
        with np.load(shards_dir / s.name / PARTIALS) as z:
            for k in z.files:
                totals[k] = totals[k] + z[k] if k in totals else z[k].copy()
        os.remove(shards_dir / s.name / PARTIALS)
        s.files.pop(PARTIALS, None)
    arrays = {f"layout.{k}": v for k, v in layout.arrays.items()}
    base = totals.get("base", np.zeros((3, layout.nslots)))
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
                if cells is None:
                    continue
                # drop the no-value block, then prefix sums over blocks
                cells = cells.reshape(nblocks + 1, width)[:nblocks]
                prefix = np.zeros((nblocks + 1, width), cells.dtype)
                np.cumsum(cells, axis=0, out=prefix[1:])
                arrays[f"cube.{f.name}.{t}.{part}"] = prefix
            cubes.append([f.name, t])
    files = {}
    for name, arr in arrays.items():
        from brushfire.capture.shards import write_npy

        files[f"{name}.npy"] = write_npy(staging / f"{name}.npy", arr)
    info.n_rows = sum(s.n_rows for s in summaries)
    start = 0
    shards = []
    for s in summaries:
        shards.append({"name": s.name, "start": start, "n_rows": s.n_rows, "files": s.files})
        start += s.n_rows
    meta = {
        "format_version": FORMAT_VERSION,
        "dashboard": dash.name,
        "cache_key": key,
        "spec_sha256": spec_hash(dash),
        "brushfire_version": _version(),
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),  # (orders captures)
        "n_rows": info.n_rows,
        "layout": layout.to_json(),
        "layout_arrays": sorted(layout.arrays),
        "cubes": cubes,
        "info": asdict(info),
        "files": files,
        "shards": shards,
    }
    return meta


def write_manifest(staging: Path, meta: dict) -> None:
    (staging / MANIFEST).write_text(json.dumps(meta, default=_json_default))


def publish(staging: Path, directory: Path) -> Path:
    """Rename a finished entry into place (replacing an older one of the same key)."""
    if directory.exists() or directory.is_symlink():
        old = directory.with_name(f".old-{directory.name}-{os.getpid()}")
        os.rename(directory, old)
        _remove(old)
    os.rename(staging, directory)
    return directory


def prune(cache_dir: Path, dashboard: str, keep: Path) -> list[Path]:
    """Remove the other entries of `dashboard` (superseded by `keep`), and partial entries
    left by captures that were killed; returns what was removed. Processes that still map
    a removed entry keep reading it (the files live until unmapped)."""
    removed = []
    for p in cache_dir.iterdir() if cache_dir.exists() else []:
        if p == keep:
            continue
        superseded = p.name.startswith(f"{dashboard}-") and len(p.name) == len(dashboard) + 21
        stale = p.name.startswith((".partial-", ".old-")) and _age(p) > 24 * 3600
        if superseded or stale:
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


# --- load --------------------------------------------------------------------------------


def load_store(directory: str | Path, dash: DashboardSpec, key: str | None = None,
               verify: bool = True) -> LineageStore:
    """Load a cache entry, checking its key (when given), every file's size and CRC32;
    CacheError if it is not sound. Arrays are memory-mapped."""
    directory = Path(directory)
    try:
        meta = json.loads((directory / MANIFEST).read_text())
        if not isinstance(meta, dict):
            msg = "the manifest is not a JSON object"
            raise ValueError(msg)
        if meta.get("format_version") != FORMAT_VERSION:
            msg = f"format {meta.get('format_version')}, need {FORMAT_VERSION}"
            raise ValueError(msg)
        if key is not None and meta.get("cache_key") != key:
            msg = (f"it was written for cache key {meta.get('cache_key')}, not {key} "
                   "(copied from another spec or source?)")
            raise ValueError(msg)
        if meta.get("spec_sha256") != spec_hash(dash) or meta.get("dashboard") != dash.name:
            msg_0 = "it was captured for another spec"
            raise ValueError(msg_0)
        files = _all_files(directory, meta)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        msg = f"cache entry {directory} is not usable: {e}"
        raise CacheError(msg) from None
    for path, want in files:
        try:
            size = path.stat().st_size
        except OSError:
            size = -1
        if not path.is_file() or size != want["size"]:
            msg = f"cache file {path} is missing or has the wrong size"
            raise CacheError(msg)
    if verify:
        with ThreadPoolExecutor(4) as pool:
            for (path, want), crc in zip(files, pool.map(_crc, [p for p, _ in files]), strict=True):
                if crc != want["crc32"]:
                    msg = f"cache file {path} fails its checksum"
                    raise CacheError(msg)
    try:
        return _store_from(directory, meta, dash)
    except (KeyError, ValueError, TypeError, AssertionError, OSError) as e:
        msg = f"cache entry {directory} is inconsistent: {e!r}"
        raise CacheError(msg) from None


def _all_files(directory: Path, meta: dict) -> list[tuple[Path, dict]]:
    out = [(directory / name, f) for name, f in meta["files"].items()]
    for s in meta["shards"]:
        out += [(directory / SHARDS / s["name"] / name, f) for name, f in s["files"].items()]
    for p, f in out:
        if not isinstance(f, dict) or "size" not in f or "crc32" not in f:
            msg = f"the manifest's entry for {p.name} has no size and checksum"
            raise ValueError(msg)
        if ".." in p.relative_to(directory).parts:
            msg = f"the manifest names a file outside the entry: {p}"
            raise ValueError(msg)
    return out


def _mapped(path: Path) -> np.ndarray:
    """A stored array, its pages read from the file as used (read-only), as a plain ndarray:
    np.memmap's Python hooks run on every slice, ~1 µs each, tens of times per update."""
    return np.load(path, mmap_mode="r", allow_pickle=False).view(np.ndarray)


def _store_from(directory: Path, meta: dict, dash: DashboardSpec) -> LineageStore:
    def arr(name: str) -> np.ndarray:
        return _mapped(directory / f"{name}.npy")

    layout_arrays = {k: np.asarray(arr(f"layout.{k}")) for k in meta["layout_arrays"]}
    layout = Layout.from_json(meta["layout"], layout_arrays)
    shards = []
    for s in meta["shards"]:
        sd = directory / SHARDS / s["name"]
        arrays = tuple(_mapped(sd / f"{p}.npy")
                       for p in ("keys", "raw", "meas", "order", "optr", "zmin", "zmax", "fences"))
        n = s["n_rows"]
        assert arrays[0].shape == (layout.row_dims, n), f"shard {s['name']} keys shape"
        assert arrays[4].shape[0] == len(layout.indexed_dims), f"shard {s['name']} index slots"
        assert arrays[7].shape[:2] == arrays[4].shape, f"shard {s['name']} fences shape"
        snapshot = None
        if SNAPSHOT in s["files"]:
            snapshot = pa.ipc.open_file(pa.memory_map(str(sd / SNAPSHOT))).read_all()
            assert snapshot.num_rows == n, f"shard {s['name']} snapshot rows"
        shards.append(Shard(s["name"], s["start"], n, arrays, snapshot))
    cubes = {}
    for f, t in meta["cubes"]:
        parts = [arr(f"cube.{f}.{t}.{p}") if f"cube.{f}.{t}.{p}.npy" in meta["files"] else None
                 for p in ("counts", "sums", "oks")]
        cubes[(f, t)] = Cube(parts[0], parts[1] if parts[1] is not None else np.zeros((0, 0)),
                             parts[2] if parts[2] is not None else np.zeros((0, 0), np.int64))
    base = Aggregates(np.asarray(arr("base_counts")), np.asarray(arr("base_sums")),
                      np.asarray(arr("base_oks")))
    keycounts = [np.asarray(arr(f"keycount.{d.name}")) for d in layout.dims]
    info = CaptureInfo(**meta["info"])
    return LineageStore(dash, layout, shards, meta["n_rows"], base, keycounts, cubes, info, directory)


def _crc(path: Path) -> int:
    crc = 0
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(8 << 20):
            crc = zlib.crc32(chunk, crc)
    return crc


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    msg = f"cannot store {type(o).__name__} in a manifest"
    raise TypeError(msg)


def _version() -> str:
    from brushfire import __version__

    return __version__


__all__ = ["Cube", "LineageStore", "Shard", "assemble", "cache_key", "entry_dir",
           "load_store", "prune", "publish", "source_fingerprint", "spec_hash", "write_manifest"]
