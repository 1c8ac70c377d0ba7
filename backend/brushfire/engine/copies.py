"""Clustered key copies: Smoke's backward index stored with its payload.

The store keeps each row's keys once, in row order, and per indexed dim a block-wise key
order. Rows reached through that order (an update's changed keys, a filter's rows) are
spread over the shard: at 30M rows a move reaches about 1 % of them, and each costs one
memory line per column it reads, about 80 ns. A clustered copy of a shard for dim d holds
every kept dim's keys with the shard's rows ordered by their key on d (a fine dim's: then
by raw value, so that a bound inside a key splits its run in two), the shard row of each
position (only when raw values or stored measures are read), and where each key's rows
start. A key range of d is then one run per shard, read sequentially: about what a
row costs in a scan.

Copies are built once, at the end of a capture (capture/copies.py: per shard, in
parallel, written into the store's shard directories with the store's checksums) and
memory-mapped on load: a restart builds nothing. They are file-backed pages, which the
kernel may drop and read again, so they are not counted against the cap below (that is
for anonymous memory); /health reports their bytes as `mapped`. A copy file that is
missing or fails its checksum leaves its dim without copies: it reads rows through the
store's own order (exact, slower), and the loader says so.

A store captured before copies were stored (its manifest records none) gets them as it
used to: built in memory in the background (a shard per chunk, never ahead of a reply)
when the store is first used, under a memory cap shared by the process's stores;
`by_keys` uses a dim's copy once all of its shards are done, and the store's own order
until then.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from numba.typed import List

from brushfire.engine import kernels as K
from brushfire.engine import parallel
from brushfire.sizes import environ_size, format_size

if TYPE_CHECKING:
    from brushfire.workload import Workload

COPY_MEMORY_ENV = "BRUSHFIRE_COPY_MEMORY"  # e.g. "4GB"; "0" builds none


_NO_RAW = np.empty(0, np.float64)  # a copy not sorted by raw value within its keys
_reserved = [0]  # bytes the process's copies built in memory take, all stores together
_mapped = [0]  # bytes of the process's copies mapped from stores' files
_reserved_lock = threading.Lock()


def reserve(candidates: list[int], n_rows: int, per_row: int) -> tuple[list[int], int]:
    """The dims of one store that get a copy (`choose_dims`) under what is left of the
    process's cap once other stores' copies are counted (a server of many dashboards
    shares one cap), and the bytes reserved for them."""
    with _reserved_lock:
        dims = choose_dims(candidates, n_rows, per_row, max(0, default_cap() - _reserved[0]))
        size = len(dims) * n_rows * per_row
        _reserved[0] += size
    return dims, size


def _release(size: int, counter: list[int] = _reserved) -> None:
    with _reserved_lock:
        counter[0] -= size


def usage() -> dict[str, int]:
    """For /health: bytes reserved by the process's copies built in memory (all stores)
    and their cap, and bytes of copies mapped from stores' files (file-backed pages the
    kernel may evict: not under the cap)."""
    with _reserved_lock:
        return {"bytes": _reserved[0], "budget": default_cap(), "mapped": _mapped[0]}


def candidate_dims(lay) -> list[int]:
    """The dims that get a copy built in memory (a store captured before copies were
    stored): the declared filters' indexed dims with per-row keys, in the layout's order
    (the updates read rows through them; lineage queries, rarer, go without). `choices`
    says why each dim does or does not; a capture also weighs the spec's workload."""
    return [d for d, got, _ in choices(lay) if got]


