"""The source's schema without Spark: Parquet and ORC footers read with pyarrow, so a
spec naming a missing column fails before a JVM starts or any Spark job runs.

A source that cannot be read is reported at the spec's `source.path` (file and line,
and how a relative path was resolved) when the source came from a spec file.
"""

from __future__ import annotations

import contextlib
import difflib
import math
import os
import re
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.dataset as ds

from brushfire.errors import BrushfireError, CaptureError, SpecError, SpecProblem
from brushfire.spec import models as m
from brushfire.spec.loader import data_files

if TYPE_CHECKING:
    from brushfire.spec.loader import SpecPath

FOOTER_FORMATS = ("parquet", "orc")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_local(path: str) -> bool:
    return not _URI.match(path) or path.startswith("file://")


def source_error(source: m.Table, problem: str, hint: str = "") -> BrushfireError:
    """A SpecError at the spec's source.path (a join's: source.joins[i].path) if the table
    came from a spec file (else a CaptureError), saying how a relative path was resolved."""
    where: SpecPath | None = getattr(source, "_spec_path", None)
    if where is None:
        what = f"the dimension table of join {source.name!r}" if isinstance(source, m.Join) \
            else "the source"
        return CaptureError(f"cannot read {what} {source.path}: {problem}"
                            + (f"; hint: {hint}" if hint else ""))
    shown = repr(where.written)
    if where.written != source.path:
        shown += f" (relative paths are relative to the spec's folder {where.base_dir}: {source.path})"
    return SpecError([SpecProblem(where.file, where.line, where.key, f"{shown}: {problem}", hint)])


def check_path(source: m.Table) -> None:
    """A local source path must exist and, if a directory, hold data files (as Spark
    lists them: names starting with '_' or '.' are not data). Remote URIs are left to Spark."""
    if not is_local(source.path):
        return
    path = Path(source.path.removeprefix("file://"))
    try:
        exists = path.exists()
    except OSError as e:  # a name longer than the file system takes (ENAMETOOLONG), ...
        raise source_error(source, e.strerror or str(e), "fix the path") from None
    if not exists:
        where: SpecPath | None = getattr(source, "_spec_path", None)
        if any(c in path.name for c in "*?[{"):
            folder = path.parent
            hint = (f"a path is a file or a folder (every data file in it is read), not a pattern:"
                    f" write path: {str(folder) if where is None else str(Path(where.written).parent)}"
                    " for every file in that folder, or move the files you want into a folder of"
                    " their own") if folder.is_dir() else _missing_hint(path)
        elif where and where.written != source.path and Path(where.written).exists():
            hint = (f"{where.written!r} exists relative to the current directory, but a spec's"
                    " paths are relative to the spec file: write it relative to"
                    f" {where.base_dir}, or absolute")
        else:
            hint = _missing_hint(path)
            if not Path((where.written if where else source.path).removeprefix("file://")).is_absolute():
                hint += "; fix the path, or make it absolute"
        raise source_error(source, "no such file or directory", hint)
    if path.is_dir() and not any(data_files(path)):
        raise source_error(source, "the directory holds no data files",
                           "Spark reads its files (and its subfolders' if they are `key=value` "
                           "partitions), except names starting with '_' or '.'")


