"""The command line: validate, plan and demo, run in-process."""

from __future__ import annotations

import io
import os
import re
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from brushfire.cli import main

GOOD = "dashboards/flights.yaml"


def test_validate_checks_columns_against_the_source(small_parquet, tmp_path, capsys):
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: v\nsource: {{path: {small_parquet}}}\nviews:\n"
                    "  - {name: a, type: categorical, field: cat}\n"
                    "  - {name: b, type: categorical, field: nope}\n")
    assert main(["validate", str(spec)]) == 1
    assert f"{spec}:5: views[1].field: column 'nope' is not in the source" in capsys.readouterr().err
    spec.write_text(spec.read_text().replace("nope", "dest"))
    assert main(["validate", str(spec)]) == 0
    assert f"{spec}: ok" in capsys.readouterr().out


def test_a_default_of_the_wrong_type_is_refused_before_spark(small_parquet, tmp_path, capsys,
                                                             monkeypatch):
    """validate and capture name the file, line and key of a slider's default that is no
    number (it was refused only when the dashboard opened, after the capture), and
    capture does so before starting Spark."""
    import brushfire.capture.spark as sp

    def no_spark(*_, **__):
        msg = "Spark started"
        raise AssertionError(msg)

    monkeypatch.setattr(sp, "get_spark", no_spark)
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: v\nsource: {{path: {small_parquet}}}\nviews:\n"
                    "  - {name: a, type: categorical, field: cat}\ninteractions:\n  parameters:\n"
                    "    - {name: kmax, field: k, widget: slider, op: lte, default: abc}\n")
    expected = (f"{spec}:7: interactions.parameters[0].default: the default cannot be applied to "
                "column 'k' (a number): 'abc' is not a number\n"
                "    hint: give a number (unquoted), or leave default out\n")
    assert main(["validate", str(spec)]) == 1
    assert capsys.readouterr().err == expected
    assert main(["capture", str(spec), "--cache-dir", str(tmp_path / "cache")]) == 1
    assert capsys.readouterr().err.endswith(expected)


def test_validate_reads_the_workload_trace(small_parquet, tmp_path, capsys):
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: v\nsource: {{path: {small_parquet}}}\nviews:\n"
                    "  - {name: a, type: categorical, field: cat}\nworkload:\n  trace: t.json\n")
    assert main(["validate", str(spec)]) == 1
    assert f"{spec}:6: workload.trace: cannot read the trace {tmp_path / 't.json'}" in capsys.readouterr().err
    (tmp_path / "t.json").write_text('{"format": "brushfire-trace", "version": 1, "dashboard": "v", "events": []}')
    assert main(["validate", str(spec)]) == 0
    assert f"{spec}: ok" in capsys.readouterr().out


def test_a_workload_trace_of_filters_the_dashboard_lacks_is_refused(small_parquet, tmp_path, capsys):
    """A trace naming views the dashboard does not have (another dashboard's, or one
    recorded before a view was renamed) was taken silently: their changes went uncounted."""
    import json

    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: v\nsource: {{path: {small_parquet}}}\nviews:\n"
                    "  - {name: a, type: categorical, field: cat}\nworkload:\n  trace: t.json\n")
    events = [{"t": 0, "message": {"type": "select", "view": "a", "values": ["x"]}},
              {"t": 1, "message": {"type": "brush", "view": "delay", "interval": [0, 1]}},
              {"t": 2, "message": {"type": "filters", "filters": {"a": None, "origin": {"values": ["x"]}}}},
              {"t": 3, "message": {"type": "brush", "view": "delay", "interval": [0, 2]}}]
    trace = {"format": "brushfire-trace", "version": 1, "dashboard": "v", "events": events}
    (tmp_path / "t.json").write_text(json.dumps(trace))
    assert main(["validate", str(spec)]) == 1
    assert capsys.readouterr().err == (
        f"{spec}:6: workload.trace: the trace {tmp_path / 't.json'} changes filters the dashboard "
        "does not have: 'delay' (events[1], events[3]), 'origin' (events[2]); its filters: a\n"
        "    hint: give the trace of a session of this dashboard (the page's Record control), or "
        "remove those events\n")
    assert main(["plan", str(spec)]) == 1
    trace["events"] = events[:1]
    (tmp_path / "t.json").write_text(json.dumps(trace))
    assert main(["validate", str(spec)]) == 0


