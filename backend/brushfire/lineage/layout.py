"""The lineage store's layout: what every array holds, decided once per capture (on the
driver, from the plan and the source's profile) and shared by the executors that write
shards, the store that loads them and the engine that reads them.

Row ids. Rows live in shards (one or more per Spark partition), each cut into blocks of
`block_rows` rows (at most 65,536, so a row's position in its block fits a uint16). The
global rid of a row is its shard's first rid plus its position in the shard.

Dims. A dim is a per-row key column, uint16, in [0, nkeys]; key `nkeys` means "no
value" (null, NaN, or a row the view drops) and never passes a selection:
- dense: the field has at most 65,534 distinct values; the key is the value's rank among
  them (`values`), so any interval of values is exactly an interval of keys;
- fine:  more distinct values; the key is the bucket of the value among `edges`
  (bucket b holds edges[b] <= x < edges[b+1], edges[0] = -inf), and the raw value is
  kept (`raw` column) to decide the rows of the two buckets at a selection's edges;
- dict:  a parameter's dropdown: the key is the value's position in `values`;
- bars:  a view's bar, for views whose bar is not a function of a dense dim's key
  (categorical views, fields with many distinct values, fields nothing brushes).
Indexed dims also keep, per block, the block's row positions ordered by key (ties by
position; fine dims by raw value): the backward index. A block whose order is the
identity (data already sorted by the dim) stores nothing (DSLog's observation).

Views. A view counts rows in *slots*: per row, `min(lut_0[key_0] + lut_1[key_1], ncodes)`
over one or two dims (a heatmap over two dense dims is x-part + y-part), or the view is
pruned (nothing needs it per row; it keeps its base result). Its codes are, in order:
- its `nbars` bars, then one pseudo-bar per *reason* a row is not shown (`reasons`:
  null or NaN value, below / above an unclamped extent, clamped into the first / last
  bar, beyond the top N of a categorical without '(other)'), so that how many rows a
  view does not show, and why, is counted exactly by every method, as its bars are;
  clamped rows count in their own pseudo-bars and are added to the edge bars for display;
- for an order statistic (median, quantile, min, max, distinct), each of those bars is
  `width` = M + 1 *cells*: cell `bar * width + block` counts the bar's rows whose measure
  key falls in measure block 0..M-1 (block M: no measure), so the lookups are
  `lut_0[key] = bar * width` and `lut_1[measure key] = block`; with a block per key
  (M = keys of a dense or dict dim) each statistic is read from the counts and the dim's
  sorted values, else the exact values of the one or two blocks a rank falls in are
  gathered from the rows (engine/stats.py);
- slot `ncodes`: rows dropped any other way (a heatmap's rows outside its cells).
A sum / mean view's measure is a float64 looked up from a dense dim's values, read from a
fine dim's raw values (its finite ones; the dim keeps them per row anyway, so the field is
not stored twice) or from a stored column (NaN = missing).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields

import numpy as np

KEY_DTYPE = np.uint16
MAX_KEYS = 65_534  # keys 0..nkeys-1 plus the no-value key; 65,535 marks an empty selection
EMPTY_KEY = 65_535
MAX_BLOCK_ROWS = 65_536
BLOCK_ROWS = 65_536
SHARD_ROWS = 32 * BLOCK_ROWS  # rows per shard at most (a Spark partition may give several)
FENCE = 64  # a block's key order keeps the key at every FENCE-th position (its fences)
CUBE_BYTES = 8 << 20  # per filter: cube blocks x bars of its targets x 8 bytes
MAX_CUBE_BLOCKS = 2048
MAX_CELLS = 1 << 16  # cells (bars and reasons x measure blocks) of an order-statistic view
OTHER = "(other)"  # label of a categorical view's bar for every value beyond its top N


@dataclass
class CaptureConfig:
    """Sizes a capture uses; tests shrink them to exercise many blocks and shards."""

    block_rows: int = BLOCK_ROWS
    shard_rows: int = SHARD_ROWS
    max_keys: int = MAX_KEYS  # distinct values up to which a value dim is dense
    max_cube_blocks: int = MAX_CUBE_BLOCKS
    cube_bytes: int = CUBE_BYTES
    memory_budget: int | None = None  # bytes of per-row lineage at most (capture/budget.py)
    max_cells: int = MAX_CELLS  # cells of an order-statistic view (measure blocks per bar)

    def __post_init__(self) -> None:
        if not (1 <= self.block_rows <= MAX_BLOCK_ROWS):
            msg = f"block_rows must be in 1..{MAX_BLOCK_ROWS}"
            raise ValueError(msg)
        if self.shard_rows < self.block_rows:
            msg = "shard_rows must be at least block_rows"
            raise ValueError(msg)
        self.max_keys = min(self.max_keys, MAX_KEYS)


@dataclass
class Dim:
    name: str
    kind: str  # dense | fine | dict | bars
    field: str | None  # source column (dense, fine, dict; bars of a view: None)
    view: str | None  # bars dims: the view whose bar is the key
    # int | float | temporal (dense, fine); dict: values, or temporal (ISO instants); bars
    value_type: str
    nkeys: int
    indexed: bool
    raw: int = -1  # fine dims: row of the shard's `raw` array
    values: list | None = None  # dense: sorted distinct values; dict: the choices (times as ISO)
    edges: list | None = None  # fine: bucket starts, edges[0] = -inf
    cube_starts: list[int] | None = None  # cube blocks: keys [s[j], s[j+1]) (1-dim filters)
    rows: bool = True  # per-row keys kept (False: over the memory budget; cubes only)
    part: str | None = None  # dense dims of a calendar part: `values` are the part's of `field`
    # fine dims whose buckets were cut at some views' bar changes: those views, and a value
    # per key (bucket) that has the bar of all of the bucket's values (views.key_values)
    aligned: list[str] | None = None
    reps: list | None = None
    bounds: list | None = None  # fine dims: the data's smallest and largest value

    @property
    def exact(self) -> bool:
        """Does the key decide every selection on this dim, with no raw value needed?"""
        return self.kind != "fine"

    @functools.cached_property
    def value_array(self) -> np.ndarray:
        """`values` as an array, made once (not a field: the layout's JSON leaves it out):
        a reply that looks values up by key must not convert a list of thousands each
        time (20 us for flights' 867 delays, a tenth of a median view's update)."""
        return np.asarray(self.values)


@dataclass
class ViewLayout:
    name: str
    type: str
    op: str  # count | sum | mean | median | quantile | min | max | distinct
    nbars: int  # bars shown (labels)
    bar_off: int  # first slot in the flat aggregate arrays
    labels: list  # JSON-able bar descriptions
    code_dims: list[int] = field(default_factory=list)  # [] = pruned, else 1 or 2 dims
    measure: str = "none"  # none | lut | raw | stored | cells (order statistics: the measure's key)
    mdim: int = -1  # measure lut: the dense dim whose values are the measure; raw: the fine
    # dim whose raw values are; cells: the measure's dim
    mcol: int = -1  # stored measure: row of the shard's `meas` array
    reasons: list[str] = field(default_factory=list)  # pseudo-bars after the bars
    width: int = 1  # cells per bar: measure blocks + 1 (order statistics), else 1
    mstarts: list[int] | None = None  # cells: measure blocks' first keys, ending with nkeys
    p: float | None = None  # quantile: the fraction (median: 0.5)
    method: str = "continuous"  # quantile / median: continuous | discrete
    # histogram, heatmap: [step, start, stop] of each bin (x, y) as capture had them, so a
    # `maxbins` bin reads as the step and extent chosen from the data (bins.py)
    bins: list[list[float]] = field(default_factory=list)
    # categorical: 'values' (labels are the field's values), or 'temporal' (a time field's,
    # labelled as ISO instants in UTC, values.format_instant)
    value_type: str = "values"

    @property
    def other_bar(self) -> bool:
        """Whether the last bar is a categorical view's '(other)' bar (the values beyond its
        top N): labelled so, in a view that has one. A view without one (`other: false`)
        counts those values under the reason 'beyond_top', and its last label may be a
        value '(other)' of the field, a bar like any other."""
        return bool(self.labels) and self.labels[-1] == OTHER and "beyond_top" not in self.reasons

    @property
    def kbars(self) -> int:
        """Bars and reason pseudo-bars."""
        return self.nbars + len(self.reasons)

    @property
    def ncodes(self) -> int:
        """Codes a row may have (cells of bars and reasons); code `ncodes`: dropped."""
        return self.kbars * self.width

    @property
    def nslots(self) -> int:
        return self.ncodes + 1

    @property
    def slots(self) -> slice:
        """The bars' slots (cells, for order statistics)."""
        return slice(self.bar_off, self.bar_off + self.nbars * self.width)

    @property
    def all_slots(self) -> slice:
        return slice(self.bar_off, self.bar_off + self.nslots)

    @property
    def cells(self) -> bool:
        return self.measure == "cells"