def _missing_hint(path: Path) -> str:
    """Where a missing path stops existing: its nearest folder that exists, and the names
    there close to the missing one."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    missing = path.relative_to(folder).parts[0]
    try:
        names = [p.name for p in folder.iterdir()]
    except OSError:  # not listable: say where it stops, no more
        names = []
    close = difflib.get_close_matches(missing, names, n=3, cutoff=0.6)
    hint = f"{folder.absolute()} has no {missing!r}"
    if close:
        hint += f"; did you mean {' or '.join(repr(c) for c in close)}?"
    return hint


def local_path(uri: str) -> str:
    """The local path a `file:` URI as Spark spells it names (percent-escapes undone);
    any other string as it is."""
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path) if uri.startswith("file:") else uri


def file_record(uri: str) -> dict:
    """A source file as capture keys it: {"uri", "path", "size", "mtime_ns"} (the uri as
    Spark spells it, the local path it names, and what tells a change)."""
    path = local_path(uri)
    st = os.stat(path)
    return {"uri": uri, "path": path, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def local_files(source: m.Table) -> list[dict] | None:
    """The source's data files as capture keys them (`file_record`), listed as Spark does
    (names starting with '_' or '.' are not data), or, of a Delta table, as its log names
    them for its latest version; without Spark. None for remote paths."""
    if not is_local(source.path):
        return None
    if source.resolved_format == "delta":
        table = delta_table(source)
        out = []
        for p in delta_files(source, table):
            try:
                out.append(file_record(Path(p).as_uri()))
            except FileNotFoundError:
                raise source_error(source, f"the Delta table's version {table.version()} names a "
                                   f"file that is not there: {p}", "was it deleted by hand? restore "
                                   "it or write a new version without it") from None
        return out
    path = Path(source.path.removeprefix("file://")).absolute()
    files = data_files(path) if path.is_dir() else [path] if path.exists() else []
    out = []
    for f in files:
        try:
            out.append(file_record(f.as_uri()))
        except FileNotFoundError:  # removed since it was listed: not in the source
            continue
    return out


def footer_schemas(fmt: str, files: list[dict], empty: bool = True) -> dict[str, pa.Schema]:
    """{file uri: its schema} of local Parquet / ORC `files` (`file_record`s), read from
    their footers; other formats, remote or unreadable files are not in it (Spark's
    read says why of those), nor, unless `empty`, files of no rows (Spark reads no value
    of them, whatever their columns)."""
    if fmt not in FOOTER_FORMATS:
        return {}
    out = {}
    for f in files:
        if not is_local(f["path"]):
            continue
        try:
            if fmt == "parquet":
                import pyarrow.parquet as pq

                meta = pq.ParquetFile(f["path"])
                schema, rows = meta.schema_arrow, meta.metadata.num_rows
            else:
                import pyarrow.orc as orc

                meta = orc.ORCFile(f["path"])
                schema, rows = meta.schema, meta.nrows
        except (OSError, pa.ArrowInvalid, KeyError):
            continue
        if rows or empty:
            out[f["uri"]] = schema
    return out


def lacking_columns(fmt: str, files: list[dict], columns: list[str],
                    schemas: dict[str, pa.Schema] | None = None) -> dict[str, list[str]]:
    """{file uri: the `columns` its footer does not have}, of local Parquet / ORC `files`
    (`footer_schemas`, or `schemas` when read already). Spark reads a folder by its first
    file's columns, so a file without one of them reads it as null on its rows (a column
    of no file, a partition's `key=value`, is no file's: left out). Names compared as
    Spark resolves them, case-insensitively."""
    if fmt not in FOOTER_FORMATS or not columns:
        return {}
    schemas = footer_schemas(fmt, files) if schemas is None else schemas
    names = {u: {n.lower() for n in schema.names} for u, schema in schemas.items()}
    held = set().union(*names.values()) if names else set()
    wanted = [c for c in columns if c.lower() in held]
    out = {u: [c for c in wanted if c.lower() not in have] for u, have in names.items()}
    return {u: cs for u, cs in out.items() if cs}


# Spark's Parquet reader reads a file's column typed (as that file alone reads) as the first
# key into the folder's type, the second, with the same values: the widenings its vectorized
# reader makes (measured on Spark 4: tests/capture/test_incremental.py). Other pairs fail in the scan
# ("Data type mismatches when reading Parquet column") or read other values: a narrower
# integer type wraps (300 as tinyint reads 44), dates read as numbers of days, timestamps
# as numbers of microseconds, numbers as dates.
_WIDENED = {"tinyint": {"smallint", "int", "bigint", "double"}, "smallint": {"int", "bigint", "double"},
            "int": {"bigint", "double"}, "float": {"double"}, "date": {"timestamp_ntz"},
            "timestamp": {"timestamp_ntz"}, "timestamp_ntz": {"timestamp"}}
# a column of no type (all null, written without one: pandas' column of None) is read as
# null under these types; under others (string, boolean, float, decimal, timestamps) the scan fails
_NULL_READ_AS = {"tinyint", "smallint", "int", "bigint", "double", "date"}
_ATOMIC = {*_NULL_READ_AS, *_WIDENED, "float", "double", "boolean", "string", "binary"}


def parquet_spark_type(t: pa.DataType) -> str | None:
    """The Spark type (its simpleString) Spark reads a Parquet column of arrow type `t`
    as, when that file alone is read; 'void' for a column of no type; None for types
    whose reading Spark decides otherwise (nested ones, nanosecond timestamps)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    simple = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
              pa.uint8(): "smallint", pa.uint16(): "int", pa.uint32(): "bigint",
              pa.uint64(): "decimal(20,0)", pa.float32(): "float", pa.float64(): "double",
              pa.bool_(): "boolean", pa.date32(): "date", pa.date64(): "date", pa.null(): "void"}
    if t in simple:
        return simple[t]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "binary"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_timestamp(t) and t.unit != "ns":
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    return None


