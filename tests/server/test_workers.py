"""`brushfire serve --workers N`: N processes on one port, each with its share of the cores,
memory budgets and session limits; the dashboards captured once, before the workers
start, and opened by each from the cache."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml
from websockets.sync.client import connect

from brushfire import Dashboard, protocol, wire
from brushfire.bench.processes import command, family
from brushfire.engine import copies, memory, parallel
from brushfire.server.app import Limits
from brushfire.server.workers import bind, share
from brushfire.spec import load_dashboard
from server.conftest import rich_spec

ROOT = Path(__file__).resolve().parents[2]


def test_a_worker_takes_its_share_of_the_cores_and_the_memory(monkeypatch):
    machine = len(os.sched_getaffinity(0))
    monkeypatch.delenv(parallel.PROCESSES_ENV, raising=False)
    monkeypatch.setenv(memory.CUBE_MEMORY_ENV, "600MB")
    monkeypatch.setenv(copies.COPY_MEMORY_ENV, "2GB")
    assert (parallel.processes(), parallel.cores()) == (1, machine)
    alone = memory.default_cap(), copies.default_cap()
    monkeypatch.setenv(parallel.PROCESSES_ENV, "2")
    assert (parallel.processes(), parallel.cores()) == (2, max(1, machine // 2))
    assert (memory.default_cap(), copies.default_cap()) == (alone[0] // 2, alone[1] // 2)
    monkeypatch.setenv(parallel.PROCESSES_ENV, "many")  # not a number: one process
    assert parallel.processes() == 1


def test_the_session_limits_are_split_among_the_workers():
    assert share(Limits(256, 128), 3) == Limits(85, 42)
    assert share(Limits(2, 1), 4) == Limits(1, 1)  # at least one each


def test_the_workers_listen_on_one_port():
    socks = bind("127.0.0.1", 0, 3)
    try:
        assert len({s.getsockname() for s in socks}) == 1
        for s in socks:
            s.listen()
        with socket.create_connection(socks[0].getsockname(), timeout=5):
            pass  # the kernel hands the connection to one of them
    finally:
        for s in socks:
            s.close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError):  # a port another program holds: an error, not a hang
            bind("127.0.0.1", taken.getsockname()[1], 2)
    other = bind("127.0.0.1", 0, 2)  # another server's workers: their port is not shared
    try:
        for s in other:
            s.listen()
        with pytest.raises(OSError):
            bind("127.0.0.1", other[0].getsockname()[1], 2)
    finally:
        for s in other:
            s.close()


def test_watch_is_refused_with_several_workers(capsys):
    from brushfire.cli import main

    assert main(["serve", "no-such-spec.yaml", "--workers", "2", "--watch"]) == 2
    assert "--workers 1" in capsys.readouterr().err


@pytest.mark.spark
def test_two_workers_answer_sessions_on_one_port_and_stop_together(spark, small_parquet, tmp_path):
    spec_path = tmp_path / "rich.yaml"
    spec_path.write_text(yaml.safe_dump(rich_spec(small_parquet)))
    cache = tmp_path / "cache"
    dash = Dashboard.open(load_dashboard(spec_path), spark=spark, cache_dir=cache)  # captured here
    message = {"type": "brush", "id": 7, "view": "hx", "interval": [20, 60]}
    expected = json.loads(wire.dumps(protocol.handle(dash.session(), message)))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "backend"))
    log = (tmp_path / "serve.log").open("w")  # (a pipe nobody reads could fill and stop the server)
    proc = subprocess.Popen([sys.executable, "-m", "brushfire.cli", "serve", str(spec_path), "--port", str(port),
                             "--workers", "2", "--cache-dir", str(cache)],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 180
        workers: set[int] = set()
        while len(workers) < 2:  # each request a new connection: the kernel spreads them
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, f"workers answering: {workers}"
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()
            except httpx.TransportError:
                time.sleep(0.2)
                continue
            if health["dashboards"] == {"rich": "ready"}:
                assert health["worker"]["of"] == 2
                workers.add(health["worker"]["pid"])
        assert workers < set(family(proc.pid))
        # opened from the cache: no worker, nor the parent, started Spark
        assert not [p for p in family(proc.pid) if "java" in command(p)]
        for _ in range(6):  # sessions on either worker answer as the dashboard does
            with connect(f"ws://127.0.0.1:{port}/ws/rich") as ws:
                ws.send(json.dumps(message))
                reply = json.loads(ws.recv(timeout=60))
                assert reply["views"] == expected["views"] and reply["filters"] == expected["filters"]
        proc.send_signal(signal.SIGINT)  # Ctrl-C stops the workers with the parent
        proc.wait(60)
        deadline = time.monotonic() + 30
        while any(Path(f"/proc/{p}").exists() and "spawn_main" in command(p) for p in workers):
            assert time.monotonic() < deadline, "a worker outlived the server"
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
