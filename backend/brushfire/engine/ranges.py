"""Selections as sets of position ranges in an index: small, sorted, disjoint lists.

A filter's selection is `Ranges` over its index's `order`; moving a brush changes the
rows in the symmetric difference of the old and new ranges only.
"""

from __future__ import annotations

import numpy as np

Ranges = list[tuple[int, int]]  # sorted, disjoint, non-empty [start, stop) pairs


def normalize(ranges: list[tuple[int, int]]) -> Ranges:
    out: Ranges = []
    for s, e in sorted(r for r in ranges if r[0] < r[1]):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def size(ranges: Ranges) -> int:
    return sum(e - s for s, e in ranges)


def segments(old: Ranges, new: Ranges) -> list[tuple[int, int, bool]]:
    """Split old ∪ new into (start, stop, in_new) pieces, in order."""
    cuts = sorted({p for r in old + new for p in r})
    out: list[tuple[int, int, bool]] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        in_old, in_new = _covers(old, a), _covers(new, a)
        if in_old or in_new:
            out.append((a, b, in_new))
    return out


def changes(old: Ranges, new: Ranges) -> list[tuple[int, int, bool]]:
    """The pieces where membership differs: (start, stop, entering)."""
    return [(a, b, inn) for a, b, inn in segments(old, new) if _covers(old, a) != inn]


def as_arrays(pieces) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, stops, flags) arrays for kernels, from (start, stop[, flag]) tuples."""
    starts = np.array([p[0] for p in pieces], np.int64)
    stops = np.array([p[1] for p in pieces], np.int64)
    flags = np.array([bool(p[2]) if len(p) > 2 else True for p in pieces], np.bool_)
    return starts, stops, flags


def _covers(ranges: Ranges, p: int) -> bool:
    return any(s <= p < e for s, e in ranges)
