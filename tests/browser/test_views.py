"""The views as analysts read them (issue 17), on the `stars` dashboard: heatmaps with
blank empty cells, square-ish cells, a reversed axis and a log colour scale; a 1,000-value
categorical as scrolling rows with a top-N control; brushes drawn for filters set
elsewhere; keyboard brushing (checked against SQL); formatted details and sliders; the
layout following the window; the favicon."""

from __future__ import annotations

import json
import math
import re
from urllib.parse import quote, unquote

import httpx
import numpy as np
import pytest

from bars import sql_count
from oracle import Oracle
from pages import (
    IDLE,
    assert_views_match,
    brush_pixels,
    drag,
    drawn_items,
    formatted,
    scale_pixels,
    selected,
    shown,
    to_pixel,
)

pytestmark = pytest.mark.spark


@pytest.fixture
def oracle(served_stars):
    return Oracle(served_stars[1].spec)


def chart_eval(page, view: str, body: str):
    """Evaluate `body` (an expression of `c`, the view's Chart, and `v`, its Vega view)."""
    return page.evaluate(f"(name) => {{ const c = window.brushfire.ui.charts.get(name); const v = c.view; return {body}; }}", view)


def test_heatmaps_leave_empty_cells_blank_with_square_cells_and_whole_pixel_edges(stars_page, served_stars):
    page, (_, dash) = stars_page, served_stars
    for name in ("cmd", "obs"):
        values = shown(page, name)
        (cells,) = drawn_items(page, name)
        empty = {i for i, v in enumerate(values) if v is None or v == 0}
        assert empty and {c["bar"] for c in cells} == set(range(len(values))) - empty, name
        widths = [c["w"] for c in cells]
        heights = [abs(c["h"]) for c in cells]
        assert 0.5 < np.median(widths) / np.median(heights) < 2, name  # square-ish cells
        # cell edges on whole pixels: no anti-aliased hairlines between neighbours
        assert all(float(c["x"]).is_integer() and float(c["y"]).is_integer() for c in cells), name
    # the colour-magnitude diagram: y reversed (bright stars on top), log colour, viridis
    top, bottom = scale_pixels(page, "cmd", "y", [0, 10])
    assert top < bottom
    assert chart_eval(page, "cmd", "v.scale('color').type").endswith("log")
    assert chart_eval(page, "cmd", "v.height()") >= 400  # 141 y-bins get room
    assert dash.spec.view("cmd").reverse == ["y"]
    # the tooltip of a cell: its bins and counts, written when it shows
    values = shown(page, "cmd")
    i = max(range(len(values)), key=lambda j: values[j] or 0)
    (x0, x1), (y0, y1) = dash.store.view("cmd").labels[i]
    page.mouse.move(*to_pixel(page, "cmd", (x0 + x1) / 2, (y0 + y1) / 2), steps=3)
    page.wait_for_selector("#vg-tooltip-element.visible")
    tip = page.eval_on_selector_all("#vg-tooltip-element td", "tds => tds.map(td => td.textContent)")
    assert tip[:4] == ["cell", f"color {x0:g} – {x1:g}, mag {y0:g} – {y1:g}", "rows, selected", f"{values[i]:,}"], tip


def test_a_thousand_categories_are_rows_with_a_top_n_control_and_picking_works(stars_page, served_stars, oracle):
    page, (_, dash) = stars_page, served_stars
    labels = dash.store.view("cluster").labels
    assert len(labels) == 1001 and labels[-1] == "(other)"
    assert chart_eval(page, "cluster", "c.meta.shape") == "rows"
    rows = drawn_items(page, "cluster")[1]  # the value layer: top 30 and '(other)'
    assert sorted(r["bar"] for r in rows) == [*range(30), 1000]
    assert min(abs(a["y"] - b["y"]) for a in rows for b in rows if a is not b) >= 14  # readable
    page.select_option("[data-view=cluster] select.bf-top", "1000")
    page.wait_for_function("window.brushfire.ui.charts.get('cluster').view.signal('top_shown') === 1000")
    assert len(drawn_items(page, "cluster")[1]) == 1001
    assert chart_eval(page, "cluster", "c.body.scrollHeight > c.body.clientHeight + 1000")  # scrolls
    # picking a row filters the other views as SQL does
    x, y = to_pixel(page, "cluster", 1, labels[3])
    page.mouse.click(x, y)
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.cluster")
    assert page.evaluate("window.brushfire.ui.filters.cluster") == {"values": [labels[3]]}
    assert page.inner_text("[data-view=cluster] .bf-view-filter") == labels[3]
    oracle.select("cluster", [labels[3]])
    assert_views_match(page, oracle, dash)
    sel = shown(page, "cluster", "sel")
    assert sel[3] is True and sel[0] is False


