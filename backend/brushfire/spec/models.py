"""Typed, frozen models of a dashboard spec.

YAML keys equal field names (no aliases), so a validation path reads like the file.
Cross-references (views named by interactions, columns of the source) are checked
here where they need only the spec, and by `checks.check_columns` against the source
schema.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from brushfire.limits import MAX_BARS, MAX_PAGE_ROWS, MAX_TOP
from brushfire.sizes import SIZE_PATTERN
from brushfire.spec import aggregates

AggregateOp = Literal[tuple(aggregates.OPS)]  # type: ignore[valid-type]  # spec/aggregates.py
ORDER_OPS = aggregates.ORDER_OPS  # order statistics (and distinct)
TimeUnit = Literal["minute", "hour", "day", "week", "month", "year",
                   "hour_of_day", "day_of_week", "month_of_year"]
# Calendar parts (UTC): cyclic units whose bars are the part's values, in order, rather
# than a time line: (the first value, the bars' labels). A part's value is SQL's hour(t)
# (0-23), isodow(t) (1 = Monday .. 7 = Sunday) or month(t) (1-12); bar = value - first.
CALENDAR_PARTS: dict[str, tuple[int, tuple[str, ...]]] = {
    "hour_of_day": (0, tuple(str(h) for h in range(24))),
    "day_of_week": (1, ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")),
    "month_of_year": (1, ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                          "Nov", "Dec")),
}
BrushType = Literal["interval", "points", "rect", "none"]
ScaleType = Literal["linear", "log", "sqrt"]
AxisName = Literal["x", "y"]


# Display text (shown, never looked up): the key paths of the dashboard's, each view's and
# each layout section's `title` ('*': any item of a list). YAML reads an unquoted
# `title: 1984`, `1.50` or `yes` as a number or a boolean; there the loader keeps the text
# as written (spec/yamlread.py). Names of columns, views etc. keep YAML's reading.
DISPLAY_TEXT: tuple[tuple[str, ...], ...] = (("title",), ("views", "*", "title"), ("layout", "*", "title"))
# ... which a YAML editor's schema check takes as written, too
DisplayText = Annotated[str, WithJsonSchema({"type": ["string", "number", "boolean"]})]


# a name: the dashboard's, a view's, a parameter's (spec/checks.py checks those two), an
# fd check's; names make up the lineage store's file names and selection-state keys
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]*$"


def _not_bool(v: object, kind: str) -> object:
    """A number as the spec writes it: YAML's true and false (yes, no, on, off) and text
    (`step: "10"`) are not numbers, as the JSON Schema says; pydantic's lax float and int
    took them as 1, 0 and 10 (`step: yes` was a step of 1)."""
    if isinstance(v, (bool, str)):
        raise PydanticCustomError(kind, "not a number")
    return v


def _bool_as_written(v: object) -> object:
    """A boolean as the spec writes it (true, false; YAML's yes, no, on, off; numpy's, as
    a notebook's dict may hold: `clamp: df.x.min() < 0`): pydantic's lax bool took text
    and numbers too (`clamp: "yes"`, `clamp: 1`)."""
    if type(v).__module__ == "numpy" and type(v).__name__ in ("bool", "bool_"):
        return bool(v)
    if not isinstance(v, bool):
        kind, msg = "bool_type", "not a boolean"
        raise PydanticCustomError(kind, msg)
    return v


Float = Annotated[float, BeforeValidator(lambda v: _not_bool(v, "float_type"))]
_NOT_BOOL_INT = BeforeValidator(lambda v: _not_bool(v, "int_type"))
Bool = Annotated[bool, BeforeValidator(_bool_as_written)]
# ints with their bounds inside the check (where the JSON Schema shows them as minimum, maximum)
MaxBins = Annotated[int, Field(ge=2, le=MAX_BARS), _NOT_BOOL_INT]
Top = Annotated[int, Field(ge=1, le=MAX_TOP), _NOT_BOOL_INT]
PageSize = Annotated[int, Field(ge=1, le=MAX_PAGE_ROWS), _NOT_BOOL_INT]  # (a details request's)


def _checked_path(v: str) -> str:
    """A file's path cannot hold a NUL character: no file system takes one, and Python's
    file functions raise ValueError on it (a traceback from the loader, not a problem);
    nor a `~user` that names no home directory (`home_problem`)."""
    if "\0" in v:
        kind, msg = "path", "a path cannot hold a NUL character (\\0); got {got}"
        raise PydanticCustomError(kind, msg, {"got": repr(v)})
    if (problem := home_problem(v)) is not None:
        kind, msg = "path", "{problem}"
        raise PydanticCustomError(kind, msg, {"problem": problem})
    return v


def home_problem(path: str) -> str | None:
    """Why a path's leading `~user` (or `~`) names no home directory on this machine, or
    None. A relative path is resolved with `Path.expanduser`, which raises RuntimeError
    on `~nosuchuser/...` (a traceback from the loader, not a problem); also checked on
    a path an environment variable wrote (spec/checks.py)."""
    if not path.startswith("~"):
        return None
    try:
        Path(path).expanduser()
    except RuntimeError:
        user = path[1:].split("/", 1)[0]
        home = f"no user {user!r} on this machine has" if user else "this process does not know its"
        return f"{path!r}: ~{user} is a home directory, and {home} one; write the path out"
    return None


FilePath = Annotated[str, AfterValidator(_checked_path)]  # a local path or a URI, as written


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Format = Literal["parquet", "csv", "json", "orc", "delta"]
# a join's name: it prefixes its columns (`<join>.<column>`), in Spark SQL expressions too
JOIN_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"


# what a CSV is read with unless its options say otherwise (Spark's own defaults are no
# header and every column a string; people's CSV files have a header row and numbers)
# a quote inside a quoted field is doubled ("say ""hi"""), as RFC 4180, spreadsheets, pandas
# and DuckDB write and read it; Spark's own default escape is a backslash, with which it
# kept `"say ""hi"""` whole, quotes and all
CSV_DEFAULTS = {"header": "true", "inferSchema": "true", "escape": '"'}
COMPRESSED = (".gz", ".bz2", ".zst", ".snappy", ".lz4", ".deflate")  # Spark's codecs: files not read by us
EXTENSION_FORMATS = {"jsonl": "json", "ndjson": "json"}  # JSON Lines files' usual extensions


