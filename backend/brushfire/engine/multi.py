"""The views under several active filters, answered together: what the update would touch,
as the planner sees it (`Work`: rows passing and failing each filter, their zone maps,
the moving filter's changed rows, the cubes and a conditional cube at hand), the
planner's choice (engine/planner.py) and the chosen method run (engine/methods/); then a
conditional cube started in the background when the filter is being dragged."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from brushfire.engine import builders, parallel
from brushfire.engine.costs import Work
from brushfire.engine.methods import (
    complement,
    conditional,
    cube,
    incremental,
    mixed,
    recompute,
    scan,
)
from brushfire.engine.planner import METHODS, choose
from brushfire.engine.shared import ALL
from brushfire.engine.state import Selection, changed_keys

if TYPE_CHECKING:
    from brushfire.engine.session import Session

CHECKPOINT_ROWS = 1 << 16  # a move of fewer changed rows is answered from the views as they are
CHECKPOINT_GAIN = 0.75  # ... or one whose changed rows a checkpoint does not cut by a quarter
CHECKPOINTS = 4  # the drags' starts a session keeps (`Checkpoint`)
CHECKPOINT_SLOTS = 1 << 17  # ... each of at most this many slots (3 MB)


def update(session: Session, name: str, f: int, old: Selection | None, new: Selection | None,
           views: list[str]) -> dict[str, str]:
    """Views under several filters, by the planner's cheapest exact method. ALL is not
    counted when a view every active filter applies to (and no brush of its own) is
    among them: the rows passing every filter are then that view's rows, all its slots
    summed — one view fewer for every row an update reads."""
    whole = whole_view(session, views)
    if whole is not None:
        views = [v for v in views if v != ALL]
    key = session._others_key(name)
    drag = session._drag
    moves = drag[2] + 1 if drag and drag[0] == name and drag[1] == key else 1
    session._drag = (name, key, moves)
    steps = incremental.steps(session, f, old, new)
    delta_rows = sum(session.reads.rows_of(d, kr) for d, kr, _, _ in steps)
    if delta_rows > CHECKPOINT_ROWS:
        old, steps, delta_rows = from_checkpoint(session, name, f, key, old, new, views, steps, delta_rows)
    if moves == 1:
        remember(session, Checkpoint.of(session, name, key, old, views))
    tile = session._tiles.get(name)
    if tile is None or tile.key != key or not set(views) <= set(tile.views) or new is None:
        tile = None
    drivers, fails, cube_rows = {}, {}, {}
    clustered = {""} if all(session.reads.copy(d) is not None for d, _, _, _ in steps) else set()
    tested = set() if all(incremental.keyed(x) for x in (old, new)) else {""}
    for g, sel in session.active.items():
        drivers[g], fails[g], edge, _ = filter_rows(session, g, sel)
        if edge is not None:
            cube_rows[g] = edge
        if all(session.reads.copy(t.dim) is not None for t in sel.tests):
            clustered.add(g)
        if not incremental.keyed(sel):
            tested.add(g)
    ckey = (tuple((g, len(sel.tests)) for g, sel in session.active.items()), tuple(views))
    cubes = session._cubes_of.get(ckey)
    if cubes is None:
        cubes = session._cubes_of[ckey] = {
            v: tuple(g for g in session._others(v) if len(session.active[g].tests) == 1
                     and session._cube(g, v) is not None) for v in views}
    work = Work(
        n_rows=session.store.n_rows, n_blocks=session._s.blocks, views=tuple(views),
        scan_rows=tuple(scan_rows(session, [session._need(v) for v in views])),
        n_filters=len(session.active), delta_rows=delta_rows,
        delta_ranges=max(1, sum(len(kr) for _, kr, _, _ in steps)),
        drivers=drivers, needs={v: tuple(session._others(v)) for v in views},
        tile_rows=conditional.edge_rows(session, tile) if tile is not None else None,
        tile_cells=sum(session._vl(v).nslots for v in views), prefer=session._prefer,
        threads=session._pool.workers + 1, clustered=frozenset(clustered),
        fails=fails, cubes=cubes, cube_rows=cube_rows, tested=frozenset(tested))
    choice = choose(work)
    if choice.method == "tile":
        conditional.answer(session, name, views, tile)
    elif choice.method == "incremental":
        incremental.run(session, f, steps, views)
    elif choice.method == "mixed":
        mixed.run(session, f, steps, views, choice.drivers)
    elif choice.method == "recompute":
        recompute.run(session, choice.drivers)
    elif choice.method == "complement":
        recompute.run(session, choice.drivers)
        complement.run(session, choice.bases)
    else:
        scan.answer(session, views)
    if choice.method != "tile" and new is not None and (
            (conditional.worth_a_tile(moves, choice.cost, pause(session), parallel.QUIET) and session._pool.has_room())
            or session._prefer == "tile"):
        builders.start(session, name, key, views)
    if whole is not None:
        counts = session.agg.counts
        slots = session._s.all.all_slots
        counts[slots] = 0
        counts[slots.start] = counts[session._vl(whole).all_slots].sum()
    return {**dict.fromkeys(views, METHODS[choice.method]),
            **{v: METHODS[m] for v, m in choice.view_methods().items()}}


def from_checkpoint(session: Session, name: str, f: int, key: tuple, old: Selection | None,
                    new: Selection | None, views: list[str], steps: list, delta_rows: int) -> tuple:
    """(old, steps, delta_rows) of an update: from the views as they are, or from a
    checkpoint of them (kept at the start of a drag of the same filter, the other filters
    as they are now) where far fewer rows changed since: a brush drawn leftwards selects
    nothing until its release makes it wide in one message; from the brush off, or where
    it was before, the release changes only the rows between. The checkpoint's aggregates
    are then set back: aggregates are a function of the filter state alone, so any
    state's, kept, is exact."""
    best = None
    for cp in session._checkpoints:
        if cp.usable(name, key, views):
            cp_steps = incremental.steps(session, f, cp.selection, new)
            rows = sum(session.reads.rows_of(d, kr) for d, kr, _, _ in cp_steps)
            if rows < CHECKPOINT_GAIN * delta_rows:
                best, steps, delta_rows = cp, cp_steps, rows
    if best is None:
        return old, steps, delta_rows
    best.restore(session, views)
    return best.selection, steps, delta_rows


