"""Small awkward test data, importable from any test (`from rows import make_rows`): a test
must not import `conftest`, whose module-level setup (the run's own lineage cache) would
run a second time under --import-mode=importlib."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa


def make_rows(n: int, seed: int) -> pa.Table:
    """Awkward small data: nulls, NaN, values outside every extent, many categories,
    repeated values (ties at brush edges), timestamps over a few months."""
    rng = np.random.default_rng(seed)
    x = rng.normal(50, 30, n).round(1)
    x[rng.random(n) < 0.03] = np.nan
    x_null = rng.random(n) < 0.03
    k = rng.integers(-20, 120, n)
    k_null = rng.random(n) < 0.02
    cats = np.array([f"c{i:02d}" for i in range(30)])
    cat = cats[np.minimum(rng.zipf(1.6, n) - 1, 29)]
    cat_null = rng.random(n) < 0.02
    dest = np.array(["AAA", "BBB", "CCC", "DDD", "EEE"])[rng.integers(0, 5, n)]
    t0 = datetime(2021, 1, 1)
    minutes = rng.integers(0, 60 * 24 * 120, n)
    t = [t0 + timedelta(minutes=int(mm)) for mm in minutes]
    t_null = rng.random(n) < 0.02
    m = rng.integers(-50, 300, n).astype(float)
    m_null = rng.random(n) < 0.05
    return pa.table({
        "x": pa.array(x, mask=x_null),
        "k": pa.array(k, mask=k_null),
        "cat": pa.array(cat, mask=cat_null),
        "dest": pa.array(dest),
        "t": pa.array(t, type=pa.timestamp("us"), mask=t_null),
        "m": pa.array(m, mask=m_null),
    })
