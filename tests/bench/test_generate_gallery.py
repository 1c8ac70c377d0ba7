"""perf/generate_gallery.py: seeded and streamed, the gallery's schema, and noise that keeps
each table's shape without copying its rows (from the tests' samples: no network)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml

from gallery import GALLERY, fetch_gallery, write_sample

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("generate_gallery", ROOT / "perf" / "generate_gallery.py")
generate_gallery = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate_gallery)


def _generate(table: str, tmp_path: Path, rows: int, seed: int = 5):
    source = write_sample(table, tmp_path, n=1461 if table == "seattle-weather" else 800)
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    generate_gallery.generate(table, source, a, rows, seed, row_group=7_000)
    generate_gallery.generate(table, source, b, rows, seed, row_group=7_000)
    out = pq.read_table(a)
    assert out.equals(pq.read_table(b)) and out.num_rows == rows  # seeded, exact
    assert pq.ParquetFile(a).metadata.num_row_groups >= 2  # streamed
    return pq.read_table(source), out


def test_movies_are_like_the_source_films_not_copies(tmp_path):
    src, out = _generate("movies", tmp_path, 20_000)
    assert out.schema == fetch_gallery().schema("movies")
    budget, gross = (out[c].to_numpy(zero_copy_only=False) for c in ("production_budget", "worldwide_gross"))
    both = (budget > 0) & (gross > 0)
    assert np.corrcoef(np.log(budget[both]), np.log(gross[both]))[0, 1] > 0.5  # still correlated
    assert len(np.unique(budget[~np.isnan(budget)])) > 0.9 * np.isfinite(budget).sum()  # not copies
    assert budget[~np.isnan(budget)].max() <= 1.25 * pc.max(src["production_budget"]).as_py()
    released = out["release_date"].drop_null()
    assert len(pc.unique(released)) > 0.99 * len(released)  # instants to the millisecond
    assert (pc.millisecond(released).to_numpy() > 0).mean() > 0.9
    for c in ("rotten_tomatoes_rating", "us_dvd_sales", "major_genre"):  # nulls kept, as shares
        assert out[c].null_count / out.num_rows == pytest.approx(src[c].null_count / src.num_rows, abs=0.03), c
    assert set(pc.unique(out["major_genre"]).to_pylist()) <= set(pc.unique(src["major_genre"]).to_pylist())
    imdb = out["imdb_rating"].drop_null().to_numpy()
    assert imdb.min() >= 1 and imdb.max() <= 10 and np.allclose(imdb * 10, np.round(imdb * 10))


def test_weather_is_a_network_of_stations_reporting_every_day(tmp_path):
    src, out = _generate("seattle-weather", tmp_path, 14_610)  # 10 stations a day
    assert out.schema.names == [*fetch_gallery().schema("seattle-weather").names, "station"]
    assert out.schema.field("date").type == src.schema.field("date").type
    day = pc.floor_temporal(out["date"], unit="day")
    per_day = pc.value_counts(day).field("counts").to_numpy()
    assert len(per_day) == src.num_rows and set(per_day) == {10}
    assert len(pc.unique(out["station"])) == 10
    assert (np.diff(day.cast("int64").to_numpy()) >= 0).all()  # the days in order
    high, low = out["temp_max"].to_numpy(), out["temp_min"].to_numpy()
    assert (low <= high - 0.5 + 1e-9).all()
    city = dict(zip(src["date"].to_pylist(), src["temp_max"].to_numpy(), strict=True))
    offsets = high - np.array([city[d] for d in day.to_pylist()])
    assert 0.5 < offsets.std() < 3  # the station's offset and the day's noise
    rain = out["precipitation"].to_numpy()
    dry = src["precipitation"].to_numpy() == 0
    assert (rain == 0).mean() == pytest.approx(0.96 * dry.mean(), abs=0.03)  # traces on 4 %
    assert set(pc.unique(out["weather"]).to_pylist()) <= {"sun", "rain", "drizzle", "fog", "snow"}


@pytest.mark.parametrize("scale", ["3m", "30m"])
@pytest.mark.parametrize("table", ["movies", "seattle-weather"])
def test_the_benchmark_copies_keep_the_gallerys_views(table, scale):
    """perf/dashboards/<table>-<scale>.yaml: the gallery's dashboard over the upsampled
    table (perf/generate_gallery.py), with the same columns, views and interactions."""
    gallery = yaml.safe_load((GALLERY / f"{table}.yaml").read_text())
    copy = yaml.safe_load((ROOT / "perf" / "dashboards" / f"{table}-{scale}.yaml").read_text())
    assert copy["source"]["path"] == f"../../data/gallery/{table}-{scale}.parquet"
    assert copy["name"] == f"{gallery['name']}_{scale}"
    for key in ("views", "interactions"):
        assert copy[key] == gallery[key], key
    assert copy["source"].get("columns") == gallery["source"].get("columns")