def spark_reads_as(got: str, want: str) -> bool:
    """Does Spark's Parquet reader read a file's column of Spark type `got`
    (`parquet_spark_type`) as the folder's type `want` with the same values?"""
    if got == want:
        return True
    if got == "void":
        return want in _NULL_READ_AS
    if want.startswith("decimal("):  # (more digits either side of the point; integers of 32 bits)
        p, s = (int(x) for x in want[8:-1].split(","))
        if got.startswith("decimal("):
            p2, s2 = (int(x) for x in got[8:-1].split(","))
            return s2 <= s and p2 - s2 <= p - s
        return got in ("tinyint", "smallint", "int") and p - s >= 10
    return want in _WIDENED.get(got, ())


def mistyped_columns(schemas: dict[str, pa.Schema], types: dict[str, str],
                     first: pa.Schema | None = None) -> dict[str, list[tuple]]:
    """{file uri: [(column, its type in the file, the folder's type, its type in the
    folder's `first` file or None)]} of the Parquet files' columns (`footer_schemas`)
    that Spark cannot read as the folder's types `types` ({column: Spark simpleString},
    the columns the spec reads) with their values (`spark_reads_as`). Names compared as
    Spark resolves them, case-insensitively; types Spark decides otherwise (nested ones)
    are left to Spark."""
    want = {c.lower(): (c, t) for c, t in types.items()}
    firsts = {f.name.lower(): parquet_spark_type(f.type) for f in first or []}
    out: dict[str, list[tuple]] = {}
    for uri, schema in schemas.items():
        for fld in schema:
            name, folder = want.get(fld.name.lower(), (None, None))
            if name is None:
                continue
            got = parquet_spark_type(fld.type)
            if got is None or not (folder in _ATOMIC or folder.startswith("decimal(")):
                continue
            if not spark_reads_as(got, folder):
                out.setdefault(uri, []).append((name, got, folder, firsts.get(fld.name.lower())))
    return out


def check_lacking(source: m.Source, columns: list[str]) -> None:
    """Raise at source.path, naming it, when a file of a local folder of Parquet / ORC
    files lacks one of `columns` that others have (`lacking_columns`): called when the
    source's columns, read by its first file as Spark reads them, lack one the spec reads,
    so that a file appended first in the folder without it is named, not only the column."""
    files = local_files(source) if source.resolved_format in FOOTER_FORMATS else None
    lacking = lacking_columns(source.resolved_format, files or [], columns)
    paths = {f["uri"]: f["path"] for f in files or []}
    for uri, cs in sorted(lacking.items(), key=lambda x: paths[x[0]]):
        raise source_error(source, f"{paths[uri]}: has no column {', '.join(map(repr, cs))}, which other "
                           "files of the folder have: Spark reads a folder by its first file's columns",
                           "write the file with every column of the others (null where unknown)")


# Delta Lake reader features whose tables are read right from their Parquet files
DELTA_READABLE = {"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck", "checkpointProtection"}


def delta_table(source: m.Table):
    """The source's Delta table at its latest version (the `deltalake` package reads the
    log without Spark), checked to be readable from its Parquet files alone."""
    try:
        from deltalake import DeltaTable
    except ImportError:
        raise source_error(source, "reading a Delta table needs the deltalake package",
                           "pip install deltalake") from None
    path = source.path.removeprefix("file://")
    try:
        table = DeltaTable(path)
    except Exception as e:  # deltalake raises its own TableNotFoundError, DeltaError, ...
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise source_error(source, f"not a Delta table: {first[:300]}",
                           "source.path names the folder that holds _delta_log") from None
    protocol = table.protocol()
    features = set(protocol.reader_features or [])
    unread = features - DELTA_READABLE - _declared_unused(table, features)
    if protocol.min_reader_version >= 2 and not features or unread:
        needs = ", ".join(sorted(unread)) or "column mapping"
        raise source_error(source, f"the Delta table (version {table.version()}) needs a reader "
                           f"that knows {needs}; Brushfire reads a version's Parquet files as "
                           "they are", "rewrite the table without them (e.g. REORG TABLE ... "
                           "APPLY (PURGE) for deletion vectors)")
    return table


