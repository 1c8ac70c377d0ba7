"""A JSON source as people have them: one array of objects (as vega-datasets' tables and
most exports are), on one line an object or pretty-printed, read with no reader options.
Spark's JSON reader reads JSON Lines (an object a line) unless `multiLine` is set: an array
file then lost its first and last records (`[{...},` is not an object) or, pretty-printed,
all of them (one `_corrupt_record` column). The loader reads such a file with `multiLine`."""

from __future__ import annotations

import json

import pytest

from brushfire import Dashboard
from brushfire.spec.loader import load_dashboard

ROWS = [{"site": "Waseca", "yield": 27.0, "year": 1931},
        {"site": "Morris", "yield": 48.5, "year": 1931},
        {"site": "Duluth", "yield": 31.0, "year": 1932},
        {"site": "Crookston", "yield": 40.25, "year": 1932}]

SPEC = """\
name: barley
source: {{path: {path}{options}}}
views:
  - {{name: site, type: categorical, field: site}}
  - {{name: yield, type: histogram, field: yield, bin: {{step: 10}}}}
interactions:
  crossfilter:
    - views: [site, yield]
"""


def array_one_object_a_line() -> str:  # vega-datasets' barley.json
    return "[" + ",\n".join(json.dumps(r) for r in ROWS) + "]\n"


def array_pretty_printed() -> str:  # vega-datasets' burtin.json, cars.json
    return "\ufeff\n  " + json.dumps(ROWS, indent=2) + "\n"


def json_lines() -> str:
    return "".join(json.dumps(r) + "\n" for r in ROWS)


def spec_over(tmp_path, name: str, text: str, options: str = "") -> str:
    data = tmp_path / f"{name}.json"
    data.write_text(text, encoding="utf-8")
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(SPEC.format(path=data, options=options))
    return str(spec)


def test_a_json_array_file_is_read_as_one_document(tmp_path) -> None:
    def options(name, text, given=""):
        return load_dashboard(spec_over(tmp_path, name, text, given)).source.reader_options

    assert options("one_a_line", array_one_object_a_line()) == {"multiLine": "true"}
    assert options("pretty", array_pretty_printed()) == {"multiLine": "true"}
    assert options("lines", json_lines()) == {}
    # what the spec says stands (Spark's option names are case-insensitive)
    assert options("kept", array_one_object_a_line(), ", options: {multiline: 'false'}") == {
        "multiline": "false"}
    folder = tmp_path / "parts"
    folder.mkdir()
    (folder / "a.json").write_text(array_one_object_a_line())
    (folder / "b.json").write_text(array_pretty_printed())
    (folder / "_SUCCESS").write_text("")
    spec = tmp_path / "parts.yaml"
    spec.write_text(SPEC.format(path=folder, options=""))
    assert load_dashboard(spec).source.reader_options == {"multiLine": "true"}
    (folder / "c.json").write_text(json_lines())  # a folder of both kinds: left to the spec
    assert load_dashboard(spec).source.reader_options == {}


@pytest.mark.spark
def test_every_record_of_a_json_array_is_a_row(spark, tmp_path) -> None:
    for name, text in [("one_a_line", array_one_object_a_line()), ("pretty", array_pretty_printed()),
                       ("lines", json_lines())]:
        dash = Dashboard.open(spec_over(tmp_path, name, text), spark=spark,
                              cache_dir=tmp_path / "cache")
        s = dash.engine_session()
        v = s.view("site")
        assert dict(zip(v.labels, v.counts, strict=True)) == {
            "Crookston": 1, "Duluth": 1, "Morris": 1, "Waseca": 1, "(other)": 0}, name
        assert not v.caveats, (name, v.caveats)
        s.brush("yield", (40, 50))
        assert s.count_selected() == 2, name


def geojson() -> str:  # vega-datasets' earthquakes.json: one object, a feature a line
    features = [{"type": "Feature", "properties": {"site": r["site"], "yield": r["yield"]}, "id": i}
                for i, r in enumerate(ROWS)]
    return ('{"type": "FeatureCollection", "features": [' + ",\n".join(map(json.dumps, features))
            + '], "bbox": [1, 2]}\n')


def a_broken_line() -> str:
    return json_lines() + '{"site": "Morris", "yield": 12.5, "year": 1932\n'


@pytest.mark.spark
@pytest.mark.parametrize("name, text, says", [
    ("geojson", geojson(), r"Spark reads 1 of its 4 lines as no JSON record: '\{\"type\": "
                           r"\"FeatureCollection\", \"features\": \[.*' in geojson\.json"),
    ("broken", a_broken_line(), r"Spark reads 1 of its 5 lines as no JSON record: '\{\"site\": \"Morris\", "
                                r"\"yield\": 12\.5, \"year\": 1932' in broken\.json"),
    ("pretty", "{\n" + json.dumps(ROWS[0], indent=2)[1:], r"Spark reads its lines as no JSON record"),
])
def test_json_text_spark_reads_as_no_record_is_refused(spark, tmp_path, name, text, says) -> None:
    """Spark's JSON reader keeps a line it cannot read as a record in a `_corrupt_record`
    column and makes the row's columns null: a GeoJSON file (one object, a feature a line)
    lost its first feature, a line cut short its record, and the views counted
    null rows where the data had values, without a word. Capture refuses such a source at
    its path, naming the text; `mode: DROPMALFORMED` leaves such lines out, as asked."""
    from brushfire.errors import SpecError

    spec = spec_over(tmp_path, name, text)
    with pytest.raises(SpecError, match=says) as info:
        Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache")
    assert ":2: source.path: " in str(info.value) and "DROPMALFORMED" in str(info.value), str(info.value)
    if name == "broken":
        dash = Dashboard.open(spec_over(tmp_path, name, text, ", options: {mode: DROPMALFORMED}"),
                              spark=spark, cache_dir=tmp_path / "cache")
        assert dash.engine_session().count_selected() == len(ROWS)
