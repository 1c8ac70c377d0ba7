"""What a first-time analyst trips over (issue 36, items 6-14), in a real browser: brush
ends at the view's precision and brushes that snap to whole bars, the keyboard's first
brush, a heatmap axis reversed on its own, scale-to-selection and small shares, the
'(other)' bar and narrow screens, visible help and a legend, the spec's layout, a
searchable parameter picker, a sortable details table, exports and the link to the
selection. Every filter the page sends is checked against SQL (DuckDB).

One dashboard over the `stars` catalogue, captured in this process without Spark
(capture/local.py) and served once for the module."""

from __future__ import annotations

import json
import math
import re
from urllib.parse import unquote

import pyarrow.parquet as pq
import pytest

from bars import sql_count
from browser.conftest import open_page
from brushfire.capture.local import capture_table
from brushfire.dashboard import Dashboard
from brushfire.plan import plan_capture
from brushfire.server import create_app
from brushfire.spec import parse_dashboard
from live_server import live_server
from oracle import Oracle
from pages import (
    IDLE,
    assert_views_match,
    brush_pixels,
    drag,
    drawn_items,
    scale_pixels,
    selected,
    shown,
    to_pixel,
)


def analyst_spec(path) -> dict:
    return {
        "name": "analyst",
        "title": "Star catalogue for an analyst",
        "source": {"path": str(path)},
        "views": [
            {"name": "cmd", "title": "Colour-magnitude diagram", "type": "heatmap", "snap": True,
             "x": {"field": "color", "bin": {"step": 0.25, "extent": [-0.5, 3.0]}},
             "y": {"field": "mag", "bin": {"step": 1, "extent": [-1, 13]}, "reverse": True}},
            {"name": "mag", "title": "Magnitude", "type": "histogram", "field": "mag",
             "bin": {"step": 0.5, "extent": [-1, 14]}},
            {"name": "parallax", "title": "Parallax (mas)", "type": "histogram", "field": "parallax",
             "bin": {"step": 0.5, "extent": [0, 20], "clamp": True}, "snap": True},
            {"name": "cluster", "title": "Cluster", "type": "categorical", "field": "cluster", "top": 20},
            {"name": "day", "title": "Observations per day", "type": "temporal", "field": "t", "unit": "day"},
            {"name": "dow", "title": "Day of week", "type": "temporal", "field": "t", "unit": "day_of_week"},
            # short labels, 21 columns, and an '(other)' bar of almost every row
            {"name": "nobs", "title": "Most frequent observation counts", "type": "categorical",
             "field": "n_obs", "top": 20},
        ],
        "interactions": {
            "crossfilter": [{"views": ["cmd", "mag", "parallax", "cluster", "day", "dow", "nobs"]}],
            "details": {"columns": ["color", "mag", "parallax", "cluster", "t", "n_obs"], "page_size": 20},
            "parameters": [
                {"name": "in_cluster", "field": "cluster"},
                {"name": "surveys", "field": "survey", "multiple": True},
            ],
        },
        "layout": [
            {"rows": [["cmd", "mag", "parallax"]]},
            {"title": "Who and when", "rows": [["cluster", "nobs"], ["day"]]},
        ],  # dow left out: it follows
    }


@pytest.fixture(scope="module")
def served(stars_parquet, tmp_path_factory):
    spec = parse_dashboard(analyst_spec(stars_parquet))
    plan = plan_capture(spec)
    store = capture_table(plan, pq.read_table(stars_parquet), tmp_path_factory.mktemp("cache"))
    dash = Dashboard(spec, plan, store)
    with live_server(create_app([dash])) as addr:
        yield addr, dash


@pytest.fixture
def page(chromium, served, request):
    with open_page(chromium, served[0], "analyst", request.node.name) as pg:
        yield pg


@pytest.fixture
def oracle(served):
    return Oracle(served[1].spec)


def below(x: float) -> float:
    """The largest double below x (a snapped brush's upper end)."""
    return math.nextafter(x, -math.inf)


def decimals(x: float) -> int:
    text = repr(float(x))
    return len(text.split(".")[1].rstrip("0")) if "." in text and "e" not in text else 99


def readout(page, view: str) -> str:
    return page.inner_text(f"[data-view={view}] .bf-view-filter")


