"""Checking a cache entry's files when it is loaded (lineage/store.py `load_store`): each
file's CRC32 against the manifest, read only when the file changed since it last passed
(`Checked`, the entry's `checked.json`), and the files it did not read asked into the page
cache in the background (`prefetch`)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from brushfire.lineage.files import stat_stamp, write_bytes

PREFETCH_STEP = 2 << 20  # bytes per read-ahead request: Linux caps one at its window


def prefetch(paths: list[Path]) -> threading.Thread:
    """Ask the kernel to read `paths` into the page cache, in order, on a daemon thread
    (posix_fadvise WILLNEED, a PREFETCH_STEP at a time: the kernel reads ahead while the
    process goes on; pages already cached cost nothing). Not the process's memory: the
    cache's, which the kernel gives back under pressure."""
    def run() -> None:
        with contextlib.suppress(AttributeError, OSError):  # the lowest CPU priority
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                for at in range(0, os.fstat(fd).st_size, PREFETCH_STEP):
                    os.posix_fadvise(fd, at, PREFETCH_STEP, os.POSIX_FADV_WILLNEED)
            except (OSError, AttributeError):  # (no posix_fadvise: not Linux)
                return
            finally:
                os.close(fd)

    thread = threading.Thread(target=run, name="brushfire-prefetch", daemon=True)
    thread.start()
    return thread


class Checked:
    """The files of an entry whose CRC32 passed, each with its `stat_stamp` then
    (`checked.json`): a file whose stamp and manifest checksum are unchanged is not read
    again. The record is only ever a shortcut: a missing, unreadable or foreign one means
    reading every file, and one that cannot be written is not an error."""

    FILE = "checked.json"

    def __init__(self, entry: Path) -> None:
        self.entry = entry
        try:
            known = json.loads((entry / self.FILE).read_text())
            self.known = known if isinstance(known, dict) else {}
        except (OSError, ValueError):
            self.known = {}
        self.now: dict[str, list[int]] = {}  # what passed in this load
        self.unread: list[Path] = []  # ... without being read (unchanged since checked)

    def first_bad(self, files: list[tuple[Path, int]]) -> Path | None:
        """The first of `files` (path, the manifest's CRC32) that is missing or fails its
        checksum, reading only those changed since they last passed; None when all pass."""
        todo = []
        for path, want in files:
            name = path.relative_to(self.entry).as_posix()
            try:
                stamp = [want, *stat_stamp(path)]
            except OSError:
                return path
            if self.known.get(name) == stamp:
                self.now[name] = stamp
                self.unread.append(path)
            else:
                todo.append((path, name, stamp))  # stamped before reading: a write meanwhile moves it
        with ThreadPoolExecutor(4) as pool:
            for (path, name, stamp), crc in zip(todo, pool.map(_crc, [p for p, _, _ in todo]), strict=True):
                if crc != stamp[0]:
                    return path
                self.now[name] = stamp
        return None

    def save(self) -> None:
        """Record what passed in this load (only that: files no longer used drop out)."""
        with contextlib.suppress(OSError):
            write_bytes(self.entry / self.FILE, json.dumps(self.now).encode())


def _crc(path: Path) -> int:
    crc = 0
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(8 << 20):
            crc = zlib.crc32(chunk, crc)
    return crc
