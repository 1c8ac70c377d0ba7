"""The capture pipeline without Spark, over Arrow tables in this process: the same scan,
statistics, layout, key job and manifest that Spark's executors and driver run
(capture/__init__.py), each table one input "file" cut into `partitions` as Spark would
cut a file into splits. For tests and small in-memory data; sources with derived columns
or static filters need Spark (they are Spark SQL).
"""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa

from brushfire.capture import run_capture
from brushfire.capture.keys import key_shard
from brushfire.capture.scan import FILE_COLUMN, START_COLUMN, ScanSpec, scan_partition
from brushfire.errors import CaptureError
from brushfire.lineage import store as st
from brushfire.lineage.layout import CaptureConfig, Layout
from brushfire.plan import CapturePlan


def capture_table(plan: CapturePlan, table: pa.Table, cache_dir: str | Path,
                  config: CaptureConfig | None = None,
                  partitions: list[int] | None = None) -> st.LineageStore:
    """Capture `table` (the source's rows) for `plan` into `cache_dir`. `partitions`: the
    rows per partition (default: one partition), empty ones allowed."""
    return capture_tables(plan, {"table": table}, cache_dir, config,
                          {"table": partitions} if partitions is not None else None)


def capture_tables(plan: CapturePlan, tables: dict[str, pa.Table], cache_dir: str | Path,
                   config: CaptureConfig | None = None,
                   partitions: dict[str, list[int]] | None = None) -> st.LineageStore:
    """Capture the rows of `tables` (each an input file of the source, named by its key;
    rows in key order) for `plan` into `cache_dir`, reusing what the entry's last capture
    left valid, as a capture on Spark would for files."""
    dash = plan.dashboard
    if dash.source.columns or dash.source.filters:
        msg = "derived columns and static filters are Spark SQL: capture them on Spark"
        raise CaptureError(msg)
    config = config or CaptureConfig()
    runner = TableRunner(tables, partitions or {}, config)
    return run_capture(plan, runner, cache_dir, config)


class TableRunner:
    """capture.Runner over in-memory tables: scans and key jobs in this process."""

    master = "none"

    def __init__(self, tables: dict[str, pa.Table], partitions: dict[str, list[int]],
                 config: CaptureConfig) -> None:
        for name, sizes in partitions.items():
            if sum(sizes) != tables[name].num_rows:
                msg = f"partitions {sizes} do not add up to {tables[name].num_rows} rows"
                raise ValueError(msg)
        self.tables, self.partitions, self.config = tables, partitions, config
        self._uris = {f"table:{name}": name for name in tables}

    def files(self) -> list[dict]:
        out = []
        for uri, name in self._uris.items():  # the content's checksum stands for a file's time
            table = self.tables[name]
            crc = zlib.crc32(str(table.schema).encode())
            for col in table.columns:
                for chunk in col.chunks:
                    for buf in chunk.buffers():
                        if buf is not None:
                            crc = zlib.crc32(memoryview(buf), crc)
            out.append({"uri": uri, "path": uri, "size": table.num_rows, "mtime_ns": crc})
        return out

    def definitions(self, columns: list[str]) -> dict[str, str]:
        first = next(iter(self.tables.values()))
        return {c: hashlib.sha256(f"{c}|{first.schema.field(c).type}".encode()).hexdigest()[:20]
                for c in columns}

    def rows_identity(self) -> str:
        return hashlib.sha256(repr(sorted(self.partitions.items())).encode()).hexdigest()[:20]

    def scan(self, files: list[dict], spec: ScanSpec, shards_dir: Path, run: str) -> list[dict]:
        out, pid = [], 0
        columns = list(dict.fromkeys(spec.fields + spec.snapshot))
        for i, f in enumerate(files):
            name = self._uris[f["uri"]]
            table = self.tables[name].select(columns)
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
                          t["rows"], t["wanted"]) for t in tasks]
