"""What a view shows, from its slots (lineage/layout.py): each bar's count and value
(count, sum, mean, or an order statistic), and its caveats — how many rows it does not
show, and why. Pure numpy over one view's slice of the aggregates; the rows themselves
are read only through `gather`, a callable the session passes in.

Order statistics are exact, with SQL's semantics (DuckDB's): over a bar's non-missing
measures (null and NaN skipped) sorted ascending, x[0] .. x[n-1],
- min = x[0], max = x[n-1], distinct = how many different values (0 without any);
- quantile_cont(p) (and median = p 0.5): h = (n - 1) p, lo = floor(h), hi = ceil(h);
  x[lo] when lo == hi, else x[lo] (1 - d) + x[hi] d with d = h - lo (computed as DuckDB
  does, one multiply fused into the add, so that results agree to the last bit);
- quantile_disc(p): x[max(1, n - floor(n - n p)) - 1];
- a bar without measures has no value (None), as SQL returns NULL (distinct: 0).
A bar's cells count its rows per measure block; the rank's block and the rank within it
come from their prefix sums. With a block per key (a dense or dict dim) the value is the
key's; otherwise the exact values of the one or two blocks a rank falls in are gathered
from the rows passing the view's filters (a small kernel over the measure's backward
index) and the rank within the block is selected (a quickselect kernel) — no sort of the
rows, and no Python per bar: a 250 x 250 heatmap's 62,500 bars cost what its rows do.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from brushfire.engine import kernels as K
from brushfire.engine.api import ViewData
from brushfire.engine.state import merge_ranges
from brushfire.lineage.arrays import Aggregates
from brushfire.lineage.layout import Dim, ViewLayout
from brushfire.spec import aggregates
from brushfire.values import format_instant, raw_instant
from brushfire.views import view_type

# gather(wanted codes -> target, offsets of the targets, candidate key ranges of the
# measure dim) -> the targets' measures (raw values of a fine dim, or keys of a dense one)
Gather = Callable[[np.ndarray, np.ndarray, list], np.ndarray]

SHOWN_REASONS = ("clamped_below", "clamped_above")  # counted in an edge bar


def shown(v: ViewLayout) -> np.ndarray:
    """The bar each of the view's bars and reasons is shown in (-1: not shown): bars as
    they are, clamped rows in the first / last bar."""
    out = np.full(v.kbars, -1, np.int64)
    out[:v.nbars] = np.arange(v.nbars)
    for kb, b in _clamps(v):
        out[kb] = b
    return out


def _clamps(v: ViewLayout) -> list[tuple[int, int]]:
    """(reason pseudo-bar, the edge bar its rows are shown in) of a clamped view."""
    out = []
    for i, r in enumerate(v.reasons):
        if r in SHOWN_REASONS and v.nbars:
            out.append((v.nbars + i, 0 if r == "clamped_below" else v.nbars - 1))
    return out


def bars_of_codes(v: ViewLayout, codes: np.ndarray) -> np.ndarray:
    """The bar shown for each code of the view (-1: none)."""
    kb = np.asarray(codes, np.int64) // v.width
    where = shown(v)
    return np.where(kb < v.kbars, where[np.minimum(kb, v.kbars - 1)] if v.kbars else -1, -1)


def per_bar(v: ViewLayout, a: np.ndarray) -> np.ndarray:
    """A view's slots (`a`, its all_slots slice) per shown bar: (nbars, width), clamped
    rows added to the edge bars."""
    cells = np.asarray(a[:v.ncodes]).reshape(v.kbars, v.width)
    out = cells[:v.nbars].copy()
    for kb, b in _clamps(v):
        out[b] += cells[kb]
    return out


def bar_counts(v: ViewLayout, agg: Aggregates) -> np.ndarray:
    """Rows per shown bar."""
    return per_bar(v, agg.counts[v.all_slots]).sum(axis=1)


def caveats(v: ViewLayout, agg: Aggregates, cells: np.ndarray | None = None,
            oks: np.ndarray | None = None) -> dict[str, int]:
    """How many rows the view does not show, by reason (lineage/layout.py), plus the rows
    clamped into its edge bars, folded into '(other)', and shown without a measure
    (not in a sum, mean or order statistic): only the reasons that have rows. `cells`,
    `oks`: the view's per_bar counts and non-missing measures, when already computed."""
    counts = agg.counts[v.all_slots]
    w = v.width
    out: dict[str, int] = {}
    for i, r in enumerate(v.reasons):
        at = (v.nbars + i) * w
        n = int(counts[at] if w == 1 else counts[at:at + w].sum())
        if n:
            out[r] = n
    dropped = int(counts[v.ncodes])
    if dropped:
        out["not_shown"] = dropped
    if view_type(v).value_bars and v.other_bar:
        at = (v.nbars - 1) * w
        n = int(counts[at] if w == 1 else counts[at:at + w].sum())
        if n:
            out["other"] = n
    if v.measure != "none":
        if cells is None:
            cells = per_bar(v, counts)
        if v.cells:
            n = int(cells[:, -1].sum())
        else:
            if oks is None:
                oks = per_bar(v, agg.oks[v.all_slots])
            n = int(cells.sum() - oks.sum())
        if n:
            out["measure_null"] = n
    return out


