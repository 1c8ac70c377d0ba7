"""The clustered key copies (engine/copies.py) of a capture's shards, built once by the
driver at the end of the capture and written into the shards' directories with the store's
checksums (lineage/files.py), so that a server maps them and builds nothing.

Each shard's copies are built from its per-row arrays as the key job wrote them (mapped,
not read into memory), one (shard, dim) per task on a thread per core (the kernels release
the GIL). A copy is keyed by what it is built from (the shard's per-row arrays, the dim,
the layout arrays its histograms count, the chunk grid): a capture keeps every copy whose
key holds and builds only the others, so an appended file's new shards are the only
ones built.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import numpy as np

from brushfire.lineage import store as st
from brushfire.lineage.files import read_npy, write_npy
from brushfire.lineage.layout import Layout
from brushfire.workload import Workload


def copy_key(s: dict, order_hash: str) -> str:
    """What a shard's copies' keys, rows, starts and zone maps are built from: its per-row
    arrays and `order_hash`. Their chunk histograms are keyed apart (`hist_key`): a view
    added over keys the shard has already changes only those."""
    text = json.dumps([st.COPY_FORMAT, s["rows"], s["rows_key"], order_hash])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def hist_key(key: str, layout_hash: str) -> str:
    """What a copy's chunk histograms are built from: its keys (`copy_key`) and the layout
    arrays they count (`layout_hash`)."""
    return hashlib.sha256(json.dumps([key, layout_hash]).encode()).hexdigest()[:12]


def layout_hash(L: tuple, dims: list[int], rows_kept: bool, slots: int, chunk: int) -> str:
    """A hash of the kernel layout arrays and the choices a copy's content depends on."""
    h = hashlib.sha256(json.dumps([dims, rows_kept, slots, chunk]).encode())
    for a in L:
        a = np.asarray(a)
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def order_hash(nkeys: list[int], draw: list[int], rows_kept: bool, dtype: np.dtype, chunk: int) -> str:
    """A hash of what a copy's order, keys and zone maps depend on besides the shard's
    per-row arrays: every dim's key count, the fine dims' raw rows, whether shard rows are
    kept, the keys' dtype and the chunk grid."""
    return hashlib.sha256(json.dumps([nkeys, draw, rows_kept, str(dtype), chunk]).encode()).hexdigest()


def build_copies(entry: Path, layout: Layout, shards: list[dict],
                 progress: Callable[[str, float | None], None],
                 threads: int | None = None, workload: Workload | None = None) -> tuple[dict, list[str]]:
    """Give every shard record of `shards` (in place: its `copies` and `files`) the copies
    of the dims `choices` gives one (as the spec's `workload` orders and budgets them),
    reusing those whose key holds and, where only the views changed, recounting just their
    chunk histograms; returns the manifest's `copies` ({"dims": [...], "format":
    lineage/store.py COPY_FORMAT, "why": {dim: what it got and why}}) and notes on what
    was built."""
    from brushfire.engine import kernels as K
    from brushfire.engine.copies import (
        Copy,
        choices,
        hist_slots,
        keeps_rows,
        key_dtype,
        stored_budget,
    )
    from brushfire.engine.shared import kernel_layout

    chosen = choices(layout, sum(s["n_rows"] for s in shards), workload, stored_budget()) \
        if layout.row_dims else []
    dims = [d for d, got, _ in chosen if got]
    rows_kept = keeps_rows(layout)
    _, L = kernel_layout(layout)
    slots = hist_slots(L)
    nkeys = [d.nkeys for d in layout.dims]
    dtype = key_dtype(layout)
    ohash = order_hash(nkeys[:layout.row_dims], [int(x) for x in L[12]], rows_kept, dtype, K.CHUNK)
    lhash = layout_hash(L, dims, rows_kept, slots, K.CHUNK)
    tasks: list[tuple[dict, int, bool]] = []  # (shard, dim, only its histograms)
    kept = 0
    for s in shards:
        key = copy_key(s, ohash) if dims else ""
        hkey = hist_key(key, lhash)
        old = s.get("copies") or {}
        files = st.copy_files(s)
        same = old.get("key") == key
        have = [d for d in dims if same and str(d) in old.get("dims", {})
                and all(_present(entry, s, n) for n in files[d][:-1])]
        s["copies"] = {"key": key, "hist": hkey, "chunk": K.CHUNK,
                       "dims": {str(d): old["dims"][str(d)] for d in have}}
        recount = [d for d in have if old.get("hist", old.get("key")) != hkey
                   or not _present(entry, s, files[d][-1])]
        if len(have) == len(dims) and not recount:
            kept += 1
        tasks += [(s, d, False) for d in dims if d not in have] + [(s, d, True) for d in recount]

    def build(s: dict, d: int, hist_only: bool) -> tuple[dict, int, dict, bool]:
        sd = entry / st.SHARDS / s["name"]
        names = dict(zip(Copy.PARTS, st.copy_names(s["copies"], d), strict=True))
        if hist_only:  # the keys as stored, their histograms counted again
            hist = Copy.histograms(read_npy(sd / names["keys"]), L, slots)
            return s, d, {names["hist"]: write_npy(sd / names["hist"], hist)}, \
                s["copies"]["dims"][str(d)]["by_raw"]
        arrays = (read_npy(sd / f"keys-{s['rows']}.npy"), read_npy(sd / f"raw-{s['rows']}.npy"))
        copy = Copy.build(arrays, d, nkeys[d], rows_kept, int(L[12][d]), L, slots, dtype)
        return s, d, {names[p]: write_npy(sd / names[p], getattr(copy, p)) for p in Copy.PARTS}, \
            copy.by_raw

    if tasks:
        progress("copies: clustered key copies built by the driver", 0.0)
        with ThreadPoolExecutor(threads or os.cpu_count() or 1) as pool:
            futures = [pool.submit(build, s, d, h) for s, d, h in tasks]
            for i, f in enumerate(as_completed(futures)):
                s, d, files, by_raw = f.result()
                s["files"].update(files)
                s["copies"]["dims"][str(d)] = {"by_raw": by_raw}
                progress("copies: clustered key copies built by the driver", (i + 1) / len(tasks))
    notes = []
    if dims:
        names = ", ".join(layout.dims[d].name for d in dims)
        built = len({s["name"] for s, _, h in tasks if not h})
        recounted = len({s["name"] for s, _, h in tasks if h} - {s["name"] for s, _, h in tasks if not h})
        notes.append(f"clustered key copies of {names}: built for {built:,} of {len(shards):,} "
                     f"shards, kept for the others" + (f" ({recounted:,} with their chunk "
                                                       "histograms counted again: the views changed)"
                                                       if recounted else ""))
    return {"dims": dims, "format": st.COPY_FORMAT, "why": {str(d): why for d, _, why in chosen}}, notes


def _present(entry: Path, s: dict, name: str) -> bool:
    try:
        return (entry / st.SHARDS / s["name"] / name).stat().st_size == s["files"][name]["size"]
    except (OSError, KeyError):
        return False
