"""numba kernels of the capture's executors: the scan's order of each block's rows by value
(capture/scan.py, `block_argsort`: a radix sort, 6-7x numpy's argsort of 65k doubles), and
the key job's group-by push-down cubes' cells of a shard (capture/keys.py), counted in one
pass over its rows per filter instead of one numpy bincount (with its int64 temporaries)
per filter and target. Each has a plain numpy reference in tests/capture/test_kernels.py,
compared on random inputs.

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


@njit(nogil=True, cache=True)
def block_argsort(keys: np.ndarray, block_rows: int, out: np.ndarray) -> None:
    """out[s + i]: the position in block s.. of its i-th row by `keys` (uint64, ordered as
    the values: `sort_keys`), ties by position — np.argsort(kind="stable") of each block of
    `block_rows` rows. An LSD radix sort of 8-bit digits, a digit every key of the block
    shares skipped (values of one magnitude share their high bytes). O(n x digits)."""
    n = keys.shape[0]
    a = np.empty(block_rows, np.int64)
    b = np.empty(block_rows, np.int64)
    count = np.empty(257, np.int64)
    for s in range(0, n, block_rows):
        m = min(block_rows, n - s)
        differ = np.uint64(0)
        for i in range(m):
            a[i] = i
            differ |= keys[s + i] ^ keys[s]
        for shift in range(0, 64, 8):
            sh = np.uint64(shift)
            if (differ >> sh) & np.uint64(0xFF) == 0:
                continue
            count[:] = 0
            for i in range(m):
                count[((keys[s + a[i]] >> sh) & np.uint64(0xFF)) + 1] += 1
            for d in range(256):
                count[d + 1] += count[d]
            for i in range(m):
                d = (keys[s + a[i]] >> sh) & np.uint64(0xFF)
                b[count[d]] = a[i]
                count[d] += 1
            a, b = b, a
        for i in range(m):
            out[s + i] = a[i]


def sort_keys(values: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """uint64 keys that order as `values` (float64, or int64: integers and times) do, NaN
    and the rows not `valid` last: a double's bits' magnitude, negated for negative values,
    or the integer, with the sign bit flipped."""
    floats = np.asarray(values).dtype.kind == "f"
    values = np.ascontiguousarray(values, np.float64 if floats else np.int64)
    b = values.view(np.int64)
    if floats:
        m = b & np.int64(0x7FFFFFFFFFFFFFFF)
        keys = np.where(b < 0, -m, m).view(np.uint64) ^ np.uint64(1 << 63)
        keys[np.isnan(values)] = np.uint64(0xFFFFFFFFFFFFFFFF)
    else:
        keys = b.view(np.uint64) ^ np.uint64(1 << 63)
    if valid is not None:
        keys[~valid] = np.uint64(0xFFFFFFFFFFFFFFFF)
    return keys
