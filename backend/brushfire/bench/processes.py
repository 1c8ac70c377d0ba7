"""A process and those under it, read from /proc (Linux): `serve --workers` runs one
parent and N workers, and a benchmark or test that measures or stops "the server" means
all of them."""

from __future__ import annotations

from pathlib import Path


def family(pid: int) -> list[int]:
    """`pid` and every process under it, parents before their children."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:  # the command name, in parentheses, may hold spaces: the fields follow its ")"
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):  # a process that ended meanwhile
            continue
    out = [pid]
    for p in out:
        out.extend(c for c, parent in parents.items() if parent == p)
    return out


def command(pid: int) -> str:
    """Process `pid`'s command line, its arguments joined by spaces ("" once it ended)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
