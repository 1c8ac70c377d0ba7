"""Docs stay honest: every spec key and CLI command appears in the docs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from brushfire.cli import main
from brushfire.spec import models as m

ROOT = Path(__file__).resolve().parents[1]
SPEC_DOC = (ROOT / "docs" / "spec.md").read_text()
README = (ROOT / "README.md").read_text()

MODELS = [m.DashboardSpec, m.Source, m.Bin, m.Aggregate, m.HistogramView, m.TemporalView,
          m.CategoricalView, m.HeatmapView, m.Axis, m.CrossfilterGroup, m.Highlight, m.Details,
          m.Parameter, m.Interactions, m.Profile, m.FunctionalDependency, m.Section]


@pytest.mark.parametrize("key", sorted({k for model in MODELS for k in model.model_fields}))
def test_every_spec_key_is_documented(key):
    assert f"`{key}" in SPEC_DOC, f"docs/spec.md does not mention the key {key!r}"


def test_every_cli_command_is_in_the_readme(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    commands = re.findall(r"^    (\w+) {2,}\S", capsys.readouterr().out, re.M)  # "commands:"
    assert len(commands) >= 8
    for c in commands:
        assert f"brushfire {c}" in README, f"README.md does not show 'brushfire {c}'"


def test_the_widget_doc_covers_its_python_api():
    import inspect

    from brushfire.widget import DashboardWidget, widget

    doc = (ROOT / "docs" / "widget.md").read_text()
    public = [n for n in vars(DashboardWidget) if not n.startswith("_")]
    assert public and all(f".{n}" in doc for n in public), [n for n in public if f".{n}" not in doc]
    params = list(inspect.signature(widget).parameters)
    assert all(f"{p}=" in doc for p in params if p != "spec"), params


def test_every_message_type_is_in_the_protocol_doc():
    from brushfire import protocol

    doc = (ROOT / "docs" / "protocol.md").read_text()
    for name, model in protocol.TYPES.items():
        assert f"| `{name}` |" in doc, f"docs/protocol.md does not list the message {name!r}"
        for field in model.model_fields:
            if field not in ("type", "id"):
                assert f"`{field}" in doc, f"docs/protocol.md does not mention {name}.{field}"


def test_the_readme_quotes_the_measured_first_run():
    """README's first-run wait is a measured one, with the load beside it, as perf/README.md
    records it (perf/first_run.py)."""
    text = " ".join(README.split())
    perf = " ".join((ROOT / "perf" / "README.md").read_text().split())
    first = re.search(r"the dashboard was ready after (\d+) s", text)
    load = re.search(r"load (\d+\.\d) at the start, (\d+\.\d) at the end", text)
    restart = re.search(r"a restart took (\d+) s", text)
    assert first and load and restart and "perf/first_run.py" in text, "README: no measured first run"
    assert f"| first start, until ready | {first[1]} |" in perf
    assert f"load {load[1]} at the start, {load[2]} at the end" in perf
    assert f"| restart from the cache (imports, open, warm-up from numba's cache) | {restart[1]} |" in perf
    assert "about 15 s" not in text
