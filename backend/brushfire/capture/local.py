"""The capture pipeline without Spark, over an Arrow table in this process: the same
profile, layout, shard and manifest steps that Spark's executors and driver run
(capture/__init__.py), with the table cut into `partitions` as Spark would cut the
source. For tests and small in-memory data; sources with derived columns or static
filters need Spark (they are Spark SQL).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa

from brushfire.capture.layout import make_layout, profile_spec, resolve_plan
from brushfire.capture.profile import merge_profiles, profile_partition
from brushfire.capture.shards import build_partition
from brushfire.errors import CaptureError
from brushfire.lineage import store as st
from brushfire.lineage.arrays import CaptureInfo
from brushfire.lineage.layout import CaptureConfig
from brushfire.plan import CapturePlan
from brushfire.views import source_fields


def capture_table(plan: CapturePlan, table: pa.Table, cache_dir: str | Path,
                  config: CaptureConfig | None = None,
                  partitions: list[int] | None = None) -> st.LineageStore:
    """Capture `table` (the source's rows) for `plan` into `cache_dir`. `partitions`: the
    rows per partition (default: one partition), empty ones allowed."""
    dash = plan.dashboard
    if dash.source.columns or dash.source.filters:
        msg = "derived columns and static filters are Spark SQL: capture them on Spark"
        raise CaptureError(msg)
    config = config or CaptureConfig()
    sizes = partitions if partitions is not None else [table.num_rows]
    if sum(sizes) != table.num_rows:
        msg = f"partitions {sizes} do not add up to {table.num_rows} rows"
        raise ValueError(msg)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    parts = [table.slice(a, b - a) for a, b in zip(starts[:-1], starts[1:], strict=True)]
    pspec = profile_spec(plan, config)
    cols = list(dict.fromkeys(pspec.values + pspec.counts + pspec.ranges + pspec.measures
                              + pspec.extents)) \
        or table.column_names[:1]
    profile = merge_profiles([profile_partition(p.select(cols).to_batches(), pspec) for p in parts],
                             pspec)
    binned = resolve_plan(plan, profile)  # maxbins bins chosen from the profile
    layout = make_layout(binned, profile, config)
    cache = Path(cache_dir)
    staging = cache / f".partial-{uuid.uuid4().hex[:12]}"
    shards_dir = staging / st.SHARDS
    shards_dir.mkdir(parents=True)
    columns = layout.source_columns({v.name: source_fields(v) for v in dash.views})
    summaries = []
    for pid, p in enumerate(parts):
        summaries += build_partition(p.select(columns).to_batches(), layout, binned.dashboard,
                                     config.shard_rows, str(shards_dir), pid)
    fingerprint = st.source_fingerprint(dash.source.path) if Path(dash.source.path).exists() else ""
    key = st.cache_key(dash, fingerprint, config)
    info = CaptureInfo(n_rows=table.num_rows, source_fingerprint=fingerprint, spark_master="none")
    info.shards = len(summaries)
    st.write_manifest(staging, st.assemble(staging, layout, summaries, info, dash, key))
    entry = st.publish(staging, cache / f"{dash.name}-{key}")
    return st.load_store(entry, dash, key)
