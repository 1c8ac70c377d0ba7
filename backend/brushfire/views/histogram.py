"""Histogram: bars over equal-width bins of a quantitative field; brushed by interval."""

from __future__ import annotations

import numpy as np

from brushfire import bins, sql
from brushfire.spec import models as m
from brushfire.views.base import (
    NUMBER_HINTS,
    BinnedAxis,
    FieldNeed,
    ViewType,
    interval_only,
    key_values,
)


class Histogram(ViewType):
    name = "histogram"

    def axes(self, view: m.HistogramView) -> list[BinnedAxis]:
        return [BinnedAxis(("bin",), view.field, view.bin)]

    def with_bins(self, view: m.HistogramView, new: list[m.Bin]) -> m.HistogramView:
        return view if new[0] is view.bin else view.model_copy(update={"bin": new[0]})

    def field_needs(self, view: m.HistogramView) -> list[FieldNeed]:
        return [FieldNeed(("field",), view.field, ("number",), "a histogram view", NUMBER_HINTS)]

    def labels(self, view: m.HistogramView, stats) -> list:
        return bins.hist_labels(view.bin)

    def reasons(self, view: m.HistogramView) -> list[str]:
        return ["null"] + (["clamped_below", "clamped_above"] if view.bin.clamp else ["below", "above"])

    def reason_sql(self, view: m.HistogramView, key: str, d: sql.Dialect = sql.DUCKDB) -> str:
        x = f"CAST({sql.ident(view.field, d)} AS DOUBLE)"
        lo, hi = sql.num(float(view.bin.extent[0])), sql.num(float(view.bin.extent[1]))
        return f"CASE WHEN {x} IS NULL OR isnan({x}) THEN 0 WHEN {x} < {lo} THEN 1 WHEN {x} > {hi} THEN 2 END"

    def monotone_code(self, view: m.HistogramView, field: str):
        return (lambda x: bins.hist_order(x, view.bin)) if field == view.field else None

    def key_codes(self, view: m.HistogramView, dims, dim_of, nbars, labels):
        kv = key_values(dims, dim_of, view.field, view.name)
        if kv is None:
            return None
        d, x = kv
        return [(d, bins.hist_slot(x, np.ones(len(x), bool), view.bin))]

    def row_codes(self, view: m.HistogramView, vl, rows) -> np.ndarray:
        return bins.hist_slot(*rows.numbers(view.field), view.bin)

    def key_sql(self, view: m.HistogramView, top, d: sql.Dialect = sql.DUCKDB) -> str:
        return sql.bin_sql(view.field, view.bin, d)

    def brush_sql(self, view: m.HistogramView, interval, y=None, d: sql.Dialect = sql.DUCKDB) -> str:
        interval_only(view, y)
        return sql.interval_sql(view.field, interval, False, d)

    def bound(self, view: m.HistogramView) -> str:
        return "number"

    def extent(self, labels: list) -> tuple[float, float]:
        return float(labels[0][0]), float(labels[-1][1])

    def caveats(self, view: m.HistogramView) -> dict[str, str]:
        from brushfire.marks import num

        f, (lo, hi) = view.field, (num(view.bin.extent[0]), num(view.bin.extent[1]))
        return {"null": f"not shown: {f} is null",
                "below": f"not shown: {f} below {lo}", "above": f"not shown: {f} above {hi}",
                "clamped_below": f"in the first bar: {f} below {lo}",
                "clamped_above": f"in the last bar: {f} above {hi}"}

    def bar_row(self, view: m.HistogramView, i: int, label, n: int) -> dict:
        from brushfire.marks import range_text

        clamp = view.bin.clamp
        row = {"x0": label[0], "x1": label[1],
               "label": range_text(*label, clamped=clamp and (i == 0, i == n - 1))}
        if clamp and i in (0, n - 1):
            row["clamp"] = None  # rows clamped into this bar (clients fill it)
        return row

    def describe(self, view: m.HistogramView, layout, measure: str) -> str:
        from brushfire.marks import num

        b = view.bin
        return (f"Histogram of {measure} by {view.field}: {len(layout.labels)} bins of "
                f"{num(b.step)} from {num(b.extent[0])} to {num(b.extent[1])}.")

    def chart(self, view: m.HistogramView, layout, full, brush, rows):
        from brushfire import marks

        scale: dict = {"zero": False}
        if layout.labels:
            scale["domain"] = [layout.labels[0][0], layout.labels[-1][1]]
        x = marks.x_position("quantitative", view.field, view, scale)
        meta = {"clamped": {"clamped_below": 0, "clamped_above": len(rows) - 1}
                if view.bin.clamp and rows else {}}
        return marks.binned(view, full, brush, x, spacing=1, clamp_marker=view.bin.clamp), meta
