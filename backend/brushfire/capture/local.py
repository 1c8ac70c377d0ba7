"""The capture pipeline without Spark, over Arrow tables in this process: the same scan,
statistics, layout, key job and manifest that Spark's executors and driver run
(capture/__init__.py), each table one input "file" cut into `partitions` as Spark would
cut a file into splits. For tests and small in-memory data; sources with derived columns
or static filters need Spark (they are Spark SQL). Joins are made here as on Spark
(capture/joins.py), from dimension tables given by join name.
"""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa

from brushfire.capture import run_capture
from brushfire.capture.joins import check_unique, join_tables, name_clash
from brushfire.capture.keys import key_shard
from brushfire.capture.scan import FILE_COLUMN, START_COLUMN, ScanSpec, scan_partition
from brushfire.errors import CaptureError
from brushfire.lineage import store as st
from brushfire.lineage.layout import CaptureConfig, Layout
from brushfire.plan import CapturePlan
from brushfire.spec import models as m


def capture_table(plan: CapturePlan, table: pa.Table, cache_dir: str | Path,
                  config: CaptureConfig | None = None,
                  partitions: list[int] | None = None,
                  joins: dict[str, pa.Table] | None = None) -> st.LineageStore:
    """Capture `table` (the source's rows) for `plan` into `cache_dir`. `partitions`: the
    rows per partition (default: one partition), empty ones allowed; `joins`: each
    join's dimension table, by join name."""
    return capture_tables(plan, {"table": table}, cache_dir, config,
                          {"table": partitions} if partitions is not None else None, joins)


def capture_tables(plan: CapturePlan, tables: dict[str, pa.Table], cache_dir: str | Path,
                   config: CaptureConfig | None = None,
                   partitions: dict[str, list[int]] | None = None,
                   joins: dict[str, pa.Table] | None = None) -> st.LineageStore:
    """Capture the rows of `tables` (each an input file of the source, named by its key;
    rows in key order), joined to the dimension tables `joins` (by join name), for `plan`
    into `cache_dir`, reusing what the entry's last capture left valid, as a capture on
    Spark would for files."""
    dash = plan.dashboard
    if dash.source.columns or dash.source.filters:
        msg = "derived columns and static filters are Spark SQL: capture them on Spark"
        raise CaptureError(msg)
    missing = [j.name for j in dash.source.joins if j.name not in (joins or {})]
    if missing:
        msg = f"no table given for join {missing[0]!r}"
        raise CaptureError(msg)
    config = config or CaptureConfig()
    runner = TableRunner(tables, partitions or {}, config, dash.source, joins or {})
    return run_capture(plan, runner, cache_dir, config)


def _checksum(table: pa.Table) -> int:
    """The content's checksum (it stands for a file's size and time)."""
    crc = zlib.crc32(str(table.schema).encode())
    for col in table.columns:
        for chunk in col.chunks:
            for buf in chunk.buffers():
                if buf is not None:
                    crc = zlib.crc32(memoryview(buf), crc)
    return crc


class TableRunner:
    """capture.Runner over in-memory tables: scans and key jobs in this process."""

    master = "none"

    def __init__(self, tables: dict[str, pa.Table], partitions: dict[str, list[int]],
                 config: CaptureConfig, source: m.Source | None = None,
                 joins: dict[str, pa.Table] | None = None) -> None:
        for name, sizes in partitions.items():
            if sum(sizes) != tables[name].num_rows:
                msg = f"partitions {sizes} do not add up to {tables[name].num_rows} rows"
                raise ValueError(msg)
        self.tables, self.partitions, self.config = tables, partitions, config
        self.source, self.joins = source, joins or {}
        self._uris = {f"table:{name}": name for name in tables}
        columns = list(dict.fromkeys(c for t in tables.values() for c in t.column_names))
        for j in source.joins if source else []:  # refused before any scan, as on Spark
            clash = name_clash(j, columns)
            if clash is not None:
                msg = f"{clash[1]}; hint: {clash[2]}"
                raise CaptureError(msg)
            check_unique(j, self.joins[j.name])

    def files(self) -> list[dict]:
        return [{"uri": uri, "path": uri, "size": self.tables[name].num_rows,
                 "mtime_ns": _checksum(self.tables[name])} for uri, name in self._uris.items()]

    def lacking(self, files: list[dict]) -> dict[str, list[str]]:
        return {}  # (tables are given whole: one without a column fails the scan)

    def mistyped(self, files: list[dict]) -> dict[str, list[tuple]]:
        return {}  # (tables are given whole, each read with its own types)

    def join_files(self) -> list[dict]:
        return [{"uri": f"join:{j}", "path": f"join:{j}", "size": t.num_rows, "mtime_ns": _checksum(t)}
                for j, t in sorted(self.joins.items())]

    def definitions(self, columns: list[str]) -> dict[str, str]:
        schema = self._joined(next(iter(self.tables.values())).slice(0, 0)).schema
        out = {}
        for c in columns:
            what = f"{c}|{schema.field(c).type}"
            for j in self.source.join_chain(c) if self.source else []:
                what += f"|{j.model_dump_json()}|{_checksum(self.joins[j.name])}"
            out[c] = hashlib.sha256(what.encode()).hexdigest()[:20]
        return out

    def rows_identity(self) -> str:
        return hashlib.sha256(repr(sorted(self.partitions.items())).encode()).hexdigest()[:20]

    def _joined(self, table: pa.Table) -> pa.Table:
        return join_tables(table, self.source, self.joins) if self.source and self.source.joins \
            else table

    def scan(self, files: list[dict], spec: ScanSpec, shards_dir: Path, run: str) -> list[dict]:
        out, pid = [], 0
        columns = list(dict.fromkeys(spec.fields + spec.snapshot + spec.nulls))
        for i, f in enumerate(files):
            name = self._uris[f["uri"]]
            table = self._joined(self.tables[name]).select(columns)
            sizes = self.partitions.get(name) or [table.num_rows]
            starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
            for j, (a, b) in enumerate(zip(starts[:-1], starts[1:], strict=True)):
                part = table.slice(a, b - a)
                part = part.append_column(FILE_COLUMN, pa.array(np.full(len(part), i + 1, np.int32)))
                part = part.append_column(START_COLUMN, pa.array(np.full(len(part), j, np.int64)))
                for s in scan_partition(part.to_batches(), spec, str(shards_dir), run, pid):
                    out.append({**s, "file": f["uri"] if s["file"] is not None else None})
                pid += 1
        return out

    def key(self, tasks: list[dict], layout: Layout, dash, shards_dir: Path) -> list[dict]:
        return [key_shard(shards_dir / t["name"], t["n_rows"], t["fields"], layout, dash, t["tag"],
                          t["rows"], t["wanted"], t.get("previous"), t.get("copies")) for t in tasks]
