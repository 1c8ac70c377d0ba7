"""brushfire.widget without a browser: the test is the widget's front end, through the
comm hook a kernel installs (`comm.create_comm`). Messages in, replies out; `filters` set
from Python changes the session and sends the new views; `details()` equals DuckDB's
rows; attached to a real server, the same filters give the same rows."""

from __future__ import annotations

import urllib.request
from datetime import datetime

import comm
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
import yaml
from comm.base_comm import BaseComm

import brushfire
from bars import same, sql_count, sql_values
from brushfire import BrushfireError, InteractionError, SpecError, protocol
from brushfire.describe import frontend_dist
from brushfire.server import create_app
from brushfire.server.security import Security
from brushfire.widget import DashboardWidget
from live_server import live_server
from oracle import Oracle

pytestmark = pytest.mark.spark

COLUMNS = ["date", "delay", "distance", "origin", "destination"]


class Frontend(BaseComm):
    """The widget's comm as a kernel would hold it, with the test as the front end: what
    the widget publishes is kept in `sent`; `receive` delivers a front-end message."""

    def __init__(self, **kwargs) -> None:
        self.sent: list[tuple[str, dict]] = []
        super().__init__(**kwargs)

    def publish_msg(self, msg_type: str, data=None, metadata=None, buffers=None, **keys) -> None:
        self.sent.append((msg_type, data))

    def receive(self, content: dict) -> None:
        self.handle_msg({"content": {"data": {"method": "custom", "content": content}},
                         "buffers": []})

    def custom(self) -> list[dict]:
        """The custom messages sent so far, oldest first."""
        return [d["content"] for t, d in self.sent if t == "comm_msg" and d["method"] == "custom"]

    def synced(self, name: str) -> list:
        """The values of trait `name` sent to the front end, oldest first."""
        return [d["state"][name] for t, d in self.sent
                if t == "comm_msg" and d["method"] == "update" and name in d["state"]]


@pytest.fixture(autouse=True)
def frontend(monkeypatch) -> None:
    """Widgets made in a test talk to a `Frontend` (`w.comm`)."""
    monkeypatch.setattr(comm, "create_comm", Frontend)


@pytest.fixture
def w(flights_dash) -> DashboardWidget:
    return brushfire.widget(flights_dash)


def drop_ms(reply: dict) -> dict:
    return {k: v for k, v in reply.items() if k not in ("ms", "methods")}


def test_the_front_end_gets_the_description_and_its_messages_get_protocol_replies(w, flights_dash):
    ui = w.comm
    opened = ui.sent[0][1]["state"]
    assert [v["name"] for v in opened["_description"]["views"]] == [v.name for v in flights_dash.spec.views]
    assert opened["_esm"] == (frontend_dist() / "widget.js").read_text()
    assert ".bf-dashboard" in opened["_css"]
    seen = []
    w.observe(lambda change: seen.append(change["new"]), names="filters")
    script = [{"type": "brush", "id": "a-1", "view": "delay", "interval": [-20, 40]},
              {"type": "select", "id": "a-2", "view": "origin", "values": ["ORD", "ATL"]},
              {"type": "highlight", "id": "a-3", "source": "origin", "bars": [0]},
              {"type": "brush", "id": "a-4", "view": "nope", "interval": [0, 1]},
              {"type": "details", "id": "a-5", "page": 1, "page_size": 7},
              {"type": "state", "id": "a-6"}]
    reference = flights_dash.session()  # the same script straight into protocol.handle
    for message in script:
        ui.receive(message)
    replies = ui.custom()
    assert [r["id"] for r in replies] == [m["id"] for m in script]
    assert [drop_ms(r) for r in replies] == [drop_ms(protocol.handle(reference, m)) for m in script]
    assert replies[3]["type"] == "error" and "nope" in replies[3]["message"]
    want = {"delay": {"interval": [-20, 40]}, "origin": {"values": ["ORD", "ATL"]}}
    assert w.filters == want and seen[-1] == want
    assert ui.synced("filters")[-1] == want  # the trait travelled to the front end


