"""Upsample two gallery tables for capture and engine benchmarks: the movies and Seattle's
weather at millions of rows, with believable noise, not copies.

    python perf/generate_gallery.py --table movies --rows 3000000            # data/gallery/movies-3m.parquet
    python perf/generate_gallery.py --table seattle-weather --rows 30000000  # ...-30m.parquet

The source is data/gallery/<table>.parquet (scripts/fetch_gallery.py); the output has
its columns and types (the weather one more, `station`), so perf/dashboards/<table>-3m.yaml
and -30m.yaml are the gallery's dashboards over it. Both are full of high-cardinality
floats and instants, which is what they are for:

movies: each row is a film like a source film picked at random. Its money (production
budget, US and worldwide gross, DVD sales; float64 dollars, whole) is the source film's
times one log-normal factor of the film (sd 0.35: a bigger or smaller production) and one
of each amount (sd 0.25), so budgets and grosses stay correlated, at most 1.25 times the
source's largest; its release is within a
year of the source film's, at a random millisecond (timestamp[ms]: epoch milliseconds,
nearly one distinct value per row); its IMDB rating moves by about 0.3 (0.1 steps, 1 to
10), its Rotten Tomatoes rating by about 5 (0 to 100), its votes by a log-normal factor,
its running time by about 6 minutes; its genre, MPAA rating, distributor, director,
source, creative type and title are the source film's, and so are its nulls (a film
without a Rotten Tomatoes rating stays without). Rows are in random order, as the source's.

seattle-weather: a network of stations around Seattle, each reporting once a day at a
random millisecond of the day (rows / 1,461 stations a day, the source's days in order).
A station's high and low are the city's that day plus the station's own offset (sd 1.5 and
1.2 degrees: height, coast) plus the day's noise (sd 0.8), in 0.1 degrees, the low at least
0.5 below the high; its precipitation is the city's times the station's wetness (sd 0.3,
log-normal) and the day's (sd 0.4), at most 2.5 times the city's plus 2 mm, with a trace
(0.1-0.5 mm) on 4 % of dry readings; its wind the city's times the station's exposure (sd
0.2) and the day's noise (sd 0.15), at most twice the city's plus 1 m/s; its weather the city's,
with rain below 1 mm called drizzle (and drizzle from 1 mm rain), and 5 % of sunny
readings foggy.

Streams row groups of --row-group rows with a seeded RNG (the same arguments write the
same file); memory stays at a few hundred MB whatever --rows is.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
DAY_MS = 86_400_000
YEAR_MS = 365 * DAY_MS


def short(rows: int) -> str:
    """3000000 -> '3m', 200000 -> '200k' (file names)."""
    for div, unit in ((1_000_000, "m"), (1_000, "k")):
        if rows % div == 0:
            return f"{rows // div}{unit}"
    return str(rows)


def _np(col: pa.ChunkedArray | pa.Array, dtype=np.float64) -> np.ndarray:
    """A column as numpy, nulls as NaN (numbers) or NaT-like min (timestamps: int64)."""
    if pa.types.is_timestamp(col.type):
        return pc.fill_null(col.cast(pa.int64()), 0).to_numpy().astype(np.int64)
    return pc.fill_null(col.cast(pa.float64()), np.nan).to_numpy().astype(dtype)


def _masked(values: np.ndarray, valid: np.ndarray, type_: pa.DataType) -> pa.Array:
    return pa.array(values, type=type_, mask=~valid)


def movies_chunk(src: pa.Table, n: int, rng: np.random.Generator) -> pa.Table:
    picks = rng.integers(0, src.num_rows, n)
    part = src.take(pa.array(picks))
    film = rng.lognormal(0, 0.35, n)
    out = {}
    for name in ("production_budget", "us_gross", "worldwide_gross", "us_dvd_sales"):
        col = part[name]
        top = 1.25 * pc.max(src[name]).as_py()  # no film far beyond the biggest of the source
        x = np.minimum(_np(col) * film * rng.lognormal(0, 0.25, n), top)
        out[name] = _masked(np.round(x), col.is_valid().to_numpy(zero_copy_only=False), pa.float64())
    us, world = out["us_gross"].to_numpy(zero_copy_only=False), out["worldwide_gross"].to_numpy(zero_copy_only=False)
    both = np.isfinite(us) & np.isfinite(world)
    world = np.where(both, np.maximum(world, us), world)  # a film grosses at least its US gross
    out["worldwide_gross"] = _masked(np.nan_to_num(world), part["worldwide_gross"].is_valid()
                                     .to_numpy(zero_copy_only=False), pa.float64())
    release = part["release_date"]
    ms = _np(release) + rng.integers(-YEAR_MS, YEAR_MS + 1, n)
    out["release_date"] = _masked(ms, release.is_valid().to_numpy(zero_copy_only=False),
                                  pa.int64()).cast(pa.timestamp("ms"))
    imdb = np.clip(np.round(_np(part["imdb_rating"]) + rng.normal(0, 0.3, n), 1), 1, 10)
    out["imdb_rating"] = _masked(np.nan_to_num(imdb), part["imdb_rating"].is_valid()
                                 .to_numpy(zero_copy_only=False), pa.float64())
    for name, change, lo, hi in (("rotten_tomatoes_rating", lambda x: x + rng.normal(0, 5, n), 0, 100),
                                 ("running_time_min", lambda x: x + rng.normal(0, 6, n), 40, 300),
                                 ("imdb_votes", lambda x: x * rng.lognormal(0, 0.5, n), 5, 5e6)):
        x = np.clip(np.round(change(_np(part[name]))), lo, hi)
        out[name] = _masked(np.nan_to_num(x).astype(np.int64),
                            part[name].is_valid().to_numpy(zero_copy_only=False), pa.int64())
    columns = {name: out.get(name, part[name]) for name in src.column_names}
    return pa.table(columns, schema=src.schema)


WEATHER_SCHEMA_EXTRA = ("station", pa.string())


def weather_chunk(src: pa.Table, day0: int, counts: np.ndarray, stations: dict,
                  rng: np.random.Generator) -> pa.Table:
    """The readings of the source's days day0, day0 + 1, ..., counts[i] of day day0 + i."""
    n_st = len(stations["high"])
    day = np.repeat(np.arange(day0, day0 + len(counts)), counts)
    station = np.concatenate([rng.permutation(n_st)[:c] for c in counts])
    n = len(day)
    date = _np(src["date"])[day] + rng.integers(0, DAY_MS, n)
    high = _np(src["temp_max"])[day] + stations["high"][station] + rng.normal(0, 0.8, n)
    low = _np(src["temp_min"])[day] + stations["low"][station] + rng.normal(0, 0.8, n)
    high = np.round(high, 1)
    low = np.round(np.minimum(low, high - 0.5), 1)
    city = _np(src["precipitation"])[day]
    wet = city * stations["wet"][station] * rng.lognormal(0, 0.4, n)
    wet = np.round(np.minimum(wet, 2.5 * city + 2), 1)  # a downpour, not a flood of the tail
    trace = np.round(rng.uniform(0.1, 0.5, n), 1) * (rng.random(n) < 0.04)
    rain = np.where(city > 0, np.maximum(wet, 0.1), trace)
    gusts = _np(src["wind"])[day]
    wind = np.round(np.minimum(gusts * stations["wind"][station] * rng.lognormal(0, 0.15, n),
                               2 * gusts + 1), 1)
    weather = np.asarray(src["weather"].to_numpy(zero_copy_only=False), dtype=object)[day]
    wettish = (weather == "rain") | (weather == "drizzle")
    weather = np.where(wettish, np.where(rain >= 1, "rain", "drizzle"), weather)
    weather = np.where((weather == "sun") & (rng.random(n) < 0.05), "fog", weather)
    return pa.table({
        "date": pa.array(date, pa.int64()).cast(pa.timestamp("ms")),
        "precipitation": rain, "temp_max": high, "temp_min": low, "wind": np.maximum(wind, 0.0),
        "weather": pa.array(weather.astype(str), pa.string()),
        "station": pa.array(stations["names"][station], pa.string()),
    })


