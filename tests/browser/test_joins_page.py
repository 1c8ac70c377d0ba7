"""Lineage through joins in the page (issue 34): on a star schema, the details panel lists
the rows of a joined table behind the selection, each with how many of the source's rows
reach it, as DuckDB's LEFT JOIN counts them; hovering one marks the bars of its rows."""

from __future__ import annotations

import json
from urllib.parse import quote

import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from browser.conftest import open_page
from brushfire import Dashboard
from brushfire.engine.dimensions import dimension_forward
from brushfire.server import create_app
from brushfire.spec import parse_dashboard
from live_server import live_server
from oracle import Oracle
from pages import IDLE, drag
from star_schemas import BIG_KEYS, make_big_keys, make_star, open_big_keys, star_spec, write_star

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def served_star(spark, tmp_path_factory):
    folder = tmp_path_factory.mktemp("star")
    fact, dims = make_star(4000, seed=5)
    write_star(folder, fact, dims)
    dash = Dashboard.open(parse_dashboard(star_spec(folder)), spark=spark,
                          cache_dir=tmp_path_factory.mktemp("cache"))
    with live_server(create_app([dash])) as addr:
        yield addr, dash


def brush_and_show_rows(page, oracle: Oracle) -> None:
    """Brush amount over the first 80 pixels (the oracle too) and open the rows panel."""
    drag(page, "amount", 0, 80)
    lo, hi = page.evaluate("window.brushfire.ui.filters.amount.interval")
    oracle.brush("amount", (lo, hi))
    page.click("[data-action=details]")
    page.wait_for_selector(".bf-table tr[data-rid]")


def test_the_rows_of_a_joined_table_behind_the_selection_and_their_bars(chromium, served_star, request):
    addr, dash = served_star
    oracle = Oracle(dash.spec)
    with open_page(chromium, addr, "star", request.node.name) as page:
        brush_and_show_rows(page, oracle)
        assert page.eval_on_selector_all(".bf-rows-of option", "os => os.map(o => o.value)") == \
            ["", "store", "region", "item"]
        page.select_option(".bf-rows-of", "store")
        page.wait_for_selector(".bf-table tr[data-key]")
        head = page.eval_on_selector_all(".bf-table th", "ths => ths.map(th => th.textContent)")
        assert head == ["store.store_id", "store.city", "rows"]
        key = '"store.store_id"'
        where = oracle.where(None)
        want = oracle.con.execute(f"SELECT {key}, count(*) AS n FROM src WHERE {where} AND {key} IS NOT NULL "
                                  f"GROUP BY {key} ORDER BY n DESC, {key}").fetchall()
        unmatched = oracle.con.execute(f"SELECT count(*) FROM src WHERE {where} AND {key} IS NULL").fetchone()[0]
        got = page.eval_on_selector_all(".bf-table tr[data-key]", """trs => trs.map(tr =>
            [JSON.parse(tr.dataset.key), +tr.lastElementChild.textContent.replace(/,/g, '')])""")
        assert [tuple(r) for r in got] == [tuple(r) for r in want[:50]]  # (the first page: 50 rows)
        info = page.inner_text(".bf-details-info")
        assert f"of {len(want):,}" in info and f"{unmatched:,} selected rows without one" in info, info

        page.hover(".bf-table tr[data-key]:nth-child(3) td:nth-child(2)")  # (the second row)
        page.wait_for_function("window.brushfire.ui.metrics.some(m => m.type === 'dimension_forward')")
        page.wait_for_function(IDLE)
        _, views = dimension_forward(dash.engine_session(), "store", want[1][0])
        for name, bars in views.items():
            assert page.evaluate(f"window.brushfire.ui.charts.get('{name}').marked") == bars, name
        page.mouse.move(5, 5)  # leaving the table unmarks
        page.wait_for_function("[...window.brushfire.ui.charts.values()].every(c => !c.marked)")

        page.select_option(".bf-rows-of", "")  # back to the source's rows
        page.wait_for_selector(".bf-table tr[data-rid]")
        assert f"of {oracle.selected():,}" in page.inner_text(".bf-details-info")


