"""brushfire.export: the rows behind a selection, streamed as CSV or Parquet, equal to
what DuckDB's SQL selects for the same filters; through the library, the server's
`/api/dashboards/<name>/rows` (with its access checks) and a baseline engine. On the
rich dashboard, captured without Spark."""

from __future__ import annotations

import io
import json
import math
from dataclasses import replace
from datetime import datetime

import httpx
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from brushfire import export, protocol, selection
from brushfire.errors import BrushfireError, InteractionError, NotCapturedError
from brushfire.server import create_app
from brushfire.server.security import Security
from live_server import live_server
from oracle import Oracle
from star_schemas import open_star

COLUMNS = ["x", "cat", "t"]
STATES = [
    {},
    {"hx": {"interval": [20, 60]}, "cat": {"values": ["c01", "(other)"]}},
    {"week": {"interval": ["2021-02-01", None]}, "pdest": {"parameter": "BBB"},
     "heat": {"rect": {"x": [10, 80], "y": [None, 70]}}},
    {"hk": {"interval": [200, 300]}},  # no row
]


def oracle_rows(dash, state: dict) -> list[tuple]:
    oracle = oracle_of(dash, state)
    return oracle.rows(COLUMNS, oracle.where(None))


def oracle_of(dash, state: dict) -> Oracle:
    """DuckDB's SQL over the dashboard's source (joins LEFT JOINed) under `state`."""
    oracle = Oracle(dash.spec)
    for name, f in selection.parse_state(state).items():
        m = selection.message_of(name, f)
        if m["type"] == "brush":
            oracle.brush(name, m["interval"], m.get("y"))
        elif m["type"] == "select":
            oracle.select(name, m["values"])
        else:
            oracle.set_parameter(name, m["value"])
    return oracle


def rows_of(table: pa.Table) -> list[tuple]:
    """A table's detail columns as the oracle normalizes rows (NaN as 'NaN', naive ISO times)."""
    def norm(x):
        if isinstance(x, float) and math.isnan(x):
            return "NaN"
        if isinstance(x, datetime):
            return x.replace(tzinfo=None).isoformat()
        return x
    return sorted((tuple(norm(r[c]) for c in COLUMNS) for r in table.to_pylist()), key=repr)


def session_with(dash, state: dict):
    s = dash.session()
    assert protocol.handle(s, {"type": "filters", "filters": state})["type"] == "update"
    return s


@pytest.mark.parametrize("state", STATES, ids=lambda s: ",".join(s) or "none")
def test_exported_rows_are_the_rows_sql_selects(rich_local, state):
    s = session_with(rich_local, state)
    table = export.selection_table(s)
    assert table.column_names == ["rid", *COLUMNS]
    assert table.num_rows == s.count_selected()
    assert rows_of(table) == oracle_rows(rich_local, state)
    assert table["rid"].to_pylist() == sorted(set(table["rid"].to_pylist()))  # rid order, each once
    for data in (export.stream(s, "parquet"), export.stream(s, "csv")):
        data = io.BytesIO(b"".join(data))
        back = pq.read_table(data) if data.getvalue()[:4] == b"PAR1" else pcsv.read_csv(
            data, convert_options=pcsv.ConvertOptions(  # nulls unquoted, empty strings quoted
                column_types=table.schema, null_values=[""], strings_can_be_null=True,
                quoted_strings_can_be_null=False))
        assert back.schema == table.schema
        assert back["rid"].equals(table["rid"]) and rows_of(back) == rows_of(table)


def test_pages_are_streamed_and_limits_kept(rich_local):
    s = session_with(rich_local, STATES[1])
    whole = export.selection_table(s)
    schema, batches = export.selection_batches(s, page_rows=97)
    batches = list(batches)
    assert len(batches) > 3 and max(b.num_rows for b in batches) <= 97
    assert pa.Table.from_batches(batches, schema).equals(whole)
    assert export.selection_table(s, ["cat"], limit=10).equals(whole.select(["rid", "cat"]).slice(0, 10))
    assert export.selection_table(s, limit=0).num_rows == 0
    with pytest.raises(InteractionError, match="details columns \\['nope'\\] were not captured"):
        export.selection_table(s, ["nope"])
    with pytest.raises(InteractionError, match="format: 'xlsx' is not an export format; formats: csv, parquet"):
        export.stream(s, "xlsx")


