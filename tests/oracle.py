"""An independent oracle: what DuckDB's SQL says each view, selection and highlight
should be. Built from the crossfilter semantics in docs (via `brushfire.sql`, the spec's
semantics as SQL text), not from the engine: it reads only the spec model and the
interactions applied."""

from __future__ import annotations

import math
from datetime import datetime

import duckdb

from brushfire import sql
from brushfire.spec import models as m

OTHER = sql.OTHER


class Oracle:
    def __init__(self, dash: m.Dashboard) -> None:
        self.dash = dash
        self.con = duckdb.connect()
        self.con.execute("SET TimeZone = 'UTC'")
        self.con.execute(f"CREATE TABLE base AS SELECT * FROM read_parquet('{dash.source.path}')")
        self.con.execute(f"CREATE VIEW src AS {sql.source_sql(dash.source, 'base')}")
        self.top = {v.name: [r[0] for r in self.con.execute(sql.top_sql(v)).fetchall()]
                    for v in dash.views if isinstance(v, m.CategoricalView)}
        self.filters: dict[str, str] = {}  # active filter name -> SQL predicate

    # --- interactions, as SQL predicates ------------------------------------------------

    def brush(self, view: str, interval, y=None) -> None:
        self.filters[view] = sql.brush_sql(self.dash.view(view), interval, y)

    def select(self, view: str, values: list) -> None:
        self.filters[view] = sql.select_sql(self.dash.view(view), values, self.top[view])

    def set_parameter(self, name: str, value) -> None:
        if value is None:
            self.filters.pop(name, None)
        else:
            self.filters[name] = sql.parameter_sql(self.dash.parameter(name), value)

    def clear(self, name: str | None = None) -> None:
        if name is None:
            self.filters.clear()
        else:
            self.filters.pop(name, None)

    # --- expected results -----------------------------------------------------------------

    def where(self, view: str | None) -> str:
        return sql.where_sql(self.dash, self.filters, view)

    def view(self, name: str, extra: str = "TRUE") -> dict:
        """{bar label key: (count, sum, mean)} for bars with rows."""
        v = self.dash.view(name)
        key = self.bar_sql(v)
        mf = v.aggregate.field
        agg = f", sum({mf}), avg({mf})" if mf else ", NULL, NULL"
        q = (f"SELECT {key} AS bar, count(*){agg} FROM src WHERE ({self.where(name)}) "
             f"AND ({extra}) GROUP BY 1 HAVING bar IS NOT NULL")
        return {r[0]: (r[1], r[2], r[3]) for r in self.con.execute(q).fetchall()}

    def rows(self, columns: list[str], where: str) -> list[tuple]:
        q = f"SELECT {', '.join(columns)} FROM src WHERE {where}"
        return sorted((_norm_row(r) for r in self.con.execute(q).fetchall()), key=repr)

    def bar_sql(self, v) -> str:
        """SQL for the bar a row falls in (NULL when the view drops it), as a label key:
        the bar number, the bar's start as ISO text (temporal), or the value (categorical)."""
        if isinstance(v, m.TemporalView):
            return f"strftime(date_trunc('{v.unit}', {v.field}), '%Y-%m-%dT%H:%M:%S')"
        return sql.bar_key_sql(v, self.top.get(v.name))


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
