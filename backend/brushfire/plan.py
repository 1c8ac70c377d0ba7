"""Workload analysis: from a dashboard spec, decide exactly which lineage to capture.

`plan_capture` is pure; the spec's recorded workload (a trace file, brushfire/workload.py)
is read only when capture or `brushfire plan` asks for it (`CapturePlan.workload`).

It follows Smoke §4: a view that is never brushed needs no backward index; a view nothing
filters or highlights needs no forward codes beyond its base result; columns no
interaction touches are not carried; parameters get data-skipping partitions (their rows
grouped by value in every block); 1-dimensional filters get group-by push-down cubes
towards the views they filter.

The plan names what each interaction needs; `capture.layout` then decides, from the
source's profile, how each need is stored (a dense or fine key per value, a lookup from a
key to a bar, or a bar column of its own).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from brushfire.sizes import format_size
from brushfire.spec import expressions as ex
from brushfire.spec import models as m
from brushfire.spec.checks import profile_columns
from brushfire.views import source_fields, view_type
from brushfire.workload import Workload, read_workload


@dataclass(frozen=True)
class Filter:
    """A filter dimension: one bit in the engine's per-row fail mask.

    kind: 'interval' (brush on a value), 'points' (categorical bars), 'rect' (x and y
    intervals), 'param_eq' (dropdown), 'param_range' (slider).
    """

    name: str  # the view or parameter name
    kind: str
    field: str
    y_field: str | None = None
    filters_views: tuple[str, ...] = ()  # views this filter applies to
    cube_targets: tuple[str, ...] = ()  # views answered from a cube when it is alone
    op: str | None = None  # param_range: lt | lte | gt | gte | between; param_eq: in (multiple)
    part: str | None = None  # interval on a calendar part of `field` (models.CALENDAR_PARTS)

    @property
    def dim_names(self) -> tuple[str, ...]:
        """The per-row key columns the filter tests (see lineage/layout.py)."""
        if self.part:
            return (f"part:{self.part}:{self.field}",)
        if self.kind == "points":
            return (f"bars:{self.name}",)
        if self.kind == "param_eq":
            return (f"dict:{self.field}",)
        if self.kind == "rect":
            return (f"value:{self.field}", f"value:{self.y_field}")
        return (f"value:{self.field}",)


@dataclass(frozen=True)
class ViewPlan:
    name: str
    forward: bool  # bars per row are needed (the view is a filter or highlight target)
    reasons: tuple[str, ...] = ()
    bar_index: bool = False  # bar -> rows (details on demand, highlight source)


@dataclass(frozen=True)
class CapturePlan:
    dashboard: m.DashboardSpec
    views: tuple[ViewPlan, ...]
    filters: tuple[Filter, ...]
    highlight_sources: tuple[str, ...]
    detail_columns: tuple[str, ...]
    bar_index_views: tuple[str, ...]  # views whose bars map back to rids (bar → rows)
    notes: tuple[str, ...] = field(default=())

    @cached_property
    def workload(self) -> Workload | None:
        """The spec's recorded workload, its trace read when first asked for: by capture
        (before Spark) and `brushfire plan`, never by opening a capture from the cache, so
        a trace deleted after its capture costs nothing."""
        return read_workload(self.dashboard)

    def filter(self, name: str) -> Filter:
        return next(f for f in self.filters if f.name == name)

    def has_filter(self, name: str) -> bool:
        return any(f.name == name for f in self.filters)

    def view(self, name: str) -> ViewPlan:
        return next(v for v in self.views if v.name == name)

    @property
    def measure_fields(self) -> tuple[str, ...]:
        """Measures of sum / mean views, each once."""
        views = self.dashboard.views
        return tuple(dict.fromkeys(v.aggregate.field for v in views if v.aggregate.field))

    @property
    def order_fields(self) -> tuple[str, ...]:
        """Measures of order-statistic views (median, quantile, min, max, distinct), each
        once: each gets a key dim (a value dim, or a dict dim for strings)."""
        views = self.dashboard.views
        return tuple(dict.fromkeys(v.aggregate.field for v in views
                                   if v.aggregate.order))

    @property
    def value_fields(self) -> tuple[str, ...]:
        """Fields brushed or compared by value (interval, rect, range parameters): each
        gets a value-keyed dim."""
        out: list[str] = []
        for f in self.filters:
            if f.kind in ("interval", "rect", "param_range") and not f.part:
                out += [f.field] + ([f.y_field] if f.y_field else [])
        return tuple(dict.fromkeys(out))

    @property
    def part_dims(self) -> tuple[tuple[str, str], ...]:
        """(field, calendar part) brushed by interval: each gets a dim keyed by the part."""
        return tuple(dict.fromkeys((f.field, f.part) for f in self.filters if f.part))

    @property
    def dict_fields(self) -> tuple[str, ...]:
        """Fields of dropdown parameters: each gets a dictionary-keyed dim."""
        return tuple(dict.fromkeys(f.field for f in self.filters if f.kind == "param_eq"))

    @property
    def index_fields(self) -> tuple[str, ...]:
        """Columns whose values the filters test, in filter order."""
        return tuple(dict.fromkeys(c for f in self.filters for c in (f.field, f.y_field) if c))


def plan_capture(dash: m.DashboardSpec) -> CapturePlan:
    """Decide, per view and per interaction, what lineage the workload needs."""
    all_views = tuple(v.name for v in dash.views)
    targets: dict[str, list[str]] = {}  # view -> why it needs forward codes
    filters: list[Filter] = []
    # a brush filters the other views of every crossfilter group its view is in
    filtered: dict[str, list[str]] = {}
    for g, group in enumerate(dash.interactions.crossfilter):
        for name in group.views:
            if m.brush_of(dash.view(name)) == "none":
                continue
            filtered.setdefault(name, [])
            for o in group.views:
                if o != name:
                    targets.setdefault(o, []).append(f"filtered by the {name} brush (crossfilter {g})")
                    if o not in filtered[name]:
                        filtered[name].append(o)
    for name, others in filtered.items():
        view = dash.view(name)
        kind = m.brush_of(view)
        keys = view_type(view).key_fields(view)
        fld, yf = keys[0], (keys[1] if len(keys) > 1 else None)
        cube = () if kind == "rect" else tuple(others)
        part = view.unit if m.is_part(view) else None
        filters.append(Filter(name, kind, fld, yf, tuple(others), cube, part=part))
    for p in dash.interactions.parameters:
        kind = "param_eq" if p.op == "eq" else "param_range"
        for v in all_views:
            targets.setdefault(v, []).append(f"filtered by parameter {p.name}")
        # a parameter alone is answered per view from a cube over its keys
        op = ("in" if p.multiple else None) if p.op == "eq" else p.op
        filters.append(Filter(p.name, kind, p.field, None, all_views, all_views, op=op))
    for h in dash.interactions.highlight:
        for t in h.targets:
            targets.setdefault(t, []).append(f"highlight target of {h.source}")
    details = tuple(dash.interactions.details.columns) if dash.interactions.details else ()
    if details:  # each join's key too: the dimension rows behind a selection (docs/protocol.md)
        details = tuple(dict.fromkeys([*details, *(f"{j.name}.{j.key}" for j in dash.source.joins)]))
    highlight_sources = tuple(dict.fromkeys(h.source for h in dash.interactions.highlight))
    # bar → rows for highlight sources, and for every view when details are declared
    bar_index = all_views if details else highlight_sources
    views = tuple(
        ViewPlan(v.name, v.name in targets, tuple(dict.fromkeys(targets.get(v.name, []))),
                 v.name in bar_index)
        for v in dash.views
    )
    return CapturePlan(dash, views, tuple(filters), highlight_sources, details, bar_index)


# what each filter's dim gets (engine/copies.py `choices`; capture says it per dim)
COPY_TEXT = ("built at capture (its rows in key order; a dense or dropdown dim's rows of each key "
             "in another filter's key order: `brushfire capture` says which), unless its keys are "
             "kept as cubes only or the copies pass their budget")
DEFAULT_BUDGET = "default: half of the capturing machine's memory"


def spec_columns(dash: m.DashboardSpec) -> set[str] | None:
    """Every column the spec reads (views, parameters, details, profiling checks, derived
    columns, static filters and joins' `on`), or None when an expression cannot be parsed
    (read all of them)."""
    out = {f for v in dash.views for f in source_fields(v)}
    out |= {p.field for p in dash.interactions.parameters}
    if dash.interactions.details:
        out |= set(dash.interactions.details.columns)
    for fd in dash.profile.fd if dash.profile else []:
        out |= set(fd.lhs) | set(fd.rhs)
    out |= {j.on for j in dash.source.joins}
    for text in [*dash.source.columns.values(), *dash.source.filters]:
        try:
            out |= {c for c, _ in ex.analyze(text, check=False).columns}
        except ex.ExpressionError:
            return None
    return out - set(profile_columns(dash))


def needed_columns(dash: m.DashboardSpec) -> dict[str, list[str] | None]:
    """Per join, the columns of its dimension table the spec reads (its key first), or
    None: all of them (an expression that cannot be parsed may read any)."""
    used = spec_columns(dash)
    out: dict[str, list[str] | None] = {}
    for j in dash.source.joins:
        if used is None:
            out[j.name] = None
            continue
        lower = {c.lower() for c in used}  # (Spark resolves names case-insensitively)
        cols = [c.partition(".")[2] for c in sorted(used) if c.lower().startswith(f"{j.name.lower()}.")]
        out[j.name] = list(dict.fromkeys([j.key, *[c for c in cols if f"{j.name}.{c}".lower() in lower]]))
    return out


def copy_text(plan: CapturePlan, name: str) -> str:
    """What filter `name`'s dim gets as `brushfire plan` says it, before the layout's sizes
    are known (`brushfire capture` says what it got)."""
    w = plan.workload
    if w is not None and w.copy_budget == 0:
        return "none: the workload's copy_budget is 0"
    if w is None or w.copy_budget is None:
        budget = f" ({DEFAULT_BUDGET})"
    else:
        order = "the most changed filters' first" if w.trace is not None else "in the layout's order"
        budget = f" ({format_size(w.copy_budget)}, spent {order})"
    if w is None or w.trace is None:
        return COPY_TEXT + budget
    moves = dict(w.moves).get(name, 0)
    if not moves:
        return (f"none: the workload's trace ({w.messages:,} filter changes) never changes "
                f"{name} (its changes read the store's own order)")
    return f"{COPY_TEXT}{budget}; {moves:,} of the workload trace's {w.messages:,} filter changes"


def explain(plan: CapturePlan, n_rows: int | None = None, nbytes: dict[str, int] | None = None,
            layout=None, bins: dict[str, list] | None = None,
            copies: dict[str, bool] | None = None) -> str:
    """An EXPLAIN-style description of the plan: per view, what is captured and why.
    With the capture's `layout` (lineage/layout.py), also how each need is stored; with
    it or `bins` ({view: its bins as capture recorded them}), which bins maxbins chose;
    with `copies` ({dim: whether the capture gave it a clustered key copy}), what each
    filter's dims got, where the plan alone says what they may get."""
    if layout is not None:
        bins = {v.name: v.bins for v in layout.views}
    nbytes = nbytes or {}

    def copy_line(name: str, f: Filter) -> str:
        if copies is None or layout is None:
            return f"    clustered key copy: {copy_text(plan, name)}"
        dims = [d.name for d in _filter_dims(layout, f) if d.name in copies]
        got = [d for d in dims if copies[d]]
        what = (f"a copy of {', '.join(got)}" if got else "none") if dims else "none (no dim of its own)"
        return f"    clustered key copy: {what} (clustered key copies, below, say why)"

    lines = [f"capture plan for dashboard '{plan.dashboard.name}'"
             + (f" ({n_rows:,} rows)" if n_rows is not None else "")]
    lines += _joins_text(plan)
    for vp in plan.views:
        view = plan.dashboard.view(vp.name)
        lines.append(f"  view {vp.name} [{view.type}, {view.aggregate.op}]")
        lines += _fitted_bins_text(view, (bins or {}).get(vp.name, []))
        if vp.forward:
            lines.append(f"    forward codes: kept — {'; '.join(vp.reasons)}")
        elif vp.bar_index:
            lines.append("    forward codes: kept — its bars map back to rows (bar → rows)")
        else:
            lines.append("    forward codes: pruned — nothing filters or highlights this view"
                         " (base result only)")
        if layout is not None and (vp.forward or vp.bar_index):
            lines.append(f"    bar per row: {_code_text(layout, vp.name)}")
        f = next((f for f in plan.filters if f.name == vp.name), None)
        if f is None:
            reason = ("brush 'none'" if m.brush_of(view) == "none" else "not in any crossfilter group")
            lines.append(f"    backward index: pruned — {reason}")
        else:
            lines.append(f"    backward index: {_index_text(f)}"
                         + (f" — {_dims_text(layout, f)}" if layout is not None else ""))
            if f.cube_targets:
                lines.append(f"    cubes (group-by push-down): {vp.name} keys × bars of "
                             + ", ".join(f.cube_targets))
            lines.append(copy_line(vp.name, f))
        if vp.bar_index:
            why = "linked highlighting" if vp.name in plan.highlight_sources else "details on demand"
            lines.append(f"    bar → rows index: kept for {why}")
        if vp.name in nbytes:
            lines.append(f"    bytes: {nbytes[vp.name]:,}")
    for f in plan.filters:
        if f.kind.startswith("param"):
            lines.append(f"  parameter {f.name}: {_index_text(f)} (data skipping)"
                         + (f" — {_dims_text(layout, f)}" if layout is not None else ""))
            lines.append(copy_line(f.name, f))
            if f.name in nbytes:
                lines.append(f"    bytes: {nbytes[f.name]:,}")
    if plan.detail_columns:
        lines.append(f"  details on demand: snapshot of {', '.join(plan.detail_columns)} in rid order"
                     + (f" ({nbytes['_snapshot']:,} bytes)" if "_snapshot" in nbytes else ""))
    else:
        lines.append("  details on demand: pruned — not declared")
    return "\n".join(lines)


def _joins_text(plan: CapturePlan) -> list[str]:
    """How the joins are made, and what of them the capture keeps."""
    src = plan.dashboard.source
    if not src.joins:
        return []
    out = ["  joins (made by Spark in the capture's one pass over the source; each row keeps "
           "its place and gains the columns of at most one dimension row):"]
    for j in src.joins:
        chain = src.join_chain(f"{j.name}.{j.key}")
        through = f", through {' -> '.join(c.name for c in chain[:-1])}" if len(chain) > 1 else ""
        path = getattr(getattr(j, "_spec_path", None), "written", j.path)  # (as the spec says)
        out.append(f"    {j.name}: LEFT JOIN {path} ON {j.on} = {j.name}.{j.key}{through}; "
                   f"broadcast when it fits, else shuffled and put back in the source's order")
        used = sorted({f for v in plan.dashboard.views for f in source_fields(v)} | set(plan.detail_columns)
                      | {p.field for p in plan.dashboard.interactions.parameters})
        cols = [c for c in used if c.startswith(f"{j.name}.")]
        # (also read: a chain's `on`, and columns only derived columns or static filters read)
        needed = needed_columns(plan.dashboard)[j.name]
        keyed = {c.lower() for c in cols}
        rest = ["every other column (an expression Brushfire cannot parse may read any)"] if needed is None \
            else [f"{j.name}.{c}" for c in needed if f"{j.name}.{c}".lower() not in keyed
                  and c.lower() != j.key.lower()]
        if cols or rest:
            text = f"{', '.join(cols)} (keyed like the source's own)" if cols else ""
            more = f"{', '.join(rest)} (read by a join's on, a derived column or a static filter)" if rest else ""
            out.append(f"      columns read: {'; '.join(t for t in (text, more) if t)}")
        out.append(f"      rows without a match: counted at capture; the key {j.name}.{j.key} is "
                   + ("kept per row (the dimension rows behind a selection, and forward "
                      "lineage from a dimension row)" if plan.detail_columns else
                      "not kept (declare details on demand for lineage through the join)"))
    return out


def _fitted_bins_text(view, chosen: list) -> list[str]:
    """A view's bins fitted to the data (`maxbins`, a step alone): the rule before
    capture, the step and extent it chose after (`chosen`: the view's bins as capture
    recorded them)."""
    binned = view_type(view).axes(view)
    axes = [(a.path[0] + " " if len(binned) > 1 else "", a.bin) for a in binned]
    out = []
    for i, (axis, b) in enumerate(axes):
        if b.resolved:
            continue
        if i < len(chosen):
            step, lo, hi = chosen[i]
            n = m.Bin(step=step, extent=(lo, hi)).count
            rule = f"maxbins {b.maxbins} chose step {step:g}" if b.maxbins else f"step {step:g}"
            out.append(f"    {axis}bins: {rule} over [{lo:g}, {hi:g}] ({n} bars, from the data's "
                       "min and max)")
        elif b.maxbins:
            out.append(f"    {axis}bins: at most {b.maxbins}; a nice step and extent chosen at "
                       "capture from the data's min and max (brushfire capture shows them)")
        else:
            out.append(f"    {axis}bins: step {b.step:g}; the extent, whole steps around the data's "
                       "min and max, fitted at capture (brushfire capture shows it)")
    return out


def _index_text(f: Filter) -> str:
    if f.part:
        return f"rows of each block ordered by the {f.part.replace('_', ' ')} of {f.field} (range lookups)"
    return {
        "interval": f"rows of each block ordered by {f.field} (range lookups)",
        "points": f"rows of each block grouped by bar of {f.name}",
        "rect": f"rows of each block ordered by {f.field}, and by {f.y_field}",
        "param_eq": f"rows of each block grouped by {f.field}",
        "param_range": f"rows of each block ordered by {f.field}",
    }[f.kind]


def _dims_text(layout, f: Filter) -> str:
    return "; ".join(_dim_text(d) for d in _filter_dims(layout, f))


def _filter_dims(layout, f: Filter) -> list:
    """The layout's dims of filter `f`."""
    out = []
    for name in f.dim_names:
        d = next((d for d in layout.dims if d.name == name), None)
        if d is None and name.startswith("bars:"):  # a view sharing another's bars dim
            v = next((v for v in layout.views if f"bars:{v.name}" == name and v.code_dims), None)
            d = layout.dims[v.code_dims[0]] if v is not None else None
        if d is not None:
            out.append(d)
    return out


def _dim_text(d) -> str:
    if d.kind == "dense":
        return f"{d.field}: {d.nkeys:,} distinct values, each its own key (exact)"
    if d.kind == "fine":
        return (f"{d.field}: many distinct values in {d.nkeys:,} key buckets, raw values kept "
                "for rows at a selection's edge buckets")
    if d.kind == "dict":
        return f"{d.field}: {d.nkeys:,} choices"
    return f"{d.nkeys:,} bars"


def _code_text(layout, view: str) -> str:
    v = layout.view(view)
    if not v.code_dims:
        return "not kept"
    dims = [layout.dims[i] for i in v.code_dims]
    if dims[0].kind == "bars":
        text = "its own key column (bar number)" if dims[0].view == view else \
            f"the key column of view {dims[0].view} (the same bars over the same field)"
    else:
        text = ("looked up from the key of " + " and ".join(d.field for d in dims)
                + " (no column of its own)")
    if v.measure == "lut":
        text += f"; its measure looked up from the key of {layout.dims[v.mdim].field}"
    elif v.measure == "raw":
        text += (f"; its measure read from {layout.dims[v.mdim].field}'s raw values, kept per "
                 "row for its brushes (no column of its own)")
    elif v.measure == "stored":
        text += f"; its measure a stored column of {layout.measure_fields[v.mcol]} (8 bytes a row)"
    return text