def test_the_keyboard_moves_and_resizes_brushes_and_the_views_equal_sql(stars_page, served_stars, oracle):
    page, (_, dash) = stars_page, served_stars
    for body in page.query_selector_all(".bf-chart"):  # every view: a title and a description
        assert body.get_attribute("tabindex") == "0"
        for attr in ("aria-labelledby", "aria-describedby"):
            assert page.inner_text(f"#{body.get_attribute(attr)}").strip(), attr
    page.focus("[data-view=mag] .bf-chart")
    page.keyboard.press("ArrowRight")  # a first brush: the first bin
    for _ in range(3):
        page.keyboard.press("ArrowRight")  # one bin to the right, each
    for _ in range(2):
        page.keyboard.press("Shift+ArrowRight")  # one bin wider, each
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.mag")
    # whole bins, exactly: up to just below the next bin's start
    assert page.evaluate("window.brushfire.ui.filters.mag") == {"interval": [0.5, math.nextafter(2.0, 0)]}
    assert brush_pixels(page, "mag")["x"] == pytest.approx(scale_pixels(page, "mag", "x", [0.5, 2.0]), abs=0.01)
    # the heatmap's rect brush (its y axis reversed: larger magnitudes further down): a
    # first cell at the bottom left, right by one, up by 40 cells, then Shift moves its
    # far (larger) edge down on screen by 3
    page.focus("[data-view=cmd] .bf-chart")
    for key in ["ArrowRight"] * 2 + ["ArrowUp"] * 40 + ["Shift+ArrowDown"] * 3:
        page.keyboard.press(key)
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.cmd")
    rect = page.evaluate("window.brushfire.ui.filters.cmd.rect")
    (xlo, xhi), (ylo, yhi) = rect["x"], rect["y"]
    assert (xlo, xhi) == pytest.approx((-0.45, -0.4)) and (ylo, yhi) == pytest.approx((9.0, 9.4))
    oracle.brush("mag", (0.5, math.nextafter(2.0, 0)))
    oracle.brush("cmd", (xlo, xhi), (ylo, yhi))
    assert_views_match(page, oracle, dash)
    assert selected(page) == sql_count(oracle)
    # Escape clears the focused view's brush
    page.keyboard.press("Escape")
    page.wait_for_function(f"{IDLE} && !window.brushfire.ui.filters.cmd")
    assert brush_pixels(page, "cmd")["x"] in ([0, 0], [])
    oracle.clear("cmd")
    assert_views_match(page, oracle, dash)


