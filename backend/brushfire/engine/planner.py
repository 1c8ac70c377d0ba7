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
Costs are nanoseconds from the constants below (measured with perf/calibrate.py and on the
30M-row flights on the 2-core EPYC this project runs on): a sequential pass counts a row
in a view in about 1 ns; a row reached through the index costs about 6 ns plus 1.3 per
view, and the memory lines it reads: where the rows are sparse (a few percent of a
block) each one reads its own line per column, about 80 ns a row at 30M rows (from a few
percent on, the rows share their lines). Where the dim has a clustered copy
(engine/copies.py) its rows are read sequentially instead, one run per key range and
shard, at a scan's cost per row (RUN_ROW, perf/calibrate.py); an incremental pass tests
the moving filter on each row only where its copy's keys do not decide it (MOVE_TEST:
not one interval test, or a fine edge bucket). Only the ratios matter. Every method's cost is bounded by a scan, so the worst update is a
parallel sequential pass over the compact per-row keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# nanoseconds per unit of work, single thread
INDEX_ROW = 6.0  # a row reached through a block's key order
INDEX_ROW_VIEW = 1.3  # ... for each view it is counted in
LINE = 12.0  # a memory line of one column read for rows reached through the index
ROWS_PER_LINE = 32  # uint16 keys in a 64-byte line
SCAN_ROW = 0.4  # a row of a sequential pass
SCAN_ROW_FILTER = 0.4  # ... for each filter tested
SCAN_ROW_VIEW = 1.2  # ... for each view counted
BLOCK_SEARCH = 1000.0  # a key range found in one block's key order (fences, then its rows)
CELL = 1.0  # a bar read from a cube or tile
RUN_SEARCH = 20.0  # a key range's run in a clustered copy, per block (a shard's two lookups)
RUN_ROW = 0.5  # a row of a clustered copy: its weight
MOVE_TEST = 1.0  # ... in an incremental update: the moving filter tested before and after,
# where its keys do not decide it


@dataclass(frozen=True)
class Work:
    """What an update would touch, as the planner sees it."""

    n_rows: int
    n_blocks: int
    views: tuple[str, ...]  # views under several filters
    n_filters: int  # active filters a scan tests
    delta_rows: int | None  # rows in A's changed keys (None: not incremental, e.g. rect)
    delta_ranges: int = 1
    drivers: dict[str, tuple[int, int]] = field(default_factory=dict)  # filter -> (rows, ranges)
    needs: dict[str, tuple[str, ...]] = field(default_factory=dict)  # view -> its filters
    tile_rows: int | None = None  # a valid tile's edge rows (None: no valid tile)
    tile_cells: int = 0
    threads: int = 2
    prefer: str | None = None  # tests: take this method whenever it applies
    scan_rows: tuple[int, ...] | None = None  # per view, the rows a scan reads for it
    # (zone maps skip blocks); None: every row for every view
    clustered: frozenset[str] = frozenset()  # filters whose rows are read from a clustered
    # copy; "" stands for the moving filter's changed keys (incremental and tile edges)
    tested: frozenset[str] = frozenset()  # filters ("": the moving one) an incremental pass
    # tests on every row: not one interval test, which a clustered copy's keys decide
    fails: dict[str, tuple[int, int]] = field(default_factory=dict)  # filter -> (rows, ranges)
    # of the keys where it may fail (every row failing it, and its fine edge buckets)
    cubes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # view -> its filters
    # that have a cube to it
    cube_rows: dict[str, int] = field(default_factory=dict)  # filter -> its cubes' edge rows


@dataclass(frozen=True)
class Choice:
    method: str  # tile | incremental | recompute | mixed | scan | complement
    cost: float  # estimated nanoseconds of work (before dividing among threads)
    drivers: dict[str, str] = field(default_factory=dict)  # recompute, mixed: view -> driver filter
    bases: dict[str, str] = field(default_factory=dict)  # complement: view -> its cube's filter

    def view_methods(self) -> dict[str, str]:
        """The method of each view, where a plan mixes them: a complement plan recomputes
        some of its views, a mixed one updates those it does not recompute incrementally."""
        if self.method == "mixed":
            return dict.fromkeys(self.drivers, "recompute")
        if self.method != "complement":
            return {}
        return {**dict.fromkeys(self.drivers, "recompute"), **dict.fromkeys(self.bases, "complement")}


