"""Background builders: the conditional cubes (methods/conditional.py) of a session's
filters, built off the reply path on the pool's background threads — while a filter is
dragged among fixed ones, and after a pause (`speculate`) for the filters likely brushed
next — within the session's share and the process's budget (engine/memory.py).

A build reads the filter state as it was when it started (`TileBuild.q`, a copy); the
session forgets a cube, or stops its build, once the other filters change."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from brushfire.engine import kernels as K
from brushfire.engine import parallel
from brushfire.engine.methods.conditional import Tile
from brushfire.engine.shared import ALL

if TYPE_CHECKING:
    from brushfire.engine.session import Session

TILE_BYTES = 4 << 20  # memory of one conditional cube (cache-sized: built fast)
SESSION_TILE_BYTES = 64 << 20  # all of a session's conditional cubes (all sessions': engine/memory.py)
TILE_CHUNK_BLOCKS = 4  # store blocks per background chunk (a reply waits at most for one)


@dataclass
class TileBuild:
    """What building one conditional cube reads: the views and their needs, the filter
    state it was started under (`q`, a copy), and the cell of each (key, bar)."""

    filter: str
    key: tuple
    views: list[str]
    starts: np.ndarray
    cblut: np.ndarray  # key -> tile block (-1: the no-value key)
    cols: dict[str, int]
    vi: np.ndarray
    colarr: np.ndarray
    need: np.ndarray
    q: tuple
    dim: int
    width: int
    measured: bool
    count_dtype: type = np.int32  # a builder's counts: half the cache of int64 (int64 past 2^31 rows)

    @property
    def cells(self) -> int:
        return (len(self.starts) - 1) * self.width

    def tile_bytes(self) -> int:
        """The memory of the conditional cube it builds (prefix sums: one more block)."""
        return (len(self.starts) * self.width) * 8 * (3 if self.measured else 1)

    def builder_bytes(self) -> int:
        """The memory of one builder's accumulators (`zeros`)."""
        return (self.cells + 1) * (np.dtype(self.count_dtype).itemsize + (16 if self.measured else 0))

    def zeros(self) -> list[np.ndarray]:
        """Accumulators of a build (or a part of one), with the kernel's spare cell."""
        n = self.cells + 1
        return [np.zeros(n, self.count_dtype)] + (
            [np.zeros(n, np.float64), np.zeros(n, np.int64)] if self.measured else
            [np.zeros(1, np.float64), np.zeros(1, np.int64)])


def tile_starts(keyprefix: np.ndarray, nkeys: int, max_blocks: int) -> np.ndarray:
    """The blocks of a dim's keys a conditional cube keeps: a block per key when they fit
    in `max_blocks`, else blocks of about equal rows (`keyprefix[k]`: rows with a key
    below k), so that a lookup reads the rows of at most two partial blocks, each a
    1 / max_blocks share of the rows."""
    if nkeys <= max_blocks:
        return np.arange(nkeys + 1, dtype=np.int64)
    total = int(keyprefix[nkeys])
    cuts = np.searchsorted(keyprefix[:nkeys + 1], np.linspace(0, total, max(1, max_blocks) + 1)[1:-1])
    return np.unique(np.concatenate([[0], np.clip(cuts, 1, nkeys - 1), [nkeys]])).astype(np.int64)


