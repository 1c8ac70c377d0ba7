"""Spark's analysis of a spec's source, before any job: read the source (schema only),
add each derived column and static filter one at a time and let Spark analyse it
(`df.schema` resolves names and types without running anything; reading a Parquet
source's schema is Spark's one small job over the footers), so every failure names
its key: `source.path`, `source.columns.<name>` or `source.filters[i]`. Then the view
fields are checked against the types Spark gives the derived columns, and decimal
division in derived columns is reported as a warning.

Capture calls `analyze_source` instead of reading the source itself; `brushfire validate
--spark` calls it on a local Spark session. `materialize_source` writes the source as
Spark computes it (derived columns, filters) to Parquet, for SQL engines that check
Brushfire's answers (tests/oracle.py, `brushfire bench --check`, the DuckDB baselines).

With capture/spark.py, the only modules that use pyspark (imported inside functions).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import unquote, urlparse

from brushfire.capture.profiling import add_profile_columns
from brushfire.errors import BrushfireError, CaptureError, SpecError, SpecProblem
from brushfire.plan import needed_columns
from brushfire.source import column_ranges, format_hint, read_types, source_error
from brushfire.spec import models as m
from brushfire.spec.checks import (
    check_columns,
    check_data_bars,
    data_bar_fields,
    expression_warnings,
    missing_key,
)

log = logging.getLogger("brushfire.spec")
Warn = Callable[[str], None]


def read_raw(spark, src: m.Source, paths: list[str] | None = None, schema=None):
    """The source's files as Spark reads them (no derived columns, no filters): all of
    them, or `paths` of them (with `schema`, the whole source's, so that a subset is read
    with the types the whole has)."""
    if src.resolved_format == "delta":  # the Parquet files its log names, as they are
        return _read_delta(spark, src, paths, schema)
    reader = spark.read.format(src.resolved_format).options(**src.reader_options)
    if paths is None:
        return _utf8_folders(reader.load(src.path), src, paths)
    if Path(src.path.removeprefix("file://")).is_dir() or "://" in src.path:
        reader = reader.option("basePath", src.path)  # partition columns from the folders
    if schema is not None:
        reader = reader.schema(schema)
    return _utf8_folders(reader.load(paths), src, paths)


def _utf8_folders(df, src: m.Source, paths: list[str] | None):
    """A local partitioned dataset's text partition values as their folder names spell
    them in UTF-8: pandas and pyarrow percent-encode a value's bytes (`city=Z%C3%BCrich`),
    which Spark unescapes one byte to one character ('ZÃ¼rich')."""
    from urllib.parse import unquote

    from brushfire.source import is_local, local_files

    root = Path(src.path.removeprefix("file://"))
    texts = {f.name for f in df.schema.fields if f.dataType.typeName() == "string"}
    if not is_local(src.path) or not root.is_dir() or not texts:
        return df
    files = paths if paths is not None else [f["path"] for f in local_files(src) or []]
    fixes: dict[str, dict[str, str]] = {}
    for f in files:
        for c, v in _folder_values(src, f, sorted(texts)).items():
            if "%" not in v:
                continue
            try:
                right = unquote(v, errors="strict")
            except UnicodeDecodeError:  # (not UTF-8: as Spark reads it)
                continue
            if _unescaped(v) != right:
                fixes.setdefault(c, {})[_unescaped(v)] = right
    return _remapped(df, fixes)


def _remapped(df, fixes: dict[str, dict[str, str]]):
    """`df` with each column's values `fixes[column]` maps replaced."""
    from pyspark.sql import functions as F

    for c, pairs in fixes.items():
        fixed = F.col(c)
        for seen, value in pairs.items():
            fixed = F.when(F.col(c) == F.lit(seen), F.lit(value)).otherwise(fixed)
        df = df.withColumn(c, fixed)
    return df


