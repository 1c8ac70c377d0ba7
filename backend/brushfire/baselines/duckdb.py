"""The DuckDB baseline: the source loaded once into an in-memory DuckDB table, and every
interaction answered by re-running the affected views' group-bys on it (as a dashboard
on Mosaic without pre-aggregation, or any SQL-backed BI tool, would)."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile

import duckdb
import pyarrow as pa

from brushfire import sql
from brushfire.baselines.base import Backend, Groups, SqlSession
from brushfire.engine.api import DetailsPage, DetailsRequest, details_request
from brushfire.spec import models as m


def connect_source(spec: m.DashboardSpec, threads: int | None = None,
                   cache_dir: str | None = None, memory_share: float | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with table `src`: the source with derived columns and static
    filters applied, in the source's row order (rowid = rid). Derived columns and filters
    are Spark SQL: with any, the rows are the ones Spark computes, materialized once as
    Parquet under `cache_dir` (default: the lineage cache's, `cachedir.py`); so are
    sources DuckDB cannot read (ORC). The profiling checks' columns come with the rows
    Spark materialized, else from `sql.profile_sql`. `memory_share`: of the machine's
    memory, what DuckDB may hold before it spills (default: DuckDB's own, 80 %); it spills
    into a temporary directory of this process, never into the working directory."""
    source = spec.source
    # a Parquet file is read as it is; anything else as Spark reads it: a CSV's or JSON's
    # types are Spark's to infer (DuckDB's inference differs), DuckDB does not read ORC,
    # and a folder's rows come in capture's order; so with joins of other tables than
    # Parquet files
    materialized = bool(source.columns or source.filters or source.resolved_format != "parquet"
                        or not os.path.isfile(source.path)
                        or any(j.resolved_format != "parquet" or not os.path.isfile(j.path)
                               for j in source.joins))
    if materialized:
        from brushfire.cachedir import default_cache_dir
        from brushfire.capture.analyze import materialize_source

        cache = cache_dir or default_cache_dir()
        files = ", ".join(_quote(f) for f in materialize_source(spec, cache))
        relation = f"read_parquet([{files}])"
    con = duckdb.connect()
    if not materialized:
        relation = parquet_relation(con, source.path)
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET preserve_insertion_order = true")
    con.execute(f"SET threads = {threads or os.cpu_count() or 1}")
    con.execute(f"SET temp_directory = {_quote(_spill_directory())}")
    if memory_share is not None:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        con.execute(f"SET memory_limit = '{int(total * memory_share) >> 20}MB'")
    if source.joins and not materialized:  # the joins, as DuckDB's LEFT JOIN
        con.execute(f"CREATE TABLE joined AS {joined_relation(con, source, relation)}")
        relation = "joined"
    if spec.profile and not materialized:  # the checks' columns, by SQL
        con.execute(f"CREATE TABLE src AS {sql.profile_sql(spec, relation)}")
    else:
        con.execute(f"CREATE TABLE src AS SELECT * FROM {relation}")
    return con


@functools.cache
def _spill_directory() -> str:
    """Where DuckDB spills: its default is `.tmp` in the working directory (a checker of
    100M rows left 6 GB in the repository's); removed when the process exits."""
    path = tempfile.mkdtemp(prefix="brushfire-duckdb-")
    atexit.register(shutil.rmtree, path, True)
    return path


def parquet_relation(con, path: str) -> str:
    """SQL of a Parquet file's rows with the types Spark reads them as: an unsigned 64-bit
    integer is a DECIMAL(20, 0) to Spark (whose longs are signed), so capture keys it as
    decimals are, by its nearest double, where DuckDB's UBIGINT would be compared exactly:
    ids 2^63 + 1 and 2^63 + 3, one category to the engine, would be two to SQL."""
    rel = f"read_parquet({_quote(path)})"
    casts = [f"CAST({sql.ident(c)} AS DECIMAL(20, 0)) AS {sql.ident(c)}"
             for c, t, *_ in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall() if t == "UBIGINT"]
    return f"(SELECT * REPLACE ({', '.join(casts)}) FROM {rel})" if casts else rel


def joined_relation(con, source: m.Source, relation: str) -> str:
    """SQL of `relation` LEFT JOIN the source's dimension tables (Parquet files), each
    `on = key` compared as Spark's join (so capture) compares it (`spark_compared`)."""
    types = {c: t for c, t, *_ in con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()}
    dims, compared = {}, {}
    for j in source.joins:
        rel = parquet_relation(con, j.path)
        described = con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()
        dims[j.name] = (rel, [r[0] for r in described])
        own = {c: t for c, t, *_ in described}
        types |= {f"{j.name}.{c}": t for c, t in own.items()}
        compared[j.name] = spark_compared(types.get(j.on), own.get(j.key))
    return sql.joined_sql(source, relation, dims, compared)


