"""The gallery (dashboards/gallery/): its data script converts what vega-datasets ships,
every dashboard validates (on a generated sample with the data's schema, and on the real
data when it was fetched), and the README links each one. tests/browser/test_gallery_page.py
captures and opens them; tests/bench/test_generate_gallery.py checks their copies at scale."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from brushfire.cli import main
from gallery import (
    ROOT,
    SPECS,
    fetch_gallery,
    make_sample,
    sample_spec,
    table_of,
    write_sample,
)

fg = fetch_gallery()
README = (ROOT / "README.md").read_text()

# the first rows of each file as vega-datasets 3.2.1 ships it (with a null of each kind)
SHIPPED = {
    "seattle-weather": b"date,precipitation,temp_max,temp_min,wind,weather\n"
                       b"2012-01-01,0.0,12.8,5.0,4.7,drizzle\n2012-01-02,10.9,10.6,2.8,4.5,rain\n",
    "movies": json.dumps([
        {"Title": "The Land Girls", "US Gross": 146083, "Worldwide Gross": 146083, "US DVD Sales": None,
         "Production Budget": 8000000, "Release Date": "Jun 12 1998", "MPAA Rating": "R",
         "Running Time min": None, "Distributor": "Gramercy", "Source": None, "Major Genre": None,
         "Creative Type": None, "Director": None, "Rotten Tomatoes Rating": None, "IMDB Rating": 6.1,
         "IMDB Votes": 1071},
        {"Title": 1776, "US Gross": 0, "Worldwide Gross": 0, "US DVD Sales": 618454,
         "Production Budget": 4000000, "Release Date": "Nov 09 2040", "MPAA Rating": None,
         "Running Time min": 141, "Distributor": None, "Source": "Remake", "Major Genre": "Musical",
         "Creative Type": "Historical Fiction", "Director": "Peter H. Hunt",
         "Rotten Tomatoes Rating": 67, "IMDB Rating": 7, "IMDB Votes": 4789}]).encode(),
    "cars": json.dumps([
        {"Name": "chevrolet chevelle malibu", "Miles_per_Gallon": 18, "Cylinders": 8,
         "Displacement": 307, "Horsepower": 130, "Weight_in_lbs": 3504, "Acceleration": 12,
         "Year": "1970-01-01", "Origin": "USA"},
        {"Name": "ford pinto", "Miles_per_Gallon": 25, "Cylinders": 4, "Displacement": 98,
         "Horsepower": None, "Weight_in_lbs": 2046, "Acceleration": 19, "Year": "1971-01-01",
         "Origin": "USA"}]).encode(),
    "gapminder": json.dumps([{"year": 1955, "country": "Afghanistan", "cluster": 0, "pop": 7971931,
                              "life_expect": 43.88, "fertility": 7.42}]).encode(),
    "airports": b"iata,name,city,state,country,latitude,longitude\n"
                b"00M,Thigpen,Bay Springs,MS,USA,31.95376472,-89.23450472\n"
                b"ROR,Babelthoup/Koror,,,Palau,7.367222,134.5443889\n",
}


def test_the_gallery_has_five_dashboards_one_per_table():
    assert [table_of(s) for s in SPECS] == sorted(fg.TABLES) and len(SPECS) == 5


def test_fetch_gallery_types_what_vega_datasets_ships_keeping_every_row():
    movies = fg.convert("movies", SHIPPED["movies"])
    assert movies.schema == fg.schema("movies")
    first, second = movies.to_pylist()
    assert first["production_budget"] == 8e6 and first["release_date"].isoformat() == "1998-06-12T00:00:00"
    assert first["us_dvd_sales"] is None and first["director"] is None and first["imdb_rating"] == 6.1
    assert second["title"] == "1776" and second["release_date"].year == 2040  # as shipped
    assert second["imdb_rating"] == 7.0 and second["rotten_tomatoes_rating"] == 67
    weather = fg.convert("seattle-weather", SHIPPED["seattle-weather"])
    assert weather.to_pylist()[1] == {"date": weather["date"][1].as_py(), "precipitation": 10.9,
                                      "temp_max": 10.6, "temp_min": 2.8, "wind": 4.5, "weather": "rain"}
    assert weather["date"].type == pa.timestamp("ms")
    airports = fg.convert("airports", SHIPPED["airports"])
    assert airports.to_pylist()[1]["city"] is None and airports["latitude"][1].as_py() == 7.367222
    cars = fg.convert("cars", SHIPPED["cars"])
    assert cars["horsepower"].to_pylist() == [130.0, None] and cars["cylinders"].type == pa.int64()
    assert fg.convert("gapminder", SHIPPED["gapminder"]).schema == fg.schema("gapminder")


def test_fetch_gallery_refuses_a_column_it_does_not_know():
    shipped = json.loads(SHIPPED["cars"])
    shipped[0]["Price"] = 1
    with pytest.raises(SystemExit, match=r"cars.json: columns \['Price'\] are not in"):
        fg.convert("cars", json.dumps(shipped).encode())


def test_fetch_gallery_writes_every_table_once(tmp_path):
    packed = []

    def npm_pack(into: Path) -> Path:  # the package's layout, with the rows above
        packed.append(into)
        tgz = into / "vega-datasets-3.2.1.tgz"
        with tarfile.open(tgz, "w:gz") as tar:
            for table, (file, _) in fg.TABLES.items():
                info = tarfile.TarInfo(f"package/data/{file}")
                info.size = len(SHIPPED[table])
                tar.addfile(info, io.BytesIO(SHIPPED[table]))
        return tgz

    paths = fg.fetch(tmp_path / "gallery", npm_pack)
    assert [p.name for p in paths] == [f"{t}.parquet" for t in fg.TABLES] and len(packed) == 1
    assert fg.fetch(tmp_path / "gallery", npm_pack) == paths and len(packed) == 1  # all there
    assert not list((tmp_path / "gallery").glob("*.partial"))


@pytest.mark.parametrize("table", sorted(fg.TABLES))
def test_the_tests_samples_have_the_datas_schema(table):
    assert make_sample(table, 200, seed=1).schema == fg.schema(table)


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_every_gallery_dashboard_validates_on_a_sample(spec, tmp_path, capsys):
    data = write_sample(table_of(spec), tmp_path)
    copy = tmp_path / spec.name
    copy.write_text(yaml.safe_dump(sample_spec(spec, data), sort_keys=False))
    assert main(["validate", str(copy)]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out == f"{copy}: ok\n"


@pytest.mark.skipif(not (ROOT / "data" / "gallery").is_dir(),
                    reason="no data/gallery (scripts/fetch_gallery.py fetches it)")
def test_the_gallery_validates_on_the_real_data(capsys):
    assert main(["validate", *map(str, SPECS)]) == 0, capsys.readouterr().err


def test_the_readme_links_every_gallery_dashboard():
    for spec in SPECS:
        assert f"](dashboards/gallery/{spec.name})" in README, spec.name
    assert "scripts/fetch_gallery.py" in README