def test_setting_filters_from_python_updates_the_session_and_sends_the_views(w, flights_dash):
    ui = w.comm
    ui.receive({"type": "brush", "id": 1, "view": "distance", "interval": [100, 900]})
    w.filters = {"delay": {"interval": [-20, 40]}, "origin": {"values": ["ORD", "(other)"]},
                 "destination": {"parameter": "ATL"},
                 "day": {"interval": [datetime(2001, 2, 1), datetime(2001, 4, 15)]}}
    want = {"delay": {"interval": [-20, 40]}, "origin": {"values": ["ORD", "(other)"]},
            "destination": {"parameter": "ATL"},
            "day": {"interval": ["2001-02-01T00:00:00", "2001-04-15T00:00:00"]}}
    assert w.filters == want  # as the replies carry them; the distance brush is gone
    assert protocol.filters_json(w.session) == want
    state = ui.custom()[-1]
    assert state["type"] == "state" and state["id"] is None and state["filters"] == want
    oracle = Oracle(flights_dash.spec)
    oracle.brush("delay", (-20, 40))
    oracle.select("origin", ["ORD", "(other)"])
    oracle.set_parameter("destination", "ATL")
    oracle.brush("day", ("2001-02-01T00:00:00", "2001-04-15T00:00:00"))
    for v in flights_dash.spec.views:
        assert same(state["views"][v.name]["values"], sql_values(oracle, flights_dash, v.name)), v.name
    assert state["selected"] == sql_count(oracle) > 0
    assert ui.synced("filters")[-1] == want


@pytest.mark.parametrize(("bad", "message"), [
    ({"delay": {"interval": [0, 10]}, "speed": {"interval": [1, 2]}},
     "filters.speed: no brushable view or parameter named 'speed'; known: "),
    ({"delay": {"interval": [0, 10]}, "origin": {"values": [{"a": 1}]}},
     "filters.origin.values[0]: {'a': 1} is not one of the values: 'ORD'"),
    ({"delay": {"interval": "wide"}}, "filters.delay.interval: 'wide' is not [lo, hi]"),
    ({"delay": [0, 10]}, "filters.delay: [0, 10] is not a tagged filter; a filter is one of "),
    ({"delay_by_hour": {"interval": [1, 2]}}, "filters.delay_by_hour: no brushable view or parameter named"),
])
def test_bad_filters_raise_and_change_nothing(w, bad, message):
    w.filters = {"hour": {"interval": [6, 12]}}
    before = w.session.views()
    sent = len(w.comm.custom())
    with pytest.raises(InteractionError) as e:
        w.filters = bad
    assert message in str(e.value)
    assert w.filters == {"hour": {"interval": [6, 12]}}
    assert protocol.filters_json(w.session) == {"hour": {"interval": [6, 12]}}
    assert w.session.views() == before
    assert w.comm.custom()[sent:] == []  # the front end keeps showing the same state


def test_details_are_the_rows_sql_selects(w, flights_dash):
    w.filters = {"delay": {"interval": [10, 60]}, "origin": {"values": ["ORD", "DFW", "LAX"]},
                 "hour": {"interval": [5.5, 13.25]}}
    oracle = Oracle(flights_dash.spec)
    oracle.brush("delay", (10, 60))
    oracle.select("origin", ["ORD", "DFW", "LAX"])
    oracle.brush("hour", (5.5, 13.25))
    df = w.details()
    assert list(df.columns) == ["rid", *COLUMNS]
    want = oracle.rows(COLUMNS, oracle.where(None))
    got = sorted((tuple(_py(x) for x in row) for row in df[COLUMNS].itertuples(index=False)), key=repr)
    assert len(got) == len(want) == sql_count(oracle) > 20
    assert got == want
    assert df["rid"].is_unique
    assert len(w.details(limit=7)) == 7 and w.details(limit=0).empty
    table = w.details(limit=5, arrow=True, columns=["delay"])
    assert isinstance(table, pa.Table) and table.column_names == ["rid", "delay"]
    w.filters = {}
    assert len(w.details()) == flights_dash.store.n_rows


def test_export_writes_the_rows_behind_the_selection(w, tmp_path):
    w.filters = {"delay": {"interval": [10, 60]}, "destination": {"parameter": "ATL"}}
    want = w.details(arrow=True)
    assert 0 < want.num_rows < 4000
    assert pq.read_table(w.export(tmp_path / "rows.parquet")).equals(want)
    csv = pcsv.read_csv(w.export(tmp_path / "rows.txt", format="csv", columns=["delay"]))
    assert csv.column_names == ["rid", "delay"] and csv["rid"].to_pylist() == want["rid"].to_pylist()
    with pytest.raises(InteractionError, match="format: 'xls' is not an export format"):
        w.export(tmp_path / "rows.xls")