def _read_delta(spark, src: m.Source, paths: list[str] | None, schema=None):
    """A Delta table's latest version (or `paths` of its files, with `schema`: the whole
    table's as read) read from its Parquet files, with every column of the table's schema
    (a column a later version added, schema evolution, is null on the rows of the files
    written before it: Spark reads Parquet files by one file's columns, so they are merged
    when that one lacks some); partition columns from the files' folders, typed as the
    table's schema says."""
    from pyspark.sql import functions as F

    from brushfire.capture.spark import _conf
    from brushfire.source import delta_files, delta_table

    table = delta_table(src)
    files = paths if paths is not None else delta_files(src, table)
    if not files:
        raise source_error(src, f"the Delta table's version {table.version()} has no files")
    parts = table.metadata().partition_columns

    def read(paths: list[str], base: bool = True):
        def load(**options):
            reader = spark.read.format("parquet").options(**src.reader_options).options(**options)
            if base:
                reader = reader.option("basePath", src.path)
            if schema is not None:  # the whole table's data columns (its partitions: the folders')
                from pyspark.sql.types import StructType

                folded = {c.lower() for c in parts}
                reader = reader.schema(StructType([f for f in schema.fields if f.name.lower() not in folded]))
            return reader.load(paths)

        df = load()
        names = {c.lower() for c in df.columns}
        if schema is None and any(c.lower() not in names for c in data):
            df = load(mergeSchema="true")
        return df

    data = [c for c in table.schema().to_arrow().names if c not in parts]
    # a file whose folder holds an empty value (`pc=`: the deltalake package writes an empty
    # string so, a null to Delta's readers) Spark refuses to read as a partition: read
    # apart, its partition values from its folders
    folders = {f: _folder_values(src, f, parts) for f in files}
    blank = sorted({tuple(sorted(v.items())) for v in folders.values() if "" in v.values()})
    with _conf(spark, {"spark.sql.sources.partitionColumnTypeInference.enabled": "false"}):
        rest = [f for f in files if "" not in folders[f].values()]
        df = read(rest) if rest else None
        for values in blank:
            group = read([f for f in files if tuple(sorted(folders[f].items())) == values], base=False)
            for c, v in values:
                group = group.withColumn(c, F.lit(None if v in ("", "__HIVE_DEFAULT_PARTITION__") else
                                                  _unescaped(v)).cast("string"))
            df = group if df is None else df.unionByName(group, allowMissingColumns=True)
    if parts:  # as strings from the folder names, then as the table types them
        import pyarrow as pa

        schema = pa.schema(table.schema().to_arrow())
        texts = [c for c in parts if _spark_type(schema.field(c).type) == "string"]
        df = _remapped(df, _folder_misreads(table, texts))
        for c in parts:
            df = df.withColumn(c, F.col(c).cast(_spark_type(schema.field(c).type)))
    return df


def _unescaped(folder: str) -> str:
    """A partition folder's value as Spark reads it: each `%XX` one character."""
    import re

    return re.sub(r"%([0-9A-Fa-f]{2})", lambda x: chr(int(x.group(1), 16)), folder)


def _folder_values(src: m.Source, path: str, parts: list[str]) -> dict[str, str]:
    """{partition column: the value its `column=value` folder gives (as written)} of a
    file of a Delta table."""
    root = Path(src.path.removeprefix("file://")).absolute()
    try:
        segments = Path(path.removeprefix("file://")).absolute().relative_to(root).parts[:-1]
    except ValueError:
        return {}
    out = {}
    for segment in segments:
        c, eq, v = segment.partition("=")
        if eq and c in parts:
            out[c] = v
    return out


def _folder_misreads(table, columns: list[str]) -> dict[str, dict[str, str]]:
    """{partition column: {value as Spark reads it from a file's folder: the value the
    table's log gives}} where they differ: Spark unescapes a folder name's `%XX` one byte
    to one character, so a value of non-ASCII text the writer percent-encoded ('ü' as
    `%C3%BC`, as the deltalake package writes it) reads as 'Ã¼'."""
    from urllib.parse import unquote

    import pyarrow as pa

    if not columns:
        return {}
    actions = pa.table(table.get_add_actions(flatten=True))
    out: dict[str, dict[str, str]] = {}
    for c in columns:
        key = f"partition.{c}"
        if key not in actions.column_names:
            continue
        for path, value in zip(actions["path"].to_pylist(), actions[key].to_pylist(), strict=True):
            folder = next((s[len(c) + 1:] for s in unquote(path).split("/") if s.startswith(f"{c}=")), None)
            if folder is None or value is None or folder == "__HIVE_DEFAULT_PARTITION__":
                continue
            read = _unescaped(folder)
            if read != value:
                out.setdefault(c, {})[read] = value
    return out


def _spark_type(t) -> str:
    import pyarrow as pa

    if pa.types.is_integer(t):
        return "bigint" if t.bit_width == 64 else "int"
    if pa.types.is_floating(t):
        return "double"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    return "string"


BROADCAST_BYTES = 256 << 20  # a dimension table Spark estimates at most this large is broadcast