@dataclass
class FilterLayout:
    """A user-facing filter (brush, selection or parameter) over one or two dims."""

    name: str
    kind: str  # interval | points | rect | param_eq | param_range
    dims: list[int]
    views: list[str]  # views it filters
    cube_targets: list[str]  # views with a group-by push-down cube over dims[0]
    op: str | None = None  # param_range: lt | lte | gt | gte


@dataclass
class Layout:
    dashboard: str
    block_rows: int
    dims: list[Dim]  # those kept per row first (rows=True), then cubes-only ones
    views: list[ViewLayout]
    filters: list[FilterLayout]
    n_raw: int  # rows of each shard's `raw` array (one per fine dim)
    n_meas: int  # rows of each shard's `meas` array (stored measures)
    measure_fields: list[str]  # stored measure columns, by mcol
    detail_columns: list[str]
    notes: list[str] = field(default_factory=list)  # the memory budget's choices
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # luts: "lut.<view>.<i>", "mlut.<view>"

    # --- lookups ------------------------------------------------------------------

    def view(self, name: str) -> ViewLayout:
        for v in self.views:
            if v.name == name:
                return v
        raise KeyError(name)

    def view_index(self, name: str) -> int:
        for i, v in enumerate(self.views):
            if v.name == name:
                return i
        raise KeyError(name)

    def filter(self, name: str) -> FilterLayout:
        for f in self.filters:
            if f.name == name:
                return f
        raise KeyError(name)

    def dim_index(self, name: str) -> int:
        for i, d in enumerate(self.dims):
            if d.name == name:
                return i
        raise KeyError(name)

    @property
    def nslots(self) -> int:
        last = self.views[-1]
        return last.bar_off + last.nslots

    @property
    def indexed_dims(self) -> list[int]:
        """Dims with a backward index in the shards (indexed and kept per row)."""
        return [i for i, d in enumerate(self.dims) if d.indexed and d.rows]

    @property
    def row_dims(self) -> int:
        """How many dims keep per-row keys: dims 0 .. row_dims - 1 (they come first)."""
        return sum(1 for d in self.dims if d.rows)

    def countable(self, view: str) -> bool:
        """Can the view be counted row by row (its bar and measure keys are kept)?"""
        v = self.view(view)
        dims = list(v.code_dims) + ([v.mdim] if v.measure in ("lut", "raw") else [])
        return bool(v.code_dims) and all(self.dims[d].rows for d in dims)

    def filter_rows(self, name: str) -> bool:
        """Can the filter be tested row by row (its dims' keys are kept)?"""
        return all(self.dims[d].rows for d in self.filter(name).dims)

    def mblock(self, view: str) -> np.ndarray:
        """Order statistics: measure key -> block (the no-value key -> M)."""
        return self.arrays[f"mblock.{view}"]

    def lut(self, view: str, part: int) -> np.ndarray:
        return self.arrays[f"lut.{view}.{part}"]

    def mlut(self, view: str) -> np.ndarray:
        return self.arrays[f"mlut.{view}"]

    def source_columns(self, view_fields: dict[str, list[str]]) -> list[str]:
        """Source columns the shard builder reads (each once): the dims' fields, the
        fields of views whose bars it computes itself (`view_fields`: view -> fields;
        views with a bars dim or no bars per row), stored measures and detail columns."""
        out = [d.field for d in self.dims if d.field]
        for v in self.views:
            if not v.code_dims or self.dims[v.code_dims[0]].kind == "bars":
                out += view_fields[v.name]
        out += self.measure_fields
        out += self.detail_columns
        return list(dict.fromkeys(out))

    # --- persistence ------------------------------------------------------------------

    def to_json(self, packed: dict[str, np.ndarray] | None = None) -> dict:
        """The layout as the manifest keeps it, its arrays apart: dims, views and filters
        as dicts of their fields, sharing their lists (`asdict`'s deep copy of each of a
        fine dim's 65k edges took 0.4 s). With `packed`, a dim's long lists of numbers
        (values, edges, reps) go there as arrays, {"array": name} in their place: a
        manifest of 5 MB of JSON numbers took 0.5 s of every capture to write and read."""
        meta = _fields(self)
        meta.pop("arrays")
        for name in ("dims", "views", "filters"):
            meta[name] = [_fields(x) for x in meta[name]]
        for i, d in enumerate(meta["dims"] if packed is not None else []):
            for f in PACKED_FIELDS:
                a = _packable(d[f])
                if a is not None:
                    packed[f"{PACKED}{i}.{f}"] = a
                    d[f] = {"array": f"{PACKED}{i}.{f}"}
        return meta

    @classmethod
    def from_json(cls, meta: dict, arrays: dict[str, np.ndarray]) -> Layout:
        """The layout `to_json` wrote, its packed lists found in `arrays` (with its own)."""
        meta = dict(meta)
        dims = [dict(d) for d in meta["dims"]]
        for d in dims:
            for f in PACKED_FIELDS:
                if isinstance(d.get(f), dict):
                    d[f] = arrays[d[f]["array"]].tolist()
        arrays = {k: v for k, v in arrays.items() if not k.startswith(PACKED)}
        meta["dims"] = [Dim(**d) for d in dims]
        meta["views"] = [ViewLayout(**v) for v in meta["views"]]
        meta["filters"] = [FilterLayout(**f) for f in meta["filters"]]
        return cls(**meta, arrays=arrays)


def _fields(obj) -> dict:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


PACKED = "list."  # the names of a layout's packed lists among its arrays (`to_json`)
PACKED_FIELDS = ("values", "edges", "reps")


def _packable(xs: list | None) -> np.ndarray | None:
    """A long list of floats alone or ints alone (bools apart) as the array that gives it
    back with `tolist()`; else None (kept in the JSON)."""
    if xs is None or len(xs) < 256:
        return None
    if all(isinstance(x, float) for x in xs):
        return np.array(xs, np.float64)
    if all(isinstance(x, int) and not isinstance(x, bool) and -2**63 <= x < 2**63 for x in xs):
        return np.array(xs, np.int64)
    return None
