"""brushfire.versions: which capture is served (spec hash, source fingerprint, Brushfire
version), the history that outlives pruned cache entries, `brushfire capture --history`
and the version in `/api/dashboards`."""

from __future__ import annotations

import json

import httpx
import pytest

from brushfire import Dashboard, __version__, versions
from brushfire.cli import main
from brushfire.lineage.store import files_fingerprint, spec_hash
from brushfire.server import create_app
from brushfire.source import local_files
from brushfire.spec import load_dashboard
from live_server import live_server


def manifest(key: str, created: str) -> dict:
    return {"dashboard": "d", "cache_key": key, "created": created, "spec_sha256": "s" * 64,
            "brushfire_version": "0.1.0", "n_rows": 10,
            "info": {"source_fingerprint": "f" * 64, "mode": "rows", "seconds": {"capture": 1.5}}}


def test_the_history_keeps_the_last_captures(tmp_path, monkeypatch):
    monkeypatch.setattr(versions, "HISTORY_KEEP", 3)
    for i in range(5):
        versions.record(tmp_path, manifest(f"k{i}", f"2026-01-0{i + 1}T00:00:00Z"), tmp_path / f"d-k{i}")
    versions.record(tmp_path, manifest("k4", "2026-01-05T00:00:00Z"))  # the same capture: once
    entry = tmp_path / "d-k4"  # only the newest is still in the cache
    entry.mkdir()
    (entry / "manifest.json").write_text(json.dumps(manifest("k4", "2026-01-05T00:00:00Z")))
    got = versions.history(tmp_path, "d")
    assert [(e["cache_key"], e["cached"]) for e in got] == [("k4", True), ("k3", False), ("k2", False)]
    assert got[0]["source_fingerprint"] == "f" * 64 and got[0]["seconds"] == 1.5
    assert set(versions.public(got[0])) == set(versions.PUBLIC)  # no paths for clients


def test_an_unwritable_history_never_fails_a_capture(tmp_path, capsys):
    (tmp_path / "history").write_text("a file where the folder should be")
    versions.record(tmp_path, manifest("k", "2026-01-01T00:00:00Z"))
    assert "history skipped" in capsys.readouterr().err


@pytest.mark.spark
def test_captures_are_versioned_and_listed(spark, small_parquet, tmp_path, capsys):
    spec = tmp_path / "v.yaml"
    text = (f"name: v\nsource: {{path: {small_parquet}}}\nviews:\n"
            "  - {name: cat, type: categorical, field: cat, top: TOP}\n")
    cache = tmp_path / "cache"
    spec.write_text(text.replace("TOP", "3"))
    first = Dashboard.open(spec, spark=spark, cache_dir=cache)
    spec.write_text(text.replace("TOP", "4"))  # a new spec: a new capture, replacing the first in the entry
    second = Dashboard.open(spec, spark=spark, cache_dir=cache)
    served = versions.served(second)
    assert served["spec_sha256"] == spec_hash(load_dashboard(spec))
    assert served["source_fingerprint"] == files_fingerprint(local_files(load_dashboard(spec).source))
    assert served["brushfire_version"] == __version__ and served["rows"] == 3000
    got = versions.history(cache, "v")
    assert [e["cached"] for e in got] == [True, False]
    assert [e["spec_sha256"] for e in got] == [served["spec_sha256"], versions.served(first)["spec_sha256"]]
    assert main(["capture", str(spec), "--history", "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("captures of dashboard 'v' in ")
    assert out[2].endswith("cached  <- the spec and source as they are now")
    assert out[2].split()[2] == served["spec_sha256"][:8]
    assert out[3].endswith("replaced")
    # what clients are told
    with live_server(create_app([second])) as addr:
        listed = httpx.get(f"http://{addr}/api/dashboards").json()[0]["version"]
        described = httpx.get(f"http://{addr}/api/dashboards/v").json()["version"]
    assert listed == described == versions.public(served)
