"""Capture through joins (capture/joins.py): a source LEFT JOIN its dimension tables, in
the capture's one pass, keyed like the source's own columns.

In this process (capture/local.py) on random star schemas (tests/star_schemas.py: keys
the dimension lacks, null keys, skewed fan-in, unreferenced dimension rows, a chain):
- the join keeps the source's rows in order and equals DuckDB's LEFT JOIN;
- a capture with joins answers every interaction as a capture of the same rows joined
  beforehand (no special case downstream), and as DuckDB's SQL over the LEFT JOIN;
- duplicate keys are refused, rows without a match are counted and named in caveats;
- a changed dimension table rescans only the joined columns, an appended source file
  only itself.
On Spark: broadcast and shuffled joins give the rows in the same order, and the same
store, as the capture in this process.
"""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushfire import Dashboard
from brushfire.capture.joins import join_tables
from brushfire.capture.local import capture_tables
from brushfire.engine.session import Session
from brushfire.errors import CaptureError, InteractionError
from brushfire.lineage.layout import CaptureConfig
from brushfire.lineage.store import name_unmatched_rows
from brushfire.plan import needed_columns, plan_capture
from brushfire.spec import parse_dashboard
from oracle import OTHER, Oracle, _norm_row
from star_schemas import make_star, star_spec, write_star

CONFIG = CaptureConfig(block_rows=64, shard_rows=256, max_keys=40, max_cube_blocks=6)


def capture(d: dict, tables: dict[str, pa.Table], dims: dict[str, pa.Table], cache,
            partitions=None):
    dash = parse_dashboard(d)
    return capture_tables(plan_capture(dash), tables, cache, CONFIG, partitions, dims)


def flat_spec(d: dict) -> dict:
    """The same dashboard over rows joined beforehand: no joins, the joined columns the
    source's own (named `<join>.<column>` as they are)."""
    return {**d, "source": {"path": d["source"]["path"]}}


# --- the join itself ------------------------------------------------------------------------


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(0, 400))
def test_the_join_keeps_the_rows_and_equals_a_sql_left_join(tmp_path_factory, seed, n):
    import duckdb

    folder = tmp_path_factory.mktemp("star")
    fact, dims = make_star(n, seed)
    write_star(folder, fact, dims)
    dash = parse_dashboard(star_spec(folder))
    got = join_tables(fact, dash.source, dims)
    assert got.slice(0, 0).schema.names[:fact.num_columns] == fact.schema.names
    assert got.select(fact.schema.names).equals(fact)  # the rows, in their order
    con = duckdb.connect()
    from brushfire.baselines.duckdb import joined_relation

    want = con.sql(joined_relation(con, dash.source, f"read_parquet('{folder}/fact.parquet')")).to_arrow_table()
    assert got.column_names == want.column_names
    for c in got.column_names:
        assert got[c].to_pylist() == want[c].to_pylist(), c


def test_keys_of_other_types_match_as_in_sql():
    """An int32 `on` and an int64 key (holding ids beyond int32: they match nothing, as in
    SQL; casting them to int32 failed the capture), and float keys with -0.0 (= 0.0, as
    Spark's join normalizes it)."""
    d = {"name": "keys", "source": {"path": "/nonexistent/f.parquet", "joins": [
        {"name": "d", "path": "/nonexistent/d.parquet", "key": "id", "on": "k"}]},
        "views": [{"name": "v", "type": "categorical", "field": "d.name"}]}
    source = parse_dashboard(d).source
    dim = pa.table({"id": pa.array([1, 2, 3_000_000_000], pa.int64()), "name": ["a", "b", "c"]})
    fact = pa.table({"k": pa.array([2, None, 7, 1], pa.int32())})
    assert join_tables(fact, source, {"d": dim})["d.name"].to_pylist() == ["b", None, None, "a"]
    dim = pa.table({"id": pa.array([0.0, 1.5, math.nan]), "name": ["zero", "x", "nan"]})
    fact = pa.table({"k": pa.array([-0.0, 1.5, math.nan, None], pa.float32())})
    assert join_tables(fact, source, {"d": dim})["d.name"].to_pylist() == ["zero", "x", "nan", None]


def test_text_keys_with_integer_keys_match_as_sql_casts_the_text():
    """A text `on` with an integer key, and an integer `on` with a text key: the text is
    compared as the integer it spells, as Spark's join and DuckDB's LEFT JOIN cast it
    ('007', ' 7' and '+7' are 7); in this process the integers were cast to text instead
    ('007' matched nothing) or the text to integers by Arrow, which refused ' 7'."""
    import duckdb

    d = {"name": "keys", "source": {"path": "/nonexistent/f.parquet", "joins": [
        {"name": "d", "path": "/nonexistent/d.parquet", "key": "id", "on": "k"}]},
        "views": [{"name": "v", "type": "categorical", "field": "d.name"}]}
    source = parse_dashboard(d).source
    cases = [(pa.table({"k": ["7", "007", " 7", "+3", None, "8", "-3"]}),
              pa.table({"id": pa.array([7, 3, -3], pa.int64()), "name": ["seven", "three", "minus"]})),
             (pa.table({"k": pa.array([7, 3, None, 8, -3], pa.int32())}),
              pa.table({"id": ["007", " 3 ", "-3"], "name": ["seven", "three", "minus"]}))]
    for fact, dim in cases:
        want = [r[0] for r in duckdb.sql(
            "SELECT d.name FROM (SELECT *, row_number() OVER () AS i FROM fact) AS f "
            "LEFT JOIN dim AS d ON f.k = d.id ORDER BY f.i").fetchall()]
        assert join_tables(fact, source, {"d": dim})["d.name"].to_pylist() == want