def test_attached_to_a_server_the_same_filters_give_the_same_rows(flights_dash, monkeypatch, tmp_path):
    local = brushfire.widget(flights_dash)
    local.filters = {"distance": {"interval": [300, 1200]}, "destination": {"parameter": "ORD"}}
    monkeypatch.delenv("BRUSHFIRE_TOKEN", raising=False)
    token = "widget-test-token"
    rules = Security.for_bind("127.0.0.1", token=token, allow_origins=["http://127.0.0.1:8888"])
    with live_server(create_app([flights_dash], security=rules)) as addr:
        with pytest.raises(BrushfireError, match="HTTP 401(.|\n)*needs its access token"):
            brushfire.widget(url=f"http://{addr}/", dashboard="flights")
        remote = brushfire.widget(url=f"http://{addr}/?token={token}", dashboard="flights")  # as printed
        cors = urllib.request.urlopen(urllib.request.Request(  # the front end reads it from the notebook's origin
            f"http://{addr}/api/dashboards/flights?token={token}", headers={"Origin": "http://127.0.0.1:8888"}))
        assert cors.headers["access-control-allow-origin"] == "http://127.0.0.1:8888"
        state = remote.comm.sent[0][1]["state"]
        assert state["_url"] == f"http://{addr}" and state["_token"] == token
        assert brushfire.widget(url=f"http://{addr}", dashboard="flights", token=token)._token == token
        monkeypatch.setenv("BRUSHFIRE_TOKEN", token)
        assert brushfire.widget(url=f"http://{addr}", dashboard="flights")._token == token
        remote.filters = local.filters  # as the front end would mirror them
        rows = remote.details(arrow=True)
        assert rows.num_rows > 0 and rows.equals(local.details(arrow=True))  # as Parquet: types kept
        assert remote.details(limit=3)["rid"].tolist() == rows["rid"].to_pylist()[:3]
        assert pq.read_table(remote.export(tmp_path / "remote.parquet")).equals(rows)
        with pytest.raises(InteractionError, match="filters.speed: no brushable view or parameter named 'speed'"):
            remote.filters = {"speed": {"interval": [1, 2]}}
        with pytest.raises(InteractionError, match="filters.speed: \\[1, 2\\] is not a tagged filter"):
            remote.filters = {"speed": [1, 2]}
        remote.filters = {"distance": {"interval": ["far", 2]}}  # the server checks values ...
        with pytest.raises(InteractionError, match="filters.distance.interval\\[0\\]: 'far' is not a number"):
            remote.details()  # ... and says what is wrong
        with pytest.raises(BrushfireError, match="has no dashboard named 'nope'; it has: flights"):
            brushfire.widget(url=f"http://{addr}", dashboard="nope")
    with pytest.raises(BrushfireError, match=f"cannot reach a Brushfire server at http://{addr}"):
        brushfire.widget(url=f"http://{addr}")


@pytest.mark.parametrize(("bad", "message"), [
    ({"hx": {"interval": [float("nan"), 60]}}, "filters.hx.interval[0]: NaN is not a bound (use null for an open end)"),
    ({"pm": {"parameter": np.float64("nan")}}, "filters.pm.parameter: NaN is not a bound (use null for an open end)"),
    # numpy's not-a-time was made null too (an open end), as pandas' is not
    ({"week": {"interval": [np.datetime64("NaT"), datetime(2001, 4, 15)]}}, "filters.week.interval[0]: 'NaT' is not an ISO time; write e.g. 2021-03-01 or 2021-03-01T12:30:00Z"),
    ({"week": {"interval": np.array(["NaT", "2001-04-15"], "datetime64[s]")}},
     "filters.week.interval[0]: 'NaT' is not an ISO time; write e.g. 2021-03-01 or 2021-03-01T12:30:00Z"),
    ({"week": {"interval": [pd.NaT, datetime(2001, 4, 15)]}}, "filters.week.interval[0]: 'NaT' is not an ISO time; write e.g. 2021-03-01 or 2021-03-01T12:30:00Z"),
])
def test_nan_and_infinities_in_filters_are_refused_not_made_null(rich_local, bad, message):
    """A DataFrame's NaN or an infinity set as a bound was made null (as JSON would) before
    the protocol saw it: [nan, 60] selected x <= 60 (an open end), a slider's NaN or inf
    left it inactive, silently. Now the protocol refuses them, naming the entry."""
    w = brushfire.widget(rich_local)
    w.filters = {"cat": {"values": ["c01"]}}
    with pytest.raises(InteractionError) as e:
        w.filters = bad
    assert str(e.value) == message
    assert w.filters == protocol.filters_json(w.session) == {"cat": {"values": ["c01"]}}


