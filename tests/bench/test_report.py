"""The replay report's statistics and table (brushfire.bench.report)."""

from brushfire.bench.report import share, stats, table


def test_one_slow_reply_in_two_thousand_is_not_rounded_away():
    s = stats([1.0] * 1999 + [209.6])
    assert s["under_150ms"] == 0.9995 and s["under_100ms"] == 0.9995
    assert share(s["under_150ms"]) == "99.95%"
    assert share(1.0) == "100%"
    assert share(0.99999) == "99.99%"


def test_the_table_shows_the_shares_under_100_and_150_ms():
    lat = stats([1.0] * 98 + [120.0, 200.0])
    summary = {"latency_ms": lat, "throughput_per_s": 10.0, "skipped": 0, "errors": 0}
    text = table({"brushfire": summary})
    head, _, row = text.splitlines()[:3]
    assert "<100ms" in head and "<150ms" in head
    assert "98.00%" in row and "99.00%" in row
