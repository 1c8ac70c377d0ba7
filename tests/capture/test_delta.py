"""Delta Lake sources: a version's Parquet files read as they are (the log read by the
`deltalake` package, no Spark jars), and a new version captured by reading only the files
it added (an appended version) and dropping those it removed (an overwrite)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from brushfire import Dashboard
from brushfire.source import local_files
from brushfire.spec import parse_dashboard
from capture.test_incremental import CONFIG, assert_same_answers, shifted, spec
from oracle import Oracle
from rows import make_rows

pytestmark = pytest.mark.spark


def delta_spec(path, partitioned: bool = False) -> dict:
    d = spec()
    d["source"] = {"path": str(path), "format": "delta"}
    if partitioned:
        d["views"].append({"name": "dest", "type": "categorical", "field": "dest", "top": 5})
        d["interactions"]["crossfilter"] = [{"views": [v["name"] for v in d["views"]]}]
    return d


def test_a_new_delta_version_reads_only_its_files(spark, tmp_path):
    table = tmp_path / "table"
    write_deltalake(table, make_rows(800, 1))
    write_deltalake(table, make_rows(600, 2), mode="append")
    dash = parse_dashboard(delta_spec(table))
    assert len(local_files(dash.source)) == 2
    first = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert first.store.n_rows == 1400
    write_deltalake(table, shifted(make_rows(300, 3), 250), mode="append")  # version 2
    again = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert any("reused 2 of 3 input files" in c for c in again.store.info.changes), again.store.info.changes
    full = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "full", config=CONFIG)
    assert_same_answers(full.store, again.store, delta_spec(table))
    oracle, s = Oracle(dash, spark), again.session()  # and SQL over the table's files
    s.brush("hx", (20, 400))
    oracle.brush("hx", (20, 400))
    want = oracle.view("cat")
    labels = again.store.view("cat").labels
    got = dict(zip(labels, s.view("cat").counts, strict=False))
    assert {k: got[k] for k in labels if k != "(other)"} == \
        {k: want.get(k, (0,))[0] for k in labels if k != "(other)"}
    # an overwrite: a version whose files replace every earlier one
    write_deltalake(table, make_rows(500, 4), mode="overwrite")
    replaced = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert replaced.store.n_rows == 500
    assert any(" gone from the source" in c for c in replaced.store.info.changes)


def test_a_partitioned_delta_table_keeps_its_partition_column(spark, tmp_path):
    table = tmp_path / "table"
    write_deltalake(table, make_rows(900, 5), partition_by=["dest"])
    dash = parse_dashboard(delta_spec(table, partitioned=True))
    got = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    rows = make_rows(900, 5)
    want = pa.table({"dest": rows["dest"]}).group_by("dest").aggregate([("dest", "count")])
    counts = dict(zip(want["dest"].to_pylist(), want["dest_count"].to_pylist(), strict=True))
    view = got.store.view("dest")
    shown = dict(zip(view.labels, got.session().view("dest").counts, strict=False))
    assert {k: shown[k] for k in counts} == counts


def test_a_folder_that_is_no_delta_table_is_a_clear_error(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "x.parquet").write_bytes(b"")
    from brushfire.errors import BrushfireError

    with pytest.raises(BrushfireError, match="not a Delta table"):
        Dashboard.open(parse_dashboard(delta_spec(tmp_path / "t")), cache_dir=tmp_path / "cache")


def test_a_column_a_later_version_added_is_read_whichever_file_spark_reads_first(spark, tmp_path):
    """Schema evolution (`schema_mode="merge"`): a column added by a later version is in
    the table's schema though the files written before lack it (their rows read it as
    null). Spark reads Parquet files by one file's columns (the first listed): a table
    whose first file is an old one was refused ("column 'extra' is not in the source"),
    and a version appending a file without the column could not be scanned alone."""
    from deltalake import DeltaTable

    def with_extra(rows: pa.Table, prefix: str) -> pa.Table:
        return rows.append_column("extra", pa.array([f"{prefix}{i % 3}" for i in range(rows.num_rows)]))

    for attempt in range(40):  # (file names are random: one whose first file lacks the column)
        table = tmp_path / f"table{attempt}"
        write_deltalake(table, make_rows(300, 1))
        old = set(DeltaTable(str(table)).file_uris())
        write_deltalake(table, with_extra(make_rows(200, 2), "e"), mode="append", schema_mode="merge")
        if sorted(DeltaTable(str(table)).file_uris())[0] in old:
            break
    d = delta_spec(table)
    d["views"].append({"name": "extra", "type": "categorical", "field": "extra", "top": 10})
    d["interactions"] = {"crossfilter": [{"views": [v["name"] for v in d["views"]]}],
                         "details": {"columns": ["x", "extra"]}}
    dash = parse_dashboard(d)

    def assert_extra_as_delta_reads_it(got) -> None:
        rows = DeltaTable(str(table)).to_pyarrow_table()
        want = rows.group_by("extra").aggregate([([], "count_all")]).to_pylist()
        shown = dict(zip(got.store.view("extra").labels, got.session().view("extra").counts, strict=False))
        assert {w["extra"]: w["count_all"] for w in want if w["extra"] is not None} == \
            {k: n for k, n in shown.items() if n}
        assert got.store.n_rows == rows.num_rows

    first = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert_extra_as_delta_reads_it(first)
    # a version whose file lacks the column (merged: null on its rows), scanned alone
    write_deltalake(table, make_rows(100, 3), mode="append", schema_mode="merge")
    again = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert any("reused 2 of 3 input files" in c for c in again.store.info.changes), again.store.info.changes
    assert_extra_as_delta_reads_it(again)
    full = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "full", config=CONFIG)
    assert_same_answers(full.store, again.store, d)


def test_a_partition_value_of_non_ascii_text_reads_as_the_log_gives_it(spark, tmp_path):
    """The deltalake package percent-encodes a partition value's folder name (`ünï` as
    `pc=%C3%BCn%C3%AF`), which Spark unescapes one byte to one character: the value was
    read as 'Ã¼nÃ¯'. Values come out as the table's log gives them."""
    from deltalake import DeltaTable

    table = tmp_path / "table"
    rows = make_rows(400, 5)
    values = ["ünï", "a b", "x=y", "50%", "naïve/ç", "plain", None]
    rows = rows.append_column("pc", pa.array([values[i % len(values)] for i in range(rows.num_rows)]))
    write_deltalake(table, rows, partition_by=["pc"])
    d = delta_spec(table)
    d["views"].append({"name": "pc", "type": "categorical", "field": "pc", "top": 10})
    d["interactions"]["crossfilter"] = [{"views": [v["name"] for v in d["views"]]}]
    got = Dashboard.open(parse_dashboard(d), spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    want = DeltaTable(str(table)).to_pyarrow_table().group_by("pc").aggregate([([], "count_all")])
    shown = dict(zip(got.store.view("pc").labels, got.session().view("pc").counts, strict=False))
    assert {k: n for k, n in shown.items() if n} == \
        {w["pc"]: w["count_all"] for w in want.to_pylist() if w["pc"] is not None}


def test_a_partition_of_empty_text_reads_as_null(spark, tmp_path):
    """The deltalake package writes an empty string partition value as a folder `pc=`
    (its log says ''; Delta's readers read null), which Spark refuses to read as a
    partition ("Found an empty partition column value"): the whole table could not be
    captured. Its files are read apart, the value null; an append is scanned alone."""
    from deltalake import DeltaTable

    table = tmp_path / "table"

    def rows(n: int, seed: int) -> pa.Table:
        t = make_rows(n, seed)
        return t.append_column("pc", pa.array([["", "a", None, "ü"][i % 4] for i in range(n)]))

    write_deltalake(table, rows(400, 1), partition_by=["pc"])
    d = delta_spec(table)
    d["views"].append({"name": "pc", "type": "categorical", "field": "pc", "top": 10})
    d["interactions"]["crossfilter"] = [{"views": [v["name"] for v in d["views"]]}]
    dash = parse_dashboard(d)

    def assert_as_delta_reads_it(got) -> None:
        want = DeltaTable(str(table)).to_pyarrow_table()
        counts = want.group_by("pc").aggregate([([], "count_all")]).to_pylist()
        shown = dict(zip(got.store.view("pc").labels, got.session().view("pc").counts, strict=False))
        assert {k: n for k, n in shown.items() if n} == \
            {w["pc"]: w["count_all"] for w in counts if w["pc"] is not None}
        assert got.store.n_rows == want.num_rows

    first = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert_as_delta_reads_it(first)
    write_deltalake(table, rows(200, 2), partition_by=["pc"], mode="append")
    again = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert_as_delta_reads_it(again)
    full = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "full", config=CONFIG)
    assert_same_answers(full.store, again.store, d)


