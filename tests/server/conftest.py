"""A dashboard with every kind of filter (interval brushes on float, int and time values,
a rect brush, a categorical selection, a dropdown, number and time sliders), captured
once per test run on the small random data, for the server's bad-input and fuzz tests."""

from __future__ import annotations

import pytest

from brushfire import Dashboard
from brushfire.spec import parse_dashboard


def rich_spec(path) -> dict:
    return {
        "name": "rich",
        "source": {"path": str(path)},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
            {"name": "hk", "type": "histogram", "field": "k", "bin": {"step": 20, "extent": [-20, 120]}},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 4},
            {"name": "week", "type": "temporal", "field": "t", "unit": "week"},
            {"name": "heat", "type": "heatmap",
             "x": {"field": "x", "bin": {"step": 25, "extent": [0, 100]}},
             "y": {"field": "k", "bin": {"step": 35, "extent": [-20, 120]}}},
            {"name": "mean_m", "type": "histogram", "field": "k", "bin": {"step": 20, "extent": [-20, 120]},
             "aggregate": {"op": "mean", "field": "m"}, "brush": "none"},
        ],
        "interactions": {
            "crossfilter": [{"views": ["hx", "hk", "cat", "week", "heat", "mean_m"]}],
            "highlight": [{"source": "cat", "targets": ["hx"]}],
            "details": {"columns": ["x", "cat", "t"], "page_size": 5},
            "parameters": [{"name": "pdest", "field": "dest"},
                           {"name": "pm", "field": "m", "widget": "slider", "op": "lte"},
                           {"name": "pt", "field": "t", "widget": "slider", "op": "gte"}],
        },
    }


@pytest.fixture(scope="session")
def rich_dash(spark, small_parquet, tmp_path_factory) -> Dashboard:
    return Dashboard.open(parse_dashboard(rich_spec(small_parquet)), spark=spark,
                          cache_dir=tmp_path_factory.mktemp("rich-cache"))