def test_an_infinite_bound_is_a_bound_and_reads_back_as_the_wire_spells_it(rich_local):
    """A float field's infinity as a bound (a DataFrame's np.inf) is compared as the number
    it is, and `filters` reads it back as 'Infinity' (JSON has none; null, as it was, is
    an open end: [inf, null] read back and set again selected every row)."""
    w = brushfire.widget(rich_local)
    w.filters = {"hk": {"interval": [np.float64(np.inf), None]}}
    assert w.filters == {"hk": {"interval": ["Infinity", None]}}
    views = protocol.handle(w.session, {"type": "state"})["views"]
    w.filters = {}
    w.filters = {"hk": {"interval": ["Infinity", None]}}
    assert protocol.handle(w.session, {"type": "state"})["views"] == views


def test_filters_set_with_numpy_values_hold_plain_json_values(rich_local):
    """numpy's numbers (a DataFrame's cells) set as filters are kept as Python's: the trait
    mirrors the protocol's state, and attached, it is sent to the server as JSON (np.int64
    is no int: the state was refused with a serializer's error)."""
    import json

    import numpy as np

    state = {"hk": {"interval": [np.int64(0), np.float32(50.5)]}, "cat": {"values": np.array(["c00"])}}
    want = {"hk": {"interval": [0, 50.5]}, "cat": {"values": ["c00"]}}
    local = brushfire.widget(rich_local)
    local.filters = state
    attached = DashboardWidget(url="http://127.0.0.1:9", name="rich")  # (no server: not checked)
    attached.filters = state
    for w in (local, attached):
        assert w.filters == want and json.loads(json.dumps(w.filters)) == want
        assert type(w.filters["hk"]["interval"][0]) is int


def test_a_bad_spec_or_a_missing_build_says_what_to_do(tmp_path, monkeypatch, flights_dash):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nsource: {path: x.parquet}\nviews:\n  - name: a\n    type: histogram\n"
                   "    field: x\n    bin: {step: 1, extent: [0, 9]}\n    colour: red\n")
    with pytest.raises(SpecError) as e:
        brushfire.widget(str(bad))
    assert f"{bad}:8: views[0].colour" in str(e.value)
    assert e.value._render_traceback_() == [f"\x1b[0;31mSpecError\x1b[0m: {e.value}"]
    monkeypatch.setenv("BRUSHFIRE_FRONTEND", str(tmp_path))
    with pytest.raises(BrushfireError, match="run `make frontend`"):
        brushfire.widget(flights_dash)


def test_a_widget_of_the_wrong_arguments_names_the_argument(rich_local):
    """An address that is no text (AttributeError: 'int' object has no attribute 'decode')
    and a DashboardWidget of what is no Dashboard ('int' object has no attribute 'session')
    say which argument is wrong."""
    with pytest.raises(BrushfireError, match="^url: 3 is not a server's address"):
        brushfire.widget(url=3)
    with pytest.raises(BrushfireError, match="^url: b'http://x' is not a server's address"):
        DashboardWidget.attach(b"http://x")
    with pytest.raises(BrushfireError, match="^dashboard: DashboardSpec .* is not an open Dashboard"):
        DashboardWidget(rich_local.spec)
    assert DashboardWidget(rich_local).dashboard is rich_local


def test_an_attached_widget_checks_its_columns_as_the_engine_in_the_kernel_does(tmp_path):
    """Attached, a column's name given alone went to the server as its letters, 'c,a,t'."""
    w = DashboardWidget(url="http://127.0.0.1:9", name="rich")  # (refused before any request)
    with pytest.raises(InteractionError, match="^columns: 'cat' is not a list of column names"):
        w.details(columns="cat")
    with pytest.raises(InteractionError, match="^columns: \\[1\\] is not a list of column names"):
        w.export(tmp_path / "rows.csv", columns=[1])


