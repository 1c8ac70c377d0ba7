"""The engine's cost model: what an update would touch (`Work`), a method's plan and its
estimated cost (`Choice`), and the unit costs every method's estimate is made of.

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
EDGE_ROW = 50.0  # a row of a fine edge bucket, tested by its raw value and counted in a
# selection's views (its run in each shard of a clustered copy: 0.3 ms for 4k rows at 100M)
RANGE_READ = 2000.0  # a fine bucket's smallest and largest value read in one shard (four
# scattered values: kernels.key_value_range, 15 us over 55 shards with its lines cached,
# ~0.25 ms with them not: a new bucket's, as a brush moves)


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


def worth_a_value_range(rows: int, shards: int, decided: float) -> bool:
    """Is reading a fine edge bucket's smallest and largest value (in every shard) worth
    it, to take the bucket whole or leave it out by key (state.within_buckets) instead of
    testing its `rows` one by one? `decided`: the share of bounds its dim's buckets read so
    far decided (state.decidable_share: about 1 where values repeat, 0 where they are
    continuous). Yes when the rows it would spare, weighted so, cost more than the reads."""
    return decided * rows * EDGE_ROW >= shards * RANGE_READ