def test_keys_of_decimals_times_and_dictionaries_match_as_sql_compares_them():
    """Keys SQL compares in a type holding both sides' values: an integer with a decimal
    and decimals of two scales as decimals (2 is not 2.50; Arrow's cast of either to the
    other's type failed the capture), a date with a time as the time (the date matched a
    time later that day), times of two units in the finer one (failed), an unsigned
    64-bit `on` with int64 keys (failed beyond 2^63), and dictionary-encoded keys (a pandas
    category: failed). As DuckDB's LEFT JOIN gives them."""
    from datetime import date
    from decimal import Decimal as D

    import duckdb

    d = {"name": "keys", "source": {"path": "/nonexistent/f.parquet", "joins": [
        {"name": "d", "path": "/nonexistent/d.parquet", "key": "id", "on": "k"}]},
        "views": [{"name": "v", "type": "categorical", "field": "d.name"}]}
    source = parse_dashboard(d).source
    cases = [(pa.array([1, 2, None, 5], pa.int64()), pa.array([D("1.00"), D("2.50"), D("5")], pa.decimal128(10, 2))),
             (pa.array([D("1.00"), D("2.50"), D("5")], pa.decimal128(10, 2)), pa.array([1, 2, 5], pa.int64())),
             (pa.array([D("1.0"), D("2.5"), D("5")], pa.decimal128(5, 1)),
              pa.array([D("1.00"), D("2.50"), D("5.01")], pa.decimal128(10, 2))),
             (pa.array([date(2020, 1, 1), date(2020, 1, 2)]),
              pa.array([datetime(2020, 1, 1), datetime(2020, 1, 2, 5)], pa.timestamp("us"))),
             (pa.array([datetime(2020, 1, 1), datetime(2020, 1, 2, 5)], pa.timestamp("ms")),
              pa.array([datetime(2020, 1, 1), datetime(2020, 1, 2, 5, 0, 0, 1)], pa.timestamp("us"))),
             (pa.array([2**63 + 1, 1, None], pa.uint64()), pa.array([1, -1], pa.int64())),
             (pa.array(["a", "b", None, "c"]).dictionary_encode(), pa.array(["a", "c"])),
             (pa.array([3, 1], pa.int64()), pa.array([1, 2, 3], pa.int64()).dictionary_encode())]
    for on, key in cases:
        fact, dim = pa.table({"k": on}), pa.table({"id": key, "name": [f"r{i}" for i in range(len(key))]})
        want = [r[0] for r in duckdb.sql(
            "SELECT d.name FROM (SELECT *, row_number() OVER () AS i FROM fact) AS f "
            "LEFT JOIN dim AS d ON f.k = d.id ORDER BY f.i").fetchall()]
        assert join_tables(fact, source, {"d": dim})["d.name"].to_pylist() == want, (on.type, key.type)


def test_a_duplicated_key_is_refused_before_any_scan(tmp_path):
    fact, dims = make_star(100, 1)
    dims["item"] = pa.concat_tables([dims["item"], dims["item"].slice(2, 1)])
    d = star_spec(tmp_path)
    with pytest.raises(CaptureError) as info:
        capture(d, {"fact": fact}, dims, tmp_path / "cache")
    assert str(info.value) == (
        f"join 'item': key 'sku' of {tmp_path}/item.parquet is not unique (the value 'sku-002' is "
        "on more than one row), so a row of the source would match several rows; hint: join on "
        f"a unique column of {tmp_path}/item.parquet, or remove its duplicate rows")
    assert not list((tmp_path / "cache").glob("*/shards/*"))  # nothing scanned


def test_a_duplicated_dictionary_encoded_key_is_refused_as_any_other(tmp_path):
    """A dimension table from a pandas category (dictionary-encoded, in chunks of their
    own dictionaries): its duplicated key was Arrow's ArrowNotImplementedError ('index'
    has no kernel for dictionaries), not the join's CaptureError."""
    fact, dims = make_star(100, 1)
    sku = dims["item"]["sku"].to_pylist()
    dims["item"] = pa.table({"sku": pa.chunked_array([pa.array(sku).dictionary_encode(),
                                                      pa.array(sku[2:3]).dictionary_encode()]),
                             "brand": dims["item"]["brand"].to_pylist() + ["b9"],
                             "price": dims["item"]["price"].to_pylist() + [1]})
    with pytest.raises(CaptureError, match="key 'sku' of .* is not unique \\(the value 'sku-002' is on more"):
        capture(star_spec(tmp_path), {"fact": fact}, dims, tmp_path / "cache")


def test_a_source_column_named_as_a_joined_column_is_refused_before_any_scan(tmp_path):
    """A source column `d.name` (dots are allowed in a file's names) next to join `d`'s
    column `name`: both would be `d.name`; refused at the join's name, before any scan."""
    fact = pa.table({"k": pa.array([7, 1], pa.int64()), "D.name": ["mine", "mine too"]})
    dim = pa.table({"id": pa.array([7], pa.int64()), "name": ["seven"]})
    d = {"name": "keys", "source": {"path": str(tmp_path / "fact.parquet"),
                                    "joins": [{"name": "d", "path": str(tmp_path / "dim.parquet"),
                                               "key": "id", "on": "k"}]},
         "views": [{"name": "v", "type": "categorical", "field": "d.name"}]}
    with pytest.raises(CaptureError) as info:
        capture(d, {"fact": fact}, {"d": dim}, tmp_path / "cache")
    assert str(info.value) == (
        "join name 'd' begins the name of the source's column 'D.name', which the join's columns "
        "would be named as (d.<column>); hint: a join's columns are <join>.<column>: give the join "
        "another name, or rename the source's column")
    assert not list((tmp_path / "cache").glob("*/shards/*"))  # nothing scanned


def test_keys_equal_as_the_join_compares_them_are_duplicates():
    """String keys '7' and '007' are one key for an integer `on` (the join casts them to
    it, as SQL does): refused, not a fact row matched twice (or once, silently)."""
    d = {"name": "keys", "source": {"path": "/nonexistent/f.parquet", "joins": [
        {"name": "d", "path": "/nonexistent/d.csv", "key": "id", "on": "k"}]},
        "views": [{"name": "v", "type": "categorical", "field": "d.name"}]}
    source = parse_dashboard(d).source
    dim = pa.table({"id": ["7", "007", "1"], "name": ["seven", "bond", "one"]})
    with pytest.raises(CaptureError) as info:
        join_tables(pa.table({"k": pa.array([7, 1], pa.int64())}), source, {"d": dim})
    assert str(info.value).startswith(
        "join 'd': key 'id' of /nonexistent/d.csv is not unique (the value '7' is equal to another "
        "row's as the join compares it with 'k': 7), so a row of the source would match several rows")
    # compared as strings they are two keys
    got = join_tables(pa.table({"k": ["7", "007", None]}), source, {"d": dim})
    assert got["d.name"].to_pylist() == ["seven", "bond", None]


