"""Time values: UTC microseconds (how the store keeps instants) and ISO 8601 text (how
replies, labels and the protocol write them), with one rounding rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_time(micros: int) -> str:
    """UTC microseconds as an ISO instant with offset, e.g. '2001-01-01T00:01:00+00:00'."""
    return (EPOCH + timedelta(microseconds=int(micros))).isoformat()


def micros(value: datetime) -> int:
    """A datetime as UTC microseconds (naive = UTC), exactly (no float rounding)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
