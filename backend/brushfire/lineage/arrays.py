"""Small value types shared by capture, the store and the engines: aggregates per bar and
what a capture did."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from brushfire.lineage.layout import OTHER

__all__ = ["OTHER", "Aggregates", "CaptureInfo"]


@dataclass
class Aggregates:
    """Flat per-slot aggregates of all views (layout: ViewLayout.bar_off)."""

    counts: np.ndarray  # int64
    sums: np.ndarray  # float64: sum of the non-missing measures
    oks: np.ndarray  # int64: how many measures were not missing

    @classmethod
    def zeros(cls, nslots: int) -> Aggregates:
        return cls(np.zeros(nslots, np.int64), np.zeros(nslots, np.float64),
                   np.zeros(nslots, np.int64))

    def copy(self) -> Aggregates:
        return Aggregates(self.counts.copy(), self.sums.copy(), self.oks.copy())

    def add(self, other: Aggregates, where: slice | None = None) -> None:
        s = slice(None) if where is None else where
        self.counts[s] += other.counts[s]
        self.sums[s] += other.sums[s]
        self.oks[s] += other.oks[s]

    def set(self, other: Aggregates, where: slice) -> None:
        self.counts[where] = other.counts[where]
        self.sums[where] = other.sums[where]
        self.oks[where] = other.oks[where]

    def clear(self, where: slice) -> None:
        self.counts[where] = 0
        self.sums[where] = 0.0
        self.oks[where] = 0


@dataclass
class CaptureInfo:
    """What a capture did and how long it took; shown by `brushfire capture`."""

    n_rows: int
    seconds: dict[str, float] = field(default_factory=dict)
    nbytes: dict[str, int] = field(default_factory=dict)
    source_fingerprint: str = ""
    spark_master: str = ""
    caveats: list[str] = field(default_factory=list)  # data-quality notes (Vizier's caveats)
    shards: int = 0
    mode: str = "rows"  # rows (per-row lineage) or cubes (memory-budget mode)
    changes: list[str] = field(default_factory=list)  # what was reused, what rebuilt, and why
    unmatched: dict[str, int] = field(default_factory=dict)  # join -> rows without a match