def address_state(page) -> dict:
    page.wait_for_function("location.hash.startsWith('#filters=')")
    return json.loads(unquote(page.evaluate("location.hash").split("=", 1)[1]))


def settled_address(page, view: str, expected: dict, timeout: float = 5.0) -> dict:
    """The address's state once it shows `expected` for `view` (the page rewrites it 250 ms
    after the last change of a drag), or as it is after `timeout` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while (state := address_state(page)).get(view) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return state


# --- item 6: brush ends at the view's precision; snapping ------------------------------


def test_a_drag_sends_ends_at_the_views_precision_and_the_readout_shows_them(page, served, oracle):
    _, dash = served
    drag(page, "mag", 0.1567, 6.0313)
    lo, hi = page.evaluate("window.brushfire.ui.filters.mag.interval")
    # a pixel of this view is 15 / ~400 of a magnitude: ends are multiples of 0.01
    per_pixel = page.evaluate("window.brushfire.ui.charts.get('mag').dataPerPixel('x')")
    assert 0.01 <= per_pixel < 0.1
    assert decimals(lo) <= 2 and decimals(hi) <= 2, (lo, hi)
    assert abs(lo - 0.1567) < per_pixel and abs(hi - 6.0313) < per_pixel
    assert readout(page, "mag") == f"{lo:g} – {hi:g}"
    assert settled_address(page, "mag", {"interval": [lo, hi]})["mag"] == {"interval": [lo, hi]}
    oracle.brush("mag", (lo, hi))
    assert_views_match(page, oracle, dash)
    assert selected(page) == sql_count(oracle)


def test_a_snapping_view_selects_exactly_the_bars_its_brush_covers(page, served, oracle):
    """`snap: true` (parallax): a drag from 2.3 to 5.6 selects bars 2-2.5 to 5.5-6,
    i.e. 2 <= parallax < 6, and the brush is drawn on those bars' edges; into the clamped
    first bar, its lower end opens (the bar holds the values below the extent)."""
    _, dash = served
    drag(page, "parallax", 2.3, 5.6)
    assert page.evaluate("window.brushfire.ui.filters.parallax") == {"interval": [2.0, below(6.0)]}
    assert brush_pixels(page, "parallax")["x"] == pytest.approx(
        scale_pixels(page, "parallax", "x", [2.0, 6.0]), abs=0.6)
    assert readout(page, "parallax") == "2 – 6"
    oracle.brush("parallax", (2.0, below(6.0)))
    assert selected(page) == sql_count(oracle) == oracle.con.execute(
        "SELECT count(*) FROM src WHERE parallax >= 2 AND parallax < 6").fetchone()[0]
    assert_views_match(page, oracle, dash)
    drag(page, "parallax", 0.2, 1.2)  # a new brush over the clamped first bar
    assert page.evaluate("window.brushfire.ui.filters.parallax") == {"interval": [None, below(1.5)]}
    oracle.brush("parallax", (None, below(1.5)))
    assert selected(page) == sql_count(oracle)
    # Shift while dragging: the other way (no snap here; snap on a view without it)
    page.keyboard.down("Shift")
    drag(page, "parallax", 7.23, 9.61)
    drag(page, "mag", 1.1, 2.2)
    page.keyboard.up("Shift")
    lo, hi = page.evaluate("window.brushfire.ui.filters.parallax.interval")
    assert lo not in (7.0, 7.5) and decimals(lo) <= 2 and hi != below(10.0)
    assert page.evaluate("window.brushfire.ui.filters.mag") == {"interval": [1.0, below(2.5)]}
    oracle.brush("parallax", (lo, hi))
    oracle.brush("mag", (1.0, below(2.5)))
    assert_views_match(page, oracle, dash)


def test_time_brushes_read_as_dates_and_calendar_parts_by_name(page, served, oracle):
    _, dash = served
    labels = dash.store.view("day").labels

    def ms(i: int, hours: float = 0) -> float:
        from datetime import datetime
        return datetime.fromisoformat(labels[i]).timestamp() * 1000 + hours * 3_600_000

    page.keyboard.down("Shift")  # snapped: whole days
    drag(page, "day", ms(100, 7.3), ms(130, 17.7))
    page.keyboard.up("Shift")
    lo, hi = page.evaluate("window.brushfire.ui.filters.day.interval")
    # a day is narrower than a pixel here: the days are those under the pointer's pixels
    assert lo[:10] in {x[:10] for x in labels[99:102]} and lo.endswith("T00:00:00Z"), lo
    assert hi[:10] in {x[:10] for x in labels[129:132]} and hi.endswith("T23:59:59.999999Z"), hi
    assert readout(page, "day") == f"{lo[:10]} – {hi[:10]}"
    oracle.brush("day", (lo, hi))
    assert selected(page) == sql_count(oracle)
    drag(page, "day", ms(200, 5.2), ms(260, 13.9))  # free: whole hours at most (a pixel is longer)
    lo, hi = page.evaluate("window.brushfire.ui.filters.day.interval")
    assert all(t.endswith(":00:00Z") for t in (lo, hi)), (lo, hi)
    text = readout(page, "day")
    assert "." not in text and text.count(":") <= 2, text  # "2020-07-20 05:00 – 2020-09-17 14:00"
    # a day of week brush reads as the days it holds
    drag(page, "dow", 1.7, 5.2)
    assert readout(page, "dow") == "Tue – Fri"
    lo, hi = page.evaluate("window.brushfire.ui.filters.dow.interval")
    oracle.brush("day", page.evaluate("window.brushfire.ui.filters.day.interval"))
    oracle.brush("dow", (lo, hi))
    assert_views_match(page, oracle, dash)


# --- item 13: the keyboard's first brush is one bar --------------------------------------


def test_the_first_arrow_key_brushes_one_bar_the_first_on_screen_that_way(page, served, oracle):
    _, dash = served
    page.focus("[data-view=mag] .bf-chart")
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.mag")
    assert page.evaluate("window.brushfire.ui.filters.mag") == {"interval": [-1.0, below(-0.5)]}
    oracle.brush("mag", (-1.0, below(-0.5)))
    bar0 = oracle.con.execute("SELECT count(*) FROM src WHERE mag >= -1 AND mag < -0.5").fetchone()[0]
    assert selected(page) == sql_count(oracle) == bar0
    page.keyboard.press("ArrowRight")  # then it moves by one bar
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.mag.interval[0] === -0.5")
    assert page.evaluate("window.brushfire.ui.filters.mag") == {"interval": [-0.5, below(0.0)]}
    page.keyboard.press("Escape")
    page.keyboard.press("ArrowLeft")  # from the other end: the last bar (it holds its end)
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.mag?.interval[0] === 13.5")
    assert page.evaluate("window.brushfire.ui.filters.mag") == {"interval": [13.5, 14.0]}
    # a heatmap: one cell; its y axis is reversed, so Up starts at the top value's far end
    page.focus("[data-view=cmd] .bf-chart")
    page.keyboard.press("ArrowUp")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.cmd")
    rect = page.evaluate("window.brushfire.ui.filters.cmd.rect")
    assert rect == {"x": [-0.5, below(-0.25)], "y": [12.0, 13.0]}
    oracle.clear()
    oracle.brush("mag", (13.5, 14.0))
    oracle.brush("cmd", tuple(rect["x"]), tuple(rect["y"]))
    assert_views_match(page, oracle, dash)
    assert selected(page) == sql_count(oracle)


# --- item 14: a heatmap axis reversed on its own -------------------------------------------


def test_a_heatmap_axis_reversed_on_its_own_is_drawn_and_brushed_reversed(page, served, oracle):
    _, dash = served
    assert dash.spec.view("cmd").y.reverse and not dash.spec.view("cmd").reverse
    top, bottom = scale_pixels(page, "cmd", "y", [-1, 13])
    assert top < bottom  # y reversed: the smallest magnitude at the top
    left, right = scale_pixels(page, "cmd", "x", [-0.5, 3.0])
    assert left < right  # x as usual
    drag(page, "cmd", 0.1, 1.4, 2.3, 8.6)  # snaps to cells
    rect = page.evaluate("window.brushfire.ui.filters.cmd.rect")
    assert rect == {"x": [0.0, below(1.5)], "y": [2.0, below(9.0)]}
    oracle.brush("cmd", tuple(rect["x"]), tuple(rect["y"]))
    assert_views_match(page, oracle, dash)
    assert readout(page, "cmd") == "x 0 – 1.5, y 2 – 9"


# --- item 7: scale to the selection; small shares -------------------------------------


def chart(page, view: str, expr: str):
    return page.evaluate(f"(() => {{ const c = window.brushfire.ui.charts.get('{view}'), v = c.view; return {expr}; }})()")


def test_a_small_selection_scaled_to_the_selection_stays_visible_and_its_share_has_digits(page, served, oracle):
    _, dash = served
    page.evaluate("window.brushfire.ui.setFilters({mag: {interval: [12.5, 13.2]}, parallax: {interval: [0, 0.5]}})")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.parallax")
    oracle.brush("mag", (12.5, 13.2))
    oracle.brush("parallax", (0, 0.5))
    n = sql_count(oracle)
    assert 0 < n < 200 and selected(page) == n
    share = 100 * n / dash.store.n_rows
    status = page.inner_text(".bf-status")
    assert status.startswith(f"{n:,} selected (0.") and "(0.0 %)" not in status, status
    shown_share = float(status.split("(")[1].split(" %")[0])
    assert abs(shown_share - share) / share < 0.05  # two significant digits at least
    # the day view: a few rows a day among ~30: bars of a pixel or two, until scaled
    full_top = chart(page, "day", "v.scale('y').domain()[1]")
    page.click("[data-view=day] [data-action=fit]")
    page.wait_for_function("window.brushfire.ui.charts.get('day').view.signal('fit_domain') !== null")
    lo, hi = chart(page, "day", "v.scale('y').domain()")
    top = max(shown(page, "day"))
    assert lo == 0 and top <= hi < min(2 * top + 1, full_top), (hi, top, full_top)
    height = chart(page, "day", "v.height()")
    tallest = max(b["h"] for b in drawn_items(page, "day")[1])  # the value layer
    assert tallest >= height / 2
    assert page.get_attribute("[data-view=day] [data-action=fit]", "aria-pressed") == "true"
    # a new filter: the scale follows the selection
    page.evaluate("window.brushfire.ui.setFilters({mag: {interval: [12.5, 13.2]}})")
    page.wait_for_function(f"{IDLE} && !window.brushfire.ui.filters.parallax")
    assert chart(page, "day", "v.scale('y').domain()[1]") >= max(shown(page, "day"))
    # all views at once, and back to all rows
    page.check("[data-action=fit-all]")
    page.wait_for_function("[...window.brushfire.ui.charts.values()].every(c => !c.meta.fit || c.view.signal('fit_domain') !== null)")
    assert chart(page, "cmd", "v.scale('color').domain()[1]") <= max(v or 0 for v in shown(page, "cmd")) * 2
    page.uncheck("[data-action=fit-all]")
    page.wait_for_function("[...window.brushfire.ui.charts.values()].every(c => c.view.signal('fit_domain') === null)")
    assert chart(page, "day", "v.scale('y').domain()[1]") == full_top
    oracle.clear("parallax")
    assert_views_match(page, oracle, dash)


# --- item 8: the '(other)' bar; narrow screens ----------------------------------------------


def test_the_other_bar_shows_its_selected_share_and_a_phone_gets_rows(page, served, oracle):
    _, dash = served
    other = chart(page, "nobs", "c.meta.other")
    assert chart(page, "nobs", "c.meta.shape") == "bars" and chart(page, "nobs", "c.meta.other_clipped")
    plot = chart(page, "nobs", "v.height()")

    def other_bar(layer: int, size: str = "h") -> float:  # '(other)' drawn (0: all rows, 1: selected)
        return next(b[size] for b in drawn_items(page, "nobs")[layer] if b["bar"] == other)

    assert other_bar(0) == pytest.approx(plot, abs=1)  # all its rows: the plot's height
    page.evaluate("window.brushfire.ui.setFilters({mag: {interval: [2, 6]}})")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.mag")
    values, full = shown(page, "nobs"), shown(page, "nobs", "full")
    share = values[other] / full[other]
    assert 0.1 < share < 0.9
    assert other_bar(1) == pytest.approx(plot * share, abs=1.5)  # the selected share, visible
    page.click("[data-view=nobs] [data-action=fit]")  # scaled to the selection: still its share
    page.wait_for_function("window.brushfire.ui.charts.get('nobs').view.signal('fit_domain') !== null")
    assert other_bar(0) == pytest.approx(plot, abs=1)
    assert other_bar(1) == pytest.approx(plot * share, abs=1.5)
    oracle.brush("mag", (2, 6))
    assert_views_match(page, oracle, dash)  # the data are the counts; only the drawing scales
    # a phone: 21 rotated labels would crowd; the view is drawn as rows, readable
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_function("window.brushfire.ui.charts.get('nobs').meta.shape === 'rows'")
    assert chart(page, "nobs", "c.variant") == "narrow"
    assert chart(page, "nobs", "v.scale('y').step()") >= 14
    labels = chart(page, "nobs", "v.scale('y').domain()")
    assert labels[-1] == "(other)"
    box = page.locator("[data-view=nobs] canvas").bounding_box()
    card = page.locator("[data-view=nobs]").bounding_box()
    assert box["x"] >= card["x"] and box["x"] + box["width"] <= card["x"] + card["width"] + 1
    assert other_bar(0, "w") == pytest.approx(chart(page, "nobs", "v.width()"), abs=1)
    assert other_bar(1, "w") == pytest.approx(chart(page, "nobs", "v.width()") * share, abs=1.5)
    # picking a row works as on the columns, and equals SQL
    label = labels[1]
    page.locator("[data-view=nobs] canvas").scroll_into_view_if_needed()
    x, y = to_pixel(page, "nobs", 0, label)
    page.mouse.click(x + 3, y)
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.nobs")
    assert page.evaluate("window.brushfire.ui.filters.nobs") == {"values": [int(label)]}
    oracle.select("nobs", [int(label)])
    assert_views_match(page, oracle, dash)
    page.set_viewport_size({"width": 1400, "height": 1100})  # and back to columns
    page.wait_for_function("window.brushfire.ui.charts.get('nobs').meta.shape === 'bars'")
    assert shown(page, "nobs", "sel")[1] is True


# --- item 9: visible help, a legend, a clean header --------------------------------------


def test_the_page_says_how_to_use_it_what_colours_mean_and_keeps_hashes_out_of_the_header(
        chromium, served, page):
    addr, dash = served
    help_text = page.inner_text(".bf-help")
    for words in ("Drag across a chart to brush", "double-click clears", "Shift snaps",
                  "click bars to pick", "Shift-click adds", "drag a box on a heatmap", "× clears",
                  "Show rows", "arrow keys"):
        assert words in help_text, words
    legend = page.eval_on_selector_all(".bf-legend-item", """items => items.map(i => [
        i.textContent, getComputedStyle(i.querySelector('.bf-swatch')).backgroundColor])""")
    from brushfire import marks
    rgb = lambda c: f"rgb({int(c[1:3], 16)}, {int(c[3:5], 16)}, {int(c[5:7], 16)})"  # noqa: E731
    assert legend[:3] == [["all rows", rgb(marks.FULL_COLOR)],
                          ["selected: passing the other charts' filters", rgb(marks.VALUE_COLOR)],
                          ["not picked", rgb(marks.MUTED_COLOR)]]
    assert legend[3][1] == rgb(marks.HIGHLIGHT_COLOR)  # (hovered rows of the details mark bars)
    header = page.inner_text(".bf-header")
    assert not re.search(r"[0-9a-f]{8}", header) and not re.search(r"\d\d:\d\d:\d\d", header), header
    footer = page.inner_text(".bf-footer .bf-version")
    assert re.match(r"^captured \d{4}-\d\d-\d\d \d\d:\d\d UTC · spec [0-9a-f]{8} · ", footer), footer
    # the help hides with its ×, stays hidden on the next visit, and "?" brings it back
    page.click(".bf-help-close")
    assert page.locator(".bf-help").is_hidden()
    page.reload()
    page.wait_for_function("window.brushfire.ready")
    assert page.locator(".bf-help").is_hidden()
    page.click("[data-action=help]")
    assert page.locator(".bf-help").is_visible()


# --- item 10: the spec's layout; actions in reach ----------------------------------------


def test_views_sit_where_the_layout_puts_them_and_the_actions_stay_in_reach(page, served, oracle):
    _, dash = served

    def boxes() -> dict:
        return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('.bf-view')]
            .map(c => [c.dataset.view, (({x, y, width}) => ({x, y, width}))(c.getBoundingClientRect())]))""")

    b = boxes()
    assert b["cmd"]["y"] == b["mag"]["y"] == b["parallax"]["y"]  # one row, left to right
    assert b["cmd"]["x"] < b["mag"]["x"] < b["parallax"]["x"]
    assert b["cluster"]["y"] == b["nobs"]["y"] > b["cmd"]["y"] and b["cluster"]["x"] < b["nobs"]["x"]
    assert b["day"]["y"] > b["cluster"]["y"] and b["day"]["width"] > 2 * b["cluster"]["width"] - 20  # alone in its row
    assert b["dow"]["y"] > b["day"]["y"]  # left out of the layout: after it
    title = page.locator(".bf-section-title")
    assert title.inner_text() == "Who and when"
    assert title.bounding_box()["y"] < b["cluster"]["y"]
    # at the foot of the page, the actions are still at hand; the rows open over the views' foot
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.wait_for_function("window.scrollY > 300")
    assert page.locator(".bf-header").bounding_box()["y"] == 0
    page.click("[data-action=details]")
    page.wait_for_selector(".bf-table tr:nth-child(2)")
    panel = page.locator(".bf-details").bounding_box()
    viewport = page.viewport_size
    assert panel["y"] >= viewport["height"] * 0.5 and panel["y"] + panel["height"] <= viewport["height"] + 1
    assert f"of {dash.store.n_rows:,}" in page.inner_text(".bf-details-info")
    page.click(".bf-details-close")
    assert page.locator(".bf-details").is_hidden()
    # a phone: each row's views stack
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_function("""() => { const r = (n) => document.querySelector(`[data-view=${n}]`).getBoundingClientRect();
        return r('mag').y > r('cmd').y && r('parallax').y > r('mag').y; }""")
    b = boxes()
    assert abs(b["cmd"]["x"] - b["mag"]["x"]) < 1 and b["cmd"]["width"] > 300