def generate(table: str, source: Path, out: Path, rows: int, seed: int, row_group: int) -> None:
    """Write `rows` upsampled rows of the gallery `table` to `out`, printing progress."""
    t0 = time.perf_counter()
    src = pq.read_table(source).combine_chunks()
    rng = np.random.default_rng(seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".partial")
    print(f"source {source}: {src.num_rows:,} rows; writing {rows:,} rows to {out}")
    if table == "movies":
        sizes = [min(row_group, rows - i) for i in range(0, rows, row_group)]
        chunks = (movies_chunk(src, size, rng) for size in sizes)
    elif table == "seattle-weather":
        n_days = src.num_rows
        per_day = rows / n_days
        n_st = math.ceil(per_day)
        stations = {"high": rng.normal(0, 1.5, n_st), "low": rng.normal(0, 1.2, n_st),
                    "wet": rng.lognormal(0, 0.3, n_st), "wind": rng.lognormal(0, 0.2, n_st),
                    "names": np.array([f"SEA-{i:05d}" for i in range(n_st)], dtype=object)}
        days = np.arange(n_days + 1)
        counts = np.diff(np.round(days * per_day).astype(np.int64))
        step = max(1, int(row_group // per_day))
        chunks = (weather_chunk(src, d, counts[d:d + step], stations, rng)
                  for d in range(0, n_days, step))
    else:
        msg = f"no generator for {table!r}: movies or seattle-weather"
        raise SystemExit(msg)
    written = 0
    writer = None
    try:
        for chunk in chunks:
            if writer is None:
                writer = pq.ParquetWriter(tmp, chunk.schema, compression="snappy")
            writer.write_table(chunk, row_group_size=row_group)
            written += chunk.num_rows
            print(f"  {written:>12,} / {rows:,} rows  ({100 * written / rows:5.1f}%)  "
                  f"{time.perf_counter() - t0:6.1f} s", flush=True)
    finally:
        if writer is not None:
            writer.close()
    tmp.replace(out)
    meta = pq.ParquetFile(out).metadata
    print(f"done: {meta.num_rows:,} rows in {meta.num_row_groups} row groups, "
          f"{out.stat().st_size / 1e6:,.0f} MB, {time.perf_counter() - t0:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", choices=["movies", "seattle-weather"], required=True)
    ap.add_argument("--rows", type=int, default=3_000_000, help="rows to write")
    ap.add_argument("--out", type=Path, default=None,
                    help="default data/gallery/<table>-<rows: 3m, 30m>.parquet")
    ap.add_argument("--source", type=Path, default=None, help="default data/gallery/<table>.parquet")
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--row-group", type=int, default=1_000_000, help="rows per row group")
    args = ap.parse_args()
    gallery = ROOT / "data" / "gallery"
    generate(args.table, args.source or gallery / f"{args.table}.parquet",
             args.out or gallery / f"{args.table}-{short(args.rows)}.parquet", args.rows, args.seed,
             args.row_group)


if __name__ == "__main__":
    main()
