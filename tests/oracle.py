"""An independent oracle: what DuckDB's SQL says each view, selection and highlight
should be. Built from the crossfilter semantics in docs (via `brushfire.sql`, the spec's
semantics as SQL text), not from the engine: it reads only the spec model and the
interactions applied.

Derived columns and static filters are Spark SQL, evaluated by Spark (docs/spec.md): with
any, the oracle's table is the source as Spark computes it, materialized once
(`capture.analyze.materialize_source`), never Spark SQL pasted into DuckDB. Values are
compared with `agrees`, the documented numeric guarantee (`brushfire.sql.value_agrees`)."""

from __future__ import annotations

import atexit
import math
import shutil
import tempfile
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb

from brushfire import sql
from brushfire import values as V
from brushfire.baselines.duckdb import joined_relation, parquet_relation
from brushfire.spec import models as m
from brushfire.spec.checks import profile_columns
from brushfire.values import time_bound
from brushfire.views import brush_sql, key_sql, view_type

OTHER = sql.OTHER


CACHE = Path(tempfile.mkdtemp(prefix="brushfire-oracle-"))  # sources Spark materialized, per run
atexit.register(shutil.rmtree, CACHE, True)


class Oracle:
    def __init__(self, dash: m.DashboardSpec, spark=None) -> None:
        self.dash = dash
        self.con = duckdb.connect()
        self.con.execute("SET TimeZone = 'UTC'")
        checks = [sql.ident(c) for c in profile_columns(dash)]
        src = dash.source  # Spark's rows, in capture's order: with any derived column or
        # static filter, and when the source is no single Parquet file (a folder, Delta)
        joins_read = all(j.resolved_format == "parquet" and Path(j.path).is_file() for j in src.joins)
        if src.columns or src.filters or src.resolved_format != "parquet" or \
                not Path(src.path).is_file() or not joins_read:
            from brushfire.capture.analyze import materialize_source

            files = ", ".join(f"'{f}'" for f in materialize_source(dash, CACHE, spark))
            drop = f" EXCLUDE ({', '.join(checks)})" if checks else ""  # Spark's: computed again here
            self.con.execute(f"CREATE TABLE base AS SELECT *{drop} FROM read_parquet([{files}])")
        elif src.joins:  # DuckDB's LEFT JOIN of the Parquet files (sql.joined_sql)
            rel = joined_relation(self.con, src, parquet_relation(self.con, src.path))
            self.con.execute(f"CREATE TABLE base AS {rel}")
        else:  # (typed as Spark reads it)
            self.con.execute(f"CREATE TABLE base AS SELECT * FROM {parquet_relation(self.con, src.path)}")
        if checks:  # the profiling checks' columns, as DuckDB's SQL says (sql.profile_sql)
            self.con.execute(f"CREATE TABLE checked AS {sql.profile_sql(dash, 'base')}")
            self.con.execute("CREATE VIEW src AS SELECT * FROM checked")
        else:
            self.con.execute("CREATE VIEW src AS SELECT * FROM base")
        # (-0.0 and 0.0 are one value, grouped under either: the engine names it 0.0; a
        # decimal is the nearest double, as the engine reads decimals)
        self.top = {v.name: [r[0] + 0.0 if isinstance(r[0], float) else _double(r[0])
                             for r in self.con.execute(sql.top_sql(v)).fetchall()]
                    for v in dash.views if isinstance(v, m.CategoricalView)}
        self.filters: dict[str, str] = {}  # active filter name -> SQL predicate
        self._measures: dict[str, tuple[bool, dict]] = {}  # view -> (integer?, {bar: Σ|x|})
        self._nonnull: dict[str, dict] = {}  # view -> {bar: non-null measures}, of the last view()

    # --- interactions, as SQL predicates ------------------------------------------------

    def brush(self, view: str, interval, y=None) -> None:
        self.filters[view] = brush_sql(self.dash.view(view), interval, y)

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

    def selected(self) -> int:
        """Rows passing every filter: the selection's size."""
        return self.con.execute(f"SELECT count(*) FROM src WHERE {self.where(None)}").fetchone()[0]

    def view(self, name: str, extra: str = "TRUE") -> dict:
        """{bar label key: (count, sum, mean, statistic)} for bars with rows; the
        statistic is an order-statistic view's (median, quantile, min, max, distinct;
        times as ISO text in UTC), else None."""
        v = self.dash.view(name)
        key = self.bar_sql(v)
        mf = v.aggregate.field and sql.ident(v.aggregate.field)
        order = v.aggregate.op in m.ORDER_OPS
        x = mf and sql.summed_sql(v.aggregate.field)  # NaN and ±inf skipped, as the engine does
        agg2 = f", {sql.aggregate_sql(v.aggregate, self.kind(v.aggregate.field))}" if order else ", NULL"

        def query(measure) -> list:
            agg = f", sum({measure}), count({measure})" if mf and not order else ", NULL, 0"
            return self.con.execute(f"SELECT {key} AS bar, count(*){agg}{agg2} FROM src WHERE "
                                    f"({self.where(name)}) AND ({extra}) GROUP BY 1 "
                                    "HAVING bar IS NOT NULL").fetchall()
        try:
            fetched = query(x)
        except duckdb.OutOfRangeException:  # a DECIMAL(38, s) sum beyond DuckDB's decimals
            fetched = query(f"CAST({x} AS DOUBLE)")
        rows = [(r[0], r[1], _double(r[2]), r[3], _double(r[4])) for r in fetched]
        self._nonnull[name] = {r[0]: r[3] for r in rows}  # measures per bar, for `agrees`
        return {r[0]: (r[1], r[2], r[2] / r[3] if r[3] else None,  # mean: the exact sum, divided once
                       _iso(r[4])) for r in rows}

    def kind(self, column: str) -> str:
        """number, temporal or string: a column's type in DuckDB, coarsely."""
        # (any_value: the column's type, also of a table without rows)
        t = self.con.execute(f"SELECT typeof(any_value({sql.ident(column)})) FROM src").fetchone()[0]
        if t.startswith(("TIMESTAMP", "DATE")):
            return "temporal"
        return "string" if t == "VARCHAR" else "number"

    def caveats(self, name: str) -> dict[str, int]:
        """How many rows view `name` does not show under the filters, and why (as the
        engine reports them, docs/protocol.md): SQL over the raw values."""
        v = self.dash.view(name)
        where = self.where(name)
        cases = []
        if isinstance(v, m.HistogramView):
            x = f"CAST({sql.ident(v.field)} AS DOUBLE)"
            lo, hi = sql.num(float(v.bin.extent[0])), sql.num(float(v.bin.extent[1]))
            below, above = ("clamped_below", "clamped_above") if v.bin.clamp else ("below", "above")
            null = f"{x} IS NULL OR isnan({x})"
            cases = [f"WHEN {null} THEN '{self.null_reason(v, null)}'",
                     f"WHEN {x} < {lo} THEN '{below}'", f"WHEN {x} > {hi} THEN '{above}'"]
        elif isinstance(v, m.TemporalView):
            null = f"{sql.ident(v.field)} IS NULL"
            cases = [f"WHEN {null} THEN '{self.null_reason(v, null)}'"]
        elif isinstance(v, m.CategoricalView):
            f = sql.ident(v.field)
            top = self.top[name]
            if sql.are_times(top):  # a time field's bars: instants, as UTC microseconds
                among = f"{sql.time_us(v.field)} IN ({', '.join(str(sql.micros(t)) for t in top)})"
            else:
                among = sql.values_in_sql(f, top)
            cases = [f"WHEN {f} IS NULL THEN '{self.null_reason(v, f'{f} IS NULL')}'",
                     f"WHEN NOT ({among if top else 'FALSE'}) THEN '{'other' if v.other else 'beyond_top'}'"]
        else:
            cases = [f"WHEN ({self.bar_sql(v)}) IS NULL THEN 'not_shown'"]
        reason = f"CASE {' '.join(cases)} ELSE NULL END"
        q = (f"SELECT {reason} AS r, count(*) FROM src WHERE ({where}) GROUP BY 1 "
             f"HAVING r IS NOT NULL")
        out = {r: n for r, n in self.con.execute(q).fetchall()}
        mf = v.aggregate.field
        if mf and v.aggregate.op != "count":
            x = sql.ident(mf)
            missing = f"{x} IS NULL" + (f" OR isnan(CAST({x} AS DOUBLE))" if self.kind(mf) == "number" else "")
            if v.aggregate.op in ("sum", "mean"):
                missing += f" OR isinf(CAST({x} AS DOUBLE))"
            q = (f"SELECT count(*) FROM src WHERE ({where}) AND ({self.bar_sql(v)}) IS NOT NULL "
                 f"AND ({missing})")
            n = self.con.execute(q).fetchone()[0]
            if n:
                out["measure_null"] = n
        return out

    def null_reason(self, v, null: str) -> str:
        """The caveat of a view's rows not shown for a null value (docs/spec.md, Joins):
        'no_match:<join>' for a view over a joined column when every such row, over the
        whole source, is a row without a match on the join (its key column is null),
        else 'null'."""
        j = self.dash.source.join_of(v.field)
        if j is None:
            return "null"
        key = sql.ident(f"{j.name}.{j.key}")
        nulls, unmatched = self.con.execute(
            f"SELECT count(*) FILTER (WHERE {null}), count(*) FILTER (WHERE {key} IS NULL) "
            "FROM src").fetchone()
        return f"no_match:{j.name}" if unmatched and nulls == unmatched else "null"

    def agrees(self, name: str, bar, got, want, op: str | None = None) -> bool:
        """Does an engine's value for `bar` of view `name` equal SQL's `want`, as documented
        (docs/spec.md, "What 'equal to SQL' means for numbers")? `bar` is the label key of
        `view` as the last `view(name)` returned it; `op` defaults to the view's aggregate."""
        v = self.dash.view(name)
        op = op or v.aggregate.op
        mf = v.aggregate.field and sql.ident(v.aggregate.field)
        if op == "count" or not mf:
            return sql.value_agrees(got, want, "count")
        if name not in self._measures:
            t = self.con.execute(f"SELECT typeof(any_value({mf})) FROM src").fetchall()
            integer = bool(t) and (t[0][0].endswith("INT") or t[0][0] in ("INTEGER", "HUGEINT")
                                   or (t[0][0].startswith("DECIMAL") and t[0][0].endswith(",0)")))
            x = sql.summed_sql(v.aggregate.field)
            q = (f"SELECT {self.bar_sql(v)} AS bar, sum(abs(CAST({x} AS DOUBLE))), count({x}) "
                 f"FROM src GROUP BY 1")
            self._measures[name] = (integer, {r[0]: r[1] or 0.0 for r in self.con.execute(q).fetchall()})
        integer, abs_sums = self._measures[name]
        count = self._nonnull.get(name, {}).get(bar, 0)
        return sql.value_agrees(got, want, op, count, abs_sums.get(bar, 0.0), integer)

    def rows(self, columns: list[str], where: str) -> list[tuple]:
        q = f"SELECT {', '.join(columns)} FROM src WHERE {where}"
        return sorted((_norm_row(r) for r in self.con.execute(q).fetchall()), key=repr)

    def bar_sql(self, v) -> str:
        """SQL for the bar a row falls in (NULL when the view drops it), as a label key:
        the bar number, the bar's start as ISO text (temporal), or the value (categorical)."""
        if isinstance(v, m.TemporalView) and not v.part:  # (a calendar part: its bar number)
            return f"strftime(date_trunc('{v.unit}', {sql.ident(v.field)}), '%Y-%m-%dT%H:%M:%S')"
        return key_sql(v, self.top.get(v.name))


