"""Dashboard specs: typed models (`models`) and the YAML loader (`loader`)."""

from brushfire.spec.loader import load_dashboard, parse_dashboard
from brushfire.spec.models import DashboardSpec

__all__ = ["DashboardSpec", "load_dashboard", "parse_dashboard"]
