"""cube: one active filter applies to a view and has a group-by push-down cube to it
(Smoke 4.2, captured on Spark): prefix sums over the cube's blocks of the filter's keys,
plus the rows of the partial blocks at the selection's edges. The coordinator takes it
whenever it applies (its cost is the edge rows, `edge_rows`, tens of microseconds);
`from_prefix` also answers from a conditional cube (methods/conditional.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from brushfire.engine.state import Test

if TYPE_CHECKING:
    from brushfire.engine.session import Session


def from_cube(session: Session, g: str, views: list[str]) -> None:
    """`views` under active filter g alone, from g's cubes to them."""
    cubes = {v: session._cube(g, v) for v in views}
    starts = session._cube_starts[session.active[g].tests[0].dim]
    from_prefix(session, g, views, {v: (c.counts, c.sums, c.oks) for v, c in cubes.items()},
                starts, others=False)


def from_prefix(session: Session, g: str, views: list[str], prefix: dict, starts: np.ndarray,
                others: bool) -> None:
    """Views under filter g from prefix sums over blocks of g's keys (a cube: g is the
    only filter; a tile: over the rows passing the others): whole blocks by prefix
    differences, the rows of partial blocks through g's index (added, or the block
    taken whole and the rest subtracted, whichever touches fewer rows), the rows of
    fine dims' edge buckets tested one by one."""
    test = session.active[g].tests[0]
    d = test.dim
    whole, seg_lo, seg_sign = blocks_and_rows(test, starts, lambda r: session.reads.rows_of(d, r))
    for v in views:
        sl = session._vl(v).all_slots
        pc, ps, po = prefix[v]
        session.agg.clear(sl)
        for ja, jb in whole:
            session.agg.counts[sl] += pc[jb] - pc[ja]
            if ps.size:
                session.agg.sums[sl] += ps[jb] - ps[ja]
                session.agg.oks[sl] += po[jb] - po[ja]
    vi = session._vi(views)
    bit = np.uint64(1 << session._fi[g])
    base_need = (session._needs(views) & ~bit) if others else np.zeros(len(session._vindex), np.uint64)
    if seg_lo:
        order = np.argsort([s[0] for s in seg_lo])
        kr = [seg_lo[i] for i in order]
        signs = np.array([seg_sign[i] for i in order], np.int64)
        session.reads.by_keys(d, kr, signs, -1, None, vi, base_need, session.agg)
    edges = test.edge_keys()
    if edges:
        need = base_need.copy()
        need[vi] |= bit
        session.reads.by_keys(d, [(k, k) for k in edges], np.ones(len(edges), np.int64), -1, None, vi,
                              need, session.agg)


def blocks_and_rows(test: Test, starts: np.ndarray, rows: Callable[[list[tuple[int, int]]], int]
                    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]], list[int]]:
    """How `from_prefix` answers `test`'s inner key ranges over blocks `starts` (`rows`:
    the rows of key ranges): the block ranges [ja, jb) taken whole, and the key ranges
    of partial blocks' rows read with their signs (+1 added; -1 subtracted from a block
    taken whole, when that touches fewer rows). A range end on a block's edge leaves no
    partial block: with a block per key (fine dims past 3M rows: capture/layout.py
    `scaled_cubes`) only the edge buckets' rows are read."""
    whole: list[tuple[int, int]] = []
    seg_lo: list[tuple[int, int]] = []
    seg_sign: list[int] = []
    for a, b in test.inner_ranges():
        ja = int(np.searchsorted(starts, a, "right")) - 1
        jb = int(np.searchsorted(starts, b, "right")) - 1
        first = ja if starts[ja] == a else ja + 1
        last = jb if starts[jb + 1] - 1 == b else jb - 1
        if first > last:  # no whole block inside: the rows themselves
            seg_lo.append((a, b))
            seg_sign.append(1)
            continue
        whole.append((first, last + 1))
        for lo, hi, blk in ((a, int(starts[first]) - 1, ja), (int(starts[last + 1]), b, jb)):
            if lo > hi:
                continue
            rest = (int(starts[blk]), lo - 1) if blk == ja else (hi + 1, int(starts[blk + 1]) - 1)
            if rows([rest]) < rows([(lo, hi)]):
                whole.append((blk, blk + 1))
                if rest[0] <= rest[1]:
                    seg_lo.append(rest)
                    seg_sign.append(-1)
            else:
                seg_lo.append((lo, hi))
                seg_sign.append(1)
    return whole, seg_lo, seg_sign


def edge_rows(session: Session, test: Test, starts: np.ndarray) -> int:
    """The rows `from_prefix` reads for `test` over blocks `starts`: its partial blocks'
    and the fine edge buckets'."""
    d = test.dim
    _, segs, _ = blocks_and_rows(test, starts, lambda r: session.reads.rows_of(d, r))
    return session.reads.rows_of(d, segs) + sum(session.reads.rows_of(d, [(k, k)]) for k in test.edge_keys())
