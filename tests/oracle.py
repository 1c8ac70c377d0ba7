"""An independent oracle: what DuckDB's SQL says each view, selection and highlight
should be. Written from the crossfilter semantics in docs, not from brushfire's code:
it reads only the spec model and the interactions applied."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import duckdb

from brushfire.spec import models as m

OTHER = "(other)"


class Oracle:
    def __init__(self, dash: m.Dashboard) -> None:
        self.dash = dash
        self.con = duckdb.connect()
        self.con.execute("SET TimeZone = 'UTC'")
        src = dash.source
        derived = "".join(f", ({e}) AS {n}" for n, e in src.columns.items())
        where = " AND ".join(f"({f})" for f in src.filters) or "TRUE"
        self.con.execute(f"CREATE TABLE base AS SELECT * FROM read_parquet('{src.path}')")
        self.con.execute(f"CREATE VIEW src AS SELECT *{derived} FROM base WHERE {where}")
        self.top = {}
        for v in dash.views:
            if isinstance(v, m.CategoricalView):
                rows = self.con.execute(
                    f"SELECT {v.field} FROM src WHERE {v.field} IS NOT NULL GROUP BY 1 "
                    f"ORDER BY count(*) DESC, 1 ASC LIMIT {v.top}").fetchall()
                self.top[v.name] = [r[0] for r in rows]
        self.filters: dict[str, str] = {}  # active filter name -> SQL predicate

    # --- interactions, as SQL predicates ------------------------------------------------

    def brush(self, view: str, interval, y=None) -> None:
        v = self.dash.view(view)
        if isinstance(v, m.HeatmapView):
            self.filters[view] = f"({_between(v.x.field, interval)}) AND ({_between(v.y.field, y)})"
        else:
            col = f"epoch_us({v.field})" if isinstance(v, m.TemporalView) else v.field
            self.filters[view] = _between(col, interval, temporal=isinstance(v, m.TemporalView))

    def select(self, view: str, values: list) -> None:
        v = self.dash.view(view)
        parts = []
        plain = [x for x in values if x != OTHER]
        if plain:
            parts.append(f"{v.field} IN ({', '.join(_lit(x) for x in plain)})")
        if OTHER in values:
            top = ", ".join(_lit(x) for x in self.top[view]) or "NULL"
            parts.append(f"({v.field} IS NOT NULL AND {v.field} NOT IN ({top}))")
        self.filters[view] = " OR ".join(parts) or "FALSE"

    def set_parameter(self, name: str, value) -> None:
        if value is None:
            self.filters.pop(name, None)
            return
        p = self.dash.parameter(name)
        op = {"eq": "=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}[p.op]
        guard = f" AND NOT isnan(CAST({p.field} AS DOUBLE))" if p.op != "eq" else ""
        self.filters[name] = f"{p.field} {op} {_lit(value)}{guard}"

    def clear(self, name: str | None = None) -> None:
        if name is None:
            self.filters.clear()
        else:
            self.filters.pop(name, None)

    # --- expected results -----------------------------------------------------------------

    def applies(self, f: str, view: str) -> bool:
        """Does active filter `f` filter `view`? Parameters filter every view; a brush
        filters the other views of the crossfilter groups its view is in."""
        if f in {p.name for p in self.dash.interactions.parameters}:
            return True
        return f != view and any(f in g.views and view in g.views
                                 for g in self.dash.interactions.crossfilter)

    def where(self, view: str | None) -> str:
        preds = [p for f, p in self.filters.items() if view is None or self.applies(f, view)]
        return " AND ".join(f"({p})" for p in preds) or "TRUE"

    def view(self, name: str, extra: str = "TRUE") -> dict:
        """{bar label key: (count, sum, mean)} for bars with rows."""
        v = self.dash.view(name)
        key = self.bar_sql(v)
        mf = v.aggregate.field
        agg = f", sum({mf}), avg({mf})" if mf else ", NULL, NULL"
        sql = (f"SELECT {key} AS bar, count(*){agg} FROM src WHERE ({self.where(name)}) "
               f"AND ({extra}) GROUP BY 1 HAVING bar IS NOT NULL")
        return {_key(r[0]): (r[1], r[2], r[3]) for r in self.con.execute(sql).fetchall()}

    def rows(self, columns: list[str], where: str) -> list[tuple]:
        sql = f"SELECT {', '.join(columns)} FROM src WHERE {where}"
        return sorted((_norm_row(r) for r in self.con.execute(sql).fetchall()), key=repr)

    def bar_sql(self, v) -> str:
        """SQL for the bar a row falls in (NULL when the view drops it), as a label key."""
        if isinstance(v, m.HistogramView):
            return _bin_sql(v.field, v.bin)
        if isinstance(v, m.HeatmapView):
            ix, iy = _bin_sql(v.x.field, v.x.bin), _bin_sql(v.y.field, v.y.bin)
            return f"({ix}) * {v.y.bin.count} + ({iy})"
        if isinstance(v, m.TemporalView):
            return f"strftime(date_trunc('{v.unit}', {v.field}), '%Y-%m-%dT%H:%M:%S')"
        top = ", ".join(_lit(x) for x in self.top[v.name]) or "NULL"
        other = f"'{OTHER}'" if v.other else "NULL"
        return (f"CASE WHEN {v.field} IS NULL THEN NULL WHEN {v.field} IN ({top}) "
                f"THEN CAST({v.field} AS VARCHAR) ELSE {other} END")


def _bin_sql(col: str, b: m.Bin) -> str:
    lo, hi, nb = b.extent[0], b.extent[1], b.count
    below = "0" if b.clamp else "NULL"
    above = str(nb - 1) if b.clamp else "NULL"
    x = f"CAST({col} AS DOUBLE)"
    return (f"CASE WHEN {x} IS NULL OR isnan({x}) THEN NULL WHEN {x} < {lo} THEN {below} "
            f"WHEN {x} > {hi} THEN {above} "
            f"ELSE least(CAST(floor(({x} - {lo}) / {b.step}) AS BIGINT), {nb - 1}) END")


def _between(col: str, interval, temporal: bool = False) -> str:
    lo, hi = interval
    conv = (lambda x: _us(x)) if temporal else (lambda x: x)
    parts = [f"{col} IS NOT NULL"]
    if not temporal:
        parts.append(f"NOT isnan(CAST({col} AS DOUBLE))")
    if lo is not None:
        parts.append(f"{col} >= {_num(conv(lo))}")
    if hi is not None:
        parts.append(f"{col} <= {_num(conv(hi))}")
    return " AND ".join(parts)


def _us(x) -> int:
    if isinstance(x, str):
        x = datetime.fromisoformat(x)
    return int(round(x.replace(tzinfo=x.tzinfo or UTC).timestamp() * 1_000_000))


def _num(x) -> str:
    if isinstance(x, float) and math.isinf(x):
        return "'Infinity'::DOUBLE" if x > 0 else "'-Infinity'::DOUBLE"
    return repr(float(x)) if isinstance(x, float) else str(x)


def _lit(x) -> str:
    if isinstance(x, str):
        return "'" + x.replace("'", "''") + "'"
    return _num(x)


def _key(x):
    return x


def _norm_row(r) -> tuple:
    out = []
    for x in r:
        if isinstance(x, float) and math.isnan(x):
            out.append("NaN")
        elif isinstance(x, datetime):
            out.append(x.replace(tzinfo=None).isoformat())
        else:
            out.append(x)
    return tuple(out)
