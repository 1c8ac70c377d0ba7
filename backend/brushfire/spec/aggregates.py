"""The aggregate ops a view may show (`aggregate.op`), one entry each: what the op needs,
how it is counted, how SQL spells it, how a bar's value comes from what the engine
counts, and how its axis is titled and formatted. Everything else (the spec's checks,
sql.py, the engine's bars, the baselines, the charts) reads this table, so a new op whose
kind already exists is one entry here plus its line in docs/spec.md
(docs/architecture.md, "Add an aggregate").

Kinds, i.e. what the engine counts per bar (engine/stats.py, lineage/layout.py):
- "count": the bar's rows;
- "additive": the rows, and the sum and count of the measure's finite values (sum,
  mean: a bar's value is `value(sum, n)`);
- "order": the rows per bar and measure value (cells), the value at the op's `ranks`
  read from them (order statistics, and count distinct).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Kind = Literal["count", "additive", "order"]


@dataclass(frozen=True)
class Op:
    name: str
    kind: Kind
    verb: str  # the error's "the column to ..." when the field is missing
    # SQL: additive ops, the function over the measure's finite values; order ops, the
    # aggregate over the measure `{x}` (none: a quantile at `p`, as sql.aggregate_sql writes it)
    sql: str = ""
    value: Callable[[float, int], float | None] | None = None  # additive: (sum, n) -> the bar's value
    p: float | None = None  # the fraction an order statistic takes when the spec gives none
    takes_p: bool = False  # `p` is given in the spec (quantile)
    takes_method: bool = False  # continuous or discrete interpolation (median, quantile)
    whole: bool = False  # values are whole numbers of rows or values (axes: integer ticks)
    sums: bool = False  # values add up over bars (axes: 200k, 1.4M; not means or statistics)
    per_value: bool = False  # additive, divided by the values' count (a mean): SQL's float error too
    measures: tuple[str, ...] = ("number",)  # the field's value kinds it takes (spec/checks.py)
    empty: int | None = None  # a bar without rows: SQL's value over no rows (count(DISTINCT): 0)
    heading: str = "{op} of {field}"  # the axis title (quantiles: p90 of x)

    def title(self, field: str | None, p: float | None, method: str | None) -> str:
        """The measure's axis title."""
        if self.kind == "count":
            return "rows"
        if self.takes_p and p is not None:
            return f"p{p * 100:g}{' (discrete)' if method == 'discrete' else ''} of {field}"
        return self.heading.format(op=self.name, field=field)


def _sum(total: float, n: int) -> float | None:
    return float(total) if n else None


def _mean(total: float, n: int) -> float | None:
    return total / n if n else None


OPS: dict[str, Op] = {op.name: op for op in [
    Op("count", "count", "count", whole=True, sums=True),
    Op("sum", "additive", "sum", sql="sum", value=_sum, sums=True),
    Op("mean", "additive", "average", sql="avg", value=_mean, per_value=True),
    Op("median", "order", "take the median of", p=0.5, takes_method=True),
    Op("quantile", "order", "take a quantile of", takes_p=True, takes_method=True),
    Op("min", "order", "take the smallest value of", sql="min({x})", measures=("number", "temporal")),
    Op("max", "order", "take the largest value of", sql="max({x})", measures=("number", "temporal")),
    Op("distinct", "order", "count distinct values of", sql="count(DISTINCT {x})", whole=True, sums=True,
       measures=("number", "temporal", "string"), empty=0, heading="distinct {field}"),
]}

ORDER_OPS = tuple(name for name, op in OPS.items() if op.kind == "order")


def op(name: str) -> Op:
    return OPS[name]
