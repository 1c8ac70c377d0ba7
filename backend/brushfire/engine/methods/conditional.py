"""conditional cube (a tile): for the moving filter A, per block of A's keys and bar of
each view, the aggregates of the rows passing the views' other filters as they were when
it was built (engine/builders.py builds it in the background, never on the reply path).
Valid while only A moves: an update is then prefix differences plus A's edge rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from brushfire.engine.costs import CELL, Choice, Work, index_cost
from brushfire.engine.methods import cube

if TYPE_CHECKING:
    from brushfire.engine.session import Session


@dataclass
class Tile:
    """A conditional cube: for moving filter `filter`, per tile block of its keys (`starts`)
    and bar of each view, the aggregates of the rows passing the view's other filters as
    they were (`key`). Valid while only `filter` moves."""

    filter: str
    key: tuple
    views: list[str]
    starts: np.ndarray  # tile blocks over the filter's keys, ending with nkeys
    cols: dict[str, int]
    counts: np.ndarray  # (blocks + 1, width) prefix sums over blocks
    sums: np.ndarray
    oks: np.ndarray
    token: int | None = None  # its reservation in the process's budget (engine/memory.py)

    @property
    def nbytes(self) -> int:
        return self.counts.nbytes + self.sums.nbytes + self.oks.nbytes


def plans(w: Work) -> list[Choice]:
    """A valid conditional cube: its cells read, and the moving filter's edge rows."""
    if w.tile_rows is None:
        return []
    return [Choice("tile", w.tile_cells * CELL
                   + index_cost(w.tile_rows, 4, w.n_blocks, len(w.views), w.n_rows, w.n_filters,
                                "" in w.clustered))]


def answer(session: Session, name: str, views: list[str], tile: Tile) -> None:
    """`views` under moving filter `name` from its conditional cube."""
    session._budget.touch(tile.token)
    cube.from_prefix(session, name, views, tile_prefix(tile), tile.starts, others=True)


def edge_rows(session: Session, tile: Tile) -> int:
    """About the rows answering from `tile` reads at the moving filter's edges (its cost)."""
    return cube.edge_rows(session, session.active[tile.filter].tests[0], tile.starts)


def worth_a_tile(moves: int, per_move: float, pause: float, quiet: float) -> bool:
    """Build a conditional cube in the background for a filter being dragged? When it is
    being dragged (a second move with the same other filters), its moves cost more than a
    lookup would (the build itself costs at most a scan, off the reply path), and the
    interactions leave the background room: their typical pause (seconds from a reply to
    the next interaction) is at least `quiet`, the pool's wait before background work.
    Messages sent back to back (a replay) leave none: a build then runs only in the odd
    longer pause, beside the next reply, slowing it, and is rarely done before the drag
    ends (measured on the human workload at 3M, 50,000 events back to back: conditional
    cubes answered no update, and building them raised the engine's p50 from 0.52 to 0.65
    ms)."""
    return moves >= 2 and per_move > 300_000 and pause >= quiet


def tile_prefix(tile: Tile) -> dict[str, tuple]:
    """Per view, its columns of the cube's prefix sums (counts, sums, oks)."""
    out = {}
    for v, c in tile.cols.items():
        w = slice(c, c + _width(tile, v))
        out[v] = (tile.counts[:, w], tile.sums[:, w], tile.oks[:, w])
    return out


def _width(tile: Tile, view: str) -> int:
    cols = sorted(tile.cols.values()) + [tile.counts.shape[1]]
    c = tile.cols[view]
    return cols[cols.index(c) + 1] - c
