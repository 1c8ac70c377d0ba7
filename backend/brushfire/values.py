"""User values as the engine compares them: pure functions, no state.

- Times: an ISO 8601 instant <-> UTC microseconds (the store's unit for temporal values).
  A time without an offset is UTC; digits beyond the microsecond are dropped (the instant
  is truncated toward the past), the one rounding rule everywhere. Exact integer
  arithmetic: no float seconds in between.
- Bounds: `number_bound` for numeric views and parameters, `time_bound` for temporal
  ones (ISO text or datetimes; a number is refused, so a unit mix-up is an error, never
  a silent empty selection); `int_bound` turns a number into the equivalent bound on an
  integer column (ceil / floor), clamped to int64.
- Choices: `Choices.check` accepts a value of a categorical view or dropdown parameter,
  or says which values exist (with a "did you mean"). Over a time field the choices are
  ISO instants (`format_instant`) and a value is any spelling of one (`time_choice`).
  A float field's infinities, which JSON cannot carry, travel as the text 'Infinity' and
  '-Infinity', integers beyond ±(2^53-1) as their decimal text (`wire_choice`; a bar's NaN
  travels as null, a dropdown's as 'NaN': `wire_dropdown`), and `Choices.resolve` takes
  them back.

Every problem raises `InteractionError` with a message that names the value and says
what is expected; callers add where the value came from (view, bound).
"""

from __future__ import annotations

import contextlib
import difflib
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from numbers import Integral, Real
from typing import TypeVar, cast

from brushfire.errors import InteractionError
from brushfire.wire import MAX_SAFE_INTEGER, exact_int, float_text

T = TypeVar("T")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ONE_US = timedelta(microseconds=1)
# the first and last instants of datetime's years 1-9999, as UTC microseconds
INSTANT_MIN_US = (datetime(1, 1, 1, tzinfo=UTC) - EPOCH) // ONE_US
INSTANT_MAX_US = (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - EPOCH) // ONE_US
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
FLOAT_MAX = 1.7976931348623157e308  # the largest finite float64
ISO_EXAMPLE = "2021-03-01 or 2021-03-01T12:30:00Z"
CHOICES_SHOWN = 12  # values listed in an error naming the valid choices
CLOSE_MATCH_LIMIT = 5000  # above this many choices, "did you mean" only ignores case


def show(x: object, limit: int = 40) -> str:
    """x as an error names it, cut to `limit` characters: repr, but null, true and false
    as the message (JSON) or spec (YAML) wrote them; long integers by their digits."""
    if isinstance(x, int) and not isinstance(x, bool) and abs(x) > 10**30:
        return f"an integer of {_digits(abs(x)):,} digits"
    text = _written(x)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _digits(n: int) -> int:
    """The decimal digits of n > 0, without `str(n)`: Python refuses to print an integer of
    more than 4,300 digits (a dict message may hold one), which made an error an internal one."""
    d = int(math.log10(n)) + 1  # (a float: off by one at most, near a power of ten)
    return d - 1 if 10 ** (d - 1) > n else d + 1 if 10**d <= n else d


def _written(x: object) -> str:
    if x is None or isinstance(x, bool):
        return {None: "null", True: "true", False: "false"}[x]
    if isinstance(x, list | tuple):
        return "[" + ", ".join(map(_written, x)) + "]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{_written(k)}: {_written(v)}" for k, v in x.items()) + "}"
    return repr(x)


# --- times ------------------------------------------------------------------------------


def parse_instant(text: str) -> int:
    """UTC microseconds of an ISO 8601 date or date-time (naive = UTC; sub-microsecond
    digits truncated)."""
    try:
        t = datetime.fromisoformat(text)
    except (ValueError, TypeError):
        msg = f"{show(text)} is not an ISO time; write e.g. {ISO_EXAMPLE}"
        raise InteractionError(msg) from None
    return datetime_micros(t)


def datetime_micros(t: datetime | date) -> int:
    """UTC microseconds of a datetime (naive = UTC) or a date (its midnight, UTC)."""
    if not isinstance(t, datetime):
        t = datetime(t.year, t.month, t.day)
    if t.tzinfo is None or t.utcoffset() is None:
        t = t.replace(tzinfo=UTC)
    return (t - EPOCH) // ONE_US


