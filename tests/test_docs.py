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
          m.Parameter, m.Interactions, m.Profile, m.FunctionalDependency]


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
