"""`brushfire bench` end to end on small data: real bench servers (one process per
engine) on loopback, real WebSocket clients, DuckDB checking every update reply."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import replace

import pytest
import uvicorn
import yaml

from brushfire import Dashboard, protocol
from brushfire.baselines import with_engine
from brushfire.bench.check import Checker
from brushfire.bench.trace import Event, Trace, save_trace, subsample
from brushfire.bench.workloads import DashboardInfo, clicks, human, multi, params, slide
from brushfire.cli import main
from brushfire.describe import describe_dashboard
from brushfire.errors import NotCapturedError
from brushfire.server import create_app

pytestmark = pytest.mark.spark


def bench_spec(path) -> dict:
    return {
        "name": "benchy",
        "source": {"path": str(path)},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
            {"name": "hk", "type": "histogram", "field": "k",
             "bin": {"step": 7, "extent": [-10, 100], "clamp": True}},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 5},
            {"name": "week", "type": "temporal", "field": "t", "unit": "week"},
            {"name": "mean_m", "type": "histogram", "field": "k", "brush": "none",
             "bin": {"step": 20, "extent": [-20, 120]}, "aggregate": {"op": "mean", "field": "m"}},
        ],
        "interactions": {"crossfilter": [{"views": ["hx", "hk", "cat", "week", "mean_m"]}],
                         "details": {"columns": ["x", "cat", "t"], "page_size": 5},
                         "parameters": [{"name": "pdest", "field": "dest"}]},
    }


@pytest.fixture(scope="module")
def captured(spark, small_parquet, tmp_path_factory):
    """The spec as a file and its lineage in a cache the bench servers load (no Spark)."""
    folder = tmp_path_factory.mktemp("bench")
    spec = folder / "benchy.yaml"
    spec.write_text(yaml.safe_dump(bench_spec(small_parquet)))
    cache = folder / "cache"
    dash = Dashboard.open(spec, spark=spark, cache_dir=cache)
    return spec, cache, dash


def mixed_trace(dash) -> Trace:
    """Sliding brushes (a subsample), multi-brush drags, clicks and parameter changes."""
    info = DashboardInfo.from_description(describe_dashboard(dash))
    parts = [subsample(slide(info), 120), multi(info, seed=1, events=120), clicks(info, events=40),
             params(info, events=30)]
    events, t = [], 0.0
    for part in parts:
        events += [replace(e, t=t + e.t) for e in part.events]
        t = events[-1].t + 1
    return Trace(dash.name, tuple(events), {"workload": "mixed"})


def run_bench(capsys, *args: str) -> tuple[int, str]:
    code = main(["bench", *args])
    return code, capsys.readouterr().out


def test_every_engine_answers_each_interaction_as_sql_does(captured, tmp_path, capsys):
    spec, cache, dash = captured
    trace = mixed_trace(dash)
    path = save_trace(trace, tmp_path / "mixed.json")
    code, out = run_bench(capsys, "--spec", str(spec), "--cache-dir", str(cache), "--trace", str(path),
                          "--engine", "brushfire,duckdb,preagg", "--warmup", "10", "--check",
                          "--out-dir", str(tmp_path), "--name", "mixed")
    assert code == 0, out
    result = json.loads((tmp_path / "mixed.json").read_text())
    n = len(trace.events)
    for engine in ("brushfire", "duckdb", "preagg"):
        run = result["engines"][engine]
        assert run["summary"]["replies"] == {"update": n}, (engine, run["summary"]["first_errors"])
        assert run["check"]["checked"] == n and run["check"]["mismatches"] == 0, run["check"]
        assert run["summary"]["latency_ms"]["n"] == n and run["summary"]["latency_ms"]["p50"] > 0
    assert set(result["ratios"]) == {"duckdb", "preagg"}
    assert result["ratios"]["duckdb"]["p50_ratio"] == pytest.approx(
        result["engines"]["brushfire"]["summary"]["latency_ms"]["p50"]
        / result["engines"]["duckdb"]["summary"]["latency_ms"]["p50"])
    assert "0 mismatches in" in out and "bf/p50" in out
    for what in ("latency", "trace", "selected", "compare"):
        assert (tmp_path / f"mixed-{what}.png").stat().st_size > 10_000


def test_human_brushing_is_answered_as_sql_does(captured, tmp_path, capsys):
    """Zero-width, inverted and jumping brushes off pixel edges, among fixed ones (preagg
    snaps such bounds to pixels, as Mosaic does, so it is left out); every session starts
    from a selection state (--state), which the replies' filters then hold."""
    spec, cache, dash = captured
    trace = human(DashboardInfo.from_description(describe_dashboard(dash)), seed=3, events=300)
    path = save_trace(trace, tmp_path / "human.json")
    state = {"pdest": {"parameter": "BBB"}, "cat": {"values": ["c01", "(other)"]}}
    code, out = run_bench(capsys, "--spec", str(spec), "--cache-dir", str(cache), "--trace", str(path),
                          "--engine", "brushfire,duckdb", "--warmup", "0", "--check", "--no-plots",
                          "--out-dir", str(tmp_path), "--name", "human", "--state", json.dumps(state),
                          "--save-trace", str(tmp_path / "replayed.json"))
    assert json.loads((tmp_path / "replayed.json").read_text())["state"] == state
    assert code == 0, out
    runs = json.loads((tmp_path / "human.json").read_text())["engines"]
    for run in runs.values():
        assert run["summary"]["replies"] == {"update": 300}, run["summary"]["first_errors"]
        assert run["check"]["checked"] == 300 and run["check"]["mismatches"] == 0, run["check"]


