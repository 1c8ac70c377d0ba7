"""Lineage through joins (engine/dimensions.py, protocol `dimension` and
`dimension_forward`) against DuckDB's SQL over the LEFT JOIN, on random star schemas
(tests/star_schemas.py) captured in this process."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushfire import Dashboard
from brushfire.capture.local import capture_tables
from brushfire.describe import describe_dashboard
from brushfire.engine.dimensions import dimension_forward, dimension_rows
from brushfire.errors import InteractionError, NotCapturedError
from brushfire.plan import plan_capture
from brushfire.protocol import handle
from brushfire.spec import parse_dashboard
from brushfire.wire import dumps
from oracle import Oracle
from star_schemas import CONFIG, open_star


@pytest.fixture(scope="module", params=[4, 17])
def star(request, tmp_path_factory):
    dash = open_star(tmp_path_factory.mktemp("star"), request.param)
    return dash, Oracle(dash.spec)


SELECTIONS = st.one_of(
    st.none(),
    st.tuples(st.just("amount"), st.tuples(st.floats(-40, 140), st.floats(-40, 140))),
    st.tuples(st.just("zone"), st.lists(st.sampled_from(["north", "south", "east"]), max_size=2)))


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(selection=SELECTIONS, join=st.sampled_from(["store", "region", "item"]),
       bars=st.one_of(st.none(), st.lists(st.integers(0, 8), max_size=3, unique=True)))
def test_the_dimension_rows_behind_a_selection_are_sqls(star, selection, join, bars):
    dash, oracle = star
    s = dash.engine_session()
    oracle.clear()
    if selection is not None:
        name, arg = selection
        if name == "amount":
            s.brush(name, sorted(arg))
            oracle.brush(name, sorted(arg))
        else:
            arg = [x for x in arg if x in s.view("zone").labels]
            s.select(name, arg)
            oracle.select(name, arg)
    j = dash.spec.source.join(join)
    key = f'"{join}.{j.key}"'
    cols = [c for c in dash.spec.interactions.details.columns if c.startswith(f"{join}.")]
    where = oracle.where(None)
    view = None
    if bars is not None:  # the rows behind bars of the city view, as it shows them
        labels = s.view("city").labels
        bars = [b for b in bars if b < len(labels)]
        view = "city"
        keys = ", ".join("'" + labels[b].replace("'", "''") + "'" for b in bars) or "NULL"
        where = f"({oracle.where('city')}) AND ({oracle.bar_sql(dash.spec.view('city'))}) IN ({keys})"
    got = dimension_rows(s, join, view, bars, page_size=10_000)
    firsts = "".join(f', first("{c}")' for c in cols)
    want = oracle.con.execute(f"SELECT {key}{firsts}, count(*) AS n FROM src WHERE {where} AND {key} "
                              f"IS NOT NULL GROUP BY {key} ORDER BY n DESC, {key}").fetchall()
    rows = [tuple(r.values()) for r in got.table.to_pylist()]
    assert rows == [tuple(r) for r in want]
    assert got.total == len(want)
    unmatched = oracle.con.execute(f"SELECT count(*) FROM src WHERE {where} AND {key} IS NULL").fetchone()[0]
    assert got.unmatched == unmatched
    page = dimension_rows(s, join, view, bars, page=1, page_size=2)
    assert [tuple(r.values()) for r in page.table.to_pylist()] == rows[2:4]


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(join=st.sampled_from(["store", "region", "item"]), pick=st.integers(0, 50))
def test_a_dimension_row_leads_to_the_bars_of_its_rows(star, join, pick):
    dash, oracle = star
    s = dash.engine_session()
    j = dash.spec.source.join(join)
    key = f'"{join}.{j.key}"'
    keys = [r[0] for r in oracle.con.execute(f"SELECT DISTINCT {key} FROM src WHERE {key} IS NOT NULL "
                                             f"ORDER BY 1").fetchall()]
    value = keys[pick % len(keys)]
    rows, views = dimension_forward(s, join, value)
    assert rows == oracle.con.execute(f"SELECT count(*) FROM src WHERE {key} = ?", [value]).fetchone()[0]
    for v in dash.spec.views:
        if v.name not in views:
            continue
        labels = s.view(v.name).labels
        got = {labels[b] if v.type == "categorical" else
               (labels[b].replace("+00:00", "") if v.type == "temporal" else b) for b in views[v.name]}
        want = {r[0] for r in oracle.con.execute(
            f"SELECT DISTINCT {oracle.bar_sql(v)} FROM src WHERE {key} = ?", [value]).fetchall()} - {None}
        assert got == want, (v.name, value)


def test_protocol_messages_and_their_errors(star):
    dash, _ = star
    s = dash.engine_session()
    reply = handle(s, {"type": "dimension", "join": "region", "id": 7})
    assert reply["type"] == "dimension" and reply["id"] == 7 and reply["total"] == len(reply["rows"])
    assert set(reply["rows"][0]) == {"region.code", "region.zone", "rows"}
    key = reply["rows"][0]["region.code"]
    fwd = handle(s, {"type": "dimension_forward", "join": "region", "key": key})
    assert fwd["type"] == "dimension_forward" and fwd["rows"] == reply["rows"][0]["rows"]
    for msg, text in [
        ({"type": "dimension", "join": "stores"},
         "dimension.join: 'stores' is not a join of this dashboard; joins: store, region, item; "
         "did you mean 'store'?"),
        ({"type": "dimension", "join": "store", "bars": [1]},
         "dimension.bars: bars need a view; give view with bars, or neither for the selection"),
        ({"type": "dimension_forward", "join": "store", "key": "x"},
         "key 'x' is not a value of store.store_id (int64)"),
        ({"type": "dimension_forward", "join": "store", "key": [1]},
         "dimension_forward.key: [1] is not a key (a string, a number, true or false)"),
        ({"type": "dimension_forward", "join": "store", "key": True},
         "key true is not a value of store.store_id (int64)"),  # (not the key 1)
    ]:
        reply = handle(s, msg)
        assert reply == {"type": "error", "id": None, "message": text}, reply


def test_dimension_messages_are_checked_once(star, monkeypatch):
    """The message's check checks the join (its lineage captured), the view, its bars and the
    page; `answer_dimension` and `answer_dimension_forward` trust the request: the Python
    API's checks (`_join`, the page, `backward_rids`'s view and bars) do not run again."""
    from brushfire.engine import dimensions, queries
    from brushfire.engine import session as engine
    from brushfire.lazy import LazySession

    def checked_again(*args, **kwargs):
        msg = "checked again below the protocol"
        raise AssertionError(msg)

    dash, _ = star
    messages = [{"type": "dimension", "join": "region", "view": "zone", "bars": [0, 1], "page_size": 3},
                {"type": "dimension", "join": "store", "page": 1, "page_size": 2}]
    want = [handle(dash.session(), m) for m in messages]
    for name, target in (("_join", dimensions), ("details_request", dimensions),
                         ("check_view_bars", queries), ("check_bars", queries)):
        monkeypatch.setattr(target, name, checked_again)
    monkeypatch.setattr(LazySession, "backward_rids", checked_again)
    monkeypatch.setattr(engine.Session, "backward_rids", checked_again)
    for m, w in zip(messages, want, strict=True):
        got = handle(dash.session(), m)
        assert got["type"] == "dimension" and {**got, "ms": 0} == {**w, "ms": 0}, got
    key = want[0]["rows"][0]["region.code"]
    fwd = handle(dash.session(), {"type": "dimension_forward", "join": "region", "key": key})
    assert fwd["type"] == "dimension_forward" and fwd["rows"] > 0, fwd


def test_without_details_there_is_no_lineage_through_joins(tmp_path):
    dash = open_star(tmp_path, 1, 300, details=False)
    with pytest.raises(NotCapturedError) as info:
        dimension_rows(dash.engine_session(), "store")
    text = ("lineage through join 'store' was not captured: declare details on demand (its key "
            "column is kept with the details' columns)")
    assert str(info.value) == text
    for m in [{"type": "dimension", "join": "store"},  # the message's check says it
              {"type": "dimension_forward", "join": "store", "key": 1}]:
        assert handle(dash.session(), m) == {"type": "error", "id": None, "message": text}
    with pytest.raises(InteractionError):
        dimension_forward(dash.engine_session(), "nope", 1)


@pytest.mark.spark
def test_a_dimension_row_leads_to_its_bars_under_a_filter_answered_on_spark(spark, tmp_path):
    """`dimension_forward` reads every row, not the selection: a filter answered on Spark
    (on a column no view shows) does not change its answer (hovering a store while such a
    filter was active was an error, as `dimension` is then)."""
    s = open_star(tmp_path, 4, 600).session()
    before = handle(s, {"type": "dimension_forward", "join": "store", "key": 1})
    assert before["type"] == "dimension_forward" and before["rows"] > 0, before
    reply = handle(s, {"type": "filter", "column": "qty", "interval": [3, 9]})
    assert reply["type"] == "update" and reply["lazy"]["views"], reply
    after = handle(s, {"type": "dimension_forward", "join": "store", "key": 1})
    assert (after["type"], after["rows"], after["views"]) == ("dimension_forward", before["rows"], before["views"])
    assert handle(s, {"type": "dimension", "join": "store"})["type"] == "error"  # (the selection's rows)


def test_an_engine_without_rows_refuses_lineage_through_joins(star):
    """A baseline declares no ROWS: the message's check says so (it was an internal error)."""
    pytest.importorskip("duckdb")
    from brushfire.baselines import with_engine

    s = with_engine(star[0], "duckdb").session()
    reply = handle(s, {"type": "dimension", "join": "store"})
    assert reply["message"] == ("dimension: lineage through joins needs the rows behind the "
                                "selection by rid, which this session does not have (an engine "
                                "without per-row lineage, or a filter answered on Spark is active)")
    reply = handle(s, {"type": "dimension_forward", "join": "store", "key": 1})
    assert reply["message"] == ("dimension_forward: lineage through joins needs the rows by rid and "
                                "forward lineage, which this session does not have (an engine "
                                "without per-row lineage)")


