"""Browser tests: a real Brushfire server on loopback, the built frontend, and Debian's
Chromium driven by Playwright (the `chromium` fixture is in tests/conftest.py).
Screenshots go to build/screenshots/.

Two dashboards: `browse` (every view type and interaction over small random data) and
`stars` (what analysts bring: a colour-magnitude heatmap with 141 y-bins and a reversed
y axis, a categorical of 1,000+ values, float32 measures, a slider)."""

from __future__ import annotations

from contextlib import contextmanager

import pyarrow.parquet as pq
import pytest

from brushfire import Dashboard
from brushfire.server import create_app
from brushfire.spec import parse_dashboard
from live_server import live_server
from oracle import Oracle
from pages import SCREENSHOTS
from stars import make_stars, stars_spec


def browser_spec(path) -> dict:
    """Every view type and interaction the page offers, over the small random data."""
    return {
        "name": "browse",
        "title": "Browser test dashboard",
        "source": {"path": str(path)},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x",
             "bin": {"step": 10, "extent": [0, 100], "clamp": True}},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 6},
            {"name": "week", "type": "temporal", "field": "t", "unit": "week"},
            {"name": "heat", "type": "heatmap",
             "x": {"field": "x", "bin": {"step": 25, "extent": [0, 100]}},
             "y": {"field": "k", "bin": {"step": 35, "extent": [-20, 120]}}},
            {"name": "mean_m", "type": "histogram", "field": "k", "bin": {"step": 20, "extent": [-20, 120]},
             "aggregate": {"op": "mean", "field": "m"}, "brush": "none"},
            {"name": "med_m", "type": "categorical", "field": "dest", "top": 5, "brush": "none",
             "aggregate": {"op": "median", "field": "m"}},
        ],
        "interactions": {
            "crossfilter": [{"views": ["hx", "cat", "week", "heat", "mean_m", "med_m"]}],
            "highlight": [{"source": "cat", "targets": ["hx"]}],
            "details": {"columns": ["x", "cat", "k", "m"], "page_size": 20},
            "parameters": [{"name": "dest", "field": "dest"}],
        },
    }


@pytest.fixture(scope="session")
def stars_parquet(tmp_path_factory):
    path = tmp_path_factory.mktemp("stars") / "stars.parquet"
    pq.write_table(make_stars(20_000, seed=11), path, row_group_size=5000)
    return path


@pytest.fixture(scope="module")
def served(spark, small_parquet, tmp_path_factory):
    spec = parse_dashboard(browser_spec(small_parquet))
    dash = Dashboard.open(spec, spark=spark, cache_dir=tmp_path_factory.mktemp("cache"))
    with live_server(create_app([dash])) as addr:
        yield addr, dash


@pytest.fixture
def page(chromium, served, request):
    """The dashboard page, loaded and ready; fails the test on any page error."""
    with open_page(chromium, served[0], "browse", request.node.name) as pg:
        yield pg


@contextmanager
def open_page(chromium, addr: str, dashboard: str, shot: str, width: int = 1400, height: int = 1100,
              hash: str = "", allow: tuple[str, ...] = ()):
    """A page showing `dashboard`, ready; on exit a screenshot `shot`.png and a check that
    the page had no errors and loaded every resource (no 404, e.g. for /favicon.ico), but
    those that contain one of `allow` (a response the test made fail)."""
    context = chromium.new_context(viewport={"width": width, "height": height})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.goto(f"http://{addr}/?dashboard={dashboard}{hash}")
    pg.wait_for_function("window.brushfire.ready || window.brushfire.error", timeout=30_000)
    assert pg.evaluate("window.brushfire.error || null") is None
    try:
        yield pg
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(SCREENSHOTS / f"{shot}.png"), full_page=True)
    finally:
        context.close()
    errors = [e for e in errors if not any(a in e for a in allow)]
    assert not errors, f"errors in the page: {errors}"


@pytest.fixture(scope="module")
def served_stars(spark, stars_parquet, tmp_path_factory):
    spec = parse_dashboard(stars_spec(stars_parquet))
    dash = Dashboard.open(spec, spark=spark, cache_dir=tmp_path_factory.mktemp("cache"))
    with live_server(create_app([dash])) as addr:
        yield addr, dash


@pytest.fixture
def stars_page(chromium, served_stars, request):
    with open_page(chromium, served_stars[0], "stars", request.node.name) as pg:
        yield pg


@pytest.fixture
def oracle(served):
    return Oracle(served[1].spec)


@pytest.fixture
def stars_page_at(chromium, served_stars, request):
    """open_page for the stars dashboard at an address suffix (e.g. "#filters=...")."""
    return lambda hash: open_page(chromium, served_stars[0], "stars", request.node.name, hash=hash)


def papers_spec(path) -> dict:
    return {
        "name": "papers",
        "title": "Lineage features",
        "source": {"path": str(path)},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 6},
            # in no crossfilter group: its brush is answered lazily, on Spark
            {"name": "lonely", "type": "histogram", "field": "k", "bin": {"step": 20, "extent": [-20, 120]}},
        ],
        "interactions": {
            "crossfilter": [{"views": ["hx", "cat"]}],
            "details": {"columns": ["x", "cat", "k"], "page_size": 20},
            "parameters": [{"name": "pdest", "field": "dest", "default": "BBB"}],
        },
        "profile": {"fd": [["x", "k"], ["dest"]]},  # (x, k) is nearly unique: a few violations
    }


@pytest.fixture(scope="module")
def served_papers(spark, small_parquet, tmp_path_factory):
    dash = Dashboard.open(parse_dashboard(papers_spec(small_parquet)), spark=spark,
                          cache_dir=tmp_path_factory.mktemp("cache"))
    with live_server(create_app([dash])) as addr:
        yield addr, dash


@pytest.fixture
def paper(chromium, served_papers, request):
    """The `papers` dashboard's page (test_papers_page.py)."""
    with open_page(chromium, served_papers[0], "papers", request.node.name) as pg:
        yield pg
