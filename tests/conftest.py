"""Shared fixtures: one local Spark session for the whole run, small random datasets, and
Debian's Chromium driven by Playwright (no browser download: `make test` installs
/usr/bin/chromium) for the browser and JupyterLab tests."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rows import make_rows

# The lineage cache's default is the user's cache directory (brushfire/cachedir.py): what
# the tests capture or materialize without a cache_dir goes to a folder of this run instead
# (set before any test module imports brushfire.dashboard, which reads it)
TEST_CACHE = tempfile.mkdtemp(prefix="brushfire-test-cache-")
atexit.register(shutil.rmtree, TEST_CACHE, True)
os.environ["BRUSHFIRE_CACHE"] = TEST_CACHE

CHROMIUM = os.environ.get("BRUSHFIRE_CHROMIUM", "/usr/bin/chromium")
# without the background-networking flags Chromium keeps dialing out of a closed network
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session", autouse=True)
def _unfreeze_at_exit():
    """Dashboards warmed up in this process froze the objects alive then (gc.freeze, as a
    server does): give them back to the collector before the interpreter exits, so that
    what they hold is finalized (DuckDB reports its objects still alive as leaks)."""
    yield
    import gc

    gc.unfreeze()
    gc.collect()


@pytest.fixture(scope="session")
def spark():
    from brushfire.capture.spark import get_spark

    session = get_spark(os.environ.get("BRUSHFIRE_TEST_SPARK_MASTER", "local[2]"),
                        app_name="brushfire-tests", driver_memory="2g")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def chromium():
    from playwright.sync_api import sync_playwright

    from brushfire.describe import frontend_dist

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make test` (installs Debian's chromium)"
    assert (frontend_dist() / "index.html").exists(), "the frontend is not built: run `make frontend`"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def small_parquet(tmp_path_factory):
    """A 3,000-row random dataset as Parquet (about a dozen cube blocks per index)."""
    path = tmp_path_factory.mktemp("data") / "small.parquet"
    pq.write_table(make_rows(3000, seed=7), path, row_group_size=1000)
    return path


@pytest.fixture(scope="session")
def rich_local(small_parquet, tmp_path_factory):
    """The server tests' dashboard with every kind of filter (server/conftest.py) over the
    small random data, captured in this process without Spark (capture/local.py): for
    the protocol's error catalogue, the conformance suite and the export tests."""
    from brushfire.capture.local import capture_table
    from brushfire.dashboard import Dashboard
    from brushfire.plan import plan_capture
    from brushfire.spec import parse_dashboard
    from server.conftest import rich_spec

    spec = parse_dashboard(rich_spec(small_parquet))
    plan = plan_capture(spec)
    store = capture_table(plan, pq.read_table(small_parquet), tmp_path_factory.mktemp("rich-local"))
    return Dashboard(spec, plan, store)