def joined(tmp_path, fact, dim, key: str, bars: int, join: str = "d", on: str = "k",
           details: tuple[str, ...] = ("x", "d.label")) -> Dashboard:
    """A fact table (`on`, `x`) joined on `on` to `dim` (`key`, `label`, ...) as `join`, captured
    in this process: a categorical view of the label and a histogram of x over [0, bars]."""
    spec = parse_dashboard({
        "name": join, "source": {"path": str(tmp_path / "f.parquet"), "joins": [
            {"name": join, "path": str(tmp_path / "d.parquet"), "key": key, "on": on}]},
        "views": [{"name": "label", "type": "categorical", "field": f"{join}.label"},
                  {"name": "x", "type": "histogram", "field": "x", "bin": {"step": 1, "extent": [0, bars]}}],
        "interactions": {"crossfilter": [{"views": ["label", "x"]}], "details": {"columns": list(details)}}})
    plan = plan_capture(spec)
    return Dashboard(spec, plan, capture_tables(plan, {"a": fact}, tmp_path / "cache", CONFIG, None, {join: dim}))


def test_a_decimal_key_is_found_by_its_exact_value(tmp_path):
    """`dimension_forward` over a decimal key (TPC-H's keys are often decimals): 7, 7.0
    and '7.00' are the key 7.00; 7.001 is no key (SQL's `=`), not 7.00 rounded."""
    from decimal import Decimal

    import pyarrow as pa

    dec = pa.decimal128(10, 2)
    fact = pa.table({"k": pa.array([Decimal("7.00"), Decimal("1.00"), None, Decimal("7.00")], dec),
                     "x": pa.array([1, 2, 3, 4], pa.int64())})
    dim = pa.table({"id": pa.array([Decimal("7.00"), Decimal("1.00")], dec), "label": ["seven", "one"]})
    s = joined(tmp_path, fact, dim, "id", 5, details=("x",)).engine_session()
    for key in (7, 7.0, "7.00", "7"):
        assert dimension_forward(s, "d", key)[0] == 2, key
    assert dimension_forward(s, "d", 7.001)[0] == 0
    assert dimension_forward(s, "d", 10**20)[0] == 0  # beyond the column's precision
    with pytest.raises(InteractionError, match="key 'seven' is not a value of d.id"):
        dimension_forward(s, "d", "seven")


