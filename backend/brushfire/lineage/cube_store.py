"""The cubes-only store: what the server keeps when per-row lineage would exceed its
memory budget. Spark computes, per filter, group-by push-down cubes over the filter's
raw key and each target view's bar; the server keeps those (their size grows with
distinct keys × bars, not with rows) and answers any single-filter interaction exactly.

PairCube (filter f, target view t): rows (key, bar, count, sum, ok) sorted by key, where
key is f's raw value (numbers; temporal in UTC microseconds) for value filters and the
position of the value in `FilterKeys.values` for partition filters (categorical views,
dropdown parameters). Rows that t drops (null, out of extent, beyond its top N) and rows
with no key (null, NaN) are not in it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from brushfire.lineage.arrays import Aggregates, CaptureInfo
from brushfire.lineage.layout import ViewLayout
from brushfire.spec import models as m
from brushfire.values import format_instant as iso_time


@dataclass
class PairCube:
    keys: np.ndarray  # sorted: float64 values or int64 positions
    bars: np.ndarray  # int64 bar of the target view
    counts: np.ndarray  # int64
    sums: np.ndarray  # float64 (zeros when the target has no measure)
    oks: np.ndarray  # int64 rows with a measure


@dataclass
class FilterKeys:
    """A filter's key domain: sorted distinct values (value filters), or the distinct
    values a partition key's position refers to, and the row count per key (`totals`,
    for counting selected rows)."""

    kind: str
    value_type: str  # number, temporal or string
    values: list | np.ndarray
    totals: np.ndarray  # int64 rows per key (aligned with `values`)


@dataclass
class CubeStore:
    dashboard: m.DashboardSpec
    n_rows: int
    views: list[ViewLayout]
    base: Aggregates
    keys: dict[str, FilterKeys]
    cubes: dict[tuple[str, str], PairCube]
    info: CaptureInfo
    reason: str  # why per-row lineage was left out

    def view(self, name: str) -> ViewLayout:
        for v in self.views:
            if v.name == name:
                return v
        msg = f"no view named {name!r}"
        raise KeyError(msg)

    def parameter_domain(self, name: str) -> tuple[str, list]:
        """('values', choices) of a dropdown parameter, ('range', [lo, hi]) of a slider
        (times as ISO strings), as LineageStore.parameter_domain."""
        k = self.keys[name]
        if k.kind == "param_eq":
            return "values", list(k.values)
        ends = [k.values[0].item(), k.values[-1].item()] if len(k.values) else []
        return "range", [iso_time(x) for x in ends] if k.value_type == "temporal" else ends

    def nbytes(self) -> dict[str, int]:
        out = {"base": self.base.counts.nbytes * 3}
        for (f, t), c in self.cubes.items():
            out[f"cube {f}->{t}"] = sum(a.nbytes for a in (c.keys, c.bars, c.counts, c.sums, c.oks))
        return out
