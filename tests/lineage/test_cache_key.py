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


def test_mapping_order_keeps_the_key_and_what_is_counted_changes_it():
    d = spec()
    d["source"]["columns"] = {"b": "x * 2", "a": "x + 1"}
    assert cache_key(parse_dashboard(d), "fp") == cache_key(parse_dashboard(spec()), "fp")
    other = spec(bin={"step": 2, "extent": [0, 10]})
    assert cache_key(parse_dashboard(other), "fp") != cache_key(parse_dashboard(spec()), "fp")
    assert cache_key(parse_dashboard(spec()), "fp2") != cache_key(parse_dashboard(spec()), "fp")