def analyze_source(spark, dash: m.DashboardSpec, warn: Warn | None = None,
                   paths: list[str] | None = None, schema=None, origin: bool = False,
                   broadcast_bytes: int = BROADCAST_BYTES, all_columns: bool = False, whole=None):
    """The source as a DataFrame (joins made, derived columns added, static filters
    applied), every part analysed by Spark and checked against the spec; nothing is run.
    Raises SpecError at the key that fails; warnings go to `warn` (default: the
    'brushfire.spec' logger). `paths`, `schema`: only those of the source's files
    (`read_raw`), with `whole` the whole source's DataFrame (this function's), over which
    the profiling checks are computed (a check depends on every row). `origin`: with where each row comes from (ORIGIN, `with_row_origin`),
    each input split's rows together and in order also when a join shuffles them.
    Joined columns are `<join>.<column>`: those the spec reads, or `all_columns`."""
    from pyspark.sql import functions as F

    warn = warn or log.warning
    src = dash.source
    if paths is None and read_types(src) is not None:  # local Parquet / ORC: footers, not Spark
        check_data_bars(dash, column_ranges(src, data_bar_fields(dash)))
    with _spark_problem(lambda text: source_error(src, text, _read_hint(text, src))):
        df = read_raw(spark, src, paths, schema)
        _ = df.schema
        if paths is None:
            _refuse_unread_json(df, src)
    source_kinds = {f.name: _fine_kind(f.dataType) for f in df.schema.fields}
    if origin:  # (read before a join: Spark refuses input_file_name() over two tables)
        df = with_row_origin(df)
    shuffled, dim_kinds = False, {}
    if src.joins:
        df, shuffled, dim_kinds = _join_dimensions(spark, dash, df, broadcast_bytes, all_columns)
        source_kinds |= {f.name: _fine_kind(f.dataType) for f in _flat_fields(df, src)}
    for name, text in src.columns.items():
        with _spark_problem(_at(dash, ("source", "columns", name), "Spark cannot analyse it")):
            df = df.withColumn(name, F.expr(text))
            _ = df.schema
    for i, text in enumerate(src.filters):
        loc = ("source", "filters", i)
        with _spark_problem(_at(dash, loc, "Spark cannot analyse it")):
            t = df.select(F.expr(text).alias("c")).schema.fields[0].dataType
            if t.typeName() != "boolean":
                msg = f"a static filter is a condition, but Spark types this {t.simpleString().upper()}"
                raise _spec_error(dash, loc, msg, "compare it with something, e.g. x > 0")
            df = df.where(F.expr(text))
            _ = df.schema
    if src.joins:
        df = _flattened(df, src)
    if shuffled and origin:  # each input split's rows together, in order, as a scan reads them
        df = df.repartition(df.sparkSession.sparkContext.defaultParallelism, *ORIGIN[:2]) \
            .sortWithinPartitions(*ORIGIN)
    fields = {f.name: f.dataType for f in df.schema.fields}
    derived = {name: _fine_kind(fields[name]) for name in src.columns}
    # (a dimension table's columns the spec does not read are not carried: named in errors)
    kinds = {c: _fine_kind(t) for c, t in fields.items() if c not in ORIGIN}
    try:
        check_columns(dash, {**dim_kinds, **kinds}, derived=derived)
    except SpecError as e:
        if paths is not None:
            raise
        raise _text_explained(df, dash, _typed_by_files(spark, dash, e, kinds), kinds) from None
    types = {name: fields[name].simpleString().upper() for name in src.columns}
    if paths is None:  # (said once, for the whole source)
        for w in expression_warnings(dash, source_kinds, types):
            warn(w.render())
    # the spec's profiling checks (capture/profiling.py)
    return add_profile_columns(df, dash, df if whole is None else whole)


