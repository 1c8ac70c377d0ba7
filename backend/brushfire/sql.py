"""A dashboard's semantics as SQL text: the source, each view's bar per row, and each
filter as a predicate (DESIGN.md, "Crossfilter semantics"). The pieces are here; each
view type (views/) builds its bar key and brush predicate from them, and
`views.filter_sql` turns a selection entry into its predicate. Written from the spec alone,
never from the engine, so an SQL engine running it is an independent answer to compare
with: the test oracle, the benchmark's correctness check and the SQL baselines use it.

Two dialects: DuckDB (the default) and Spark SQL (the lazy baseline). Interval brushes
select `lo <= x <= hi` on raw values and never null or NaN; temporal bounds are ISO times
(naive = UTC) or UTC microseconds; '(other)' selects every non-null value beyond the top N.

Numbers compare as Spark compares them (docs/spec.md): the column widened to DOUBLE (a
FLOAT column is not compared with its bound rounded to a float), bounds as DOUBLE
literals. Derived columns and static filters are Spark SQL, evaluated by Spark: a SQL
engine reads the source as Spark computed it (`capture.analyze.materialize_source`), and
`source_sql` adds them only for Spark itself. `value_agrees` is the documented numeric
guarantee that checks compare replies with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date

import numpy as np

from brushfire import values as V
from brushfire.errors import InteractionError
from brushfire.spec import aggregates
from brushfire.spec import models as m

OTHER = "(other)"


@dataclass(frozen=True)
class Dialect:
    name: str
    epoch_us: str  # function: TIMESTAMP -> BIGINT microseconds since 1970 UTC
    string: str  # the string type for CAST
    quote_escape: str  # how a ' is written inside a string literal
    ident_quote: str  # what quotes a column name
    # whether a column ({}) is a DECIMAL, known before any row; None: not in this dialect
    # (Spark's typeof fails its code generation, "A method named 'decimal' is not declared",
    # and falls back to interpreting the plan, logging the error every time)
    is_decimal: str | None = None


DUCKDB = Dialect("duckdb", "epoch_us", "VARCHAR", "''", '"', "typeof({}) LIKE 'DECIMAL%'")
SPARK = Dialect("spark", "unix_micros", "STRING", "\\'", "`")


def ident(name: str, d: Dialect = DUCKDB) -> str:
    """A column name, quoted: names such as `when`, `order` or `my col` are columns too."""
    q = d.ident_quote
    return q + name.replace(q, q + q) + q


def source_sql(source: m.Source, table: str) -> str:
    """SELECT the source rows from `table`: derived columns added, static filters applied.
    Spark SQL: other engines read the rows Spark materialized instead."""
    derived = "".join(f", ({e}) AS {n}" for n, e in source.columns.items())
    where = " AND ".join(f"({f})" for f in source.filters) or "TRUE"
    return f"SELECT *{derived} FROM {table} WHERE {where}"


def top_sql(view: m.CategoricalView) -> str:
    """The view's top N values: by count descending, then value, in the order of its bars
    (as capture orders them): so, or by value (`sort: name`)."""
    f = ident(view.field)
    top = (f"SELECT {f} FROM src WHERE {f} IS NOT NULL GROUP BY 1 "
           f"ORDER BY count(*) DESC, 1 ASC LIMIT {view.top}")
    return top if view.sort == "count" else f"SELECT * FROM ({top}) AS top ORDER BY 1 ASC"


def bin_sql(col: str, b: m.Bin, d: Dialect = DUCKDB) -> str:
    """The bin number of a row (NULL when dropped: null, NaN, outside an unclamped extent).
    A bin fitted to the data (maxbins, a step alone) must be resolved first (the opened
    `Dashboard.spec` has it resolved)."""
    if not b.resolved:
        msg = "a bin fitted to the data has no extent before capture: use the opened Dashboard's spec"
        raise ValueError(msg)
    lo, hi, nb, step = num(float(b.extent[0])), num(float(b.extent[1])), b.count, num(float(b.step))
    below = "0" if b.clamp else "NULL"
    above = str(nb - 1) if b.clamp else "NULL"
    x = f"CAST({ident(col, d)} AS DOUBLE)"
    return (f"CASE WHEN {x} IS NULL OR isnan({x}) THEN NULL WHEN {x} < {lo} THEN {below} "
            f"WHEN {x} > {hi} THEN {above} "
            f"ELSE CAST(least(floor(({x} - {lo}) / {step}), {nb - 1}) AS BIGINT) END")


def time_us(col: str, d: Dialect = DUCKDB) -> str:
    return f"{d.epoch_us}(CAST({ident(col, d)} AS TIMESTAMP))"


def part_sql(unit: str, col: str, d: Dialect = DUCKDB) -> str:
    """A calendar part's value of a time (UTC; models.CALENDAR_PARTS): hour 0-23, ISO day
    of week 1 (Monday) - 7, month 1-12."""
    t = f"CAST({ident(col, d)} AS TIMESTAMP)"
    if unit == "hour_of_day":
        return f"hour({t})"
    if unit == "month_of_year":
        return f"month({t})"
    return f"(weekday({t}) + 1)" if d is SPARK else f"isodow({t})"  # Spark: weekday 0 = Monday


def summed_sql(field: str, d: Dialect = DUCKDB) -> str:
    """A measure as sum and mean take it (docs/spec.md): NULL when null, NaN or ±inf (the
    engine keeps prefix sums, where inf - inf is NaN), else the value in its own type, so
    integer and decimal sums stay exact. `abs(x) < inf` is false for NaN in both dialects
    (NaN is above every number there)."""
    x = ident(field, d)
    return f"CASE WHEN abs(CAST({x} AS DOUBLE)) < {num(math.inf)} THEN {x} END"


def aggregate_sql(agg: m.Aggregate, kind: str = "number", d: Dialect = DUCKDB) -> str:
    """A view's aggregate over one bar's rows: count(*), or the op over the measure with
    null and NaN skipped, and for sum and mean ±inf too (docs/spec.md). `kind`: the
    measure's type (number, temporal or string): only numbers can be NaN. Spark has no
    quantile_disc: discrete quantiles are `percentile_disc(p) WITHIN GROUP (ORDER BY x)`
    there."""
    op = aggregates.op(agg.op)
    if op.kind == "count" or not agg.field:
        return "count(*)"
    if op.kind == "additive":
        return f"{op.sql}({summed_sql(agg.field, d)})"
    x = ident(agg.field, d)
    if kind == "number":
        x = f"CASE WHEN isnan(CAST({x} AS DOUBLE)) THEN NULL ELSE {x} END"
    if op.sql:
        return op.sql.format(x=x)
    q = num(float(agg.p if agg.p is not None else op.p))  # a quantile (median: p 0.5)
    if agg.method == "discrete":
        if d is SPARK:
            return f"percentile_disc({q}) WITHIN GROUP (ORDER BY {x})"
        return f"quantile_disc({x}, {q})"
    if d is SPARK:
        return f"percentile(CAST({x} AS DOUBLE), {q})"
    return f"quantile_cont(CAST({x} AS DOUBLE), {q})"  # a FLOAT column interpolates as doubles


# --- profiling checks (docs/spec.md, "profile") ------------------------------------------


def fd_violations_sql(fd: m.FunctionalDependency, table: str, d: Dialect = DUCKDB) -> str:
    """The left-hand values violating `fd`: more than one distinct right-hand value (null is
    a value on both sides, as in GROUP BY and SELECT DISTINCT)."""
    lhs = ", ".join(ident(c, d) for c in fd.lhs)
    rhs = ", ".join(ident(c, d) for c in fd.rhs)
    return (f"SELECT {lhs} FROM (SELECT DISTINCT {lhs}, {rhs} FROM {table}) AS pairs "
            f"GROUP BY {lhs} HAVING count(*) > 1")


def joined_sql(source: m.Source, table: str, dimensions: dict[str, tuple[str, list[str]]],
               compared: dict[str, str | None] | None = None) -> str:
    """DuckDB: the rows of `table` (the source's files) in their order, LEFT JOIN each
    join's dimension table, every column of which is `<join>.<column>` (docs/spec.md,
    "Joins"). `dimensions`: {join name: (relation, its columns)}; `compared`: {join name:
    the type its `on` and key are compared in, when not as DuckDB compares them}."""
    cols, joins = [], []
    alias = {j.name: f"j{i}" for i, j in enumerate(source.joins)}
    for j in source.joins:
        relation, columns = dimensions[j.name]
        on = source.join_of(j.on)
        left = f"{alias[on.name]}.{ident(j.on.split('.', 1)[1])}" if on else f"t.{ident(j.on)}"
        right = f"{alias[j.name]}.{ident(j.key)}"
        cast = (compared or {}).get(j.name)
        if cast:
            left, right = f"CAST({left} AS {cast})", f"CAST({right} AS {cast})"
        joins.append(f"LEFT JOIN {relation} AS {alias[j.name]} ON {left} = {right}")
        cols += [f"{alias[j.name]}.{ident(c)} AS {ident(f'{j.name}.{c}')}" for c in columns]
    return (f"SELECT t.* EXCLUDE (__rownum){''.join(', ' + c for c in cols)} FROM "
            f"(SELECT *, row_number() OVER () AS __rownum FROM {table}) AS t {' '.join(joins)} "
            "ORDER BY t.__rownum")


def profile_sql(dash: m.DashboardSpec, table: str) -> str:
    """DuckDB: the rows of `table` in their order, with each functional-dependency check's
    column ('violates' on the rows of its violating left-hand values, else 'holds')."""
    checks = dash.profile.fd if dash.profile else []
    cols, joins = [], []
    for i, fd in enumerate(checks):
        keys = ", ".join(f"{ident(c)} AS __k{j}" for j, c in enumerate(fd.lhs))
        on = " AND ".join(f"t.{ident(c)} IS NOT DISTINCT FROM v{i}.__k{j}" for j, c in enumerate(fd.lhs))
        joins.append(f"LEFT JOIN (SELECT {keys}, TRUE AS __bad FROM ({fd_violations_sql(fd, table)})"
                     f" AS w{i}) AS v{i} ON {on}")
        cols.append(f"CASE WHEN v{i}.__bad THEN {lit(m.FD_VIOLATES)} ELSE {lit(m.FD_HOLDS)} END"
                    f" AS {ident(fd.view_name)}")
    return (f"SELECT t.* EXCLUDE (__rownum){''.join(', ' + c for c in cols)} FROM "
            f"(SELECT *, row_number() OVER () AS __rownum FROM {table}) AS t {' '.join(joins)} "
            "ORDER BY t.__rownum")


# --- filters as predicates ---------------------------------------------------------------


def interval_sql(col: str, interval, temporal: bool = False, d: Dialect = DUCKDB,
                 part: str | None = None) -> str:
    """lo <= col <= hi (None = open end); never null, never NaN. With a calendar `part`,
    lo <= part(col) <= hi on the part's values (numbers)."""
    lo, hi = pair(interval)
    c = ident(col, d)
    x = time_us(col, d) if temporal else f"CAST({c} AS DOUBLE)"
    if part:
        x, temporal = f"CAST({part_sql(part, col, d)} AS DOUBLE)", False
    parts = [f"{c} IS NOT NULL"]
    if not temporal and not part:
        parts.append(f"NOT isnan(CAST({c} AS DOUBLE))")
    if lo is not None:
        parts.append(f"{x} >= {num(micros(lo) if temporal else _number(lo))}")
    if hi is not None:
        parts.append(f"{x} <= {num(micros(hi) if temporal else _number(hi))}")
    return " AND ".join(parts)


