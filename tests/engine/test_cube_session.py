"""Memory-budget mode: with a budget too small for per-row lineage, capture keeps only
cubes computed on Spark; every single-filter interaction must still equal SQL, and
interactions that need per-row lineage must say why they are not available."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushfire import Dashboard
from brushfire.capture.budget import decide, parse_size
from brushfire.engine.cube_session import CubeSession
from brushfire.errors import NotCapturedError
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard
from engine.test_session_oracle import actions_for, apply, check_all, spec_a, spec_b
from oracle import Oracle

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module", params=[spec_a, spec_b], ids=["a", "b"])
def cubes_only(request, spark, small_parquet):
    spec = parse_dashboard(request.param(small_parquet))
    dash = Dashboard.open(spec, spark=spark, cache_dir=None, memory_budget="100KB")
    return dash, Oracle(spec)


def test_a_small_budget_chooses_cubes_and_says_why(cubes_only):
    dash, oracle = cubes_only
    assert dash.mode == "cubes" and isinstance(dash.session(), CubeSession)
    decision = decide(plan_capture(dash.spec), parse_size("100KB"))
    assert decision.mode == "cubes"
    assert "× 3,000 rows), over the memory budget of 100.0 KiB" in decision.reason
    assert decide(plan_capture(dash.spec), parse_size("1GB")).mode == "rows"
    assert dash.store.n_rows == oracle.con.execute("SELECT count(*) FROM src").fetchone()[0]


def single_filter_actions(spec) -> st.SearchStrategy:
    """One filter at a time (rect brushes need per-row lineage), then clears."""
    return actions_for(spec).filter(lambda a: a[0] != "rect")


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_single_filter_views_equal_sql(cubes_only, data):
    dash, oracle = cubes_only
    session = dash.session()
    oracle.clear()
    for step, action in enumerate(data.draw(st.lists(single_filter_actions(dash.spec), max_size=4))):
        session.clear()
        oracle.clear()
        apply(session, oracle, action)
        check_all(dash, oracle, session, (step, action))
        count = oracle.con.execute(f"SELECT count(*) FROM src WHERE {oracle.where(None)}").fetchone()[0]
        assert session.count_selected() == count


def test_what_needs_per_row_lineage_is_refused_with_the_reason(cubes_only):
    dash, _ = cubes_only
    s = dash.session()
    first = [f for f in dash.plan.filters if f.kind == "interval"][0]
    second = [f for f in dash.plan.filters if f.name != first.name and f.kind in ("points", "param_eq")][0]
    s.brush(first.name, (10, 60))
    before = (s.filters, s.views())
    with pytest.raises(NotCapturedError, match="needs per-row lineage.*over the memory budget"):
        if second.kind == "points":
            s.select(second.name, ["c01"])
        else:
            s.set_parameter(second.name, "AAA")
    assert (s.filters, s.views()) == before  # refused: nothing changed
    for call in (lambda: s.details(), lambda: s.highlight(dash.spec.interactions.highlight[0].source, [0]),
                 lambda: s.backward_rids()):
        with pytest.raises(NotCapturedError, match="not kept for this dashboard"):
            call()
    rect = [f for f in dash.plan.filters if f.kind == "rect"]
    if rect:
        s.clear()
        with pytest.raises(NotCapturedError, match="rect brushes"):
            s.brush(rect[0].name, (0, 50), y=(0, 50))


def test_parse_size():
    assert parse_size("512MB") == 512 << 20 and parse_size("2g") == 2 << 30
    assert parse_size("1.5GiB") == int(1.5 * (1 << 30)) and parse_size(1000) == 1000
    with pytest.raises(ValueError, match="a memory size is a number"):
        parse_size("lots")