def _declared_unused(table, features: set[str]) -> set[str]:
    """Reader features the table declares that its latest version does not use, so that
    its Parquet files read as they are: deletion vectors where no file has one (Databricks
    declares the feature on new tables; delta-rs rewrites files where it deletes), the
    variant type where no column is one."""
    out = set()
    if "deletionVectors" in features:
        with contextlib.suppress(Exception):  # (a deltalake without the call: not known unused)
            if table.deletion_vectors().read_all().num_rows == 0:
                out.add("deletionVectors")
    if "variantType" in features and '"variant"' not in table.schema().to_json():
        out.add("variantType")
    return out


def delta_files(source: m.Table, table=None) -> list[str]:
    """The Parquet files of the Delta table's latest version (`table`, read if None): local
    paths, sorted. Each is the log's path (a URI's, percent-encoded: a partition value
    `a b` is the folder `pc=a%20b`, logged `pc=a%2520b`) undone, under the table's folder
    (the deltalake package's `file_uris()` percent-encodes the folder's own name: a table
    in `my data/` named files of `my%20data/`, which are not there)."""
    from urllib.parse import unquote

    import pyarrow as pa

    table = table if table is not None else delta_table(source)
    root = Path(source.path.removeprefix("file://")).absolute()
    paths = pa.table(table.get_add_actions(flatten=True))["path"].to_pylist()
    return sorted(local_path(p) if _URI.match(p) or p.startswith("file:") else str(root / unquote(p))
                  for p in paths)


def join_files(source: m.Source) -> list[dict] | None:
    """The files of every join's dimension table (`local_files`, each once), or None when
    one is remote."""
    out: dict[str, dict] = {}
    for j in source.joins:
        files = local_files(j)
        if files is None:
            return None
        out |= {f["uri"]: f for f in files}
    return [out[u] for u in sorted(out)]


def same_files(a: list[dict], b: list[dict]) -> bool:
    """Do two listings name the same files, of the same sizes and modification times?"""
    def key(fs):
        return sorted((f["path"], f["size"], f["mtime_ns"]) for f in fs)
    return key(a) == key(b)


def read_types(source: m.Source) -> dict[str, str | None] | None:
    """{column: 'int' | 'decimal' | 'double' | 'temporal' | 'string' | 'other', or None
    where only Spark types it (a partition column of text)} of the source, or None for
    formats whose schema Spark infers by reading the data (CSV, JSON) and for remote paths;
    with the columns `<join>.<column>` of each join whose dimension table's schema is known
    so, or whose names are (a CSV file's first line: `csv_types`, kinds None where Spark
    infers them; spec/checks.check_columns leaves the others to Spark). Raises at
    source.path (a join's path) when a table cannot be read."""
    types = table_types(source)
    return None if types is None else types | joined_types(source)


def joined_types(source: m.Source) -> dict[str, str | None]:
    """`<join>.<column>`: kind of each join whose dimension table's columns are known
    without Spark (footers, a CSV file's first line)."""
    joined: dict[str, str | None] = {}
    for j in source.joins:
        types = table_types(j) or csv_types(j)
        joined |= {f"{j.name}.{c}": k for c, k in (types or {}).items()}
    return joined


def table_types(source: m.Table) -> dict[str, str | None] | None:
    """`read_types` of one table, without joins."""
    check_path(source)
    fmt = source.resolved_format
    if fmt == "delta" and is_local(source.path):
        return {f.name: fine_kind_of(f.type) for f in pa.schema(delta_table(source).schema().to_arrow())}
    if fmt not in FOOTER_FORMATS or not is_local(source.path):
        _check_not_binary(source)
        return None
    try:
        path = source.path.removeprefix("file://")
        schema = ds.dataset(path, format=fmt).schema
        # a folder's `key=value` subfolders are columns to Spark (a partitioned dataset's),
        # typed by Spark's own inference from the values (a date, a decimal...): a kind
        # only Spark tells (None), unless pyarrow's reads them as numbers too
        hive = ds.dataset(path, format=fmt, partitioning="hive").schema
        parts = {f.name: fine_kind_of(f.type) if pa.types.is_integer(f.type) else None
                 for f in hive if f.name not in schema.names}
    except (OSError, pa.ArrowInvalid) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise source_error(source, f"cannot read it as {fmt}: {first[:300]}", format_hint(fmt)) from None
    # a column of no type in the file Spark types the folder by (every value null: pandas'
    # column of None) is read as int by Spark: a kind only Spark tells, not 'other'
    types = {f.name: None if pa.types.is_null(f.type) else fine_kind_of(f.type) for f in schema} | parts
    _check_case(source, list(types))
    return types