def start(session: Session, name: str, key: tuple, views: list[str]) -> None:
    """Build, in the background, the conditional cube of filter `name` over the rows
    passing the other filters as they are now (`key`)."""
    job = session._tile_jobs.get(name)
    if job is not None and job.tile_key == key and not job.finished.is_set():
        return
    tile = session._tiles.get(name)
    if tile is not None and tile.key == key and set(views) <= set(tile.views):
        return
    if session._closed:
        return
    tb = plan(session, name, key, views)
    if tb is None:
        return
    # its room in the process's budget: the cube, and a builder's accumulators per
    # background thread while it is built
    token = session._budget.reserve(session, name, tb.tile_bytes()
                                 + (session._pool.workers + 1) * tb.builder_bytes())
    if token is None:  # larger than the whole budget: answered without one
        return
    accs: dict[int, list[np.ndarray]] = {}  # per worker thread
    lock = threading.Lock()

    def chunks():
        for i, s in enumerate(session.store.shards):
            for b0 in range(0, s.nblocks, TILE_CHUNK_BLOCKS):
                units = [(i, b0, min(s.nblocks, b0 + TILE_CHUNK_BLOCKS))]

                def run(units=units):
                    me = threading.get_ident()
                    with lock:
                        if me not in accs:
                            accs[me] = tb.zeros()
                    kernel(session, tb, units, accs[me])
                yield run

    def done():
        tile = finish(tb, list(accs.values()) or [tb.zeros()])
        tile.token = token
        accs.clear()
        with session._tiles_lock:  # (dropped by the budget, or the session closed: not kept)
            if session._closed or not session._budget.resize(token, tile.nbytes):
                session._budget.release(token)
                return
            old = session._tiles.get(name)
            if old is not None:
                session._budget.release(old.token)
            session._tiles[name] = tile
            evict(session, name)

    job = parallel.Job(chunks(), done)
    job.tile_key, job.token = key, token
    old = session._tile_jobs.get(name)
    if old is not None and not old.finished.is_set():
        old.cancel()
        session._budget.release(old.token)
    session._tile_jobs[name] = job
    session._pool.background(job)
    if session._closed:  # closed meanwhile (close runs on another thread)
        job.cancel()
        session._budget.release(token)


def forget_stale(session: Session) -> None:
    """Drop conditional cubes, and stop building those, whose other filters changed."""
    for g, job in list(session._tile_jobs.items()):
        if job.finished.is_set() or job.tile_key != session._others_key(g):
            if not job.finished.is_set():
                session._budget.release(job.token)
            job.cancel()
            del session._tile_jobs[g]
    with session._tiles_lock:
        for g, tile in list(session._tiles.items()):
            if tile.key != session._others_key(g):
                session._budget.release(tile.token)
                del session._tiles[g]


def plan(session: Session, name: str, key: tuple, views: list[str]) -> TileBuild | None:
    """The build of filter `name`'s conditional cube over the rows passing the other
    filters as they are now (`key`), within TILE_BYTES; None when it cannot have one (a
    rect brush, an unindexed dim, rows over the memory budget)."""
    if not tileable(session, name, views):
        return None
    d = session.layout.filter(name).dims[0]
    nkeys = session.layout.dims[d].nkeys
    width = sum(session._vl(v).nslots for v in views)
    measured = any(session._vl(v).measure != "none" for v in views)
    starts = tile_starts(session._s.keyprefix[d], nkeys, blocks(session, name, views))
    cblut = np.append(np.searchsorted(starts, np.arange(nkeys), "right") - 1, -1).astype(np.int64)
    cols, at = {}, 0
    for v in views:
        cols[v] = at
        at += session._vl(v).nslots
    q = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in session.state.q)
    return TileBuild(name, key, list(views), starts, cblut, cols, session._vi(views),
                     np.array([cols[v] for v in views], np.int64),
                     session._needs(views) & ~np.uint64(1 << session._fi[name]), q, d, width, measured,
                     np.int32 if session.store.n_rows < 2**31 else np.int64)


def tileable(session: Session, name: str, views: list[str]) -> bool:
    """Can filter `name` have a conditional cube for `views`? Not a rect brush, nor an
    unindexed dim, nor rows the memory budget did not keep."""
    lay = session.layout
    fl = lay.filter(name)
    if len(fl.dims) != 1 or not lay.dims[fl.dims[0]].indexed or not lay.dims[fl.dims[0]].nkeys:
        return False
    return lay.filter_rows(name) and all(lay.filter_rows(g) for g in session.active) and all(
        (v == ALL and lay.row_dims) or (v != ALL and lay.countable(v)) for v in views)