def test_the_duckdb_baseline_exports_the_same_rows(rich_local):
    pytest.importorskip("duckdb")
    from brushfire.baselines import with_engine

    state = STATES[2]
    base = with_engine(rich_local, "duckdb").session()
    assert protocol.handle(base, {"type": "filters", "filters": state})["type"] == "update"
    assert export.selection_table(base).equals(export.selection_table(session_with(rich_local, state)))


def test_the_server_streams_them_with_the_apis_access_checks(rich_local, tmp_path):
    rules = Security.for_bind("127.0.0.1", token="export-token")
    state = STATES[1]
    want = export.selection_table(session_with(rich_local, state))
    with live_server(create_app([rich_local], security=rules)) as addr:
        url = f"http://{addr}/api/dashboards/rich/rows"
        query = {"filters": json.dumps(state), "format": "parquet"}
        assert httpx.get(url, params=query).status_code == 401
        assert httpx.get(url, params={**query, "token": "wrong"}).status_code == 401
        assert httpx.get(url, params=query, headers={"Host": "evil.example"}).status_code == 403
        auth = {"Authorization": "token export-token"}
        r = httpx.get(url, params=query, headers=auth)
        assert r.status_code == 200 and r.headers["content-type"] == "application/vnd.apache.parquet"
        assert r.headers["content-disposition"] == 'attachment; filename="rich-rows.parquet"'
        assert pq.read_table(io.BytesIO(r.content)).equals(want)
        r = httpx.get(url, params={"filters": json.dumps(state), "columns": "cat", "limit": 5}, headers=auth)
        assert r.headers["content-type"].startswith("text/csv")
        assert r.text.splitlines()[0] == '"rid","cat"' and len(r.text.splitlines()) == 6
        r = httpx.get(url, params={"format": "CSV", "limit": 1}, headers=auth)  # (a format in any case)
        assert r.status_code == 200 and r.headers["content-disposition"] == 'attachment; filename="rich-rows.csv"'
        for params, reason in [
            ({"filters": '{"hx": [1, 2]}'}, "filters.hx: [1, 2] is not a tagged filter"),
            ({"filters": '{"hx": {"interval": ["a", 2]}}'}, "filters.hx.interval[0]: 'a' is not a number"),
            ({"filters": "{oops"}, "filters: not valid JSON"),
            ({"format": "xlsx"}, "format: 'xlsx' is not an export format; formats: csv, parquet"),
            ({"columns": "x,nope"}, "details columns ['nope'] were not captured"),
            # (a limit that is no integer was FastAPI's 422, a list of pydantic's errors)
            ({"limit": "abc"}, "limit: 'abc' is not a number of rows (an integer >= 0)"),
            ({"limit": "-1"}, "limit: -1 is not a number of rows (an integer >= 0)"),
            ({"limit": "1.5"}, "limit: '1.5' is not a number of rows"),
            ({"limit": "9" * 5000}, "is not a number of rows"),  # (int() takes 4,300 digits)
        ]:
            r = httpx.get(url, params=params, headers=auth)
            assert r.status_code == 400 and reason in r.json()["detail"], (params, r.text)
        assert httpx.get(f"http://{addr}/api/dashboards/nope/rows", headers=auth).status_code == 404


def test_arguments_of_the_wrong_type_are_named(rich_local):
    """The Python API's (the widget's `details()` and `export()`): a column's name given
    alone was read as a list of letters ("details columns ['c', 'a'] were not captured"),
    a join that is no string failed in pydantic's words."""
    s = rich_local.session()
    with pytest.raises(InteractionError, match="^columns: 'cat' is not a list of column names"):
        export.selection_table(s, "cat")
    with pytest.raises(InteractionError, match="^columns: \\[1\\] is not a list of column names"):
        export.selection_table(s, [1])
    assert export.selection_table(s, ("cat", "x"), limit=2).column_names == ["rid", "cat", "x"]
    with pytest.raises(BrushfireError, match="^dimension.join: 3 is not a join's name"):
        export.selection_table(s, join=3)


