"""Read a dashboard YAML file into a validated `Dashboard`, or fail with `SpecError`.

Only this module sees raw YAML. Every problem is reported as
`file:line: key.path: what is wrong`, with the valid choices and a hint, at most three.
"""

from __future__ import annotations

import contextlib
import difflib
import math
import os
import re
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pydantic
import yaml

from brushfire.errors import SpecError, SpecProblem
from brushfire.limits import MAX_BARS, MAX_FILTERS, MAX_TOP
from brushfire.spec import aggregates
from brushfire.spec import expressions as ex
from brushfire.spec import models as m
from brushfire.views import view_type

Loc = tuple[str | int, ...]

def load_dashboard(path: str | Path) -> m.DashboardSpec:
    """Load and validate the spec at `path`; source paths are resolved against its folder."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        msg = f"cannot read spec: {e.strerror or e}"
        raise SpecError([SpecProblem(str(path), None, "", msg)]) from None
    return parse_dashboard(_decode(data, str(path)), filename=str(path), base_dir=path.parent)


def _decode(data: bytes, filename: str) -> str:
    """The spec's text: UTF-8 (a byte-order mark is fine), else an error at the bad byte."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        msg = "cannot read spec: the file is UTF-16 text, not UTF-8"
        raise SpecError([SpecProblem(filename, 1, "", msg, "save the file as UTF-8")])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        msg = (f"cannot read spec: not UTF-8 text (byte 0x{data[e.start]:02x} at column {column};"
               " Latin-1 or Windows-1252 text?)")
        raise SpecError([SpecProblem(filename, line, "", msg, "save the file as UTF-8")]) from None


def parse_dashboard(
    text: str | dict, filename: str = "<spec>", base_dir: str | Path | None = None
) -> m.DashboardSpec:
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
            "a dashboard spec has the keys", list(m.DashboardSpec.model_fields))
        hint = "start the file with top-level keys, e.g. 'name: flights'"
        raise SpecError([SpecProblem(filename, top_line or 1, "", msg, hint)])
    try:
        dash = m.DashboardSpec.model_validate(raw)
    except pydantic.ValidationError as e:
        errors = _merge_scalar_unions(e.errors(), raw)
        problems = [_problem_from_pydantic(err, raw, lines, filename) for err in errors]
        raise SpecError(_ordered(problems), cause=e) from None
    written = dash.source.path
    written_joins = [j.path for j in dash.source.joins]
    dash, unset = expand_environment(dash)
    problems = [
        SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint)
        for loc, msg, hint in (unset + check_references(dash) + check_profile(dash)
                               + (check_source(dash) if not unset else []) + check_joins(dash)
                               + check_expressions(dash))
    ]
    if not problems:
        dash = with_profile_views(dash)
        problems = [SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint)
                    for loc, msg, hint in check_limits(dash)]
    if problems:
        raise SpecError(_ordered(problems))
    if base_dir is not None:
        joins = [j.model_copy(update={"path": _resolve(j.path, base_dir)}) for j in dash.source.joins]
        source = dash.source.model_copy(update={"path": _resolve(dash.source.path, base_dir),
                                                "joins": joins})
        dash = dash.model_copy(update={"source": source})
    # Keep where each path was written, for errors reading a table (brushfire.source).
    base = str(Path(base_dir).resolve()) if base_dir is not None else "."
    object.__setattr__(dash.source, "_spec_path", SpecPath(
        filename, _line(lines, ("source", "path")), written, base))
    for i, (j, w) in enumerate(zip(dash.source.joins, written_joins, strict=True)):
        loc = ("source", "joins", i, "path")
        object.__setattr__(j, "_spec_path", SpecPath(filename, _line(lines, loc), w, base,
                                                     _render(loc)))
    # Keep where the spec came from, for column errors found later against the source.
    object.__setattr__(dash, "_lines", lines)
    object.__setattr__(dash, "_filename", filename)
    return dash


@dataclass(frozen=True)
class SpecPath:
    """Where a table's path was written (kept on the Source, and on each Join, as
    `_spec_path`)."""

    file: str
    line: int | None
    written: str  # as in the spec
    base_dir: str  # the spec file's folder, against which a relative path resolves
    key: str = "source.path"  # its key path in the spec


def _resolve(path: str, base_dir: str | Path) -> str:
    """A spec's path relative to the spec's folder `base_dir` (URIs as they are)."""
    if _URI.match(path):
        return path
    return str((Path(base_dir) / Path(path).expanduser()).resolve())


_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_FORMATS = typing.get_args(typing.get_args(m.Source.model_fields["format"].annotation)[0])


_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_environment(dash: m.DashboardSpec, environ: dict[str, str] | None = None
                       ) -> tuple[m.DashboardSpec, list[tuple[Loc, str, str]]]:
    """The spec with environment variables in `source.path` and each join's `path`
    replaced: `${NAME}`, or `${NAME:-default}` (the default when NAME is unset or empty).
    An unset variable without a default is a problem at that path."""
    environ = os.environ if environ is None else environ
    problems: list[tuple[Loc, str, str]] = []
    path = _expanded(dash.source.path, environ, ("source", "path"), problems)
    joins = [j.model_copy(update={"path": p}) if (p := _expanded(
        j.path, environ, ("source", "joins", i, "path"), problems)) != j.path else j
        for i, j in enumerate(dash.source.joins)]
    if problems:
        return dash, problems
    if path == dash.source.path and all(a is b for a, b in zip(joins, dash.source.joins, strict=True)):
        return dash, []
    source = dash.source.model_copy(update={"path": path, "joins": joins})
    return dash.model_copy(update={"source": source}), []


