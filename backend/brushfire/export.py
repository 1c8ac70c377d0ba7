"""Export of the selection: the input rows behind a session's current selection (backward
lineage), with their rid, as CSV or Parquet, streamed in pages so memory stays bounded
whatever the number of rows. The server's `GET /api/dashboards/<name>/rows`, the page's
"Download rows" and the widget's `export()` and `details()` all use it.

With `join` (a join's name), the rows are instead that join's dimension rows behind the
selection, as the details panel lists them under "Rows of" (the protocol's `dimension`,
every page): its key, its details columns and `rows`, how many selected rows reach each.

Sessions over per-row lineage (declaring `Capability.ROWS`) page through `backward_rids` and read the
rows with `store.take`; other sessions (the baselines) through `details` pages. Columns
are the spec's `interactions.details.columns` (the ones the capture kept), or a subset.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from decimal import Decimal
from numbers import Integral
from pathlib import Path
from typing import cast

import numpy as np
import pyarrow as pa

from brushfire.engine.api import Capability, LineageAPI, SessionAPI, details_request
from brushfire.errors import InteractionError
from brushfire.limits import MAX_PAGE_ROWS

FORMATS = {"csv": "text/csv; charset=utf-8", "parquet": "application/vnd.apache.parquet"}
PAGE_ROWS = 131_072  # rows read per page (bounds the memory an export takes)


def check_format(format: str) -> str:
    """The export format `format` names (in any case: `CSV` is csv)."""
    if not isinstance(format, str) or format.lower() not in FORMATS:
        msg = f"format: {format!r} is not an export format; formats: {', '.join(FORMATS)}"
        raise InteractionError(msg)
    return format.lower()


def check_limit(limit: int | None) -> int | None:
    """A number of rows to keep: None (all) or an integer >= 0 (numpy's too; not True,
    which is 1)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, Integral) or limit < 0):
        msg = f"limit: {limit!r} is not a number of rows (an integer >= 0)"
        raise InteractionError(msg)
    return None if limit is None else int(limit)


def split_columns(text: str, declared: list[str]) -> list[str]:
    """The columns a comma-separated list names (the rows API's `columns=a,b`): split at its
    commas, but a declared details column whose name holds commas (`Revenue (USD, m)`, a
    CSV header's) is one column: at each place, the longest declared name there."""
    parts = text.split(",")
    most = max((c.count(",") for c in declared), default=0) + 1  # (parts a declared name spans)
    out, i = [], 0
    while i < len(parts):
        j = next((j for j in range(min(len(parts), i + most), i + 1, -1) if ",".join(parts[i:j]) in declared),
                 i + 1)
        out.append(",".join(parts[i:j]))
        i = j
    return out


def selection_batches(session: SessionAPI, columns: list[str] | None = None,
                      limit: int | None = None, page_rows: int = PAGE_ROWS, join: str | None = None
                      ) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """(schema, batches) of the rows behind the current selection in rid order: `rid`
    and `columns` (default: the declared details columns), all of them or the first
    `limit`; with `join`, that join's dimension rows behind it (`join_table`). The
    request is checked now; the rows are read as the batches are taken."""
    limit = check_limit(limit)
    if join is not None:
        table = join_table(session, join, columns)
        table = table if limit is None else table.slice(0, limit)
        return table.schema, iter(table.to_batches(max_chunksize=page_rows))
    columns, _ = details_request(session.plan, 0, None, columns)
    if Capability.ROWS in session.capabilities:
        session = cast(LineageAPI, session)
        empty = session.store.take(np.zeros(0, np.int64), columns)
        schema = pa.schema([pa.field("rid", pa.int64()), *empty.schema])
        return schema, _lineage_pages(session, columns, schema, limit, page_rows)
    first = session.details(page=0, page_size=MAX_PAGE_ROWS, columns=columns)
    schema = first.schema.set(0, pa.field("rid", pa.int64()))  # rids are int64 everywhere
    return schema, _details_pages(session, columns, first, schema, limit)


def join_table(session: SessionAPI, join: str, columns: list[str] | None = None) -> pa.Table:
    """`join`'s dimension rows behind the current selection: every page of what the
    protocol's `dimension` lists (checked as that message is), as one table. Its size is
    bounded by the dimension table's, so it is not streamed."""
    from brushfire.engine.dimensions import answer_dimension_all
    from brushfire.requests import parse

    if columns is not None:  # (the columns are what the panel lists, or `rows` would not add up)
        msg = ("columns: a join's rows are its key, its details columns and `rows`; "
               "give no columns with a join")
        raise InteractionError(msg)
    request = parse({"type": "dimension", "join": join}).check(session)  # (a join that is no string: said)
    return answer_dimension_all(cast(LineageAPI, session), request).table