_INTEGERS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER")


def spark_compared(on: str | None, key: str | None) -> str | None:
    """The type Spark's join compares text with a number in, where DuckDB's `=` differs
    (None: as DuckDB compares them): text with an integer as BIGINT (DuckDB casts the
    text to the integer's own type, and fails on '3000000000' against an INTEGER), with a
    decimal or a float as DOUBLE (DuckDB casts the text to the DECIMAL(10, 2): '7.001'
    and '7' were both 7.00, one row of the source joined twice, where Spark's join, and
    the capture's check of unique keys, find them two keys)."""
    kinds = {on, key}
    if "VARCHAR" not in kinds or None in kinds or len(kinds) < 2:
        return None
    other = (kinds - {"VARCHAR"}).pop()
    if other in _INTEGERS:
        return "BIGINT"
    if other.startswith("DECIMAL") or other in ("FLOAT", "DOUBLE"):
        return "DOUBLE"
    return None


def _quote(path: str) -> str:
    return "'" + str(path).replace("'", "''") + "'"


class DuckDBBackend(Backend):
    def __init__(self, spec: m.DashboardSpec, layouts, threads: int | None = None) -> None:
        self.con = connect_source(spec, threads)
        super().__init__(spec, layouts)

    def cursor(self):
        return self.con.cursor()

    def groups(self, view: str, where: str, cursor=None) -> Groups:
        mf = self.spec.view(view).aggregate.field
        mf = mf and sql.summed_sql(mf)  # null, NaN and ±inf skipped, as the engine skips them
        order = self.spec.view(view).aggregate.order
        agg = f"sum({mf}), count({mf})" if mf and not order else "NULL, 0"
        q = (f"SELECT {self.bar_sql[view]} AS k, count(*), {agg}, {self.stat_sql(view)} FROM src "
             f"WHERE {where} GROUP BY 1")
        return {k: (n, s, c, x) for k, n, s, c, x in (cursor or self.con).execute(q).fetchall()}

    def measure_kind(self, view: str) -> str:
        mf = self.spec.view(view).aggregate.field
        t = self.con.execute(f"SELECT typeof({sql.ident(mf)}) FROM src LIMIT 1").fetchone()
        t = t[0] if t else ""
        return "temporal" if t.startswith(("TIMESTAMP", "DATE")) else "string" if t == "VARCHAR" \
            else "number"

    def count(self, where: str, cursor=None) -> int:
        return (cursor or self.con).execute(f"SELECT count(*) FROM src WHERE {where}").fetchall()[0][0]


class DuckDBSession(SqlSession):
    engine = "duckdb"

    def details(self, view: str | None = None, bars: list[int] | None = None, page: int = 0,
                page_size: int | None = None, columns: list[str] | None = None,
                order_by: str | None = None, descending: bool = False) -> pa.Table:
        """A page of the rows behind bars or the current selection, in rid order or by
        `order_by` (NULLS LAST; DuckDB orders NaN as the largest value), then rid."""
        columns, size = details_request(self.plan, page, page_size, columns)
        return self._details(view, self._checked_bars(view, bars), page, size, columns, order_by,
                             descending)

    def answer_details(self, r: DetailsRequest) -> DetailsPage:
        spec = self.spec.interactions.details  # (declared: the request's check)
        columns = list(dict.fromkeys(r.columns or spec.columns))  # each once
        rows = self._details(r.view, r.bars, r.page, r.page_size or spec.page_size, columns,
                             r.order_by, r.descending)
        return DetailsPage(rows, self._count(r.view, r.bars))

    def _details(self, view: str | None, bars: list[int] | None, page: int, size: int,
                 columns: list[str], order_by: str | None, descending: bool) -> pa.Table:
        order = "rowid" if order_by is None else \
            f"{sql.ident(order_by)} {'DESC' if descending else 'ASC'} NULLS LAST, rowid"
        q = (f"SELECT CAST(rowid AS INTEGER) AS rid, {', '.join(sql.ident(c) for c in columns)} FROM src "
             f"WHERE {self._bars_where(view, bars)} ORDER BY {order} LIMIT {size} OFFSET {page * size}")
        return self.cur.sql(q).to_arrow_table()
