"""The lineage store: read-only arrays of one captured dashboard, shared by all sessions,
persisted to a cache directory keyed by the spec and a fingerprint of the source.

A cache entry is written to a temporary directory and renamed into place, with a
manifest (sizes and CRC32 of every file) written last, so a partial entry is never
seen; a corrupt one fails its checks on load and is never served.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from brushfire.errors import CacheError, CaptureError
from brushfire.lineage.arrays import Aggregates, CaptureInfo, Cube, Index, ViewLayout
from brushfire.spec.models import Dashboard

FORMAT_VERSION = 5  # 5: decimal columns converted to the nearest float (entries of 4 were off)
MANIFEST = "manifest.json"
SNAPSHOT = "snapshot.arrow"


@dataclass
class LineageStore:
    dashboard: Dashboard
    n_rows: int
    views: list[ViewLayout]
    codes: np.ndarray  # (N, V) uint16
    measures: np.ndarray  # (N, M) float64
    fkeys: np.ndarray  # (N, F) int32: row position / key per filter (see arrays.py)
    fy: np.ndarray  # (N, Y) float64: y values of rect brushes
    ycols: dict[str, int]  # rect filter -> column of fy
    indexes: dict[str, Index]
    cubes: dict[tuple[str, str], Cube]  # (filter name, target view) -> cube
    base: Aggregates  # every view over all rows
    snapshot: pa.Table | None  # detail columns in rid order (memory-mapped when loaded)
    info: CaptureInfo
    # the plain Spark queries' results when capture ran them for comparison (not persisted)
    base_query_results: dict[str, dict] | None = None

    def view(self, name: str) -> ViewLayout:
        for v in self.views:
            if v.name == name:
                return v
        raise KeyError(name)

    @property
    def nslots(self) -> int:
        last = self.views[-1]
        return last.bar_off + last.nbars + 1

    def parameter_domain(self, name: str) -> tuple[str, list]:
        """('values', choices) of a dropdown parameter, ('range', [lo, hi]) of a slider
        (times as ISO strings)."""
        ix = self.indexes[name]
        if ix.keys is not None:
            return "values", list(ix.keys)
        ends = [ix.values[0].item(), ix.values[-1].item()] if len(ix.values) else []
        return "range", [iso_time(x) for x in ends] if ix.value_type == "temporal" else ends

    def nbytes(self) -> dict[str, int]:
        """Bytes held per view / filter (index + cubes + its codes column), for reports."""
        n = self.n_rows
        out: dict[str, int] = {v.name: n * self.codes.itemsize for v in self.views}
        for name, ix in self.indexes.items():
            size = sum(a.nbytes for a in (ix.order, ix.block_starts, ix.values, ix.offsets)
                       if a is not None)
            out[name] = out.get(name, 0) + size
        for (src, _), cube in self.cubes.items():
            out[src] = out.get(src, 0) + cube.counts.nbytes + cube.sums.nbytes + cube.oks.nbytes
        out["_measures"] = self.measures.nbytes
        out["_filter_keys"] = self.fkeys.nbytes + self.fy.nbytes
        if self.snapshot is not None:
            out["_snapshot"] = self.snapshot.nbytes
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


def cache_key(dash: Dashboard, fingerprint: str) -> str:
    spec = dash.model_dump_json(exclude={"title"})
    return hashlib.sha256(f"{FORMAT_VERSION}|{spec}|{fingerprint}".encode()).hexdigest()[:20]


def entry_dir(cache_dir: str | Path, dash: Dashboard, fingerprint: str) -> Path:
    return Path(cache_dir) / f"{dash.name}-{cache_key(dash, fingerprint)}"


# --- save / load ------------------------------------------------------------------------


def save_store(store: LineageStore, directory: str | Path) -> Path:
    """Write the store to `directory` atomically (temp dir + rename, manifest last)."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".partial-", dir=directory.parent))
    arrays = _arrays_of(store)
    for name, arr in arrays.items():
        np.save(tmp / f"{name}.npy", np.ascontiguousarray(arr), allow_pickle=False)
    if store.snapshot is not None:
        with pa.OSFile(str(tmp / SNAPSHOT), "wb") as sink, \
                pa.ipc.new_file(sink, store.snapshot.schema) as writer:
            writer.write_table(store.snapshot)
    files = sorted(f.name for f in tmp.iterdir())
    meta = {
        "format_version": FORMAT_VERSION,
        "dashboard": store.dashboard.name,
        "n_rows": store.n_rows,
        "views": [asdict(v) for v in store.views],
        "indexes": {k: {"kind": ix.kind, "field": ix.field, "keys": ix.keys,
                        "value_type": ix.value_type} for k, ix in store.indexes.items()},
        "cubes": [list(k) for k in store.cubes],
        "ycols": store.ycols,
        "info": asdict(store.info),
        "files": {f: {"size": (tmp / f).stat().st_size} for f in files},
    }
    for f, crc in zip(files, _crcs([tmp / f for f in files]), strict=True):
        meta["files"][f]["crc32"] = crc
    (tmp / MANIFEST).write_text(json.dumps(meta, default=_json_default))
    if directory.exists():
        shutil.rmtree(directory)
    os.rename(tmp, directory)
    return directory


