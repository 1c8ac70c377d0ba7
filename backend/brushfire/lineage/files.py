"""Files of the lineage store: written once, checksummed, renamed into place.

Every file of a cache entry is written here (by capture's executors and its driver) and
described by `{"size": bytes, "crc32": int}`, which the manifest keeps and the loader
checks. A file is written under a temporary name in its directory and renamed, so a
reader never sees half of one. Pure numpy and pyarrow: runs on Spark's executors.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
import uuid
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa


def part_name(column: str) -> str:
    """A column's file-name stem in a shard: readable and safe whatever the column is called."""
    safe = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in column)[:40]
    return f"{safe}-{hashlib.sha1(column.encode()).hexdigest()[:8]}"


def write_npy(path: Path, arr: np.ndarray) -> dict:
    """Write `arr` as .npy (no copy of the data) and return its size and CRC32."""
    arr = np.ascontiguousarray(arr)
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, np.lib.format.header_data_from_array_1_0(arr))
    header = head.getvalue()
    data = memoryview(arr.reshape(-1).view(np.uint8)) if arr.size else b""
    with _atomic(path) as f:
        f.write(header)
        f.write(data)
    return {"size": len(header) + len(data), "crc32": zlib.crc32(data, zlib.crc32(header))}


def write_bytes(path: Path, data: bytes) -> dict:
    with _atomic(path) as f:
        f.write(data)
    return {"size": len(data), "crc32": zlib.crc32(data)}


def write_arrow(path: Path, table: pa.Table) -> dict:
    """Write `table` as an Arrow IPC file (memory-mapped on load)."""
    tmp = _tmp(path)
    try:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return file_crc(path)


def file_crc(path: Path) -> dict:
    crc, size = 0, 0
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            crc = zlib.crc32(chunk, crc)
            size += len(chunk)
    return {"size": size, "crc32": crc}


def stat_stamp(path: Path) -> list[int]:
    """What the file system says of a file that changes whenever its bytes do: size,
    modification and change times (ns), inode and device. Writing to a file moves its
    change time, which no user call sets back; a copy or a replacement is a new inode."""
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


_HEADERS = threading.Lock()  # np.load parses an .npy header with ast.literal_eval, which
# CPython 3.11 does not run safely in two threads at once ("SystemError: AST constructor
# recursion depth mismatch": a capture's copies are built by a thread per core)


# A mapped file holds a file descriptor while it is mapped (Python's mmap keeps one): a
# store of thousands of small shards (a partitioned dataset of small files) would hold
# tens of thousands, beyond the process's limit, and twice as many while a reload serves
# the new capture beside the old one. Files this small are read into memory instead.
SMALL_FILE = 64 << 10


def read_npy(path: Path) -> np.ndarray:
    """A stored array, its pages read from the file as used (read-only), as a plain
    ndarray: np.memmap's Python hooks run on every slice, ~1 µs each. A small file
    (SMALL_FILE) is read whole, holding no file descriptor."""
    with _HEADERS:
        if os.path.getsize(path) <= SMALL_FILE:
            out = np.load(path, allow_pickle=False)
            out.flags.writeable = False
            return out
        return np.load(path, mmap_mode="r", allow_pickle=False).view(np.ndarray)


def read_arrow(path: Path) -> pa.Table:
    if os.path.getsize(path) <= SMALL_FILE:  # (as read_npy: no file descriptor held)
        return pa.ipc.open_file(pa.py_buffer(Path(path).read_bytes())).read_all()
    return pa.ipc.open_file(pa.memory_map(str(path))).read_all()


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")


class _atomic:
    """Open a temporary file beside `path`; on a clean exit, rename it to `path`."""

    def __init__(self, path: Path) -> None:
        self.path, self.tmp = Path(path), _tmp(Path(path))

    def __enter__(self):
        self.f = open(self.tmp, "wb")  # noqa: SIM115 (closed in __exit__)
        return self.f

    def __exit__(self, kind, *_) -> None:
        self.f.close()
        if kind is None:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)