def _expanded(written: str, environ, loc: Loc, problems: list) -> str:
    missing: list[str] = []

    def value(match: re.Match) -> str:
        name, default = match.group(1), match.group(2)
        got = environ.get(name)
        if default is not None and not got:
            return default
        if got is None:
            missing.append(name)
            return match.group(0)
        return got

    path = _ENV_VAR.sub(value, written)
    if missing:
        names = list(dict.fromkeys(missing))
        listed = ", ".join(repr(n) for n in names)
        msg = (f"environment variable {listed} is not set" if len(names) == 1 else
               f"environment variables {listed} are not set") + f" (in {written!r})"
        hint = (f"set it before starting Brushfire (e.g. {names[0]}=/data brushfire serve ...),"
                f" or give a default: ${{{names[0]}:-/data}}")
        problems.append((loc, msg, hint))
    return path


def check_profile(dash: m.DashboardSpec) -> list[tuple[Loc, str, str]]:
    """Each profiling check's view name is new (or its own view, in a dumped spec), and a
    functional dependency's right-hand side does not repeat its left-hand side."""
    out: list[tuple[Loc, str, str]] = []
    if dash.profile is None:
        return out
    taken = {p.name: "a parameter's" for p in dash.interactions.parameters}
    taken |= {v.name: "a view's" for v in dash.views if not _is_profile_view(dash, v)}
    for i, fd in enumerate(dash.profile.fd):
        name = fd.view_name
        if name in taken:
            out.append((("profile", "fd", i), f"its view's name {name!r} is {taken[name]} name already",
                        "give the check another name: name: <identifier>"))
        taken[name] = f"profile.fd[{i}]'s"
        both = [c for c in fd.rhs if c in fd.lhs]
        if both:
            out.append((("profile", "fd", i, "rhs"),
                        f"column {both[0]!r} is on both sides: the dependency always holds",
                        "list each column on one side only"))
    return out


def _is_profile_view(dash: m.DashboardSpec, v) -> bool:
    """Is `v` the view a profiling check adds (found again when a dumped spec is loaded)?"""
    return (dash.profile is not None and isinstance(v, m.CategoricalView) and v.field == v.name
            and any(fd.view_name == v.name for fd in dash.profile.fd))


def with_profile_views(dash: m.DashboardSpec) -> m.DashboardSpec:
    """The spec with each profiling check's linked view: a categorical view of its column
    (bars `violates` and `holds`, computed by capture: capture/profiling.py), in every
    crossfilter group (a dashboard without groups gets one of all its views), so that
    selecting a bar brushes exactly those rows in the other views."""
    if dash.profile is None or not dash.profile.fd:
        return dash
    views = list(dash.views)
    names = [fd.view_name for fd in dash.profile.fd]
    for fd in dash.profile.fd:
        if not any(v.name == fd.view_name for v in views):
            title = f"{', '.join(fd.lhs)} → {', '.join(fd.rhs)} (functional dependency)"
            views.append(m.CategoricalView(type="categorical", name=fd.view_name, title=title,
                                           field=fd.view_name, top=2, other=False))
    groups = dash.interactions.crossfilter or [
        m.CrossfilterGroup(views=[v.name for v in dash.views if v.name not in names])]
    groups = [g.model_copy(update={"views": g.views + [n for n in names if n not in g.views]})
              for g in groups]
    interactions = dash.interactions.model_copy(update={"crossfilter": groups})
    return dash.model_copy(update={"views": views, "interactions": interactions})


def profile_columns(dash: m.DashboardSpec) -> list[str]:
    """The columns capture adds for the profiling checks (one per check, named as its view)."""
    return [fd.view_name for fd in dash.profile.fd] if dash.profile else []


def spec_error(dash: m.DashboardSpec, loc: Loc, msg: str, hint: str = "") -> SpecError:
    """A SpecError at `loc` of the spec `dash` was loaded from (file and line kept by
    `parse_dashboard`), for problems found after loading: against the data, at capture."""
    lines: dict[Loc, int] = getattr(dash, "_lines", {})
    return SpecError([SpecProblem(getattr(dash, "_filename", "<spec>"), _line(lines, loc),
                                  _render(loc), msg, hint)])


def check_profile_columns(dash: m.DashboardSpec, columns) -> None:
    """The columns the profiling checks add must be new: SpecError at the check whose view
    name is a column of the source (`columns`: its names, derived columns included)."""
    lower = {c.lower() for c in columns}  # Spark resolves names case-insensitively
    for i, fd in enumerate(dash.profile.fd if dash.profile else []):
        if fd.view_name.lower() in lower:
            msg = f"its view's name {fd.view_name!r} is a column of the source already"
            raise spec_error(dash, ("profile", "fd", i), msg,
                             "give the check another name: name: <identifier>")


def check_source(dash: m.DashboardSpec) -> list[tuple[Loc, str, str]]:
    """The source's format, and each join's, must be given or follow from the path's
    extension."""
    out = _table_problems(dash.source, ("source",), "the source's", "source")
    for i, j in enumerate(dash.source.joins):
        out += _table_problems(j, ("source", "joins", i), f"the {j.name} join's", f"source.joins[{i}]")
    return out


def _table_problems(table: m.Table, loc: Loc, whose: str, where: str) -> list[tuple[Loc, str, str]]:
    if not table.path.strip():
        return [((*loc, "path"), "the path is empty", "give the file or directory to read")]
    if table.format is None and table.resolved_format not in _FORMATS:
        name = table.path.rstrip("/").rsplit("/", 1)[-1]
        ext = f"extension '.{name.rsplit('.', 1)[-1]}'" if "." in name else "no extension"
        msg = f"cannot tell {whose} format: {name!r} has {ext}" + _choices("formats", _FORMATS)
        return [((*loc, "path"), msg, f"add format: parquet (or csv, json, orc) to {where}")]
    return []


