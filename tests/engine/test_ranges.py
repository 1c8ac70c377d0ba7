"""engine/ranges.py against a set-of-positions reference: a list of ranges means the set
of positions it covers, so every function is checked by expanding ranges into sets."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brushfire.engine import ranges as R

FAST = settings(max_examples=60, deadline=None)
LIMIT = 30  # positions 0..LIMIT: small, so random ranges touch, overlap and nest often


def positions(ranges) -> set[int]:
    """The positions a list of [start, stop) pairs covers."""
    return {p for s, e in ranges for p in range(s, e)}


def runs(points: set[int]) -> list[tuple[int, int]]:
    """The canonical Ranges of a set: maximal runs of consecutive positions, in order."""
    out: list[tuple[int, int]] = []
    for p in sorted(points):
        if out and out[-1][1] == p:
            out[-1] = (out[-1][0], p + 1)
        else:
            out.append((p, p + 1))
    return out


def labels(pieces) -> dict[int, bool]:
    """position -> flag of the (start, stop, flag) pieces, which must not overlap."""
    out: dict[int, bool] = {}
    for s, e, flag in pieces:
        for p in range(s, e):
            assert p not in out, f"position {p} in two pieces of {pieces}"
            out[p] = flag
    return out


# raw lists: unsorted, overlapping, adjacent, empty (s == e) and reversed (s > e) pairs
raw_range_lists = st.lists(st.tuples(st.integers(0, LIMIT), st.integers(0, LIMIT)), max_size=8)
# normalized Ranges, built from a set of positions without using R.normalize
range_sets = st.sets(st.integers(0, LIMIT - 1), max_size=LIMIT).map(runs)


def assert_well_formed(pieces) -> None:
    """Sorted, non-empty, disjoint pieces."""
    for s, e, *_ in pieces:
        assert s < e
    for (_, e, *_), (s, *_) in zip(pieces, pieces[1:], strict=False):
        assert e <= s


# --- normalize ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ([], []),
        ([(3, 3)], []),
        ([(5, 2)], []),
        ([(0, 2), (2, 4)], [(0, 4)]),
        ([(4, 6), (0, 2)], [(0, 2), (4, 6)]),
        ([(0, 10), (2, 3)], [(0, 10)]),
        ([(1, 3), (2, 5), (7, 7), (8, 9)], [(1, 5), (8, 9)]),
    ],
    ids=["nothing", "empty", "reversed", "adjacent", "unsorted", "nested", "mixed"],
)
def test_normalize_table(raw, expected):
    assert R.normalize(raw) == expected


@FAST
@given(raw_range_lists)
def test_normalize_is_the_canonical_form_of_the_covered_set(raw):
    got = R.normalize(raw)
    assert got == runs(positions(raw))
    assert R.normalize(got) == got


# --- size ------------------------------------------------------------------------------------


@FAST
@given(range_sets)
def test_size_counts_covered_positions(ranges):
    assert R.size(ranges) == len(positions(ranges))


def test_size_of_nothing():
    assert R.size([]) == 0


# --- segments / changes ------------------------------------------------------------------------


@FAST
@given(range_sets, range_sets)
def test_segments_split_the_union_by_membership(old, new):
    got = R.segments(old, new)
    assert_well_formed(got)
    old_set, new_set = positions(old), positions(new)
    assert labels(got) == {p: p in new_set for p in old_set | new_set}
    for s, e, _ in got:  # each piece is all in old or all out of it
        assert len({p in old_set for p in range(s, e)}) == 1


@FAST
@given(range_sets, range_sets)
def test_changes_are_the_symmetric_difference(old, new):
    got = R.changes(old, new)
    assert_well_formed(got)
    old_set, new_set = positions(old), positions(new)
    assert labels(got) == {p: p in new_set for p in old_set ^ new_set}


@FAST
@given(range_sets, range_sets)
def test_applying_changes_to_old_gives_new(old, new):
    """What flip_bits relies on: enter the entering pieces, leave the others."""
    members = positions(old)
    for s, e, entering in R.changes(old, new):
        piece = set(range(s, e))
        members = members | piece if entering else members - piece
    assert members == positions(new)


@pytest.mark.parametrize(
    ("old", "new", "segments", "changes"),
    [
        ([], [], [], []),
        ([], [(2, 5)], [(2, 5, True)], [(2, 5, True)]),
        ([(2, 5)], [], [(2, 5, False)], [(2, 5, False)]),
        ([(2, 5)], [(2, 5)], [(2, 5, True)], []),
        ([(0, 4)], [(2, 6)], [(0, 2, False), (2, 4, True), (4, 6, True)],
         [(0, 2, False), (4, 6, True)]),
        ([(0, 2)], [(2, 4)], [(0, 2, False), (2, 4, True)], [(0, 2, False), (2, 4, True)]),
        ([(0, 10)], [(3, 4)], [(0, 3, False), (3, 4, True), (4, 10, False)],
         [(0, 3, False), (4, 10, False)]),
    ],
    ids=["nothing", "enter", "leave", "same", "shift", "adjacent", "shrink-inside"],
)
def test_segments_and_changes_table(old, new, segments, changes):
    assert R.segments(old, new) == segments
    assert R.changes(old, new) == changes


# --- as_arrays -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pieces", "flags"),
    [([], []), ([(0, 3), (5, 9)], [True, True]), ([(0, 3, False), (5, 9, True)], [False, True])],
    ids=["empty", "ranges", "pieces"],
)
def test_as_arrays_kernel_dtypes(pieces, flags):
    starts, stops, got_flags = R.as_arrays(pieces)
    assert starts.dtype == np.int64 and stops.dtype == np.int64 and got_flags.dtype == np.bool_
    assert starts.tolist() == [p[0] for p in pieces]
    assert stops.tolist() == [p[1] for p in pieces]
    assert got_flags.tolist() == flags
