"""Capture on a real Spark standalone cluster: a master and two workers on loopback,
started from the installed PySpark (brushfire.capture.standalone).

The cluster capture runs in a separate driver process: a SparkSession is one per process
and getOrCreate would hand back this process's local test session. The executors run
Brushfire's Python (they build the lineage shards); the store they write must equal a
local-mode capture of the same spec and data, array for array, and the capture's tasks
must have run in executors on both workers.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from brushfire.capture import capture_dashboard
from brushfire.capture.standalone import LOOPBACK_ENV, Cluster, ClusterError, start_cluster
from brushfire.lineage.store import LineageStore, load_store
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WORKERS = 2
# Small executors, and input splits small enough that the 3-row-group test file becomes
# several tasks: both executors get work and rids cross partition boundaries.
CLUSTER_CONF = {"spark.executor.memory": "512m", "spark.sql.files.maxPartitionBytes": "16k",
                "spark.sql.files.openCostInBytes": "16k"}

# The driver: wait for both executors, capture, save the store, report what ran where.
DRIVER = """
import json, sys, time
from brushfire.capture import capture_dashboard
from brushfire.capture.spark import get_spark
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard

spec, master, out, conf, executors = sys.argv[1:]
spark = get_spark(master, app_name="brushfire-cluster-test", driver_memory="1g",
                  conf=json.loads(conf))
tracker = spark.sparkContext._jsc.sc().statusTracker()
deadline = time.monotonic() + 120
while len(tracker.getExecutorInfos()) < int(executors) + 1:  # the driver is listed too
    if time.monotonic() > deadline:
        sys.exit(f"only {len(tracker.getExecutorInfos()) - 1} executors registered")
    time.sleep(0.2)
store = capture_dashboard(plan_capture(parse_dashboard(json.loads(spec))), spark=spark, cache_dir=out)
print(json.dumps({"app_id": spark.sparkContext.applicationId, "master": store.info.spark_master,
                  "entry": str(store.directory),
                  "block_managers": [f"{e.host()}:{e.port()}" for e in tracker.getExecutorInfos()]}))
spark.stop()
"""


def cluster_spec(path) -> dict:
    """Every kind of lineage array: codes, sorted and partitioned indexes, rect brush
    values, measures, parameters, highlight, details snapshot; derived column, filter."""
    return {
        "name": "cluster_test",
        "source": {"path": str(path), "columns": {"x2": "x * 2 + 1"},
                   "filters": ["k IS NULL OR k > -15"]},
        "views": [
            {"name": "hx", "type": "histogram", "field": "x2",
             "bin": {"step": 15, "extent": [-20, 220], "clamp": True}},
            {"name": "cat", "type": "categorical", "field": "cat", "top": 5},
            {"name": "week", "type": "temporal", "field": "t", "unit": "week"},
            {"name": "heat", "type": "heatmap", "x": {"field": "x", "bin": {"step": 25, "extent": [0, 100]}},
             "y": {"field": "k", "bin": {"step": 30, "extent": [0, 120]}}},
            {"name": "mean_m", "type": "histogram", "field": "k", "brush": "none",
             "bin": {"step": 20, "extent": [-20, 120]}, "aggregate": {"op": "mean", "field": "m"}},
        ],
        "interactions": {
            "crossfilter": [{"views": ["hx", "cat", "week", "heat", "mean_m"]}],
            "highlight": [{"source": "cat", "targets": ["hx", "week"]}],
            "details": {"columns": ["x", "k", "cat", "dest", "t", "m", "x2"], "page_size": 10},
            "parameters": [{"name": "pdest", "field": "dest"},
                           {"name": "kmax", "field": "k", "widget": "slider", "op": "lte"}],
        },
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("cluster"), workers=WORKERS, cores=1, memory="1g")
    try:
        yield c
    finally:  # also when a test failed
        c.stop()
        leftover = c.alive() + processes_under(c.root)
        assert not leftover, f"Spark processes still running after stop: {leftover}"


@pytest.fixture(scope="module")
def cluster_capture(cluster, small_parquet, tmp_path_factory) -> tuple[LineageStore, dict, float]:
    """(store captured on the cluster, the driver's report, seconds the driver took)."""
    out = tmp_path_factory.mktemp("cluster-store") / "cache"
    # the executors run Brushfire: the workers' Python is this one (docs/deploy.md)
    env = {**os.environ, **LOOPBACK_ENV, "PYSPARK_PYTHON": sys.executable}
    args = [sys.executable, "-c", DRIVER, json.dumps(cluster_spec(small_parquet)),
            cluster.master_url, str(out), json.dumps(CLUSTER_CONF), str(WORKERS)]
    t0 = time.perf_counter()
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, check=False)
    seconds = time.perf_counter() - t0
    assert r.returncode == 0, (f"cluster driver failed ({r.returncode}):\n{r.stderr[-3000:]}\n"
                               f"{cluster.log_tails()}")
    report = json.loads(r.stdout.strip().splitlines()[-1])
    dash = parse_dashboard(cluster_spec(small_parquet))
    return load_store(report["entry"], dash), report, seconds