def test_a_capture_failure_says_why(spark, flights_spec, tmp_path):
    spec = yaml.safe_load(flights_spec.read_text())
    # valid Spark SQL that fails while the job runs (ANSI: division by zero)
    spec["source"]["columns"]["hour"] = "hour(date) + 1 / (minute(date) - minute(date))"
    with pytest.raises(SpecError) as e:  # (the failing expression found: named at its key)
        brushfire.widget(spec, spark=spark, cache_dir=tmp_path)
    (shown,) = e.value._render_traceback_()
    assert "source.columns.hour: Spark fails on a row: Division by zero" in shown  # the Java cause
    assert "try_divide" in shown and "Traceback" not in shown and "py4j" not in shown


def _py(x):
    """A pandas cell as the oracle's rows hold it."""
    if hasattr(x, "to_pydatetime"):
        return x.to_pydatetime().replace(tzinfo=None).isoformat()
    x = x.item() if hasattr(x, "item") else x
    if isinstance(x, float):  # pandas holds an int column with nulls as floats, nulls as NaN
        return None if x != x else int(x) if x.is_integer() else x
    return x


def test_a_parameter_default_is_active_from_the_start(flights_dash):
    from brushfire import Dashboard

    ix = flights_dash.spec.interactions
    params = [p.model_copy(update={"default": "ATL"}) for p in ix.parameters]
    spec = flights_dash.spec.model_copy(update={"interactions": ix.model_copy(update={"parameters": params})})
    w = brushfire.widget(Dashboard(spec, flights_dash.plan, flights_dash.store))
    assert w.filters == {"destination": {"parameter": "ATL"}}
    assert w.comm.sent[0][1]["state"]["_description"]["filters"] == {"destination": {"parameter": "ATL"}}
    reference = flights_dash.session()
    reference.set_parameter("destination", "ATL")
    assert w.session.count_selected() == reference.count_selected() < flights_dash.store.n_rows


def test_the_front_end_gets_the_version_and_forward_lineage(w, flights_dash):
    from brushfire import versions

    ui = w.comm
    assert ui.sent[0][1]["state"]["_description"]["version"] == versions.public(
        versions.served(flights_dash))
    ui.receive({"type": "forward", "id": "f-1", "rids": [3]})
    (reply,) = ui.custom()
    assert reply["type"] == "forward" and reply["id"] == "f-1"
    assert reply["views"] == flights_dash.session().forward([3])


