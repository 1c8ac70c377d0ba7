"""Baseline engines behind the same `Session` API and WebSocket server as Brushfire, for
the latency comparison of `brushfire bench`: `duckdb` (re-run each view's SQL on DuckDB),
`preagg` (DuckDB plus per-view pre-aggregated pixel tables, as Mosaic and Falcon do) and
`lazy` (re-run each view's group-by on Spark, the Smoke paper's lazy baseline)."""

from __future__ import annotations

from brushfire.errors import BrushfireError

ENGINES = ("brushfire", "duckdb", "preagg", "lazy")


def with_engine(dash, engine: str, spark_master: str | None = None):
    """`dash` as served by `engine`: the captured dashboard itself for brushfire, else a
    BaselineDashboard whose sessions run the baseline (only labels are kept from `dash`)."""
    if engine == "brushfire":
        return dash
    from brushfire.baselines.base import BaselineDashboard

    if engine in ("duckdb", "preagg"):
        try:
            import duckdb  # noqa: F401
        except ImportError:
            msg = f"the {engine} baseline needs DuckDB: pip install 'brushfire[bench]'"
            raise BrushfireError(msg) from None
    layouts = dash.store.views
    if engine == "duckdb":
        from brushfire.baselines.duckdb import DuckDBBackend, DuckDBSession

        return BaselineDashboard(dash, DuckDBBackend(dash.spec, layouts), DuckDBSession)
    if engine == "preagg":
        from brushfire.baselines.preagg import PreaggBackend, PreaggSession

        return BaselineDashboard(dash, PreaggBackend(dash.spec, layouts), PreaggSession)
    if engine == "lazy":
        from brushfire.baselines.lazy import SparkBackend, SparkSqlSession

        return BaselineDashboard(dash, SparkBackend(dash.spec, layouts, spark_master), SparkSqlSession)
    msg = f"unknown engine {engine!r}; engines: {', '.join(ENGINES)}"
    raise ValueError(msg)