def _lineage_pages(session, columns, schema, limit, page_rows) -> Iterator[pa.RecordBatch]:
    offset = 0
    while limit is None or offset < limit:
        want = page_rows if limit is None else min(page_rows, limit - offset)
        rids = session.backward_rids(offset=offset, limit=want)
        if not len(rids):
            return
        table = session.store.take(rids, columns).add_column(0, "rid", pa.array(rids, pa.int64()))
        yield from table.cast(schema).to_batches()
        offset += len(rids)
        if len(rids) < want:
            return


def _details_pages(session, columns, first: pa.Table, schema, limit) -> Iterator[pa.RecordBatch]:
    page, table, done = 0, first, 0
    while True:
        if limit is not None:
            table = table.slice(0, limit - done)
        yield from table.cast(schema).to_batches()
        done += table.num_rows
        if table.num_rows < MAX_PAGE_ROWS or (limit is not None and done >= limit):
            return
        page += 1
        table = session.details(page=page, page_size=MAX_PAGE_ROWS, columns=columns)


def selection_table(session: SessionAPI, columns: list[str] | None = None,
                    limit: int | None = None, join: str | None = None) -> pa.Table:
    """The rows behind the current selection as one table (see `selection_batches`)."""
    schema, batches = selection_batches(session, columns, limit, join=join)
    return pa.Table.from_batches(list(batches), schema)


def stream(session: SessionAPI, format: str, columns: list[str] | None = None,
           limit: int | None = None, join: str | None = None) -> Iterator[bytes]:
    """The rows behind the current selection (or `join`'s rows behind it) as CSV or
    Parquet bytes, chunk by chunk. The request is checked when called (a bad one raises
    before any byte)."""
    format = check_format(format)
    schema, batches = selection_batches(session, columns, limit, join=join)
    return _encode(format, schema, batches)


def _encode(format: str, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> Iterator[bytes]:
    sink = _Chunks()
    if format == "csv":
        from pyarrow import csv

        writer = csv.CSVWriter(sink, _csv_schema(schema))
    else:
        import pyarrow.parquet as pq

        writer = pq.ParquetWriter(sink, schema)
    with writer:
        for batch in batches:
            if format == "csv":
                writer.write_batch(_csv_batch(batch))
            else:
                writer.write_table(pa.Table.from_batches([batch]))
            chunk = sink.take()
            if chunk:
                yield chunk
    yield sink.take()


def _as_text(t: pa.DataType) -> bool:
    """Whether CSV holds a column of type `t` as text of its own: a list, struct or map
    (Arrow's CSV writer has none: "Unsupported Type"), bytes (not UTF-8 text: "Invalid
    UTF8 payload"), or a decimal (Arrow writes a zero of scale 10 as `0E-10`, where SQL and
    a details row write `0.0000000000`)."""
    return pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t) \
        or pa.types.is_fixed_size_binary(t) or pa.types.is_decimal(t)


def _csv_schema(schema: pa.Schema) -> pa.Schema:
    for i, f in enumerate(schema):
        if _as_text(f.type):
            schema = schema.set(i, pa.field(f.name, pa.string()))
    return schema


def _csv_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`batch` with the columns CSV cannot hold as their text, as a details row gives it:
    a list, struct or map as JSON (`[1, 2]`, `{"a": 1}`), bytes as Python writes them, a
    decimal as its digits at its scale."""
    from brushfire.wire import dumps, rows_json

    columns = list(batch.columns)
    for i, f in enumerate(batch.schema):
        if _as_text(f.type):
            values = [row[f.name] for row in rows_json(pa.table({f.name: columns[i]}))]
            columns[i] = pa.array([v if v is None or isinstance(v, str) else str(v) if isinstance(v, bytes)
                                   else format(v, "f") if isinstance(v, Decimal) else dumps(v)
                                   for v in values], pa.string())
    return pa.RecordBatch.from_arrays(columns, schema=_csv_schema(batch.schema))


def write(session: SessionAPI, path: str | Path, format: str | None = None,
          columns: list[str] | None = None, join: str | None = None) -> Path:
    """Write the rows behind the current selection (or `join`'s rows behind it) to `path`
    (format: csv or parquet, default from the file's suffix)."""
    path = Path(path)
    format = format or path.suffix.lstrip(".").lower()
    chunks = stream(session, format, columns, join=join)
    with open(path, "wb") as f:
        for chunk in chunks:
            f.write(chunk)
    return path


class _Chunks(io.RawIOBase):
    """A write-only file whose bytes are taken out as they come (a streaming sink)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.position = 0

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        data = bytes(b)
        self.parts.append(data)
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def take(self) -> bytes:
        out = b"".join(self.parts)
        self.parts.clear()
        return out
