"""Capture: a CapturePlan run over the source into the dashboard's cache entry, reading
only what changed since the entry's last capture.

`run_capture` is the whole pipeline, in order (a `Runner` does the per-row work: Spark's
executors, capture/spark.py, or this process, capture/local.py):
1. what to reuse (`plan_reuse`, pure): the entry's shards of input files that did not
   change, and of them the encoded fields the spec still reads;
2. the scan (executors, the one pass over the source): new and changed files become
   shards of encoded fields (capture/scan.py); fields the spec reads for the first time
   are scanned alone, over the files captured before;
3. the statistics and the layout (driver, pure): the shards' dictionaries merged
   (capture/stats.py), `maxbins` bins chosen, then how each need of the plan is stored
   (capture/layout.py);
4. the key job (executors): each shard's per-row lineage and partial results, from its
   encoded fields, for whatever the layout changed (capture/keys.py; capture/parts.py
   says what each part depends on);
5. the clustered key copies (driver): each new shard's rows in key order per filter dim,
   stored with the shards (capture/copies.py), so that a server maps them;
6. the manifest (driver): the partial results summed into base results and cubes, the
   manifest replaced atomically, and what no manifest uses removed.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import numpy as np

from brushfire import versions
from brushfire.capture.copies import Before, CopyBuild, key_maps, order_hash
from brushfire.capture.joins import join_columns, key_column
from brushfire.capture.layout import make_layout, resolve_plan, stats_spec
from brushfire.capture.parts import PartHashes, part_hashes, reusable_rows
from brushfire.capture.scan import ScanSpec
from brushfire.capture.stats import merge_stats
from brushfire.errors import CaptureError, SpecError
from brushfire.lineage import store as st
from brushfire.lineage.arrays import CaptureInfo
from brushfire.lineage.files import part_name, read_arrow, read_npy
from brushfire.lineage.layout import CaptureConfig, Layout
from brushfire.plan import CapturePlan, spec_columns
from brushfire.views import source_fields

Progress = Callable[[str, float | None], None]


class Runner(Protocol):
    """Where capture's per-row work runs: the source's files, the scan and the key job."""

    master: str

    def files(self) -> list[dict]:
        """The source's input files now: {"uri", "size", "mtime_ns"} each."""

    def definitions(self, columns: list[str]) -> dict[str, str]:
        """A hash of what each column is (a source column's type, a derived column's
        expression and what it reads, with their types): an encoded field is reused only
        while its definition holds."""

    def rows_identity(self) -> str:
        """A hash of what decides a file's rows and shards (format, reader options,
        static filters, the input split size)."""

    def lacking(self, files: list[dict]) -> dict[str, list[str]]:
        """{file uri: the columns the spec reads that the source has and that file does
        not} (Spark reads them as null on its rows), of those `files` whose columns are
        known without reading them (footers); the others are not in it."""

    def mistyped(self, files: list[dict]) -> dict[str, list[tuple]]:
        """{file uri: [(column, its type there, the source's type, its type in the first
        file)]} of the columns the spec reads that Spark cannot read as the source's type
        with their values (its scan would fail, or read other values), of those `files`
        with rows whose types are known without reading them (Parquet footers:
        source.mistyped_columns)."""

    def join_files(self) -> list[dict]:
        """The files of the joins' dimension tables now (as `files`): a capture is current
        while they are unchanged (dashboard.is_current)."""

    def scan(self, files: list[dict], spec: ScanSpec, shards_dir: Path, run: str) -> list[dict]:
        """Scan `files` into shards (capture/scan.py); summaries with `file` as a uri."""

    def key(self, tasks: list[dict], layout: Layout, dash, shards_dir: Path) -> list[dict]:
        """Run capture/keys.py's `key_shard` for each task."""


