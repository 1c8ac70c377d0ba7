"""The page draws the spec conveniences (issue 17) and its filters equal SQL: a `maxbins`
histogram, a categorical sorted by name, calendar parts brushed by their values, a
`between` slider (two thumbs) and a multi-select dropdown. Captured without Spark."""

from __future__ import annotations

import math

import pyarrow.parquet as pq
import pytest

from browser.conftest import open_page
from brushfire.capture.local import capture_table
from brushfire.dashboard import Dashboard
from brushfire.plan import plan_capture
from brushfire.server import create_app
from brushfire.spec import parse_dashboard
from live_server import live_server
from oracle import Oracle
from pages import IDLE, drag, selected, shown


def spec(path) -> dict:
    return {
        "name": "conveniences",
        "source": {"path": str(path)},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x", "bin": {"maxbins": 10}},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 8, "sort": "name"},
            {"name": "hod", "type": "temporal", "field": "t", "unit": "hour_of_day"},
            {"name": "dow", "type": "temporal", "field": "t", "unit": "day_of_week"},
        ],
        "interactions": {
            "crossfilter": [{"views": ["hx", "cat", "hod", "dow"]}],
            "parameters": [
                {"name": "krange", "field": "k", "widget": "slider", "op": "between"},
                {"name": "dests", "field": "dest", "multiple": True},
            ],
        },
    }


@pytest.fixture(scope="module")
def served(small_parquet, tmp_path_factory):
    written = parse_dashboard(spec(small_parquet))
    plan = plan_capture(written)
    store = capture_table(plan, pq.read_table(small_parquet), tmp_path_factory.mktemp("cache"))
    dash = Dashboard(written, plan, store)
    with live_server(create_app([dash])) as addr:
        yield addr, dash


@pytest.fixture
def page(chromium, served, request):
    with open_page(chromium, served[0], "conveniences", request.node.name) as pg:
        yield pg


def count(oracle, where: str) -> int:
    return oracle.con.execute(f"SELECT count(*) FROM src WHERE {where}").fetchone()[0]


def test_the_page_draws_and_filters_the_conveniences(page, served):
    _, dash = served
    oracle = Oracle(dash.spec)
    b = dash.spec.view("hx").bin
    assert b.resolved and b.count <= 10
    assert len(shown(page, "hx")) == b.count
    labels = shown(page, "cat", "label")
    assert labels[:-1] == sorted(labels[:-1]) and labels[-1] == "(other)"
    assert shown(page, "dow", "label") == ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    # a drag over hours 6 to 9 sends a brush of hour values (numbers), not times
    drag(page, "hod", 5.6, 9.4)
    lo, hi = page.evaluate("window.brushfire.ui.filters.hod.interval")
    assert 5 < lo < 6 and 9 < hi < 10
    hours = f"hour(t) >= {lo} AND hour(t) <= {hi}"
    assert selected(page) == count(oracle, hours)
    # the between slider: two thumbs
    thumbs = page.locator(".bf-parameter", has_text="krange").locator("input.bf-range-end")
    assert thumbs.count() == 2
    thumbs.nth(0).evaluate("e => { e.value = '10'; e.dispatchEvent(new Event('input')); }")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.krange?.parameter?.[0] === 10")
    thumbs.nth(1).evaluate("e => { e.value = '60'; e.dispatchEvent(new Event('input')); }")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.krange?.parameter?.[1] === 60")
    assert page.locator(".bf-parameter", has_text="krange").locator(".bf-readout").inner_text() == "10 – 60"
    assert selected(page) == count(oracle, f"{hours} AND k BETWEEN 10 AND 60")
    # the multi-select dropdown: a searchable picker, values picked with Enter
    page.click("input[name=dests]")
    for value in ("AAA", "CCC"):
        page.fill("input[name=dests]", value)
        page.keyboard.press("Enter")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.dests?.parameter?.length === 2")
    assert sorted(page.evaluate("window.brushfire.ui.filters.dests.parameter")) == ["AAA", "CCC"]
    want = count(oracle, f"{hours} AND k BETWEEN 10 AND 60 AND dest IN ('AAA', 'CCC')")
    assert selected(page) == want and not math.isnan(want)
