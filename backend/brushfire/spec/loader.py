"""Read a dashboard YAML file into a validated `Dashboard`, or fail with `SpecError`.

Only this module sees raw YAML. Every problem is reported as
`file:line: key.path: what is wrong`, with the valid choices and a hint, at most three.
"""

from __future__ import annotations

import difflib
import re
import types
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
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        msg = f"cannot read spec: {e.strerror or e}"
        raise SpecError([SpecProblem(str(path), None, "", msg)]) from None
    except UnicodeDecodeError as e:
        msg = f"cannot read spec: not UTF-8 text (bad byte at offset {e.start})"
        raise SpecError([SpecProblem(str(path), None, "", msg, "save the file as UTF-8")]) from None
    return parse_dashboard(text, filename=str(path), base_dir=path.parent)


def parse_dashboard(
    text: str | dict, filename: str = "<spec>", base_dir: str | Path | None = None
) -> m.Dashboard:
    """Validate YAML text (or an already-parsed dict) into a `Dashboard`."""
    lines: dict[Loc, int] = {}
    top_line: int | None = None
    if isinstance(text, str):
        node, raw = _read_yaml(text, filename)
        if node is not None:
            top_line = node.start_mark.line + 1
            duplicates: list[SpecProblem] = []
            _collect_lines(node, (), lines, duplicates, filename)
            if duplicates:
                raise SpecError(_ordered(duplicates))
    else:
        raw = text
    if not isinstance(raw, dict):
        msg = f"the document is {_kind_of(raw)}, not a mapping" + _choices(
            "a dashboard spec has the keys", list(m.Dashboard.model_fields))
        hint = "start the file with top-level keys, e.g. 'name: flights'"
        raise SpecError([SpecProblem(filename, top_line or 1, "", msg, hint)])
    try:
        dash = m.Dashboard.model_validate(raw)
    except pydantic.ValidationError as e:
        problems = [_problem_from_pydantic(err, raw, lines, filename) for err in e.errors()]
        raise SpecError(_ordered(problems), cause=e) from None
    problems = [
        SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint)
        for loc, msg, hint in check_references(dash)
    ]
    if problems:
        raise SpecError(_ordered(problems))
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
    first: dict[str, int] = {}
    for i, v in enumerate(dash.views):
        if v.name in first:
            msg = f"duplicate view name {v.name!r}"
            out.append((("views", i, "name"), msg,
                        f"views[{first[v.name]}] has the same name; view names must be unique"))
        first.setdefault(v.name, i)
        if v.brush is not None and v.brush not in m.BRUSHES_BY_TYPE[v.type]:
            allowed = m.BRUSHES_BY_TYPE[v.type]
            msg = f"a {v.type} view cannot take {_a(v.brush)} {v.brush!r} brush" + _choices(
                f"{v.type} views take", allowed)
            takers = [t for t, brushes in m.BRUSHES_BY_TYPE.items() if v.brush in brushes]
            hint = (f"leave brush out to get the default {allowed[0]!r}; {v.brush!r} brushes"
                    f" are for {' and '.join(takers)} views")
            out.append((("views", i, "brush"), msg, hint))

    def ref(loc: Loc, name: str, role: str) -> None:
        if name not in names:
            msg = f"unknown view {name!r}" + _choices("views", names)
            hint = _did_you_mean(name, names) or f"{role} must name one of the views above"
            out.append((loc, msg, hint))

    ix = dash.interactions
    for g, group in enumerate(ix.crossfilter):
        for j, name in enumerate(group.views):
            ref(("interactions", "crossfilter", g, "views", j), name, "a crossfilter group")
    for h, hl in enumerate(ix.highlight):
        ref(("interactions", "highlight", h, "source"), hl.source, "a highlight source")
        for j, name in enumerate(hl.targets):
            ref(("interactions", "highlight", h, "targets", j), name, "a highlight target")
    pnames = [p.name for p in ix.parameters]
    for i, p in enumerate(ix.parameters):
        if p.name in names:
            msg = f"parameter name {p.name!r} is already used by a view"
        elif pnames.index(p.name) != i:
            msg = f"parameter name {p.name!r} is already used by parameters[{pnames.index(p.name)}]"
        else:
            continue
        out.append((("interactions", "parameters", i, "name"), msg,
                    "parameters and views need distinct names"))
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

    def need(loc: Loc, column: str | None, kinds: tuple[str, ...] = (), user: str = "",
             hints: dict[str, str] | None = None) -> None:
        if column is None:
            return
        kind = known.get(column)
        if kind is None:
            msg = f"column {column!r} is not in the source" + _choices("columns", list(known))
            hint = _did_you_mean(column, list(known)) or "add it to source.columns as a derived column"
            problems.append(SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint))
        elif kinds and kind not in kinds and kind != "derived":
            is_ = f"a {kind} column" if kind in _KINDS else "neither number, temporal nor string"
            msg = f"column {column!r} is {is_}, but {user} needs a {' or '.join(kinds)} column"
            hints = hints or {}
            hint = hints.get(kind) or hints.get("*") or f"pick a {kinds[0]} column, or derive one in source.columns"
            problems.append(SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint))

    numeric = {"string": "use a categorical view for strings, or derive a number in source.columns",
               "temporal": "use a temporal view for timestamps"}
    for i, v in enumerate(dash.views):
        if isinstance(v, m.HeatmapView):
            need(("views", i, "x", "field"), v.x.field, ("number",), "a heatmap axis", numeric)
            need(("views", i, "y", "field"), v.y.field, ("number",), "a heatmap axis", numeric)
        elif isinstance(v, m.HistogramView):
            need(("views", i, "field"), v.field, ("number",), "a histogram view", numeric)
        elif isinstance(v, m.TemporalView):
            need(("views", i, "field"), v.field, ("temporal",), "a temporal view", {
                "number": "use a histogram view for numbers, or derive a timestamp in source.columns",
                "string": "derive a timestamp in source.columns, e.g. to_timestamp(...)"})
        else:
            need(("views", i, "field"), v.field)
        need(("views", i, "aggregate", "field"), v.aggregate.field, ("number",),
             f"aggregate op '{v.aggregate.op}'", {"*": "aggregate a numeric column, or use op: count"})
    if dash.interactions.details:
        for j, c in enumerate(dash.interactions.details.columns):
            need(("interactions", "details", "columns", j), c)
    for i, p in enumerate(dash.interactions.parameters):
        need(("interactions", "parameters", i, "field"), p.field,
             ("number", "temporal") if p.widget == "slider" else (), "a slider parameter",
             {"*": "use widget: dropdown to pick values instead of a range"})
    if problems:
        raise SpecError(_ordered(problems))


