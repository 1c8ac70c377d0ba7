"""The memory the engine's optional per-session structures take, across every session of
the process, under one budget.

A session builds conditional cubes in the background (engine/builders.py); each session
keeps its own within SESSION_TILE_BYTES, but a server holds many sessions, so the cubes
of all of them (and those being built: their builders' accumulators too) are also
counted here, against `CUBE_MEMORY_ENV` (default: DEFAULT_CUBE_SHARE of the machine's
memory, at most DEFAULT_CUBE_CAP). A new cube that does not fit takes the room of the
least recently used cubes of any session; one larger than the whole budget is not built
(the update methods that need no cube answer instead). `/health` reports the bytes in use
and the budget (`usage`).

The registry keeps weak references to sessions: a session that is gone without being
closed costs nothing here, and its entries are dropped when next seen.

Freed memory is not always given back to the system: glibc's allocator keeps freed
blocks of its arenas (every background thread has one) for reuse, so a server whose
sessions built 1 GiB of cubes and closed kept ~400 MiB of RSS it no longer used. Once
sessions closing have freed TRIM_BYTES, `malloc_trim` runs as background work of the
engine's pool (in a quiet moment, never beside a reply: it locks each arena while it
returns its free pages, ~130 ms for 400 MiB).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import os
import threading
import weakref
from collections import OrderedDict

from brushfire.engine import parallel
from brushfire.sizes import environ_size

CUBE_MEMORY_ENV = "BRUSHFIRE_CUBE_MEMORY"  # e.g. "512MB"; "0" builds no conditional cubes
DEFAULT_CUBE_SHARE = 16  # a sixteenth of the memory,
DEFAULT_CUBE_CAP = 1 << 30  # and at most 1 GiB
TRIM_BYTES = 64 << 20  # freed by closed sessions before the allocator is asked to give memory back


def default_cap() -> int:
    """Bytes all sessions' conditional cubes may take: $BRUSHFIRE_CUBE_MEMORY, else a
    sixteenth of the memory, at most 1 GiB; the machine's, so a server of N processes
    (`serve --workers N`) gives each an Nth."""
    size = environ_size(CUBE_MEMORY_ENV)
    if size is not None:
        return size // parallel.processes()
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return (256 << 20) // parallel.processes()
    return min(DEFAULT_CUBE_CAP, total // DEFAULT_CUBE_SHARE) // parallel.processes()


class Budget:
    """Reservations of bytes by owners (sessions), least recently used first."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._lock = threading.Lock()
        self._held: OrderedDict[int, tuple[weakref.ref, object, int]] = OrderedDict()  # token ->
        self._used = 0
        self._tokens = itertools.count(1)

    def reserve(self, owner, key, nbytes: int) -> int | None:
        """A token for `nbytes` held by `owner` for its structure `key`, room made by
        dropping the least recently used reservations: their owners'
        `_drop_reserved(key, token)` is called (outside this budget's lock), and they
        forget that structure. None when `nbytes` exceeds the whole budget."""
        if nbytes > self.cap:
            return None
        victims = []
        with self._lock:
            while self._used + nbytes > self.cap and self._held:
                token, (ref, vkey, size) = self._held.popitem(last=False)
                self._used -= size
                victims.append((ref, vkey, token))
            token = next(self._tokens)
            self._held[token] = (weakref.ref(owner), key, nbytes)
            self._used += nbytes
        for ref, vkey, vtoken in victims:
            victim = ref()
            if victim is not None:
                victim._drop_reserved(vkey, vtoken)
        return token

    def resize(self, token: int, nbytes: int) -> bool:
        """Change a reservation's size (a build done: its accumulators are gone); False
        when it was dropped meanwhile."""
        with self._lock:
            held = self._held.get(token)
            if held is None:
                return False
            self._used += nbytes - held[2]
            self._held[token] = (held[0], held[1], nbytes)
            self._held.move_to_end(token)
            return True

    def holds(self, token: int | None) -> bool:
        with self._lock:
            return token in self._held

    def touch(self, token: int | None) -> None:
        """Mark a reservation as just used (the last to be dropped)."""
        with self._lock:
            if token in self._held:
                self._held.move_to_end(token)

    def release(self, token: int | None) -> None:
        with self._lock:
            held = self._held.pop(token, None) if token is not None else None
            if held is not None:
                self._used -= held[2]

    def release_owner(self, owner) -> int:
        """Every reservation of `owner` (a session closing), and those of owners gone;
        the bytes they held."""
        freed = 0
        with self._lock:
            for token, (ref, _, size) in list(self._held.items()):
                if ref() is owner or ref() is None:
                    del self._held[token]
                    freed += size
            self._used -= freed
        return freed

    def usage(self) -> dict[str, int]:
        with self._lock:
            dead = [t for t, (ref, _, _) in self._held.items() if ref() is None]
            for t in dead:
                self._used -= self._held.pop(t)[2]
            return {"bytes": self._used, "budget": self.cap, "structures": len(self._held)}


_CUBES: Budget | None = None
_ORDERS: Budget | None = None
_LOCK = threading.Lock()
_freed = [0, False]  # bytes freed since the last trim, and whether one is queued


def freed(nbytes: int, pool: parallel.Pool | None = None) -> None:
    """`nbytes` of structures were freed (a session closed): past TRIM_BYTES, queue a
    `malloc_trim` on the pool's background threads."""
    with _LOCK:
        _freed[0] += nbytes
        if _freed[0] < TRIM_BYTES or _freed[1]:
            return
        _freed[:] = [0, True]
    (pool or parallel.pool()).background(parallel.Job(iter([_trim]), lambda: None))


def _trim() -> None:
    """Give the allocator's free pages back to the system (glibc; elsewhere nothing)."""
    with _LOCK:
        _freed[1] = False
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


_LIBC: list = []


def _libc():
    if not _LIBC:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC.append(libc if hasattr(libc, "malloc_trim") else None)
        except OSError:
            _LIBC.append(None)
    return _LIBC[0]


def cubes() -> Budget:
    """The process's budget for conditional cubes (every session's, every dashboard's)."""
    global _CUBES
    if _CUBES is None:
        with _LOCK:
            if _CUBES is None:
                _CUBES = Budget(default_cap())
    return _CUBES


def orders() -> Budget:
    """The process's budget for details orders (engine/ordering.Orders: a column's rows in
    its order, for sorted details pages), every store's: the same cap as the cubes'."""
    global _ORDERS
    if _ORDERS is None:
        with _LOCK:
            if _ORDERS is None:
                _ORDERS = Budget(default_cap())
    return _ORDERS


def usage() -> dict[str, dict[str, int]]:
    """What the engine's memory budgets hold now, for /health: the conditional cubes of
    every session (bytes, budget, how many), the clustered key copies of every store
    (bytes reserved, the cap) and the details orders of every store (bytes, budget, how
    many)."""
    from brushfire.engine import copies

    return {"conditional_cubes": cubes().usage(), "key_copies": copies.usage(),
            "details_orders": orders().usage(), "process": process()}


def process() -> dict[str, int]:
    """The process's resident memory in bytes (Linux; empty elsewhere): all of it (`rss`),
    anonymous (`anon`: what the process built) and file-backed (`file`: pages of the
    memory-mapped stores and copies the kernel holds for it, which it may drop and read
    again)."""
    fields = {"VmRSS:": "rss", "RssAnon:": "anon", "RssFile:": "file"}
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:  # "VmRSS:\t  123456 kB"
                words = line.split()
                if words and words[0] in fields:
                    out[fields[words[0]]] = int(words[1]) * 1024
    except (OSError, ValueError, IndexError):
        return {}
    return out
