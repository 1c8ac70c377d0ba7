"""Clustered key copies stored by the capture (capture/copies.py) and mapped on load
(lineage/store.py `load_copies`): a restart builds nothing, the mapped copies are those
the engine would build, a corrupted or missing copy file leaves its dim on the store's own
order (exact) and says so, and an incremental capture builds only the new shards' copies:
a view added recounts only the chunk histograms, values appended to a dense dim renumber
the keys of the copies built before (each checked against copies built from the keys)."""

from __future__ import annotations

import mmap
import os
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from brushfire import protocol
from brushfire.bench import workloads
from brushfire.capture import capture_dashboard
from brushfire.capture.local import capture_table, capture_tables
from brushfire.dashboard import Dashboard
from brushfire.describe import describe_dashboard
from brushfire.engine import copies as C
from brushfire.engine.parallel import Pool
from brushfire.engine.session import Session
from brushfire.engine.shared import Shared, kernel_layout
from brushfire.lineage import lattice
from brushfire.lineage import store as st
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard
from rows import make_rows

pytestmark = pytest.mark.slow  # numba compiles the kernels on a cold cache

CONFIG = CaptureConfig(block_rows=64, shard_rows=320, max_keys=40)


@pytest.fixture(scope="module")
def captured(small_parquet, tmp_path_factory):
    """The server tests' dashboard over unequal shards (fine dims: raw order; the empty
    partition leaves none), captured without Spark: (spec, plan, entry directory)."""
    from server.conftest import rich_spec

    spec = parse_dashboard(rich_spec(small_parquet))
    plan = plan_capture(spec)
    store = capture_table(plan, pq.read_table(small_parquet), tmp_path_factory.mktemp("stored"),
                          CONFIG, partitions=[1200, 0, 700, 1100])
    return spec, plan, store.directory


def load(captured, verify: bool = True) -> st.LineageStore:
    spec, _, entry = captured
    return st.load_store(entry, spec, verify=verify)


def mapped(a: np.ndarray) -> bool:
    """Is `a` a view of a file's pages (np.load's memory map), not memory of its own?"""
    while a is not None and not isinstance(a, mmap.mmap):
        a = a.base
    return isinstance(a, mmap.mmap)


def comparable(reply: dict) -> dict:
    return {k: v for k, v in reply.items() if k not in ("ms", "methods")}


def replay(dash: Dashboard, a: Session, b: Session, events: int = 300, seed: int = 5) -> None:
    info = workloads.DashboardInfo.from_description(describe_dashboard(dash))
    for ev in workloads.human(info, events=events, seed=seed).events:
        assert comparable(protocol.handle(a, ev.message)) == comparable(protocol.handle(b, ev.message)), \
            ev.message


def test_a_restart_maps_the_copies_the_capture_stored_and_builds_none(captured, monkeypatch):
    from brushfire.lineage import files

    monkeypatch.setattr(files, "SMALL_FILE", 0)  # (these shards' files are small: read whole)
    store = load(captured)
    lay = store.layout
    assert store.copy_notes == []
    assert sorted(store.copies) == sorted(C.candidate_dims(lay)) != []
    copies = Shared.of(store).copies(Pool(0))
    assert copies.job is None  # nothing to build: every dim ready
    L = Shared.of(store).L
    for d in copies.dims:
        got = copies.of(d)
        assert got is not None and len(got) == len(store.shards)
        for shard, c in zip(store.shards, got, strict=True):
            assert mapped(c.keys) and mapped(c.starts) and mapped(c.zones)
            built = C.Copy.build(shard.arrays[0], store.raw_values(store.shards.index(shard), d), d,
                                 lay.dims[d].nkeys, C.keeps_rows(lay), L, C.hist_slots(L),
                                 C.key_dtype(lay), C.then_dim(lay, d))
            for part in C.Copy.PARTS:
                assert np.array_equal(getattr(c, part), getattr(built, part)), (d, part)
                assert getattr(c, part).dtype == getattr(built, part).dtype, (d, part)
            assert c.by_raw == built.by_raw and c.then == built.then
    # a dense or dropdown dim's copy orders each key's rows by the next filter's dim
    assert any(copies.edim(d) == C.then_dim(lay, d) >= 0 for d in copies.dims)
    assert any(copies.cdim(d) == d for d in copies.dims)  # a fine dim's rows in raw order
    assert C.usage()["mapped"] >= copies.nbytes > 0