def test_in_process_replays_time_the_engines_alone_and_check_as_sql_does(captured, tmp_path, capsys):
    spec, cache, dash = captured
    code, out = run_bench(capsys, "--spec", str(spec), "--cache-dir", str(cache), "--in-process",
                          "--engine", "brushfire,duckdb", "--workload", "multi", "--events", "150",
                          "--clients", "2", "--warmup", "5", "--check", "--no-plots",
                          "--state", '{"pdest": {"parameter": "CCC"}}',
                          "--out-dir", str(tmp_path), "--name", "here")
    assert code == 0, out
    result = json.loads((tmp_path / "here.json").read_text())
    assert result["meta"]["in_process"] is True
    n = 2 * result["meta"]["trace"]["events"]  # two clients
    for run in result["engines"].values():
        assert run["summary"]["replies"] == {"update": n}, run["summary"]["first_errors"]
        assert run["check"]["checked"] == n and run["check"]["mismatches"] == 0, run["check"]
        assert 0 < run["summary"]["engine_ms"]["p50"] <= run["summary"]["latency_ms"]["p50"]
    assert main(["bench", "--spec", str(spec), "--in-process", "--paced"]) == 1
    assert "--in-process opens --spec here: not with --url or --paced" in capsys.readouterr().err


def test_paced_clients_get_every_message_answered(captured, tmp_path, capsys):
    spec, cache, dash = captured
    info = DashboardInfo.from_description(describe_dashboard(dash))
    burst = [Event(0.0, e.message) for e in slide(info, views=["hx"], widths=(0.2,)).events[:300]]
    path = save_trace(Trace(dash.name, tuple(burst)), tmp_path / "burst.json")
    code, out = run_bench(capsys, "--spec", str(spec), "--cache-dir", str(cache), "--trace", str(path),
                          "--paced", "--clients", "3", "--warmup", "0", "--check", "--no-plots",
                          "--out-dir", str(tmp_path), "--name", "burst")
    assert code == 0, out
    run = json.loads((tmp_path / "burst.json").read_text())["engines"]["brushfire"]
    records = run["records"]
    for client in range(3):  # each message answered once: an update, or skipped by a newer brush
        mine = [r for r in records if r["client"] == client]
        assert sorted(r["index"] for r in mine) == list(range(300))
        assert {r["reply_type"] for r in mine} <= {"update", "skipped"}
        assert next(r for r in mine if r["index"] == 299)["reply_type"] == "update"  # latest wins
    assert run["summary"]["skipped"] == sum(r["reply_type"] == "skipped" for r in records)
    assert run["summary"]["latency_ms"]["n"] == 900 - run["summary"]["skipped"]
    assert run["check"]["mismatches"] == 0 and run["check"]["checked"] == run["summary"]["latency_ms"]["n"]


def test_a_running_server_is_driven_by_url(captured, tmp_path, capsys):
    spec, _, dash = captured
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app({dash.name: dash}), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        code, out = run_bench(capsys, "--url", f"ws://127.0.0.1:{port}", "--engine", "mine",
                              "--spec", str(spec), "--workload", "clicks", "--events", "30", "--check",
                              "--no-plots", "--out-dir", str(tmp_path), "--name", "url")
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert code == 0, out
    run = json.loads((tmp_path / "url.json").read_text())["engines"]["mine"]
    assert run["summary"]["replies"] == {"update": 30} and run["check"]["mismatches"] == 0