def test_a_limit_is_a_number_of_rows(rich_local):
    """True was taken as a limit of 1 row (and numpy's integers, a DataFrame's, refused)."""
    import numpy as np

    s = rich_local.session()
    for bad in (True, False, -1, 2.0, "3"):
        with pytest.raises(InteractionError, match="^limit: .* is not a number of rows \\(an integer >= 0\\)"):
            export.selection_table(s, limit=bad)
    assert export.selection_table(s, limit=np.int64(3)).equals(export.selection_table(s, limit=3))


def test_a_dashboard_without_details_says_so(rich_local):
    s = rich_local.session()
    s.plan = replace(s.plan, dashboard=rich_local.spec.model_copy(
        update={"interactions": rich_local.spec.interactions.model_copy(update={"details": None})}))
    with pytest.raises(NotCapturedError, match="details on demand is not declared"):
        export.selection_table(s)


# --- a join's rows (what the details panel lists under "Rows of": `dimension`) ----------

STAR_STATES = [{}, {"amount": {"interval": [0, 60]}}, {"zone": {"values": ["north"]}},
               {"amount": {"interval": [500, 600]}}]  # (the last: no row)


@pytest.fixture(scope="module")
def star(tmp_path_factory):
    return open_star(tmp_path_factory.mktemp("star"), seed=4)


def dimension_pages(session, join: str, page_size: int = 7) -> list[dict]:
    """Every row the `dimension` request lists, page after page."""
    rows, page = [], 0
    while True:
        reply = protocol.handle(session, {"type": "dimension", "join": join, "page": page,
                                          "page_size": page_size})
        assert reply["type"] == "dimension", reply
        rows += reply["rows"]
        if (page + 1) * page_size >= reply["total"]:
            return rows
        page += 1


@pytest.mark.parametrize("join", ["store", "region", "item"])
@pytest.mark.parametrize("state", STAR_STATES, ids=lambda s: ",".join(s) or "none")
def test_a_joins_rows_export_as_the_dimension_request_lists_them(star, state, join):
    """The details panel listing a join's rows downloaded the source's rows: the export of a
    join is its rows behind the selection, each with its count of selected rows, in the
    order and with the values of every page of `dimension`, as DuckDB's LEFT JOIN counts."""
    s = session_with(star, state)
    key = f"{join}.{star.spec.source.join(join).key}"
    columns = [key, *[c for c in star.spec.interactions.details.columns
                      if c.startswith(f"{join}.") and c != key]]
    table = export.selection_table(s, join=join)
    assert table.column_names == [*columns, "rows"]
    assert table.to_pylist() == dimension_pages(s, join)
    oracle = oracle_of(star, state)
    q = ", ".join(f'"{c}"' for c in columns)
    want = oracle.con.execute(
        f'SELECT {q}, count(*) AS n FROM src WHERE {oracle.where(None)} AND "{key}" IS NOT NULL '
        f'GROUP BY {q} ORDER BY n DESC, "{key}"').fetchall()
    assert [tuple(r.values()) for r in table.to_pylist()] == [tuple(r) for r in want]
    assert (table.num_rows > 0) == bool(state != STAR_STATES[-1])
    assert export.selection_table(s, join=join, limit=2).equals(table.slice(0, 2))
    for format in ("csv", "parquet"):
        data = io.BytesIO(b"".join(export.stream(s, format, join=join)))
        back = pq.read_table(data) if format == "parquet" else pcsv.read_csv(
            data, convert_options=pcsv.ConvertOptions(column_types=table.schema, null_values=[""],
                                                      strings_can_be_null=True))
        assert back.equals(table), format


def test_a_joins_rows_from_the_server(star):
    state = STAR_STATES[1]
    want = export.selection_table(session_with(star, state), join="store")
    with live_server(create_app([star])) as addr:
        url = f"http://{addr}/api/dashboards/star/rows"
        r = httpx.get(url, params={"filters": json.dumps(state), "format": "parquet", "join": "store"})
        assert r.status_code == 200, r.text
        assert r.headers["content-disposition"] == 'attachment; filename="star-store-rows.parquet"'
        assert pq.read_table(io.BytesIO(r.content)).equals(want)
        for params, reason in [
            ({"join": "nope"}, "'nope' is not a join of this dashboard; joins: store, region, item"),
            ({"join": "store", "columns": "qty"}, "columns: a join's rows are its key, its details columns"),
        ]:
            r = httpx.get(url, params=params)
            assert r.status_code == 400 and reason in r.json()["detail"], (params, r.text)