def format_of(name: str) -> str:
    """The format a file's name says: its extension, JSON Lines' own read as json, and a
    compressed CSV or JSON file's ahead of its codec's (`day.csv.gz`: csv, which Spark reads
    decompressing it; a Parquet or ORC file compresses inside, never so)."""
    low = name.lower()
    ext = low.rsplit(".", 1)[-1]
    if f".{ext}" in COMPRESSED:
        inner = low[: -len(ext) - 1].rsplit(".", 1)[-1]
        if EXTENSION_FORMATS.get(inner, inner) in ("csv", "json"):
            ext = inner
    return EXTENSION_FORMATS.get(ext, ext)


class Table(Model):
    """A table Spark reads: a file or directory, its format and reader options."""

    path: FilePath
    format: Format | None = None
    options: dict[str, str] = Field(default_factory=dict)

    @property
    def resolved_format(self) -> str:
        return self.format or format_of(self.path)

    @property
    def reader_options(self) -> dict[str, str]:
        """The options Spark reads it with: the spec's, over CSV_DEFAULTS for a CSV (Spark's
        option names are case-insensitive: the spec's `HEADER` replaces `header`)."""
        if self.resolved_format != "csv":
            return dict(self.options)
        given = {k.lower() for k in self.options}
        return {**{k: v for k, v in CSV_DEFAULTS.items() if k.lower() not in given}, **self.options}