def remember(session: Session, cp: Checkpoint) -> None:
    """Keep a checkpoint, the most recent first: at most CHECKPOINTS, one per state, none
    of more than CHECKPOINT_SLOTS slots."""
    if cp.nslots > CHECKPOINT_SLOTS:
        return
    kept = [c for c in session._checkpoints if c.state != cp.state]
    session._checkpoints = [cp, *kept[:CHECKPOINTS - 1]]


@dataclass
class Checkpoint:
    """The aggregates of the views a drag updates as they were before its first move, with
    the state they were counted in: the dragged filter's selection and the other filters
    (`Session._others_key`)."""

    filter: str
    key: tuple
    selection: Selection | None
    views: frozenset[str]
    slots: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]

    @staticmethod
    def of(session: Session, name: str, key: tuple, selection: Selection | None,
           views: list[str]) -> Checkpoint:
        """The views' aggregates now (copies of their slots)."""
        slots = {}
        for v in views:
            s = session._vl(v).all_slots
            agg = session.agg
            slots[v] = (agg.counts[s].copy(), agg.sums[s].copy(), agg.oks[s].copy())
        return Checkpoint(name, key, selection, frozenset(views), slots)

    @property
    def state(self) -> tuple:
        """The filter state the aggregates were counted in."""
        return self.filter, self.key, self.selection.tests if self.selection is not None else None

    @property
    def nslots(self) -> int:
        return sum(len(c) for c, _, _ in self.slots.values())

    def usable(self, name: str, key: tuple, views: list[str]) -> bool:
        """Counted with filter `name` dragged, the other filters as they are (`key`), and
        every view the move updates."""
        return self.filter == name and self.key == key and self.views.issuperset(views)

    def restore(self, session: Session, views: list[str]) -> None:
        """The views' aggregates set back to the checkpoint's."""
        for v in views:
            s = session._vl(v).all_slots
            c, x, k = self.slots[v]
            session.agg.counts[s], session.agg.sums[s], session.agg.oks[s] = c, x, k


def filter_rows(session: Session, g: str, sel: Selection) -> tuple:
    """What the planner needs of active filter g, kept while its selection stays:
    (rows, key ranges) passing it and where it may fail, its cubes' edge rows (None: no
    cube), and the blocks its interval tests cannot skip (bit j: block j of
    `Shared.zones`; None: no interval test)."""
    cached = session._rows_cache.get(g)
    if cached is not None and cached[0] is sel:
        return cached[1]
    t = sel.tests[0]
    kr = t.key_ranges(session.layout.dims[t.dim].nkeys)
    fkr = [changed_keys(None, u, session.layout.dims[u.dim].nkeys) for u in sel.tests]
    keep = None
    if any(u.mode == 1 for u in sel.tests):
        zmin, zmax, sizes = session._s.zones()
        kept = np.ones(len(sizes), bool)
        for u in sel.tests:
            if u.mode == 1:
                kept &= (zmax[u.dim] >= u.lo) & (zmin[u.dim] <= u.hi)
        keep = int.from_bytes(np.packbits(kept, bitorder="little").tobytes(), "little")
    out = ((session.reads.rows_of(t.dim, kr), max(1, len(kr))),
           (sum(session.reads.rows_of(u.dim, k) for u, k in zip(sel.tests, fkr, strict=True)),
            max(1, sum(len(k) for k in fkr))),
           cube.edge_rows(session, t, session._cube_starts[t.dim])
           if len(sel.tests) == 1 and t.dim in session._cube_starts else None,
           keep)
    session._rows_cache[g] = (sel, out)
    return out


def whole_view(session: Session, views: list[str]) -> str | None:
    """A view of `views` that counts exactly ALL's rows: every active filter applies to
    it (none is its own) — when ALL is among `views`."""
    if ALL not in views:
        return None
    need = session._need(ALL)
    return next((v for v in views if v != ALL and session._need(v) == need), None)


def pause(session: Session) -> float:
    """The typical pause between a filter change's answer and the next (seconds; the
    median of the last 16): a person's frames leave ~15 ms, a replay almost none."""
    return sorted(session._pauses)[len(session._pauses) // 2] if session._pauses else math.inf


def scan_rows(session: Session, needs: list[np.uint64]) -> list[int]:
    """Per need mask, the rows a scan reads for it: those of the blocks its zone maps
    cannot skip (one of its filters selects no key of the block). Data sorted by a
    brushed field skips most."""
    keeps = [(session._fi[g], k) for g, sel in session.active.items()
             if (k := filter_rows(session, g, sel)[3]) is not None]
    out: dict[int, int] = {}
    for nd in needs:
        nd = int(nd)
        if nd not in out:
            mask = -1  # every block
            for f, k in keeps:
                if nd >> f & 1:
                    mask &= k
            out[nd] = session._s.rows_in_blocks(mask) if mask != -1 else session.store.n_rows
    return [out[int(nd)] for nd in needs]
