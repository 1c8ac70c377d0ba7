"""Pydantic's validation errors as `SpecProblem`s a person can act on (`file:line:
key.path: what is wrong`, the valid choices, a hint), and the wording helpers the checks
share: locations, values, choices, "did you mean".
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Iterable
from typing import Any

from brushfire.errors import SpecProblem
from brushfire.limits import MAX_TOP
from brushfire.spec import models as m

Loc = tuple[str | int, ...]


# --- turning pydantic errors into SpecProblems ---------------------------------------

# what other tools call a chart or an aggregate, and what a spec writes for it
_OTHER_CHARTS = dict.fromkeys(
    ("bar", "bars", "barchart", "bar_chart", "column", "count", "pie", "donut", "doughnut"),
    "a bar per value of a field (text, categories) is categorical; bars of a number's bins "
    "are histogram; bars over time are temporal") | dict.fromkeys(
    ("line", "area", "time", "timeseries", "time_series", "date", "datetime"),
    "counts over time are a temporal view (bars per unit: day, month, ...)") | dict.fromkeys(
    ("scatter", "point", "points", "scatterplot", "map", "density", "hexbin", "2d"),
    "two numbers against each other are a heatmap: x and y, each binned")
_OTHER_OPS = {"avg": "did you mean 'mean'? (SQL's avg)", "average": "did you mean 'mean'?",
              "total": "did you mean 'sum'?", "minimum": "did you mean 'min'?",
              "maximum": "did you mean 'max'?", "count_distinct": "did you mean 'distinct'?",
              "nunique": "did you mean 'distinct'?", "countd": "did you mean 'distinct'?",
              "approx_count_distinct": "did you mean 'distinct'? (exact here)",
              "percentile": "write op: quantile with p, e.g. {op: quantile, field: x, p: 0.9}",
              "mode": "the most frequent value is the first bar of a categorical view of the field"}

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
NAME_RULE = "start with a letter or '_', then use letters, digits, '_' or '-'"


_SCALAR_TAGS = {"str": "a string", "float": "a number", "int": "a whole number",
                "bool": "true or false"}



# The plain scalars a spec's YAML reads as numbers (spec/yamlread.py's loader), as YAML 1.2's
# core schema and JSON do: decimal integers (leading zeros too), 0o octal, 0x hex; decimal
# floats with an optional exponent, .inf and .nan
PLAIN_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
PLAIN_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")


def _quoted_scalar(text: str, kind: str) -> bool:
    """Whether `text` would be the number or boolean `kind` asks for, unquoted (not
    Python's reading: `float` takes '1_000' and 'inf', which YAML reads as text)."""
    if kind == "bool_type":
        return text.strip().lower() in ("true", "false", "yes", "no", "on", "off")
    if PLAIN_INT.match(text):
        return True
    return kind == "float_type" and PLAIN_FLOAT.match(text) is not None


def _list_member(loc: tuple, raw: Any) -> int | None:
    """Where `loc` names a union's list member (`list[union[str,float,int]]`, pydantic's
    name for it, not a key of the document), or None."""
    for i, step in enumerate(loc):
        if isinstance(step, str) and step.startswith("list[") and \
                not (isinstance(parent := _value_at(loc[:i], raw), dict) and step in parent):
            return i
    return None


def one_union_branch(errors: list[dict], raw: Any) -> list[dict]:
    """A value of `Scalar | list[Scalar]` (a parameter's default) that fits neither got the
    errors of both branches, the list's under the member's name
    (`default.list[union[str,float,int]][0]`): only the branch of the value's shape is
    kept (a list: its items' errors, under the list's own path; else the scalar's)."""
    lists = {loc[:i] for err in errors
             if (i := _list_member(loc := tuple(err["loc"]), raw)) is not None}
    out: list[dict] = []
    for err in errors:
        loc = tuple(err["loc"])
        i = _list_member(loc, raw)
        if i is None:
            if not (loc[:-1] in lists and loc[-1] in _SCALAR_TAGS and isinstance(_value_at(loc[:-1], raw), list)):
                out.append(err)
        elif isinstance(_value_at(loc[:i], raw), list):
            out.append({**err, "loc": loc[:i] + loc[i + 1:]})
    return out


def merge_scalar_unions(errors: list[dict], raw: Any) -> list[dict]:
    """One error per value of a scalar union (`str | float | int`), not one per member:
    pydantic reports `default.str: ...` and `default.float: ...` for the same value (and
    of a `Scalar | list[Scalar]`, one branch: `one_union_branch`)."""
    errors = one_union_branch(errors, raw)
    out: list[dict] = []
    merged: dict[tuple, dict] = {}
    for err in errors:
        loc = tuple(err["loc"])
        parent = _value_at(loc[:-1], raw)
        if loc and loc[-1] in _SCALAR_TAGS and not (isinstance(parent, dict) and loc[-1] in parent):
            if loc[:-1] not in merged:
                merged[loc[:-1]] = {"type": "scalar_union", "loc": loc[:-1], "input": err.get("input"),
                                    "ctx": {"expected": []}, "msg": err["msg"]}
                out.append(merged[loc[:-1]])
            merged[loc[:-1]]["ctx"]["expected"].append(_SCALAR_TAGS[loc[-1]])
        else:
            out.append(err)
    return out


def problem_from_pydantic(err: dict, raw: Any, lines: dict[Loc, int], filename: str) -> SpecProblem:
    loc = _yaml_loc(tuple(err["loc"]), raw)
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    key = loc[-1] if loc else ""
    hint = ""
    if kind == "extra_forbidden":
        model = _model_at(loc[:-1], raw)
        accepted = list(model.model_fields) if model else []
        msg = f"unknown key {key!r}"
        if model:
            msg += choices_phrase(f"{model_name(model)} accepts", accepted)
        hint = did_you_mean(str(key), accepted) or _owners_hint(str(key), model) or "remove it"
        if model is m.Join and key in ("how", "type", "kind"):
            hint = "a join is SQL's LEFT JOIN, many-to-one (docs/spec.md, Joins): remove it"
    elif kind == "missing" and isinstance(key, int):  # a list too short for its tuple
        loc = loc[:-1]
        msg, hint = _wrong_length(loc, _value_at(loc, raw))
    elif kind == "missing":
        model = _model_at(loc[:-1], raw)
        msg = f"missing required key {key!r}"
        if model:
            required = [n for n, f in model.model_fields.items() if f.is_required()]
            msg += choices_phrase(f"{model_name(model)} requires", required)
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        loc = (*loc, "type")
        tags = re.findall(r"'([^']*)'", ctx.get("expected_tags", "")) or list(m.BRUSHES_BY_TYPE)
        if kind == "union_tag_invalid" and ((written := _value_at(loc, raw)) is None
                                            or isinstance(written, list | dict)):
            # (pydantic's tag is its text: `type:` read "unknown view type 'None'")
            msg = f"expected a view type, got {show(written)}"
            hint = "write one of the view types above, e.g. type: histogram"
        elif kind == "union_tag_invalid":
            msg = f"unknown view type {ctx.get('tag')!r}"
            hint = did_you_mean(str(ctx.get("tag")), tags, cutoff=0.85) or \
                _OTHER_CHARTS.get(str(ctx.get("tag")).lower(), "")
        else:
            msg = "missing required key 'type'"
            # a misspelled `type` (Type:, typ:) is no key of any view: the only one at fault
            written = _value_at(loc[:-1], raw)
            views = {k for t in typing.get_args(typing.get_args(m.View)[0]) for k in t.model_fields}
            near = [k for k in written if isinstance(k, str) and k not in views and did_you_mean(k, ["type"])] \
                if isinstance(written, dict) else []
            if near:
                loc, msg = (*loc[:-1], near[0]), f"unknown key {near[0]!r}: a view needs its 'type'"
                hint = "did you mean 'type'?"
        msg += choices_phrase("view types", tags)
    elif kind == "literal_error" and key == "op" and loc[-3:-2] == ("parameters",) \
            and value in ("range", "in"):
        choices = re.findall(r"'([^']*)'", ctx.get("expected", ""))
        msg = f"unsupported op {show(value)}" + choices_phrase("op accepts", choices)
        hint = ("for a range, use widget: slider with op: between (its value is [lo, hi])"
                if value == "range" else
                "for several values, use widget: dropdown with multiple: true")
    elif kind == "literal_error":
        choices = re.findall(r"'([^']*)'", ctx.get("expected", ""))
        label = "aggregate op" if loc[-2:] == ("aggregate", "op") else str(key)
        msg = f"unsupported {label} {show(value)}" + choices_phrase(f"{key} accepts", choices)
        hint = did_you_mean(str(value), choices, cutoff=0.85)  # not median -> mean
        if not hint and label == "aggregate op":
            hint = _OTHER_OPS.get(str(value).lower(), "")
        if not hint and key == "unit" and str(value).lower() in ("weekday", "dayofweek", "dow", "hour"):
            hint = "for the day of the week use unit: day_of_week; for the hour of the day, hour_of_day"
        if not hint and key == "sort":
            hint = "count: the most frequent value first; name: by value (either way '(other)' last)"
    elif kind == "scalar_union":
        expected = list(dict.fromkeys(ctx["expected"]))
        if "a number" in expected and "a whole number" in expected:
            expected.remove("a whole number")
        if len(expected) > 1:
            expected = ["a boolean" if x == "true or false" else x for x in expected]
        said = expected[0] if len(expected) == 1 else f"{', '.join(expected[:-1])} or {expected[-1]}"
        msg = f"expected {said}, got {show(value)}"
        if key == "default" and isinstance(value, (list, dict)):
            hint = ("a parameter's default is one value: a string, a boolean or a number (a list"
                    " of them with multiple: true, [lo, hi] with op: between)")
    elif loc[-1:] == ("extent",) and kind in ("too_long", "tuple_type"):
        msg, hint = _wrong_length(loc, value)
    elif kind in _EXPECTED:
        msg = f"expected {_EXPECTED[kind]}, got {show(value)}"
        model = _model_at(loc, raw) if _EXPECTED[kind] == "a mapping" else None
        if model:
            msg += choices_phrase(f"{model_name(model)} accepts", list(model.model_fields))
        if key == "aggregate" and isinstance(value, str):
            hint = f"write aggregate: {{op: {value}, field: <column>}}"
        elif key == "bin" and isinstance(value, (int, float)) and not isinstance(value, bool):
            hint = f"write bin: {{maxbins: {value}}} (about that many bars) or bin: {{step: {value}}}"
        elif kind == "string_type" and isinstance(value, bool):
            hint = "YAML reads yes/no/on/off/true/false as booleans: quote the value"
        elif isinstance(value, bool):  # a number's key (models.Float, models.Int)
            hint = "YAML reads yes/no/on/off/true/false as booleans, not numbers"
        elif isinstance(value, str) and _quoted_scalar(value, kind):
            hint = "write it without quotes: a quoted value is text"
        elif kind == "string_type" and isinstance(value, (int, float)):
            hint = f"quote it to make it a string: '{value}'"
        elif kind == "string_type" and loc[-3:-2] == ("joins",) and key in ("key", "on") \
                and isinstance(value, list):
            hint = ("a join matches one column of the source with one of its table: a key of "
                    "several columns (a composite key) is not supported; join on one column "
                    "that holds them together, added to both tables' files")
    elif kind in _BOUNDS:
        name, op = _BOUNDS[kind]
        msg = f"must be {op} {ctx.get(name)}, got {show(value)}"
        if key == "top" and name == "le":
            hint = f"a categorical view shows at most {MAX_TOP} values, then one '(other)' bar"
        elif key == "maxbins" and name == "ge":
            hint = "values on both sides of 0 take two whole steps, so maxbins is at least 2"
    elif kind == "too_short":
        n = ctx.get("min_length", 1)
        msg = f"needs at least {n} item{'s' if n != 1 else ''}, got {ctx.get('actual_length', 0)}"
    elif kind == "too_long":
        msg = f"takes at most {ctx.get('max_length')} items, got {ctx.get('actual_length')}"
    elif kind == "string_pattern_mismatch":
        msg = f"{show(value)} is not a valid {key}"
        hint = NAME_RULE if key == "name" else f"it must match {ctx.get('pattern')}"
        if loc[-3:-2] == ("joins",) and key == "name":
            hint = ("a join's name prefixes its columns (<join>.<column>, in expressions too): "
                    "letters, digits and '_', starting with a letter or '_'")
    elif kind == "invalid_key":
        loc = loc[:-1]
        msg = f"key {show(key)} is not a string"
        hint = f"quote it: '{key}'"
    else:
        msg = err["msg"].removeprefix("Value error, ")
        hint = _value_hint(loc, msg)
    return SpecProblem(filename, line_of(lines, loc), render(loc), msg, hint)


def _value_hint(loc: Loc, msg: str) -> str:
    """Hints for the models' own checks (field validators)."""
    if loc[-2:] == ("bin", "step"):
        return "step is the width of one bin, in the field's units"
    if loc[-2:] == ("bin", "extent") and "finite" in msg:
        return "a double holds at most ±1.8e308: larger numbers (e.g. 1.0e+400) read as infinity"
    if loc[-2:] == ("bin", "extent"):
        return "write extent: [lo, hi] with lo < hi"
    if loc[-1:] == ("bin",) and "maxbins" in msg and "either" in msg:
        return "keep maxbins for a nice step fitted to the data, or a step (and an extent) of your own"
    if loc[-1:] == ("bin",):
        return ("e.g. bin: {step: 10, extent: [0, 100]}, bin: {step: 10} (the extent fitted to the data)"
                " or bin: {maxbins: 20} (a nice step fitted to the data)")
    if loc[-2:] == ("details", "columns") and "rid" in msg:
        return "derive the column under another name: source: {columns: {row_id: rid}}, then list row_id"
    if loc[-2:] == ("aggregate", "field") and "takes no field" in msg:
        return "to count only the rows where a column is not null, give source.filters: [\"<column> IS NOT NULL\"]"
    if loc[-2:] == ("aggregate", "field"):
        return "add field: <a numeric column>, or use op: count"
    if loc[-2:] == ("aggregate", "p"):
        return "e.g. aggregate: {op: quantile, field: delay, p: 0.9} for the 90th percentile"
    if loc[-2:] == ("aggregate", "method"):
        return "leave method out, or use op: quantile"
    if loc[-1:] == ("default",) and loc[-3:-2] == ("parameters",) and "multiple" in msg:
        return "write default: [ORD, ATL] (a list, even of one value: [ORD])"
    if loc[-1:] == ("multiple",):
        return "leave multiple out, or use widget: dropdown"
    if loc[-1:] == ("default",) and loc[-3:-2] == ("parameters",) and "finite" in msg:
        return "a slider's default is a double, at most ±1.8e308 (1.0e+400 reads as infinity)"
    if loc[-1:] == ("default",) and loc[-3:-2] == ("parameters",) and "empty" in msg:
        return "write default: [lo, hi] with lo <= hi"
    if loc[-1:] == ("default",) and loc[-3:-2] == ("parameters",):
        return ("op between takes default: [lo, hi]; the other ops one value"
                if "between" in msg or "range" in msg else
                "a parameter's default is one value; for a range use op: between with default: "
                "[lo, hi], for several values a dropdown with multiple: true")
    if "dropdown parameter" in msg:
        return "use widget: slider to compare with lt, lte, gt or gte"
    if "slider parameter" in msg:
        return "add op: lt, lte, gt, gte or between, or use widget: dropdown for 'eq'"
    return ""


def _wrong_length(loc: Loc, value: Any) -> tuple[str, str]:
    if loc[-1:] == ("extent",):
        return f"expected two numbers [lo, hi], got {show(value)}", "e.g. extent: [0, 100]"
    return f"has too few items: {show(value)}", ""


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
    ann: Any = m.DashboardSpec
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
    owners = [c for c in all_models() if key in c.model_fields and c is not model]
    if not owners:
        return ""
    names = ", ".join(model_name(c) for c in owners[:3])
    return f"{key!r} is a key of {names}" + (f", not of {model_name(model)}" if model else "")


# what a spec's author calls each part (the YAML's words, not the models' class names)
_SPEC_NAMES: dict[type[m.Model], str] = {
    m.DashboardSpec: "the dashboard", m.Source: "source", m.Bin: "bin", m.Aggregate: "aggregate",
    m.HistogramView: "a histogram view", m.TemporalView: "a temporal view",
    m.CategoricalView: "a categorical view", m.HeatmapView: "a heatmap view",
    m.Axis: "a heatmap axis (x, y)", m.CrossfilterGroup: "a crossfilter group",
    m.Highlight: "a highlight", m.Details: "details", m.Parameter: "a parameter",
    m.Interactions: "interactions", m.Profile: "profile", m.FunctionalDependency: "an fd",
}


def model_name(model: type[m.Model]) -> str:
    """A model's name in messages, as a spec's author calls it ('a histogram view'); a
    model without one gets its class name's words ('SectionLayout': 'a section layout')."""
    if model in _SPEC_NAMES:
        return _SPEC_NAMES[model]
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", model.__name__).lower()
    return ("an " if words[:1] in "aeiou" else "a ") + words


def all_models() -> list[type[m.Model]]:
    return [c for c in vars(m).values()
            if isinstance(c, type) and issubclass(c, m.Model) and c is not m.Model
            and not c.__name__.startswith("_")]


# --- rendering ------------------------------------------------------------------------


def line_of(lines: dict[Loc, int], loc: Loc) -> int | None:
    for n in range(len(loc), -1, -1):  # the nearest enclosing key that exists in the file
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def render(loc: Loc) -> str:
    text = ""
    for step in loc:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return text


def choices_phrase(label: str, choices: Iterable[str]) -> str:
    """The valid choices, on their own indented line under the message."""
    choices = list(choices)
    listed = ", ".join(choices[:12]) + (", ..." if len(choices) > 12 else "")
    return f"\n    {label}: {listed}" if choices else ""


def did_you_mean(name: str, choices: list[str], cutoff: float = 0.6) -> str:
    """A hint naming the choice closest to `name`: one that differs only in case first
    (difflib compares characters, so 'WEATHER' was no match for 'weather'), if any."""
    close = [c for c in choices if c.casefold() == name.casefold()][:1] or \
        difflib.get_close_matches(name, choices, n=1, cutoff=cutoff)
    return f"did you mean {close[0]!r}?" if close else ""


def show(value: Any) -> str:
    """A value as it would read in YAML."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value)


def article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def kind_of(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return f"a single value ({show(value)})"


def ordered(problems: list[SpecProblem]) -> list[SpecProblem]:
    """De-duplicated and in file order, so the first three shown are the first to fix."""
    seen, out = set(), []
    for p in problems:
        key = (p.path, p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return sorted(out, key=lambda p: p.line if p.line is not None else float("inf"))