def load_store(directory: str | Path, dash: Dashboard) -> LineageStore:
    """Load a cache entry, checking every file's size and CRC32; CacheError if not sound."""
    directory = Path(directory)
    try:
        meta = json.loads((directory / MANIFEST).read_text())
    except (OSError, ValueError) as e:
        msg = f"no complete cache entry at {directory}: {e}"
        raise CacheError(msg) from None
    if meta.get("format_version") != FORMAT_VERSION:
        msg = f"cache entry {directory} has format {meta.get('format_version')}, need {FORMAT_VERSION}"
        raise CacheError(msg)
    files = meta["files"]
    paths = [directory / f for f in files]
    for p in paths:
        if not p.is_file() or p.stat().st_size != files[p.name]["size"]:
            msg = f"cache file {p} is missing or has the wrong size"
            raise CacheError(msg)
    arrays = {}
    with ThreadPoolExecutor(4) as pool:
        loaded = pool.map(_read_checked, [(p, files[p.name]["crc32"]) for p in paths])
        for p, value in zip(paths, loaded, strict=True):
            if p.suffix == ".npy":
                arrays[p.stem] = value
    snapshot = None
    if SNAPSHOT in files:
        snapshot = pa.ipc.open_file(pa.memory_map(str(directory / SNAPSHOT))).read_all()
    try:
        return _store_from(meta, arrays, snapshot, dash)
    except (KeyError, AssertionError, ValueError) as e:
        msg = f"cache entry {directory} is inconsistent: {e!r}"
        raise CacheError(msg) from None


def _arrays_of(store: LineageStore) -> dict[str, np.ndarray]:
    out = {"codes": store.codes, "measures": store.measures, "fkeys": store.fkeys, "fy": store.fy,
           "base_counts": store.base.counts,
           "base_sums": store.base.sums, "base_oks": store.base.oks}
    for name, ix in store.indexes.items():
        for part in ("order", "block_starts", "values", "offsets"):
            arr = getattr(ix, part)
            if arr is not None:
                out[f"index.{name}.{part}"] = arr
    for (src, tgt), cube in store.cubes.items():
        for part in ("counts", "sums", "oks"):
            out[f"cube.{src}.{tgt}.{part}"] = getattr(cube, part)
    return out


def _store_from(meta: dict, arrays: dict, snapshot: pa.Table | None, dash: Dashboard) -> LineageStore:
    n = meta["n_rows"]
    indexes = {}
    for name, d in meta["indexes"].items():
        parts = {p: arrays.get(f"index.{name}.{p}")
                 for p in ("order", "block_starts", "values", "offsets")}
        ix = Index(name, d["kind"], d["field"], keys=d["keys"], value_type=d["value_type"], **parts)
        ix.check(n)
        indexes[name] = ix
    cubes = {(s, t): Cube(*(arrays[f"cube.{s}.{t}.{p}"] for p in ("counts", "sums", "oks")))
             for s, t in meta["cubes"]}
    codes = arrays["codes"]
    assert codes.shape[0] == n
    return LineageStore(
        dashboard=dash, n_rows=n, views=[ViewLayout(**v) for v in meta["views"]], codes=codes,
        measures=arrays["measures"], fkeys=arrays["fkeys"], fy=arrays["fy"], ycols=meta["ycols"],
        indexes=indexes, cubes=cubes,
        base=Aggregates(arrays["base_counts"], arrays["base_sums"], arrays["base_oks"]),
        snapshot=snapshot, info=CaptureInfo(**meta["info"]),
    )


def _read_checked(item: tuple[Path, int]):
    """Read a file once into one buffer, check its CRC32 and, for .npy files, return the
    array as a view of that buffer (no second copy; the restart path reads gigabytes)."""
    path, crc = item
    buf = np.empty(path.stat().st_size, np.uint8)
    with path.open("rb") as f:
        if f.readinto(memoryview(buf)) != len(buf):
            msg = f"cache file {path} is shorter than it was"
            raise CacheError(msg)
    if zlib.crc32(buf) != crc:
        msg = f"cache file {path} fails its checksum"
        raise CacheError(msg)
    if path.suffix != ".npy":
        return None
    header = io.BytesIO(buf[:65_536].tobytes())
    fmt = np.lib.format
    version = fmt.read_magic(header)
    read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
    shape, fortran, dtype = read_header(header)
    count = int(np.prod(shape, dtype=np.int64))
    arr = buf[header.tell():header.tell() + count * dtype.itemsize].view(dtype)
    return arr.reshape(shape, order="F" if fortran else "C")


def _crcs(paths: list[Path]) -> list[int]:
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(lambda p: zlib.crc32(p.read_bytes()), paths))


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    msg = f"cannot store {type(o).__name__} in a manifest"
    raise TypeError(msg)


def iso_time(micros: int) -> str:
    """UTC microseconds as an ISO instant."""
    return datetime.fromtimestamp(micros / 1e6, UTC).isoformat()
