"""The order of details rows by a column (a `details` request's `order_by`), as SQL's
`ORDER BY column [ASC | DESC] NULLS LAST, rid`: NaN is the largest value (as DuckDB and
Spark order it: last ascending, first descending), nulls come last either way, and rows
that tie keep rid order. Pure: values in, positions out.

A page needs only the rows up to its end: they are selected (Arrow's `select_k`, about
O(n log k)) rather than sorted, so the first pages of millions of rows cost one pass.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def page_order(values: pa.Array | pa.ChunkedArray, descending: bool, offset: int,
               limit: int) -> np.ndarray:
    """Positions into `values` (one column of rows in rid order) of the rows `offset` to
    `offset + limit` of that order (int64; fewer at the end)."""
    n = len(values)
    k = min(n, offset + limit)
    if k <= offset:
        return np.zeros(0, np.int64)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    order = "descending" if descending else "ascending"
    keys, sort = {}, []  # (keys only a column with nulls, or NaN, needs)
    if values.null_count:
        keys["null"] = pc.is_null(values)
        sort.append(("null", "ascending"))  # nulls last either way
    if pa.types.is_floating(values.type):  # NaN: the largest value
        nan = pc.fill_null(pc.is_nan(values), False)
        if pc.any(nan).as_py():
            keys["nan"] = nan
            sort.append(("nan", order))
    keys["value"] = values
    keys["position"] = pa.array(np.arange(n, dtype=np.int64))
    sort += [("value", order), ("position", "ascending")]  # ties: rid order
    picked = pc.select_k_unstable(pa.table(keys), k=k, sort_keys=sort)  # unique positions: a total order
    return picked.to_numpy()[offset:k].astype(np.int64)