def test_validate_reports_file_line_and_key(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nsource: {path: a.parquet}\nviews:\n  - name: v\n    type: histogram\n"
                   "    field: f\n    bin: {step: 0, extent: [0, 1]}\n")
    assert main(["validate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:7: views[0].bin.step: bin step must be a number > 0, got 0" in err


def test_plan_explains_what_is_captured_and_why(capsys):
    assert main(["plan", GOOD]) == 0
    out = capsys.readouterr().out
    assert "capture plan for dashboard 'flights'" in out
    assert "backward index: pruned — brush 'none'" in out
    assert "parameter destination: rows of each block grouped by destination" in out


def test_plan_refuses_a_field_not_in_the_source_without_spark(small_parquet, tmp_path, monkeypatch,
                                                              capsys):
    """plan planned a view of a column the source lacks, exit 0 (it read no source); a
    local source's footers or CSV header are read as capture reads them first."""
    import brushfire.capture.spark as sp

    def no_spark(*_, **__):
        msg = "Spark started"
        raise AssertionError(msg)

    monkeypatch.setattr(sp, "get_spark", no_spark)
    csv = tmp_path / "t.csv"
    csv.write_text("cat,k\na,1\n")
    for source in (small_parquet, csv):
        spec = tmp_path / "d.yaml"
        spec.write_text(f"name: v\nsource: {{path: {source}}}\nviews:\n"
                        "  - {name: a, type: categorical, field: cat}\n"
                        "  - {name: b, type: categorical, field: nope}\n")
        assert main(["plan", str(spec)]) == 1
        assert f"{spec}:5: views[1].field: column 'nope' is not in the source" in capsys.readouterr().err
        spec.write_text(spec.read_text().replace("nope", "k"))
        assert main(["plan", str(spec)]) == 0
        assert "capture plan for dashboard 'v'" in capsys.readouterr().out


def test_plan_shows_the_bins_a_cached_capture_chose_for_maxbins(small_parquet, tmp_path, capsys,
                                                                  monkeypatch):
    import pyarrow.parquet as pq

    from brushfire.bins import nice_bin
    from brushfire.capture.local import capture_table
    from brushfire.plan import plan_capture
    from brushfire.spec import load_dashboard

    monkeypatch.setattr("brushfire.dashboard.DEFAULT_BUDGET", None)
    spec = tmp_path / "m.yaml"
    spec.write_text(f"""
name: maxbins_test
source: {{path: {small_parquet}}}
views:
  - {{name: hk, type: histogram, field: k, bin: {{maxbins: 12}}}}
""")
    cache = tmp_path / "cache"
    assert main(["plan", str(spec), "--cache-dir", str(cache)]) == 0
    assert "bins: at most 12; a nice step and extent chosen at capture" in capsys.readouterr().out
    dash = load_dashboard(spec)
    table = pq.read_table(small_parquet)
    capture_table(plan_capture(dash), table, cache)
    assert main(["plan", str(spec), "--cache-dir", str(cache)]) == 0
    k = table["k"].drop_null().to_numpy()
    b = nice_bin(float(k.min()), float(k.max()), 12)
    assert (f"bins: maxbins 12 chose step {b.step:g} over [{b.extent[0]:g}, {b.extent[1]:g}] "
            f"({b.count} bars, from the data's min and max)") in capsys.readouterr().out


@pytest.mark.spark
def test_demo_plays_scripted_interactions(spark, small_parquet, tmp_path, capsys):
    spec = tmp_path / "d.yaml"
    spec.write_text(f"""
name: demo_test
source: {{path: {small_parquet}}}
views:
  - {{name: hx, type: histogram, field: x, bin: {{step: 10, extent: [0, 100]}}}}
  - {{name: cat, type: categorical, field: cat, top: 3}}
interactions:
  crossfilter: [{{views: [hx, cat]}}]
  details: {{columns: [x, cat]}}
""")
    assert main(["demo", str(spec), "--cache-dir", str(tmp_path / "cache")]) == 0
    out = capsys.readouterr().out
    assert "> brush hx [20, 50]" in out and "> select cat" in out and "details on demand" in out


def test_capture_reports_the_mode_and_why(spark, small_parquet, tmp_path, capsys):
    spec = tmp_path / "d.yaml"
    spec.write_text(f"""
name: budget_test
source: {{path: {small_parquet}}}
views:
  - {{name: hx, type: histogram, field: x, bin: {{step: 10, extent: [0, 100]}}}}
  - {{name: cat, type: categorical, field: cat, top: 3}}
interactions:
  crossfilter: [{{views: [hx, cat]}}]
""")
    cache = str(tmp_path / "cache")
    assert main(["capture", str(spec), "--cache-dir", cache, "--memory-budget", "1KB"]) == 0
    out = capsys.readouterr().out
    assert "mode: cubes only" in out
    assert "value:x: per-row keys dropped (4 bytes × 3,000 rows = 11.7 KiB) to fit the memory " \
           "budget of 1.0 KiB" in out
    assert "filter hx: alone, answered from an exact cube" in out
    assert main(["capture", str(spec), "--cache-dir", cache, "--no-baseline",
                 "--memory-budget", "1GB"]) == 0
    out = capsys.readouterr().out
    assert "mode: per-row lineage" in out and "fits the memory budget of 1.0 GiB" in out


def test_capture_compiles_the_engines_kernels_for_its_store(spark, small_parquet, tmp_path, capsys,
                                                           monkeypatch):
    """numba compiles a kernel on its first call (about a minute for the engine's): the
    capture makes that call, so that the first `serve` of its store starts in seconds."""
    import brushfire.dashboard

    warmed = []
    monkeypatch.setattr(brushfire.dashboard, "warm_kernels", warmed.append)
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: warm_test\nsource: {{path: {small_parquet}}}\nviews:\n"
                    "  - {name: hx, type: histogram, field: x, bin: {step: 10, extent: [0, 100]}}\n")
    assert main(["capture", str(spec), "--cache-dir", str(tmp_path / "cache"), "--no-baseline"]) == 0
    out, err = capsys.readouterr()
    assert len(warmed) == 1 and f"lineage cached in {warmed[0].directory}" in out
    assert "compiling the engine's kernels" in err


# --- option errors are usage errors naming the option -------------------------------------


@pytest.mark.parametrize(("argv", "expected"), [
    (["capture", GOOD, "--memory-budget", "12XB"],
     "argument --memory-budget: a memory size is a number with an optional unit (KB, MB, GB, TB),"
     " got '12XB' (e.g. 16GB, 512MB)"),
    (["demo", GOOD, "--memory-budget", "0"], "argument --memory-budget: must be more than 0 bytes"),
    (["serve", GOOD, "--memory-budget", "lots"], "argument --memory-budget: a memory size is"),
    (["serve", GOOD, "--watch", "0"], "argument --watch: '0' is not a number of seconds of at least 0.1"),
    (["serve", GOOD, "--watch", "soon"], "argument --watch: 'soon' is not a number of seconds"),
    (["capture", GOOD, "--spark-master", "localhost:7077"],
     "argument --spark-master: 'localhost:7077' is not a Spark master URL; e.g. local[*], local[2],"
     " spark://host:7077, yarn, k8s://https://host:443"),
    (["capture", GOOD, "--cache-dir", GOOD], f"argument --cache-dir: '{GOOD}' is a file, not a directory"),
    (["validate", GOOD, "--spark", "--spark-master", "nowhere"], "argument --spark-master: 'nowhere'"),
])
def test_bad_option_values_are_usage_errors(argv, expected, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: brushfire ") and f"error: {expected}" in err, err


@pytest.mark.parametrize(("port", "expected"), [
    ("99999", "argument --port: '99999' is not a port number: 1-65535"),
    ("-1", "argument --port: '-1' is not a port number"),
    ("0", "argument --port: '0' is not a port number"),
    ("http", "argument --port: 'http' is not a port number"),
])
def test_a_port_out_of_range_is_a_usage_error(port, expected, monkeypatch, capsys):
    """serve --port 99999 printed http://127.0.0.1:99999/ and listened on 34463 (asyncio
    binds the port modulo 65536)."""
    import brushfire.cli

    def served(*_):
        msg = "served"
        raise AssertionError(msg)

    monkeypatch.setattr(brushfire.cli, "_serve", served)
    with pytest.raises(SystemExit) as info:
        main(["serve", GOOD, "--port", port])
    assert info.value.code == 2
    assert f"error: {expected}" in capsys.readouterr().err


@pytest.mark.parametrize(("where", "why"), [("no/such/folder/s.json", "No such file or directory"),
                                            (".", "Is a directory")])
def test_schema_to_a_file_it_cannot_write_says_why(where, why, tmp_path, monkeypatch, capsys):
    """schema -o into a missing folder (or onto a directory) ended in a traceback."""
    monkeypatch.chdir(tmp_path)
    assert main(["schema", "-o", where]) == 1
    assert capsys.readouterr().err == f"brushfire schema: cannot write {where}: {why}\n"


def test_serve_refuses_two_specs_of_one_dashboard_name_before_opening_either(tmp_path, monkeypatch,
                                                                             capsys):
    """serve a.yaml b.yaml, both 'name: d' (or one spec twice), captured both and served
    only the last: the server keys dashboards by name."""
    from brushfire.server.hosting import HostedDashboard

    def opened(*_, **__):
        msg = "opened"
        raise AssertionError(msg)

    monkeypatch.setattr(HostedDashboard, "opening", opened)
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(
            "# a dashboard\nname: d\nsource: {path: x.parquet}\nviews:\n  - {name: v, type: categorical, field: c}\n")
    a, b = str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")
    for second in (b, a):
        assert main(["serve", a, second]) == 1
        assert capsys.readouterr().err == (
            f"brushfire: {second}:2: name: dashboard 'd' is served already, from {a}\n"
            "    hint: give each dashboard served its own name (or the spec once)\n")


def test_profile_names_an_fd_column_not_in_the_source_before_starting_spark(small_parquet, tmp_path,
                                                                            monkeypatch, capsys):
    """profile --fd 'cat -> nope' started Spark (a minute, on a busy machine) to say so."""
    import brushfire.capture.spark as sp

    def no_spark(*_, **__):
        msg = "Spark started"
        raise AssertionError(msg)

    monkeypatch.setattr(sp, "get_spark", no_spark)
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: v\nsource: {{path: {small_parquet}, columns: {{k2: k * 2}}}}\nviews:\n"
                    "  - {name: a, type: categorical, field: cat}\n")
    assert main(["profile", str(spec), "--fd", "cat, k2 -> nope"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("--fd cat, k2 -> nope: no column 'nope' in the source; columns: ")
    assert err.rstrip().endswith(", k2") and " cat, " in err


def test_serve_says_it_cannot_listen_before_opening_any_dashboard(tmp_path, monkeypatch, capsys):
    """A --host that does not resolve, or a port in use, was uvicorn's '[Errno -2] Name or
    service not known' (exit 3) once the dashboards had started opening."""
    import socket

    from brushfire.server.hosting import HostedDashboard

    def opened(*_, **__):
        msg = "opened"
        raise AssertionError(msg)

    monkeypatch.setattr(HostedDashboard, "opening", opened)
    spec = tmp_path / "d.yaml"
    spec.write_text("name: d\nsource: {path: x.parquet}\nviews:\n  - {name: v, type: categorical, field: c}\n")
    assert main(["serve", str(spec), "--host", "no such host", "--port", "8123"]) == 1
    assert capsys.readouterr().err.startswith("brushfire serve: cannot listen on no such host:8123: ")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", str(spec), "--port", str(port)]) == 1
    assert capsys.readouterr().err == f"brushfire serve: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_refuses_a_dashboard_whose_columns_are_not_in_the_source(small_parquet, tmp_path,
                                                                       monkeypatch, capsys):
    """serve of a spec naming a field the source lacks started, served the dashboard dead
    (its page showed the error) and exited 0 at Ctrl-C; with another spec that is fine,
    that one is served and the failing one named with why."""
    import uvicorn

    from brushfire.server.hosting import HostedDashboard

    opened = []
    monkeypatch.setattr(HostedDashboard, "opening", lambda spec, **_: opened.append(spec.name)
                        or HostedDashboard(spec))
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, *_: setattr(self, "started", True))
    bad, good = tmp_path / "bad.yaml", tmp_path / "good.yaml"
    bad.write_text(f"name: bad\nsource: {{path: {small_parquet}}}\nviews:\n"
                   "  - {name: a, type: categorical, field: nope}\n")
    good.write_text(bad.read_text().replace("bad", "good").replace("nope", "cat"))
    why = (f"brushfire serve: bad cannot be served: {bad}:4: views[0].field: column 'nope' is not "
           "in the source\n")
    port = str(_free_port())
    assert main(["serve", str(bad), "--port", port, "--cache-dir", str(tmp_path / "c")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(why)
    assert err.endswith("brushfire serve: no dashboard can be served\n")
    assert opened == []
    assert main(["serve", str(bad), str(good), "--port", port, "--cache-dir", str(tmp_path / "c")]) == 0
    err = capsys.readouterr().err
    assert err.startswith(why)
    assert "serving good  (Ctrl-C stops)" in err
    assert opened == ["good"]


def test_serve_stops_with_an_error_when_no_dashboard_could_be_opened(small_parquet, tmp_path,
                                                                     monkeypatch, capsys):
    """A capture failing on Spark (past the checks before it) left the server running,
    serving only the error, until Ctrl-C, which exited 0."""
    from brushfire.dashboard import Dashboard
    from brushfire.errors import BrushfireError

    def fails(*_, **__):
        msg = "the capture failed"
        raise BrushfireError(msg)

    monkeypatch.setattr(Dashboard, "open", fails)
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: d\nsource: {{path: {small_parquet}}}\nviews:\n"
                    "  - {name: a, type: categorical, field: cat}\n")
    # (on a thread of its own: the browser tests' Playwright leaves the main thread an
    # event loop running, and serve's uvicorn starts one of its own)
    with ThreadPoolExecutor(1) as pool:
        served = pool.submit(main, ["serve", str(spec), "--port", str(_free_port()),
                                    "--cache-dir", str(tmp_path / "c")])
        assert served.result(timeout=300) == 1
    err = capsys.readouterr().err
    assert "d failed: the capture failed" in err
    assert err.endswith("brushfire serve: no dashboard could be opened (each one's error is above); "
                        "stopping\n")


def test_a_bad_memory_budget_in_the_environment_names_the_variable(monkeypatch, capsys):
    monkeypatch.setenv("BRUSHFIRE_MEMORY_BUDGET", "12XB")
    with pytest.raises(SystemExit):
        main(["capture", GOOD])
    assert "error: BRUSHFIRE_MEMORY_BUDGET: a memory size is a number" in capsys.readouterr().err


@pytest.mark.parametrize("variable", ["BRUSHFIRE_CUBE_MEMORY", "BRUSHFIRE_COPY_MEMORY"])
@pytest.mark.parametrize("command", ["serve", "demo"])
def test_a_bad_engine_budget_in_the_environment_names_the_variable(variable, command, monkeypatch,
                                                                    capsys):
    """The engine's budgets were read when the first session opened: `serve` started,
    captured or loaded, then every session failed with a ValueError naming no variable."""
    import brushfire.cli as cli

    def started(_):
        msg = f"{command} started"
        raise AssertionError(msg)

    monkeypatch.setattr(cli, f"_{command}", started)
    monkeypatch.setenv(variable, "lots")
    with pytest.raises(SystemExit):
        main([command, GOOD])
    assert f"error: {variable}: a memory size is a number" in capsys.readouterr().err


@pytest.mark.parametrize(("variable", "value", "expected"), [
    ("BRUSHFIRE_SPARK_MASTER", "localhost", "'localhost' is not a Spark master URL"),
    ("BRUSHFIRE_DRIVER_MEMORY", "8gb", "'8gb' is not a Java heap size"),
])
@pytest.mark.parametrize("command", ["capture", "serve", "demo", "profile"])
def test_a_bad_spark_setting_in_the_environment_names_the_variable(variable, value, expected, command,
                                                                   monkeypatch, capsys):
    """Spark's launcher failed on them with a Java stack trace, after the spec was loaded,
    and said 'is Java 17+ installed?'."""
    import brushfire.cli as cli

    def started(_):
        msg = f"{command} started"
        raise AssertionError(msg)

    monkeypatch.setattr(cli, f"_{command}", started)
    monkeypatch.setenv(variable, value)
    with pytest.raises(SystemExit):
        main([command, GOOD])
    assert f"error: {variable}: {expected}" in capsys.readouterr().err


def test_validate_explains_how_a_relative_source_path_resolves(tmp_path, monkeypatch, capsys):
    (tmp_path / "specs").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.parquet").write_bytes(b"")
    spec = tmp_path / "specs" / "d.yaml"
    spec.write_text("name: v\nsource:\n  path: data/rows.parquet\nviews:\n"
                    "  - {name: a, type: categorical, field: cat}\n")
    monkeypatch.chdir(tmp_path)  # the path exists from here, but not from the spec's folder
    assert main(["validate", str(spec)]) == 1
    assert capsys.readouterr().err == f"""\
{spec}:3: source.path: 'data/rows.parquet' (relative paths are relative to the spec's folder {tmp_path / 'specs'}: {tmp_path / 'specs' / 'data' / 'rows.parquet'}): no such file or directory
    hint: 'data/rows.parquet' exists relative to the current directory, but a spec's paths are relative to the spec file: write it relative to {tmp_path / 'specs'}, or absolute
"""
    spec.write_text(spec.read_text().replace("data/rows", "../data/rows"))
    assert main(["validate", str(spec)]) == 1
    assert "source.path: '../data/rows.parquet' (relative paths are relative to the spec's folder" \
           f" {tmp_path / 'specs'}: {tmp_path / 'data' / 'rows.parquet'}): cannot read it as parquet:" \
           in capsys.readouterr().err


def test_a_file_that_is_not_of_its_format_asks_whether_it_is_one(tmp_path, capsys):
    """The hint names the format with its article: 'is it an orc file?', not 'a orc'."""
    (tmp_path / "rows.orc").write_bytes(b"not orc")
    spec = tmp_path / "d.yaml"
    spec.write_text("name: v\nsource:\n  path: rows.orc\nviews:\n"
                    "  - {name: a, type: categorical, field: cat}\n")
    assert main(["validate", str(spec)]) == 1
    err = capsys.readouterr().err
    assert "cannot read it as orc:" in err and "hint: is it an orc file? set source.format" in err, err


def test_a_parquet_file_read_as_csv_is_refused_before_spark(small_parquet, tmp_path, monkeypatch,
                                                           capsys):
    """`format: csv` over a Parquet file passed validate ('ok, columns checked at capture'),
    then the capture read its bytes as text on Spark and listed binary garbage as the
    source's columns. A CSV file whose header starts with ORC's magic is still text."""
    import brushfire.capture.spark as sp

    def no_spark(*_, **__):
        msg = "Spark started"
        raise AssertionError(msg)

    monkeypatch.setattr(sp, "get_spark", no_spark)
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: v\nsource:\n  path: {small_parquet}\n  format: csv\nviews:\n"
                    "  - {name: a, type: categorical, field: cat}\n")
    expected = (f"{spec}:3: source.path: {str(small_parquet)!r}: it is a Parquet file, but the "
                "format is csv\n    hint: leave format out: the extension says parquet\n")
    assert main(["validate", str(spec)]) == 1
    assert capsys.readouterr().err == expected
    assert main(["capture", str(spec), "--cache-dir", str(tmp_path / "cache")]) == 1
    assert capsys.readouterr().err.endswith(expected)
    (tmp_path / "ids.csv").write_text("ORCID,cat\n1,x\n2,yORC\n")  # (ends as ORC's magic, too)
    spec.write_text("name: v\nsource:\n  path: ids.csv\nviews:\n  - {name: a, type: categorical, field: cat}\n")
    assert main(["validate", str(spec)]) == 0, capsys.readouterr().err


def test_columns_whose_names_differ_only_in_case_are_refused_before_spark(tmp_path, capsys):
    """Spark resolves column names ignoring case: a Parquet file with 'A' and 'a' passed
    validate, then failed a capture on Spark ('The column `a` already exists') with a hint
    that asked whether it was a Parquet file."""
    pq.write_table(pa.table({"A": [1, 2], "a": [3, 4], "cat": ["x", "y"]}), tmp_path / "rows.parquet")
    spec = tmp_path / "d.yaml"
    spec.write_text("name: v\nsource:\n  path: rows.parquet\nviews:\n"
                    "  - {name: c, type: categorical, field: cat}\n")
    assert main(["validate", str(spec)]) == 1
    err = capsys.readouterr().err
    assert f"{spec}:3: source.path: " in err, err
    assert "columns 'A' and 'a' differ only in case" in err and "rename one of them" in err, err


def test_a_derived_column_named_as_a_source_column_but_for_case_is_refused_before_spark(
        small_parquet, tmp_path, monkeypatch, capsys):
    """Spark resolves names ignoring case: a derived column 'X' replaced the source's 'x',
    and a capture failed on Spark at the views reading 'x' ('did you mean X?') where
    validate had said ok. The same name as written replaces the column, as Spark does."""
    import brushfire.capture.spark as sp

    def no_spark(*_, **__):
        msg = "Spark started"
        raise AssertionError(msg)

    monkeypatch.setattr(sp, "get_spark", no_spark)
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: v\nsource:\n  path: {small_parquet}\n  columns:\n    X: \"x * 2\"\n"
                    "views:\n  - {name: a, type: histogram, field: x, bin: {step: 10}}\n")
    expected = (f"{spec}:5: source.columns.X: derived column name 'X' differs from the source's "
                "column 'x' only in case, and Spark reads names case-insensitively\n"
                "    hint: give the derived column another name, or write 'x' to replace the column\n")
    assert main(["validate", str(spec)]) == 1
    assert capsys.readouterr().err == expected
    assert main(["capture", str(spec), "--cache-dir", str(tmp_path / "cache")]) == 1
    assert capsys.readouterr().err.endswith(expected)
    spec.write_text(spec.read_text().replace("X:", "x:"))
    assert main(["validate", str(spec)]) == 0


