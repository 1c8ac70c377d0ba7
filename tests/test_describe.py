"""brushfire.describe: one description per open dashboard, computed once, and forgotten
with the dashboard (its store is never kept alive by the cache)."""

from __future__ import annotations

import gc
import weakref

from brushfire.dashboard import Dashboard
from brushfire.describe import describe_dashboard


def test_descriptions_are_cached_per_dashboard_and_freed_with_it(rich_local):
    dash = Dashboard(rich_local.spec, rich_local.plan, rich_local.store)
    first = describe_dashboard(dash)
    assert describe_dashboard(dash) is first
    assert first["filters"] == {} and [v["name"] for v in first["views"]] == [v.name for v in dash.spec.views]
    gone = weakref.ref(dash)
    del dash
    gc.collect()
    assert gone() is None  # the cache held no reference to it
