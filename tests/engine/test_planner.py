"""The planner is a pure function from estimated work to a method: a table of cases."""

from __future__ import annotations

import pytest

from brushfire.engine import costs as C
from brushfire.engine import planner as P
from brushfire.engine.costs import Work
from brushfire.engine.methods.conditional import worth_a_tile

N = 30_000_000
BLOCKS = N // 65_536 + 1
VIEWS = ("a", "b", "c", "d", "e")
NEEDS = {v: tuple(g for g in ("A", "B", "C") if g != v.upper()) for v in VIEWS}


def work(**kw) -> Work:
    base = {"n_rows": N, "n_blocks": BLOCKS, "views": VIEWS, "n_filters": 3, "delta_rows": None,
            "drivers": {}, "needs": NEEDS}
    return Work(**{**base, **kw})


CASES = [
    # a one-pixel move of a brush among fixed filters: only the rows that changed
    ("one-pixel move", work(delta_rows=50_000, drivers={"A": (N // 2, 1), "B": (N // 2, 1)}),
     "incremental"),
    # a jump from an empty brush to half the domain, others wide: every row, in order
    ("jump among wide filters", work(delta_rows=N // 2, drivers={"A": (N // 2, 1), "B": (N * 9 // 10, 1),
                                                                "C": (N * 8 // 10, 1)}), "scan"),
    # the same jump when another filter keeps 1 % of the rows: from that filter's rows
    ("jump with a selective filter", work(delta_rows=N // 2, drivers={"A": (N // 2, 1), "B": (N // 100, 1),
                                                                     "C": (N // 100, 1)}), "recompute"),
    # a conditional cube built while dragging: a lookup beats even a small delta
    ("drag with a tile", work(delta_rows=200_000, tile_rows=20_000, tile_cells=200,
                              drivers={"A": (N // 2, 1)}), "tile"),
    # a rect brush has no incremental steps estimate here: scan or recompute
    ("no incremental", work(delta_rows=None, drivers={"A": (N // 3, 1), "B": (N // 3, 1),
                                                      "C": (N // 3, 1)}), "scan"),
    # tiny data: a scan of everything is cheapest
    ("tiny", work(n_rows=3000, n_blocks=1, delta_rows=2000, drivers={"A": (1500, 1)}), "scan"),
    # many key ranges multiply the block searches: a scattered set selection
    ("scattered ranges", work(delta_rows=N // 20, delta_ranges=4000, drivers={"A": (N // 2, 1)}), "scan"),
    # with clustered copies the changed rows are read in order: a wide jump's 40 % of the
    # rows beats a scan of them all (without copies, the scan wins: "jump among wide filters")
    ("wide jump, clustered", work(delta_rows=N * 4 // 10, clustered=frozenset({"", "A", "B", "C"}),
                                  drivers={"A": (N // 2, 1), "B": (N * 9 // 10, 1),
                                           "C": (N * 8 // 10, 1)}), "incremental"),
    # ... and a filter's rows beat the changed ones when they are fewer, copy or not
    ("jump with a selective filter, clustered",
     work(delta_rows=N // 2, clustered=frozenset({"", "B", "C"}),
          drivers={"A": (N // 2, 1), "B": (N // 10, 1), "C": (N // 10, 1)}), "recompute"),
    # a moving brush of one interval test: its copy's keys decide each chunk's weight, no row
    # is tested on it, so its changed rows beat slightly more rows of a selective filter ...
    ("changed rows decided by their keys",
     work(delta_rows=N * 14 // 100, clustered=frozenset({"", "A", "B", "C"}),
          drivers={"A": (N // 2, 1), "B": (N // 8, 1), "C": (N // 8, 1)}), "incremental"),
    # ... which win when each changed row must be tested on it (a rect brush, a set)
    ("changed rows tested one by one",
     work(delta_rows=N * 14 // 100, clustered=frozenset({"", "A", "B", "C"}), tested=frozenset({""}),
          drivers={"A": (N // 2, 1), "B": (N // 8, 1), "C": (N // 8, 1)}), "recompute"),
    # a selective filter B (1 %) drives four views; the fifth (b) leaves B out and would be
    # recomputed from A's 40 %: it is updated from A's 2 % changed rows instead
    ("mixed: one view incremental, the others recomputed",
     work(delta_rows=N // 50, clustered=frozenset({"", "A", "B", "C"}),
          drivers={"A": (N * 4 // 10, 1), "B": (N // 100, 1), "C": (N // 2, 1)}), "mixed"),
]


@pytest.mark.parametrize(("w", "method"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_cheapest_method(w: Work, method: str) -> None:
    assert P.choose(w).method == method


def test_recompute_groups_views_by_their_most_selective_filter():
    w = work(drivers={"A": (1000, 1), "B": (2000, 1), "C": (N, 1)}, delta_rows=N)
    choice = P.choose(w)
    assert choice.method == "recompute"
    # view a's own filter is A: its rows come from B; the others' from A
    assert choice.drivers == {"a": "B", "b": "A", "c": "A", "d": "A", "e": "A"}


def test_a_preferred_method_wins_when_it_applies():
    w = work(delta_rows=50_000, drivers={"A": (N // 2, 1)})
    assert P.choose(Work(**{**w.__dict__, "prefer": "scan"})).method == "scan"
    # a tile is not an option without one: the cheapest of the others
    assert P.choose(Work(**{**w.__dict__, "prefer": "tile"})).method == "incremental"


def test_sparse_rows_through_the_index_cost_their_memory_lines():
    """A row reached through the index costs several times more where the rows are sparse
    in their blocks (each reads its own line of every column) than where they are dense
    (perf/calibrate.py at 30M: about 80-90 ns against 14)."""
    def per_row(rows):
        return C.index_cost(rows, 1, BLOCKS, 6, N, 5) / rows

    assert per_row(N // 100) > 5 * per_row(N)
    assert 50 < per_row(N // 100) < 150 and per_row(N) < 30


def test_every_cost_is_bounded_by_a_scan():
    for _, w, _ in CASES:
        assert P.choose(w).cost <= C.scan_cost(w.n_rows, w.n_filters, len(w.views))


@pytest.mark.parametrize(("moves", "per_move", "pause", "build"), [
    (1, 10e6, 0.015, False),  # a first move: not a drag yet
    (2, 10e6, 0.015, True),  # dragged at 60 Hz, and each move costs 10 ms of work
    (5, 100_000, 0.015, False),  # dragged, but moves are already cheap
    (5, 10e6, 0.0005, False),  # sent back to back: no room to build it in
])
def test_when_a_conditional_cube_is_built(moves, per_move, pause, build):
    assert worth_a_tile(moves, per_move, pause, quiet=0.004) is build


def test_a_clustered_copy_reads_rows_at_a_scans_cost():
    """From a clustered copy a row costs about what it costs in a scan (plus the filter
    tests of the moving one's old and new state), whatever its density: a 1 % move is
    about a hundredth of a scan, not a tenth of it."""
    move = C.index_cost(N // 100, 2, BLOCKS, 6, N, 5, clustered=True)
    assert move < C.scan_cost(N, 5, 6) / 50
    assert move < C.index_cost(N // 100, 2, BLOCKS, 6, N, 5) / 5


ALL_COPIES = frozenset({"", "A", "B", "C"})


def test_a_jump_between_wide_filters_takes_a_cube_less_the_few_failing_rows():
    """Two wide filters: the rows passing either are most rows (recompute, incremental), the
    rows failing the wider one are few. Each view starts from the cube of the filter that
    fails the most rows (B) and loses the rows failing A."""
    needs = {v: ("A", "B") for v in ("c", "d", "e")}
    w = work(views=("c", "d", "e"), needs=needs, n_filters=2, clustered=ALL_COPIES,
             delta_rows=N * 7 // 10, drivers={"A": (N * 7 // 10, 1), "B": (N * 6 // 10, 1)},
             fails={"A": (N * 3 // 10, 1), "B": (N * 4 // 10, 1)},
             cubes=dict.fromkeys(needs, ("A", "B")), cube_rows={"A": N // 100, "B": N // 100})
    choice = P.choose(w)
    assert choice.method == "complement"
    assert choice.bases == {"c": "B", "d": "B", "e": "B"} and not choice.drivers
    assert choice.view_methods() == dict.fromkeys(needs, "complement")
    # without cubes to the views there is nothing to take the rows from
    assert P.choose(Work(**{**w.__dict__, "cubes": {}})).method != "complement"


def test_a_complement_plan_recomputes_the_views_a_selective_filter_applies_to():
    """C keeps 5 % of the rows: the views it applies to are recomputed from its rows; view
    c, which it does not filter, is B's cube less the rows failing A."""
    drivers = {"A": (N * 7 // 10, 1), "B": (N * 6 // 10, 1), "C": (N // 20, 1)}
    fails = {g: (N - r, 1) for g, (r, _) in drivers.items()}
    w = work(clustered=ALL_COPIES, delta_rows=N * 7 // 10, drivers=drivers, fails=fails,
             cubes=NEEDS, cube_rows=dict.fromkeys("ABC", N // 100))
    choice = P.choose(w)
    assert choice.method == "complement"
    assert choice.drivers == {"a": "C", "b": "C", "d": "C", "e": "C"}
    assert choice.bases == {"c": "B"}
    assert choice.view_methods() == {"a": "recompute", "b": "recompute", "c": "complement",
                                     "d": "recompute", "e": "recompute"}
    # forced (the oracle tests), every view takes the complement
    forced = P.choose(Work(**{**w.__dict__, "prefer": "complement"}))
    assert not forced.drivers and set(forced.bases) == set(VIEWS)
    assert all(b in NEEDS[v] for v, b in forced.bases.items())


def test_a_mixed_plan_recomputes_the_views_of_its_drivers_and_moves_the_rest():
    w = work(delta_rows=N // 50, clustered=frozenset({"", "A", "B", "C"}),
             drivers={"A": (N * 4 // 10, 1), "B": (N // 100, 1), "C": (N // 2, 1)})
    c = P.choose(w)
    assert c.drivers == {"a": "B", "c": "B", "d": "B", "e": "B"}
    assert c.view_methods() == dict.fromkeys("acde", "recompute")  # b: the plan's incremental pass
    cost = {m: P.choose(work(**{**w.__dict__, "prefer": m})).cost for m in ("incremental", "recompute")}
    assert c.cost < min(cost.values())
