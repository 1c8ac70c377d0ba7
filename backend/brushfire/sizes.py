"""Sizes in bytes as people write them ('512MB', '2G', '1.5gib'): the memory budget, the
copies' budget (capture/budget.py, the spec's `workload.copy_budget`)."""

from __future__ import annotations

import os
import re

from brushfire.errors import BrushfireError

UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
SIZE_PATTERN = r"^\s*[0-9]*\.?[0-9]+\s*[kKmMgGtT]?([iI]?[bB])?\s*$"  # what parse_size takes


def parse_size(text: str | int) -> int:
    """'512MB', '2G', '1.5gib', 1000000 -> bytes."""
    if isinstance(text, int):
        return text
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?b)?\s*", str(text).lower())
    if not match:
        msg = f"a memory size is a number with an optional unit (KB, MB, GB, TB), got {text!r}"
        raise ValueError(msg)
    return int(float(match[1]) * UNITS[match[2]])


def environ_size(name: str) -> int | None:
    """The size in bytes the environment variable `name` gives (BRUSHFIRE_CUBE_MEMORY,
    BRUSHFIRE_COPY_MEMORY), or None when it is unset or empty. A value parse_size does not
    read raises a BrushfireError naming the variable (it was a ValueError from the first
    session opened, naming nothing)."""
    text = os.environ.get(name)
    if not text:
        return None
    try:
        return parse_size(text)
    except ValueError as e:
        msg = f"{name}: {e} (e.g. 512MB, 2GB; 0 for none)"
        raise BrushfireError(msg) from None


def format_size(n: int) -> str:
    """Bytes as a person reads them: '512 MB', '2.50 GB', '240 KB', '900 bytes' (binary
    units, as parse_size's; a copy of 0.24 MB over a budget of 100 KB read "about 0 MB"
    over "0 MB")."""
    if n >= 1 << 30:
        return f"{n / (1 << 30):.2f} GB"
    if n >= 1 << 20:
        return f"{n / (1 << 20):.0f} MB"
    return f"{n / (1 << 10):.0f} KB" if n >= 1 << 10 else f"{n:,} bytes"