# --- item 11: a searchable (and multi-select) parameter picker; a sortable details table ----


def test_a_long_parameter_is_searchable_and_a_multiple_one_picks_several(page, served, oracle):
    _, dash = served
    box = page.locator("input[name=in_cluster]")
    assert box.get_attribute("role") == "combobox"
    box.click()  # 1,400 values: the first listed, the rest a search away
    assert "more: type to narrow" in page.inner_text("[data-parameter=in_cluster] .bf-picker-more")
    box.fill("uster-139")
    options = page.eval_on_selector_all("[data-parameter=in_cluster] [role=option]", "os => os.map(o => o.textContent)")
    assert options[0] == "(all)" and sorted(options[1:]) == [f"cluster-139{i}" for i in range(10)]
    for _ in range(3):
        page.keyboard.press("ArrowDown")  # (all), then the first two found
    page.keyboard.press("Enter")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.in_cluster")
    assert page.evaluate("window.brushfire.ui.filters.in_cluster") == {"parameter": options[2]}
    assert box.input_value() == options[2] and box.get_attribute("aria-expanded") == "false"
    oracle.set_parameter("in_cluster", options[2])
    assert_views_match(page, oracle, dash)
    page.click("[data-parameter=in_cluster] .bf-reset")
    page.wait_for_function(f"{IDLE} && !window.brushfire.ui.filters.in_cluster")
    oracle.clear("in_cluster")
    # several surveys: typed and picked with Enter, shown as chips; Backspace drops the last
    many = page.locator("input[name=surveys]")
    many.click()
    many.fill("GAI")
    page.keyboard.press("Enter")
    many.fill("ss")  # sdss and 2mass: Enter picks the first listed
    page.keyboard.press("Enter")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.surveys?.parameter?.length === 2")
    picked = page.evaluate("window.brushfire.ui.filters.surveys.parameter")
    values = dash.store.parameter_domain("surveys")[1]
    first_ss = next(v for v in values if "ss" in v)
    assert sorted(picked) == sorted(["gaia", first_ss])
    assert page.eval_on_selector_all("[data-parameter=surveys] .bf-chip", "cs => cs.length") == 2
    oracle.set_parameter("surveys", picked)
    assert_views_match(page, oracle, dash)
    page.keyboard.press("Backspace")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.surveys?.parameter?.length === 1")
    assert page.evaluate("window.brushfire.ui.filters.surveys.parameter") == [picked[0]]


