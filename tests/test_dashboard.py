"""brushfire.dashboard: sessions start as the spec says (parameter defaults active), in
the engine, the description clients draw from, the protocol and the widget."""

from __future__ import annotations

import pytest

from bars import same, sql_count, sql_values
from brushfire import Dashboard, protocol
from brushfire.describe import describe_dashboard
from brushfire.errors import CacheError, SpecError
from brushfire.spec import parse_dashboard
from oracle import Oracle

pytestmark = pytest.mark.spark

SPEC = """\
name: defaults
source: {{path: {path}}}
views:
  - {{name: hx, type: histogram, field: x, bin: {{step: 10, extent: [0, 100]}}}}
  - {{name: cat, type: categorical, field: cat, top: 5}}
interactions:
  crossfilter:
    - views: [hx, cat]
  parameters:
    - {{name: pdest, field: dest, default: {dest}}}
    - {{name: kmax, field: k, widget: slider, op: lte, default: 40}}
    - {{name: kmin, field: k, widget: slider, op: gte}}
"""


@pytest.fixture(scope="module")
def dash(spark, small_parquet, tmp_path_factory):
    spec = parse_dashboard(SPEC.format(path=small_parquet, dest="BBB"), "defaults.yaml")
    return Dashboard.open(spec, spark=spark, cache_dir=tmp_path_factory.mktemp("cache"))


def test_a_session_starts_with_the_defaults_active(dash):
    s = dash.session()
    assert s.filters == {"pdest": "BBB", "kmax": 40}
    oracle = Oracle(dash.spec)
    oracle.set_parameter("pdest", "BBB")
    oracle.set_parameter("kmax", 40)
    for v in ("hx", "cat"):
        assert same(s.view(v).values, sql_values(oracle, dash, v))
    assert s.count_selected() == sql_count(oracle)
    s.clear()  # "Clear all" drops them too
    assert s.filters == {}


def test_clients_see_the_defaults_active(dash):
    d = describe_dashboard(dash)
    assert d["filters"] == {"pdest": {"parameter": "BBB"}, "kmax": {"parameter": 40}}
    s = dash.session()
    assert [v["values"] for v in d["views"]] == [s.view("hx").values, s.view("cat").values]
    state = protocol.handle(dash.session(), {"type": "state"})
    assert state["filters"] == {"pdest": {"parameter": "BBB"}, "kmax": {"parameter": 40}}
    assert state["selected"] == s.count_selected()


def test_a_default_the_data_does_not_take_is_a_spec_error(dash, spark, small_parquet, tmp_path):
    spec = parse_dashboard(SPEC.format(path=small_parquet, dest="ZZZ"), "defaults.yaml")
    bad = Dashboard(spec, dash.plan, dash.store)  # the same capture: the default is not applied there
    with pytest.raises(SpecError) as info:
        bad.session()
    assert str(info.value).startswith(
        "defaults.yaml:10: interactions.parameters[0].default: the default 'ZZZ' cannot be applied: ")
    assert str(info.value).endswith("hint: give a value of the field, or leave default out")


def test_opening_from_the_cache_only_never_captures(dash, tmp_path):
    again = Dashboard.open(dash.user_spec, cache_dir=dash.opened_with["cache_dir"], capture=False)
    assert again.from_cache and again.store.n_rows == dash.store.n_rows
    with pytest.raises(CacheError, match="no current capture of defaults in the lineage cache"):
        Dashboard.open(dash.user_spec, cache_dir=tmp_path / "empty", capture=False)
    assert not (tmp_path / "empty").exists() or not any((tmp_path / "empty").iterdir())