# the first and last bytes of a file of each format (an ORC file ends with its magic and a
# byte, its postscript's length)
_MAGIC = {"parquet": (b"PAR1", slice(-4, None), b"PAR1", "a Parquet"),
          "orc": (b"ORC", slice(-4, -1), b"ORC", "an ORC")}


def _check_not_binary(source: m.Table) -> None:
    """Raise at source.path when a local CSV or JSON table's first data file is a Parquet
    or ORC file (`format: csv` over `flights.parquet`): Spark read its bytes as text,
    validate said ok, and capture named binary garbage as the source's columns."""
    fmt = source.resolved_format
    if fmt not in ("csv", "json") or not is_local(source.path):
        return
    path = Path(source.path.removeprefix("file://"))
    try:
        first = path if path.is_file() else next(iter(data_files(path)), None)
        if first is None or first.stat().st_size < 8:
            return
        with open(first, "rb") as f:
            head = f.read(4)
            f.seek(-4, os.SEEK_END)
            tail = f.read(4)
    except OSError:
        return  # (left to Spark, which says what it cannot read)
    for real, (start, end, magic, a_file) in _MAGIC.items():
        if head.startswith(start) and tail[end] == magic:
            try:  # (a text file may start and end so: one that pyarrow reads is no text)
                ds.dataset(first, format=real).schema  # noqa: B018
            except (OSError, pa.ArrowInvalid):
                return
            which = "it" if first == path else f"its file {first.name}"
            hint = (f"leave format out: the extension says {real}" if m.format_of(first.name) == real
                    else f"set format: {real}")
            raise source_error(source, f"{which} is {a_file} file, but the format is {fmt}", hint)


def _check_case(source: m.Table, names: list[str]) -> None:
    """Raise at source.path when two columns' names differ only in case: Spark resolves
    names ignoring case, and refuses such a table once a capture has started it."""
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(name.lower(), name)
        if other != name:
            msg = f"columns {other!r} and {name!r} differ only in case, which Spark's names ignore"
            raise source_error(source, msg, "rename one of them in the data")


def csv_types(table: m.Table) -> dict[str, str | None] | None:
    """A local CSV table's columns from its first line (`_csv_names`), for a dimension
    table's names before Spark reads it: all strings with `inferSchema: "false"` (as Spark
    reads them then), else of kinds only Spark knows (None; models.CSV_DEFAULTS). None when not such a table,
    or its first line cannot be read plainly."""
    if table.resolved_format != "csv" or not is_local(table.path):
        return None
    names = _csv_names(table)
    if names is None:
        return None
    infer = {k.lower(): v for k, v in table.reader_options.items()}.get("inferschema", "false").lower() == "true"
    names[0] = names[0].removeprefix("\ufeff")  # (a byte-order mark: never refuse a name for it)
    return dict.fromkeys(names, None if infer else "string")


def csv_source_names(source: m.Source) -> dict[str, str | None] | None:
    """A local CSV source's columns from its first line, as `csv_types` gives a dimension
    table's (kinds None where Spark infers them), with the joins' known columns; None when
    not such a source, its first line cannot be read plainly, or a folder's files are in
    subfolders (a partitioned dataset's `key=value` columns are not on that line)."""
    if source.resolved_format != "csv" or not is_local(source.path):
        return None
    path = Path(source.path.removeprefix("file://"))
    if path.is_dir() and any(p.parent != path for p in data_files(path)):
        return None
    names = csv_types(source)
    return None if names is None else names | joined_types(source)


def read_schema(source: m.Source) -> dict[str, str | None] | None:
    """{column: 'number' | 'temporal' | 'string' | 'other' | None (Spark infers it)} of the source, or None for
    formats whose schema Spark infers by reading the data (CSV, JSON)."""
    types = read_types(source)
    if types is None:
        return None
    return {c: "number" if k in ("int", "decimal", "double") else k for c, k in types.items()}