def view_data(v: ViewLayout, agg: Aggregates, dim: Dim | None = None,
              gather: Gather | None = None) -> ViewData:
    """The view's bars as shown: rows per bar, the value of each (None: no value), and its
    caveats. `dim`: an order statistic's measure dim; `gather`: reads the measures of
    rows (needed when a block holds more than one key)."""
    if v.cells:
        cells = per_bar(v, agg.counts[v.all_slots])
        values = order_values(v, cells, dim, gather)
        return ViewData(v.name, v.labels, cells.sum(axis=1).tolist(), values, caveats(v, agg, cells))
    # one slot per bar: the bars' slots, and the clamped rows added to the edge bars
    sl = slice(v.bar_off, v.bar_off + v.nbars)
    clamps = _clamps(v)
    n = agg.counts[sl]
    if clamps:
        n = n.copy()
        for kb, b in clamps:
            n[b] += agg.counts[v.bar_off + kb]
    cav = _plain_caveats(v, agg)
    op = aggregates.op(v.op)
    if op.kind == "count":  # the values are the counts (integers: half the JSON of floats)
        counts = n.tolist()
        return ViewData(v.name, v.labels, counts, counts.copy(), cav)
    sums, k = agg.sums[sl], agg.oks[sl]
    if clamps:
        sums, k = sums.copy(), k.copy()
        for kb, b in clamps:
            sums[b] += agg.sums[v.bar_off + kb]
            k[b] += agg.oks[v.bar_off + kb]
    missing = int(n.sum() - k.sum())
    if missing:
        cav["measure_null"] = missing
    values = [op.value(x, c) for x, c in zip(sums.tolist(), k.tolist(), strict=True)]
    return ViewData(v.name, v.labels, n.tolist(), values, cav)


def _plain_caveats(v: ViewLayout, agg: Aggregates) -> dict[str, int]:
    """`caveats` of a view of one slot per bar, but its measure's."""
    out: dict[str, int] = {}
    c = agg.counts
    at = v.bar_off + v.nbars
    for i, r in enumerate(v.reasons):
        n = int(c[at + i])
        if n:
            out[r] = n
    n = int(c[v.bar_off + v.ncodes])
    if n:
        out["not_shown"] = n
    if view_type(v).value_bars and v.other_bar:
        n = int(c[at - 1])
        if n:
            out["other"] = n
    return out


# --- order statistics ------------------------------------------------------------------


