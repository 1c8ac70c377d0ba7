"""Upsample flights-3m into a larger flights table for benchmarks.

    python perf/generate.py --rows 30000000 --out data/flights-30m.parquet

Each source row is repeated about rows / 3M times (a random subset of the copies when
that is not a whole number); every copy gets a jittered date (a few minutes, clipped
to the source's date range), delay and distance (a small random integer); origin and
destination are kept. The source is processed in slices whose copies are sorted by date,
so the output stays (nearly) date-ordered like the source: "k times more flights per
day", not k repeats of the half year. Streams ~1M-row row groups with a seeded RNG, so
memory stays at a few hundred MB whatever --rows is.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
MINUTE_US = 60_000_000


def jittered_chunk(src: pa.Table, start: int, stop: int, n_out: int, copies: int,
                   rng: np.random.Generator, jitter: dict[str, int],
                   date_range: tuple[int, int]) -> pa.Table:
    """`n_out` jittered copies of source rows [start, stop), sorted by date."""
    n_in = stop - start
    picks = np.tile(np.arange(n_in, dtype=np.int64), copies)
    if n_out < len(picks):
        picks = np.sort(rng.choice(len(picks), size=n_out, replace=False)) % n_in
        picks.sort()
    part = src.slice(start, n_in).take(pa.array(picks))
    n = part.num_rows
    date = part["date"].to_numpy().astype("datetime64[us]").astype(np.int64)
    date = date + rng.integers(-jitter["date"], jitter["date"] + 1, n) * MINUTE_US
    date = np.clip(date, *date_range)
    delay = part["delay"].to_numpy() + rng.integers(-jitter["delay"], jitter["delay"] + 1, n)
    distance = part["distance"].to_numpy() + rng.integers(-jitter["distance"],
                                                          jitter["distance"] + 1, n)
    distance = np.maximum(distance, 1)
    out = pa.table({
        "date": pa.array(date.astype("datetime64[us]"), pa.timestamp("us")),
        "delay": pa.array(delay, pa.int64()),
        "distance": pa.array(distance, pa.int64()),
        "origin": part["origin"],
        "destination": part["destination"],
    })
    return out.take(pc.sort_indices(out["date"]))


def generate(source: Path, out: Path, rows: int, seed: int, row_group: int,
             jitter: dict[str, int]) -> None:
    """Write `rows` upsampled rows of `source` to `out`, printing progress."""
    t0 = time.perf_counter()
    src = pq.read_table(source, columns=["date", "delay", "distance", "origin", "destination"])
    if src["date"].null_count or src["delay"].null_count or src["distance"].null_count:
        msg = "the source has nulls in date/delay/distance; this generator does not handle them"
        raise SystemExit(msg)
    src = src.combine_chunks()
    n_src = src.num_rows
    ratio = rows / n_src
    copies = max(1, math.ceil(ratio))
    step = max(1, row_group * n_src // rows)  # source rows per output row group
    dates = src["date"].to_numpy().astype("datetime64[us]").astype(np.int64)
    date_range = (int(dates.min()), int(dates.max()))
    rng = np.random.default_rng(seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".partial")
    print(f"source {source}: {n_src:,} rows; writing {rows:,} rows "
          f"({ratio:.2f}x, {copies} copies per row, ~{row_group:,} rows per row group) to {out}")
    written = 0
    schema = None
    writer = None
    try:
        for start in range(0, n_src, step):
            stop = min(n_src, start + step)
            n_out = round(stop * ratio) - round(start * ratio)
            chunk = jittered_chunk(src, start, stop, n_out, copies, rng, jitter, date_range)
            if writer is None:
                schema = chunk.schema
                writer = pq.ParquetWriter(tmp, schema, compression="snappy")
            writer.write_table(chunk.cast(schema), row_group_size=row_group)
            written += chunk.num_rows
            elapsed = time.perf_counter() - t0
            print(f"  {written:>12,} / {rows:,} rows  ({100 * written / rows:5.1f}%)  "
                  f"{elapsed:6.1f} s", flush=True)
    finally:
        if writer is not None:
            writer.close()
    tmp.replace(out)
    meta = pq.ParquetFile(out).metadata
    print(f"done: {meta.num_rows:,} rows in {meta.num_row_groups} row groups, "
          f"{out.stat().st_size / 1e6:,.0f} MB, {time.perf_counter() - t0:.1f} s")


def main() -> None:
    """Parse arguments and generate."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=30_000_000, help="rows to write")
    ap.add_argument("--out", type=Path, default=ROOT / "data" / "flights-30m.parquet")
    ap.add_argument("--source", type=Path, default=ROOT / "data" / "flights-3m.parquet")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--row-group", type=int, default=1_000_000, help="rows per row group")
    ap.add_argument("--jitter-minutes", type=int, default=5, help="date jitter, +- minutes")
    ap.add_argument("--jitter-delay", type=int, default=3, help="delay jitter, +- minutes")
    ap.add_argument("--jitter-distance", type=int, default=5, help="distance jitter, +- miles")
    args = ap.parse_args()
    jitter = {"date": args.jitter_minutes, "delay": args.jitter_delay,
              "distance": args.jitter_distance}
    generate(args.source, args.out, args.rows, args.seed, args.row_group, jitter)


if __name__ == "__main__":
    main()
