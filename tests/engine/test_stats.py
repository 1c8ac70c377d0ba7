"""engine/stats.py: order statistics and caveats from a view's slots.

The rank rules and the interpolation are checked against DuckDB itself on random data
(ties, integers, fractions, p at 0 and 1), the fused multiply-add against exact rational
arithmetic, and cells, clamped rows and caveats on small hand-made views."""

from __future__ import annotations

import math
from fractions import Fraction

import duckdb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushfire.engine import stats
from brushfire.lineage.arrays import Aggregates
from brushfire.lineage.layout import Dim, ViewLayout


def normal(lo: float, hi: float):
    """Floats in [lo, hi], subnormals included."""
    return st.floats(lo, hi)


@settings(max_examples=300, deadline=None)
@given(normal(-1e6, 1e6), normal(-1e6, 1e6), normal(-1e12, 1e12))
def test_fma_rounds_once(a, b, c):
    assert stats.fma(a, b, c) == float(Fraction(a) * Fraction(b) + Fraction(c))


@pytest.fixture(scope="module")
def con():
    return duckdb.connect()


def _ours(xs: np.ndarray, op: str, p: float | None, method: str):
    s = np.sort(xs)
    lo, hi, d = stats.ranks(op, p, method, np.array([len(xs)]))
    a, z = float(s[lo[0]]), float(s[hi[0]])
    if op in ("median", "quantile") and method == "continuous" and lo[0] != hi[0]:
        return stats._interpolate(a, z, float(d[0]))
    return a


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 60),
       p=st.one_of(st.sampled_from([0.0, 0.1, 0.25, 0.3, 0.33, 0.5, 0.75, 0.9, 0.999, 1.0]),
                   st.floats(0, 1)),
       integers=st.booleans())
def test_quantiles_equal_duckdb(con, seed, n, p, integers):
    rng = np.random.default_rng(seed)
    xs = rng.integers(-20, 20, n).astype(float) if integers else np.round(rng.normal(0, 100, n), 2)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT unnest(?::DOUBLE[]) AS x", [xs.tolist()])
    want = con.execute(f"SELECT quantile_cont(x, {p!r}), quantile_disc(x, {p!r}), median(x), "
                       "min(x), max(x) FROM t").fetchone()
    got = (_ours(xs, "quantile", p, "continuous"), _ours(xs, "quantile", p, "discrete"),
           _ours(xs, "median", None, "continuous"), _ours(xs, "min", None, ""),
           _ours(xs, "max", None, ""))
    assert got == want


def view(reasons=(), nbars=3, width=1, op="count", measure="none", labels=None) -> ViewLayout:
    return ViewLayout("v", "histogram", op, nbars, 0, labels or [[i, i + 1] for i in range(nbars)],
                      measure=measure, reasons=list(reasons), width=width)


def test_clamped_rows_are_shown_in_the_edge_bars():
    v = view(["null", "clamped_below", "clamped_above"])
    counts = np.array([5, 6, 7, 1, 2, 3, 0])  # bars, null, below, above, dropped
    agg = Aggregates(counts, np.zeros(7), np.zeros(7, np.int64))
    assert list(stats.shown(v)) == [0, 1, 2, -1, 0, 2]
    assert list(stats.bar_counts(v, agg)) == [7, 6, 10]
    assert stats.caveats(v, agg) == {"null": 1, "clamped_below": 2, "clamped_above": 3}
    assert list(stats.bars_of_codes(v, np.array([0, 3, 4, 5, 6]))) == [0, -1, 0, 2, -1]


def test_cells_give_exact_statistics_from_keys():
    dim = Dim("value:m", "dense", "m", None, "int", 3, False, values=[10, 20, 40])
    v = view(["null"], nbars=2, width=4, op="median", measure="cells")
    v.p, v.mstarts = 0.5, [0, 1, 2, 3]
    # bar 0: 10, 20, 20, 40 (and one null); bar 1: nothing; null reason: one 40
    cells = [1, 2, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0]
    agg = Aggregates(np.array(cells), np.zeros(13), np.zeros(13, np.int64))
    data = stats.view_data(v, agg, dim)
    assert data.counts == [5, 0] and data.values == [20.0, None]
    assert data.caveats == {"null": 1, "measure_null": 1}
    v.op = "max"
    assert stats.view_data(v, agg, dim).values == [40, None]
    v.op = "distinct"
    assert stats.view_data(v, agg, dim).values == [3, 0]  # count(DISTINCT x): 0, not NULL


def test_gathered_blocks_give_the_rank_within_the_block():
    dim = Dim("value:m", "fine", "m", None, "float", 2, True, raw=0, edges=[-math.inf, 5.0])
    v = view([], nbars=1, width=3, op="quantile", measure="cells")
    v.p, v.method, v.mstarts = 0.75, "continuous", [0, 1, 2]
    values = {0: [1.0, 3.0], 1: [9.0, 7.0, 8.0]}  # block -> the rows' raw values (unsorted)
    agg = Aggregates(np.array([2, 3, 0, 0]), np.zeros(4), np.zeros(4, np.int64))

    def gather(wanted, offs, kranges):
        out = np.empty(offs[-1])
        for code, t in enumerate(wanted):
            if t >= 0:
                out[offs[t]:offs[t + 1]] = values[code]
        return out

    # sorted 1, 3, 7, 8, 9: h = 4 * 0.75 = 3 -> 8
    assert stats.view_data(v, agg, dim, gather).values == [8.0]
