"""The test suite's oracle (tests/oracle.py) itself: it must say what docs/spec.md says, or
it reports false mismatches."""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq

from brushfire.spec.loader import parse_dashboard
from oracle import Oracle


def test_sums_and_means_skip_nan_and_infinite_measures(tmp_path):
    """docs/spec.md: null and NaN measures are skipped, and for sum and mean ±inf too."""
    path = tmp_path / "m.parquet"
    pq.write_table(pa.table({"k": [1.0, 1.0, 1.0, 1.0, 2.0, 2.0],
                             "m": [3.0, math.nan, math.inf, None, -math.inf, 4.5]}), path)
    spec = parse_dashboard({
        "name": "nan_measures", "source": {"path": str(path)},
        "views": [{"name": "s", "type": "histogram", "field": "k", "bin": {"step": 1, "extent": [0, 3]},
                   "aggregate": {"op": "sum", "field": "m"}}]})
    oracle = Oracle(spec)
    bars = oracle.view("s")
    assert {b: v[:3] for b, v in bars.items()} == {1: (4, 3.0, 3.0), 2: (2, 4.5, 4.5)}
    assert oracle.agrees("s", 1, 3.0, bars[1][1]) and not oracle.agrees("s", 1, 3.5, bars[1][1])
