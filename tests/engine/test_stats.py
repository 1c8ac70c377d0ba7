"""engine/stats.py: order statistics and caveats from a view's slots.

The rank rules and the interpolation are checked against DuckDB itself on random data
(ties, integers, fractions, p at 0 and 1) (the interpolation kernel against exact rational
arithmetic: tests/engine/test_kernels.py); every bar's statistic of random views, many
bars at once, against its plain per-bar definition; cells, clamped rows and caveats on
small hand-made views."""

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
from brushfire.values import format_instant


@pytest.fixture(scope="module")
def con():
    return duckdb.connect()


def _ours(xs: np.ndarray, op: str, p: float | None, method: str):
    s = np.sort(xs)
    lo, hi, d = stats.ranks(op, p, method, np.array([len(xs)]))
    a, z = float(s[lo[0]]), float(s[hi[0]])
    if op in ("median", "quantile") and method == "continuous" and lo[0] != hi[0]:
        return float(stats.interpolate(np.array([a]), np.array([z]), d)[0])
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


# --- every bar's order statistic at once, against its per-bar definition -----------------------

REASONS = ["null", "clamped_below", "clamped_above", "beyond_top"]


def ref_statistic(xs: list, op: str, p: float, method: str, vtype: str):
    """A bar's statistic by its definition (the module docstring), one bar at a time in
    plain Python: sort its measures, take the rank(s), interpolate in rationals."""
    if op == "distinct":
        return len(set(xs))
    if not xs:
        return None
    s, n = sorted(xs), len(xs)
    if op in ("min", "max"):
        x = s[0] if op == "min" else s[-1]
    elif method == "discrete":
        x = s[max(1, n - math.floor(n - n * p)) - 1]
    else:
        h = (n - 1) * p
        lo, hi = math.floor(h), math.ceil(h)
        if lo == hi:
            return float(s[lo])
        d = h - lo
        return float(Fraction(float(s[lo])) * Fraction(1.0 - d) + Fraction(float(s[hi]) * d))
    if vtype == "temporal":
        return format_instant(int(x))
    return int(x) if vtype == "int" else float(x)


def random_pool(rng: np.random.Generator, vtype: str) -> np.ndarray:
    """The distinct values of a measure, ascending (rows draw from them: ties)."""
    n = int(rng.integers(1, 14))
    if vtype == "float":
        return np.unique(rng.normal(0, 50, n).round(1)) + 0.0  # + 0.0: no -0.0 (sign of a tie)
    x = np.unique(rng.integers(-6, 7, n))
    return x * 3_600_000_000 + 1_600_000_000_000_000 if vtype == "temporal" else x


def random_blocks(rng: np.random.Generator, nkeys: int) -> list[int]:
    """Measure blocks as runs of keys: their first keys, ending with nkeys."""
    cuts = rng.choice(np.arange(1, nkeys), int(rng.integers(0, nkeys)), replace=False) if nkeys > 1 else []
    return sorted({0, nkeys, *map(int, cuts)})


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1),
       kind=st.sampled_from(["dense exact", "dense blocks", "fine"]),
       vtype=st.sampled_from(["int", "float", "temporal"]),
       stat=st.sampled_from([("min", ""), ("max", ""), ("median", "continuous"),
                             ("median", "discrete"), ("quantile", "continuous"),
                             ("quantile", "discrete"), ("distinct", "")]),
       p=st.one_of(st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0]), st.floats(0, 1)))
def test_order_values_equal_the_per_bar_definition(seed, kind, vtype, stat, p):
    """Random views of up to 300 bars (empty ones among them) and reasons (clamped rows
    shown in the edge bars), rows drawing their measure from a few values (ties) or none,
    measures read from a dense dim's values (a block per key, or runs of keys gathered from
    the rows) or gathered raw values of a fine dim: every bar's value, bit for bit and of
    the same type, is its per-bar definition's."""
    op, method = stat
    if (op == "distinct" and kind != "dense exact") or (vtype == "temporal" and op not in ("min", "max")):
        return  # what capture and the spec allow: distinct of keys, min / max of instants
    p = 0.5 if op == "median" else p
    rng = np.random.default_rng(seed)
    pool = random_pool(rng, vtype)
    if kind == "fine":  # keys: buckets of raw values from edges among the values
        edges = [-math.inf, *np.unique(rng.choice(pool, int(rng.integers(0, len(pool) + 1)))).tolist()]
        dim = Dim("value:m", "fine", "m", None, vtype, len(edges), True, raw=0, edges=edges)
    else:
        dim = Dim("value:m", "dense", "m", None, vtype, len(pool), False, values=pool.tolist())
    starts = list(range(dim.nkeys + 1)) if kind == "dense exact" else random_blocks(rng, dim.nkeys)
    nbars = int(rng.integers(1, 301))
    reasons = [r for r in REASONS if rng.random() < 0.5]
    v = view(reasons, nbars=nbars, width=len(starts), op=op, measure="cells")
    v.p, v.method, v.mstarts = p, method or "continuous", starts
    # rows: a bar or reason (or dropped), and a measure (or none); some bars get no rows
    n = int(rng.integers(0, 6 * nbars))
    kbar = rng.integers(0, v.kbars + 1, n)  # kbars: dropped
    kbar[np.isin(kbar, rng.choice(nbars, nbars // 3))] = v.kbars
    x = rng.choice(pool, n)
    key = np.searchsorted(edges, x, "right") - 1 if kind == "fine" else np.searchsorted(pool, x)
    block = np.searchsorted(starts, key, "right") - 1
    block[rng.random(n) < 0.15] = v.width - 1  # no measure
    code = np.where(kbar < v.kbars, kbar * v.width + block, v.ncodes)
    agg = Aggregates(np.bincount(code, minlength=v.nslots), np.zeros(v.nslots), np.zeros(v.nslots, np.int64))

    def gather(wanted, offs, kranges):  # the rows' measures, in row order
        out, fill = np.full(offs[-1], np.nan), offs[:-1].copy()
        for r in range(n):
            t = wanted[code[r]]
            if t >= 0:
                assert any(a <= key[r] <= b for a, b in kranges)
                out[fill[t]] = x[r] if kind == "fine" else key[r]
                fill[t] += 1
        assert np.array_equal(fill, offs[1:])
        return out

    got = stats.view_data(v, agg, dim, gather).values
    edge = {"clamped_below": 0, "clamped_above": nbars - 1}
    bar = [b if b < nbars else edge.get(reasons[b - nbars], -1) if b < v.kbars else -1 for b in kbar]
    measure = x if kind == "fine" else pool[key]
    want = [ref_statistic([measure[r].item() for r in range(n) if bar[r] == b and block[r] < v.width - 1],
                          op, p, method, vtype) for b in range(nbars)]
    assert [repr(a) for a in got] == [repr(a) for a in want]
