"""The contract of a view type: everything Brushfire does differently per type, from the
spec's checks to the chart. Each type is one module of this package, a subclass of
`ViewType` registered in `views/__init__.py`; the stages (spec loader, plan, capture,
SQL, charts, baselines) ask the registry and never test a view's class.

A view has bars (a histogram's bins, a heatmap's cells, a temporal view's calendar units,
a categorical view's top values) and, per row, at most one bar: its *key*. Methods take
the view's spec model (`spec/models.py`) first, typed `Any` here and as its own class in
each type's module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from brushfire import sql
from brushfire.errors import InteractionError
from brushfire.spec import models as m

if TYPE_CHECKING:
    import numpy as np

    from brushfire.lineage.layout import Dim, ViewLayout


@dataclass(frozen=True)
class BinnedAxis:
    """An equal-width binned axis of a view: where its bin is in the view's spec, and its
    field."""

    path: tuple  # the bin's key path under the view, e.g. ("bin",) or ("x", "bin")
    field: str
    bin: m.Bin


@dataclass(frozen=True)
class FieldNeed:
    """A column a view reads, and the kinds of column it takes (spec/checks.py checks
    them against the source; hints by the kind found, "*" for any)."""

    path: tuple
    field: str
    kinds: tuple[str, ...] = ()  # empty: any kind
    user: str = ""  # "a histogram view": who needs the column, in messages
    hints: dict[str, str] | None = None


class ViewType:
    """One view type. Subclasses set `name` (the spec's `type`) and override what differs;
    the defaults fit a view over one field with no bins."""

    name: ClassVar[str]
    # the bars are the field's values (as strings, '(other)' last), not numbered bins:
    # their SQL keys are strings and SQL finds the top values
    value_bars: ClassVar[bool] = False

    # --- the spec ------------------------------------------------------------------

    def key_fields(self, view: Any) -> list[str]:
        """The source columns that decide a row's bar."""
        return [view.field]

    def axes(self, view: Any) -> list[BinnedAxis]:
        """The view's binned axes (a `maxbins` bin is resolved at capture)."""
        return []

    def with_bins(self, view: Any, bins: list[m.Bin]) -> Any:
        """The view with its axes' bins replaced, in the order of `axes`."""
        return view

    def field_needs(self, view: Any) -> list[FieldNeed]:
        """The key columns and the kinds each takes (the measure is checked apart)."""
        return [FieldNeed(("field",), view.field)]

    def calendar(self, view: Any) -> tuple[str, str] | None:
        """(field, unit) when the bars are calendar units from the field's first to its
        last time (their number depends on the data)."""
        return None

    # --- capture -----------------------------------------------------------------

    def stats_needs(self, view: Any) -> dict[str, list[str]]:
        """Fields whose exact value counts ("counts") or time range ("ranges") capture's
        statistics must give for the bars."""
        return {}

    def labels(self, view: Any, stats: Any) -> list:
        """The bars' labels, from the source's statistics (capture/stats.py)."""
        raise NotImplementedError

    def reasons(self, view: Any) -> list[str]:
        """Why the view may not show a row (or, clamped, shows it in an edge bar), in the
        order of its pseudo-bars (lineage/layout.py): caveat names (`caveats`)."""
        return ["null"]

    def reason_sql(self, view: Any, key: str, d: sql.Dialect = sql.DUCKDB) -> str:
        """SQL for a row's reason as the position in `reasons` (NULL: none, the row is in its
        bar as it is); `key`: the row's bar key (`key_sql`). Rows of a NULL key with no
        reason are `not_shown` (a heatmap's)."""
        return f"CASE WHEN {sql.ident(view.field, d)} IS NULL THEN 0 END"

    def monotone_code(self, view: Any, field: str):
        """The view's bar as a non-decreasing function of `field`'s values (numbers, times
        as UTC microseconds; a function of a float64 array), when the field's value alone
        decides it, in value order; else None. Capture cuts a field of many values into
        buckets at the function's changes, so that the bar is a function of the bucket
        (`key_values`) and no bar per row is kept."""
        return None

    def key_codes(self, view: Any, dims: list[Dim], dim_of: dict[str, int],
                  nbars: int, labels: list) -> list[tuple[int, np.ndarray]] | None:
        """The bar (or nbars + reason) per key of the dims that decide it (`key_values`):
        (dim, code per key) parts whose sum is the bar, or None when no dims decide it
        (capture computes the bar per row instead: `row_codes`)."""
        return None

    def row_codes(self, view: Any, vl: ViewLayout, rows: Any) -> np.ndarray:
        """Each row's bar from its source columns (`rows`: capture/keys.py's column
        reader), nbars + i for reason i, -1 when dropped without a reason."""
        raise NotImplementedError

    # --- SQL (sql.py's dialects; what the oracle and the baselines run) ------------

    def key_sql(self, view: Any, top: list | None, d: sql.Dialect = sql.DUCKDB) -> str:
        """The key of a row's bar, NULL when the view drops the row: the bar number, the
        bar's start in UTC microseconds, or the value as a string (`value_bars`; `top`:
        the view's top values)."""
        raise NotImplementedError

    def base_key_sql(self, view: Any, d: sql.Dialect = sql.DUCKDB) -> str:
        """The key the plain base query groups by (capture's baseline): `key_sql` but with
        no top values chosen yet."""
        return self.key_sql(view, None, d)

    def label_keys(self, view: Any, labels: list) -> list:
        """Each bar's key as `key_sql` computes it (`labels` as `sql_values` gives them)."""
        return list(range(len(labels)))

    def top_values(self, view: Any, labels: list) -> list:
        """The values of a value-bars view's bars (`labels` as `sql_values` gives them),
        as `key_sql` takes them: all but a bar for the values beyond them."""
        return list(labels)

    def sql_values(self, layout: ViewLayout) -> list:
        """The captured view's labels as its SQL takes them: as `label_keys`' labels and
        (value bars) `key_sql`'s top values."""
        return list(layout.labels)

    def brush_sql(self, view: Any, interval, y=None, d: sql.Dialect = sql.DUCKDB) -> str:
        """The rows an interval (or, with y, rect) brush selects."""
        msg = f"view {view.name!r} takes a values selection, not an interval brush"
        raise InteractionError(msg)

    def bound(self, view: Any) -> str | None:
        """What an interval brush's bounds are: "time", "number", or None (no interval)."""
        return None

    def extent(self, labels: list) -> tuple | None:
        """(lo, hi) of the bars along an interval brush's axis (a pixel grid spans it), or
        None when the view has none."""
        return None

    # --- the chart (charts.py assembles it; altair is imported by brushfire.marks) --

    def tooltip_key(self, view: Any) -> str:
        return view.field

    def caveats(self, view: Any) -> dict[str, str]:
        """What each of the view's reasons means (and more), to follow "N rows"."""
        return {"null": f"not shown: {view.field} is null"}

    def bar_row(self, view: Any, i: int, label, n: int) -> dict:
        """Bar i's geometry and readable label (`n` bars)."""
        return {"label": label}

    def describe(self, view: Any, layout: ViewLayout, measure: str) -> str:
        """One sentence saying what the view shows (the ARIA description)."""
        raise NotImplementedError

    def chart(self, view: Any, layout: ViewLayout, full: list, brush: str | None,
              rows: list[dict]) -> tuple[Any, dict]:
        """The Altair chart of the view over the named dataset `bars`, and what its
        `usermeta` adds (the chart's shape and layout hints)."""
        raise NotImplementedError

    def narrow_chart(self, view: Any, layout: ViewLayout, full: list, brush: str | None,
                     rows: list[dict]) -> tuple[Any, dict] | None:
        """As `chart`, for a narrow card (a phone) when the view draws differently there
        (categorical columns: rows); None when it does not."""
        return None


# hints for a key column that must be a number
NUMBER_HINTS = {"string": "use a categorical view for strings, or derive a number in source.columns",
                "temporal": "use a temporal view for timestamps (type: temporal, unit: day)"}


def check_brush_y(view: str, kind: str, y, where: str = "y") -> None:
    """A brush's y: given for a rect brush (a heatmap's), not for an interval brush. The one
    wording of the protocol's check (`where`: the message's path), the engine's session and
    the view types' SQL."""
    if kind == "rect" and y is None:
        msg = f"{where}: missing; view {view!r} is a heatmap: its brush gives interval (x) and y"
    elif kind == "interval" and y is not None:
        msg = f"{where}: view {view!r} takes an interval brush; y is only for heatmaps"
    else:
        return
    raise InteractionError(msg)


def interval_only(view: Any, y) -> None:
    """Refuse a rect brush's y on a view brushed along one axis."""
    check_brush_y(view.name, "interval", y)


def key_values(dims: list[Dim], dim_of: dict[str, int], field: str,
               view: str) -> tuple[int, np.ndarray] | None:
    """The dim of `field`'s values whose key decides view `view`'s bar, and a value per key
    that stands for all of the key's values: a dense dim (each key one value), or a fine
    dim whose buckets capture cut at the view's bar changes (`Dim.aligned`); else None."""
    import numpy as np

    i = dim_of.get(f"value:{field}")
    if i is None:
        return None
    d = dims[i]
    if d.kind == "dense":
        return i, np.asarray(d.values)
    if d.kind == "fine" and d.aligned and view in d.aligned:
        return i, np.asarray(d.reps)
    return None
