"""Notebooks in a real kernel (nbclient, no browser): the example runs top to bottom on
small data, and Brushfire's errors show as their message, not as a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "flights.ipynb"


def run(nb, env: dict[str, str], cwd: Path, allow_errors: bool = False):
    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=allow_errors,
                            resources={"metadata": {"path": str(cwd)}})
    client.execute(env=env)
    return nb


def test_the_example_notebook_is_committed_without_outputs():
    nb = nbformat.read(EXAMPLE, as_version=4)
    assert [c for c in nb.cells if c.cell_type == "code" and (c.outputs or c.execution_count)] == []


def test_the_example_notebook_runs_top_to_bottom(kernel_env):
    nb = run(nbformat.read(EXAMPLE, as_version=4), kernel_env, EXAMPLE.parent)
    code = [c for c in nb.cells if c.cell_type == "code"]
    outputs = [[o for o in c.outputs if o.output_type != "stream"] for c in code]
    shown = outputs[0][0]["data"]
    assert "application/vnd.jupyter.widget-view+json" in shown  # the widget, displayed
    assert "engine in this kernel" in shown["text/plain"]
    filters = outputs[1][0]["data"]["text/plain"]
    assert filters == "{'delay': {'interval': [-20, 40]}, 'origin': {'values': ['ORD', 'ATL']}}"
    head = outputs[2][0]["data"]["text/html"]
    assert all(c in head for c in ("rid", "date", "delay", "distance", "origin", "destination"))
    assert outputs[3][0]["data"]["text/plain"] == \
        "{'hour': {'interval': [6, 9]}, 'destination': {'parameter': 'LAX'}}"
    total, ten = json.loads(outputs[4][0]["data"]["text/plain"].replace("(", "[").replace(")", "]"))
    assert total > 10 and ten == 10
    assert outputs[5][0]["data"]["text/plain"] == "True"  # the rows exported


def test_errors_show_as_their_message(tmp_path, kernel_env):
    (tmp_path / "bad.yaml").write_text("name: bad\nsource: {path: x.parquet}\nviews:\n"
                                       "  - name: a\n    type: histogram\n    field: x\n"
                                       "    bin: {step: 1, extent: [0, 9]}\n    colour: red\n")
    (tmp_path / "broken.parquet").write_text("not parquet")
    (tmp_path / "broken.yaml").write_text("name: broken\nsource: {path: broken.parquet}\nviews:\n"
                                          "  - {name: a, type: histogram, field: x, bin: {step: 1, extent: [0, 9]}}\n")
    nb = new_notebook(cells=[new_code_cell("import brushfire\nbrushfire.widget('bad.yaml')"),
                             new_code_cell("brushfire.widget('broken.yaml')")],
                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    nb = run(nb, kernel_env, tmp_path, allow_errors=True)
    want = ["SpecError: bad.yaml:8: views[0].colour: unknown key 'colour'",
            "SpecError: broken.yaml:2: source.path: 'broken.parquet'"]
    for cell, start in zip(nb.cells, want, strict=True):
        (error,) = [o for o in cell.outputs if o.output_type == "error"]
        text = "\n".join(error.traceback).replace("\x1b[0;31m", "").replace("\x1b[0m", "")
        assert text.startswith(start), text
        assert "Traceback" not in text and "File " not in text and len(error.traceback) == 1