def select_sql(view, values: list, top: list | None, d: Dialect = DUCKDB) -> str:
    """The rows whose value is in `values` ('(other)': non-null and not in `top`, in a
    view with an '(other)' bar; in one without, the text '(other)', a value as any other,
    as docs/protocol.md names it). When `top` holds times (datetimes or dates: a
    categorical view over a time field), values are times too (ISO text or datetimes) and
    compared as UTC microseconds."""
    if not isinstance(values, (list, tuple)):
        msg = f"select takes a list of values, got {values!r}"
        raise InteractionError(msg)
    parts = []
    other = view.other and OTHER in values
    plain = [x for x in values if not (view.other and x == OTHER)]
    f = ident(view.field, d)
    times = are_times(top)
    def among(vs: list) -> str:
        if times:
            return f"{time_us(view.field, d)} IN ({', '.join(str(micros(v)) for v in vs)})"
        return values_in_sql(f, vs, d)

    if plain:
        parts.append(among(plain))
    if other:
        parts.append(f"({f} IS NOT NULL AND NOT ({among(top)}))" if top else f"{f} IS NOT NULL")
    return " OR ".join(parts) or "FALSE"


def column_values_sql(column: str, values: list, temporal: bool = False, d: Dialect = DUCKDB) -> str:
    """A `filter` on a source column by values (lazy.py's filter_column): the rows whose
    value is one of them (times as UTC microseconds), null for its null rows."""
    plain = [x for x in values if x is not None]
    c = ident(column, d)
    x, literal = (time_us(column, d), lambda v: str(micros(v))) if temporal else (c, lambda v: lit(v, d))
    parts = [f"{x} IN ({', '.join(literal(v) for v in plain)})"] if plain else []
    parts += [f"{c} IS NULL"] if None in values else []
    return " OR ".join(parts) or "FALSE"