def check_joins(dash: m.DashboardSpec) -> list[tuple[Loc, str, str]]:
    """Joins: distinct names that are no derived column's, and each `on` naming the
    source or a join above it (no join reads a join below it, so there is no cycle)."""
    out: list[tuple[Loc, str, str]] = []
    joins = dash.source.joins
    names = [j.name for j in joins]
    derived = {c.lower(): c for c in dash.source.columns}
    for i, j in enumerate(joins):
        loc: Loc = ("source", "joins", i)
        if names.index(j.name) != i:
            out.append(((*loc, "name"), f"duplicate join name {j.name!r}",
                        f"source.joins[{names.index(j.name)}] has the same name; join names must be unique"))
        if j.name.lower() in derived:
            out.append(((*loc, "name"), f"join name {j.name!r} is a derived column's name",
                        "a join's columns are <join>.<column>: give the join another name"))
        if j.on.lower() in derived:
            out.append(((*loc, "on"), f"{j.on!r} is a derived column, and derived columns are "
                        "computed after the joins", "join on a column of the source's files "
                        "(a derived column may read the joined columns)"))
            continue
        head, dot, _ = j.on.partition(".")
        if not dot or head not in names:
            continue  # a column of the source (checked against its schema)
        k = names.index(head)
        if k == i:
            out.append(((*loc, "on"), f"join {j.name!r} is joined on its own column {j.on!r}",
                        "name a column of the source, or of a join above this one"))
        elif k > i:
            cycle = _join_cycle(joins, i)
            if cycle:
                msg = f"the joins form a cycle: {' -> '.join(cycle)}"
            else:
                msg = f"{j.on!r} is a column of join {head!r}, which is declared below this one"
            out.append(((*loc, "on"), msg,
                        "a join's on names a column of the source or of a join above it: "
                        "reorder source.joins"))
    return out


def _join_cycle(joins: list[m.Join], start: int) -> list[str]:
    """The names around a cycle of `on` references from joins[start], or []."""
    by_name = {j.name: j for j in joins}
    path = [joins[start].name]
    j = joins[start]
    while True:
        head, dot, _ = j.on.partition(".")
        if not dot or head not in by_name:
            return []
        if head == path[0]:
            return [*path, head]
        if head in path:
            return []
        path.append(head)
        j = by_name[head]


def check_references(dash: m.DashboardSpec) -> list[tuple[Loc, str, str]]:
    """Problems a single model cannot see: names that must refer to other parts."""
    out: list[tuple[Loc, str, str]] = []
    names = [v.name for v in dash.views]
    names += [n for n in profile_columns(dash) if n not in names]  # the checks' views
    out += _name_problems(("name",), dash.name)  # (its characters: the model's pattern)
    first: dict[str, int] = {}
    for i, v in enumerate(dash.views):
        out += _name_problems(("views", i, "name"), v.name)
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
        if getattr(v, "snap", False) and m.brush_of(v) == "none":
            out.append((("views", i, "snap"), "snap is for a brush, and this view's brush is 'none'",
                        "remove snap, or the brush: none that keeps the view from being brushed"))

    def ref(loc: Loc, name: str, role: str) -> None:
        if name not in names:
            msg = f"unknown view {name!r}" + _choices("views", names)
            hint = _did_you_mean(name, names) or f"{role} must name one of the views above"
            out.append((loc, msg, hint))

    ix = dash.interactions
    for g, group in enumerate(ix.crossfilter):
        for j, name in enumerate(group.views):
            ref(("interactions", "crossfilter", g, "views", j), name, "a crossfilter group")
            if name in group.views[:j]:
                out.append((("interactions", "crossfilter", g, "views", j),
                            f"view {name!r} is listed twice in this group",
                            f"it is views[{group.views.index(name)}] already: remove one"))
    for h, hl in enumerate(ix.highlight):
        ref(("interactions", "highlight", h, "source"), hl.source, "a highlight source")
        for j, name in enumerate(hl.targets):
            ref(("interactions", "highlight", h, "targets", j), name, "a highlight target")
    placed: dict[str, Loc] = {}
    for k, section in enumerate(dash.layout or ()):
        for r, row in enumerate(section.rows):
            for j, name in enumerate(row):
                loc = ("layout", k, "rows", r, j)
                ref(loc, name, "a layout")
                if name in placed:
                    out.append((loc, f"view {name!r} is placed twice",
                                f"it is at {_render(placed[name])} already: remove one"))
                placed.setdefault(name, loc)
    pnames = [p.name for p in ix.parameters]
    for i, p in enumerate(ix.parameters):
        out += _name_problems(("interactions", "parameters", i, "name"), p.name)
        if p.name in names:
            msg = f"parameter name {p.name!r} is already used by a view"
        elif pnames.index(p.name) != i:
            msg = f"parameter name {p.name!r} is already used by parameters[{pnames.index(p.name)}]"
        else:
            continue
        out.append((("interactions", "parameters", i, "name"), msg,
                    "parameters and views need distinct names"))
    return out


_NAME = re.compile(m.NAME_PATTERN)
MAX_NAME = 100  # characters; names make up file names of the lineage store (at most 255 bytes)


def _name_problems(loc: Loc, name: str) -> list[tuple[Loc, str, str]]:
    """A view's or parameter's name is an identifier, as the dashboard's: names key the
    lineage store's files ('a/b' crashed capture, after its Spark job) and the selection
    state (where 'column:x' is a filter on a source column)."""
    if not _NAME.match(name):
        return [(loc, f"{_show(name)} is not a valid name", _NAME_RULE)]
    if len(name) > MAX_NAME:
        return [(loc, f"{_show(name[:20] + '…')} is {len(name)} characters long; at most {MAX_NAME}",
                 "use a shorter name, and a title for the words")]
    return []


