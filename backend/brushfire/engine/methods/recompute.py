"""recompute: each view from the rows of one of its filters (the most selective, its
driver), found through that filter's index, counted where they pass the view's others."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from brushfire.engine.costs import Choice, Work, index_cost

if TYPE_CHECKING:
    from brushfire.engine.session import Session


def drivers_of(w: Work) -> tuple[dict[str, str], dict[str, int], dict[str, float]] | None:
    """Each view's driver (its most selective filter), the views per driver and each
    driver's cost of reading its rows once for its views; None when a view has none."""
    if not (w.drivers and all(w.needs.get(v) for v in w.views)):
        return None
    drivers = {v: min((g for g in w.needs[v] if g in w.drivers), key=lambda g: w.drivers[g][0],
                      default=None) for v in w.views}
    if not all(d is not None for d in drivers.values()):
        return None
    groups: dict[str, int] = {}
    for _v, g in drivers.items():
        groups[g] = groups.get(g, 0) + 1
    costs = {g: index_cost(w.drivers[g][0], w.drivers[g][1], w.n_blocks, k, w.n_rows, w.n_filters,
                           g in w.clustered) for g, k in groups.items()}
    return drivers, groups, costs


def plans(w: Work, drivers: dict[str, str], groups: dict[str, int],
          costs: dict[str, float]) -> list[Choice]:
    """Each view from its driver's rows: each driver's rows read once for its views."""
    return [Choice("recompute", sum(costs.values()), drivers)]


def run(session: Session, drivers: dict[str, str]) -> None:
    """Each view from the rows passing its driver filter, found through that filter's
    index, counted where they pass the view's other filters."""
    by: dict[str, list[str]] = {}
    for v, g in drivers.items():
        by.setdefault(g, []).append(v)
    for g, group in by.items():
        for v in group:
            session.agg.clear(session._vl(v).all_slots)
        t = session.active[g].tests[0]
        kr = t.key_ranges(session.layout.dims[t.dim].nkeys)
        session.reads.by_keys(t.dim, kr, np.ones(len(kr), np.int64), -1, None, session._vi(group),
                              session._needs(group), session.agg)
