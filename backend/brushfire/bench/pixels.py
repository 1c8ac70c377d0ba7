"""A view's pixel grid: its extent read off its bars, and the data value at each pixel
edge of a 600-pixel axis. The workload generators brush between these edges (a brush
drawn in a browser starts and ends on pixels), and the pre-aggregation baseline bins
rows by them, so both must compute them the same way: here, once.

Values are floats for histograms and UTC microseconds (ints) for temporal views.
"""

from __future__ import annotations

from brushfire import values as V
from brushfire.views import VIEW_TYPES

PIXELS = 600


def extent(view_type: str, labels: list) -> tuple[float, float] | tuple[int, int]:
    """(lo, hi) of the bars of an interval-brushed view (its type's `extent`): a
    histogram's bin edges, a temporal view's first bar start to its last bar's end."""
    if not labels:
        msg = "a view without bars has no extent"
        raise ValueError(msg)
    out = VIEW_TYPES[view_type].extent(labels)
    if out is None:
        msg = f"a {view_type} view has no interval extent"
        raise ValueError(msg)
    return out


def edges(lo: float | int, hi: float | int, pixels: int = PIXELS) -> list:
    """The value at each of the pixels + 1 pixel edges (ints stay ints: microseconds)."""
    if isinstance(lo, int) and isinstance(hi, int):
        return [lo + (hi - lo) * p // pixels for p in range(pixels + 1)]
    return [lo + (hi - lo) * p / pixels for p in range(pixels + 1)]


def to_micros(iso: str) -> int:
    return V.parse_instant(iso)


def to_iso(us: int) -> str:
    return V.format_instant(us)


def wire(value: float | int, temporal: bool):
    """A bound as a message carries it: a number, or an ISO time for temporal views."""
    return to_iso(value) if temporal else value
