"""From a capture plan and the source's statistics to the store's layout (lineage/layout.py):
how each need of the plan is stored. Pure; runs on the driver between the scan and the
key job.

- every value field (brushed, rect axis, range parameter) gets a dense dim when it has
  at most `max_keys` distinct values, else a fine dim (bucket key + raw value);
- every dropdown field gets a dict dim; every categorical view that is brushed, needs
  bars per row or maps bars back to rows gets a bars dim (key = its bar); a time field's
  values (a dropdown's choices, a categorical view's bars) are ISO instants, marked
  `value_type` 'temporal';
- a histogram, temporal or heatmap view reads its bar from its field's dense dims through
  a lookup table when it can, else gets a bars dim when its bars are needed per row, else
  keeps only its base result;
- a sum / mean view reads its measure from a dense dim's values when its measure field
  has one, else from a stored column;
- an order-statistic view (median, quantile, min, max, distinct) counts rows in cells of
  bar x measure block over a key dim of its measure (lineage/layout.py);
- every view's codes include its reasons for not showing a row (lineage/layout.py);
- each 1-dim filter gets cube blocks over its keys: every key its own block when they
  are few, else runs of keys with about equally many rows, at most `max_cube_blocks`
  and within `cube_bytes` for the bars of its targets.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from brushfire import bins
from brushfire import values as V
from brushfire.capture import budget
from brushfire.capture.stats import SourceStats, StatsSpec, ValueStats, fine_edges
from brushfire.errors import CaptureError
from brushfire.lineage.layout import (
    BLOCK_ROWS,
    CaptureConfig,
    Dim,
    FilterLayout,
    Layout,
    ViewLayout,
)
from brushfire.plan import CapturePlan
from brushfire.spec import aggregates
from brushfire.spec import models as m
from brushfire.values import choice_key, choice_order, format_instant, parse_instant
from brushfire.views import bins_record, maxbins_fields, resolve_bins, view_type


def stats_spec(plan: CapturePlan, config: CaptureConfig) -> StatsSpec:
    dash = plan.dashboard
    needs = [view_type(v).stats_needs(v) for v in dash.views]
    cats = [f for n in needs for f in n.get("counts", [])]
    temporal = [f for n in needs for f in n.get("ranges", [])]
    values = plan.value_fields
    counts = tuple(dict.fromkeys(cats + list(plan.dict_fields)))
    # an order statistic's measure needs its values (numbers and times) even when a
    # categorical view or dropdown also counts it: value counts alone would key it by
    # frequency, not by value (strings, counted either way, are only counted once)
    return StatsSpec(values=values, counts=counts,
                       ranges=tuple(f for f in dict.fromkeys(temporal) if f not in values),
                       max_keys=config.max_keys,
                       measures=tuple(f for f in plan.order_fields if f not in values),
                       extents=tuple(maxbins_fields(dash)))


def resolve_plan(plan: CapturePlan, stats: SourceStats) -> CapturePlan:
    """The plan over its dashboard with every `maxbins` bin chosen from the stats's
    extents (bins.nice_bin): the layout, the shards and the base queries then see
    a plain step and extent, and the layout records them (`ViewLayout.bins`)."""
    dash = resolve_bins(plan.dashboard, stats.extents)
    return plan if dash is plan.dashboard else replace(plan, dashboard=dash)


def make_layout(plan: CapturePlan, stats: SourceStats, config: CaptureConfig,
                previous: Layout | None = None) -> Layout:
    """The layout of `plan` over data of `stats`. With the `previous` capture's layout
    (of the same entry), decisions the new data leave sound are kept: a fine dim's bucket
    edges while their buckets stay about equally full, a dropdown's order of choices, a
    filter's cube blocks (as values), so that appended rows re-key no shard captured
    before."""
    dash = plan.dashboard
    before = {d.name: d for d in previous.dims} if previous is not None else {}
    dims: list[Dim] = []
    arrays: dict[str, np.ndarray] = {}
    dim_of: dict[str, int] = {}
    n_raw = 0

    def add(d: Dim) -> int:
        dims.append(d)
        dim_of[d.name] = len(dims) - 1
        return len(dims) - 1

    for f in plan.value_fields:
        st = stats.values[f]
        if st.dense:
            values = _dense_values(st, before.get(f"value:{f}"))
            add(Dim(f"value:{f}", "dense", f, None, st.type, len(values), True, values=values))
        else:
            edges, aligned, reps = _fine_buckets(dash, f, st, stats, config, before.get(f"value:{f}"))
            lo, hi = stats.bounds.get(f, (None, None))
            add(Dim(f"value:{f}", "fine", f, None, st.type, len(edges), True, raw=n_raw,
                    edges=edges, aligned=aligned, reps=reps,
                    bounds=None if lo is None else [getattr(x, "item", lambda x=x: x)() for x in (lo, hi)]))
            n_raw += 1
    for f, part in plan.part_dims:  # every value of the part is a key, whatever the data
        values = bins.part_values(part)
        add(Dim(f"part:{part}:{f}", "dense", f, None, "int", len(values), True, values=values,
                part=part))
    for f in plan.dict_fields:
        values, counts = stats.counts[f]
        if len(values) > config.max_keys:
            i = next(i for i, p in enumerate(dash.interactions.parameters) if p.field == f)
            msg = (f"parameter field {f!r} has {len(values):,} distinct values; a dropdown "
                   f"holds at most {config.max_keys:,}")
            raise data_error(dash, ("interactions", "parameters", i, "field"), msg,
                             "a field of fewer values, or a slider (a range of values)")
        kind, shown = ("temporal", format_instant) if f in stats.times else ("values", None)
        choices = [shown(x) for x in values] if shown else list(values)
        choices = [choices[i] for i in choice_order(choices, counts)]
        old = before.get(f"dict:{f}")
        if old is not None and old.kind == "dict":  # the earlier order, new choices after it
            present = set(map(repr, choices))
            kept = [x for x in old.values if repr(x) in present]
            known = set(map(repr, kept))
            choices = kept + [x for x in choices if repr(x) not in known]
        add(Dim(f"dict:{f}", "dict", f, None, kind, len(values), True, values=choices))

    views: list[ViewLayout] = []
    off = 0
    measure_fields: list[str] = []
    bars_dims: dict[str, int] = {}  # `_bars_identity` -> its bars dim
    for i, v in enumerate(dash.views):
        vp = plan.view(v.name)
        brushed = plan.has_filter(v.name)
        labels = view_type(v).labels(v, stats)
        nbars = len(labels)
        if nbars > 65_534:
            _too_many_calendar_bars(dash, v, stats)
            msg = f"view {v.name} has {nbars:,} bars; at most 65,534 are supported"
            raise data_error(dash, ("views", i), msg)
        times = view_type(v).value_bars and v.field in stats.times  # bars are instants
        layout_v = ViewLayout(v.name, v.type, v.aggregate.op, nbars, off, labels,
                              reasons=view_type(v).reasons(v), bins=bins_record(v),
                              value_type="temporal" if times else "values")
        order = v.aggregate.order
        exact = True
        if order:
            exact = _order_statistic(dash, i, layout_v, dims, add, dim_of, stats, config, arrays,
                                     before)
        off += layout_v.nslots
        needed = vp.forward or vp.bar_index
        luts = _luts(v, dims, dim_of, nbars, labels)
        if order and luts is not None and len(luts) > 1:
            luts = None  # a heatmap's cell, then its measure: the cell needs a key of its own
        w = layout_v.width
        if luts is not None:
            # a lookup from dense keys costs nothing per row: kept even when not needed
            layout_v.code_dims = [i for i, _ in luts]
            for part, (_, lut) in enumerate(luts):
                arrays[f"lut.{v.name}.{part}"] = _cells(lut, layout_v) if order else lut
        elif needed or (m.brush_of(v) == "points" and brushed) or (order and not exact):
            # (an order statistic gathering values from rows needs each row's cell)
            # indexed when bars map back to rows, or a points brush selects by bar (an
            # interval brush selects by the field's own value dim)
            indexed = vp.bar_index or (brushed and m.brush_of(v) == "points")
            same = _bars_identity(v, layout_v)
            d = bars_dims.get(same) if same is not None else None
            if d is None:  # (else the bars of an earlier view over the same field: one key column)
                d = add(Dim(f"bars:{v.name}", "bars", None, v.name, "bars", layout_v.kbars, indexed))
                if same is not None:
                    bars_dims[same] = d
            dims[d].indexed |= indexed
            dim_of[f"bars:{v.name}"] = d
            layout_v.code_dims = [d]
            arrays[f"lut.{v.name}.0"] = _identity_lut(layout_v.kbars) * w
        if order and layout_v.code_dims:
            layout_v.code_dims.append(layout_v.mdim)
            arrays[f"lut.{v.name}.1"] = arrays[f"mblock.{v.name}"].astype(np.int32)
        elif v.aggregate.field and not order:
            mdim = dim_of.get(f"value:{v.aggregate.field}")
            if mdim is not None and dims[mdim].kind == "dense":
                layout_v.measure, layout_v.mdim = "lut", mdim
                arrays[f"mlut.{v.name}"] = _measure_lut(dims[mdim])
            else:
                if v.aggregate.field not in measure_fields:
                    measure_fields.append(v.aggregate.field)
                layout_v.measure, layout_v.mcol = "stored", measure_fields.index(v.aggregate.field)
        views.append(layout_v)

    # bar -> rows needs the view's first code dim indexed
    for v in views:
        if plan.view(v.name).bar_index and v.code_dims:
            dims[v.code_dims[0]].indexed = True

    filters = []
    for f in plan.filters:
        fdims = [dim_of[n] for n in f.dim_names]
        filters.append(FilterLayout(f.name, f.kind, fdims, list(f.filters_views),
                                    list(f.cube_targets), f.op))
    choice = budget.choose(dims, stats.n_rows, config.memory_budget, _gathering_dims(views, dims))
    dims, views, filters, n_raw = _keep_rows_first(dims, views, filters, choice.kept)
    measure_fields = _raw_measures(dims, views, measure_fields)
    layout = Layout(dashboard=dash.name, block_rows=config.block_rows, dims=dims, views=views,
                    filters=filters, n_raw=n_raw, n_meas=len(measure_fields),
                    measure_fields=measure_fields, detail_columns=list(plan.detail_columns),
                    notes=list(choice.notes), arrays=arrays)
    config = scaled_cubes(config, stats.n_rows)
    for f in filters:
        if not f.cube_targets:
            continue
        d = dims[f.dims[0]]
        if d.rows:  # (a filter without rows has only its cube to answer every target)
            f.cube_targets = _narrow_cube_targets(f.cube_targets, layout, d, config)
        width = sum(layout.view(t).nslots for t in f.cube_targets)
        rowless = [t for t in f.cube_targets if not layout.countable(t)]
        if rowless and d.kind == "fine":  # bucketed keys need rows the cube cannot give
            f.cube_targets = [t for t in f.cube_targets if t not in rowless]
            layout.notes.append(f"filter {f.name}: views {', '.join(rowless)} not answered "
                                "under it (their rows are not kept and its keys are buckets)")
            width = sum(layout.view(t).nslots for t in f.cube_targets)
            rowless = []
        if d.rows and not rowless:
            d.cube_starts = _sticky_blocks(d, before.get(d.name), width, config) or \
                cube_blocks(_key_weights(d, stats), width, config)
        elif d.kind != "fine" and (d.nkeys + 1) * width * 8 <= budget.EXACT_CUBE_BYTES:
            d.cube_starts = list(range(d.nkeys + 1))  # a block per key: exact with no rows
            if not d.rows:
                layout.notes.append(f"filter {f.name}: alone, answered from an exact cube of "
                                    f"{d.nkeys:,} keys; with other filters, not captured")
        elif not d.rows:
            why = ("its values are fine-grained (bucketed keys need the rows)" if d.kind == "fine"
                   else f"an exact cube would take {budget.gb((d.nkeys + 1) * width * 8)}")
            layout.notes.append(f"filter {f.name}: not captured at this budget ({why})")
            f.cube_targets = []
        else:  # kept per row, but some targets are not: only an exact cube answers them
            f.cube_targets = [t for t in f.cube_targets if t not in rowless]
            d.cube_starts = cube_blocks(_key_weights(d, stats), width, config)
            layout.notes.append(f"filter {f.name}: views {', '.join(rowless)} not answered "
                                "under it (an exact cube would be too large)")
    for v in views:
        if v.code_dims and not layout.countable(v.name):
            layout.notes.append(f"view {v.name}: base result and single-filter cubes only "
                                "(its bar's keys are not kept per row)")
    return layout


def _keep_rows_first(dims: list[Dim], views: list[ViewLayout], filters: list[FilterLayout],
                     kept: frozenset[str]) -> tuple:
    """Dims kept per row first (the shards' keys hold exactly those), the others after;
    views' and filters' dim numbers and fine dims' raw rows follow."""
    order = [i for i, d in enumerate(dims) if d.name in kept] + \
        [i for i, d in enumerate(dims) if d.name not in kept]
    new = {old: pos for pos, old in enumerate(order)}
    out, n_raw = [], 0
    for old in order:
        d = dims[old]
        d.rows = d.name in kept
        if d.kind == "fine":
            d.raw = n_raw if d.rows else -1
            n_raw += 1 if d.rows else 0
        out.append(d)
    for v in views:
        v.code_dims = [new[i] for i in v.code_dims]
        if v.mdim >= 0:
            v.mdim = new[v.mdim]
    for f in filters:
        f.dims = [new[i] for i in f.dims]
    return out, views, filters, n_raw


def _bars_identity(view, v: ViewLayout) -> str | None:
    """What decides a categorical view's bar per row (views/categorical.py `row_codes`): its
    field, labels in order, reasons and '(other)' bar. Views alike in these (a count and
    a revenue by region) share one bars dim: one key column and one index, not two.
    None for other views (their bars are not compared)."""
    if not isinstance(view, m.CategoricalView):
        return None
    return repr((view.field, view.other, v.labels, v.reasons, v.value_type, v.kbars))


def _raw_measures(dims: list[Dim], views: list[ViewLayout], fields: list[str]) -> list[str]:
    """Views summing a field a fine dim keeps per row read its raw values (measure "raw")
    instead of a stored copy of the same numbers: 8 bytes a row less per such field (a
    histogram of price beside revenue by region). Returns the fields still stored, the
    views' `mcol` renumbered to them."""
    fine = {d.field: i for i, d in enumerate(dims) if d.kind == "fine" and d.rows and d.raw >= 0}
    for v in views:
        if v.measure == "stored" and fields[v.mcol] in fine:
            v.measure, v.mdim, v.mcol = "raw", fine[fields[v.mcol]], -1
    kept = list(dict.fromkeys(fields[v.mcol] for v in views if v.measure == "stored"))
    for v in views:
        if v.measure == "stored":
            v.mcol = kept.index(fields[v.mcol])
    return kept


ROWS_PER_CUBE_BLOCK = 1_536  # a cube block's rows (below): as 2,048 blocks of 3M rows
MAX_SCALED_CUBE_BLOCKS = 65_536  # (as many as a fine dim has buckets)


def scaled_cubes(config: CaptureConfig, n_rows: int) -> CaptureConfig:
    """The cube limits for a source of `n_rows` rows: `config`'s, or where its blocks would
    hold more or far fewer than ROWS_PER_CUBE_BLOCK rows each, as many blocks as hold that
    many, with `config`'s bytes per block. A bound inside a block reads that block's rows
    (engine/methods/cube.py): 2,048 blocks of 100M rows are 49k rows each (2.4 ms a slide
    step), so a large source gets more blocks (with a block per bucket of a fine dim, 50-54k
    of them at 100M, a move reads only its edge buckets). A small one gets fewer: a block
    of a few rows spares a move nothing worth its bytes (a 10,000-row table's six filters
    took 8 MB of cubes each, 800 bytes a row). Fewer only with the store's own block size:
    tests' tiny blocks keep their configured limits."""
    at_scale = n_rows // ROWS_PER_CUBE_BLOCK
    small = n_rows // max(1, config.block_rows * ROWS_PER_CUBE_BLOCK // BLOCK_ROWS)
    if at_scale > config.max_cube_blocks:
        want = min(MAX_SCALED_CUBE_BLOCKS, at_scale)
    elif small < config.max_cube_blocks:
        want = max(1, small)
    else:
        return config
    return replace(config, max_cube_blocks=want,
                   cube_bytes=max(8, config.cube_bytes * want // config.max_cube_blocks))


def cube_blocks(weights: np.ndarray, width: int, config: CaptureConfig) -> list[int]:
    """Runs of keys with about equally many rows (`weights` per key), at most
    max_cube_blocks runs and within cube_bytes for `width` bars: every key its own block
    when they fit. Returns the starts, ending with the number of keys."""
    nkeys = len(weights)
    limit = max(1, min(config.max_cube_blocks, config.cube_bytes // (8 * max(1, width))))
    if nkeys <= limit:
        return list(range(nkeys + 1))
    cum = np.cumsum(weights, dtype=np.float64)
    total = cum[-1] if len(cum) and cum[-1] > 0 else float(nkeys)
    if not (len(cum) and cum[-1] > 0):
        cum = np.arange(1, nkeys + 1, dtype=np.float64)
    cuts = np.searchsorted(cum, total * np.arange(1, limit) / limit, "right")
    starts = np.unique(np.concatenate([[0], cuts, [nkeys]])).astype(int)
    return [int(s) for s in starts]


def _dense_values(st: ValueStats, old: Dim | None) -> list:
    """A dense dim's keys: the data's distinct values; or, when they are all among the
    `old` capture's (files removed or rewritten took values away, none came), the old
    keys, so that the shards captured before are not keyed again: a key no row has
    any more counts no row (a slider's range and every answer read key counts)."""
    values = st.values.tolist()
    if old is None or old.kind != "dense" or old.part or old.value_type != st.type or \
            len(old.values) <= len(values):
        return values
    known = np.asarray(old.values, st.values.dtype)
    return list(old.values) if bool(np.isin(st.values, known).all()) else values


def _key_weights(d: Dim, stats: SourceStats) -> np.ndarray:
    """Estimated rows per key, for choosing cube blocks before the rows are keyed."""
    if d.kind == "dense" and d.part:
        return np.ones(d.nkeys, np.float64)  # (a block per key: few keys)
    if d.kind == "dense":
        st = stats.values[d.field]
        if len(st.values) == d.nkeys:
            return st.counts.astype(np.float64)
        out = np.zeros(d.nkeys, np.float64)  # (old keys kept: `_dense_values`)
        out[np.searchsorted(np.asarray(d.values, st.values.dtype), st.values)] = st.counts
        return out
    if d.kind == "dict":
        values, counts = stats.counts[d.field]
        pos = {choice_key(v): i for i, v in enumerate(values)}  # (NaN is no key of a dict)
        keys = [parse_instant(x) for x in d.values] if d.value_type == "temporal" else d.values
        return np.array([counts[pos[choice_key(v)]] for v in keys], np.float64)
    return np.ones(d.nkeys, np.float64)  # fine buckets are about equally full; bars unknown


def _sticky_blocks(d: Dim, old: Dim | None, width: int, config: CaptureConfig) -> list[int] | None:
    """The previous capture's cube blocks of a dim, as the same values over its keys now
    (a dense dim's new values fall into the blocks around them), when it had some and they
    fit and are not much coarser than the limit now allows (rows appended since: more
    blocks, `scaled_cubes`); else None (chosen afresh)."""
    if old is None or old.cube_starts is None or old.kind != d.kind or d.kind not in ("dense", "fine"):
        return None
    limit = max(1, min(config.max_cube_blocks, config.cube_bytes // (8 * max(1, width))))
    blocks = len(old.cube_starts) - 1
    if blocks > limit or (blocks < old.nkeys and blocks <= limit // 2):  # (5 % more rows: kept)
        return None
    if d.kind == "fine":
        if old.edges != d.edges:
            return None
        return list(old.cube_starts)
    if old.part != d.part or not d.values:
        return None
    at = [old.values[s] for s in old.cube_starts[1:-1] if s < len(old.values)]  # inner starts
    starts = np.searchsorted(np.asarray(d.values), np.asarray(at, np.asarray(d.values).dtype), "left")
    starts = np.unique(np.concatenate([[0], starts, [d.nkeys]])).astype(int)
    return [int(x) for x in starts]


def _gathering_dims(views: list[ViewLayout], dims: list[Dim]) -> frozenset[str]:
    """The dims of order statistics whose values come from rows (a measure dim with blocks
    of several keys, or bucketed: engine/stats.py order_values): a memory budget must not
    drop their rows."""
    out = set()
    for v in views:
        if v.measure != "cells" or not v.code_dims:
            continue
        d = dims[v.mdim]
        if not (d.kind in ("dense", "dict") and v.width - 1 == d.nkeys):
            out |= {dims[i].name for i in v.code_dims}
    return frozenset(out)


def _balanced(edges: list[float], st: ValueStats) -> bool:
    """Do the data of `st` fill the buckets of `edges` about equally (none over four times
    the mean, or 64 rows)?"""
    if not len(st.values):
        return True
    bucket = np.searchsorted(np.asarray(edges, np.float64), st.values.astype(np.float64), "right") - 1
    weights = np.bincount(bucket, weights=st.counts, minlength=len(edges))
    return bool(weights.max() <= max(4 * weights.sum() / len(edges), 64))


def _fine_buckets(dash: m.DashboardSpec, f: str, st: ValueStats, stats: SourceStats,
                  config: CaptureConfig, old: Dim | None = None) -> tuple[list[float], list[str], list]:
    """A fine dim's bucket edges (about equally many rows per bucket), cut also wherever
    the bar of a view over the field changes (`ViewType.monotone_code`) within the data's
    range, so those views read their bar from the bucket; the views so served; and a value
    per bucket that has the bar of all its values (its first; bucket 0: the largest value
    below the next edge)."""
    lo, hi = stats.bounds.get(f, (None, None))
    integral = st.type in ("int", "temporal")
    cuts: set[float] = set()
    aligned = []
    for v in dash.views:
        code = view_type(v).monotone_code(v, f)
        if code is None or lo is None:
            continue
        at = bins.change_points(code, float(lo), float(hi), integral)
        if len(cuts | set(at)) + 2 > config.max_keys:  # (no room: its bars kept per row)
            continue
        cuts |= set(at)
        aligned.append(v.name)
    if old is not None and old.kind == "fine" and len(set(old.edges) | cuts) <= config.max_keys \
            and _balanced(old.edges, st):  # the earlier buckets hold the data well: kept
        edges = old.edges
    else:
        edges = fine_edges(st, max(1, config.max_keys - len(cuts)))
    edges = [-np.inf] + sorted(set(edges[1:]) | cuts)
    if not aligned:
        return edges, [], []
    first = np.nextafter(edges[1], -np.inf) if len(edges) > 1 else float(lo)
    reps = np.array([first, *edges[1:]], np.float64)
    if integral:  # (bucket 0's: the largest integer below edge 1 as a double, rows are
        # bucketed so; ceil(edge) - 1 is the edge itself beyond 2^53, in the next bar)
        reps = np.concatenate([[np.floor(first) if len(edges) > 1 else lo], np.ceil(edges[1:])])
        # (an edge at 2^63, int64's largest value as a double, holds that value: cast, it
        # overflowed to int64's smallest, and the bucket's rows went to the first bar)
        top = reps >= 2.0 ** 63
        reps = np.maximum(np.where(top, 0.0, reps), -2.0 ** 63).astype(np.int64)
        reps[top] = np.iinfo(np.int64).max
    return edges, aligned, reps.tolist()


def _luts(v, dims: list[Dim], dim_of: dict[str, int], nbars: int,
          labels: list) -> list[tuple[int, np.ndarray]] | None:
    """(dim, lookup table) parts giving the view's bar from keys, or None."""
    parts = view_type(v).key_codes(v, dims, dim_of, nbars, labels)
    return None if parts is None else [(d, _lut(codes, nbars, nbars)) for d, codes in parts]


def _lut(codes: np.ndarray, nbars: int, none: int) -> np.ndarray:
    """Key -> code (int32): a bar or a reason (lineage/layout.py); the no-value key (the
    last entry) -> `none`, dropped keys (-1) -> nbars (a heatmap's: no reasons, so its
    dropped slot)."""
    out = np.full(len(codes) + 1, none, np.int32)
    out[:-1] = np.where(codes >= 0, codes, nbars)
    return out


def _identity_lut(nbars: int) -> np.ndarray:
    return np.arange(nbars + 1, dtype=np.int32)


def _cells(lut: np.ndarray, v: ViewLayout) -> np.ndarray:
    """An order statistic's bar part: bar or reason -> its first cell (dropped stays
    dropped: `ncodes`, past every cell)."""
    return np.where(lut < v.kbars, lut * v.width, v.ncodes).astype(np.int32)


def _order_statistic(dash: m.DashboardSpec, i: int, v: ViewLayout, dims: list[Dim], add,
                     dim_of: dict[str, int], stats: SourceStats, config: CaptureConfig,
                     arrays: dict, before: dict[str, Dim]) -> bool:
    """The measure of order-statistic view `dash.views[i]`: a key dim of its field (a value dim, or a dict
    dim for strings) and blocks of its keys, M of them: every key its own block when
    bars x (keys + 1) cells fit `max_cells` (values read from the dim), else runs of keys
    with about equally many rows (values gathered from the rows of one or two blocks).
    Returns whether the values are read from the dim (no rows needed)."""
    view = dash.views[i]
    agg = view.aggregate
    f = agg.field
    # numbers and times are keyed by value (a value dim: its keys in value order, as ranks
    # need); only strings by a dict dim, whose keys are in no order (distinct needs none)
    d = dim_of.get(f"value:{f}")
    if d is None and f in stats.values:
        st = stats.values[f]
        if st.dense:
            values = _dense_values(st, before.get(f"value:{f}"))
            d = add(Dim(f"value:{f}", "dense", f, None, st.type, len(values), False, values=values))
        else:
            edges = fine_edges(st, config.max_keys)
            d = add(Dim(f"value:{f}", "fine", f, None, st.type, len(edges), True, raw=0,
                        edges=edges))
    if d is None:
        d = dim_of.get(f"dict:{f}")
    if d is None:
        values, counts = stats.counts[f]
        if len(values) > config.max_keys:
            msg = (f"view {view.name}: aggregate op {agg.op!r} needs every value of {f!r} "
                   f"as a key, but it has {len(values):,} distinct values (at most "
                   f"{config.max_keys:,})")
            raise data_error(dash, ("views", i, "aggregate", "field"), msg,
                             "a field with fewer distinct values")
        order = sorted(range(len(values)), key=lambda j: (-int(counts[j]), values[j]))
        d = add(Dim(f"dict:{f}", "dict", f, None, "values", len(values), False,
                    values=[values[i] for i in order]))
    dim = dims[d]
    nkeys = dim.nkeys
    if agg.op == "distinct" and (dim.kind == "fine" or v.kbars * (nkeys + 1) > config.max_cells):
        why = (f"it has more than {config.max_keys:,} distinct values" if dim.kind == "fine" else
               f"{v.kbars:,} bars x {nkeys + 1:,} keys is over {config.max_cells:,} cells")
        msg = (f"view {view.name}: aggregate op 'distinct' counts the keys of {f!r} per bar, "
               f"and {why}")
        raise data_error(dash, ("views", i, "aggregate", "op"), msg,
                         "fewer bars, or a field with fewer values")
    exact = dim.kind != "fine" and v.kbars * (nkeys + 1) <= config.max_cells
    if exact:
        starts = list(range(nkeys + 1))
    else:
        blocks = max(1, min(nkeys, config.max_cells // max(1, v.kbars) - 1))
        starts = _equi_depth(_key_weights(dim, stats), blocks)
        dim.indexed = True  # the rows of a block, by the measure's index
    v.measure, v.mdim, v.mstarts = "cells", d, starts
    v.width = len(starts)  # blocks + 1 (no measure)
    v.p = agg.p if agg.p is not None else aggregates.op(agg.op).p
    v.method = agg.method or "continuous"
    lut = np.searchsorted(np.asarray(starts), np.arange(nkeys + 1), "right") - 1
    lut[nkeys] = len(starts) - 1
    arrays[f"mblock.{view.name}"] = lut.astype(np.int32)
    return exact


def _equi_depth(weights: np.ndarray, blocks: int) -> list[int]:
    """Starts of at most `blocks` runs of keys with about equally many rows, ending with
    the number of keys."""
    nkeys = len(weights)
    if nkeys <= blocks:
        return list(range(nkeys + 1))
    cum = np.cumsum(weights, dtype=np.float64)
    if not (len(cum) and cum[-1] > 0):
        cum = np.arange(1, nkeys + 1, dtype=np.float64)
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, blocks) / blocks, "right")
    return [int(s) for s in np.unique(np.concatenate([[0], cuts, [nkeys]]))]


def _narrow_cube_targets(targets: list[str], layout: Layout, d: Dim,
                         config: CaptureConfig) -> list[str]:
    """A filter's cube targets without the order-statistic views whose cells would make its
    cube coarser (fewer blocks) than the other targets allow: those views are answered
    by the other methods when the filter is alone (so only views counted row by row)."""
    cells = [t for t in targets if layout.view(t).cells and layout.countable(t)]
    plain = [t for t in targets if t not in cells]
    out = list(plain)
    width = sum(layout.view(t).nslots for t in plain)
    full = min(config.max_cube_blocks, d.nkeys)
    for t in sorted(cells, key=lambda t: layout.view(t).nslots):
        w = width + layout.view(t).nslots
        if config.cube_bytes // (8 * w) >= full:
            out.append(t)
            width = w
    return [t for t in targets if t in out]


def _measure_lut(d: Dim) -> np.ndarray:
    """Key -> measure (float64), NaN for the no-value key and infinite values."""
    out = np.full(d.nkeys + 1, np.nan, np.float64)
    x = np.asarray(d.values, np.float64)
    out[:-1] = np.where(np.isfinite(x), x, np.nan)
    return out


def data_error(dash: m.DashboardSpec, loc: tuple, msg: str, hint: str = "") -> Exception:
    """What the data make of a spec's key, past a limit: a SpecError at `loc` with its file
    and line for a spec read from a file, else (a spec given as a dict or model: no file to
    name) a CaptureError."""
    from brushfire.spec.checks import spec_error

    if getattr(dash, "_filename", "<spec>") == "<spec>":
        return CaptureError(f"{msg}; hint: {hint}" if hint else msg)
    return spec_error(dash, loc, msg, hint)


def _too_many_calendar_bars(dash: m.DashboardSpec, view, stats) -> None:
    """A temporal view with more calendar units than bars allowed in the data: a SpecError
    at its `unit` of a spec read from a file, with a coarser unit that fits (as `brushfire
    validate` says it from Parquet statistics)."""
    from brushfire.spec.checks import check_data_bars
    from brushfire.views.temporal import time_range

    cal = view_type(view).calendar(view)
    if cal is None or getattr(dash, "_filename", "<spec>") == "<spec>":  # (not from a file: CaptureError)
        return
    lo, hi = time_range(cal[0], stats)
    if lo is None or hi is None:
        return
    when = {cal[0]: (V.instant_datetime(bins.iso_label(lo)), V.instant_datetime(bins.iso_label(hi)))}
    check_data_bars(dash, when, exact=True)


__all__ = ["ValueStats", "cube_blocks", "make_layout", "resolve_plan", "stats_spec"]
