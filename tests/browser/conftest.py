"""Browser tests: a real Brushfire server on loopback, the built frontend, and Debian's
Chromium driven by Playwright (the `chromium` fixture is in tests/conftest.py).
Screenshots go to build/screenshots/."""

from __future__ import annotations

from pathlib import Path

import pytest

from brushfire import Dashboard
from brushfire.server import create_app
from brushfire.spec import parse_dashboard
from live_server import live_server
from oracle import Oracle

SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"


def browser_spec(path) -> dict:
    """Every view type and interaction the page offers, over the small random data."""
    return {
        "name": "browse",
        "title": "Browser test dashboard",
        "source": {"path": str(path)},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 6},
            {"name": "week", "type": "temporal", "field": "t", "unit": "week"},
            {"name": "heat", "type": "heatmap",
             "x": {"field": "x", "bin": {"step": 25, "extent": [0, 100]}},
             "y": {"field": "k", "bin": {"step": 35, "extent": [-20, 120]}}},
            {"name": "mean_m", "type": "histogram", "field": "k", "bin": {"step": 20, "extent": [-20, 120]},
             "aggregate": {"op": "mean", "field": "m"}, "brush": "none"},
        ],
        "interactions": {
            "crossfilter": [{"views": ["hx", "cat", "week", "heat", "mean_m"]}],
            "highlight": [{"source": "cat", "targets": ["hx"]}],
            "details": {"columns": ["x", "cat", "k", "m"], "page_size": 20},
            "parameters": [{"name": "dest", "field": "dest"}],
        },
    }


@pytest.fixture(scope="module")
def served(spark, small_parquet, tmp_path_factory):
    spec = parse_dashboard(browser_spec(small_parquet))
    dash = Dashboard.open(spec, spark=spark, cache_dir=tmp_path_factory.mktemp("cache"))
    with live_server(create_app([dash])) as addr:
        yield addr, dash


@pytest.fixture
def page(chromium, served, request):
    """The dashboard page, loaded and ready; fails the test on any page error."""
    addr, _ = served
    context = chromium.new_context(viewport={"width": 1400, "height": 1100})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(f"http://{addr}/?dashboard=browse")
    pg.wait_for_function("window.brushfire.ready || window.brushfire.error", timeout=30_000)
    assert pg.evaluate("window.brushfire.error || null") is None
    yield pg
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SCREENSHOTS / f"{request.node.name}.png"))
    context.close()
    assert not errors, f"errors in the page: {errors}"


@pytest.fixture
def oracle(served):
    return Oracle(served[1].spec)
