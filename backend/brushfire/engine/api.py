"""The engine's contract: what every session answers (Brushfire's, and
the baselines' behind the same server), its result types, the typed requests a message
is checked into (brushfire/requests.py), and the request checks they share.

`protocol.handle` talks to any `SessionAPI`; `Update` and `ViewData` are what it returns.
A session's `store` is a `StoreInfo`: what clients need to know about the dashboard's
data without any lineage (bars of each view, rows, parameter domains). What a session
can do beyond that it declares in `capabilities` (a `Capability` set), and the protocol
reads the declaration instead of probing for methods: `ROWS`, a `LineageAPI` (the rows
behind the selection, by rid); `FORWARD`, a `ForwardAPI` (the bars of given rows);
`LAZY`, a `LazyAPI` (what capture did not prepare, answered on Spark: engine/lazy.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from numbers import Integral
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from brushfire.errors import InteractionError, NotCapturedError
from brushfire.limits import MAX_PAGE, MAX_PAGE_ROWS
from brushfire.values import number_bound, show, slider_bound, time_bound
from brushfire.views import view_type

if TYPE_CHECKING:  # pyarrow and numpy only for annotations: `import brushfire` stays light
    import numpy as np
    import pyarrow as pa

    from brushfire.lineage.layout import ViewLayout
    from brushfire.plan import CapturePlan, Filter
    from brushfire.selection import TaggedFilter
    from brushfire.spec import models as m


@dataclass
class ViewData:
    """A view's current bars: count per bar, the value it shows (count, sum, mean or an
    order statistic; None: no value), and its caveats: how many rows it does not show and
    why (engine/stats.py; only reasons with rows)."""

    name: str
    labels: list
    counts: list[int]
    values: list
    caveats: dict[str, int] = field(default_factory=dict)


@dataclass
class Update:
    """The result of one interaction: the views that changed and how each was computed."""

    views: dict[str, ViewData]
    methods: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class LazyUpdate(Update):
    """An `Update` some views of which were answered lazily, on Spark (a `LAZY` session's)."""

    lazy: list[str] = field(default_factory=list)  # the views computed on Spark
    reason: str = ""  # why the engine could not answer
    lazy_seconds: float = 0.0  # of which on Spark
    cancelled: bool = False  # the next interaction cancelled it: `lazy` views are stale


@dataclass
class DetailsPage:
    """A details request's answer: a page of the rows behind bars or the selection (with
    their rids) and how many rows there are in all."""

    rows: pa.Table
    total: int


# --- checked requests: a client message checked against the dashboard, once, by its
# `check` (brushfire/requests.py). A session's `apply_*` (filters) and `answer_*` (lineage
# queries) methods take them and check nothing again. Values stay as sent (replies echo the
# filters as given); a brush's bounds and a slider's value also travel as compared
# (`brush_request`, `slider_bounds`: converted where they are checked, once).


@dataclass(frozen=True)
class Request:
    """A message checked against the dashboard (its `id` stays with `protocol.handle`)."""


@dataclass(frozen=True)
class BrushRequest(Request):
    """A brush, its bounds as sent (replies echo them) and as the view's dims compare them:
    made by `brush_request`, which checks and converts them once."""

    view: str  # a brushable view (an interval brush's, or a heatmap's rect brush)
    interval: tuple  # (lo, hi): numbers, or ISO times on a temporal view; None: an open end
    y: tuple | None  # a rect brush's y interval; None for an interval brush
    bounds: tuple  # `interval` as compared: numbers; times as UTC microseconds; None: open
    y_bounds: tuple | None  # `y` so


@dataclass(frozen=True)
class SelectRequest(Request):
    view: str  # a categorical view
    values: list  # its categories, '(other)' included


@dataclass(frozen=True)
class ClearRequest(Request):
    name: str | None  # a filter's name; None: every filter


@dataclass(frozen=True)
class ParameterRequest(Request):
    name: str
    value: Any  # one of a dropdown's choices (a list of them for `in`), a slider's value; None
    bounds: tuple | None = None  # a slider's value as compared (`slider_bounds`); else None


@dataclass(frozen=True)
class FiltersRequest(Request):
    state: dict[str, TaggedFilter]  # the whole selection state, as sent
    requests: tuple[Request, ...]  # each entry as its checked request, in the state's order


@dataclass(frozen=True)
class HighlightRequest(Request):
    source: str
    bars: list[int]
    targets: list[str] | None  # None: the declared ones (every other view, lazily)
    lazy: bool  # the session answers undeclared pairs (Capability.LAZY)


@dataclass(frozen=True)
class FilterRequest(Request):
    column: str  # a source column (a LAZY session's)
    interval: tuple | None  # one of interval and values
    values: list | None


@dataclass(frozen=True)
class DetailsRequest(Request):
    view: str | None  # with bars of it, or neither: the rows of the selection
    bars: list[int] | None
    page: int
    page_size: int | None  # None: the declared page size (checked too)
    columns: list[str] | None
    order_by: str | None
    descending: bool


@dataclass(frozen=True)
class ForwardRequest(Request):
    rids: list[int]


@dataclass(frozen=True)
class DimensionRequest(Request):
    join: str  # a join whose key column the capture kept (details declared)
    view: str | None
    bars: list[int] | None
    page: int
    page_size: int | None  # None: the declared details page size (checked too)


@dataclass(frozen=True)
class DimensionForwardRequest(Request):
    join: str
    key: str | int | float


@dataclass(frozen=True)
class StateRequest(Request):
    pass


class Capability(StrEnum):
    """What a session can do beyond `SessionAPI`, declared in its `capabilities`."""

    ROWS = "rows"  # a LineageAPI: rids behind the selection, the store's rows by rid
    FORWARD = "forward"  # a ForwardAPI: the bars each view shows given rows in
    LAZY = "lazy"  # a LazyAPI: undeclared brushes, pairs, columns answered on Spark


class StoreInfo(Protocol):
    """What every session's `store` tells about the dashboard's data: each view's bars
    (`views[i].name`, `.labels`, `.nbars`, `.value_type`), the rows, and each parameter's
    domain: ('values', choices) of a dropdown, ('times', ISO instants) of a dropdown over a
    time field, ('range', [lo, hi]) of a slider (times as ISO), and whether it is over a
    time field (a slider over one without a value has no ends to tell)."""

    n_rows: int

    @property
    def views(self) -> list[ViewLayout]: ...
    def parameter_domain(self, name: str) -> tuple[str, list]: ...
    def parameter_temporal(self, name: str) -> bool: ...  # over a time field (ISO values)


@runtime_checkable
class SessionAPI(Protocol):
    """One user's filter state over a dashboard.

    `filters` holds the active filters as they were given, by kind: an interval or rect
    brush's `(interval, y)`, a select's values, a parameter's value
    (`brushfire.selection.state_json` turns it into the tagged form replies carry)."""

    plan: CapturePlan
    store: StoreInfo
    capabilities: frozenset[Capability]

    # the Python API's interactions: each checks what it is given
    def brush(self, view: str, interval, y=None) -> Update: ...
    def select(self, view: str, values: list) -> Update: ...
    def set_parameter(self, name: str, value) -> Update: ...
    def clear(self, name: str | None = None) -> Update: ...
    # the same, of requests checked by their message (brushfire/requests.py): not checked again
    def apply_brush(self, r: BrushRequest) -> Update: ...
    def apply_select(self, r: SelectRequest) -> Update: ...
    def apply_parameter(self, r: ParameterRequest) -> Update: ...
    def apply_clear(self, r: ClearRequest) -> Update: ...
    @property
    def filters(self) -> dict[str, Any]: ...
    def views(self) -> dict[str, ViewData]: ...
    def view(self, name: str) -> ViewData: ...
    def count_selected(self, view: str | None = None, bars: list[int] | None = None) -> int: ...
    def details(self, view: str | None = None, bars: list[int] | None = None, page: int = 0,
                page_size: int | None = None, columns: list[str] | None = None,
                order_by: str | None = None, descending: bool = False) -> pa.Table: ...
    def highlight(self, source: str, bars: list[int]) -> dict[str, ViewData]: ...
    # the lineage queries of requests checked by their message: not checked again
    def answer_details(self, r: DetailsRequest) -> DetailsPage: ...
    def answer_highlight(self, r: HighlightRequest) -> dict[str, ViewData]:
        """The share of each target's bars from `r.bars` of `r.source`: `r.targets` in
        their order, else every declared one (a LAZY session: every other view)."""
    def close(self) -> None:
        """The user left: stop the session's background work and free what it holds (the
        server calls it when a connection ends; interactions after it may still run)."""


class LineageStoreAPI(StoreInfo, Protocol):
    def take(self, rids: np.ndarray, columns: list[str]) -> pa.Table: ...


@runtime_checkable
class LineageAPI(SessionAPI, Protocol):
    """A session over per-row lineage: the rids behind bars or the current selection, in
    rid order (`offset` / `limit` page), and the store's rows by rid."""

    store: LineageStoreAPI

    def backward_rids(self, view: str | None = None, bars: list[int] | None = None,
                      offset: int = 0, limit: int | None = None) -> np.ndarray: ...

    def rids_behind(self, view: str | None, bars: list[int] | None, offset: int = 0,
                    limit: int | None = None) -> np.ndarray:
        """`backward_rids` of a view and bars a request's check checked: not checked again."""


@runtime_checkable
class ForwardAPI(SessionAPI, Protocol):
    """Forward lineage: the bars each view shows rows `rids` in (views whose bars per row
    were not captured left out)."""

    def forward(self, rids) -> dict[str, list[int]]: ...
    def answer_forward(self, r: ForwardRequest) -> dict[str, list[int]]:
        """`forward` of the rids a forward message's check checked: not checked again."""


@runtime_checkable
class LazyAPI(ForwardAPI, Protocol):
    """A session that answers what capture did not prepare, on Spark (engine/lazy.py): a
    brush on any brushable view, a filter on any column of the source, highlighting
    between any views, details of any columns. It checks those names itself."""

    def filter_kinds(self) -> dict[str, str]:
        """Each filter name it takes and its kind (the undeclared brushes and the active
        filters on source columns too)."""

    def check_column(self, name, where: str) -> None:
        """InteractionError, before Spark starts, unless `name` is a column of the source."""

    def filter_column(self, column: str, interval=None, values: list | None = None,
                      where: str | None = None) -> Update: ...
    def highlight(self, source: str, bars: list[int],
                  targets: list[str] | None = None) -> dict[str, ViewData]: ...

    def interrupt(self) -> None:
        """Cancel the lazy answer running now, if any (from any thread)."""

    def progress(self) -> tuple[str, float | None] | None:
        """(stage, fraction done) of the lazy answer running now; None if none."""


def find_filter(filters: dict[str, Filter], name: str, kinds: tuple[str, ...] | None) -> Filter:
    """The filter an interaction names, if it takes one of `kinds` (None: any)."""
    f = filters.get(name)
    if f is None:
        known = ", ".join(filters) or "none"
        msg = f"{name!r} is not a brushable view or parameter of this dashboard; known: {known}"
        raise InteractionError(msg)
    if kinds and f.kind not in kinds:
        what = {"interval": "an interval brush (brush with interval [lo, hi])",
                "rect": "a rect brush (brush with interval and y)",
                "points": "a selection of bars (select with values)",
                "param_eq": "a parameter value (parameter)",
                "param_range": "a parameter value (parameter)"}[f.kind]
        msg = f"{name!r} takes {what}, not this interaction"
        raise InteractionError(msg)
    return f


# --- a request's parts checked, in one wording for every layer that checks them: the
# protocol's messages (`where`: the message's path), the sessions' Python API, the lazy
# answers and the baselines


def check_bars(nbars: int, view: str, bars, where: str = "bars") -> list[int]:
    """`bars` of a view with `nbars` bars (a heatmap's: its cells): integers 0 to nbars - 1."""
    if not isinstance(bars, (list, tuple)) or not all(
            isinstance(b, Integral) and not isinstance(b, bool) for b in bars):
        msg = f"{where}: {show(bars)} is not a list of bar numbers"
        raise InteractionError(msg)
    for i, b in enumerate(bars):
        if not 0 <= b < nbars:
            msg = f"{where}[{i}]: {show(b)} is not a bar of view {view!r}; its bars are 0 to {nbars - 1}"
            raise InteractionError(msg)
    return [int(b) for b in bars]


def brush_request(view: m.View, interval, y=None, where: str = "",
                  axes: tuple[str, str] = ("interval", "y")) -> BrushRequest:
    """A brush on `view` checked and converted once: each bound a number, or an ISO time on
    a temporal view (brushfire.values), or None for an open end. An error names the bound
    as `where` + its axis's name (`axes`) + [i], e.g. "brush on view 'hx': interval[0]"."""
    bound = time_bound if view_type(view).bound(view) == "time" else number_bound

    def converted(pair, axis: str) -> tuple:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            msg = f"{where}{axis}: {show(pair)} is not [lo, hi] (null for an open end)"
            raise InteractionError(msg)
        out = []
        for i, x in enumerate(pair):
            try:
                out.append(bound(x))
            except InteractionError as e:
                msg = f"{where}{axis}[{i}]: {e}"
                raise InteractionError(msg) from None
        return tuple(out)

    return BrushRequest(view.name, interval, y, converted(interval, axes[0]),
                        None if y is None else converted(y, axes[1]))


def slider_bounds(name: str, value, temporal: bool, between: bool, where: str) -> tuple:
    """A slider's value checked and converted once: (lo, hi) of a `between` slider's
    [lo, hi], else (value,); numbers, or ISO times on a slider over times (as UTC
    microseconds). An error names the value as `where` (+ [i])."""
    def converted(x, at: str):
        try:
            return slider_bound(x, temporal)
        except InteractionError as e:
            msg = f"{at}: {e}"
            raise InteractionError(msg) from None

    if not between:
        return (converted(value, where),)
    if not isinstance(value, list) or len(value) != 2 or None in value:
        msg = f"{where} takes a range [lo, hi], got {show(value)}"
        raise InteractionError(msg)
    return tuple(converted(x, f"{where}[{i}]") for i, x in enumerate(value))


def check_page(page, page_size) -> None:
    """A page's number (0 to MAX_PAGE) and size (1 to MAX_PAGE_ROWS rows)."""
    for name, x, lo, hi in (("page", page, 0, MAX_PAGE), ("page_size", page_size, 1, MAX_PAGE_ROWS)):
        if isinstance(x, bool) or not isinstance(x, Integral) or not lo <= x <= hi:
            msg = f"{name}: {show(x)} is not an integer from {lo} to {hi:,}"
            raise InteractionError(msg)


def check_columns(columns) -> list[str] | None:
    """The Python API's `columns` (a message's are checked as it is parsed): None, or a
    list (any iterable) of names; a name alone is no list of its letters."""
    if columns is None:
        return None
    if isinstance(columns, Iterable) and not isinstance(columns, str | bytes):
        columns = list(columns)
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        msg = f"columns: {show(columns)} is not a list of column names (strings)"
        raise InteractionError(msg)
    return columns


def details_request(plan: CapturePlan, page: int, page_size: int | None,
                    columns: list[str] | None) -> tuple[list[str], int]:
    """(columns, page size) of a details request, checked against the declaration."""
    spec = plan.dashboard.interactions.details
    if spec is None:
        msg = "details on demand is not declared in this dashboard's interactions"
        raise NotCapturedError(msg)
    columns = list(dict.fromkeys(check_columns(columns) or spec.columns))  # each once
    unknown = [c for c in columns if c not in plan.detail_columns]  # (joins' keys too: plan.py)
    if unknown:
        msg = f"details columns {unknown} were not captured; declared: {spec.columns}"
        raise InteractionError(msg)
    size = page_size or spec.page_size
    check_page(page, size)
    return columns, size


def check_join_captured(plan: CapturePlan, name: str) -> None:
    """Lineage through join `name` needs its key column, which the capture keeps with the
    details' columns."""
    key = f"{name}.{plan.dashboard.source.join(name).key}"
    if key not in plan.detail_columns:
        msg = (f"lineage through join {name!r} was not captured: declare details on demand "
               "(its key column is kept with the details' columns)")
        raise NotCapturedError(msg)

