"""Screenshots for people to look at (build/screenshots/): the default flights dashboard
(data/flights-3m.parquet, skipped without it) and the `stars` heatmap dashboard, as
loaded and with brushes. BRUSHFIRE_SCREENSHOT_LABEL names the set ("after" by default);
the same test run against an older checkout (PYTHONPATH and BRUSHFIRE_FRONTEND pointing
there, label "before") gives the pictures to compare with."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from brushfire import Dashboard
from brushfire.server import create_app
from brushfire.spec import models as m
from brushfire.spec import parse_dashboard
from live_server import live_server
from pages import IDLE, SCREENSHOTS, to_pixel
from stars import stars_spec

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
LABEL = os.environ.get("BRUSHFIRE_SCREENSHOT_LABEL", "after")
FLIGHTS = ROOT / "data" / "flights-3m.parquet"


def snap(chromium, addr: str, dashboard: str, brushes: list[tuple]) -> None:
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(f"http://{addr}/?dashboard={dashboard}")
    page.wait_for_function("window.brushfire.ready", timeout=120_000)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{LABEL}-{dashboard}.png"), full_page=True)
    for view, x0, x1, y0, y1 in brushes:
        (ax, ay), (bx, by) = to_pixel(page, view, x0, y0), to_pixel(page, view, x1, y1)
        page.mouse.move(ax, ay)
        page.mouse.down()
        page.mouse.move(bx, by, steps=8)
        page.mouse.up()
        page.wait_for_function(IDLE)
    page.mouse.move(2, 2)
    page.screenshot(path=str(SCREENSHOTS / f"{LABEL}-{dashboard}-brushed.png"), full_page=True)
    context.close()


@pytest.mark.skipif(not FLIGHTS.exists(), reason="no data/flights-3m.parquet (make demo fetches it)")
def test_screenshots_of_the_default_dashboard(chromium, spark):
    dash = Dashboard.open(ROOT / "dashboards" / "flights.yaml", spark=spark,
                          cache_dir=ROOT / ".cache" / "brushfire")
    with live_server(create_app([dash])) as addr:
        snap(chromium, addr, "flights", [("delay", -10, 30, None, None), ("hour", 6, 11, None, None)])


def test_screenshots_of_a_heatmap_dashboard(chromium, spark, stars_parquet, tmp_path):
    display = "scale" in m.HistogramView.model_fields  # older checkouts: no display options
    dash = Dashboard.open(parse_dashboard(stars_spec(stars_parquet, display)), spark=spark,
                          cache_dir=tmp_path)
    with live_server(create_app([dash])) as addr:
        snap(chromium, addr, "stars", [("cmd", 0.2, 1.4, 2, 9), ("parallax", 1, 6, None, None)])
