"""`brushfire serve --watch`: new data in a source's folder is captured (only what changed)
and served; open sessions move to it with their filters, told by a `reloaded` message; a
reload that fails keeps the last good capture served."""

from __future__ import annotations

import json
import time
import weakref
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from websockets.sync.client import connect

from brushfire.server import create_app
from brushfire.server.hosting import HostedDashboard
from brushfire.spec import parse_dashboard
from live_server import live_server
from rows import make_rows

pytestmark = pytest.mark.spark


def growing_spec(folder) -> dict:
    return {"name": "growing", "source": {"path": str(folder), "format": "parquet"},
            "views": [{"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
                      {"name": "cat", "type": "categorical", "field": "cat", "top": 40}],
            "interactions": {"crossfilter": [{"views": ["hx", "cat"]}]}}


def growing_host(spark, tmp_path, rows: int, seed: int):
    """A folder of one Parquet file (`rows` of make_rows) and its dashboard, opened and
    ready on a HostedDashboard; returns (folder, host)."""
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(make_rows(rows, seed), folder / "part-0.parquet")
    host = HostedDashboard.opening(parse_dashboard(growing_spec(folder)), cache_dir=tmp_path / "cache",
                                   spark=spark)
    assert host.wait(300) and host.status == "ready", host.error
    return folder, host


def delta_host(spark, tmp_path, rows: int):
    """A Delta table of `rows` of make_rows (seed 1) and its dashboard, opened and ready on
    a HostedDashboard; returns (table, host)."""
    from deltalake import write_deltalake

    table = tmp_path / "table"
    write_deltalake(table, make_rows(rows, 1))
    d = growing_spec(table)
    d["source"]["format"] = "delta"
    host = HostedDashboard.opening(parse_dashboard(d), cache_dir=tmp_path / "cache", spark=spark)
    assert host.wait(300) and host.status == "ready", host.error
    return table, host


def ask(ws, message: dict) -> dict:
    ws.send(json.dumps(message))
    return json.loads(ws.recv(timeout=60))


def test_new_files_are_served_to_open_sessions_with_their_filters(spark, tmp_path):
    folder, host = growing_host(spark, tmp_path, 800, 1)
    assert not host.reload(spark=spark)  # nothing new: nothing done
    with live_server(create_app([host])) as addr, connect(f"ws://{addr}/ws/growing") as ws:
        before = ask(ws, {"type": "brush", "id": 1, "view": "hx", "interval": [20, 61]})
        ask(ws, {"type": "brush", "id": 2, "view": "hx", "interval": [20, 60]})
        pq.write_table(make_rows(400, 2), folder / "part-1.parquet")
        replaced = weakref.ref(host.dashboard.store)
        assert host.reload(spark=spark)
        # an idle session is told at once, with the filters it keeps
        msg = json.loads(ws.recv(timeout=60))
        assert msg["type"] == "reloaded" and msg["rows"] == 1200 and msg["dropped"] == []
        assert msg["filters"] == {"hx": {"interval": [20, 60]}}
        after = ask(ws, {"type": "brush", "id": 3, "view": "hx", "interval": [20, 61]})
        assert after["type"] == "update" and after["filters"] == {"hx": {"interval": [20, 61]}}
        # the views count the new rows, under the same brush
        assert sum(after["views"]["cat"]["counts"]) > sum(before["views"]["cat"]["counts"])
        status = httpx.get(f"http://{addr}/api/dashboards/growing").json()
        assert status["rows"] == 1200 and status["reloads"] == 1
        # the replaced capture's memory is given back once its sessions moved on
        deadline = time.monotonic() + 60
        while replaced() is not None:
            assert time.monotonic() < deadline, "the replaced capture is still alive"
            time.sleep(0.2)
        # a new session starts on the new capture
        with connect(f"ws://{addr}/ws/growing") as other:
            fresh = ask(other, {"type": "brush", "id": 1, "view": "hx", "interval": [20, 61]})
            assert fresh["views"]["cat"]["counts"] == after["views"]["cat"]["counts"]


def test_a_reload_that_fails_keeps_the_last_good_capture(spark, tmp_path):
    folder, host = growing_host(spark, tmp_path, 600, 3)
    served = host.dashboard
    pq.write_table(pa.table({"x": ["not a number"] * 5, "cat": ["c01"] * 5}), folder / "part-1.parquet")
    seen = []
    assert not host.reload(spark=spark, echo=lambda stage, fraction: seen.append(stage))
    assert host.dashboard is served and host.reload_error
    # the file and the clash named (before any Spark job), not Spark's call
    assert "part-1.parquet: column 'x' is string; Spark reads the folder's x as double" in host.reload_error, \
        host.reload_error
    assert any("new data not picked up" in s for s in seen)
    with live_server(create_app([host])) as addr:
        status = httpx.get(f"http://{addr}/api/dashboards/growing").json()
        assert status["status"] == "ready" and status["rows"] == 600 and status["reload_error"]
        with connect(f"ws://{addr}/ws/growing") as ws:
            assert ask(ws, {"type": "brush", "id": 1, "view": "hx", "interval": [20, 60]})["type"] == "update"


def test_watch_checks_on_its_own(spark, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(make_rows(500, 4), folder / "part-0.parquet")
    host = HostedDashboard.opening(parse_dashboard(growing_spec(folder)), cache_dir=tmp_path / "cache",
                                   spark=spark)
    stop = host.watch(0.2, spark=spark)
    try:
        assert host.wait(300) and host.status == "ready", host.error
        changed = []
        unlisten = host.listen(lambda: changed.append(host.dashboard.store.n_rows))
        pq.write_table(make_rows(100, 5), folder / "part-1.parquet")
        deadline = time.monotonic() + 240
        while not changed:
            assert time.monotonic() < deadline, "the new file was not picked up"
            time.sleep(0.2)
        unlisten()
        assert changed == [600] and host.reloads == 1
    finally:
        stop.set()


def test_a_delta_version_naming_a_file_that_is_gone_is_a_clear_reload_error(spark, tmp_path):
    """A new Delta version whose Parquet file is not there (deleted by hand): the reload
    says so at source.path, naming the version and the file, not Python's bare
    `FileNotFoundError: [Errno 2] ...`; the last good capture stays served."""
    from deltalake import DeltaTable, write_deltalake

    table, host = delta_host(spark, tmp_path, 500)
    served = host.dashboard
    before = set(DeltaTable(str(table)).file_uris())
    write_deltalake(table, make_rows(200, 2), mode="append")
    (gone,) = set(DeltaTable(str(table)).file_uris()) - before
    Path(gone).unlink()
    assert not host.reload(spark=spark)
    assert host.dashboard is served and host.reload_error
    assert "version 1 names a file that is not there" in host.reload_error and gone in host.reload_error, \
        host.reload_error
    assert not host.reload_error.startswith("FileNotFoundError")


def test_a_reload_failing_alike_at_every_check_is_said_once(spark, tmp_path):
    """The watch checks every few seconds: a failure that stays (a file of another
    schema, until someone removes it) is printed and logged once, not at every check."""
    folder, host = growing_host(spark, tmp_path, 300, 3)
    pq.write_table(pa.table({"x": ["not a number"] * 5, "cat": ["c01"] * 5}), folder / "part-1.parquet")
    seen = []
    for _ in range(3):
        assert not host.reload(spark=spark, echo=lambda stage, fraction: seen.append(stage))
    assert host.reload_error and sum("new data not picked up" in s for s in seen) == 1, seen


def vanishing_mid_scan(spark, tmp_path):
    """A host over a folder, a file appended and removed while the reload's scan reads
    it; returns (host, the file's name)."""
    folder, host = growing_host(spark, tmp_path, 400, 5)
    new = folder / "part-1.parquet"
    pq.write_table(make_rows(200, 6), new)

    def echo(stage: str, fraction) -> None:
        if stage.startswith("scan") and new.exists():
            new.unlink()
    assert not host.reload(spark=spark, echo=echo)
    return host, new


def test_a_file_removed_while_the_reload_reads_it_is_named_with_why(spark, tmp_path):
    """Not 'fix the path; executors must read it at the same path': the source's path is
    there, one of its files went away while Spark read it."""
    host, new = vanishing_mid_scan(spark, tmp_path)
    assert str(new) in host.reload_error and "removed while it was read" in host.reload_error, \
        host.reload_error
    assert host.dashboard.store.n_rows == 400


def test_a_reload_error_goes_once_the_capture_served_is_current_again(spark, tmp_path):
    """The file that failed the reload is gone for good: the served capture is the
    source's again, and /api/dashboards/<name> no longer reports the old failure."""
    host, _ = vanishing_mid_scan(spark, tmp_path)
    assert host.reload_error
    assert not host.reload(spark=spark)
    assert host.reload_error is None and "reload_error" not in host.status_json()


def test_a_capture_of_the_edited_spec_is_not_taken_for_new_data(spark, tmp_path):
    """The spec edited and captured (`brushfire capture`) while the old one is served with
    --watch, over the same source (one cache entry): the served capture is still the
    data's, so nothing is captured again (before, the old spec was captured again over
    the edited one's entry at the next check, 'the source's data changed'); data appended
    after that are picked up (before, they were compared with the edited spec's capture
    and missed)."""
    from brushfire import Dashboard
    from brushfire.lineage.store import entry_dir, read_manifest, spec_hash

    folder, host = growing_host(spark, tmp_path, 400, 1)
    served = host.dashboard
    edited = growing_spec(folder)
    edited["views"].append({"name": "hk", "type": "histogram", "field": "k", "bin": {"step": 20, "extent": [-20, 120]}})
    edited = parse_dashboard(edited)
    Dashboard.open(edited, spark=spark, cache_dir=tmp_path / "cache")
    assert not host.reload(spark=spark) and host.dashboard is served and host.reload_error is None
    entry = read_manifest(entry_dir(tmp_path / "cache", edited))
    assert entry["spec_sha256"] == spec_hash(edited)  # the edited spec's capture stays
    pq.write_table(make_rows(100, 2), folder / "part-1.parquet")
    Dashboard.open(edited, spark=spark, cache_dir=tmp_path / "cache")  # (captured over it too)
    assert host.reload(spark=spark) and host.dashboard.store.n_rows == 500
    assert [v.name for v in host.dashboard.spec.views] == ["hx", "cat"]  # still the spec served


def test_a_delta_table_reloaded_is_current_then(spark, tmp_path):
    """The files listed by the table's log are those the capture keys: once the new version
    is served, the next checks find nothing new (no reload at every check)."""
    from deltalake import write_deltalake

    table, host = delta_host(spark, tmp_path, 300)
    assert not host.dashboard.stale()
    write_deltalake(table, make_rows(100, 2), mode="append")
    assert host.reload(spark=spark) and host.dashboard.store.n_rows == 400
    assert not host.dashboard.stale() and not host.reload(spark=spark) and host.reloads == 1


def test_a_dashboard_that_failed_to_open_is_opened_again_when_its_data_change(spark, tmp_path):
    """Served with --watch over a folder whose only file is unreadable: the opening fails
    (no capture to serve); the file replaced by a good one, the watch opens it again
    and serves it (it stayed failed until a restart)."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "part-0.parquet").write_bytes(b"not a parquet file" * 50)
    host = HostedDashboard.opening(parse_dashboard(growing_spec(folder)), cache_dir=tmp_path / "cache",
                                   spark=spark)
    stop = host.watch(0.2, spark=spark)
    try:
        assert host.wait(300) and host.status == "failed" and "part-0.parquet" in host.error, host.error
        time.sleep(1)
        assert host.status == "failed"  # (nothing changed: not opened again at each check)
        pq.write_table(make_rows(300, 1), folder / "part-0.parquet")
        deadline = time.monotonic() + 120
        while host.status != "ready":
            assert time.monotonic() < deadline, f"not opened again: {host.status} {host.error}"
            time.sleep(0.2)
        assert host.dashboard.store.n_rows == 300 and host.error is None
    finally:
        stop.set()


def test_a_cache_that_cannot_be_written_is_no_new_data(spark, tmp_path):
    """The lineage cache cannot be written (the capture went to a temporary directory):
    the entry is never there, which is no change of the data; each check captured the
    whole source again, and told every session it had new data."""
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(make_rows(300, 1), folder / "part-0.parquet")
    (tmp_path / "a-file").write_text("")
    host = HostedDashboard.opening(parse_dashboard(growing_spec(folder)), cache_dir=tmp_path / "a-file" / "cache",
                                   spark=spark)
    assert host.wait(300) and host.status == "ready", host.error
    assert not host.reload(spark=spark) and host.reloads == 0
    pq.write_table(make_rows(100, 2), folder / "part-1.parquet")
    assert host.reload(spark=spark) and host.dashboard.store.n_rows == 400
    assert not host.reload(spark=spark) and host.reloads == 1


def test_a_dashboard_opened_without_a_cache_picks_up_new_data(spark, tmp_path):
    """Its capture went to a temporary directory: new files are noticed all the same (they
    were not: `stale` was False without a cache), and only they are read."""
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(make_rows(300, 1), folder / "part-0.parquet")
    host = HostedDashboard.opening(parse_dashboard(growing_spec(folder)), cache_dir=None, spark=spark)
    assert host.wait(300) and host.status == "ready", host.error
    assert not host.reload(spark=spark) and host.reloads == 0
    pq.write_table(make_rows(100, 2), folder / "part-1.parquet")
    assert host.reload(spark=spark) and host.dashboard.store.n_rows == 400
    assert any("reused 1 of 2 input files" in c for c in host.dashboard.store.info.changes), \
        host.dashboard.store.info.changes
    assert not host.reload(spark=spark) and host.reloads == 1
