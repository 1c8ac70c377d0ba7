"""perf/many_sessions.py: the CPU time it reports per message, the server's and its own."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("many_sessions", ROOT / "perf" / "many_sessions.py")
many_sessions = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(many_sessions)


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_cpu_seconds_of_another_process_and_of_this_one():
    child = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.4\n"
                              "while time.process_time() < end: pass\nimport sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while many_sessions.cpu_seconds(child.pid) < 0.4 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # now waiting on its input: no more CPU
        used = many_sessions.cpu_seconds(child.pid)
        assert 0.4 <= used < 1.5
    finally:
        child.communicate(b"")
    before = many_sessions.cpu_seconds(None)
    _spin(0.2)
    assert 0.19 <= many_sessions.cpu_seconds(None) - before < 1.0