def test_capture_into_a_cache_it_cannot_write_is_refused_before_spark(small_parquet, tmp_path,
                                                                     monkeypatch, capsys):
    """capture's product is the cache: with one it could not write it captured on Spark
    into a temporary directory removed at exit, said 'lineage cached in' it and exited 0.
    (serve and demo still fall back to a temporary directory: tests/lineage/test_store.py)"""
    import brushfire.capture.spark as sp

    def no_spark(*_, **__):
        msg = "Spark started"
        raise AssertionError(msg)

    monkeypatch.setattr(sp, "get_spark", no_spark)
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: v\nsource: {{path: {small_parquet}}}\nviews:\n"
                    "  - {name: a, type: categorical, field: cat}\n")
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory should be")
    assert main(["capture", str(spec), "--cache-dir", str(blocker / "cache")]) == 1
    assert capsys.readouterr().err == (
        f"brushfire capture: cannot write the lineage cache {blocker / 'cache'}: Not a directory\n"
        "    hint: give --cache-dir a directory this user can write (or set $BRUSHFIRE_CACHE)\n")


def test_validate_warns_about_decimal_division(small_parquet, tmp_path, capsys):
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: v\nsource:\n  path: {small_parquet}\n  columns:\n"
                    "    h: hour(t) + minute(t) / 60.0\nviews:\n"
                    "  - {name: a, type: histogram, field: h, bin: {step: 1, extent: [0, 24]}}\n")
    assert main(["validate", str(spec)]) == 0
    out, err = capsys.readouterr()
    assert f"warning: {spec}:5: source.columns.h: minute(t) / 60.0 divides decimals" in err
    assert out == f"{spec}: ok\n"


