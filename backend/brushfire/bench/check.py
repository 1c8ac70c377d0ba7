"""Correctness check of replayed replies: every `update` reply must equal what DuckDB's
SQL gives for the filters the reply reports (`filters`: the session's state after the
interaction). Each view in the reply is compared bar by bar under the documented numeric
guarantee (`sql.value_agrees`: counts and integer sums exactly, other sums within 1e-9 of
the bar's Σ|x|), and `selected` with the rows passing every filter.

The SQL comes from `brushfire.sql` (the spec's semantics), run on the source as Spark
computes it (derived columns and filters are Spark SQL: `baselines.duckdb.connect_source`);
the top values of categorical views are computed here too, not taken from the server.
Replies with the same filters and views share one evaluation.
"""

from __future__ import annotations

import json
import math
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal

from brushfire import sql
from brushfire import values as V
from brushfire.baselines.duckdb import connect_source
from brushfire.bench.replay import loads
from brushfire.selection import COLUMN
from brushfire.spec import aggregates
from brushfire.spec import models as m
from brushfire.views import filter_sql, key_sql, view_type

MAX_EXAMPLES = 5
# expected bars kept for replies sharing filters (~135 bytes each in Python): every
# evaluation kept, a 100,000-event recording of six 50-bar histograms held 4 GB
CACHE_BARS = 2_000_000
INTEGER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                 "UINTEGER", "UBIGINT")


@dataclass
class CheckResult:
    checked: int = 0  # update replies compared
    mismatches: int = 0  # replies with at least one difference
    examples: list[dict] = field(default_factory=list)  # the first few, with what differed
    distinct_states: int = 0  # states checked (replies sharing filters share an evaluation)

    def to_json(self) -> dict:
        return {"checked": self.checked, "mismatches": self.mismatches,
                "distinct_states": self.distinct_states, "examples": self.examples}


