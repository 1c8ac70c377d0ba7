"""`brushfire serve --workers N`: N server processes answering on one port.

One process's Python runs one thread at a time: the engine's kernels release the
interpreter's lock, but parsing, checks, reply building and the WebSocket do not, so many
sessions brushing at once queue for it (perf/README.md, "Many sessions"). Workers are
whole servers, each with its own sessions, engine pool and reply threads sized to its
share of the cores (engine/parallel.py: `processes`, `cores`), and its share of the
engine's memory budgets. The dashboards are captured once, by the parent, before any
worker starts; each worker opens them from the lineage cache only, never capturing (the
store's files are mapped: the page cache holds them once for all). uvicorn's supervisor
binds the port, starts the workers (spawned: no Spark or thread state inherited), and
replaces one that dies.

What is per worker: a session lives in the worker that accepted its connection; `/health`
reports the answering worker (`worker`); the session limits are split among the workers
(a client's connections may land on any). Reloading on new data (`--watch`) is not
offered with several workers: each would capture again.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from brushfire.engine.parallel import PROCESSES_ENV
from brushfire.server.app import Limits, create_app, uvicorn_options
from brushfire.server.hosting import HostedDashboard
from brushfire.server.security import Security
from brushfire.spec import models as m


@dataclass(frozen=True)
class WorkerApp:
    """What a worker builds its app from (pickled to each spawned worker): the dashboards,
    opened from the cache the parent captured them into, served with the parent's
    security and the worker's share of the limits."""

    specs: tuple[m.DashboardSpec, ...]
    cache_dir: Path
    spark_master: str | None
    memory_budget: str | int | None
    security: Security
    limits: Limits

    def __call__(self):
        hosts = [HostedDashboard.opening(spec, cache_dir=self.cache_dir, spark_master=self.spark_master,
                                         memory_budget=self.memory_budget, capture=False)
                 for spec in self.specs]  # what the parent captured; never N captures at once
        return create_app(hosts, security=self.security, limits=self.limits)


def share(limits: Limits, workers: int) -> Limits:
    """Each worker's part of the server's session limits (at least one session each)."""
    return Limits(max(1, limits.max_sessions // workers), max(1, limits.max_sessions_per_client // workers))


def serve(app: WorkerApp, *, host: str, port: int, workers: int) -> None:
    """Run `workers` processes of `app` on host:port until interrupted (Ctrl-C, SIGTERM).
    Raises OSError when the port cannot be bound."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess
    from uvicorn.supervisors.multiprocess import Process

    class Supervisor(Multiprocess):
        """uvicorn's, each worker started on a socket of its own (one that replaces a dead
        worker listens on all of them)."""

        def init_processes(self) -> None:
            for i in range(self.processes_num):
                process = Process(self.config, [self.sockets[i % len(self.sockets)]])
                process.start()
                self.processes.append(process)

    os.environ[PROCESSES_ENV] = str(workers)  # read by each spawned worker as it starts
    config = uvicorn.Config(app, factory=True, host=host, port=port, workers=workers,
                            log_level="warning", **uvicorn_options())
    Supervisor(config, sockets=bind(host, port, workers)).run()


def bind(host: str, port: int, n: int) -> list[socket.socket]:
    """`n` listening sockets on host:port (SO_REUSEPORT: the kernel spreads new connections
    over them evenly, by their addresses; measured, one socket shared by two workers gave
    41 of 50 sessions to one of them: the first to wake accepts all that wait); one shared
    socket where the system has no SO_REUSEPORT. A port in use, even by another server's
    SO_REUSEPORT sockets, is an error: never a port shared with a stranger."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    reuse = hasattr(socket, "SO_REUSEPORT")
    if reuse:  # a plain bind fails where any socket listens; then the port is free for ours
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
            port = probe.getsockname()[1]  # port 0: the one the system chose
    out: list[socket.socket] = []
    try:
        for _ in range(n if reuse else 1):
            sock = socket.socket(family, socket.SOCK_STREAM)
            out.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if reuse:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((host, port))
            port = sock.getsockname()[1]
            sock.set_inheritable(True)
    except OSError:
        for sock in out:
            sock.close()
        raise
    return out
