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


@pytest.mark.parametrize("seed", range(6))
def test_block_argsort_equals_a_stable_argsort_per_block(seed):
    """Values of one magnitude and of many (negative, -0.0 as 0.0, ±inf), NaN and invalid
    rows last, ties by position; integers and times beyond 2^53; a last, shorter block."""
    rng = np.random.default_rng(seed)
    n, block_rows = int(rng.integers(0, 5000)), int(rng.integers(1, 700))
    if seed % 2:
        values = rng.choice(np.array([-(2**62), -1, 0, 1, 2**53 + 1, 2**62]), n) + rng.integers(-3, 3, n)
        valid = rng.random(n) < 0.9
        sortable = [np.where(valid, values, 0), ~valid]  # (invalid last, then by value)
    else:
        values = np.where(rng.random(n) < 0.5, 1000 + rng.random(n), rng.normal(0, 1e10, n))
        values[rng.random(n) < 0.1] = rng.choice(np.array([np.nan, np.inf, -np.inf, 0.0, 1000.5]))
        valid, sortable = None, None
    got = np.empty(n, np.uint16)
    kernels.block_argsort(kernels.sort_keys(values, valid), block_rows, got)
    for s in range(0, n, block_rows):
        if sortable is None:
            want = np.argsort(values[s:s + block_rows], kind="stable")
        else:  # lexsort: the last key first
            want = np.lexsort((sortable[0][s:s + block_rows], sortable[1][s:s + block_rows]))
        np.testing.assert_array_equal(got[s:s + block_rows], want, err_msg=f"block at {s}")
