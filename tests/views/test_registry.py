"""views/: every view type is registered once, and its two answers to "which bar is this
row in" agree — capture's numpy (`row_codes`) and SQL's (`key_sql`, read back through
`label_keys`) — on rows with nulls, NaN, values outside the bins and times across units."""

from __future__ import annotations

import typing
from types import SimpleNamespace

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from brushfire.capture.keys import ShardFields, view_codes
from brushfire.lineage.layout import ViewLayout
from brushfire.spec import models as m
from brushfire.views import VIEW_TYPES, view_type

US_DAY = 86_400_000_000


def test_every_spec_view_type_is_registered_with_its_brushes() -> None:
    union = typing.get_args(typing.get_args(m.View)[0])
    tags = {typing.get_args(c.model_fields["type"].annotation)[0] for c in union}
    assert tags == set(VIEW_TYPES) == set(m.BRUSHES_BY_TYPE)
    assert all(t.name == name for name, t in VIEW_TYPES.items())


def _table() -> pa.Table:
    x = [0.0, 4.99, 5.0, 9.5, 10.0, -1.0, 11.0, None, float("nan"), 7.25]
    y = [1, 2, 3, None, 5, 6, 7, 8, 9, 0]
    days = [0, 1, 1, 3, 9, None, 2, 8, 4, 6]
    t = [None if d is None else np.datetime64(d * US_DAY + d * 3_600_000_000 * 5, "us") for d in days]
    k = ["a", "b", "a", None, "c", "a", "d", "b", "a", "e"]
    return pa.table({"x": pa.array(x, pa.float64()), "y": pa.array(y, pa.int64()),
                     "t": pa.array(t, pa.timestamp("us")), "k": pa.array(k, pa.string())})


BIN = {"step": 2.5, "extent": [0, 10]}
VIEWS = [
    {"type": "histogram", "name": "h", "field": "x", "bin": BIN},
    {"type": "histogram", "name": "hc", "field": "x", "bin": {**BIN, "clamp": True}},
    {"type": "heatmap", "name": "hm", "x": {"field": "x", "bin": BIN},
     "y": {"field": "y", "bin": {"step": 3, "extent": [0, 6]}}},
    {"type": "temporal", "name": "td", "field": "t", "unit": "day"},
    {"type": "temporal", "name": "tw", "field": "t", "unit": "week"},
    {"type": "temporal", "name": "dow", "field": "t", "unit": "day_of_week"},
    {"type": "categorical", "name": "c", "field": "k", "top": 2},
    {"type": "categorical", "name": "c2", "field": "k", "top": 3, "other": False, "sort": "name"},
    # a time field's values as bars: ISO instants, matched as UTC microseconds
    {"type": "categorical", "name": "ct", "field": "t", "top": 4},
    {"type": "categorical", "name": "ct2", "field": "t", "top": 3, "other": False, "sort": "name"},
]


@pytest.mark.parametrize("spec", VIEWS, ids=[v["name"] for v in VIEWS])
def test_capture_and_sql_put_each_row_in_the_same_bar(spec: dict) -> None:
    view = pydantic_view(spec)
    vt, table = view_type(view), _table()
    us = np.array([x for x in table["t"].cast(pa.int64()).to_pylist() if x is not None])
    values, counts = np.unique(np.array([x for x in table["k"].to_pylist() if x]), return_counts=True)
    times, per_time = np.unique(us, return_counts=True)
    profile = SimpleNamespace(values={}, ranges={"t": (int(us.min()), int(us.max()))},
                              counts={"k": (list(values), counts), "t": (times.tolist(), per_time)},
                              times={"t"})
    labels = vt.labels(view, profile)
    kind = "temporal" if vt.value_bars and view.field == "t" else "values"
    vl = ViewLayout(view.name, view.type, "count", len(labels), 0, labels, reasons=vt.reasons(view),
                    value_type=kind)
    got = view_codes(view, vl, ShardFields.of_table(table))  # as the key job computes them
    assert list(got) == list(vt.row_codes(view, vl, ShardFields.of_table(table).rows()))
    bar_of = {k: i for i, k in enumerate(vt.label_keys(view, vt.sql_values(vl)))}
    top = [x for x in vt.sql_values(vl) if x != "(other)"] if vt.value_bars else None
    con = duckdb.connect()
    con.register("src", table)
    keys = [r[0] for r in con.execute(f"SELECT {vt.key_sql(view, top)} FROM src").fetchall()]
    want = [bar_of[k] if k is not None else None for k in keys]
    assert [_shown_in(int(c), vl) for c in got] == want
    if kind == "temporal":  # labelled as temporal views label their bars
        assert all(x == "(other)" or x.endswith("+00:00") for x in labels) and len(labels) > 2


def _shown_in(code: int, vl: ViewLayout) -> int | None:
    """The bar a row's code shows it in: its bar, an edge bar for a clamped reason."""
    if 0 <= code < vl.nbars:
        return code
    reason = vl.reasons[code - vl.nbars] if code >= vl.nbars else None
    return {"clamped_below": 0, "clamped_above": vl.nbars - 1}.get(reason)


def pydantic_view(spec: dict):
    return m.DashboardSpec.model_validate({
        "name": "d", "source": {"path": "x.parquet"}, "views": [spec]}).views[0]