def check_limits(dash: m.DashboardSpec) -> list[tuple[Loc, str, str]]:
    """Sizes the engine does not support (`brushfire.limits`): bars per view and filters
    per dashboard. Found here, before capture, not after a Spark scan."""
    out: list[tuple[Loc, str, str]] = []
    for i, v in enumerate(dash.views):
        axes = view_type(v).axes(v)
        for a in axes:
            out += _bin_limit(("views", i, *a.path), a.bin, "a view" if len(axes) == 1 else f"a {v.type} axis")
        counts = [a.bin.count for a in axes]
        if len(axes) > 1 and all(n <= MAX_BARS for n in counts) and math.prod(counts) > MAX_BARS:
            sizes, nx = " × ".join(f"{n:,}" for n in counts), counts[0]
            msg = f"{sizes} = {math.prod(counts):,} cells; a {v.type} has at most {MAX_BARS:,} cells"
            hint = f"use larger steps on x or y, e.g. at most {MAX_BARS // nx:,} y bars for {nx:,} x bars"
            out.append((("views", i), msg, hint))
    filters: list[tuple[Loc, str]] = []  # as plan.py counts them: brushable views, then parameters
    for g, group in enumerate(dash.interactions.crossfilter):
        for j, name in enumerate(group.views):
            if name in {v.name for v in dash.views} and m.brush_of(dash.view(name)) != "none" \
                    and name not in {n for _, n in filters}:
                filters.append((("interactions", "crossfilter", g, "views", j), name))
    for i, p in enumerate(dash.interactions.parameters):
        filters.append((("interactions", "parameters", i), p.name))
    if len(filters) > MAX_FILTERS:
        n_params = len(dash.interactions.parameters)
        msg = (f"{len(filters)} filters: {len(filters) - n_params} brushable views in crossfilter"
               f" groups and {n_params} parameter{'s' if n_params != 1 else ''}; a dashboard has"
               f" at most {MAX_FILTERS}")
        hint = (f"this is filter {MAX_FILTERS + 1}; set brush: none on views nobody needs to brush,"
                " or split the dashboard")
        out.append((filters[MAX_FILTERS][0], msg, hint))
    return out


_UNIT_ORDER = ("minute", "hour", "day", "week", "month", "year")


def check_temporal_bars(dash: m.DashboardSpec, ranges: dict[str, tuple[datetime, datetime]]) -> None:
    """Temporal views have a bar per calendar unit from the first to the last timestamp:
    with the source's range known (Parquet statistics), their number must fit MAX_BARS.
    Skipped when static filters may narrow the range."""
    if dash.source.filters:
        return
    lines: dict[Loc, int] = getattr(dash, "_lines", {})
    filename: str = getattr(dash, "_filename", "<spec>")
    problems = []
    for i, v in enumerate(dash.views):
        cal = view_type(v).calendar(v)
        if cal is None or cal[0] in dash.source.columns or cal[0] not in ranges:
            continue
        field, unit = cal
        lo, hi = ranges[field]
        n = calendar_bars(unit, lo, hi)
        if n <= MAX_BARS:
            continue
        coarser = next((u for u in _UNIT_ORDER[_UNIT_ORDER.index(unit) + 1:]
                        if calendar_bars(u, lo, hi) <= MAX_BARS), "year")
        loc: Loc = ("views", i, "unit")
        msg = (f"{n:,} {unit} bars from {lo:%Y-%m-%d %H:%M} to {hi:%Y-%m-%d %H:%M} (the first and"
               f" last {field} in the source); a view has at most {MAX_BARS:,} bars")
        hint = f"use unit: {coarser} ({calendar_bars(coarser, lo, hi):,} bars)"
        problems.append(SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint))
    if problems:
        raise SpecError(problems)


def temporal_fields(dash: m.DashboardSpec) -> list[str]:
    """The timestamp fields whose range decides how many bars a view has."""
    cals = [view_type(v).calendar(v) for v in dash.views]
    return list(dict.fromkeys(c[0] for c in cals if c is not None))


def calendar_bars(unit: str, lo: datetime, hi: datetime) -> int:
    """UTC calendar units from the one holding `lo` to the one holding `hi` (weeks start on
    Monday), as capture's calendar bins count them."""
    if unit == "year":
        return hi.year - lo.year + 1
    if unit == "month":
        return (hi.year - lo.year) * 12 + hi.month - lo.month + 1
    days = (hi.date() - lo.date()).days
    if unit == "week":
        return (days + lo.weekday()) // 7 + 1
    if unit == "day":
        return days + 1
    hours = days * 24 + hi.hour - lo.hour
    if unit == "hour":
        return hours + 1
    return hours * 60 + hi.minute - lo.minute + 1


def _bin_limit(loc: Loc, b: m.Bin, what: str) -> list[tuple[Loc, str, str]]:
    n = b.count
    if n <= MAX_BARS:
        return []
    lo, hi = b.extent
    bars = "more than 10^18" if n >= 10**18 else f"{n:,}"
    msg = (f"{bars} bars (extent [{lo:g}, {hi:g}] in steps of {b.step:g}); {what} has at most"
           f" {MAX_BARS:,} bars")
    width = hi / MAX_BARS - lo / MAX_BARS  # no overflow, even for an extent of ±1.7e308
    hint = f"use step: {_round_up(width)} or more, or a narrower extent"
    return [(loc, msg, hint)]


def _round_up(x: float) -> str:
    """x rounded up to 2 significant digits, as it would read in YAML."""
    exp = math.floor(math.log10(x)) - 1
    return f"{math.ceil(x / 10.0**exp) * 10.0**exp:.3g}"


