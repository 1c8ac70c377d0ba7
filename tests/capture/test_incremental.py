"""Incremental capture: what a capture reuses after appended, changed or removed input
files and after spec edits, and that the result answers every interaction as a capture
from scratch does (views, caveats, selected rows, details, in the same rid order) — the
lineage itself may differ where the incremental capture kept earlier decisions (bucket
edges, cube blocks, a dropdown's key order: its choices are listed as from scratch) that
still hold.

The sequences run in this process (capture/local.py: each table an input file); the
last test does the same on Spark over a folder of Parquet files."""

from __future__ import annotations

import copy
import math
import shutil
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from brushfire import Dashboard
from brushfire.capture.local import capture_tables
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard
from brushfire.spec.models import CALENDAR_PARTS, is_part
from brushfire.values import format_instant
from brushfire.views import view_type
from capture.test_copies import assert_copies_as_built
from rows import make_rows

CONFIG = CaptureConfig(block_rows=64, shard_rows=256, max_keys=40, max_cube_blocks=6)
DENSE = CaptureConfig(block_rows=64, shard_rows=256, max_keys=400, max_cube_blocks=6)  # k, m dense
DETAILS = ["x", "cat", "t", "m"]


def spec(views: list[dict] | None = None, details: list[str] = DETAILS, **interactions) -> dict:
    views = views if views is not None else [
        {"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
        {"name": "hk", "type": "histogram", "field": "k", "bin": {"maxbins": 12}},
        {"name": "cat", "type": "categorical", "field": "cat", "top": 5},
        {"name": "week", "type": "temporal", "field": "t", "unit": "week"},
        {"name": "mean_m", "type": "histogram", "field": "k", "brush": "none",
         "bin": {"step": 20, "extent": [-20, 120]}, "aggregate": {"op": "mean", "field": "m"}},
        {"name": "med_x", "type": "categorical", "field": "dest", "top": 3, "brush": "none",
         "aggregate": {"op": "median", "field": "x"}},
    ]
    return {"name": "inc", "source": {"path": "/nonexistent/inc.parquet"}, "views": views,
            "interactions": {"crossfilter": [{"views": [v["name"] for v in views]}],
                             "details": {"columns": details}, **interactions}}


def capture(d: dict, tables: dict[str, pa.Table], cache, config: CaptureConfig = CONFIG):
    dash = parse_dashboard(d)
    return capture_tables(plan_capture(dash), tables, cache, config)


def lineage(store) -> dict:
    """Everything a store holds, shard names apart."""
    out = {"layout": store.layout.to_json(), "n_rows": store.n_rows,
           "base": [store.base.counts, store.base.sums, store.base.oks],
           "keycounts": store.keycounts, "sizes": [s.n_rows for s in store.shards]}
    for k, c in sorted(store.cubes.items()):
        out[f"cube {k}"] = [c.counts, c.sums, c.oks]
    out["layout arrays"] = {k: v for k, v in sorted(store.layout.arrays.items())}
    for i, s in enumerate(store.shards):
        out[f"shard {i}"] = list(s.arrays)
        if s.snapshot is not None:
            out[f"snapshot {i}"] = s.snapshot.to_pydict()
    return out


def assert_same_answers(a, b, d: dict, seed: int = 0, steps: int = 15) -> None:
    """Stores `a` and `b` of spec `d` answer a random sequence of brushes, selects and
    clears alike: every view (counts, values, caveats), the selected rows and details."""
    from brushfire.engine.session import Session

    dash = parse_dashboard(d)
    plan = plan_capture(dash)
    sa, sb = Session(a, plan), Session(b, plan)
    assert a.n_rows == b.n_rows
    rng = np.random.default_rng(seed)

    def same(context) -> None:
        va, vb = sa.views(), sb.views()
        assert va.keys() == vb.keys()
        for name in va:
            x, y = va[name], vb[name]
            assert (x.labels, x.counts, x.caveats) == (y.labels, y.counts, y.caveats), (context, name)
            for p, q in zip(x.values, y.values, strict=True):
                assert p == q or (p is not None and q is not None and math.isclose(p, q, rel_tol=1e-9,
                                                                                    abs_tol=1e-9)), \
                    (context, name, x.values, y.values)
        assert sa.count_selected() == sb.count_selected(), context
        if plan.detail_columns:
            assert sa.details(page=0).to_pandas().equals(sb.details(page=0).to_pandas()), context

    same("base")
    filters = [f for f in plan.filters if f.kind in ("interval", "points")]
    for i in range(steps):
        if not filters:
            break
        f = filters[int(rng.integers(0, len(filters)))]
        v = a.view(f.name)
        if rng.random() < 0.15 or not v.labels:  # (no bars, over no rows: nothing to brush)
            sa.clear(f.name), sb.clear(f.name)
        elif f.kind == "points":
            values = [x for x in v.labels if rng.random() < 0.4] or v.labels[:1]
            sa.select(f.name, values), sb.select(f.name, values)
        else:
            view = dash.view(f.name)
            part = is_part(view)  # (brushed by the part's values, bars centred on them)
            lo, hi = (CALENDAR_PARTS[view.unit][0] - 0.5, CALENDAR_PARTS[view.unit][0] + len(v.labels) - 0.5) \
                if part else view_type(view).extent(v.labels)
            x = sorted(rng.uniform(float(lo) - 1, float(hi) + 1, 2))
            interval = [format_instant(int(t)) for t in x] if view.type == "temporal" and not part \
                else [float(t) for t in x]
            sa.brush(f.name, interval), sb.brush(f.name, interval)
        same((i, f.name))


def assert_same(a, b, path="") -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            assert_same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)) and not (a and isinstance(a[0], (int, float, str, type(None)))):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=path)
    else:
        assert repr(a) == repr(b), path  # (NaN == NaN)


def tables_of(*parts: tuple[int, int]) -> dict[str, pa.Table]:
    return {f"f{i}": make_rows(n, seed) for i, (n, seed) in enumerate(parts)}


def shifted(table: pa.Table, by: float) -> pa.Table:
    """New values beyond the old extents, new categories and later times."""
    x = pc.add(table["x"], float(by))
    cat = pa.array([None if c is None else f"new{c}" for c in table["cat"].to_pylist()])
    t = pc.add(table["t"], pa.scalar(200 * 86_400_000_000, pa.duration("us")))
    return table.set_column(0, "x", x).set_column(2, "cat", cat).set_column(4, "t", t)


def test_an_appended_file_is_scanned_alone_and_the_result_is_a_full_capture(tmp_path):
    tables = tables_of((700, 1), (500, 2))
    first = capture(spec(), tables, tmp_path / "inc")
    assert "scanning every file" in first.info.changes[0]
    tables["f2"] = shifted(make_rows(300, 3), 400)  # beyond every extent, new categories
    again = capture(spec(), tables, tmp_path / "inc")
    assert any("reused 2 of 3 input files" in c for c in again.info.changes), again.info.changes
    assert any("scanning 1 new and 0 changed file" in c for c in again.info.changes)
    full = capture(spec(), tables, tmp_path / "full")
    assert_same_answers(full, again, spec())
    assert again.n_rows == 1500


