"""capture.columns helpers that need no Spark."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from brushfire.capture.columns import to_float64


@pytest.mark.parametrize("dtype", [pa.decimal128(12, 6), pa.decimal128(38, 6), pa.decimal128(10, 0),
                                   pa.decimal256(20, 6)])
def test_decimals_become_the_nearest_float(dtype):
    # Spark computes `hour(date) + minute(date) / 60.0` as DECIMAL(…, 6); pyarrow's own cast
    # made 0.200000 into 0.19999999999999998, so a brush at 0.2 missed those rows
    rng = np.random.default_rng(3)
    scale = dtype.scale
    texts = ["0.2", "2.6", "-3.4", "2.583333", "0", None] + \
        [f"{x / 10**scale:.{scale}f}" for x in rng.integers(-24 * 10**scale, 24 * 10**scale, 2000)]
    values = [None if t is None else Decimal(t).quantize(Decimal(1).scaleb(-scale)) for t in texts]
    col = pa.chunked_array([pa.array(values[:3], dtype), pa.array(values[3:], dtype).slice(0)])
    got = to_float64(col).to_pylist()
    assert got == [None if v is None else float(v) for v in values]  # float(Decimal) rounds once


def test_floats_and_ints_pass_through():
    col = pa.chunked_array([pa.array([1, None, 3]), pa.array([4])])
    assert to_float64(col).to_pylist() == [1.0, None, 3.0, 4.0]