def test_stored_copies_answer_as_the_store_order_does(captured):
    spec, plan, _ = captured
    store = load(captured)
    dash = Dashboard(spec, plan, store)
    with_copies = Session(store, plan, pool=Pool(0), prefer="incremental")
    without = Session(store, plan, pool=Pool(0), prefer="incremental", copies=False)
    assert with_copies._copies.job is None and with_copies._copies.dims
    replay(dash, with_copies, without)


@pytest.mark.parametrize("damage", ["flip a byte", "remove"])
def test_a_damaged_copy_file_leaves_its_dim_on_the_store_order(captured, tmp_path, capfd, damage):
    """Detected by its checksum (or its absence): that dim gets no copies, the others keep
    theirs, the loader says why on stderr, and the replies are those without copies."""
    import shutil

    spec, plan, entry = captured
    entry = shutil.copytree(entry, tmp_path / entry.name)
    meta = st.read_manifest(entry)
    s = next(s for s in meta["shards"] if s["n_rows"])
    d = int(meta["copies"]["dims"][0])
    path = entry / st.SHARDS / s["name"] / st.copy_files(s)[d][0]  # its keys
    if damage == "remove":
        path.unlink()
    else:
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        path.write_bytes(bytes(data))
    store = st.load_store(entry, spec)
    name = store.layout.dims[d].name
    assert d not in store.copies and store.copies  # the other dims keep theirs
    assert len(store.copy_notes) == 1 and f"dim {name!r}" in store.copy_notes[0]
    why = "fails its checksum" if damage == "flip a byte" else "is missing"
    assert why in store.copy_notes[0] and "store's own order" in store.copy_notes[0]
    assert why in capfd.readouterr().err
    session = Session(store, plan, pool=Pool(0), prefer="incremental")
    assert session.reads.copy(d) is None
    without = Session(store, plan, pool=Pool(0), prefer="incremental", copies=False)
    replay(Dashboard(spec, plan, store), session, without, events=200, seed=9)


def test_a_store_captured_before_copies_were_stored_builds_them_in_memory(captured):
    """(Its manifest records none: the engine builds them in the background, as before.)"""
    store = replace(load(captured), copies=None)  # a new store object: its own Shared
    copies = Shared.of(store).copies(Pool(0))
    assert copies.job is not None and copies.wait(60)
    assert all(copies.of(d) is not None for d in copies.dims)


def test_an_incremental_capture_builds_only_the_new_shards_copies(tmp_path):
    from capture.test_incremental import spec

    d = spec()
    plan = plan_capture(parse_dashboard(d))
    config = CaptureConfig(block_rows=64, shard_rows=256, max_keys=40, max_cube_blocks=6)
    rows = make_rows(1500, seed=3)
    first = {"a": rows.slice(0, 600), "b": rows.slice(600, 500)}
    store = capture_tables(plan, first, tmp_path, config)
    meta = st.read_manifest(store.directory)
    before = {s["name"]: {n: os.stat(store.directory / st.SHARDS / s["name"] / n).st_mtime_ns
                          for ns in st.copy_files(s).values() for n in ns} for s in meta["shards"]}
    assert all(before.values())
    store2 = capture_tables(plan, {**first, "c": rows.slice(1100, 400)}, tmp_path, config)
    meta2 = st.read_manifest(store2.directory)
    new = [s for s in meta2["shards"] if s["name"] not in before]
    assert new and all(st.copy_files(s) for s in new)
    for s in meta2["shards"]:
        if s["name"] in before:  # the same files, not written again
            assert {n: os.stat(store2.directory / st.SHARDS / s["name"] / n).st_mtime_ns
                    for ns in st.copy_files(s).values() for n in ns} == before[s["name"]]
    note = next(c for c in store2.info.changes if c.startswith("clustered key copies"))
    assert f"built for {len(new):,} of {len(meta2['shards']):,} shards" in note
    assert sorted(store2.copies) == sorted(meta2["copies"]["dims"])


def test_the_key_job_builds_the_copies_of_the_shards_it_keys_as_the_driver_would(captured):
    """A capture from scratch keys every shard, and its key job's tasks build their copies
    from the per-row arrays in their memory: the same arrays the driver builds from the
    stored ones (`build_copies`)."""
    store = load(captured)
    note = next(c for c in store.info.changes if c.startswith("clustered key copies"))
    n = len(store.shards)
    assert f"built for {n:,} of {n:,} shards ({n:,} by the key job's tasks)" in note, note
    assert_copies_as_built(store)