def test_an_append_like_the_data_before_keys_only_the_new_file(tmp_path):
    d = spec()
    d["views"][-1] = {**d["views"][-1], "top": 5, "sort": "name"}  # bars that cannot change
    tables = tables_of((700, 1), (500, 2))
    first = capture(d, tables, tmp_path / "inc")
    tables["f2"] = make_rows(300, 3)  # more of the same: no new extents, categories or weeks
    again = capture(d, tables, tmp_path / "inc")
    new = len(again.shards) - len(first.shards)
    assert f"per-row lineage built for {new} of {len(again.shards)} shards" in \
        " ".join(again.info.changes), again.info.changes
    assert_same_answers(capture(d, tables, tmp_path / "full"), again, d)


def test_changed_and_removed_files(tmp_path):
    tables = tables_of((400, 1), (500, 2), (300, 3))
    capture(spec(), tables, tmp_path / "inc")
    tables["f1"] = make_rows(450, 9)
    del tables["f2"]
    again = capture(spec(), tables, tmp_path / "inc")
    assert any("scanning 0 new and 1 changed file" in c for c in again.info.changes)
    assert any("1 file gone" in c for c in again.info.changes)
    assert_same_answers(capture(spec(), tables, tmp_path / "full"), again, spec())


def test_a_file_of_unknown_size_and_time_is_scanned_again_at_every_capture(tmp_path, monkeypatch):
    """A file Spark lists that is not on this machine (`hdfs://`, `s3a://`) has no size or
    modification time known here (-1 both): its shards were kept at every capture, so an
    object rewritten under its name kept its old rows."""
    from brushfire.capture import local

    def unknown(self) -> list[dict]:
        return [{"uri": uri, "path": uri, "size": -1, "mtime_ns": -1} for uri in self._uris]

    monkeypatch.setattr(local.TableRunner, "files", unknown)
    tables = tables_of((400, 1), (500, 2))
    capture(spec(), tables, tmp_path / "inc")
    tables["f1"] = make_rows(450, 9)  # the same name, other rows
    again = capture(spec(), tables, tmp_path / "inc")
    assert again.info.changes[:2] == [
        "reused 0 of 2 input files (0 rows in 0 shards) captured before",
        "scanning 2 files again whose size and modification time are not known here (not local "
        "files): their changes cannot be told"]
    assert_same_answers(capture(spec(), tables, tmp_path / "full"), again, spec())


def test_spec_edits_rebuild_only_what_depends_on_them(tmp_path):
    tables = tables_of((600, 1), (600, 2))
    capture(spec(), tables, tmp_path / "inc")
    # a new view over a field already captured: no scan, its own parts only
    views = [*spec()["views"], {"name": "hx5", "type": "histogram", "field": "x",
                                "bin": {"step": 5, "extent": [0, 100]}}]
    added = capture(spec(views), tables, tmp_path / "inc")
    assert not any(c.startswith("scanning") for c in added.info.changes), added.info.changes
    assert_same_answers(capture(spec(views), tables, tmp_path / "full1"), added, spec(views))
    computed = next(c for c in added.info.changes if c.startswith("partial results"))
    assert "computed" in computed and not computed.startswith("partial results: 0 ")
    # a changed bin: no scan
    views[0] = {**views[0], "bin": {"step": 25, "extent": [0, 100]}}
    rebinned = capture(spec(views), tables, tmp_path / "inc")
    assert not any(c.startswith("scanning") for c in rebinned.info.changes)
    assert_same_answers(capture(spec(views), tables, tmp_path / "full2"), rebinned, spec(views))
    # a new field: scanned alone, over the files captured before
    views.append({"name": "dest", "type": "categorical", "field": "dest", "top": 3})
    widened = capture(spec(views, details=[*DETAILS, "k"]), tables, tmp_path / "inc")
    assert any("scanning k (details) alone over 2 files" in c for c in widened.info.changes), \
        widened.info.changes
    wide = spec(views, details=[*DETAILS, "k"])
    assert_same_answers(capture(wide, tables, tmp_path / "full3"), widened, wide)
    # nothing changed: every part reused
    same = capture(spec(views, details=[*DETAILS, "k"]), tables, tmp_path / "inc")
    assert any("every part reused" in c for c in same.info.changes), same.info.changes
    assert "built for 0 of 6 shards" in same.info.changes[-1]  # (the copies: capture/copies.py)


def renamed(d: dict, names: dict[str, str]) -> dict:
    d = copy.deepcopy(d)
    for v in d["views"]:
        v["name"] = names.get(v["name"], v["name"])
    d["interactions"]["crossfilter"] = [{"views": [v["name"] for v in d["views"]]}]
    return d


def test_a_renamed_view_keeps_its_parts(tmp_path):
    """Renaming views (one keyed by its field's values, one by its bars: a bars dim) is
    no change to what they count: every part is reused, under the new names."""
    tables = tables_of((600, 1), (600, 2))
    capture(spec(), tables, tmp_path / "inc")
    d = renamed(spec(), {"hx": "x_hist", "cat": "category"})
    got = capture(d, tables, tmp_path / "inc")
    assert not any(c.startswith(("scanning", "per-row", "partial results: ")) and "computed" in c
                   for c in got.info.changes), got.info.changes
    assert "lineage: every part reused (nothing the layout decides changed)" in got.info.changes
    n = next(c for c in got.info.changes if "under a new name" in c)
    assert n.startswith("partial results: ") and not n.startswith("partial results: 0 "), n
    assert_same_answers(capture(d, tables, tmp_path / "full"), got, d)
    back = capture(spec(), tables, tmp_path / "inc")  # and back: reused again
    assert "lineage: every part reused (nothing the layout decides changed)" in back.info.changes
    assert_same_answers(capture(spec(), tables, tmp_path / "full2"), back, spec())


def test_a_removed_file_that_takes_values_away_keys_no_shard_again(tmp_path):
    """k has a dense dim (a key per distinct value); the removed file held two values no
    other file has. The shards kept keep their keys (the dim keeps the old values, two of
    them now on no row), and every answer is a capture's from scratch, also after an
    append that brings new values."""
    d = spec()
    d["views"][-1] = {**d["views"][-1], "top": 5, "sort": "name"}  # bars that cannot change
    tables = tables_of((400, 1), (500, 2), (300, 3))
    first = capture(d, tables, tmp_path / "inc", DENSE)
    del tables["f1"]
    full = capture(d, tables, tmp_path / "full", DENSE)
    k = first.layout.dims[first.layout.dim_index("value:k")]
    assert k.kind == "dense" and full.layout.dims[full.layout.dim_index("value:k")].nkeys < k.nkeys
    again = capture(d, tables, tmp_path / "inc", DENSE)
    assert "lineage: every part reused (nothing the layout decides changed)" in again.info.changes, \
        again.info.changes
    assert_same_answers(full, again, d)
    tables["f3"] = widened(make_rows(200, 4), 7)  # new values of k: keyed again, as they must
    appended = capture(d, tables, tmp_path / "inc", DENSE)
    assert_same_answers(capture(d, tables, tmp_path / "full2", DENSE), appended, d)


