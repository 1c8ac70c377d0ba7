"""The pre-aggregation baseline (Mosaic's optimized mode, Falcon's data tiles) on DuckDB.

When a brush starts on a view A, or the other filters changed since A's table was built,
one DuckDB table is built: rows passing each target view's other filters, grouped by A's
pixel slot and the target's bar. Every brush on A is then one range sum over that table
(`slot BETWEEN a AND b`), whatever the number of rows. Other interactions re-run the
group-bys as the DuckDB baseline does.

Slots follow the view's 600-pixel grid (`bench.pixels`): below the first edge, each edge
value itself, each open interval between two edges, above the last edge. So a brush
whose ends lie on pixel edges (as a brush drawn on screen does) is answered exactly,
both ends closed; a brush end between edges is moved to the nearest edge, as Mosaic
does, and the view's method says `preagg-snapped` (its result is then approximate).
"""

from __future__ import annotations

import bisect
import time

from brushfire import sql
from brushfire.baselines.duckdb import DuckDBBackend, DuckDBSession
from brushfire.bench import pixels
from brushfire.engine.api import BrushRequest, Update
from brushfire.spec import models as m
from brushfire.views import brush_sql, view_type


class PreaggBackend(DuckDBBackend):
    """The DuckDB table, plus each interval view's pixel grid."""

    def __init__(self, spec: m.DashboardSpec, layouts, threads: int | None = None) -> None:
        super().__init__(spec, layouts, threads)
        self.grids = {}
        for v in layouts:  # views brushed along one axis of values (not a calendar part's)
            view = spec.view(v.name)
            extent = None if m.is_part(view) or not v.labels else view_type(view).extent(v.labels)
            if extent is not None:
                self.grids[v.name] = pixels.edges(*extent)
        self.check_edges()

    def slotted_sql(self, view: str, where: str) -> str:
        """The rows passing `where` with column `__slot`: the pixel slot of the row's value in
        `view` (NULL for null / NaN): 0 below the first edge, 1 + 2p at edge p, 2 + 2p
        strictly between edges p and p + 1, 2P + 2 above the last edge P. The floor
        estimate `__p0` is corrected by exact comparisons with the edges, computed by the
        same float operations as `pixels.edges` (checked in `check_edges`)."""
        v = self.spec.view(view)
        grid = self.grids[view]
        n = len(grid) - 1
        temporal = view_type(v).bound(v) == "time"
        x = sql.time_us(v.field) if temporal else f"CAST({sql.ident(v.field)} AS DOUBLE)"
        lo, hi = _literal(grid[0]), _literal(grid[-1])
        width = _literal((grid[-1] - grid[0]) / n)
        # clamped as a double, then cast: floor(±inf) is ±inf, which no BIGINT holds
        p0 = f"CAST(least(greatest(floor((__x - {lo}) / {width}), 0), {n - 1}) AS BIGINT)"
        p = (f"__p0 - CASE WHEN __x < {self.edge_sql(view, '__p0')} THEN 1 ELSE 0 END "
             f"+ CASE WHEN __x >= {self.edge_sql(view, '__p0 + 1')} THEN 1 ELSE 0 END")
        null = "__x IS NULL" if temporal else "__x IS NULL OR isnan(__x)"
        slot = (f"CASE WHEN {null} THEN NULL WHEN __x < {lo} THEN 0 WHEN __x > {hi} THEN {2 * n + 2} "
                f"WHEN __x = {hi} THEN {2 * n + 1} "
                f"WHEN __x = {self.edge_sql(view, '__p')} THEN 1 + 2 * __p ELSE 2 + 2 * __p END")
        rows = f"SELECT *, {x} AS __x FROM src WHERE {where}"
        with_p0 = f"SELECT *, CASE WHEN {null} THEN NULL ELSE {p0} END AS __p0 FROM ({rows})"
        with_p = f"SELECT *, {p} AS __p FROM ({with_p0})"
        return f"SELECT *, {slot} AS __slot FROM ({with_p})"

    def edge_sql(self, view: str, p: str) -> str:
        """Edge number `p` of the view's grid, as `pixels.edges` computes it."""
        grid = self.grids[view]
        n = len(grid) - 1
        lo, hi = _literal(grid[0]), _literal(grid[-1])
        if isinstance(grid[0], int):
            return f"({lo} + ({hi} - {lo}) * ({p}) // {n})"
        return f"({lo} + ({hi} - {lo}) * CAST({p} AS DOUBLE) / {n})"

    def check_edges(self) -> None:
        """The SQL edges must be the very floats the workloads brush at."""
        for view, grid in self.grids.items():
            got = [r[0] for r in self.con.execute(
                f"SELECT {self.edge_sql(view, 'p')} FROM range({len(grid)}) t(p) ORDER BY p").fetchall()]
            if got != grid:
                msg = f"DuckDB computes other pixel edges than Python for view {view}"
                raise AssertionError(msg)

    def build(self, active: str, targets: dict[str, str], cursor) -> str:
        """Table `pre_<active>`: (target, slot, bar key, count, sum, non-null) over the rows
        passing each target's `where`. Returns the table's name."""
        table = f"pre_{active}"
        parts = []
        for i, (t, where) in enumerate(targets.items()):
            mf = self.spec.view(t).aggregate.field
            mf = mf and not self.spec.view(t).aggregate.order and sql.summed_sql(mf)  # as the engine
            agg = f"sum({mf}), count({mf})" if mf else "0.0, 0"
            parts.append(f"SELECT {i}, __slot, CAST({self.bar_sql[t]} AS VARCHAR), count(*), {agg} "
                         f"FROM ({self.slotted_sql(active, where)}) GROUP BY ALL")
        cursor.execute(f"CREATE OR REPLACE TEMP TABLE {table} (target INTEGER, slot INTEGER, "
                       "bar VARCHAR, n BIGINT, s DOUBLE, k BIGINT)")
        cursor.execute(f"INSERT INTO {table} " + " UNION ALL ".join(parts))
        return table