def test_a_running_server_that_needs_its_token_is_driven_by_a_url_with_it(captured, tmp_path, capsys):
    """`--url ws://host:port/?token=…` (as `brushfire serve` prints it on a non-loopback
    address, or in Docker): the token went into the path (`…?token=…/ws/benchy`)."""
    from brushfire.server.security import Security

    spec, _, dash = captured
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app = create_app({dash.name: dash}, security=Security.for_bind("127.0.0.1", token="s3cret"))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        code, out = run_bench(capsys, "--url", f"ws://127.0.0.1:{port}/?token=s3cret", "--engine", "mine",
                              "--spec", str(spec), "--workload", "clicks", "--events", "10", "--check",
                              "--warmup", "0", "--no-plots", "--out-dir", str(tmp_path), "--name", "tok")
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert code == 0, out
    result = json.loads((tmp_path / "tok.json").read_text())
    assert result["engines"]["mine"]["summary"]["replies"] == {"update": 10}
    assert result["meta"]["ws"] == f"ws://127.0.0.1:{port}/ws/benchy" and "s3cret" not in json.dumps(result)


def test_the_lazy_spark_baseline_answers_as_sql_does(captured, tmp_path, capsys):
    spec, cache, _ = captured
    code, out = run_bench(capsys, "--spec", str(spec), "--cache-dir", str(cache), "--engine", "lazy",
                          "--workload", "multi", "--events", "6", "--limit", "6", "--warmup", "0",
                          "--check", "--no-plots", "--out-dir", str(tmp_path), "--name", "lazy")
    assert code == 0, out
    run = json.loads((tmp_path / "lazy.json").read_text())["engines"]["lazy"]
    assert run["check"]["mismatches"] == 0 and run["check"]["checked"] == run["summary"]["messages"] > 5


def test_the_check_reports_what_differs(captured):
    spec, _, dash = captured
    checker = Checker(dash.spec, {v.name: v.labels for v in dash.store.views})
    session = dash.session()
    protocol.handle(session, {"type": "select", "view": "cat", "values": ["c01", "(other)"]})
    reply = protocol.handle(session, {"type": "brush", "view": "hx", "interval": [20, 61.5]})
    assert checker.compare(reply) == []
    bad = json.loads(json.dumps(reply))
    bad["views"]["week"]["counts"][3] += 1
    bad["views"]["mean_m"]["values"][2] = (bad["views"]["mean_m"]["values"][2] or 0) + 1e-6
    bad["selected"] -= 1
    problems = checker.compare(bad)
    week = dash.store.view("week").labels[3]
    assert problems[0] == f"selected: {reply['selected'] - 1} rows, SQL {reply['selected']}"
    assert problems[1].startswith("mean_m[[20.0, 40.0]]: mean ")  # views in name order
    assert problems[2].startswith(f"week[{week}]: count {reply['views']['week']['counts'][3] + 1}, SQL ")
    assert len(problems) == 3
    result = checker.check([(0, 7, reply), (0, 8, bad)])
    assert (result.checked, result.mismatches, result.examples[0]["event"]) == (2, 1, 8)


def test_the_duckdb_baseline_pages_details_and_refuses_highlight(captured):
    _, _, dash = captured
    base, own = with_engine(dash, "duckdb").session(), dash.session()
    for s in (base, own):
        protocol.handle(s, {"type": "brush", "view": "hk", "interval": [3, 40]})
        protocol.handle(s, {"type": "parameter", "name": "pdest", "value": "BBB"})
    for view, bars in ((None, None), ("cat", [0, 5])):
        msg = {"type": "details", "view": view, "bars": bars, "page_size": 10_000}
        got, want = protocol.handle(base, msg), protocol.handle(own, msg)
        assert got["total"] == want["total"] > 0
        assert sorted(got["rows"], key=lambda r: r["rid"]) == sorted(want["rows"], key=lambda r: r["rid"])
    everything = protocol.handle(base, {"type": "details", "page_size": 10_000})["rows"]
    second = protocol.handle(base, {"type": "details", "page": 1})  # pages of 5, in rid order
    assert second["rows"] == sorted(everything, key=lambda r: r["rid"])[5:10]
    reply = protocol.handle(base, {"type": "highlight", "id": 3, "source": "cat", "bars": [0]})
    assert reply == {"type": "error", "id": 3,  # none declared: refused before any engine sees it
                     "message": "highlight.source: no highlight from view 'cat' is declared; sources: none"}
    with pytest.raises(NotCapturedError, match="linked highlighting is not offered by the duckdb baseline"):
        base.highlight("cat", [0])


