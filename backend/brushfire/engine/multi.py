"""The views under several active filters, answered together: what the update would touch,
as the planner sees it (`Work`: rows passing and failing each filter, their zone maps,
the moving filter's changed rows, the cubes and a conditional cube at hand), the
planner's choice (engine/planner.py) and the chosen method run (engine/methods/); then a
conditional cube started in the background when the filter is being dragged."""

from __future__ import annotations

import math
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