def choices(lay, n_rows: int = 0, workload: Workload | None = None,
            default_budget: int | None = None) -> list[tuple[int, bool, str]]:
    """Per dim of the layout: (dim, gets a copy, why), from the declared interactions (the
    filters: brushes, selections, parameters), what capture kept per row and, when the
    spec records a workload (brushfire/workload.py), how often its trace changes each
    filter — a dim no filter of the trace changes gets none — and the copies' byte budget
    (the workload's, else `default_budget`), spent on the most changed dims first (a copy
    costs about `row_bytes` per row of `n_rows`). Pure."""
    out: list[tuple[int, bool, str]] = []
    filtered = list(dict.fromkeys(d for f in lay.filters for d in f.dims))
    wanted: list[tuple[int, str, int]] = []  # (dim, why, messages of the trace)
    moved = dict(workload.moves) if workload is not None else {}
    for d in filtered:
        names = ", ".join(f"{f.name} ({f.kind.replace('_', ' ')})" for f in lay.filters if d in f.dims)
        if d >= lay.row_dims:
            out.append((d, False, f"filtered by {names}, but its keys are kept as cubes only "
                                  "(memory budget): no rows to copy"))
        elif not lay.dims[d].indexed:
            out.append((d, False, f"filtered by {names}, but not indexed (its filter is "
                                  "answered by scans and cubes)"))
        else:
            moves = sum(moved.get(f.name, 0) for f in lay.filters if d in f.dims)
            wanted.append((d, f"filtered by {names}", moves))
    traced = workload is not None and workload.trace is not None
    if traced:  # the most changed first (ties: the layout's order)
        wanted.sort(key=lambda w: -w[2])
    each = n_rows * row_bytes(lay.row_dims, keeps_rows(lay), 0, key_dtype(lay).itemsize)
    declared = workload is not None and workload.copy_budget is not None
    budget = workload.copy_budget if declared else default_budget
    which = "the copy budget" if declared else ("the default copy budget (half of the capturing "
                                                "machine's memory; the spec's workload.copy_budget sets it)")
    left = budget
    for d, why, moves in wanted:
        if traced:
            share = moves / workload.messages if workload.messages else 0.0
            why += f"; {moves:,} of the trace's {workload.messages:,} filter changes ({share:.0%})"
            if not moves:
                out.append((d, False, why + ": the trace never changes it (its changes read "
                                            "the store's own order)"))
                continue
        if left is not None and each > left:
            out.append((d, False, why + f": over {which} ({format_size(budget)}; a copy takes "
                                        f"about {format_size(each)})"))
            continue
        if left is not None:
            left -= each
        out.append((d, True, why))
    out.sort(key=lambda c: filtered.index(c[0]))
    out += [(d, False, "no filter reads it (its keys ride in every copy's rows)")
            for d in range(len(lay.dims)) if d not in filtered]
    return out


def then_dim(lay, d: int, workload: Workload | None = None) -> int:
    """The dim by whose keys dim d's copy orders each key's rows (kernels.cluster's
    `then`), or -1, so that while d's filter moves beside that dim's, a key's run is read
    only where that filter passes (kernels `_narrowed`: an interval's keys, so only dims a
    brush or a range parameter filters): with a workload's trace, the one whose filters
    are most often active while d's move (none ever: as without one); else the one that
    follows d in the filters' order (the first after the last). None for a fine dim (its
    copy keeps each key's rows in raw order, for its edge buckets) or a dim no other
    filter is beside. Pure."""
    if d >= lay.row_dims or lay.dims[d].kind == "fine":
        return -1
    filtered = [e for e in dict.fromkeys(e for f in lay.filters for e in f.dims) if e < lay.row_dims]
    if d not in filtered:
        return -1
    ranged = {e for f in lay.filters if f.kind in RANGE_FILTERS for e in f.dims}
    after = [e for e in filtered[filtered.index(d) + 1:] + filtered[:filtered.index(d)] if e in ranged]
    if not after:
        return -1
    if workload is not None and workload.trace is not None:
        names = {e: [f.name for f in lay.filters if e in f.dims] for e in filtered}
        beside = {e: sum(workload.besides(a, b) for a in names[d] for b in names[e]) for e in after}
        best = max(after, key=lambda e: beside[e])  # (ties: the first in `after`)
        if beside[best]:
            return best
    return after[0]


def then_text(lay, d: int, workload: Workload | None = None) -> str:
    """What `then_dim` chose for dim d's copy and why, as `brushfire capture` says it ("":
    nothing). Pure."""
    e = then_dim(lay, d, workload)
    if e < 0:
        return ""
    names = {x: [f.name for f in lay.filters if x in f.dims] for x in (d, e)}
    traced = workload is not None and workload.trace is not None
    moves = sum(workload.besides(a, b) for a in names[d] for b in names[e]) if traced else 0
    why = f"{moves:,} of the trace's changes of {', '.join(names[d])} are beside it" if moves \
        else "the next filter in the dashboard's order"
    other = ", ".join(names[e])
    return f"; each key's rows ordered by {other}'s keys ({why}): while {other} filters, a " \
           "move reads only the rows it passes"