def index_cost(rows: int, ranges: int, n_blocks: int, views: int, n_rows: int,
               filters: int = 0, clustered: bool = False) -> float:
    """`rows` of `n_rows` reached through the index, counted in `views`, tested on
    `filters`: per row, per key range and block searched, and per memory line read — of
    the columns read (a crossfilter's views and filters share theirs), the lines holding
    at least one of the rows (all of them once the rows are a few percent). From a
    clustered copy: per row as a scan, per key range a run per shard."""
    if clustered:
        return (rows * (RUN_ROW + SCAN_ROW_FILTER * filters + SCAN_ROW_VIEW * views)
                + ranges * n_blocks * RUN_SEARCH)
    density = rows / max(1, n_rows)
    lines = n_rows / ROWS_PER_LINE * -math.expm1(-ROWS_PER_LINE * density)
    return (rows * (INDEX_ROW + INDEX_ROW_VIEW * views) + lines * (max(views, filters) + 1) * LINE
            + ranges * n_blocks * BLOCK_SEARCH)


def scan_cost(n_rows: int, filters: int, views: int, rows_per_view=None) -> float:
    """A sequential pass: every row read and tested, counted in each view — or, with
    `rows_per_view`, only the rows of the blocks each view cannot skip."""
    if rows_per_view is None:
        return n_rows * (SCAN_ROW + SCAN_ROW_FILTER * filters + SCAN_ROW_VIEW * views)
    read = max(rows_per_view, default=0)
    return read * (SCAN_ROW + SCAN_ROW_FILTER * filters) + SCAN_ROW_VIEW * sum(rows_per_view)


def choose(w: Work) -> Choice:
    """The cheapest exact method for the views under several filters."""
    nv = len(w.views)
    options: list[Choice] = [Choice("scan", scan_cost(w.n_rows, w.n_filters, nv, w.scan_rows))]
    if w.delta_rows is not None:
        options.append(Choice("incremental", incremental_cost(w, nv)))
    if w.tile_rows is not None:
        options.append(Choice("tile", w.tile_cells * CELL
                              + index_cost(w.tile_rows, 4, w.n_blocks, nv, w.n_rows, w.n_filters,
                                           "" in w.clustered)))
    if w.drivers and all(w.needs.get(v) for v in w.views):
        drivers = {v: min((g for g in w.needs[v] if g in w.drivers), key=lambda g: w.drivers[g][0],
                          default=None) for v in w.views}
        if all(d is not None for d in drivers.values()):
            groups: dict[str, int] = {}
            for _v, g in drivers.items():
                groups[g] = groups.get(g, 0) + 1
            costs = {g: index_cost(w.drivers[g][0], w.drivers[g][1], w.n_blocks, k, w.n_rows, w.n_filters,
                                   g in w.clustered) for g, k in groups.items()}
            options.append(Choice("recompute", sum(costs.values()), drivers))
            if w.delta_rows is not None:
                options += mixed_plans(w, drivers, groups, costs)
    options += complement_plans(w)
    for c in options:
        if c.method == w.prefer:
            return c
    return min(options, key=lambda c: c.cost)


def incremental_cost(w: Work, views: int) -> float:
    """A's changed rows read once, counted in `views`."""
    moving = w.delta_rows * MOVE_TEST if "" in w.clustered and "" in w.tested else 0.0
    return moving + index_cost(w.delta_rows, w.delta_ranges, w.n_blocks, views, w.n_rows, w.n_filters,
                               "" in w.clustered)


def mixed_plans(w: Work, drivers: dict[str, str], groups: dict[str, int],
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
        cost = sum(costs[g] for g in kept) + incremental_cost(w, moved)
        out.append(Choice("mixed", cost, {v: g for v, g in drivers.items() if g in kept}))
    return out


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


def complement_plans(w: Work) -> list[Choice]:
    """Complement plans: every view from the cube of its filter that fails the most rows
    (the others' failing rows are then the fewest); and, when it differs, each view by the
    cheaper of that and a recompute from its most selective filter, costed as one plan."""
    if not w.fails or not all(w.cubes.get(v) for v in w.views):
        return []
    bases = {v: max(w.cubes[v], key=lambda g: w.fails[g][0]) for v in w.views}
    plans = [Choice("complement", plan_cost(w, {}, bases), {}, bases)]
    if not all(w.needs.get(v) and all(g in w.drivers for g in w.needs[v]) for v in w.views):
        return plans
    drivers = {v: min(w.needs[v], key=lambda g: w.drivers[g][0]) for v in w.views}
    # a view alone: its driver's rows against the others' failing rows
    mixed_d = {v: g for v, g in drivers.items()
               if w.drivers[g][0] < sum(w.fails[c][0] for c in w.needs[v] if c != bases[v])}
    if mixed_d and len(mixed_d) < len(w.views):
        mixed_b = {v: b for v, b in bases.items() if v not in mixed_d}
        plans.append(Choice("complement", plan_cost(w, mixed_d, mixed_b), mixed_d, mixed_b))
    return plans


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


def parallel_ms(cost_ns: float, threads: int) -> float:
    return cost_ns / max(1, threads) / 1e6