def _double(x):
    """A DECIMAL from SQL as the engine reads decimals: the nearest double (as
    brushfire.bench.check does; a Decimal does not subtract from a float)."""
    return float(x) if isinstance(x, Decimal) else x


def _iso(x):
    """A datetime as the engine writes instants (UTC, ISO with the offset)."""
    if isinstance(x, datetime):
        return x.replace(tzinfo=UTC).isoformat() if x.tzinfo is None else x.isoformat()
    if isinstance(x, date):  # a date: its midnight
        return datetime(x.year, x.month, x.day, tzinfo=UTC).isoformat()
    return x


def _norm_row(r) -> tuple:
    out = []
    for x in r:
        if isinstance(x, float) and math.isnan(x):
            out.append("NaN")
        elif isinstance(x, datetime):  # an instant: in UTC (a zoned one's zone apart)
            out.append((x if x.tzinfo is None else x.astimezone(UTC)).replace(tzinfo=None).isoformat())
        else:
            out.append(x)
    return tuple(out)


# --- an engine's view against the oracle's ------------------------------------------


def engine_bars(vd, vtype: str, top: list | None = None, view=None) -> dict:
    """{bar key as `Oracle.view` keys it: (count, value)} of the bars with rows. A
    categorical bar's key is as the oracle's SQL spells it (`key_sql`; with the `view`,
    its type's `label_keys`: the '(other)' bar's distinct from a value '(other)'): its
    value cast to text, a boolean `true`/`false`, a time (`top`: the view's top values
    are times) its UTC microseconds."""
    times = bool(top) and sql.are_times(top)
    keys = None
    if vtype == "categorical" and view is not None:
        n = len(vd.labels)
        typed = [x if (i == n - 1 and view.other) or not times else V.instant_datetime(x)
                 for i, x in enumerate(vd.labels)]
        keys = view_type(view).label_keys(view, typed)
    out = {}
    for i, (label, n, value) in enumerate(zip(vd.labels, vd.counts, vd.values, strict=True)):
        if n == 0:
            continue
        key = i
        if vtype == "temporal" and not getattr(view, "part", None):  # (a calendar part: its bar number)
            key = label.replace("+00:00", "")
        elif keys is not None:
            key = keys[i]
        elif vtype == "categorical":
            key = label
            if isinstance(label, bool):
                key = str(label).lower()
            elif times and isinstance(label, str) and label != OTHER:
                key = str(time_bound(label))
        out[key] = (n, value)
    return out


def assert_view_matches(vd, expected: dict, op: str, vtype: str, context, oracle) -> None:
    got = engine_bars(vd, vtype, oracle.top.get(vd.name), oracle.dash.view(vd.name))
    assert set(got) == set(expected), (context, vd.name, got, expected)
    for key, (n, value) in got.items():
        count, total, mean, stat = expected[key]
        assert n == count, (context, vd.name, key, n, count)
        if op not in ("count", "sum", "mean"):  # order statistics: equal to the last bit
            assert value == stat, (context, vd.name, key, value, stat)
            continue
        want = {"count": count, "sum": total, "mean": mean}[op]
        # the documented guarantee: exact counts and integer sums, other sums within 1e-9 Σ|x|
        assert oracle.agrees(vd.name, key, value, want, op), (context, vd.name, key, value, want)