def growing_widget(spark, tmp_path):
    """A widget over a folder of one Parquet file (800 rows); returns (folder, widget)."""
    from brushfire import Dashboard
    from rows import make_rows

    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(make_rows(800, 1), folder / "part-0.parquet")
    spec = {"name": "growing", "source": {"path": str(folder), "format": "parquet"},
            "views": [{"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
                      {"name": "cat", "type": "categorical", "field": "cat", "top": 4}],
            "interactions": {"crossfilter": [{"views": ["hx", "cat"]}]}}
    return folder, brushfire.widget(Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache"))


def test_reload_picks_up_new_data_and_keeps_the_filters(spark, tmp_path):
    from rows import make_rows

    folder, w = growing_widget(spark, tmp_path)
    w.filters = {"hx": {"interval": [20, 60]}}
    assert not w.reload()  # nothing new: nothing done
    before = w.session.view("cat").counts
    pq.write_table(make_rows(400, 2), folder / "part-1.parquet")
    assert w.reload()
    assert w.dashboard.store.n_rows == 1200 and w.filters == {"hx": {"interval": [20, 60]}}
    after = w.session.view("cat").counts
    assert sum(after) > sum(before)  # the views count the new rows, under the same brush
    assert w.comm.synced("_description")[-1]["rows"] == 1200  # the front end redraws


def test_reload_closes_the_session_it_replaces(spark, tmp_path):
    """The replaced session's background work stops and what it built is freed, as the
    server's sessions moving to new data do (server/app.py, _move): many reloads must not
    keep a session (and its capture) per reload."""
    from rows import make_rows

    folder, w = growing_widget(spark, tmp_path)
    w.filters = {"hx": {"interval": [20, 60]}}
    old = w.session.inner
    pq.write_table(make_rows(300, 2), folder / "part-1.parquet")
    assert w.reload()
    assert old._closed and not w.session.inner._closed


def test_watch_goes_on_after_a_failing_reload_of_any_kind(spark, tmp_path, monkeypatch, capsys):
    """A reload failing with what is not a BrushfireError (an OSError reading the folder,
    Spark's own error) is said, once, and the watch goes on: the next good data are
    picked up."""
    import time

    from brushfire import Dashboard
    from rows import make_rows

    folder, w = growing_widget(spark, tmp_path)
    refresh = Dashboard.refresh
    failures = []

    def failing(self, *args, **kwargs):
        if len(failures) < 3:
            failures.append(1)
            msg = "[Errno 5] Input/output error: 'part-1.parquet'"
            raise OSError(msg)
        return refresh(self, *args, **kwargs)

    monkeypatch.setattr(Dashboard, "refresh", failing)
    stop = w.watch(0.05)
    try:
        pq.write_table(make_rows(300, 2), folder / "part-1.parquet")
        deadline = time.monotonic() + 240
        while w.dashboard.store.n_rows != 1100:
            assert time.monotonic() < deadline, "the watch stopped at the failure"
            time.sleep(0.1)
    finally:
        stop.set()
    out = capsys.readouterr().out
    assert out.count("Input/output error") == 1, out


@pytest.mark.parametrize("every", [0, -1, float("nan"), float("inf"), "5", None, True])
def test_watch_refuses_a_pause_that_is_no_number_of_seconds(rich_local, monkeypatch, every):
    """0 or less started a thread checking the source without a pause; a pause that is no
    number started one that died at its first wait, unsaid: the Event came back as if
    watching."""
    import threading

    from brushfire import Dashboard

    checks = []
    monkeypatch.setattr(Dashboard, "refresh", lambda self, *a, **k: checks.append(1))
    w = brushfire.widget(rich_local)
    before = threading.active_count()
    with pytest.raises(BrushfireError, match="^every: .* is not a number of seconds > 0"):
        w.watch(every)
    assert threading.active_count() == before and checks == []


@pytest.mark.parametrize("changed_again", [False, True])
def test_a_reload_asked_for_while_the_watch_captures_waits_for_it(rich_local, monkeypatch, changed_again):
    """As the server's (tests/server/test_reload_order.py): `reload()` while `watch`'s
    reload captures waits for it, then checks again, rather than capturing the same data
    alongside it; the widget ends on the capture of the data as they are, with one
    session open (without Spark: rich_local's store stands for every capture)."""
    from brushfire import Dashboard
    from reloads import Contended, Data, race

    data = Data()

    def capture_of(version: int) -> Dashboard:
        dash = Dashboard(rich_local.user_spec, rich_local.plan, rich_local.store)
        dash.version = version
        return dash

    def refresh(self, spark=None, progress=None):  # Dashboard.refresh over `data`
        return capture_of(data.capture()) if self.version != data.version else None

    monkeypatch.setattr(Dashboard, "refresh", refresh)
    w = brushfire.widget(capture_of(0))
    w.filters = {"hx": {"interval": [20, 60]}}
    first = w.session
    # (raising=False: without the fix there is no lock; the second reload then captures
    # alongside the first, which sets `arrived` too)
    monkeypatch.setattr(w, "_reloading", Contended(data.arrived), raising=False)
    results = race(w.reload, data, changed_again)
    assert data.most == 1  # never two captures at once
    assert data.captures == ([1, 2] if changed_again else [1])
    assert w.dashboard.version == data.version and results == {"watch": True, "asked": True}
    assert w.filters == {"hx": {"interval": [20, 60]}} and first.inner._closed


def test_closing_the_widget_closes_its_session(w):
    """Its background work stops and what it built is freed (issue 36); the dashboard
    stays open for other widgets."""
    w.filters = {"delay": {"interval": [-20, 40]}, "distance": {"interval": [200, 1800]}}
    inner = w.session.inner
    w.close()
    assert inner._closed and not inner._tiles and not inner._tile_jobs and inner._idle is None


def test_a_joins_rows_in_the_kernel_and_from_a_server(tmp_path):
    """`details(join=)` and `export(join=)`: a join's rows behind the selection, as the
    panel lists them (the export's, brushfire/export.py), in the kernel or from a server."""
    from brushfire import export
    from star_schemas import open_star

    dash = open_star(tmp_path / "star", seed=4)
    state = {"amount": {"interval": [0, 60]}}
    local = brushfire.widget(dash)
    local.filters = state
    s = dash.session()
    protocol.handle(s, {"type": "filters", "filters": state})
    want = export.selection_table(s, join="store")
    assert want.num_rows > 0 and want.column_names == ["store.store_id", "store.city", "rows"]
    assert local.details(arrow=True, join="store").equals(want)
    assert pq.read_table(local.export(tmp_path / "stores.parquet", join="store")).equals(want)
    with live_server(create_app([dash])) as addr:
        remote = brushfire.widget(url=f"http://{addr}", dashboard="star")
        remote.filters = state
        assert remote.details(arrow=True, join="store").equals(want)
        assert pq.read_table(remote.export(tmp_path / "remote.parquet", join="store")).equals(want)
        with pytest.raises(InteractionError, match="'nope' is not a join of this dashboard"):
            remote.details(join="nope")


def test_an_attached_widget_takes_a_filter_on_a_joined_column_as_the_kernel_does(tmp_path):
    """A filter on a column (`column:<name>`, the `filter` message's entry of the state: any
    column, a joined one too) was refused attached ('no brushable view or parameter named
    'column:store.city''), where the server's session and the engine in the kernel take it;
    so was the front end's copy of a session's state holding one. Its shape is checked as
    the server checks it; its column by the server, when applied."""
    from star_schemas import open_star

    dash = open_star(tmp_path / "star", seed=4)
    state = {"column:store.city": {"values": ["city1", None]}, "amount": {"interval": [0, 60]}}
    bad = {"column:store.city": {"parameter": "city1"}}
    with live_server(create_app([dash])) as addr:
        w = brushfire.widget(url=f"http://{addr}", dashboard="star")
        w.filters = state
        assert w.filters == state
        w.set_state({"filters": {}})  # (the front end's copy of the session's state)
        w.set_state({"filters": state})
        assert w.filters == state
        want = protocol.handle(dash.session(), {"type": "filters", "filters": bad})["message"]
        with pytest.raises(InteractionError) as e:
            w.filters = bad
        assert str(e.value) == want == "filters.column:store.city: a filter on a source column takes an interval or values"
        assert w.filters == state


def test_an_attached_widget_reads_a_column_whose_name_holds_a_comma(tmp_path):
    """details(columns=[...]) attached sends the names joined by commas (the rows API's
    `columns=a,b`), and the server split a joined column 'price.usd, net' at its comma:
    refused ("no column 'price.usd'"), where the engine in the kernel gives its rows. The
    server reads a declared column's name whole."""
    from brushfire.capture.local import capture_tables
    from brushfire.plan import plan_capture
    from brushfire.spec import parse_dashboard

    fact = pa.table({"k": pa.array([1, 2, 1, 3], pa.int64()), "x": pa.array([1.0, 2.0, 3.0, 4.0])})
    dim = pa.table({"id": pa.array([1, 2], pa.int64()), "usd, net": [10.5, 20.5], "usd": [1.0, 2.0]})
    spec = parse_dashboard({
        "name": "comma", "source": {"path": str(tmp_path / "f.parquet"), "joins": [
            {"name": "price", "path": str(tmp_path / "d.parquet"), "key": "id", "on": "k"}]},
        "views": [{"name": "x", "type": "histogram", "field": "x", "bin": {"step": 1, "extent": [0, 5]}}],
        "interactions": {"details": {"columns": ["x", "price.usd, net", "price.usd"]}}})
    plan = plan_capture(spec)
    dash = brushfire.Dashboard(spec, plan, capture_tables(plan, {"a": fact}, tmp_path / "cache", None, None,
                                                          {"price": dim}))
    columns = ["price.usd, net", "x"]
    want = brushfire.widget(dash).details(arrow=True, columns=columns)
    assert want.column_names == ["rid", *columns] and want["price.usd, net"].to_pylist() == [10.5, 20.5, 10.5, None]
    with live_server(create_app([dash])) as addr:
        remote = brushfire.widget(url=f"http://{addr}", dashboard="comma")
        assert remote.details(arrow=True, columns=columns).equals(want)
        assert remote.details(arrow=True, columns=["price.usd"]).column_names == ["rid", "price.usd"]


def test_integer_keys_beyond_2_53_reach_the_front_end_as_their_digits(tmp_path):
    """The widget's panel reads replies as the page does (JSON numbers as doubles): its
    dimension rows' keys and details' int64 values beyond ±(2^53-1) come as decimal text,
    and a key sent back so leads to that row's rows."""
    import json

    from star_schemas import BIG_KEYS, open_big_keys

    w = brushfire.widget(open_big_keys(tmp_path / "big"))
    w.comm.receive({"type": "dimension", "id": 1, "join": "acct"})
    w.comm.receive({"type": "details", "id": 2, "page": 0})
    dimension, details = (json.loads(json.dumps(m), parse_int=float) for m in w.comm.custom()[-2:])
    assert [r["acct.id"] for r in dimension["rows"]] == \
        [str(k) if abs(k) > 2**53 - 1 else float(k) for k in BIG_KEYS]
    assert details["rows"][0]["acct_id"] == "9007199254740993"
    w.comm.receive({"type": "dimension_forward", "id": 3, "join": "acct", "key": dimension["rows"][1]["acct.id"]})
    forward = w.comm.custom()[-1]
    assert forward["key"] == "9007199254740995" and forward["rows"] == dimension["rows"][1]["rows"]


def test_details_keep_a_joined_integer_columns_digits(tmp_path):
    """A joined integer column has nulls (the rows without a match), which pandas' default
    held as floats: details() showed ids as 7.0, and an int64 key beyond 2^53 as another
    number (9007199254740993 as 9007199254740992). Such a column is pandas' nullable
    integers; the table (arrow=True) as it was."""
    from star_schemas import BIG_KEYS, open_big_keys

    w = brushfire.widget(open_big_keys(tmp_path / "big"))
    w.filters = {}
    columns = ["acct.id", "acct_id", "acct.label"]  # (the join's key, and the source's column it holds)
    table = w.details(arrow=True, columns=columns)
    df = w.details(columns=columns)
    assert [str(df[c].dtype) for c in ["rid", *columns]] == ["int64", "Int64", "Int64", "object"]
    for c in columns:
        assert [None if v is pd.NA else v for v in df[c]] == table[c].to_pylist(), c
    assert list(df["acct.id"])[0] == BIG_KEYS[0] == 9007199254740993
    assert df["acct.id"].isna().sum() == 2 and df["acct_id"].isna().sum() == 1  # (no match: a key no row has, and null)


def test_replies_and_the_description_reach_the_front_end_as_json_the_page_gets(tmp_path):
    """A kernel sends comm messages as strict JSON (jupyter_client's json_packer): the
    description and replies holding NaN or ±inf (here the max of a measure with +inf,
    which the WebSocket sends as null, wire.dumps) went out with the text 'inf' and 'nan'
    instead (after a warning), which the widget's views drew as -∞ (`formatNumber`: 'inf'
    is not > 0). They are now what the page reads (wire.as_sent)."""
    import json
    import math

    import numpy as np
    from jupyter_client.session import json_packer

    from brushfire.capture.local import capture_table
    from brushfire.plan import plan_capture
    from brushfire.spec import parse_dashboard

    m = np.arange(40, dtype=float)
    m[:3], m[3:6] = math.inf, math.nan
    table = pa.table({"c": ["a", "b"] * 20, "m": m, "x": np.arange(40) % 10})
    pq.write_table(table, tmp_path / "t.parquet")
    spec = parse_dashboard({
        "name": "inf", "source": {"path": str(tmp_path / "t.parquet")},
        "views": [{"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 1, "extent": [0, 10]}},
                  {"name": "top", "type": "categorical", "field": "c", "brush": "none",
                   "aggregate": {"op": "max", "field": "m"}}],
        "interactions": {"crossfilter": [{"views": ["hx", "top"]}]}})
    plan = plan_capture(spec)
    dash = brushfire.Dashboard(spec, plan, capture_table(plan, table, tmp_path / "cache"))
    w = brushfire.widget(dash)
    w.comm.receive({"type": "brush", "id": 1, "view": "hx", "interval": [0, 4]})
    reply = w.comm.custom()[-1]
    description = w.comm.sent[0][1]["state"]["_description"]
    for sent in (reply, description):
        json.dumps(sent, allow_nan=False)  # as a kernel sends it: strict JSON
        assert json.loads(json_packer(sent)) == sent
    assert reply["views"]["top"]["values"][0] is None  # (+inf, as the WebSocket says)
    assert description["views"][1]["values"][0] is None
