"""Random star schemas for the join tests: a fact table whose rows carry keys of three
dimension tables, one of them reached through another (a chain), with what joins meet in
real data — keys the dimension does not hold, null keys, a skewed fan-in (a few dimension
rows behind most fact rows), dimension rows nobody references, null columns in the
dimension, and keys of both integer and string types."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from brushfire import Dashboard
from brushfire.capture.local import capture_tables
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard

# small blocks and shards: a star of 2,000 rows spans several of each
CONFIG = CaptureConfig(block_rows=64, shard_rows=300, max_keys=40, max_cube_blocks=6)


def make_star(n: int, seed: int) -> tuple[pa.Table, dict[str, pa.Table]]:
    """(fact table of `n` rows, {join name: dimension table})."""
    rng = np.random.default_rng(seed)
    n_store, n_item, n_region = int(rng.integers(5, 60)), int(rng.integers(3, 30)), int(rng.integers(2, 6))
    # stores: ids 0..n_store-1 in a shuffled order, a few more rows than the fact references
    store_ids = rng.permutation(n_store + 5)
    store = pa.table({
        "store_id": pa.array(store_ids, pa.int64()),
        "city": pa.array([f"city{i % 9}" if rng.random() > 0.1 else None for i in range(len(store_ids))]),
        "size": pa.array(np.round(rng.gamma(2.0, 50.0, len(store_ids)), 1),
                         mask=rng.random(len(store_ids)) < 0.08),
        "region_code": pa.array([f"R{int(r)}" for r in rng.integers(0, n_region + 1, len(store_ids))]),
        "opened": pa.array([datetime(2015, 1, 1) + timedelta(days=int(d))
                            for d in rng.integers(0, 2000, len(store_ids))], pa.timestamp("us")),
    })
    region = pa.table({"code": pa.array([f"R{i}" for i in range(n_region)]),  # R<n_region>: none
                       "zone": pa.array([["north", "south", "east"][i % 3] for i in range(n_region)])})
    item = pa.table({"sku": pa.array([f"sku-{i:03d}" for i in range(n_item)]),
                     "brand": pa.array([f"b{int(b)}" for b in rng.integers(0, 4, n_item)]),
                     "price": pa.array(rng.integers(1, 500, n_item), pa.int64())})
    # fact: skewed store keys (zipf), some beyond the dimension, some null
    sk = np.minimum(rng.zipf(1.5, n) - 1, n_store + 8)
    sk_null = rng.random(n) < 0.05
    items = np.array([f"sku-{i:03d}" for i in range(n_item + 3)])  # 3 no item has
    ik = items[rng.integers(0, n_item + 3, n)]
    ik_null = rng.random(n) < 0.04
    fact = pa.table({
        "store_key": pa.array(sk, pa.int64(), mask=sk_null),
        "item_key": pa.array(ik, mask=ik_null),
        "qty": pa.array(rng.integers(1, 20, n), pa.int64()),
        "amount": pa.array(np.round(rng.normal(50, 30, n), 2), mask=rng.random(n) < 0.03),
        "day": pa.array([datetime(2021, 1, 1) + timedelta(hours=int(h)) for h in rng.integers(0, 24 * 90, n)],
                        pa.timestamp("us")),
    })
    return fact, {"store": store, "region": region, "item": item}


JOINS = [
    {"name": "store", "path": "store.parquet", "key": "store_id", "on": "store_key"},
    {"name": "region", "path": "region.parquet", "key": "code", "on": "store.region_code"},
    {"name": "item", "path": "item.parquet", "key": "sku", "on": "item_key"},
]


def star_spec(folder, details: bool = True) -> dict:
    """A dashboard over `write_star`'s files: views over joined columns of every join
    (the chain's too), measures of joined columns, and parameters on joined columns."""
    views = [
        {"name": "city", "type": "categorical", "field": "store.city", "top": 6},
        {"name": "size", "type": "histogram", "field": "store.size", "bin": {"maxbins": 12}},
        {"name": "zone", "type": "categorical", "field": "region.zone"},
        {"name": "brand", "type": "categorical", "field": "item.brand", "top": 3,
         "aggregate": {"op": "sum", "field": "qty"}},
        {"name": "amount", "type": "histogram", "field": "amount", "bin": {"step": 20, "extent": [-40, 140]}},
        {"name": "day", "type": "temporal", "field": "day", "unit": "week"},
        {"name": "opened", "type": "temporal", "field": "store.opened", "unit": "year"},
        {"name": "price_by_zone", "type": "categorical", "field": "region.zone", "brush": "none",
         "aggregate": {"op": "mean", "field": "item.price"}},
        {"name": "median_size", "type": "histogram", "field": "amount", "brush": "none",
         "bin": {"step": 50, "extent": [-50, 150]}, "aggregate": {"op": "median", "field": "store.size"}},
    ]
    out = {
        "name": "star",
        "source": {"path": str(folder / "fact.parquet"),
                   "joins": [{**j, "path": str(folder / j["path"])} for j in JOINS]},
        "views": views,
        "interactions": {
            "crossfilter": [{"views": [v["name"] for v in views]}],
            "highlight": [{"source": "zone", "targets": ["amount", "brand"]}],
            "parameters": [{"name": "pbrand", "field": "item.brand"},
                           {"name": "pprice", "field": "item.price", "widget": "slider", "op": "lte"}],
        },
    }
    if details:
        out["interactions"]["details"] = {"columns": ["qty", "store.city", "region.zone", "item.brand"],
                                          "page_size": 50}
    return out


def write_star(folder, fact: pa.Table, dims: dict[str, pa.Table]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(fact, folder / "fact.parquet")
    for name, table in dims.items():
        pq.write_table(table, folder / f"{name}.parquet")


def open_star(folder, seed: int, n: int = 2000, details: bool = True) -> Dashboard:
    """A random star (`make_star`) captured in this process (no Spark), in two files."""
    fact, dims = make_star(n, seed)
    write_star(folder, fact, dims)
    spec = parse_dashboard(star_spec(folder, details))
    store = capture_tables(plan_capture(spec), {"a": fact.slice(0, n // 3), "b": fact.slice(n // 3)},
                           folder / "cache", CONFIG, None, dims)
    return Dashboard(spec, plan_capture(spec), store)


# Keys beyond 2^53 (a JS double's exact integers): 9007199254740993 reads as ...992 there,
# ...995 and ...997 both as ...996; and the int64 extremes. Each key has its own label
# and count (so each its own bar and place in the list).
BIG_KEYS = [9007199254740993, 9007199254740995, 9007199254740996, 9007199254740997,
            2**63 - 1, -(2**63) + 1, 7]
BIG_LABELS = ["k993", "k995", "k996", "k997", "kmax", "kmin", "k7"]


def make_big_keys() -> tuple[pa.Table, dict[str, pa.Table]]:
    """(fact, {"acct": dimension}): a star whose int64 keys pass 2^53. Key i is on
    len(BIG_KEYS) + 1 - i fact rows; a key the dimension lacks and a null key too."""
    keys = [k for i, k in enumerate(BIG_KEYS) for _ in range(len(BIG_KEYS) + 1 - i)]
    keys += [9007199254740999, None]
    fact = pa.table({"acct_id": pa.array(keys, pa.int64()),
                     "amount": pa.array([float(i % 9) for i in range(len(keys))])})
    acct = pa.table({"id": pa.array(BIG_KEYS, pa.int64()), "label": BIG_LABELS})
    return fact, {"acct": acct}


def big_keys_spec(folder) -> dict:
    views = [{"name": "label", "type": "categorical", "field": "acct.label"},
             {"name": "amount", "type": "histogram", "field": "amount", "bin": {"step": 1, "extent": [0, 9]}}]
    return {"name": "bigkeys",
            "source": {"path": str(folder / "fact.parquet"),
                       "joins": [{"name": "acct", "path": str(folder / "acct.parquet"), "key": "id",
                                  "on": "acct_id"}]},
            "views": views,
            "interactions": {"crossfilter": [{"views": ["label", "amount"]}],
                             "details": {"columns": ["acct_id", "amount", "acct.label"], "page_size": 50}}}


def open_big_keys(folder) -> Dashboard:
    """`make_big_keys` captured in this process (no Spark)."""
    fact, dims = make_big_keys()
    write_star(folder, fact, dims)
    spec = parse_dashboard(big_keys_spec(folder))
    store = capture_tables(plan_capture(spec), {"a": fact}, folder / "cache", CONFIG, None, dims)
    return Dashboard(spec, plan_capture(spec), store)
