"""scan: every row read sequentially, tested on each filter and counted in each view
(blocks whose zone maps show a filter selects none of their keys skipped). The bound on
every update: no other method is chosen when it would cost more."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from brushfire.engine import kernels as K
from brushfire.engine.costs import Choice, Work, scan_cost
from brushfire.engine.reads import as_units
from brushfire.lineage.arrays import Aggregates

if TYPE_CHECKING:
    from brushfire.engine.session import Session


def plans(w: Work) -> list[Choice]:
    """Every row read once (the blocks each view cannot skip), counted in every view."""
    return [Choice("scan", scan_cost(w.n_rows, w.n_filters, len(w.views), w.scan_rows))]


def answer(session: Session, views: list[str]) -> None:
    """`views` counted afresh by a scan."""
    for v in views:
        session.agg.clear(session._vl(v).all_slots)
    run(session, session._vi(views), session._needs(views), session.agg)


def run(session: Session, vi, need, agg: Aggregates) -> None:
    """The views `vi` counted into `agg` over every row passing their `need`, by a scan."""
    session.reads.rows_guard(-1, vi, need)
    skip = np.uint64(np.bitwise_and.reduce(need[vi])) if len(vi) else np.uint64(0)
    L, q = session._s.L, session.state.q
    shards = session._s.shard_list

    def units(us, c, s, o):
        if us:
            K.scan_units(shards, as_units(us), L, q, vi, need, skip, c, s, o)

    cost = scan_cost(session.store.n_rows, len(session.active), len(vi))
    session.reads.run(units, agg, session.reads.threads(cost))