def parameter_sql(p: m.Parameter, value, d: Dialect = DUCKDB) -> str:
    """`field <op> value` (a dropdown's choices are the field's values, NaN among them:
    `value_lit`; range ops on numbers never pass NaN; a time is ISO text, compared as UTC
    microseconds, as brushes are); op between: lo <= field <= hi for a value [lo, hi]; a dropdown
    with `multiple`: field IN (values)."""
    if p.multiple:  # any of a list of values
        if not isinstance(value, (list, tuple)):
            msg = f"parameter {p.name!r} takes a list of values, got {value!r}"
            raise InteractionError(msg)
        return values_in_sql(ident(p.field, d), list(value), d) if value else "FALSE"
    if p.op == "between":
        lo, hi = pair(value)
        return interval_sql(p.field, value, isinstance(lo, str) or isinstance(hi, str), d)
    op = {"eq": "=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}[p.op]
    if p.op != "eq" and isinstance(value, (str, date)):  # a time: as UTC microseconds, as
        # interval_sql compares them (a text's offset kept, a date its midnight: SQL's cast
        # of '2000-01-01T00:00:00+01:00' to a TIMESTAMP drops the offset, to a DATE the time)
        return f"{ident(p.field, d)} IS NOT NULL AND {time_us(p.field, d)} {op} {micros(value)}"
    f = ident(p.field, d)
    guard = f" AND NOT isnan(CAST({f} AS DOUBLE))" if p.op != "eq" and not isinstance(value, str) else ""
    # (a boolean compared as it is: Spark refuses CAST(flag AS DOUBLE) = TRUE, DuckDB takes it;
    # so is a choice beyond 2^53, an integer's: as doubles, 2^62 + 1 would be 2^62's rows too)
    big = isinstance(value, (int, float)) and not isinstance(value, bool) and \
        float(value).is_integer() and 2**53 <= abs(value) <= 2**63
    if p.op == "eq" and big:
        return values_in_sql(f, [value], d)
    x = f if isinstance(value, (str, bool, np.bool_)) else f"CAST({f} AS DOUBLE)"
    return f"{x} {op} {value_lit(value, d) if p.op == 'eq' else lit(value, d)}{guard}"


def applies(dash: m.DashboardSpec, f: str, view: str) -> bool:
    """Does active filter `f` filter `view`? Parameters and filters on a column
    (`column:<name>`) filter every view; a brush filters the other views of every
    crossfilter group its view is in, or every other view when its view is in none (an
    undeclared brush, docs/spec.md; lazy.py's `_brush_targets`)."""
    if f in {p.name for p in dash.interactions.parameters} or f.startswith("column:"):
        return True
    groups = [g.views for g in dash.interactions.crossfilter if f in g.views]
    return f != view and (any(view in g for g in groups) or not groups)


def where_sql(dash: m.DashboardSpec, preds: dict[str, str], view: str | None) -> str:
    """The conjunction of the predicates that apply to `view` (all of them for None)."""
    parts = [p for f, p in preds.items() if view is None or applies(dash, f, view)]
    return " AND ".join(f"({p})" for p in parts) or "TRUE"


# --- literals ----------------------------------------------------------------------------


def micros(x) -> int:
    """A time bound as UTC microseconds: ISO text, a datetime (naive = UTC) or a date,
    converted by brushfire.values (the one rounding rule), or a number already in
    microseconds."""
    if isinstance(x, (str, date)):
        return V.time_bound(x)
    return int(_number(x))


def are_times(values: list | None) -> bool:
    """Are these a time field's values (datetimes or dates), as a categorical view over a
    time gives its top values to SQL?"""
    return any(isinstance(x, date) for x in values or ())


def num(x) -> str:
    """A number as an SQL literal of the same value: integers as they are, floats as DOUBLE
    literals in both dialects (`1.5e0`: without the exponent, `1.5` is a DECIMAL)."""
    if isinstance(x, float) and math.isinf(x):
        return "CAST('Infinity' AS DOUBLE)" if x > 0 else "CAST('-Infinity' AS DOUBLE)"
    if isinstance(x, float):
        text = repr(x)
        return text if "e" in text or "n" in text else f"{text}e0"
    return str(x)


def lit(x, d: Dialect = DUCKDB) -> str:
    if isinstance(x, str):
        escaped = x.replace("\\", "\\\\") if d is SPARK else x
        return "'" + escaped.replace("'", d.quote_escape) + "'"
    if isinstance(x, (bool, np.bool_)):  # a boolean category or parameter value
        return "TRUE" if x else "FALSE"
    return num(_number(x))


def values_in_sql(f: str, values: list, d: Dialect = DUCKDB) -> str:
    """`f IN (values)` (`f`: SQL of a column; the values as `value_lit` writes them). An
    integer of 2^53 or more (or an integral float, which `value_lit` writes as the integer
    it is) names an integer column's value exactly, but a decimal column's values are the nearest
    doubles (docs/spec.md, as the engine reads them): 12345678901234567.89 is the choice
    12345678901234568.0, which the integer literal never equals. A decimal column is so
    compared as doubles, where the dialect tells a decimal column (`Dialect.is_decimal`)."""
    lits = ", ".join(value_lit(x, d) for x in values)
    if d.is_decimal is None or not any(_beyond_doubles(x) for x in values):
        return f"{f} IN ({lits})"
    return (f"CASE WHEN {d.is_decimal.format(f)} THEN CAST({f} AS DOUBLE) IN ({lits}) "
            f"ELSE {f} IN ({lits}) END")


def _beyond_doubles(x) -> bool:
    """Is `x` an integer (or an integral float) of 2^53 or more, which an integer column
    holds exactly and a decimal column's doubles only to the nearest?"""
    return isinstance(x, (int, float)) and not isinstance(x, (bool, np.bool_)) and \
        math.isfinite(x) and float(x).is_integer() and abs(x) >= 2**53


def _integer_lit(x) -> bool:
    """Does `value_lit` write `x` as an exact integer literal?"""
    return isinstance(x, float) and x.is_integer() and 2.0**53 <= abs(x) <= 2.0**63


def value_lit(x, d: Dialect = DUCKDB) -> str:
    """One of a field's values as a literal (a categorical view's bar, a dropdown's choice),
    NaN too: a float field's NaN is one of its values (non-null), a bar and a choice of its
    own, as in the engine. DuckDB and Spark take NaN = NaN, so `=` and `IN` find its rows.
    Null names NaN, as in replies (JSON has no NaN) and `values.choice_key`: no bar or choice
    is null. `lit` refuses NaN: no bound is NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "CAST('NaN' AS DOUBLE)"
    if _integer_lit(x):
        # the integer it is: a double literal would compare an integer column as doubles,
        # where 2^62 + 1 equals 2^62; a value names one category exactly (values.choice_key).
        # (Beyond an int64 no integer column holds it, and Spark reads a longer integer
        # literal as a DECIMAL of at most 38 digits: 1e300 stays a double)
        return str(int(x))
    return lit(x, d)


def _number(x) -> float | int:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or (isinstance(x, float) and math.isnan(x)):
        msg = f"bound {x!r} is not a number"
        raise InteractionError(msg)
    return x


def pair(interval) -> tuple:
    """(lo, hi) of an interval, or InteractionError saying what an interval is."""
    try:
        lo, hi = interval
    except (TypeError, ValueError):
        msg = f"an interval is [lo, hi], got {interval!r}"
        raise InteractionError(msg) from None
    return lo, hi


# --- the numeric guarantee (docs/spec.md, "What 'equal to SQL' means for numbers") -----

SUM_TOLERANCE = 1e-9  # of the sum of |x| over the bar's rows, for non-integer measures
# integer measures add exactly in doubles while every partial sum is below 2^53; Σ|x| over
# the bar's rows bounds them all, in any order
EXACT_BELOW = 2.0**53


def value_agrees(got, want, op: str, count: int = 0, abs_sum: float = 0.0,
                 integer: bool = False) -> bool:
    """Does a bar's value from an engine equal SQL's, as documented: counts, and sums and
    means of integer measures whose Σ|x| is below 2^53, exactly; other sums within
    SUM_TOLERANCE × Σ|x| (the bar's rows, filters aside), means within that divided by
    the bar's count."""
    if want is None or got is None:
        return got is None and want is None
    if got == want:  # (also both ±inf: a double sum past 1.8e308, where got - want is NaN)
        return True
    spec = aggregates.op(op)
    if spec.kind == "count" or (integer and abs_sum < EXACT_BELOW):
        return got == want
    bound = SUM_TOLERANCE * abs_sum / (count if spec.per_value and count else 1)
    return abs(got - want) <= bound