class Checker:
    """DuckDB over the dashboard's source: the expected bars for given filters."""

    def __init__(self, spec: m.DashboardSpec, labels: dict[str, list], cache_dir: str | None = None) -> None:
        self.spec = spec
        # as a client reads them, a float field's NaN category is null (`_with_nan`)
        self.labels = {n: _nan_for_null(ls) if view_type(spec.view(n)).value_bars else ls
                       for n, ls in labels.items()}
        # (a quarter of the memory: at 100M rows DuckDB's default, 80 %, starved the server
        # under test and the page cache of its mapped store)
        self.con = connect_source(spec, cache_dir=cache_dir, memory_share=0.25)
        # (-0.0 and 0.0 are one value, grouped under either: the engine's bar is 0.0)
        self.tops = {v.name: [r[0] + 0.0 if isinstance(r[0], float) else r[0]
                              for r in self.con.execute(sql.top_sql(v)).fetchall()]
                     for v in spec.views if view_type(v).value_bars}
        # each view's bar key as a column, computed once: checks group by small columns
        bars = ", ".join(f"{key_sql(v, self.tops.get(v.name))} AS __bar{i}"
                         for i, v in enumerate(spec.views))
        self.con.execute(f"CREATE TABLE chk AS SELECT *, {bars} FROM src")
        self.column = {v.name: f"__bar{i}" for i, v in enumerate(spec.views)}
        types = dict(self.con.execute("SELECT column_name, column_type FROM (DESCRIBE chk)").fetchall())
        # categorical views over a time field: their labels are ISO instants, read as times
        self.times = {v.name for v in spec.views
                      if view_type(v).value_bars and _is_time(types.get(v.field, ""))}
        self.time_columns = frozenset(c for c, t in types.items() if _is_time(t))  # (`filter`s)
        # each filter's field type: its categories and choices as a client reads them are
        # spelt for JSON (values.wire_choice, wire_dropdown), read back by `_from_wire`
        self.field_types = {v.name: types.get(v.field, "") for v in spec.views if view_type(v).value_bars}
        self.field_types.update({p.name: types.get(p.field, "") for p in spec.interactions.parameters})
        self.labels = {n: [_from_wire(x, self.field_types.get(n, "")) for x in ls] if n in self.field_types
                       else ls for n, ls in self.labels.items()}
        # per measured view: is the measure an integer, and Σ|x| per bar over all rows
        self.integer: dict[str, bool] = {}
        self.abs_sums: dict[str, dict] = {}
        for v in spec.views:
            mf = v.aggregate.field
            if mf and not v.aggregate.order:  # sums and means: their rounding tolerance
                t = types.get(mf, "")  # DESCRIBE's names as the source spells them
                self.integer[v.name] = t in INTEGER_TYPES or (t.startswith("DECIMAL") and t.endswith(",0)"))
                # over the measures the sum takes: a NaN or inf would make the bound NaN or inf
                self.abs_sums[v.name] = dict(self.con.execute(
                    f"SELECT {self.column[v.name]}, sum(abs(CAST({sql.summed_sql(mf)} AS DOUBLE))) "
                    "FROM chk GROUP BY 1").fetchall())
        self._cache: OrderedDict[str, tuple[dict, int]] = OrderedDict()  # (least recent first)
        self._cached_bars = 0
        self._seen: set[str] = set()  # the states of the check under way
        self.problems_once: list[str] = self._label_problems()

    def check(self, replies: list[tuple[int, int, dict | str]],
              progress: Callable[[CheckResult, int], None] | None = None) -> CheckResult:
        """Compare each (client, event index, update reply); `progress(so far, of)` after
        each (at 100M rows a reply's SQL takes seconds). A reply given as its JSON text,
        as a replay keeps it, is decoded when its turn comes: 100,000 replies of a long
        recording, decoded at once, held 3 GB for six small histograms."""
        out = CheckResult()
        self._seen = set()
        # event by event, each client's reply to it in turn: the clients' replies to one
        # event mostly share their state, so its evaluation is still cached
        for client, index, reply in sorted(replies, key=lambda r: (r[1], r[0])):
            if isinstance(reply, str | bytes):
                reply = loads(reply)
            out.checked += 1
            problems = self.compare(reply)
            if problems:
                out.mismatches += 1
                if len(out.examples) < MAX_EXAMPLES:
                    out.examples.append({"client": client, "event": index,
                                         "filters": reply.get("filters"), "problems": problems[:5]})
            if progress is not None:
                progress(out, len(replies))
        out.distinct_states = len(self._seen)
        if self.problems_once:
            out.examples.insert(0, {"problems": self.problems_once})
        return out

    def compare(self, reply: dict) -> list[str]:
        """What differs between one update reply and SQL (empty: nothing)."""
        views = sorted(reply.get("views", {}))
        expected, selected = self.expected(reply.get("filters") or {}, views)
        problems = []
        if reply.get("selected") != selected:
            problems.append(f"selected: {reply.get('selected')} rows, SQL {selected}")
        for v in views:
            problems += self._compare_view(v, reply["views"][v], expected[v])
        return problems

    def expected(self, filters: dict, views: list[str]) -> tuple[dict, int]:
        """({view: {bar key: (count, sum, non-null)}}, rows passing every filter)."""
        key = json.dumps([filters, views], sort_keys=True)
        self._seen.add(key)
        got = self._cache.get(key)
        if got is not None:
            self._cache.move_to_end(key)
            return got
        got = self._cache[key] = self._evaluate(filters, views)
        self._cached_bars += _bars(got)
        while self._cached_bars > CACHE_BARS and len(self._cache) > 1:  # the least recent go
            self._cached_bars -= _bars(self._cache.popitem(last=False)[1])
        return got

    def _evaluate(self, filters: dict, views: list[str]) -> tuple[dict, int]:
        preds = {n: filter_sql(self.spec, n, self._with_nan(n, v), self.tops, times=self.time_columns)
                 for n, v in filters.items()}
        by_where: dict[str, list[str]] = {sql.where_sql(self.spec, preds, None): []}
        for v in views:
            by_where.setdefault(sql.where_sql(self.spec, preds, v), []).append(v)
        out, selected = {}, 0
        for j, (where, group) in enumerate(by_where.items()):
            if not group:  # only the selected-rows count has this where
                selected = self.con.execute(f"SELECT count(*) FROM chk WHERE {where}").fetchall()[0][0]
                continue
            cols = [self.column[v] for v in group]
            measures = sorted({self.spec.view(v).aggregate.field for v in group
                               if not self.spec.view(v).aggregate.order} - {None})
            aggs = "".join(f", sum({x}), count({x})" for x in map(sql.summed_sql, measures))
            stats = [v for v in group if self.spec.view(v).aggregate.order]
            aggs += "".join(f", {sql.aggregate_sql(self.spec.view(v).aggregate, self._kind(v))}"
                            for v in stats)
            # one scan per where: a grouping set per view, and () for the selected rows
            sets = ", ".join(f"({c})" for c in cols) + (", ()" if j == 0 else "")
            flags = ", ".join(f"GROUPING({c})" for c in cols)
            q = (f"SELECT [{flags}], {', '.join(cols)}, count(*){aggs} FROM chk "
                 f"WHERE {where} GROUP BY GROUPING SETS ({sets})")
            found: dict[str, dict] = {v: {} for v in group}
            for row in self.con.execute(q).fetchall():
                grouped, keys = row[0], row[1:1 + len(group)]
                n, rest = row[1 + len(group)], row[2 + len(group):]
                if all(grouped):  # the () set
                    selected = n
                    continue
                i = grouped.index(0)
                mf = self.spec.view(group[i]).aggregate.field
                s, k = (rest[2 * measures.index(mf)], rest[2 * measures.index(mf) + 1]) \
                    if mf in measures else (None, 0)
                stat = rest[2 * len(measures) + stats.index(group[i])] if group[i] in stats else None
                found[group[i]][keys[i]] = (n, _double(s), k, stat)
            out.update(found)
        return out, selected

    def _compare_view(self, view: str, got: dict, expected: dict) -> list[str]:
        labels = self.labels[view]
        v = self.spec.view(view)
        keys = view_type(v).label_keys(v, self._typed(view, labels))
        index = {k: i for i, k in enumerate(keys)}
        want_n, want_s, want_k = [0] * len(labels), [0.0] * len(labels), [0] * len(labels)
        op, spec = v.aggregate.op, aggregates.op(v.aggregate.op)
        # a bar SQL has no group for: no rows, so no value, but count(DISTINCT) of none is 0
        want_stat: list = [spec.empty] * len(labels)
        problems = []
        for key, (n, s, k, stat) in expected.items():
            if key is None:
                continue  # rows the view drops
            i = index.get(key)
            if i is None:
                problems.append(f"{view}: SQL has {n} rows in bar {key!r}, which the view lacks")
                continue
            want_n[i], want_s[i], want_k[i], want_stat[i] = n, s or 0.0, k, _as_reply(stat)
        counts, values = got.get("counts", []), got.get("values", [])
        if len(counts) != len(labels) or len(values) != len(labels):
            return [f"{view}: {len(counts)} counts / {len(values)} values for {len(labels)} bars"]
        for i, label in enumerate(labels):
            if counts[i] != want_n[i]:
                problems.append(f"{view}[{label}]: count {counts[i]}, SQL {want_n[i]}")
                continue
            if v.aggregate.order:  # order statistics: equal to the last bit
                if values[i] != want_stat[i]:
                    problems.append(f"{view}[{label}]: {op} {values[i]}, SQL {want_stat[i]}")
                continue
            want = float(want_n[i]) if spec.kind == "count" else spec.value(want_s[i], want_k[i])
            # a sum of finite measures past 1.8e308 is ±inf, which a reply writes as null
            # (wire.dumps: JSON has no infinity), as `_as_reply` has an order statistic
            want, got_value = _as_reply(want), _as_reply(values[i])
            abs_sum = self.abs_sums.get(view, {}).get(keys[i], 0.0) or 0.0
            if not sql.value_agrees(got_value, want, op, want_k[i], abs_sum,
                                    self.integer.get(view, False)):
                problems.append(f"{view}[{label}]: {op} {values[i]}, SQL {want}")
        return problems

    def _with_nan(self, name: str, entry):
        """A reply's filter with its values as the field holds them: JSON writes NaN as
        null (wire.dumps), and a categorical view's values and a dropdown's choices, NaN
        among them, are never null (null rows are in no bar and no choice), so a null there
        is NaN; ±inf, a dropdown's NaN and integers beyond ±(2^53-1) come as text
        (`_from_wire`)."""
        if not isinstance(entry, dict) or name.startswith(COLUMN):  # (a column's null is null)
            return entry
        t = self.field_types.get(name, "")
        if isinstance(entry.get("values"), list):
            return {"values": [_from_wire(x, t) for x in _nan_for_null(entry["values"])]}
        dropdowns = {p.name for p in self.spec.interactions.parameters if p.widget == "dropdown"}
        if "parameter" in entry and name in dropdowns:
            v = entry["parameter"]
            v = _nan_for_null(v) if isinstance(v, list) else math.nan if v is None else v
            return {"parameter": [_from_wire(x, t) for x in v] if isinstance(v, list) else _from_wire(v, t)}
        return entry

    def _kind(self, view: str) -> str:
        """The measure's type, coarsely: number, temporal or string."""
        mf = self.spec.view(view).aggregate.field
        t = self.con.execute(f"SELECT typeof({sql.ident(mf)}) FROM chk LIMIT 1").fetchone()
        t = t[0] if t else ""
        return "temporal" if _is_time(t) else "string" if t == "VARCHAR" else "number"

    def _typed(self, view: str, labels: list) -> list:
        """A view's labels as its SQL takes them: a time field's ISO instants as datetimes."""
        if view not in self.times:
            return labels
        return [x if x == sql.OTHER else V.instant_datetime(x) for x in labels]

    def _label_problems(self) -> list[str]:
        out = []
        for name, top in self.tops.items():
            v = self.spec.view(name)
            got = view_type(v).top_values(v, self._typed(name, self.labels[name]))
            same = [sql.micros(x) for x in got] == [sql.micros(x) for x in top] \
                if name in self.times else len(got) == len(top) and all(map(_same, got, top))
            if not same:
                out.append(f"{name}: bars {got[:5]}…, SQL's top values {top[:5]}…")
        return out