def check_before_spark(plan: CapturePlan) -> None:
    """What a capture checks before it starts Spark (SpecError at the file, line and key):
    the spec's columns against the source's where they are known without Spark (Parquet,
    ORC and Delta footers, a local CSV file's first line, the joins' tables so known), and
    the workload's trace. `brushfire serve` runs it on every spec before serving any."""
    from brushfire.source import (
        check_csv_headers,
        check_lacking,
        csv_source_names,
        joined_types,
        read_schema,
    )
    from brushfire.spec.checks import check_columns

    dash = plan.dashboard
    schema = read_schema(dash.source)
    if schema is not None:  # Parquet / ORC: check columns before starting Spark at all
        try:
            check_columns(dash, schema)
        except SpecError:  # (a file without a column the others have, first: named)
            have = {c.lower() for c in schema}
            check_lacking(dash.source, sorted(c for c in spec_columns(dash) or () if c.lower() not in have))
            raise
    elif dash.source.joins:  # (CSV, JSON: the joins whose tables are known, before Spark too)
        check_columns(dash, None, joined=joined_types(dash.source))
    check_csv_headers(dash.source)  # (a CSV file appended with other columns or fields: named)
    if schema is None and (names := csv_source_names(dash.source)) is not None:
        check_columns(dash, names)  # a local CSV's names from its first line, as validate's
    _ = plan.workload  # its trace read now: a trace that cannot be read is a spec error before Spark


def capture_dashboard(plan: CapturePlan, spark=None, master: str | None = None,
                      progress: Progress | None = None, baseline: bool = False,
                      cache_dir: str | Path | None = None,
                      config: CaptureConfig | None = None, fresh: bool = False) -> st.LineageStore:
    """Capture the lineage `plan` asks for on Spark into the dashboard's entry of
    `cache_dir` (a temporary directory when None or not writable), reusing what an
    earlier capture of the entry left valid, and return the loaded store. With
    `baseline`, also time, on the same session, the views' plain Spark queries (one job
    each) and the one job a Spark user would write for all of them (GROUPING SETS).
    `fresh`: reuse nothing of earlier captures."""
    from brushfire.capture import spark as sp

    progress = progress or (lambda *_: None)
    config = config or CaptureConfig()
    dash = plan.dashboard
    check_before_spark(plan)
    progress("starting Spark", None)
    spark = spark or sp.get_spark(master)
    with sp.executors_watched(spark):  # (a cluster that gives no executor: said, not waited on)
        t0 = time.perf_counter()
        runner = sp.SparkRunner(spark, dash, config, progress)
        planned = time.perf_counter() - t0
        store = run_capture(plan, runner, cache_dir, config, progress, fresh)
        store.info.seconds["source plan (Spark)"] = planned  # (before the capture's clock)
        if baseline:  # (over the spec as capture resolved it: `maxbins` bins chosen)
            from brushfire.spec import parse_dashboard

            resolved = parse_dashboard(store.manifest["resolved_spec"])
            progress("running the base queries alone, for comparison", None)
            df = runner.source()
            seconds, results = sp.run_base_queries(df, resolved)
            store.info.seconds["base queries"] = seconds
            store.base_query_results = results
            progress("running every view's aggregate in one job, for comparison", None)
            store.info.seconds["one aggregation job"] = sp.run_fused_query(df, resolved)
    return store


def scan_spec(plan: CapturePlan, config: CaptureConfig) -> ScanSpec:
    """What the scan encodes: every field a view or parameter reads (their order by value
    for fields compared by value), and the detail columns as they are."""
    dash = plan.dashboard
    fields = [f for v in dash.views for f in source_fields(v)]
    fields += [p.field for p in dash.interactions.parameters]
    ordered = list(plan.value_fields) + [f for f in plan.order_fields if f not in plan.value_fields]
    counted = stats_spec(plan, config).counts  # their value counts must be exact
    return ScanSpec(fields=tuple(dict.fromkeys(fields)), ordered=tuple(dict.fromkeys(ordered)),
                    snapshot=tuple(plan.detail_columns), block_rows=config.block_rows,
                    shard_rows=config.shard_rows, sample_keys=config.max_keys,
                    exact=tuple(counted), nulls=tuple(join_columns(dash)))


# --- 1. what to reuse ---------------------------------------------------------------------


