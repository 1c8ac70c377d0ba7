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

MODELS = [c for c in vars(m).values()  # every model of a spec's part (Join and Workload were left out)
          if isinstance(c, type) and issubclass(c, m.Model) and c is not m.Model]


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
    from brushfire import requests

    doc = (ROOT / "docs" / "protocol.md").read_text()
    for name, model in requests.TYPES.items():
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


# --- docs/architecture.md: its map and its recipes stay true ---------------------------------

ARCH = (ROOT / "docs" / "architecture.md").read_text()
PACKAGE = ROOT / "backend" / "brushfire"
ROOTS = ("backend", "frontend", "docs", "tests", "schema", "perf")


def _recipe(title: str) -> str:
    return ARCH.split(f"### {title}\n", 1)[1].split("\n### ", 1)[0]


def _files(text: str) -> set[str]:
    """Repository paths named in `text` (in backticks), `<type>` once per view type and
    `<engine>` once per baseline engine."""
    from brushfire.baselines import ENGINES
    from brushfire.views import VIEW_TYPES

    each = {"<type>": list(VIEW_TYPES), "<engine>": [e for e in ENGINES if e != "brushfire"]}
    out = set()
    for p in re.findall(rf"`((?:{'|'.join(ROOTS)})/[^`\s]+)`", text):
        holes = [h for h in each if h in p]
        out |= {p.replace(holes[0], x) for x in each[holes[0]]} if holes else {p}
    return out


def _modules_naming(words: set[str]) -> set[str]:
    """Backend modules with a string constant among `words` (as repository paths)."""
    import ast

    out = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        if any(isinstance(n, ast.Constant) and n.value in words for n in ast.walk(tree)):
            out.add(str(path.relative_to(ROOT)))
    return out


def test_every_file_the_architecture_page_names_exists():
    short = re.findall(r"`((?:[a-z_]+/)*[a-z_]+(?:\.py|/))`", ARCH)  # under backend/brushfire
    named = _files(ARCH) | {f"backend/brushfire/{p}" for p in short if p.split("/")[0] not in ROOTS}
    assert named and sorted(p for p in named if not (ROOT / p).exists()) == []


def test_the_architecture_page_names_every_engine_module():
    engine = PACKAGE / "engine"
    modules = [p.relative_to(PACKAGE).as_posix() for p in engine.rglob("*.py") if p.name != "__init__.py"]
    assert len(modules) > 20
    assert [m for m in sorted(modules) if f"`{m}`" not in ARCH] == []


def test_the_view_type_recipe_lists_every_module_that_names_a_type():
    """A module that spells a view type's name (a test of its type outside the registry)
    is a file the next view type may need: it belongs in the recipe. ("temporal" is also
    a kind of value, so left out.)"""
    listed = _files(_recipe("Add a view type"))
    assert sorted(_modules_naming({"histogram", "categorical", "heatmap"}) - listed) == []


def test_the_aggregate_recipe_lists_every_module_that_names_an_op():
    """Ops are spelled out in the registry only (names as markers: "median" and
    "quantile" mean nothing else in the code); the recipe lists it."""
    listed = _files(_recipe("Add an aggregate"))
    registry = "backend/brushfire/spec/aggregates.py"
    assert sorted(_modules_naming({"median", "quantile"})) == [registry]
    assert registry in listed


def test_every_aggregate_op_is_in_the_spec_doc():
    from brushfire.spec.aggregates import OPS

    section = SPEC_DOC.split("aggregate", 1)[1]
    assert [op for op in OPS if f"`{op}`" not in section] == []


def test_the_baseline_recipe_lists_every_module_that_names_one():
    listed = _files(_recipe("Add a baseline"))
    assert sorted(_modules_naming({"preagg"}) - listed) == []  # ("lazy" and "duckdb" name more)


def test_every_message_class_is_dispatched():
    """The message recipe's `MESSAGES`: a Message subclass left out of it is never parsed;
    its request's runner in `RUNS`: a request left out of it is never run."""
    from brushfire import protocol, requests

    assert set(requests.Message.__subclasses__()) == set(requests.MESSAGES)
    assert set(requests.Request.__subclasses__()) == set(protocol.RUNS)


