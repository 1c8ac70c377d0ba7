"""Tests for brushfire.plan: golden plans for the shipped dashboards, pruning rules on tiny specs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from brushfire.plan import CapturePlan, plan_capture
from brushfire.spec.loader import parse_dashboard

ROOT = Path(__file__).resolve().parents[1]
DASHBOARDS = sorted((ROOT / "dashboards").glob("*.yaml"))


def _regenerate_module():
    """tests/golden/regenerate.py, which writes the golden files this test reads."""
    spec = importlib.util.spec_from_file_location("golden_regenerate", ROOT / "tests/golden/regenerate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


golden = _regenerate_module()


@pytest.mark.parametrize("path", DASHBOARDS, ids=[p.stem for p in DASHBOARDS])
def test_golden_plan(path: Path) -> None:
    expected_file = golden.golden_path(path)
    assert expected_file.exists(), "no golden plan: run python tests/golden/regenerate.py"
    expected = expected_file.read_text(encoding="utf-8")
    assert golden.describe(path) == expected, (
        "plan differs from the golden file; if the change is intended, run "
        "python tests/golden/regenerate.py and review the diff")


# --- pruning rules on tiny inline specs ---------------------------------------------------


def hist(name: str, **kw) -> dict:
    return {"name": name, "type": "histogram", "field": name, "bin": {"step": 1, "extent": [0, 10]},
            **kw}


def cat(name: str, **kw) -> dict:
    return {"name": name, "type": "categorical", "field": name, **kw}


def heat(name: str, **kw) -> dict:
    axis = {"bin": {"step": 1, "extent": [0, 10]}}
    return {"name": name, "type": "heatmap", "x": {"field": f"{name}_x", **axis},
            "y": {"field": f"{name}_y", **axis}, **kw}


def summary(plan: CapturePlan) -> dict:
    """What the pruning decides, in a form a table row can spell out."""
    return {
        "filters": {f.name: (f.kind, f.filters_views) for f in plan.filters},
        "forward": tuple(v.name for v in plan.views if v.forward),
        "bar_index": plan.bar_index_views,
        "index_fields": plan.index_fields,
    }


PRUNING = [
    ("no_interactions", [hist("a"), cat("k")], {},
     {"filters": {}, "forward": (), "bar_index": (), "index_fields": ()}),
    # c is in no crossfilter group: no backward index, no forward codes
    ("view_outside_crossfilter", [hist("a"), hist("b"), hist("c")],
     {"crossfilter": [{"views": ["a", "b"]}]},
     {"filters": {"a": ("interval", ("b",)), "b": ("interval", ("a",))},
      "forward": ("a", "b"), "bar_index": (), "index_fields": ("a", "b")}),
    # b has brush none: no index for it, and it filters nothing, so a keeps no forward codes
    ("brush_none", [hist("a"), hist("b", brush="none")],
     {"crossfilter": [{"views": ["a", "b"]}]},
     {"filters": {"a": ("interval", ("b",))}, "forward": ("b",), "bar_index": (),
      "index_fields": ("a",)}),
    ("points_and_rect", [cat("k"), heat("h")],
     {"crossfilter": [{"views": ["k", "h"]}]},
     {"filters": {"k": ("points", ("h",)), "h": ("rect", ("k",))}, "forward": ("k", "h"),
      "bar_index": (), "index_fields": ("k", "h_x", "h_y")}),
    # a view in two groups filters the other views of both
    ("two_groups", [hist("a"), hist("b"), hist("c")],
     {"crossfilter": [{"views": ["a", "b"]}, {"views": ["a", "c"]}]},
     {"filters": {"a": ("interval", ("b", "c")), "b": ("interval", ("a",)),
                  "c": ("interval", ("a",))},
      "forward": ("a", "b", "c"), "bar_index": (), "index_fields": ("a", "b", "c")}),
    # parameters filter every view, crossfiltered or not
    ("parameter_eq", [hist("a"), cat("k")],
     {"parameters": [{"name": "p", "field": "carrier"}]},
     {"filters": {"p": ("param_eq", ("a", "k"))}, "forward": ("a", "k"), "bar_index": (),
      "index_fields": ("carrier",)}),
    ("parameter_range", [hist("a"), hist("b"), cat("k")],
     {"crossfilter": [{"views": ["a", "b"]}],
      "parameters": [{"name": "p", "field": "distance", "widget": "slider", "op": "lt"}]},
     {"filters": {"a": ("interval", ("b",)), "b": ("interval", ("a",)),
                  "p": ("param_range", ("a", "b", "k"))},
      "forward": ("a", "b", "k"), "bar_index": (), "index_fields": ("a", "b", "distance")}),
    # highlight sources get bar → rows indexes; targets get forward codes
    ("highlight", [hist("a"), hist("b"), cat("k")],
     {"highlight": [{"source": "k", "targets": ["a"]}]},
     {"filters": {}, "forward": ("a",), "bar_index": ("k",), "index_fields": ()}),
    # details on demand need bar → rows indexes for every view
    ("details", [hist("a"), cat("k")],
     {"details": {"columns": ["a", "k"]}},
     {"filters": {}, "forward": (), "bar_index": ("a", "k"), "index_fields": ()}),
]


@pytest.mark.parametrize(("views", "interactions", "expected"), [c[1:] for c in PRUNING],
                         ids=[c[0] for c in PRUNING])
def test_pruning(views: list[dict], interactions: dict, expected: dict) -> None:
    dash = parse_dashboard({"name": "t", "source": {"path": "t.parquet"}, "views": views,
                            "interactions": interactions})
    assert summary(plan_capture(dash)) == expected


@pytest.mark.parametrize(("views", "cube_targets"), [
    ([hist("a"), cat("k")], {"a": ("k",), "k": ("a",)}),
    ([hist("a"), heat("h")], {"a": ("h",), "h": ()}),  # no cubes for rectangle brushes
])
def test_cubes(views: list[dict], cube_targets: dict) -> None:
    names = [v["name"] for v in views]
    dash = parse_dashboard({"name": "t", "source": {"path": "t.parquet"}, "views": views,
                            "interactions": {"crossfilter": [{"views": names}]}})
    assert {f.name: f.cube_targets for f in plan_capture(dash).filters} == cube_targets


def test_a_declared_copy_budget_is_said_instead_of_the_default():
    """With `workload: {copy_budget}` and no trace, the plan gives that budget alone (it
    said the default's "half of the capturing machine's memory" beside it)."""
    from brushfire.plan import explain

    d = {"name": "budgeted", "source": {"path": "data/none.parquet"}, "views": [hist("a"), hist("b")],
         "interactions": {"crossfilter": [{"views": ["a", "b"]}]}}
    said = explain(plan_capture(parse_dashboard({**d, "workload": {"copy_budget": "2GB"}})))
    copies = [line for line in said.splitlines() if "clustered key copy" in line]
    assert len(copies) == 2
    assert all("half of the capturing machine's memory" not in c and "spent in the layout's order" in c
               for c in copies), copies
    assert "(default: half of the capturing machine's memory)" in explain(plan_capture(parse_dashboard(d)))


def test_a_joins_columns_read_include_a_chains_on_and_its_filters(tmp_path) -> None:
    """`plan` lists every column capture reads of a join: a chain's `on` (a.nat, read to
    join `an`) and a column only a static filter reads (b.nat), not only the keyed ones."""
    from brushfire.plan import explain

    spec = parse_dashboard({
        "name": "chain", "source": {"path": str(tmp_path / "f.parquet"), "joins": [
            {"name": "a", "path": str(tmp_path / "c.parquet"), "key": "ck", "on": "c1"},
            {"name": "b", "path": str(tmp_path / "c.parquet"), "key": "ck", "on": "c2"},
            {"name": "an", "path": str(tmp_path / "n.parquet"), "key": "nk", "on": "a.nat"}],
            "filters": ["`b`.`nat` < 2"]},
        "views": [{"name": "seg", "type": "categorical", "field": "a.seg"},
                  {"name": "nation", "type": "categorical", "field": "an.nname"}],
        "interactions": {"crossfilter": [{"views": ["seg", "nation"]}]}})
    lines = [x.strip() for x in explain(plan_capture(spec)).splitlines() if "columns read" in x]
    assert lines == [
        "columns read: a.seg (keyed like the source's own); a.nat (read by a join's on, a derived "
        "column or a static filter)",
        "columns read: b.nat (read by a join's on, a derived column or a static filter)",
        "columns read: an.nname (keyed like the source's own)"], lines


def test_a_copy_budget_of_0_gives_no_filter_a_copy():
    """The plan said a copy is 'built at capture ... unless ... the copies pass their
    budget (0 MB ...)' of a budget no copy fits."""
    from brushfire.plan import explain

    d = {"name": "nocopy", "source": {"path": "data/none.parquet"}, "views": [hist("a"), hist("b")],
         "interactions": {"crossfilter": [{"views": ["a", "b"]}]}, "workload": {"copy_budget": 0}}
    copies = [line for line in explain(plan_capture(parse_dashboard(d))).splitlines()
              if "clustered key copy" in line]
    assert copies == ["    clustered key copy: none: the workload's copy_budget is 0"] * 2


@pytest.mark.parametrize(("workload", "expected"), [
    ({}, "a copy of value:x"),
    ({"workload": {"copy_budget": 0}}, "none"),
])
def test_captures_plan_says_which_copies_the_capture_built(small_parquet, tmp_path, workload, expected):
    """`brushfire capture` printed the plan's 'built at capture ..., unless ...' under each
    filter, then 'none — over the copy budget' of the same dims below it."""
    import pyarrow.parquet as pq

    from brushfire.capture.local import capture_table
    from brushfire.cli import copy_choices
    from brushfire.plan import explain

    dash = parse_dashboard({"name": "copies", "source": {"path": str(small_parquet)},
                            "views": [hist("a", field="x"), cat("k", field="cat")],
                            "interactions": {"crossfilter": [{"views": ["a", "k"]}]}, **workload})
    plan = plan_capture(dash)
    store = capture_table(plan, pq.read_table(small_parquet), tmp_path)
    copied = {store.layout.dims[d].name: got for d, got, _ in copy_choices(store)}
    said = explain(plan, store.n_rows, layout=store.layout, copies=copied)
    line = next(line for line in said.splitlines() if "clustered key copy" in line)
    assert line == f"    clustered key copy: {expected} (clustered key copies, below, say why)"
