"""Brushfire: linked-brushing dashboards served from fine-grained lineage captured on Spark."""

import importlib

from brushfire.dashboard import Dashboard
from brushfire.engine.session import Session
from brushfire.errors import BrushfireError, CaptureError, InteractionError, SpecError

__version__ = "0.1.0"
__all__ = ["BrushfireError", "CaptureError", "Dashboard", "DashboardWidget", "InteractionError",
           "Session", "SpecError", "__version__", "widget"]


def __getattr__(name: str) -> object:
    """`brushfire.widget(...)` and `brushfire.DashboardWidget`, imported on first use
    (anywidget and ipywidgets are not needed outside notebooks)."""
    if name in ("widget", "DashboardWidget"):
        module = importlib.import_module("brushfire.widget")
        return module if name == "widget" else module.DashboardWidget
    msg = f"module 'brushfire' has no attribute {name!r}"
    raise AttributeError(msg)
