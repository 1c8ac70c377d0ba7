"""The order of details rows by a column (a `details` request's `order_by`), as SQL's
`ORDER BY column [ASC | DESC] NULLS LAST, rid`: NaN is the largest value (as DuckDB and
Spark order it: last ascending, first descending), nulls come last either way, and rows
that tie keep rid order.

Two ways to a page, both pure (values in, positions out):
- `page_order`: from the column's values of the selected rows (Arrow's `select_k`, about
  O(n log k)). It needs those values gathered from the snapshot: 0.3-1.6 s for every row
  of 3M, so it serves a column only until its `ColumnOrder` is built.
- a `ColumnOrder` (every row of the store in the column's order, and each row's rank in
  it), built once per store and column in the background (`Orders`): a page then either
  walks that order from its start (or its end) testing rows against the selection until
  it has the page (`walk_page`: a few thousand rows tested when much is selected), or
  gathers the selected rows' ranks (`gather_page`: when little is selected). `prefer_walk`
  chooses.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

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


@dataclass(frozen=True)
class ColumnOrder:
    """Every row of a column in ascending order: `order[p]` is the rid at position p
    (ties in rid order, nulls last); the rows of rank r (the r-th distinct non-null value,
    NaN the largest; rank m = len(starts) - 2: null) are positions starts[r] to
    starts[r + 1]; `ranks[rid]` is a row's rank."""

    order: np.ndarray  # (n,) uint32 or int64
    starts: np.ndarray  # (m + 2,) int64
    ranks: np.ndarray  # (n,) uint32 or int64

    @property
    def m(self) -> int:
        return len(self.starts) - 2

    @property
    def nbytes(self) -> int:
        return self.order.nbytes + self.starts.nbytes + self.ranks.nbytes


def column_order(values: pa.Array | pa.ChunkedArray) -> ColumnOrder:
    """The ColumnOrder of `values` (one column of every row, in rid order)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], values.type)
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    n = len(values)
    index = np.uint32 if n < 2**32 else np.int64
    order = pc.array_sort_indices(values, null_placement="at_end").to_numpy()  # stable: ties by rid
    nn = n - values.null_count
    firsts = np.zeros(1 if nn else 0, np.int64)  # positions where a new value begins
    if nn > 1:
        ordered = values.take(pa.array(order[:nn]))
        a, b = ordered.slice(1), ordered.slice(0, nn - 1)
        new = pc.not_equal(a, b)
        if pa.types.is_floating(values.type):  # NaN != NaN, but NaNs tie
            new = pc.and_(new, pc.invert(pc.and_(pc.is_nan(a), pc.is_nan(b))))
        firsts = np.concatenate([firsts, np.flatnonzero(new.to_numpy(zero_copy_only=False)) + 1])
    starts = np.concatenate([firsts, [nn, n]]).astype(np.int64)
    ranks = np.empty(n, index)
    ranks[order] = np.repeat(np.arange(len(starts) - 1, dtype=index), np.diff(starts))
    return ColumnOrder(order.astype(index), starts, ranks)


WALK_NS, SCAN_NS, GATHER_NS = 60.0, 1.5, 10.0  # a row tested by walking; scanned; gathered


def walk_budget(n_rows: int, selected: int) -> int:
    """Rows a walk may test before gathering would have been cheaper: a gather passes
    over the store (~SCAN_NS a row) and reads each selected row's rank (~GATHER_NS)."""
    return int((n_rows * SCAN_NS + selected * GATHER_NS) / WALK_NS)


def prefer_walk(n_rows: int, selected: int, wanted: int) -> bool:
    """Whether walking the column's order (about wanted * n_rows / selected rows tested,
    when the selection is spread evenly over the order) beats gathering. Pure."""
    if selected <= 0:
        return False
    return wanted * n_rows / selected < walk_budget(n_rows, selected)


