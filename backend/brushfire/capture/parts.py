"""What each part of a shard's lineage is computed from, as hashes: a part whose hash did
not change since the entry's last capture is reused as it is (capture/__init__.py).

Per-row arrays depend on how rows are keyed (each dim's keys: its values, edges, bars);
partial results depend only on what they count, in the data's terms: a view's bars as
functions of values, a filter's cube blocks as ranges of values. So when appended rows
bring a new distinct value (a dense dim's keys shift by one), the shards captured before
are re-keyed but their base results and cubes are kept. Names are no part of a hash (a
view's, a filter's, a bars dim's): a renamed view's parts are the same parts, which the
capture finds by their hashes under their old names (capture/__init__.py `_renamed`).
Pure.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from brushfire.capture.keys import partial_names
from brushfire.lineage.layout import Dim, Layout, ViewLayout
from brushfire.lineage.store import view_definition
from brushfire.spec import models as m


@dataclass(frozen=True)
class PartHashes:
    rows: str  # a shard's per-row arrays, all together
    dims: list[str]  # each dim's keys (by dim number)
    partials: dict[str, str]  # partial result -> hash


def part_hashes(layout: Layout, dash: m.DashboardSpec) -> PartHashes:
    """The hash of every part of a shard's lineage under `layout` (module docstring)."""
    h = _Hasher(layout, dash)
    dims = [h.dim(i) for i in range(len(layout.dims))]
    kept = [[dims[i], layout.dims[i].indexed, layout.dims[i].raw] for i in range(layout.row_dims)]
    rows = _hash([kept, layout.measure_fields, layout.block_rows])
    out = {}
    for name in partial_names(layout):
        kind, _, rest = name.partition(".")
        if kind == "base":
            out[name] = h.code(layout.view(rest))
        elif kind == "keycount":
            out[name] = dims[layout.dim_index(rest)]
        else:
            fname, _, t = rest.partition(".")
            f = layout.filter(fname)
            d = layout.dims[f.dims[0]]
            out[name] = _hash([h.blocks(d, d.cube_starts), h.code(layout.view(t))])
    return PartHashes(rows, dims, out)


def reusable_rows(old: Layout, old_dims: list[str], new: Layout, new_dims: list[str]) -> dict:
    """For a shard keyed under `old`, where each dim of `new` kept per row already is in
    its per-row arrays: {new dim: (keys row, raw row or -1, index slot or -1)} of the dims
    whose keys did not change (their hashes), when blocks are the same size."""
    if old.block_rows != new.block_rows:
        return {}
    slots = old.indexed_dims
    where = {}
    for i in range(old.row_dims):
        d = old.dims[i]
        where[old_dims[i]] = (i, d.raw if d.kind == "fine" else -1,
                              slots.index(i) if i in slots else -1)
    out = {}
    for i in range(new.row_dims):
        got = where.get(new_dims[i])
        d = new.dims[i]
        if got is None or (d.kind == "fine" and got[1] < 0) or (d.indexed and got[2] < 0):
            continue
        out[i] = got
    return out


class _Hasher:
    def __init__(self, layout: Layout, dash: m.DashboardSpec) -> None:
        self.layout = layout
        self.spec_views = {v.name: {k: x for k, x in view_definition(v).items() if k != "name"}
                           for v in dash.views}
        self._dims: dict[int, str] = {}

    def bars(self, v: ViewLayout) -> dict:
        """What decides a row's bar in view v, as a function of its values."""
        return {"spec": self.spec_views[v.name], "labels": v.labels, "reasons": v.reasons,
                "value_type": v.value_type, "bins": v.bins}

    def dim(self, i: int) -> str:
        """A dim's keys: what each key stands for."""
        if i not in self._dims:
            d = self.layout.dims[i]
            what = {k: getattr(d, k) for k in ("kind", "field", "value_type", "nkeys", "part")}
            what["values"] = _list_hash(d.values)
            what["edges"] = _list_hash(d.edges)
            if d.view:
                what["bars"] = self.bars(self.layout.view(d.view))
            self._dims[i] = _hash(what)
        return self._dims[i]

    def blocks(self, d: Dim, starts: list[int] | None) -> object:
        """Runs of a dim's keys (`starts`) as what their keys stand for: ranges of values
        (dense: the first value of each; fine: the first edge), choices, or bars."""
        if starts is None:
            return None
        # (block j holds values from its first key's on, up to the next block's: the first
        # block reaches down and the last up to any value, so only the inner starts count)
        if d.kind == "dense":
            return [d.field, d.part, "dense", _list_hash([d.values[s] for s in starts[1:-1]])]
        if d.kind == "fine":
            return [d.field, "fine", _list_hash([d.edges[s] for s in starts[1:-1]])]
        if d.kind == "dict":
            return [d.field, "dict", [_list_hash(d.values[a:b]) for a, b in zip(starts, starts[1:], strict=False)]]
        return [self.bars(self.layout.view(d.view)), starts]

    def code(self, v: ViewLayout) -> str:
        """A view's codes and measure, as functions of a row's values."""
        layout = self.layout
        what = {k: getattr(v, k) for k in ("type", "op", "nbars", "reasons", "width",
                                           "p", "method", "value_type")}
        what["bars"] = self.bars(v)
        if v.measure in ("lut", "raw", "stored"):  # the measure field's value
            what["measure"] = layout.measure_fields[v.mcol] if v.measure == "stored" else \
                layout.dims[v.mdim].field
        elif v.measure == "cells":  # blocks of the measure's keys
            what["measure"] = self.blocks(layout.dims[v.mdim], v.mstarts)
        return _hash(what)


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:20]


def _list_hash(values: list | None) -> str | None:
    """A hash of values or edges (floats by their bits, so -0.0 is not 0.0)."""
    if values is None:
        return None
    a = np.asarray(values)
    if a.dtype.kind in "iufb":
        return hashlib.sha256(a.dtype.str.encode() + a.tobytes()).hexdigest()
    return _hash([repr(x) for x in values])
