"""The lazy answers' lineage queries (brushfire/lazy.py's `LazySession` is built on
`LazyQueries`): the rows behind bars or the selection (details, their count, the rids),
the bars of given rows (forward) and linked highlighting, each asked of the engine first
and answered on Spark when the capture did not prepare it (columns the spec does not list,
bars whose rows were not indexed, lazy filters, undeclared highlight pairs, views whose
bars per row were not kept).

As the engine's (engine/queries.py), the Python API (`details`, `forward`, `highlight`,
`count_selected`, `backward_rids`) checks what it is given; `answer_*` (and `rids_behind`),
of a request checked by its message (brushfire/requests.py), checks nothing again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from brushfire import sql
from brushfire.engine.api import (
    DetailsPage,
    DetailsRequest,
    ForwardRequest,
    HighlightRequest,
    ViewData,
    check_bars,
    check_page,
)
from brushfire.errors import InteractionError, NotCapturedError
from brushfire.limits import DEFAULT_PAGE, MAX_FORWARD_RIDS

if TYPE_CHECKING:
    from brushfire.lazy import LazySession


class LazyQueries:
    """The lineage queries of a `LazySession` (a mixin: it reads the session's filters,
    Spark source and bar numbering)."""

    def count_selected(self: LazySession, view: str | None = None, bars: list[int] | None = None) -> int:
        if not self.lazy:
            return self.inner.count_selected(view, bars)
        return self._count(view, None if view is None else self._checked_bars(view, bars))

    def _count(self: LazySession, view: str | None, bars: list[int] | None) -> int:
        """`count_selected` of a checked view and bars."""
        if not self.lazy:
            return self.inner.count_behind(view, bars)
        if view is None and bars is None and self._selected is not None and not self.stale:
            return self._selected
        where = self._where(None) if view is None else self._bars_where(view, bars)
        rows = self._spark(f"SELECT count(1) FROM {self.source.table} WHERE {where}",
                           "counting the selected rows")
        return int(rows[0][0])

    def details(self: LazySession, view: str | None = None, bars: list[int] | None = None, page: int = 0,
                page_size: int | None = None, columns: list[str] | None = None,
                order_by: str | None = None, descending: bool = False) -> pa.Table:
        declared = self.spec.interactions.details
        if self._listed(columns, order_by) and not self.lazy:  # the engine's, unless the view's
            try:                                                 # bars were not indexed
                return self.inner.details(view, bars, page, page_size, columns, order_by, descending)
            except NotCapturedError:
                pass
        size = page_size or (declared.page_size if declared else DEFAULT_PAGE)  # checked before Spark
        check_page(page, size)
        for i, c in enumerate(columns or ()):
            self.check_column(c, f"details.columns[{i}]")
        bars = None if view is None else self._checked_bars(view, bars)
        return self._details(view, bars, page, size, columns, order_by, descending)

    def answer_details(self: LazySession, r: DetailsRequest) -> DetailsPage:
        declared = self.spec.interactions.details
        if self._listed(r.columns, r.order_by) and not self.lazy:
            try:
                return self.inner.answer_details(r)
            except NotCapturedError:
                pass
        size = r.page_size or (declared.page_size if declared else DEFAULT_PAGE)
        rows = self._details(r.view, r.bars, r.page, size, r.columns, r.order_by, r.descending)
        return DetailsPage(rows, self._count(r.view, r.bars))

    def _listed(self: LazySession, columns: list[str] | None, order_by: str | None) -> bool:
        """Whether details of `columns` are the engine's: the declared ones and each join's
        key (plan.detail_columns)."""
        declared = self.spec.interactions.details
        named = {*(columns or (declared.columns if declared else [])), *([order_by] if order_by is not None else [])}
        return declared is not None and named <= set(self.plan.detail_columns)

    def _details(self: LazySession, view: str | None, bars: list[int] | None, page: int, size: int,
                 columns: list[str] | None, order_by: str | None, descending: bool) -> pa.Table:
        """A page of details on Spark (view, bars, page and column names checked)."""
        declared = self.spec.interactions.details
        where = self._where(None) if view is None else self._bars_where(view, bars)
        self.source.start()
        columns = list(dict.fromkeys(columns or (declared.columns if declared else self.source.columns)))
        unknown = [c for c in [*columns, *([order_by] if order_by is not None else [])]
                   if c not in self.source.columns]
        if unknown:
            msg = f"no column {unknown[0]!r} in the source; columns: {', '.join(sorted(self.source.columns))}"
            raise InteractionError(msg)
        if page * size >= self.store.n_rows:  # past the last row (and past Spark's int OFFSET)
            return pa.table({"rid": pa.array([], pa.int64()), **{c: pa.array([]) for c in columns}})
        group = self._begin()
        try:
            table = self.source.rid_table(group)
            cols = ", ".join(sql.ident(c, sql.SPARK) for c in columns)
            # as engine/ordering.py: NULLS LAST, NaN the largest (as Spark orders it), then rid
            order = "__rid" if order_by is None else \
                f"{sql.ident(order_by, sql.SPARK)} {'DESC' if descending else 'ASC'} NULLS LAST, __rid"
            rows = self._spark(f"SELECT __rid AS rid, {cols} FROM ({table}) AS t WHERE {where} "
                               f"ORDER BY {order} LIMIT {size} OFFSET {page * size}",
                               "finding the rows behind the selection", group)
        finally:
            self._end(group)
        data = {"rid": pa.array([int(r[0]) for r in rows], pa.int64())}
        for i, c in enumerate(columns, start=1):
            data[c] = [r[i] for r in rows]
        return pa.table(data)

    def forward(self: LazySession, rids) -> dict[str, list[int]]:
        try:
            return self.inner.forward(rids)
        except NotCapturedError:
            pass
        try:
            rids = [int(r) for r in rids]
        except (TypeError, ValueError):
            msg = "rids must be a list of row ids (integers)"
            raise InteractionError(msg) from None
        if len(rids) > MAX_FORWARD_RIDS or any(not 0 <= r < self.store.n_rows for r in rids):
            msg = f"rids must be at most {MAX_FORWARD_RIDS:,} row ids in [0, {self.store.n_rows})"
            raise InteractionError(msg)
        return self._forward(rids)

    def answer_forward(self: LazySession, r: ForwardRequest) -> dict[str, list[int]]:
        try:
            return self.inner.answer_forward(r)
        except NotCapturedError:
            pass
        return self._forward(r.rids)

    def _forward(self: LazySession, rids: list[int]) -> dict[str, list[int]]:
        """The bars of rows `rids` (checked) on Spark."""
        if not rids:
            return {v.name: [] for v in self.spec.views}
        b = self._bars_of()
        keys = ", ".join(f"{b.bar_sql[v.name]} AS k{i}" for i, v in enumerate(self.spec.views))
        group = self._begin()
        try:
            table = self.source.rid_table(group)
            rows = self._spark(f"SELECT DISTINCT {keys} FROM ({table}) AS t WHERE __rid IN "
                               f"({', '.join(map(str, rids))})", "finding the bars of rows", group)
        finally:
            self._end(group)
        out = {}
        for i, v in enumerate(self.spec.views):
            index = b.keys[v.name]
            out[v.name] = sorted({index[k] for k in (_key(r[i]) for r in rows) if k in index})
        return out

    def highlight(self: LazySession, source: str, bars: list[int], targets: list[str] | None = None) -> dict[str, ViewData]:
        wanted = self._targets(source, targets)
        for t in [source, *wanted]:
            self._view(t)
        return self._highlight(source, check_bars(self._nbars(source), source, bars), wanted)

    def answer_highlight(self: LazySession, r: HighlightRequest) -> dict[str, ViewData]:
        return self._highlight(r.source, r.bars, self._targets(r.source, r.targets))

    def _targets(self: LazySession, source: str, targets: list[str] | None) -> list[str]:
        """The views highlighted: `targets`, else the declared ones, else every other view."""
        declared = [t for h in self.spec.interactions.highlight if h.source == source for t in h.targets]
        return list(dict.fromkeys(targets or declared or [v.name for v in self.spec.views
                                                          if v.name != source]))

    def _highlight(self: LazySession, source: str, bars: list[int], wanted: list[str]) -> dict[str, ViewData]:
        """The engine's highlighting when it declares every pair, else on Spark (names and
        bars checked)."""
        declared = [t for h in self.spec.interactions.highlight if h.source == source for t in h.targets]
        if set(wanted) <= set(declared) and not any(self._lazy_for(t) for t in wanted):
            try:
                got = self.inner.answer_highlight(HighlightRequest(source, bars, None, lazy=False))
                return {t: got[t] for t in wanted}
            except NotCapturedError:
                pass
        in_bars = self._in_bars(source, bars)
        out = self._groups(wanted, lambda t: f"({self._where(t)}) AND ({in_bars})",
                           "highlighting linked rows")
        return {t: out[t] for t in wanted}

    def backward_rids(self: LazySession, *args, **kwargs):
        if self.lazy:
            msg = ("the rows behind the selection are not known by rid under a filter answered "
                   f"on Spark ({', '.join(self.lazy)}): ask for details instead")
            raise NotCapturedError(msg)
        return self.inner.backward_rids(*args, **kwargs)

    def rids_behind(self: LazySession, *args, **kwargs):  # (of a checked view and bars)
        if self.lazy:  # (a dimension message's check refused it: no Capability.ROWS)
            msg = ("the rows behind the selection are not known by rid under a filter answered "
                   f"on Spark ({', '.join(self.lazy)}): ask for details instead")
            raise NotCapturedError(msg)
        return self.inner.rids_behind(*args, **kwargs)

    def _checked_bars(self: LazySession, view: str, bars) -> list[int] | None:
        """The Python API's view and its bars (None: all)."""
        self._view(view)
        return None if bars is None else check_bars(self._nbars(view), view, bars)

    def _nbars(self: LazySession, view: str) -> int:
        return next(v.nbars for v in self.store.views if v.name == view)

    def _bars_where(self: LazySession, view: str, bars: list[int] | None) -> str:
        bars = list(range(self._bars_of().layouts[view].nbars)) if bars is None else bars
        return f"({self._where(view)}) AND ({self._in_bars(view, bars)})"

    def _in_bars(self: LazySession, view: str, bars: list[int]) -> str:
        """Bars of a view (checked) as Spark SQL."""
        b = self._bars_of()
        keys = {i: k for k, i in b.keys[view].items()}
        wanted = ", ".join(sql.lit(keys[x], sql.SPARK) for x in bars)
        return f"({b.bar_sql[view]}) IN ({wanted})" if bars else "FALSE"


def _key(x):
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x
