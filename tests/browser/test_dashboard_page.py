"""The web dashboard in a real browser: drag brushes and click bars with the mouse, then
check that what the views draw equals what DuckDB's SQL returns for the filters the page
sent. Screenshots of every test end up in build/screenshots/."""

from __future__ import annotations

from datetime import datetime

import pytest

from bars import sql_count, sql_values
from oracle import Oracle
from pages import IDLE, assert_views_match, drag, formatted, selected, shown, to_pixel

pytestmark = pytest.mark.spark


def test_dragging_a_histogram_brush_filters_the_other_views_as_sql_does(page, served, oracle):
    _, dash = served
    drag(page, "hx", 20, 55)
    lo, hi = page.evaluate("window.brushfire.ui.filters.hx.interval")
    assert 18 < lo < 22 and 53 < hi < 57  # where the mouse went, in data units
    assert page.evaluate("window.brushfire.ui.metrics.length") > 3  # bars followed the drag
    oracle.brush("hx", (lo, hi))
    assert_views_match(page, oracle, dash)
    assert selected(page) == sql_count(oracle)
    assert f"{sql_count(oracle):,} selected" in page.inner_text(".bf-status")
    assert "last brush:" in page.inner_text(".bf-latency")
    # the full-data bars stay behind the filtered ones
    assert shown(page, "cat", "full") == sql_values(Oracle(dash.spec), dash, "cat")


def test_click_and_shift_click_select_categorical_bars(page, served, oracle):
    _, dash = served
    labels = dash.store.view("cat").labels
    full = shown(page, "cat", "full")
    x, y = to_pixel(page, "cat", labels[0], full[0] / 2)  # halfway up each bar
    page.mouse.click(x, y)
    page.wait_for_function(IDLE)
    x, y = to_pixel(page, "cat", labels[2], full[2] / 2)
    page.keyboard.down("Shift")
    page.mouse.click(x, y)
    page.keyboard.up("Shift")
    page.wait_for_function(IDLE)
    assert sorted(page.evaluate("window.brushfire.ui.filters.cat.values")) == sorted([labels[0], labels[2]])
    oracle.select("cat", [labels[0], labels[2]])
    assert_views_match(page, oracle, dash)
    assert selected(page) == sql_count(oracle)


def test_rect_brush_on_the_heatmap_and_a_temporal_brush(page, served, oracle):
    _, dash = served
    drag(page, "heat", 10, 80, 0, 90)
    rect = page.evaluate("window.brushfire.ui.filters.heat.rect")
    (xlo, xhi), (ylo, yhi) = rect["x"], rect["y"]
    assert xlo < xhi and ylo < yhi
    oracle.brush("heat", (xlo, xhi), (ylo, yhi))
    start = datetime.fromisoformat(dash.store.view("week").labels[3]).timestamp() * 1000
    end = datetime.fromisoformat(dash.store.view("week").labels[9]).timestamp() * 1000
    drag(page, "week", start, end)
    tlo, thi = page.evaluate("window.brushfire.ui.filters.week.interval")
    assert tlo.startswith("2021-") and thi > tlo  # ISO instants
    oracle.brush("week", (tlo, thi))
    assert_views_match(page, oracle, dash)
    assert selected(page) == sql_count(oracle)


def _texts(page, view: str) -> list[str]:
    """Every text the view's Vega scene draws (axis and legend labels, titles)."""
    return page.evaluate("""(name) => { const out = [];
        const walk = (n) => { if (n.marktype === 'text') (n.items || []).forEach(i => out.push(String(i.text)));
                              (n.items || []).forEach(i => (i.items || []).forEach(walk)); };
        walk(window.brushfire.ui.charts.get(name).view.scenegraph().root); return out; }""", view)


def test_an_empty_heatmap_has_no_nan_in_its_legend(page, served):
    """A brush selecting no row leaves every heatmap cell blank: its colour scale has no
    domain, which Vega labels NaN; the legend then has no labels."""
    page.evaluate("window.brushfire.ui.setFilters({hx: {interval: [5, 5]}})")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.hx !== undefined")
    assert selected(page) == 0
    assert not any("NaN" in t for t in _texts(page, "heat"))
    page.evaluate("window.brushfire.ui.setFilters({})")
    page.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.hx === undefined")
    labels = _texts(page, "heat")
    assert labels[-1] == "rows" and labels[-2].isdigit()  # the legend's labels, then its title