def test_a_measure_moves_between_a_stored_column_and_a_fine_dims_raw_values(tmp_path):
    """mean_m reads m from a stored column until a view keys m per row (a fine dim, past
    40 values): then from that dim's raw values, and back when the view goes."""
    tables = tables_of((600, 1), (600, 2))
    d = spec()
    assert capture(d, tables, tmp_path / "inc").layout.view("mean_m").measure == "stored"
    views = [*spec()["views"], {"name": "hm", "type": "histogram", "field": "m",
                                "bin": {"step": 25, "extent": [-50, 300]}}]
    got = capture(spec(views), tables, tmp_path / "inc")
    assert got.layout.view("mean_m").measure == "raw" and got.layout.n_meas == 0
    assert_same_answers(capture(spec(views), tables, tmp_path / "full1"), got, spec(views))
    back = capture(d, tables, tmp_path / "inc")
    assert back.layout.view("mean_m").measure == "stored" and back.layout.n_meas == 1
    assert_same_answers(capture(d, tables, tmp_path / "full2"), back, d)


def test_a_dropdowns_choices_after_an_append_are_listed_as_a_full_capture_lists_them(tmp_path):
    """Its keys keep their order (no shard is keyed again), but the choices the page and the
    errors list follow the counts now, most rows first, as a capture from scratch has them."""
    d = spec(parameters=[{"name": "where", "field": "dest", "widget": "dropdown", "op": "eq"}])
    tables = {"f0": make_rows(300, 1)}
    dest = np.array(["EEE"] * 80 + ["ZZZ"] * 150)  # a new choice to the top, EEE next
    tables["f1"] = make_rows(len(dest), 2).set_column(3, "dest", pa.array(dest))
    inc = tmp_path / "inc"
    capture(d, {"f0": tables["f0"]}, inc)
    got = capture(d, tables, inc)
    want = capture(d, tables, tmp_path / "full")
    assert got.layout.dims != want.layout.dims  # (the appended capture kept its keys' order)
    assert got.parameter_domain("where") == want.parameter_domain("where")
    assert want.parameter_domain("where")[1][:2] == ["ZZZ", "EEE"]
    assert_same_answers(want, got, d)


