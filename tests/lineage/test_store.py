"""The lineage cache: round trips, invalidation by spec and source, corruption and misuse
detection (a broken cache never costs the dashboard), pruning of superseded entries."""

from __future__ import annotations

import json
import os
import shutil
import stat

import numpy as np
import pytest

from brushfire import Dashboard, versions
from brushfire.errors import CacheError, CaptureError
from brushfire.lineage.store import cache_key, entry_dir, load_store, source_fingerprint
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
    for s in store.shards:
        for i, a in enumerate(s.arrays):
            out[f"{s.name}.{i}"] = np.asarray(a)
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


def test_reopening_loads_the_cache_without_spark(cached, small_parquet):
    dash, cache = cached
    again = Dashboard.open(parse_dashboard(spec(small_parquet)), spark=None, cache_dir=cache)
    assert again.from_cache and not dash.from_cache
    assert_same_store(dash.store, again.store)
    keys = again.store.shards[0].arrays[0]  # mapped, not copied: a view of the file's map
    assert isinstance(keys.base, np.memmap) and not keys.flags.writeable
    s1, s2 = dash.session(), again.session()
    assert s1.brush("hx", (20, 55)).views["cat"].counts == s2.brush("hx", (20, 55)).views["cat"].counts
    meta = json.loads((again.store.directory / "manifest.json").read_text())
    assert meta["spec_sha256"] and meta["cache_key"] in again.store.directory.name
    assert versions.history(cache, "cache_test")[0]["rows"] == dash.store.n_rows


def test_a_changed_spec_or_source_has_another_entry(cached, small_parquet, tmp_path):
    dash, cache = cached
    fp = source_fingerprint(str(small_parquet))
    other = parse_dashboard(spec(small_parquet, views=spec(small_parquet)["views"][:2],
                                 interactions={"crossfilter": [{"views": ["hx", "cat"]}]}))
    assert cache_key(other, fp) != cache_key(dash.spec, fp)
    copy = tmp_path / "copy.parquet"
    copy.write_bytes(small_parquet.read_bytes())
    before = source_fingerprint(str(copy))
    os.utime(copy, ns=(1, 1))  # the data "changed": new modification time
    assert source_fingerprint(str(copy)) != before


def _entry(path, d):
    return entry_dir(path, d, source_fingerprint(d.source.path))


DAMAGES = ["flip_a_byte", "truncate", "remove_manifest", "remove_shard_file", "manifest_is_a_list",
           "manifest_without_files", "manifest_not_json", "entry_is_a_file"]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_entry_is_detected_and_recaptured(spark, small_parquet, tmp_path, damage):
    d = parse_dashboard(spec(small_parquet))
    good = Dashboard.open(d, spark=spark, cache_dir=tmp_path)
    # copies: the store maps the files the damage below writes to
    want = {k: np.array(v) for k, v in store_arrays(good.store).items()}
    entry = _entry(tmp_path, d)
    victim = entry / "shards" / good.store.shards[0].name / "keys.npy"
    manifest = entry / "manifest.json"
    if damage == "flip_a_byte":
        data = bytearray(victim.read_bytes())
        data[-1] ^= 0xFF
        victim.write_bytes(bytes(data))
    elif damage == "truncate":
        victim.write_bytes(victim.read_bytes()[:-10])
    elif damage == "remove_manifest":
        manifest.unlink()
    elif damage == "remove_shard_file":
        victim.unlink()
    elif damage == "manifest_is_a_list":
        manifest.write_text("[]")
    elif damage == "manifest_without_files":
        meta = json.loads(manifest.read_text())
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
def test_an_entry_copied_from_another_spec_is_not_served(spark, small_parquet, tmp_path, how):
    a = parse_dashboard(spec(small_parquet))
    b = parse_dashboard(spec(small_parquet, views=[{**spec(small_parquet)["views"][0],
                                                    "bin": {"step": 5, "extent": [0, 100]}},
                                                   *spec(small_parquet)["views"][1:]]))
    dash_a = Dashboard.open(a, spark=spark, cache_dir=tmp_path)
    src, dst = _entry(tmp_path, a), _entry(tmp_path, b)
    if how == "copy":
        shutil.copytree(src, dst)
    else:
        os.symlink(src, dst)
    with pytest.raises(CacheError, match="another spec|cache key"):
        load_store(dst, b, dst.name.split("-")[-1])
    dash_b = Dashboard.open(b, spark=spark, cache_dir=tmp_path)
    assert not dash_b.from_cache
    assert len(dash_b.store.view("hx").labels) == 20 != len(dash_a.store.view("hx").labels)


def test_a_newer_capture_prunes_the_superseded_entry(spark, small_parquet, tmp_path):
    first = parse_dashboard(spec(small_parquet))
    Dashboard.open(first, spark=spark, cache_dir=tmp_path)
    old = _entry(tmp_path, first)
    assert old.exists()
    edited = parse_dashboard(spec(small_parquet, title="edited", views=spec(small_parquet)["views"][:2],
                                  interactions={"crossfilter": [{"views": ["hx", "cat"]}]}))
    Dashboard.open(edited, spark=spark, cache_dir=tmp_path)
    assert not old.exists() and _entry(tmp_path, edited).exists()
    entries = [p.name for p in tmp_path.iterdir() if p.name != versions.HISTORY_DIR]
    assert entries == [_entry(tmp_path, edited).name]


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
    with pytest.raises(CaptureError, match="missing.parquet does not exist"):
        Dashboard.open(d, cache_dir=tmp_path)