def test_a_refused_dimension_list_shows_no_rows_of_another_selection(chromium, served_star, request):
    """While a filter answered on Spark is active, `dimension` is an error: the panel showed
    the rows it had before (the source's, or the join's for an earlier selection) under
    "store rows"; it now shows none, and why."""
    addr, _ = served_star
    with open_page(chromium, addr, "star", request.node.name) as page:
        page.click("[data-action=details]")
        page.wait_for_selector(".bf-table tr[data-rid]")
        page.select_option(".bf-rows-of", "store")  # the list open, then the selection changes
        page.wait_for_selector(".bf-table tr[data-key]")
        page.evaluate("""window.brushfire.ui.setFilters({"column:qty": {"interval": [1, 5]}})""")
        page.wait_for_function("document.querySelector('.bf-details-info').textContent.startsWith('no rows:')")
        assert page.query_selector_all(".bf-table tr") == []
        assert "lineage through joins needs the rows" in page.inner_text(".bf-details-info")
        page.select_option(".bf-rows-of", "")  # the source's rows: read on Spark
        page.wait_for_selector(".bf-table tr[data-rid]")
        page.select_option(".bf-rows-of", "item")  # not the source's rows under "item rows"
        page.wait_for_function("document.querySelector('.bf-details-info').textContent.startsWith('no rows:')")
        assert page.query_selector_all(".bf-table tr") == []


ALIGN = """table => [...table.rows].map(tr => [...tr.cells].map(c => getComputedStyle(c).textAlign))"""


def test_a_column_of_text_is_aligned_with_its_header(chromium, served_star, request):
    """A column of text was left-aligned under a right-aligned header (the airports' names
    under 'origin_airport.name'), and a null among text right-aligned (∅): a column's cells
    and header now share one alignment, text left and numbers right."""
    addr, _ = served_star
    with open_page(chromium, addr, "star", request.node.name) as page:
        page.click("[data-action=details]")
        page.wait_for_selector(".bf-table tr[data-rid]")
        for choice, first, text in [("", "rid", {"store.city", "region.zone", "item.brand"}),
                                    ("store", "store.store_id", {"store.city"}),
                                    ("item", "item.sku", {"item.sku", "item.brand"})]:
            page.select_option(".bf-rows-of", choice)
            page.wait_for_function(f"document.querySelector('.bf-table th')?.textContent === '{first}'")
            head = page.eval_on_selector_all(".bf-table th", "ths => ths.map(th => th.textContent)")
            align = page.eval_on_selector(".bf-table", ALIGN)
            want = ["left" if h in text else "right" for h in head]
            assert all(row == want for row in align), (choice, head, align)


def test_no_dimension_rows_behind_the_selection_keeps_the_columns(chromium, served_star, request):
    """With no store behind the selection the header lost the store's details columns
    (store.store_id and rows only, named from the first row): it names them all still."""
    addr, _ = served_star
    with open_page(chromium, addr, "star", request.node.name) as page:
        page.click("[data-action=details]")
        page.wait_for_selector(".bf-table tr[data-rid]")
        page.select_option(".bf-rows-of", "store")
        page.wait_for_selector(".bf-table tr[data-key]")
        page.evaluate("""window.brushfire.ui.setFilters({"amount": {"interval": [500, 600]}})""")
        page.wait_for_function("document.querySelector('.bf-details-info').textContent.startsWith('no store rows')")
        assert page.query_selector_all(".bf-table tr[data-key]") == []
        head = page.eval_on_selector_all(".bf-table th", "ths => ths.map(th => th.textContent)")
        assert head == ["store.store_id", "store.city", "rows"]


