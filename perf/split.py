"""A Parquet file as a folder of files, and a file of more rows appended to such a folder,
for the incremental-capture benchmarks (perf/bench_capture.py).

    python perf/split.py data/flights-3m.parquet data/flights-3m-split --files 10

`append_file(folder, fraction)` writes `append-<n>.parquet` beside the folder's files:
`fraction` of their rows, as jittered copies of random rows (perf/generate.py's
jitter: dates by minutes, delays, distances), so the data grows like the data before.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]


def split(source: Path, folder: Path, files: int, row_group: int = 500_000) -> None:
    """Write `source`'s rows into `files` Parquet files of consecutive rows in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    pf = pq.ParquetFile(source)
    n = pf.metadata.num_rows
    table = pf.read()
    bounds = np.linspace(0, n, files + 1).astype(int)
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        pq.write_table(table.slice(a, b - a), folder / f"part-{i:03d}.parquet", row_group_size=row_group)
    print(f"wrote {files} files of about {n // files:,} rows to {folder}")


def append_file(folder: Path, fraction: float, seed: int = 7) -> Path:
    """A new file in `folder` with `fraction` of its rows, jittered copies of random rows
    (flights columns: date, delay, distance jittered; others copied). Returns its path."""
    from generate import MINUTE_US

    files = sorted(folder.glob("*.parquet"))
    table = pa.concat_tables(pq.read_table(f) for f in files)
    rng = np.random.default_rng(seed)
    picks = np.sort(rng.choice(table.num_rows, size=int(table.num_rows * fraction), replace=False))
    part = table.take(pa.array(picks))
    cols = {c: part[c] for c in part.column_names}
    n = part.num_rows
    if "date" in cols:
        us = cols["date"].to_numpy().astype("datetime64[us]").astype(np.int64)
        cols["date"] = pa.array((us + rng.integers(-5, 6, n) * MINUTE_US).astype("datetime64[us]"),
                                part.schema.field("date").type)
    for c, spread in (("delay", 3), ("distance", 5)):
        if c in cols and pa.types.is_integer(cols[c].type):
            cols[c] = pa.array(cols[c].to_numpy(zero_copy_only=False) + rng.integers(-spread, spread + 1, n),
                               cols[c].type)
    out = folder / f"append-{len(files):03d}.parquet"
    pq.write_table(pa.table(cols), out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("folder", type=Path)
    ap.add_argument("--files", type=int, default=10)
    args = ap.parse_args()
    split(args.source, args.folder, args.files)


if __name__ == "__main__":
    main()
