"""Dashboard specs: typed models (`models`) and the YAML loader (`loader`).

The names below load on first use: importing `brushfire.spec.models` must not load the
loader, which checks views through their types (brushfire/views, built on the models).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from brushfire.spec.loader import load_dashboard, parse_dashboard
    from brushfire.spec.models import DashboardSpec

__all__ = ["DashboardSpec", "load_dashboard", "parse_dashboard"]
_HOMES = {"DashboardSpec": "models", "load_dashboard": "loader", "parse_dashboard": "loader"}


def __getattr__(name: str):
    if name not in _HOMES:
        msg = f"module 'brushfire.spec' has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(f"brushfire.spec.{_HOMES[name]}"), name)