def test_parameter_dropdown_and_clear_all(page, served, oracle):
    _, dash = served
    page.select_option("select[name=dest]", "CCC")
    page.wait_for_function(IDLE)
    drag(page, "hx", 30, 70)
    lo, hi = page.evaluate("window.brushfire.ui.filters.hx.interval")
    oracle.set_parameter("dest", "CCC")
    oracle.brush("hx", (lo, hi))
    assert_views_match(page, oracle, dash)
    page.click("[data-action=clear-all]")
    page.wait_for_function(f"{IDLE} && Object.keys(window.brushfire.ui.filters).length === 0")
    oracle.clear()
    assert_views_match(page, oracle, dash)
    assert page.eval_on_selector("select[name=dest]", "e => e.value") == ""
    assert page.evaluate("window.brushfire.ui.charts.get('hx').view.signal('brush')") in ({}, None)


def test_a_brush_after_the_connection_closed_says_so_and_never_waits(page):
    """A closed WebSocket drops what is sent: a brush after the server went away waited
    for its answer for ever ("waiting for the answer… 12.0 s", the page busy)."""
    page.evaluate("window.brushfire.connection.close()")
    page.wait_for_selector("text=Disconnected from the server")
    drag(page, "hx", 30, 70)
    page.wait_for_function(IDLE, timeout=5_000)
    assert "not connected to the server" in page.evaluate("window.brushfire.ui.latencyLine.textContent")
    reply = page.evaluate("window.brushfire.connection.request({type: 'state'})")
    assert reply["type"] == "error" and "reload to reconnect" in reply["message"]


def test_hovering_a_source_bar_highlights_its_share_of_the_targets(page, served, oracle):
    _, dash = served
    drag(page, "hx", 10, 90)  # highlights show within the current filters
    lo, hi = page.evaluate("window.brushfire.ui.filters.hx.interval")
    oracle.brush("hx", (lo, hi))
    label = dash.store.view("cat").labels[1]
    x, y = to_pixel(page, "cat", label, max(shown(page, "cat")) / 20)
    page.mouse.move(x, y)
    page.wait_for_function("window.brushfire.ui.metrics.some(m => m.type === 'highlight')")
    want = sql_values(oracle, dash, "hx", extra=f"cat = '{label}'")
    assert shown(page, "hx", "hl") == want
    page.mouse.move(5, 5)  # leaving the bar removes the highlight
    page.wait_for_function("window.brushfire.ui.charts.get('hx').view.data('bars').every(r => r.hl === null)")


def test_details_table_pages_through_the_selected_rows(page, served, oracle):
    _, dash = served
    drag(page, "hx", 40, 60)
    lo, hi = page.evaluate("window.brushfire.ui.filters.hx.interval")
    oracle.brush("hx", (lo, hi))
    page.click("[data-action=details]")
    page.wait_for_selector(".bf-table tr:nth-child(2)")
    total = sql_count(oracle)
    assert f"of {total:,}" in page.inner_text(".bf-details-info")
    columns = ["x", "cat", "k", "m"]
    allowed = oracle.rows(columns, oracle.where(None))
    assert total > 40
    pages = [table_rows(page)]
    page.click("text=Next ›")
    page.wait_for_function("document.querySelector('.bf-details-info').textContent.startsWith('rows 21')")
    pages.append(table_rows(page))
    assert [len(p) for p in pages] == [20, 20]
    rids = [r[0] for p in pages for r in p]
    assert len(set(rids)) == len(rids)  # the second page continues, it does not repeat
    allowed_text = {tuple(formatted(v) for v in row) for row in allowed}
    for row in (r for p in pages for r in p):
        assert tuple(row[1:]) in allowed_text, row