def test_a_boolean_key_leads_to_its_rows(tmp_path):
    """A join on a boolean key (a fact's flag joined to its table of labels): `dimension`
    lists its rows with their keys true and false, and hovering one in the page sent that
    key back, refused ('dimension_forward.key: true is not a key (a string or a number)'):
    nothing was marked. A boolean key is taken as a bool, and only it."""
    import pyarrow as pa

    fact = pa.table({"member": pa.array([True, False, True, None, True]), "x": pa.array([1, 2, 3, 4, 5])})
    dim = pa.table({"flag": pa.array([True, False]), "label": ["member", "guest"]})
    s = joined(tmp_path, fact, dim, "flag", 5, join="m", on="member", details=("x", "m.label")).session()
    rows = handle(s, {"type": "dimension", "join": "m"})["rows"]
    assert rows == [{"m.flag": True, "m.label": "member", "rows": 3}, {"m.flag": False, "m.label": "guest", "rows": 1}]
    for row, bars in zip(rows, [[1, 3, 4], [2]], strict=True):
        reply = handle(s, {"type": "dimension_forward", "join": "m", "key": row["m.flag"]})
        assert (reply["rows"], reply["views"]["x"]) == (row["rows"], bars), reply
    for key in (1, "true"):  # (no boolean: no key of this join)
        reply = handle(s, {"type": "dimension_forward", "join": "m", "key": key})
        assert reply["message"] == f"key {key!r} is not a value of m.flag (bool)", reply