_DERIVED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_expressions(dash: m.DashboardSpec) -> list[tuple[Loc, str, str]]:
    """Derived columns and static filters: names, and expressions in the allowed language
    (spec/expressions.py), unless $BRUSHFIRE_TRUSTED_EXPRESSIONS is set."""
    out: list[tuple[Loc, str, str]] = []
    check = not ex.trusted()
    for name, text in dash.source.columns.items():
        loc: Loc = ("source", "columns", name)
        if not _DERIVED_NAME.match(name):
            out.append((loc, f"derived column name {name!r} is not an identifier",
                        "use letters, digits and '_', starting with a letter or '_'"))
        out += _expression_problem(loc, text, check, "derived column")
    for i, text in enumerate(dash.source.filters):
        loc = ("source", "filters", i)
        out += _expression_problem(loc, text, check, "filter")
        with contextlib.suppress(ex.ExpressionError):
            kind = ex.analyze(text, check=False).kind
            if kind not in (None, "boolean", "null"):
                msg = f"a static filter is a condition, but this is {_kind_phrase(kind)} expression"
                out.append((loc, msg, "compare it with something, e.g. x > 0, or x IS NOT NULL"))
    return out


def _expression_problem(loc: Loc, text: str, check: bool, what: str) -> list[tuple[Loc, str, str]]:
    if not check:
        return []
    try:
        ex.analyze(text)
    except ex.ExpressionError as e:
        where = f" (at character {e.pos + 1}: {_excerpt(text, e.pos)})" \
            if e.pos is not None and len(text) > 1 else ""
        return [(loc, f"{e.message}{where}", e.hint)]
    return []


def _excerpt(text: str, pos: int) -> str:
    piece = text[pos:pos + 30]
    return repr(piece + ("…" if len(text) > pos + 30 else "")) if piece else "the end"


def _kind_phrase(kind: str) -> str:
    return {"int": "a number", "decimal": "a number", "double": "a number",
            "string": "a string", "temporal": "a timestamp",
            "value": "an arithmetic"}.get(kind, f"{_a(kind)} {kind}")


def derived_kinds(dash: m.DashboardSpec, schema: dict[str, str]) -> dict[str, str | None]:
    """Each derived column's kind as spec/expressions.py infers it from the source schema
    (None: unknown), in order: a derived column may read the ones before it."""
    known: dict[str, str | None] = {c: ("double" if k == "number" else k) for c, k in schema.items()}
    out: dict[str, str | None] = {}
    for name, text in dash.source.columns.items():
        try:
            out[name] = ex.analyze(text, known, check=False).kind
        except ex.ExpressionError:
            out[name] = None
        known[name] = out[name]
    return out


def _expression_columns(dash: m.DashboardSpec, schema: dict[str, str]) -> list[SpecProblem]:
    """The columns each derived column and filter reads must exist (Spark resolves names
    case-insensitively); a derived column sees the source and the derived columns above it."""
    lines: dict[Loc, int] = getattr(dash, "_lines", {})
    filename: str = getattr(dash, "_filename", "<spec>")
    names = {c.lower(): c for c in schema}
    unread = _unread_joins(dash, schema)
    later = {c.lower() for c in dash.source.columns}
    problems: list[SpecProblem] = []
    exprs = [(("source", "columns", n), t) for n, t in dash.source.columns.items()]
    exprs += [(("source", "filters", i), t) for i, t in enumerate(dash.source.filters)]
    for loc, text in exprs:
        try:
            columns = ex.analyze(text, check=False).columns
        except ex.ExpressionError:
            continue  # reported by check_expressions, or trusted
        for col, _ in dict.fromkeys(columns):
            head, dot, _ = col.partition(".")
            if col.lower() in names or (dot and (head.lower() in names or head in unread)):
                continue  # (a struct's field; a join whose table Spark reads at capture)
            if col.lower() in later:
                msg = f"column {col!r} is derived below this one: a derived column reads the ones above it"
                hint = "move it above in source.columns"
            else:
                msg = f"column {col!r} is not in the source" + _choices("columns", list(names.values()))
                hint = _did_you_mean(col, list(names.values())) or \
                    "name a column of the source, or a derived column above this one"
            problems.append(SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint))
        if loc[1] == "columns":
            names[str(loc[2]).lower()] = str(loc[2])
            later.discard(str(loc[2]).lower())
    return problems


def expression_warnings(dash: m.DashboardSpec, schema: dict[str, str] | None = None,
                        spark_types: dict[str, str] | None = None) -> list[SpecProblem]:
    """Derived columns Spark computes as decimals through a division: the quotient is
    rounded (to 6 places for `minute(date) / 60.0`), so a brush at an exact fraction misses
    rows. `spark_types` ({name: Spark's type}) adds what Spark said."""
    lines: dict[Loc, int] = getattr(dash, "_lines", {})
    filename: str = getattr(dash, "_filename", "<spec>")
    known: dict[str, str | None] = {c: ("double" if k == "number" else k)
                                    for c, k in (schema or {}).items()}
    out = []
    for name, text in dash.source.columns.items():
        try:
            info = ex.analyze(text, known, check=False)
        except ex.ExpressionError:
            continue
        known[name] = info.kind
        if not info.decimal_divisions:
            continue
        loc = ("source", "columns", name)
        typed = f" (Spark types it {spark_types[name]})" if spark_types and name in spark_types else ""
        msg = (f"{info.decimal_divisions[0]} divides decimals{typed}: Spark rounds the quotient to"
               " a fixed number of decimal places (32/60 becomes 0.533333), so a brush starting"
               " at an exact fraction misses rows")
        hint = "compute in doubles: CAST(... AS DOUBLE), or a double literal such as 60.0D"
        out.append(SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint))
    return out


