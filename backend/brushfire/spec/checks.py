"""The spec's checks beyond each model's own: references between views, filters and
parameters, the source and its joins, derived columns' expressions, limits, environment
variables in paths, the profile's views and, against a source's schema, the columns views
read and their kinds. Each check returns (loc, message, hint) for the loader to place
(file and line), or raises SpecError itself when it runs after loading.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import typing
from datetime import datetime
from pathlib import Path

from brushfire import values as V
from brushfire.errors import InteractionError, SpecError, SpecProblem
from brushfire.limits import MAX_BARS, MAX_FILTERS
from brushfire.spec import aggregates
from brushfire.spec import expressions as ex
from brushfire.spec import models as m
from brushfire.spec.problems import (
    NAME_RULE,
    Loc,
    article,
    choices_phrase,
    did_you_mean,
    line_of,
    ordered,
    render,
    show,
)
from brushfire.views import view_type

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
    elif path != written and (home := m.home_problem(path)) is not None:  # (as written: models.py)
        problems.append((loc, f"{home} (from {written!r})", "fix the environment variable, or the default after :-"))
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
    return SpecError([SpecProblem(getattr(dash, "_filename", "<spec>"), line_of(lines, loc),
                                  render(loc), msg, hint)])


def check_profile_columns(dash: m.DashboardSpec, columns) -> None:
    """The columns the profiling checks add must be new: SpecError at the check whose view
    name is a column of the source (`columns`: its names, derived columns included)."""
    lower = {c.lower() for c in columns}  # Spark resolves names case-insensitively
    for i, fd in enumerate(dash.profile.fd if dash.profile else []):
        if fd.view_name.lower() in lower:
            msg = f"its view's name {fd.view_name!r} is a column of the source already"
            raise spec_error(dash, ("profile", "fd", i), msg,
                             "give the check another name: name: <identifier>")


def check_source(dash: m.DashboardSpec, base_dir: str | Path | None = None) -> list[tuple[Loc, str, str]]:
    """The source's format, and each join's, must be given or follow from the path's
    extension (a local folder's, under `base_dir`: its data files')."""
    out = _table_problems(dash.source, ("source",), "the source's", "source", base_dir)
    for i, j in enumerate(dash.source.joins):
        out += _table_problems(j, ("source", "joins", i), f"the {j.name} join's", f"source.joins[{i}]",
                               base_dir)
    return out


def _table_problems(table: m.Table, loc: Loc, whose: str, where: str,
                    base_dir: str | Path | None = None) -> list[tuple[Loc, str, str]]:
    if not table.path.strip():
        return [((*loc, "path"), "the path is empty", "give the file or directory to read")]
    if table.format is None and table.resolved_format not in _FORMATS:
        name = table.path.rstrip("/").rsplit("/", 1)[-1] or table.path
        dotted = "." in name.strip(".")  # ('.' and '..' are folders, not extensions)
        ext = f"extension '.{name.rsplit('.', 1)[-1]}'" if dotted else "no extension"
        msg = f"cannot tell {whose} format: {name!r} has {ext}"
        hint = _format_hint(table.resolved_format, where)
        if (folder := _folder_files(table, where, base_dir)) is not None:
            msg, hint = msg + folder[0], folder[1]
        return [((*loc, "path"), msg + choices_phrase("formats", _FORMATS), hint)]
    return []


def _folder_files(table: m.Table, where: str, base_dir: str | Path | None) -> tuple[str, str] | None:
    """(what follows "'data' has no extension", hint) for a table whose path is a local
    folder that says no format: its data files are of several formats, or none; else None.
    (Without it, `format: csv` as the hint asked read a README in the folder as CSV.)"""
    from brushfire.spec.loader import _local_path, data_files

    folder = _local_path(table, base_dir)
    try:
        if folder is None or not folder.is_dir():
            return None
        files = data_files(folder)
    except OSError:
        return None
    if not files:
        return (", and the folder holds no data files",
                "fix the path, or put the data files in the folder (Spark reads every file in it "
                "but names starting with '_' or '.')")
    kinds: dict[str, list[Path]] = {}
    for f in files:
        kinds.setdefault(m.format_of(f.name) if "." in f.name else "(none)", []).append(f)
    order = sorted(kinds, key=lambda k: (-len(kinds[k]), k not in _FORMATS, k))  # (readable first)
    held = ", ".join(f"{k}: {len(kinds[k]):,} files" if len(kinds[k]) > 1
                     else f"{k}: {kinds[k][0].relative_to(folder)}" for k in order[:4])
    more = f", and {len(order) - 4} more" if len(order) > 4 else ""
    known = next((k for k in order if k in _FORMATS), "parquet (or csv, json, orc)")
    return (f", and the folder's data files are of several formats ({held}{more})",
            f"add format: {known} to {where}, and move the files of other formats out of the folder "
            "(Spark reads every file in it as that format)")


_UNREAD_FORMATS = {  # extensions of tables Spark does not read: what to do instead
    ("arrow", "feather", "ipc", "arrows"): "Spark reads no Arrow IPC (Feather) file: write it as "
    "Parquet, e.g. pyarrow.parquet.write_table(pyarrow.feather.read_table(path), 'data.parquet')",
    ("xlsx", "xls", "xlsm", "ods"): "Spark reads no spreadsheet: save the sheet as CSV (or "
    "Parquet) and give that file",
    ("tsv", "tab"): "a tab-separated file is a CSV to Spark: add format: csv and "
    'options: {sep: "\\t"} to WHERE',
    tuple(c.lstrip(".") for c in m.COMPRESSED): "Spark decompresses CSV and JSON files only "
    "(name them data.csv.gz, data.json.gz; Parquet and ORC compress inside): decompress it, or "
    "add format: csv (or json) to WHERE",
}


def _format_hint(ext: str, where: str) -> str:
    for exts, hint in _UNREAD_FORMATS.items():
        if ext in exts:
            return hint.replace("WHERE", where)
    return f"add format: parquet (or csv, json, orc) to {where}"


def check_joins(dash: m.DashboardSpec) -> list[tuple[Loc, str, str]]:
    """Joins: distinct names that are no derived column's, and each `on` naming the
    source or a join above it (no join reads a join below it, so there is no cycle)."""
    out: list[tuple[Loc, str, str]] = []
    joins = dash.source.joins
    names = [j.name for j in joins]
    lower = [n.lower() for n in names]  # (Spark reads names case-insensitively)
    derived = {c.lower(): c for c in dash.source.columns}
    for i, j in enumerate(joins):
        loc: Loc = ("source", "joins", i)
        first = lower.index(j.name.lower())
        if first != i and names[first] == j.name:
            out.append(((*loc, "name"), f"duplicate join name {j.name!r}",
                        f"source.joins[{first}] has the same name; join names must be unique"))
        elif first != i:
            out.append(((*loc, "name"), f"join name {j.name!r} differs from source.joins[{first}]'s "
                        f"{names[first]!r} only in case, and Spark reads names case-insensitively",
                        "give the join another name"))
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
    return out + _quoted_join_columns(dash)


def _quoted_join_columns(dash: m.DashboardSpec) -> list[tuple[Loc, str, str]]:
    """A joined column quoted whole in a derived column or static filter (`` `j.label` ``,
    as DuckDB would quote it): Spark reads it as one column named 'j.label', which is not
    there (a join's columns are fields of the join), and says only that it cannot resolve
    it, at capture."""
    joins = {j.name.lower() for j in dash.source.joins}
    exprs: list[tuple[Loc, str]] = [(("source", "columns", n), x) for n, x in dash.source.columns.items()]
    exprs += [(("source", "filters", i), x) for i, x in enumerate(dash.source.filters)]
    out: list[tuple[Loc, str, str]] = []
    for loc, text in exprs if joins else []:
        try:
            columns = ex.analyze(text, check=False).columns
        except ex.ExpressionError:
            continue  # (reported by check_expressions)
        for _, at in columns:
            end = text.find("`", at + 1) if text.startswith("`", at) else -1
            head, dot, rest = text[at + 1:end].partition(".")
            if end > 0 and dot and head.lower() in joins and "`" not in rest:
                out.append((loc, f"`{head}.{rest}` names a column called {head + dot + rest!r}, which "
                            f"Spark does not have: the columns of join {head!r} are its fields",
                            f"write {head}.{rest} or `{head}`.`{rest}`"))
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
            msg = f"a {v.type} view cannot take {article(v.brush)} {v.brush!r} brush" + choices_phrase(
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
            msg = f"unknown view {name!r}" + choices_phrase("views", names)
            hint = did_you_mean(name, names) or f"{role} must name one of the views above"
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
                                f"it is at {render(placed[name])} already: remove one"))
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
        return [(loc, f"{show(name)} is not a valid name", NAME_RULE)]
    if len(name) > MAX_NAME:
        return [(loc, f"{show(name[:20] + '…')} is {len(name)} characters long; at most {MAX_NAME}",
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


def check_data_bars(dash: m.DashboardSpec, ranges: dict[str, tuple], exact: bool = False) -> None:
    """Bars the data decides, counted from the source's range of each field where it is
    known (`source.column_ranges`: Parquet statistics, no Spark), so that too many is an
    error at the spec's key before any job: a temporal view has a bar per calendar unit
    from the first to the last timestamp; a bin of a step alone (its extent fitted at
    capture) a bar per step around the smallest and largest value. At most MAX_BARS each
    (a heatmap's cells, too). Skipped when static filters may narrow the range; derived
    and joined fields have no statistics. `exact`: `ranges` are the data's as captured
    (after the derived columns and filters), so every field is checked."""
    if dash.source.filters and not exact:
        return
    lines: dict[Loc, int] = getattr(dash, "_lines", {})
    filename: str = getattr(dash, "_filename", "<spec>")
    problems = []
    for i, v in enumerate(dash.views):
        for loc, msg, hint in _calendar_bars(dash, i, v, ranges, exact) + _step_bars(dash, i, v, ranges, exact):
            problems.append(SpecProblem(filename, line_of(lines, loc), render(loc), msg, hint))
    if problems:
        raise SpecError(problems)


def _calendar_bars(dash: m.DashboardSpec, i: int, v, ranges: dict[str, tuple],
                   exact: bool = False) -> list[tuple[Loc, str, str]]:
    cal = view_type(v).calendar(v)
    if cal is None or (cal[0] in dash.source.columns and not exact) \
            or not isinstance(ranges.get(cal[0], (0,))[0], datetime):
        return []
    field, unit = cal
    lo, hi = ranges[field]
    n = calendar_bars(unit, lo, hi)
    if n <= MAX_BARS:
        return []
    coarser = next((u for u in _UNIT_ORDER[_UNIT_ORDER.index(unit) + 1:]
                    if calendar_bars(u, lo, hi) <= MAX_BARS), "year")
    msg = (f"{n:,} {unit} bars from {lo:%Y-%m-%d %H:%M} to {hi:%Y-%m-%d %H:%M} (the first and"
           f" last {field} in the source); a view has at most {MAX_BARS:,} bars")
    return [(("views", i, "unit"), msg, f"use unit: {coarser} ({calendar_bars(coarser, lo, hi):,} bars)")]


def _step_bars(dash: m.DashboardSpec, i: int, v, ranges: dict[str, tuple],
               exact: bool = False) -> list[tuple[Loc, str, str]]:
    from brushfire.bins import step_bars

    out: list[tuple[Loc, str, str]] = []
    counts = []
    for a in view_type(v).axes(v):
        r = ranges.get(a.field)
        if a.bin.resolved or a.bin.maxbins is not None or (a.field in dash.source.columns and not exact) \
                or r is None or not isinstance(r[0], float):
            counts.append(a.bin.count)
            continue
        n = step_bars(r[0], r[1], a.bin.step)
        counts.append(n)
        if n > MAX_BARS:
            least = (r[1] - r[0]) / (MAX_BARS - 1)
            msg = (f"step {a.bin.step:g} makes {n:,} bars from {r[0]:g} to {r[1]:g} (the smallest and"
                   f" largest {a.field} in the source); a view has at most {MAX_BARS:,} bars")
            out.append((("views", i, *a.path, "step"), msg,
                        f"use a step of at least {least:.3g}, or give an extent and clamp: true"))
    if not out and len(counts) > 1 and math.prod(counts) > MAX_BARS:
        msg = (f"{' × '.join(f'{n:,}' for n in counts)} = {math.prod(counts):,} cells over the"
               f" source's range; a {v.type} has at most {MAX_BARS:,} cells")
        out.append((("views", i), msg, "use larger steps on x or y"))
    return out


def data_bar_fields(dash: m.DashboardSpec) -> list[str]:
    """The fields whose range decides how many bars a view has: timestamps of temporal
    views, numbers binned by a step alone."""
    cals = [view_type(v).calendar(v) for v in dash.views]
    steps = [a.field for v in dash.views for a in view_type(v).axes(v)
             if not a.bin.resolved and a.bin.maxbins is None]
    return list(dict.fromkeys([c[0] for c in cals if c is not None] + steps))


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
    seen: dict[str, str] = {}  # lower-case name: as written first
    for name, text in dash.source.columns.items():
        loc: Loc = ("source", "columns", name)
        if not _DERIVED_NAME.match(name):
            out.append((loc, f"derived column name {name!r} is not an identifier",
                        "use letters, digits and '_', starting with a letter or '_'"))
        elif (first := seen.setdefault(name.lower(), name)) != name:
            # (Spark's withColumn replaced the first: capture failed on Spark, KeyError)
            out.append((loc, f"derived column name {name!r} differs from the derived column "
                             f"{first!r} only in case, and Spark reads names case-insensitively",
                        "give the derived column another name"))
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
            "value": "an arithmetic"}.get(kind, f"{article(kind)} {kind}")


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
    for name in dash.source.columns:  # (the same name replaces the source's column, as Spark does)
        if name not in schema and (column := names.get(name.lower())) is not None:
            # Spark replaced the source's column, and the spec's other keys naming it
            # failed once Spark had started ('delay' is not in the source; did you mean 'Delay'?)
            loc = ("source", "columns", name)
            msg = (f"derived column name {name!r} differs from the source's column {column!r} only "
                   "in case, and Spark reads names case-insensitively")
            hint = f"give the derived column another name, or write {column!r} to replace the column"
            problems.append(SpecProblem(filename, line_of(lines, loc), render(loc), msg, hint))
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
            if loc[1] == "columns" and col.lower() == str(loc[2]).lower():  # (not a source column)
                msg = f"derived column {col!r} reads itself"
                hint = "name a column of the source, or a derived column above this one"
            elif col.lower() in later:
                msg = f"column {col!r} is derived below this one: a derived column reads the ones above it"
                hint = "move it above in source.columns"
            else:
                msg = f"column {col!r} is not in the source" + choices_phrase("columns", list(names.values()))
                hint = did_you_mean(col, list(names.values())) or \
                    "name a column of the source, or a derived column above this one"
            problems.append(SpecProblem(filename, line_of(lines, loc), render(loc), msg, hint))
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
        out.append(SpecProblem(filename, line_of(lines, loc), render(loc), msg, hint))
    return out


def check_columns(dash: m.DashboardSpec, schema: dict[str, str] | None,
                  derived: dict[str, str | None] | None = None,
                  joined: dict[str, str | None] | None = None) -> None:
    """Check every column the spec reads against the source schema {name: kind}.

    kind is 'number', 'temporal', 'string' or 'other' (or a finer kind of
    spec/expressions.py). Derived columns have the kinds in `derived` (Spark's, from
    capture/analyze.py), else the kinds spec/expressions.py infers; an unknown kind is
    not checked. Raises SpecError naming the key that refers to a missing or ill-typed
    column; for a derived column of the wrong kind, its key in source.columns. With no
    schema (CSV, JSON: known once Spark reads them), only derived columns whose kind the
    expression alone decides (e.g. concat(...) is a string) are checked, and, given
    `joined` (`<join>.<column>`: kind of the joins whose tables are known without Spark,
    source.joined_types), each such join's key and the columns read of its table.
    """
    partial = schema is None
    schema = schema or dict(joined or {})
    lines: dict[Loc, int] = getattr(dash, "_lines", {})
    filename: str = getattr(dash, "_filename", "<spec>")
    if derived is None:
        derived = derived_kinds(dash, schema)
    derived_coarse = {c: _coarse(k) if k not in (None, "null", "value") else "derived"
                      for c, k in derived.items()}
    # (a kind None: a column only Spark types: a partitioned dataset's `key=value`, a CSV
    # dimension table's whose kinds Spark infers; not checked)
    known = {c: _coarse(k) if k is not None else "derived" for c, k in schema.items()} | derived_coarse
    known |= dict.fromkeys(profile_columns(dash), "string")  # added by capture
    problems: list[SpecProblem] = [] if partial else _expression_columns(dash, schema)

    unread = _unread_joins(dash, schema)

    def need(loc: Loc, column: str | None, kinds: tuple[str, ...] = (), user: str = "",
             hints: dict[str, str] | None = None) -> None:
        if column is None:
            return
        kind = known.get(column)
        join = dash.source.join_of(column)
        if kind is None and ((partial and (join is None or join.name in unread))
                             or (column.partition(".")[0] in unread and "." in column)):
            return  # (a dimension table whose schema Spark infers: checked at capture)
        if kind is None and join is not None:
            columns = [c for c in known if c.startswith(f"{join.name}.")]
            msg = (f"column {column!r} is not in the table of join {join.name!r} ({Path(join.path).name})"
                   + choices_phrase("columns", columns))
            hint = did_you_mean(column, columns) or "name a column of the dimension table as <join>.<column>"
            problems.append(SpecProblem(filename, line_of(lines, loc), render(loc), msg, hint))
        elif kind is None:
            msg = f"column {column!r} is not in the source" + choices_phrase("columns", list(known))
            hint = _separator_hint(dash, column, list(schema)) or _nested_hint(column, known) \
                or _repeated_hint(dash, column, list(schema)) or _spaced_hint(dash, column, list(schema)) \
                or did_you_mean(column, list(known)) or "add it to source.columns as a derived column"
            problems.append(SpecProblem(filename, line_of(lines, loc), render(loc), msg, hint))
        elif kinds and kind not in kinds and kind != "derived":
            is_ = f"a {kind} column" if kind in _KINDS else "a list, map or struct column" \
                if kind == "nested" else "neither number, temporal nor string"
            if column in dash.source.columns:  # the derived column's expression is what to fix
                at: Loc = ("source", "columns", column)
                what = {"temporal": "a timestamp", "string": "a string", "number": "a number"}.get(
                    kind, "neither number, timestamp nor string")
                msg = (f"derived column {column!r} is {what}, but"
                       f" {render(loc)} ({user}) needs {_kinds_phrase(kinds)}")
                # a timestamp or number: the view type for it (a temporal view, a histogram),
                # else an expression of the kind the view needs
                other = (hints or {}).get(kind, "").split(", or ")[0] if kind != "string" else ""
                hint = (f"{other}, or make the expression {_A_KIND[kinds[0]]}"
                        if other.startswith("use a ") and kinds[0] in _A_KIND
                        else _DERIVED_HINTS.get(kinds[0], ""))
                problems.append(SpecProblem(filename, line_of(lines, at), render(at), msg, hint))
                return
            msg = f"column {column!r} is {is_}, but {user} needs {_kinds_phrase(kinds)}"
            hints = hints or {}
            hint = hints.get(kind) or hints.get("*") or f"pick a {kinds[0]} column, or derive one in source.columns"
            problems.append(SpecProblem(filename, line_of(lines, loc), render(loc), msg, hint))

    problems += _join_problems(dash, schema, unread, partial)
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
        for loc, msg, hint in _default_problems(p, known.get(p.field)):
            loc = ("interactions", "parameters", i, *loc)
            problems.append(SpecProblem(filename, line_of(lines, loc), render(loc), msg, hint))
    for i, fd in enumerate(dash.profile.fd if dash.profile else []):
        for side in ("lhs", "rhs"):
            for j, c in enumerate(getattr(fd, side)):
                need(("profile", "fd", i, side, j), c)
    if problems:
        raise SpecError(ordered(problems))


SEPARATORS = (",", ";", "\t", "|")  # a CSV's common separators (Spark's default: ',')


def _separator_hint(dash: m.DashboardSpec, column: str, schema: list[str]) -> str:
    """A CSV source read as one column whose name is a header split by another separator
    that `column` is a field of ('id;name;v'): which separator to give ("" if not so)."""
    if dash.source.resolved_format != "csv":
        return ""
    own = [c for c in schema if dash.source.join_of(c) is None]
    options = {k.lower(): v for k, v in dash.source.reader_options.items()}
    given = options.get("sep", options.get("delimiter", ","))  # (a ',' file read with sep: ";" too)
    sep = next((x for x in SEPARATORS if x != given and len(own) == 1 and column in own[0].split(x)), None)
    if sep is None:
        return ""
    shown, was = sep.replace("\t", "\\t"), given.replace("\t", "\\t")
    return (f"the file's first line reads as one column, {own[0]!r}: it looks separated by "
            f"'{shown}', not '{was}'; give source.options: {{sep: \"{shown}\"}}")


def _spaced_hint(dash: m.DashboardSpec, column: str, schema: list[str]) -> str:
    """A CSV source whose first line writes `column` with white space around it ('date,
    value': ' value'), as Spark reads it by default ("" if not so)."""
    spaced = next((c for c in schema if c != column and c.strip() == column), None)
    if dash.source.resolved_format != "csv" or spaced is None:
        return ""
    return (f"the file's first line writes it with white space, {spaced!r}: give source.options: "
            '{ignoreLeadingWhiteSpace: "true", ignoreTrailingWhiteSpace: "true"} (Spark then reads '
            f"names and values without it), or name it {spaced!r}")


def _repeated_hint(dash: m.DashboardSpec, column: str, schema: list[str]) -> str:
    """A CSV source whose first line names `column` more than once (or in two cases): Spark
    names each after its place, `x1` and `x2` for the second and third ("" if not so)."""
    if dash.source.resolved_format != "csv":
        return ""
    low = column.lower()
    copies = [c for c in schema if c.lower().startswith(low) and c[len(low):].isdigit()
              and dash.source.join_of(c) is None]
    if len(copies) < 2:
        return ""
    return (f"the file's first line names {column!r} {len(copies)} times: Spark names each after its place "
            f"({', '.join(copies)}); name the one meant, or rename them in the file")


def _nested_hint(column: str, known: dict[str, str]) -> str:
    """A field of a struct column ('properties.mag', a nested JSON object's field) named as a
    column: the derived column that reads it ("" if not so). Fields are columns of their own
    only through a join (`<join>.<column>`)."""
    head = next((column[:i] for i, ch in enumerate(column) if ch == "." and known.get(column[:i]) == "nested"),
                None)
    if head is None:
        return ""
    name = column.rsplit(".", 1)[-1]
    name = name if name.isidentifier() else "value"
    path = ".".join(p if p.isidentifier() else f"`{p}`" for p in [head, *column[len(head) + 1:].split(".")])
    return (f"{head!r} is a struct column (a nested object): derive its field in source.columns, e.g. "
            f"`{name}: {path}`, and give that name here")


def _default_problems(p: m.Parameter, kind: str | None) -> list[tuple[Loc, str, str]]:
    """A parameter's default of a type its field's kind never takes (a slider's bound,
    `values.slider_bound`; a dropdown's choice, `values.choice_of_kind`), found before Spark
    where the kind is known; which values the data holds is checked when a session applies
    the default (dashboard.apply_parameter_defaults)."""
    if p.default is None or kind not in _KINDS or (p.widget == "slider" and kind == "string"):
        return []  # (a slider over strings: refused at its field)
    many = p.multiple or (p.widget == "slider" and p.op == "between")
    out: list[tuple[Loc, str, str]] = []
    for j, x in enumerate(p.default if many and isinstance(p.default, list) else [p.default]):
        try:
            if p.widget == "slider":
                V.slider_bound(x, kind == "temporal")
            else:
                V.choice_of_kind(x, kind)
        except InteractionError as e:
            msg = f"the default cannot be applied to column {p.field!r} ({_A_KIND[kind]}): {e}"
            hint = {"number": "give a number (unquoted), or leave default out",
                    "temporal": f"give an ISO time, e.g. {V.ISO_EXAMPLE}, or leave default out",
                    "string": "quote it (YAML reads yes, no, on, off, true and false unquoted as a "
                              "boolean), or leave default out" if isinstance(x, bool)
                    else f"quote it ({show(str(x))}), or leave default out"}[kind]
            out.append((("default", j) if many else ("default",), msg, hint))
    return out


def _unread_joins(dash: m.DashboardSpec, schema: dict[str, str]) -> set[str]:
    """Joins none of whose columns `schema` has: their dimension table's schema is known
    only once Spark reads it (CSV, JSON, remote)."""
    prefixes = {c.partition(".")[0] for c in schema if "." in c}
    return {j.name for j in dash.source.joins if j.name not in prefixes}


def _join_problems(dash: m.DashboardSpec, schema: dict[str, str], unread: set[str],
                   partial: bool = False) -> list[SpecProblem]:
    """Each join's name is no column of the source, its `on` a column of the source or of
    a join above it, and its `key` a column of its dimension table. `partial`: `schema`
    holds only joined columns (the source's are known once Spark reads it)."""
    lines: dict[Loc, int] = getattr(dash, "_lines", {})
    filename: str = getattr(dash, "_filename", "<spec>")
    src = dash.source
    own = [c for c in schema if src.join_of(c) is None]
    lower = {c.lower(): c for c in own}
    derived = {c.lower() for c in src.columns}  # (check_joins: no join's on or name)
    out: list[SpecProblem] = []

    def problem(loc: Loc, msg: str, hint: str) -> None:
        out.append(SpecProblem(filename, line_of(lines, loc), render(loc), msg, hint))

    for i, j in enumerate(src.joins):
        loc: Loc = ("source", "joins", i)
        if j.name.lower() in lower:
            problem((*loc, "name"), f"join name {j.name!r} is a column of the source "
                    f"({lower[j.name.lower()]!r})",
                    "a join's columns are <join>.<column>: give the join another name")
        if j.name not in unread:
            columns = [c.partition(".")[2] for c in schema if c.startswith(f"{j.name}.")]
            if f"{j.name}.{j.key}" not in schema:
                problem((*loc, "key"), *missing_key(j, columns))
        on = src.join_of(j.on)
        kinds = {_coarse(k) for k in (schema.get(j.on), schema.get(f"{j.name}.{j.key}")) if k is not None}
        if kinds == {"number", "temporal"}:  # (Spark's join refuses them; strings it casts)
            # (a date's kind is temporal too: not called a timestamp here)
            a, b = ({**_A_KIND, "temporal": "a date or time"}[_coarse(schema[c])]
                    for c in (j.on, f"{j.name}.{j.key}"))
            problem((*loc, "on"), f"column {j.on!r} ({a}) and key {j.key!r} of {Path(j.path).name} ({b}) "
                    "are of types no join compares", "give them one type in the files (Spark's join "
                    "compares numbers with numbers or text, times with times or text)")
        if (on is not None and on.name in unread) or (on is None and partial):
            continue
        if on is None and j.on not in schema and j.on.lower() not in derived:
            msg = f"column {j.on!r} is not in the source" + choices_phrase("columns", own)
            problem((*loc, "on"), msg, did_you_mean(j.on, own) or
                    "name a column of the source, or <join>.<column> of a join above this one")
        elif on is not None and j.on not in schema:
            columns = [c for c in schema if c.startswith(f"{on.name}.")]
            msg = f"column {j.on!r} is not in the table of join {on.name!r}" + choices_phrase("columns", columns)
            problem((*loc, "on"), msg, did_you_mean(j.on, columns) or "")
    return out


def missing_key(j: m.Join, columns: list[str]) -> tuple[str, str]:
    """(message, hint) for a join whose dimension table (of `columns`) lacks its key:
    validate's, and capture's for a table only Spark reads (JSON)."""
    msg = (f"column {j.key!r} is not in the table of join {j.name!r} "
           f"({Path(j.path).name})" + choices_phrase("columns", columns))
    if not columns:  # (a JSON table's columns are its records' keys: none without a record)
        return (f"{msg}, which has no column: Spark read none from it (an empty file, or a JSON "
                "table without a record)", f"give {j.path} its rows, or, for a table of no rows, "
                "a file that says its columns (Parquet, or CSV with its header line)")
    unnamed = bool(columns) and all(c == f"_c{n}" for n, c in enumerate(columns))
    return msg, did_you_mean(j.key, columns) or (
        "Spark names a CSV file's columns _c0, _c1, ... unless it reads their names "
        "from its first line: drop header: \"false\" from the join's options" if unnamed else
        "name the column of the dimension table that the source's on column holds")


_KINDS = ("number", "temporal", "string")
_A_KIND = {"number": "a number", "temporal": "a timestamp", "string": "a string"}
_DERIVED_HINTS = {
    "number": "make the expression a number, e.g. CAST(... AS DOUBLE)",
    "temporal": "make the expression a timestamp, e.g. to_timestamp(...) or timestamp_seconds(...)",
}


def _kinds_phrase(kinds: tuple[str, ...]) -> str:
    """'a number or temporal column'; with 'other' (any kind of single values, booleans and
    binary too), what the kinds leave out is the point: 'a column of single values'."""
    return "a column of single values" if "other" in kinds else f"a {' or '.join(kinds)} column"


def _coarse(kind: str) -> str:
    """A kind of spec/expressions.py (or of a schema) as check_columns compares them."""
    if kind in ex.NUMBER:
        return "number"
    return kind if kind in (*_KINDS, "nested") else "other"