@pytest.mark.spark
def test_validate_with_spark_knows_the_types_of_derived_columns(spark, tmp_path, capsys):
    csv = tmp_path / "rows.csv"
    csv.write_text("x,label\n1,a\n2,b\n")
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: v\nsource:\n  path: {csv}\n  options: {{header: 'true'}}\n  columns:\n"
                    "    y: concat(label, '!')\nviews:\n"
                    "  - {name: a, type: histogram, field: y, bin: {step: 1, extent: [0, 9]}}\n")
    assert main(["validate", str(spec)]) == 1  # concat(...) is a string, whatever the columns
    assert "source.columns.y: derived column 'y' is a string" in capsys.readouterr().err
    spec.write_text(spec.read_text().replace("concat(label, '!')", "coalesce(label, x)"))
    assert main(["validate", str(spec)]) == 0  # a CSV's types are known once Spark reads it
    assert capsys.readouterr().out == f"{spec}: ok (the columns' types are checked at capture, or with --spark)\n"
    spec.write_text(spec.read_text().replace("coalesce(label, x)", "nvl(label, 'none')"))
    assert main(["validate", "--spark", str(spec)]) == 1
    assert capsys.readouterr().err == f"""\
{spec}:6: source.columns.y: derived column 'y' is a string, but views[0].field (a histogram view) needs a number column
    hint: make the expression a number, e.g. CAST(... AS DOUBLE)
"""