class Join(Table):
    """A dimension table joined many-to-one to the source (SQL's `LEFT JOIN <path> AS
    <name> ON <on> = <name>.<key>`): each row keeps its place, with the dimension's
    columns as `<name>.<column>` (null when no dimension row matches). `on` names a column
    of the source, or of a join above this one (`orders.o_custkey`); `key` is unique in
    the dimension table (capture refuses a duplicated key)."""

    name: str = Field(pattern=JOIN_NAME_PATTERN)
    key: str
    on: str


class Source(Table):
    """Where the rows come from: any Spark-readable file, the dimension tables joined to
    it, plus derived columns and filters (which may read the joined columns)."""

    columns: dict[str, str] = Field(default_factory=dict)  # name -> Spark SQL expression
    filters: list[str] = Field(default_factory=list)  # Spark SQL boolean expressions
    joins: list[Join] = Field(default_factory=list)  # in order: `on` names a join above

    def join(self, name: str) -> Join:
        return next(j for j in self.joins if j.name == name)

    def join_of(self, column: str) -> Join | None:
        """The join a column `<join>.<column>` comes from (None: a column of the source)."""
        head, dot, _ = column.partition(".")
        return next((j for j in self.joins if j.name == head), None) if dot else None

    def join_chain(self, column: str) -> list[Join]:
        """The joins a column depends on, first (joined to the source's own column) to
        last (the column's own join): `nation.n_name` through orders, customer, nation."""
        out: list[Join] = []
        j = self.join_of(column)
        while j is not None and j not in out:
            out.insert(0, j)
            j = self.join_of(j.on)
        return out