def test_filters_set_elsewhere_are_drawn_and_clear_all_removes_them(stars_page, served_stars, oracle):
    page, (_, dash) = stars_page, served_stars
    page.evaluate("() => { window.views0 = [...window.brushfire.ui.charts.values()].map(c => c.view); }")
    labels = dash.store.view("cluster").labels
    # as the Jupyter widget's Python side sets them (attached to a server)
    page.evaluate("""(label) => window.brushfire.ui.setFilters({mag: {interval: [2, 6]},
        cmd: {rect: {x: [0.5, 1.5], y: [2, 8]}}, cluster: {values: [label]}, min_parallax: {parameter: 1.5}})""",
                  labels[2])
    page.wait_for_function(IDLE)
    assert brush_pixels(page, "mag")["x"] == pytest.approx(scale_pixels(page, "mag", "x", [2, 6]), abs=0.01)
    cmd = brush_pixels(page, "cmd")
    assert cmd["x"] == pytest.approx(scale_pixels(page, "cmd", "x", [0.5, 1.5]), abs=0.01)
    assert sorted(cmd["y"]) == pytest.approx(sorted(scale_pixels(page, "cmd", "y", [2, 8])), abs=0.01)
    assert [i for i, s in enumerate(shown(page, "cluster", "sel")) if s] == [2]
    assert page.inner_text("[data-view=mag] .bf-view-filter") == "2 – 6"
    assert page.input_value("input[name=min_parallax]") == "1.5"
    assert page.inner_text(".bf-parameter .bf-readout") == "≥ 1.5"
    oracle.brush("mag", (2, 6))
    oracle.brush("cmd", (0.5, 1.5), (2, 8))
    oracle.select("cluster", [labels[2]])
    oracle.set_parameter("min_parallax", 1.5)
    assert_views_match(page, oracle, dash)
    # a state the session's owner changed (the kernel's widget; a restored session)
    page.evaluate("""async () => {
        const c = window.brushfire.connection;
        await c.request({type: 'brush', view: 'parallax', interval: [1, 4]});
        await window.brushfire.ui.applyState(await c.request({type: 'state'}));
    }""")
    assert brush_pixels(page, "parallax")["x"] == pytest.approx(scale_pixels(page, "parallax", "x", [1, 4]), abs=0.01)
    oracle.brush("parallax", (1, 4))
    assert_views_match(page, oracle, dash)
    # clear all: every brush and pick gone, nothing re-embedded
    page.click("[data-action=clear-all]")
    page.wait_for_function(f"{IDLE} && Object.keys(window.brushfire.ui.filters).length === 0")
    for name in ("mag", "cmd", "parallax", "month"):
        assert brush_pixels(page, name)["x"] in ([0, 0], []), name
    assert set(shown(page, "cluster", "sel")) == {None}
    assert page.evaluate("[...window.brushfire.ui.charts.values()].every((c, i) => c.view === window.views0[i])")
    assert page.inner_text(".bf-parameter .bf-readout") == "all"


def test_filters_in_the_address_are_restored_drawn_and_kept(stars_page_at, served_stars, oracle):
    _, dash = served_stars
    filters = {"mag": {"interval": [1, 7.5]}, "cmd": {"rect": {"x": [0.3, 1.6], "y": [2, 9]}},
               "survey": {"parameter": "gaia"}}
    with stars_page_at(f"#filters={quote(json.dumps(filters))}") as page:
        page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.survey?.parameter === 'gaia'")
        assert page.evaluate("window.brushfire.ui.filters") == filters
        assert brush_pixels(page, "mag")["x"] == pytest.approx(scale_pixels(page, "mag", "x", [1, 7.5]), abs=0.01)
        assert page.input_value("select[name=survey]") == "gaia"
        oracle.brush("mag", (1, 7.5))
        oracle.brush("cmd", (0.3, 1.6), (2, 9))
        oracle.set_parameter("survey", "gaia")
        assert_views_match(page, oracle, dash)
        page.focus("[data-view=mag] .bf-chart")
        page.keyboard.press("Escape")  # the address follows the filters
        page.wait_for_function("!decodeURIComponent(location.hash).includes('\"mag\"')")
        assert json.loads(unquote(page.evaluate("location.hash").split("=", 1)[1])) == {
            k: v for k, v in filters.items() if k != "mag"}
        drag(page, "parallax", 1, 4)  # a new brush: the address follows after a pause
        page.wait_for_function("decodeURIComponent(location.hash).includes('\"parallax\"')")
        shared = page.evaluate("location.hash")
        bars = {v.name: shown(page, v.name) for v in dash.spec.views}
        state = page.evaluate("window.brushfire.ui.filters")
    with stars_page_at(shared) as again:  # a reload, or the link shared
        again.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.parallax")
        assert again.evaluate("window.brushfire.ui.filters") == state
        assert {v.name: shown(again, v.name) for v in dash.spec.views} == bars