class PreaggSession(DuckDBSession):
    engine = "preagg"

    def __init__(self, backend: PreaggBackend, plan, store) -> None:
        super().__init__(backend, plan, store)
        self.built: tuple | None = None  # (view, the other filters) of pre_<view>
        self.targets: list[str] = []

    def apply_brush(self, r: BrushRequest):
        """(`brush`, the Python API, checks and comes here too.)"""
        f, interval, y = self._filters[r.view], r.interval, r.y
        if f.kind != "interval" or f.name not in self.backend.grids:  # rects, calendar parts:
            return super().apply_brush(r)  # the plain DuckDB answer
        t0 = time.perf_counter()
        v = self.spec.view(f.name)
        pred = brush_sql(v, interval, None, self.backend.dialect)  # validates the bounds
        temporal = view_type(v).bound(v) == "time"
        others = tuple(sorted((g, p) for g, p in self.preds.items() if g != f.name))
        built = self.built == (f.name, others)
        if not built:
            self._build(f.name)
            self.built = (f.name, others)
        self.preds[f.name], self._given[f.name] = pred, (interval, y)
        grid = self.backend.grids[f.name]
        (a, exact_a), (b, exact_b) = (_slot(grid, bound, temporal, low)
                                      for bound, low in zip(interval, (True, False), strict=True))
        rows = self.cur.execute(f"SELECT target, bar, sum(n), sum(s), sum(k) FROM pre_{f.name} "
                                f"WHERE slot BETWEEN {a} AND {b} GROUP BY ALL").fetchall()
        groups: list[dict] = [{} for _ in self.targets]
        for target, bar, n, s, k in rows:
            groups[target][_typed(bar, self.spec.view(self.targets[target]))] = (n, s, k)
        method = "preagg" if exact_a and exact_b else "preagg-snapped"
        for i, t in enumerate(self.targets):
            self.current[t] = self.backend.bars(t, groups[i])
        for t in self.targets:  # order statistics cannot be pre-aggregated: their SQL again
            if self.spec.view(t).aggregate.order:
                where = sql.where_sql(self.spec, self.preds, t)
                self.current[t] = self.backend.bars(t, self.backend.groups(t, where, self.cur))
        methods = dict.fromkeys(self.targets, method if built else f"{method} (built)")
        return Update({t: self.current[t].data for t in self.targets}, methods,
                      time.perf_counter() - t0)

    def _build(self, view: str) -> None:
        self.targets = list(self._filters[view].filters_views)
        others = {g: p for g, p in self.preds.items() if g != view}
        wheres = {}
        for t in self.targets:
            never_null = sql.interval_sql(self.spec.view(view).field, (None, None),
                                          isinstance(self.spec.view(view), m.TemporalView))
            wheres[t] = f"({sql.where_sql(self.spec, others, t)}) AND ({never_null})"
        self.backend.build(view, wheres, self.cur)


def _slot(grid: list, bound, temporal: bool, low: bool) -> tuple[int, bool]:
    """The first (low end) or last slot a brush end covers, and whether the end lies on a
    pixel edge (else it is moved to the nearest edge)."""
    n = len(grid) - 1
    if bound is None or (isinstance(bound, float) and abs(bound) == float("inf")):
        if bound is None:
            return (0 if low else 2 * n + 2), True
        return (0 if bound < 0 else 2 * n + 2), True
    x = sql.micros(bound) if temporal else bound
    p = bisect.bisect_left(grid, x)
    if p <= n and grid[p] == x:
        return 1 + 2 * p, True
    if p == 0:  # below the first edge
        return 0, False
    if p > n:
        return (2 * n + 2), False
    nearest = p if grid[p] - x < x - grid[p - 1] else p - 1
    return 1 + 2 * nearest, False


def _literal(x: float | int) -> str:
    """An exact SQL literal: ints as they are, floats through DuckDB's float parser."""
    return str(x) if isinstance(x, int) else f"CAST('{x!r}' AS DOUBLE)"


def _typed(bar: str | None, view):
    """A bar key read back from the table's text column, as the view type's `key_sql` types it."""
    if bar is None or view_type(view).value_bars:
        return bar
    return int(bar)

