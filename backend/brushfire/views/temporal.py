"""Temporal: bars over calendar units (UTC) of a timestamp field, from its first to its
last time; or, for a calendar part (hour of day, day of week, month of year), a bar per
value of the part. Brushed by interval: of times, or of the part's values (numbers)."""

from __future__ import annotations

import numpy as np

from brushfire import bins, sql
from brushfire import values as V
from brushfire.spec import models as m
from brushfire.views.base import FieldNeed, ViewType, interval_only, key_values


class Temporal(ViewType):
    name = "temporal"

    def field_needs(self, view: m.TemporalView) -> list[FieldNeed]:
        plain = all(p.isidentifier() for p in view.field.split("."))  # (a join's column too)
        f = view.field if plain else f"`{view.field}`"
        name = f"{view.field.rsplit('.', 1)[-1]}_time" if plain else "time"
        return [FieldNeed(("field",), view.field, ("temporal",), "a temporal view", {
            "number": "use a histogram view for numbers; or, for times counted from 1970, derive "
                      f"a timestamp in source.columns, e.g. `{name}: timestamp_millis({f})` "
                      f"(or timestamp_seconds; for years, make_date(CAST({f} AS INT), 1, 1)), and give "
                      "the view that field",
            "string": f"derive a timestamp in source.columns, e.g. `{name}: to_timestamp({f})` "
                      f"(text not in ISO form needs its pattern: to_timestamp({f}, 'yyyy/MM/dd "
                      "HH:mm')), and give the view that field"})]

    def calendar(self, view: m.TemporalView) -> tuple[str, str] | None:
        return None if view.part else (view.field, view.unit)

    def stats_needs(self, view: m.TemporalView) -> dict[str, list[str]]:
        return {} if view.part else {"ranges": [view.field]}

    def labels(self, view: m.TemporalView, stats) -> list:
        if view.part:  # its values, whatever the data
            return bins.calendar_labels(view.unit, None, None)
        return bins.calendar_labels(view.unit, *time_range(view.field, stats))

    def monotone_code(self, view: m.TemporalView, field: str):
        if view.part or field != view.field:  # (a calendar part goes round: no order)
            return None
        return lambda x: bins.calendar_key(view.unit, x.astype(np.int64))

    def key_codes(self, view: m.TemporalView, dims, dim_of, nbars, labels):
        if view.part:  # the part's dim: its key is the bar
            d = dim_of.get(f"part:{view.unit}:{view.field}")
            return None if d is None else [(d, np.arange(nbars))]
        kv = key_values(dims, dim_of, view.field, view.name)
        if kv is None or dims[kv[0]].value_type != "temporal":
            return None
        d, x = kv
        x = np.asarray(x, np.int64)
        first = V.parse_instant(labels[0]) if labels else None
        return [(d, bins.calendar_code(view.unit, x, np.ones(len(x), bool), first))]

    def row_codes(self, view: m.TemporalView, vl, rows) -> np.ndarray:
        us, ok = rows.numbers(view.field)
        first = None if view.part or not vl.labels else V.parse_instant(vl.labels[0])
        code = bins.calendar_code(view.unit, us, ok, first)
        return np.where(code >= 0, code, vl.nbars)  # reason 0: null

    def key_sql(self, view: m.TemporalView, top, d: sql.Dialect = sql.DUCKDB) -> str:
        if view.part:  # the bar number: the part's value minus the first
            return f"{sql.part_sql(view.unit, view.field, d)} - {m.CALENDAR_PARTS[view.unit][0]}"
        return (f"{d.epoch_us}(date_trunc('{view.unit}', "
                f"CAST({sql.ident(view.field, d)} AS TIMESTAMP)))")

    def label_keys(self, view: m.TemporalView, labels: list) -> list:
        return list(range(len(labels))) if view.part else [V.parse_instant(x) for x in labels]

    def brush_sql(self, view: m.TemporalView, interval, y=None, d: sql.Dialect = sql.DUCKDB) -> str:
        interval_only(view, y)
        if view.part:
            return sql.interval_sql(view.field, interval, d=d, part=view.unit)
        return sql.interval_sql(view.field, interval, True, d)

    def bound(self, view: m.TemporalView) -> str:
        return "number" if view.part else "time"

    def extent(self, labels: list) -> tuple[int, int]:
        """First bar start to the last bar's end, the last bar as wide as the average."""
        first, last = V.parse_instant(labels[0]), V.parse_instant(labels[-1])
        width = (last - first) // (len(labels) - 1) if len(labels) > 1 else 86_400_000_000
        return first, last + width

    def bar_row(self, view: m.TemporalView, i: int, label, n: int) -> dict:
        from brushfire import marks

        if view.part:  # centred on the part's value: a brush over bars ends between values
            value = m.CALENDAR_PARTS[view.unit][0] + i
            return {"x0": value - 0.5, "x1": value + 0.5, "label": label}
        return {"x0": label, "x1": marks.bar_end(label, view.unit),
                "label": marks.time_label(label, view.unit)}

    def describe(self, view: m.TemporalView, layout, measure: str) -> str:
        from brushfire import marks

        n = len(layout.labels)
        if view.part:
            return f"Bars of {measure} per {view.unit.replace('_', ' ')} of {view.field} ({n} bars, UTC)."
        span = f" from {marks.time_label(layout.labels[0], view.unit)} to " \
               f"{marks.time_label(layout.labels[-1], view.unit)}" if n else ""
        return f"Bars of {measure} per {view.unit} of {view.field}{span} ({n} bars)."

    def chart(self, view: m.TemporalView, layout, full, brush, rows):
        from brushfire import marks

        labels = layout.labels
        if view.part:  # a tick per part value, named (Mon, Jan, ...)
            first, names = m.CALENDAR_PARTS[view.unit]
            scale = {"zero": False, "domain": [first - 0.5, first + len(labels) - 0.5]}
            axis = {"values": list(range(first, first + len(names))), "labelOverlap": True,
                    "labelExpr": f"{list(names)!r}[datum.value - {first}]"}
            title = f"{view.unit.replace('_', ' ')} of {view.field} (UTC)"
            x = marks.x_position("quantitative", title, view, scale, axis)
            return marks.binned(view, full, brush, x, spacing=1), {"part": view.unit}
        scale: dict = {"type": "utc"}  # UTC calendar units: a utc scale shows them as captured
        if labels:  # as an expression: a layered temporal literal domain is doubled
            ends = marks.epoch_ms(labels[0]), marks.epoch_ms(marks.bar_end(labels[-1], view.unit))
            scale["domain"] = {"expr": f"[{ends[0]:.0f}, {ends[1]:.0f}]"}
        x = marks.x_position("temporal", None, view, scale)
        return marks.binned(view, full, brush, x, spacing=0), {}


def time_range(field: str, stats) -> tuple[int | None, int | None]:
    """The first and last time of a field, from capture's statistics."""
    if field in stats.values:
        st = stats.values[field]
        return (int(st.first), int(st.last)) if len(st.values) else (None, None)
    return stats.ranges[field]