def raw_instant(x: float) -> int:
    """UTC microseconds of a time as a fine dim keeps it, a double (lineage/lattice.py):
    exact within 2^53 microseconds of 1970 (July 1684 to June 2255), else the nearest double, which
    next to the years 1 and 9999 may lie beyond them (9999-12-31T23:59:59.999999 is
    10000-01-01): such a value is the first or last instant, as the time it stands for is."""
    return min(max(int(x), INSTANT_MIN_US), INSTANT_MAX_US)


def format_instant(micros: int) -> str:
    """The ISO instant of UTC microseconds, e.g. '2021-03-01T12:30:00+00:00' (exact)."""
    try:
        return (EPOCH + timedelta(microseconds=int(micros))).isoformat()
    except OverflowError:
        msg = f"{show(micros)} microseconds is outside the years 1-9999"
        raise InteractionError(msg) from None


def time_choice(x) -> str:
    """A time given for a categorical view's bar or a dropdown's value over a time field, as
    those spell their values: the ISO instant of ISO text, a datetime (naive = UTC) or a
    date, so '2024-01-01', '2024-01-01T00:00:00Z' and the bar's own label
    '2024-01-01T00:00:00+00:00' all name one bar."""
    if x is None:
        msg = f"null is not a time; write e.g. {ISO_EXAMPLE}"
        raise InteractionError(msg)
    return format_instant(time_bound(x))


def instant_datetime(text: str) -> datetime:
    """The UTC datetime of an ISO instant (exact: through microseconds)."""
    return EPOCH + timedelta(microseconds=parse_instant(text))


# --- bounds -----------------------------------------------------------------------------


def number_bound(x):
    """A bound on a numeric value: an int (exact) or a float; None is an open end. An
    infinity is a bound too (a float field holds them: [inf, null] selects its +inf rows),
    given as a float or as the wire spells it, 'Infinity' or '-Infinity' (JSON has no
    infinity: the selection state writes it so, `wire_bound`). NaN, booleans, other text and
    integers beyond the float range are refused."""
    if x is None:
        return None
    if isinstance(x, str) and x in INFINITIES:
        return INFINITIES[x]
    if isinstance(x, bool) or not isinstance(x, Real):
        msg = f"{show(x)} is not a number"
        raise InteractionError(msg)
    if isinstance(x, Integral):
        x = int(x)
        if abs(x) > FLOAT_MAX:
            msg = f"{show(x)} is beyond the range of numbers (±1.8e308)"
            raise InteractionError(msg)
        return x
    x = float(x)
    if math.isnan(x):
        msg = "NaN is not a bound (use null for an open end)"
        raise InteractionError(msg)
    return x


def wire_bound(x):
    """A numeric bound as the selection state and replies write it: an infinity as
    'Infinity' / '-Infinity' (`jsonable` would make it null, an open end: [inf, null],
    the +inf rows, applied again would select every row), anything else as it is."""
    return float_text(x) if isinstance(x, float) and math.isinf(x) else x


def time_bound(x):
    """A bound on a temporal value as UTC microseconds: ISO text, a datetime (naive = UTC)
    or a date; None is an open end. Numbers are refused: times travel as ISO text."""
    if x is None:
        return None
    if isinstance(x, str):
        return parse_instant(x)
    if isinstance(x, (datetime, date)):
        return datetime_micros(x)
    if hasattr(x, "to_pydatetime"):  # pandas.Timestamp subclasses datetime; numpy's do not
        return datetime_micros(x.to_pydatetime())
    # (as JSON names them: true is no number, [1] a list, not "list")
    kind = ("a boolean" if isinstance(x, bool) else "a number" if isinstance(x, Real)
            else "a list" if isinstance(x, (list, tuple)) else "an object" if isinstance(x, dict)
            else type(x).__name__)
    msg = f"{show(x)} is {kind}, not a time; temporal bounds are ISO times, e.g. {ISO_EXAMPLE}"
    raise InteractionError(msg)


def slider_bound(x, temporal: bool):
    """One bound of a slider parameter's value: a number (`number_bound`), or on a slider
    over times an ISO time (`time_bound`, as UTC microseconds). The one rule for a
    session's value (engine/api.py's `slider_bounds`) and a spec's default (checked
    against the field's kind before Spark: spec/checks.py)."""
    return time_bound(x) if temporal else number_bound(x)


