"""What a brush means on a dim's keys (engine/state.py), on hand-made dims."""

from __future__ import annotations

import math

from brushfire.engine.costs import worth_a_value_range
from brushfire.engine.state import decidable_share, interval_test, within_buckets
from brushfire.lineage.layout import Dim

EDGES = [-math.inf, 1.0, 2.0, 3.0]  # buckets (-inf, 1), [1, 2), [2, 3), [3, inf)


def fine(bounds=(0.5, 3.5)) -> Dim:
    return Dim("value:x", "fine", "x", None, "float", len(EDGES), True, raw=0, edges=EDGES,
               bounds=list(bounds) if bounds is not None else None)


def test_a_time_bound_beyond_2_53_microseconds_is_exact():
    """Times are UTC microseconds, compared as instants, exactly: beyond 2^53 us (before
    1685, after 2255: a 0001-01-01 placeholder) they were compared as doubles, as integer
    numbers are, so a brush from 0001-01-01T00:00:00.000001 took the rows at midnight (a
    double's step there is 8 us), and one from there to midnight, inverted, took them too."""
    midnight, later = -62135596800000000, 1609459200000000  # 0001-01-01, 2021-01-01
    for kind, want in (("temporal", (1, 0)), ("int", (0, 0))):  # (integers: as doubles, as SQL has them)
        dense = Dim("value:t", "dense", "t", None, kind, 2, True, values=[midnight, later])
        t = interval_test(dense, 0, midnight + 1, midnight)
        assert (t.lo, t.hi) == want, kind
        t = interval_test(dense, 0, midnight + 1, later)
        assert (t.lo, t.hi) == ((1, 1) if kind == "temporal" else (0, 1)), kind


def test_a_bound_inside_a_bucket_leaves_its_rows_to_their_values():
    t = interval_test(fine(), 0, 0.7, 3.2)
    assert (t.lo, t.hi, t.edge_keys(), t.inner_ranges()) == (0, 3, [0, 3], [(1, 2)])


def test_a_bound_beyond_the_data_takes_its_bucket_whole():
    # the data's values are 0.5..3.5: a brush from 0.2 (or from 0.5 itself) passes every
    # row of bucket 0, one to 4 (or 3.5) every row of bucket 3
    for lo, hi in ((0.2, 4.0), (0.5, 3.5), (-1e300, math.inf)):
        t = interval_test(fine(), 0, lo, hi)
        assert (t.lo, t.hi, t.edge_keys(), t.inner_ranges()) == (0, 3, [], [(0, 3)]), (lo, hi)


def test_a_strict_bound_at_the_datas_end_still_tests_its_bucket():
    t = interval_test(fine(), 0, 0.5, 3.5, strict_lo=True, strict_hi=True)
    assert t.edge_keys() == [0, 3]


def test_without_the_captures_bounds_every_edge_bucket_is_tested():
    for bounds in (None, (None, None)):
        assert interval_test(fine(bounds), 0, 0.2, 4.0).edge_keys() == [0, 3]


# bucket k's smallest and largest value: 0 holds 0.5 only (many rows of one value), 1 holds
# 1.0..1.5, 2 none, 3 holds 3.0..3.5
RANGES = {0: (0.5, 0.5), 1: (1.0, 1.5), 2: (math.inf, -math.inf), 3: (3.0, 3.5)}


def decided(lo, hi, **strict):
    return within_buckets(interval_test(fine(bounds=None), 0, lo, hi, **strict), RANGES.__getitem__)


def test_a_bound_between_a_buckets_values_decides_it_whole():
    # 0.7: above bucket 0's one value (left out); 1.6: above all of bucket 1's (taken whole)
    t = decided(0.7, 1.6)
    assert (t.lo, t.hi, t.edge_keys(), t.inner_ranges()) == (1, 1, [], [(1, 1)])
    # 0.2 and 3.7: beyond the data, as with the capture's bounds
    t = decided(0.2, 3.7)
    assert (t.lo, t.hi, t.edge_keys(), t.inner_ranges()) == (0, 3, [], [(0, 3)])
    # 3.2 inside bucket 3's values: its rows are tested; an empty bucket is decided either way
    t = decided(2.5, 3.2)
    assert (t.lo, t.hi, t.edge_keys(), t.inner_ranges()) == (2, 3, [3], [(2, 2)])


def test_a_bound_at_a_buckets_value_keeps_or_leaves_it_as_strictness_says():
    assert decided(0.5, 0.5).edge_keys() == [] and decided(0.5, 0.5).inner_ranges() == [(0, 0)]
    assert decided(0.5, 3.0, strict_lo=True).lo == 1  # only 0.5 in bucket 0: none passes > 0.5
    assert decided(1.0, 3.0, strict_hi=True).hi == 2  # 3.0 is bucket 3's least: none < 3.0
    assert decided(0.6, 0.9).empty  # between two values: nothing at all


def test_a_bucket_whose_values_are_unknown_is_tested_row_by_row():
    def unknown(k):
        return -math.inf, math.inf
    t = within_buckets(interval_test(fine(bounds=None), 0, 0.7, 3.2), unknown)
    assert t.edge_keys() == [0, 3]
    # not read (not worth it): left to be tested too
    t = within_buckets(interval_test(fine(bounds=None), 0, 0.7, 3.7), lambda k: None if k == 0 else RANGES[k])
    assert (t.edge_keys(), t.inner_ranges()) == ([0], [(1, 3)])


def test_how_much_of_a_bucket_its_values_leave_to_decide_a_bound():
    assert decidable_share(0.5, 0.5, 0.0, 1.0) == 1.0  # one value: any bound but it decides
    assert decidable_share(math.inf, -math.inf, 0.0, 1.0) == 1.0  # empty
    assert decidable_share(0.0, 0.999, 0.0, 1.0) < 0.01  # continuous: almost never
    assert decidable_share(1.25, 1.75, 1.0, 2.0) == 0.5
    assert decidable_share(0.0, 0.5, -math.inf, 1.0) == 1.0  # an outer bucket without bounds


def test_a_value_range_is_read_where_the_rows_it_may_spare_cost_more():
    # 55 shards (100M rows): a bucket of 2,000 continuous values is not worth four reads a
    # shard, one value held by 20,000 rows is (departure delay's, on a 0.01 lattice), and
    # so is bucket 0's 23,554 at a share of 0.1
    assert not worth_a_value_range(2_000, 55, 0.01)
    assert worth_a_value_range(20_000, 55, 1.0)
    assert worth_a_value_range(23_554, 55, 0.1)
    assert not worth_a_value_range(0, 2, 1.0)  # an empty bucket: nothing to spare
