"""brushfire.spark_source: the source on Spark whose rows lazy answers number as capture does."""

from __future__ import annotations

import pytest

from brushfire.capture.analyze import rid_offsets
from brushfire.errors import NotCapturedError
from brushfire.spark_source import SparkSource

CSV = "file:///data/orders.csv"


def source_of(shards: list[tuple]) -> SparkSource:
    """A SparkSource over a capture of these shards (file, split, first rid, rows), no Spark."""
    src = object.__new__(SparkSource)
    src.shards, src.n_rows = shards, sum(s[3] for s in shards)
    return src


def test_rids_are_places_in_file_order_whatever_the_splits():
    """Capture's scan splits a file every 8 MB (spark.sql.files.maxPartitionBytes, with
    openCostInBytes as large: no packing); a plain read of the same file on two cores
    splits it at half its size plus Spark's open cost, 7,524,559 bytes for a 15 MB CSV.
    The rows, in file order, are the same: their rids too (the check refused them, and
    every lazy details page of such a source was an error)."""
    src = source_of([(CSV, 0, 0, 154_286), (CSV, 8_388_608, 154_286, 45_333)])
    sizes = {(CSV, 0): 138_389, (CSV, 7_524_559): 61_230}
    src._check_rids(sizes, rid_offsets(sizes))  # no error


def test_other_rows_per_file_are_refused():
    """As many rows in all, but not in each file: rows cannot be matched to rids."""
    a, b = "file:///data/a.csv", "file:///data/b.csv"
    src = source_of([(a, 0, 0, 100), (b, 0, 100, 100)])
    sizes = {(a, 0): 101, (b, 0): 99}
    with pytest.raises(NotCapturedError, match="other rows"):
        src._check_rids(sizes, rid_offsets(sizes))