def test_a_capture_that_fails_after_scanning_a_field_again_leaves_the_last_one_sound(tmp_path, monkeypatch):
    """A changed dimension table scans its joined column again over the files captured
    before; the scan's files replaced the kept shards' own (the same names), so a capture
    failing after it (here its key job) left the entry's last capture holding the new
    table's values under the old table's definition: the next capture over the old table
    reused them, and its views counted the new table's zones."""
    from brushfire.capture import local
    from brushfire.errors import CaptureError

    d = spec([{"name": "zone", "type": "categorical", "field": "dd.zone"},
              {"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}}],
             details=["x", "dd.zone"])
    d["source"]["joins"] = [{"name": "dd", "path": "/nonexistent/d.parquet", "key": "code", "on": "dest"}]
    codes = ["AAA", "BBB", "CCC", "DDD", "EEE"]
    before = pa.table({"code": codes, "zone": ["n", "n", "s", "s", "e"]})
    edited = pa.table({"code": codes, "zone": ["w", "e", "e", "n", "w"]})
    tables = tables_of((800, 1), (600, 2))

    def run(dims, cache):
        return capture_tables(plan_capture(parse_dashboard(d)), tables, cache, CONFIG, joins={"dd": dims})

    run(before, tmp_path / "inc")
    with monkeypatch.context() as patched:
        patched.setattr(local.TableRunner, "key", lambda *_: (_ for _ in ()).throw(CaptureError("key job failed")))
        with pytest.raises(CaptureError, match="key job failed"):
            run(edited, tmp_path / "inc")
    tables["f2"] = make_rows(300, 3)  # (new data: a capture, not the entry as it is)
    again = run(before, tmp_path / "inc")
    assert any("scanning 1 new and 0 changed file" in c for c in again.info.changes), again.info.changes
    assert_same_answers(run(before, tmp_path / "full"), again, d)


def test_a_display_only_edit_reopens_from_the_cache(tmp_path, small_parquet):
    d = spec()
    d["source"]["path"] = str(small_parquet)
    dash = parse_dashboard(d)
    capture_tables(plan_capture(dash), {"t": pq.read_table(small_parquet)}, tmp_path, CONFIG)
    # (Dashboard.open's check: the spec's hash and the source's files; the local capture
    # names its table, not the file, so the entry's files differ from the folder's)
    retitled = copy.deepcopy(d)
    retitled["title"] = "Another title"
    retitled["views"][0]["title"] = "x, retitled"
    from brushfire.lineage.store import spec_hash

    assert spec_hash(parse_dashboard(retitled)) == spec_hash(dash)


def test_page_size_and_parameter_defaults_keep_the_capture(tmp_path, small_parquet):
    """The details' page size and where a parameter starts are no part of the lineage: an
    edit of either keeps the capture current (before, each cost a capture pass), and the
    dashboard served over it pages and starts as the edited spec says."""
    from brushfire.lineage.store import load_store, spec_hash

    d = spec(parameters=[{"name": "pick", "field": "cat", "widget": "dropdown"}])
    d["source"]["path"] = str(small_parquet)
    dash = parse_dashboard(d)
    store = capture_tables(plan_capture(dash), {"t": pq.read_table(small_parquet)}, tmp_path, CONFIG)
    edited = copy.deepcopy(d)
    edited["interactions"]["details"]["page_size"] = 3
    value = store.layout.views[2].labels[0]  # (a value of cat the data takes)
    edited["interactions"]["parameters"][0]["default"] = value
    edited = parse_dashboard(edited)
    assert spec_hash(edited) == spec_hash(dash)
    served = Dashboard(edited, plan_capture(edited), load_store(store.directory, edited))
    session = served.engine_session()
    assert session.filters["pick"] == value
    page = session.details()
    assert page.num_rows == 3 and set(page.column("cat").to_pylist()) == {value}


def distinct_x(n: int, seed: int) -> pa.Table:
    """make_rows with x of all distinct values: a fine dim's field, which the scan keeps
    as its values (no dictionary, no counts) when nothing counts it."""
    rows = make_rows(n, seed)
    return rows.set_column(0, "x", pa.array(np.random.default_rng(seed).normal(50, 20, n)))


def test_a_field_counted_for_the_first_time_is_scanned_again(tmp_path):
    """A field of mostly distinct numbers that only a histogram reads is kept by the scan
    as its values, without value counts; a categorical view added over it needs them
    (capture/stats.py): the capture failed reading the counts the kept shards do not have
    (FileNotFoundError). Its files are scanned for it again."""
    tables = {"f0": distinct_x(1500, 1), "f1": distinct_x(1200, 2)}
    capture(spec(), tables, tmp_path / "inc")
    d = spec([*spec()["views"], {"name": "xcat", "type": "categorical", "field": "x", "top": 5}])
    again = capture(d, tables, tmp_path / "inc")
    assert any(c.startswith("scanning x alone over 2 files") for c in again.info.changes), \
        again.info.changes
    assert_same_answers(capture(d, tables, tmp_path / "full"), again, d)
    back = capture(spec(), tables, tmp_path / "inc")  # and without it again: nothing scanned
    assert not any(c.startswith("scanning") for c in back.info.changes), back.info.changes
    assert_same_answers(capture(spec(), tables, tmp_path / "full2"), back, spec())


@pytest.mark.parametrize("size", ["block_rows", "shard_rows"])
def test_a_capture_with_other_sizes_scans_every_file_again(tmp_path, size):
    """The scan encodes a shard's fields with each block's order by value (block_rows)
    and cuts a split into shards (shard_rows): shards kept from a capture with other
    sizes read their orders with the wrong blocks (a median's gathered rows disagreed
    with its counts), or a field scanned alone over them came in other shards ('the rows
    of ... differ from its earlier capture')."""
    tables = tables_of((700, 1), (500, 2))
    capture(spec(), tables, tmp_path / "inc")
    config = replace(CONFIG, **{size: getattr(CONFIG, size) * 2})
    d = spec(details=[*DETAILS, "k", "dest"])  # (k scanned for its details too)
    again = capture(d, tables, tmp_path / "inc", config)
    assert any("scanning every file" in c for c in again.info.changes), again.info.changes
    assert_same_answers(capture(d, tables, tmp_path / "full", config), again, d)


OPS = st.lists(st.sampled_from(["append", "widen", "change", "remove", "add_view", "drop_view",
                                "rebin", "restep", "details", "aggregate", "regroup", "top",
                                "unit", "unbrush", "rename", "odd"]), min_size=1, max_size=5)


def odd_rows(rng, seed: int) -> pa.Table:
    """A file a user may well add: no rows, one row, a column all null, NaN, +-inf and
    -0.0 in the measures, integers near int64's extremes, one category only."""
    kind = str(rng.choice(["empty", "one", "allnull", "nonfinite", "huge", "onecat", "negzero"]))
    n = {"empty": 0, "one": 1}.get(kind, int(rng.integers(1, 200)))
    t = make_rows(n, seed)
    if kind == "allnull":
        i = int(rng.integers(0, t.num_columns))
        t = t.set_column(i, t.schema.field(i).name, pa.nulls(n, t.schema.field(i).type))
    elif kind == "nonfinite":
        m = np.array(t["m"].to_numpy(zero_copy_only=False), dtype=float)
        m[rng.random(n) < 0.3] = np.nan
        m[rng.random(n) < 0.2] = np.inf
        m[rng.random(n) < 0.2] = -np.inf
        m[rng.random(n) < 0.2] = -0.0
        x = np.array(t["x"].to_numpy(zero_copy_only=False), dtype=float)
        x[rng.random(n) < 0.2] = np.inf
        x[rng.random(n) < 0.2] = -np.inf
        x[rng.random(n) < 0.2] = -0.0
        t = t.set_column(5, "m", pa.array(m)).set_column(0, "x", pa.array(x))
    elif kind == "huge":
        k = rng.choice([2**62, -(2**62), 2**53 + 1, 2**63 - 1, -(2**63)], n).astype(np.int64)
        t = t.set_column(1, "k", pa.array(k, pa.int64()))
        t = t.set_column(5, "m", pa.array(rng.choice([1e300, -1e300, 1e-300, 5e15], n)))
    elif kind == "onecat":
        t = t.set_column(2, "cat", pa.array(["zz"] * n)).set_column(3, "dest", pa.array(["ZZZ"] * n))
    elif kind == "negzero":
        t = t.set_column(0, "x", pa.array(np.where(rng.random(n) < 0.5, -0.0, 0.0)))
        t = t.set_column(5, "m", pa.array(np.where(rng.random(n) < 0.5, -0.0, 0.0)))
    return t


def widened(table: pa.Table, by: int) -> pa.Table:
    """New integer values of k and m among, below and above the old ones."""
    k = pc.add(table["k"], by)
    m = pc.add(pc.multiply(table["m"], 0.5), float(by))
    return table.set_column(1, "k", k).set_column(5, "m", m)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, seed=st.integers(0, 1000), dense=st.booleans())
@example(ops=["add_view", "remove"], seed=416, dense=False)  # (left a file of no rows: views without bars)
@example(ops=["aggregate", "rebin"], seed=1, dense=True)
@example(ops=["restep", "widen", "append"], seed=5, dense=False)  # a step's extent widened twice
@example(ops=["unit"], seed=1, dense=False)  # (a calendar part: brushed by its values)
@example(ops=["rename", "remove", "rename", "append"], seed=3, dense=True)
def test_any_sequence_of_appends_and_edits_equals_a_capture_from_scratch(tmp_path_factory, ops, seed,
                                                                           dense):
    """(`dense`: k and m keyed by value, so that appended values renumber their keys.)"""
    rng = np.random.default_rng(seed)
    inc = tmp_path_factory.mktemp("inc")
    tables = tables_of((int(rng.integers(50, 600)), seed), (int(rng.integers(0, 300)), seed + 1))
    d = spec()
    config = DENSE if dense else CONFIG
    capture(d, tables, inc, config)
    groups: list[list[str]] = []  # crossfilter groups ([]: one of every view)
    for n, op in enumerate(ops, 1):
        if op == "append":
            tables[f"g{n}"] = shifted(make_rows(int(rng.integers(1, 400)), seed + n), rng.integers(-90, 90))
        elif op == "widen":
            tables[f"w{n}"] = widened(make_rows(int(rng.integers(1, 300)), seed + n), int(rng.integers(-30, 30)))
        elif op == "odd":
            tables[f"o{n}"] = odd_rows(rng, seed + 200 + n)
            if len(tables) > 1 and rng.random() < 0.3:  # or it replaces a file
                tables[sorted(tables)[0]] = tables.pop(f"o{n}")
        elif op == "change" and tables:
            name = sorted(tables)[int(rng.integers(0, len(tables)))]
            tables[name] = make_rows(int(rng.integers(1, 400)), seed + 100 + n)
        elif op == "remove" and len(tables) > 1:
            del tables[sorted(tables)[int(rng.integers(0, len(tables)))]]
        elif op == "add_view":
            d["views"].append({"name": f"v{n}", "type": "histogram", "field": "m",
                               "bin": {"step": float(rng.integers(5, 60)), "extent": [-50, 300]}})
        elif op == "rename":  # its parts are found under the old name (parts.py)
            i = int(rng.integers(0, len(d["views"])))
            d["views"][i] = {**d["views"][i], "name": f"r{n}"}
        elif op == "drop_view" and len(d["views"]) > 3:
            d["views"].pop(int(rng.integers(0, len(d["views"]))))
        elif op == "rebin":
            d["views"][0] = {**d["views"][0], "bin": {"maxbins": int(rng.integers(2, 40))}} \
                if d["views"][0]["type"] == "histogram" else d["views"][0]
        elif op == "restep":  # a step whose extent the data decides (widened by appends)
            d["views"][0] = {**d["views"][0], "bin": {"step": float(rng.choice([0.5, 2.5, 10, 40]))}} \
                if d["views"][0]["type"] == "histogram" else d["views"][0]
        elif op == "details":
            d["interactions"]["details"]["columns"] = list(rng.choice(
                ["x", "k", "cat", "dest", "t", "m"], size=int(rng.integers(1, 5)), replace=False))
        elif op == "aggregate":  # another statistic of a bar chart or histogram
            i = int(rng.integers(0, len(d["views"])))
            if d["views"][i]["type"] in ("histogram", "categorical"):
                d["views"][i] = {**d["views"][i], "brush": "none", "aggregate": {
                    "op": str(rng.choice(["count", "sum", "mean", "median", "max"])),
                    "field": str(rng.choice(["m", "x", "k"]))}}
                if d["views"][i]["aggregate"]["op"] == "count":
                    d["views"][i]["aggregate"] = {"op": "count"}
        elif op == "unbrush":  # a view's brush taken away or given back
            i = int(rng.integers(0, len(d["views"])))
            v = d["views"][i]
            d["views"][i] = {k: x for k, x in v.items() if k != "brush"} if v.get("brush") == "none" \
                and "aggregate" not in v else {**v, "brush": "none"}
        elif op == "top":
            for i, v in enumerate(d["views"]):
                if v["type"] == "categorical":
                    d["views"][i] = {**v, "top": int(rng.integers(1, 8))}
        elif op == "unit":
            for i, v in enumerate(d["views"]):
                if v["type"] == "temporal":
                    d["views"][i] = {**v, "unit": str(rng.choice(["day", "week", "month", "day_of_week"]))}
        names = [v["name"] for v in d["views"]]
        if op == "regroup" or (groups and set(sum(groups, [])) != set(names)):
            cut = int(rng.integers(1, len(names))) if len(names) > 1 else 1
            groups = [names[:cut], names[cut:]] if op == "regroup" and names[cut:] else []
        d["interactions"]["crossfilter"] = [{"views": g} for g in groups or [names]]
        got = capture(d, tables, inc, config)
        want = capture(d, tables, tmp_path_factory.mktemp("full"), config)
        assert_same_answers(want, got, d, seed + n)
        assert_copies_as_built(got)


@pytest.mark.spark
def test_on_spark_an_appended_parquet_file_is_read_alone(spark, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    for i, (n, seed) in enumerate([(900, 1), (700, 2)]):
        pq.write_table(make_rows(n, seed), folder / f"part-{i}.parquet")
    d = spec()
    d["source"] = {"path": str(folder), "format": "parquet"}
    dash = parse_dashboard(d)
    first = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG).from_cache
    pq.write_table(shifted(make_rows(400, 3), 300), folder / "part-2.parquet")
    again = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert not again.from_cache and again.store.n_rows == first.store.n_rows + 400
    assert any("reused 2 of 3 input files" in c for c in again.store.info.changes), \
        again.store.info.changes
    full = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "full", config=CONFIG)
    assert_same_answers(full.store, again.store, d)
    # a removed file: its rows go, nothing is scanned
    (folder / "part-0.parquet").unlink()
    fewer = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert fewer.store.n_rows == 1100
    assert not any(c.startswith("scanning") for c in fewer.store.info.changes)
    shutil.rmtree(tmp_path / "full")
    assert_same_answers(Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "full",
                                       config=CONFIG).store, fewer.store, d)