def check_columns(dash: m.DashboardSpec, schema: dict[str, str] | None,
                  derived: dict[str, str | None] | None = None) -> None:
    """Check every column the spec reads against the source schema {name: kind}.

    kind is 'number', 'temporal', 'string' or 'other' (or a finer kind of
    spec/expressions.py). Derived columns have the kinds in `derived` (Spark's, from
    capture/analyze.py), else the kinds spec/expressions.py infers; an unknown kind is
    not checked. Raises SpecError naming the key that refers to a missing or ill-typed
    column; for a derived column of the wrong kind, its key in source.columns. With no
    schema (CSV, JSON: known once Spark reads them), only derived columns whose kind the
    expression alone decides (e.g. concat(...) is a string) are checked.
    """
    partial = schema is None
    schema = schema or {}
    lines: dict[Loc, int] = getattr(dash, "_lines", {})
    filename: str = getattr(dash, "_filename", "<spec>")
    if derived is None:
        derived = derived_kinds(dash, schema)
    derived_coarse = {c: _coarse(k) if k not in (None, "null", "value") else "derived"
                      for c, k in derived.items()}
    known = {c: _coarse(k) for c, k in schema.items()} | derived_coarse
    known |= dict.fromkeys(profile_columns(dash), "string")  # added by capture
    problems: list[SpecProblem] = [] if partial else _expression_columns(dash, schema)

    unread = _unread_joins(dash, schema)

    def need(loc: Loc, column: str | None, kinds: tuple[str, ...] = (), user: str = "",
             hints: dict[str, str] | None = None) -> None:
        if column is None:
            return
        kind = known.get(column)
        if kind is None and (partial or (column.partition(".")[0] in unread and "." in column)):
            return  # (a dimension table whose schema Spark infers: checked at capture)
        join = dash.source.join_of(column)
        if kind is None and join is not None:
            columns = [c for c in known if c.startswith(f"{join.name}.")]
            msg = (f"column {column!r} is not in the table of join {join.name!r} ({Path(join.path).name})"
                   + _choices("columns", columns))
            hint = _did_you_mean(column, columns) or "name a column of the dimension table as <join>.<column>"
            problems.append(SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint))
        elif kind is None:
            msg = f"column {column!r} is not in the source" + _choices("columns", list(known))
            hint = _did_you_mean(column, list(known)) or "add it to source.columns as a derived column"
            problems.append(SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint))
        elif kinds and kind not in kinds and kind != "derived":
            is_ = f"a {kind} column" if kind in _KINDS else "neither number, temporal nor string"
            if column in dash.source.columns:  # the derived column's expression is what to fix
                at: Loc = ("source", "columns", column)
                what = {"temporal": "a timestamp", "string": "a string", "number": "a number"}.get(
                    kind, "neither number, timestamp nor string")
                msg = (f"derived column {column!r} is {what}, but"
                       f" {_render(loc)} ({user}) needs a {' or '.join(kinds)} column")
                hint = _DERIVED_HINTS.get(kinds[0], "")
                problems.append(SpecProblem(filename, _line(lines, at), _render(at), msg, hint))
                return
            msg = f"column {column!r} is {is_}, but {user} needs a {' or '.join(kinds)} column"
            hints = hints or {}
            hint = hints.get(kind) or hints.get("*") or f"pick a {kinds[0]} column, or derive one in source.columns"
            problems.append(SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint))

    if not partial:
        problems += _join_problems(dash, schema, unread)
    for i, v in enumerate(dash.views):
        for n in view_type(v).field_needs(v):
            need(("views", i, *n.path), n.field, n.kinds, n.user, n.hints)
        op = v.aggregate.op
        kinds = aggregates.op(op).measures
        need(("views", i, "aggregate", "field"), v.aggregate.field, kinds,
             f"aggregate op '{op}'", {"*": "aggregate a numeric column, or use op: count",
                                      "temporal": "ops min and max take timestamps; "
                                      "or use op: count"})
    if dash.interactions.details:
        for j, c in enumerate(dash.interactions.details.columns):
            need(("interactions", "details", "columns", j), c)
    for i, p in enumerate(dash.interactions.parameters):
        need(("interactions", "parameters", i, "field"), p.field,
             ("number", "temporal") if p.widget == "slider" else (), "a slider parameter",
             {"*": "use widget: dropdown to pick values instead of a range"})
    for i, fd in enumerate(dash.profile.fd if dash.profile else []):
        for side in ("lhs", "rhs"):
            for j, c in enumerate(getattr(fd, side)):
                need(("profile", "fd", i, side, j), c)
    if problems:
        raise SpecError(_ordered(problems))


def _unread_joins(dash: m.DashboardSpec, schema: dict[str, str]) -> set[str]:
    """Joins none of whose columns `schema` has: their dimension table's schema is known
    only once Spark reads it (CSV, JSON, remote)."""
    prefixes = {c.partition(".")[0] for c in schema if "." in c}
    return {j.name for j in dash.source.joins if j.name not in prefixes}


def _join_problems(dash: m.DashboardSpec, schema: dict[str, str], unread: set[str]) -> list[SpecProblem]:
    """Each join's name is no column of the source, its `on` a column of the source or of
    a join above it, and its `key` a column of its dimension table."""
    lines: dict[Loc, int] = getattr(dash, "_lines", {})
    filename: str = getattr(dash, "_filename", "<spec>")
    src = dash.source
    own = [c for c in schema if src.join_of(c) is None]
    lower = {c.lower(): c for c in own}
    derived = {c.lower() for c in src.columns}  # (check_joins: no join's on or name)
    out: list[SpecProblem] = []

    def problem(loc: Loc, msg: str, hint: str) -> None:
        out.append(SpecProblem(filename, _line(lines, loc), _render(loc), msg, hint))

    for i, j in enumerate(src.joins):
        loc: Loc = ("source", "joins", i)
        if j.name.lower() in lower:
            problem((*loc, "name"), f"join name {j.name!r} is a column of the source "
                    f"({lower[j.name.lower()]!r})",
                    "a join's columns are <join>.<column>: give the join another name")
        if j.name not in unread:
            columns = [c.partition(".")[2] for c in schema if c.startswith(f"{j.name}.")]
            if f"{j.name}.{j.key}" not in schema:
                msg = (f"column {j.key!r} is not in the table of join {j.name!r} "
                       f"({Path(j.path).name})" + _choices("columns", columns))
                problem((*loc, "key"), msg, _did_you_mean(j.key, columns) or
                        "name the column of the dimension table that the source's on column holds")
        on = src.join_of(j.on)
        if on is not None and on.name in unread:
            continue
        if on is None and j.on not in schema and j.on.lower() not in derived:
            msg = f"column {j.on!r} is not in the source" + _choices("columns", own)
            problem((*loc, "on"), msg, _did_you_mean(j.on, own) or
                    "name a column of the source, or <join>.<column> of a join above this one")
        elif on is not None and j.on not in schema:
            columns = [c for c in schema if c.startswith(f"{on.name}.")]
            msg = f"column {j.on!r} is not in the table of join {on.name!r}" + _choices("columns", columns)
            problem((*loc, "on"), msg, _did_you_mean(j.on, columns) or "")
    return out