_KINDS = ("number", "temporal", "string")


# --- reading YAML with line marks ------------------------------------------------------


def _read_yaml(text: str, filename: str) -> tuple[yaml.Node | None, Any]:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise SpecError([_yaml_problem(e, text, filename)]) from None
    return node, raw


def _yaml_problem(e: yaml.YAMLError, text: str, filename: str) -> SpecProblem:
    """PyYAML's complaint, placed at the line to fix."""
    problem = str(getattr(e, "problem", None) or e).replace("'<stream end>'", "the end of the file")
    mark, context = getattr(e, "problem_mark", None), getattr(e, "context", None)
    cmark = getattr(e, "context_mark", None)
    line = mark.line + 1 if mark else None
    if cmark is not None and (line is None or line > len(text.splitlines())):
        line = cmark.line + 1  # the problem is the end of the file: point at what is left open
    msg = f"not valid YAML: {problem}"
    if context and cmark is not None and context.startswith("while"):
        msg += f" ({context} on line {cmark.line + 1})"
    elif context:
        msg = f"not valid YAML: {context}, {problem}"
    if "\\t" in problem:
        hint = "indent with spaces, not tabs"
    elif "another document" in problem:
        hint = "a spec file holds one dashboard: remove the second '---'"
    else:
        hint = "check the indentation, brackets and quotes on and above this line"
    return SpecProblem(filename, line, "", msg, hint)


def _collect_lines(
    node: yaml.Node, loc: Loc, out: dict[Loc, int], duplicates: list[SpecProblem], filename: str
) -> None:
    """Map each key path to the line of its key (or of its item, in a list).

    YAML silently keeps the last of two equal keys in a mapping; we report them instead.
    """
    out.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        first: dict[Any, int] = {}
        for k, v in node.value:
            line = k.start_mark.line + 1
            key = (*loc, k.value) if isinstance(k, yaml.ScalarNode) else (*loc, str(k.value))
            if key[-1] in first and key[-1] != "<<":
                msg = f"duplicate key {key[-1]!r} (first on line {first[key[-1]]})"
                hint = "YAML keeps only the last value: remove one of them"
                duplicates.append(SpecProblem(filename, line, _render(key), msg, hint))
            first.setdefault(key[-1], line)
            out[key] = line
            _collect_lines(v, key, out, duplicates, filename)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _collect_lines(v, (*loc, i), out, duplicates, filename)