@pytest.mark.spark
def test_a_dashboard_notices_new_data_and_refreshes_without_spark_until_then(spark, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(make_rows(600, 1), folder / "part-0.parquet")
    d = spec()
    d["source"] = {"path": str(folder), "format": "parquet"}
    dash = Dashboard.open(parse_dashboard(d), spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
    assert not dash.stale() and dash.refresh(spark=spark) is None  # no Spark job to tell
    assert len(spark.sparkContext.statusTracker().getJobIdsForGroup(None)) == jobs
    pq.write_table(make_rows(200, 2), folder / "part-1.parquet")
    assert dash.stale()
    newer = dash.refresh(spark=spark)
    assert newer is not None and newer.store.n_rows == 800 and not newer.stale()
    assert newer.store.manifest["created"] != dash.store.manifest["created"]
    # another process's newer capture of the entry is loaded, not captured again
    pq.write_table(make_rows(100, 3), folder / "part-2.parquet")
    other = Dashboard.open(parse_dashboard(d), spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert newer.stale()
    loaded = newer.refresh(spark=spark)
    assert loaded.from_cache and loaded.store.n_rows == other.store.n_rows == 900


@pytest.mark.spark
def test_on_spark_a_redefined_column_with_the_same_values_is_keyed_again(spark, tmp_path):
    """A derived column given another expression over the same set of values (so that its
    keys and every partial result's definition in the data's terms stay the same) still
    changes which row has which value: its rows are keyed and counted again. Another
    derived column, which does not read it, is kept."""
    path = tmp_path / "rows.parquet"
    pq.write_table(make_rows(900, 1), path)
    views = [{"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
             {"name": "ky", "type": "histogram", "field": "y", "bin": {"step": 1, "extent": [0, 7]}},
             {"name": "hx2", "type": "histogram", "field": "x2", "bin": {"step": 20, "extent": [0, 200]}}]

    def spec_of(expression: str) -> dict:
        d = spec(views)
        d["source"] = {"path": str(path), "columns": {"y": expression, "x2": "x * 2"}}
        return d

    Dashboard.open(parse_dashboard(spec_of("pmod(k, 7)")), spark=spark, cache_dir=tmp_path / "cache",
                   config=CONFIG)
    d = spec_of("pmod(k + 1, 7)")  # the values 0-6 still, on other rows
    again = Dashboard.open(parse_dashboard(d), spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    full = Dashboard.open(parse_dashboard(d), spark=spark, cache_dir=tmp_path / "full", config=CONFIG)
    assert not again.from_cache
    assert any(c.startswith("scanning y alone") for c in again.store.info.changes), again.store.info.changes
    assert not any(c.startswith("scanning") and "x2" in c for c in again.store.info.changes)
    assert_same_answers(full.store, again.store, d)


def test_a_layouts_long_lists_are_stored_as_arrays_and_read_back(tmp_path, monkeypatch):
    """Long lists of a layout (a fine dim's edges, a dense dim's values) are arrays beside
    the manifest, not JSON numbers: the store loads as one with them inline, and the next
    capture reads the earlier layout back (its bucket edges kept)."""
    from brushfire.lineage import layout as layout_module
    from brushfire.lineage import store as bstore

    config = CaptureConfig(block_rows=64, shard_rows=512, max_keys=600)
    tables = tables_of((1500, 1), (1500, 2))
    plan = plan_capture(parse_dashboard(spec()))
    packed = capture_tables(plan, tables, tmp_path / "packed", config)
    dims = bstore.read_manifest(packed.directory)["layout"]["dims"]
    refs = {(d["name"], f) for d in dims for f in layout_module.PACKED_FIELDS if isinstance(d[f], dict)}
    assert ("value:x", "edges") in refs, refs
    with monkeypatch.context() as m:
        m.setattr(layout_module, "_packable", lambda xs: None)
        inline = capture_tables(plan, tables, tmp_path / "inline", config)
    assert not any(isinstance(d[f], dict) for d in bstore.read_manifest(inline.directory)["layout"]["dims"]
                   for f in layout_module.PACKED_FIELDS)
    assert_same(lineage(inline), lineage(packed))
    tables["f2"] = make_rows(300, 3)  # more of the same
    again = capture_tables(plan, tables, tmp_path / "packed", config)
    x = packed.layout.dim_index("value:x")
    assert again.layout.dims[x].edges == packed.layout.dims[x].edges  # the earlier layout, read back
    assert_same_answers(capture_tables(plan, tables, tmp_path / "full", config), again, spec())


@pytest.mark.spark
def test_on_spark_a_partitioned_datasets_partition_column_is_a_field(spark, tmp_path):
    """A hive-partitioned folder (`year=2001/day=2001-03-01/...`): Spark reads `year` and
    `day` as columns (an int and a date), so views may show them (the check before Spark
    sees them too, and leaves a partition column's type to Spark unless it is a number),
    and a new partition is scanned alone."""
    folder = tmp_path / "data"

    def partition(year: int, seed: int, n: int) -> None:
        (folder / f"year={year}" / f"day={year}-03-01").mkdir(parents=True)
        pq.write_table(make_rows(n, seed), folder / f"year={year}" / f"day={year}-03-01" / "part-0.parquet")

    partition(2001, 1, 300)
    partition(2002, 2, 300)
    views = [*spec()["views"][:3], {"name": "year", "type": "categorical", "field": "year"},
             {"name": "day", "type": "temporal", "field": "day", "unit": "month"}]
    d = spec(views)
    d["source"] = {"path": str(folder), "format": "parquet"}
    dash = parse_dashboard(d)
    Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    partition(2003, 3, 200)
    again = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert any("reused 2 of 3 input files" in c for c in again.store.info.changes), \
        again.store.info.changes
    year = again.session().view("year")
    assert (year.labels[:3], year.counts[:3]) == ([2001, 2002, 2003], [300, 300, 200])
    full = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "full", config=CONFIG)
    assert_same_answers(full.store, again.store, d)


@pytest.mark.spark
@pytest.mark.parametrize("reader", ["derived column", "static filter"])
def test_on_spark_what_reads_a_column_is_scanned_again_when_its_type_changes(spark, tmp_path, reader):
    """CSV types are inferred from every file: a new file whose `k` has a fraction makes
    `k` a double in every file, and `CAST(k AS STRING)` of the files captured before
    changes ('3' becomes '3.0') though the derived column's own type (string) does not;
    a static filter reading it keeps other rows."""
    folder = tmp_path / "data"
    folder.mkdir()
    table = make_rows(400, 1).select(["k", "cat"])  # (no NaN: CSV would read 'nan' as text)
    pcsv.write_csv(table, folder / "part-0.csv")
    views = [{"name": "ks", "type": "categorical", "field": "ks", "top": 10},
             {"name": "hk", "type": "histogram", "field": "k", "bin": {"step": 10, "extent": [-20, 120]}}]
    d = spec(views, details=["k", "ks"])
    d["source"] = {"path": str(folder), "format": "csv", "options": {"header": "true", "inferSchema": "true"},
                   "columns": {"ks": "CAST(k AS STRING)" if reader == "derived column" else "cat"}}
    if reader == "static filter":  # ('12' passes, '12.0' does not)
        d["source"]["filters"] = ["k IS NULL OR length(CAST(k AS STRING)) < 3"]
    dash = parse_dashboard(d)
    Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    more = make_rows(100, 2).select(["k", "cat"])
    more = more.set_column(0, "k", pc.add(pc.cast(more["k"], pa.float64()), 0.5))
    pcsv.write_csv(more, folder / "part-1.csv")
    again = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    full = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "full", config=CONFIG)
    assert again.store.n_rows == full.store.n_rows
    assert again.store.view("ks").labels == full.store.view("ks").labels
    assert_same_answers(full.store, again.store, d)


@pytest.mark.spark
def test_on_spark_an_appended_file_spark_cannot_read_is_named_with_why_and_the_capture_kept(spark, tmp_path):
    """The check before Spark reads one footer of a folder, so a bad file appended later is
    found by the scan: the error names it and says why (not only 'error while reading
    file'), and the earlier capture stays the entry's."""
    from brushfire.errors import CaptureError

    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(make_rows(300, 1), folder / "part-0.parquet")
    d = spec()
    d["source"] = {"path": str(folder), "format": "parquet"}
    dash = parse_dashboard(d)
    Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    (folder / "part-1.parquet").write_bytes(b"not parquet at all " * 50)
    with pytest.raises(CaptureError, match=r"part-1\.parquet: .*is not a Parquet file"):
        Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    (folder / "part-1.parquet").unlink()
    assert Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG).from_cache


@pytest.mark.spark
def test_on_spark_a_file_without_a_column_reads_it_as_null_said_and_refused_when_appended(spark, tmp_path):
    """Spark reads a folder of Parquet files by its first file's columns: a file without
    one of them reads it as null on its rows (as DuckDB's union of the files by name).
    A capture of the folder says so, naming the file and the column; a file appended or
    rewritten without a column the files captured before have is refused, named, before
    any job, and the entry's last capture stays (what `Dashboard.refresh`'s caller keeps
    serving)."""
    import duckdb

    from brushfire.errors import CaptureError

    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(make_rows(300, 1), folder / "part-0.parquet")
    pq.write_table(make_rows(200, 2).drop_columns(["m"]), folder / "part-1.parquet")
    d = spec()
    d["source"] = {"path": str(folder)}
    dash = parse_dashboard(d)
    first = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    lacking = f"{folder / 'part-1.parquet'}: no column 'm': its rows read it as null"
    assert any(c.startswith(lacking) for c in first.store.info.caveats), first.store.info.caveats
    want = [r[0] for r in duckdb.sql(f"SELECT m FROM read_parquet('{folder}/*.parquet', union_by_name "
                                     "= true, filename = true) ORDER BY filename, file_row_number").fetchall()]
    got = first.store.take(np.arange(first.store.n_rows), ["m"])["m"].to_pylist()  # (rid order: by file)
    assert got[300:] == [None] * 200 and repr(got) == repr(want)
    pq.write_table(make_rows(100, 3).drop_columns(["m", "x"]), folder / "part-2.parquet")
    assert first.stale()
    with pytest.raises(CaptureError) as info:
        first.refresh(spark=spark)
    assert str(info.value).startswith(
        f"{folder / 'part-2.parquet'}: has no column 'x', 'm', which the files captured before have: "
        "its rows would read them as null; the last capture is kept; hint: "), str(info.value)
    (folder / "part-2.parquet").unlink()
    again = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert again.from_cache and again.store.manifest["created"] == first.store.manifest["created"]


@pytest.mark.spark
def test_on_spark_a_file_appended_first_in_the_folder_without_a_column_is_named(spark, tmp_path):
    """The folder's columns are its first file's: a file appended without a column the
    others have, whose name sorts first, left the column out of the source, and the
    capture said only that the spec's column is not in the source. The file is named."""
    from brushfire.errors import SpecError

    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(make_rows(300, 1), folder / "part-0.parquet")
    d = spec()
    d["source"] = {"path": str(folder)}
    dash = parse_dashboard(d)
    first = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    pq.write_table(make_rows(100, 2).drop_columns(["m"]), folder / "a.parquet")
    with pytest.raises(SpecError, match=f"{folder / 'a.parquet'}: has no column 'm', which other files"):
        first.refresh(spark=spark)
    (folder / "a.parquet").unlink()
    assert Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG).from_cache


@pytest.mark.spark
def test_on_spark_a_partition_value_of_non_ascii_text_reads_as_its_folder_spells_it(spark, tmp_path):
    """pandas and pyarrow write a partition's value percent-encoded in UTF-8
    (`city=Z%C3%BCrich`), which Spark unescapes one byte to one character: the value was
    read as 'ZÃ¼rich' (DuckDB and pyarrow read 'Zürich')."""
    folder = tmp_path / "data"
    rows = make_rows(400, 1)
    cities = ["Zürich", "São Paulo", "a b", "plain"]
    rows.append_column("city", pa.array([cities[i % 4] for i in range(rows.num_rows)])).to_pandas() \
        .to_parquet(folder, partition_cols=["city"])
    views = [*spec()["views"][:3], {"name": "city", "type": "categorical", "field": "city", "top": 10}]
    d = spec(views)
    d["source"] = {"path": str(folder), "format": "parquet"}
    dash = parse_dashboard(d)

    def assert_as_pyarrow_reads_it(got) -> None:
        import pyarrow.dataset as ds

        want = ds.dataset(folder, format="parquet", partitioning="hive").to_table()
        counts = want.group_by("city").aggregate([([], "count_all")]).to_pylist()
        shown = dict(zip(got.store.view("city").labels, got.session().view("city").counts, strict=False))
        assert {k: n for k, n in shown.items() if n} == {w["city"]: w["count_all"] for w in counts}

    assert_as_pyarrow_reads_it(Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG))
    (folder / "city=M%C3%BCnchen").mkdir()
    make_rows(100, 2).to_pandas().to_parquet(folder / "city=M%C3%BCnchen" / "part-0.parquet")  # (k: double)
    again = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert any("reused 4 of 5 input files" in c for c in again.store.info.changes), again.store.info.changes
    assert_as_pyarrow_reads_it(again)
    full = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "full", config=CONFIG)
    assert_same_answers(full.store, again.store, d)