def stored_budget() -> int:
    """The bytes of copies a capture stores when the spec's workload sets no budget: half
    of this machine's memory — the store's own pages and the server need the rest of the
    page cache (copies past it would be read from disk again and again)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def keeps_rows(lay) -> bool:
    """Do a layout's copies keep each position's shard row? Where raw values (a fine dim)
    or stored measures are read."""
    return bool(lay.n_meas) or any(d.kind == "fine" for d in lay.dims[:lay.row_dims])


def default_cap() -> int:
    """Bytes the copies built in memory may take: $BRUSHFIRE_COPY_MEMORY, else a quarter
    of the memory; the machine's, so a server of N processes (`serve --workers N`, each
    building its own) gives each an Nth. (Copies stored at capture are mapped, shared.)"""
    size = environ_size(COPY_MEMORY_ENV)
    if size is not None:
        return size // parallel.processes()
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4 // parallel.processes()
    except (ValueError, OSError, AttributeError):
        return (2 << 30) // parallel.processes()


def row_bytes(row_dims: int, rows_kept: bool, hist_slots: int = 0, key_bytes: int = 2) -> int:
    """Bytes per row of one copy (rounded up): a key per kept dim (`key_bytes`: 1 where
    `key_dtype` is uint8), the shard row when kept, and its share of the grid chunks' zone
    maps and histograms (two uint16 keys per dim and `hist_slots` uint16 counts per CHUNK
    rows)."""
    return key_bytes * row_dims + (4 if rows_kept else 0) + -(-2 * (2 * row_dims + hist_slots) // K.CHUNK)


def key_dtype(lay) -> np.dtype:
    """The dtype of a layout's copies' keys: uint8 when every dim kept per row has at most
    255 keys (and the no-value key, 255 at most, fits a byte), else uint16 (the store's).
    One dtype for all of a copy's dims: the kernels read them as one 2-D array."""
    nkeys = [d.nkeys for d in lay.dims[:lay.row_dims]]
    return np.dtype(np.uint8 if nkeys and max(nkeys) <= 255 else np.uint16)


RANGE_FILTERS = ("interval", "rect", "param_range")  # filters tested as an interval of keys
HIST_SLOTS = 2048  # the most slots (all views' bars) a copy keeps chunk histograms of: 2 B/row


def hist_slots(L: tuple) -> int:
    """The slots a copy's chunk histograms hold for layout arrays L (every view's bars and
    its dropped rows), or 0 where they would take more than HIST_SLOTS (large 2-D views:
    their complements are left to the cubes)."""
    nbars, bar_off = L[5], L[6]
    slots = int(bar_off[-1] + nbars[-1] + 1) if len(nbars) else 0
    return slots if slots <= HIST_SLOTS else 0


def choose_dims(candidates: list[int], n_rows: int, per_row: int, cap: int) -> list[int]:
    """The dims that get a copy: `candidates` in order, while their
    copies (`per_row` bytes per row each) fit in `cap` bytes. Pure."""
    each = per_row * n_rows
    if each == 0:
        return []
    return candidates[:max(0, cap // each)]


class Copy:
    """One dim's clustered copy of one shard (kernels.cluster), with the zone maps and the
    histogram of every CHUNK positions (kernels.chunk_zones, chunk_hist; empty: none)."""

    PARTS = ("keys", "rows", "starts", "zones", "hist")  # its arrays, as stored

    def __init__(self, keys: np.ndarray, rows: np.ndarray, starts: np.ndarray) -> None:
        self.keys, self.rows, self.starts = keys, rows, starts
        self.by_raw = False  # each key's rows in raw order (a fine dim's copy with rows kept)
        self.then = -1  # else the dim by whose keys each key's rows are ordered (-1: by row)
        self.zones = np.zeros((0, 0), np.uint16)
        self.hist = np.zeros((0, 0), np.uint16)

    @staticmethod
    def build(keys: np.ndarray, raw: np.ndarray | None, d: int, nkeys: int, rows_kept: bool,
              L: tuple | None, slots: int, dtype: type = np.uint16, then: int = -1) -> Copy:
        """Dim d's copy of a shard (its keys as the kernels take them): rows in key order
        on d (then in order of `raw`, a fine dim's values, when given and rows are kept;
        else by their key on dim `then`, when >= 0: `then_dim`), its keys as `dtype`
        (`key_dtype`), its zone maps, and its chunk histograms of `slots` slots of layout
        arrays L (0: none)."""
        n = keys.shape[1]
        copy = Copy(np.empty(keys.shape, dtype), np.empty(n if rows_kept else 0, np.uint32),
                    np.empty(nkeys + 2, np.int64))
        sort = raw is not None and rows_kept
        by_raw = K.cluster(keys, d, nkeys, copy.keys, copy.rows, copy.starts, raw if sort else _NO_RAW,
                           -1 if sort else then)
        copy.by_raw = sort and bool(by_raw)
        copy.then = -1 if sort else then
        return copy._zoned(L, slots)

    @staticmethod
    def renumbered(keys: np.ndarray, rows: np.ndarray, starts: np.ndarray, maps: list[np.ndarray],
                   d: int, L: tuple | None, slots: int, dtype: type = np.uint16) -> Copy:
        """Dim d's copy of a shard built under another numbering of the keys (`keys`, `rows`,
        `starts` as stored then), each dim's keys renumbered by maps[e] (old key -> new, the
        no-value key last; capture/copies.py `key_maps`). maps[d] (and maps[then] for a copy
        ordered by `then` within keys) increasing: the rows' order is the one `build` gives
        under the new keys, only the starts move (a key new to the data gets none). Its
        by_raw and then are the old copy's."""
        copy = Copy(np.empty(keys.shape, dtype), np.array(rows), np.empty(0, np.int64))
        for e in range(keys.shape[0]):
            copy.keys[e] = maps[e][keys[e]]
        nkeys = int(maps[d][-1])  # (the no-value key's number)
        runs = np.append(maps[d], nkeys + 1)  # old key -> new, and the end of the rows
        copy.starts = np.asarray(starts)[np.searchsorted(runs, np.arange(nkeys + 2))]
        return copy._zoned(L, slots)

    def _zoned(self, L: tuple | None, slots: int) -> Copy:
        """The copy with its zone maps and chunk histograms, read-only."""
        chunks = -(-self.keys.shape[1] // K.CHUNK)
        self.zones = np.empty((chunks, 2 * self.keys.shape[0]), np.uint16)
        K.chunk_zones(self.keys, K.CHUNK, self.zones)
        self.hist = Copy.histograms(self.keys, L, slots)
        for a in (self.keys, self.rows, self.starts, self.zones, self.hist):
            a.setflags(write=False)  # as mapped ones are: the kernels take one type of each
        return self

    @staticmethod
    def histograms(keys: np.ndarray, L: tuple, slots: int) -> np.ndarray:
        """The chunk histograms of a copy's `keys`: `slots` slots of layout arrays L per
        CHUNK positions (kernels.chunk_hist); none (0 x 0) for 0 slots (`hist_slots`: too
        many), the kernel not run (it would write every view's bars past the array's end)."""
        if not slots:
            return np.zeros((0, 0), np.uint16)
        hist = np.zeros((-(-keys.shape[1] // K.CHUNK), slots), np.uint16)
        K.chunk_hist(keys, L, K.CHUNK, hist)
        return hist

    @staticmethod
    def of(parts: dict[str, np.ndarray], by_raw: bool, then: int = -1) -> Copy:
        """A copy from its stored arrays (Copy.PARTS)."""
        copy = Copy(parts["keys"], parts["rows"], parts["starts"])
        copy.zones, copy.hist, copy.by_raw, copy.then = parts["zones"], parts["hist"], by_raw, then
        return copy

    @property
    def nbytes(self) -> int:
        return (self.keys.nbytes + self.rows.nbytes + self.starts.nbytes + self.zones.nbytes
                + self.hist.nbytes)


class Copies:
    """The clustered copies of one store, shared by its sessions."""

    def __init__(self, shards: list, nkeys: list[int], dims: list[int], rows_kept: bool,
                 reserved: int = 0, L: tuple | None = None,
                 raw: Callable[[int, int], np.ndarray | None] | None = None) -> None:
        """Copies to build (`start`). `reserved`: bytes `reserve` counted for these copies,
        given back when they go; `L`: the layout arrays the chunk histograms count (None,
        or no `hist_slots`: none); `raw(shard, dim)`: a fine dim's values in a shard (None:
        it keeps none), whose copies keep each key's rows in their order when the shard
        rows are kept."""
        self._shards, self._nkeys, self._rows_kept = shards, nkeys, rows_kept
        self._raw = raw
        self._L = L
        self._slots = hist_slots(L) if L is not None else 0
        self.dtype = np.dtype(np.uint16)  # the keys' (`key_dtype`; set by the store's owner)
        self.dims = dims
        weakref.finalize(self, _release, reserved)
        self._copies: dict[int, list[Copy | None]] = {d: [None] * len(shards) for d in dims}
        self._typed: dict[int, List] = {}  # d -> its copies' arrays, for kernels.clustered_units
        self._cdim: dict[int, int] = {}  # d -> cdim(d)
        self._edim: dict[int, int] = {}  # d -> edim(d)
        self._left = {d: len(shards) for d in dims}
        self._ready: set[int] = {d for d in dims if not shards}
        self._lock = threading.Lock()
        self.job: parallel.Job | None = None

    @staticmethod
    def stored(shards: list, stored: dict[int, list[Copy]]) -> Copies:
        """The copies a capture stored (per dim, per shard, mapped from the store's files):
        every one ready, nothing to build, counted as mapped bytes while they live."""
        out = Copies(shards, [], list(stored), rows_kept=False)
        out._copies = {d: list(cs) for d, cs in stored.items()}
        for d in stored if shards else ():
            out._finish(d)
        size = out.nbytes
        with _reserved_lock:
            _mapped[0] += size
        weakref.finalize(out, _release, size, _mapped)
        return out

    @property
    def nbytes(self) -> int:
        return sum(c.nbytes for cs in self._copies.values() for c in cs if c is not None)

    def of(self, d: int) -> list[Copy] | None:
        """Dim d's copy per shard, once every shard's is built; else None."""
        return self._copies[d] if d in self._ready else None  # type: ignore[return-value]

    def typed(self, d: int) -> List:
        """Dim d's copies as kernels.clustered_units takes them (once `of(d)` is not None):
        per shard (keys, rows, starts, hist, zones) in a typed list."""
        return self._typed[d]

    def cdim(self, d: int) -> int:
        """kernels.clustered_units' cdim for dim d's copies (once `of(d)` is not None): d
        when every shard's keeps each key's rows in raw order, else -1."""
        return self._cdim.get(d, -1)

    def edim(self, d: int) -> int:
        """kernels.clustered_units' edim for dim d's copies (once `of(d)` is not None): the
        dim by whose keys every shard's orders each key's rows (`Copy.then`), else -1."""
        return self._edim.get(d, -1)

    def start(self, pool: parallel.Pool) -> None:
        """Build the copies on the pool's background work (inline without workers)."""
        chunks = (lambda d=d, i=i: self._build(d, i) for d in self.dims for i in range(len(self._shards)))
        self.job = pool.background(parallel.Job(chunks, lambda: None))

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for every copy (warm-up: before a dashboard is served); True when built."""
        return self.job is None or self.job.finished.wait(timeout)

    def _build(self, d: int, i: int) -> None:
        """Shard i's copy for dim d; the dim's last shard makes it usable."""
        raw = self._raw(i, d) if self._raw is not None and self._rows_kept else None
        copy = Copy.build(self._shards[i].arrays[0], raw, d, self._nkeys[d], self._rows_kept,
                          self._L, self._slots, self.dtype)
        with self._lock:
            self._copies[d][i] = copy
            self._left[d] -= 1
            done = self._left[d] == 0
        if done:
            self._finish(d)

    def _finish(self, d: int) -> None:
        """Dim d's copies (every shard's) made usable."""
        self._typed[d] = typed_list((c.keys, c.rows, c.starts, c.hist, c.zones)
                                    for c in self._copies[d])  # type: ignore[union-attr]
        self._cdim[d] = d if all(c.by_raw for c in self._copies[d]) else -1  # type: ignore[union-attr]
        then = {c.then for c in self._copies[d]}  # type: ignore[union-attr]
        self._edim[d] = then.pop() if len(then) == 1 else -1
        with self._lock:
            self._ready.add(d)


def typed_list(items) -> List:
    """`items` (tuples of arrays of one type) in a numba typed list: a kernel takes it
    without unpacking each array on every call (built by compiled code: K.list_of)."""
    items = iter(items)
    first = next(items, None)
    if first is None:
        return List()
    out = K.list_of(first)
    for x in items:
        K.list_append(out, x)
    return out
