"""Read a dashboard YAML file into a validated `DashboardSpec`, or fail with `SpecError`.

Every problem is reported as `file:line: key.path: what is wrong`, with the valid choices
and a hint, at most three. The YAML is read with its line marks by spec/yamlread.py, the
models check themselves (spec/models.py), spec/checks.py checks what spans models (and,
later, the source's columns), and spec/problems.py words pydantic's errors.
"""

from __future__ import annotations

import datetime
import re
import typing
from dataclasses import dataclass
from pathlib import Path

import pydantic

from brushfire.errors import SpecError, SpecProblem
from brushfire.limits import MAX_SPEC_BYTES
from brushfire.spec import models as m
from brushfire.spec.checks import (
    check_expressions,
    check_joins,
    check_limits,
    check_profile,
    check_references,
    check_source,
    expand_environment,
    with_profile_views,
)
from brushfire.spec.problems import (
    Loc,
    choices_phrase,
    kind_of,
    line_of,
    merge_scalar_unions,
    ordered,
    problem_from_pydantic,
    render,
)
from brushfire.spec.yamlread import collect_lines, read_yaml

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")



def load_dashboard(path: str | Path) -> m.DashboardSpec:
    """Load and validate the spec at `path`; source paths are resolved against its folder."""
    path = Path(path)
    try:
        if path.is_file() and (size := path.stat().st_size) > MAX_SPEC_BYTES:
            _too_large(str(path), size)
        data = path.read_bytes()
    except IsADirectoryError:  # (`brushfire validate dashboards`: "Is a directory", no more)
        msg = "cannot read spec: it is a folder, not a spec file"
        hint = f"give the spec files in it, e.g. {path / '*.yaml'}"
        raise SpecError([SpecProblem(str(path), None, "", msg, hint)]) from None
    except OSError as e:
        msg = f"cannot read spec: {e.strerror or e}"
        raise SpecError([SpecProblem(str(path), None, "", msg)]) from None
    return parse_dashboard(_decode(data, str(path)), filename=str(path), base_dir=path.parent)


def _too_large(filename: str, size: int) -> None:
    """Refuse a spec of more than MAX_SPEC_BYTES: validating one of 10 MB took 22 s."""
    msg = (f"cannot read spec: {size:,} bytes; a spec is at most {MAX_SPEC_BYTES:,} bytes "
           "(limits.py)")
    hint = "a dashboard spec is a few KB of YAML: is this the data file, not the spec?"
    raise SpecError([SpecProblem(filename, None, "", msg, hint)])


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
        if len(text) > MAX_SPEC_BYTES // 4 and (size := len(text.encode("utf-8", "replace"))) > MAX_SPEC_BYTES:
            _too_large(filename, size)  # (a UTF-8 character is 1 to 4 bytes)
        node, raw = read_yaml(text, filename)
        if node is not None:
            top_line = node.start_mark.line + 1
            problems: list[SpecProblem] = []  # duplicate keys, keys that are not text
            collect_lines(node, (), lines, problems, filename)
            if problems:
                raise SpecError(ordered(problems))
    else:
        raw = display_as_text(text)
    if not isinstance(raw, dict):
        msg = f"the document is {kind_of(raw)}, not a mapping" + choices_phrase(
            "a dashboard spec has the keys", list(m.DashboardSpec.model_fields))
        hint = "start the file with top-level keys, e.g. 'name: flights'"
        raise SpecError([SpecProblem(filename, top_line or 1, "", msg, hint)])
    try:
        dash = m.DashboardSpec.model_validate(raw := times_as_text(raw))
    except pydantic.ValidationError as e:
        errors = merge_scalar_unions(e.errors(), raw)
        problems = [problem_from_pydantic(err, raw, lines, filename) for err in errors]
        raise SpecError(ordered(problems), cause=e) from None
    written = dash.source.path
    written_joins = [j.path for j in dash.source.joins]
    dash, unset = expand_environment(dash)
    if not unset:
        dash = with_data_options(dash, base_dir)
    problems = [
        SpecProblem(filename, line_of(lines, loc), render(loc), msg, hint)
        for loc, msg, hint in (unset + check_references(dash) + check_profile(dash)
                               + (check_source(dash, base_dir) if not unset else []) + check_joins(dash)
                               + check_expressions(dash))
    ]
    if not problems:
        dash = with_profile_views(dash)
        problems = [SpecProblem(filename, line_of(lines, loc), render(loc), msg, hint)
                    for loc, msg, hint in check_limits(dash)]
    if problems:
        raise SpecError(ordered(problems))
    if base_dir is not None:
        joins = [j.model_copy(update={"path": resolve_path(j.path, base_dir)}) for j in dash.source.joins]
        source = dash.source.model_copy(update={"path": resolve_path(dash.source.path, base_dir),
                                                "joins": joins})
        dash = dash.model_copy(update={"source": source})
        if dash.workload is not None and dash.workload.trace is not None:  # read when planned
            workload = dash.workload.model_copy(update={"trace": resolve_path(dash.workload.trace, base_dir)})
            dash = dash.model_copy(update={"workload": workload})
    # Keep where each path was written, for errors reading a table (brushfire.source).
    base = str(Path(base_dir).resolve()) if base_dir is not None else "."
    object.__setattr__(dash.source, "_spec_path", SpecPath(
        filename, line_of(lines, ("source", "path")), written, base))
    for i, (j, w) in enumerate(zip(dash.source.joins, written_joins, strict=True)):
        loc = ("source", "joins", i, "path")
        object.__setattr__(j, "_spec_path", SpecPath(filename, line_of(lines, loc), w, base,
                                                     render(loc)))
    # Keep where the spec came from, for column errors found later against the source.
    object.__setattr__(dash, "_lines", lines)
    object.__setattr__(dash, "_filename", filename)
    return dash


