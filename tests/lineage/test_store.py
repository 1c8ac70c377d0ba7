"""The lineage cache: round trips, invalidation by spec and source, corruption detection."""

from __future__ import annotations

import os

import numpy as np
import pytest

from brushfire import Dashboard
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


def assert_same_store(a, b) -> None:
    assert a.n_rows == b.n_rows
    np.testing.assert_array_equal(a.codes, b.codes)
    np.testing.assert_array_equal(a.measures, b.measures)
    assert a.indexes.keys() == b.indexes.keys()
    for k in a.indexes:
        np.testing.assert_array_equal(a.indexes[k].order, b.indexes[k].order)
    for k in a.cubes:
        np.testing.assert_array_equal(a.cubes[k].counts, b.cubes[k].counts)
    assert a.snapshot.to_pandas().equals(b.snapshot.to_pandas())  # NaN-aware, unlike Arrow


def test_reopening_loads_the_cache_without_spark(cached, small_parquet):
    dash, cache = cached
    again = Dashboard.open(parse_dashboard(spec(small_parquet)), spark=None, cache_dir=cache)
    assert again.from_cache and not dash.from_cache
    assert_same_store(dash.store, again.store)
    s1, s2 = dash.session(), again.session()
    assert s1.brush("hx", (20, 55)).views["cat"].counts == s2.brush("hx", (20, 55)).views["cat"].counts


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


@pytest.mark.parametrize("damage", ["flip_a_byte", "truncate", "remove_manifest", "remove_array"])
def test_a_damaged_entry_is_detected_and_recaptured(spark, small_parquet, tmp_path, damage):
    d = parse_dashboard(spec(small_parquet))
    good = Dashboard.open(d, spark=spark, cache_dir=tmp_path)
    entry = entry_dir(tmp_path, d, source_fingerprint(str(small_parquet)))
    victim = entry / "codes.npy"
    if damage == "flip_a_byte":
        data = bytearray(victim.read_bytes())
        data[-1] ^= 0xFF
        victim.write_bytes(bytes(data))
    elif damage == "truncate":
        victim.write_bytes(victim.read_bytes()[:-10])
    elif damage == "remove_manifest":
        (entry / "manifest.json").unlink()
    else:
        victim.unlink()
    with pytest.raises(CacheError):
        load_store(entry, d)
    again = Dashboard.open(d, spark=spark, cache_dir=tmp_path)
    assert not again.from_cache  # recaptured, never served from the damaged entry
    assert_same_store(good.store, again.store)
    assert load_store(entry, d).n_rows == good.store.n_rows  # and the entry is sound again


def test_a_missing_source_is_a_clear_error(tmp_path):
    d = parse_dashboard(spec(tmp_path / "missing.parquet"))
    with pytest.raises(CaptureError, match="missing.parquet does not exist"):
        Dashboard.open(d, cache_dir=tmp_path)