def test_download_rows_saves_the_rows_behind_the_selection(page, served, oracle, tmp_path):
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    _, dash = served
    drag(page, "hx", 30, 45)
    lo, hi = page.evaluate("window.brushfire.ui.filters.hx.interval")
    oracle.brush("hx", (lo, hi))
    with page.expect_download() as download:
        page.click("[data-action=download]")
    assert download.value.suggested_filename == "browse-rows.csv"
    download.value.save_as(tmp_path / "rows.csv")
    rows = pcsv.read_csv(tmp_path / "rows.csv")
    assert rows.num_rows == sql_count(oracle) > 0 and rows.column_names[0] == "rid"
    page.select_option("select.bf-format", "parquet")
    with page.expect_download() as download:
        page.click("[data-action=download]")
    download.value.save_as(tmp_path / "rows.parquet")
    assert pq.read_table(tmp_path / "rows.parquet")["rid"].to_pylist() == rows["rid"].to_pylist()


def table_rows(page) -> list[list[str]]:
    return page.eval_on_selector_all(
        ".bf-table tr", "trs => trs.slice(1).map(tr => [...tr.children].map(td => td.textContent))")


def test_record_downloads_a_trace_the_harness_replays(page, served, tmp_path):
    from brushfire.bench.trace import load_trace

    _, dash = served
    page.select_option("select[name=dest]", "CCC")  # the trace starts from this state
    page.wait_for_function(IDLE)
    page.click("[data-action=record]")
    drag(page, "hx", 20, 50, steps=5)
    page.select_option("select[name=dest]", "BBB")
    page.wait_for_function(IDLE)
    with page.expect_download() as download:
        page.click("[data-action=record]")  # stop: the trace downloads
    path = tmp_path / "session.json"
    download.value.save_as(path)
    trace = load_trace(path)  # the harness's own validation: format, times, messages
    assert trace.dashboard == "browse" and trace.state == {"dest": {"parameter": "CCC"}}
    kinds = [e.message["type"] for e in trace.events]
    assert kinds.count("brush") >= 2 and kinds[-1] == "parameter"
    assert [e.t for e in trace.events] == sorted(e.t for e in trace.events)
    last_brush = [e.message for e in trace.events if e.message["type"] == "brush"][-1]
    assert last_brush["interval"] == page.evaluate("window.brushfire.ui.filters.hx.interval")

def test_each_view_says_which_rows_it_does_not_show(page, served, oracle):
    """Caveats: the note under each view counts, as SQL does under the view's filters, the
    rows it does not show and why; clamped edge bars carry a marker whose tooltip says how
    many rows were clamped into them; an order statistic's tooltip gives the bar's rows."""
    _, dash = served
    page.select_option("select[name=dest]", "BBB")
    page.wait_for_function(IDLE)
    drag(page, "week", *[datetime.fromisoformat(dash.store.view("week").labels[i]).timestamp() * 1000
                         for i in (2, 8)])
    tlo, thi = page.evaluate("window.brushfire.ui.filters.week.interval")
    oracle.set_parameter("dest", "BBB")
    oracle.brush("week", (tlo, thi))
    for v in dash.spec.views:
        texts = page.evaluate(f"window.brushfire.ui.charts.get('{v.name}').meta.caveats")
        want = sorted(f"{n:,} row{'' if n == 1 else 's'} {texts[r]}"
                      for r, n in oracle.caveats(v.name).items() if r in texts)
        shown = page.inner_text(f"[data-view={v.name}] .bf-caveats").strip()
        assert sorted(filter(None, shown.split(" · "))) == want, v.name
    clamped = oracle.caveats("hx")
    assert clamped.get("clamped_below") and clamped.get("clamped_above")
    marks = page.evaluate("window.brushfire.ui.charts.get('hx').view.data('bars')"
                          ".filter(r => r.clamp > 0).map(r => [r.bar, r.clamp])")
    assert marks == [[0, clamped["clamped_below"]], [9, clamped["clamped_above"]]]
    tip = page.evaluate("window.brushfire.ui.charts.get('hx').tooltip(0)")
    assert "clamped here" in tip and f"{clamped['clamped_below']:,} rows x below 0" in tip
    counts = page.evaluate("window.brushfire.ui.charts.get('med_m').counts")
    tip = page.evaluate("window.brushfire.ui.charts.get('med_m').tooltip(0)")
    assert f"rows, selected</td><td class=\"value\">{counts[0]:,}" in tip
