"""The JSON Schema of specs (brushfire/spec/schema.py): the repository's copy is current,
every shipped dashboard names it and satisfies it, and it refuses what the models refuse."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from brushfire.cli import main
from brushfire.spec.schema import SCHEMA_FILE, schema_text

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / SCHEMA_FILE
DASHBOARDS = sorted([*ROOT.glob("dashboards/*.yaml"), *ROOT.glob("dashboards/gallery/*.yaml"),
                     *ROOT.glob("perf/dashboards/*.yaml")])
HEADER = re.compile(r"^# yaml-language-server: \$schema=(\S+)$", re.MULTILINE)


def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))


def test_the_repository_keeps_the_generated_schema():
    assert SCHEMA.read_text() == schema_text(), "run: brushfire schema -o schema/dashboard.schema.json"


def test_brushfire_schema_prints_it(capsys, tmp_path):
    assert main(["schema"]) == 0
    assert capsys.readouterr().out == schema_text()
    assert main(["schema", "-o", str(tmp_path / "s.json")]) == 0
    assert (tmp_path / "s.json").read_text() == schema_text()


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_dashboard_names_the_schema_and_satisfies_it(path):
    text = path.read_text()
    m = HEADER.search(text.split("\n", 1)[0])
    assert m, f"{path.name}: the first line must be '# yaml-language-server: $schema=...'"
    assert (path.parent / m.group(1)).resolve() == SCHEMA.resolve()
    from brushfire.spec.yamlread import read_yaml

    # read as the loader and YAML's language server read it: a key `on:` is the string 'on'
    errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
              for e in validator().iter_errors(read_yaml(text, str(path))[1])]
    assert not errors, errors


BASE = {"name": "d", "source": {"path": "x.parquet"},
        "views": [{"name": "a", "type": "histogram", "field": "x", "bin": {"step": 1, "extent": [0, 1]}}]}


@pytest.mark.parametrize(("change", "ok"), [
    ({}, True),
    ({"profile": {"fd": [["a"], ["b"]]}}, True),
    ({"profile": {"fd": [[["a"], ["b"]], {"lhs": ["c", "d"], "rhs": ["e"], "name": "fd_c"}]}}, True),
    ({"profile": {"fd": [{"lhs": ["a"]}]}}, False),  # rhs missing
    ({"titel": "x"}, False),  # unknown key
    ({"views": [{"name": "a", "type": "histogram", "field": "x", "bin": {"step": 1, "extent": [0]}}]}, False),
    ({"views": [{"name": "a", "type": "pie", "field": "x"}]}, False),
    ({"interactions": {"parameters": [{"name": "p", "field": "f", "default": "LAX"}]}}, True),
    ({"title": 1984, "layout": [{"title": True, "rows": [["a"]]}]}, True),  # (as written: spec/yamlread.py)
    ({"name": 1984}, False),
], ids=str)
def test_the_schema_takes_and_refuses_specs(change, ok):
    assert validator().is_valid({**BASE, **change}) is ok