def test_the_help_says_show_rows_can_list_a_joined_tables_rows(chromium, served_star, request):
    """The help line said only 'Show rows lists the rows behind the selection': nothing told
    a new user of the join's rows, chosen in a list the closed panel hides."""
    addr, _ = served_star
    with open_page(chromium, addr, "star", request.node.name) as page:
        assert "or the store, region or item rows they join" in page.inner_text(".bf-help-text")


def test_download_rows_gives_the_listed_join_rows(chromium, served_star, request, tmp_path):
    """Listing the store rows, "Download rows" saved the source's rows: it now saves what
    the panel lists, the store rows behind the selection with their count, every page of
    them, as DuckDB's LEFT JOIN counts them; back on the source's rows, the source's."""
    addr, dash = served_star
    oracle = Oracle(dash.spec)
    with open_page(chromium, addr, "star", request.node.name) as page:
        brush_and_show_rows(page, oracle)
        page.evaluate("window.brushfire.ui.details.pageSize = 20")  # (pages of 20: the file has them all)
        page.select_option(".bf-rows-of", "store")
        page.wait_for_selector(".bf-table tr[data-key]")
        assert len(page.query_selector_all(".bf-table tr[data-key]")) == 20
        with page.expect_download() as download:
            page.click("[data-action=download]")
        assert download.value.suggested_filename == "star-store-rows.csv"
        download.value.save_as(tmp_path / "store.csv")
        got = pcsv.read_csv(tmp_path / "store.csv", convert_options=pcsv.ConvertOptions(
            strings_can_be_null=True, quoted_strings_can_be_null=False))  # (a null city: unquoted)
        assert got.column_names == ["store.store_id", "store.city", "rows"]
        want = oracle.con.execute(
            f'SELECT "store.store_id", "store.city", count(*) AS n FROM src WHERE {oracle.where(None)} '
            'AND "store.store_id" IS NOT NULL GROUP BY 1, 2 ORDER BY n DESC, 1').fetchall()
        assert len(want) > 20  # (more than the page the panel shows)
        assert [tuple(r.values()) for r in got.to_pylist()] == [tuple(r) for r in want]
        assert "every store row" in page.get_attribute("[data-action=download]", "title")  # (it says so)
        page.select_option("select.bf-format", "parquet")
        with page.expect_download() as download:
            page.click("[data-action=download]")
        download.value.save_as(tmp_path / "store.parquet")
        assert pq.read_table(tmp_path / "store.parquet").to_pylist() == got.to_pylist()
        page.select_option(".bf-rows-of", "")
        page.wait_for_selector(".bf-table tr[data-rid]")
        with page.expect_download() as download:
            page.click("[data-action=download]")
        assert download.value.suggested_filename == "star-rows.parquet"
        download.value.save_as(tmp_path / "rows.parquet")
        assert pq.read_table(tmp_path / "rows.parquet").num_rows == oracle.selected()


def test_a_refused_join_download_says_why_in_the_panel(chromium, served_star, request):
    """A refused download of a join's rows (the server's 400, e.g. while a filter answered
    on Spark is active) ended as a failed download the page did not mention: the panel says
    why, and the rows listed stay."""
    addr, dash = served_star
    with open_page(chromium, addr, "star", request.node.name, allow=("status of 400",)) as page:
        brush_and_show_rows(page, Oracle(dash.spec))
        page.select_option(".bf-rows-of", "store")
        page.wait_for_selector(".bf-table tr[data-key]")
        downloads = []
        page.on("download", lambda d: downloads.append(d))
        page.route("**/rows?*join=store*", lambda route: route.fulfill(
            status=400, content_type="application/json", body='{"detail": "dimension: not now"}'))
        page.click("[data-action=download]")
        page.wait_for_function("document.querySelector('.bf-details-info').textContent.includes('not downloaded')")
        assert page.inner_text(".bf-details-info") == "not downloaded: dimension: not now"
        assert downloads == [] and page.query_selector(".bf-table tr[data-key]") is not None