def choice_of_kind(x, kind: str) -> None:
    """Raise unless `x` can be a dropdown's choice over a field of `kind` ('number',
    'temporal' or 'string'; any other kind: anything may be): `Choices` never matches
    text with a number (a float field's infinities travel as the text 'Infinity' and
    '-Infinity', `wire_choice`), and a time field's choices are instants (`time_choice`).
    Which values the field holds is the data's to say (`Choices.check`)."""
    if kind == "temporal":
        time_choice(x)
        return
    number = isinstance(x, Real) and not isinstance(x, bool)
    if kind == "number" and not number and not (isinstance(x, str) and x in INFINITIES):
        msg = f"{show(x)} is not a number"
        raise InteractionError(msg)
    if kind == "string" and not isinstance(x, str):
        msg = f"{show(x)} is not a string"
        raise InteractionError(msg)


def int_bound(x, up: bool, strict: bool = False) -> int:
    """The bound on integers equivalent to comparing them with the number x: the least
    integer >= x (`up`; > x when `strict`), or the greatest <= x (< x when `strict`),
    clamped to int64. Exact for Python ints of any size; ±inf clamp to the int64 ends."""
    if isinstance(x, float) and math.isinf(x):
        return INT64_MIN if x < 0 else INT64_MAX
    if isinstance(x, Integral) or float(x).is_integer():  # (an Integral is never made a float)
        v = int(x) + (1 if up else -1) * strict
    else:
        v = math.ceil(x) if up else math.floor(x)
    return max(min(v, INT64_MAX), INT64_MIN)


# --- choices ----------------------------------------------------------------------------


class Choices:
    """The values a categorical view or dropdown parameter takes (plus `extra`, e.g.
    '(other)'), for O(1) checks. Equality is Python's (3 == 3.0) except that a string
    never equals a number and a boolean never equals an integer: '3' is refused where 3
    is a choice, and the error says so. With `times`, the values are ISO instants of a
    time field (and other text such as '(other)', matched as it is), and a value matches
    as the instant it names (`time_choice`); a value that is no time is refused as such.
    An error names the choices as the wire spells them (`spelt`), a float field's NaN as
    `nan`: null (a categorical view's bar) or 'NaN' (a dropdown's, `wire_dropdown`)."""

    def __init__(self, values, extra: tuple = (), times: bool = False, nan: str | None = None) -> None:
        self.values = [*values, *extra]
        self.times = times
        self.nan = nan
        self._keys = set()
        for v in self.values:
            with contextlib.suppress(TypeError):  # unhashable: never a JSON scalar, never matched
                self._keys.add(choice_key(v))

    def __contains__(self, value) -> bool:
        try:
            return choice_key(self._as_choice(value)) in self._keys
        except (TypeError, InteractionError):
            return False

    def _as_choice(self, value):
        if not self.times or (isinstance(value, str) and ("str", value) in self._keys):
            return self._unspelt(value)
        return time_choice(value)

    def _unspelt(self, value):
        """The choice a text spells as replies write it (`wire_choice`), when the text is
        not itself a choice (a text field's 'Infinity' is itself): ±inf for 'Infinity' /
        '-Infinity'; an integer beyond ±(2^53-1) for its decimal text, when it is a
        choice. Anything else as it is."""
        if not isinstance(value, str) or ("str", value) in self._keys:
            return value
        x = INFINITIES.get(value)
        if x is not None:
            return x
        if value == "NaN" and ("nan",) in self._keys:  # (a dropdown's NaN: `wire_dropdown`)
            return math.nan
        if len(value) <= 20 and _INTEGER_TEXT.fullmatch(value):
            n = int(value)
            if abs(n) > MAX_SAFE_INTEGER and ("number", n) in self._keys:
                return n
        return value

    def spelt(self, choice):
        """A choice as a client sends it back (JSON has no NaN or infinity, and a page reads
        an integer beyond ±(2^53-1) as another): `wire_choice`, a NaN as `nan`. (Python's
        spelling, nan, inf, was no value a message can give.)"""
        if isinstance(choice, Real) and choice != choice:
            return self.nan
        return wire_choice(choice)

    def resolve(self, value):
        """A checked value as the engine and SQL take it: a float field's infinity for
        its wire spelling, an integer for its decimal text, else `value` as given (a time
        field's ISO spelling included)."""
        return value if self.times else self._unspelt(value)

    def check(self, value) -> None:
        """Raise unless `value` is a choice, naming the first choices and the closest."""
        if value in self:
            return
        if self.times:
            self._as_choice(value)  # not a time at all: say so
        width = 34 if self.times else 30  # (an instant to the microsecond, whole)
        shown = ", ".join(show(self.spelt(c), width) for c in self.values[:CHOICES_SHOWN])
        more = f", … ({len(self.values):,} in all)" if len(self.values) > CHOICES_SHOWN else ""
        msg = f"{show(value)} is not one of the values: {shown or 'none'}{more}"
        guess = did_you_mean(value, [self.spelt(c) for c in self.values])
        if guess:
            msg += f"; did you mean {', '.join(show(g, width) for g in guess)}?"
        raise InteractionError(msg)


