"""Start a loopback Spark standalone cluster from the installed PySpark: one master and
N workers on 127.0.0.1, each a `spark-class` JVM in its own process group.

A development and test utility, not used by capture itself: it lets capture run against
a real `spark://` master (separate executor JVMs, task results sent over the network)
without Docker or a Spark download. Used by tests/capture/test_cluster.py and
perf/bench_cluster.py; by hand:

    python -m brushfire.capture.standalone --workers 2    # prints the master URL; Ctrl-C stops it

It never imports pyspark (capture/spark.py is the only importer); it only runs the JVM
launcher shipped in the pyspark package. The driver should run with
SPARK_LOCAL_IP=127.0.0.1 (`LOOPBACK_ENV`) so that it, too, listens on loopback only.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
LOOPBACK_ENV = {"SPARK_LOCAL_IP": HOST}


class ClusterError(RuntimeError):
    """The cluster did not come up (the message ends with its processes' log tails)."""


def spark_home() -> Path:
    """The installed pyspark package directory, which holds bin/spark-class and jars/."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        msg = "pyspark is not installed in this environment"
        raise ClusterError(msg)
    return Path(spec.submodule_search_locations[0])


def free_port() -> int:
    """A TCP port free right now on loopback (another process may take it before use)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    """A running loopback cluster. `stop()` (or leaving the `with` block) ends every
    process it started, executors included, and reaps them."""

    master_url: str
    webui_url: str
    root: Path
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)  # "master", "worker-1", ...
    worker_ui: dict[str, str] = field(default_factory=dict)  # worker name -> web UI URL

    def status(self) -> dict:
        """The master's state (its web UI's /json/): workers, apps, completed apps."""
        return _get_json(self.webui_url)

    def worker_status(self, name: str) -> dict:
        """A worker's state (/json/): its running and finished executors."""
        return _get_json(self.worker_ui[name])

    def worker_dir(self, name: str) -> Path:
        """Where the worker keeps each app's executor directories (stdout, stderr)."""
        return self.root / name / "work"

    def executor_logs(self, app_id: str) -> dict[str, list[Path]]:
        """{worker name: stderr files of the app's executors on that worker}."""
        return {w: sorted((self.worker_dir(w) / app_id).glob("*/stderr"))
                for w in self.procs if w != "master"}

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs.values()]

    def alive(self) -> list[int]:
        """Pids of live (not zombie) processes in the started process groups: the
        daemons and the executors they forked. Linux only (reads /proc)."""
        groups, out = set(self.pids()), []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()  # after "(comm)"
            except OSError:  # ended meanwhile
                continue
            if int(fields[2]) in groups and fields[0] != "Z":  # state, ppid, pgrp, ...
                out.append(int(stat.parent.name))
        return out

    def log_tails(self, lines: int = 15) -> str:
        out = []
        for name in self.procs:
            path = self.root / name / "out.log"
            text = path.read_text(errors="replace").splitlines()[-lines:] if path.exists() else []
            out.append(f"--- {path} (last {lines} lines)\n" + "\n".join(text))
        return "\n".join(out)

    def wait_for_workers(self, n: int, timeout: float) -> None:
        """Until the master lists `n` alive workers; ClusterError with the logs if not."""
        deadline = time.monotonic() + timeout
        seen = None
        while time.monotonic() < deadline:
            dead = [name for name, p in self.procs.items() if p.poll() is not None]
            if dead:
                msg = (f"Spark process(es) {', '.join(dead)} exited while starting\n"
                       f"{self.log_tails()}")
                raise ClusterError(msg)
            with contextlib.suppress(OSError, ValueError):
                seen = self.status().get("aliveworkers")
                if seen == n:
                    return
            time.sleep(0.5)
        msg = (f"the master at {self.master_url} lists {seen} alive workers after "
               f"{timeout:.0f} s, expected {n}\n{self.log_tails()}")
        raise ClusterError(msg)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM each process group (workers first, so they end their executors), wait,
        then SIGKILL whatever is left, reap the daemons and wait until none is running."""
        order = [p for name, p in self.procs.items() if name != "master"]
        order += [p for name, p in self.procs.items() if name == "master"]
        for p in order:
            _signal_group(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in order:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(max(0.1, deadline - time.monotonic()))
        for pid in self.alive():  # whatever is left: a daemon or an executor it forked
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for p in order:
            p.wait()
        deadline = time.monotonic() + 10  # SIGKILLed processes take a moment to go
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.1)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_cluster(root: str | Path, workers: int = 2, cores: int = 1, memory: str = "1g",
                  timeout: float = 120.0, daemon_memory: str = "256m") -> Cluster:
    """Start a master and `workers` workers (`cores` cores and `memory` for executors
    each) under `root` (logs, worker dirs), and wait until all workers registered."""
    root = Path(root)
    env = {**os.environ, **LOOPBACK_ENV, "SPARK_HOME": str(spark_home()),
           "SPARK_LOG_DIR": str(root / "logs"),
           "SPARK_DAEMON_MEMORY": daemon_memory,  # master and worker JVMs, not executors
           "SPARK_CONF_DIR": str(root / "conf"),  # empty: no site settings leak in
           # the REST submission server listens on a fixed port (6066); not needed here
           "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}
    (root / "conf").mkdir(parents=True, exist_ok=True)
    port, ui = free_port(), free_port()
    cluster = Cluster(master_url=f"spark://{HOST}:{port}", webui_url=f"http://{HOST}:{ui}/json/",
                      root=root)
    try:
        _launch(cluster, "master", env, "org.apache.spark.deploy.master.Master",
                "--host", HOST, "--port", str(port), "--webui-port", str(ui))
        for i in range(1, workers + 1):
            name, wui = f"worker-{i}", free_port()
            cluster.worker_dir(name).mkdir(parents=True, exist_ok=True)
            _launch(cluster, name, {**env, "SPARK_WORKER_DIR": str(cluster.worker_dir(name))},
                    "org.apache.spark.deploy.worker.Worker", cluster.master_url,
                    "--cores", str(cores), "--memory", memory, "--host", HOST,
                    "--webui-port", str(wui), "--work-dir", str(cluster.worker_dir(name)))
            cluster.worker_ui[name] = f"http://{HOST}:{wui}/json/"
        cluster.wait_for_workers(workers, timeout)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _launch(cluster: Cluster, name: str, env: dict[str, str], main_class: str, *args: str) -> None:
    """spark-class execs the JVM, so the pid is the JVM's; a new session (process group)
    per daemon lets stop() signal it with the executors it forks."""
    directory = cluster.root / name
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "out.log").open("wb") as log:
        cluster.procs[name] = subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), main_class, *args],
            env=env, cwd=directory, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)


def _get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)



def main(argv: list[str] | None = None) -> int:
    """Run a loopback cluster until interrupted (for trying --spark-master by hand)."""
    ap = argparse.ArgumentParser(prog="python -m brushfire.capture.standalone",
                                 description=main.__doc__)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cores", type=int, default=1, help="cores per worker")
    ap.add_argument("--memory", default="1g", help="executor memory per worker")
    ap.add_argument("--dir", type=Path, default=None, help="logs and worker dirs (default: a temp dir)")
    args = ap.parse_args(argv)
    import tempfile

    root = args.dir or Path(tempfile.mkdtemp(prefix="brushfire-cluster-"))
    with start_cluster(root, args.workers, args.cores, args.memory) as cluster:
        print(f"master {cluster.master_url} (web UI {cluster.webui_url}), "
              f"{args.workers} workers, logs in {root}", flush=True)
        print("run drivers with SPARK_LOCAL_IP=127.0.0.1; Ctrl-C stops the cluster", flush=True)
        # blocked only now: the JVMs started above must not inherit a blocked SIGTERM
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    return 0


if __name__ == "__main__":
    sys.exit(main())
