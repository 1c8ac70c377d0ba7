"""What identifies a capture: what the spec captures, not how it is drawn."""

from __future__ import annotations

from brushfire.lineage.store import capture_key as cache_key
from brushfire.spec import parse_dashboard


def spec(**view) -> dict:
    return {"name": "k", "source": {"path": "x.parquet", "columns": {"a": "x + 1", "b": "x * 2"}},
            "views": [{"name": "h", "type": "histogram", "field": "a",
                       "bin": {"step": 1, "extent": [0, 10]}, **view}]}


def test_titles_and_display_options_keep_the_key():
    base = cache_key(parse_dashboard(spec()), "fp")
    assert cache_key(parse_dashboard(spec(title="A title", scale="log", reverse=["y"])), "fp") == base
    retitled = parse_dashboard({**spec(), "title": "Dashboard"})
    assert cache_key(retitled, "fp") == base
    assert cache_key(parse_dashboard(spec(snap=True)), "fp") == base
    laid_out = parse_dashboard({**spec(), "layout": [{"title": "All", "rows": [["h"]]}]})
    assert cache_key(laid_out, "fp") == base


def test_a_heatmap_axis_reversed_keeps_the_key():
    def heat(reverse: bool) -> dict:
        axis = {"field": "a", "bin": {"step": 1, "extent": [0, 10]}}
        return {"name": "k", "source": {"path": "x.parquet", "columns": {"a": "x + 1", "b": "x * 2"}},
                "views": [{"name": "h", "type": "heatmap", "x": {**axis, "reverse": reverse},
                           "y": {**axis, "field": "b"}}]}
    assert cache_key(parse_dashboard(heat(True)), "fp") == cache_key(parse_dashboard(heat(False)), "fp")


def test_mapping_order_keeps_the_key_and_what_is_counted_changes_it():
    d = spec()
    d["source"]["columns"] = {"b": "x * 2", "a": "x + 1"}
    assert cache_key(parse_dashboard(d), "fp") == cache_key(parse_dashboard(spec()), "fp")
    other = spec(bin={"step": 2, "extent": [0, 10]})
    assert cache_key(parse_dashboard(other), "fp") != cache_key(parse_dashboard(spec()), "fp")
    assert cache_key(parse_dashboard(spec()), "fp2") != cache_key(parse_dashboard(spec()), "fp")


def test_two_spec_files_of_one_name_and_source_get_an_entry_each(small_parquet, tmp_path):
    """Two spec files with the same `name` over one source shared one cache entry: each
    one's capture rebuilt the other's parts. The entry is kept by the spec file whose
    capture made it; one spec edited in place, or an entry made before the file was
    recorded, is reused as before."""
    import json
    import shutil

    import pyarrow.parquet as pq

    from brushfire.capture.local import capture_table
    from brushfire.lineage.store import entry_dir, read_manifest
    from brushfire.plan import plan_capture
    from brushfire.spec import load_dashboard

    table = pq.read_table(small_parquet)
    a, b, cache = tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "cache"
    a.write_text(f"name: d\nsource: {{path: {small_parquet}}}\nviews:\n"
                 "  - {name: c, type: categorical, field: cat}\n")
    b.write_text(a.read_text().replace("field: cat", "field: dest"))
    first = capture_table(plan_capture(load_dashboard(a)), table, cache)
    assert first.directory == entry_dir(cache, load_dashboard(a))
    made = read_manifest(first.directory)["created"]
    assert entry_dir(cache, load_dashboard(b)) != first.directory
    other = capture_table(plan_capture(load_dashboard(b)), table, cache)
    assert other.directory == entry_dir(cache, load_dashboard(b)) != first.directory
    assert read_manifest(first.directory)["created"] == made  # (a's capture left alone)
    a.write_text(a.read_text().replace("field: cat", "field: k"))  # edited in place: its entry
    assert entry_dir(cache, load_dashboard(a)) == first.directory
    moved = a.rename(tmp_path / "moved.yaml")  # moved or renamed (its old file gone): its entry
    assert entry_dir(cache, load_dashboard(moved)) == first.directory
    moved.rename(a)
    # an entry made before the spec file was recorded is every such spec's, as it was
    manifest = first.directory / "manifest.json"
    meta = json.loads(manifest.read_text())
    del meta["spec_file"]
    manifest.write_text(json.dumps(meta))
    shutil.rmtree(other.directory)
    assert entry_dir(cache, load_dashboard(b)) == first.directory