@pytest.fixture(scope="module")
def served_big_keys(tmp_path_factory):
    dash = open_big_keys(tmp_path_factory.mktemp("bigkeys"))
    with live_server(create_app([dash])) as addr:
        yield addr, dash


def digits(texts: list[str]) -> list[str]:
    return [t.replace(",", "").replace("\u2212", "-") for t in texts]


def test_integer_keys_beyond_2_53_keep_their_digits_and_lead_to_their_rows(chromium, served_big_keys, request):
    """A JSON number is a double in the page: key 9007199254740993 showed as ...992 and
    hovering it marked nothing (no such key), hovering ...995 marked ...996's bars, and the
    details' int64 column showed wrong digits. The page now shows and sends them exact."""
    addr, dash = served_big_keys
    with open_page(chromium, addr, "bigkeys", request.node.name) as page:
        page.click("[data-action=details]")
        page.wait_for_selector(".bf-table tr[data-rid]")
        cells = page.eval_on_selector_all(".bf-table tr[data-rid] td:nth-child(2)", "tds => tds.map(td => td.textContent)")
        want = ["∅" if k is None else str(k) for k in make_big_keys()[0]["acct_id"].to_pylist()]
        assert digits(cells) == want
        page.select_option(".bf-rows-of", "acct")
        page.wait_for_selector(".bf-table tr[data-key]")
        keys = page.eval_on_selector_all(".bf-table tr[data-key] td:first-child", "tds => tds.map(td => td.textContent)")
        assert digits(keys) == [str(k) for k in BIG_KEYS]
        assert all(row[0] == "right" for row in page.eval_on_selector(".bf-table", ALIGN))  # (a number's digits)
        session = dash.engine_session()
        for i, key in enumerate(BIG_KEYS):
            page.mouse.move(5, 5)
            page.wait_for_function("[...window.brushfire.ui.charts.values()].every(c => !c.marked)")
            before = page.evaluate("window.brushfire.ui.metrics.filter(m => m.type === 'dimension_forward').length")
            page.hover(f".bf-table tr[data-key]:nth-child({i + 2}) td:nth-child(2)")
            page.wait_for_function(f"window.brushfire.ui.metrics.filter(m => m.type === 'dimension_forward').length > {before}")
            page.wait_for_function(IDLE)
            _, views = dimension_forward(session, "acct", key)
            assert page.evaluate("window.brushfire.ui.charts.get('label').marked") == views["label"], key


def test_a_filter_on_a_joined_column_in_the_address_is_shown_and_can_be_cleared(chromium, served_star, request):
    """A link whose state holds a filter on a column (`column:store.city`: from the widget's
    Python, a trace, another link) filtered every view, and nothing on the page said so, nor
    offered to clear it but "Clear all": the views' missing rows had no visible cause. It is
    now said beside the parameters, its × clears it."""
    addr, dash = served_star
    state = {"column:store.city": {"values": ["city1", None]}}
    oracle = Oracle(dash.spec)
    oracle.filters["column:store.city"] = '("store.city" = \'city1\' OR "store.city" IS NULL)'
    with open_page(chromium, addr, "star", request.node.name, hash=f"#filters={quote(json.dumps(state))}") as page:
        page.wait_for_function(IDLE)
        chip = page.wait_for_selector(".bf-column-filter[data-column='store.city']")
        assert chip.inner_text().split("\n")[:2] == ["store.city", "in city1, ∅"]
        assert page.evaluate("window.brushfire.ui.selected") == oracle.selected() < dash.store.n_rows
        chip.query_selector("button").click()
        page.wait_for_function("!document.querySelector('.bf-column-filter')")
        page.wait_for_function(IDLE)
        assert page.evaluate("window.brushfire.ui.selected") == dash.store.n_rows
        assert page.evaluate("window.brushfire.ui.filters") == {}
