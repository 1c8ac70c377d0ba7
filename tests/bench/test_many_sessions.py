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


def test_cpu_seconds_of_another_process_and_of_this_one():
    # it spins to 0.5 s by its own clock; /proc counts in ticks, a little behind or ahead
    child = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.5\n"
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
    # this process's: measured in a fresh one, where no other thread runs (in the suite's
    # process, threads earlier tests left working would count too)
    code = (f"import importlib.util, time\n"
            f"spec = importlib.util.spec_from_file_location('m', {str(ROOT / 'perf' / 'many_sessions.py')!r})\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "before = m.cpu_seconds(None)\n"
            "end = time.thread_time() + 0.2\n"
            "while time.thread_time() < end: pass\n"
            "print(m.cpu_seconds(None) - before)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert 0.19 <= float(out.stdout) < 1.0
