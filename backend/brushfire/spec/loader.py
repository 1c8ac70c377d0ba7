"""Read a dashboard YAML file into a validated `Dashboard`, or fail with `SpecError`.

Only this module sees raw YAML. Every problem is reported as
`file:line: key.path: what is wrong`, with the valid choices and a hint, at most three.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pydantic
import yaml

from brushfire.errors import SpecError, SpecProblem
from brushfire.spec import models as m

Loc = tuple[str | int, ...]


def load_dashboard(path: str | Path) -> m.Dashboard:
    """Load and validate the spec at `path`; source paths are resolved against its folder."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        msg = f"cannot read spec: {e.strerror}"
        raise SpecError([SpecProblem(str(path), None, "", msg)]) from None
    return parse_dashboard(text, filename=str(path), base_dir=path.parent)


def parse_dashboard(
    text: str | dict, filename: str = "<spec>", base_dir: str | Path | None = None
) -> m.Dashboard:
    """Validate YAML text (or an already-parsed dict) into a `Dashboard`."""
    lines: dict[Loc, int] = {}
    if isinstance(text, str):
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            raw = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            line = mark.line + 1 if mark else None
            msg = f"not valid YAML: {getattr(e, 'problem', e)}"
            raise SpecError([SpecProblem(filename, line, "", msg)]) from None
        _collect_lines(node, (), lines)
    else:
        raw = text
    if not isinstance(raw, dict):
        msg = "a dashboard spec is a mapping with keys name, source, views, interactions"
        raise SpecError([SpecProblem(filename, 1, "", msg)])
    try:
        dash = m.Dashboard.model_validate(raw)
    except pydantic.ValidationError as e:
        problems = [_problem_from_pydantic(err, raw, lines, filename) for err in e.errors()]
        raise SpecError(_dedupe(problems), cause=e) from None
    problems = [
        SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint)
        for loc, msg, hint in check_references(dash)
    ]
    if problems:
        raise SpecError(problems)
    if base_dir is not None and not Path(dash.source.path).is_absolute():
        resolved = str((Path(base_dir) / dash.source.path).resolve())
        dash = dash.model_copy(update={"source": dash.source.model_copy(update={"path": resolved})})
    # Keep where the spec came from, for column errors found later against the source.
    object.__setattr__(dash, "_lines", lines)
    object.__setattr__(dash, "_filename", filename)
    return dash


def check_references(dash: m.Dashboard) -> list[tuple[Loc, str, str]]:
    """Problems a single model cannot see: names that must refer to other parts."""
    out: list[tuple[Loc, str, str]] = []
    names = [v.name for v in dash.views]
    seen: set[str] = set()
    for i, v in enumerate(dash.views):
        if v.name in seen:
            out.append((("views", i, "name"), f"duplicate view name {v.name!r}", "names must be unique"))
        seen.add(v.name)
        if v.brush is not None and v.brush not in m.BRUSHES_BY_TYPE[v.type]:
            allowed = " or ".join(m.BRUSHES_BY_TYPE[v.type])
            msg = f"a {v.type} view cannot take a {v.brush!r} brush"
            out.append((("views", i, "brush"), msg, f"use {allowed}"))

    def ref(loc: Loc, name: str) -> None:
        if name not in names:
            out.append((loc, f"unknown view {name!r}", _choices_hint(name, names, "views")))

    ix = dash.interactions
    for g, group in enumerate(ix.crossfilter):
        for j, name in enumerate(group.views):
            ref(("interactions", "crossfilter", g, "views", j), name)
    for h, hl in enumerate(ix.highlight):
        ref(("interactions", "highlight", h, "source"), hl.source)
        for j, name in enumerate(hl.targets):
            ref(("interactions", "highlight", h, "targets", j), name)
    pnames = [p.name for p in ix.parameters]
    for i, p in enumerate(ix.parameters):
        if pnames.count(p.name) > 1 or p.name in names:
            out.append((("interactions", "parameters", i, "name"),
                        f"name {p.name!r} is already used", "parameters and views need distinct names"))
    return out


def check_columns(dash: m.Dashboard, schema: dict[str, str]) -> None:
    """Check every column the spec reads against the source schema {name: kind}.

    kind is 'number', 'temporal', 'string' or 'other'; derived columns count as known.
    Raises SpecError naming the key that refers to a missing or ill-typed column.
    """
    lines: dict[Loc, int] = getattr(dash, "_lines", {})
    filename: str = getattr(dash, "_filename", "<spec>")
    known = dict(schema) | {c: "derived" for c in dash.source.columns}
    problems: list[SpecProblem] = []

    def need(loc: Loc, column: str | None, kinds: Iterable[str] = ()) -> None:
        if column is None:
            return
        kind = known.get(column)
        if kind is None:
            msg = f"column {column!r} is not in the source"
            hint = _choices_hint(column, list(known), "columns")
            problems.append(SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint))
        elif kinds and kind not in kinds and kind != "derived":
            msg = f"column {column!r} is {kind}, but this needs {' or '.join(kinds)}"
            problems.append(SpecProblem(filename, _line(lines, loc), _render(loc), msg))

    for i, v in enumerate(dash.views):
        if isinstance(v, m.HeatmapView):
            need(("views", i, "x", "field"), v.x.field, ("number",))
            need(("views", i, "y", "field"), v.y.field, ("number",))
        elif isinstance(v, m.HistogramView):
            need(("views", i, "field"), v.field, ("number",))
        elif isinstance(v, m.TemporalView):
            need(("views", i, "field"), v.field, ("temporal",))
        else:
            need(("views", i, "field"), v.field)
        need(("views", i, "aggregate", "field"), v.aggregate.field, ("number",))
    if dash.interactions.details:
        for j, c in enumerate(dash.interactions.details.columns):
            need(("interactions", "details", "columns", j), c)
    for i, p in enumerate(dash.interactions.parameters):
        need(("interactions", "parameters", i, "field"), p.field,
             ("number", "temporal") if p.widget == "slider" else ())
    if problems:
        raise SpecError(problems)