_KINDS = ("number", "temporal", "string")
_DERIVED_HINTS = {
    "number": "make the expression a number, e.g. CAST(... AS DOUBLE)",
    "temporal": "make the expression a timestamp, e.g. to_timestamp(...) or timestamp_seconds(...)",
}


def _coarse(kind: str) -> str:
    """A kind of spec/expressions.py (or of a schema) as check_columns compares them."""
    if kind in ex.NUMBER:
        return "number"
    return kind if kind in _KINDS else "other"


# --- reading YAML with line marks ------------------------------------------------------


MAX_DEPTH = 64  # nesting levels; real specs use fewer than 10
MAX_NODES = 100_000  # values in the document once aliases (*name) are expanded


def _read_yaml(text: str, filename: str) -> tuple[yaml.Node | None, Any]:
    """The document's node tree (for lines) and its Python value.

    Refused before anything walks the tree: nesting deeper than MAX_DEPTH (PyYAML's
    composer is recursive) and aliases expanding to more than MAX_NODES values (a
    "billion laughs" document is a few lines that expand to billions of values).
    """
    try:
        _check_depth(text, filename)
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                _check_expansion(node, filename)
                _string_keys(node)
            raw = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        raise SpecError([_yaml_problem(e, text, filename)]) from None
    return node, raw


_BOOL = "tag:yaml.org,2002:bool"