# --- turning pydantic errors into SpecProblems ---------------------------------------

_EXPECTED = {
    "float_parsing": "a number", "float_type": "a number", "finite_number": "a finite number",
    "int_parsing": "a whole number", "int_type": "a whole number",
    "int_from_float": "a whole number", "bool_parsing": "true or false",
    "bool_type": "true or false", "string_type": "a string", "list_type": "a list",
    "tuple_type": "a list", "dict_type": "a mapping", "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}
_BOUNDS = {"greater_than_equal": ("ge", ">="), "less_than_equal": ("le", "<="),
           "greater_than": ("gt", ">"), "less_than": ("lt", "<")}
_NAME_RULE = "start with a letter or '_', then use letters, digits, '_' or '-'"


def _problem_from_pydantic(err: dict, raw: Any, lines: dict[Loc, int], filename: str) -> SpecProblem:
    loc = _yaml_loc(tuple(err["loc"]), raw)
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    key = loc[-1] if loc else ""
    hint = ""
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1], raw)
        accepted = list(model.model_fields) if model else []
        msg = f"unknown key {key!r}"
        if model:
            msg += _choices(f"{model.__name__} accepts", accepted)
        hint = _did_you_mean(str(key), accepted) or _owners_hint(str(key), model) or "remove it"
    elif kind == "missing" and isinstance(key, int):  # a list too short for its tuple
        loc = loc[:-1]
        msg, hint = _wrong_length(loc, _value_at(loc, raw))
    elif kind == "missing":
        model = _model_at(loc[:-1], raw)
        msg = f"missing required key {key!r}"
        if model:
            required = [n for n, f in model.model_fields.items() if f.is_required()]
            msg += _choices(f"{model.__name__} requires", required)
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        loc = (*loc, "type")
        tags = re.findall(r"'([^']*)'", ctx.get("expected_tags", "")) or list(m.BRUSHES_BY_TYPE)
        if kind == "union_tag_invalid":
            msg = f"unknown view type {ctx.get('tag')!r}"
            hint = _did_you_mean(str(ctx.get("tag")), tags, cutoff=0.85)
        else:
            msg = "missing required key 'type'"
        msg += _choices("view types", tags)
    elif kind == "literal_error":
        choices = re.findall(r"'([^']*)'", ctx.get("expected", ""))
        label = "aggregate op" if loc[-2:-1] == ("aggregate",) else str(key)
        msg = f"unsupported {label} {_show(value)}" + _choices(f"{key} accepts", choices)
        hint = _did_you_mean(str(value), choices, cutoff=0.85)  # not median -> mean
    elif loc[-1:] == ("extent",) and kind in ("too_long", "tuple_type"):
        msg, hint = _wrong_length(loc, value)
    elif kind in _EXPECTED:
        msg = f"expected {_EXPECTED[kind]}, got {_show(value)}"
        model = _model_at(loc, raw) if _EXPECTED[kind] == "a mapping" else None
        if model:
            msg += _choices(f"{model.__name__} accepts", list(model.model_fields))
        if kind == "string_type" and isinstance(value, bool):
            hint = "YAML reads yes/no/on/off/true/false as booleans: quote the value"
        elif kind == "string_type" and isinstance(value, (int, float)):
            hint = f"quote it to make it a string: '{value}'"
    elif kind in _BOUNDS:
        name, op = _BOUNDS[kind]
        msg = f"must be {op} {ctx.get(name)}, got {_show(value)}"
    elif kind == "too_short":
        n = ctx.get("min_length", 1)
        msg = f"needs at least {n} item{'s' if n != 1 else ''}, got {ctx.get('actual_length', 0)}"
    elif kind == "too_long":
        msg = f"takes at most {ctx.get('max_length')} items, got {ctx.get('actual_length')}"
    elif kind == "string_pattern_mismatch":
        msg = f"{_show(value)} is not a valid {key}"
        hint = _NAME_RULE if key == "name" else f"it must match {ctx.get('pattern')}"
    elif kind == "invalid_key":
        loc = loc[:-1]
        msg = f"key {_show(key)} is not a string"
        hint = f"quote it: '{key}'"
    else:
        msg = err["msg"].removeprefix("Value error, ")
        hint = _value_hint(loc, msg)
    return SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint)


