"""Synthetic NYC-taxi-like trips for the heatmap benchmark (perf/dashboards/taxi*.yaml).

    python perf/generate_taxi.py --rows 200000 --out data/taxi-200k.parquet

One month (January 2015) of yellow-cab-like trips, sorted by pickup time, written in
row groups of --row-group rows with a seeded RNG (memory stays at a few hundred MB
whatever --rows is; the same arguments write the same file). Columns:

    pickup_datetime, dropoff_datetime   timestamp[us] (UTC, no zone)
    pickup_longitude, pickup_latitude   float64 degrees
    dropoff_longitude, dropoff_latitude float64 degrees (null for 1 % of trips)
    trip_distance                       float32 miles (null for 0.5 %)
    fare_amount, tip_amount             float32 dollars (fare null for 0.3 %)
    passenger_count                     int8
    payment_type                        string: card, cash, no charge, dispute

Realistic shapes, not real data: pickups and dropoffs come from a mixture of dense
hotspots (Midtown, Penn Station, the Village, the Upper East and West Sides, downtown,
Williamsburg, JFK, LaGuardia) elongated along Manhattan's grid, over a broad background;
a third of dropoffs are near their pickup; 1.5 % of pickups sit at (0, 0) as broken
GPS does in the real data. Pickup times follow a daily profile (quiet at 4-5 am, peaks
at the morning rush and 6-10 pm, busier on weekends after midnight). Distances are the
straight line times a detour factor, with a long tail (a few trips over 50 miles, some
of 0 miles); fares are the 2015 tariff (2.50 + 2.50 per mile + 0.50 per slow minute,
a 52 dollar JFK flat fare) with noise; tips mostly on card payments.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
MONTH_START = np.datetime64("2015-01-01T00:00:00", "us")
DAYS = 31
MINUTES = DAYS * 24 * 60
MILES_PER_DEG_LAT = 69.0
MILES_PER_DEG_LON = 52.4  # at 40.75 N
GRID = math.radians(29.0)  # Manhattan's avenues run 29 degrees east of true north

# name: (longitude, latitude, sd along the avenues, sd across them (degrees), weight)
HOTSPOTS = {
    "midtown": (-73.982, 40.757, 0.012, 0.005, 0.26),
    "penn": (-73.9925, 40.7506, 0.0015, 0.0015, 0.05),
    "village": (-74.000, 40.733, 0.010, 0.006, 0.14),
    "upper_east": (-73.957, 40.773, 0.012, 0.004, 0.12),
    "upper_west": (-73.977, 40.787, 0.012, 0.004, 0.08),
    "downtown": (-74.009, 40.711, 0.006, 0.005, 0.07),
    "williamsburg": (-73.957, 40.714, 0.010, 0.010, 0.04),
    "jfk": (-73.782, 40.645, 0.004, 0.004, 0.03),
    "lga": (-73.872, 40.774, 0.003, 0.002, 0.03),
    "background": (-73.950, 40.740, 0.060, 0.060, 0.18),
}
# relative pickups per hour of day, 0h to 23h
HOURLY = np.array([5.5, 4.0, 3.0, 2.2, 1.6, 1.4, 2.6, 4.6, 5.8, 5.8, 5.4, 5.4,
                   5.7, 5.6, 5.8, 5.6, 5.0, 6.0, 7.2, 7.5, 6.9, 6.7, 6.6, 6.1])
SPEED_MPH = np.array([18, 19, 20, 21, 22, 21, 16, 12, 10, 10, 11, 11,
                      11, 11, 11, 11, 11, 11, 11, 12, 13, 14, 15, 16], float)
PAYMENTS = np.array(["card", "cash", "no charge", "dispute"])


def minute_cdf() -> np.ndarray:
    """Cumulative share of the month's pickups up to each minute: the daily profile,
    with weekend nights busier and weekend mornings quieter."""
    minutes = np.arange(MINUTES)
    hour = (minutes // 60) % 24
    weekday = (minutes // (24 * 60) + 3) % 7  # 2015-01-01 was a Thursday (Mon = 0)
    weight = HOURLY[hour].copy()
    weekend = weekday >= 5
    weight[weekend & (hour < 5)] *= 1.8
    weight[weekend & (hour >= 6) & (hour < 11)] *= 0.6
    cdf = np.cumsum(weight)
    return cdf / cdf[-1]


def locations(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(longitude, latitude, hotspot index) of n points from the hotspot mixture."""
    spots = list(HOTSPOTS.values())
    weights = np.array([s[4] for s in spots])
    which = rng.choice(len(spots), size=n, p=weights / weights.sum())
    lon0, lat0, along, across = (np.array([s[i] for s in spots])[which] for i in range(4))
    a = rng.standard_normal(n) * along  # along the avenues (north-north-east)
    c = rng.standard_normal(n) * across
    dlat = a * math.cos(GRID) - c * math.sin(GRID)
    dlon = (a * math.sin(GRID) + c * math.cos(GRID)) * MILES_PER_DEG_LAT / MILES_PER_DEG_LON
    return lon0 + dlon, lat0 + dlat, which


