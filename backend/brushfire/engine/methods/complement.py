"""complement: each view from a cube of one of its filters (its rows under that filter
alone), less the rows failing its other filters, found through each of those filters'
index: of wide filters the failing rows are few. A row failing several is taken away
once, where it fails the first of them (in the active filters' order). A view may be
recomputed in the same plan instead (methods/recompute.py), when that is cheaper for it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from brushfire.engine.costs import CELL, MOVE_TEST, Choice, Work, index_cost
from brushfire.engine.methods import cube, incremental

if TYPE_CHECKING:
    from brushfire.engine.session import Session


def plan_cost(w: Work, drivers: dict[str, str], bases: dict[str, str]) -> float:
    """The cost of recomputing views `drivers` from their driver filter's rows and the views
    `bases` from their base filter's cube less the rows failing their other filters: each
    set of rows read once for all the views counting it."""
    reads: dict[tuple[str, str], int] = {}  # (how, filter) -> views counting its rows
    for g in drivers.values():
        reads["rows", g] = reads.get(("rows", g), 0) + 1
    for v, b in bases.items():
        reads["cube", b] = reads.get(("cube", b), 0) + 1
        for c in w.needs[v]:
            if c != b:
                reads["fails", c] = reads.get(("fails", c), 0) + 1
    cells = w.tile_cells / max(1, len(w.views)) * CELL
    cost = 0.0
    for (how, g), k in reads.items():
        cl = g in w.clustered
        if how == "rows":
            cost += index_cost(w.drivers[g][0], w.drivers[g][1], w.n_blocks, k, w.n_rows, w.n_filters, cl)
        elif how == "cube":
            cost += k * cells + index_cost(w.cube_rows.get(g, 0), 4, w.n_blocks, k, w.n_rows, w.n_filters, cl)
        else:
            rows, ranges = w.fails[g]
            moving = rows * MOVE_TEST if cl and g in w.tested else 0.0
            cost += moving + index_cost(rows, ranges, w.n_blocks, k, w.n_rows, w.n_filters, cl)
    return cost


def plans(w: Work) -> list[Choice]:
    """Complement plans: every view from the cube of its filter that fails the most rows
    (the others' failing rows are then the fewest); and, when it differs, each view by the
    cheaper of that and a recompute from its most selective filter, costed as one plan."""
    if not w.fails or not all(w.cubes.get(v) for v in w.views):
        return []
    bases = {v: max(w.cubes[v], key=lambda g: w.fails[g][0]) for v in w.views}
    out = [Choice("complement", plan_cost(w, {}, bases), {}, bases)]
    if not all(w.needs.get(v) and all(g in w.drivers for g in w.needs[v]) for v in w.views):
        return out
    drivers = {v: min(w.needs[v], key=lambda g: w.drivers[g][0]) for v in w.views}
    # a view alone: its driver's rows against the others' failing rows
    mixed_d = {v: g for v, g in drivers.items()
               if w.drivers[g][0] < sum(w.fails[c][0] for c in w.needs[v] if c != bases[v])}
    if mixed_d and len(mixed_d) < len(w.views):
        mixed_b = {v: b for v, b in bases.items() if v not in mixed_d}
        out.append(Choice("complement", plan_cost(w, mixed_d, mixed_b), mixed_d, mixed_b))
    return out


def run(session: Session, bases: dict[str, str]) -> None:
    """Each view from its base filter's cube (its rows under that filter alone), then,
    filter by filter of its others, less the rows that fail that filter and pass the
    base and the others before it: each row failing some filter is taken away once.
    The rows failing a filter are those an incremental update switching it on from
    inactive reads (its changed keys: the rest of its keys, its fine edge buckets)."""
    by: dict[str, list[str]] = {}
    for v, b in bases.items():
        by.setdefault(b, []).append(v)
    for b, group in by.items():
        cube.from_cube(session, b, group)
    need = np.zeros(len(session._vindex), np.uint64)
    for v, b in bases.items():
        need[session._vindex[v]] = np.uint64(1 << session._fi[b])
    for c in session.active:
        fc = session._fi[c]
        part = [v for v, b in bases.items() if c != b and c in session._others(v)]
        if not part:
            continue
        vi = session._vi(part)
        for d, kr, q_new, q_old in incremental.steps(session, fc, None, session.active[c]):
            if kr:
                session.reads.by_keys(d, kr, np.ones(len(kr), np.int64), fc, q_old, vi, need, session.agg,
                                      q=q_new)
        need[vi] |= np.uint64(1 << fc)
