"""engine/ordering.py: details rows in a column's order equal SQL's `ORDER BY column [ASC |
DESC] NULLS LAST, rid` (DuckDB), on awkward random columns (NaN, ±inf, nulls, ties,
strings, times, booleans) and pages; then through a session and the protocol, against
DuckDB over the source."""

from __future__ import annotations

from datetime import datetime, timedelta

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from brushfire import protocol
from brushfire.engine import ordering
from brushfire.engine.ordering import column_order, gather_page, page_order, walk_page


def columns(rng: np.random.Generator, n: int) -> dict[str, pa.Array]:
    x = rng.choice([-1.5, 0.0, 2.25, 7.0, np.nan, np.inf, -np.inf], n)  # ties, NaN, infinities
    k = rng.integers(-3, 4, n)
    t0 = datetime(2024, 1, 1)
    return {
        "x": pa.array(x, mask=rng.random(n) < 0.1),
        "k": pa.array(k, mask=rng.random(n) < 0.1),
        "s": pa.array(rng.choice(["b", "a", "ab", "B", ""], n).tolist(), mask=rng.random(n) < 0.1),
        "t": pa.array([t0 + timedelta(hours=int(h)) for h in rng.integers(0, 5, n)], pa.timestamp("us"),
                      mask=rng.random(n) < 0.1),
        "f": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.1),
        "nothing": pa.nulls(n, pa.float64()),
        "c": pa.array(rng.integers(0, 3, n)),  # no nulls
        "y": pa.array(rng.choice([-1.5, 0.0, 2.25], n)),  # no nulls, no NaN
    }


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("column", ["x", "k", "s", "t", "f", "nothing", "c", "y"])
@pytest.mark.parametrize("descending", [False, True])
def test_a_page_in_a_columns_order_is_sqls(seed, column, descending):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 120))
    rows = pa.table(columns(rng, n)).append_column("pos", pa.array(np.arange(n)))
    order = f"{column} {'DESC' if descending else 'ASC'} NULLS LAST, pos"
    for offset, limit in [(0, 10), (0, n + 5), (7, 13), (n, 3), (max(0, n - 4), 10)]:
        want = [r[0] for r in duckdb.sql(f"SELECT pos FROM rows ORDER BY {order} "
                                         f"LIMIT {limit} OFFSET {offset}").fetchall()]
        got = page_order(rows.column(column), descending, offset, limit).tolist()
        assert got == want, (column, descending, offset, limit)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("column", ["x", "k", "s", "t", "f", "nothing", "c", "y"])
