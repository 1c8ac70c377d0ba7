"""Measure the engine's per-row costs on a captured dashboard, for the planner's constants
(backend/brushfire/engine/costs.py): a sequential pass per row, per filter tested and
per view counted; a row reached through the backward index per row and per view (every
key: the rows dense in their blocks); and the memory lines sparse rows read (a few keys
holding about 1 % of the rows: every row its own line per column), over every shard —
the lines depend on how much of the store the caches hold.

    python perf/calibrate.py --spec perf/dashboards/flights6-30m.yaml [--cache-dir DIR]

Single-threaded kernel calls, best of 5; prints ns per unit.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from brushfire import Dashboard
from brushfire.engine import costs as P
from brushfire.engine import kernels as K


def best(fn, reps: int = 5) -> float:
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", required=True)
    ap.add_argument("--cache-dir", default=None)
    args = ap.parse_args()
    dash = Dashboard.open(args.spec, **({"cache_dir": args.cache_dir} if args.cache_dir else {}))
    dash.warm_up()
    store = dash.store
    s = dash.engine_session()  # (its internals: the kernels timed alone)
    interval = [f for f in store.layout.filters if f.kind == "interval"]
    for f in interval:  # every brush at the middle half of its values
        lo, hi = store.value_range(f.dims[0])
        if lo is not None:
            x = dash.spec.view(f.name)
            if x.type == "temporal":
                continue
            s.brush(f.name, (lo + (hi - lo) / 4, hi - (hi - lo) / 4))
    shard = max(store.shards, key=lambda sh: sh.n_rows)
    L, q = s._s.L, s.state.q
    S = shard.arrays
    views = [v.name for v in store.layout.views if v.code_dims]
    vi = s._vi(views)
    need = s._needs(views)
    nf = len(s.active)
    c, sm, o = np.zeros(store.nslots, np.int64), np.zeros(store.nslots), np.zeros(store.nslots, np.int64)
    n = shard.n_rows

    def scan(views_, need_):
        return lambda: K.scan(S, L, q, views_, need_, np.uint64(0), 0, shard.nblocks, c, sm, o)

    union = np.zeros_like(need)
    union[vi[0]] = np.bitwise_or.reduce(need[vi])
    t_one_all = best(scan(vi[:1], union))
    t_one_none = best(scan(vi[:1], np.zeros_like(need)))
    t_all = best(scan(vi, np.zeros_like(need)))
    per_filter = (t_one_all - t_one_none) / n / max(1, nf) * 1e9
    per_view = (t_all - t_one_none) / n / max(1, len(vi) - 1) * 1e9
    per_row = t_one_none / n * 1e9 - per_view
    print(f"scan: {per_row:.2f} ns per row + {per_filter:.2f} per filter tested "
          f"({nf} active) + {per_view:.2f} per view counted ({len(vi)} views), {n:,} rows")
    d = next(i for i, dim in enumerate(store.layout.dims) if dim.indexed)
    kr = np.array([[0, store.layout.dims[d].nkeys - 1]], np.int64)
    rows = int(store.keycounts[d][:-1].sum() * n / store.n_rows)

    def by_keys(views_):
        return lambda: K.by_keys(S, L, q, q, d, kr, np.ones(1, np.int64), -1, views_,
                                 need, 0, shard.nblocks, c, sm, o)

    t1, tv = best(by_keys(vi[:1])), best(by_keys(vi))
    view = (tv - t1) / rows / max(1, len(vi) - 1) * 1e9
    row = t1 / rows * 1e9 - view
    print(f"index: {row:.2f} ns per row + {view:.2f} per view counted")

    # sparse rows: the keys around the middle of d holding ~1 % of the rows, every shard
    prefix = s._s.keyprefix[d]
    nk = store.layout.dims[d].nkeys
    mid = int(np.searchsorted(prefix, prefix[nk] / 2))
    hi = int(np.searchsorted(prefix, prefix[mid] + prefix[nk] / 100))
    sparse = np.array([[mid, max(mid, hi - 1)]], np.int64)
    srows = s.reads.rows_of(d, sparse)

    def all_shards():
        for sh in store.shards:
            K.by_keys(sh.arrays, L, q, q, d, sparse, np.ones(1, np.int64), -1, vi, need, 0, sh.nblocks,
                      c, sm, o)

    per_row = best(all_shards) / max(1, srows) * 1e9
    lines = -np.expm1(-32 * srows / store.n_rows) * store.n_rows / 32
    cols = max(len(vi), nf) + 1
    search = 1000.0 * s._s.blocks  # costs.BLOCK_SEARCH per block
    line = (per_row * srows - srows * (row + view * len(vi)) - search) / max(1.0, lines * cols)
    print(f"sparse index ({srows:,} rows of {store.n_rows:,}): {per_row:.1f} ns per row, "
          f"{line:.1f} ns per memory line of a column ({cols} columns)")

    # clustered copies: every row of d's copy (one run), as a recompute reads it, against a
    # scan counting the same views; and an incremental pass over the same rows, the moving
    # filter d's own (decided per chunk by its keys when it has one interval test)
    copy = s.reads.copy(d)
    if copy is not None:
        i = store.shards.index(shard)
        C, crow, starts = copy[i].keys, copy[i].rows, copy[i].starts
        one = np.ones(1, np.int64)
        none = np.zeros((0, 0), np.uint16)  # no chunk zone maps or histograms: every row read

        def clustered(views_, mf=-1, q_old=q, need_=need):
            return lambda: K.by_keys_clustered(S, C, crow, starts, none, none, K.CHUNK, d, -1, -1, L, q, q_old,
                                               kr, one, mf, views_, need_, 0, shard.nblocks, c, sm, o)

        crows = int(starts[-2])
        t_scan, t_clu = best(scan(vi, need)), best(clustered(vi))
        run_row = (t_clu / crows - t_scan / n) * 1e9 + P.SCAN_ROW
        print(f"clustered copy ({crows:,} rows): {t_clu / crows * 1e9:.2f} ns per row against a "
              f"scan's {t_scan / n * 1e9:.2f} (RUN_ROW {run_row:.2f})")
        brushed = [x.name for x in interval if x.dims[0] == d and x.name in s.active]
        if brushed:  # the incremental kernel counts with the moving filter left out of `need`
            f = s._fi[brushed[0]]
            t_inc = best(clustered(vi, f, s.state.copy_with(f, None), need & ~np.uint64(1 << f)))
            print(f"incremental, filter {brushed[0]} switched on: {t_inc / crows * 1e9:.2f} ns per row")


if __name__ == "__main__":
    main()