@dataclass
class Reuse:
    """What a capture takes from the entry's last one (`plan_reuse`)."""

    keep: list[dict]  # shards of unchanged files (their records, as the manifest has them)
    scan: list[dict]  # files to scan whole (new or changed)
    # (fields, snapshot, nulls) -> files whose shards scan those columns alone
    columns: dict[tuple, list[dict]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def plan_reuse(old: dict | None, files: list[dict], rows_id: str, spec: ScanSpec,
               definitions: dict[str, str]) -> Reuse:
    """Which shards of the entry's last capture `old` stay (their input file has the same
    size and modification time, and its rows are decided the same way), which files are
    scanned, and which fields are scanned alone over files captured before. Pure."""
    if old is None:
        return Reuse([], list(files), notes=["no earlier capture in this entry: scanning every file"])
    if old["source"]["rows_identity"] != rows_id:
        return Reuse([], list(files), notes=[
            "the source's format, reader options, static filters (or the types of the columns "
            "they read, or a dimension table they read through a join) or input split size "
            "changed: scanning every file"])
    sizes = {"block_rows": spec.block_rows, "shard_rows": spec.shard_rows, "max_keys": spec.sample_keys}
    if any(old.get("config", {}).get(k) != v for k, v in sizes.items()):
        # (a shard's rows, its fields' orders by value per block and how they are encoded
        # depend on them: capture/scan.py)
        return Reuse([], list(files), notes=[
            "the capture's block, shard or key sizes changed: scanning every file"])
    before = {f["uri"]: f for f in old["source"]["files"]}
    shards = {s["name"]: s for s in old["shards"]}
    out = Reuse([], [])
    changed = added = unknown = 0
    for f in files:
        o = before.get(f["uri"])
        if o is None:
            added += 1
            out.scan.append(f)
            continue
        if f["size"] < 0:  # (not a local file: nothing tells a change, never reused)
            unknown += 1
            out.scan.append(f)
            continue
        if (o["size"], o["mtime_ns"]) != (f["size"], f["mtime_ns"]):
            changed += 1
            out.scan.append(f)
            continue
        kept = [shards[n] for n in o["shards"]]
        out.keep += kept
        fields = tuple(c for c in spec.fields if any(
            s["fields"].get(c, {}).get("def") != definitions[c] or _uncounted(s, c, spec)
            for s in kept if s["n_rows"]))
        snap = tuple(c for c in spec.snapshot if any(
            s.get("snapshot", {}).get(c) != definitions[c] for s in kept if s["n_rows"]))
        nulls = tuple(c for c in spec.nulls if any(
            s.get("nulls", {}).get(c, [0, None])[1] != definitions[c] for s in kept if s["n_rows"]))
        if fields or snap or nulls:
            out.columns.setdefault((fields, snap, nulls), []).append(f)
    removed = len(set(before) - {f["uri"] for f in files})
    reused = len(files) - added - changed - unknown
    rows = sum(s["n_rows"] for s in out.keep)
    out.notes.append(f"reused {reused:,} of {_files(len(files), 'input ')} ({rows:,} rows in "
                     f"{len(out.keep):,} shards) captured before")
    if added or changed:
        noun = "file" if added + changed == 1 else "files"
        out.notes.append(f"scanning {added:,} new and {changed:,} changed {noun}")
    if unknown:
        out.notes.append(f"scanning {_files(unknown)} again whose size and modification time are not "
                         "known here (not local files): their changes cannot be told")
    if removed:
        out.notes.append(f"{_files(removed)} gone from the source: their rows dropped")
    for (fields, snap, nulls), fs in out.columns.items():
        what = ", ".join(dict.fromkeys([*fields, *(f"{c} (details)" for c in snap),
                                        *(f"{c} (rows without a match)" for c in nulls)]))
        out.notes.append(f"scanning {what} alone over {_files(len(fs))} captured before "
                         "(new, redefined or counted now)")
    return out


def _files(n: int, kind: str = "") -> str:
    return f"{n:,} {kind}file" if n == 1 else f"{n:,} {kind}files"


def _uncounted(shard: dict, field: str, spec: ScanSpec) -> bool:
    """Is `field` one whose value counts the capture needs now (`spec.exact`: a
    categorical view or a dropdown over it) that `shard` keeps as its values, without a
    dictionary (mostly distinct numbers nothing counted: capture/scan.py)?"""
    return field in spec.exact and field in shard["fields"] and shard["fields"][field].get("entries", 0) is None


# --- the pipeline ---------------------------------------------------------------------------


def run_capture(plan: CapturePlan, runner: Runner, cache_dir: str | Path | None,
                config: CaptureConfig, progress: Progress | None = None,
                fresh: bool = False) -> st.LineageStore:
    """Capture `plan` with `runner` into the dashboard's entry of `cache_dir` (module
    docstring) and return the loaded store; `store.info.changes` says what was reused,
    what was rebuilt and why. `fresh`: reuse nothing (the entry failed its checks)."""
    progress = progress or (lambda *_: None)
    dash = plan.dashboard
    t_all = time.perf_counter()
    cache = _writable(cache_dir)
    entry = st.entry_dir(cache, dash)
    if entry.is_symlink() or (entry.exists() and not entry.is_dir()):
        entry.unlink()  # not an entry this cache made: replaced by one
    info = CaptureInfo(n_rows=0, spark_master=runner.master)
    with st.locked(entry):
        old = None if fresh else _sound(st.read_manifest(entry), entry)
        spec = scan_spec(plan, config)
        files = runner.files()
        definitions = runner.definitions(list(dict.fromkeys(spec.fields + spec.snapshot + spec.nulls)))
        rows_id = runner.rows_identity()
        check_types(runner.mistyped(files), files, kept=old is not None)
        reuse = plan_reuse(old, files, rows_id, spec, definitions)
        info.caveats += lacking_notes(runner.lacking(files), reuse, files)
        info.seconds["files and definitions"] = time.perf_counter() - t_all
        info.changes += reuse.notes
        shards_dir = entry / st.SHARDS
        shards_dir.mkdir(parents=True, exist_ok=True)
        run = uuid.uuid4().hex[:8]

        t0 = time.perf_counter()
        shards = [dict(s) for s in reuse.keep]
        if reuse.scan:
            progress("scan: the source's rows encoded by the executors", 0.0)
            new = runner.scan(reuse.scan, spec, shards_dir, run)
            info.seconds["scan, executors' cpu"] = sum(s.get("cpu", 0.0) for s in new)
            shards += [_record(s, spec, definitions) for s in _sequenced(new)]
        for i, ((fields, snap, nulls), fs) in enumerate(reuse.columns.items()):
            progress(f"scan: {', '.join(dict.fromkeys(fields + snap + nulls))} over files "
                     "captured before", 0.0)
            part = ScanSpec(fields, tuple(c for c in fields if c in spec.ordered), snap,
                            spec.block_rows, spec.shard_rows, spec.sample_keys, spec.exact, nulls)
            got = runner.scan(fs, part, shards_dir, f"{run}c{i}")
            _attach(shards, _sequenced(got), part, definitions, shards_dir)
        # rid order: by input file and position in it (whichever capture scanned them). A
        # partition without rows (an input split holding no Parquet row group's middle:
        # row groups wider than a split, 5 in 6 splits of a wide table) gives a shard of no
        # file: one is kept only when no shard has a file (a source without rows); each
        # costs a key job task, its partial results (cubes as large as a full shard's) and
        # a pass's per-shard work in the engine
        filed = [s for s in shards if s["file"] is not None]
        shards = sorted(filed or [s for s in shards if s["name"].startswith(run)][:1],
                        key=lambda s: (s["file"] is None, s["file"] or "", s["split"], s["seq"]))
        info.seconds["scan"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        stats = merge_stats(stats_spec(plan, config), shards, _reader(shards_dir))
        binned = resolve_plan(plan, stats)  # the spec's bins, maxbins chosen
        previous = _previous_layout(old, entry)
        layout = make_layout(binned, stats, config, previous)
        hashes = part_hashes(layout, binned.dashboard)
        reuse_rows = _reusable_rows(old, previous, layout, hashes)
        maps = key_maps(previous, layout, reuse_rows) if previous is not None else None
        before = Before(order_hash(previous, plan.workload), maps, {s["name"]: (s["rows"], s["rows_key"]) for s in shards}) \
            if maps is not None else None
        info.seconds["statistics and layout"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        renamed = _renamed(shards, hashes)
        tasks = _key_tasks(shards, hashes, run, reuse_rows)
        rebuilt_rows = sum(1 for t in tasks if t["rows"])
        for t in tasks:  # (the per-row arrays this key job writes, which copies are built from)
            if t["rows"]:
                s = next(s for s in shards if s["name"] == t["name"])
                s["rows"], s["rows_key"] = run, hashes.rows
        # the copies of the shards the key job keys are built by its tasks, from the keys
        # in their memory; `copies.run` below builds the rest on the driver
        copy_build = CopyBuild(entry, layout, shards, plan.workload, before)
        for t in tasks:
            t["copies"] = copy_build.for_key_job(t["name"]) if t["rows"] else None
        if tasks:
            progress("key job: lineage built by the executors", 0.0)
            results = runner.key(tasks, layout, binned.dashboard, shards_dir)
            info.seconds["key job, executors' cpu"] = sum(r.get("cpu", 0.0) for r in results)
            for t, r in zip(tasks, results, strict=True):
                s = next(s for s in shards if s["name"] == t["name"])
                s["files"].update(r["files"])
                copy_build.key_job_built(s, r.get("copies") or {})
                for p in r["partials"]:
                    s["partials"][p] = [f"partials-{run}.npz", hashes.partials[p]]
        for s in shards:  # parts of views and filters the spec no longer has
            s["partials"] = {p: v for p, v in s["partials"].items() if p in hashes.partials}
        info.changes += _key_notes(shards, tasks, rebuilt_rows, hashes, renamed)
        info.seconds["key job"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        copies, notes = copy_build.run(progress)
        info.changes += notes
        info.seconds["copies"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        tag = run
        packed: dict[str, np.ndarray] = {}
        layout_json = layout.to_json(packed)
        glob = st.assemble(entry, layout, shards, tag, progress, packed)
        for s in shards:  # the files this capture uses, and no other
            s["fields"] = {f: v for f, v in s["fields"].items() if f in spec.fields}
            s["snapshot"] = {c: v for c, v in s.get("snapshot", {}).items() if c in spec.snapshot}
            s["nulls"] = {c: v for c, v in s.get("nulls", {}).items() if c in spec.nulls}
            used = set(_field_files(s)) | set(st.shard_row_files(s)) | \
                set(st.snapshot_files(s, layout.detail_columns)) | {v[0] for v in s["partials"].values()} | \
                {n for names in st.copy_files(s).values() for n in names}
            s["files"] = {k: v for k, v in s["files"].items() if k in used}
        info.n_rows = sum(s["n_rows"] for s in shards)
        info.shards = len(shards)
        info.unmatched = unmatched_rows(dash, shards)
        info.caveats += unmatched_notes(dash, info.unmatched, info.n_rows)
        joined = runner.join_files() if dash.source.joins else []
        fingerprint = st.files_fingerprint(files)
        info.source_fingerprint = fingerprint
        info.seconds["manifest"] = time.perf_counter() - t0
        info.seconds["capture"] = time.perf_counter() - t_all
        meta = {
            "format_version": st.FORMAT_VERSION,
            "dashboard": dash.name,
            "cache_key": st.capture_key(dash, fingerprint, config),
            "spec_sha256": st.spec_hash(dash),
            "spec_file": st.spec_file(dash),  # (st.entry_dir: whose entry this is)
            "resolved_spec": binned.dashboard.model_dump(mode="json"),
            "config": asdict(config),
            "brushfire_version": st.brushfire_version(),
            "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "n_rows": info.n_rows,
            "tag": tag,
            "layout": layout_json,
            "layout_arrays": sorted(layout.arrays | packed),
            "cubes": glob["cubes"],
            "copies": copies,
            "files": glob["files"],
            "info": asdict(info),
            "source": {"rows_identity": rows_id,
                       "files": [{**f, "shards": [s["name"] for s in shards if s["file"] == f["uri"]]}
                                 for f in files],
                       "join_files": joined},
            "shards": shards,
        }
        st.write_manifest(entry, meta)
        st.collect_garbage(entry, meta)
    st.prune_entries(cache, dash.name, entry)
    versions.record(cache, meta, entry)
    store = st.load_store(entry, dash, verify=False)
    store.info.nbytes = store.nbytes()
    # (the manifest records the capture up to its own writing; the caller sees it all)
    store.info.seconds["manifest written, loaded"] = time.perf_counter() - t_all - info.seconds["capture"]
    store.info.seconds["capture"] = time.perf_counter() - t_all
    return store


def check_types(mistyped: dict[str, list[tuple]], files: list[dict], kept: bool) -> None:
    """CaptureError naming the first of `files` with a column Spark cannot read as the
    source's type (`Runner.mistyped`), its type and the source's, before any job: Spark's
    scan would fail on it after reading the others, or read other values (300 as a
    tinyint: 44). `kept`: an earlier capture stays the entry's, and is said to."""
    if not mistyped:
        return
    uri, got = next((f["uri"], mistyped[f["uri"]]) for f in files if f["uri"] in mistyped)
    path = next(f["path"] for f in files if f["uri"] == uri)
    what = ", ".join(f"{c!r} has no type (every value null, written without one)" if t == "void"
                     else f"{c!r} is {t}" for c, t, _, _ in got)
    want = ", ".join(f"{c} as {w}" for c, _, w, _ in got)
    more = f" (and {len(mistyped) - 1:,} more files)" if len(mistyped) > 1 else ""
    last = "; the last capture is kept" if kept else ""
    # (Spark types a folder's columns by its first file's footer)
    first = Path(files[0]["path"]).name
    untyped = [c for c, _, _, t in got if t == "void"]
    it = "it" if len(got) == 1 else "them"
    if untyped:  # (the first file's column of no type, which Spark reads as int, decides)
        why = f"its first file, {first}, has {', '.join(untyped)} of no type, every value null, which Spark reads as int"
        hint = (f"write {first} with {', '.join(untyped)} typed as the other files have {it} (pyarrow: "
                "table.cast(schema); pandas: astype), or every file of the folder with one type")
    else:  # (a first file read so itself is not the one Spark types the folder by: not named)
        named = files[0]["uri"] not in mistyped
        why = f"the types in its first file{f', {first}' if named else ''}"
        hint = (f"write the file's {want}, as {first if named else 'the other files'} "
                f"{'has' if named else 'have'} {it} (pyarrow: table.cast(schema); pandas: astype), or every "
                "file of the folder with one type")
    msg = (f"{path}: column {what}; Spark reads the folder's {want} ({why}) and cannot read this file's "
           f"values so{more}{last}; hint: {hint} and capture afresh (brushfire capture --recapture)")
    raise CaptureError(msg)


def lacking_notes(lacking: dict[str, list[str]], reuse: Reuse, files: list[dict]) -> list[str]:
    """What `brushfire capture` says of the source's files without columns others have
    (`Runner.lacking`): their rows read those columns as null, as Spark SQL reads the
    folder. CaptureError when such a file is new or changed while files captured before
    are kept (appended without a column, or rewritten without one): named, before any
    job, so that the entry's last capture stays the one served."""
    if reuse.keep:
        new = {f["uri"]: f for f in reuse.scan}
        bad = [(new[u]["path"], cs) for u, cs in lacking.items() if u in new]
        if bad:
            path, cs = bad[0]
            more = f" (and {len(bad) - 1:,} more files)" if len(bad) > 1 else ""
            msg = (f"{path}: has no column {', '.join(map(repr, cs))}, which the files captured before "
                   f"have{more}: its rows would read {'it' if len(cs) == 1 else 'them'} as null; the last "
                   "capture is kept; hint: write the file with every column of the others (null where "
                   "unknown), or capture afresh (brushfire capture --recapture) to read its rows so")
            raise CaptureError(msg)
    paths = {f["uri"]: f["path"] for f in files}
    return [f"{paths.get(u, u)}: no column {', '.join(map(repr, cs))}: its rows read "
            f"{'it' if len(cs) == 1 else 'them'} as null (as Spark SQL reads the folder: by its "
            "first file's columns)" for u, cs in sorted(lacking.items())]


def unmatched_rows(dash, shards: list[dict]) -> dict[str, int]:
    """Per join, the rows without a match (its key column is null: capture/joins.py)."""
    return {j.name: sum(s.get("nulls", {}).get(key_column(j), [0])[0] for s in shards)
            for j in dash.source.joins}


def unmatched_notes(dash, unmatched: dict[str, int], n_rows: int) -> list[str]:
    """What `brushfire capture` says of the rows without a match, join by join."""
    out = []
    for j in dash.source.joins:
        n = unmatched.get(j.name, 0)
        chain = dash.source.join_chain(key_column(j))
        before = unmatched.get(chain[-2].name, 0) if len(chain) > 1 else 0
        if n:
            through = f" (of them {before:,} without a match on {chain[-2].name} before it)" \
                if before else ""
            out.append(f"join {j.name}: {n:,} of {n_rows:,} rows have no match{through}: "
                       f"their {j.name}.* columns are null")
    return out


def _previous_layout(old: dict | None, entry: Path) -> Layout | None:
    """The layout of the entry's last capture (its decisions are kept where they hold)."""
    if old is None:
        return None
    try:
        return st.read_layout(entry, old)
    except (KeyError, TypeError, ValueError, OSError):
        return None


def _sound(old: dict | None, entry: Path) -> dict | None:
    """The entry's last capture without the input files whose shards lost a file or
    changed its size (those files are scanned again); None when there is none."""
    if old is None:
        return None
    shards = {s["name"]: s for s in old["shards"]}

    def whole(f: dict) -> bool:
        for name in f["shards"]:
            for fname, want in shards[name]["files"].items():
                if fname.startswith("copy-"):  # (a copy is rebuilt, not its file's rows)
                    continue
                try:
                    if (entry / st.SHARDS / name / fname).stat().st_size != want["size"]:
                        return False
                except OSError:
                    return False
        return True
    return {**old, "source": {**old["source"], "files": [f for f in old["source"]["files"] if whole(f)]}}


def _sequenced(summaries: list[dict]) -> list[dict]:
    """Number each shard within its input split (`seq`), in the order the task wrote them."""
    out = sorted(summaries, key=lambda s: s["name"])
    seen: dict[tuple, int] = {}
    for s in out:
        k = (s["file"], s["start"])
        s["seq"] = seen.get(k, 0)
        seen[k] = s["seq"] + 1
    return out


def _record(s: dict, spec: ScanSpec, definitions: dict[str, str]) -> dict:
    """A shard's manifest record from its scan summary."""
    return {"name": s["name"], "n_rows": s["n_rows"], "file": s["file"], "split": s["start"],
            "seq": s["seq"], "fields": {f: {**info, "def": definitions[f]} for f, info in s["fields"].items()},
            "snapshot": {c: definitions[c] for c in spec.snapshot},
            "nulls": {c: [n, definitions[c]] for c, n in s.get("nulls", {}).items()},
            "files": dict(s["files"]),
            "rows": None, "rows_key": None, "partials": {}}


def _attach(shards: list[dict], got: list[dict], spec: ScanSpec, definitions: dict[str, str],
            shards_dir: Path) -> None:
    """Join the parts of a scan of some fields alone with the shards of the same rows. The
    shard moves to the scan's new directory, its other files linked there: its files in
    place are the entry's last capture's (a field scanned again has the same file names),
    which stays sound if this capture fails before its manifest is written."""
    by_split = {(s["file"], s["split"], s["seq"]): s for s in shards}
    for g in got:
        if g["file"] is None:
            continue
        s = by_split.get((g["file"], g["start"], g["seq"]))
        if s is None or s["n_rows"] != g["n_rows"]:
            msg = (f"the rows of {g['file']} differ from its earlier capture although its size "
                   "and modification time did not change; hint: capture again with --recapture")
            raise CaptureError(msg)
        new, old = shards_dir / g["name"], shards_dir / s["name"]
        for name in s["files"]:
            if name not in g["files"] and (old / name).exists():
                try:
                    os.link(old / name, new / name)
                except OSError:  # (no hard links here: a copy)
                    shutil.copyfile(old / name, new / name)
        s["name"] = g["name"]
        s["files"].update(g["files"])
        for fld, info in g["fields"].items():
            if fld in s["fields"]:  # redefined: the same keys and partial results' definitions
                # may now stand for other rows (pmod(k, 7) -> pmod(k + 1, 7)): none reused
                s["rows"], s["rows_key"], s["partials"] = None, None, {}
            s["fields"][fld] = {**info, "def": definitions[fld]}
        s.setdefault("snapshot", {}).update({c: definitions[c] for c in spec.snapshot})
        s.setdefault("nulls", {}).update({c: [n, definitions[c]] for c, n in g.get("nulls", {}).items()})


def _field_files(s: dict) -> list[str]:
    out = []
    for f, info in s["fields"].items():
        stem = part_name(f)
        out += [f"{stem}.dict.{'arrow' if info['kind'] == 'string' else 'npy'}",
                f"{stem}.codes.npy", f"{stem}.counts.npy", f"{stem}.order.npy",
                f"{stem}.values.npy", f"{stem}.valid.npy", f"{stem}.sample.npy",
                f"{stem}.weights.npy"]
    return out


def _reader(shards_dir: Path):
    """A shard's dictionary of a field and its rows per entry ("dict"), or its weighted
    sample ("sample"), as the scan wrote them (capture/stats.py)."""
    def read(s: dict, f: str, what: str) -> tuple:
        stem = shards_dir / s["name"] / part_name(f)
        if what == "sample":
            return read_npy(Path(f"{stem}.sample.npy")), read_npy(Path(f"{stem}.weights.npy"))
        counts = read_npy(Path(f"{stem}.counts.npy"))
        if s["fields"][f]["kind"] == "string":
            return read_arrow(Path(f"{stem}.dict.arrow")).column("v").combine_chunks(), counts
        return np.asarray(read_npy(Path(f"{stem}.dict.npy"))), counts
    return read


def _renamed(shards: list[dict], hashes: PartHashes) -> int:
    """Take each shard's parts whose hash holds under another name (a renamed view's,
    filter's or bars dim's: parts.py hashes no names) as the parts of their names now: a
    record [file, hash, name in the file]. Returns how many were taken so."""
    taken = 0
    for s in shards:
        by_hash = {(p.partition(".")[0], v[1]): v[2] if len(v) > 2 else p for p, v in s["partials"].items()}
        files = {v[1]: v[0] for v in s["partials"].values()}
        for p, h in hashes.partials.items():
            stored = by_hash.get((p.partition(".")[0], h))
            if s["partials"].get(p, [None, None])[1] != h and stored is not None:
                s["partials"][p] = [files[h], h, stored] if stored != p else [files[h], h]
                taken += 1
    return taken


def _key_tasks(shards: list[dict], hashes: PartHashes, run: str, reuse_rows: dict) -> list[dict]:
    tasks = []
    for s in shards:
        rows = s.get("rows_key") != hashes.rows
        wanted = [p for p, h in hashes.partials.items() if s["partials"].get(p, [None, None])[1] != h]
        if rows or wanted:
            previous = {"tag": s["rows"], "dims": reuse_rows} if rows and s.get("rows") else None
            tasks.append({"name": s["name"], "n_rows": s["n_rows"], "fields": s["fields"],
                          "tag": run, "rows": rows, "wanted": wanted, "previous": previous})
    return tasks


def _reusable_rows(old: dict | None, before: Layout | None, layout: Layout, hashes: PartHashes) -> dict:
    """Which dims' per-row arrays the shards captured before (under layout `before`, of
    manifest `old`) hold already (parts.py)."""
    if old is None or before is None:
        return {}
    try:
        from brushfire.spec import parse_dashboard

        old_hashes = part_hashes(before, parse_dashboard(old["resolved_spec"]))
    except Exception:  # (a manifest of another version's spec: nothing reused)  # noqa: BLE001
        return {}
    return reusable_rows(before, old_hashes.dims, layout, hashes.dims)


def _key_notes(shards: list[dict], tasks: list[dict], rebuilt_rows: int, hashes: PartHashes,
               renamed: int = 0) -> list[str]:
    out = [f"partial results: {renamed:,} reused under a new name (a view renamed, or defined "
           "as another was)"] if renamed else []
    if not tasks:
        return [*out, "lineage: every part reused (nothing the layout decides changed)"]
    total = len(shards) * len(hashes.partials)
    computed = sum(len(t["wanted"]) for t in tasks)
    kinds = sorted({p.split(".")[0] for t in tasks for p in t["wanted"]})
    return [f"per-row lineage built for {rebuilt_rows:,} of {len(shards):,} shards, reused for "
            f"the others",
            f"partial results: {computed:,} of {total:,} computed ({', '.join(kinds) or 'none'}), "
            "the others reused", *out]


def cache_problem(cache_dir: str | Path) -> str | None:
    """Why the cache directory cannot be written (it is created when missing), or None."""
    path = Path(cache_dir)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".probe-{uuid.uuid4().hex[:8]}"
        probe.mkdir()
        probe.rmdir()
    except OSError as e:
        return e.strerror or str(e)
    return None


def _writable(cache_dir: str | Path | None) -> Path:
    """The cache directory, created; a temporary one (with a warning) when it is None or
    cannot be written, so a broken cache never costs the dashboard."""
    if cache_dir is not None:
        if (why := cache_problem(cache_dir)) is None:
            return Path(cache_dir)
        print(f"brushfire: the lineage cache {cache_dir} cannot be written ({why}); "
              "capturing into a temporary directory instead", file=sys.stderr)
    path = Path(tempfile.mkdtemp(prefix="brushfire-cache-"))
    # no later process can find it: removed when this one exits (tests, notebooks without
    # a cache left one behind per capture)
    atexit.register(shutil.rmtree, path, True)
    return path


__all__ = ["Reuse", "Runner", "cache_problem", "capture_dashboard", "plan_reuse", "run_capture", "scan_spec"]
