"""The gallery's dashboards (dashboards/gallery/), each captured on Spark over a generated
sample with its table's schema (tests/gallery.py: no network) and opened in chromium: the
page is ready without errors, every view equals SQL, and after a brush dragged with the
mouse on the dashboard's first brushable histogram or heatmap, every view equals SQL
again. Screenshots: build/screenshots/gallery-*.png."""

from __future__ import annotations

import pytest

from browser.conftest import open_page
from brushfire import Dashboard
from brushfire.server import create_app
from brushfire.spec import models as m
from brushfire.spec import parse_dashboard
from gallery import SPECS, sample_spec, table_of, write_sample
from live_server import live_server
from oracle import Oracle
from pages import assert_views_match, drag

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def served_gallery(spark, tmp_path_factory):
    """All five dashboards on one server, as `make gallery` serves them."""
    data, cache = tmp_path_factory.mktemp("gallery-data"), tmp_path_factory.mktemp("gallery-cache")
    dashes = {}
    for spec in SPECS:
        model = parse_dashboard(sample_spec(spec, write_sample(table_of(spec), data, n=1500)))
        dashes[spec.stem] = Dashboard.open(model, spark=spark, cache_dir=cache)
        dashes[spec.stem].warm_up(freeze=False)  # as serve does: no page waits for numba
    with live_server(create_app(list(dashes.values()))) as addr:
        yield addr, dashes


def _starting_oracle(dash: Dashboard, spark) -> Oracle:
    """The oracle with the page's starting state: parameter defaults active."""
    oracle = Oracle(dash.spec, spark)
    for p in dash.spec.interactions.parameters:
        if p.default is not None:
            oracle.set_parameter(p.name, p.default)
    return oracle


def _first_brush(dash: Dashboard) -> m.View:
    brushable = {v for group in dash.spec.interactions.crossfilter for v in group.views}
    return next(v for v in dash.spec.views if v.name in brushable
                and isinstance(v, (m.HistogramView, m.HeatmapView)) and v.brush != "none")


@pytest.mark.parametrize("spec", SPECS, ids=[s.stem for s in SPECS])
def test_a_gallery_dashboard_opens_and_brushes_as_sql_says(chromium, served_gallery, spark, spec):
    addr, dashes = served_gallery
    dash = dashes[spec.stem]
    oracle = _starting_oracle(dash, spark)
    with open_page(chromium, addr, dash.spec.name, f"gallery-{spec.stem}") as page:
        assert page.evaluate("window.brushfire.ui.charts.size") == len(dash.spec.views)
        assert_views_match(page, oracle, dash)
        view = _first_brush(dash)
        if isinstance(view, m.HeatmapView):
            (x0, x1), (y0, y1) = view.x.bin.extent, view.y.bin.extent
            drag(page, view.name, x0 + (x1 - x0) * 0.2, x0 + (x1 - x0) * 0.6,
                 y0 + (y1 - y0) * 0.2, y0 + (y1 - y0) * 0.7)
            rect = page.evaluate(f"window.brushfire.ui.filters[{view.name!r}].rect")
            oracle.brush(view.name, tuple(rect["x"]), tuple(rect["y"]))
        else:
            lo, hi = view.bin.extent
            drag(page, view.name, lo + (hi - lo) * 0.25, lo + (hi - lo) * 0.6)
            interval = page.evaluate(f"window.brushfire.ui.filters[{view.name!r}].interval")
            oracle.brush(view.name, tuple(interval))
        assert_views_match(page, oracle, dash)