def _join_dimensions(spark, dash: m.DashboardSpec, df, broadcast_bytes: int, all_columns: bool):
    """`df` LEFT JOIN each dimension table, in the spec's order, each join's columns one
    struct column named as the join (so that derived columns and filters read
    `<join>.<column>` as Spark SQL reads a struct's field), and whether a join shuffled
    the rows (a table over `broadcast_bytes` is not broadcast). Errors at the join's key."""
    from pyspark.sql import functions as F

    from brushfire.capture.joins import name_clash

    needed = needed_columns(dash)
    shuffled = False
    every: dict[str, str] = {}  # every column of every table, carried or not (for errors)
    own = list(df.columns)  # (validate knows a CSV or JSON source's only now)
    for i, j in enumerate(dash.source.joins):
        clash = name_clash(j, own)
        if clash is not None:
            raise _spec_error(dash, ("source", "joins", i, "name"), *clash[1:])
        with _spark_problem(lambda text, j=j: source_error(j, text, _read_hint(text, j))):
            dim = read_raw(spark, j)
            _ = dim.schema
        names = dim.columns if all_columns or needed[j.name] is None else \
            [c for c in dim.columns if c.lower() in {n.lower() for n in needed[j.name]}]
        keyed = [c for c in dim.columns if c.lower() == j.key.lower()]
        if not keyed:  # (validate says so of a Parquet or CSV table; a JSON one's known now)
            raise _spec_error(dash, ("source", "joins", i, "key"), *missing_key(j, dim.columns))
        every |= {f"{j.name}.{f.name}": _fine_kind(f.dataType) for f in dim.schema.fields}
        with _spark_problem(_at(dash, ("source", "joins", i, "key"),
                                f"Spark cannot read column {j.key!r} of {j.path}")):
            names = list(dict.fromkeys([keyed[0], *names]))
            right = dim.select(F.struct(*[F.col(_q(c)) for c in names]).alias(j.name))
            size = int(str(right._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
            small = size <= broadcast_bytes
            shuffled |= not small
        with _spark_problem(_on_problem(dash, i, j)):
            on = F.col(_q(j.on)) if dash.source.join_of(j.on) is None else F.col(
                ".".join(_q(p) for p in j.on.split(".", 1)))
            df = df.join(F.broadcast(right) if small else right,
                         on=on == F.col(j.name)[keyed[0]], how="left")
            _ = df.schema
    return df, shuffled, every


def _on_problem(dash: m.DashboardSpec, i: int, j: m.Join) -> Callable[[str], BrushfireError]:
    """The error of a join Spark cannot make, at its `on`: for types no join compares (a
    timestamp with an integer) a hint naming both columns, not a misspelt column's."""
    def make(text: str) -> BrushfireError:
        types = re.search(r'incompatible types \("([^"]+)" and "([^"]+)"\)', text)
        hint = _analysis_hint(text)
        if types:
            on = f"the source's {j.on}" if dash.source.join_of(j.on) is None else j.on
            hint = (f"{on} and key {j.key} of {Path(j.path).name} are of types no join compares "
                    f"({types[1]}, {types[2]}): give them one type in the files")
        return _spec_error(dash, ("source", "joins", i, "on"), f"Spark cannot join on it: {text}", hint)
    return make


def check_join_keys(spark, dash: m.DashboardSpec, on_types: dict | None = None) -> None:
    """CaptureError when a join's key is not unique in its table (one small job per join,
    over the dimension table alone), compared as the join compares it with its `on`
    column (`on_types`: {join name: Spark type of its on column}): string keys '7' and
    '007' are one key for an integer `on`, which Spark casts them to."""
    from pyspark.sql import functions as F

    from brushfire.capture.joins import duplicate_error, key_text
    from brushfire.capture.spark import collect_utc, spark_errors

    for j in dash.source.joins:
        with spark_errors(f"checking that key {j.key!r} of join {j.name!r} is unique"):
            dim = read_raw(spark, j)
            key = F.col(_q(j.key))
            as_joined = key_as_joined(spark, dim.select(key).schema.fields[0].dataType,
                                       (on_types or {}).get(j.name))
            k = key if as_joined is None else F.expr(f"try_cast({_q(j.key)} AS {as_joined})")
            if as_joined is not None:  # a key the join's cast fails on fails the scan: say so now
                bad = collect_utc(dim.where(key.isNotNull() & k.isNull()).select(key.alias("raw")).limit(1))
                if bad:
                    msg = (f"join {j.name!r}: key {j.key!r} of {j.path} holds {key_text(bad[0]['raw'])}, which is "
                           f"not a {as_joined.upper()}: the join compares the key with {j.on!r} as a "
                           f"{as_joined.upper()}, casting it as SQL does, and Spark (as DuckDB) fails on "
                           f"a value that is not one; hint: fix or remove that row of {j.path}, or give "
                           f"{j.on!r} and {j.key!r} one type in the files")
                    infer = {o.lower(): v.lower() for o, v in j.reader_options.items()}.get("inferschema")
                    if j.resolved_format == "csv" and infer != "true":  # ('7.0': a double, inferred)
                        msg += ' (a CSV file\'s columns are strings unless options: {inferSchema: "true"})'
                    raise CaptureError(msg)
            # (collected as UTC: a time key is named as the instant, whatever the host's zone)
            keys = dim.select(key.alias("raw"), k.alias("k")).where(F.col("k").isNotNull())
            dup = collect_utc(keys.groupBy("k").agg(F.count(F.lit(1)).alias("n"), F.min("raw").alias("raw"))
                              .where(F.col("n") > 1).limit(1))
            files = None
            if dup and not Path(j.path).is_file():  # (a folder, a Delta table: which of its files)
                # (a job again, only when a value is duplicated: a sound table's check pays
                # nothing for the files)
                dup = collect_utc(keys.withColumn("file", F.input_file_name()).groupBy("k").agg(
                    F.count(F.lit(1)).alias("n"), F.min("raw").alias("raw"),
                    F.array_sort(F.collect_set("file")).alias("files")).where(F.col("n") > 1).limit(1))
                files = [unquote(urlparse(f).path) for f in dup[0]["files"]]
        if dup:
            raise duplicate_error(j, dup[0]["raw"], dup[0]["k"], files)


def key_as_joined(spark, key_type, on_type) -> str | None:
    """The type Spark compares a join's key in when it differs from the key's own (None:
    the key's own), so that keys the join takes as equal count as duplicates: Spark's own
    coercion of `on = key` (a string key with an integer `on` is cast to BIGINT, with a
    decimal one both to DOUBLE), read from the analysed comparison."""
    from pyspark.sql import functions as F

    if on_type is None or key_type == on_type:
        return None
    try:
        df = spark.range(0).select(F.lit(None).cast(on_type).alias("o"), F.lit(None).cast(key_type).alias("k"))
        plan = df.select((F.col("o") == F.col("k")).alias("c"))._jdf.queryExecution().analyzed()
        compared = plan.projectList().apply(0).child().right().dataType().simpleString()
    except Exception:  # (py4j: a plan of another shape) the key as it is
        return None
    return None if compared == key_type.simpleString() else compared


CORRUPT = "_corrupt_record"  # Spark's column of the JSON text it reads as no record


def _refuse_unread_json(df, src: m.Source) -> None:
    """Refuse a JSON source some of whose text Spark reads as no record (PERMISSIVE mode, the
    default, keeps it in a `_corrupt_record` column and makes the row's columns null): such
    rows were captured as all-null rows, their data lost without a word. A file of one
    object (GeoJSON's FeatureCollection, one feature a line) lost its first feature so
    (the line that opens the object), a line cut short its record. Unless the options say how to read such text
    (`mode`, `columnNameOfCorruptRecord`). One Spark job, over the sources that have it."""
    from pyspark.sql import functions as F

    opts = {k.lower() for k in src.reader_options}
    if src.resolved_format != "json" or CORRUPT not in df.columns or \
            opts & {"mode", "columnnameofcorruptrecord"}:
        return
    bad = F.col(CORRUPT).isNotNull()
    others = [c for c in df.columns if c != CORRUPT]
    example = F.first(F.when(bad, F.struct(F.col(CORRUPT), F.col("__bf_file"))), ignorenulls=True)
    # (Spark refuses a query of raw JSON that reads its corrupt-record column alone; and a
    # file's name in an aggregate's arguments, but not a column of it)
    n, total, first = df.withColumn("__bf_file", F.input_file_name()).select(
        F.sum(bad.cast("long")), F.count(F.lit(1)), example, F.count(F.col(_q(others[0])))).first()[:3] \
        if others else (None, None, None)
    if others and not n:
        return
    where = f": {first[0].strip()[:80]!r} in {Path(first[1]).name}" if first else ""
    what = f"{n:,} of its {total:,} lines" if n else "its lines"
    msg = (f"Spark reads {what} as no JSON record{where} (their rows would be null in every "
           "view)")
    hint = ("a JSON source holds one object a line (JSON Lines) or one array of objects; a file of "
            "one object, such as GeoJSON's FeatureCollection, is no table: write its records one a "
            "line (e.g. jq -c '.features[]' in.json > out.jsonl); or give options: {mode: "
            "DROPMALFORMED} to leave such lines out")
    raise source_error(src, msg, hint)


def _flat_fields(df, src: m.Source):
    """The joined columns of `_join_dimensions`'s DataFrame, named `<join>.<column>`."""
    from pyspark.sql import types as T

    out = []
    for f in df.schema.fields:
        if any(f.name == j.name for j in src.joins) and isinstance(f.dataType, T.StructType):
            out += [T.StructField(f"{f.name}.{g.name}", g.dataType) for g in f.dataType.fields]
    return out


def _flattened(df, src: m.Source):
    """`df` with each join's struct column replaced by its columns, `<join>.<column>`."""
    from pyspark.sql import functions as F

    joins = {j.name for j in src.joins}
    return df.select(*[F.col(_q(c)) for c in df.columns if c not in joins],
                     *[F.col(_q(j.name))[c].alias(f"{j.name}.{c}") for j in src.joins
                       if j.name in df.columns for c in df.schema[j.name].dataType.fieldNames()])


def _q(c: str) -> str:
    return "`" + c.replace("`", "``") + "`"


ORIGIN = ("__bf_file", "__bf_split", "__bf_pos")  # where a row comes from (with_row_origin)


def with_row_origin(df):
    """`df` (the files as read) with where each row comes from: its input file, split and
    position in the task that read it (ORIGIN). Capture numbers rows (rids) by (file,
    split, position): `rid_offsets` gives each split's first rid."""
    from pyspark.sql import functions as F

    file, split, pos = ORIGIN
    return df.select("*", F.input_file_name().alias(file), F.input_file_block_start().alias(split),
                     F.monotonically_increasing_id().alias(pos))


def rid_offsets(sizes: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    """The first rid of each (file, split) given their rows: in file, then split order,
    as capture orders its shards."""
    out, at = {}, 0
    for key in sorted(sizes):
        out[key] = at
        at += sizes[key]
    return out


def materialize_source(dash: m.DashboardSpec, cache_dir: str | Path, spark=None) -> list[str]:
    """The source's rows as Spark computes them (derived columns added, static filters
    applied, in capture's row order) as Parquet files under `cache_dir`, written once per
    source version and spec source (the entry is reused while both are unchanged).
    Returns the files in row order."""
    from brushfire.capture import spark as sp
    from brushfire.lineage.store import files_fingerprint
    from brushfire.source import join_files, local_files

    src = dash.source
    checks = [dash.profile.model_dump(mode="json")] if dash.profile else []  # their columns too
    files = files_fingerprint((local_files(src) or []) + (join_files(src) or []))
    key = hashlib.sha256(json.dumps([src.model_dump(mode="json"), files, *checks],
                                    sort_keys=True, default=str).encode()).hexdigest()[:20]
    entry = Path(cache_dir) / "sources" / f"{dash.name}-{key}"
    if not (entry / "_SUCCESS").exists():
        spark = spark or sp.get_spark()
        df = analyze_source(spark, dash, origin=True)
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".partial-", dir=entry.parent))
        conf = spark.conf.get("spark.sql.parquet.outputTimestampType", None)
        try:
            spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
            with sp.spark_errors("writing the source for the SQL check"):
                # in capture's row order: by input file, split and position (a range-
                # partitioned sort writes its part files in that order)
                df.orderBy(*ORIGIN).drop(*ORIGIN).write.mode("overwrite").parquet(str(tmp / "data"))
        finally:
            if conf is None:
                spark.conf.unset("spark.sql.parquet.outputTimestampType")
            else:
                spark.conf.set("spark.sql.parquet.outputTimestampType", conf)
        shutil.rmtree(entry, ignore_errors=True)
        (tmp / "data").rename(entry)
        shutil.rmtree(tmp, ignore_errors=True)
    # part-00000, part-00001, ...: Spark's partition order, which is capture's row order
    return [str(p) for p in sorted(entry.glob("part-*.parquet"))]


# --- Spark's errors, at the spec's keys -------------------------------------------------


def _at(dash: m.DashboardSpec, loc: tuple, what: str) -> Callable[[str], BrushfireError]:
    def make(text: str) -> BrushfireError:
        return _spec_error(dash, loc, f"{what}: {text}", _analysis_hint(text))
    return make


def _spec_error(dash: m.DashboardSpec, loc: tuple, msg: str, hint: str = "") -> SpecError:
    from brushfire.spec.problems import line_of, render

    lines = getattr(dash, "_lines", {})
    filename = getattr(dash, "_filename", "<spec>")
    return SpecError([SpecProblem(filename, line_of(lines, loc), render(loc), msg, hint)])


@contextlib.contextmanager
def _spark_problem(make: Callable[[str], BrushfireError]) -> Iterator[None]:
    """Spark's analysis and read errors (pyspark, py4j) as the error `make` builds from
    Spark's first line; anything else passes through."""
    try:
        yield
    except BrushfireError:
        raise
    except Exception as e:
        if type(e).__module__.split(".")[0] not in ("pyspark", "py4j"):
            raise
        raise make(spark_message(e)) from None


def spark_message(e: BaseException) -> str:
    """Spark's reason in one line: no error class tag, SQLSTATE, plan or Java stack."""
    text = str(e).strip()
    first = text.splitlines()[0] if text else type(e).__name__
    causes: list[str] = []
    if "Py4JJavaError" in type(e).__name__ or first.startswith("An error occurred while calling"):
        causes = [x.split("Exception:", 1)[1] for x in text.splitlines() if "Exception:" in x]
        first = causes[0] if causes else first
    first = re.sub(r"^\s*\[[A-Z0-9_.]+\]\s*", "", first)
    first = re.sub(r"\s*SQLSTATE: \w+;?.*$", "", first).rstrip(" ;")
    if re.fullmatch(r"Encountered error while reading file \S+", first.rstrip(".")) and len(causes) > 1:
        first = f"{first.rstrip('.')}: {causes[1].strip()}"  # (a file's own error: why, not only which)
    return first[:400]


def _analysis_hint(text: str) -> str:
    low = text.lower()  # ('Cannot resolve "(a = b)" due to data type mismatch': types first)
    if "data type mismatch" in low or "datatype_mismatch" in low:
        return "CAST(x AS DOUBLE) or CAST(x AS STRING) makes the types agree"
    if "cannot be resolved" in low or "cannot resolve" in low:
        return "name a column of the source, or a derived column above this one"
    if "undefined function" in low or "unresolved_routine" in low:
        return "see the functions Spark SQL provides; docs/spec.md lists the allowed ones"
    return "check the expression against Spark SQL's syntax"


def _read_hint(text: str, src: m.Source) -> str:
    low = text.lower()
    if "path does not exist" in low or "path_not_found" in low:
        from brushfire.source import is_local

        if is_local(src.path) and Path(src.path.removeprefix("file://")).exists():  # one of its files
            return ("a file of the source was removed while it was read: capture again (serve --watch "
                    "does at its next check, the last capture served meanwhile)")
        return "fix the path; executors must read it at the same path (docs/deploy.md)"
    if "unable to infer schema" in low:
        return "the path holds no data files Spark can read (empty directory, or wrong format?)"
    if "failed to find the data source" in low or "data_source_not_found" in low:
        return "source.format is parquet, csv, json or orc"
    if "timestamp(nanos" in low:  # pandas writes its datetimes so, by default
        return ("Spark reads times to the microsecond, not a Parquet column of nanoseconds: write"
                " the file in microseconds, e.g. pandas' df.to_parquet(path, coerce_timestamps='us',"
                " allow_truncated_timestamps=True), or pyarrow's write_table(..., coerce_timestamps='us')")
    if "is not supported" in low or "illegal parquet type" in low:
        return "a column of a type Spark cannot read: leave it out of the file, or store it as another type"
    return format_hint(src.resolved_format)


def _typed_by_files(spark, dash: m.DashboardSpec, error: SpecError, kinds: dict[str, str]) -> SpecError:
    """`error` (a column of the wrong kind) with the files that make the column so, of a
    local folder of CSV or JSON files: Spark types such a column by every file's values,
    so one file appended with a value of another kind ('n/a' among numbers) makes the
    column text in every file, and the spec that worked until then fails at a view that
    does not name the file. Each file's columns are inferred alone (jobs of their own,
    only when the check failed)."""
    from brushfire.source import local_files

    src = dash.source
    files = local_files(src) if src.resolved_format in ("csv", "json") else None
    if not files or len(files) < 2 or len(files) > 64:
        return error
    named = [c for c in kinds if any(f"column {c!r}" in p.message for p in error.problems)]
    if not named:
        return error
    from pyspark.sql import functions as F

    own: dict[str, dict[str, str]] = {}
    try:
        for f in files:
            df = spark.read.format(src.resolved_format).options(**src.reader_options).load(f["uri"])
            # (a column of no value in a file is typed string there, but types nothing)
            own[f["path"]] = {x.name: _fine_kind(x.dataType) for x in df.schema.fields
                              if x.name not in named or kinds[x.name] != _fine_kind(x.dataType)
                              or df.where(F.col(_q(x.name)).isNotNull()).limit(1).count()}
    except Exception:  # (a file Spark cannot read alone: the error as it was)  # noqa: BLE001
        return error
    problems = []
    for p in error.problems:
        for c in named:
            if f"column {c!r}" not in p.message:
                continue
            making = [path for path, ks in own.items() if ks.get(c) == kinds[c]]
            if making and len(making) < len(own):
                more = f" (and {len(making) - 1:,} more files)" if len(making) > 1 else ""
                others = sorted({ks.get(c) for ks in own.values() if ks.get(c) != kinds[c]} - {None})
                p = SpecProblem(p.file, p.line, p.path, f"{p.message}: {making[0]}{more} makes it "
                                f"{kinds[c]} (Spark types a {src.resolved_format.upper()} column by every "
                                f"file's values; the other files' are {', '.join(others) or 'none'})",
                                p.hint)
                break
        problems.append(p)
    return SpecError(problems, error.cause)


def _text_explained(df, dash: m.DashboardSpec, error: SpecError, kinds: dict[str, str]) -> SpecError:
    """`error` with what a source's text column that a view needs as a number or a time
    holds, when that is why it is text: no value at all (Spark types a CSV or JSON column
    without values as a string), numbers written as text (`"year": "1565"` in JSON; 'n/a'
    among a CSV column's numbers; 'nan' or 'inf', read as the CSV reader's options say; a
    decimal comma, '1,5'), or dates in a shape the hint's pattern reads ('Jan 1 2000'),
    with the derived column (or the options) that reads them, also after the file that
    makes the column text is named (`_typed_by_files`). One Spark job per column named,
    only when the check failed."""
    from pyspark.sql import functions as F

    from brushfire.capture.spark import datetime_pattern

    problems, asked = [], False
    for p in error.problems:
        year = _years_explained(df, dash, p, kinds)
        if year is not None:
            problems.append(year)
            asked = True
            continue
        c = next((c for c in kinds if kinds[c] == "string" and c not in dash.source.columns
                  and p.message.startswith(f"column {c!r} is a string column, but")), None)
        time = p.message.endswith("needs a temporal column")
        if c is None or not (time or "needs a number" in p.message):
            problems.append(p)
            continue
        x = F.col(_q(c))
        number = F.expr(f"try_cast({_q(c)} AS DOUBLE)")
        comma = F.expr(f"try_cast(replace({_q(c)}, ',', '.') AS DOUBLE)")  # ('1,5': a decimal comma)
        # NaN and infinities spelled otherwise than the CSV reader's options (pyarrow's
        # 'nan', pandas' 'inf'): try_cast reads them, the reader's type inference does not
        spelled = F.lower(F.trim(x)).isin(*_NONFINITE) & ~x.isin(*_csv_nonfinite(dash.source))
        try:
            n, numbers, commas, text, first, odd = df.select(
                F.count(x), F.count(number), F.count(comma),
                F.first(F.when(number.isNull(), x), ignorenulls=True), F.first(x, ignorenulls=True),
                F.slice(F.collect_set(F.when(spelled, x)), 1, 8)).first()
            asked = True
        except Exception:  # (Spark cannot read it now: the error as it was)  # noqa: BLE001
            problems.append(p)
            continue
        plain = all(part.isidentifier() for part in c.split("."))
        f = c if plain else _q(c)
        name = (f"{c.rsplit('.', 1)[-1]}_time" if plain else "time") if time else \
            (f"{c.rsplit('.', 1)[-1]}_number" if plain else "number")
        pattern = datetime_pattern(first) if time and first is not None else None
        if n == 0:
            fmt = dash.source.resolved_format
            what = "it holds no value" + (f" (Spark types a {fmt.upper()} column of no value as a string)"
                                          if fmt in ("csv", "json") else "")
            hint = (f"derive a {'timestamp' if time else 'number'} column of it in source.columns, e.g. "
                    f"`{name}: CAST({f} AS {'TIMESTAMP' if time else 'DOUBLE'})`")
        elif time and pattern:
            what = f"its text is times such as {first!r}"
            hint = (f"derive a timestamp in source.columns, e.g. `{name}: to_timestamp({f}, '{pattern}')` "
                    f"(or try_to_timestamp: null where the text does not match), and give the view that field")
        elif time:
            problems.append(p)
            continue
        elif numbers == n and odd and dash.source.resolved_format == "csv":
            odd = sorted(odd)
            what = (f"its {n:,} values are numbers written as text, with {', '.join(map(repr, odd))} among "
                    "them, which Spark's CSV reader reads as numbers only as its options nanValue, "
                    "positiveInf and negativeInf spell them (NaN, Inf, -Inf unless set)")
            options = _nonfinite_options(odd)
            hint = (f"set them in source.options ({options}) to read the column as numbers, or derive "
                    f"the number in source.columns, e.g. `{name}: CAST({f} AS DOUBLE)`" if options else
                    f"derive the number in source.columns, e.g. `{name}: CAST({f} AS DOUBLE)`, and give "
                    "the view that field")
        elif numbers == n:
            what = f"its {n:,} values are numbers written as text"
            hint = (f"derive the number in source.columns, e.g. `{name}: CAST({f} AS DOUBLE)`, and "
                    "give the view that field")
        elif commas == n:
            what = f"its values are numbers written with a decimal comma, e.g. {text!r}"
            hint = (f"derive the number in source.columns, e.g. `{name}: CAST(replace({f}, ',', '.') AS "
                    "DOUBLE)`, and give the view that field")
        elif numbers:
            what = f"{n - numbers:,} of its {n:,} values are not numbers, e.g. {text!r}"
            hint = (f"derive the number in source.columns, e.g. `{name}: try_cast({f} AS DOUBLE)` (null "
                    "where the text is no number), and give the view that field")
        else:
            problems.append(p)
            continue
        problems.append(SpecProblem(p.file, p.line, p.path, f"{p.message}: {what}", hint))
    return SpecError(problems, error.cause) if asked else error


_NONFINITE = ("nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity")


def _csv_nonfinite(source: m.Table) -> list[str]:
    """The spellings of NaN and the infinities Spark's CSV reader reads as numbers: its
    options nanValue, positiveInf and negativeInf (defaults NaN, Inf, -Inf), and those
    Java's Double.parseDouble reads."""
    opts = {k.lower(): v for k, v in source.reader_options.items()}
    return [opts.get("nanvalue", "NaN"), opts.get("positiveinf", "Inf"), opts.get("negativeinf", "-Inf"),
            "NaN", "Infinity", "+Infinity", "-Infinity"]


def _nonfinite_options(spellings: list[str]) -> str | None:
    """The CSV reader options that read `spellings` as NaN and the infinities
    (`nanValue: nan, ...`), or None when two spell one of them (an option takes one)."""
    out: dict[str, str] = {}
    for text in spellings:
        key = "nanValue" if "nan" in text.lower() else "negativeInf" if text.strip().startswith("-") \
            else "positiveInf"
        if key in out:
            return None
        out[key] = text
    return ", ".join(f"{k}: {v!r}" for k, v in sorted(out.items()))


def _years_explained(df, dash: m.DashboardSpec, p: SpecProblem, kinds: dict[str, str]) -> SpecProblem | None:
    """`p` (a number column where a temporal view needs a time) with the derived date that
    reads its values, when they are years (whole numbers from 1000 to 9999: gapminder's
    `year: 1955`), whose hint was timestamp_millis(year), the 1970s' first seconds; else
    None. One Spark job, only when the check failed."""
    from pyspark.sql import functions as F

    c = next((c for c in kinds if kinds[c] in ("int", "double", "decimal") and c not in dash.source.columns
              and p.message == f"column {c!r} is a number column, but a temporal view needs a temporal column"),
             None)
    if c is None:
        return None
    x = F.col(_q(c))
    try:
        n, whole, lo, hi = df.select(F.count(x), F.count(F.when(x == F.floor(x), x)), F.min(x), F.max(x)).first()
    except Exception:  # (Spark cannot read it now: the error as it was)  # noqa: BLE001
        return None
    if not n or whole != n or lo < 1000 or hi > 9999:
        return None
    plain = all(part.isidentifier() for part in c.split("."))
    name = f"{c.rsplit('.', 1)[-1]}_date" if plain else "date"
    f = c if plain else _q(c)
    hint = (f"derive a date in source.columns, e.g. `{name}: make_date(CAST({f} AS INT), 1, 1)`, and give "
            "the view that field (unit: year); or use a histogram view of the number")
    return SpecProblem(p.file, p.line, p.path, f"{p.message}: its values are years ({int(lo)} to {int(hi)})",
                       hint)


def _fine_kind(t) -> str:
    """A Spark type as spec/expressions.py names kinds."""
    name = t.typeName()
    if name in ("byte", "short", "integer", "long"):
        return "int"
    if name == "decimal":
        return "decimal"
    if name in ("float", "double"):
        return "double"
    if name in ("timestamp", "timestamp_ntz", "date"):
        return "temporal"
    if name in ("string", "varchar", "char"):
        return "string"
    if name == "boolean":
        return "boolean"
    if name in ("array", "map", "struct"):
        return "nested"
    return "other"