def test_validate_says_which_joins_columns_it_could_not_check(tmp_path, capsys):
    """A JSON dimension table's columns are Spark's to infer: 'ok' says they were not
    checked (a plain 'ok' let a typo in a joined column through to capture unnoticed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"k": pa.array([7], pa.int64())}), tmp_path / "fact.parquet")
    (tmp_path / "dim.json").write_text('{"id": 7, "name": "seven"}\n')
    spec = tmp_path / "d.yaml"
    spec.write_text("name: v\nsource:\n  path: fact.parquet\n  joins:\n"
                    "    - {name: d, path: dim.json, key: id, on: k}\n"
                    "views:\n  - {name: a, type: categorical, field: d.nmae}\n")
    assert main(["validate", str(spec)]) == 0
    assert capsys.readouterr().out == (
        f"{spec}: ok (the columns of join d are checked at capture, or with --spark)\n")


def test_validate_checks_the_joins_of_a_json_source_whose_tables_it_can_read(tmp_path, capsys):
    """A JSON source (its columns Spark's to infer) joined to a Parquet table: the table's
    key and the columns read of it are checked without Spark (validate said 'ok' to a
    misspelt key, and capture started Spark before naming it); the source's own are not."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "fact.json").write_text('{"k": 7, "x": 1.5}\n')
    pq.write_table(pa.table({"id": pa.array([7], pa.int64()), "name": ["seven"]}), tmp_path / "dim.parquet")
    spec = tmp_path / "d.yaml"
    spec.write_text("name: v\nsource:\n  path: fact.json\n  joins:\n"
                    "    - {name: d, path: dim.parquet, key: ID, on: k}\n"
                    "views:\n  - {name: a, type: categorical, field: d.nmae}\n"
                    "  - {name: b, type: histogram, field: x, bin: {step: 1}}\n")
    assert main(["validate", str(spec)]) == 1
    assert capsys.readouterr().err == f"""\
{spec}:5: source.joins[0].key: column 'ID' is not in the table of join 'd' (dim.parquet)
    columns: id, name
    hint: did you mean 'id'?
{spec}:7: views[0].field: column 'd.nmae' is not in the table of join 'd' (dim.parquet)
    columns: d.id, d.name
    hint: did you mean 'd.name'?
"""
    spec.write_text(spec.read_text().replace("ID", "id").replace("nmae", "name"))
    assert main(["validate", str(spec)]) == 0
    assert capsys.readouterr().out == f"{spec}: ok (columns are checked at capture, or with --spark)\n"


def test_validate_checks_a_csv_sources_column_names_from_its_first_line(tmp_path, capsys):
    """A newcomer's CSV with a misspelt column: its names are on the file's first line, so
    validate names the column without Spark (it said 'ok', and capture failed after Spark's
    start); the kinds stay Spark's to infer."""
    (tmp_path / "temps.csv").write_text("\ufeffdate,temp,Station Name\n2010/01/01 00:00,39.4,SEA\n")
    spec = tmp_path / "d.yaml"
    spec.write_text("name: v\nsource:\n  path: temps.csv\n  columns: {f: temp * 9 / 5 + 32}\n"
                    "views:\n  - {name: t, type: histogram, field: tmep, bin: {step: 1}}\n"
                    "  - {name: s, type: categorical, field: Station Name}\n"
                    "interactions:\n  details: {columns: [date, f]}\n")
    assert main(["validate", str(spec)]) == 1
    assert capsys.readouterr().err == f"""\
{spec}:6: views[0].field: column 'tmep' is not in the source
    columns: date, temp, Station Name, f
    hint: did you mean 'temp'?
"""
    spec.write_text(spec.read_text().replace("tmep", "temp"))
    assert main(["validate", str(spec)]) == 0
    assert capsys.readouterr().out == f"{spec}: ok (the columns' types are checked at capture, or with --spark)\n"
    spec.write_text(spec.read_text().replace("temp * 9", "tmp * 9"))  # a derived column's too
    assert main(["validate", str(spec)]) == 1
    assert "source.columns.f: column 'tmp' is not in the source" in capsys.readouterr().err


@pytest.mark.spark
def test_validate_with_spark_refuses_a_duplicated_join_key(spark, tmp_path, capsys):
    """What capture refuses before its scan, `validate --spark` refuses too: a key that is
    not unique as the join compares it ('7' and '007' for an integer on)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"k": pa.array([7, 1], pa.int64())}), tmp_path / "fact.parquet")
    (tmp_path / "dim.csv").write_text("id,name\n7,seven\n007,bond\n")
    spec = tmp_path / "d.yaml"
    spec.write_text("name: v\nsource:\n  path: fact.parquet\n  joins:\n"
                    "    - {name: d, path: dim.csv, key: id, on: k, options: {inferSchema: 'false'}}\n"
                    "views:\n  - {name: a, type: categorical, field: d.name}\n")
    assert main(["validate", str(spec)]) == 0
    capsys.readouterr()
    assert main(["validate", "--spark", str(spec)]) == 1
    assert capsys.readouterr().err == (
        f"join 'd': key 'id' of {tmp_path}/dim.csv is not unique (the value '007' is equal to another "
        "row's as the join compares it with 'k': 7), so a row of the source would match several rows; "
        f"hint: join on a unique column of {tmp_path}/dim.csv, or remove its duplicate rows\n")


# --- capture progress: a line per phase to files and pipes, one line redrawn on a terminal --

# what a capture of the flights dashboard reported (issue 36): (seconds since start, stage,
# share done); the profile's and shard job's stages repeat every half second
CAPTURE_REPORTS = [
    (0.0, "starting Spark", None),
    (64.6, "profile: distinct values of the brushed fields", 0.0),
    *[(78.1 + i / 2, "profile: distinct values", 0.0) for i in range(30)],
    *[(95.5 + i / 2, "profile: distinct values", 0.5) for i in range(40)],
    *[(145.2, "profile: distinct values", 1.0)] * 42,
    (145.2, "shard job: lineage built by the executors", 0.0),
    *[(146.3 + i / 2, "shard job: building lineage", 0.0) for i in range(80)],
    *[(188.2 + i / 2, "shard job: building lineage", 0.5) for i in range(4)],
    (190.1, "merging shard results", 0.0),
    (190.2, "merging shard results", 0.5),
]


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _play(stream, monkeypatch, reports, end: float | None = None):
    from brushfire.progress import ProgressLine

    clock = _Clock()
    monkeypatch.setattr("brushfire.cli.time.perf_counter", clock)
    progress = ProgressLine(stream)
    for t, stage, fraction in reports:
        clock.now = 1000.0 + t
        progress(stage, fraction)
    if end is not None:
        clock.now = 1000.0 + end
        progress.close()
    return stream.getvalue()


def test_progress_to_a_file_or_pipe_is_one_line_per_phase_with_its_time(monkeypatch):
    text = _play(io.StringIO(), monkeypatch, CAPTURE_REPORTS, end=190.5)
    assert text == """\
[   0.0s] starting Spark
[ 145.2s] profile: distinct values (80.6 s)
[ 190.1s] shard job: building lineage (44.9 s)
[ 190.5s] merging shard results (0.4 s)
"""


def test_progress_of_a_server_opening_ends_with_ready_or_failed(monkeypatch):
    """`brushfire serve` never closes its printer: the last step ends the open phase."""
    reports = [(0.0, "starting Spark", None), (3.0, "shard job: building lineage", 0.2),
               (9.5, "warming up the engine", None), (11.0, "flights ready: 3,000 rows captured", 1.0)]
    assert _play(io.StringIO(), monkeypatch, reports) == """\
[   0.0s] starting Spark
[   9.5s] shard job: building lineage (6.5 s)
[   9.5s] warming up the engine
[  11.0s] flights ready: 3,000 rows captured
"""
    reports = [(0.0, "starting Spark", None), (3.0, "profile: distinct values", 0.5),
               (4.0, "flights failed: Spark failed while profiling the source: boom", None)]
    assert _play(io.StringIO(), monkeypatch, reports).splitlines()[1:] == [
        "[   4.0s] profile: distinct values (1.0 s)",
        "[   4.0s] flights failed: Spark failed while profiling the source: boom"]


def test_progress_on_a_terminal_is_one_line_redrawn_and_ended(monkeypatch):
    text = _play(_Terminal(), monkeypatch, CAPTURE_REPORTS, end=190.5)
    assert text.count("profile: distinct values 100%") == 1  # not once per poll
    assert text.count("\n") == 3  # starting Spark, the profile at 100 %, the close
    assert text.endswith("[ 190.2s] merging shard results  50%\x1b[K\n")


def test_capture_progress_written_to_a_file_has_no_control_codes(spark, small_parquet, tmp_path,
                                                                 capsys):
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: progress_test\nsource: {{path: {small_parquet}}}\nviews:\n"
                    "  - {name: cat, type: categorical, field: cat, top: 3}\n")
    assert main(["capture", str(spec), "--cache-dir", str(tmp_path / "cache"), "--no-baseline"]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "\x1b" not in err, err
    lines = err.splitlines()
    assert lines and all(re.fullmatch(r"\[ *\d+\.\ds\] \S.*", line) for line in lines), lines
    phases = [line.split("] ", 1)[1].split(": ")[0].split(" (")[0] for line in lines]
    assert len(phases) == len(set(phases)), lines  # each phase once


@pytest.mark.spark
@pytest.mark.slow
def _capture_in_a_process(spec, tmp_path):
    """`brushfire capture SPEC` in a process of its own on local[1], stderr to a pipe."""
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "BRUSHFIRE_SPARK_CONF"}
    return subprocess.run([str(Path(sys.executable).with_name("brushfire")), "capture", str(spec),
                           "--cache-dir", str(tmp_path / "cache"), "--no-baseline",
                           "--spark-master", "local[1]"],
                          capture_output=True, text=True, timeout=600,
                          env={**env, "BRUSHFIRE_DRIVER_MEMORY": "512m"})


def test_a_capture_piped_to_a_file_is_progress_lines_without_sparks_log(small_parquet, tmp_path):
    """`brushfire capture` in a process of its own, stderr to a pipe: Spark's driver starts
    quiet (capture/log4j2.properties), so what is written is the progress, one line per
    phase, and the JVM's own notice of the incubator module Spark's launcher adds."""
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: piped\nsource: {{path: {small_parquet}}}\nviews:\n"
                    "  - {name: hx, type: histogram, field: x, bin: {step: 10, extent: [0, 100]}}\n")
    run = _capture_in_a_process(spec, tmp_path)
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stderr.splitlines()
             if line != "WARNING: Using incubator modules: jdk.incubator.vector"]
    assert lines and all(re.fullmatch(r"\[ *\d+\.\ds\] \S.*", line) for line in lines), run.stderr
    assert "lineage cached in" in run.stdout


def test_a_derived_column_failing_on_a_row_is_its_message_without_sparks_stack_traces(small_parquet,
                                                                                     tmp_path):
    """A task failing in ANSI mode (x / 0) ends the capture with the message naming the
    derived column; before it, Spark's executor and task-set logs wrote a Java stack trace
    per attempt (some 80 lines) to the terminal."""
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: zero\nsource:\n  path: {small_parquet}\n  columns:\n    q: \"x / 0\"\n"
                    "views:\n  - {name: hq, type: histogram, field: q, bin: {step: 10, extent: [0, 100]}}\n")
    run = _capture_in_a_process(spec, tmp_path)
    assert run.returncode == 1, run.stderr
    lines = [line for line in run.stderr.splitlines()
             if line != "WARNING: Using incubator modules: jdk.incubator.vector"
             and not re.fullmatch(r"\[ *\d+\.\ds\] \S.*", line)]
    assert lines[0].startswith(f"brushfire: {spec}:5: source.columns.q: Spark fails on a row: "
                               "Division by zero."), run.stderr
    assert lines[1:] == ["    hint: try_divide(a, b) is null where b is 0 (Spark's ANSI mode fails "
                         "on a / 0)"], run.stderr


# --- help texts ------------------------------------------------------------------------------


def _help(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"])
    assert info.value.code == 0
    return capsys.readouterr().out


def _commands(capsys) -> list[str]:
    """The commands the parser takes, from its own usage error."""
    with pytest.raises(SystemExit):
        main(["no-such-command"])
    return re.findall(r"'(\w+)'", capsys.readouterr().err.split("choose from", 1)[1])


def test_the_help_says_what_brushfire_and_each_command_do(capsys):
    commands = _commands(capsys)
    text = _help([], capsys)
    listed = dict(re.findall(r"^    (\w+) {2,}(\S.*)$", text, re.M))  # under "commands:"
    assert list(listed) == commands and {"profile", "schema"} <= set(listed), text
    assert all(len(what) > 20 for what in listed.values()), listed
    assert "parse arguments" not in text and "brushfire serve SPEC" in text
    assert re.search(r"^  BRUSHFIRE_CACHE +the lineage cache", text, re.M), text  # "environment:"


@pytest.mark.parametrize("command", ["validate", "plan", "capture", "serve", "demo", "profile",
                                     "schema", "bench"])
def test_every_command_describes_itself_and_its_arguments(command, capsys):
    text = _help([command], capsys)
    description = text.split("\n\n", 2)[1]
    assert len(description) > 40 and not description.startswith(("positional", "options")), text
    positionals = text.split("positional arguments:\n", 1)[1].split("\n\n", 1)[0] \
        if "positional arguments:" in text else ""
    for line in positionals.splitlines():  # each with what it is, not its name alone
        assert re.fullmatch(r"  \S+ +\S.*| {10,}\S.*", line), line


def test_validate_help_says_what_it_checks_without_spark(capsys):
    """It said columns are checked against "a Parquet or ORC source's" (validate reads a
    Delta table's schema and a CSV file's first line too, docs/spec.md), and that --spark
    runs no job (a join's key is checked unique by one)."""
    text = " ".join(_help(["validate"], capsys).split())
    assert "Parquet or ORC footers, a Delta log, a CSV file's first line" in text, text
    spark = text.split("--spark ", 1)[1].split("--spark-master", 1)[0]
    assert "join" in spark and "its key is unique" in spark, spark


def test_capture_help_describes_the_spec_and_the_cache(capsys):
    text = " ".join(_help(["capture"], capsys).split())
    assert "spec the dashboard's YAML spec (docs/spec.md)" in text
    assert "--cache-dir CACHE_DIR lineage cache (default: $BRUSHFIRE_CACHE, else the user's cache " \
           "directory; here " in text


@pytest.mark.parametrize(("written", "hint"), [
    # absolute: where it stops existing and what is there; no "make it absolute"
    ("{data}/flights.parquet", "{data} has no 'flights.parquet'; did you mean 'flights-3m.parquet'?"),
    ("{data}/2001/flights.parquet", "{data} has no '2001'"),
    # relative to the spec's folder: the same, and how to write it
    ("data/flight-3m.parquet", "{data} has no 'flight-3m.parquet'; did you mean 'flights-3m.parquet'?"
                               "; fix the path, or make it absolute"),
    # a pattern: the folder it names is the path to write
    ("data/*.parquet", "a path is a file or a folder (every data file in it is read), not a pattern:"
                       " write path: data for every file in that folder, or move the files you want"
                       " into a folder of their own"),
    ("{data}/flights-?m.parquet", "a path is a file or a folder (every data file in it is read), not a"
                                  " pattern: write path: {data} for every file in that folder, or move"
                                  " the files you want into a folder of their own"),
])
def test_a_missing_source_says_where_the_path_stops_existing(written, hint, tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    (data / "flights-3m.parquet").write_bytes(b"")
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: v\nsource:\n  path: {written.format(data=data)}\nviews:\n"
                    "  - {name: a, type: categorical, field: cat}\n")
    assert main(["validate", str(spec)]) == 1
    err = capsys.readouterr().err
    assert err.endswith(f": no such file or directory\n    hint: {hint.format(data=data)}\n"), err


def test_version_is_said(capsys):
    """`brushfire --version` said 'the following arguments are required: COMMAND'."""
    import brushfire

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"brushfire {brushfire.__version__}\n"
