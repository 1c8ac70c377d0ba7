"""The lineage cache: round trips, an entry per dashboard and source, corruption and
misuse detection (a broken cache never costs the dashboard), removal of unused parts."""

from __future__ import annotations

import json
import os
import shutil
import stat

import numpy as np
import pytest

from brushfire import Dashboard, versions
from brushfire.errors import CacheError, CaptureError, SpecError
from brushfire.lineage import checks
from brushfire.lineage.checks import Checked
from brushfire.lineage.store import (
    capture_key,
    entry_dir,
    files_fingerprint,
    load_store,
    read_manifest,
    spec_hash,
)
from brushfire.source import local_files
from brushfire.spec import parse_dashboard

pytestmark = pytest.mark.spark


def spec(path, **changes) -> dict:
    d = {
        "name": "cache_test",
        "source": {"path": str(path)},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 4},
            {"name": "mk", "type": "histogram", "field": "k", "bin": {"step": 20, "extent": [0, 100]},
             "aggregate": {"op": "mean", "field": "m"}},
        ],
        "interactions": {"crossfilter": [{"views": ["hx", "cat", "mk"]}],
                         "details": {"columns": ["x", "cat", "t"]}},
    }
    d.update(changes)
    return d


@pytest.fixture(scope="module")
def cached(spark, small_parquet, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    dash = Dashboard.open(parse_dashboard(spec(small_parquet)), spark=spark, cache_dir=cache)
    return dash, cache


def store_arrays(store) -> dict:
    out = {"base": store.base.counts, **{f"kc{i}": c for i, c in enumerate(store.keycounts)}}
    for k, c in store.cubes.items():
        out[f"cube{k}"] = c.counts
    for i, s in enumerate(store.shards):
        for j, a in enumerate(s.arrays):
            out[f"{i}.{j}"] = np.asarray(a)
    return out


def assert_same_store(a, b) -> None:
    """`a`: a store, or a copy of a store's arrays (store_arrays)."""
    assert isinstance(a, dict) or a.n_rows == b.n_rows
    xa = a if isinstance(a, dict) else store_arrays(a)
    xb = store_arrays(b)
    assert xa.keys() == xb.keys()
    for k in xa:
        np.testing.assert_array_equal(xa[k], xb[k], err_msg=k)
    if not isinstance(a, dict):
        ta = a.take(np.arange(a.n_rows), ["x", "cat", "t"]).to_pandas()
        assert ta.equals(b.take(np.arange(b.n_rows), ["x", "cat", "t"]).to_pandas())  # NaN-aware


def test_reopening_loads_the_cache_without_spark(cached, small_parquet, monkeypatch):
    from brushfire.lineage import files

    monkeypatch.setattr(files, "SMALL_FILE", 0)  # (these shards' files are small: read whole)
    dash, cache = cached
    again = Dashboard.open(parse_dashboard(spec(small_parquet)), spark=None, cache_dir=cache)
    assert again.from_cache and not dash.from_cache
    assert_same_store(dash.store, again.store)
    keys = again.store.shards[0].arrays[0]  # mapped, not copied: a view of the file's map
    assert isinstance(keys.base, np.memmap) and not keys.flags.writeable
    s1, s2 = dash.session(), again.session()
    assert s1.brush("hx", (20, 55)).views["cat"].counts == s2.brush("hx", (20, 55)).views["cat"].counts
    meta = json.loads((again.store.directory / "manifest.json").read_text())
    assert meta["spec_sha256"] == spec_hash(dash.spec) and meta["resolved_spec"]["name"] == "cache_test"
    assert versions.history(cache, "cache_test")[0]["rows"] == dash.store.n_rows


def test_what_identifies_a_capture(cached, small_parquet, tmp_path):
    dash, cache = cached
    fp = files_fingerprint(local_files(dash.spec.source))
    other = parse_dashboard(spec(small_parquet, views=spec(small_parquet)["views"][:2],
                                 interactions={"crossfilter": [{"views": ["hx", "cat"]}]}))
    assert capture_key(other, fp) != capture_key(dash.spec, fp)
    assert entry_dir(cache, other) == entry_dir(cache, dash.spec)  # one entry: the same source
    copy = tmp_path / "copy.parquet"
    copy.write_bytes(small_parquet.read_bytes())
    sample = parse_dashboard(spec(copy))
    assert entry_dir(cache, sample) != entry_dir(cache, dash.spec)  # another source, another entry
    before = files_fingerprint(local_files(sample.source))
    os.utime(copy, ns=(1, 1))  # the data "changed": new modification time
    assert files_fingerprint(local_files(sample.source)) != before


def test_a_file_unchanged_since_its_checksum_passed_is_not_read_again(cached, monkeypatch):
    """checked.json: the files whose CRC32 passed, with their stat stamps; a load reads
    only the files whose stamp moved, and a record it cannot use means reading them all."""
    dash, _ = cached
    entry = dash.store.directory
    read: list = []
    crc = checks._crc
    monkeypatch.setattr(checks, "_crc", lambda path: read.append(path) or crc(path))
    (entry / Checked.FILE).unlink(missing_ok=True)
    load_store(entry, dash.spec)
    every = len(read)
    assert every > 3 and (entry / Checked.FILE).exists()
    read.clear()
    load_store(entry, dash.spec)
    assert read == []
    victim = read_manifest(entry)["shards"][0]
    victim = entry / "shards" / victim["name"] / f"keys-{victim['rows']}.npy"
    os.utime(victim)  # touched: its stamp moved, its bytes did not
    load_store(entry, dash.spec)
    assert read == [victim]
    read.clear()
    (entry / Checked.FILE).write_text("[1, 2")
    load_store(entry, dash.spec)
    assert len(read) == every


DAMAGES = ["flip_a_byte", "flip_a_byte_keeping_its_times", "truncate", "remove_manifest", "remove_shard_file", "manifest_is_a_list",
           "manifest_without_files", "manifest_not_json", "entry_is_a_file"]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_entry_is_detected_and_recaptured(spark, small_parquet, tmp_path, damage):
    d = parse_dashboard(spec(small_parquet))
    good = Dashboard.open(d, spark=spark, cache_dir=tmp_path)
    # copies: the store maps the files the damage below writes to
    want = {k: np.array(v) for k, v in store_arrays(good.store).items()}
    entry = entry_dir(tmp_path, d)
    meta = read_manifest(entry)
    first = meta["shards"][0]
    victim = entry / "shards" / first["name"] / f"keys-{first['rows']}.npy"
    manifest = entry / "manifest.json"
    if damage == "flip_a_byte":
        data = bytearray(victim.read_bytes())
        data[-1] ^= 0xFF
        victim.write_bytes(bytes(data))
    elif damage == "flip_a_byte_keeping_its_times":  # after a load recorded it as checked
        load_store(entry, d)
        assert (entry / Checked.FILE).exists()
        before = victim.stat()
        data = bytearray(victim.read_bytes())
        data[-1] ^= 0xFF
        victim.write_bytes(bytes(data))
        os.utime(victim, ns=(before.st_atime_ns, before.st_mtime_ns))  # its change time moves
    elif damage == "truncate":
        victim.write_bytes(victim.read_bytes()[:-10])
    elif damage == "remove_manifest":
        manifest.unlink()
    elif damage == "remove_shard_file":
        victim.unlink()
    elif damage == "manifest_is_a_list":
        manifest.write_text("[]")
    elif damage == "manifest_without_files":
        del meta["files"]
        manifest.write_text(json.dumps(meta))
    elif damage == "manifest_not_json":
        manifest.write_text("{ not json")
    else:
        shutil.rmtree(entry)
        entry.write_text("not a directory")
    with pytest.raises(CacheError):
        load_store(entry, d)
    again = Dashboard.open(d, spark=spark, cache_dir=tmp_path)
    assert not again.from_cache  # recaptured, never served from the damaged entry
    assert again.store.n_rows == good.store.n_rows
    assert_same_store(want, again.store)
    assert load_store(entry, d).n_rows == good.store.n_rows  # and the entry is sound again


@pytest.mark.parametrize("how", ["copy", "symlink"])
def test_an_entry_of_another_spec_is_not_served(spark, small_parquet, tmp_path, how):
    a = parse_dashboard(spec(small_parquet))
    dash_a = Dashboard.open(a, spark=spark, cache_dir=tmp_path)
    b = parse_dashboard(spec(small_parquet, name="other_test"))  # another dashboard's entry
    src, dst = entry_dir(tmp_path, a), entry_dir(tmp_path, b)
    if how == "copy":
        shutil.copytree(src, dst)
    else:
        os.symlink(src, dst)
    with pytest.raises(CacheError, match="another spec"):
        load_store(dst, b)
    edited = parse_dashboard(spec(small_parquet, views=[{**spec(small_parquet)["views"][0],
                                                         "bin": {"step": 5, "extent": [0, 100]}},
                                                        *spec(small_parquet)["views"][1:]]))
    with pytest.raises(CacheError, match="another spec"):
        load_store(src, edited)  # the entry holds spec a's capture
    dash_b = Dashboard.open(edited, spark=spark, cache_dir=tmp_path)
    assert not dash_b.from_cache
    assert len(dash_b.store.view("hx").labels) == 20 != len(dash_a.store.view("hx").labels)


def test_an_edited_spec_updates_its_entry_and_other_sources_keep_theirs(spark, small_parquet,
                                                                         tmp_path):
    first = parse_dashboard(spec(small_parquet))
    a = Dashboard.open(first, spark=spark, cache_dir=tmp_path)
    entry = entry_dir(tmp_path, first)
    files_before = {p.relative_to(entry) for p in entry.rglob("*") if p.is_file()}
    edited = parse_dashboard(spec(small_parquet, title="edited", views=spec(small_parquet)["views"][:2],
                                  interactions={"crossfilter": [{"views": ["hx", "cat"]}]}))
    b = Dashboard.open(edited, spark=spark, cache_dir=tmp_path)
    assert entry_dir(tmp_path, edited) == entry and not b.from_cache
    assert any("reused 1 of 1 input file" in c for c in b.store.info.changes)
    files_after = {p.relative_to(entry) for p in entry.rglob("*") if p.is_file()}
    assert files_after != files_before  # parts of the dropped view removed, new ones added
    assert not any("mk" in str(p) for p in files_after if p.name.startswith("g-"))
    copy = tmp_path / "sample.parquet"
    shutil.copy(small_parquet, copy)
    Dashboard.open(parse_dashboard(spec(copy)), spark=spark, cache_dir=tmp_path)
    entries = sorted(p.name for p in tmp_path.iterdir() if p.is_dir() and p.name != versions.HISTORY_DIR)
    assert len(entries) == 2 and entry.name in entries  # a sample and the full data coexist
    assert Dashboard.open(edited, spark=None, cache_dir=tmp_path).from_cache
    assert a.store.n_rows == b.store.n_rows


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_cache_still_serves_the_dashboard(spark, small_parquet, tmp_path, capsys):
    cache = tmp_path / "ro"
    cache.mkdir()
    cache.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        dash = Dashboard.open(parse_dashboard(spec(small_parquet)), spark=spark, cache_dir=cache)
    finally:
        cache.chmod(stat.S_IRWXU)
    assert dash.store.n_rows > 0 and "cannot be written" in capsys.readouterr().err


def test_an_unwritable_cache_path_still_serves_the_dashboard(spark, small_parquet, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory should be")
    dash = Dashboard.open(parse_dashboard(spec(small_parquet)), spark=spark, cache_dir=blocker / "cache")
    assert dash.store.n_rows > 0 and "cannot be written" in capsys.readouterr().err


def test_a_missing_source_is_a_clear_error(tmp_path):
    d = parse_dashboard(spec(tmp_path / "missing.parquet"))
    with pytest.raises((CaptureError, SpecError), match="missing.parquet.*no such file or directory"):
        Dashboard.open(d, cache_dir=tmp_path)


@pytest.mark.parametrize("n", [6, 300])  # few values (a dense dim), many (a fine one, raw values)
def test_a_sliders_range_is_the_fields_finite_values(tmp_path, n):
    """±inf are values of a float field, but no slider end: JSON has none (they were sent
    as null, and the page's slider had no range); a field with no finite value has none."""
    import math

    import pyarrow as pa

    from brushfire.capture.local import capture_table
    from brushfire.lineage.layout import CaptureConfig
    from brushfire.plan import plan_capture

    f = [math.inf, -math.inf, math.nan, None, *np.linspace(-2.5, 7.5, n - 4)]
    only_inf = [math.inf, -math.inf, math.nan] * (n // 3) + [None] * (n % 3)
    table = pa.table({"f": pa.array(f, pa.float64()), "g": pa.array(only_inf, pa.float64()),
                      "y": pa.array(np.arange(n) % 5)})
    d = {"name": "ranges", "source": {"path": str(tmp_path / "none.parquet")},
         "views": [{"name": "y", "type": "histogram", "field": "y", "bin": {"step": 1, "extent": [0, 5]}}],
         "interactions": {"parameters": [{"name": "pf", "field": "f", "widget": "slider", "op": "gte"},
                                         {"name": "pg", "field": "g", "widget": "slider", "op": "between"}]}}
    plan = plan_capture(parse_dashboard(d))
    store = capture_table(plan, table, tmp_path / "cache", CaptureConfig(max_keys=40))
    assert store.layout.dims[store.layout.filter("pf").dims[0]].kind == ("dense" if n < 40 else "fine")
    assert store.parameter_domain("pf") == ("range", [-2.5, 7.5])
    assert store.parameter_domain("pg") == ("range", [])


def test_a_store_of_many_small_shards_holds_no_file_descriptor_per_array(tmp_path):
    """Each mapped array held a file descriptor (Python's mmap keeps one): a partitioned
    dataset of small files (a shard per file, ~28 arrays each) opened 5,645 descriptors
    for 200 files, so a few hundred files (twice as many while a reload serves the new
    capture beside the old) hit the process's limit ('Too many open files'). Small files
    are read whole instead."""
    from brushfire.capture.local import capture_tables
    from brushfire.engine.session import Session
    from brushfire.plan import plan_capture
    from rows import make_rows

    d = spec("/nonexistent/many.parquet")
    dash = parse_dashboard(d)
    plan = plan_capture(dash)
    tables = {f"day={i:03d}/part.parquet": make_rows(10, i) for i in range(60)}
    captured = capture_tables(plan, tables, tmp_path / "cache")
    before = len(os.listdir("/proc/self/fd"))
    store = load_store(captured.directory, dash)
    s = Session(store, plan)
    s.brush("hx", [20, 60])
    assert len(store.shards) == 60 and s.count_selected() > 0
    assert len(os.listdir("/proc/self/fd")) - before < 20
