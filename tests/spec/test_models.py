"""Tests for brushfire.spec.models: round trips of every shipped dashboard, small model rules."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from brushfire.spec import models as m
from brushfire.spec.loader import load_dashboard, parse_dashboard

DASHBOARDS = sorted([*(Path(__file__).parents[2] / "dashboards").glob("*.yaml"),
                     *(Path(__file__).parents[2] / "dashboards" / "gallery").glob("*.yaml")])


def test_there_are_dashboards() -> None:
    assert DASHBOARDS, "no dashboards/*.yaml found"


@pytest.mark.parametrize("path", DASHBOARDS, ids=[p.stem for p in DASHBOARDS])
def test_round_trip(path: Path) -> None:
    dash = load_dashboard(path)
    dumped = dash.model_dump(mode="json")
    again = parse_dashboard(dumped)
    assert again == dash
    assert again.model_dump(mode="json") == dumped


@pytest.mark.parametrize(("step", "extent", "count"), [
    (10, (-60, 180), 24),
    (1, (0, 24), 24),
    (100, (0, 3000), 30),
    (7, (0, 10), 2),   # a partial last bin still counts
    (0.1, (0, 1), 10),  # no extra bin from float error
    (50, (0, 10), 1),
])
def test_bin_count(step: float, extent: tuple[float, float], count: int) -> None:
    assert m.Bin(step=step, extent=extent).count == count


@pytest.mark.parametrize(("view", "brush"), [
    ({"type": "histogram", "field": "x", "bin": {"step": 1, "extent": [0, 1]}}, "interval"),
    ({"type": "temporal", "field": "t"}, "interval"),
    ({"type": "categorical", "field": "c"}, "points"),
    ({"type": "heatmap", "x": {"field": "x", "bin": {"step": 1, "extent": [0, 1]}},
      "y": {"field": "y", "bin": {"step": 1, "extent": [0, 1]}}}, "rect"),
    ({"type": "categorical", "field": "c", "brush": "none"}, "none"),
])
def test_default_brush(view: dict, brush: str) -> None:
    spec = {"name": "d", "source": {"path": "x.parquet"}, "views": [{"name": "v", **view}]}
    assert m.brush_of(parse_dashboard(spec).views[0]) == brush


def test_models_are_frozen() -> None:
    dash = load_dashboard(DASHBOARDS[0])
    with pytest.raises(pydantic.ValidationError):
        dash.name = "other"  # type: ignore[misc]


def test_a_csv_is_read_with_a_header_and_typed_columns_unless_its_options_say_otherwise():
    assert m.Source(path="a.csv").reader_options == {"header": "true", "inferSchema": "true", "escape": '"'}
    assert m.Source(path="a.csv", options={"HEADER": "false", "sep": ";"}).reader_options == {
        "inferSchema": "true", "escape": '"', "HEADER": "false", "sep": ";"}  # Spark's names are case-insensitive
    assert m.Source(path="t/", format="csv", options={"inferschema": "false", "Escape": "\\"}).reader_options == {
        "header": "true", "inferschema": "false", "Escape": "\\"}
    assert m.Source(path="a.parquet", options={"mergeSchema": "true"}).reader_options == {"mergeSchema": "true"}
    assert m.Join(name="d", path="d.csv", key="k", on="k").reader_options["header"] == "true"
