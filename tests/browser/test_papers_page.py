"""The papers' lineage features in the page (issue 14), in a real browser against DuckDB's
SQL: a parameter default active from the start, the version served, forward lineage of a
details row, a functional-dependency check's linked view, and a brush no crossfilter
group declares, answered lazily on Spark (progress after a second; the next interaction
cancels it)."""

from __future__ import annotations

import math

import pytest

from bars import sql_count, sql_values
from brushfire import sql, versions
from brushfire.spark_source import source_for
from brushfire.spec import models as m
from brushfire.views import key_sql
from oracle import Oracle
from pages import IDLE, drag, shown, to_pixel

pytestmark = pytest.mark.spark

FD = "fd_x_k__dest"  # the check of browser/conftest.py papers_spec


@pytest.fixture
def expected(served_papers):
    """The oracle with the page's starting state: the parameter default active."""
    oracle = Oracle(served_papers[1].spec)
    oracle.set_parameter("pdest", "BBB")
    return oracle


def assert_views(page, oracle, dash, lazy: dict[str, set[str]] | None = None) -> None:
    """Each view as SQL says, with `lazy` ({predicate: views it filters}) on top of the
    oracle's (declared) filters."""
    for v in dash.spec.views:
        extra = " AND ".join(f"({p})" for p, vs in (lazy or {}).items() if v.name in vs) or "TRUE"
        want, got = sql_values(oracle, dash, v.name, extra), shown(page, v.name)
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            assert (a is None) if b is None else math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), \
                (v.name, i, a, b)


def test_a_parameter_default_is_active_from_the_start(paper, served_papers, expected):
    _, dash = served_papers
    assert paper.eval_on_selector("select[name=pdest]", "e => e.value") == "BBB"
    assert paper.evaluate("window.brushfire.ui.filters") == {"pdest": {"parameter": "BBB"}}
    assert_views(paper, expected, dash)
    assert f"{sql_count(expected):,} selected" in paper.inner_text(".bf-status")


def test_the_version_served_is_at_the_foot_of_the_page(paper, served_papers):
    _, dash = served_papers
    v = versions.served(dash)
    text = paper.inner_text(".bf-footer .bf-version")
    assert f"spec {v['spec_sha256'][:8]}" in text and f"source {v['source_fingerprint'][:8]}" in text
    assert f"Brushfire {v['brushfire_version']}" in text and "captured 20" in text
    assert v["cache_key"] in paper.get_attribute(".bf-version", "title")


def test_hovering_a_details_row_marks_its_bars_in_every_view(paper, served_papers, expected):
    _, dash = served_papers
    paper.click("[data-action=details]")
    paper.wait_for_selector(".bf-table tr:nth-child(4)")
    rid = int(paper.get_attribute(".bf-table tr:nth-child(4)", "data-rid"))
    paper.hover(".bf-table tr:nth-child(4) td:nth-child(2)")
    paper.wait_for_function("window.brushfire.ui.metrics.some(m => m.type === 'forward')")
    paper.wait_for_function(IDLE)
    con = expected.con
    for v in dash.spec.views:
        key = key_sql(v, expected.top.get(v.name))
        got = con.execute(f"SELECT {key} FROM (SELECT *, row_number() OVER () - 1 AS rid FROM src) "
                          f"WHERE rid = {rid}").fetchone()[0]
        labels = dash.store.view(v.name).labels
        want = [labels.index(got)] if isinstance(v, m.CategoricalView) else [got]
        assert paper.evaluate(f"window.brushfire.ui.charts.get('{v.name}').marked") == want, v.name
        hl = shown(paper, v.name, "hl")
        assert [i for i, x in enumerate(hl) if x is not None] == want, v.name
    paper.mouse.move(5, 5)  # leaving the table unmarks
    paper.wait_for_function("[...window.brushfire.ui.charts.values()].every(c => c.marked === null)")


