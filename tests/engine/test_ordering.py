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
from brushfire.engine.ordering import page_order


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


def test_details_ordered_by_a_column_through_the_protocol_equal_sql(rich_local, small_parquet):
    """The rich dashboard: details ordered by x (floats with NaN and nulls), cat and t,
    each way, on pages of the rows behind a selection, equal DuckDB's over the source
    (rid: the row's position in it)."""
    src = pq.read_table(small_parquet)
    src = src.append_column("rid", pa.array(np.arange(src.num_rows)))
    s = rich_local.engine_session()
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
