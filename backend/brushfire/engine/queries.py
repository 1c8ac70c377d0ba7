"""Lineage queries (Smoke's backward and forward traces) on a session's filter state:
the rows behind bars or behind the selection (details on demand), the bars of given rows
in each view, linked highlighting, and the measures an order statistic reads.

`Queries` is the session's side of them (engine/session.py's `Session` is one): its
Python API (`details`, `highlight`, `forward`, `backward_rids`, `count_selected`) checks
what it is given, then does what the `answer_*` of a request checked by its message
(brushfire/requests.py) does; the functions below check nothing a request's check
checked (the view, its bars, the page, the columns, the rids)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from brushfire.engine import kernels as K
from brushfire.engine import ordering, stats
from brushfire.engine.api import (
    DetailsPage,
    DetailsRequest,
    ForwardRequest,
    HighlightRequest,
    ViewData,
    check_bars,
    details_request,
)
from brushfire.engine.costs import index_cost, scan_cost
from brushfire.engine.methods import scan
from brushfire.engine.state import Selection, Test, bars_test, merge_ranges
from brushfire.errors import InteractionError, NotCapturedError
from brushfire.lineage.arrays import Aggregates
from brushfire.lineage.layout import ViewLayout

if TYPE_CHECKING:
    from brushfire.engine.session import Session


class Queries:
    """The lineage queries of a session (a mixin of engine/session.py's `Session`)."""

    def backward_rids(self: Session, view: str | None = None, bars: list[int] | None = None,
                      offset: int = 0, limit: int | None = None) -> np.ndarray:
        """rids behind bars of a view as shown, or behind the selection (`rids_behind`)."""
        return rids_behind(self, view, check_view_bars(self, view, bars), offset, limit)

    def rids_behind(self: Session, view: str | None, bars: list[int] | None, offset: int = 0,
                    limit: int | None = None) -> np.ndarray:
        return rids_behind(self, view, bars, offset, limit)

    def count_selected(self: Session, view: str | None = None, bars: list[int] | None = None) -> int:
        """Number of rows `backward_rids` would return without paging."""
        return count_behind(self, view, check_view_bars(self, view, bars))

    def count_behind(self: Session, view: str | None, bars: list[int] | None) -> int:
        """`count_selected` of a checked view and bars (a request's)."""
        return count_behind(self, view, bars)

    def details(self: Session, view: str | None = None, bars: list[int] | None = None, page: int = 0,
                page_size: int | None = None, columns: list[str] | None = None,
                order_by: str | None = None, descending: bool = False) -> pa.Table:
        """A page of the input rows behind bars or the selection (`page_rows`)."""
        columns, size = details_request(self.plan, page, page_size, columns)
        if order_by is not None:
            details_request(self.plan, 0, None, [order_by])  # a details column
        bars = check_view_bars(self, view, bars)
        return page_rows(self, view, bars, page, size, columns, order_by, descending)

    def answer_details(self: Session, r: DetailsRequest) -> DetailsPage:
        spec = self.plan.dashboard.interactions.details  # (declared: the request's check)
        columns = list(dict.fromkeys(r.columns or spec.columns))  # each once
        rows = page_rows(self, r.view, r.bars, r.page, r.page_size or spec.page_size, columns,
                         r.order_by, r.descending)
        return DetailsPage(rows, count_behind(self, r.view, r.bars))

    def forward(self: Session, rids) -> dict[str, list[int]]:
        """Bars each view's rows `rids` contribute to (`bars_of_rows`)."""
        try:
            rids = np.asarray(rids, np.int64).reshape(-1)
        except (TypeError, ValueError, OverflowError):
            msg = "rids must be a list of row ids (integers)"
            raise InteractionError(msg) from None
        if len(rids) and (rids.min() < 0 or rids.max() >= self.store.n_rows):
            msg = f"rids must be in [0, {self.store.n_rows})"
            raise InteractionError(msg)
        return bars_of_rows(self, rids)

    def answer_forward(self: Session, r: ForwardRequest) -> dict[str, list[int]]:
        return bars_of_rows(self, np.asarray(r.rids, np.int64).reshape(-1))

    def highlight(self: Session, source: str, bars: list[int]) -> dict[str, ViewData]:
        """Linked highlighting from `bars` of `source` (`highlighted`)."""
        if not highlight_targets(self, source):
            msg = f"no highlight from view {source!r} is declared"
            raise NotCapturedError(msg)
        return highlighted(self, source, check_bars(self.layout.view(source).nbars, source, bars))

    def answer_highlight(self: Session, r: HighlightRequest) -> dict[str, ViewData]:
        got = highlighted(self, r.source, r.bars)
        return {t: got[t] for t in r.targets} if r.targets else got


def check_view_bars(session: Session, view: str | None, bars) -> list[int] | None:
    """The Python API's view and bars: bars of a view (its bar numbers), or neither."""
    if view is None:
        if bars is not None:
            msg = "bars need a view"
            raise InteractionError(msg)
        return None
    session._view_index(view)
    return None if bars is None else check_bars(session.layout.view(view).nbars, view, bars)


def rids_behind(session: Session, view: str | None = None, bars: list[int] | None = None,
                offset: int = 0, limit: int | None = None) -> np.ndarray:
    """rids behind bars of a view as currently shown (rows in the bars passing the
    view's other filters), or behind the current selection (rows passing every active
    filter) when `view` is None; in rid order, `offset` / `limit` page."""
    with session._lock, session._pool.replying():
        need, driver = lineage_source(session, view, bars)
        limit = session.store.n_rows if limit is None else max(0, min(int(limit), session.store.n_rows))
        offset = max(0, int(offset))
        if offset >= session.store.n_rows:
            return np.zeros(0, np.int64)
        out = np.empty(limit, np.int64)
        written, skip = 0, offset
        d, kr = driver
        for s in session.store.shards:
            if written >= limit:
                break
            if not s.nblocks:
                continue
            w, skipped = K.rows_passing(s.arrays, session._s.L, session.state.q, need, d, kr, 0,
                                        s.nblocks, skip, limit - written, out[written:], s.start)
            written += w
            skip -= skipped
        return out[:written]


def count_behind(session: Session, view: str | None, bars: list[int] | None) -> int:
    """Number of rows `rids_behind` would return without paging."""
    if view is None and bars is None:
        if not session.active or not session._has_all:
            return session.store.n_rows
        return int(session.agg.counts[session._s.all.bar_off])
    if view is not None and bars is None:
        return int(stats.bar_counts(session.layout.view(view), session.agg).sum())
    with session._lock, session._pool.replying():
        need, (d, kr) = lineage_source(session, view, bars)
        skip = need & ~np.uint64(1 << session.state.adhoc)

        def task(units):
            return sum(K.count_passing(session.store.shards[i].arrays, session._s.L, session.state.q, need,
                                       d, kr, b0, b1, skip) for i, b0, b1 in units)
        return int(sum(session._pool.run([lambda u=u: task(u) for u in session.reads.split(session.reads.threads(
            rows_cost(session, d, kr)))])))


def page_rows(session: Session, view: str | None, bars: list[int] | None, page: int, size: int,
              columns: list[str], order_by: str | None, descending: bool) -> pa.Table:
    """A page of the input rows behind bars or the current selection (details on
    demand), from the capture's snapshot, with their rids: in rid order, or ordered by
    the details column `order_by` (engine/ordering.py: SQL's ORDER BY with NULLS LAST,
    then rid)."""
    if page * size >= session.store.n_rows:
        rids = np.zeros(0, np.int64)
    elif order_by is None:
        rids = rids_behind(session, view, bars, offset=page * size, limit=size)
    else:
        rids = sorted_page(session, view, bars, order_by, descending, page * size, size)
    table = session.store.take(rids, columns)
    return table.add_column(0, "rid", pa.array(rids, pa.int64()))


def sorted_page(session: Session, view: str | None, bars: list[int] | None, column: str,
                descending: bool, offset: int, limit: int) -> np.ndarray:
    """rids of rows `offset` to `offset + limit` behind bars or the selection, in the
    details column's order (engine/ordering.py): through the column's order once built
    (walking it, or gathering the selection's ranks, whichever costs less), else from
    the selected rows' values."""
    co = session._s.orders.get(column, session.store.n_rows)
    if co is None:  # not built yet (its build has started): every selected row's value
        every = rids_behind(session, view, bars)
        key = session.store.take(every, [column]).column(0)
        return every[ordering.page_order(key, descending, offset, limit)]
    if view is None:
        selected = count_behind(session, None, None)
    else:
        per_bar = stats.bar_counts(session.layout.view(view), session.agg)
        if bars is not None:  # an estimate
            per_bar = per_bar[list(bars)]
        selected = int(per_bar.sum())
    if ordering.prefer_walk(session.store.n_rows, selected, offset + limit):
        rids = walk(session, co, view, bars, descending, offset, limit,
                    ordering.walk_budget(session.store.n_rows, selected))
        if rids is not None:
            return rids
    return ordering.gather_page(co, rids_behind(session, view, bars), descending, offset, limit)


def walk(session: Session, co: ordering.ColumnOrder, view: str | None, bars: list[int] | None,
         descending: bool, offset: int, limit: int, budget: int) -> np.ndarray | None:
    """ordering.walk_page, testing rows against the selection (or bars) with the kernels."""
    with session._lock, session._pool.replying():
        need, _ = lineage_source(session, view, bars)
        s = session._s

        def passes(rids: np.ndarray) -> np.ndarray:
            order = np.argsort(rids)
            out = np.empty(len(rids), np.bool_)
            out[order] = K.rids_pass(s.shard_list, s.shard_starts, s.L, session.state.q, need, rids[order],
                                     np.empty(len(rids), np.bool_))
            return out
        return ordering.walk_page(co, passes, descending, offset, limit, budget)


def bars_of_rows(session: Session, rids: np.ndarray) -> dict[str, list[int]]:
    """Bars each view's rows `rids` (row ids of the store) contribute to (forward
    lineage); views whose bars per row were pruned (nothing needs them) are left out."""
    si, local = session.store.locate(rids)
    out = {}
    for vi, v in enumerate(session.layout.views):
        if not v.code_dims:
            continue
        bars = np.empty(len(rids), np.int64)
        for s in np.unique(si):
            sel = np.flatnonzero(si == s)
            part = np.empty(len(sel), np.int64)
            K.bars_of(session.store.shards[s].arrays, session._s.L, local[sel], vi, part)
            bars[sel] = part
        out[v.name] = [int(b) for b in np.unique(stats.bars_of_codes(v, bars)) if b >= 0]
    return out


def highlight_targets(session: Session, source: str) -> list[str]:
    return [t for h in session.plan.dashboard.interactions.highlight if h.source == source
            for t in h.targets]


def highlighted(session: Session, source: str, bars: list[int]) -> dict[str, ViewData]:
    """Linked highlighting: for each declared target, the aggregate per bar of the rows
    in the selected `bars` of `source` that the target currently shows."""
    targets = highlight_targets(session, source)
    if not targets:  # (a lazy session's, asking the engine first)
        msg = f"no highlight from view {source!r} is declared"
        raise NotCapturedError(msg)
    with session._lock, session._pool.replying():
        views = list(dict.fromkeys(targets))
        session._require_rows([source, *views], list(session.active), f"highlighting from {source!r}")
        adhoc, (d, kr) = bars_adhoc(session, source, bars)
        bit = np.uint64(1 << session.state.adhoc)
        need = np.zeros(len(session._vindex), np.uint64)
        for t in views:
            need[session._vindex[t]] = session._need(t) | bit
        vi = np.array([session._vindex[t] for t in views], np.int64)
        rows = session.reads.rows_of(d, kr)
        agg = Aggregates.zeros(session._s.nslots)
        if index_cost(rows, len(kr), session._s.blocks, len(views), session.store.n_rows,
                      len(session.active) + 1, session.reads.copy(d) is not None) < \
              scan_cost(session.store.n_rows, len(session.active) + 1, len(views)):
            session.reads.by_keys(d, kr, np.ones(len(kr), np.int64), -1, None, vi, need, agg)
        else:
            scan.run(session, vi, need, agg)
        return {t: session._data(session.layout.view(t), agg, need[session._vindex[t]]) for t in views}


def lineage_source(session: Session, view: str | None, bars: list[int] | None):
    """(need, (driver dim or -1, key ranges)) of the rows behind bars of a view (as it
    shows them) or behind the current selection."""
    session._require_rows([] if view is None else [view],
                          list(session.active) if view is None else session._others(view),
                          "the rows behind " + ("the selection" if view is None else f"view {view!r}"))
    if view is None:
        need = np.uint64(0)
        for g in session.active:
            need |= np.uint64(1 << session._fi[g])
        return need, driver_of(session, list(session.active))
    vl = session.layout.view(view)
    if not (session.plan.view(view).bar_index and vl.code_dims):
        msg = (f"backward lineage of view {view!r} was not captured: declare details on "
               "demand, or the view as a highlight source")
        raise NotCapturedError(msg)
    adhoc, driver = bars_adhoc(session, view, list(range(vl.nbars)) if bars is None else bars)
    need = session._need(view) | np.uint64(1 << session.state.adhoc)
    own = driver_of(session, session._others(view))
    if own[0] >= 0 and session.reads.rows_of(*own) < session.reads.rows_of(*driver):
        driver = own
    return need, driver


def bars_adhoc(session: Session, view: str, bars) -> tuple[Test, tuple[int, list]]:
    """Point the spare filter at `bars` of `view` (checked); (its test, (dim, candidate
    keys))."""
    vl = session.layout.view(view)
    if not vl.code_dims:
        msg = f"the bars of view {view!r} per row were not captured"
        raise NotCapturedError(msg)
    d = vl.code_dims[0]
    where = stats.shown(vl)
    kbars = np.flatnonzero(np.isin(where, list(bars)))  # clamped rows are in edge bars
    test = bars_test(d, session._vindex[view], kbars)
    session.state.set(session.state.adhoc, Selection((test,)))
    lut = session.layout.lut(view, 0)
    if len(vl.code_dims) > 1 and not vl.cells:  # heatmap: x part of the chosen cells
        ny = len({tuple(lab[1]) for lab in vl.labels}) if vl.labels else 1
        keys = np.flatnonzero(np.isin(lut[:-1], list({b - b % ny for b in bars})))
    else:
        keys = np.flatnonzero(np.isin(lut[:-1] // vl.width, kbars))
    kr = merge_ranges([(int(k), int(k)) for k in keys])
    return test, (d, np.asarray(kr, np.int64).reshape(-1, 2))


def driver_of(session: Session, names: Sequence[str]) -> tuple[int, list]:
    """The indexed dim and key ranges of the most selective of filters `names`, or
    (-1, []) when scanning every row is cheaper."""
    best, best_rows = (-1, []), session.store.n_rows // 4
    for g in names:
        t = session.active[g].tests[0]
        kr = t.key_ranges(session.layout.dims[t.dim].nkeys)
        rows = session.reads.rows_of(t.dim, kr)
        if rows < best_rows:
            best, best_rows = (t.dim, kr), rows
    return best[0], np.asarray(best[1], np.int64).reshape(-1, 2)


def rows_cost(session: Session, d: int, kr) -> float:
    """The cost of reading the rows of key ranges `kr` of dim d (d < 0: every row)."""
    if d < 0:
        return scan_cost(session.store.n_rows, len(session.active), 0)
    return index_cost(session.reads.rows_of(d, kr), len(kr), session._s.blocks, 0, session.store.n_rows,
                      len(session.active))


def gather(session: Session, v: ViewLayout, need: np.uint64, wanted: np.ndarray, offs: np.ndarray,
           kranges) -> np.ndarray | None:
    """The measures of the rows passing `need` whose code in view v is wanted
    (wanted[code] = t: into out[offs[t]:offs[t + 1]]), candidates found through the
    measure dim's index when `kranges` of its keys hold few rows, else by a scan;
    None when the rows were not kept (memory budget)."""
    vi = session._vindex[v.name]
    lay = session.layout
    if not v.code_dims:  # pruned (capture keeps the cells of gathering views)
        return None
    needs = np.zeros(len(session._vindex), np.uint64)
    needs[vi] = need
    d = v.mdim
    kr = np.asarray(kranges, np.int64).reshape(-1, 2)
    rows = session.reads.rows_of(d, kranges)
    driver = d if lay.dims[d].indexed and rows < session.store.n_rows // 4 else -1
    try:
        session.reads.rows_guard(driver, np.array([vi]), needs)
        session.reads.rows_guard(d, np.array([vi]), needs)
    except NotCapturedError:
        return None
    total, ntargets = int(offs[-1]), len(offs) - 1
    shards, L, q = session.store.shards, session._s.L, session.state.q

    def task(units):
        out = np.empty(total, np.float64)
        fill = np.zeros(ntargets, np.int64)
        for i, b0, b1 in units:
            K.gather(shards[i].arrays, L, q, vi, need, driver, kr, d, wanted, offs, fill,
                     out, b0, b1)
        return out, fill

    if driver >= 0:
        cost = index_cost(rows, len(kr), session._s.blocks, 1, session.store.n_rows, len(session.active))
    else:
        cost = scan_cost(session.store.n_rows, len(session.active), 1)
    parts = session._pool.run([lambda u=u: task(u) for u in session.reads.split(session.reads.threads(cost))]) \
        if session._s.units else []
    sizes = np.diff(offs)
    if len(parts) == 1 and np.array_equal(parts[0][1], sizes):  # one task read them all
        return parts[0][0]
    # each part's first fill[t] values of target t follow the earlier parts' (vector
    # operations over the values: a heatmap has tens of thousands of targets)
    result = np.empty(total, np.float64)
    at = offs[:-1].copy()
    tpos = np.repeat(np.arange(ntargets), sizes)  # the target of each value
    k = np.arange(total) - offs[tpos]  # and its place in the target's values
    for out, fill in parts:
        ok = k < fill[tpos]
        result[at[tpos[ok]] + k[ok]] = out[ok]
        at += fill
    if not np.array_equal(at, offs[1:]):
        msg = f"view {v.name}: the rows gathered disagree with the counts"
        raise RuntimeError(msg)
    return result