def test_each_dim_gets_a_copy_or_not_and_capture_says_why(small_parquet, tmp_path):
    """From the declared filters and what capture kept per row: a filtered indexed dim with
    per-row keys gets one; a dim kept as cubes only (memory budget) and a dim no filter
    reads do not; `brushfire capture` prints each with its bytes per row."""
    from brushfire.cli import copies_text

    d = {"name": "said", "source": {"path": str(small_parquet)}, "views": [
        {"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
        {"name": "cat", "type": "categorical", "field": "cat", "top": 3},
        {"name": "hk", "type": "histogram", "field": "k", "brush": "none",
         "bin": {"step": 10, "extent": [0, 100]}}],
        "interactions": {"crossfilter": [{"views": ["hx", "cat", "hk"]}]}}
    plan = plan_capture(parse_dashboard(d))
    table = pq.read_table(small_parquet)
    store = capture_table(plan, table, tmp_path / "all", CONFIG)
    lay = store.layout
    got = {lay.dims[d].name: (g, why) for d, g, why in C.choices(lay)}
    assert got["value:x"][0] and got["bars:cat"][0], got
    assert "filtered by hx (interval)" in got["value:x"][1]
    assert not got["bars:hk"][0] and "no filter reads it" in got["bars:hk"][1]
    assert sorted(store.copies) == C.candidate_dims(lay)
    text = copies_text(store, store.nbytes())
    n = store.n_rows
    per_row = store.nbytes()["_copy value:x"] / n
    assert f"value:x: a copy, {per_row:.1f} bytes per row — filtered by hx (interval)" in text
    assert "bars:hk: none — no filter reads it" in text
    # a budget that keeps x's keys as cubes only: no rows to copy
    budget = replace(CONFIG, memory_budget=3 * n)
    small = capture_table(plan, table, tmp_path / "budget", budget)
    kept = small.layout
    why = {kept.dims[d].name: (g, w) for d, g, w in C.choices(kept)}
    dropped = [name for name, (g, w) in why.items() if "cubes only" in w]
    assert dropped and not any(why[name][0] for name in dropped)
    assert sorted(small.copies) == C.candidate_dims(kept)
    assert "cubes only (memory budget): no rows to copy" in copies_text(small, small.nbytes())


def test_a_recorded_workload_orders_and_budgets_the_copies(small_parquet, tmp_path):
    """The spec's `workload`: the filters its trace changes get copies, the most changed
    first, while they fit the copy budget; a filter the trace never changes gets none;
    `brushfire plan` and `capture` say why; the answers stay those of the store's order."""
    import json

    from brushfire.cli import copies_text
    from brushfire.plan import explain

    trace = tmp_path / "trace.json"
    events = [{"t": i, "message": {"type": "brush", "view": "hy", "interval": [10, 20 + i]}}
              for i in range(5)] + [
        {"t": 9, "message": {"type": "select", "view": "cat", "values": ["a"]}},
        {"t": 10, "message": {"type": "filters", "filters": {"cat": {"values": ["b"]}}}},
        {"t": 11, "message": {"type": "clear"}}]
    trace.write_text(json.dumps({"format": "brushfire-trace", "version": 1, "dashboard": "traced",
                                 "events": events}))
    views = [
        {"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
        {"name": "cat", "type": "categorical", "field": "cat", "top": 3},
        {"name": "hy", "type": "histogram", "field": "k", "bin": {"step": 10, "extent": [0, 100]}}]
    d = {"name": "traced", "source": {"path": str(small_parquet)}, "views": views,
         "interactions": {"crossfilter": [{"views": ["hx", "cat", "hy"]}]}}
    table = pq.read_table(small_parquet)
    full = capture_table(plan_capture(parse_dashboard(d)), table, tmp_path / "all", CONFIG)
    one = max(v for k, v in full.nbytes().items() if k.startswith("_copy "))
    # without a workload, the default budget (half the machine's memory at capture) is
    # spent in the layout's order
    by_default = C.choices(full.layout, full.n_rows, None, default_budget=int(1.5 * one))
    assert [got for _, got, _ in by_default[:3]] == [True, False, False]
    assert "over the default copy budget" in by_default[1][2]
    assert sorted(full.copies) == sorted(C.candidate_dims(full.layout))  # (they fit the default)
    spec = parse_dashboard({**d, "workload": {"trace": str(trace), "copy_budget": int(1.5 * one)}})
    plan = plan_capture(spec)
    assert plan.workload.moves == (("hy", 5), ("cat", 2)) and plan.workload.messages == 7
    said = explain(plan)
    assert "5 of the workload trace's 7 filter changes" in said
    assert "never changes hx (its changes read the store's own order)" in said
    store = capture_table(plan, table, tmp_path / "traced", CONFIG)
    lay = store.layout
    names = {lay.dims[d].name: d for d in range(len(lay.dims))}
    assert sorted(store.copies) == [names["value:k"]]  # the most changed; cat's is over budget
    text = copies_text(store, store.nbytes())
    assert "value:k: a copy" in text and "5 of the trace's 7 filter changes (71%)" in text
    assert "bars:cat: none" in text and "over the copy budget" in text
    assert "value:x: none" in text and "the trace never changes it" in text
    # a restart maps what the capture chose, and says the same
    again = st.load_store(store.directory, spec)
    assert sorted(again.copies) == [names["value:k"]]
    assert copies_text(again, again.nbytes()) == text
    # once captured, the trace is not needed: opening the capture never reads it
    trace.unlink()
    dash = Dashboard(spec, plan_capture(spec), again)
    # exact: the same answers as the store's own order
    with_copies = Session(again, plan, pool=Pool(0), prefer="incremental")
    without = Session(again, plan, pool=Pool(0), prefer="incremental", copies=False)
    replay(dash, with_copies, without, events=200)


def test_a_copy_orders_each_keys_rows_by_the_filter_most_often_beside_its_own():
    """`then_dim`: without a trace, the next filtered dim in the filters' order (the first
    after the last); with one, the dim whose filter is most often active while the copy's
    dim's filter changes (`filters_beside` follows the session's filters); never for a
    fine dim (its copy keeps raw order) or one no other filter is beside."""
    from types import SimpleNamespace as NS

    from brushfire.workload import Workload, filters_beside

    dims = [NS(kind="dense"), NS(kind="fine"), NS(kind="dict"), NS(kind="dense"), NS(kind="dict")]
    filters = [NS(name="a", dims=[0], kind="interval"), NS(name="b", dims=[1], kind="interval"),
               NS(name="c", dims=[2], kind="param_range"), NS(name="d", dims=[3], kind="interval"),
               NS(name="e", dims=[4], kind="points")]  # (a set of keys: not narrowed by)
    lay = NS(row_dims=5, dims=dims, filters=filters)
    assert [C.then_dim(lay, d) for d in range(5)] == [1, -1, 3, 0, 0]
    assert C.then_dim(NS(row_dims=4, dims=dims, filters=filters[:1]), 0) == -1
    assert C.then_dim(NS(row_dims=2, dims=dims, filters=filters), 3) == -1  # (kept as cubes only)

    def brush(view, lo=0.0, hi=1.0):
        return {"message": {"type": "brush", "view": view, "interval": [lo, hi]}}

    events = [brush("c"), brush("a"), brush("a"), {"message": {"type": "clear", "view": "c"}},
              brush("d"), brush("a"), brush("a", None, None), brush("d"),
              {"message": {"type": "select", "view": "b", "values": []}},
              {"message": {"type": "filters", "filters": {"a": {"interval": [0, 1]}, "b": None}}},
              brush("c"), {"message": {"type": "clear"}}, brush("a"), "not an event"]
    beside = filters_beside(events, {"a", "b", "c", "d"})
    assert beside == {("a", "c"): 2, ("d", "a"): 1, ("a", "d"): 2, ("b", "d"): 1, ("c", "a"): 1}
    w = Workload("trace.json", (), 0, None, tuple((a, b, n) for (a, b), n in beside.items()))
    assert w.besides("a", "d") == 2 and w.besides("b", "a") == 0
    assert [C.then_dim(lay, d, w) for d in range(5)] == [2, -1, 0, 0, 0]  # a: c before d (a tie)
    assert "1 of the trace's changes of c are beside it" in C.then_text(lay, 2, w)
    assert "the next filter in the dashboard's order" in C.then_text(lay, 0)
    assert C.then_text(lay, 1, w) == ""


def test_a_workload_trace_that_cannot_be_read_names_the_spec_key(small_parquet, tmp_path):
    from brushfire.errors import SpecError

    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(f"""name: traced
source: {{path: {small_parquet}}}
views:
  - {{name: hx, type: histogram, field: x, bin: {{step: 10, extent: [0, 100]}}}}
workload:
  trace: missing.json
""")
    from brushfire.spec import load_dashboard

    plan = plan_capture(load_dashboard(spec_file))  # (read when capture asks for it)
    with pytest.raises(SpecError) as e:
        capture_dashboard(plan, spark="not started: the trace is read before Spark")
    assert f"{spec_file}:6: workload.trace: cannot read the trace {tmp_path / 'missing.json'}" in str(e.value)
    (tmp_path / "missing.json").write_text('{"events": []}')
    with pytest.raises(SpecError, match="is not a brushfire trace"):
        _ = plan_capture(load_dashboard(spec_file)).workload
    spec_file.write_text(spec_file.read_text().replace("trace: missing.json", "copy_budget: lots"))
    with pytest.raises(SpecError, match=r"spec.yaml:6: workload.copy_budget: expected a size in bytes"):
        load_dashboard(spec_file)


def test_copies_of_another_format_are_built_in_memory_instead(captured, tmp_path, capfd):
    import shutil

    spec, plan, entry = captured
    entry = shutil.copytree(entry, tmp_path / entry.name)
    meta = st.read_manifest(entry)
    meta["copies"]["format"] = st.COPY_FORMAT - 1
    st.write_manifest(entry, meta)
    store = st.load_store(entry, spec)
    assert store.copies is None and "format" in store.copy_notes[0]
    assert "built in memory instead" in capfd.readouterr().err
    copies = Shared.of(store).copies(Pool(0))
    assert copies.job is not None and copies.wait(60) and copies.dims


def test_a_view_added_over_keys_already_kept_recounts_only_the_copies_histograms(tmp_path):
    """A view over a field whose keys the shards keep already (its bars' edges among the
    field's bucket edges: no key changes) changes only the copies' chunk histograms: the
    keys, rows, starts and zone maps are kept as they are, and the store answers and
    stores its copies as one captured from scratch."""
    from capture.test_incremental import assert_same_answers, capture, spec, tables_of

    tables = tables_of((600, 1), (600, 2))
    entry = capture(spec(), tables, tmp_path / "inc").directory

    def files(part: str) -> dict[str, int]:
        """The copies' files of one part (keys, ...: every part but "hist"), with their times."""
        m = st.read_manifest(entry)
        return {n: os.stat(entry / st.SHARDS / s["name"] / n).st_mtime_ns
                for s in m["shards"] for ns in st.copy_files(s).values() for n in ns
                if (n.endswith(".hist.npy") == (part == "hist"))}

    keys, hist = files("keys"), files("hist")
    views = [*spec()["views"], {"name": "hx20", "type": "histogram", "field": "x", "brush": "none",
                                "bin": {"step": 20, "extent": [0, 100]}}]
    added = capture(spec(views), tables, tmp_path / "inc")
    assert added.directory == entry
    meta2 = st.read_manifest(entry)
    assert keys and files("keys") == keys  # the same files, not written again
    assert files("hist").keys().isdisjoint(hist)  # counted again, under their new key
    note = next(c for c in added.info.changes if c.startswith("clustered key copies"))
    assert f"built for 0 of {len(meta2['shards'])} shards" in note
    assert f"({len(meta2['shards'])} with their chunk histograms counted again" in note
    full = capture(spec(views), tables, tmp_path / "full")
    assert_same_answers(full, added, spec(views))
    assert_same_copies(added.directory, full.directory)


def test_copies_of_a_layout_with_too_many_bars_for_histograms_keep_none(tmp_path):
    """Views whose bars (a median's cells) pass HIST_SLOTS: the copies keep no chunk
    histograms, and a change of the views' bars over kept keys counts none again either
    (it counted them into an array of no slots, writing past its end: a crash, found by
    the incremental property test)."""
    from capture.test_incremental import DENSE, assert_same_answers, capture, spec, tables_of

    tables = tables_of((300, 1), (150, 2))  # x and m keyed by value (dense): few rows
    views = spec()["views"]
    views[4] = {**views[4], "aggregate": {"op": "max", "field": "m"}}  # bars x m's keys: cells
    first = capture(spec(views), tables, tmp_path / "inc", DENSE)
    assert C.hist_slots(kernel_layout(first.layout)[1]) == 0
    views[0] = {**views[0], "bin": {"maxbins": 7}}  # other bars over the same keys
    again = capture(spec(views), tables, tmp_path / "inc", DENSE)
    note = next(c for c in again.info.changes if c.startswith("clustered key copies"))
    assert "built for 0 of" in note, note
    full = capture(spec(views), tables, tmp_path / "full", DENSE)
    assert_same_answers(full, again, spec(views))
    assert_same_copies(again.directory, full.directory)
    assert all(parts["hist"].shape == (0, 0) for cs in again.copies.values() for parts, *_ in cs)


def assert_same_copies(entry, scratch) -> None:
    """Every part of every stored copy of `entry` as a capture from scratch (`scratch`)
    stores it, shard for shard."""
    got, want = st.read_manifest(entry), st.read_manifest(scratch)
    assert len(got["shards"]) == len(want["shards"])
    assert got["copies"]["dims"] == want["copies"]["dims"]
    for s, t in zip(got["shards"], want["shards"], strict=True):
        assert st.copy_files(s).keys() == st.copy_files(t).keys()
        assert s["copies"]["dims"] == t["copies"]["dims"]  # (by_raw)
        for d, names in st.copy_files(s).items():
            for a, b in zip(names, st.copy_files(t)[d], strict=True):
                np.testing.assert_array_equal(np.load(entry / st.SHARDS / s["name"] / a),
                                              np.load(scratch / st.SHARDS / t["name"] / b), err_msg=a)


def test_appended_values_of_a_dense_dim_renumber_the_copies_built_before(tmp_path):
    """A file that brings new values of a dense dim (before, between and after the old
    ones) re-keys the shards captured before: their copies' keys are renumbered, not
    built again, and equal those built from the shards' new keys; the answers equal a
    capture from scratch."""
    import pyarrow as pa

    from capture.test_incremental import CONFIG, assert_same_answers, spec, tables_of

    def with_d(table, values) -> pa.Table:
        rng = np.random.default_rng(table.num_rows)
        return table.append_column("d", pa.array(rng.choice(values, table.num_rows)))

    views = [*spec()["views"][:3], {"name": "hd", "type": "histogram", "field": "d",
                                    "bin": {"step": 1, "extent": [-2, 12]}}]
    d = spec(views)
    tables = {k: with_d(t, [0.0, 2.0, 4.0, 6.0, 8.0]) for k, t in tables_of((600, 1), (500, 2)).items()}
    plan = plan_capture(parse_dashboard(d))
    first = capture_tables(plan, tables, tmp_path / "inc", CONFIG)
    assert first.layout.dims[first.layout.dim_index("value:d")].kind == "dense"
    tables["f2"] = with_d(make_rows(300, 3), [-1.0, 3.0, 9.0])
    again = capture_tables(plan, tables, tmp_path / "inc", CONFIG)
    note = next(c for c in again.info.changes if c.startswith("clustered key copies"))
    old = len(first.shards)
    assert f"({old} with their keys renumbered" in note, note
    assert_copies_as_built(again)
    assert_same_answers(capture_tables(plan, tables, tmp_path / "full", CONFIG), again, d)


def assert_copies_as_built(store: st.LineageStore) -> None:
    """The store's stored copies are those `build_copies` builds from its shards' per-row
    arrays now. (Not those of a capture from scratch: an incremental capture may keep
    earlier bucket edges, another layout with the same answers.)"""
    from brushfire.capture.copies import build_copies

    entry = store.directory
    meta = st.read_manifest(entry)
    stored = {(s["name"], n): np.load(entry / st.SHARDS / s["name"] / n)
              for s in meta["shards"] for ns in st.copy_files(s).values() for n in ns}
    shards = [{**s, "copies": {}, "files": dict(s["files"])} for s in meta["shards"]]
    with tempfile.TemporaryDirectory() as scratch:
        for s in shards:  # the per-row arrays beside copies built anew
            (Path(scratch) / st.SHARDS / s["name"]).mkdir(parents=True)
            for n in (f"{a}-{s['rows']}.npy" for a in ("keys", *lattice.RawArrays._fields)):
                os.link(entry / st.SHARDS / s["name"] / n, Path(scratch) / st.SHARDS / s["name"] / n)
        build_copies(Path(scratch), store.layout, shards, lambda *_: None)
        built = {(s["name"], n): np.load(Path(scratch) / st.SHARDS / s["name"] / n)
                 for s in shards for ns in st.copy_files(s).values() for n in ns}
        assert [s["copies"]["dims"] for s in shards] == [s["copies"]["dims"] for s in meta["shards"]]
        assert built.keys() == stored.keys()
        for k, a in stored.items():
            np.testing.assert_array_equal(a, built[k], err_msg=str(k))
