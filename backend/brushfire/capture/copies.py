"""The clustered key copies (engine/copies.py) of a capture's shards, built once by the
capture and written into the shards' directories with the store's checksums
(lineage/files.py), so that a server maps them and builds nothing.

A shard the key job keys gets its copies from that job's task, on the executors, from the
per-row arrays in its memory (`shard_copies`); any other shard needing one (keyed by an
earlier capture) gets it on the driver, from its per-row arrays as stored (mapped, not
read into memory), one (shard, dim) per task on a thread per core (the kernels release
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from brushfire.lineage import lattice
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


def order_hash(layout: Layout, workload: Workload | None = None) -> str:
    """A hash of what a copy's order, keys and zone maps depend on besides the shard's
    per-row arrays: the key count and raw row of every dim kept per row, whether shard
    rows are kept, the keys' dtype, the chunk grid and the dims each key's rows are
    ordered by (`then_dim`, which a workload's trace may choose)."""
    from brushfire.engine import kernels as K
    from brushfire.engine.copies import keeps_rows, key_dtype, then_dim

    kept = layout.dims[:layout.row_dims]
    what = [[d.nkeys for d in kept], [d.raw for d in kept], keeps_rows(layout),
            str(key_dtype(layout)), K.CHUNK, [then_dim(layout, d, workload) for d in range(layout.row_dims)]]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()


def key_maps(old: Layout, new: Layout, same: dict[int, tuple]) -> list[np.ndarray] | None:
    """Per dim kept per row, old key -> new key (the no-value key last), when `new` keys
    every row as `old` did but for a renumbering: a dense or dropdown dim that gained
    values (an appended file's), the others unchanged (`same`: parts.reusable_rows). None
    when a dim keys rows otherwise (new bucket edges, other bars, a value gone). Pure."""
    from brushfire.engine.copies import keeps_rows

    if old.row_dims != new.row_dims or keeps_rows(old) != keeps_rows(new):
        return None
    out = []
    for i, (a, b) in enumerate(zip(old.dims[:old.row_dims], new.dims[:new.row_dims], strict=True)):
        if same.get(i, (None,))[0] == i:
            out.append(np.arange(b.nkeys + 1, dtype=np.int64))
            continue
        what = ("name", "kind", "field", "value_type", "part", "raw")
        if a.kind not in ("dense", "dict") or any(getattr(a, k) != getattr(b, k) for k in what):
            return None
        index = {repr(x): j for j, x in enumerate(b.values)}
        lut = np.array([index.get(repr(x), -1) for x in a.values] + [b.nkeys], np.int64)
        if (lut < 0).any():
            return None
        out.append(lut)
    return out


@dataclass
class Before:
    """The entry's last capture, for copies renumbered instead of built again: its layout's
    `order_hash`, each dim's `key_maps` to this one, and each shard's per-row arrays then
    ({name: (rows, rows_key)})."""

    order_hash: str
    maps: list[np.ndarray]
    rows: dict[str, tuple]


class CopyBuild:
    """The copies a capture stores (`build_copies`): planned before the key job, which
    builds those of the shards it keys (`for_key_job`, `key_job_built`: the keys are in
    its memory then, on the executors); `run` builds, recounts or renumbers the rest on
    the driver."""

    def __init__(self, entry: Path, layout: Layout, shards: list[dict],
                 workload: Workload | None = None, before: Before | None = None) -> None:
        from brushfire.engine import kernels as K
        from brushfire.engine.copies import (
            choices,
            hist_slots,
            keeps_rows,
            key_dtype,
            stored_budget,
            then_dim,
        )
        from brushfire.engine.shared import kernel_layout

        self.entry, self.layout, self.shards, self.workload = entry, layout, shards, workload
        self.chosen = choices(layout, sum(s["n_rows"] for s in shards), workload, stored_budget()) \
            if layout.row_dims else []
        self.dims = dims = [d for d, got, _ in self.chosen if got]
        _, L = kernel_layout(layout)
        slots = hist_slots(L)
        # what building a copy takes besides the shard's per-row arrays (`shard_copies`)
        self.recipe = {"rows_kept": keeps_rows(layout), "L": L, "slots": slots,
                       "dtype": key_dtype(layout), "then": {d: then_dim(layout, d, workload) for d in dims}}
        ohash = order_hash(layout, workload)
        lhash = layout_hash(L, dims, self.recipe["rows_kept"], slots, K.CHUNK)
        self.tasks: list[tuple[dict, int, str]] = []  # (shard, dim, "build" | "hist" | "renumber")
        self.older: dict[str, dict] = {}  # shard -> the copies record `before` left, to renumber
        self.before = before
        self.by_key_job: set[str] = set()  # shards whose copies the key job built
        for s in shards:
            key = copy_key(s, ohash) if dims else ""
            hkey = hist_key(key, lhash)
            old = s.get("copies") or {}
            files = st.copy_files(s)
            present = [d for d in dims if str(d) in old.get("dims", {})
                       and all(_present(entry, s, n) for n in files[d][:-1])]
            have = present if old.get("key") == key else []
            s["copies"] = {"key": key, "hist": hkey, "chunk": K.CHUNK,
                           "dims": {str(d): old["dims"][str(d)] for d in have}}
            recount = [d for d in have if old.get("hist", old.get("key")) != hkey
                       or not _present(entry, s, files[d][-1])]
            renumber = present if not have and _renumbered(old, s["name"], before) else []
            renumber = [d for d in renumber if _order_kept(before.maps, d, old["dims"][str(d)])]
            if renumber:
                self.older[s["name"]] = old
            self.tasks += [(s, d, "hist") for d in recount] + [(s, d, "renumber") for d in renumber]
            self.tasks += [(s, d, "build") for d in dims if d not in have and d not in renumber]

    def names(self, s: dict, d: int) -> dict[str, str]:
        """The files of dim d's copy of shard s (engine/copies.py Copy.PARTS -> name)."""
        from brushfire.engine.copies import Copy

        return dict(zip(Copy.PARTS, st.copy_names(s["copies"], d), strict=True))

    def for_key_job(self, name: str) -> dict | None:
        """What the key job's task keying shard `name` builds of its copies (`shard_copies`),
        None: none (then `run` builds them)."""
        s = next(s for s in self.shards if s["name"] == name)
        dims = [d for t, d, how in self.tasks if t is s and how == "build"]
        if not dims:
            return None
        self.by_key_job.add(name)
        return {**self.recipe, "dims": {d: self.names(s, d) for d in dims}}

    def key_job_built(self, s: dict, got: dict) -> None:
        """Record what the key job's task returned of shard s's copies (`shard_copies`)."""
        for d, (files, record) in got.items():
            s["files"].update(files)
            s["copies"]["dims"][str(d)] = record

    def run(self, progress: Callable[[str, float | None], None], threads: int | None = None
            ) -> tuple[dict, list[str]]:
        """Build the copies the key job did not (keys read back from the shards), recount
        the chunk histograms and renumber the keys the plan says; returns the manifest's
        `copies` ({"dims": [...], "format": lineage/store.py COPY_FORMAT, "why": {dim: what
        it got and why}}) and notes on what was built."""
        from brushfire.engine.copies import Copy, then_text

        layout, entry, before, L, slots = self.layout, self.entry, self.before, \
            self.recipe["L"], self.recipe["slots"]
        tasks = [t for t in self.tasks if not (t[2] == "build" and t[0]["name"] in self.by_key_job)]

        def build(s: dict, d: int, how: str) -> tuple[dict, int, dict, dict]:
            sd = entry / st.SHARDS / s["name"]
            names = self.names(s, d)
            if how == "hist":  # the keys as stored, their histograms counted again
                hist = Copy.histograms(read_npy(sd / names["keys"]), L, slots)
                return s, d, {names["hist"]: write_npy(sd / names["hist"], hist)}, \
                    s["copies"]["dims"][str(d)]
            if how == "renumber":
                old = self.older[s["name"]]
                was = dict(zip(Copy.PARTS, st.copy_names(old, d), strict=True))
                copy = Copy.renumbered(read_npy(sd / was["keys"]), read_npy(sd / was["rows"]),
                                       read_npy(sd / was["starts"]), before.maps, d, L, slots,
                                       self.recipe["dtype"])
                copy.by_raw = old["dims"][str(d)]["by_raw"]
                copy.then = old["dims"][str(d)].get("then", -1)
                return s, d, {names[p]: write_npy(sd / names[p], getattr(copy, p)) for p in Copy.PARTS}, \
                    {"by_raw": copy.by_raw, "then": copy.then}
            dim = layout.dims[d]
            stored = lattice.RawArrays(*(read_npy(sd / f"{a}-{s['rows']}.npy") for a in lattice.RawArrays._fields)) \
                if self.recipe["rows_kept"] and dim.kind == "fine" and dim.raw >= 0 else None
            got = shard_copies(sd, read_npy(sd / f"keys-{s['rows']}.npy"), stored, layout,
                               {**self.recipe, "dims": {d: names}})
            files, record = got[d]
            return s, d, files, record

        if tasks:
            progress("copies: clustered key copies built by the driver", 0.0)
            with ThreadPoolExecutor(threads or os.cpu_count() or 1) as pool:
                futures = [pool.submit(build, s, d, how) for s, d, how in tasks]
                for i, f in enumerate(as_completed(futures)):
                    s, d, files, record = f.result()
                    s["files"].update(files)
                    s["copies"]["dims"][str(d)] = record
                    progress("copies: clustered key copies built by the driver", (i + 1) / len(tasks))
        notes = []
        if self.dims:
            names = ", ".join(layout.dims[d].name for d in self.dims)
            built = {s["name"] for s, _, how in self.tasks if how == "build"}
            counts = {how: len({s["name"] for s, _, h in self.tasks if h == how} - built)
                      for how in ("renumber", "hist")}
            how = [f"{counts['renumber']:,} with their keys renumbered (dense or dropdown dims gained "
                   "values)"] if counts["renumber"] else []
            how += [f"{counts['hist']:,} with their chunk histograms counted again (the views changed)"] \
                if counts["hist"] else []
            by_executors = len(built & self.by_key_job)
            where = f" ({by_executors:,} by the key job's tasks)" if by_executors else ""
            notes.append(f"clustered key copies of {names}: built for {len(built):,} of "
                         f"{len(self.shards):,} shards{where}, kept for the others"
                         + (f" ({'; '.join(how)})" if how else ""))
        why = {str(d): why + (then_text(layout, d, self.workload) if got else "")
               for d, got, why in self.chosen}
        return {"dims": self.dims, "format": st.COPY_FORMAT, "why": why}, notes


def build_copies(entry: Path, layout: Layout, shards: list[dict],
                 progress: Callable[[str, float | None], None],
                 threads: int | None = None, workload: Workload | None = None,
                 before: Before | None = None) -> tuple[dict, list[str]]:
    """Give every shard record of `shards` (in place: its `copies` and `files`) the copies
    of the dims `choices` gives one (as the spec's `workload` orders and budgets them),
    reusing those whose key holds, recounting just their chunk histograms where only the
    views changed, and renumbering the keys of those `before` built where only dense or
    dropdown dims gained values (`key_maps`: the order is the same); returns the
    manifest's `copies` and notes on what was built (`CopyBuild.run`)."""
    return CopyBuild(entry, layout, shards, workload, before).run(progress, threads)


def shard_copies(directory: Path, keys: np.ndarray, stored: lattice.RawArrays | None, layout: Layout,
                 recipe: dict) -> dict[int, tuple[dict, dict]]:
    """Build and write the copies `recipe["dims"]` ({dim: its files}) of the shard in
    `directory` from its per-row `keys` and raw values `stored` (as the key job writes
    them; None: no fine dim's copy keeps rows in raw order); {dim: (its files' records,
    the copy's record)}."""
    from brushfire.engine.copies import Copy

    out = {}
    for d, names in recipe["dims"].items():
        dim, raw = layout.dims[d], None
        if recipe["rows_kept"] and dim.kind == "fine" and dim.raw >= 0:
            raw = lattice.values(stored, dim.raw, keys[d], dim.nkeys, np.asarray(dim.edges, np.float64))
        copy = Copy.build(keys, raw, d, dim.nkeys, recipe["rows_kept"], recipe["L"], recipe["slots"],
                          recipe["dtype"], recipe["then"][d])
        out[d] = ({names[p]: write_npy(directory / names[p], getattr(copy, p)) for p in Copy.PARTS},
                  {"by_raw": copy.by_raw, "then": copy.then})
    return out


def _renumbered(old: dict, name: str, before: Before | None) -> bool:
    """Were a shard's copies of record `old` built by the last capture from its per-row
    arrays then, which this capture keyed again only by `before.maps`?"""
    if before is None or name not in before.rows or not old.get("key"):
        return False
    rows, rows_key = before.rows[name]
    return rows is not None and old["key"] == copy_key({"rows": rows, "rows_key": rows_key},
                                                        before.order_hash)


def _order_kept(maps: list[np.ndarray], d: int, record: dict) -> bool:
    """Do renumbered keys keep a copy's order of rows (Copy.renumbered)? When they keep the
    order of d's keys and of the keys of the dim each key's rows are ordered by. Pure."""
    dims = [d] + ([record["then"]] if record.get("then", -1) >= 0 else [])
    return all(np.all(np.diff(maps[e]) > 0) for e in dims)


def _present(entry: Path, s: dict, name: str) -> bool:
    try:
        return (entry / st.SHARDS / s["name"] / name).stat().st_size == s["files"][name]["size"]
    except (OSError, KeyError):
        return False
