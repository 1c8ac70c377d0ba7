"""Workload analysis: from a dashboard spec, decide exactly which lineage to capture.

`plan_capture` is pure. It follows Smoke §4: a view that is never brushed needs no
backward index; a view nothing filters needs no forward codes beyond its base result;
columns no interaction touches are not carried; parameters get data-skipping
partitions; crossfilter pairs get group-by push-down cubes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from brushfire.spec import models as m


@dataclass(frozen=True)
class Filter:
    """A filter dimension: one bit in a session's per-row pass mask.

    kind: 'interval' (sorted value index), 'points' (index partitioned by value),
    'rect' (sorted x index plus y values), 'param_eq' (partitions), 'param_range'.
    """

    name: str  # the view or parameter name
    kind: str
    field: str
    y_field: str | None = None
    filters_views: tuple[str, ...] = ()  # views this filter applies to
    cube_targets: tuple[str, ...] = ()  # views answered from a cube when it is alone


@dataclass(frozen=True)
class ViewPlan:
    name: str
    forward: bool  # forward codes per row are kept (the view is a filter target)
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class CapturePlan:
    dashboard: m.Dashboard
    views: tuple[ViewPlan, ...]
    filters: tuple[Filter, ...]
    highlight_sources: tuple[str, ...]
    detail_columns: tuple[str, ...]
    bar_index_views: tuple[str, ...]  # views whose bars map back to rids (bar → rows)
    notes: tuple[str, ...] = field(default=())

    def filter(self, name: str) -> Filter:
        return next(f for f in self.filters if f.name == name)

    def has_filter(self, name: str) -> bool:
        return any(f.name == name for f in self.filters)

    @property
    def measure_fields(self) -> tuple[str, ...]:
        """Measures of sum / mean views, each once: the columns of `measures`."""
        views = self.dashboard.views
        return tuple(dict.fromkeys(v.aggregate.field for v in views if v.aggregate.field))

    @property
    def index_fields(self) -> tuple[str, ...]:
        """Columns that need a per-row value array (brushed or parameter fields)."""
        out: list[str] = []
        for f in self.filters:
            for c in (f.field, f.y_field):
                if c and c not in out:
                    out.append(c)
        return tuple(out)


def plan_capture(dash: m.Dashboard) -> CapturePlan:
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
            for o in group.views:
                if o != name:
                    targets.setdefault(o, []).append(f"filtered by the {name} brush (crossfilter {g})")
                    filtered.setdefault(name, [])
                    if o not in filtered[name]:
                        filtered[name].append(o)
            filtered.setdefault(name, [])
    for name, others in filtered.items():
        view = dash.view(name)
        kind = m.brush_of(view)
        if isinstance(view, m.HeatmapView):
            fld, yf = view.x.field, view.y.field
        else:
            fld, yf = view.field, None
        cube = () if kind == "rect" else tuple(others)
        filters.append(Filter(name, kind, fld, yf, tuple(others), cube))
    for p in dash.interactions.parameters:
        kind = "param_eq" if p.op == "eq" else "param_range"
        for v in all_views:
            targets.setdefault(v, []).append(f"filtered by parameter {p.name}")
        # a parameter alone is answered per view from a cube over its partitions
        filters.append(Filter(p.name, kind, p.field, None, all_views, all_views))
    for h in dash.interactions.highlight:
        for t in h.targets:
            targets.setdefault(t, []).append(f"highlight target of {h.source}")
    views = tuple(
        ViewPlan(v.name, v.name in targets, tuple(dict.fromkeys(targets.get(v.name, []))))
        for v in dash.views
    )
    details = tuple(dash.interactions.details.columns) if dash.interactions.details else ()
    highlight_sources = tuple(dict.fromkeys(h.source for h in dash.interactions.highlight))
    # bar → rows for highlight sources, and for every view when details are declared
    bar_index = all_views if details else highlight_sources
    return CapturePlan(dash, views, tuple(filters), highlight_sources, details, bar_index)


def explain(plan: CapturePlan, n_rows: int | None = None, nbytes: dict[str, int] | None = None) -> str:
    """An EXPLAIN-style description of the plan: per view, what is captured and why."""
    nbytes = nbytes or {}
    lines = [f"capture plan for dashboard '{plan.dashboard.name}'"
             + (f" ({n_rows:,} rows)" if n_rows is not None else "")]
    for vp in plan.views:
        view = plan.dashboard.view(vp.name)
        lines.append(f"  view {vp.name} [{view.type}, {view.aggregate.op}]")
        if vp.forward:
            lines.append(f"    forward codes: kept — {'; '.join(vp.reasons)}")
        else:
            lines.append("    forward codes: pruned — nothing filters or highlights this view"
                         " (base result only)")
        f = next((f for f in plan.filters if f.name == vp.name), None)
        if f is None:
            reason = ("brush 'none'" if m.brush_of(view) == "none" else "not in any crossfilter group")
            lines.append(f"    backward index: pruned — {reason}")
        else:
            lines.append(f"    backward index: {_index_text(f)} on {f.field}"
                         + (f" with {f.y_field} values" if f.y_field else ""))
            if f.cube_targets:
                lines.append(f"    cubes (group-by push-down): {vp.name} blocks × bars of "
                             + ", ".join(f.cube_targets))
        if vp.name in plan.bar_index_views:
            why = "linked highlighting" if vp.name in plan.highlight_sources else "details on demand"
            lines.append(f"    bar → rows index: kept for {why}")
        if vp.name in nbytes:
            lines.append(f"    bytes: {nbytes[vp.name]:,}")
    for f in plan.filters:
        if f.kind.startswith("param"):
            lines.append(f"  parameter {f.name}: {_index_text(f)} on {f.field} (data skipping)")
            if f.name in nbytes:
                lines.append(f"    bytes: {nbytes[f.name]:,}")
    if plan.detail_columns:
        lines.append(f"  details on demand: snapshot of {', '.join(plan.detail_columns)} in rid order"
                     + (f" ({nbytes['_snapshot']:,} bytes)" if "_snapshot" in nbytes else ""))
    else:
        lines.append("  details on demand: pruned — not declared")
    return "\n".join(lines)


def _index_text(f: Filter) -> str:
    return {
        "interval": "rids sorted by value (range lookups)",
        "points": "rids partitioned by value (one segment per category)",
        "rect": "rids sorted by x value",
        "param_eq": "rids partitioned by value",
        "param_range": "rids sorted by value",
    }[f.kind]