def test_clicking_violates_brushes_exactly_the_violating_rows(paper, served_papers, expected):
    _, dash = served_papers
    labels = dash.store.view(FD).labels
    assert set(labels) == {m.FD_VIOLATES, m.FD_HOLDS}
    i = labels.index(m.FD_VIOLATES)
    x, y = to_pixel(paper, FD, labels[i], shown(paper, FD, "full")[i] / 2)
    paper.mouse.click(x, y)
    paper.wait_for_function(f"{IDLE} && window.brushfire.ui.filters.{FD}")
    assert paper.evaluate(f"window.brushfire.ui.filters.{FD}") == {"values": [m.FD_VIOLATES]}
    expected.select(FD, [m.FD_VIOLATES])
    assert_views(paper, expected, dash)
    # the rows SQL finds violating (x, k) -> dest: those with another dest for their (x, k)
    n = expected.con.execute(
        "SELECT count(*) FROM src s WHERE dest = 'BBB' AND EXISTS (SELECT 1 FROM src o WHERE "
        "o.x IS NOT DISTINCT FROM s.x AND o.k IS NOT DISTINCT FROM s.k AND o.dest <> s.dest)").fetchone()[0]
    assert paper.evaluate("window.brushfire.ui.selected") == n > 0


def test_a_brush_no_group_declares_is_answered_on_spark(paper, served_papers, expected):
    _, dash = served_papers
    assert paper.inner_text(".bf-view[data-view=lonely] .bf-lazy-note") == "on Spark"
    drag(paper, "lonely", 10, 70, steps=3)
    paper.wait_for_function(IDLE)
    lo, hi = paper.evaluate("window.brushfire.ui.filters.lonely.interval")
    pred = f"k IS NOT NULL AND k >= {sql.num(lo)} AND k <= {sql.num(hi)}"
    assert_views(paper, expected, dash, {pred: {"hx", "cat", FD}})
    assert "answered lazily on Spark in" in paper.inner_text(".bf-latency")
    count = expected.con.execute(f"SELECT count(*) FROM src WHERE {expected.where(None)} AND {pred}").fetchone()[0]
    assert paper.evaluate("window.brushfire.ui.selected") == count


def test_a_slow_lazy_answer_shows_progress_and_the_next_brush_cancels_it(paper, served_papers, expected,
                                                                          monkeypatch):
    _, dash = served_papers
    source = source_for(dash)
    plain, slow = source.run, [True]

    def run_slowly(group, query, what):  # lazy answers take long while `slow`
        if slow[0]:
            query = f"SELECT * FROM ({query}) AS q CROSS JOIN (SELECT count(1) FROM range(30000000000)) AS r"
        return plain(group, query, what)

    monkeypatch.setattr(source, "run", run_slowly)
    a, b = to_pixel(paper, "lonely", 0), to_pixel(paper, "lonely", 50)
    paper.mouse.move(*a)
    paper.mouse.down()
    paper.mouse.move(*b, steps=2)
    paper.mouse.up()
    paper.wait_for_selector(".bf-waiting", timeout=10_000)
    paper.wait_for_function("document.querySelector('.bf-waiting').textContent"
                            ".startsWith('answering on Spark (not captured)…')")
    slow[0] = False
    drag(paper, "hx", 20, 60)  # the next interaction: sent at once, cancels the slow answer
    paper.wait_for_function(f"{IDLE} && !document.querySelector('.bf-waiting')", timeout=120_000)
    assert paper.evaluate("window.brushfire.ui.metrics.some(m => m.cancelled)")
    lo, hi = paper.evaluate("window.brushfire.ui.filters.lonely.interval")
    xlo, xhi = paper.evaluate("window.brushfire.ui.filters.hx.interval")
    expected.brush("hx", (xlo, xhi))
    pred = f"k IS NOT NULL AND k >= {sql.num(lo)} AND k <= {sql.num(hi)}"
    assert_views(paper, expected, dash, {pred: {"hx", "cat", FD}})
