"""The command line: validate, plan and demo, run in-process."""

from __future__ import annotations

import pytest

from brushfire.cli import main

GOOD = "dashboards/flights.yaml"


def test_validate_checks_columns_against_the_source(small_parquet, tmp_path, capsys):
    spec = tmp_path / "d.yaml"
    spec.write_text(f"name: v\nsource: {{path: {small_parquet}}}\nviews:\n"
                    "  - {name: a, type: categorical, field: cat}\n"
                    "  - {name: b, type: categorical, field: nope}\n")
    assert main(["validate", str(spec)]) == 1
    assert f"{spec}:5: views[1].field: column 'nope' is not in the source" in capsys.readouterr().err
    spec.write_text(spec.read_text().replace("nope", "dest"))
    assert main(["validate", str(spec)]) == 0
    assert f"{spec}: ok" in capsys.readouterr().out


def test_validate_reports_file_line_and_key(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nsource: {path: a.parquet}\nviews:\n  - name: v\n    type: histogram\n"
                   "    field: f\n    bin: {step: 0, extent: [0, 1]}\n")
    assert main(["validate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:7: views[0].bin.step: bin step must be a number > 0, got 0" in err


def test_plan_explains_what_is_captured_and_why(capsys):
    assert main(["plan", GOOD]) == 0
    out = capsys.readouterr().out
    assert "capture plan for dashboard 'flights'" in out
    assert "backward index: pruned — brush 'none'" in out
    assert "parameter destination: rows of each block grouped by destination" in out


@pytest.mark.spark
def test_demo_plays_scripted_interactions(spark, small_parquet, tmp_path, capsys):
    spec = tmp_path / "d.yaml"
    spec.write_text(f"""
name: demo_test
source: {{path: {small_parquet}}}
views:
  - {{name: hx, type: histogram, field: x, bin: {{step: 10, extent: [0, 100]}}}}
  - {{name: cat, type: categorical, field: cat, top: 3}}
interactions:
  crossfilter: [{{views: [hx, cat]}}]
  details: {{columns: [x, cat]}}
""")
    assert main(["demo", str(spec), "--cache-dir", str(tmp_path / "cache")]) == 0
    out = capsys.readouterr().out
    assert "> brush hx [20, 50]" in out and "> select cat" in out and "details on demand" in out


def test_capture_reports_the_mode_and_why(spark, small_parquet, tmp_path, capsys):
    spec = tmp_path / "d.yaml"
    spec.write_text(f"""
name: budget_test
source: {{path: {small_parquet}}}
views:
  - {{name: hx, type: histogram, field: x, bin: {{step: 10, extent: [0, 100]}}}}
  - {{name: cat, type: categorical, field: cat, top: 3}}
interactions:
  crossfilter: [{{views: [hx, cat]}}]
""")
    cache = str(tmp_path / "cache")
    assert main(["capture", str(spec), "--cache-dir", cache, "--memory-budget", "20KB"]) == 0
    out = capsys.readouterr().out
    assert "mode: cubes only, computed on Spark: per-row lineage would take" in out
    assert "over the memory budget of 20.0 KiB" in out and "cube hx->cat" in out
    assert main(["capture", str(spec), "--cache-dir", cache, "--no-baseline",
                 "--memory-budget", "1GB"]) == 0
    assert "mode: per-row lineage (per-row lineage ≈" in capsys.readouterr().out