def source_columns(source: m.Source) -> dict[str, str | None] | None:
    """The source's columns as Spark reads them, found without Spark: {column: kind
    ('number' | 'temporal' | 'string' | 'other'), or None where only Spark's analysis can
    tell}: the raw ones from Parquet / ORC footers or a CSV file's first line, then the
    spec's derived columns (kinds unknown), and the joins' `<join>.<column>`. None when
    only Spark can tell which columns there are: JSON (Spark infers them from every
    record), remote paths, a CSV header it could not read plainly (the source's or a
    join's). Raises at source.path when the source cannot be read."""
    raw: dict[str, str | None] | None = read_schema(source)
    if raw is None:  # a local CSV's first line (not a partitioned folder's: its key=value columns)
        raw = csv_source_names(source)
    if raw is None:
        return None
    if any(not any(c.startswith(f"{j.name}.") for c in raw) for j in source.joins):
        return None  # a dimension table whose columns only Spark knows (JSON, remote)
    out = dict(raw)
    out.update(dict.fromkeys(source.columns))  # derived: Spark types them
    return out


def _csv_names(source: m.Source) -> list[str] | None:
    """The columns Spark names a CSV source's: its first data file's first line, split
    on `sep` (with `header`: that line's fields; else _c0, _c1, ...). None when the line
    cannot be read plainly or its names are not distinct and non-empty (Spark would
    rename them)."""
    path = Path(source.path.removeprefix("file://"))
    first = path if path.is_file() else next(iter(data_files(path)), None)
    return None if first is None else _csv_line_names(first, source)


def _csv_line_names(first: Path, source: m.Source) -> list[str] | None:
    """`_csv_names` of one file of the source."""
    import csv

    opts = {k.lower(): v for k, v in source.reader_options.items()}
    if first.suffix in m.COMPRESSED:
        return None
    sep = opts.get("sep", opts.get("delimiter", ","))
    quote = opts.get("quote", '"')
    if len(sep) != 1 or len(quote) > 1:
        return None
    escape = opts.get("escape", "\\")
    try:
        with open(first, encoding=opts.get("encoding", opts.get("charset", "utf-8")), newline="") as f:
            line = f.readline()
            # a name with a line break in quotes: the first record goes on (read with
            # multiLine, spec/loader.py's with_csv_line_breaks; else Spark breaks it too)
            while quote and line.count(quote) % 2 and opts.get("multiline", "false").lower() == "true" \
                    and len(line) < 1 << 20 and (more := f.readline()):
                line += more
        fields = next(csv.reader([line], delimiter=sep, quotechar=quote or None))
    except (OSError, LookupError, UnicodeError, StopIteration, csv.Error):
        return None
    if not fields:  # an empty file, or a blank first line (Spark skips blank lines): no names here
        return None
    if (escape != quote and ((escape and escape in line) or (quote and quote * 2 in line))) \
            or (escape == quote and quote and "\\" + quote in line):
        return None  # a quote inside a name that Spark's reader spells otherwise than Python's
        # (`"q""r"`: q"r with the quote its own escape, as by default, else whole; `"s\"t"`)
    if opts.get("header", "false").lower() != "true":
        return [f"_c{i}" for i in range(len(fields))]
    # (Spark reads the names as it reads values: without the white space these options drop)
    if opts.get("ignoreleadingwhitespace", "false").lower() == "true":
        fields = [n.lstrip() for n in fields]
    if opts.get("ignoretrailingwhitespace", "false").lower() == "true":
        fields = [n.rstrip() for n in fields]
    if not all(fields) or len({n.lower() for n in fields}) != len(fields):
        return None
    return fields