def test_csv_writes_lists_structs_maps_and_bytes_as_text(tmp_path):
    """Arrow's CSV writer has no list, struct or map ("Unsupported Type: list<...>") and
    takes bytes for UTF-8 text ("Invalid UTF8 payload"): the download of a dashboard whose
    details show such a column failed. Their cells are the details rows' values, as JSON."""
    from brushfire.capture.local import capture_table
    from brushfire.dashboard import Dashboard
    from brushfire.plan import plan_capture
    from brushfire.spec import parse_dashboard

    n = 30
    table = pa.table({"x": pa.array([float(i) for i in range(n)]),
                      "tags": pa.array([[f"a{i}", "b"] if i % 3 else None for i in range(n)], pa.list_(pa.string())),
                      "st": pa.array([{"a": i, "b": "q"} for i in range(n)]),
                      "m": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
                      "raw": pa.array([bytes([i, 255]) for i in range(n)], pa.binary())})
    pq.write_table(table, tmp_path / "t.parquet")
    spec = parse_dashboard({"name": "nested", "source": {"path": str(tmp_path / "t.parquet")},
                            "views": [{"name": "hx", "type": "histogram", "field": "x",
                                       "bin": {"step": 10, "extent": [0, 30]}}],
                            "interactions": {"details": {"columns": ["tags", "st", "m", "raw"]}}})
    plan = plan_capture(spec)
    s = Dashboard(spec, plan, capture_table(plan, table, tmp_path / "store")).session()
    back = pcsv.read_csv(io.BytesIO(b"".join(export.stream(s, "csv"))),
                         convert_options=pcsv.ConvertOptions(strings_can_be_null=True,
                                                             column_types={c: pa.string() for c in ["tags", "st", "m", "raw"]}))
    rows = protocol.handle(s, {"type": "details", "page": 0, "page_size": 100})["rows"]
    assert back["rid"].to_pylist() == [r["rid"] for r in rows] == list(range(n))
    assert [None if t is None else json.loads(t) for t in back["tags"].to_pylist()] == [r["tags"] for r in rows]
    assert [json.loads(t) for t in back["st"].to_pylist()] == [r["st"] for r in rows]
    assert [json.loads(t) for t in back["m"].to_pylist()] == [[["k", i]] for i in range(n)]
    assert back["raw"].to_pylist() == [str(bytes([i, 255])) for i in range(n)]
    assert pq.read_table(io.BytesIO(b"".join(export.stream(s, "parquet"))))["tags"].type == pa.list_(pa.string())


def test_csv_writes_decimals_with_their_digits_as_sql_does(tmp_path):
    """Arrow's CSV writer wrote a zero of scale 10 as `0E-10` and 1e-7 as `1E-7`, where SQL,
    DuckDB and the details rows write `0.0000000000` and `0.0000001000`."""
    from decimal import Decimal

    from brushfire.capture.local import capture_table
    from brushfire.dashboard import Dashboard
    from brushfire.plan import plan_capture
    from brushfire.spec import parse_dashboard

    amounts = [Decimal("0E-10"), Decimal("1E-7"), Decimal("12.5"), None]
    table = pa.table({"x": pa.array([0.0, 1.0, 2.0, 3.0]),
                      "amount": pa.array(amounts, pa.decimal128(20, 10))})
    pq.write_table(table, tmp_path / "t.parquet")
    spec = parse_dashboard({"name": "money", "source": {"path": str(tmp_path / "t.parquet")},
                            "views": [{"name": "hx", "type": "histogram", "field": "x",
                                       "bin": {"step": 1, "extent": [0, 4]}}],
                            "interactions": {"details": {"columns": ["amount"]}}})
    plan = plan_capture(spec)
    s = Dashboard(spec, plan, capture_table(plan, table, tmp_path / "store")).session()
    text = b"".join(export.stream(s, "csv")).decode()
    assert text.splitlines()[1:] == ['0,"0.0000000000"', '1,"0.0000001000"', '2,"12.5000000000"', '3,']