def times_as_text(x: typing.Any) -> typing.Any:
    """`x` with each date or time as its ISO text. YAML reads an unquoted `2012-01-01` as a
    date (and `2012-01-01 10:30:00` as a time), where a spec takes times as ISO text (a
    time parameter's default, as the protocol does): it was refused as "expected a string
    or a number, got datetime.date(2012, 1, 1)". (A date that does not exist never gets
    here: spec/yamlread.py refuses it at its line.)"""
    if isinstance(x, datetime.date):  # (a datetime too)
        return x.isoformat()
    if isinstance(x, dict):
        return {times_as_text(k): times_as_text(v) for k, v in x.items()}
    if isinstance(x, list):
        return [times_as_text(v) for v in x]
    return x


def display_as_text(spec: typing.Any) -> typing.Any:
    """A spec given as a dict (a notebook's, or JSON read by the caller) with a number or
    boolean at a display text's key (models.DISPLAY_TEXT) as its text: `"title": 1984` is
    '1984' and `true` 'true', as JSON writes them — what the JSON Schema takes and the YAML
    reader does with `title: 1984` (spec/yamlread.py), where the models refused it as "not
    a string". `spec` itself is not changed."""
    if not isinstance(spec, dict):
        return spec

    def text(x: typing.Any) -> typing.Any:
        if isinstance(x, bool):
            return "true" if x else "false"
        return str(x) if isinstance(x, int | float) else x

    def fit(x: typing.Any, path: tuple[str, ...]) -> typing.Any:
        if not path:
            return text(x)
        if path[0] == "*":
            return [fit(v, path[1:]) for v in x] if isinstance(x, list) else x
        if isinstance(x, dict) and path[0] in x:
            return {**x, path[0]: fit(x[path[0]], path[1:])}
        return x

    for path in m.DISPLAY_TEXT:
        spec = fit(spec, path)
    return spec


def _each_table(dash: m.DashboardSpec, fitted: typing.Callable[[m.Table], m.Table]) -> m.DashboardSpec:
    """`dash` with `fitted` applied to its source and each join (itself when none changes)."""
    source = fitted(dash.source)
    joins = [fitted(j) for j in dash.source.joins]
    if source is dash.source and all(a is b for a, b in zip(joins, dash.source.joins, strict=True)):
        return dash
    return dash.model_copy(update={"source": source.model_copy(update={"joins": joins})})


