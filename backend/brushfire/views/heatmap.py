"""Heatmap: cells over binned x and y fields; brushed by rectangle. Cell i*ny + j is x
bin i and y bin j; rows outside the cells count together, with no reasons."""

from __future__ import annotations

import numpy as np

from brushfire import bins, sql
from brushfire.spec import models as m
from brushfire.views.base import (
    NUMBER_HINTS,
    BinnedAxis,
    FieldNeed,
    ViewType,
    check_brush_y,
    key_values,
)


class Heatmap(ViewType):
    name = "heatmap"

    def key_fields(self, view: m.HeatmapView) -> list[str]:
        return [view.x.field, view.y.field]

    def axes(self, view: m.HeatmapView) -> list[BinnedAxis]:
        return [BinnedAxis(("x", "bin"), view.x.field, view.x.bin),
                BinnedAxis(("y", "bin"), view.y.field, view.y.bin)]

    def with_bins(self, view: m.HeatmapView, new: list[m.Bin]) -> m.HeatmapView:
        bx, by = new
        if bx is view.x.bin and by is view.y.bin:
            return view
        return view.model_copy(update={"x": view.x.model_copy(update={"bin": bx}),
                                       "y": view.y.model_copy(update={"bin": by})})

    def field_needs(self, view: m.HeatmapView) -> list[FieldNeed]:
        return [FieldNeed((axis, "field"), a.field, ("number",), "a heatmap axis", NUMBER_HINTS)
                for axis, a in (("x", view.x), ("y", view.y))]

    def labels(self, view: m.HeatmapView, stats) -> list:
        return bins.heat_labels(view)

    def reasons(self, view: m.HeatmapView) -> list[str]:
        return []

    def reason_sql(self, view: m.HeatmapView, key: str, d: sql.Dialect = sql.DUCKDB) -> str:
        return "CAST(NULL AS INT)"  # (a row in no cell: not_shown)

    def monotone_code(self, view: m.HeatmapView, field: str):
        if view.x.field == view.y.field:  # (one field on both axes: its cells are no order)
            return None
        axis = view.x if field == view.x.field else view.y if field == view.y.field else None
        return None if axis is None else (lambda x: bins.hist_order(x, axis.bin))

    def key_codes(self, view: m.HeatmapView, dims, dim_of, nbars, labels):
        kx = key_values(dims, dim_of, view.x.field, view.name)
        ky = key_values(dims, dim_of, view.y.field, view.name)
        if kx is None or ky is None or kx[0] == ky[0]:
            return None
        (dx, xv), (dy, yv) = kx, ky
        cx = bins.hist_code(xv, np.ones(len(xv), bool), view.x.bin)
        cy = bins.hist_code(yv, np.ones(len(yv), bool), view.y.bin)
        # x part: x bar * ny (-1 dropped); y part: y bar (-1 dropped)
        return [(dx, np.where(cx >= 0, cx * view.y.bin.count, -1)), (dy, cy)]

    def row_codes(self, view: m.HeatmapView, vl, rows) -> np.ndarray:
        cx = bins.hist_code(*rows.numbers(view.x.field), view.x.bin)
        cy = bins.hist_code(*rows.numbers(view.y.field), view.y.bin)
        return np.where((cx >= 0) & (cy >= 0), cx * view.y.bin.count + cy, -1)

    def key_sql(self, view: m.HeatmapView, top, d: sql.Dialect = sql.DUCKDB) -> str:
        ix, iy = sql.bin_sql(view.x.field, view.x.bin, d), sql.bin_sql(view.y.field, view.y.bin, d)
        return f"({ix}) * {view.y.bin.count} + ({iy})"

    def brush_sql(self, view: m.HeatmapView, interval, y=None, d: sql.Dialect = sql.DUCKDB) -> str:
        check_brush_y(view.name, "rect", y)
        return (f"({sql.interval_sql(view.x.field, interval, d=d)}) AND "
                f"({sql.interval_sql(view.y.field, y, d=d)})")

    def bound(self, view: m.HeatmapView) -> str:
        return "number"

    def tooltip_key(self, view: m.HeatmapView) -> str:
        return "cell"

    def caveats(self, view: m.HeatmapView) -> dict[str, str]:
        return {"not_shown": f"not shown: {view.x.field} or {view.y.field} is null or outside "
                             "the extent"}

    def bar_row(self, view: m.HeatmapView, i: int, label, n: int) -> dict:
        from brushfire.marks import range_text

        (x0, x1), (y0, y1) = label
        return {"x0": x0, "x1": x1, "y0": y0, "y1": y1,
                "label": f"{view.x.field} {range_text(x0, x1)}, {view.y.field} {range_text(y0, y1)}"}

    def describe(self, view: m.HeatmapView, layout, measure: str) -> str:
        from brushfire.marks import num

        x, y = view.x, view.y
        return (f"Heatmap of {measure} over {x.field} ({x.bin.count} bins from "
                f"{num(x.bin.extent[0])} to {num(x.bin.extent[1])}) and {y.field} "
                f"({y.bin.count} bins from {num(y.bin.extent[0])} to "
                f"{num(y.bin.extent[1])}); colour: {view.scale} scale.")

    def chart(self, view: m.HeatmapView, layout, full, brush, rows):
        from brushfire import marks

        return marks.heatmap(view, full, brush), {"shape": "cells",
                                                  "cells": [view.x.bin.count, view.y.bin.count],
                                                  "clamp": [view.x.bin.clamp, view.y.bin.clamp]}
