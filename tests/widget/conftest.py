"""The widget's tests: dashboards/flights.yaml over a small flights-like dataset (the
columns of flights-3m.parquet, 4,000 random rows), captured once on the session's Spark
into a cache that in-process tests, notebook kernels and JupyterLab all load."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from brushfire import Dashboard

ROOT = Path(__file__).resolve().parents[2]
AIRPORTS = ["ORD", "ATL", "DFW", "LAX", "PHX", "DEN", "DTW", "IAH", "MSP", "SFO", "STL", "EWR",
            "LAS", "CLT", "LGA", "BOS", "PHL", "PIT", "SLC", "SEA", "BWI", "MCO", "CVG", "IAD",
            "MDW", "SAN", "TPA", "RDU", "ANC", "SAV"]


def flights_like(n: int, seed: int) -> pa.Table:
    """flights-3m's schema: departure times over January-June 2001, delays with a long
    tail (and some nulls), distances, 30 airports of very different traffic."""
    rng = np.random.default_rng(seed)
    t0 = datetime(2001, 1, 1)
    minutes = rng.integers(0, 181 * 24 * 60, n)
    delay = np.round(rng.gamma(1.5, 20, n) - 25).astype(np.int64)
    airports = np.array(AIRPORTS)
    return pa.table({
        "date": pa.array([t0 + timedelta(minutes=int(x)) for x in minutes], pa.timestamp("us")),
        "delay": pa.array(delay, mask=rng.random(n) < 0.02),
        "distance": pa.array(rng.integers(60, 2900, n)),
        "origin": pa.array(airports[np.minimum(rng.zipf(1.5, n) - 1, len(AIRPORTS) - 1)]),
        "destination": pa.array(airports[rng.integers(0, len(AIRPORTS), n)]),
    })


@pytest.fixture(scope="session")
def flights_spec(tmp_path_factory) -> Path:
    """dashboards/flights.yaml, its source replaced by the small flights-like Parquet."""
    folder = tmp_path_factory.mktemp("flights")
    pq.write_table(flights_like(4000, seed=11), folder / "flights-small.parquet")
    spec = yaml.safe_load((ROOT / "dashboards" / "flights.yaml").read_text())
    spec["source"]["path"] = str(folder / "flights-small.parquet")
    path = folder / "flights-small.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.fixture(scope="session")
def flights_cache(spark, flights_spec, tmp_path_factory) -> Path:
    """A lineage cache holding the small flights dashboard, captured on the test Spark."""
    cache = tmp_path_factory.mktemp("cache")
    Dashboard.open(flights_spec, spark=spark, cache_dir=cache)
    return cache


@pytest.fixture(scope="session")
def flights_dash(flights_spec, flights_cache) -> Dashboard:
    return Dashboard.open(flights_spec, cache_dir=flights_cache)


@pytest.fixture(scope="session")
def kernel_env(flights_spec, flights_cache) -> dict[str, str]:
    """The environment of kernels running the example: the small spec, its captured
    lineage, and small local Spark settings in case a kernel does capture."""
    return {**os.environ, "BRUSHFIRE_EXAMPLE_SPEC": str(flights_spec),
            "BRUSHFIRE_CACHE": str(flights_cache), "BRUSHFIRE_SPARK_MASTER": "local[1]",
            "BRUSHFIRE_DRIVER_MEMORY": "1g"}
