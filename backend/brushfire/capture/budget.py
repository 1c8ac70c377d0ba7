"""The memory budget (SubZero's choice of lineage per part of the workload): which dims
keep their per-row keys, decided once per capture from the layout's exact sizes.

Per row, a dim costs 2 bytes of key, 2 more when indexed (the backward index) and 8 more
when it is fine (raw values). When the total exceeds the budget, the most expensive dims
lose their per-row arrays first. Then, per filter and per view:
- a filter whose dims are kept is answered row by row, alone or with others;
- a filter whose dims are not kept is answered only when it is alone, from a cube with
  one block per key (exact) — or, when such a cube would be too large or its dim is
  fine, not at all (a lazy answer on Spark, or NotCapturedError);
- a view whose bar (or measure) comes from a dim not kept shows its base result and
  single-filter cube answers; under several filters it needs a lazy answer.
`brushfire capture` prints each choice and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from brushfire.lineage.layout import Dim

EXACT_CUBE_BYTES = 256 << 20  # a filter's per-key cube when its per-row keys are dropped


def row_bytes(d: Dim) -> int:
    """Bytes per row of a dim's per-row arrays."""
    return 2 + (2 if d.indexed else 0) + (8 if d.kind == "fine" else 0)


@dataclass(frozen=True)
class Choice:
    kept: frozenset[str]  # dims whose per-row arrays are kept
    notes: tuple[str, ...] = field(default=())
    per_row: int = 0  # bytes per row of everything
    kept_per_row: int = 0


def choose(dims: list[Dim], n_rows: int, budget: int | None,
           keep: frozenset[str] = frozenset()) -> Choice:
    """Keep every dim's per-row arrays when they fit `budget` (bytes; None: no budget),
    else drop the most expensive first until the rest fit; never those named in `keep`
    (an order statistic whose values only rows give: without them it has no answer). Pure."""
    per_row = sum(row_bytes(d) for d in dims)
    if budget is None:
        return Choice(frozenset(d.name for d in dims), ("no memory budget: per-row lineage kept",),
                      per_row, per_row)
    kept = {d.name: row_bytes(d) for d in dims}
    notes = []
    total = per_row * n_rows
    if total <= budget:
        notes.append(f"per-row lineage ≈ {gb(total)} ({per_row} bytes × {n_rows:,} rows) fits "
                     f"the memory budget of {gb(budget)}")
    for d in sorted(dims, key=lambda d: (-row_bytes(d), d.name)):
        if total <= budget:
            break
        if d.name in keep:
            notes.append(f"{d.name}: per-row keys kept over the memory budget: an order "
                         "statistic reads its values from the rows")
            continue
        total -= row_bytes(d) * n_rows
        del kept[d.name]
        notes.append(f"{d.name}: per-row keys dropped ({row_bytes(d)} bytes × {n_rows:,} rows "
                     f"= {gb(row_bytes(d) * n_rows)}) to fit the memory budget of {gb(budget)}")
    return Choice(frozenset(kept), tuple(notes), per_row, sum(kept.values()))


def gb(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} bytes"