def test_a_dropdown_over_a_boolean_field_starts_from_its_boolean_default(spark, tmp_path):
    """`default: true` stays a boolean (it was the number 1.0, which no boolean field
    holds: "1.0 is not one of the values: false, true" once the capture was done); on a
    string field an unquoted yes is refused before Spark, with the reason."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    data = tmp_path / "b.parquet"
    pq.write_table(pa.table({"x": rng.random(500) * 10, "late": rng.random(500) < 0.3,
                             "c": np.array(["a", "b"])[rng.integers(0, 2, 500)]}), data)
    text = (f"name: late\nsource: {{path: {data}}}\nviews:\n"
            "  - {name: hx, type: histogram, field: x, bin: {step: 1, extent: [0, 10]}}\n"
            "interactions:\n  parameters:\n    - {name: p, field: FIELD, default: DEFAULT}\n")
    spec = parse_dashboard(text.replace("FIELD", "late").replace("DEFAULT", "true"), "late.yaml")
    dash = Dashboard.open(spec, spark=spark, cache_dir=tmp_path / "cache")
    s = dash.session()
    assert s.filters == {"p": True}
    oracle = Oracle(dash.spec)
    oracle.set_parameter("p", True)
    assert s.count_selected() == sql_count(oracle)
    with pytest.raises(SpecError, match="true is not a string"):
        Dashboard.open(parse_dashboard(text.replace("FIELD", "c").replace("DEFAULT", "yes"), "late.yaml"),
                       spark=spark, cache_dir=tmp_path / "cache")


def test_a_changed_dimension_table_makes_a_dashboard_without_a_cache_stale(spark, tmp_path):
    """Opened without a cache (its capture in a temporary directory), a dashboard with a
    join noticed new source files but never a changed dimension table (`stale` compared
    the dimension's files only with a cache entry's): `refresh` kept the old labels."""
    import time

    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"k": pa.array([1, 2, 2, None], pa.int64())}), tmp_path / "fact.parquet")
    dim = tmp_path / "dim.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "c": ["a", "b"]}), dim)
    spec = {"name": "dims", "source": {"path": str(tmp_path / "fact.parquet"),
                                       "joins": [{"name": "d", "path": str(dim), "key": "id", "on": "k"}]},
            "views": [{"name": "c", "type": "categorical", "field": "d.c"}]}
    dash = Dashboard.open(spec, spark=spark, cache_dir=None)
    assert not dash.stale() and dash.session().view("c").labels == ["b", "a", "(other)"]
    time.sleep(0.01)  # (a modification time of its own)
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "c": ["a", "z"]}), dim)
    assert dash.stale()
    newer = dash.refresh(spark=spark)
    assert newer is not None and not newer.stale()
    assert newer.session().view("c").labels == ["z", "a", "(other)"]


def test_a_refresh_that_failed_is_not_captured_again_until_the_files_change(tmp_path, monkeypatch):
    """`serve --watch` (and the widget's watch) refresh every few seconds: a refresh that
    failed over a file that stays (another schema, a file Spark cannot read) started a
    whole capture on Spark again at every check, for ever, on the machine that serves
    the sessions. It fails alike without capturing until the files change."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import brushfire.capture
    from brushfire.capture.local import capture_tables
    from brushfire.errors import CaptureError
    from brushfire.lineage.layout import CaptureConfig
    from brushfire.plan import plan_capture

    (tmp_path / "data").mkdir()
    table = pa.table({"c": ["a", "b", "a"]})
    pq.write_table(table, tmp_path / "data" / "p0.parquet")
    spec = parse_dashboard({"name": "failing", "source": {"path": str(tmp_path / "data")},
                            "views": [{"name": "c", "type": "categorical", "field": "c"}]})
    plan = plan_capture(spec)
    dash = Dashboard(spec, plan, capture_tables(plan, {"p0": table}, tmp_path / "cache", CaptureConfig()))
    dash.opened_with = {"cache_dir": tmp_path / "cache", "config": CaptureConfig(), "spark_master": None}
    captures = []

    def failing(*args, **kwargs):
        captures.append(1)
        msg = f"p1.parquet: cannot be read ({len(captures)})"
        raise CaptureError(msg)

    monkeypatch.setattr(brushfire.capture, "capture_dashboard", failing)
    pq.write_table(table, tmp_path / "data" / "p1.parquet")
    assert dash.stale()
    for _ in range(3):
        with pytest.raises(CaptureError, match=r"cannot be read \(1\)"):
            dash.refresh()
    assert len(captures) == 1
    pq.write_table(table, tmp_path / "data" / "p2.parquet")  # the files change: tried again
    with pytest.raises(CaptureError, match=r"cannot be read \(2\)"):
        dash.refresh()


def test_a_csv_file_appended_with_a_line_break_in_a_field_is_read_whole(spark, tmp_path):
    """A folder of CSV files, served with --watch: a file appended with a quoted line break
    in a field (`"two⏎lines"`) was read line by line, as the spec loaded before it came
    said (no `multiLine`): its records broken in two rows each, served silently, where
    a capture from scratch reads them whole."""
    from brushfire.spec import load_dashboard

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.csv").write_text("n,label\n" + "".join(f"{i},plain\n" for i in range(20)))
    (tmp_path / "s.yaml").write_text("name: breaks\nsource: {path: data}\nviews:\n"
                                     "  - {name: lab, type: categorical, field: label, top: 10}\n")
    dash = Dashboard.open(load_dashboard(tmp_path / "s.yaml"), spark=spark, cache_dir=tmp_path / "cache")
    (tmp_path / "data" / "b.csv").write_text("n,label\n" + "".join(f'{i},"two\nlines"\n' for i in range(5)))
    newer = dash.refresh(spark=spark)
    assert newer.store.n_rows == 25
    shown = dict(zip(newer.store.view("lab").labels, newer.session().view("lab").counts, strict=False))
    assert {k: n for k, n in shown.items() if n} == {"plain": 20, "two\nlines": 5}
    assert newer.refresh(spark=spark) is None  # (current: its own spec's entry)


@pytest.mark.parametrize("spec", [3, None, ["a.yaml"], b"name: x"])
def test_a_spec_of_no_kind_it_takes_is_a_spec_error_saying_what_it_takes(spec, tmp_path):
    """Dashboard.open and brushfire.widget (its spec) with what is no path, dict or model
    raised Python's TypeError from inside pathlib ("expected str, bytes or os.PathLike")."""
    import brushfire

    for open_it in (lambda: Dashboard.open(spec, cache_dir=tmp_path),
                    lambda: brushfire.widget(spec if spec is not None else 3, cache_dir=tmp_path)):
        with pytest.raises(SpecError, match="is not a spec: give a YAML file's path, a dict or a DashboardSpec"):
            open_it()