@pytest.mark.spark
def test_on_spark_a_file_moved_into_a_subfolder_is_gone_and_the_capture_stays_current(spark, tmp_path):
    """Spark reads a folder's subfolders only as a partitioned dataset's (`key=value`):
    a file moved into `archive/` is no longer read. The files listed without Spark still
    named it, so the capture after was never current: every open captured again, and a
    served dashboard was stale at every check (`serve --watch` captured in a loop)."""
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(make_rows(600, 1), folder / "day-1.parquet")
    pq.write_table(make_rows(300, 2), folder / "day-2.parquet")
    d = spec()
    d["source"] = {"path": str(folder)}
    dash = parse_dashboard(d)
    Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    (folder / "archive").mkdir()
    (folder / "day-1.parquet").rename(folder / "archive" / "day-1.parquet")
    moved = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert moved.store.n_rows == 300 and any("1 file gone" in c for c in moved.store.info.changes)
    assert not moved.stale()
    assert Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG).from_cache
    full = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "full", config=CONFIG)
    assert_same_answers(full.store, moved.store, d)


APPENDED_TYPES = {  # column, the appended file's type: read with its values (True) or refused (False)
    "k int32": ("k", pa.int32(), True), "m float32": ("m", pa.float32(), True),
    "t date": ("t", pa.date32(), True), "m of no type": ("m", pa.null(), True),
    "k double": ("k", pa.float64(), False), "k string": ("k", pa.string(), False),
    "cat of no type": ("cat", pa.null(), False), "t microseconds as numbers": ("t", pa.int64(), False),
}