# --- turning pydantic errors into SpecProblems ---------------------------------------


def _problem_from_pydantic(err: dict, raw: Any, lines: dict[Loc, int], filename: str) -> SpecProblem:
    loc = _yaml_loc(tuple(err["loc"]), raw)
    kind = err["type"]
    hint = ""
    if kind == "extra_forbidden":
        key = str(loc[-1])
        model = _model_at(loc[:-1], raw)
        accepted = list(model.model_fields) if model else []
        msg = f"unknown key {key!r}"
        if accepted:
            msg += f"\n    {model.__name__} accepts: {', '.join(accepted)}"
        close = difflib.get_close_matches(key, accepted, n=1)
        hint = f"did you mean {close[0]!r}?" if close else "remove it or check the docs"
    elif kind == "missing":
        msg = f"missing required key {loc[-1]!r}" if loc else "missing required key"
    elif kind == "union_tag_invalid":
        tags = err.get("ctx", {}).get("expected_tags", "")
        msg = f"unknown view type {err.get('ctx', {}).get('tag')!r}; view types: {tags}"
        loc = (*loc, "type")
    elif kind == "union_tag_not_found":
        msg = "a view needs a 'type': histogram, temporal, categorical or heatmap"
    elif kind == "literal_error":
        msg = f"{err['input']!r} is not allowed; expected {err['ctx']['expected']}"
    else:
        msg = err["msg"].removeprefix("Value error, ")
    return SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint)


def _yaml_loc(loc: Loc, raw: Any) -> Loc:
    """Drop pydantic's union-tag steps (e.g. 'histogram') so the path matches the YAML."""
    out: list[str | int] = []
    node = raw
    for step in loc:
        if isinstance(node, dict) and isinstance(step, str) and step not in node:
            if step in m.BRUSHES_BY_TYPE or "[" in step or step.startswith(("function-", "tuple")):
                continue  # a tag pydantic adds to the path, not a key of the file
        out.append(step)
        if isinstance(node, dict):
            node = node.get(step)
        elif isinstance(node, list) and isinstance(step, int) and step < len(node):
            node = node[step]
        else:
            node = None
    return tuple(out)


def _model_at(loc: Loc, raw: Any) -> type[m.Model] | None:
    """The model class that validates the mapping at `loc` of the raw document."""
    model: Any = m.Dashboard
    node = raw
    for step in loc:
        node = node[step] if isinstance(node, (dict, list)) else None
        if isinstance(step, int):
            continue
        if not (isinstance(model, type) and issubclass(model, m.Model)):
            return None
        ann = model.model_fields[step].annotation
        model = _unwrap(ann, node)
    if isinstance(model, type) and issubclass(model, m.Model):
        return model
    return None


def _unwrap(ann: Any, node: Any) -> Any:
    """Find the model class inside list[...], X | None, Annotated unions."""
    for _ in range(6):
        origin = typing.get_origin(ann)
        args = typing.get_args(ann)
        if origin is typing.Annotated:
            ann = args[0]
        elif origin in (list, tuple):
            ann = args[0]
        elif args:  # a union: pick the view model whose tag matches, or the model member
            models = [a for a in args if isinstance(a, type) and issubclass(a, m.Model)]
            tag = node.get("type") if isinstance(node, dict) else None
            for a in models:
                if "type" in a.model_fields and typing.get_args(a.model_fields["type"].annotation) == (tag,):
                    return a
            return models[0] if models else None
        else:
            return ann
    return ann


def _collect_lines(node: yaml.Node, loc: Loc, out: dict[Loc, int]) -> None:
    out.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = (*loc, k.value)
            out[key] = k.start_mark.line + 1
            _collect_lines(v, key, out)
            out[key] = k.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _collect_lines(v, (*loc, i), out)


def _line(lines: dict[Loc, int], loc: Loc) -> int | None:
    for n in range(len(loc), -1, -1):  # the nearest enclosing key that exists in the file
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def _render(loc: Loc) -> str:
    text = ""
    for step in loc:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return text


def _choices_hint(name: str, choices: list[str], what: str) -> str:
    close = difflib.get_close_matches(name, choices, n=1)
    listed = ", ".join(choices[:12]) + (", ..." if len(choices) > 12 else "")
    return (f"did you mean {close[0]!r}? " if close else "") + f"{what}: {listed}"


def _dedupe(problems: list[SpecProblem]) -> list[SpecProblem]:
    seen, out = set(), []
    for p in problems:
        key = (p.path, p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out
