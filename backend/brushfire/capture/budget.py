"""The memory-budget decision: estimate the per-row lineage a plan would keep, before any
Spark job, and choose between full capture and the cubes-only mode."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow.dataset as ds

from brushfire.plan import CapturePlan
from brushfire.source import FOOTER_FORMATS

UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str | int) -> int:
    """'512MB', '2G', '1.5gib', 1000000 -> bytes."""
    if isinstance(text, int):
        return text
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)(i?b)?\s*", str(text).lower())
    if not match:
        msg = f"a memory size is a number with an optional unit (KB, MB, GB, TB), got {text!r}"
        raise ValueError(msg)
    return int(float(match[1]) * UNITS[match[2]])


@dataclass(frozen=True)
class Decision:
    mode: str  # "rows" (per-row lineage) or "cubes" (cubes only)
    reason: str
    n_rows: int | None
    row_bytes: float


def decide(plan: CapturePlan, budget: int | None) -> Decision:
    """Per-row lineage when it fits `budget` (or no budget is set), else cubes only."""
    per_row, n = estimate_row_bytes(plan), count_rows(plan)
    if budget is None:
        return Decision("rows", "no memory budget set", n, per_row)
    if n is None:
        return Decision("rows", "the source's row count is unknown before reading it "
                        "(not Parquet/ORC); per-row lineage kept", n, per_row)
    need = per_row * n
    if need <= budget:
        return Decision("rows", f"per-row lineage ≈ {_gb(need)} for {n:,} rows fits the "
                        f"memory budget of {_gb(budget)}", n, per_row)
    return Decision("cubes", f"per-row lineage would take ≈ {_gb(need)} ({per_row:.0f} bytes × "
                    f"{n:,} rows), over the memory budget of {_gb(budget)}", n, per_row)


def estimate_row_bytes(plan: CapturePlan) -> float:
    """Bytes per row of the arrays `capture.build` keeps (see lineage/arrays.py): forward
    codes, measures, filter keys, rect y values, index positions and values, bar indexes,
    and the detail snapshot (string widths from the Parquet footer, else 16 bytes)."""
    total = 2 * len(plan.dashboard.views) + 8 * len(plan.measure_fields) + 4 * len(plan.filters)
    for f in plan.filters:
        total += 4 + (8 if f.kind in ("interval", "rect", "param_range") else 0) + (8 if f.kind == "rect" else 0)
    total += 4 * len(plan.bar_index_views)
    widths = _column_widths(plan)
    total += sum(widths.get(c, 16.0) for c in plan.detail_columns)
    return float(total)


def count_rows(plan: CapturePlan) -> int | None:
    """Rows in the source from its footers (before static filters: an upper bound)."""
    if plan.dashboard.source.resolved_format not in FOOTER_FORMATS:
        return None
    return _dataset(plan).count_rows()


def _dataset(plan: CapturePlan):
    src = plan.dashboard.source
    return ds.dataset(src.path, format=src.resolved_format)


def _column_widths(plan: CapturePlan) -> dict[str, float]:
    """Uncompressed bytes per row of each Parquet column (plus 8 for string offsets)."""
    src = plan.dashboard.source
    if src.resolved_format != "parquet":
        return {}
    out: dict[str, float] = {}
    rows = 0
    for frag in _dataset(plan).get_fragments():
        meta = frag.metadata
        rows += meta.num_rows
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            for c in range(rg.num_columns):
                col = rg.column(c)
                out[col.path_in_schema] = out.get(col.path_in_schema, 0) + col.total_uncompressed_size
    schema = _dataset(plan).schema
    return {name: size / max(rows, 1) + (8 if str(schema.field(name).type).startswith(("string", "large_string")) else 0)
            for name, size in out.items() if name in schema.names}


def _gb(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} bytes"