@pytest.mark.spark
@pytest.mark.parametrize("case", list(APPENDED_TYPES))
def test_on_spark_a_file_appended_with_a_column_of_another_type(spark, tmp_path, monkeypatch, case):
    """A Parquet file appended whose column has another type than the folder's (its first
    file's): Spark widens some types with their values (int32 as bigint, float as double,
    a date as a timestamp, a column of no type as null), and the capture equals a full
    one; others failed in the scan, after Spark work, with no hint (or read other
    values): named before any job, with both types and what to do, the last capture kept."""
    from brushfire.capture.spark import SparkRunner
    from brushfire.errors import CaptureError

    column, typ, read = APPENDED_TYPES[case]
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(make_rows(300, 1), folder / "part-0.parquet")
    d = spec()
    d["source"] = {"path": str(folder)}
    dash = parse_dashboard(d)
    first = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    more = make_rows(100, 2)
    i = more.column_names.index(column)
    values = pa.nulls(more.num_rows) if typ == pa.null() else \
        pc.cast(more[column], pa.int64()) if typ == pa.int64() and column == "t" else \
        pc.cast(more[column], typ)
    pq.write_table(more.set_column(i, column, values), folder / "part-1.parquet")
    if read:
        again = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
        assert any("reused 1 of 2 input files" in c for c in again.store.info.changes), again.store.info.changes
        full = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "full", config=CONFIG)
        assert_same_answers(full.store, again.store, d)
        return
    monkeypatch.setattr(SparkRunner, "scan", lambda *a: pytest.fail("scanned"))
    with pytest.raises(CaptureError) as info:
        first.refresh(spark=spark)
    got = parquet_type_name(values.type)
    want = {"k": "bigint", "cat": "string", "t": "timestamp_ntz"}[column]
    what = f"'{column}' has no type (every value null, written without one)" if got == "void" else \
        f"'{column}' is {got}"
    assert str(info.value).startswith(
        f"{folder / 'part-1.parquet'}: column {what}; Spark reads the folder's {column} as {want} (the "
        "types in its first file, part-0.parquet) and cannot read this file's values so; the last "
        f"capture is kept; hint: write the file's {column} as {want}, as part-0.parquet has it"), str(info.value)
    monkeypatch.undo()
    (folder / "part-1.parquet").unlink()
    again = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert again.from_cache and again.store.manifest["created"] == first.store.manifest["created"]