def test_a_dictionary_encoded_key_lists_its_rows(tmp_path):
    """A dimension table from pandas categories (a dictionary-encoded key, captured in this
    process): `dimension` was an internal error ('Unsupported type for RecordBatch sorting:
    dictionary<values=string, ...>'); its rows are listed by their keys' values."""
    import pyarrow as pa

    fact = pa.table({"k": pa.array(["b", "a", "b", None, "z", "b"]).dictionary_encode(),
                     "x": pa.array(range(6), pa.int64())})
    dim = pa.table({"id": pa.array(["a", "b", "c"]).dictionary_encode(), "label": ["one", "two", "three"]})
    s = joined(tmp_path, fact, dim, "id", 6).session()
    got = handle(s, {"type": "dimension", "join": "d"})
    assert (got["type"], got["total"], got["unmatched"]) == ("dimension", 2, 2), got
    assert got["rows"] == [{"d.id": "b", "d.label": "two", "rows": 3}, {"d.id": "a", "d.label": "one", "rows": 1}]
    assert handle(s, {"type": "dimension_forward", "join": "d", "key": "b"})["views"]["x"] == [0, 2, 5]


def test_a_binary_key_leads_to_its_rows(tmp_path):
    """A join on a binary key (ids stored as bytes, e.g. UUIDs): `dimension` rows write it
    as Python writes bytes (b'\\x00\\xff'), and hovering one sent that text back, read as
    the UTF-8 bytes of the text: no row had them, and nothing was marked, silently. Such
    text is now read as the bytes it spells."""
    import pyarrow as pa

    ids = [b"\x00\xff", b"it's", b"plain"]
    fact = pa.table({"k": pa.array([ids[0], ids[1], ids[0], None, b"none", ids[2]], pa.binary()),
                     "x": pa.array(range(6), pa.int64())})
    dim = pa.table({"id": pa.array(ids, pa.binary()), "label": ["one", "two", "three"]})
    s = joined(tmp_path, fact, dim, "id", 6).session()
    rows = json.loads(dumps(handle(s, {"type": "dimension", "join": "d"})))["rows"]  # (as the page reads it)
    assert [(r["d.id"], r["rows"]) for r in rows] == [("b'\\x00\\xff'", 2), ('b"it\'s"', 1), ("b'plain'", 1)]
    for row, bars in zip(rows, [[0, 2], [1], [5]], strict=True):
        reply = handle(s, {"type": "dimension_forward", "join": "d", "key": row["d.id"]})
        assert (reply["rows"], reply["views"]["x"]) == (row["rows"], bars), reply
    assert handle(s, {"type": "dimension_forward", "join": "d", "key": "plain"})["rows"] == 1  # (its text's bytes)


