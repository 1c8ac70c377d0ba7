"""Array layouts of captured lineage, and the invariants every array keeps.

rid = a row's position in the captured snapshot (0..N-1).
- codes (N, V) uint16: forward lineage; codes[rid, v] = the bar row rid falls in, in
  view v; nbars(v) for rows the view drops (null, NaN, out of extent, not in top N).
- measures (N, M) float64: the measures of sum/mean views, NaN where null.
- Index (backward lineage, one per filter): `order` (int32) lists rids in index order;
  for value indexes `values` holds the raw value at each position (non-decreasing;
  rows with a null or NaN value are not in the index), for partitioned indexes
  `offsets` delimits the rids of each distinct value (`keys`).
- fkeys (N, F) int32: per row and filter f (in plan order), the row's position in f's
  index (value filters) or its value key (partitioned filters); -1 if not in the index.
  A session's filter state is a position range or a set of keys, so testing a row is
  one lookup, with no per-session per-row state. fy (N, Y) float64: y values of rect
  brushes (NaN if null).
- Cube (group-by push-down): prefix sums over the index's blocks (`block_starts`) of
  the aggregates per bar of one target view.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

CODE_DTYPE = np.uint16
MAX_BARS = int(np.iinfo(CODE_DTYPE).max) - 1  # one code is kept for dropped rows
OTHER = "(other)"  # label of a categorical view's bar for every value beyond its top N
VALUE_KINDS = ("interval", "rect", "param_range")
PARTITION_KINDS = ("points", "param_eq", "bars")


@dataclass
class ViewLayout:
    """Where a view's bars live in the flat aggregate arrays, and what they are."""

    name: str
    type: str
    op: str  # count, sum or mean
    nbars: int
    bar_off: int  # first slot in the flat aggregate arrays
    mcol: int  # column of `measures`, or -1
    labels: list  # JSON-able bar descriptions (see capture.build.bar_labels)

    @property
    def slots(self) -> slice:
        return slice(self.bar_off, self.bar_off + self.nbars)


@dataclass
class Index:
    """Backward lineage of one filter: rids in value order (or grouped by value)."""

    name: str
    kind: str
    field: str
    order: np.ndarray  # int32 rids
    block_starts: np.ndarray  # int64 positions where cube blocks start, ending with len(order)
    values: np.ndarray | None = None  # value kinds: sorted values (int64 or float64)
    offsets: np.ndarray | None = None  # partition kinds: int64, len(keys) + 1
    keys: list | None = None  # partition kinds: the distinct values
    value_type: str = "number"  # number or temporal (values in UTC microseconds)

    def check(self, n_rows: int) -> None:
        assert self.order.dtype == np.int32 and self.order.ndim == 1
        assert self.block_starts[0] == 0 and self.block_starts[-1] == len(self.order)
        if self.kind in VALUE_KINDS:
            assert self.values is not None and len(self.values) == len(self.order)
        else:
            assert self.offsets is not None and self.keys is not None
            assert len(self.offsets) == len(self.keys) + 1 and self.offsets[-1] == len(self.order)


@dataclass
class Cube:
    """Prefix sums over the source index's blocks of one target view's aggregates:
    counts[b] = aggregate of blocks 0..b-1, shape (nblocks + 1, nbars + 1)."""

    counts: np.ndarray
    sums: np.ndarray  # (0, 0) when the target has no measure
    oks: np.ndarray


@dataclass
class Aggregates:
    """Flat per-slot aggregates of all views (layout: ViewLayout.bar_off)."""

    counts: np.ndarray  # int64
    sums: np.ndarray  # float64
    oks: np.ndarray  # int64

    @classmethod
    def zeros(cls, nslots: int) -> Aggregates:
        return cls(np.zeros(nslots, np.int64), np.zeros(nslots, np.float64),
                   np.zeros(nslots, np.int64))

    def copy(self) -> Aggregates:
        return Aggregates(self.counts.copy(), self.sums.copy(), self.oks.copy())


@dataclass
class CaptureInfo:
    """What a capture did and how long it took; shown by `brushfire capture`."""

    n_rows: int
    seconds: dict[str, float] = field(default_factory=dict)
    nbytes: dict[str, int] = field(default_factory=dict)
    source_fingerprint: str = ""
    spark_master: str = ""
    caveats: list[str] = field(default_factory=list)  # data-quality notes (Vizier's caveats)