def parquet_type_name(t: pa.DataType) -> str:
    from brushfire.source import parquet_spark_type

    return parquet_spark_type(t)


SPARK_READS = [  # (the folder's first file's type, another file's type)
    (pa.int64(), pa.int8()), (pa.int64(), pa.int32()), (pa.int64(), pa.uint32()), (pa.int32(), pa.int16()),
    (pa.float64(), pa.int32()), (pa.float64(), pa.float32()), (pa.decimal128(20, 2), pa.decimal128(10, 1)),
    (pa.decimal128(20, 2), pa.int32()), (pa.timestamp("us"), pa.date32()), (pa.timestamp("us"), pa.timestamp("ms")),
    (pa.timestamp("us"), pa.timestamp("us", tz="UTC")), (pa.timestamp("us", tz="UTC"), pa.timestamp("ms")),
    (pa.int64(), pa.null()), (pa.float64(), pa.null()), (pa.date32(), pa.null()),
    # not read with their values: failing, or read as other values
    (pa.int8(), pa.int32()), (pa.int64(), pa.float64()), (pa.float64(), pa.int64()), (pa.float32(), pa.float64()),
    (pa.decimal128(10, 1), pa.decimal128(20, 2)), (pa.decimal128(10, 1), pa.int32()), (pa.int64(), pa.date32()),
    (pa.date32(), pa.int32()), (pa.int64(), pa.timestamp("us")), (pa.date32(), pa.timestamp("us")),
    (pa.timestamp("us", tz="UTC"), pa.date32()), (pa.string(), pa.null()), (pa.float32(), pa.null()),
    (pa.timestamp("us"), pa.null()), (pa.bool_(), pa.null()), (pa.string(), pa.int64()),
]


@pytest.mark.spark
def test_which_parquet_types_spark_reads_as_a_folders_type_with_their_values(spark, tmp_path):
    """source.spark_reads_as says of each pair what Spark's Parquet reader does: a file's
    column read under the folder's type (its first file's) with the values it holds."""
    from datetime import date, datetime
    from decimal import Decimal

    from pyspark.sql import functions as F

    from brushfire.source import parquet_spark_type, spark_reads_as

    def values(t: pa.DataType) -> pa.Array:
        if pa.types.is_null(t):
            return pa.nulls(3)
        if pa.types.is_decimal(t):
            return pa.array([Decimal("1.5"), Decimal("-120.2"), None], t)
        if pa.types.is_date(t):
            return pa.array([date(2020, 1, 1), date(1999, 12, 31), None], t)
        if pa.types.is_timestamp(t):
            return pa.array([datetime(2020, 1, 1, 1, 2, 3), datetime(1999, 12, 31, 23), None], t)
        if pa.types.is_string(t):
            return pa.array(["a", "1", None], t)
        if pa.types.is_boolean(t):
            return pa.array([True, False, None], t)
        if pa.types.is_integer(t):  # (values a narrower type would not hold)
            return pa.array([{1: 100, 2: 300}.get(t.bit_width // 8, 70000), 3, None], t)
        return pa.array([100.5, -2.25, None], t)

    wrong = []
    for i, (first, other) in enumerate(SPARK_READS):
        folder = tmp_path / str(i)
        folder.mkdir()
        pq.write_table(pa.table({"c": values(first)}), folder / "p0.parquet")
        pq.write_table(pa.table({"c": values(other)}), folder / "p1.parquet")
        df = spark.read.parquet(str(folder))
        alone = spark.read.parquet(str(folder / "p1.parquet"))
        want = df.schema["c"].dataType.simpleString()
        try:
            got = [r[0] for r in df.where(F.input_file_name().endswith("p1.parquet")).select("c").collect()]
            as_alone = [None] * 3 if pa.types.is_null(other) else \
                [r[0] for r in alone.select(F.col("c").cast(want)).collect()]
            same = got == as_alone
        except Exception:  # noqa: BLE001 (Spark's scan failed on it)
            same = False
        if spark_reads_as(parquet_spark_type(other), want) != same:
            wrong.append((str(first), str(other), want, same))
    assert not wrong


@pytest.mark.spark
def test_on_spark_a_parquet_file_of_no_rows_is_read_whatever_its_columns(spark, tmp_path):
    """Spark reads no value of a file of no rows (pandas writes an empty frame's text
    columns of no type; a job's empty output may lack columns): appended beside files
    captured before it was refused for a column of no type under a string or for one it
    lacks; it is read, and the capture equals a full one."""
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(make_rows(300, 1), folder / "part-0.parquet")
    d = spec()
    d["source"] = {"path": str(folder)}
    dash = parse_dashboard(d)
    Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    empty = make_rows(0, 2).drop_columns(["m"])
    pq.write_table(empty.set_column(2, "cat", pa.nulls(0)), folder / "part-1.parquet")
    again = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert again.store.n_rows == 300 and not again.store.info.caveats, again.store.info.caveats
    full = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "full", config=CONFIG)
    assert_same_answers(full.store, again.store, d)


@pytest.mark.spark
def test_on_spark_a_first_file_with_a_column_of_no_type_is_named_as_what_to_rewrite(spark, tmp_path):
    """Spark types a folder's column by its first file: one of no type there (every value
    null, pandas' column of None) is read as int, and the other files' numbers cannot be
    read so. The files with numbers are named, and the hint is to type the first file's
    column (not to write the others as int); a view needing the column as a number does
    not make it 'neither number, temporal nor string' (the kind pyarrow gave no type)."""
    from brushfire.errors import CaptureError

    folder = tmp_path / "data"
    folder.mkdir()
    rows = make_rows(300, 1)
    pq.write_table(rows.set_column(5, "m", pa.nulls(300)), folder / "part-0.parquet")
    pq.write_table(make_rows(200, 2), folder / "part-1.parquet")
    for d in (spec(spec()["views"][:3], details=["x", "m"]), spec()):  # (m in details; averaged)
        d["source"] = {"path": str(folder)}
        with pytest.raises(CaptureError) as info:
            Dashboard.open(parse_dashboard(d), spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
        assert str(info.value) == (
            f"{folder / 'part-1.parquet'}: column 'm' is double; Spark reads the folder's m as int (its first "
            "file, part-0.parquet, has m of no type, every value null, which Spark reads as int) and cannot "
            "read this file's values so; hint: write part-0.parquet with m typed as the other files have it "
            "(pyarrow: table.cast(schema); pandas: astype), or every file of the folder with one type and "
            "capture afresh (brushfire capture --recapture)")