@pytest.mark.parametrize("spec", sorted((ROOT / "dashboards").glob("*.yaml")), ids=lambda p: p.name)
def test_make_demo_fetches_the_data_a_shipped_dashboard_reads(spec):
    """README: `make demo SPEC=dashboards/flights-airports.yaml` serves it; make fetched
    only the flights, so a new user's first run failed on the missing data/airports.csv.
    Every file of data/ a shipped dashboard reads is fetched first (make -n: the plan)."""
    import subprocess

    wanted = set(re.findall(r"\.\./(data/[\w.-]+)", spec.read_text()))
    plan = subprocess.run(["make", "-n", "-B", "demo", f"SPEC=dashboards/{spec.name}"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout
    fetched = set(re.findall(r"scripts/fetch-data\.sh (data/\S+)", plan))
    assert wanted <= fetched, plan


def test_the_protocol_doc_quotes_the_session_free_errors_as_sent():
    """docs/protocol.md's error table quoted the unknown-type error from before `dimension`
    and `dimension_forward`; errors a message gets before any session is asked are
    checked against the reply itself (its `id` too: null, the message having none)."""
    from brushfire import protocol

    doc = " ".join((ROOT / "docs" / "protocol.md").read_text().split())
    reply = protocol.handle(None, '{"type": "Brush", "view": "hx", "interval": [1, 2]}')
    assert f"`{reply['message']}`" in doc
    assert reply["id"] is None and "| `error` | `message`, `id` (the message's; null when" in doc


def test_every_environment_variable_the_code_reads_is_documented(capsys):
    """`brushfire --help` listed every BRUSHFIRE_* variable but BRUSHFIRE_CUBE_MEMORY; each
    one the backend names is in the help's environment list and in README.md or docs/
    (BRUSHFIRE_PROCESSES aside: `serve --workers` sets it for its workers)."""
    names = {n for p in PACKAGE.rglob("*.py") for n in re.findall(r"\bBRUSHFIRE_[A-Z_]+\b", p.read_text())}
    names -= {"BRUSHFIRE_PROCESSES"}
    with pytest.raises(SystemExit):
        main(["--help"])
    environment = capsys.readouterr().out.split("environment:", 1)[1]
    docs = README + "".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    assert len(names) >= 9
    assert sorted(n for n in names if f"  {n} " not in environment) == []
    assert sorted(n for n in names if f"`{n}" not in docs) == []


def test_every_flag_the_docs_give_a_command_exists(capsys):
    """A `--flag` written after `brushfire <command>` on one line of README.md or docs/ is
    one of that command's options (its --help)."""
    docs = [README, *((ROOT / "docs").glob("*.md"))]
    lines = [line for d in docs for line in (d if isinstance(d, str) else d.read_text()).splitlines()]
    options: dict[str, set[str]] = {}
    wrong = []
    for line in lines:
        for found in re.finditer(r"brushfire (validate|plan|capture|serve|demo|profile|schema|bench)\b", line):
            command = found[1]
            if command not in options:
                with pytest.raises(SystemExit):
                    main([command, "--help"])
                options[command] = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", capsys.readouterr().out))
            rest = line[found.end():]
            rest = rest[:re.search(r"brushfire \w+|$", rest).start()]  # up to the next command
            wrong += [(command, f) for f in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", rest)
                      if f not in options[command]]
    assert len(options) >= 8
    assert wrong == []


def test_every_file_the_docs_name_exists():
    """docs/deploy.md named `brushfire.capture.shards`, a module that is not there; every
    repository path (`tests/...`, `perf/...`, `capture/scan.py` under the package) and
    `brushfire.<module>` in README.md and docs/ exists (build outputs aside)."""
    built = ("frontend/dist", "perf/results/")
    roots = (*ROOTS, "scripts", "dashboards", "examples")
    missing = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text()
        paths = set(re.findall(rf"(?<![\w/.-])((?:{'|'.join(roots)})/[\w./-]*\w)", text))
        paths = {p for p in paths if "." in p.rsplit("/", 1)[-1] or (ROOT / p).is_dir()}
        short = set(re.findall(r"(?<![\w/.-])((?:[a-z_]+/)+[a-z_0-9]+\.py)\b", text)) - paths
        missing += [p for p in paths if not p.startswith(built) and not (ROOT / p).exists()]
        missing += [p for p in short if p.split("/")[0] not in roots
                    and not (PACKAGE / p).exists() and not (ROOT / "backend" / p).exists()]
        missing += [n for n in set(re.findall(r"`(brushfire(?:\.\w+)+)`", text)) if not _resolves(n)]
    assert sorted(missing) == []


def _resolves(dotted: str) -> bool:
    """`brushfire.a.b.c`: the longest importable module, and the rest its attributes."""
    import importlib

    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def test_the_protocol_doc_gives_the_limits_the_code_has():
    """docs/protocol.md's "Limits" and "Close codes" tables: each value as the code
    sets it (the session limits: `brushfire serve`'s defaults)."""
    from brushfire import limits, wire
    from brushfire.cli import main as cli
    from brushfire.server import app

    doc = " ".join((ROOT / "docs" / "protocol.md").read_text().split())

    def row(start: str) -> str:
        return doc.split(f"| {start}", 1)[1].split(" | ", 2)[1]

    def serve_default(flag: str) -> int:
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
            cli(["serve", "--help"])
        return int(re.search(rf"{flag} N\s+.*?\(default (\d+)\)", out.getvalue(), re.S)[1])

    assert row("message size") == f"{wire.MAX_MESSAGE_BYTES // 1024} KiB ({wire.MAX_MESSAGE_BYTES:,})"
    assert row("WebSocket frame") == f"{app.MAX_FRAME_BYTES >> 20} MiB"
    assert row("JSON nesting") == f"{wire.MAX_JSON_DEPTH} levels"
    assert row("details page size") == f"{limits.MAX_PAGE_ROWS:,} rows"
    assert row("rids of one") == f"{limits.MAX_FORWARD_RIDS:,}"
    assert row("sessions at once, in all") == str(serve_default("--max-sessions"))
    assert row("sessions at once per client") == str(serve_default("--max-sessions-per-client"))
    assert row("messages read ahead") == str(app.MAX_PENDING)
    for code in (app.CLOSE_TOO_BIG, app.CLOSE_CAPTURE_FAILED, app.CLOSE_UNKNOWN_DASHBOARD,
                 app.CLOSE_TOO_MANY_SESSIONS):
        assert f"| {code} |" in doc
