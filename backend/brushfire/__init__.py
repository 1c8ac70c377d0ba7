"""Brushfire: linked-brushing dashboards served from fine-grained lineage captured on Spark."""

from brushfire.dashboard import Dashboard
from brushfire.engine.session import Session
from brushfire.errors import BrushfireError, CaptureError, InteractionError, SpecError

__version__ = "0.1.0"
__all__ = ["BrushfireError", "CaptureError", "Dashboard", "InteractionError", "Session",
           "SpecError", "__version__"]
