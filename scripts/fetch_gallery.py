"""Fetch the gallery's data (dashboards/gallery/) from the vega-datasets npm package and
write each table as Parquet in data/gallery/ (never committed).

    .venv/bin/python scripts/fetch_gallery.py [--out data/gallery]

`npm pack` fetches the package (17 MB) from the npm registry, as scripts/fetch-data.sh
does for flights; nothing is fetched when every table is there. Each table is the file
vega-datasets ships, every row as it is, with snake_case column names and typed columns
(TABLES below): dates as timestamps (UTC midnight, in milliseconds), amounts of money as
float64 dollars, counts as integers; missing values stay null. Its data errors stay too
(22 movies released in 1937-1946 are dated 2037-2046, two-digit years read wrongly):
the dashboards say how they handle them.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pv
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
VERSION = os.environ.get("VEGA_DATASETS_VERSION", "3.2.1")
DAY = pa.timestamp("ms")  # a date: UTC midnight, in epoch milliseconds

# table: (file in the package's data/, {column as shipped: (column, type)}); dates are
# parsed with the format after the type
TABLES: dict[str, tuple[str, dict[str, tuple]]] = {
    "seattle-weather": ("seattle-weather.csv", {
        "date": ("date", DAY, "%Y-%m-%d"),
        "precipitation": ("precipitation", pa.float64()),  # mm
        "temp_max": ("temp_max", pa.float64()),  # degrees C
        "temp_min": ("temp_min", pa.float64()),
        "wind": ("wind", pa.float64()),  # m/s
        "weather": ("weather", pa.string()),
    }),
    "movies": ("movies.json", {
        "Title": ("title", pa.string()),
        "US Gross": ("us_gross", pa.float64()),  # US$
        "Worldwide Gross": ("worldwide_gross", pa.float64()),
        "US DVD Sales": ("us_dvd_sales", pa.float64()),
        "Production Budget": ("production_budget", pa.float64()),
        "Release Date": ("release_date", DAY, "%b %d %Y"),
        "MPAA Rating": ("mpaa_rating", pa.string()),
        "Running Time min": ("running_time_min", pa.int64()),
        "Distributor": ("distributor", pa.string()),
        "Source": ("source", pa.string()),
        "Major Genre": ("major_genre", pa.string()),
        "Creative Type": ("creative_type", pa.string()),
        "Director": ("director", pa.string()),
        "Rotten Tomatoes Rating": ("rotten_tomatoes_rating", pa.int64()),  # 0-100
        "IMDB Rating": ("imdb_rating", pa.float64()),  # 1-10
        "IMDB Votes": ("imdb_votes", pa.int64()),
    }),
    "cars": ("cars.json", {
        "Name": ("name", pa.string()),
        "Miles_per_Gallon": ("miles_per_gallon", pa.float64()),
        "Cylinders": ("cylinders", pa.int64()),
        "Displacement": ("displacement", pa.float64()),  # cubic inches
        "Horsepower": ("horsepower", pa.float64()),
        "Weight_in_lbs": ("weight_in_lbs", pa.float64()),
        "Acceleration": ("acceleration", pa.float64()),  # seconds from 0 to 60 mph
        "Year": ("year", DAY, "%Y-%m-%d"),
        "Origin": ("origin", pa.string()),
    }),
    "gapminder": ("gapminder.json", {
        "year": ("year", pa.int64()),
        "country": ("country", pa.string()),
        "cluster": ("cluster", pa.int64()),  # region, 0 to 5 (dashboards/gallery/gapminder.yaml)
        "pop": ("pop", pa.int64()),
        "life_expect": ("life_expect", pa.float64()),  # years
        "fertility": ("fertility", pa.float64()),  # births per woman
    }),
    "airports": ("airports.csv", {
        "iata": ("iata", pa.string()),
        "name": ("name", pa.string()),
        "city": ("city", pa.string()),
        "state": ("state", pa.string()),
        "country": ("country", pa.string()),
        "latitude": ("latitude", pa.float64()),
        "longitude": ("longitude", pa.float64()),
    }),
}


def schema(table: str) -> pa.Schema:
    """The Parquet schema of a gallery table."""
    return pa.schema([(spec[0], spec[1]) for spec in TABLES[table][1].values()])


def convert(table: str, raw: bytes) -> pa.Table:
    """A table as vega-datasets ships it (CSV, or JSON: an array of objects) -> typed, with
    snake_case names; every row kept, in order."""
    file, columns = TABLES[table]
    if file.endswith(".csv"):
        shipped = pv.read_csv(io.BytesIO(raw), convert_options=pv.ConvertOptions(
            column_types={c: pa.string() for c in columns}, strings_can_be_null=True))
        rows = shipped.to_pylist()
    else:
        rows = json.loads(raw)
    unknown = {k for row in rows for k in row} - set(columns)
    if unknown:  # a new version of the package: say so instead of dropping them
        msg = f"{file}: columns {sorted(unknown)} are not in scripts/fetch_gallery.py's TABLES"
        raise SystemExit(msg)
    out = {}
    for shipped_name, (name, type_, *fmt) in columns.items():
        values = [row.get(shipped_name) for row in rows]
        values = [None if v in ("", None) else v for v in values]
        out[name] = _column(values, type_, fmt[0] if fmt else None)
    return pa.table(out, schema=schema(table))


def _column(values: list, type_: pa.DataType, fmt: str | None) -> pa.Array:
    if fmt is not None:  # dates: parsed as UTC midnight
        text = pa.array([None if v is None else str(v) for v in values], pa.string())
        return pc.strptime(text, format=fmt, unit="ms").cast(type_)
    if pa.types.is_string(type_):
        return pa.array([None if v is None else str(v) for v in values], type_)
    if pa.types.is_integer(type_):
        return pa.array([None if v is None else _whole(v) for v in values], type_)
    return pa.array([None if v is None else float(v) for v in values], type_)


def _whole(v) -> int:
    x = float(v)
    if not x.is_integer():
        msg = f"{v!r} is not a whole number"
        raise ValueError(msg)
    return int(x)


def fetch(out: Path, npm_pack: Callable[[Path], Path] | None = None) -> list[Path]:
    """Write every gallery table missing from `out`; returns the tables' paths."""
    paths = [out / f"{t}.parquet" for t in TABLES]
    if all(p.is_file() and p.stat().st_size for p in paths):
        return paths
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        package = (npm_pack or _npm_pack)(Path(tmp))
        with tarfile.open(package) as tar:
            for table, path in zip(TABLES, paths, strict=True):
                member = tar.extractfile(f"package/data/{TABLES[table][0]}")
                assert member is not None, TABLES[table][0]
                t = convert(table, member.read())
                partial = path.with_suffix(".parquet.partial")
                pq.write_table(t, partial)
                partial.replace(path)
                print(f"wrote {path} ({t.num_rows:,} rows)", file=sys.stderr)
    return paths


def _npm_pack(into: Path) -> Path:
    print(f"fetching vega-datasets@{VERSION} from the npm registry", file=sys.stderr)
    subprocess.run(["npm", "pack", "--silent", f"vega-datasets@{VERSION}"], cwd=into, check=True,
                   stdout=subprocess.DEVNULL)
    (package,) = [p for p in into.iterdir() if re.fullmatch(r"vega-datasets-.*\.tgz", p.name)]
    return package


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "data" / "gallery")
    fetch(ap.parse_args().out)


if __name__ == "__main__":
    main()