def walk_page(co: ColumnOrder, passes: Callable[[np.ndarray], np.ndarray], descending: bool,
              offset: int, limit: int, budget: int | None = None) -> np.ndarray | None:
    """rids of rows `offset` to `offset + limit` of the order among the rows that
    `passes` (rids -> bool per rid), testing windows of the order that double in size;
    None once more than `budget` rows were tested without the page (a selection that
    lies where the walk comes last: ordered by the brushed column itself)."""
    wanted = offset + limit
    budget = len(co.order) if budget is None else budget
    tested = 0
    n, nn = len(co.order), int(co.starts[-2])
    got: list[np.ndarray] = []
    count, width = 0, max(1024, 4 * wanted)
    if descending:  # non-null values from the largest; a value's rows stay in rid order
        q = nn
        while q > 0 and count < wanted:
            if tested > budget:
                return None
            p = int(co.starts[np.searchsorted(co.starts, max(0, q - width), "right") - 1])
            tested += q - p
            rows = co.order[p:q].astype(np.int64)
            ok = passes(rows)
            rank = np.searchsorted(co.starts, np.flatnonzero(ok) + p, "right") - 1
            rows = rows[ok]
            got.append(rows[np.lexsort((rows, -rank))])
            count += len(rows)
            q, width = p, width * 2
        p = nn  # then the nulls, as ascending
    else:
        p = 0
    while p < n and count < wanted:
        if tested > budget:
            return None
        tested += min(n, p + width) - p
        rows = co.order[p:min(n, p + width)].astype(np.int64)
        rows = rows[passes(rows)]
        got.append(rows)
        count += len(rows)
        p, width = p + width, width * 2
    out = np.concatenate(got) if got else np.zeros(0, np.int64)
    return out[offset:wanted]


def gather_page(co: ColumnOrder, rids: np.ndarray, descending: bool, offset: int,
                limit: int) -> np.ndarray:
    """rids of rows `offset` to `offset + limit` of the order among `rids` (ascending)."""
    k = min(len(rids), offset + limit)
    if k <= offset:
        return np.zeros(0, np.int64)
    key = co.ranks[rids].astype(np.int64)
    if descending:  # the largest value first, nulls (rank m) still last
        key = np.where(key < co.m, co.m - 1 - key, co.m)
    key = key * len(rids) + np.arange(len(rids))  # ties: rid order (rids ascending)
    pick = np.argpartition(key, k - 1)[:k] if k < len(key) else np.arange(len(key))
    pick = pick[np.argsort(key[pick])]
    return rids[pick[offset:k]]


class Orders:
    """One store's ColumnOrders, built on first request in a background thread (a reply
    never waits for one), held under the process's memory budget for them
    (engine/memory.orders); one dropped to make room is built again when next asked."""

    def __init__(self, column: Callable[[str], pa.ChunkedArray], budget) -> None:
        self._column, self._budget = column, budget
        self._done: dict[str, tuple[ColumnOrder, int]] = {}
        self._building: set[str] = set()
        self._failed: set[str] = set()  # a column whose build raised: not tried again
        self._lock = threading.Lock()

    def get(self, name: str, n_rows: int) -> ColumnOrder | None:
        """The column's order when built, else None (and its build started)."""
        with self._lock:
            held = self._done.get(name)
            if held is not None:
                self._budget.touch(held[1])
                return held[0]
            if name in self._building or name in self._failed:
                return None
            self._building.add(name)
        threading.Thread(target=self._build, args=(name, n_rows), daemon=True,
                         name=f"brushfire-order-{name}").start()
        return None

    def wait(self, name: str, timeout: float = 60.0) -> ColumnOrder | None:
        """The column's order, waiting for its build (tests and benchmarks)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if name in self._done:
                    return self._done[name][0]
                if name not in self._building:
                    return None
            time.sleep(0.01)
        return None

    def _build(self, name: str, n_rows: int) -> None:
        try:
            # 2 x 4-8 B per row (order, ranks): reserved before building, so a column the
            # budget cannot hold is not built (its pages keep page_order)
            token = self._budget.reserve(self, name, 2 * n_rows * (4 if n_rows < 2**32 else 8))
            if token is None:  # larger than the whole budget: never built
                with self._lock:
                    self._failed.add(name)
                return
            try:
                co = column_order(self._column(name))
            except (pa.ArrowException, ValueError, TypeError, MemoryError):
                self._budget.release(token)
                with self._lock:
                    self._failed.add(name)
                return
            if not self._budget.resize(token, co.nbytes):
                return
            with self._lock:
                self._done[name] = (co, token)
        finally:
            with self._lock:
                self._building.discard(name)

    def _drop_reserved(self, key: str, token: int) -> None:
        with self._lock:
            held = self._done.get(key)
            if held is not None and held[1] == token:
                del self._done[key]
