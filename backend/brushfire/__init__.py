"""Brushfire: linked-brushing dashboards served from fine-grained lineage captured on Spark.

`import brushfire` loads only the exceptions: `Dashboard`, `Session`, `widget` and
`DashboardWidget` are imported on first use (the engine brings numba; the widget
anywidget and ipywidgets), so `brushfire validate` and other light uses stay fast.
"""

import importlib

from brushfire.errors import BrushfireError, CaptureError, InteractionError, SpecError

__version__ = "0.1.0"
__all__ = ["BrushfireError", "CaptureError", "Dashboard", "DashboardWidget", "InteractionError",
           "Session", "SpecError", "__version__", "widget"]

_LAZY = {"Dashboard": ("brushfire.dashboard", "Dashboard"),
         "Session": ("brushfire.engine.session", "Session"),
         "DashboardWidget": ("brushfire.widget", "DashboardWidget"),
         "widget": ("brushfire.widget", None)}  # the module is callable: brushfire.widget(...)


def __getattr__(name: str) -> object:
    """The names of `_LAZY`, imported on first use."""
    if name in _LAZY:
        module_name, attr = _LAZY[name]
        module = importlib.import_module(module_name)
        return module if attr is None else getattr(module, attr)
    msg = f"module 'brushfire' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