def test_capture_ran_in_executors_on_both_workers(cluster, cluster_capture):
    store, report, _ = cluster_capture
    app = report["app_id"]
    assert report["master"] == store.info.spark_master == cluster.master_url
    assert len(report["block_managers"]) == WORKERS + 1  # two executors and the driver
    completed = {a["id"]: a for a in cluster.status()["completedapps"]}
    assert completed[app]["state"] == "FINISHED"
    for worker, logs in cluster.executor_logs(app).items():
        assert any(e["appid"] == app for e in cluster.worker_status(worker)["finishedexecutors"])
        tasks = [t for log in logs for t in re.findall(r"Finished task \S+ in stage \S+",
                                                       log.read_text(errors="replace"))]
        assert tasks, f"no task of {app} ran on {worker} (executor logs: {logs})"


def test_cluster_capture_equals_local_capture(spark, small_parquet, cluster_capture, tmp_path):
    on_cluster, _, _ = cluster_capture
    before = {k: spark.conf.get(k) for k in CLUSTER_CONF if k.startswith("spark.sql")}
    for k in before:  # the same input splits, so the same partitions and shards
        spark.conf.set(k, CLUSTER_CONF[k])
    try:
        local = capture_dashboard(plan_capture(parse_dashboard(cluster_spec(small_parquet))),
                                  spark=spark, cache_dir=tmp_path)
    finally:
        for k, v in before.items():
            spark.conf.set(k, v)
    assert local.info.spark_master.startswith("local")
    assert len(local.shards) > 1  # rids cross partition boundaries
    assert_same_store(on_cluster, local)


def assert_same_store(a: LineageStore, b: LineageStore) -> None:
    """Equal layouts and every array equal (dtype, shape, values; NaN == NaN): the shards'
    per-row arrays, the cubes, base results and key counts, and the detail snapshots."""
    assert a.n_rows == b.n_rows > 0
    assert a.layout.to_json() == b.layout.to_json()
    assert a.layout.arrays.keys() == b.layout.arrays.keys()
    for name, arr in a.layout.arrays.items():
        np.testing.assert_array_equal(arr, b.layout.arrays[name], err_msg=name)
    # the same input splits, in rid order (names are each capture's own; a partition
    # without rows leaves no shard)
    assert [(s.source, s.start, s.n_rows) for s in a.shards] == \
        [(s.source, s.start, s.n_rows) for s in b.shards]
    for sa, sb in zip(a.shards, b.shards, strict=True):
        for i, (x, y) in enumerate(zip(sa.arrays, sb.arrays, strict=True)):
            assert x.dtype == y.dtype, (sa.name, i)
            np.testing.assert_array_equal(x, y, err_msg=f"{sa.name} array {i}")
        if sa.snapshot is not None:
            assert sa.snapshot.schema == sb.snapshot.schema
            assert sa.snapshot.to_pandas().equals(sb.snapshot.to_pandas())  # NaN-aware
    assert a.cubes.keys() == b.cubes.keys()
    for k in a.cubes:
        for part in ("counts", "sums", "oks"):
            np.testing.assert_array_equal(getattr(a.cubes[k], part), getattr(b.cubes[k], part))
    for x, y in zip(a.keycounts, b.keycounts, strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.base.counts, b.base.counts)


# A driver whose executors ask more memory than any worker has: none is ever placed.
STARVED = """
import json, sys
from brushfire.capture import capture_dashboard, spark as sp
from brushfire.errors import CaptureError
from brushfire.plan import plan_capture
from brushfire.spec import parse_dashboard

spec, master, out = sys.argv[1:]
spark = sp.get_spark(master, app_name="brushfire-starved-test", driver_memory="1g",
                     conf={"spark.executor.memory": "4g"})
sp.EXECUTOR_WAIT = 5.0
try:
    capture_dashboard(plan_capture(parse_dashboard(json.loads(spec))), spark=spark, cache_dir=out)
except CaptureError as e:
    print(e)
spark.stop()
"""


def test_a_capture_no_executor_is_given_to_fails_saying_why(cluster, small_parquet, tmp_path):
    """A master whose workers cannot hold an executor (or that has none) left the capture's
    first job waiting for ever, its progress at 0 %."""
    env = {**os.environ, **LOOPBACK_ENV, "PYSPARK_PYTHON": sys.executable}
    args = [sys.executable, "-c", STARVED, json.dumps(cluster_spec(small_parquet)), cluster.master_url,
            str(tmp_path / "cache")]
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == (
        f"the Spark master {cluster.master_url} gave this capture no executor in 5 s: are its "
        "workers up, with a free core and the memory an executor asks "
        "(spark.executor.memory=4g)?")


def test_a_worker_that_cannot_start_is_reported_with_its_log_and_nothing_is_left(tmp_path):
    with pytest.raises(ClusterError, match=r"(?s)worker-1 exited while starting.*worker-1/out.log"):
        start_cluster(tmp_path, workers=1, memory="lots")
    assert not processes_under(tmp_path)


def processes_under(root: Path) -> list[int]:
    """Pids of processes whose working directory is inside `root` (every daemon started
    there, and the executors, which run in the workers' directories)."""
    out = []
    for cwd in Path("/proc").glob("[0-9]*/cwd"):
        try:
            if Path(os.readlink(cwd)).is_relative_to(root):
                out.append(int(cwd.parent.name))
        except OSError:
            continue
    return out