def test_a_table_in_a_folder_whose_name_has_a_space_is_read_and_appended(spark, tmp_path):
    """The deltalake package's `file_uris()` percent-encodes the table folder's own name
    (`my table/` as `my%20table/`), though not the log's paths under it: a table in a
    folder named with a space or a non-ASCII letter could not be read at all ("Path does
    not exist"). The files are the log's paths under the table's folder."""
    from deltalake import DeltaTable

    table = tmp_path / "my dätä" / "a table"

    def rows(n: int, seed: int) -> pa.Table:
        return make_rows(n, seed).append_column("pc", pa.array([["a b", "ü"][i % 2] for i in range(n)]))

    write_deltalake(table, rows(300, 1), partition_by=["pc"])
    d = delta_spec(table)
    d["views"].append({"name": "pc", "type": "categorical", "field": "pc", "top": 10})
    d["interactions"]["crossfilter"] = [{"views": [v["name"] for v in d["views"]]}]
    dash = parse_dashboard(d)
    assert all(Path(f["path"]).is_file() for f in local_files(dash.source))
    first = Dashboard.open(dash, spark=spark, cache_dir=tmp_path / "cache", config=CONFIG)
    assert first.store.n_rows == 300
    write_deltalake(table, rows(200, 2), partition_by=["pc"], mode="append")
    assert first.stale()
    again = first.refresh(spark=spark)
    assert any("reused 2 of 4 input files" in c for c in again.store.info.changes), again.store.info.changes
    want = DeltaTable(str(table)).to_pyarrow_table().group_by("pc").aggregate([([], "count_all")])
    shown = dict(zip(again.store.view("pc").labels, again.session().view("pc").counts, strict=False))
    assert {k: n for k, n in shown.items() if n} == {w["pc"]: w["count_all"] for w in want.to_pylist()}


