"""incremental: only the rows whose pass/fail on the moving filter A changed (its changed
keys, found through A's index or read from its clustered copy), each added to or taken
from the bars of the views it shows in (crossfilter.js's way)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from brushfire.engine.costs import MOVE_TEST, Choice, Work, index_cost
from brushfire.engine.state import Selection, Test, changed_keys

if TYPE_CHECKING:
    from brushfire.engine.session import Session


def plans(w: Work) -> list[Choice]:
    """Only the moving filter's changed rows, read once for every view (none: `delta_rows` None)."""
    return [Choice("incremental", cost(w, len(w.views)))] if w.delta_rows is not None else []


def cost(w: Work, views: int) -> float:
    """A's changed rows read once, counted in `views`."""
    moving = w.delta_rows * MOVE_TEST if "" in w.clustered and "" in w.tested else 0.0
    return moving + index_cost(w.delta_rows, w.delta_ranges, w.n_blocks, views, w.n_rows, w.n_filters,
                               "" in w.clustered)


def run(session: Session, f: int, steps_: list, views: list[str]) -> None:
    """`views` updated by the rows of the changed keys of filter f (`steps`)."""
    vi = session._vi(views)
    need = session._needs(views) & ~np.uint64(1 << f)
    for d, kr, q_new, q_old in steps_:
        if kr:
            session.reads.by_keys(d, kr, np.ones(len(kr), np.int64), f, q_old, vi, need, session.agg,
                                  q=q_new)


def steps(session: Session, f: int, old: Selection | None, new: Selection | None) -> list:
    """The steps of an incremental update of filter f, one per test: (dim, candidate key
    ranges, Q after the step, Q before it). A rect brush moves x, then y."""
    fl = session.layout.filters[f]
    old_t = list(old.tests) if old else [None] * len(fl.dims)
    new_t = list(new.tests) if new else [None] * len(fl.dims)
    out = []
    prev = old
    for j, d in enumerate(fl.dims):
        mixed = [new_t[i] if i <= j else old_t[i] for i in range(len(fl.dims))]
        cur = Selection(tuple(t if t is not None else Test(0, fl.dims[i]) for i, t in enumerate(mixed)))
        kr = changed_keys(old_t[j], new_t[j], session.layout.dims[d].nkeys)
        q_after = session.state.copy_with(f, cur) if j < len(fl.dims) - 1 else session.state.q
        q_before = session.state.copy_with(f, prev)
        out.append((d, kr, q_after, q_before))
        prev = cur
    return out


def keyed(sel: Selection | None) -> bool:
    """Does a clustered copy's keys decide, chunk by chunk, whether rows pass `sel` (none
    or one interval test), so that an incremental pass tests no row on it?"""
    return sel is None or (len(sel.tests) == 1 and sel.tests[0].mode == 1)
