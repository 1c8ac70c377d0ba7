"""numba kernels of the key job (capture/keys.py): the group-by push-down cubes' cells of
a shard, counted in one pass over its rows per filter instead of one numpy bincount (with
its int64 temporaries) per filter and target. Each has a plain numpy reference in
tests/capture/test_kernels.py, compared on random inputs.

Compiled once per machine (numba's on-disk cache, next to this module or in
$NUMBA_CACHE_DIR), then loaded by every executor process that runs a key job.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def cube_counts(block: np.ndarray, codes: np.ndarray, widths: np.ndarray, offsets: np.ndarray,
                out: np.ndarray) -> None:
    """Add each row to its cell of every target: out[offsets[t] + block[i] * widths[t] +
    codes[t, i]] += 1. block: (n,) int64, the row's cube block; codes: (targets, n) int32,
    the row's slot in each target view; widths, offsets: (targets,) int64; out: int64
    cells of all targets, concatenated. O(n x targets), no temporaries."""
    for t in range(codes.shape[0]):
        w, off, c = widths[t], offsets[t], codes[t]
        for i in range(block.shape[0]):
            out[off + block[i] * w + c[i]] += 1


@njit(nogil=True, cache=True)
def cube_sums(block: np.ndarray, code: np.ndarray, width: int, x: np.ndarray,
              sums: np.ndarray, oks: np.ndarray) -> None:
    """Add each row's measure x[i] (NaN: missing, skipped) to its cell block[i] * width +
    code[i] of one target, and count the measures present. O(n)."""
    for i in range(block.shape[0]):
        v = x[i]
        if v == v:
            cell = block[i] * width + code[i]
            sums[cell] += v
            oks[cell] += 1