PER_LIST_KEPT = 512  # lists whose derived tables `per_list` keeps (the last used)
_per_list: OrderedDict[tuple[int, str], tuple[list, object]] = OrderedDict()
_per_list_lock = threading.Lock()


def per_list(values: list, kind: str, build: Callable[[list], T]) -> T:
    """`build(values)` for a store's list of labels or choices (`kind` names what is
    built), built once per list and kept while the list is among the PER_LIST_KEPT last
    used: a closed store's lists (a reload, `serve --watch`, a dashboard opened again) are
    let go, not held for ever by the cache."""
    key = (id(values), kind)
    with _per_list_lock:
        cached = _per_list.get(key)
        if cached is not None and cached[0] is values:
            _per_list.move_to_end(key)
            return cast(T, cached[1])
    built = build(values)
    with _per_list_lock:
        _per_list[key] = (values, built)
        while len(_per_list) > PER_LIST_KEPT:
            _per_list.popitem(last=False)
    return built


def did_you_mean(value, choices: list) -> list:
    """Up to three choices close to `value` (compared as text), best first."""
    try:
        text = str(value)
    except ValueError:  # an integer of more digits than Python prints (4,300): close to none
        return []
    same_text = [c for c in choices if str(c) == text]  # the right value, of the wrong type
    if same_text:
        return same_text[:3]
    folded = text.casefold()
    same_case = [c for c in choices if str(c).casefold() == folded]
    if same_case or len(choices) > CLOSE_MATCH_LIMIT:
        return same_case[:3]
    by_text = {str(c): c for c in choices}
    return [by_text[t] for t in difflib.get_close_matches(text, list(by_text), n=3, cutoff=0.6)]


INFINITIES = {float_text(x): x for x in (math.inf, -math.inf)}  # (their wire spellings)
_INTEGER_TEXT = re.compile(r"-?[0-9]+")  # an integer's decimal text, nothing else (`wire_choice`)


def wire_choice(v):
    """A category or dropdown choice as replies and the selection state spell it: a float
    field's ±inf as 'Infinity' / '-Infinity' (JSON has no infinity; `jsonable` would make
    it null, the NaN bar's name, and a click on the infinite bar would select the NaN
    rows), an integer beyond ±(2^53-1) as its decimal text (`wire.exact_int`: a page reads
    a JSON number as a double, 9007199254740993 as ...992, and a click on its bar would
    name another value), anything else as it is."""
    if isinstance(v, float) and math.isinf(v):
        return float_text(v)
    if isinstance(v, Integral) and not isinstance(v, bool):
        return exact_int(int(v))
    return v


def wire_dropdown(v):
    """A dropdown's value (one choice, or a `multiple` dropdown's list of them) as replies,
    the dashboard's description and the selection state spell it: each choice as a
    category (`wire_choice`), but a float field's NaN as 'NaN', since a parameter's null
    means "inactive" (a categorical bar's NaN is null: no bar is null)."""
    if isinstance(v, list | tuple):
        return [wire_dropdown(x) for x in v]
    if v is None:  # (inactive)
        return None
    return "NaN" if isinstance(v, Real) and v != v else wire_choice(v)


def choice_key(v) -> tuple:
    """The key under which `v` matches a choice (Choices' equality: 3 == 3.0, '3' != 3,
    True != 1). NaN matches NaN, and null names it: a NaN category is a bar (Spark groups
    NaN with NaN) that JSON, having no NaN, writes as null; a null category never is one."""
    if v is None or (isinstance(v, Real) and v != v):
        return ("nan",)
    if isinstance(v, str):
        return ("str", v)
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, Real):
        return ("number", v)
    return (type(v).__name__, v)


def choice_order(choices: Sequence, counts: Sequence[int]) -> list[int]:
    """The positions of a dropdown's `choices` as it lists them: most rows first (`counts`),
    ties by value, NaN last (as a categorical view's bars: bins.top_labels). A function of
    the (choice, count) pairs alone, so that a capture from scratch, whose keys follow it,
    and an appended one, whose keys keep their earlier order, list them alike."""
    keys = [choice_key(c) for c in choices]
    return sorted(range(len(choices)), key=lambda i: (-int(counts[i]), keys[i] == ("nan",), keys[i]))