def test_a_time_of_day_key_leads_to_its_rows(tmp_path):
    """A join on a time of day (a timetable's departure slot): `dimension` rows write the
    key as its ISO text ('09:30:00'), which dimension_forward refused ('key '09:30:00' is
    not a value of d.slot (time64[us])'): hovering the row marked nothing."""
    from datetime import time

    import pyarrow as pa

    slots = [time(9, 30), time(17, 0)]
    fact = pa.table({"k": pa.array([slots[0], slots[1], slots[0], None], pa.time64("us")),
                     "x": pa.array(range(4), pa.int64())})
    dim = pa.table({"slot": pa.array(slots, pa.time64("us")), "label": ["morning", "evening"]})
    s = joined(tmp_path, fact, dim, "slot", 4).session()
    rows = json.loads(dumps(handle(s, {"type": "dimension", "join": "d"})))["rows"]
    assert [(r["d.slot"], r["rows"]) for r in rows] == [("09:30:00", 2), ("17:00:00", 1)]
    for row, bars in zip(rows, [[0, 2], [1]], strict=True):
        reply = handle(s, {"type": "dimension_forward", "join": "d", "key": row["d.slot"]})
        assert (reply["rows"], reply["views"]["x"]) == (row["rows"], bars), reply
    assert handle(s, {"type": "dimension_forward", "join": "d", "key": "half past nine"})["message"] == (
        "key 'half past nine' is not a value of d.slot (time64[us]): give it as a time of day, e.g. '09:30:00'")


def test_a_source_of_no_rows_has_no_dimension_rows(tmp_path):
    """A fact table of no rows (its shards none): `dimension` replies with no rows (it
    failed: the rows taken had no key column to group by)."""
    import pyarrow as pa

    fact = pa.table({"k": pa.array([], pa.int64()), "x": pa.array([], pa.int64())})
    dim = pa.table({"id": pa.array([7], pa.int64()), "label": ["seven"]})
    spec = parse_dashboard({
        "name": "none", "source": {"path": str(tmp_path / "f.parquet"), "joins": [
            {"name": "d", "path": str(tmp_path / "d.parquet"), "key": "id", "on": "k"}]},
        "views": [{"name": "label", "type": "categorical", "field": "d.label"}],
        "interactions": {"crossfilter": [{"views": ["label"]}], "details": {"columns": ["x", "d.label"]}}})
    store = capture_tables(plan_capture(spec), {"a": fact}, tmp_path / "cache", CONFIG, None, {"d": dim})
    s = Dashboard(spec, plan_capture(spec), store).session()
    got = handle(s, {"type": "dimension", "join": "d"})
    assert (got["type"], got["total"], got["unmatched"], got["rows"]) == ("dimension", 0, 0, []), got
    assert handle(s, {"type": "details", "page": 0})["rows"] == []


def test_a_number_for_a_key_of_strings_is_an_error(star):
    """A string key is compared by its text, and a number has many ('7', '07', '7.0'): it
    found no row, silently (Spark would cast the text to a number, DuckDB refuses the
    comparison). The error names the column's type and how to give the key."""
    dash, _ = star
    s = dash.session()
    for key, text in [(7, "'7'"), (7.5, "'7.5'")]:
        reply = handle(s, {"type": "dimension_forward", "join": "region", "key": key})
        assert reply == {"type": "error", "id": None, "message": (
            f"key {key!r} is a number and region.code is a column of strings (string): give the "
            f"key as its text, e.g. {text}")}, reply
    code = handle(s, {"type": "dimension", "join": "region"})["rows"][0]["region.code"]
    assert handle(s, {"type": "dimension_forward", "join": "region", "key": code})["rows"] > 0


def test_an_integer_key_of_too_many_digits_is_an_error_not_an_internal_one(star):
    """An integer key given as text of more digits than Python converts (4,300) was an
    internal error (ValueError: Exceeds the limit); it is no value of the column."""
    dash, _ = star
    reply = handle(dash.session(), {"type": "dimension_forward", "join": "store", "key": "9" * 5000, "id": 3})
    assert reply == {"type": "error", "id": 3, "message": (
        f"key '{'9' * 38}… is not a value of store.store_id (int64)")}, reply


@pytest.mark.parametrize("join", ["store", "item"])
def test_an_integer_key_beyond_the_range_of_numbers_is_an_error_not_an_internal_one(star, join):
    """A dict message (Python's) may give an integer of more digits than Python prints
    (4,300): its error failed to print it (ValueError: Exceeds the limit), an internal
    error; and one of 401 digits was written out whole. No column holds one."""
    dash, _ = star
    for key, digits in ((10**5000, "5,001"), (-(10**400), "401")):
        reply = handle(dash.session(), {"type": "dimension_forward", "join": join, "key": key, "id": 4})
        assert reply == {"type": "error", "id": 4, "message": (
            f"dimension_forward.key: an integer of {digits} digits is beyond the range of numbers (±1.8e308)")}