def test_only_the_columns_the_spec_reads_are_carried(tmp_path):
    d = star_spec(tmp_path)
    d["source"]["columns"] = {"big": "store.size * 2"}
    assert needed_columns(parse_dashboard(d)) == {
        "store": ["store_id", "city", "opened", "region_code", "size"],
        "region": ["code", "zone"], "item": ["sku", "brand", "price"]}


# --- a capture with joins -----------------------------------------------------------------


def assert_same_answers(a, b, d: dict, seed: int = 0, steps: int = 12) -> None:
    """Stores `a` and `b` of spec `d` answer random brushes, selects, parameters and
    clears alike: every view (counts, values, caveats), the selected rows and details."""
    dash = parse_dashboard(d)
    plan = plan_capture(dash)
    sa, sb = Session(a, plan), Session(b, plan)
    rng = np.random.default_rng(seed)

    def same(context) -> None:
        va, vb = sa.views(), sb.views()
        for name in va:
            x, y = va[name], vb[name]
            assert (x.labels, x.counts, x.caveats) == (y.labels, y.counts, y.caveats), (context, name)
            for p, q in zip(x.values, y.values, strict=True):
                assert p == q or (p is not None and q is not None and math.isclose(p, q, rel_tol=1e-9)), \
                    (context, name)
        assert sa.count_selected() == sb.count_selected(), context
        assert sa.details(page=0).equals(sb.details(page=0)), context

    same("base")
    for i in range(steps):
        f = plan.filters[int(rng.integers(0, len(plan.filters)))]
        try:
            if rng.random() < 0.15:
                sa.clear(f.name), sb.clear(f.name)
            elif f.kind == "points":
                labels = a.view(f.name).labels
                values = [x for x in labels if rng.random() < 0.4] or labels[:1]
                sa.select(f.name, values), sb.select(f.name, values)
            elif f.kind == "param_eq":
                value = a.parameter_domain(f.name)[1][:1] or [None]
                sa.set_parameter(f.name, value[0]), sb.set_parameter(f.name, value[0])
            elif f.kind == "param_range":
                x = float(rng.uniform(0, 500))
                sa.set_parameter(f.name, x), sb.set_parameter(f.name, x)
            elif dash.view(f.name).type == "temporal":
                labels = a.view(f.name).labels
                lo, hi = sorted(rng.choice(len(labels), 2)) if labels else (0, 0)
                interval = [labels[lo], labels[hi]] if labels else [None, None]
                sa.brush(f.name, interval), sb.brush(f.name, interval)
            else:
                x = sorted(float(v) for v in rng.uniform(-60, 400, 2))
                sa.brush(f.name, x), sb.brush(f.name, x)
        except InteractionError:
            continue
        same((i, f.name))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