def data_files(path: Path) -> list[Path]:
    """The data files of a local table: the file, or a folder's files but those whose
    path holds a name starting with '_' or '.' and those whose name ends with
    '._COPYING_' (a copy in progress, `hadoop fs -put`'s), as Spark lists them, in order.
    Spark reads a folder's subfolders only as a partitioned dataset's (a `key=value`
    folder among them): else only the folder's own files, not an `archive/` in it."""
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.endswith("._COPYING_")
                   and not any(x.startswith(("_", ".")) for x in p.relative_to(path).parts))
    if any("=" in x for p in files for x in p.relative_to(path).parts[:-1]):
        return files
    return [p for p in files if p.parent == path]


def _local_path(t: m.Table, base_dir: str | Path | None) -> Path | None:
    """A table's path on this machine (None: a URI other than file://)."""
    if _URI.match(t.path) and not t.path.startswith("file://"):
        return None
    path = Path(t.path.removeprefix("file://"))
    return Path(resolve_path(str(path), base_dir)) if base_dir is not None else path


def _multiline(t: m.Table) -> m.Table:
    return t.model_copy(update={"options": {**t.options, "multiLine": "true"}})


FOLDER_FORMATS = ("parquet", "csv", "json", "orc")  # the extensions a folder's files may share


def with_data_options(dash: m.DashboardSpec, base_dir: str | Path | None = None) -> m.DashboardSpec:
    """`dash` with what its tables' data files say of how to read them: a folder's format
    (`with_folder_formats`), `multiLine` for JSON arrays (`with_json_arrays`) and for CSV
    fields with line breaks (`with_csv_line_breaks`). When the spec is loaded, and again
    over the files as they are when new data are captured (`Dashboard.refresh`): a file
    appended since may need what the first ones did not."""
    return with_csv_line_breaks(with_json_arrays(with_folder_formats(dash, base_dir), base_dir), base_dir)


def with_folder_formats(dash: m.DashboardSpec, base_dir: str | Path | None) -> m.DashboardSpec:
    """`dash` with the format of each table whose path is a local folder and whose format
    is neither given nor its path's extension, read from the folder: `delta` when it holds
    a `_delta_log`, else the extension every data file in it shares (names starting with
    '_' or '.' are not data, as Spark lists them). Otherwise as it is (check_source then
    asks for a format)."""
    def fitted(t):
        if t.format is not None or t.resolved_format in typing.get_args(m.Format) or _URI.match(t.path):
            return t
        folder = Path(resolve_path(t.path, base_dir) if base_dir is not None else t.path)
        try:  # (a name too long for the file system: check_source says so at the path)
            if not folder.is_dir():
                return t
            if (folder / "_delta_log").is_dir():
                return t.model_copy(update={"format": "delta"})
            exts = {m.format_of(p.name) for p in data_files(folder)}
        except OSError:
            return t
        return t.model_copy(update={"format": exts.pop()}) if len(exts) == 1 and exts <= set(FOLDER_FORMATS) else t

    return _each_table(dash, fitted)


def with_json_arrays(dash: m.DashboardSpec, base_dir: str | Path | None) -> m.DashboardSpec:
    """`dash` with `multiLine: "true"` in the options of each local JSON table whose data
    files each hold one array (their first character, a byte-order mark and white space
    aside, is `[`), unless its options set `multiLine` already. Spark's JSON reader reads
    JSON Lines (an object a line) by default: an array file would lose its first and last
    records (`[{...},` is no object) or, pretty-printed, every one (a `_corrupt_record`
    column). A folder of JSON Lines files, or of both kinds, is left as written."""
    def fitted(t):
        path = _local_path(t, base_dir)
        if t.resolved_format != "json" or any(k.lower() == "multiline" for k in t.options) or path is None:
            return t
        try:
            firsts = {c for c in map(_first_character, data_files(path)) if c is not None}
        except OSError:
            return t
        return _multiline(t) if firsts == {b"["} else t

    return _each_table(dash, fitted)