def test_a_key_with_a_lone_surrogate_is_an_error_not_an_internal_one(star):
    """JSON may write half a UTF-16 pair alone ("\\ud800"): Arrow failed to encode such a
    key of strings, an internal error (logged with its traceback); now the message is refused."""
    dash, _ = star
    reply = handle(dash.session(), '{"type": "dimension_forward", "join": "region", "key": "\\ud800", "id": 4}')
    assert reply == {"type": "error", "id": 4, "message": (
        "dimension_forward.key: '\\ud800' holds a lone UTF-16 surrogate (U+D800), which is no Unicode character")}


@pytest.mark.parametrize("where", ["here", pytest.param("spark", marks=pytest.mark.spark)])
def test_a_nan_key_is_a_key_as_spark_joins_it(tmp_path, request, where):
    """A float key's NaN matches NaN (Spark's join: NaN = NaN, as SQL's `=` in DuckDB):
    its rows are matched, so replies write the key 'NaN' (JSON has no NaN, and a null key
    says "no match"), and `dimension_forward` takes 'NaN' back to the same rows; captured
    in this process and on Spark alike."""
    import math

    import pyarrow as pa
    import pyarrow.parquet as pq

    nan = math.nan
    fact = pa.table({"k": pa.array([1.0, nan, nan, 2.0, None, 3.0, math.inf]), "x": pa.array(range(1, 8))})
    dim = pa.table({"id": pa.array([1.0, nan, 2.0, math.inf]), "label": ["one", "nan", "two", "inf"]})
    pq.write_table(fact, tmp_path / "f.parquet")
    pq.write_table(dim, tmp_path / "d.parquet")
    spec = parse_dashboard({
        "name": "nan", "source": {"path": str(tmp_path / "f.parquet"), "joins": [
            {"name": "d", "path": str(tmp_path / "d.parquet"), "key": "id", "on": "k"}]},
        "views": [{"name": "label", "type": "categorical", "field": "d.label"},
                  {"name": "x", "type": "histogram", "field": "x", "bin": {"step": 1, "extent": [0, 8]}}],
        "interactions": {"crossfilter": [{"views": ["label", "x"]}], "details": {"columns": ["x", "d.id"]}}})
    if where == "spark":
        s = Dashboard.open(spec, spark=request.getfixturevalue("spark"), cache_dir=tmp_path / "cache",
                           config=CONFIG).session()
    else:
        store = capture_tables(plan_capture(spec), {"a": fact}, tmp_path / "cache", CONFIG, None, {"d": dim})
        s = Dashboard(spec, plan_capture(spec), store).session()
    con = Oracle(spec).con
    want = con.execute('SELECT "d.id", count(*) FROM src WHERE "d.id" IS NOT NULL GROUP BY 1 '
                       "ORDER BY 2 DESC, 1").fetchall()
    got = handle(s, {"type": "dimension", "join": "d"})
    assert [(r["d.id"], r["rows"]) for r in got["rows"]] == [
        ("NaN" if math.isnan(k) else "Infinity" if k == math.inf else k, n) for k, n in want]
    assert got["unmatched"] == con.execute('SELECT count(*) FROM src WHERE "d.id" IS NULL').fetchone()[0] == 2
    details = handle(s, {"type": "details", "page": 0})["rows"]
    assert [r["d.id"] for r in details] == [1.0, "NaN", "NaN", 2.0, None, None, "Infinity"]
    for key, value in [("NaN", nan), (nan, nan), ("Infinity", math.inf), (1, 1.0)]:
        fwd = handle(s, {"type": "dimension_forward", "join": "d", "key": key})
        bars = [r[0] for r in con.execute(f"SELECT x FROM src WHERE \"d.id\" = '{value}'::DOUBLE "
                                          "ORDER BY 1").fetchall()]
        assert fwd["rows"] == len(bars) and fwd["views"]["x"] == bars, (key, fwd)  # (bar i: x = i)


