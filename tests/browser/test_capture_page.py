"""The page while a dashboard is still being captured, and when its capture fails."""

from __future__ import annotations

import pytest

from browser.conftest import SCREENSHOTS, browser_spec
from brushfire.server import create_app
from brushfire.server.hosting import HostedDashboard
from brushfire.spec import parse_dashboard
from live_server import live_server

pytestmark = pytest.mark.spark


def test_the_page_shows_capture_progress_then_the_dashboard(chromium, spark, small_parquet, tmp_path):
    spec = browser_spec(small_parquet)
    host = HostedDashboard.opening(parse_dashboard(spec), cache_dir=tmp_path, spark=spark)
    with live_server(create_app([host])) as addr:
        page = chromium.new_page()
        page.goto(f"http://{addr}/")
        page.wait_for_function("window.brushfire.ready || window.brushfire.error", timeout=120_000)
        assert page.evaluate("window.brushfire.error || null") is None
        progress = page.evaluate("window.brushfire.progress")
        assert progress, "the page never showed the capture's progress"
        assert page.locator(".bf-view").count() == len(spec["views"])
        page.close()


def test_the_page_shows_why_a_capture_failed(chromium, small_parquet, tmp_path):
    spec = browser_spec(small_parquet) | {"source": {"path": str(tmp_path / "missing.parquet")}}
    host = HostedDashboard.opening(parse_dashboard(spec), cache_dir=tmp_path)
    assert host.wait(60)
    with live_server(create_app([host])) as addr:
        page = chromium.new_page()
        page.goto(f"http://{addr}/")
        page.wait_for_selector(".bf-failed")
        text = page.inner_text(".bf-failed")
        assert "could not be opened" in text and "missing.parquet" in text
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "capture-failed.png"))
        page.close()


def test_the_page_redraws_with_new_data_and_keeps_its_filters(chromium, spark, tmp_path):
    """serve --watch: the server moves the page's session to the new capture (`reloaded`);
    the page redraws from the new description and shows the filters the session kept."""
    import pyarrow.parquet as pq

    from rows import make_rows
    from server.test_reload import growing_host

    folder, host = growing_host(spark, tmp_path, 800, 1)
    with live_server(create_app([host])) as addr:
        page = chromium.new_page()
        page.goto(f"http://{addr}/#filters=" + '{"hx":{"interval":[20,60]}}')
        page.wait_for_function("window.brushfire.ready || window.brushfire.error", timeout=120_000)
        assert page.evaluate("window.brushfire.error || null") is None
        pq.write_table(make_rows(400, 2), folder / "part-1.parquet")
        assert host.reload(spark=spark)
        page.wait_for_function("window.brushfire.reloads === 1", timeout=60_000)
        assert "New data: 1,200 rows" in page.inner_text(".bf-note")
        assert page.evaluate("window.brushfire.ui.filters") == {"hx": {"interval": [20, 60]}}
        assert page.evaluate("window.brushfire.description.rows") == 1200
        assert page.locator(".bf-view").count() == 2
        page.close()
