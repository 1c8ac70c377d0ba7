"""The `stars` test dashboard and its data: what analysts bring that flights does not (a
colour-magnitude heatmap with 141 y-bins and a reversed y axis, a categorical of 1,000+
values, float32 measures, a slider). Used by the browser tests."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa


def make_stars(n: int, seed: int) -> pa.Table:
    """A star catalogue: float32 colour and magnitude along a main sequence, giants and
    white dwarfs (so a colour-magnitude heatmap has sparse structure and empty cells),
    float32 parallax, 1,400 clusters (half zipf, half uniform), surveys, observation times and counts."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(3, n, p=[0.8, 0.15, 0.05])
    color = np.where(kind == 0, rng.uniform(-0.2, 2.4, n),
                     np.where(kind == 1, rng.normal(1.2, 0.15, n), rng.normal(0.2, 0.2, n)))
    mag = np.where(kind == 0, 1.5 + 4.2 * color + rng.normal(0, 0.6, n),
                   np.where(kind == 1, rng.normal(1.0, 0.8, n), rng.normal(12, 0.6, n)))
    clusters = np.array([f"cluster-{i:04d}" for i in range(1400)])
    t0 = datetime(2019, 1, 1)
    return pa.table({
        "color": pa.array(color.astype(np.float32)),
        "mag": pa.array(mag.astype(np.float32)),
        "parallax": pa.array(rng.exponential(3.0, n).astype(np.float32)),
        "cluster": pa.array(clusters[np.where(rng.random(n) < 0.5, np.minimum(rng.zipf(1.5, n) - 1, 1399),
                                              rng.integers(0, 1400, n))]),
        "survey": pa.array(np.array(["gaia", "hipparcos", "sdss", "2mass"])[rng.integers(0, 4, n)]),
        "t": pa.array([t0 + timedelta(hours=int(h)) for h in rng.integers(0, 24 * 700, n)],
                      type=pa.timestamp("us")),
        "n_obs": pa.array(rng.integers(1, 250_000, n)),
    })


def stars_spec(path, display: bool = True) -> dict:
    """The `stars` dashboard; `display`: with the display options (scale, reverse)."""
    def opt(**kw):
        return kw if display else {}
    return {
        "name": "stars",
        "title": "Star catalogue",
        "source": {"path": str(path)},
        "views": [
            {"name": "cmd", "title": "Colour-magnitude diagram", "type": "heatmap",
             "x": {"field": "color", "bin": {"step": 0.05, "extent": [-0.5, 3.0]}},
             "y": {"field": "mag", "bin": {"step": 0.1, "extent": [-1.0, 13.1]}},
             **opt(reverse=["y"], scale="log")},
            {"name": "mag", "title": "Magnitude", "type": "histogram", "field": "mag",
             "bin": {"step": 0.5, "extent": [-1, 14]}},
            {"name": "parallax", "title": "Parallax (mas)", "type": "histogram", "field": "parallax",
             "bin": {"step": 0.5, "extent": [0, 20]}, **opt(scale="log")},
            {"name": "cluster", "title": "Cluster", "type": "categorical", "field": "cluster", "top": 1000},
            {"name": "month", "title": "Observations per month", "type": "temporal", "field": "t",
             "unit": "month"},
            {"name": "obs", "title": "Mean observations by colour and parallax", "type": "heatmap",
             "x": {"field": "color", "bin": {"step": 0.25, "extent": [-0.5, 3.0]}},
             "y": {"field": "parallax", "bin": {"step": 2, "extent": [0, 20]}},
             "aggregate": {"op": "mean", "field": "n_obs"}, **opt(scale="sqrt")},
        ],
        "interactions": {
            "crossfilter": [{"views": ["cmd", "mag", "parallax", "cluster", "month", "obs"]}],
            "details": {"columns": ["color", "mag", "parallax", "cluster", "t", "n_obs"], "page_size": 20},
            "parameters": [
                {"name": "min_parallax", "field": "parallax", "widget": "slider", "op": "gte"},
                {"name": "survey", "field": "survey"},
            ],
        },
    }