@pytest.mark.parametrize("tz", [None, "UTC"], ids=["naive", "zoned"])
def test_a_time_key_is_found_by_any_iso_spelling_of_its_instant(tmp_path, tz):
    """A timestamp or date key (a calendar or an hourly weather table) given as a time is
    given as the protocol gives times: ISO text, naive = UTC. A details row writes a zoned
    key without its offset, a `dimension` reply and a view's labels with '+00:00', a
    brush takes 'Z': each named the row for one kind of column only ('... is not a value of
    w.hour (timestamp[us, tz=UTC])'). A time the key column cannot hold (05:30 of a date)
    is no key; a number is an error."""
    from datetime import date, datetime

    import pyarrow as pa

    ts = pa.timestamp("us", tz=tz)
    hours = [datetime(2023, 3, 1, h) for h in range(4)]
    fact = pa.table({"t": pa.array([hours[1], hours[2], hours[2], None, hours[3]], ts),
                     "d": pa.array([date(2023, 3, 1), date(2023, 3, 2), date(2023, 3, 2), None, None]),
                     "x": pa.array([1, 2, 3, 4, 5], pa.int64())})
    weather = pa.table({"hour": pa.array(hours[:3], ts), "sky": ["sun", "rain", "fog"]})
    calendar = pa.table({"day": pa.array([date(2023, 3, 1), date(2023, 3, 2)]), "dow": ["Wed", "Thu"]})
    spec = parse_dashboard({
        "name": "times", "source": {"path": str(tmp_path / "f.parquet"), "joins": [
            {"name": "w", "path": str(tmp_path / "w.parquet"), "key": "hour", "on": "t"},
            {"name": "c", "path": str(tmp_path / "c.parquet"), "key": "day", "on": "d"}]},
        "views": [{"name": "sky", "type": "categorical", "field": "w.sky"},
                  {"name": "dow", "type": "categorical", "field": "c.dow"},
                  {"name": "x", "type": "histogram", "field": "x", "bin": {"step": 1, "extent": [0, 6]}}],
        "interactions": {"crossfilter": [{"views": ["sky", "dow", "x"]}],
                         "details": {"columns": ["x", "w.hour", "c.day"]}}})
    store = capture_tables(plan_capture(spec), {"a": fact}, tmp_path / "cache", CONFIG, None,
                           {"w": weather, "c": calendar})
    s = Dashboard(spec, plan_capture(spec), store).session()
    details = handle(s, {"type": "details", "page": 0})["rows"]
    dims = {j: handle(s, {"type": "dimension", "join": j})["rows"] for j in ("w", "c")}
    for key in ["2023-03-01T02:00:00", "2023-03-01T02:00:00Z", "2023-03-01T02:00:00+00:00",
                "2023-03-01T03:00:00+01:00", details[1]["w.hour"], dims["w"][0]["w.hour"]]:
        fwd = handle(s, {"type": "dimension_forward", "join": "w", "key": key})
        assert (fwd.get("rows"), fwd.get("views", {}).get("x")) == (2, [2, 3]), (key, fwd)
    for key in ["2023-03-02", "2023-03-02T00:00:00Z", "2023-03-02T00:00:00+00:00",
                details[1]["c.day"], dims["c"][0]["c.day"]]:
        fwd = handle(s, {"type": "dimension_forward", "join": "c", "key": key})
        assert (fwd.get("rows"), fwd.get("views", {}).get("x")) == (2, [2, 3]), (key, fwd)
    for join, key in [("w", "2023-03-01T02:00:00.5"), ("c", "2023-03-02T05:30:00")]:
        assert handle(s, {"type": "dimension_forward", "join": join, "key": key})["rows"] == 0, key
    assert handle(s, {"type": "dimension_forward", "join": "w", "key": 5})["message"] == (
        "key 5 is a number and w.hour is a column of times (timestamp[us" + (", tz=UTC" if tz else "")
        + "]): give the key as an ISO time, e.g. 2021-03-01 or 2021-03-01T12:30:00Z")
    assert handle(s, {"type": "dimension_forward", "join": "w", "key": "noon"})["message"].startswith(
        "key 'noon' is not a value of w.hour")


def as_js(reply: dict):
    """A reply as a page reads it: JSON whose every number is a double (JSON.parse)."""
    import json

    from brushfire import wire

    return json.loads(wire.dumps(reply), parse_int=float)