def _value_hint(loc: Loc, msg: str) -> str:
    """Hints for the models' own checks (field validators)."""
    if loc[-2:] == ("bin", "step"):
        return "step is the width of one bin, in the field's units"
    if loc[-2:] == ("bin", "extent"):
        return "write extent: [lo, hi] with lo < hi"
    if loc[-2:] == ("aggregate", "field"):
        return "add field: <a numeric column>, or use op: count"
    if "dropdown parameter" in msg:
        return "use widget: slider to compare with lt, lte, gt or gte"
    if "slider parameter" in msg:
        return "add op: lt, lte, gt or gte, or use widget: dropdown for 'eq'"
    return ""


def _wrong_length(loc: Loc, value: Any) -> tuple[str, str]:
    if loc[-1:] == ("extent",):
        return f"expected two numbers [lo, hi], got {_show(value)}", "e.g. extent: [0, 100]"
    return f"has too few items: {_show(value)}", ""


def _yaml_loc(loc: Loc, raw: Any) -> Loc:
    """Drop pydantic's union-tag steps (e.g. 'histogram') so the path matches the YAML."""
    out: list[str | int] = []
    node = raw
    for step in loc:
        if (isinstance(node, dict) and isinstance(step, str) and step not in node
                and _is_union_tag(step)):
            continue  # a tag pydantic adds to the path, not a key of the file
        out.append(step)
        if isinstance(node, dict):
            node = node.get(step)
        elif isinstance(node, list) and isinstance(step, int) and step < len(node):
            node = node[step]
        else:
            node = None
    return tuple(out)


def _is_union_tag(step: str) -> bool:
    return step in m.BRUSHES_BY_TYPE or "[" in step or step.startswith(("function-", "tuple"))


def _value_at(loc: Loc, raw: Any) -> Any:
    node = raw
    for step in loc:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _model_at(loc: Loc, raw: Any) -> type[m.Model] | None:
    """The model class that validates the mapping at `loc` of the raw document."""
    ann: Any = m.Dashboard
    node = raw
    for step in loc:
        if isinstance(step, int):  # an item of a list: its element type
            ann = next((typing.get_args(a)[0] for a in _members(ann)
                        if typing.get_origin(a) in (list, tuple)), None)
        else:
            model = _model_for(ann, node)
            if model is None or step not in model.model_fields:
                return None
            ann = model.model_fields[step].annotation
        node = _value_at((step,), node)
    return _model_for(ann, node)


def _members(ann: Any) -> list[Any]:
    """The types inside `Annotated[...]` and `X | Y`, flattened."""
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _members(typing.get_args(ann)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for a in typing.get_args(ann) for t in _members(a)]
    return [ann]


def _model_for(ann: Any, node: Any) -> type[m.Model] | None:
    """The model member of `ann` for this node: for views, the one its `type` names."""
    models = [a for a in _members(ann) if isinstance(a, type) and issubclass(a, m.Model)]
    tag = node.get("type") if isinstance(node, dict) else None
    for a in models:
        if "type" in a.model_fields and typing.get_args(a.model_fields["type"].annotation) == (tag,):
            return a
    return models[0] if len(models) == 1 else None  # no guessing among view types


def _owners_hint(key: str, model: type[m.Model] | None) -> str:
    """For a key that belongs elsewhere: say where it does belong."""
    owners = [c for c in _all_models() if key in c.model_fields and c is not model]
    if not owners:
        return ""
    names = ", ".join(c.__name__ for c in owners[:3])
    return f"{key!r} is a key of {names}" + (f", not {model.__name__}" if model else "")


def _all_models() -> list[type[m.Model]]:
    return [c for c in vars(m).values()
            if isinstance(c, type) and issubclass(c, m.Model) and c is not m.Model
            and not c.__name__.startswith("_")]


# --- rendering ------------------------------------------------------------------------


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


def _choices(label: str, choices: Iterable[str]) -> str:
    """The valid choices, on their own indented line under the message."""
    choices = list(choices)
    listed = ", ".join(choices[:12]) + (", ..." if len(choices) > 12 else "")
    return f"\n    {label}: {listed}" if choices else ""


def _did_you_mean(name: str, choices: list[str], cutoff: float = 0.6) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=cutoff)
    return f"did you mean {close[0]!r}?" if close else ""


def _show(value: Any) -> str:
    """A value as it would read in YAML."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value)


def _a(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _kind_of(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return f"a single value ({_show(value)})"


def _ordered(problems: list[SpecProblem]) -> list[SpecProblem]:
    """De-duplicated and in file order, so the first three shown are the first to fix."""
    seen, out = set(), []
    for p in problems:
        key = (p.path, p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return sorted(out, key=lambda p: p.line if p.line is not None else float("inf"))
