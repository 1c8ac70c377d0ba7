"""capture/layout.py: how order-statistic views and caveats are laid out (cells of bar x
measure block, reason pseudo-bars), on small captures without Spark (capture/local.py)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from brushfire.capture.local import capture_table
from brushfire.errors import CaptureError
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard


def table(n: int = 2000) -> pa.Table:
    rng = np.random.default_rng(3)
    return pa.table({"x": rng.normal(0, 10, n).round(2), "k": rng.integers(0, 50, n),
                     "s": rng.choice(["a", "b", "c"], n)})


def spec(aggregate: dict, bins: float = 5, **view) -> dict:
    return {"name": "t", "source": {"path": "t.parquet"},
            "views": [{"name": "h", "type": "histogram", "field": "x",
                       "bin": {"step": bins, "extent": [-20, 20]}},
                      {"name": "v", "type": "histogram", "field": "x", "brush": "none",
                       "bin": {"step": bins, "extent": [-20, 20]}, "aggregate": aggregate, **view}],
            "interactions": {"crossfilter": [{"views": ["h", "v"]}]}}


def capture(s: dict, tmp_path, **config):
    dash = parse_dashboard(s)
    return capture_table(plan_capture(dash), table(), tmp_path, CaptureConfig(**config))


def test_few_values_get_a_cell_per_key(tmp_path):
    store = capture(spec({"op": "median", "field": "k"}), tmp_path)
    v = store.layout.view("v")
    d = store.layout.dims[v.mdim]
    assert v.cells and d.kind == "dense" and v.width == d.nkeys + 1 == 51
    assert v.reasons == ["null", "below", "above"] and v.ncodes == (8 + 3) * 51
    assert v.code_dims[-1] == v.mdim  # bar x (keys + 1) + key


def test_over_the_cell_cap_keys_are_cut_into_equal_blocks(tmp_path):
    store = capture(spec({"op": "quantile", "field": "x", "p": 0.9}), tmp_path, max_cells=400)
    v = store.layout.view("v")
    d = store.layout.dims[v.mdim]
    assert v.width - 1 <= 400 // v.kbars - 1 < d.nkeys and d.indexed  # blocks, gathered by index
    rows = np.diff(np.concatenate([[0], np.cumsum(store.keycounts[v.mdim][:-1])])[v.mstarts])
    assert rows.max() < 3 * rows.mean()  # about equally many rows per block


def test_distinct_needs_a_key_per_value(tmp_path):
    capture(spec({"op": "distinct", "field": "s"}), tmp_path)  # strings: a dict dim
    with pytest.raises(CaptureError, match="aggregate op 'distinct' counts the keys of 'x'"):
        capture(spec({"op": "distinct", "field": "x"}), tmp_path, max_keys=100)


def test_wide_order_statistics_leave_the_cubes_of_other_views_fine(tmp_path):
    store = capture(spec({"op": "median", "field": "x"}), tmp_path, cube_bytes=1 << 16)
    assert "v" not in store.layout.filter("h").cube_targets
    store = capture(spec({"op": "median", "field": "k"}, bins=20), tmp_path / "k", cube_bytes=1 << 20,
                    max_cube_blocks=64)
    assert "v" in store.layout.filter("h").cube_targets


def test_calendar_parts_alone_need_no_time_range(tmp_path):
    """A field shown only as calendar parts is not profiled for its range (its bars are
    the part's values); brushed, it gets a dense dim keyed by the part."""
    from datetime import datetime, timedelta

    t = [datetime(2021, 1, 4) + timedelta(hours=7 * i) for i in range(100)]  # a Monday
    rows = pa.table({"t": pa.array(t + [None], pa.timestamp("us"))})
    s = {"name": "t", "source": {"path": "t.parquet"},
         "views": [{"name": "dow", "type": "temporal", "field": "t", "unit": "day_of_week"},
                   {"name": "hod", "type": "temporal", "field": "t", "unit": "hour_of_day",
                    "brush": "none"}],
         "interactions": {"crossfilter": [{"views": ["dow", "hod"]}]}}
    store = capture_table(plan_capture(parse_dashboard(s)), rows, tmp_path)
    d = store.layout.dims[store.layout.dim_index("part:day_of_week:t")]
    assert (d.kind, d.values, d.part) == ("dense", [1, 2, 3, 4, 5, 6, 7], "day_of_week")
    base = {v.name: store.base.counts[v.slots].tolist() for v in store.layout.views}
    days = [sum(1 for x in t if x.isoweekday() == k) for k in range(1, 8)]
    hours = [sum(1 for x in t if x.hour == h) for h in range(24)]
    assert base == {"dow": days, "hod": hours}