def ranks(op: str, p: float | None, method: str, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, d) per bar of `n` measures (n > 0): the 0-based ranks of the one or two
    values the statistic takes and the weight of the second (SQL's rules, above)."""
    n = np.asarray(n, np.int64)
    zero = np.zeros(len(n))
    if op == "min":
        return np.zeros(len(n), np.int64), np.zeros(len(n), np.int64), zero
    if op == "max":
        return n - 1, n - 1, zero
    q = 0.5 if p is None else float(p)
    if method == "discrete":
        nf = n.astype(np.float64)
        idx = np.maximum(1, n - np.floor(nf - nf * q).astype(np.int64)) - 1
        return idx, idx, zero
    h = (n - 1).astype(np.float64) * q
    lo = np.floor(h)
    hi = np.ceil(h)
    return lo.astype(np.int64), hi.astype(np.int64), h - lo


def order_values(v: ViewLayout, cells: np.ndarray, dim: Dim | None, gather: Gather | None) -> list:
    """Each bar's statistic from its cells (nbars, width): the last cell is rows without
    a measure. Vector operations over the cells, one kernel call over the values read:
    O(cells + values), whatever the number of bars."""
    m = v.width - 1
    counts = cells[:, :m]
    if v.op == "distinct":  # a count, as SQL's count(DISTINCT x): 0 without measures
        return np.count_nonzero(counts, axis=1).tolist()
    n = counts.sum(axis=1)
    has = np.flatnonzero(n > 0)
    if not len(has):
        return [None] * v.nbars
    lo, hi, d = ranks(v.op, v.p, v.method, n[has])
    # the block holding each rank, and the rank within it
    jl, rl, jh, rh = (np.empty(len(has), np.int64) for _ in range(4))
    K.rank_blocks(np.ascontiguousarray(cells, np.int64), m, has.astype(np.int64), lo, hi, jl, rl, jh, rh)
    exact = dim is not None and dim.kind in ("dense", "dict") and m == dim.nkeys
    if exact:  # a block per key: the key's value
        values = dim.value_array
        xl, xh = values[jl], values[jh]
    else:
        got = _gathered(v, dim, has, jl, rl, jh, rh, cells, gather)
        if got is None:
            return [None] * v.nbars
        xl, xh = got
    out = np.full(v.nbars, None, object)  # Python floats / ints once assigned, None elsewhere
    if aggregates.op(v.op).takes_method and v.method != "discrete":  # interpolated
        out[has] = interpolate(xl.astype(np.float64), xh.astype(np.float64), d)
    elif dim is not None and dim.value_type == "temporal":
        out[has] = [format_instant(raw_instant(x)) for x in xl.tolist()]
    elif dim is not None and dim.value_type == "int":
        out[has] = _ints(xl)
    else:
        out[has] = xl.astype(np.float64)
    return out.tolist()


def interpolate(lo: np.ndarray, hi: np.ndarray, d: np.ndarray) -> np.ndarray:
    """quantile_cont's lo (1 - d) + hi d per bar, to DuckDB's last bit (lo where d is 0):
    the kernel, with its rounding rules, in engine/kernels.py."""
    out = np.empty(len(lo), np.float64)
    K.interpolate(np.ascontiguousarray(lo, np.float64), np.ascontiguousarray(hi, np.float64),
                  np.ascontiguousarray(d, np.float64), out)
    return out


def _ints(x: np.ndarray) -> np.ndarray | list:
    """Values of an int dim as Python's int() gives them, vectorized: a dense dim's values
    as they are, a fine dim's raw float64 values cast (int() each one past int64's range,
    where a cast would not give Python's answer)."""
    if x.dtype.kind in "iu":
        return x
    if x.dtype.kind in "fb" and (not len(x) or np.abs(x).max() < 2.0**63):
        return x.astype(np.int64)
    return [int(a) for a in x.tolist()]


def _gathered(v: ViewLayout, dim: Dim | None, bars: np.ndarray, jl, rl, jh, rh, cells,
              gather: Gather | None) -> tuple[np.ndarray, np.ndarray] | None:
    """The values at ranks (rl, rh) within blocks (jl, jh) of `bars`, from their rows
    (None: no rows to read). A target per (bar, block) a rank falls in, numbered in cell
    order through a table over the cells; a code wants its shown bar's targets (clamped
    rows are shown in the edge bars); the rows are read once and each rank selected in
    its target's values (a kernel): no Python per bar."""
    if gather is None or dim is None:
        return None
    w = v.width
    cell_l, cell_h = bars * w + jl, bars * w + jh
    tcells = np.unique(np.concatenate([cell_l, cell_h]))  # the targets' cells, in cell order
    table = np.full(v.nbars * w, -1, np.int64)  # cell of a bar -> its target
    table[tcells] = np.arange(len(tcells))
    where = shown(v)
    wanted = np.full(v.ncodes + 1, -1, np.int64)
    kb = np.flatnonzero(where >= 0)
    wanted[:v.ncodes].reshape(v.kbars, w)[kb] = table.reshape(v.nbars, w)[where[kb]]
    offs = np.concatenate([[0], np.cumsum(cells.reshape(-1)[tcells])]).astype(np.int64)
    starts = v.mstarts
    kranges = merge_ranges([(starts[j], starts[j + 1] - 1) for j in np.unique(tcells % w).tolist()])
    values = gather(wanted, offs, kranges)
    if values is None:
        return None
    if dim.kind == "dense":
        keys = values.astype(np.int64)
        values = dim.value_array[keys] if len(keys) else np.zeros(0)
    values = np.ascontiguousarray(values)
    targets = np.concatenate([table[cell_l], table[cell_h]])
    out = np.empty(len(targets), values.dtype)
    K.select_ranks(values, offs, targets, np.concatenate([rl, rh]).astype(np.int64), out)
    return out[:len(bars)], out[len(bars):]
