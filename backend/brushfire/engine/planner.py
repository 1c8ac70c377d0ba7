"""How to answer an update: a pure choice among exact methods by estimated cost.

When filter A changes, each view A filters must be recomputed over the rows passing its
other filters. Per view:
- base: no filter applies to it now → the base result;
- cube: one filter applies and it has a cube to this view → prefix sums over the cube's
  blocks, plus the rows of the partial blocks at the selection's edges;
and for the views under several filters, one plan for all of them:
- tile: a conditional cube of A given the others (built in the background while A was
  dragged, or prepared while the user paused) is valid → prefix sums plus the edge rows;
- incremental: only the rows whose pass/fail on A changed, found through A's index;
- recompute: each view from the rows of one of its filters (the most selective), found
  through that filter's index;
- mixed: some views recomputed so, the others updated incrementally — where one view's
  most selective filter keeps more rows than A changed (typically the most selective
  filter's own view, whose next best filter is far wider) or the reverse;
- scan: every row, sequentially;
- complement: each view from a cube of one of its filters (its rows under that filter
  alone), less the rows failing its other filters, found through each of those filters'
  index: of wide filters the failing rows are few. A row failing several is taken away
  once, where it fails the first of them (in the active filters' order). A view may be
  recomputed in the same plan instead, when that is cheaper for it.
Each method's cost estimate is in its module, next to its executor (engine/methods/); the
unit costs they are made of, in engine/costs.py. `choose` is a pure function of the
estimated work (table-tested: tests/engine/test_planner.py).
"""

from __future__ import annotations

from brushfire.engine.costs import Choice, Work
from brushfire.engine.methods import complement, conditional, incremental, mixed, recompute, scan

# the planner's methods as replies name them
METHODS = {"incremental": "incremental", "tile": "conditional cube", "recompute": "recompute",
           "scan": "scan", "complement": "cube less complement", "mixed": "incremental"}


def choose(w: Work) -> Choice:
    """The cheapest exact method for the views under several filters (`w.prefer`, in
    tests: that method whenever it applies). On a tie, the first in this order."""
    options: list[Choice] = scan.plans(w) + incremental.plans(w) + conditional.plans(w)
    by_driver = recompute.drivers_of(w)
    if by_driver is not None:
        options += recompute.plans(w, *by_driver)
        if w.delta_rows is not None:
            options += mixed.plans(w, *by_driver)
    options += complement.plans(w)
    for c in options:
        if c.method == w.prefer:
            return c
    return min(options, key=lambda c: c.cost)
