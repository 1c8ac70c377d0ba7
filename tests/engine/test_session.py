"""engine/session.py without Spark (capture/local.py; the DuckDB oracle, with Spark, is
test_session_oracle.py): a view no active filter applies to shows its base result, kept
per store — a clear's reply is a fresh session's, and no caller can change the kept one."""

from __future__ import annotations

import copy

import pyarrow.parquet as pq
import pytest

from brushfire.dashboard import Dashboard
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard


@pytest.fixture(scope="module")
def medians(small_parquet, tmp_path_factory):
    """Order-statistic heatmaps of many cells (x by k: 1,200 bars) beside a brushable
    histogram, over the small random data (nulls, NaN, ties)."""
    from brushfire.capture.local import capture_table

    cells = {"x": {"field": "x", "bin": {"step": 2.5, "extent": [0, 100]}},
             "y": {"field": "k", "bin": {"step": 5, "extent": [-20, 130]}}, "brush": "none"}
    spec = parse_dashboard({
        "name": "medians", "source": {"path": str(small_parquet)},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
            {"name": "med", "type": "heatmap", **cells, "aggregate": {"op": "median", "field": "m"}},
            {"name": "qd", "type": "heatmap", **cells,
             "aggregate": {"op": "quantile", "field": "m", "p": 0.3, "method": "discrete"}},
        ],
        "interactions": {"crossfilter": [{"views": ["hx", "med", "qd"]}]},
    })
    plan = plan_capture(spec)
    store = capture_table(plan, pq.read_table(small_parquet), tmp_path_factory.mktemp("medians"))
    return Dashboard(spec, plan, store)


def test_a_clear_answers_each_view_with_its_base_result_kept_per_store(medians):
    s = medians.engine_session()
    base = copy.deepcopy(s.views())  # as sent, whatever becomes of the reply's objects
    brushed = s.brush("hx", [20, 60]).views
    assert brushed["med"] != base["med"] and brushed["qd"] != base["qd"]
    cleared = s.clear()
    assert cleared.views == base and set(cleared.methods.values()) == {"base"}
    cleared.views["med"].values[:] = [None] * len(base["med"].values)  # a caller's change
    cleared.views["qd"].caveats.clear()
    assert medians.engine_session().views() == base == s.views()


def test_the_python_api_takes_a_choice_as_replies_spell_it(tmp_path):
    """A float field's ±inf and NaN, spelt as replies and the selection state spell them
    ('Infinity', 'NaN': values.wire_choice, wire_dropdown), passed the check of the
    session's Python API (values.Choices takes them) but were looked up as given: the
    session failed with TypeError (int(None)) instead of selecting their rows."""
    import math

    import pyarrow as pa

    from brushfire.capture.local import capture_table
    from brushfire.errors import InteractionError

    table = pa.table({"f": [1.0, math.inf, math.inf, math.nan, 2.0, -math.inf], "y": [1, 2, 3, 4, 5, 6]})
    pq.write_table(table, tmp_path / "t.parquet")
    spec = parse_dashboard({
        "name": "spelt", "source": {"path": str(tmp_path / "t.parquet")},
        "views": [{"name": "c", "type": "categorical", "field": "f"},
                  {"name": "h", "type": "histogram", "field": "y", "bin": {"step": 1, "extent": [0, 7]}}],
        "interactions": {"crossfilter": [{"views": ["c", "h"]}],
                         "parameters": [{"name": "p", "field": "f"}]}})
    plan = plan_capture(spec)
    dash = Dashboard(spec, plan, capture_table(plan, table, tmp_path / "cache"))
    s = dash.session()
    s.select("c", ["Infinity", "-Infinity"])
    assert s.count_selected() == 3
    s.clear()
    for value, rows in [("Infinity", 2), ("NaN", 1), (math.inf, 2), (2.0, 1)]:
        s.set_parameter("p", value)
        assert s.count_selected() == rows, value
    with pytest.raises(InteractionError, match="'Inf' is not one of the values"):
        s.set_parameter("p", "Inf")