def test_the_details_table_sorts_all_the_selected_rows_by_a_column(page, served, oracle, stars_parquet):
    import duckdb
    import numpy as np
    import pyarrow as pa

    _, dash = served
    drag(page, "mag", 2, 9)
    lo, hi = page.evaluate("window.brushfire.ui.filters.mag.interval")
    oracle.brush("mag", (lo, hi))
    src = pq.read_table(stars_parquet)
    con = duckdb.connect()
    con.register("src", src.append_column("rid", pa.array(np.arange(src.num_rows))))

    def want(order: str, offset: int = 0) -> list[int]:
        q = f"SELECT rid FROM src WHERE {oracle.where(None)} ORDER BY {order} LIMIT 20 OFFSET {offset}"
        return [r[0] for r in con.sql(q).fetchall()]

    def rids() -> list[int]:
        return page.eval_on_selector_all(".bf-table tr[data-rid]", "trs => trs.map(tr => +tr.dataset.rid)")

    page.click("[data-action=details]")
    page.wait_for_selector(".bf-table tr:nth-child(2)")
    assert rids() == want("rid")
    for order, sort in [("parallax ASC NULLS LAST, rid", "ascending"), ("parallax DESC NULLS LAST, rid", "descending")]:
        page.click(".bf-table th button[data-sort=parallax]")
        page.wait_for_function(f"document.querySelector('.bf-table th:nth-child(4)').getAttribute('aria-sort') === '{sort}'")
        assert rids() == want(order), order
    page.click(".bf-table th button[data-sort=t]")
    page.wait_for_function("document.querySelector('.bf-table th:nth-child(6)').getAttribute('aria-sort') === 'ascending'")
    assert rids() == want("t ASC NULLS LAST, rid")
    page.click("text=Next ›")  # the next page continues the order
    page.wait_for_function("document.querySelector('.bf-details-info').textContent.startsWith('rows 21')")
    assert rids() == want("t ASC NULLS LAST, rid", 20)
    page.click(".bf-table th button[data-sort=rid]")
    page.wait_for_function("document.querySelector('.bf-table th:nth-child(1)').getAttribute('aria-sort') === 'ascending'")
    assert rids() == want("rid")