class Bin(Model):
    """Equal-width bins: [start + i*step, start + (i+1)*step), the last bin closed. Either
    `step` and `extent`; or `step` alone: the extent of whole steps around the data's finite
    min and max, fitted at capture (bins.py, `step_bin`); or `maxbins`: a nice step ({1, 2,
    5} x 10^k) and extent chosen at capture from them (`nice_bin`)."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": ["step"]},
                                                           {"required": ["maxbins"]}]})

    step: Float | None = None
    extent: tuple[Float, Float] | None = None
    maxbins: MaxBins | None = None  # at most this many bars (a range
    # across 0 takes two whole steps)
    clamp: Bool = False  # values outside the extent go to the edge bins instead of none

    @field_validator("step")
    @classmethod
    def _positive_step(cls, v: float | None) -> float | None:
        if v is not None and not (v > 0 and math.isfinite(v)):
            msg = f"bin step must be a number > 0, got {v:g}"
            raise ValueError(msg)
        return v

    @field_validator("extent")
    @classmethod
    def _nonempty_extent(cls, v: tuple[float, float] | None) -> tuple[float, float] | None:
        if v is None:
            return v
        if not (math.isfinite(v[0]) and math.isfinite(v[1])):
            msg = f"extent [{v[0]:g}, {v[1]:g}] must be two finite numbers"
            raise ValueError(msg)
        if not (v[0] < v[1]):
            msg = f"extent [{v[0]:g}, {v[1]:g}] is empty: the first value must be below the second"
            raise ValueError(msg)
        return v

    @model_validator(mode="after")
    def _step_or_maxbins(self) -> Bin:
        if self.maxbins is not None and (self.step is not None or self.extent is not None):
            msg = "give either maxbins, or a step (and an extent): maxbins chooses the step and extent"
            raise ValueError(msg)
        if self.maxbins is None and self.step is None:
            msg = ("bin has extent but no step" if self.extent is not None
                   else "bin needs a step (with an extent, or fitted to the data), or maxbins")
            raise ValueError(msg)
        return self

    @property
    def resolved(self) -> bool:
        """Are step and extent known (given, or chosen at capture: maxbins, step alone)?"""
        return self.step is not None and self.extent is not None

    @property
    def count(self) -> int:
        """The number of bars (validate refuses more than limits.MAX_BARS); before capture
        chose a maxbins bin's step, its upper bound; before it fitted a step's extent, 1
        (capture refuses more than MAX_BARS then: `bins.step_bin`)."""
        if self.step is None or self.extent is None:
            return self.maxbins or 1
        bars = (self.extent[1] - self.extent[0]) / self.step
        if not math.isfinite(bars):  # the extent's width overflows a double
            bars = self.extent[1] / self.step - self.extent[0] / self.step
        if not math.isfinite(bars):
            return sys.maxsize
        return max(1, math.ceil(bars - 1e-9))


class Aggregate(Model):
    """What each bar shows: its rows (count), or the sum, mean, median, a quantile, the
    smallest or largest value, or the number of distinct values of `field`."""

    op: AggregateOp = "count"
    # the measure; required for every op but count. Checked even when left out, so that
    # the error names `aggregate.field` rather than the whole mapping.
    field: str | None = Field(None, validate_default=True)
    # quantile: the fraction in [0, 1] (required); checked even when left out
    p: Float | None = Field(None, validate_default=True)
    # median and quantile: interpolated (SQL quantile_cont) or a value of the bar (quantile_disc)
    method: Literal["continuous", "discrete"] | None = Field(None, validate_default=True)

    @field_validator("field")
    @classmethod
    def _measure_needed(cls, v: str | None, info: ValidationInfo) -> str | None:
        op = info.data.get("op")  # absent when op itself was invalid
        if op is not None and aggregates.op(op).kind != "count" and not v:
            msg = f"aggregate op '{op}' needs a field (the column to {aggregates.op(op).verb})"
            raise ValueError(msg)
        if op is not None and aggregates.op(op).kind == "count" and v:
            # (SQL's count(x) counts the rows where x is not null: not what count shows)
            msg = (f"aggregate op '{op}' counts a bar's rows (SQL's count(*)) and takes no field; "
                   "remove field")
            raise ValueError(msg)
        return v

    @field_validator("p")
    @classmethod
    def _fraction(cls, v: float | None, info: ValidationInfo) -> float | None:
        op = info.data.get("op")
        takes = [n for n, o in aggregates.OPS.items() if o.takes_p]
        if op is not None and aggregates.op(op).takes_p and v is None:
            msg = f"aggregate op '{op}' needs p, the fraction in [0, 1] (0.5: the median)"
            raise ValueError(msg)
        if v is not None and op is not None and not aggregates.op(op).takes_p:
            msg = f"p is the fraction of op {' and '.join(repr(t) for t in takes)}; op '{op}' takes none"
            raise ValueError(msg)
        if v is not None and not (0.0 <= v <= 1.0):
            msg = f"p must be a fraction in [0, 1], got {v:g}"
            raise ValueError(msg)
        return v

    @field_validator("method")
    @classmethod
    def _method_of_quantiles(cls, v: str | None, info: ValidationInfo) -> str | None:
        op = info.data.get("op")
        if v is not None and op is not None and not aggregates.op(op).takes_method:
            takes = [repr(n) for n, o in aggregates.OPS.items() if o.takes_method]
            msg = f"method is for ops {' and '.join(takes)}; op '{op}' takes none"
            raise ValueError(msg)
        return v

    @property
    def order(self) -> bool:
        """Is the op an order statistic (or distinct): counted in cells of bar x value?"""
        return aggregates.op(self.op).kind == "order"


class _ViewBase(Model):
    name: str
    title: DisplayText | None = None
    aggregate: Aggregate = Aggregate()
    brush: BrushType | None = None  # None: the view type's natural brush
    # display only (no effect on capture or answers): the measure's scale (the y axis of
    # bars, the colour of heatmap cells) and the axes drawn reversed
    scale: ScaleType = "linear"
    reverse: list[AxisName] = Field(default_factory=list)


class HistogramView(_ViewBase):
    """Bars over equal-width bins of a quantitative field; brushed by interval."""

    type: Literal["histogram"]
    field: str
    bin: Bin
    # display only: an interval brush snaps to whole bars (a drag selects exactly the bars it
    # touches; Shift while dragging does the other)
    snap: Bool = False


class TemporalView(_ViewBase):
    """Bars over calendar units of a timestamp field, or over a calendar part's values
    (hour of day, day of week, month of year); brushed by interval (of times, or of the
    part's values)."""

    type: Literal["temporal"]
    field: str
    unit: TimeUnit = "day"
    # display only: an interval brush snaps to whole bars (a drag selects exactly the bars it
    # touches; Shift while dragging does the other)
    snap: Bool = False

    @property
    def part(self) -> bool:
        """Is the unit a calendar part (cyclic: a bar per value of the part)?"""
        return self.unit in CALENDAR_PARTS


def is_part(view) -> bool:
    """A temporal view over a calendar part: brushed by numbers (the part's values), not times."""
    return isinstance(view, TemporalView) and view.part


class CategoricalView(_ViewBase):
    """The `top` most frequent values of a field, plus one 'other' bar; brushed by points.
    `sort` orders those bars: by count (descending, ties by value) or by name (value);
    '(other)' stays last."""

    type: Literal["categorical"]
    field: str
    top: Top = 20
    other: Bool = True
    sort: Literal["count", "name"] = "count"


class Axis(Model):
    """A heatmap axis: a binned field. `reverse` (display only) draws it reversed, as
    image-like data (screen rows, sky coordinates) needs; the same as listing the axis in
    the view's `reverse`."""

    field: str
    bin: Bin
    reverse: Bool = False


class HeatmapView(_ViewBase):
    """Cells over binned x and y fields; brushed by rectangle."""

    type: Literal["heatmap"]
    x: Axis
    y: Axis
    # display only: a rect brush snaps to whole cells (a drag selects exactly the cells it
    # touches; Shift while dragging does the other)
    snap: Bool = False


View = Annotated[
    HistogramView | TemporalView | CategoricalView | HeatmapView, Field(discriminator="type")
]

# Which brush each view type can take; the first is its default.
BRUSHES_BY_TYPE: dict[str, tuple[str, ...]] = {
    "histogram": ("interval", "none"),
    "temporal": ("interval", "none"),
    "categorical": ("points", "none"),
    "heatmap": ("rect", "none"),
}


def brush_of(view: HistogramView | TemporalView | CategoricalView | HeatmapView) -> str:
    return view.brush or BRUSHES_BY_TYPE[view.type][0]


class CrossfilterGroup(Model):
    """Views that filter each other: each shows the rows passing every brush but its own."""

    views: list[str] = Field(min_length=1)


class Highlight(Model):
    """Select bars in `source`; `targets` show the share of each bar from those rows."""

    source: str
    targets: list[str] = Field(min_length=1)


class Details(Model):
    """Details on demand: the input rows behind a selection, paged."""

    columns: list[str] = Field(min_length=1)
    page_size: PageSize = 100

    @field_validator("columns")
    @classmethod
    def _not_the_row_id(cls, v: list[str]) -> list[str]:
        """Replies give each row its id as `rid` (docs/protocol.md), beside the columns: a
        column of that name took its place, so the page's row (and its hover's forward
        lineage, a download's rows) named another row."""
        if "rid" in v:
            msg = "'rid' names each row's id in details (replies, downloads): no column may be called so"
            raise ValueError(msg)
        return v


Scalar = str | bool | float | int  # (a boolean stays one: a dropdown over a boolean field)


class Parameter(Model):
    """A widget-driven filter on every view: `field <op> value`; with op `between`,
    `lo <= field <= hi` for a value [lo, hi]; a dropdown with `multiple`, `field IN values`
    for a list of values."""

    name: str
    field: str
    widget: Literal["dropdown", "slider"] = "dropdown"
    # checked even when left out, so a slider without a range op is reported at `op`
    op: Literal["eq", "lt", "lte", "gt", "gte", "between"] = Field("eq", validate_default=True)
    multiple: Bool = False  # a dropdown picking any number of values (SQL IN)
    # None: the parameter starts inactive; op between: [lo, hi]; multiple: a list of values
    default: Scalar | list[Scalar] | None = None

    @field_validator("op")
    @classmethod
    def _op_fits_widget(cls, v: str, info: ValidationInfo) -> str:
        widget = info.data.get("widget")  # absent when widget itself was invalid
        if widget == "dropdown" and v != "eq":
            msg = f"a dropdown parameter compares with 'eq', not '{v}'"
            raise ValueError(msg)
        if widget == "slider" and v == "eq":
            msg = "a slider parameter needs a range op: lt, lte, gt, gte or between"
            raise ValueError(msg)
        return v

    @field_validator("multiple")
    @classmethod
    def _multiple_dropdown(cls, v: bool, info: ValidationInfo) -> bool:
        if v and info.data.get("widget") == "slider":
            msg = "multiple is for dropdowns: a slider takes one value, or [lo, hi] with op between"
            raise ValueError(msg)
        return v

    @field_validator("default")
    @classmethod
    def _default_fits_op(cls, v, info: ValidationInfo):
        op = info.data.get("op")  # absent when op itself was invalid
        if v is None or op is None:
            return v
        if info.data.get("multiple"):
            if not isinstance(v, list):
                msg = f"a dropdown with multiple: true takes a list of values, got {_show(v)}"
                raise ValueError(msg)
            return v
        if op == "between" and not (isinstance(v, list) and len(v) == 2):
            msg = f"op 'between' takes a range [lo, hi], got {_show(v)}"
            raise ValueError(msg)
        if op != "between" and isinstance(v, list):
            msg = f"expected a string, a boolean or a number, got {_show(v)}"
            raise ValueError(msg)
        # a slider compares doubles: NaN, infinities and integers beyond ±1.8e308 are none
        # (refused here, before capture, not when a session applies the default)
        for x in v if isinstance(v, list) else [v]:
            if op != "eq" and isinstance(x, (int, float)) and not _finite(x):
                shown = _show(x) if isinstance(x, float) else f"an integer of {len(str(abs(x)))} digits"
                msg = f"{shown} is not a finite number"
                raise ValueError(msg)
        if op == "between" and all(isinstance(x, (int, float)) for x in v) and v[0] > v[1]:
            msg = f"the range [{v[0]:g}, {v[1]:g}] is empty: lo must not be above hi"
            raise ValueError(msg)
        return v


def _finite(x: float) -> bool:
    try:
        return math.isfinite(x)
    except OverflowError:  # an int too large for a double
        return False


def _show(v) -> str:
    """A value as YAML would read it back (as the loader's messages show values)."""
    if isinstance(v, list):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    return repr(v) if isinstance(v, str) else str(v)


class Interactions(Model):
    crossfilter: list[CrossfilterGroup] = Field(default_factory=list)
    highlight: list[Highlight] = Field(default_factory=list)
    details: Details | None = None
    parameters: list[Parameter] = Field(default_factory=list)


def _is_fd_pair(v) -> bool:
    """`[[lhs...], [rhs...]]`: the short form of one functional dependency."""
    return (isinstance(v, (list, tuple)) and len(v) == 2
            and all(isinstance(x, (list, tuple)) and all(isinstance(c, str) for c in x) for x in v))


def _fd_schema(schema: dict) -> None:
    """A JSON schema that also takes the pair `[[lhs], [rhs]]`: for a functional dependency
    (its mapping, or the pair) and for `fd` (a list of them, or one pair alone)."""
    mapping = dict(schema)
    schema.clear()
    columns = {"type": "array", "items": {"type": "string"}, "minItems": 1}
    schema["anyOf"] = [mapping, {"type": "array", "prefixItems": [columns, columns],
                                 "minItems": 2, "maxItems": 2,
                                 "description": "[[lhs columns], [rhs columns]]"}]


class FunctionalDependency(Model):
    """A functional dependency to check, `lhs -> rhs`: rows that agree on the `lhs` columns
    must agree on the `rhs` columns. Written as a mapping or as `[[lhs...], [rhs...]]`."""

    model_config = ConfigDict(json_schema_extra=_fd_schema)

    lhs: list[str] = Field(min_length=1)
    rhs: list[str] = Field(min_length=1)
    # the linked view's name (and its column's); default fd_<lhs>__<rhs>
    name: str | None = Field(None, pattern=NAME_PATTERN)

    @model_validator(mode="before")
    @classmethod
    def _from_pair(cls, v):
        return {"lhs": list(v[0]), "rhs": list(v[1])} if _is_fd_pair(v) else v

    @property
    def view_name(self) -> str:
        """The name of the view (and of the column) showing which rows violate it."""
        # (a name's characters only: a joined column's '.' separates a partial result's
        # parts in the capture, and a column's other characters would be no name's)
        return self.name or re.sub(r"[^A-Za-z0-9_-]", "_", f"fd_{'_'.join(self.lhs)}__{'_'.join(self.rhs)}")


FD_VIOLATES, FD_HOLDS = "violates", "holds"  # the bars of a functional dependency's view


class Profile(Model):
    """Data-profiling checks answered through lineage (Smoke §6.5.2): each is a column the
    capture computes and a linked categorical view over it."""

    fd: list[FunctionalDependency] = Field(default_factory=list, json_schema_extra=_fd_schema)
    # (a list of functional dependencies, or one pair [[lhs], [rhs]] alone)

    @field_validator("fd", mode="before")
    @classmethod
    def _one_pair(cls, v):
        return [v] if _is_fd_pair(v) else v  # one pair alone: a list of one


Row = Annotated[list[str], Field(min_length=1)]  # views side by side, left to right


class Section(Model):
    """Rows of views under an optional title (display only)."""

    title: DisplayText | None = None
    rows: list[Row] = Field(min_length=1)


class Workload(Model):
    """How people use the dashboard, beyond what its interactions declare: what capture
    keeps for the filters follows it (Smoke's workload-aware capture, SubZero's budget;
    docs/spec.md "workload")."""

    # a recorded session (docs/trace.md), relative to the spec's folder: the filters it
    # changes get clustered key copies, the most changed first; the others get none
    trace: FilePath | None = None
    # bytes of clustered key copies at most (e.g. "6GB"): the most used filters' first
    copy_budget: str | int | None = None

    @field_validator("copy_budget", mode="before")
    @classmethod
    def _size(cls, v):
        if v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0) or (
                isinstance(v, str) and re.fullmatch(SIZE_PATTERN, v)):
            return v
        kind, msg = "size", "expected a size in bytes: a number with an optional unit (KB, MB, GB, TB), e.g. 6GB; got {got}"
        raise PydanticCustomError(kind, msg, {"got": repr(v)})


class DashboardSpec(Model):
    """A whole dashboard's spec: its source, its views and the interactions it allows.
    (`brushfire.Dashboard` is the opened dashboard: this spec, its plan and its lineage.)"""

    model_config = ConfigDict(title="Dashboard")  # as messages name it: the YAML's top level

    name: str = Field(pattern=NAME_PATTERN)
    title: DisplayText | None = None
    source: Source
    views: list[View] = Field(min_length=1)
    interactions: Interactions = Interactions()
    profile: Profile | None = None
    workload: Workload | None = None
    # display only: where the page puts the views (sections of rows); views it leaves out
    # follow, in spec order
    layout: list[Section] | None = None

    def view(self, name: str) -> HistogramView | TemporalView | CategoricalView | HeatmapView:
        for v in self.views:
            if v.name == name:
                return v
        msg = f"no view named {name!r}; views: {', '.join(v.name for v in self.views)}"
        raise KeyError(msg)

    def parameter(self, name: str) -> Parameter:
        for p in self.interactions.parameters:
            if p.name == name:
                return p
        msg = f"no parameter named {name!r}"
        raise KeyError(msg)
