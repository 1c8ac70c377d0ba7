"""mixed: the views of some driver filters recomputed from its rows (methods/recompute.py),
the others counted in one incremental pass over the moving filter's changed rows
(methods/incremental.py) — where one view's most selective filter keeps more rows than
the moving one changed (typically that filter's own view) or the reverse."""

from __future__ import annotations

from typing import TYPE_CHECKING

from brushfire.engine.costs import Choice, Work
from brushfire.engine.methods import incremental, recompute

if TYPE_CHECKING:
    from brushfire.engine.session import Session


def plans(w: Work, drivers: dict[str, str], groups: dict[str, int],
          costs: dict[str, float]) -> list[Choice]:
    """Mixed plans: the views of some driver filters recomputed from its rows, the others
    counted in one incremental pass over A's changed rows — every split of the driver
    filters into the two (of the six dearest, past six: the others stay recomputed)."""
    names = sorted(groups, key=lambda g: -costs[g])[:6]
    out = []
    for mask in range(1, 1 << len(names)):
        moved = sum(groups[g] for i, g in enumerate(names) if mask >> i & 1)
        if moved == len(drivers):  # every view: the incremental plan
            continue
        kept = set(groups) - {g for i, g in enumerate(names) if mask >> i & 1}
        cost = sum(costs[g] for g in kept) + incremental.cost(w, moved)
        out.append(Choice("mixed", cost, {v: g for v, g in drivers.items() if g in kept}))
    return out


def run(session: Session, f: int, steps: list, views: list[str], drivers: dict[str, str]) -> None:
    """`drivers`' views recomputed, the others of `views` updated incrementally."""
    incremental.run(session, f, steps, [v for v in views if v not in drivers])
    recompute.run(session, drivers)