# --- item 12: a view as PNG or SVG; a link to the selection ----------------------------------


def test_a_view_saves_as_png_or_svg_and_a_link_to_the_selection_copies(chromium, served, page, tmp_path):
    addr, dash = served
    state = {"mag": {"interval": [2, 6]}, "cluster": {"values": ["cluster-0001"]}}
    page.evaluate(f"window.brushfire.ui.setFilters({json.dumps(state)})")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.cluster")
    page.click("[data-view=mag] [data-action=export]")
    with page.expect_download() as png:
        page.click("[data-view=mag] [data-format=png]")
    assert png.value.suggested_filename == "analyst-mag.png"
    png.value.save_as(tmp_path / "mag.png")
    data = (tmp_path / "mag.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    canvas = page.evaluate("window.brushfire.ui.charts.get('mag').view.container().querySelector('canvas').width")
    assert width >= 2 * canvas * 0.9 and height > 2 * 100  # twice the pixels, with the heading
    page.click("[data-view=mag] [data-action=export]")
    with page.expect_download() as svg:
        page.click("[data-view=mag] [data-format=svg]")
    assert svg.value.suggested_filename == "analyst-mag.svg"
    svg.value.save_as(tmp_path / "mag.svg")
    text = (tmp_path / "mag.svg").read_text()
    import xml.etree.ElementTree as ET
    root = ET.fromstring(text)  # well-formed
    assert root.tag.endswith("svg") and "Magnitude · 2 – 6" in text
    assert text.count("<path") + text.count("<rect") > 30  # the bars are drawn
    # copy link: the address of this selection (no token), which opens the same selection
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=f"http://{addr}")
    page.click("[data-action=copy-link]")
    page.wait_for_function("document.querySelector('[data-action=copy-link]').textContent.startsWith('Link copied')")
    link = page.evaluate("navigator.clipboard.readText()")
    assert link.startswith(f"http://{addr}/?dashboard=analyst#filters=") and "token" not in link
    assert json.loads(unquote(link.split("#filters=", 1)[1])) == state
    with open_page(chromium, addr, "analyst", "copied-link", hash=link.split("?dashboard=analyst", 1)[1]) as other:
        other.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.cluster")
        assert other.evaluate("window.brushfire.ui.filters") == state
        assert selected(other) == selected(page)
