"""capture/layout.py: how order-statistic views and caveats are laid out (cells of bar x
measure block, reason pseudo-bars), on small captures without Spark (capture/local.py)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from brushfire.capture.local import capture_table
from brushfire.errors import CaptureError
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard


def table(n: int = 2000) -> pa.Table:
    rng = np.random.default_rng(3)
    return pa.table({"x": rng.normal(0, 10, n).round(2), "k": rng.integers(0, 50, n),
                     "s": rng.choice(["a", "b", "c"], n)})


def spec(aggregate: dict, bins: float = 5, **view) -> dict:
    return {"name": "t", "source": {"path": "t.parquet"},
            "views": [{"name": "h", "type": "histogram", "field": "x",
                       "bin": {"step": bins, "extent": [-20, 20]}},
                      {"name": "v", "type": "histogram", "field": "x", "brush": "none",
                       "bin": {"step": bins, "extent": [-20, 20]}, "aggregate": aggregate, **view}],
            "interactions": {"crossfilter": [{"views": ["h", "v"]}]}}


def capture(s: dict, tmp_path, **config):
    dash = parse_dashboard(s)
    return capture_table(plan_capture(dash), table(), tmp_path, CaptureConfig(**config))


def test_few_values_get_a_cell_per_key(tmp_path):
    store = capture(spec({"op": "median", "field": "k"}), tmp_path)
    v = store.layout.view("v")
    d = store.layout.dims[v.mdim]
    assert v.cells and d.kind == "dense" and v.width == d.nkeys + 1 == 51
    assert v.reasons == ["null", "below", "above"] and v.ncodes == (8 + 3) * 51
    assert v.code_dims[-1] == v.mdim  # bar x (keys + 1) + key


def test_over_the_cell_cap_keys_are_cut_into_equal_blocks(tmp_path):
    store = capture(spec({"op": "quantile", "field": "x", "p": 0.9}), tmp_path, max_cells=400)
    v = store.layout.view("v")
    d = store.layout.dims[v.mdim]
    assert v.width - 1 <= 400 // v.kbars - 1 < d.nkeys and d.indexed  # blocks, gathered by index
    rows = np.diff(np.concatenate([[0], np.cumsum(store.keycounts[v.mdim][:-1])])[v.mstarts])
    assert rows.max() < 3 * rows.mean()  # about equally many rows per block


def test_distinct_needs_a_key_per_value(tmp_path):
    capture(spec({"op": "distinct", "field": "s"}), tmp_path)  # strings: a dict dim
    with pytest.raises(CaptureError, match="aggregate op 'distinct' counts the keys of 'x'"):
        capture(spec({"op": "distinct", "field": "x"}), tmp_path, max_keys=100)


def test_wide_order_statistics_leave_the_cubes_of_other_views_fine(tmp_path):
    store = capture(spec({"op": "median", "field": "x"}), tmp_path, cube_bytes=1 << 16)
    assert "v" not in store.layout.filter("h").cube_targets
    store = capture(spec({"op": "median", "field": "k"}, bins=20), tmp_path / "k", cube_bytes=1 << 20,
                    max_cube_blocks=64)
    assert "v" in store.layout.filter("h").cube_targets


def test_calendar_parts_alone_need_no_time_range(tmp_path):
    """A field shown only as calendar parts is not profiled for its range (its bars are
    the part's values); brushed, it gets a dense dim keyed by the part."""
    from datetime import datetime, timedelta

    t = [datetime(2021, 1, 4) + timedelta(hours=7 * i) for i in range(100)]  # a Monday
    rows = pa.table({"t": pa.array(t + [None], pa.timestamp("us"))})
    s = {"name": "t", "source": {"path": "t.parquet"},
         "views": [{"name": "dow", "type": "temporal", "field": "t", "unit": "day_of_week"},
                   {"name": "hod", "type": "temporal", "field": "t", "unit": "hour_of_day",
                    "brush": "none"}],
         "interactions": {"crossfilter": [{"views": ["dow", "hod"]}]}}
    store = capture_table(plan_capture(parse_dashboard(s)), rows, tmp_path)
    d = store.layout.dims[store.layout.dim_index("part:day_of_week:t")]
    assert (d.kind, d.values, d.part) == ("dense", [1, 2, 3, 4, 5, 6, 7], "day_of_week")
    base = {v.name: store.base.counts[v.slots].tolist() for v in store.layout.views}
    days = [sum(1 for x in t if x.isoweekday() == k) for k in range(1, 8)]
    hours = [sum(1 for x in t if x.hour == h) for h in range(24)]
    assert base == {"dow": days, "hod": hours}


def test_an_order_statistic_keys_its_measure_by_value_when_a_categorical_view_counts_it(tmp_path):
    """A categorical view over the measure of a max view (or a dropdown over it) has the
    profile count its values; the max still needs them as a value dim, in value order, not
    the dict of the most frequent first (whose limit is a distinct's: the op was misnamed,
    and hit at 7 values here)."""
    from brushfire.dashboard import Dashboard

    k = [1] * 6 + [5] * 3 + [9] + [2] * 4 + [7] + [3, 4]
    rows = pa.table({"x": [float(i % 3) for i in range(len(k))], "g": ["a"] * 10 + ["b"] * 7,
                     "k": k})
    aggs = {"mx": "max", "mn": "min", "md": "median"}
    s = {"name": "t", "source": {"path": "t.parquet"},
         "views": [{"name": "x", "type": "histogram", "field": "x", "bin": {"step": 1, "extent": [0, 3]}},
                   {"name": "kc", "type": "categorical", "field": "k", "top": 3},
                   *({"name": n, "type": "categorical", "field": "g", "brush": "none",
                      "aggregate": {"op": op, "field": "k"}} for n, op in aggs.items())],
         "interactions": {"crossfilter": [{"views": ["x", "kc", *aggs]}]}}
    dash = parse_dashboard(s)
    plan = plan_capture(dash)
    store = capture_table(plan, rows, tmp_path, CaptureConfig(max_keys=5))  # k: 7 values
    for name in aggs:
        assert store.layout.dims[store.layout.view(name).mdim].name == "value:k"
    session = Dashboard(dash, plan, store).session()
    views = session.views()
    assert [views[n].values for n in aggs] == [[9, 7, None], [1, 2, None], [1.0, 2.0, None]]
    views = session.brush("x", [1, 2]).views  # rows 1, 2, 4, 5, 7, 8, ...
    want = {g: sorted(v for i, v in enumerate(k) if i % 3 and rows["g"][i].as_py() == g) for g in "ab"}
    assert views["mx"].values == [want["a"][-1], want["b"][-1], None]
    assert views["mn"].values == [want["a"][0], want["b"][0], None]


def test_a_dict_keyed_measure_over_its_limit_names_its_op(tmp_path):
    rows = pa.table({"x": [0.0] * 8, "s": [f"s{i}" for i in range(8)]})
    s = {"name": "t", "source": {"path": "t.parquet"},
         "views": [{"name": "x", "type": "histogram", "field": "x", "bin": {"step": 1, "extent": [0, 3]}},
                   {"name": "v", "type": "histogram", "field": "x", "brush": "none",
                    "bin": {"step": 1, "extent": [0, 3]}, "aggregate": {"op": "distinct", "field": "s"}}],
         "interactions": {"crossfilter": [{"views": ["x", "v"]}]}}
    with pytest.raises(CaptureError, match="view v: aggregate op 'distinct' needs every value of 's'"):
        capture_table(plan_capture(parse_dashboard(s)), rows, tmp_path, CaptureConfig(max_keys=5))


def test_cube_blocks_follow_the_rows_so_an_edge_block_stays_small_and_a_small_table_small():
    """A cube block holds about ROWS_PER_CUBE_BLOCK rows (the rows a bound inside it reads),
    with the configured bytes per block: more blocks than the configured 2,048 at scale,
    fewer for a small source (a block per key of a 10,000-row table spares nothing worth
    its bytes); tests' tiny store blocks keep their configured limits."""
    from brushfire.capture.layout import ROWS_PER_CUBE_BLOCK, scaled_cubes

    config = CaptureConfig()
    per_block = config.cube_bytes // config.max_cube_blocks
    assert scaled_cubes(config, 2048 * ROWS_PER_CUBE_BLOCK) is config
    for rows in (100_000_000, 3_000_000, 10_000):
        scaled = scaled_cubes(config, rows)
        assert scaled.max_cube_blocks == rows // ROWS_PER_CUBE_BLOCK
        assert scaled.cube_bytes // scaled.max_cube_blocks == per_block
    assert scaled_cubes(config, 10**12).max_cube_blocks == 65_536
    assert scaled_cubes(config, 955).max_cube_blocks == 1
    tiny = CaptureConfig(block_rows=64, max_cube_blocks=6)
    assert scaled_cubes(tiny, 3000) is tiny


def test_an_earlier_captures_cube_blocks_are_kept_unless_much_coarser_than_now_allowed():
    """Appended rows keep the blocks (no shard captured before is re-keyed), unless the
    source grew so that twice as many blocks fit: then they are chosen afresh; a block per
    key is kept whatever the limit."""
    from brushfire.capture.layout import _sticky_blocks
    from brushfire.lineage.layout import Dim

    values = [float(v) for v in range(100)]
    merged = Dim("value:x", "dense", "x", None, "float", 100, True, values=values,
                 cube_starts=[0, 25, 50, 75, 100])
    now = Dim("value:x", "dense", "x", None, "float", 101, True, values=[*values, 100.0])
    config = CaptureConfig(max_cube_blocks=6)
    assert _sticky_blocks(now, merged, 1, config) == [0, 25, 50, 75, 101]
    assert _sticky_blocks(now, merged, 1, CaptureConfig(max_cube_blocks=8)) is None  # 4 <= 8 // 2
    per_key = Dim("value:x", "dense", "x", None, "float", 100, True, values=values,
                  cube_starts=list(range(101)))
    assert _sticky_blocks(now, per_key, 1, CaptureConfig(max_cube_blocks=1000)) == [*range(100), 101]


def test_a_fine_int64_field_with_its_extremes_keys_each_row_in_its_bar(tmp_path):
    """A field of many int64 values is cut into buckets at its histogram's bar edges. Two
    roundings beyond 2^53 put rows in the wrong bars: 2^63 - 1 (2^63 as a double) overflowed
    the bisection's integer keys, which found no edge at all, and the value standing for
    the first bucket, edge - 1, is the edge itself as a double, in the next bar."""
    import pyarrow.parquet as pq

    from brushfire import Dashboard
    from oracle import Oracle

    rng = np.random.default_rng(1)
    v = [int(x) for x in rng.integers(-2**62, 2**62, 200)] + [2**63 - 1, -2**63, 0, 5]
    t = pa.table({"i": pa.array(v, pa.int64()), "y": pa.array(np.arange(len(v)) % 3)})
    pq.write_table(t, tmp_path / "t.parquet")
    d = {"name": "i64", "source": {"path": str(tmp_path / "t.parquet")}, "views": [
        {"name": "h", "type": "histogram", "field": "i", "bin": {"maxbins": 20}},
        {"name": "y", "type": "histogram", "field": "y", "bin": {"step": 1, "extent": [0, 3]}}],
        "interactions": {"crossfilter": [{"views": ["h", "y"]}]}}
    plan = plan_capture(parse_dashboard(d))
    dash = Dashboard(plan.dashboard, plan, capture_table(plan, t, tmp_path / "cache", CaptureConfig(max_keys=40)))
    assert dash.store.layout.dims[0].kind == "fine"
    sql = Oracle(dash.spec).view("h")
    assert dash.session().view("h").counts == [sql.get(i, (0,))[0] for i in range(20)]


def test_a_fine_int64_field_with_many_rows_at_its_largest_value_keeps_them_in_the_last_bar(tmp_path):
    """Many rows at 2^63 - 1 (a sentinel, say) give a bucket its own edge there, 2^63 as a
    double: the value standing for that bucket, ceil(edge), overflowed int64 to its smallest
    value, and the bucket's rows were counted in the first bar."""
    import pyarrow.parquet as pq

    from brushfire import Dashboard
    from oracle import Oracle

    v = [-2**63] * 5 + list(range(-20, 120)) + [2**63 - 1] * 7
    t = pa.table({"i": pa.array(v, pa.int64()), "y": pa.array(np.arange(len(v)) % 3)})
    pq.write_table(t, tmp_path / "t.parquet")
    d = {"name": "i64", "source": {"path": str(tmp_path / "t.parquet")}, "views": [
        {"name": "h", "type": "histogram", "field": "i", "bin": {"maxbins": 12}},
        {"name": "y", "type": "histogram", "field": "y", "bin": {"step": 1, "extent": [0, 3]}}],
        "interactions": {"crossfilter": [{"views": ["h", "y"]}]}}
    plan = plan_capture(parse_dashboard(d))
    dash = Dashboard(plan.dashboard, plan, capture_table(plan, t, tmp_path / "cache", CaptureConfig(max_keys=40)))
    assert dash.store.layout.dims[0].kind == "fine"
    sql = Oracle(dash.spec).view("h")
    counts = dash.session().view("h").counts
    assert counts == [sql.get(i, (0,))[0] for i in range(len(counts))]
    assert (counts[0], counts[-1]) == (5, 7)


def test_a_limit_the_data_pass_names_the_file_line_and_key(tmp_path):
    """Limits only the data decide (a dropdown's values, distinct's keys) fail a spec read
    from a file at its key, with file and line, as the loader's errors do (before, a plain
    CaptureError without them)."""
    import yaml

    from brushfire.errors import SpecError
    from brushfire.spec.loader import load_dashboard

    dropdown = spec({"op": "count"})
    dropdown["interactions"]["parameters"] = [{"name": "pick", "field": "k"}]
    distinct = spec({"op": "distinct", "field": "x"})
    for d, max_keys, key, text in ((dropdown, 20, "interactions.parameters[0].field", "field: k"),
                                   (distinct, 100, "views[1].aggregate.op", "op: distinct")):
        path = tmp_path / "t.yaml"
        path.write_text(yaml.safe_dump(d, sort_keys=False))
        line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if t.endswith(text))
        dash = load_dashboard(path)
        with pytest.raises(SpecError) as e:
            capture_table(plan_capture(dash), table(), tmp_path / "c", CaptureConfig(max_keys=max_keys))
        assert f"{path}:{line}: {key}:" in str(e.value), str(e.value)
