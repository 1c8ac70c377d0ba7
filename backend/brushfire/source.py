"""The source's schema without Spark: Parquet and ORC footers read with pyarrow, so a
spec naming a missing column fails before a JVM starts or any Spark job runs."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as ds

from brushfire.errors import CaptureError
from brushfire.spec import models as m

FOOTER_FORMATS = ("parquet", "orc")


def read_schema(source: m.Source) -> dict[str, str] | None:
    """{column: 'number' | 'temporal' | 'string' | 'other'} of the source, or None for
    formats whose schema Spark infers by reading the data (CSV, JSON)."""
    fmt = source.resolved_format
    if fmt not in FOOTER_FORMATS:
        return None
    try:
        schema = ds.dataset(source.path, format=fmt).schema
    except (OSError, pa.ArrowInvalid) as e:
        msg = f"cannot read the source {source.path}: {e}"
        raise CaptureError(msg) from None
    return {f.name: kind_of(f.type) for f in schema}


def kind_of(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "temporal"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t):
        return "string"
    return "other"