@pytest.mark.parametrize("descending", [False, True])
def test_a_page_through_the_columns_order_is_page_orders(seed, column, descending):
    """A ColumnOrder's two ways to a page (walking it, gathering ranks) give the rows
    page_order gives from the selected rows' values, for selections of every density."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(0, 3000))
    values = pa.chunked_array([columns(rng, n)[column]])
    co = column_order(values)
    assert co.nbytes > 0 or n == 0
    for density in (0.0, 0.002, 0.3, 1.0):
        mask = rng.random(n) < density
        rids = np.flatnonzero(mask)
        for offset, limit in [(0, 10), (0, n + 5), (7, 13), (len(rids), 3), (max(0, len(rids) - 4), 10)]:
            want = rids[page_order(values.take(pa.array(rids)), descending, offset, limit)].tolist()
            got = walk_page(co, lambda r, mask=mask: mask[r], descending, offset, limit).tolist()
            assert got == want, ("walk", column, descending, density, offset, limit)
            got = gather_page(co, rids, descending, offset, limit).tolist()
            assert got == want, ("gather", column, descending, density, offset, limit)


def test_a_walk_gives_up_past_its_budget_where_the_selection_comes_last():
    """Ordered by the brushed column itself, a walk from the other end tests every row
    outside the brush: past its budget it says so (the page is then gathered)."""
    x = pa.chunked_array([pa.array(np.arange(10_000) % 1000, pa.int64())])
    co = column_order(x)
    mask = (np.arange(10_000) % 1000) < 20  # the smallest values selected
    assert walk_page(co, lambda r: mask[r], True, 0, 10, budget=5_000) is None
    got = walk_page(co, lambda r: mask[r], True, 0, 10, budget=None)
    assert got.tolist() == gather_page(co, np.flatnonzero(mask), True, 0, 10).tolist()
    assert walk_page(co, lambda r: mask[r], False, 0, 10, budget=5_000) is not None


def test_walking_is_chosen_when_much_is_selected():
    assert ordering.prefer_walk(30_000_000, 30_000_000, 50)
    assert ordering.prefer_walk(30_000_000, 300_000, 5_050)
    assert not ordering.prefer_walk(30_000_000, 300, 50)
    assert not ordering.prefer_walk(30_000_000, 0, 50)


@pytest.mark.parametrize("path", ["values", "walk", "gather"])
def test_details_ordered_by_a_column_through_the_protocol_equal_sql(rich_local, small_parquet, path,
                                                                     monkeypatch):
    """The rich dashboard: details ordered by x (floats with NaN and nulls), cat and t,
    each way, on pages of the rows behind a selection, equal DuckDB's over the source
    (rid: the row's position in it)."""
    src = pq.read_table(small_parquet)
    src = src.append_column("rid", pa.array(np.arange(src.num_rows)))
    s = rich_local.engine_session()
    orders = s._s.orders
    if path == "values":  # before a column's order is built
        monkeypatch.setattr(orders, "get", lambda name, n: None)
    else:
        for column in ("x", "cat", "t"):
            orders.get(column, rich_local.store.n_rows)
            assert orders.wait(column) is not None
        monkeypatch.setattr(ordering, "prefer_walk", lambda *a: path == "walk")
    protocol.handle(s, {"type": "brush", "view": "hk", "interval": [0, 80]})
    for column in ("x", "cat", "t"):
        for descending in (False, True):
            for page in (0, 3):
                reply = protocol.handle(s, {"type": "details", "page": page, "page_size": 50,
                                            "order_by": column, "descending": descending})
                assert reply["type"] == "details", reply
                q = (f"SELECT rid FROM src WHERE k >= 0 AND k <= 80 ORDER BY {column} "
                     f"{'DESC' if descending else 'ASC'} NULLS LAST, rid LIMIT 50 OFFSET {page * 50}")
                assert [r["rid"] for r in reply["rows"]] == [r[0] for r in duckdb.sql(q).fetchall()]
                assert reply["total"] == s.count_selected()
    # the DuckDB baseline orders the same way
    from brushfire.baselines import with_engine

    other = with_engine(rich_local, "duckdb").session()
    protocol.handle(other, {"type": "brush", "view": "hk", "interval": [0, 80]})
    for m in [{"type": "details", "order_by": "x", "descending": True, "page": 1},
              {"type": "details", "order_by": "t", "page": 2}]:
        assert protocol.handle(other, m)["rows"] == protocol.handle(s, m)["rows"]


def test_the_rows_a_walk_tests_pass_as_the_selections_rows_do(rich_local):
    """kernels.rids_pass, over rows named one by one across shards, against the rows
    backward_rids finds by blocks, under a brush and a selection of bars."""
    from brushfire.engine import kernels as K
    from brushfire.engine.queries import lineage_source

    s = rich_local.engine_session()
    protocol.handle(s, {"type": "brush", "view": "hk", "interval": [0, 80]})
    n = rich_local.store.n_rows
    every = np.arange(n, dtype=np.int64)
    for view, bars in [(None, None), ("cat", [0, 2])]:
        want = np.isin(every, s.backward_rids(view, bars))
        need, _ = lineage_source(s, view, bars)
        sh = s._s
        got = K.rids_pass(sh.shard_list, sh.shard_starts, sh.L, s.state.q, need, every, np.empty(n, np.bool_))
        assert want.any() and not want.all()
        assert np.array_equal(got, want), view