def blocks(session: Session, name: str, views: list[str]) -> int:
    """How many blocks of its keys a conditional cube within TILE_BYTES keeps."""
    width = sum(session._vl(v).nslots for v in views)
    measured = any(session._vl(v).measure != "none" for v in views)
    nkeys = session.layout.dims[session.layout.filter(name).dims[0]].nkeys
    return min(nkeys, max(1, TILE_BYTES // (width * 8 * (3 if measured else 1))))


def kernel(session: Session, tb: TileBuild, units, acc: list[np.ndarray]) -> None:
    """A builder's part: the rows of `units` added into its accumulators `acc`."""
    shards, L = session.store.shards, session._s.L
    for i, b0, b1 in units:
        K.tile(shards[i].arrays, L, tb.q, tb.vi, tb.need, tb.colarr, tb.dim, tb.cblut, tb.width,
               b0, b1, *acc)


def finish(tb: TileBuild, parts: list[list[np.ndarray]]) -> Tile:
    """The conditional cube from its builders' accumulators: prefix sums over blocks."""
    nblocks = len(tb.starts) - 1
    pre = []
    for j in range(3):
        if j and not tb.measured:
            pre.append(np.zeros((nblocks + 1, 0)))
            continue
        total = parts[0][j][:-1].astype(np.int64 if j != 1 else np.float64)
        for part in parts[1:]:
            total += part[j][:-1]
        p = np.zeros((nblocks + 1, tb.width), total.dtype)
        np.cumsum(total.reshape(nblocks, tb.width), axis=0, out=p[1:])
        pre.append(p)
    return Tile(tb.filter, tb.key, tb.views, tb.starts, tb.cols, *pre)


def evict(session: Session, keep: str) -> None:
    """Keep the session's conditional cubes within SESSION_TILE_BYTES, dropping the
    least recently used filters' first (called holding _tiles_lock)."""
    order = {g: i for i, g in enumerate(session._recent)}
    while sum(t.nbytes for t in list(session._tiles.values())) > SESSION_TILE_BYTES:
        victims = [g for g in list(session._tiles) if g != keep]
        if not victims:
            break
        victim = max(victims, key=lambda g: order.get(g, len(order)))
        session._budget.release(session._tiles.pop(victim).token)


def speculate(session: Session) -> None:
    """After a pause (the pool's timer thread): prepare conditional cubes of the filters
    the user is likely to brush next, given the other filters as they are now, most
    recently used first — so that starting or jumping a brush among fixed filters is a
    lookup. Skipped when an interaction is being answered (it will reschedule), and
    when the pool has had no quiet moment lately (other sessions keep it busy: the
    builds would wait, their plans spent for nothing)."""
    if session._closed or not session._pool.has_room() or not session._lock.acquire(blocking=False):
        return
    try:
        order = session._recent + [f.name for f in session.layout.filters if f.name not in session._recent]
        for g in order:
            fl = session.layout.filter(g)
            if len(fl.dims) != 1 or not session.layout.dims[fl.dims[0]].indexed:
                continue
            views = [v for v in fl.views + ([ALL] if session._has_all else [])
                     if set(session._others(v)) - {g}]
            if views:
                start(session, g, session._others_key(g), views)
    finally:
        session._lock.release()


def drop_reserved(session: Session, name: str, token: int) -> None:
    """(engine/memory.py, through `Session._drop_reserved`) The process's budget took the
    room of this session's conditional cube of filter `name` (`token`) for another:
    forget it, or stop building it."""
    job = session._tile_jobs.get(name)
    if job is not None and job.token == token:
        job.cancel()
    with session._tiles_lock:
        tile = session._tiles.get(name)
        if tile is not None and tile.token == token:
            del session._tiles[name]