def test_a_capture_with_joins_answers_as_the_rows_joined_beforehand(tmp_path_factory, seed):
    folder = tmp_path_factory.mktemp("star")
    fact, dims = make_star(int(np.random.default_rng(seed).integers(50, 900)), seed)
    d = star_spec(folder)
    joined = capture(d, {"a": fact.slice(0, fact.num_rows // 3), "b": fact.slice(fact.num_rows // 3)},
                     dims, folder / "joined")
    dash = parse_dashboard(d)
    flat = {"a": join_tables(fact.slice(0, fact.num_rows // 3), dash.source, dims),
            "b": join_tables(fact.slice(fact.num_rows // 3), dash.source, dims)}
    before = capture_tables(plan_capture(parse_dashboard(flat_spec(d))), flat, folder / "flat", CONFIG)
    assert joined.n_rows == before.n_rows == fact.num_rows
    # (rows without a match: only a capture that made the join knows them, and names them)
    name_unmatched_rows(before.layout, dash, before.base, joined.info.unmatched)
    assert_same_answers(before, joined, d, seed)


def test_rows_without_a_match_are_counted_and_named(tmp_path):
    fact, dims = make_star(3000, 7)
    d = star_spec(tmp_path)
    store = capture(d, {"fact": fact}, dims, tmp_path / "cache")
    dash = parse_dashboard(d)
    joined = join_tables(fact, dash.source, dims)
    for j in dash.source.joins:
        assert store.info.unmatched[j.name] == joined[f"{j.name}.{j.key}"].null_count > 0
    assert any(c.startswith("join region: ") and "without a match on store before it" in c
               for c in store.info.caveats), store.info.caveats
    s = Session(store, plan_capture(dash))
    # region.zone is never null in its table: its nulls are the rows without a match
    assert s.view("zone").caveats == {"no_match:region": store.info.unmatched["region"]}
    # store.city is null on some stores: its nulls are not all rows without a match
    assert set(s.view("city").caveats) == {"null", "other"}
    from brushfire.charts import caveat_texts

    assert caveat_texts(dash.view("zone"))["no_match:region"] == \
        "not shown: no row of join region matches (region.zone is null)"


# --- the oracle: DuckDB's LEFT JOIN ---------------------------------------------------------


def actions(session, spec) -> st.SearchStrategy:
    choices = []
    for g in spec.interactions.crossfilter:
        for name in g.views:
            v = spec.view(name)
            brush = v.brush or {"histogram": "interval", "temporal": "interval",
                                "categorical": "points"}[v.type]
            if brush == "none":
                continue
            labels = session.view(name).labels
            if brush == "points":
                choices.append(st.tuples(st.just("select"), st.just(name),
                                         st.lists(st.sampled_from([*labels, OTHER]), max_size=3)))
            elif v.type == "temporal":
                times = [lab[0] if isinstance(lab, list) else lab for lab in labels] or ["2021-01-01T00:00:00"]
                choices.append(st.tuples(st.just("brush"), st.just(name),
                                         st.tuples(st.sampled_from(times), st.sampled_from(times))))
            else:
                num = st.one_of(st.none(), st.floats(-100, 600).map(lambda x: round(x, 1)))
                choices.append(st.tuples(st.just("brush"), st.just(name), st.tuples(num, num)))
            choices.append(st.tuples(st.just("clear"), st.just(name), st.none()))
    for p in spec.interactions.parameters:
        value = st.sampled_from(["b0", "b1", "b3", "nope", None]) if p.widget == "dropdown" \
            else st.one_of(st.none(), st.integers(0, 520))
        choices.append(st.tuples(st.just("param"), st.just(p.name), value))
    return st.one_of(*choices)


def apply(session, oracle, action) -> None:
    kind, name, arg = action
    try:
        if kind == "brush":
            session.brush(name, arg)
        elif kind == "select":
            session.select(name, arg)
        elif kind == "param":
            session.set_parameter(name, arg)
        else:
            session.clear(name)
    except InteractionError:  # a value the view or dropdown does not have: nothing changes
        return
    if kind == "brush":
        oracle.brush(name, arg)
    elif kind == "select":
        oracle.select(name, arg)
    elif kind == "param":
        oracle.set_parameter(name, arg)
    else:
        oracle.clear(name)


def assert_view_matches(vd, expected: dict, op: str, vtype: str, context, oracle) -> None:
    """A view's bars as SQL's (tests/engine/test_session_oracle.py says the same)."""
    got = {}
    for i, (label, n, value) in enumerate(zip(vd.labels, vd.counts, vd.values, strict=True)):
        if n:
            key = label.replace("+00:00", "") if vtype == "temporal" else label \
                if vtype == "categorical" else i
            got[key] = (n, value)
    assert set(got) == set(expected), (context, vd.name, got, expected)
    for key, (n, value) in got.items():
        count, total, mean, stat = expected[key]
        assert n == count, (context, vd.name, key, n, count)
        if op not in ("count", "sum", "mean"):
            assert value == stat, (context, vd.name, key, value, stat)
        else:
            want = {"count": count, "sum": total, "mean": mean}[op]
            assert oracle.agrees(vd.name, key, value, want, op), (context, vd.name, key, value, want)


def check_views(spec, session, oracle, context) -> None:
    assert session.count_selected() == oracle.selected(), context
    for v in spec.views:
        vd = session.view(v.name)
        assert_view_matches(vd, oracle.view(v.name), v.aggregate.op, v.type, context, oracle)
        assert vd.caveats == oracle.caveats(v.name), (context, v.name, vd.caveats)


@pytest.fixture(scope="module", params=[3, 11, 2024])
def star(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("star")
    fact, dims = make_star(2500, request.param)
    write_star(folder, fact, dims)
    d = star_spec(folder)
    cut = [fact.num_rows // 4, fact.num_rows // 2]
    store = capture(d, {"fact": fact}, dims, folder / "cache", {"fact": [cut[0], 0, cut[1],
                                                                        fact.num_rows - sum(cut)]})
    dash = Dashboard(parse_dashboard(d), plan_capture(parse_dashboard(d)), store)
    return dash, Oracle(dash.spec)


def test_views_over_joins_equal_sql_after_every_interaction(star):
    dash, oracle = star

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        session = dash.session()
        oracle.clear()
        for step, action in enumerate(data.draw(st.lists(actions(session, dash.spec), max_size=8))):
            apply(session, oracle, action)
            check_views(dash.spec, session, oracle, (step, action))

    run()


def test_details_and_highlight_over_joins_equal_sql(star):
    dash, oracle = star

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        session = dash.session()
        oracle.clear()
        for action in data.draw(st.lists(actions(session, dash.spec), max_size=5)):
            apply(session, oracle, action)
        columns = list(dash.plan.detail_columns)
        rows, page = [], 0
        while page * 10_000 < dash.store.n_rows:
            rows += [_norm_row(tuple(r.values())) for r in
                     session.details(page=page, page_size=10_000, columns=columns).select(columns).to_pylist()]
            page += 1
        quoted = [f'"{c}"' for c in columns]
        assert sorted(rows, key=repr) == oracle.rows(quoted, oracle.where(None))
        zone = session.view("zone")
        bars = data.draw(st.lists(st.integers(0, max(0, len(zone.labels) - 1)), max_size=2, unique=True))
        bars = [b for b in bars if b < len(zone.labels)]
        got = session.highlight("zone", bars)
        keys = ", ".join("'" + zone.labels[b].replace("'", "''") + "'" for b in bars) or "NULL"
        for t in ("amount", "brand"):
            tv = dash.spec.view(t)
            assert_view_matches(got[t], oracle.view(t, extra=f'"region.zone" IN ({keys})'),
                                tv.aggregate.op, tv.type, ("highlight", bars, t), oracle)

    run()


def test_values_of_joined_measures_agree(star):
    """Means of a joined measure (item.price) and medians of one (store.size): exact
    per bar, with SQL's null handling (rows without a match have no measure)."""
    dash, oracle = star
    session = dash.session()
    oracle.clear()
    for name in ("price_by_zone", "median_size"):
        want = oracle.view(name)
        vd = session.view(name)
        for label, n, value in zip(vd.labels, vd.counts, vd.values, strict=True):
            if not n:
                continue
            key = label if dash.spec.view(name).type == "categorical" else vd.labels.index(label)
            count, _, mean, stat = want[key]
            assert n == count
            expect = mean if name == "price_by_zone" else stat
            assert (value is None and expect is None) or math.isclose(value, expect, rel_tol=1e-12), \
                (name, label, value, expect)


# --- on Spark ------------------------------------------------------------------------------


def spark_store(spark, d: dict, cache, broadcast_bytes: int | None = None, split: str | None = None):
    """A capture on Spark (`broadcast_bytes` 0: every join shuffled), with input splits of
    `split` bytes (many splits per file: rids by file, split and position)."""
    from brushfire.capture import run_capture
    from brushfire.capture.spark import SparkRunner

    dash = parse_dashboard(d)
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key)
    if split:
        spark.conf.set(key, split)
    try:
        runner = SparkRunner(spark, dash, CONFIG, lambda *_: None, broadcast_bytes=broadcast_bytes)
        return run_capture(plan_capture(dash), runner, cache, CONFIG)
    finally:
        spark.conf.set(key, before)


@pytest.fixture(scope="module")
def star_files(tmp_path_factory):
    """A star schema whose source is three Parquet files of several row groups."""
    import pyarrow.parquet as pq

    folder = tmp_path_factory.mktemp("spark_star")
    fact, dims = make_star(6000, 5)
    write_star(folder, fact.slice(0, 0), dims)
    (folder / "fact.parquet").unlink()
    (folder / "fact").mkdir()
    parts = [fact.slice(0, 2500), fact.slice(2500, 2000), fact.slice(4500)]
    for i, p in enumerate(parts):
        pq.write_table(p, folder / "fact" / f"part-{i}.parquet", row_group_size=300)
    d = star_spec(folder)
    d["source"]["path"] = str(folder / "fact")
    d["source"]["format"] = "parquet"
    return folder, d, {f"part-{i}": p for i, p in enumerate(parts)}, dims


@pytest.mark.spark
@pytest.mark.parametrize("broadcast", [None, 0], ids=["broadcast", "shuffled"])
def test_on_spark_joins_give_the_rows_and_lineage_of_the_capture_in_process(spark, star_files,
                                                                           tmp_path, broadcast):
    folder, d, parts, dims = star_files
    got = spark_store(spark, d, tmp_path / "spark", broadcast, split="24k")
    assert len({s.source for s in got.shards}) > 3, "several splits per file"
    want = capture(d, parts, dims, tmp_path / "local")
    assert got.n_rows == want.n_rows == 6000
    assert got.info.unmatched == want.info.unmatched
    columns = list(plan_capture(parse_dashboard(d)).detail_columns)
    # the same rows in the same rid order: every row's details, key columns too
    for rids in (np.arange(0, 6000, 7), np.arange(5900, 6000)):
        assert got.take(rids, columns).equals(want.take(rids, columns))
    assert_same_answers(want, got, d, steps=20)


@pytest.mark.spark
def test_on_spark_a_duplicated_key_or_a_missing_key_column_is_refused_first(spark, tmp_path):
    from brushfire.errors import SpecError

    fact, dims = make_star(500, 2)
    dims["region"] = pa.concat_tables([dims["region"], dims["region"].slice(0, 1)])
    write_star(tmp_path, fact, dims)
    d = star_spec(tmp_path)
    with pytest.raises(CaptureError) as info:
        spark_store(spark, d, tmp_path / "cache")
    assert "join 'region': key 'code'" in str(info.value) and "the value 'R0'" in str(info.value)
    assert not list((tmp_path / "cache").glob("*/shards/*"))
    (tmp_path / "item.csv").write_text("sku,brand,price\nsku-000,b1,3\n")
    d["source"]["joins"][2] = {"name": "item", "path": str(tmp_path / "item.csv"), "key": "id",
                               "on": "item_key", "options": {"header": "true"}}
    with pytest.raises(SpecError) as info:
        spark_store(spark, d, tmp_path / "cache")
    assert str(info.value) == ("<spec>: source.joins[2].key: column 'id' is not in the table of join 'item' "
                               "(item.csv)\n    columns: sku, brand, price\n    hint: name the column of the "
                               "dimension table that the source's on column holds"), str(info.value)


@pytest.mark.spark
def test_on_spark_a_key_duplicated_in_a_folder_names_the_files_holding_it(spark, tmp_path):
    """A dimension table of several files (a folder) whose key is duplicated across two of
    them, or within one: the message names the files holding the value, not the folder
    alone (in which the duplicate was left to be searched for)."""
    import pyarrow.parquet as pq

    fact, dims = make_star(300, 2)
    write_star(tmp_path, fact, dims)
    region = tmp_path / "region"
    region.mkdir()
    pq.write_table(dims["region"], region / "a.parquet")
    pq.write_table(pa.table({"code": ["Rx"], "zone": ["west"]}), region / "b.parquet")
    pq.write_table(dims["region"].slice(0, 1), region / "c.parquet")  # R0 again
    d = star_spec(tmp_path)
    d["source"]["joins"][1]["path"] = str(region)
    with pytest.raises(CaptureError) as info:
        spark_store(spark, d, tmp_path / "cache")
    assert f"join 'region': key 'code' of {region} is not unique (the value 'R0' is on more than one row, " \
        "in a.parquet and c.parquet)" in str(info.value), str(info.value)
    pq.write_table(pa.table({"code": ["Rx", "Rx"], "zone": ["west", "east"]}), region / "b.parquet")
    (region / "c.parquet").unlink()
    with pytest.raises(CaptureError, match=r"the value 'Rx' is on more than one row, in b\.parquet\)"):
        spark_store(spark, d, tmp_path / "cache")


@pytest.mark.spark
def test_on_spark_keys_equal_as_the_join_compares_them_are_refused_first(spark, tmp_path):
    """A CSV dimension's string keys '7' and '007' joined on an integer column: Spark's
    join casts them to integers, where they are one key (the source's rows would be
    repeated); refused before the scan, as any duplicated key."""
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"k": pa.array([7, 1, None], pa.int64())}), tmp_path / "fact.parquet")
    (tmp_path / "dim.csv").write_text("id,name\n7,seven\n1,one\n007,bond\n")
    d = {"name": "keys", "source": {"path": str(tmp_path / "fact.parquet"), "joins": [
        {"name": "d", "path": str(tmp_path / "dim.csv"), "key": "id", "on": "k",
         "options": {"inferSchema": "false"}}]},
        "views": [{"name": "v", "type": "categorical", "field": "d.name"}]}
    with pytest.raises(CaptureError) as info:
        spark_store(spark, d, tmp_path / "cache")
    assert "join 'd': key 'id' of " in str(info.value), str(info.value)
    assert "is not unique (the value '007' is equal to another row's as the join compares it " \
        "with 'k': 7)" in str(info.value), str(info.value)
    assert not list((tmp_path / "cache").glob("*/shards/*"))
    # Spark's own coercion: an int32 on compares a string key as a BIGINT ('3000000000' is
    # one, matching nothing), a decimal on as a DOUBLE ('7.001' and '7.004' are two keys)
    pq.write_table(pa.table({"k": pa.array([7, 1], pa.int32()),
                             "dec": pa.array([7, 1], pa.decimal128(10, 2))}), tmp_path / "fact.parquet")
    (tmp_path / "dim.csv").write_text("id,name\n7,seven\n3000000000,big\n7.001,a\n7.004,b\n")
    d["source"]["joins"][0]["on"] = "dec"
    assert spark_store(spark, d, tmp_path / "cache2").n_rows == 2
    (tmp_path / "dim.csv").write_text("id,name\n7,seven\n3000000000,big\n")
    d["source"]["joins"][0]["on"] = "k"
    assert spark_store(spark, d, tmp_path / "cache3").n_rows == 2


def time_keyed(folder) -> dict:
    """A dimension keyed by a time (a zoned TIMESTAMP), 04:00 UTC on March 1st twice, and a
    dashboard joining it; returns the spec."""
    import pyarrow.parquet as pq

    at = pa.array([datetime(2023, 3, 1, 4), datetime(2023, 3, 1, 4), datetime(2023, 3, 2, 4)],
                  pa.timestamp("us", tz="UTC"))
    pq.write_table(pa.table({"at": at, "shift": ["a", "b", "c"]}), folder / "dim.parquet")
    pq.write_table(pa.table({"when": at.slice(1), "x": [1, 2]}), folder / "fact.parquet")
    return {"name": "times", "source": {"path": str(folder / "fact.parquet"), "joins": [
        {"name": "d", "path": str(folder / "dim.parquet"), "key": "at", "on": "when"}]},
        "views": [{"name": "v", "type": "categorical", "field": "d.shift"}]}


DUPLICATE_TIME = "is not unique (the value '2023-03-01T04:00:00+00:00' is on more than one row)"


def test_a_duplicated_time_key_is_named_as_an_instant_in_utc(tmp_path):
    """As Brushfire shows times (a view's labels, values.format_instant), not as Python's
    `datetime.datetime(2023, 3, 1, 4, 0, tzinfo=...)`."""
    import pyarrow.parquet as pq

    d = time_keyed(tmp_path)
    with pytest.raises(CaptureError) as info:
        join_tables(pq.read_table(tmp_path / "fact.parquet"), parse_dashboard(d).source,
                    {"d": pq.read_table(tmp_path / "dim.parquet")})
    assert DUPLICATE_TIME in str(info.value), str(info.value)


@pytest.mark.spark
def test_on_spark_a_duplicated_time_key_is_named_in_utc_on_a_host_in_another_zone(spark, tmp_path, monkeypatch):
    """pyspark collects a TIMESTAMP as the Python process's local time: on a host in New
    York (and a Spark session there) the key of 04:00 UTC was named as 23:00 the day
    before. The check collects it as the lazy answers do (capture/spark.py, collect_utc)."""
    import time

    d = time_keyed(tmp_path)
    zone = "spark.sql.session.timeZone"
    before = spark.conf.get(zone)
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    spark.conf.set(zone, "America/New_York")
    try:
        with pytest.raises(CaptureError) as info:
            spark_store(spark, d, tmp_path / "cache")
    finally:
        spark.conf.set(zone, before)
        monkeypatch.undo()
        time.tzset()
    assert DUPLICATE_TIME in str(info.value), str(info.value)
    assert not list((tmp_path / "cache").glob("*/shards/*"))


@pytest.mark.spark
def test_on_spark_a_key_the_joins_cast_fails_on_names_the_join(spark, tmp_path):
    """A string column compared with an integer one is cast to an integer, by Spark as by
    DuckDB, and a value that is not one fails the query. A dimension's key is checked
    before the scan; a source's `on` fails the scan, whose error names the join."""
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"k": pa.array([7, 1], pa.int64()), "s": ["7", "x"]}), tmp_path / "fact.parquet")
    (tmp_path / "dim.csv").write_text("id,name\n7,seven\nabc,letters\n")
    pq.write_table(pa.table({"id": pa.array([7, 1], pa.int64()), "name": ["seven", "one"]}),
                   tmp_path / "dim.parquet")
    d = {"name": "keys", "source": {"path": str(tmp_path / "fact.parquet"), "joins": [
        {"name": "d", "path": str(tmp_path / "dim.csv"), "key": "id", "on": "k",
         "options": {"inferSchema": "false"}}]},
        "views": [{"name": "v", "type": "categorical", "field": "d.name"}]}
    with pytest.raises(CaptureError) as info:
        spark_store(spark, d, tmp_path / "cache")
    assert str(info.value) == (
        f"join 'd': key 'id' of {tmp_path}/dim.csv holds 'abc', which is not a BIGINT: the join "
        "compares the key with 'k' as a BIGINT, casting it as SQL does, and Spark (as DuckDB) fails on a "
        f"value that is not one; hint: fix or remove that row of {tmp_path}/dim.csv, or give 'k' and "
        "'id' one type in the files (a CSV file's columns are strings unless options: "
        '{inferSchema: "true"})')
    assert not list((tmp_path / "cache").glob("*/shards/*"))
    d["source"]["joins"] = [{"name": "d", "path": str(tmp_path / "dim.parquet"), "key": "id", "on": "s"}]
    with pytest.raises(CaptureError) as info:
        spark_store(spark, d, tmp_path / "cache")
    assert "The value 'x' of the type" in str(info.value), str(info.value)
    assert str(info.value).endswith(
        f"; join 'd' compares 's' (STRING) with key 'id' of {tmp_path}/dim.parquet (BIGINT): Spark casts "
        "each 's' to BIGINT, as SQL does, and fails on a value that is not one; hint: give 's' and 'id' "
        "one type in the files"), str(info.value)


@pytest.mark.spark
def test_on_spark_a_join_named_as_a_column_of_a_csv_source_is_refused_at_its_name(spark, tmp_path):
    """validate cannot know a CSV source's columns; capture's analysis names the join,
    not Spark's 'ambiguous reference' at its on."""
    from brushfire.errors import SpecError

    (tmp_path / "fact.csv").write_text("k,amount\n7,1\n1,2\n")
    pa_dim = pa.table({"id": pa.array([7], pa.int64()), "name": ["seven"]})
    import pyarrow.parquet as pq

    pq.write_table(pa_dim, tmp_path / "dim.parquet")
    d = {"name": "keys", "source": {"path": str(tmp_path / "fact.csv"), "options": {"header": "true"},
                                    "joins": [{"name": "Amount", "path": str(tmp_path / "dim.parquet"),
                                               "key": "id", "on": "k"}]},
         "views": [{"name": "v", "type": "categorical", "field": "Amount.name"}]}
    with pytest.raises(SpecError) as info:
        spark_store(spark, d, tmp_path / "cache")
    assert str(info.value).startswith(
        "<spec>: source.joins[0].name: join name 'Amount' is a column of the source ('amount')\n"
        "    hint: a join's columns are <join>.<column>: give the join another name"), str(info.value)


@pytest.mark.spark
def test_on_spark_a_source_column_named_as_a_joined_column_is_refused_at_the_joins_name(spark, tmp_path):
    """A Parquet source's column `d.name` and join `d`'s column `name`: the scan failed on
    Spark's "Reference `d.name` is ambiguous", after the key check's jobs, at no key."""
    import pyarrow.parquet as pq

    from brushfire.errors import SpecError

    pq.write_table(pa.table({"k": pa.array([7, 1], pa.int64()), "d.name": ["mine", "mine too"]}),
                   tmp_path / "fact.parquet")
    pq.write_table(pa.table({"id": pa.array([7], pa.int64()), "name": ["seven"]}), tmp_path / "dim.parquet")
    d = {"name": "keys", "source": {"path": str(tmp_path / "fact.parquet"),
                                    "joins": [{"name": "d", "path": str(tmp_path / "dim.parquet"),
                                               "key": "id", "on": "k"}]},
         "views": [{"name": "v", "type": "categorical", "field": "d.name"}]}
    with pytest.raises(SpecError) as info:
        spark_store(spark, d, tmp_path / "cache")
    assert str(info.value) == (
        "<spec>: source.joins[0].name: join name 'd' begins the name of the source's column 'd.name', "
        "which the join's columns would be named as (d.<column>)\n"
        "    hint: a join's columns are <join>.<column>: give the join another name, or rename the "
        "source's column"), str(info.value)


@pytest.mark.spark
def test_on_spark_a_changed_dimension_rescans_only_joined_columns(spark, star_files, tmp_path):
    import shutil

    import pyarrow.parquet as pq

    folder, d, parts, dims = star_files
    work = tmp_path / "star"
    shutil.copytree(folder, work)
    d = {**d, "source": {**d["source"], "path": str(work / "fact"),
                         "joins": [{**j, "path": j["path"].replace(str(folder), str(work))}
                                   for j in d["source"]["joins"]]}}
    from brushfire.dashboard import is_current
    from brushfire.lineage.store import entry_dir, read_manifest

    spark_store(spark, d, tmp_path / "cache")
    entry = entry_dir(tmp_path / "cache", parse_dashboard(d))
    assert is_current(read_manifest(entry), parse_dashboard(d), CONFIG)
    region = dims["region"].set_column(1, "zone", pa.array(["west"] * dims["region"].num_rows))
    pq.write_table(region, work / "region.parquet")
    # a changed dimension table: the capture is no longer current (Dashboard.open, stale)
    assert not is_current(read_manifest(entry), parse_dashboard(d), CONFIG)
    again = spark_store(spark, d, tmp_path / "cache")
    notes = " ".join(again.info.changes)
    assert "reused 3 of 3 input files" in notes and "scanning 0 new" not in notes, notes
    assert "scanning region.zone, region.zone (details), region.code (details), region.code (rows " \
           "without a match) alone over 3 files" in notes, notes
    full = capture(d, parts, {**dims, "region": region}, tmp_path / "local")
    assert_same_answers(full, again, d)
    # an appended file of the source: scanned alone
    extra, _ = make_star(700, 99)
    pq.write_table(extra, work / "fact" / "part-3.parquet")
    appended = spark_store(spark, d, tmp_path / "cache")
    assert "scanning 1 new and 0 changed file" in " ".join(appended.info.changes)
    assert not any("alone" in c for c in appended.info.changes), appended.info.changes
    assert_same_answers(capture(d, {**parts, "part-3": extra}, {**dims, "region": region},
                                tmp_path / "local2"), appended, d)


@pytest.mark.spark
def test_on_spark_a_static_filter_rescans_everything_only_for_the_joins_it_reads(spark, star_files, tmp_path):
    """A static filter over a joined column (store.size) decides the rows with that join
    (and the joins before it): a changed store table scans every file again; a changed
    region table, which no filter reads, rescans only the joined columns (it scanned every
    file again: any join's table was part of the rows' identity)."""
    import shutil

    import pyarrow.parquet as pq

    folder, d, parts, dims = star_files
    work = tmp_path / "star"
    shutil.copytree(folder, work)
    d = {**d, "source": {**d["source"], "path": str(work / "fact"),
                         "filters": ["`Store`.`size` IS NULL OR `store`.`size` > 20"],
                         "joins": [{**j, "path": j["path"].replace(str(folder), str(work))}
                                   for j in d["source"]["joins"]]}}
    first = spark_store(spark, d, tmp_path / "cache")
    region = dims["region"].set_column(1, "zone", pa.array(["west"] * dims["region"].num_rows))
    pq.write_table(region, work / "region.parquet")
    again = spark_store(spark, d, tmp_path / "cache")
    notes = " ".join(again.info.changes)
    assert "reused 3 of 3 input files" in notes and "alone over 3 files" in notes, notes
    assert again.n_rows == first.n_rows
    assert_same_answers(spark_store(spark, d, tmp_path / "fresh"), again, d)
    store = dims["store"].set_column(2, "size", pa.array([5.0] * dims["store"].num_rows))
    pq.write_table(store, work / "store.parquet")
    changed = spark_store(spark, d, tmp_path / "cache")
    # (the note names what changed among its causes: it named the source's format, options,
    # filters, their columns' types and the split size alone)
    assert "static filters (or the types of the columns they read, or a dimension table they read " \
        "through a join)" in " ".join(changed.info.changes) and changed.n_rows < first.n_rows, changed.info.changes
    assert_same_answers(spark_store(spark, d, tmp_path / "fresh2"), changed, d)


@pytest.mark.spark
def test_on_spark_a_functional_dependency_over_joined_columns_is_captured(spark, tmp_path):
    """A profiling check over joined columns (store.city -> region.zone): its default view
    name was fd_store.city__region.zone, whose '.' the capture's partial results read as
    their separator (KeyError 'fd_store' before any lineage was kept); a name holds only a
    name's characters, so the dot is written '_'. Its bars are SQL's."""
    from brushfire.spec import models as m

    folder = tmp_path / "star"
    fact, dims = make_star(1500, 8)
    write_star(folder, fact, dims)
    d = star_spec(folder)
    d["profile"] = {"fd": [[["store.city"], ["region.zone"]]]}
    spec = parse_dashboard(d)
    name = spec.profile.fd[0].view_name
    assert name == "fd_store_city__region_zone"
    s = Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG).session()
    con = Oracle(spec, spark).con
    want = dict(con.execute(f'SELECT "{name}", count(*) FROM src GROUP BY 1').fetchall())
    view = s.view(name)
    assert dict(zip(view.labels, view.counts, strict=True)) == {k: want.get(k, 0) for k in view.labels}
    assert sum(view.counts) == fact.num_rows and want.get(m.FD_VIOLATES), want


def json_star(tmp_path, key: str) -> dict:
    """The star spec with its `item` table a JSON array file (the columns only Spark
    knows: validate leaves them to capture), joined on `key`."""
    import json

    fact, dims = make_star(300, 4)
    write_star(tmp_path, fact, dims)
    (tmp_path / "item.json").write_text(json.dumps(dims["item"].to_pylist()))
    d = star_spec(tmp_path)
    d["source"]["joins"][2] = {"name": "item", "path": str(tmp_path / "item.json"), "key": key, "on": "item_key"}
    return d


@pytest.mark.spark
def test_on_spark_a_join_error_is_said_once_without_sparks_log(spark, tmp_path, capfd):
    """pyspark 4 logs each analysis error with its query context and Java stack (a JSON
    line of ~10 KB on stderr) as it raises it: an `on` column Spark cannot resolve buried
    capture's own file:line:key message under it."""
    from brushfire.errors import SpecError

    d = json_star(tmp_path, "sku")
    d["source"]["joins"][2]["on"] = "item_keys"
    capfd.readouterr()
    with pytest.raises(SpecError, match=r"source.joins\[2\].on: Spark cannot join on it: .*`item_keys`"):
        spark_store(spark, d, tmp_path / "cache")
    err = capfd.readouterr().err
    assert "QueryContextLogger" not in err and "Py4JJavaError" not in err, err[:300]


@pytest.mark.spark
def test_on_spark_a_key_a_json_table_lacks_is_said_as_validate_says_it(spark, tmp_path):
    """A key column a JSON dimension table lacks (validate cannot read its columns): the
    error was Spark's own sentence with the hint of a derived column ('name a column of
    the source, or a derived column above this one'); it now says what validate says of a
    Parquet or CSV table's: the table's columns, and the one meant."""
    from brushfire.errors import SpecError

    with pytest.raises(SpecError) as info:
        spark_store(spark, json_star(tmp_path, "skus"), tmp_path / "cache")
    assert str(info.value) == (
        "<spec>: source.joins[2].key: column 'skus' is not in the table of join 'item' (item.json)\n"
        "    columns: brand, price, sku\n"
        "    hint: did you mean 'sku'?"), str(info.value)


@pytest.mark.spark
def test_on_spark_a_json_table_without_a_record_is_said_to_have_no_column(spark, tmp_path):
    """A dimension table of no rows as JSON ('[]', or an empty file): Spark reads no column
    from it, and the error said only that the key is not in the table, with the hint of a
    misspelt key ('name the column of the dimension table that ... holds')."""
    from brushfire.errors import SpecError

    d = json_star(tmp_path, "sku")
    (tmp_path / "item.json").write_text("[]")
    with pytest.raises(SpecError) as info:
        spark_store(spark, d, tmp_path / "cache")
    assert str(info.value) == (
        "<spec>: source.joins[2].key: column 'sku' is not in the table of join 'item' (item.json), which "
        "has no column: Spark read none from it (an empty file, or a JSON table without a record)\n"
        f"    hint: give {tmp_path}/item.json its rows, or, for a table of no rows, a file that says its "
        "columns (Parquet, or CSV with its header line)"), str(info.value)


@pytest.mark.spark
def test_on_spark_a_column_a_json_table_lacks_lists_all_its_columns(spark, tmp_path):
    """A misspelt joined column of a JSON dimension table: the error listed only the
    columns the spec reads (the others are not carried), so the one meant was neither
    listed nor suggested."""
    import json

    from brushfire.errors import SpecError

    d = json_star(tmp_path, "sku")
    rows = json.loads((tmp_path / "item.json").read_text())
    (tmp_path / "item.json").write_text(json.dumps([{**r, "colour": "red"} for r in rows]))
    d["views"][3]["field"] = "item.color"
    with pytest.raises(SpecError) as info:
        spark_store(spark, d, tmp_path / "cache")
    assert "    columns: item.brand, item.colour, item.price, item.sku\n" in str(info.value), str(info.value)
    assert str(info.value).endswith("hint: did you mean 'item.colour'?"), str(info.value)


@pytest.mark.spark
def test_on_spark_keys_of_types_no_join_compares_get_a_join_hint(spark, tmp_path):
    """A key Spark cannot compare with `on` (a timestamp with an integer): Spark says
    'Cannot resolve "(...)" due to data type mismatch', whose 'cannot resolve' got the
    hint of a misspelt column ('name a column of the source, or a derived column above
    this one') where both columns exist."""
    from datetime import datetime

    from brushfire.errors import SpecError

    fact, dims = make_star(200, 6)
    dims["store"] = dims["store"].set_column(0, "store_id", pa.array(
        [datetime(2020, 1, 1 + i % 28, i // 28) for i in range(dims["store"].num_rows)], pa.timestamp("us")))
    write_star(tmp_path, fact, dims)
    with pytest.raises(SpecError) as info:
        spark_store(spark, star_spec(tmp_path), tmp_path / "cache")
    text = str(info.value)
    assert text.startswith("<spec>: source.joins[0].on: Spark cannot join on it: Cannot resolve") \
        and "data type mismatch" in text, text
    assert text.endswith("hint: the source's store_key and key store_id of store.parquet are of types no "
                         "join compares (BIGINT, TIMESTAMP_NTZ): give them one type in the files"), text