def test_integer_keys_beyond_2_53_survive_a_round_trip_through_the_page(tmp_path):
    """JSON numbers are doubles in the page: key 9007199254740993 came back as ...992 (no
    row), ...995 as ...996 (another row's bars), and details showed wrong digits. Integers
    beyond ±(2^53-1) now go as their decimal text, which `dimension_forward` takes back."""
    from star_schemas import BIG_KEYS, BIG_LABELS, make_big_keys, open_big_keys

    s = open_big_keys(tmp_path).session()
    got = as_js(handle(s, {"type": "dimension", "join": "acct"}))
    keys = [r["acct.id"] for r in got["rows"]]
    assert keys == [str(k) if abs(k) > 2**53 - 1 else float(k) for k in BIG_KEYS]
    assert [r["acct.label"] for r in got["rows"]] == BIG_LABELS
    for row in got["rows"]:  # each key, as the page sends it back, leads to its own rows
        fwd = as_js(handle(s, {"type": "dimension_forward", "join": "acct", "key": row["acct.id"]}))
        assert fwd["rows"] == row["rows"] and fwd["key"] == row["acct.id"], row
        label = s.view("label").labels.index(row["acct.label"])
        assert fwd["views"]["label"] == [label], row
    details = as_js(handle(s, {"type": "details", "page": 0, "page_size": 50}))["rows"]
    want = [k if k is None else str(k) if abs(k) > 2**53 - 1 else float(k)
            for k in make_big_keys()[0]["acct_id"].to_pylist()]  # (in rid order: one file)
    assert [r["acct_id"] for r in details] == want
    assert all(isinstance(r["rid"], float) and isinstance(r["amount"], float) for r in details)  # (numbers still)
    for key, text in [("9007199254740993.0", "key '9007199254740993.0' is not a value of acct.id (int64)"),
                      ("NaN", "key 'NaN' is not a value of acct.id (int64)"),
                      ("99999999999999999999", "key '99999999999999999999' is not a value of acct.id (int64)")]:
        assert handle(s, {"type": "dimension_forward", "join": "acct", "key": key})["message"] == text


def test_dimension_rows_carry_decimal_and_duration_columns(tmp_path):
    """A dimension's details columns of any type: a decimal price, a duration (`dimension`
    failed on them: Arrow's group-by `first` has no kernel for decimals or durations)."""
    from datetime import timedelta
    from decimal import Decimal

    import pyarrow as pa

    fact = pa.table({"k": pa.array([1, 2, 1, None, 9, 1], pa.int64()), "x": pa.array(range(6), pa.int64())})
    dim = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                    "price": pa.array([Decimal("1.25"), None, Decimal("3.50")], pa.decimal128(10, 2)),
                    "wait": pa.array([timedelta(hours=1), timedelta(0), None], pa.duration("us")),
                    "label": ["one", "two", "three"]})
    s = joined(tmp_path, fact, dim, "id", 6, details=("x", "d.price", "d.wait", "d.label")).session()
    got = handle(s, {"type": "dimension", "join": "d"})
    assert got["type"] == "dimension", got
    assert (got["total"], got["unmatched"]) == (2, 2)
    assert [(r["d.id"], r["d.label"], r["rows"]) for r in got["rows"]] == [(1, "one", 3), (2, "two", 1)]
    assert [r["d.price"] for r in got["rows"]] == [1.25, None]


def test_a_details_column_listed_twice_is_one_column_of_the_dimension_rows(tmp_path):
    """Details columns naming a joined column twice (details list it once): `dimension`
    was an internal error (a table of two columns of one name); the page, which takes its
    tables' columns from the description, showed that column twice in both."""
    import pyarrow as pa

    fact = pa.table({"k": pa.array([1, 2, 1, None], pa.int64()), "x": pa.array(range(4), pa.int64())})
    dim = pa.table({"id": pa.array([1, 2], pa.int64()), "label": ["one", "two"]})
    spec = parse_dashboard({
        "name": "twice", "source": {"path": str(tmp_path / "f.parquet"), "joins": [
            {"name": "d", "path": str(tmp_path / "d.parquet"), "key": "id", "on": "k"}]},
        "views": [{"name": "label", "type": "categorical", "field": "d.label"}],
        "interactions": {"details": {"columns": ["x", "d.label", "d.id", "d.label"]}}})
    store = capture_tables(plan_capture(spec), {"a": fact}, tmp_path / "cache", CONFIG, None, {"d": dim})
    s = Dashboard(spec, plan_capture(spec), store).session()
    got = handle(s, {"type": "dimension", "join": "d"})
    assert got["type"] == "dimension", got
    assert got["rows"] == [{"d.id": 1, "d.label": "one", "rows": 2}, {"d.id": 2, "d.label": "two", "rows": 1}]
    columns = describe_dashboard(Dashboard(spec, plan_capture(spec), store))["details"]["columns"]
    assert columns == ["x", "d.label", "d.id"] == list(handle(s, {"type": "details"})["rows"][0])[1:]