def _string_keys(root: yaml.Node) -> None:
    """Keys read as written: YAML 1.1 reads a plain `on` (yes, no, off) as a boolean, but a
    key of a spec is a name (a join's `on:`), never a boolean. Values keep YAML's reading."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.tag == _BOOL and k.style is None:
                    k.tag = "tag:yaml.org,2002:str"
                stack.append(v)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


_OPEN = (yaml.BlockMappingStartToken, yaml.BlockSequenceStartToken,
         yaml.FlowMappingStartToken, yaml.FlowSequenceStartToken)
_CLOSE = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


def _check_depth(text: str, filename: str) -> None:
    depth = 0
    for token in yaml.scan(text, Loader=yaml.SafeLoader):  # iterative, unlike composing
        if isinstance(token, _OPEN):
            depth += 1
            if depth > MAX_DEPTH:
                msg = f"the document nests more than {MAX_DEPTH} levels deep"
                hint = "a dashboard spec needs fewer than 10 levels: check the brackets"
                raise SpecError([SpecProblem(filename, token.start_mark.line + 1, "", msg, hint)])
        elif isinstance(token, _CLOSE):
            depth -= 1


def _check_expansion(root: yaml.Node, filename: str) -> None:
    """Count the values the document holds with its aliases expanded, without expanding
    them (each node's count is memoized), and refuse cycles and alias bombs."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_:
            msg = "a YAML alias refers to a value that contains it (a cycle)"
            raise SpecError([SpecProblem(filename, node.start_mark.line + 1, "", msg,
                                         "write the value out instead of the alias")])
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = []
        open_.add(key)
        sizes[key] = 1 + sum(size(c) for c in children)
        open_.discard(key)
        return sizes[key]

    total = size(root)
    if total <= MAX_NODES:
        return
    # point at the top-level key whose value expands the most (an alias's use, if any)
    if isinstance(root, yaml.MappingNode) and root.value:
        k, v = max(root.value, key=lambda kv: (size(kv[1]), kv[1].start_mark.line < kv[0].start_mark.line))
        line, path, n = k.start_mark.line + 1, str(k.value), size(v)
    else:
        line, path, n = root.start_mark.line + 1, "", total
    msg = (f"YAML aliases expand this to {n:,} values; a spec holds at most {MAX_NODES:,}"
           " (refusing what looks like an alias bomb)")
    hint = "write the values out, or use fewer nested aliases (*name)"
    raise SpecError([SpecProblem(filename, line, path, msg, hint)])


def _yaml_problem(e: yaml.YAMLError, text: str, filename: str) -> SpecProblem:
    """PyYAML's complaint, placed at the line to fix."""
    problem = str(getattr(e, "problem", None) or e).replace("'<stream end>'", "the end of the file")
    mark, context = getattr(e, "problem_mark", None), getattr(e, "context", None)
    cmark = getattr(e, "context_mark", None)
    line = mark.line + 1 if mark else None
    if isinstance(e, yaml.reader.ReaderError):  # a character YAML does not allow
        line = text.count("\n", 0, e.position) + 1
        code = ord(e.character) if isinstance(e.character, str) else e.character
        problem = f"character #x{code:04x} is not allowed in YAML ({e.reason})" \
            if isinstance(code, int) else str(e.reason)
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
    elif isinstance(e, yaml.reader.ReaderError):
        hint = "remove the control character (or write it as an escape in a quoted string)"
    elif "constructor for the tag" in problem:
        hint = "a spec holds plain YAML values: remove the '!!' tag"
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


_SCALAR_TAGS = {"str": "a string", "float": "a number", "int": "a whole number",
                "bool": "true or false"}


def _merge_scalar_unions(errors: list[dict], raw: Any) -> list[dict]:
    """One error per value of a scalar union (`str | float | int`), not one per member:
    pydantic reports `default.str: ...` and `default.float: ...` for the same value."""
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
            msg += _choices(f"{_model_name(model)} accepts", accepted)
        hint = _did_you_mean(str(key), accepted) or _owners_hint(str(key), model) or "remove it"
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
            msg += _choices(f"{_model_name(model)} requires", required)
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        loc = (*loc, "type")
        tags = re.findall(r"'([^']*)'", ctx.get("expected_tags", "")) or list(m.BRUSHES_BY_TYPE)
        if kind == "union_tag_invalid":
            msg = f"unknown view type {ctx.get('tag')!r}"
            hint = _did_you_mean(str(ctx.get("tag")), tags, cutoff=0.85)
        else:
            msg = "missing required key 'type'"
        msg += _choices("view types", tags)
    elif kind == "literal_error" and key == "op" and loc[-3:-2] == ("parameters",) \
            and value in ("range", "in"):
        choices = re.findall(r"'([^']*)'", ctx.get("expected", ""))
        msg = f"unsupported op {_show(value)}" + _choices("op accepts", choices)
        hint = ("for a range, use widget: slider with op: between (its value is [lo, hi])"
                if value == "range" else
                "for several values, use widget: dropdown with multiple: true")
    elif kind == "literal_error":
        choices = re.findall(r"'([^']*)'", ctx.get("expected", ""))
        label = "aggregate op" if loc[-2:-1] == ("aggregate",) else str(key)
        msg = f"unsupported {label} {_show(value)}" + _choices(f"{key} accepts", choices)
        hint = _did_you_mean(str(value), choices, cutoff=0.85)  # not median -> mean
        if not hint and key == "unit" and str(value).lower() in ("weekday", "dayofweek", "dow", "hour"):
            hint = "for the day of the week use unit: day_of_week; for the hour of the day, hour_of_day"
        if not hint and key == "sort":
            hint = "count: the most frequent value first; name: by value (either way '(other)' last)"
    elif kind == "scalar_union":
        expected = list(dict.fromkeys(ctx["expected"]))
        if "a number" in expected and "a whole number" in expected:
            expected.remove("a whole number")
        msg = f"expected {' or '.join(expected)}, got {_show(value)}"
        if key == "default" and isinstance(value, (list, dict)):
            hint = ("a parameter's default is one value; for a range, declare two slider"
                    " parameters (op: gte and op: lte)")
    elif loc[-1:] == ("extent",) and kind in ("too_long", "tuple_type"):
        msg, hint = _wrong_length(loc, value)
    elif kind in _EXPECTED:
        msg = f"expected {_EXPECTED[kind]}, got {_show(value)}"
        model = _model_at(loc, raw) if _EXPECTED[kind] == "a mapping" else None
        if model:
            msg += _choices(f"{_model_name(model)} accepts", list(model.model_fields))
        if kind == "string_type" and isinstance(value, bool):
            hint = "YAML reads yes/no/on/off/true/false as booleans: quote the value"
        elif isinstance(value, bool):  # a number's key (models.Float, models.Int)
            hint = "YAML reads yes/no/on/off/true/false as booleans, not numbers"
        elif kind == "string_type" and isinstance(value, (int, float)):
            hint = f"quote it to make it a string: '{value}'"
    elif kind in _BOUNDS:
        name, op = _BOUNDS[kind]
        msg = f"must be {op} {ctx.get(name)}, got {_show(value)}"
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
        msg = f"{_show(value)} is not a valid {key}"
        hint = _NAME_RULE if key == "name" else f"it must match {ctx.get('pattern')}"
        if loc[-3:-2] == ("joins",) and key == "name":
            hint = ("a join's name prefixes its columns (<join>.<column>, in expressions too): "
                    "letters, digits and '_', starting with a letter or '_'")
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
    if loc[-2:] == ("bin", "extent") and "finite" in msg:
        return "a double holds at most ±1.8e308: larger numbers (e.g. 1.0e+400) read as infinity"
    if loc[-2:] == ("bin", "extent"):
        return "write extent: [lo, hi] with lo < hi"
    if loc[-1:] == ("bin",) and "maxbins" in msg and "either" in msg:
        return "keep maxbins for bins fitted to the data, or step and extent for fixed ones"
    if loc[-1:] == ("bin",):
        return "e.g. bin: {step: 10, extent: [0, 100]}, or bin: {maxbins: 20} (a nice step fitted to the data)"
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
    owners = [c for c in _all_models() if key in c.model_fields and c is not model]
    if not owners:
        return ""
    names = ", ".join(_model_name(c) for c in owners[:3])
    return f"{key!r} is a key of {names}" + (f", not of {_model_name(model)}" if model else "")


# what a spec's author calls each part (the YAML's words, not the models' class names)
_SPEC_NAMES: dict[type[m.Model], str] = {
    m.DashboardSpec: "the dashboard", m.Source: "source", m.Bin: "bin", m.Aggregate: "aggregate",
    m.HistogramView: "a histogram view", m.TemporalView: "a temporal view",
    m.CategoricalView: "a categorical view", m.HeatmapView: "a heatmap view",
    m.Axis: "a heatmap axis (x, y)", m.CrossfilterGroup: "a crossfilter group",
    m.Highlight: "a highlight", m.Details: "details", m.Parameter: "a parameter",
    m.Interactions: "interactions", m.Profile: "profile", m.FunctionalDependency: "an fd",
}


def _model_name(model: type[m.Model]) -> str:
    """A model's name in messages, as a spec's author calls it ('a histogram view'); a
    model without one gets its class name's words ('SectionLayout': 'a section layout')."""
    if model in _SPEC_NAMES:
        return _SPEC_NAMES[model]
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", model.__name__).lower()
    return ("an " if words[:1] in "aeiou" else "a ") + words


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
