"""A field's per-row values stored once (capture/layout.py): a sum or mean over a field
that a fine dim keeps per row reads the dim's raw values (measure "raw", `_raw_measures`)
instead of a stored copy of the same numbers, and categorical views with the same bars
over one field share one bars dim (`_bars_identity`). Every method's answers (±inf and
NaN skipped, as SQL's; each view's own brush not applied to it) equal DuckDB's, on a
capture made in this process."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushfire import Dashboard
from brushfire.capture.local import capture_table
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import explain, plan_capture
from brushfire.spec import parse_dashboard
from engine.test_session_oracle import actions_for, apply, check_all, new_session
from oracle import Oracle

CONFIG = CaptureConfig(block_rows=64, shard_rows=300, max_keys=40, max_cube_blocks=6)


def rows(n: int, seed: int) -> pa.Table:
    """Prices with many distinct values (a fine dim past 40 keys), ±inf, NaN and nulls."""
    rng = np.random.default_rng(seed)
    p = rng.normal(50, 30, n).round(3)
    p[rng.random(n) < 0.02] = np.inf
    p[rng.random(n) < 0.02] = -np.inf
    p[rng.random(n) < 0.02] = np.nan
    cats = np.array([f"c{i:02d}" for i in range(12)])
    return pa.table({
        "p": pa.array(p, mask=rng.random(n) < 0.03),
        "cat": pa.array(cats[np.minimum(rng.zipf(1.6, n) - 1, 11)]),
        "dest": pa.array(np.array(["AAA", "BBB", "CCC", "DDD", "EEE"])[rng.integers(0, 5, n)]),
    })


def spec(path) -> dict:
    return {
        "name": "raw_measures",
        "source": {"path": str(path)},
        "views": [
            {"name": "hp", "type": "histogram", "field": "p",
             "bin": {"step": 20, "extent": [-40, 140], "clamp": True}},
            {"name": "revenue", "type": "categorical", "field": "dest",
             "aggregate": {"op": "sum", "field": "p"}},
            {"name": "flights", "type": "categorical", "field": "dest"},
            {"name": "median_p", "type": "categorical", "field": "dest", "brush": "none",
             "aggregate": {"op": "median", "field": "p"}},
            {"name": "top_dest", "type": "categorical", "field": "dest", "top": 2},
            {"name": "mean_p", "type": "categorical", "field": "cat", "top": 5,
             "aggregate": {"op": "mean", "field": "p"}},
            {"name": "hp_mean", "type": "histogram", "field": "p", "brush": "none",
             "bin": {"step": 40, "extent": [-40, 140]}, "aggregate": {"op": "mean", "field": "p"}},
        ],
        "interactions": {"crossfilter": [{"views": ["hp", "revenue", "flights", "median_p",
                                                   "top_dest", "mean_p", "hp_mean"]}],
                         "details": {"columns": ["p", "dest"]}},
    }


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    folder = tmp_path_factory.mktemp("raw")
    table = rows(2500, 11)
    pq.write_table(table, folder / "t.parquet")
    dash_spec = parse_dashboard(spec(folder / "t.parquet"))
    plan = plan_capture(dash_spec)
    store = capture_table(plan, table, folder / "cache", CONFIG)
    return Dashboard(dash_spec, plan, store), Oracle(dash_spec)


def test_a_sum_over_a_fine_field_stores_no_measure_column(captured):
    dash, _ = captured
    lay = dash.store.layout
    d = lay.dims[lay.view("revenue").mdim]
    assert d.kind == "fine" and d.field == "p" and d.raw >= 0
    assert {lay.view(v).measure for v in ("revenue", "mean_p", "hp_mean")} == {"raw"}
    assert lay.n_meas == 0 and lay.measure_fields == []
    assert "measures" not in dash.store.nbytes() or dash.store.nbytes()["measures"] == 0


def test_categorical_views_with_the_same_bars_share_one_bars_dim(captured):
    dash, _ = captured
    lay = dash.store.layout
    shared = {lay.view(v).code_dims[0] for v in ("revenue", "flights", "median_p")}
    assert len(shared) == 1 and lay.dims[shared.pop()].indexed
    assert lay.view("top_dest").code_dims[0] != lay.view("flights").code_dims[0]  # other bars
    names = [d.name for d in lay.dims]
    assert "bars:revenue" in names and "bars:flights" not in names and "bars:top_dest" in names


def test_the_plan_says_which_column_a_view_reads(captured):
    dash, _ = captured
    text = explain(dash.plan, layout=dash.store.layout)
    views = dict(re.findall(r"  view (\w+) \[.*?\n(?:    .*\n)*?    bar per row: (.*)", text))
    assert views["revenue"] == ("its own key column (bar number); its measure read from p's raw "
                                "values, kept per row for its brushes (no column of its own)")
    assert views["flights"] == "the key column of view revenue (the same bars over the same field)"
    assert views["top_dest"] == "its own key column (bar number)"


def test_the_rows_behind_a_bar_of_a_view_sharing_a_bars_dim(captured):
    dash, oracle = captured
    s = new_session(dash, None)
    oracle.clear()
    s.brush("hp", [10.0, 70.0])
    oracle.brush("hp", [10.0, 70.0])
    labels = s.view("flights").labels
    for bar in range(len(labels) - 1):  # ('(other)' apart: five destinations, all shown)
        got = s.count_behind("flights", [bar])
        want = oracle.con.execute(f"SELECT count(*) FROM src WHERE ({oracle.where(None)}) "
                                  f"AND dest = '{labels[bar]}'").fetchone()[0]
        assert got == want, labels[bar]


@pytest.mark.parametrize("policy", [None, "incremental", "incremental, store order", "recompute",
                                    "scan", "tile", "complement"])
def test_answers_equal_sql_after_every_interaction(captured, policy):
    dash, oracle = captured

    @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        session = new_session(dash, policy)
        oracle.clear()
        for step, action in enumerate(data.draw(st.lists(actions_for(dash.spec), max_size=6))):
            apply(session, oracle, action)
            check_all(dash, oracle, session, (policy, step, action))

    run()