def trips(rng: np.random.Generator, u: np.ndarray, cdf: np.ndarray) -> pa.Table:
    """One row group: a trip per sorted uniform in `u` (its place in the month)."""
    n = len(u)
    minute = np.searchsorted(cdf, u, side="right").clip(0, MINUTES - 1)
    pickup_us = np.sort(minute * 60_000_000 + rng.integers(0, 60_000_000, n))  # minutes stay put
    hour = (minute // 60) % 24
    plon, plat, pspot = locations(rng, n)
    dlon, dlat, dspot = locations(rng, n)
    near = rng.random(n) < 0.35  # short hops near the pickup
    radius = rng.lognormal(math.log(0.012), 0.7, n)
    angle = rng.uniform(0, 2 * math.pi, n)
    dlon = np.where(near, plon + radius * np.cos(angle) * 1.3, dlon)
    dlat = np.where(near, plat + radius * np.sin(angle), dlat)
    dspot = np.where(near, -1, dspot)
    straight = np.hypot((dlon - plon) * MILES_PER_DEG_LON, (dlat - plat) * MILES_PER_DEG_LAT)
    distance = straight * rng.uniform(1.15, 1.45, n) + rng.exponential(0.15, n)
    distance = np.where(rng.random(n) < 0.004, 0.0, distance)  # cancelled / same place
    long_tail = rng.random(n) < 0.0005
    distance = np.where(long_tail, rng.uniform(30, 120, n), distance)
    speed = SPEED_MPH[hour] * rng.lognormal(0, 0.25, n)
    minutes = distance / speed * 60 + rng.uniform(1, 4, n)
    dropoff_us = pickup_us + (minutes * 60e6).astype(np.int64)
    jfk = list(HOTSPOTS).index("jfk")
    fare = 2.5 + 2.5 * distance + 0.5 * np.maximum(minutes - distance / 12 * 60, 0)
    fare = np.where((pspot == jfk) | (dspot == jfk), 52.0, fare)
    fare = np.round((fare + rng.normal(0, 0.4, n)) * 2) / 2
    fare = np.where(rng.random(n) < 0.001, -fare, fare)  # refunds
    payment = rng.choice(4, size=n, p=[0.62, 0.36, 0.015, 0.005])
    tip = np.where(payment == 0, np.round(np.maximum(fare, 0) * rng.choice([0.0, 0.15, 0.2, 0.25, 0.3], n,
                                                             p=[0.1, 0.2, 0.4, 0.2, 0.1]), 2), 0.0)
    broken = rng.random(n) < 0.015  # GPS zeros
    plon, plat = np.where(broken, 0.0, plon), np.where(broken, 0.0, plat)
    no_drop = rng.random(n) < 0.01
    passengers = rng.choice([1, 2, 3, 4, 5, 6], size=n, p=[0.70, 0.14, 0.04, 0.02, 0.06, 0.04])
    return pa.table({
        "pickup_datetime": pa.array(MONTH_START + pickup_us.astype("timedelta64[us]")),
        "dropoff_datetime": pa.array(MONTH_START + dropoff_us.astype("timedelta64[us]")),
        "pickup_longitude": pa.array(plon, pa.float64()),
        "pickup_latitude": pa.array(plat, pa.float64()),
        "dropoff_longitude": pa.array(dlon, pa.float64(), mask=no_drop),
        "dropoff_latitude": pa.array(dlat, pa.float64(), mask=no_drop),
        "trip_distance": pa.array(distance.astype(np.float32), pa.float32(),
                                  mask=rng.random(n) < 0.005),
        "fare_amount": pa.array(fare.astype(np.float32), pa.float32(), mask=rng.random(n) < 0.003),
        "tip_amount": pa.array(tip.astype(np.float32), pa.float32()),
        "passenger_count": pa.array(passengers.astype(np.int8), pa.int8()),
        "payment_type": pa.array(PAYMENTS[payment]),
    })


def generate(out: Path, rows: int, seed: int, row_group: int) -> None:
    """Write `rows` trips to `out` in row groups, printing progress."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    cdf = minute_cdf()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".partial")
    groups = max(1, math.ceil(rows / row_group))
    print(f"writing {rows:,} trips in {groups} row group(s) to {out}")
    writer = None
    written = 0
    try:
        for g in range(groups):
            n = min(row_group, rows - written)
            # the month is cut into `groups` consecutive slices: trips stay sorted by time
            u = np.sort(rng.uniform(g / groups, (g + 1) / groups, n))
            chunk = trips(rng, u, cdf)
            if writer is None:
                writer = pq.ParquetWriter(tmp, chunk.schema, compression="snappy")
            writer.write_table(chunk, row_group_size=row_group)
            written += n
            print(f"  {written:>12,} / {rows:,} rows  {time.perf_counter() - t0:6.1f} s", flush=True)
    finally:
        if writer is not None:
            writer.close()
    tmp.replace(out)
    meta = pq.ParquetFile(out).metadata
    print(f"done: {meta.num_rows:,} rows in {meta.num_row_groups} row groups, "
          f"{out.stat().st_size / 1e6:,.1f} MB, {time.perf_counter() - t0:.1f} s")


def short(rows: int) -> str:
    """200000 -> 200k, 3000000 -> 3m (file names)."""
    for unit, size in (("m", 1_000_000), ("k", 1_000)):
        if rows % size == 0:
            return f"{rows // size}{unit}"
    return str(rows)


def main() -> None:
    """Parse arguments and generate."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=3_000_000, help="trips to write")
    ap.add_argument("--out", type=Path, default=None, help="default data/taxi-<rows>.parquet")
    ap.add_argument("--seed", type=int, default=20150101)
    ap.add_argument("--row-group", type=int, default=1_000_000, help="rows per row group")
    args = ap.parse_args()
    if args.rows < 1:
        ap.error("--rows must be at least 1")
    out = args.out or ROOT / "data" / f"taxi-{short(args.rows)}.parquet"
    generate(out, args.rows, args.seed, args.row_group)


if __name__ == "__main__":
    main()
