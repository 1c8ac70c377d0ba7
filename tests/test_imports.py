"""The import contract (STYLE.md): Brushfire's modules import one another without cycles,
and the engine's modules point down its layers (docs/architecture.md).

Read from the source, not by importing: a module's imports at its top level (not those
inside functions, nor under `if TYPE_CHECKING:`), each also importing the packages above
it (Python runs a package's `__init__` before its submodules).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "backend" / "brushfire"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("brushfire",) + path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    out = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.Try) or (
                isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test)):
            out += [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return out


def _with_parents(name: str, modules: dict[str, Path]) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & set(modules)


def import_graph() -> dict[str, set[str]]:
    """Module -> the Brushfire modules its top level imports."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in _top_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif node.level:  # relative: from the module's package
                base = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
                base = ".".join(base.split(".")[: len(base.split(".")) - node.level + 1])
                mod = f"{base}.{node.module}" if node.module else base
                targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
            else:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for t in targets:
                if t and t.startswith("brushfire"):
                    deps |= _with_parents(t, modules)
        deps.discard(name)
        # a package's own submodules do not import it back
        graph[name] = deps - {p for p in _with_parents(name, modules) if p != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: strongly connected sets of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                out.append(sorted(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_modules_import_without_cycles() -> None:
    assert cycles(import_graph()) == []


def test_the_check_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_heavy_dependencies_stay_behind_their_modules() -> None:
    """altair is imported by brushfire.marks only; pyspark by no module's top level."""
    for name, path in _modules().items():
        for node in _top_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for n in names:
                assert not n.startswith("pyspark"), name
                assert not n.startswith("altair") or name == "brushfire.marks", name


# --- layers -------------------------------------------------------------------------------

# The engine's modules in layers, lowest first: a module imports only from layers below its
# own (docs/architecture.md). The session coordinates; the methods answer; the planner chooses
# among their plans and imports nothing that runs them.
ENGINE_LAYERS: list[set[str]] = [
    {"api", "costs", "kernels", "ordering", "parallel", "state"},
    {"copies", "dimensions", "memory", "stats"},
    {"shared"},  # what a store's sessions share
    {"reads"},  # the kernels on the pool
    {"methods", "methods.base", "methods.cube", "methods.incremental", "methods.recompute",
     "methods.scan"},
    {"methods.conditional", "methods.mixed", "methods.complement"},  # built on the ones above
    {"planner", "builders"},
    {"multi", "queries"},
    {"session"},
]

# The package's layers: each name's top level (its package or module) imports nothing of
# those listed after it.
ABOVE_THE_ENGINE = ("requests", "protocol", "lazy", "lazy_queries", "spark_source", "dashboard", "describe", "export", "server",
                    "widget", "bench", "baselines", "cli")
ABOVE_THE_PROTOCOL = ("server", "widget", "bench", "baselines", "cli")
ABOVE_THE_REQUESTS = ("protocol",) + ABOVE_THE_PROTOCOL  # requests are checked, then run


def upward(graph: dict[str, set[str]], layers: list[set[str]], prefix: str) -> list[str]:
    """The imports among modules `prefix` + a layer's name that do not point to a lower layer,
    and the modules under `prefix` no layer names."""
    rank = {prefix + name: i for i, layer in enumerate(layers) for name in layer}
    out = [f"{m}: in no layer" for m in sorted(graph) if m.startswith(prefix) and m not in rank
           and m != prefix.rstrip(".")]
    for m in sorted(rank):
        for dep in sorted(graph.get(m, ())):
            if dep in rank and rank[dep] >= rank[m]:
                out.append(f"{m} -> {dep}")
    return out


def test_the_engine_imports_point_down_its_layers() -> None:
    assert upward(import_graph(), ENGINE_LAYERS, "brushfire.engine.") == []


def test_the_planner_imports_only_costs_and_methods() -> None:
    """A pure choice: no kernels, no session, nothing that runs a method."""
    deps = import_graph()["brushfire.engine.planner"]
    assert deps <= {"brushfire.engine", "brushfire.engine.costs"} | {
        m for m in deps if m.startswith("brushfire.engine.methods")}, deps


@pytest.mark.parametrize(("low", "high"), [("brushfire.engine", ABOVE_THE_ENGINE),
                                           ("brushfire.requests", ABOVE_THE_REQUESTS),
                                           ("brushfire.protocol", ABOVE_THE_PROTOCOL)])
def test_nothing_below_imports_what_is_above(low, high) -> None:
    graph = import_graph()
    bad = [f"{m} -> {d}" for m in sorted(graph) if m == low or m.startswith(low + ".")
           for d in sorted(graph[m]) if d.split(".")[1] in high]
    assert bad == []


def test_the_layer_check_finds_an_upward_import() -> None:
    graph = {"p.a": {"p.b"}, "p.b": set(), "p.c": {"p.a"}, "p.d": set()}
    assert upward(graph, [{"a"}, {"b"}, {"c"}], "p.") == ["p.d: in no layer", "p.a -> p.b"]
    assert upward(graph, [{"b"}, {"a"}, {"c"}, {"d"}], "p.") == []
