"""What DuckDB (tests/oracle.py) says each bar of a view shows, in bar order."""

from __future__ import annotations

import math

from brushfire import Dashboard
from oracle import Oracle


def sql_values(oracle: Oracle, dash: Dashboard, view: str, extra: str = "TRUE") -> list:
    """SQL's value of each bar of `view` under the oracle's filters and the predicate
    `extra` (0 for an empty count bar, None for an empty mean)."""
    layout, v = dash.store.view(view), dash.spec.view(view)
    got = oracle.view(view, extra)
    out = []
    for i, label in enumerate(layout.labels):
        key = label.replace("+00:00", "") if v.type == "temporal" and not v.part else \
            label if v.type == "categorical" else i  # (a calendar part: its bar number, as bar_sql)
        count, total, mean, stat = got.get(key, (0, None, None, None))
        out.append({"count": count, "sum": total, "mean": mean}.get(v.aggregate.op, stat))
    return out


def same(got: list, want: list) -> bool:
    return len(got) == len(want) and all(
        (a is None) if b is None else (a is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9))
        for a, b in zip(got, want, strict=True))


def sql_count(oracle: Oracle) -> int:
    return oracle.con.execute(f"SELECT count(*) FROM src WHERE {oracle.where(None)}").fetchone()[0]
