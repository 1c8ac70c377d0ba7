"""perf/generate_taxi.py: seeded, streamed, and shaped like taxi data."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("generate_taxi", ROOT / "perf" / "generate_taxi.py")
generate_taxi = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate_taxi)


def test_taxi_trips_are_seeded_streamed_and_shaped_like_taxi_data(tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    generate_taxi.generate(a, 20_000, seed=5, row_group=6_000)
    generate_taxi.generate(b, 20_000, seed=5, row_group=6_000)
    t = pq.read_table(a)
    assert t.equals(pq.read_table(b)) and pq.ParquetFile(a).metadata.num_row_groups == 4
    types = dict(zip(t.schema.names, t.schema.types, strict=True))
    assert types["pickup_datetime"] == pa.timestamp("us") and types["pickup_latitude"] == pa.float64()
    assert types["trip_distance"] == pa.float32() and types["fare_amount"] == pa.float32()
    assert t.num_rows == 20_000 and t["dropoff_latitude"].null_count > 50
    assert t["trip_distance"].null_count > 20 and t["fare_amount"].null_count > 10
    pickup = t["pickup_datetime"].to_numpy()
    assert (np.diff(pickup.astype(np.int64)) >= 0).all()  # sorted by pickup time
    assert (t["dropoff_datetime"].to_numpy() > pickup).all()
    lon, lat = t["pickup_longitude"].to_numpy(), t["pickup_latitude"].to_numpy()
    inside = (lon >= -74.05) & (lon <= -73.75) & (lat >= 40.6) & (lat <= 40.9)
    assert 0.9 < inside.mean() < 0.99 and ((lon == 0) & (lat == 0)).mean() > 0.005  # GPS zeros
    cells, _, _ = np.histogram2d(lon[inside], lat[inside], bins=100,
                                 range=[[-74.05, -73.75], [40.6, 40.9]])
    assert np.sort(cells.ravel())[-100:].sum() > 0.25 * cells.sum()  # 1 % of cells: a quarter
    dist = t["trip_distance"].to_numpy(zero_copy_only=False)
    dist = dist[~np.isnan(dist)]
    assert 1 < np.median(dist) < 4 and dist.max() > 25  # a long tail


def test_taxi_file_names_are_short():
    assert [generate_taxi.short(n) for n in (200_000, 3_000_000, 1234)] == ["200k", "3m", "1234"]
