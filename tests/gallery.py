"""The gallery (dashboards/gallery/) over small generated samples, for tests that must not
need the network: each sample has the schema scripts/fetch_gallery.py writes (checked),
values in the ranges of the real table, nulls where it has them, and its quirks (movies
dated a century late)."""

from __future__ import annotations

import importlib.util
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

ROOT = Path(__file__).resolve().parents[1]
GALLERY = ROOT / "dashboards" / "gallery"
SPECS = sorted(GALLERY.glob("*.yaml"))


def fetch_gallery():
    """scripts/fetch_gallery.py as a module."""
    spec = importlib.util.spec_from_file_location("fetch_gallery", ROOT / "scripts" / "fetch_gallery.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table_of(spec_path: Path) -> str:
    """The gallery table a spec reads (its source file's stem)."""
    return Path(yaml.safe_load(spec_path.read_text())["source"]["path"]).stem


def sample_spec(spec_path: Path, data: Path) -> dict:
    """The spec as a dict, reading `data` instead of the real table."""
    spec = yaml.safe_load(spec_path.read_text())
    spec["source"]["path"] = str(data)
    return spec


def write_sample(table: str, folder: Path, n: int = 1500, seed: int = 3) -> Path:
    path = folder / f"{table}.parquet"
    pq.write_table(make_sample(table, n, seed), path, row_group_size=max(100, n // 3))
    return path


def make_sample(table: str, n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    columns = SAMPLES[table](rng, n)
    return pa.table(columns, schema=fetch_gallery().schema(table))


def _with_nulls(rng, values, share: float) -> pa.Array:
    values = np.asarray(values)
    return pa.array(values, mask=rng.random(len(values)) < share)


def _days(start: datetime, offsets) -> pa.Array:
    return pa.array([start + timedelta(days=int(d)) for d in offsets], pa.timestamp("ms"))


def _weather(rng, n: int) -> dict:
    day = np.arange(n) % 1461
    season = np.cos(2 * np.pi * (day - 200) / 365.25)
    high = np.round(16 + 9 * season + rng.normal(0, 3.5, n), 1)
    low = np.round(high - rng.uniform(3, 12, n), 1)
    wet = rng.random(n) < 0.45
    rain = np.where(wet, np.round(rng.exponential(6, n), 1), 0.0)
    kind = np.where(wet, np.where(high < 3, "snow", np.where(rain < 1, "drizzle", "rain")),
                    np.where(rng.random(n) < 0.13, "fog", "sun"))
    return {"date": _days(datetime(2012, 1, 1), day), "precipitation": rain, "temp_max": high,
            "temp_min": low, "wind": np.round(rng.gamma(4, 0.8, n), 1), "weather": kind}


def _movies(rng, n: int) -> dict:
    budget = np.clip(np.round(rng.lognormal(16.8, 1.1, n), -3), 218, 3e8)
    worldwide = np.round(budget * rng.lognormal(0.3, 1.2, n))
    us = np.round(worldwide * rng.uniform(0.3, 1.0, n))
    released = rng.integers(0, 83 * 365, n)  # 1928 to 2010
    late = rng.random(n) < 0.01  # as in the data: two-digit years read as 20xx
    released = np.where(late & (released < 19 * 365), released + 36525, released)
    genres = ["Drama", "Comedy", "Action", "Adventure", "Thriller/Suspense", "Horror",
              "Romantic Comedy", "Musical", "Documentary", "Western", "Black Comedy"]
    ratings = ["R", "PG-13", "PG", "Not Rated", "G", "NC-17"]
    imdb = np.clip(np.round(rng.normal(6.3, 1.2, n), 1), 1.4, 9.2)
    return {
        "title": [f"Film {i}" for i in range(n)], "us_gross": _with_nulls(rng, us, 0.002),
        "worldwide_gross": _with_nulls(rng, worldwide, 0.002),
        "us_dvd_sales": _with_nulls(rng, np.round(us * 0.3), 0.8),
        "production_budget": _with_nulls(rng, budget, 0.001),
        "release_date": _with_nulls(rng, np.array(_days(datetime(1928, 1, 1), released)
                                                  .to_numpy(zero_copy_only=False)), 0.005),
        "mpaa_rating": _with_nulls(rng, rng.choice(ratings, n, p=[.38, .28, .15, .1, .07, .02]), 0.2),
        "running_time_min": _with_nulls(rng, rng.integers(46, 223, n), 0.6),
        "distributor": _with_nulls(rng, rng.choice([f"Studio {i}" for i in range(40)], n), 0.07),
        "source": _with_nulls(rng, rng.choice(["Original Screenplay", "Based on Book/Short Story",
                                               "Remake"], n), 0.1),
        "major_genre": _with_nulls(rng, rng.choice(genres, n), 0.09),
        "creative_type": _with_nulls(rng, rng.choice(["Contemporary Fiction", "Fantasy"], n), 0.14),
        "director": _with_nulls(rng, rng.choice([f"Director {i}" for i in range(300)], n), 0.5),
        "rotten_tomatoes_rating": _with_nulls(rng, rng.integers(1, 101, n), 0.27),
        "imdb_rating": _with_nulls(rng, imdb, 0.07),
        "imdb_votes": _with_nulls(rng, rng.integers(18, 520_000, n), 0.07),
    }


def _cars(rng, n: int) -> dict:
    cylinders = rng.choice([4, 6, 8, 3, 5], n, p=[.51, .21, .26, .01, .01])
    hp = np.clip(np.round(25 + 18 * cylinders + rng.normal(0, 18, n)), 46, 230)
    weight = np.clip(np.round(1000 + 12 * hp + rng.normal(0, 300, n)), 1613, 5140)
    mpg = np.clip(np.round(52 - 0.16 * hp + rng.normal(0, 3, n), 1), 9, 46.6)
    return {
        "name": [f"car {i}" for i in range(n)], "miles_per_gallon": _with_nulls(rng, mpg, 0.02),
        "cylinders": cylinders, "displacement": np.round(cylinders * rng.uniform(17, 57, n)),
        "horsepower": _with_nulls(rng, hp, 0.015), "weight_in_lbs": weight,
        "acceleration": np.clip(np.round(24 - hp / 15 + rng.normal(0, 1.5, n), 1), 8, 24.8),
        "year": pa.array([datetime(int(y), 1, 1) for y in rng.integers(1970, 1983, n)],
                         pa.timestamp("ms")),
        "origin": rng.choice(["USA", "Japan", "Europe"], n, p=[.63, .19, .18]),
    }


def _gapminder(rng, n: int) -> dict:
    countries = max(1, n // 11)
    years = np.tile(np.arange(1955, 2010, 5), countries)
    country = np.repeat([f"Country {i:02d}" for i in range(countries)], 11)
    cluster = np.repeat(rng.integers(0, 6, countries), 11)
    progress = (years - 1955) / 50
    start = np.repeat(rng.uniform(28, 68, countries), 11)
    life = np.round(np.clip(start + (82 - start) * progress * rng.uniform(0.3, 0.9, len(years)), 27.8, 82.5), 2)
    fertility = np.round(np.clip(np.repeat(rng.uniform(2, 8, countries), 11) * (1 - 0.6 * progress)
                                 + rng.normal(0, 0.3, len(years)), 0.96, 8.23), 2)
    pop = np.round(np.repeat(10 ** rng.uniform(4.9, 9.1, countries), 11) * (1 + progress)).astype(np.int64)
    return {"year": years, "country": country, "cluster": cluster, "pop": pop, "life_expect": life,
            "fertility": fertility}


def _airports(rng, n: int) -> dict:
    states = np.array(["AK", "TX", "CA", "OK", "FL", "OH", "NY", "GA", "MI", "MN", "IL", "WI",
                       "KS", "IA", "AR", "MO", "NE", "PA", "NC", "WA", "LA", "CO", "HI", "PR"])
    weight = 1 / np.arange(1, len(states) + 1)
    state = rng.choice(states, n, p=weight / weight.sum())
    lat = np.where(state == "AK", rng.uniform(54, 71.3, n), rng.uniform(24, 49, n))
    lon = np.where(state == "AK", rng.uniform(-176.6, -130, n), rng.uniform(-124, -67, n))
    abroad = rng.random(n) < 0.002  # Guam, Palau, ...: outside the map
    return {
        "iata": [f"{i:03X}" for i in range(n)], "name": [f"Airport {i}" for i in range(n)],
        "city": _with_nulls(rng, [f"City {i % 900}" for i in range(n)], 0.005),
        "state": _with_nulls(rng, state, 0.005),
        "country": np.where(abroad, "Palau", "USA"),
        "latitude": np.where(abroad, 7.4, np.round(lat, 6)),
        "longitude": np.where(abroad, 134.5, np.round(lon, 6)),
    }


SAMPLES = {"seattle-weather": _weather, "movies": _movies, "cars": _cars, "gapminder": _gapminder,
           "airports": _airports}
