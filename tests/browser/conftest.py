"""Browser tests: a real Brushfire server on loopback, the built frontend, and Debian's
Chromium driven by Playwright (no browser download: `make test` installs /usr/bin/chromium).
Screenshots go to build/screenshots/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from brushfire import Dashboard
from brushfire.server import create_app
from brushfire.server.app import frontend_dist
from brushfire.spec import parse_dashboard
from live_server import live_server
from oracle import Oracle

CHROMIUM = os.environ.get("BRUSHFIRE_CHROMIUM", "/usr/bin/chromium")
# without the background-networking flags Chromium keeps dialing out of a closed network
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
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


@pytest.fixture(scope="session")
def chromium():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make test` (installs Debian's chromium)"
    assert (frontend_dist() / "index.html").exists(), "the frontend is not built: run `make frontend`"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


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
