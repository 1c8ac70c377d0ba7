"""Helpers shared by the perf scripts: Spark session with extra settings, progress output."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import brushfire
from brushfire.capture import spark as sp

# If a local capture of many rows runs out of JVM heap, smaller input splits keep each
# task's Arrow result small: --conf spark.sql.files.maxPartitionBytes=16m (see README).


def parse_conf(items: list[str]) -> dict[str, str]:
    """['key=value', ...] -> {key: value}."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            msg = f"--conf takes key=value, got {item!r}"
            raise SystemExit(msg)
        out[key.strip()] = value.strip()
    return out


def spark_session(master: str, driver_memory: str | None, conf: dict[str, str]):
    """brushfire's capture session (get_spark), started with `conf` added when given.

    get_spark builds with getOrCreate, so a session started here first with the extra
    settings is the one it returns (settings Spark reads only at JVM start need this).
    """
    if conf:
        from pyspark.sql import SparkSession

        # settings read only when the JVM starts: get_spark's own, since it cannot
        # change them on the session started here (`conf` may override them)
        memory = driver_memory or os.environ.get("BRUSHFIRE_DRIVER_MEMORY", "8g")
        static = {"spark.driver.memory": memory, "spark.driver.maxResultSize": "0",
                  "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
        builder = SparkSession.builder.master(master).appName("brushfire")
        for key, value in {**static, **conf}.items():
            builder = builder.config(key, value)
        builder.getOrCreate()
    return sp.get_spark(master, driver_memory=driver_memory)


class Progress:
    """Capture progress callback: prints stages, and the scan's progress every 10 %."""

    def __init__(self, prefix: str = "    ") -> None:
        self.prefix, self.last, self.t0 = prefix, -1.0, time.perf_counter()

    def __call__(self, msg: str, frac: float | None) -> None:
        t = time.perf_counter() - self.t0
        if frac is None:
            print(f"{self.prefix}[{t:6.1f} s] {msg}", flush=True)
        elif frac >= self.last + 0.1 or (frac >= 1.0 > self.last):
            self.last = frac
            print(f"{self.prefix}[{t:6.1f} s] {msg}: {frac:.0%}", flush=True)


def code_version(label: str | None = None) -> dict[str, object]:
    """Which brushfire code ran: its path, and the git commit and modified files of its
    repository (if it is in one), plus a free-text label."""
    pkg = Path(brushfire.__file__).resolve().parent
    out: dict[str, object] = {"brushfire": str(pkg), "label": label or ""}

    def git(*args: str) -> str:
        r = subprocess.run(["git", "-C", str(pkg), *args], capture_output=True, text=True,
                           check=False)
        return r.stdout.strip() if r.returncode == 0 else ""

    out["commit"] = git("rev-parse", "--short", "HEAD")
    out["modified"] = [ln[3:] for ln in git("status", "--porcelain", "--", str(pkg)).splitlines()
                       if not ln.startswith("??")]
    return out


class TreeMemory:
    """Peak resident memory of a process and its descendants, sampled in a thread."""

    def __init__(self, pid: int, every: float = 0.2) -> None:
        self.pid, self.every, self.peak = pid, every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, tree_rss(self.pid))


def tree_rss(pid: int) -> int:
    """Bytes resident in `pid` and every process below it."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            p = int(stat.parent.name)
            children.setdefault(int(fields[1]), []).append(p)
            rss[p] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += children.get(p, [])
    return total