def _bars(expected: tuple[dict, int]) -> int:
    """The bars an evaluation holds (its size in the cache)."""
    return 1 + sum(len(bars) for bars in expected[0].values())


def _is_time(duckdb_type: str) -> bool:
    return duckdb_type.startswith(("TIMESTAMP", "DATE"))


def _same(a, b) -> bool:
    """Equal values, NaN as equal to NaN (as in SQL's GROUP BY and the engine's bars)."""
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def _from_wire(x, field_type: str):
    """A category or dropdown choice as replies spell it (values.wire_choice and
    wire_dropdown) as its field's value: on a float field 'Infinity', '-Infinity' and
    'NaN' as those numbers, on an integer field an integer's decimal text as the integer;
    anything else (a text field's own 'Infinity') as it is."""
    if not isinstance(x, str):
        return x
    if field_type in ("DOUBLE", "FLOAT"):
        return math.nan if x == "NaN" else V.INFINITIES.get(x, x)
    if field_type in INTEGER_TYPES and re.fullmatch(r"-?[0-9]+", x):
        return int(x)
    return x


def _nan_for_null(values: list) -> list:
    """A field's values with JSON's nulls back as NaN (why: `Checker._with_nan`)."""
    return [math.nan if x is None else x for x in values]


def _as_reply(x):
    """An order statistic from SQL as a reply writes it: times as ISO text in UTC (a date
    as its midnight), NaN and ±inf as null (JSON has neither: wire.dumps; an order
    statistic takes ±inf as a value, and the median of -inf and inf is NaN), decimals as
    doubles."""
    if isinstance(x, datetime):
        return (x if x.tzinfo else x.replace(tzinfo=UTC)).isoformat()
    if isinstance(x, date):  # a date: its midnight in UTC, as replies write it
        return datetime(x.year, x.month, x.day, tzinfo=UTC).isoformat()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return _double(x)


def _double(x):
    """A DECIMAL from SQL as the engine reads decimals: the nearest double (float() rounds
    once, as capture/columns.py does); a Decimal neither subtracts from a float nor
    equals the double of a value such as 0.1."""
    return float(x) if isinstance(x, Decimal) else x