def with_csv_line_breaks(dash: m.DashboardSpec, base_dir: str | Path | None) -> m.DashboardSpec:
    """`dash` with `multiLine: "true"` in the options of each local CSV table one of whose
    data files holds a quoted field with a line break in it (`quoted_line_break`), unless
    its options set `multiLine`. Spark's CSV reader reads a file line by line by default
    (so that it can split it between tasks): such a field's record was read as two broken
    rows (null or shifted columns, and capture blamed a column's type). With `multiLine`
    it reads each file whole, in one task: only the tables that need it are read so.
    Compressed files, and encodings whose quote is not one byte, are left as written."""
    def fitted(t):
        opts = {k.lower(): v for k, v in t.reader_options.items()}
        path = _local_path(t, base_dir)
        if t.resolved_format != "csv" or "multiline" in opts or path is None:
            return t
        encoding = opts.get("encoding", opts.get("charset", "utf-8"))
        try:
            quote = opts.get("quote", '"').encode(encoding)
            escape = opts.get("escape", "\\").encode(encoding)
            if len(quote) != 1 or len(escape) > 1 or "\n".encode(encoding) != b"\n":
                return t  # (no quoting, or UTF-16 and such: left to Spark as written)
            broken = any(_scanned(f, quote, escape) for f in data_files(path)
                         if not f.name.lower().endswith(m.COMPRESSED))
        except (OSError, LookupError, UnicodeError):
            return t
        return _multiline(t) if broken else t

    return _each_table(dash, fitted)


_SCANS: dict[tuple, bool] = {}  # (path, size, mtime, quote, escape) -> quoted_line_break


def _scanned(path: Path, quote: bytes, escape: bytes) -> bool:
    """`quoted_line_break`, once per version of a file in a process: a server loads its
    specs again on every reload and a notebook on every open (a GB of CSV takes seconds)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, quote, escape)
    if key not in _SCANS:
        if len(_SCANS) >= 4096:
            _SCANS.clear()
        _SCANS[key] = quoted_line_break(path, quote, escape)
    return _SCANS[key]


def quoted_line_break(path: Path, quote: bytes = b'"', escape: bytes = b"\\",
                      chunk: int = 1 << 23) -> bool:
    """Does the CSV file at `path` hold a line break (\\n or \\r) inside quotes? Quotes are
    paired in file order (a doubled quote, `""`, is two; one after `escape` none, as Spark
    reads `\\"`): a line break after an odd number of them is inside a quoted field.
    A quote inside an unquoted field (`5" screen`) may make it say so of a file that has
    none: then the file is only read whole, as the same rows. One pass, 8 MB at a time,
    a few hundred MB/s (numpy)."""
    import numpy as np

    q, e = quote[0], escape[0] if escape and escape != quote else None
    inside, last = 0, -1  # the quotes' parity so far, the previous chunk's last byte
    with open(path, "rb") as f:
        while block := f.read(chunk):
            if quote not in block:
                if inside and (b"\n" in block or b"\r" in block):
                    return True
                last = block[-1]
                continue
            a = np.frombuffer(block, np.uint8)
            quotes = a == q
            if e is not None:  # (an escaped quote does not count)
                quotes[1:] &= a[:-1] != e
                quotes[0] &= last != e
            at = np.flatnonzero(quotes)
            breaks = np.flatnonzero((a == 10) | (a == 13))
            if ((np.searchsorted(at, breaks) + inside) & 1).any():  # (quotes before each)
                return True
            inside, last = (inside + len(at)) & 1, block[-1]
    return False


def _first_character(path: Path) -> bytes | None:
    """The first byte of a file past a UTF-8 byte-order mark and white space (None: empty)."""
    with open(path, "rb") as f:
        head = f.read(3).removeprefix(b"\xef\xbb\xbf")
        while True:
            head = head.lstrip(b" \t\r\n")
            if head:
                return head[:1]
            head = f.read(4096)
            if not head:
                return None


@dataclass(frozen=True)
class SpecPath:
    """Where a table's path was written (kept on the Source, and on each Join, as
    `_spec_path`)."""

    file: str
    line: int | None
    written: str  # as in the spec
    base_dir: str  # the spec file's folder, against which a relative path resolves
    key: str = "source.path"  # its key path in the spec


def resolve_path(path: str, base_dir: str | Path) -> str:
    """A spec's path relative to the spec's folder `base_dir` (URIs as they are)."""
    if _URI.match(path):
        return path
    return str((Path(base_dir) / Path(path).expanduser()).resolve())


