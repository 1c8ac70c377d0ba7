"""Unknown names never start Spark (issue 36, defect 2): on a fresh server, a message naming a
column, view or parameter that is not there, in any field, is refused at once, before any
Spark session or job; the names come from the spec, the source's footers (a CSV source's
header) and, once Spark runs, its own schema. Without Spark: starting it fails the test."""

from __future__ import annotations

import json
import time

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from websockets.sync.client import connect

from brushfire import spark_source
from brushfire.server import create_app
from brushfire.server.app import uvicorn_options
from brushfire.source import source_columns
from brushfire.spec import models as m
from live_server import live_server

PASSWD = "../../etc/passwd"
REFUSED = [  # (message, what the error says)
    ({"type": "details", "columns": [PASSWD]}, f"details.columns[0]: no column '{PASSWD}' in the source"),
    ({"type": "details", "columns": ["x", "nope"], "page_size": 10_000},
     "details.columns[1]: no column 'nope' in the source; columns: cat, dest, k, m, t, x"),
    ({"type": "details", "view": "nope"}, "details.view: 'nope' is not a view"),
    ({"type": "details", "view": "hx", "bars": [99]}, "details.bars[0]: 99 is not a bar of view 'hx'"),
    ({"type": "filter", "column": PASSWD, "values": [1]}, f"filter.column: no column '{PASSWD}' in the source"),
    ({"type": "filter", "column": "mm", "interval": [0, 1]}, "no column 'mm' in the source; columns: cat,"),
    ({"type": "filter", "column": "cat", "interval": [0, 1]}, "column 'cat' holds string values"),
    ({"type": "filter", "column": "x", "interval": ["a", 1]}, "x: interval[0]: 'a' is not a number"),
    ({"type": "filter", "column": "x", "values": [{}]}, "values are strings, numbers or booleans"),
    ({"type": "filters", "filters": {f"column:{PASSWD}": {"interval": [0, 1]}}},
     f"filters.column:{PASSWD}: no column '{PASSWD}' in the source"),
    ({"type": "filters", "filters": {"column:nope": {"values": ["a"]}, "hx": {"interval": [0, 9]}}},
     "filters.column:nope: no column 'nope' in the source"),
    ({"type": "filters", "filters": {"nope": {"interval": [0, 1]}}}, "nope"),
    ({"type": "brush", "view": PASSWD, "interval": [0, 1]}, "brush.view: '../../etc/passwd' is not a brushable view"),
    ({"type": "select", "view": "nope", "values": ["a"]}, "select.view: 'nope' is not a categorical view"),
    ({"type": "parameter", "name": "nope", "value": 1}, "parameter.name: 'nope' is not a parameter"),
    ({"type": "clear", "view": "nope"}, "clear.view: 'nope' is not a brushable view or parameter"),
    ({"type": "highlight", "source": "nope", "bars": [0]}, "highlight.source: 'nope' is not a view"),
    ({"type": "highlight", "source": "cat", "bars": [0], "targets": [PASSWD]},
     "highlight.targets[0]: '../../etc/passwd' is not a view"),
    ({"type": "forward", "rids": [10**9]}, "forward.rids[0]: 1000000000 is not a row id"),
]


@pytest.fixture(scope="module")
def served(rich_local):
    """The dashboard as `brushfire serve` has it before its first client: warmed up."""
    rich_local.warm_up(freeze=False)
    return rich_local


@pytest.fixture
def no_spark(monkeypatch):
    """Starting Spark for a lazy answer is recorded (and refused)."""
    started: list[str] = []

    def start(self):
        started.append(self.spec.name)
        msg = "Spark was started"
        raise AssertionError(msg)

    monkeypatch.setattr(spark_source.SparkSource, "start", start)
    return started


@pytest.mark.parametrize(("message", "error"), REFUSED, ids=[json.dumps(r[0])[:60] for r in REFUSED])
def test_unknown_names_are_refused_at_once_without_spark(served, no_spark, message, error):
    with live_server(create_app([served]), **uvicorn_options()) as addr, \
            connect(f"ws://{addr}/ws/rich") as ws:
        t0 = time.perf_counter()
        ws.send(json.dumps({**message, "id": 100}))
        reply = json.loads(ws.recv(timeout=30))
        seconds = time.perf_counter() - t0
        assert reply["type"] == "error" and reply["id"] == 100, reply
        assert error in reply["message"], reply["message"]
        assert seconds < 0.5  # (50 ms on a quiet machine: a fresh server, issue 36)
        state = json.loads((ws.send(json.dumps({"type": "state"})), ws.recv(timeout=30))[1])
        assert state["filters"] == {}  # nothing changed
    assert no_spark == []


def test_known_columns_come_from_footers_and_the_spec(rich_local, no_spark):
    source = spark_source.source_for(rich_local)
    assert source.known_columns() == {"x": "number", "k": "number", "cat": "string", "dest": "string",
                                      "t": "temporal", "m": "number"}
    assert no_spark == [] and source.spark is None


def test_source_columns_of_csv_and_json(tmp_path):
    table = pa.table({"a": [1, 2], "b c": ["x", "y"]})
    pacsv.write_csv(table, tmp_path / "h.csv")
    with_header = m.Source(path=str(tmp_path / "h.csv"), columns={"d": "a + 1"})  # header: the default
    assert source_columns(with_header) == {"a": None, "b c": None, "d": None}
    no_header = m.Source(path=str(tmp_path / "h.csv"), options={"HEADER": "false"})
    assert list(source_columns(no_header)) == ["_c0", "_c1"]  # Spark's names
    (tmp_path / "s.csv").write_text("a;b\n1;2\n")
    assert list(source_columns(m.Source(path=str(tmp_path / "s.csv"), options={"sep": ";", "header": "true"}))) \
        == ["a", "b"]
    (tmp_path / "dup.csv").write_text("a,A\n1,2\n")  # Spark renames duplicates: only Spark knows
    assert source_columns(m.Source(path=str(tmp_path / "dup.csv"), options={"header": "true"})) is None
    (tmp_path / "j.json").write_text('{"a": 1}\n{"b": 2}\n')  # Spark infers from every record
    assert source_columns(m.Source(path=str(tmp_path / "j.json"))) is None
