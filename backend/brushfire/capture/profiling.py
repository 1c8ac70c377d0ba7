"""Data profiling through lineage (Smoke §6.5.2): the spec's `profile` checks as columns
Spark computes next to the source's, and the violations `brushfire profile` lists.

A functional dependency `lhs -> rhs` is violated by the left-hand values (combinations
of the lhs columns) found with more than one distinct right-hand value; null is a value
on both sides, as in GROUP BY and SELECT DISTINCT (`sql.fd_violations_sql` says the same
in SQL). Its column, named as its view, is 'violates' on the rows of those left-hand
values and 'holds' on the others.

`add_profile_columns` is the one hook into capture: `analyze_source` calls it last, so
capture, the materialized source of the SQL checks and the lazy answers all see the
columns. The violating left-hand values come from a Spark aggregate and are joined back
by broadcast, which keeps the source's partitions and row order (rids stay positions).
With capture/spark.py and capture/analyze.py, a module that uses pyspark (imported
inside functions).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from brushfire.spec import models as m
from brushfire.spec.checks import check_profile_columns


def add_profile_columns(df, dash: m.DashboardSpec, over=None):
    """`df` with one column per functional-dependency check of the spec: 'violates' or
    'holds', the violations found over the rows of `over` (default `df`; the whole source
    when `df` is some of its files: capture's scan of an appended file). Nothing runs
    here; the aggregate runs within the jobs that read `df`."""
    from pyspark.sql import functions as F

    check_profile_columns(dash, df.columns)
    over = df if over is None else over
    for i, fd in enumerate(dash.profile.fd if dash.profile else []):
        keys = [f"__fd{i}_k{j}" for j in range(len(fd.lhs))]
        flag = f"__fd{i}_violates"
        bad = (over.select(*[F.col(_q(c)) for c in fd.lhs + fd.rhs]).distinct()
               .groupBy(*[F.col(_q(c)) for c in fd.lhs]).count().where(F.col("count") > 1)
               .select(*[F.col(_q(c)).alias(k) for c, k in zip(fd.lhs, keys, strict=True)],
                       F.lit(True).alias(flag)))
        on = [df[_q(c)].eqNullSafe(bad[k]) for c, k in zip(fd.lhs, keys, strict=True)]
        df = (df.join(F.broadcast(bad), on=on, how="left")
              .withColumn(fd.view_name, F.when(F.col(flag), F.lit(m.FD_VIOLATES))
                          .otherwise(F.lit(m.FD_HOLDS)))
              .drop(*keys, flag))
    return df


def _q(c: str) -> str:
    """A column name as Spark reads it whatever it holds (a joined column's dot)."""
    return "`" + c.replace("`", "``") + "`"


@dataclass
class Violation:
    """One left-hand value that violates a dependency: its right-hand values and rows."""

    lhs: tuple
    rows: int
    rhs: list[tuple[tuple, int]]  # (right-hand value, rows), most rows first


@dataclass
class FdReport:
    fd: m.FunctionalDependency
    lhs_values: int  # distinct left-hand values
    rows: int  # rows of the source
    violating_values: int
    violating_rows: int
    worst: list[Violation] = field(default_factory=list)  # most rows first, at most `limit`


def fd_report(df, fd: m.FunctionalDependency, limit: int = 10) -> FdReport:
    """How `fd` fares on `df` (the source as `analyze_source` gives it): three small Spark
    jobs over (lhs, rhs) pair counts."""
    from pyspark.sql import functions as F

    lhs, rhs = [F.col(_q(c)) for c in fd.lhs], [F.col(_q(c)) for c in fd.rhs]
    pairs = df.groupBy(*lhs, *rhs).agg(F.count(F.lit(1)).alias("__n")).cache()
    try:
        per_lhs = pairs.groupBy(*lhs).agg(F.count(F.lit(1)).alias("__k"), F.sum("__n").alias("__rows"))
        totals = per_lhs.agg(F.count(F.lit(1)), F.sum("__rows"),
                             F.sum(F.when(F.col("__k") > 1, 1).otherwise(0)),
                             F.sum(F.when(F.col("__k") > 1, F.col("__rows")).otherwise(0))).collect()[0]
        worst = (per_lhs.where(F.col("__k") > 1)
                 .orderBy(F.col("__rows").desc(), *[c.asc_nulls_first() for c in lhs])
                 .limit(limit).collect())
        out = []
        for r in worst:
            key = tuple(r[c] for c in fd.lhs)
            cond = F.lit(True)
            for c, x in zip(fd.lhs, key, strict=True):
                cond = cond & F.col(_q(c)).eqNullSafe(F.lit(x))
            found = pairs.where(cond).orderBy(F.col("__n").desc()).collect()
            out.append(Violation(key, int(r["__rows"]),
                                 [(tuple(p[c] for c in fd.rhs), int(p["__n"])) for p in found]))
    finally:
        pairs.unpersist()
    return FdReport(fd, int(totals[0] or 0), int(totals[1] or 0), int(totals[2] or 0),
                    int(totals[3] or 0), out)
