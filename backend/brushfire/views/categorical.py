"""Categorical: the `top` most frequent values of a field, plus one '(other)' bar;
brushed by points (a values selection).

Over a time field (a timestamp or date) the bars are instants: labelled as ISO instants
in UTC (`values.format_instant`, as temporal views label theirs; the layout's
`value_type` 'temporal'), keyed per row by UTC microseconds. In SQL the values of such a
view (its top values, and its labels for `label_keys`) are given as datetimes or dates:
the key is then the instant's microseconds as text, never the engine's spelling of it.
"""

from __future__ import annotations

from datetime import date

import numpy as np

from brushfire import bins, sql
from brushfire import values as V
from brushfire.lineage.layout import OTHER
from brushfire.spec import models as m
from brushfire.views.base import FieldNeed, ViewType


class Categorical(ViewType):
    name = "categorical"
    value_bars = True

    def field_needs(self, view: m.CategoricalView) -> list[FieldNeed]:
        # any column of single values (booleans and binary are 'other'); not a list, map
        # or struct: capture cannot encode them as bars (it failed in Spark's scan)
        return [FieldNeed(("field",), view.field, ("number", "temporal", "string", "other"),
                          "a categorical view", {"nested": "pick a column of single values, or "
                                                           "derive one in source.columns"})]

    def stats_needs(self, view: m.CategoricalView) -> dict[str, list[str]]:
        return {"counts": [view.field]}

    def labels(self, view: m.CategoricalView, stats) -> list:
        values, counts = stats.counts[view.field]  # (times: UTC microseconds, in time order)
        labels = bins.top_labels(values, counts, view.top, view.other, view.sort)
        if view.field in stats.times:
            return [x if x == OTHER else V.format_instant(x) for x in labels]
        return labels

    def reasons(self, view: m.CategoricalView) -> list[str]:
        return ["null"] + ([] if view.other else ["beyond_top"])

    def reason_sql(self, view: m.CategoricalView, key: str, d: sql.Dialect = sql.DUCKDB) -> str:
        beyond = "" if view.other else f" WHEN ({key}) IS NULL THEN 1"
        return f"CASE WHEN {sql.ident(view.field, d)} IS NULL THEN 0{beyond} END"

    def row_codes(self, view: m.CategoricalView, vl, rows) -> np.ndarray:
        # ('(other)' is the last label: a value '(other)' of the field may be a bar too)
        top = list(vl.labels[:-1]) if view.other else list(vl.labels)
        if vl.value_type == "temporal":  # matched as UTC microseconds
            top = [V.parse_instant(x) for x in top]
        pos, valid = rows.positions(view.field, top)
        nb = vl.nbars
        beyond = len(top) if view.other else nb + 1  # '(other)', or reason 1: beyond the top N
        return np.where(pos >= 0, pos, np.where(valid, beyond, nb))

    def key_sql(self, view: m.CategoricalView, top, d: sql.Dialect = sql.DUCKDB) -> str:
        other = sql.lit(other_key(self._value_keys(top or [])), d) if view.other else "NULL"
        f = sql.ident(view.field, d)
        if sql.are_times(top):  # a time field: compared and keyed as UTC microseconds
            us = sql.time_us(view.field, d)
            tops = ", ".join(str(sql.micros(x)) for x in top)
            return (f"CASE WHEN {f} IS NULL THEN NULL WHEN {us} IN ({tops}) "
                    f"THEN CAST({us} AS {d.string}) ELSE {other} END")
        if any(isinstance(x, float) for x in top or []):
            # a float's text is not one value's: -0.0 (= 0.0) writes '-0.0', and a float32
            # writes its own shortest digits ('0.1', a bar of 0.10000000149011612): each
            # top value's rows get that value's key as `label_keys` spells it
            whens = " ".join(f"WHEN {sql.values_in_sql(f, [x], d)} THEN {sql.lit(k, d)}"
                             for x, k in zip(top, self._value_keys(top), strict=True))
            return f"CASE WHEN {f} IS NULL THEN NULL {whens} ELSE {other} END"
        among = sql.values_in_sql(f, top, d) if top else "FALSE"
        return (f"CASE WHEN {f} IS NULL THEN NULL WHEN {among} "
                f"THEN CAST({f} AS {d.string}) ELSE {other} END")

    def bar_row(self, view: m.CategoricalView, i: int, label, n: int) -> dict:
        return {"label": V.wire_choice(label)}  # (sent back by a click: ±inf as 'Infinity')

    def base_key_sql(self, view: m.CategoricalView, d: sql.Dialect = sql.DUCKDB) -> str:
        return sql.ident(view.field, d)  # the value: the top N is left to the caller

    def label_keys(self, view: m.CategoricalView, labels: list) -> list:
        """A bar's key as `key_sql` spells it (`labels`: every bar's, '(other)' last when
        the view has it): a value's (`_value_keys`), and the '(other)' bar's `other_key`,
        which no value's key is (a text field may hold '(other)' among its top values)."""
        if not (view.other and labels and labels[-1] == OTHER):
            return self._value_keys(labels)
        keys = self._value_keys(labels[:-1])
        return [*keys, other_key(keys)]

    @staticmethod
    def _value_keys(values: list) -> list[str]:
        """Each value's key as `key_sql` spells it: CAST(value AS string), which writes a
        boolean as `true` / `false` in both dialects; a time (a datetime or date) as its
        UTC microseconds."""
        return [str(sql.micros(x)) if isinstance(x, date) else
                str(x).lower() if isinstance(x, (bool, np.bool_)) else str(x) for x in values]

    def top_values(self, view: m.CategoricalView, labels: list) -> list:
        """The values of a view's bars (`labels` as `sql_values` gives them): all but the
        '(other)' bar, the last when the view has one (a value '(other)' of the field is a
        value like any other)."""
        return list(labels[:-1]) if view.other and labels and labels[-1] == OTHER else list(labels)

    def sql_values(self, layout) -> list:
        """The view's labels as its SQL takes them (`key_sql`'s top values, `label_keys`):
        a time field's as UTC datetimes, '(other)' as it is."""
        if layout.value_type != "temporal":
            return list(layout.labels)
        return [x if x == OTHER else V.instant_datetime(x) for x in layout.labels]

    def caveats(self, view: m.CategoricalView) -> dict[str, str]:
        f = view.field
        return {"null": f"not shown: {f} is null",
                "beyond_top": f"not shown: {f} beyond the top {view.top}",
                "other": f"in {OTHER}: {f} beyond the top {view.top}"}

    def describe(self, view: m.CategoricalView, layout, measure: str) -> str:
        return (f"Bars of {measure} for the {view.top} most frequent values of {view.field}"
                f"{', then all others' if view.other else ''} ({len(layout.labels)} bars, "
                "most frequent first).")

    def chart(self, view: m.CategoricalView, layout, full, brush, rows):
        from brushfire import marks

        if marks.as_rows(layout.labels):
            return self._rows(view, full, rows)
        other = _other(view, rows)
        return marks.categorical_columns(view, full, other), _other_meta(view, full, other)

    def narrow_chart(self, view: m.CategoricalView, layout, full, brush, rows):
        """Columns of labels crowd on a narrow card (a phone): rows instead."""
        from brushfire import marks

        return None if marks.as_rows(layout.labels) else self._rows(view, full, rows)

    def _rows(self, view: m.CategoricalView, full, rows):
        from brushfire import marks

        other = _other(view, rows)
        meta = {"shape": "rows", "top": min(marks.TOP_SHOWN, len(rows)), "step": marks.ROW_STEP,
                **_other_meta(view, full, other)}
        return marks.categorical_rows(view, full, other), meta


def other_key(keys: list[str]) -> str:
    """The key of the '(other)' bar, among its view's top values' `keys`: '(other)', unless
    a top value's key is that text; then '((other))', and so on, never a top value's key (a
    row whose value is that text and not a top value is in the '(other)' bar anyway)."""
    taken, key = set(keys), OTHER
    while key in taken:
        key = f"({key})"
    return key


def _other(view: m.CategoricalView, rows: list[dict]) -> int | None:
    """The '(other)' bar's number, if the view has one."""
    return len(rows) - 1 if view.other and rows and rows[-1]["label"] == OTHER else None


def _other_meta(view: m.CategoricalView, full: list, other: int | None) -> dict:
    """The '(other)' bar for clients: its number, and when it dwarfs the others (drawn on
    its own scale, `marks.dwarfing`), the end of the others' count scale."""
    from brushfire import marks

    if not marks.dwarfing(view, full, other):
        return {"other": other, "other_clipped": False}
    return {"other": other, "other_clipped": True, "other_top": marks.other_top(full, other)}