def test_details_and_sliders_show_numbers_by_type(stars_page, served_stars, oracle):
    page, (_, dash) = stars_page, served_stars
    slider = "input[name=min_parallax]"
    lo, _ = dash.store.parameter_domain("min_parallax")[1]
    # inactive: greyed, "all", its thumb where every row passes (a `gte` slider: its minimum)
    assert "bf-inactive" in page.get_attribute(slider, "class")
    assert float(page.input_value(slider)) == pytest.approx(lo)
    assert page.inner_text(".bf-parameter .bf-readout") == "all"
    page.eval_on_selector(slider, "e => { e.value = '2.5'; e.dispatchEvent(new Event('input')); }")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.min_parallax?.parameter === 2.5")
    assert page.inner_text(".bf-parameter .bf-readout") == "≥ 2.5"
    assert "bf-inactive" not in page.get_attribute(slider, "class")
    oracle.set_parameter("min_parallax", 2.5)
    assert_views_match(page, oracle, dash)
    page.click("[data-action=details]")
    page.wait_for_selector(".bf-table tr:nth-child(2)")
    cells = page.eval_on_selector_all(
        ".bf-table tr", "trs => trs.slice(1).map(tr => [...tr.children].map(td => td.textContent))")
    columns = ["color", "mag", "parallax", "cluster", "t", "n_obs"]
    allowed = {tuple(formatted(v) for v in row) for row in oracle.rows(columns, oracle.where(None))}
    for row in cells:
        assert tuple(row[1:]) in allowed, row
        assert all(len(re.sub("[^0-9]", "", c).lstrip("0")) <= 9 for c in row[1:4]), row  # float32: <= 9 digits
    assert any("," in row[6] for row in cells)  # thousands separators
    assert all(len(row[5]) == 16 for row in cells)  # "2019-03-05 14:00"
    # the reset button makes the slider inactive again
    page.click(".bf-parameter .bf-reset")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.min_parallax === undefined")
    assert page.inner_text(".bf-parameter .bf-readout") == "all"


def test_views_fill_their_cards_and_follow_the_window(stars_page, served_stars):
    page, (addr, _) = stars_page, served_stars

    def layout():
        return page.evaluate("""() => [...window.brushfire.ui.charts.values()].map(c => ({
            card: c.body.clientWidth, canvas: c.body.querySelector('canvas').getBoundingClientRect().width,
            left: Math.round(c.card.getBoundingClientRect().left)}))""")

    def columns():
        return len({v["left"] for v in layout()})

    assert columns() == 3
    for v in layout():
        assert abs(v["canvas"] - v["card"]) <= 2, v  # a view takes its card's width
    page.evaluate("window.brushfire.ui.setFilters({mag: {interval: [2, 6]}})")
    page.wait_for_function(IDLE)
    page.set_viewport_size({"width": 700, "height": 1100})
    page.wait_for_function("""() => [...window.brushfire.ui.charts.values()].every(c =>
        Math.abs(c.body.querySelector('canvas').getBoundingClientRect().width - c.body.clientWidth) <= 2)""")
    assert columns() == 1
    # the brush stays on its data interval at the new size
    assert brush_pixels(page, "mag")["x"] == pytest.approx(scale_pixels(page, "mag", "x", [2, 6]), abs=0.01)
    assert page.evaluate("window.brushfire.ui.filters.mag") == {"interval": [2, 6]}
    page.set_viewport_size({"width": 1400, "height": 1100})
    page.wait_for_function("new Set([...window.brushfire.ui.charts.values()].map(c => Math.round(c.card.getBoundingClientRect().left))).size === 3")
    # the favicon is served (the page fixture also fails on any resource that did not load)
    reply = httpx.get(f"http://{addr}/favicon.ico")
    assert reply.status_code == 200 and reply.content[:4] == b"\0\0\1\0"
