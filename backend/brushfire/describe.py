"""What a client needs to draw a dashboard, shared by the server and the Jupyter widget
(neither FastAPI nor Jupyter here): the dashboard's description and the built frontend."""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from brushfire import charts, protocol, versions
from brushfire import values as V
from brushfire.spec.models import brush_of
from brushfire.views import bins_record, view_type

if TYPE_CHECKING:
    from brushfire.dashboard import Dashboard

# one description per open dashboard, dropped with it (weak keys: a closed dashboard's
# store, GBs of arrays, is never kept alive by its description)
_described: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def frontend_dist() -> Path:
    """The built frontend: $BRUSHFIRE_FRONTEND, else `frontend/dist` of the source tree."""
    env = os.environ.get("BRUSHFIRE_FRONTEND")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "frontend" / "dist"


def describe_dashboard(dash: Dashboard) -> dict:
    """What a client needs to draw a dashboard: each view's Vega-Lite spec (with the
    full-data bars; and for a narrow card, when it differs), its labels and initial values
    (after default parameters), its brush (`lazy`: not captured, answered on Spark by
    brushfire/lazy.py; `snap`); the parameters with their choices; the highlight and
    details declarations, and the joins whose dimension rows details can list (`joins`:
    name, table, key column); the layout; the bars' colours; the version served
    (brushfire/versions.py). Computed once per open dashboard (the store is read-only),
    and forgotten with it."""
    with _lock:
        described = _described.get(dash)
        if described is None:
            described = _described[dash] = _describe(dash)
    return described


def _describe(dash: Dashboard) -> dict:
    from brushfire.dashboard import Dashboard

    session = dash.session()
    initial, filters = session.views(), protocol.filters_json(session)  # defaults applied
    session.clear()  # the full-data bars, drawn behind the filtered ones
    full = session.views()
    views = []
    lazy_brushes = isinstance(dash, Dashboard)  # its sessions answer undeclared brushes on Spark
    for v, layout in zip(dash.spec.views, dash.store.views, strict=True):
        brush = dash.plan.filter(v.name).kind if dash.plan.has_filter(v.name) else None
        lazy = brush is None and lazy_brushes and brush_of(v) != "none"
        brush = brush_of(v) if lazy else brush
        views.append({"name": v.name, "title": v.title or v.name, "type": v.type,
                      "unit": getattr(v, "unit", None), "brush": brush,
                      "snap": getattr(v, "snap", False),
                      "bounds": view_type(v).bound(v),
                      "lazy": lazy,
                      "aggregate": v.aggregate.op, "labels": [V.wire_choice(x) for x in layout.labels],
                      "bins": bins_record(v),
                      "counts": initial[v.name].counts, "values": initial[v.name].values,
                      "caveats": initial[v.name].caveats,
                      "spec": charts.view_spec(v, layout, full[v.name].values, brush),
                      "narrow_spec": charts.narrow_spec(v, layout, full[v.name].values, brush)})
    details = dash.spec.interactions.details
    return {
        "name": dash.name, "title": dash.spec.title or dash.name, "rows": dash.store.n_rows,
        "version": versions.public(versions.served(dash)),
        "views": views,
        "parameters": [_parameter_json(dash, p) for p in dash.spec.interactions.parameters],
        "filters": filters,
        "highlight": [h.model_dump() for h in dash.spec.interactions.highlight],
        # (each column once, as details rows and dimension rows carry them: the page's
        # tables take their columns from here)
        "details": {**details.model_dump(), "columns": list(dict.fromkeys(details.columns))}
        if details else None,
        "joins": _joins_json(dash),
        "layout": [s.model_dump() for s in dash.spec.layout] if dash.spec.layout else None,
        "colors": charts.COLORS,
    }


def _joins_json(dash: Dashboard) -> list[dict]:
    """The joins whose lineage was captured (their key kept with the details' columns):
    the page lists a selection's dimension rows (`dimension`) and marks a hovered one's
    bars (`dimension_forward`)."""
    out = []
    for j in dash.spec.source.joins:
        key = f"{j.name}.{j.key}"
        if key in dash.plan.detail_columns:
            out.append({"name": j.name, "table": Path(j.path).name, "key": key})
    return out


def _parameter_json(dash: Dashboard, p) -> dict:
    """A parameter's widget: the choices of a dropdown, the value range of a slider."""
    kind, domain = dash.store.parameter_domain(p.name)
    return {"name": p.name, "field": p.field, "widget": p.widget, "op": p.op,
            "multiple": p.multiple,
            "default": V.wire_dropdown(p.default) if kind in ("values", "times") else p.default,
            "values": [V.wire_dropdown(x) for x in domain] if kind in ("values", "times") else None,
            "range": domain if kind == "range" and domain else None}