def test_bad_options_and_traces_fail_before_any_server_starts(captured, tmp_path, capsys):
    spec, cache, _ = captured
    assert main(["bench", "--trace", "t.json"]) == 1
    assert "give --spec (start a server per engine) or --url" in capsys.readouterr().err
    assert main(["bench", "--spec", str(spec), "--engine", "brushfire,sqlite"]) == 1
    assert "unknown engine 'sqlite'; engines: brushfire, duckdb, preagg, lazy (or all)" in \
        capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "brushfire-trace", "version": 1, "dashboard": "benchy",
                               "events": [{"t": 0, "message": {"type": "brush", "view": "hx"}}]}))
    assert main(["bench", "--spec", str(spec), "--trace", str(bad)]) == 1
    assert "bad.json: events[0].message: brush.interval: missing; brush takes:" in capsys.readouterr().err


@pytest.mark.parametrize("url", ["ws://127.0.0.1:{port}", "ws://127.0.0.1:notaport", "nowhere"])
def test_a_url_with_no_server_is_an_error_not_a_traceback(url, capsys):
    """--url where nothing listens (or no URL) ended in a URLError / InvalidURL traceback."""
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = url.format(port=port)
    assert main(["bench", "--url", url, "--events", "5", "--no-plots"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("brushfire: no engine ran:\ncannot read ") and "/api/dashboards: " in err, err


def test_a_paced_warm_up_does_not_wait_out_the_recorded_times(tmp_path, monkeypatch, capsys):
    """The warm-up's events, spread over the trace, kept their recorded times: paced, a
    recording of minutes was waited out once untimed before it was replayed."""
    from contextlib import contextmanager

    from brushfire.bench import harness
    from brushfire.bench.replay import ReplayResult

    played: list[Trace] = []

    @contextmanager
    def target(args, engine):
        def play(trace, clients, keep):
            played.append(trace)
            return ReplayResult([], 1.0)
        yield play, {"name": "benchy", "views": []}, dict

    monkeypatch.setattr(harness, "_target", target)
    # a recording started 5 s before its first brush, ten minutes long
    events = tuple(Event(5_000.0 + 600_000.0 * i / 200, {"type": "brush", "view": "hx", "interval": [i % 50, 60]})
                   for i in range(200))
    path = save_trace(Trace("benchy", (*events, Event(605_000.0, {"type": "clear"}))), tmp_path / "rec.json")
    code, out = run_bench(capsys, "--url", "ws://127.0.0.1:1", "--trace", str(path), "--paced",
                          "--warmup", "10", "--no-plots", "--out-dir", str(tmp_path), "--name", "rec")
    assert code == 0, out
    warm, timed = played
    assert len(warm.events) == 10 and {e.t for e in warm.events} == {0.0}  # untimed
    assert warm.events[-1].message["interval"][0] > 0  # spread over the trace, not its first events
    assert len(timed.events) == 201 and timed.events[0].t == 5_000.0  # the replay keeps its times


def test_the_check_bins_a_maxbins_view_as_its_capture_did(spark, small_parquet, tmp_path, capsys):
    """The SQL needs a step and an extent: the served description's `bins` give them."""
    spec = bench_spec(small_parquet)
    spec["name"] = "benchy_maxbins"
    spec["views"][1]["bin"] = {"maxbins": 13}
    path = tmp_path / "maxbins.yaml"
    path.write_text(yaml.safe_dump(spec))
    cache = tmp_path / "cache"
    Dashboard.open(path, spark=spark, cache_dir=cache)
    code, out = run_bench(capsys, "--spec", str(path), "--cache-dir", str(cache), "--in-process",
                          "--workload", "multi", "--events", "40", "--check", "--no-plots",
                          "--out-dir", str(tmp_path), "--name", "maxbins")
    assert code == 0, out
    run = json.loads((tmp_path / "maxbins.json").read_text())["engines"]["brushfire"]
    assert run["check"]["mismatches"] == 0 and run["check"]["checked"] > 20


def test_the_check_agrees_on_boolean_bars_and_empty_distinct_bars(spark, tmp_path):
    """Two false mismatches the oracle reported on new data: a boolean category (SQL
    spells its bars `true` / `false`) and a `distinct` bar with no rows (SQL has no group
    for it; count(DISTINCT) of no values is 0, as the engine says)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 400
    x = [float(i % 100) for i in range(n)]
    data = pa.table({"x": x, "ok": [i % 3 == 0 for i in range(n)],
                     "s": [f"s{i % 7}" if i % 5 else None for i in range(n)]})
    path = tmp_path / "b.parquet"
    pq.write_table(data, path)
    spec = {"name": "booly", "source": {"path": str(path)},
            "views": [{"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
                      {"name": "ok", "type": "categorical", "field": "ok"},
                      {"name": "kinds", "type": "histogram", "field": "x", "brush": "none",
                       "bin": {"step": 10, "extent": [0, 100]}, "aggregate": {"op": "distinct", "field": "s"}}],
            "interactions": {"crossfilter": [{"views": ["hx", "ok", "kinds"]}]}}
    dash = Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache")
    checker = Checker(dash.spec, {v.name: v.labels for v in dash.store.views})
    session = dash.session()
    for msg in ({"type": "select", "view": "ok", "values": [True]},
                {"type": "brush", "view": "hx", "interval": [20, 35]}):  # empties most of kinds' bars
        reply = protocol.handle(session, msg)
        assert reply["type"] == "update", reply
        assert checker.compare(reply) == [], msg
    assert reply["views"]["kinds"]["values"][0] == 0


def test_a_baselines_min_and_max_of_decimals_are_doubles_as_the_engines(tmp_path):
    """An order statistic of a decimal field (min, max, a discrete quantile) from SQL is a
    Decimal: the DuckDB baseline and lazy answers on Spark (baselines/base.py's bars) sent
    it as it came, which JSON writes as text ("-999.734"), where the engine's view has the
    nearest double, a number."""
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    from brushfire import wire
    from brushfire.capture.local import capture_table
    from brushfire.plan import plan_capture
    from brushfire.spec import parse_dashboard

    path = tmp_path / "d.parquet"
    table = pa.table({"k": [1, 1, 2, 2], "m": pa.array([Decimal("-999.734"), Decimal("0.100"), None,
                                                        Decimal("3.000")], pa.decimal128(10, 3))})
    pq.write_table(table, path)
    views = [{"name": op, "type": "histogram", "field": "k", "bin": {"step": 1, "extent": [0, 3]},
              "aggregate": {"op": op, "field": "m"} | ({"method": "discrete"} if op == "median" else {})}
             for op in ("min", "max", "median")]
    spec = parse_dashboard({"name": "decimals", "source": {"path": str(path)}, "views": views,
                            "interactions": {"crossfilter": [{"views": ["min"]}]}})
    plan = plan_capture(spec)
    dash = Dashboard(spec, plan, capture_table(plan, table, tmp_path / "cache"))
    engine = json.loads(wire.dumps(protocol.handle(dash.session(), {"type": "state"})))
    baseline = json.loads(wire.dumps(protocol.handle(with_engine(dash, "duckdb").session(), {"type": "state"})))
    assert engine["views"]["min"]["values"] == [None, -999.734, 3.0]
    for v in ("min", "max", "median"):
        assert baseline["views"][v]["values"] == engine["views"][v]["values"], v


def test_a_baselines_slider_over_an_empty_time_field_takes_iso_times(tmp_path):
    """A baseline's store answers whether a parameter is over a time field, as the
    engine's does (the protocol's check asks it of every session's store: a baseline's
    had no answer, and a slider message failed with an AttributeError)."""
    from datetime import datetime

    import pyarrow as pa

    from brushfire.baselines.base import BaselineStore
    from brushfire.capture.local import capture_table
    from brushfire.plan import plan_capture
    from brushfire.spec import parse_dashboard

    table = pa.table({"x": [1.0, 2.0, 3.0], "t": pa.array([None, None, None], pa.timestamp("us")),
                      "u": [datetime(2020, 1, d) for d in (1, 2, 3)]})
    spec = parse_dashboard({"name": "b", "source": {"path": "t.parquet"},
                            "views": [{"name": "hx", "type": "histogram", "field": "x",
                                       "bin": {"step": 1, "extent": [0, 4]}}],
                            "interactions": {"parameters": [
                                {"name": "since", "field": "t", "widget": "slider", "op": "gte"},
                                {"name": "after", "field": "u", "widget": "slider", "op": "gte"},
                                {"name": "least", "field": "x", "widget": "slider", "op": "gte"}]}})
    plan = plan_capture(spec)
    dash = Dashboard(spec, plan, capture_table(plan, table, tmp_path / "store"))
    base = BaselineStore.of(dash)
    assert [base.parameter_temporal(p) for p in ("since", "after", "least")] == [True, True, False]
    assert [dash.store.parameter_temporal(p) for p in ("since", "after", "least")] == [True, True, False]
