"""views/categorical.py over a time field, and dropdowns over one: captured (the manifest
holds the values as ISO instants), loaded back from the cache, served (labels and domains
as the protocol spells times; a bar or choice named by any spelling of its instant) and
equal to DuckDB's answer (bench/check.py) for Brushfire and the SQL baselines. Captured
in this process (capture/local.py); they used to fail with "cannot store datetime in a
manifest"."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from brushfire import protocol
from brushfire.baselines import with_engine
from brushfire.bench.check import Checker
from brushfire.capture.local import capture_table
from brushfire.dashboard import Dashboard
from brushfire.describe import describe_dashboard
from brushfire.lineage.store import load_store
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard

N = 120


def rows() -> pa.Table:
    ts = [None if i % 17 == 0 else datetime(2024, 1, 1) + timedelta(hours=i % 7, microseconds=i % 7 == 3)
          for i in range(N)]  # 16 rows at each hour 0-6 (3:00 and a microsecond)
    return pa.table({
        "x": [float(i % 10) for i in range(N)],
        "ts": pa.array(ts, pa.timestamp("us")),
        "tz": pa.array([datetime(2024, 3, 1, tzinfo=UTC) + timedelta(minutes=i % 5) for i in range(N)],
                       pa.timestamp("us", tz="UTC")),
        "d": pa.array([None if i % 11 == 0 else date(2024, 1, 1) + timedelta(days=i % 6)
                       for i in range(N)], pa.date32()),
        "g": ["a", "b", "c"] * (N // 3),
    })


def spec(path) -> dict:
    return {
        "name": "tcat", "source": {"path": str(path)},
        "views": [
            {"name": "x", "type": "histogram", "field": "x", "bin": {"step": 1, "extent": [0, 10]}},
            {"name": "tcat", "type": "categorical", "field": "ts", "top": 5},
            {"name": "dcat", "type": "categorical", "field": "d", "top": 3, "other": False},
            {"name": "zcat", "type": "categorical", "field": "tz", "top": 4, "sort": "name"},
            {"name": "last", "type": "categorical", "field": "g", "brush": "none",
             "aggregate": {"op": "max", "field": "ts"}},
        ],
        "interactions": {
            "crossfilter": [{"views": ["x", "tcat", "dcat", "zcat", "last"]}],
            "parameters": [{"name": "pday", "field": "d", "widget": "dropdown"},
                           {"name": "pdays", "field": "d", "widget": "dropdown", "multiple": True}],
        },
    }


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tcat")
    pq.write_table(rows(), folder / "rows.parquet")
    dash = parse_dashboard(spec(folder / "rows.parquet"))
    plan = plan_capture(dash)
    store = capture_table(plan, rows(), folder / "cache")
    return Dashboard(dash, plan, store), folder


def test_bars_and_choices_are_iso_instants_and_load_back_from_the_cache(captured):
    dash, _ = captured
    labels = {v.name: v.labels for v in dash.store.views}
    assert labels["tcat"] == ["2024-01-01T00:00:00+00:00", "2024-01-01T01:00:00+00:00",
                              "2024-01-01T02:00:00+00:00", "2024-01-01T03:00:00.000001+00:00",
                              "2024-01-01T04:00:00+00:00", "(other)"]  # ties by time
    assert labels["dcat"] == ["2024-01-02T00:00:00+00:00", "2024-01-01T00:00:00+00:00",
                              "2024-01-03T00:00:00+00:00"]  # the most frequent, ties by time
    assert labels["zcat"] == [f"2024-03-01T00:0{m}:00+00:00" for m in range(4)] + ["(other)"]
    kind, domain = dash.store.parameter_domain("pday")
    assert kind == "times" and domain[0] == "2024-01-02T00:00:00+00:00" and len(domain) == 6
    described = describe_dashboard(dash)
    assert [p["values"] for p in described["parameters"]] == [domain, domain]
    again = load_store(dash.store.directory, dash.spec)  # every file checked, then mapped
    assert {v.name: v.labels for v in again.views} == labels
    assert again.parameter_domain("pday") == (kind, domain)


def messages() -> list[dict]:
    return [
        {"type": "select", "view": "tcat", "values": ["2024-01-01T00:00:00+00:00", "(other)"]},
        {"type": "select", "view": "dcat", "values": ["2024-01-03"]},  # a date names its midnight
        {"type": "brush", "view": "x", "interval": [2, 6]},
        {"type": "parameter", "name": "pday", "value": "2024-01-04T00:00:00Z"},
        {"type": "select", "view": "zcat", "values": ["2024-03-01T01:01:00+01:00"]},  # = 00:01 UTC
        {"type": "parameter", "name": "pday", "value": None},
        {"type": "parameter", "name": "pdays", "value": ["2024-01-02", "2024-01-06T00:00:00+00:00"]},
        {"type": "filters", "filters": {"tcat": {"values": ["2024-01-01T03:00:00.000001Z"]},
                                        "pday": {"parameter": "2024-01-05"}}},
        {"type": "clear"},
    ]


@pytest.mark.parametrize("engine", ["brushfire", "duckdb", "preagg"])
def test_selections_by_time_equal_sql(captured, engine):
    dash, folder = captured
    session = with_engine(dash, engine).session()
    replies = [protocol.handle(session, msg) for msg in messages()]
    assert [r["type"] for r in replies] == ["update"] * len(replies), replies
    labels = {v.name: v.labels for v in dash.store.views}
    checker = Checker(dash.spec, labels, cache_dir=str(folder / "check"))
    assert checker.problems_once == []  # the bars are SQL's top values
    result = checker.check([(0, i, r) for i, r in enumerate(replies)])
    assert result.mismatches == 0, result.examples
    assert result.checked == len(replies)


def test_the_state_spells_a_time_as_its_bar(captured):
    dash, _ = captured
    session = dash.session()
    protocol.handle(session, {"type": "select", "view": "dcat", "values": ["2024-01-03"]})
    reply = protocol.handle(session, {"type": "parameter", "name": "pday", "value": "2024-01-04"})
    assert reply["filters"] == {"dcat": {"values": ["2024-01-03T00:00:00+00:00"]},
                                "pday": {"parameter": "2024-01-04T00:00:00+00:00"}}


@pytest.mark.parametrize(("msg", "error"), [
    ({"type": "select", "view": "dcat", "values": ["2024-01-03", "soon"]},
     "select on view 'dcat': values[1]: 'soon' is not an ISO time; write e.g. 2021-03-01 or "
     "2021-03-01T12:30:00Z"),
    ({"type": "select", "view": "dcat", "values": ["2024-01-09"]},
     "select on view 'dcat': values[0]: '2024-01-09' is not one of the values: "
     "'2024-01-02T00:00:00+00:00', '2024-01-01T00:00:00+00:00', '2024-01-03T00:00:00+00:00'"),
    ({"type": "select", "view": "dcat", "values": ["(other)"]},  # dcat keeps no '(other)' bar
     "select on view 'dcat': values[0]: '(other)' is not an ISO time; write e.g. 2021-03-01 or "
     "2021-03-01T12:30:00Z"),
    ({"type": "parameter", "name": "pday", "value": 20240103},
     "parameter 'pday': 20240103 is a number, not a time; temporal bounds are ISO times, e.g. "
     "2021-03-01 or 2021-03-01T12:30:00Z"),
    ({"type": "parameter", "name": "pdays", "value": ["2024-01-02", "2024-01-02T12:00:00Z"]},
     "parameter 'pdays'[1]: '2024-01-02T12:00:00Z' is not one of the values: "),
])
def test_a_time_that_is_no_bar_or_choice_is_refused(captured, msg, error):
    dash, _ = captured
    session = dash.session()
    reply = protocol.handle(session, msg)
    assert reply["type"] == "error" and reply["message"].startswith(error), reply
    assert session.filters == {}


def test_a_value_spelt_like_the_other_bar_is_a_bar_of_its_own(tmp_path):
    """'(other)' is the last bar's label; a string field may hold the text '(other)' too,
    among its top values. Rows were keyed by their place among the labels without every
    '(other)', so each bar after that value counted the next bar's rows. A select of
    '(other)' names the last bar, as the protocol says (docs/protocol.md)."""
    s = ["a"] * 5 + ["(other)"] * 4 + ["b"] * 3 + ["c"] * 2 + [None]
    table = pa.table({"s": pa.array(s), "y": list(range(len(s)))})
    spec = parse_dashboard({
        "name": "other_text", "source": {"path": str(tmp_path / "t.parquet")},
        "views": [{"name": "s", "type": "categorical", "field": "s", "top": 2},
                  {"name": "y", "type": "histogram", "field": "y", "bin": {"step": 5, "extent": [0, 15]}}],
        "interactions": {"crossfilter": [{"views": ["s", "y"]}]}})
    plan = plan_capture(spec)
    dash = Dashboard(spec, plan, capture_table(plan, table, tmp_path / "cache"))
    view = dash.session().view("s")
    assert (view.labels, view.counts, view.caveats) == (["a", "(other)", "(other)"], [5, 4, 5],
                                                        {"null": 1, "other": 5})
    reply = protocol.handle(dash.session(), {"type": "select", "view": "s", "values": ["(other)"]})
    assert (reply["selected"], reply["views"]["y"]["counts"]) == (5, [0, 1, 4])  # the rows of b and c (y 9-13)


def test_a_last_value_spelt_like_the_other_bar_is_not_counted_as_folded(tmp_path):
    """In a view without an '(other)' bar (`other: false`), the last top value may be the
    text '(other)'. The engine took any last label '(other)' for the '(other)' bar and
    reported its rows as the caveat `other` (folded into a bar the view does not have),
    where SQL says they are shown in their own bar: caveats null and beyond_top only."""
    from oracle import Oracle

    s = ["a"] * 5 + ["(other)"] * 4 + ["b"] * 3 + ["c"] * 2 + [None]
    table = pa.table({"s": pa.array(s), "y": list(range(len(s)))})
    pq.write_table(table, tmp_path / "t.parquet")
    spec = parse_dashboard({
        "name": "other_last", "source": {"path": str(tmp_path / "t.parquet")},
        "views": [{"name": "s", "type": "categorical", "field": "s", "top": 2, "other": False},
                  {"name": "y", "type": "histogram", "field": "y", "bin": {"step": 5, "extent": [0, 15]}}],
        "interactions": {"crossfilter": [{"views": ["s", "y"]}]}})
    plan = plan_capture(spec)
    dash = Dashboard(spec, plan, capture_table(plan, table, tmp_path / "cache"))
    oracle = Oracle(dash.spec)
    view = dash.session().view("s")
    assert (view.labels, view.counts) == (["a", "(other)"], [5, 4])
    assert view.caveats == oracle.caveats("s") == {"null": 1, "beyond_top": 5}
    reply = protocol.handle(dash.session(), {"type": "brush", "view": "y", "interval": [0, 8]})
    oracle.brush("y", [0, 8])
    assert reply["views"]["s"]["caveats"] == oracle.caveats("s") == {}
