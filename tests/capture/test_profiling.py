"""Profiling checks through lineage (capture/profiling.py, docs/spec.md "profile"): the
column Spark adds equals DuckDB's SQL, the check's view brushes exactly the violating
rows in every other view, rids stay source positions, and `brushfire profile` lists the
violations as SQL counts them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bars import same, sql_count, sql_values
from brushfire import Dashboard
from brushfire.capture.analyze import analyze_source
from brushfire.capture.profiling import fd_report
from brushfire.cli import main
from brushfire.spec import models as m
from brushfire.spec import parse_dashboard
from oracle import Oracle

pytestmark = pytest.mark.spark


def fd_rows(n: int = 4000, seed: int = 5) -> pa.Table:
    """`state` is a function of `airport` except for a few airports (two states, or a state
    and a null); nulls in `airport` too (null is a value: those rows form one group)."""
    rng = np.random.default_rng(seed)
    airports = np.array([f"A{i:02d}" for i in range(40)])
    ap = airports[rng.integers(0, 40, n)]
    state = np.array([f"S{int(a[1:]) % 7}" for a in ap], dtype=object)
    flip = np.isin(ap, ["A03", "A17"]) & (rng.random(n) < 0.1)
    state[flip] = "ZZ"
    state[(ap == "A21") & (rng.random(n) < 0.05)] = None
    ap_null = rng.random(n) < 0.02
    return pa.table({
        "id": pa.array(np.arange(n)),
        "airport": pa.array(ap, mask=ap_null),
        "state": pa.array(state.tolist()),
        "hub": pa.array(np.where(np.isin(ap, ["A01", "A02"]), "big", "small")),
        "x": pa.array(rng.normal(50, 25, n).round(1)),
    })


def fd_spec(path) -> dict:
    return {
        "name": "fdcheck",
        "source": {"path": str(path)},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x", "bin": {"step": 10, "extent": [0, 100]}},
            {"name": "ap", "type": "categorical", "field": "airport", "top": 50},
            {"name": "st", "type": "categorical", "field": "state", "top": 5},
        ],
        "interactions": {"crossfilter": [{"views": ["hx", "ap", "st"]}],
                         "details": {"columns": ["id", "airport", "state"], "page_size": 50}},
        "profile": {"fd": [[["airport"], ["state"]], {"lhs": ["hub"], "rhs": ["state"], "name": "hub_fd"}]},
    }


@pytest.fixture(scope="module")
def captured(spark, tmp_path_factory):
    path = tmp_path_factory.mktemp("fd") / "rows.parquet"
    pq.write_table(fd_rows(), path, row_group_size=1000)
    dash = Dashboard.open(parse_dashboard(fd_spec(path)), spark=spark,
                          cache_dir=tmp_path_factory.mktemp("cache"))
    return dash, Oracle(dash.spec)


def test_the_checks_column_equals_sql(captured, spark):
    dash, oracle = captured
    df = analyze_source(spark, dash.spec)
    got = {(r["id"], r["fd_airport__state"], r["hub_fd"]) for r in df.select("id", "fd_airport__state", "hub_fd").collect()}
    want = set(oracle.con.execute('SELECT id, fd_airport__state, hub_fd FROM src').fetchall())
    assert got == want
    bad = {r[0] for r in oracle.con.execute(
        "SELECT DISTINCT airport FROM src WHERE fd_airport__state = 'violates'").fetchall()}
    # two states, or a state and a null; and the null airport (one group) with many states
    assert bad == {"A03", "A17", "A21", None}
    assert {r[0] for r in oracle.con.execute("SELECT DISTINCT hub_fd FROM src").fetchall()} == {"violates"}


def test_selecting_violates_brushes_exactly_those_rows_everywhere(captured):
    dash, oracle = captured
    s = dash.session()
    for name in ("fd_airport__state", "hub_fd"):
        for value in (m.FD_VIOLATES, m.FD_HOLDS):
            s.clear()
            oracle.clear()
            if value not in s.view(name).labels:
                continue
            s.select(name, [value])
            oracle.select(name, [value])
            for v in ("hx", "ap", "st"):
                assert same(s.view(v).values, sql_values(oracle, dash, v)), (name, value, v)
            assert s.count_selected() == sql_count(oracle)
    # and the other way: a brush filters the check's view
    s.clear()
    oracle.clear()
    s.brush("hx", (20, 45))
    oracle.brush("hx", (20, 45))
    assert same(s.view("fd_airport__state").values, sql_values(oracle, dash, "fd_airport__state"))


def test_rids_stay_source_positions(captured):
    """The checks' broadcast join keeps the source's row order: rid i is source row i."""
    dash, _ = captured
    s = dash.session()
    s.select("fd_airport__state", [m.FD_VIOLATES])
    page = s.details(page=0).to_pylist()
    assert page and all(r["rid"] == r["id"] for r in page)


def test_fd_report_counts_as_sql(captured, spark):
    dash, oracle = captured
    df = analyze_source(spark, dash.spec)
    fd = dash.spec.profile.fd[0]
    r = fd_report(df, fd, limit=2)
    viol = oracle.con.execute(
        "SELECT count(*), sum(n) FROM (SELECT airport, count(*) AS n FROM src "
        "WHERE fd_airport__state = 'violates' GROUP BY airport)").fetchone()
    assert (r.violating_values, r.violating_rows) == viol
    assert r.rows == 4000
    assert r.lhs_values == oracle.con.execute("SELECT count(DISTINCT airport) + 1 FROM src").fetchone()[0]
    assert len(r.worst) == 2 and r.worst[0].rows >= r.worst[1].rows
    for v in r.worst:
        want = oracle.con.execute("SELECT state, count(*) FROM src WHERE airport IS NOT DISTINCT FROM ? "
                                  "GROUP BY 1 ORDER BY 2 DESC, 1", [v.lhs[0]]).fetchall()
        assert [(value[0], n) for value, n in v.rhs] == want


def test_brushfire_profile_lists_the_violations(captured, capsys, tmp_path):
    dash, _ = captured
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: fdcheck\nsource: {{path: {dash.spec.source.path}}}\nviews:\n"
                    "  - {name: hx, type: histogram, field: x, bin: {step: 10, extent: [0, 100]}}\n"
                    "profile:\n  fd: [[airport], [state]]\n")
    assert main(["profile", str(spec), "--limit", "1", "--fd", "id -> x"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("fd airport -> state: 4 of 41 left-hand values violate it (")
    assert out[1].startswith("  airport=")
    assert out[2] == "  … 3 more left-hand values (--limit)"
    assert out[3].startswith("  linked view 'fd_airport__state': select 'violates'")
    assert out[4] == "fd id -> x: holds"
    assert main(["profile", str(spec), "--fd", "id, nope -> x"]) == 1
    assert "--fd id, nope -> x: no column 'nope' in the source" in capsys.readouterr().err


def test_sql_baselines_and_the_check_see_the_checks_columns(captured, tmp_path):
    """`brushfire bench`'s DuckDB engines and its check read the source with the checks'
    columns (here computed by sql.profile_sql, in the source's row order: rowid = rid)."""
    from brushfire.baselines.duckdb import connect_source

    dash, oracle = captured
    con = connect_source(dash.spec, threads=1, cache_dir=str(tmp_path))
    got = con.execute("SELECT rowid, id, fd_airport__state, hub_fd FROM src ORDER BY rowid").fetchall()
    assert all(rowid == i for rowid, i, _, _ in got)
    assert {r[1:] for r in got} == set(oracle.con.execute(
        "SELECT id, fd_airport__state, hub_fd FROM src").fetchall())


def test_a_check_over_a_redefined_derived_column_is_computed_again(spark, tmp_path):
    """A check's column was kept while the check and the source's files held, so editing
    the expression of a derived column it reads kept the old violations: `region` from the
    airport's first two characters (every region violates) to the airport itself (four
    airports do), and the check's view still counted every row as violating."""
    path = tmp_path / "rows.parquet"
    pq.write_table(fd_rows(600), path)

    def spec_of(region: str) -> dict:
        d = fd_spec(path)
        d["source"]["columns"] = {"region": region}
        d["profile"] = {"fd": [{"lhs": ["region"], "rhs": ["state"], "name": "chk"}]}
        return d

    Dashboard.open(parse_dashboard(spec_of("substring(airport, 1, 2)")), spark=spark,
                   cache_dir=tmp_path / "cache")
    dash = Dashboard.open(parse_dashboard(spec_of("airport")), spark=spark, cache_dir=tmp_path / "cache")
    assert not dash.from_cache
    oracle = Oracle(dash.spec, spark)
    got = dash.session().view("chk")
    assert m.FD_HOLDS in got.labels  # (most airports have one state)
    assert same(got.values, sql_values(oracle, dash, "chk"))
    s = dash.session()
    s.select("chk", [m.FD_VIOLATES])
    oracle.select("chk", [m.FD_VIOLATES])
    assert s.count_selected() == sql_count(oracle)


def test_a_violation_an_appended_file_brings_is_found_over_every_file(spark, tmp_path):
    """An appended file is scanned alone, and so was its check's column: the violations
    were found among its own rows only, and the files captured before were checked again
    among theirs, so an airport given another state by the new file (one state in each
    file) held everywhere, where SQL over the folder says its rows violate."""
    folder = tmp_path / "data"
    folder.mkdir()

    def rows(n: int, seed: int, state_of_a04: str) -> pa.Table:
        ap = [f"A{i:02d}" for i in np.random.default_rng(seed).integers(0, 10, n)]
        state = [state_of_a04 if a == "A04" else f"S{int(a[1:]) % 3}" for a in ap]
        return pa.table({"id": pa.array(np.arange(n)), "airport": pa.array(ap), "state": pa.array(state),
                         "hub": pa.array(["small"] * n), "x": pa.array(np.linspace(0, 99, n))})

    pq.write_table(rows(300, 1, "S1"), folder / "part-0.parquet")
    d = fd_spec(folder)
    d["profile"] = {"fd": [[["airport"], ["state"]]]}
    first = Dashboard.open(parse_dashboard(d), spark=spark, cache_dir=tmp_path / "cache")
    assert first.session().view("fd_airport__state").labels == [m.FD_HOLDS]
    pq.write_table(rows(100, 2, "ZZ"), folder / "part-1.parquet")
    dash = Dashboard.open(parse_dashboard(d), spark=spark, cache_dir=tmp_path / "cache")
    assert any("reused 1 of 2 input files" in c for c in dash.store.info.changes), dash.store.info.changes
    oracle = Oracle(dash.spec, spark)
    got = dash.session().view("fd_airport__state")
    assert m.FD_VIOLATES in got.labels
    assert same(got.values, sql_values(oracle, dash, "fd_airport__state"))