def test_a_table_declaring_deletion_vectors_it_does_not_use_is_read(tmp_path, monkeypatch):
    """Databricks declares the deletionVectors reader feature on new tables (and delta-rs
    with it, variantType): such a table was refused though no file of its version has a
    deletion vector (delta-rs rewrites files where it deletes); a version that has one is."""
    import deltalake
    import pyarrow as pa

    from brushfire.errors import BrushfireError
    from brushfire.source import delta_table
    from brushfire.spec import models as m

    path = tmp_path / "t"
    write_deltalake(path, pa.table({"a": [1, 2, 3]}), configuration={"delta.enableDeletionVectors": "true"})
    deltalake.DeltaTable(path).delete("a = 2")
    source = m.Source(path=str(path), format="delta")
    table = delta_table(source)
    assert "deletionVectors" in table.protocol().reader_features and table.count() == 2

    one = pa.RecordBatchReader.from_batches(
        pa.schema([("filepath", pa.large_string())]), [pa.record_batch([pa.array(["f"], pa.large_string())],
                                                                       names=["filepath"])])
    monkeypatch.setattr(deltalake.DeltaTable, "deletion_vectors", lambda self: one)
    with pytest.raises(BrushfireError, match="needs a reader that knows deletionVectors"):
        delta_table(source)
