"""Data in the wild that tests/rows.py does not make, against DuckDB (tests/oracle.py):
float32 columns, -0.0, +-inf, integers beyond 2^53, int8/int16, timestamps with a time
zone, dates before 1970, decimals, unicode and empty strings, a categorical field of
more than 10,000 values, a column all null, all rows equal, one row. Captured in this
process (capture/local.py: the scan Spark's executors run) over the Parquet file the
oracle reads."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushfire import Dashboard
from brushfire.capture.local import capture_table
from brushfire.errors import InteractionError
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard
from brushfire.views import view_type
from oracle import OTHER, Oracle, _norm_row

CONFIG = CaptureConfig(block_rows=64, shard_rows=256, max_keys=40, max_cube_blocks=6)


def wild_rows(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    f32 = rng.normal(0, 3, n).astype(np.float32).round(2)
    f32[rng.random(n) < 0.05] = -0.0
    f32[rng.random(n) < 0.05] = 0.0
    f32[rng.random(n) < 0.03] = np.nan
    f32[rng.random(n) < 0.02] = np.inf
    f32[rng.random(n) < 0.02] = -np.inf
    f32[rng.random(n) < 0.05] = np.float32(0.1)  # not 0.1 as a double: a brush edge at 0.1
    big = (2**60 + rng.integers(-1000, 1000, n) * 1024).astype(np.int64)
    big[rng.random(n) < 0.1] = 2**53 + 1
    tz0 = datetime(2022, 3, 27, tzinfo=UTC)
    tz = [tz0 + timedelta(minutes=int(mm)) for mm in rng.integers(-60 * 24 * 40, 60 * 24 * 40, n)]
    old = [date(1969, 12, 31) - timedelta(days=int(d)) for d in rng.integers(-400, 3000, n)]
    money = [Decimal(int(c)).scaleb(-2) for c in rng.integers(-500_00, 10_000_00, n)]
    names = np.array(["", "é", "日本", "a b", "Ω'\"", "zz", "\u00e9"])  # é twice: NFC and not
    s = names[rng.integers(0, len(names), n)]
    s[0] = "e\u0301"  # a decomposed é
    return pa.table({
        "f32": pa.array(f32, pa.float32(), mask=rng.random(n) < 0.03),
        "i8": pa.array(rng.integers(-128, 128, n), pa.int8(), mask=rng.random(n) < 0.02),
        "i16": pa.array(rng.integers(-32768, 32768, n), pa.int16()),
        "u8": pa.array(rng.integers(0, 256, n), pa.uint8()),
        "big": pa.array(big, pa.int64()),
        "tz": pa.array(tz, pa.timestamp("us", tz="America/New_York"), mask=rng.random(n) < 0.02),
        "old": pa.array(old, pa.date32(), mask=rng.random(n) < 0.02),
        "money": pa.array(money, pa.decimal128(12, 2), mask=rng.random(n) < 0.04),
        "s": pa.array(s, mask=rng.random(n) < 0.05),
        "allnull": pa.array([None] * n, pa.float64()),
        "many": pa.array([f"id{int(v)}" for v in rng.integers(0, 3 * n, n)]),
        "pre": pa.array([datetime(1969, 12, 20) + timedelta(minutes=int(mm))
                         for mm in rng.integers(0, 60 * 24 * 30, n)], pa.timestamp("ms")),
        "fc": pa.array(np.array([-0.0, 0.0, 0.5, np.nan, np.inf, 0.1], np.float32)[rng.integers(0, 6, n)],
                       mask=rng.random(n) < 0.05),
    })


WILD_VIEWS = [
    {"name": "f32", "type": "histogram", "field": "f32", "bin": {"step": 0.5, "extent": [-5, 5]}},
    {"name": "f32_auto", "type": "histogram", "field": "f32", "bin": {"maxbins": 30}},
    {"name": "i8", "type": "histogram", "field": "i8", "bin": {"step": 16, "extent": [-128, 128]}},
    {"name": "i16", "type": "histogram", "field": "i16", "bin": {"maxbins": 20}},
    {"name": "u8", "type": "histogram", "field": "u8", "bin": {"step": 10, "extent": [0, 250]},
     "aggregate": {"op": "mean", "field": "f32"}},
    {"name": "big", "type": "histogram", "field": "big", "bin": {"maxbins": 10}},
    {"name": "tz_day", "type": "temporal", "field": "tz", "unit": "day"},
    {"name": "tz_hour", "type": "temporal", "field": "tz", "unit": "hour_of_day"},
    {"name": "old", "type": "temporal", "field": "old", "unit": "month"},
    {"name": "money", "type": "histogram", "field": "money", "bin": {"step": 500, "extent": [-500, 10000]},
     "aggregate": {"op": "sum", "field": "money"}},
    {"name": "old_week", "type": "temporal", "field": "old", "unit": "week"},
    {"name": "pre_hour", "type": "temporal", "field": "pre", "unit": "hour"},
    {"name": "pre_dow", "type": "temporal", "field": "pre", "unit": "day_of_week"},
    {"name": "s", "type": "categorical", "field": "s", "top": 4},
    {"name": "many", "type": "categorical", "field": "many", "top": 10},
    {"name": "f32_cat", "type": "categorical", "field": "f32", "top": 8},
    {"name": "allnull", "type": "histogram", "field": "allnull", "bin": {"step": 1, "extent": [0, 10]}},
    {"name": "sum_big", "type": "categorical", "field": "s", "brush": "none",
     "aggregate": {"op": "sum", "field": "big"}},
    {"name": "med_money", "type": "temporal", "field": "old", "unit": "year", "brush": "none",
     "aggregate": {"op": "median", "field": "money"}},
    {"name": "max_tz", "type": "histogram", "field": "i8", "brush": "none",
     "bin": {"step": 64, "extent": [-128, 128]}, "aggregate": {"op": "max", "field": "tz"}},
]
DETAILS = ["f32", "i8", "big", "tz", "old", "money", "s"]


PARAMETERS = [
    {"name": "p_fc", "field": "fc"},  # a dropdown: NaN, -0.0 and 0.0, ±inf among its choices
    {"name": "p_s", "field": "s", "multiple": True},
    {"name": "p_money", "field": "money", "widget": "slider", "op": "between"},
    {"name": "p_old", "field": "old", "widget": "slider", "op": "gte"},
    {"name": "p_tz", "field": "tz", "widget": "slider", "op": "lt"},
    {"name": "p_big", "field": "big", "widget": "slider", "op": "lte"},
]


def wild_spec(path, views=WILD_VIEWS, details=DETAILS, parameters=PARAMETERS) -> dict:
    return {"name": "wild", "source": {"path": str(path)}, "views": views,
            "interactions": {"crossfilter": [{"views": [v["name"] for v in views]}],
                             "details": {"columns": details, "page_size": 5000},
                             "parameters": parameters}}


def captured(tmp_path, table: pa.Table, d: dict, config: CaptureConfig = CONFIG):
    path = tmp_path / "wild.parquet"
    pq.write_table(table, path)
    d = {**d, "source": {**d["source"], "path": str(path)}}
    spec = parse_dashboard(d)
    plan = plan_capture(spec)
    store = capture_table(plan, pq.read_table(path), tmp_path / "cache", config)
    dash = Dashboard(spec, plan, store)
    return dash, Oracle(dash.spec)


# --- comparisons (as tests/engine/test_session_oracle.py) ------------------------------------


def assert_views_equal_sql(dash, session, oracle, context) -> None:
    assert session.count_selected() == oracle.selected(), (context, "selected")
    for v in dash.spec.views:
        vd = session.view(v.name)
        want = oracle.view(v.name)
        got = {}
        labels = view_type(v).label_keys(v, view_type(v).sql_values(dash.store.view(v.name))) \
            if v.type == "categorical" else vd.labels
        for i, (label, n, value) in enumerate(zip(labels, vd.counts, vd.values, strict=True)):
            if n:
                key = label.replace("+00:00", "") if v.type == "temporal" and not \
                    getattr(v, "part", None) else label if v.type == "categorical" else i
                got[key] = (n, value)
        assert set(got) == set(want), (context, v.name, got, want)
        op = v.aggregate.op
        for key, (n, value) in got.items():
            count, total, mean, stat = want[key]
            assert n == count, (context, v.name, key, n, count)
            if op in ("count", "sum", "mean"):
                assert oracle.agrees(v.name, key, value, {"count": count, "sum": total, "mean": mean}[op],
                                     op), (context, v.name, key, value, total, mean)
            else:
                assert value == stat, (context, v.name, key, value, stat)
        assert vd.caveats == oracle.caveats(v.name), (context, v.name, vd.caveats)


def assert_details_equal_sql(dash, session, oracle) -> None:
    columns = dash.spec.interactions.details.columns
    got = sorted((_norm_row(tuple(r.values())) for r in
                  session.details(page=0).select(columns).to_pylist()), key=repr)
    assert got == oracle.rows([f'"{c}"' for c in columns], oracle.where(None))


def bounds(dash, oracle, name: str, rng) -> list:
    """An interval brush's bounds over view `name`: data values (ties at the edges),
    bar edges, open ends, and values beyond the data."""
    v = dash.spec.view(name)
    field = v.field
    col = [r[0] for r in oracle.con.execute(f'SELECT "{field}" FROM src LIMIT 60').fetchall()]
    vals = [x for x in col if x is not None and not (isinstance(x, float) and math.isnan(x))]
    if v.type == "temporal" and not getattr(v, "part", None):
        def iso(x):
            x = datetime.combine(x, datetime.min.time(), UTC) if type(x) is date else x
            return x.astimezone(UTC).isoformat()
        pool = [iso(x) for x in vals[:50]] + [None, "1900-01-01T00:00:00Z", "2100-01-01T00:00:00Z"]
    elif v.type == "temporal":  # a calendar part: its values
        pool = [None, -1, 0, 3, 3.5, 12, 23, 23.5, 30]
    else:
        pool = [float(x) if not isinstance(x, int) else x for x in vals[:50]] + \
            [None, -0.0, 0.0, 0.1, 0.10000000149011612, -math.inf, math.inf, -1e300, 2**60, 2**53]
    lo, hi = (pool[int(i)] for i in rng.integers(0, len(pool), 2))
    return [lo, hi]


def parameter(dash, session, oracle, p, rng) -> None:
    """Set parameter `p` to one of its choices, a value in or beyond its range, or None."""
    kind, domain = dash.store.parameter_domain(p.name)
    if rng.random() < 0.15 or not domain:  # (a field without values: no choice, no range)
        value = None
    elif kind != "range":
        pick = [domain[int(i)] for i in rng.integers(0, len(domain), int(rng.integers(1, 3)))]
        value = pick if p.multiple else pick[0]
    else:
        lo, hi = domain
        if isinstance(lo, str):
            ends = [lo, hi, "1900-01-01T00:00:00Z", "2100-01-01T00:00:00Z"]
        else:
            ends = [lo, hi, (lo + hi) / 2, -1e300, 1e300] + ([2**53, 2**60] if isinstance(lo, int) else [])
        pick = [ends[int(i)] for i in rng.integers(0, len(ends), 2)]
        value = pick if p.op == "between" else pick[0]
    session.set_parameter(p.name, value)
    oracle.set_parameter(p.name, value)


def play(dash, oracle, seed: int, steps: int, details: bool = True) -> None:
    rng = np.random.default_rng(seed)
    session = dash.session()
    oracle.clear()
    assert_views_equal_sql(dash, session, oracle, "base")
    filters = [v for v in dash.spec.views if v.brush != "none"]
    for step in range(steps):
        v = filters[int(rng.integers(0, len(filters)))]
        params = dash.spec.interactions.parameters
        try:
            if params and rng.random() < 0.25:
                parameter(dash, session, oracle, params[int(rng.integers(0, len(params)))], rng)
            elif rng.random() < 0.1:
                session.clear(v.name)
                oracle.clear(v.name)
            elif v.type == "categorical":
                labels = [*session.view(v.name).labels, OTHER]
                pick = [labels[int(i)] for i in rng.integers(0, len(labels), int(rng.integers(1, 4)))]
                session.select(v.name, pick)
                oracle.select(v.name, pick)
            else:
                interval = bounds(dash, oracle, v.name, rng)
                session.brush(v.name, interval)
                oracle.brush(v.name, interval)
        except InteractionError as e:
            raise AssertionError((step, v.name)) from e
        assert_views_equal_sql(dash, session, oracle, (step, v.name))
        if details:
            assert_details_equal_sql(dash, session, oracle)


def test_wild_types_equal_sql(tmp_path):
    dash, oracle = captured(tmp_path, wild_rows(1500, 7), wild_spec("x"))
    for seed in range(4):
        play(dash, oracle, seed, 12)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(n=st.sampled_from([1, 2, 3]), seed=st.integers(0, 100))
def test_one_row_and_all_rows_equal(tmp_path_factory, n, seed):
    table = wild_rows(1, seed)
    table = pa.concat_tables([table] * n)
    dash, oracle = captured(tmp_path_factory.mktemp("one"), table, wild_spec("x"))
    play(dash, oracle, seed, 6)


@pytest.mark.spark
def test_on_spark_wild_types_equal_sql(spark, tmp_path):
    path = tmp_path / "wild.parquet"
    pq.write_table(wild_rows(1500, 8), path)
    spec = parse_dashboard(wild_spec(path))
    dash = Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    oracle = Oracle(dash.spec, spark)
    for seed in range(2):
        play(dash, oracle, seed, 10)


# --- incremental capture over such data -----------------------------------------------------


def tame(table: pa.Table) -> pa.Table:
    """The rows without NaN, ±inf, nulls or -0.0 where `wild_rows` has them (an append
    then brings them where there were none)."""
    f32 = np.nan_to_num(table["f32"].to_numpy(zero_copy_only=False), nan=1.0, posinf=2.0, neginf=-2.0)
    return table.set_column(0, "f32", pa.array(np.abs(f32) + np.float32(0.25), pa.float32())) \
        .set_column(7, "money", table["money"].fill_null(Decimal("1.00"))) \
        .set_column(8, "s", table["s"].fill_null("plain"))


def beyond(table: pa.Table) -> pa.Table:
    """New extents, categories, later and earlier times."""
    big = pa.array(np.full(table.num_rows, 2**62 + 5, np.int64))
    tz = [None if t is None else t + timedelta(days=300) for t in table["tz"].to_pylist()]
    old = [None if d is None else d - timedelta(days=9000) for d in table["old"].to_pylist()]
    many = [f"new{x}" for x in table["many"].to_pylist()]
    return table.set_column(4, "big", big) \
        .set_column(5, "tz", pa.array(tz, table.schema.field("tz").type)) \
        .set_column(6, "old", pa.array(old, pa.date32())) \
        .set_column(10, "many", pa.array(many)) \
        .set_column(8, "s", pa.array([None if x is None else f"{x}новый" for x in table["s"].to_pylist()]))


def test_appends_and_edits_over_wild_data_equal_sql_and_a_capture_from_scratch(tmp_path):
    from brushfire.capture.local import capture_tables

    tables = {"f0": tame(wild_rows(700, 1)), "f1": tame(wild_rows(300, 2))}
    views = [v for v in WILD_VIEWS if v["name"] != "many"]
    steps = [  # (what changes, views)
        ("first", views),
        ("append NaN, nulls, -0.0, beyond every extent", views),
        ("rebin", [{**v, "bin": {"step": 0.25, "extent": [-4, 6]}} if v["name"] == "f32" else v
                   for v in views]),
        ("rebin back, add a view", [*views, *[v for v in WILD_VIEWS if v["name"] == "many"]]),
        ("remove it, replace a file by one as long, delete one", views),
    ]
    for n, (what, vs) in enumerate(steps):
        if n == 1:
            tables["f2"] = beyond(wild_rows(400, 3))
        if n == 4:
            tables["f1"] = beyond(wild_rows(300, 4))
            del tables["f0"]
        # the oracle's rows: the files in key order, under one path (the cache entry is
        # keyed by the source's path: another path each step captured each from scratch)
        path = tmp_path / "all.parquet"
        pq.write_table(pa.concat_tables([tables[k] for k in sorted(tables)]), path)
        d = wild_spec(path, vs)
        spec = parse_dashboard(d)
        plan = plan_capture(spec)
        for cache in (tmp_path / "inc", tmp_path / f"full{n}"):
            store = capture_tables(plan, tables, cache, CONFIG)
            if n and cache.name == "inc":
                assert not any("every part reused" in c for c in store.info.changes), (what, store.info.changes)
                assert not any("no earlier capture" in c for c in store.info.changes), (what, store.info.changes)
            dash = Dashboard(spec, plan, store)
            play(dash, Oracle(dash.spec), n, 4)


# --- joins: awkward keys and joined values --------------------------------------------------


def wild_star(n: int, seed: int) -> tuple[pa.Table, dict[str, pa.Table]]:
    """A fact table whose int32 key meets an int64 dimension key (with ids beyond int32,
    nobody's), and whose unicode string key meets a dimension of names ('' among them);
    keys without a match, null keys, and NaN, -0.0, null and ±inf in joined values."""
    rng = np.random.default_rng(seed)
    ids = np.array([1, 2, 3, 5, 8, 13, 3_000_000_000, 2**62], np.int64)
    dim = pa.table({
        "id": pa.array(rng.permutation(ids)),
        "w": pa.array([-0.0, 0.0, np.nan, 1.5, np.inf, -2.5, None, 7.0], pa.float64()),
        "kind": pa.array(["a", "b", "a", None, "c", "", "d", "a"]),
        "when": pa.array([date(1960, 1, 1) + timedelta(days=400 * i) for i in range(8)], pa.date32()),
    })
    names = ["", "é", "日本", "x", "e\u0301"]
    people = pa.table({"name": pa.array(names),
                       "age": pa.array([30, 40, None, 50, 60], pa.int16())})
    k = rng.choice(np.array([1, 2, 3, 4, 5, 8, 13, 21], np.int32), n)
    who = np.array([*names, "y", "É"])[rng.integers(0, 7, n)]
    fact = pa.table({
        "k": pa.array(k, pa.int32(), mask=rng.random(n) < 0.05),
        "who": pa.array(who, mask=rng.random(n) < 0.05),
        "x": pa.array(rng.normal(0, 10, n).round(1)),
    })
    return fact, {"dim": dim, "people": people}


def wild_star_spec(folder) -> dict:
    views = [
        {"name": "w", "type": "histogram", "field": "dim.w", "bin": {"step": 1, "extent": [-3, 8]}},
        {"name": "kind", "type": "categorical", "field": "dim.kind", "top": 3},
        {"name": "when", "type": "temporal", "field": "dim.when", "unit": "year"},
        {"name": "x", "type": "histogram", "field": "x", "bin": {"step": 5, "extent": [-30, 30]}},
        {"name": "who", "type": "categorical", "field": "people.name", "top": 4},
        {"name": "age", "type": "histogram", "field": "people.age", "bin": {"step": 10, "extent": [20, 70]},
         "aggregate": {"op": "sum", "field": "dim.w"}},
        {"name": "mean_w", "type": "categorical", "field": "who", "brush": "none",
         "aggregate": {"op": "mean", "field": "dim.w"}},
    ]
    return {"name": "wild_star",
            "source": {"path": str(folder / "fact.parquet"), "joins": [
                {"name": "dim", "path": str(folder / "dim.parquet"), "key": "id", "on": "k"},
                {"name": "people", "path": str(folder / "people.parquet"), "key": "name", "on": "who"}]},
            "views": views,
            "interactions": {"crossfilter": [{"views": [v["name"] for v in views]}],
                             "details": {"columns": ["x", "k", "who", "dim.w", "dim.kind", "people.age"],
                                         "page_size": 5000}}}


def write_wild_star(folder, n: int, seed: int) -> tuple[pa.Table, dict[str, pa.Table]]:
    folder.mkdir(parents=True, exist_ok=True)
    fact, dims = wild_star(n, seed)
    pq.write_table(fact, folder / "fact.parquet")
    for name, t in dims.items():
        pq.write_table(t, folder / f"{name}.parquet")
    return fact, dims


def test_joins_on_awkward_keys_equal_a_sql_left_join(tmp_path):
    from brushfire.capture.local import capture_tables

    fact, dims = write_wild_star(tmp_path, 900, 1)
    spec = parse_dashboard(wild_star_spec(tmp_path))
    plan = plan_capture(spec)
    dash = Dashboard(spec, plan, capture_tables(plan, {"fact": fact}, tmp_path / "cache", CONFIG,
                                                None, dims))
    oracle = Oracle(dash.spec)
    for seed in range(4):
        play(dash, oracle, seed, 10)


@pytest.mark.spark
def test_on_spark_joins_on_awkward_keys_equal_a_sql_left_join(spark, tmp_path):
    write_wild_star(tmp_path, 900, 2)
    spec = parse_dashboard(wild_star_spec(tmp_path))
    dash = Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    oracle = Oracle(dash.spec, spark)
    for seed in range(2):
        play(dash, oracle, seed, 10)


def test_integers_beyond_2_53_compare_as_doubles_as_sql_does(tmp_path):
    """A brush or slider compares CAST(x AS DOUBLE) with the bound as a double (sql.py):
    2^60 + 1 is 2^60 then. The engine compared few such integers (each its own key)
    exactly with an integer bound, and with a float bound by its ceil / floor."""
    n = 300
    big = (2**60 + np.arange(n) % 3 + (np.arange(n) % 5) * 1000).astype(np.int64)
    table = pa.table({"big": pa.array(big), "y": pa.array(np.arange(n) % 7)})
    views = [{"name": "big", "type": "histogram", "field": "big", "bin": {"maxbins": 10}},
             {"name": "y", "type": "histogram", "field": "y", "bin": {"step": 1, "extent": [0, 7]}}]
    d = wild_spec("x", views, ["big", "y"], [{"name": "p", "field": "big", "widget": "slider", "op": "gt"}])
    dash, oracle = captured(tmp_path, table, d)
    assert dash.store.layout.dims[0].kind == "dense"
    session = dash.session()
    for lo, hi in [(2**60 + 1, None), (2**60 + 1, 2**60 + 2001), (float(2**60 + 1000), None),
                   (None, 2**60 + 1), (None, float(2**60 + 1))]:
        session.brush("big", [lo, hi])
        oracle.brush("big", [lo, hi])
        assert_views_equal_sql(dash, session, oracle, (lo, hi))
    session.clear("big")
    oracle.clear("big")
    for value in [2**60 + 1, 2**60 - 1, float(2**60 + 3000)]:
        session.set_parameter("p", value)
        oracle.set_parameter("p", value)
        assert_views_equal_sql(dash, session, oracle, value)


@pytest.mark.spark
def test_on_spark_an_append_of_wild_rows_equals_sql(spark, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(tame(wild_rows(600, 1)), folder / "part-0.parquet")
    d = wild_spec(folder)
    d["source"] = {"path": str(folder), "format": "parquet"}
    spec = parse_dashboard(d)
    Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "inc", config=CONFIG)
    pq.write_table(beyond(wild_rows(300, 2)), folder / "part-1.parquet")  # NaN, nulls, new extents
    dash = Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "inc", config=CONFIG)
    assert dash.store.n_rows == 900
    assert any("reused 1 of 2 input files" in c for c in dash.store.info.changes), dash.store.info.changes
    play(dash, Oracle(dash.spec, spark), 3, 8)  # (a capture from scratch: the test in this process)


def test_an_append_under_a_dropdown_over_a_float_field_with_nan(tmp_path):
    """The dropdown's values (NaN among them) weigh its cube blocks by their counts,
    looked up by value: NaN is no dict key (nan != nan), and the append failed with
    KeyError: nan."""
    from brushfire.capture.local import capture_tables

    def part(n: int, seed: int) -> pa.Table:
        rng = np.random.default_rng(seed)
        return pa.table({"fc": pa.array(np.array([0.5, np.nan, 1.5])[rng.integers(0, 3, n)]),
                         "y": pa.array(rng.integers(0, 7, n))})

    views = [{"name": "y", "type": "histogram", "field": "y", "bin": {"step": 1, "extent": [0, 7]}}]
    plan = plan_capture(parse_dashboard(wild_spec("/nonexistent/x.parquet", views, ["y", "fc"],
                                                  [{"name": "p", "field": "fc"}])))
    tables = {"a": part(300, 1)}
    capture_tables(plan, tables, tmp_path / "inc", CONFIG)
    tables["b"] = part(200, 2)
    store = capture_tables(plan, tables, tmp_path / "inc", CONFIG)
    assert any("reused 1 of 2 input files" in c for c in store.info.changes), store.info.changes
    session = Dashboard(plan.dashboard, plan, store).session()
    session.set_parameter("p", math.nan)
    assert session.count_selected() == sum(pc.sum(pc.is_nan(t["fc"])).as_py() for t in tables.values())


def test_times_at_the_ends_of_the_years_1_to_9999_in_a_fine_dim(tmp_path):
    """A fine dim keeps a time's UTC microseconds as a double, the nearest one beyond 2^53
    (before July 1684, after June 2255): a sentinel 9999-12-31T23:59:59.999999 is 10000-01-01 as a
    double, which made the max of the times, and a slider's range over them, an error
    ('253402300800000000 microseconds is outside the years 1-9999'), where SQL gives it."""
    n = 400
    rng = np.random.default_rng(3)
    ts = [datetime(2000, 1, 1) + timedelta(microseconds=int(u)) for u in rng.integers(0, 10**13, n)]
    ts[::7] = [datetime(9999, 12, 31, 23, 59, 59, 999999)] * len(ts[::7])
    ts[1::11] = [datetime(1, 1, 1)] * len(ts[1::11])
    table = pa.table({"c": pa.array(rng.choice(["a", "b", "c"], n)), "ts": pa.array(ts, pa.timestamp("us")),
                      "y": pa.array(rng.integers(0, 7, n))})
    views = [{"name": "y", "type": "histogram", "field": "y", "bin": {"step": 1, "extent": [0, 7]}},
             {"name": "first", "type": "categorical", "field": "c", "aggregate": {"op": "min", "field": "ts"}},
             {"name": "last", "type": "categorical", "field": "c", "aggregate": {"op": "max", "field": "ts"}}]
    d = wild_spec("x", views, ["y"], [{"name": "p", "field": "ts", "widget": "slider", "op": "lte"}])
    dash, oracle = captured(tmp_path, table, d)
    assert dash.store.layout.dims[dash.store.layout.filter("p").dims[0]].kind == "fine"
    assert dash.store.parameter_domain("p") == ("range", ["0001-01-01T00:00:00+00:00",
                                                          "9999-12-31T23:59:59.999999+00:00"])
    session = dash.session()
    assert_views_equal_sql(dash, session, oracle, "base")
    session.brush("y", [1, 4])
    oracle.brush("y", [1, 4])
    assert_views_equal_sql(dash, session, oracle, "brushed")
    assert "9999-12-31T23:59:59.999999+00:00" in session.view("last").values