def check_csv_headers(source: m.Source) -> None:
    """Raise at source.path when a file of a local folder of CSV files has a first line
    that names other columns than its first file's (with headers), or has another number
    of fields (without): Spark names the folder's columns by one file's line and reads
    every file's fields by position (a file with its columns in another order, or one
    more or less, reads its values under other columns, and its header line as data where
    Spark infers the types; without headers, a field more is dropped and one less read
    as null, without a word). Files whose first line cannot be read plainly are left to
    Spark."""
    if source.resolved_format != "csv" or not is_local(source.path):
        return
    header = {k.lower(): v for k, v in source.reader_options.items()}.get("header", "false").lower() == "true"
    path = Path(source.path.removeprefix("file://"))
    if not path.is_dir():
        return
    files = data_files(path)
    names = {f: _csv_line_names(f, source) for f in files}
    known = [(f, [n.removeprefix("\ufeff") for n in ns]) for f, ns in names.items() if ns is not None]
    if not known:
        return
    first, want = known[0]
    for f, got in known[1:]:
        if got == want:
            continue
        if header:
            raise source_error(source, f"{f}: its first line names the columns {', '.join(got)}, where the "
                               f"folder's first file {first.name} names {', '.join(want)}: Spark reads "
                               "every file's fields by position under the first file's names",
                               "write every file of the folder with the same header (the same columns "
                               "in the same order)")
        raise source_error(source, f"{f}: its first line has {len(got):,} fields, where the folder's first "
                           f"file {first.name} has {len(want):,}: Spark reads every file's fields by "
                           f"position as {len(want):,} columns (a field more is dropped, one less read "
                           "as null)", "write every file of the folder with the same fields in the same "
                           "order (or with a header line, header: true)")


MAX_FOOTERS = 1_000  # files whose statistics column_ranges reads; beyond that it gives up


def column_ranges(source: m.Source, columns: list[str]) -> dict[str, tuple]:
    """{column: (smallest, largest)} of a local Parquet source, from its row groups'
    statistics, for the `columns` every row group has statistics for: timestamps and dates
    as naive UTC datetimes, numbers as finite floats (a column whose statistics hold an
    infinity or NaN, or are of another type, is left out)."""
    if source.resolved_format != "parquet" or not is_local(source.path) or not columns:
        return {}
    import pyarrow.parquet as pq

    try:
        files = ds.dataset(source.path.removeprefix("file://"), format="parquet").files
        if len(files) > MAX_FOOTERS:
            return {}
        out: dict[str, tuple] = {}
        missing: set[str] = set()
        for f in files:
            meta = pq.ParquetFile(f).metadata
            names = [meta.schema.column(j).name for j in range(meta.num_columns)]
            for rg in range(meta.num_row_groups):
                for c in columns:
                    if c not in names or c in missing:
                        missing.add(c)
                        continue
                    st = meta.row_group(rg).column(names.index(c)).statistics
                    if st is None or not st.has_min_max:
                        if meta.row_group(rg).num_rows:
                            missing.add(c)
                        continue
                    lo, hi = _comparable(st.min), _comparable(st.max)
                    if lo is None or hi is None or type(lo) is not type(hi):
                        missing.add(c)
                        continue
                    old = out.get(c, (lo, hi))
                    if type(old[0]) is not type(lo):
                        missing.add(c)
                        continue
                    out[c] = (min(old[0], lo), max(old[1], hi))
    except (OSError, pa.ArrowInvalid, ValueError, TypeError):
        return {}
    return {c: r for c, r in out.items() if c not in missing}


def _comparable(x) -> datetime | float | None:
    """A statistic as column_ranges compares it: a naive UTC datetime, a finite float, or
    None (anything else)."""
    if isinstance(x, (datetime, date)):
        return _utc(x)
    if isinstance(x, (int, float, Decimal)) and not isinstance(x, bool):
        f = float(x)
        return f if math.isfinite(f) else None
    return None


def _utc(x) -> datetime | None:
    if isinstance(x, datetime):
        return x.astimezone(UTC).replace(tzinfo=None) if x.tzinfo else x
    if isinstance(x, date):
        return datetime(x.year, x.month, x.day)
    return None


def fine_kind_of(t: pa.DataType) -> str:
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_decimal(t):
        return "decimal"
    if pa.types.is_floating(t):
        return "double"
    if pa.types.is_dictionary(t):
        return fine_kind_of(t.value_type)
    return kind_of(t)


def format_hint(fmt: str) -> str:
    """The hint of a source that cannot be read in its format: 'is it an orc file? ...'."""
    article = "an" if fmt[:1].lower() in "aeio" else "a"
    return f"is it {article} {fmt} file? set source.format if the extension does not say"


def kind_of(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "temporal"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t) \
            or pa.types.is_string_view(t):  # (string_view: tpchgen-cli's Parquet, for one)
        return "string"
    if pa.types.is_nested(t):  # (a list, map or struct: no view's bars are made of them)
        return "nested"
    return "other"
