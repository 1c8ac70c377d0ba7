"""Which cube blocks a brush takes whole and which rows it reads (engine/methods/cube.py
`blocks_and_rows`), on hand-made dims and blocks; the answers themselves are checked
against DuckDB in test_session_oracle.py."""

from __future__ import annotations

import math

import numpy as np

from brushfire.engine.methods.cube import blocks_and_rows
from brushfire.engine.state import interval_test
from brushfire.lineage.layout import Dim

# eight fine buckets: (-inf, 1), [1, 2), ..., [7, inf), 100 rows each
EDGES = [-math.inf] + [float(k) for k in range(1, 8)]
DIM = Dim("value:x", "fine", "x", None, "float", len(EDGES), True, raw=0, edges=EDGES)


def rows(ranges: list[tuple[int, int]]) -> int:
    return sum(100 * (b - a + 1) for a, b in ranges)


def test_with_a_block_per_key_only_the_edge_buckets_rows_are_read():
    t = interval_test(DIM, 0, 2.5, 5.5)  # buckets 2 and 5 at the edges, 3..4 inside
    whole, segs, _ = blocks_and_rows(t, np.arange(9), rows)
    assert (whole, segs, t.edge_keys()) == ([(3, 5)], [], [2, 5])


def test_a_bound_inside_a_block_reads_the_smaller_side_of_it():
    # blocks of keys 0-2, 3-5, 6-7; inner keys 1..6: block 1 whole; of block 0, keys 1..2
    # (200 rows) as the block taken whole less key 0 (100); of block 2, key 6 itself (its
    # rest, key 7, is as many rows)
    t = interval_test(DIM, 0, 0.5, 7.5)
    whole, segs, signs = blocks_and_rows(t, np.array([0, 3, 6, 8]), rows)
    assert (t.inner_ranges(), t.edge_keys()) == ([(1, 6)], [0, 7])
    assert (whole, segs, signs) == ([(1, 2), (0, 1)], [(0, 0), (6, 6)], [-1, 1])


def test_no_whole_block_inside_reads_the_rows_themselves():
    t = interval_test(DIM, 0, 1.5, 3.5)
    whole, segs, signs = blocks_and_rows(t, np.array([0, 8]), rows)
    assert (whole, segs, signs) == ([], [(2, 2)], [1])
