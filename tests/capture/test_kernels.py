"""capture/kernels.py against plain numpy, on random inputs."""

from __future__ import annotations

import numpy as np
import pytest

from brushfire.capture import kernels


@pytest.mark.parametrize("seed", range(5))
def test_cube_counts_equal_a_bincount_per_target(seed):
    rng = np.random.default_rng(seed)
    n, blocks = int(rng.integers(0, 3000)), int(rng.integers(1, 40))
    widths = rng.integers(1, 30, int(rng.integers(1, 6))).astype(np.int64)
    block = rng.integers(0, blocks, n).astype(np.int64)
    codes = np.stack([rng.integers(0, w, n) for w in widths]).astype(np.int32) if n else \
        np.zeros((len(widths), 0), np.int32)
    sizes = blocks * widths
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    got = np.zeros(int(sizes.sum()), np.int64)
    kernels.cube_counts(block, codes, widths, offsets, got)
    want = np.concatenate([np.bincount(block * w + codes[t], minlength=blocks * w)
                           for t, w in enumerate(widths)])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", range(5))
def test_cube_sums_equal_a_weighted_bincount(seed):
    rng = np.random.default_rng(seed)
    n, blocks, width = int(rng.integers(0, 3000)), int(rng.integers(1, 40)), int(rng.integers(1, 30))
    block = rng.integers(0, blocks, n).astype(np.int64)
    code = rng.integers(0, width, n).astype(np.int32)
    x = rng.normal(0, 1e6, n)
    x[rng.random(n) < 0.2] = np.nan
    sums, oks = np.zeros(blocks * width), np.zeros(blocks * width, np.int64)
    kernels.cube_sums(block, code, width, x, sums, oks)
    ok = ~np.isnan(x)
    cell = block * width + code
    np.testing.assert_array_equal(sums, np.bincount(cell[ok], weights=x[ok], minlength=blocks * width))
    np.testing.assert_array_equal(oks, np.bincount(cell[ok], minlength=blocks * width))
