"""brushfire.bench.processes: a process tree read from /proc."""

from __future__ import annotations

import os
import subprocess
import sys

from brushfire.bench.processes import command, family


def test_a_process_family_holds_its_children_and_grandchildren_with_their_commands():
    code = "import subprocess, sys; subprocess.run(['sleep', '30'])"
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        for _ in range(200):  # until the grandchild has started
            tree = family(os.getpid())
            if any(command(p).startswith("sleep 30") for p in tree):
                break
            subprocess.run(["sleep", "0.05"], check=True)
        tree = family(os.getpid())
        assert tree[0] == os.getpid() and child.pid in tree
        grandchild = [p for p in family(child.pid)[1:] if command(p).startswith("sleep 30")]
        assert len(grandchild) == 1 and grandchild[0] in tree
        assert tree.index(child.pid) < tree.index(grandchild[0])
    finally:
        for p in family(child.pid)[::-1]:
            os.kill(p, 9)
        child.wait()
    assert command(child.pid) == ""  # reaped: no such process
