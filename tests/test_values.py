"""brushfire.values: ISO instants <-> UTC microseconds, bounds, choices (pure; no Spark)."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta, timezone

import numpy as np
import pytest

from brushfire import values as V
from brushfire.engine.state import category_keys
from brushfire.errors import InteractionError

DAY = 86_400_000_000


@pytest.mark.parametrize(("text", "micros"), [
    ("1970-01-01", 0),
    ("1970-01-01T00:00:00Z", 0),
    ("1970-01-01T00:00:00+00:00", 0),
    ("1970-01-01 00:00:00.000001", 1),
    ("1969-12-31T23:59:59.999999", -1),
    ("1970-01-02T01:00:00+01:00", DAY),  # an offset is applied
    ("2021-03-01T12:30:00", 1614601800 * 10**6),  # naive = UTC
    ("2021-03-01T12:30:00.5", 1614601800 * 10**6 + 500_000),
    ("2021-03-01T12:30:00,25", 1614601800 * 10**6 + 250_000),  # ISO allows a comma
    # sub-microsecond digits are truncated toward the past: the one rounding rule
    ("1970-01-01T00:00:00.0000019", 1),
    ("1970-01-01T00:00:00.123456999", 123_456),
    ("1969-12-31T23:59:59.9999999", -1),
    ("20210301T123000", 1614601800 * 10**6),  # basic format
    ("9999-12-31T23:59:59.999999", 253402300799999999),  # beyond float precision: exact
    ("0001-01-01", -62135596800 * 10**6),
])
def test_iso_instants_to_micros(text, micros):
    assert V.parse_instant(text) == micros


@pytest.mark.parametrize("text", ["yesterday", "2009-13-01", "2021-02-30", "2021-01-01T24:00:00",
                                  "", "  2021-01-01", "2021-01-01T12:00:00+25:00", "1e9", "now"])
def test_unparsable_times_are_refused_with_an_example(text):
    with pytest.raises(InteractionError, match="is not an ISO time; write e.g. 2021-03-01"):
        V.parse_instant(text)


@pytest.mark.parametrize("micros", [0, 1, -1, 1614601800 * 10**6 + 123_456, 253402300799999999,
                                    -62135596800 * 10**6, 10**15 + 7])
def test_micros_round_trip_exactly(micros):
    assert V.parse_instant(V.format_instant(micros)) == micros


def test_format_instant_matches_the_stores_labels():
    assert V.format_instant(1614601800 * 10**6) == "2021-03-01T12:30:00+00:00"
    with pytest.raises(InteractionError, match="outside the years 1-9999"):
        V.format_instant(2**63 - 1)


@pytest.mark.parametrize(("value", "micros"), [
    (None, None),
    ("2021-03-01", 1614556800 * 10**6),
    (datetime(2021, 3, 1), 1614556800 * 10**6),
    (datetime(2021, 3, 1, 1, tzinfo=timezone(timedelta(hours=1))), 1614556800 * 10**6),
    (datetime(2021, 3, 1, tzinfo=UTC), 1614556800 * 10**6),
    (date(2021, 3, 1), 1614556800 * 10**6),
])
def test_time_bounds(value, micros):
    assert V.time_bound(value) == micros


@pytest.mark.parametrize(("value", "expected"), [
    (1, "1 is a number, not a time; temporal bounds are ISO times"),
    (1.5e15, "is a number, not a time"),
    (True, "true is a boolean, not a time"),  # JSON true is no number (docs/protocol.md)
    ([2021, 3], "[2021, 3] is a list, not a time"),
    ("yesterday", "'yesterday' is not an ISO time"),
])
def test_numbers_are_not_times(value, expected):
    with pytest.raises(InteractionError, match=expected.replace("[", r"\[").replace("]", r"\]")):
        V.time_bound(value)


@pytest.mark.parametrize(("value", "expected"), [
    (None, None), (0, 0), (-3, -3), (2.5, 2.5), (np.int64(7), 7), (np.float32(0.5), 0.5),
    (10**300, 10**300), (math.inf, math.inf), (-math.inf, -math.inf), (2**63 + 1, 2**63 + 1),
    ("Infinity", math.inf), ("-Infinity", -math.inf),  # (the state's spelling: JSON has none)
])
def test_number_bounds(value, expected):
    got = V.number_bound(value)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(("value", "expected"), [
    (math.nan, "NaN is not a bound"),
    (np.float64("nan"), "NaN is not a bound"),
    ("inf", "'inf' is not a number"),
    (10**400, "an integer of 401 digits is beyond the range of numbers"),
    (-(10**309), "beyond the range of numbers"),
    (True, "true is not a number"),
    ("12", "'12' is not a number"),
    ([1], r"\[1\] is not a number"),
    ({"a": 1}, "is not a number"),
])
def test_bad_number_bounds(value, expected):
    with pytest.raises(InteractionError, match=expected):
        V.number_bound(value)


@pytest.mark.parametrize(("x", "up", "strict", "expected"), [
    (2.5, True, False, 3), (2.5, False, False, 2), (-2.5, True, False, -2), (-2.5, False, False, -3),
    (3.0, True, False, 3), (3.0, True, True, 4), (3.0, False, True, 2), (3, False, False, 3),
    (3, True, True, 4), (2**53 + 1, False, False, 2**53 + 1),  # ints stay exact
    (math.inf, True, False, 2**63 - 1), (-math.inf, False, False, -(2**63)),
    (10**300, False, False, 2**63 - 1), (-(10**300), True, False, -(2**63)),
    (1e300, True, False, 2**63 - 1), (-1e300, False, True, -(2**63)),
])
def test_int_bounds(x, up, strict, expected):
    assert V.int_bound(x, up, strict) == expected


AIRPORTS = ["ORD", "ATL", "DFW", "LAX"]


@pytest.mark.parametrize(("choices", "value"), [
    (AIRPORTS, "ORD"), (AIRPORTS, "LAX"), ([1, 2, 3], 3), ([1, 2, 3], 3.0), ([1.5, 2.5], 1.5),
    ([np.int64(4)], 4), (AIRPORTS, "(other)"),
])
def test_valid_choices_pass(choices, value):
    V.Choices(choices, extra=("(other)",)).check(value)


@pytest.mark.parametrize(("choices", "value", "expected"), [
    (AIRPORTS, "ORX", "'ORX' is not one of the values: 'ORD', 'ATL', 'DFW', 'LAX', '(other)'; "
                      "did you mean 'ORD'?"),
    (AIRPORTS, "lax", "did you mean 'LAX'?"),
    (AIRPORTS, 3, "3 is not one of the values: 'ORD'"),
    (AIRPORTS, "sideways", "'sideways' is not one of the values"),
    ([1, 2, 3], "3", "'3' is not one of the values: 1, 2, 3, '(other)'; did you mean 3?"),
    ([0, 1], True, "true is not one of the values"),
    ([f"v{i:05d}" for i in range(20_000)], "v1234", "… (20,001 in all)"),
    ([], "x", "'x' is not one of the values: '(other)'"),
])
def test_unknown_choices_name_the_valid_ones(choices, value, expected):
    with pytest.raises(InteractionError) as e:
        V.Choices(choices, extra=("(other)",)).check(value)
    assert expected in str(e.value)


def test_a_nan_category_is_named_by_nan_or_by_null_as_json_writes_it():
    labels = [1.5, float("nan"), 2.5]
    for value in (float("nan"), np.float32("nan"), None):
        assert value in V.Choices(labels)
        assert category_keys(labels, [value, 2.5]) == [1, 2]
    assert None not in V.Choices([1.5, 2.5])  # no NaN bar: null names none


@pytest.mark.parametrize(("nan", "value", "expected"), [
    (None, "nan", "'nan' is not one of the values: 1.5, null, '-Infinity', 'Infinity', "
                  "'9007199254740993', '(other)'"),
    ("NaN", "nan", "'nan' is not one of the values: 1.5, 'NaN', '-Infinity', 'Infinity', "
                   "'9007199254740993', '(other)'; did you mean 'NaN'?"),
    (None, "infinity", "did you mean 'Infinity'?"),
    (None, 9007199254740995, "did you mean '9007199254740993'?"),
])
def test_an_error_names_the_choices_as_a_message_gives_them(nan, value, expected):
    """A float field's NaN and infinities and an integer beyond 2^53 were listed as Python
    writes them (nan, inf, 9007199254740993), which no message can give (JSON has no NaN
    or infinity; a page reads the integer as ...992), and 'nan' got 'did you mean nan?'."""
    with pytest.raises(InteractionError) as e:
        V.Choices([1.5, math.nan, -math.inf, math.inf, 9007199254740993], ("(other)",), nan=nan).check(value)
    assert expected in str(e.value)


def test_an_unhashable_value_is_not_a_choice():
    assert [1] not in V.Choices([1, 2])
    with pytest.raises(InteractionError, match=r"\[1\] is not one of the values"):
        V.Choices([1, 2]).check([1])


DAYS = ["2024-01-02T00:00:00+00:00", "2024-01-01T00:00:00+00:00", "2024-01-01T06:30:00.000001+00:00"]


@pytest.mark.parametrize(("value", "label"), [
    ("2024-01-02", DAYS[0]), ("2024-01-02T00:00:00Z", DAYS[0]), (DAYS[0], DAYS[0]),
    ("2024-01-01T08:30:00.000001+02:00", DAYS[2]), (date(2024, 1, 1), DAYS[1]),
    (datetime(2024, 1, 1, 6, 30, 0, 1), DAYS[2]), ("2024-01-01T00:00:00.0000009", DAYS[1]),
])
def test_a_time_choice_is_any_spelling_of_its_instant(value, label):
    assert V.time_choice(value) == label
    assert value in V.Choices(DAYS, extra=("(other)",), times=True)


@pytest.mark.parametrize(("value", "expected"), [
    ("2024-01-03", "'2024-01-03' is not one of the values: '2024-01-02T00:00:00+00:00', "
                   "'2024-01-01T00:00:00+00:00', '2024-01-01T06:30:00.000001+00:00', '(other)'"),
    ("soon", "'soon' is not an ISO time; write e.g. 2021-03-01 or 2021-03-01T12:30:00Z"),
    (3, "3 is a number, not a time; temporal bounds are ISO times"),
    (None, "null is not a time; write e.g. 2021-03-01"),
])
def test_a_time_choice_that_is_none_of_them_is_refused(value, expected):
    with pytest.raises(InteractionError) as e:
        V.Choices(DAYS, extra=("(other)",), times=True).check(value)
    assert str(e.value).startswith(expected)
    V.Choices(DAYS, extra=("(other)",), times=True).check("(other)")  # (text choices as they are)


@pytest.mark.parametrize(("x", "expected"), [
    (10**50, "an integer of 51 digits"), ("a" * 100, "'" + "a" * 38 + "…"), (1.5, "1.5"),
])
def test_show_keeps_messages_short(x, expected):
    assert V.show(x) == expected
