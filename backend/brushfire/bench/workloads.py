"""Workload generators: pure functions from a dashboard's description (the JSON of
`GET /api/dashboards/<name>`) to traces. Randomized ones take a seed; none reads a clock.

- slide:  the Mosaic selection benchmark: on each interval view, brushes 10, 20 and 30 %
          as wide as the view's extent move across it one pixel of a 600-pixel view at a
          time, each sweep ending with a clear;
- multi:  sessions with several brushes active, one being dragged, the dragged view
          switching now and then;
- clicks: selects on categorical views: single bars, and shift-click style growing and
          shrinking sets of bars ('(other)' included);
- params: dropdown parameter changes while a brush is held;
- human:  how people brush a crossfilter dashboard of many views (below);
- lookups: lineage queries (details pages, linked highlighting) among random filters.
- wide:   the engine's worst case, not a person: every brushable view brushed at once,
          most brushes wide, and each event re-placing one view's brush in one jump
          (`wide`, WIDE_SHAPES).
`fixed_state` makes a selection state of brushes held at random places, for a trace to
start from (`brushfire bench --state`; perf/bench_engine.py slides among them).
The brush edges of slide, multi and params lie on pixel edges (`pixels.edges`); human's
lie anywhere, as a real pointer's do.

The human model. Real sessions (issue 10: 55 sessions, 73,793 brush events on six linked
histograms) are not smooth slides. A session is a sequence of gestures on the interval
(histogram, temporal) and rect (heatmap) views, each a drag sending one brush per
animation frame (60 Hz, 16.7 ms apart), with a pause of 80-450 ms (sometimes seconds)
between gestures; the next gesture is on another view 85 % of the time, so the dragged
view switches every few hundred milliseconds. The user works with a goal of 2 to
`max_brushes` (6) brushes, redrawn now and then (4 % of steps, and at clear-all): below
it the next view is an unbrushed one (a draw), at it a brushed one, above it one brush is
cleared. Brushes not being dragged stay where they were left, so 1-5 other brushes are
fixed during almost every drag. The gestures:

- draw (on a view without a brush, or 35 % of the time over an existing one): the first
  message is zero-width, `[a, a]` (85 %), then the interval grows; in 35 % of draws it
  jumps in one frame from zero-width (or from no brush at all) to 10-60 % of the extent
  (a fast flick between two frames), then settles. 40 % of draws go leftwards and send
  the interval inverted, `[anchor, pointer]` with lo > hi, as Vega-Lite does; 30 % of those
  turn round and cross over the anchor (lo < hi again); 60 % of drags that end inverted
  are followed by the sorted interval on release (an empty selection becoming a wide
  one in one step). 15 % of draws overshoot the view, so the brush ends on its edge;
- move (50 % on a brushed view): the brush is dragged whole, its width kept, clamped to
  the view;
- resize (15 %): one edge is dragged, possibly across the other (inverted);
- clear of one view (1 % of steps, and when over the goal) and clear-all (0.4 %);
- clicks on categorical bars (3 %) and parameter changes (2 %), when the dashboard has
  them.
Pointer positions are arbitrary floats (sub-pixel, with a little hand tremor along a
minimum-jerk path), so bounds are not on pixel edges: numbers keep six significant
digits of the extent, temporal bounds are ISO times to the second. Bounds stay inside
the extent. Heatmaps get rect brushes (`interval` and `y`), each axis drawn as above.
"""

from __future__ import annotations

import inspect
import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from brushfire.bench import pixels
from brushfire.bench.trace import Event, Trace
from brushfire.spec.models import CALENDAR_PARTS

FRAME_MS = 1000 / 60  # a drag sends at most one brush per animation frame
PAUSE_MS = 500.0  # between gestures
CLICK_MS = 700.0


@dataclass(frozen=True)
class ViewInfo:
    name: str
    type: str
    brush: str | None  # interval, points, rect, or None (not brushable)
    labels: list
    unit: str | None = None  # a temporal view's unit

    @property
    def part(self) -> tuple[int, int] | None:
        """A calendar part's (first value, number of values): brushed by numbers."""
        if self.type != "temporal" or self.unit not in CALENDAR_PARTS:
            return None
        first, names = CALENDAR_PARTS[self.unit]
        return first, len(names)

    @property
    def temporal(self) -> bool:
        """Brushed by times (a calendar part's view is brushed by its values)."""
        return self.type == "temporal" and self.part is None


@dataclass(frozen=True)
class ParameterInfo:
    name: str
    widget: str
    values: list | None  # a dropdown's values
    range: list | None = None  # a slider's [min, max]
    op: str = "eq"  # between: a slider's value is [lo, hi]
    multiple: bool = False  # a multi-select dropdown: its value is a list

    def pick(self, rng: random.Random):
        """A value a user would pick: one of a dropdown's values (one to three for a
        multi-select), a number in a slider's range ([lo, hi] for a between slider)."""
        if self.widget == "dropdown":
            if self.multiple:
                return rng.sample(self.values, k=min(len(self.values), rng.randint(1, 3)))
            return rng.choice(self.values)
        lo, hi = self.range
        times = isinstance(lo, str)  # a time slider: ISO instants, picked to the second

        def number():
            if times:
                a, b = pixels.to_micros(lo) // 1_000_000, pixels.to_micros(hi) // 1_000_000
                return pixels.to_iso(rng.randint(a, b) * 1_000_000)
            x = rng.uniform(lo, hi)
            return round(x) if isinstance(lo, int) and isinstance(hi, int) else round(x, 3)

        return sorted([number(), number()]) if self.op == "between" else number()


@dataclass(frozen=True)
class DashboardInfo:
    """What the generators need from a dashboard's description."""

    name: str
    views: tuple[ViewInfo, ...]
    parameters: tuple[ParameterInfo, ...]
    highlight_sources: tuple[str, ...] = ()
    details: bool = False  # details on demand declared

    @classmethod
    def from_description(cls, d: dict) -> DashboardInfo:
        views = tuple(ViewInfo(v["name"], v["type"], v["brush"], v["labels"], v.get("unit"))
                      for v in d["views"])
        params = tuple(ParameterInfo(p["name"], p["widget"], p.get("values"), p.get("range"),
                                     p.get("op") or "eq", bool(p.get("multiple")))
                       for p in d["parameters"])
        sources = tuple(dict.fromkeys(h["source"] for h in d.get("highlight") or ()))
        return cls(d["name"], views, params, sources, bool(d.get("details")))

    def interval_views(self, names: list[str] | None = None) -> list[ViewInfo]:
        out = [v for v in self.views if v.brush == "interval" and v.labels
               and (names is None or v.name in names)]
        if names:
            unknown = set(names) - {v.name for v in out}
            if unknown:
                msg = f"not interval-brushable views: {sorted(unknown)}"
                raise ValueError(msg)
        return out


class _Clock:
    """Event times: advance by a gap before each event."""

    def __init__(self) -> None:
        self.t = 0.0
        self.events: list[Event] = []

    def add(self, message: dict, gap: float) -> None:
        if self.events:
            self.t += gap
        self.events.append(Event(round(self.t, 3), message))


def brush_message(view: ViewInfo, grid: list, a: int, b: int) -> dict:
    """A brush from pixel edge a to pixel edge b."""
    return {"type": "brush", "view": view.name,
            "interval": [pixels.wire(grid[a], view.temporal), pixels.wire(grid[b], view.temporal)]}


def grid_of(view: ViewInfo, n_pixels: int = pixels.PIXELS) -> list:
    return pixels.edges(*extent_of(view), n_pixels)


def slide(info: DashboardInfo, *, widths: tuple[float, ...] = (0.1, 0.2, 0.3),
          views: list[str] | None = None, n_pixels: int = pixels.PIXELS) -> Trace:
    """For each interval view and width: the brush moved one pixel per frame from the left
    edge to the right edge of the view, then cleared."""
    clock = _Clock()
    for view in info.interval_views(views):
        grid = grid_of(view, n_pixels)
        for w in widths:
            width = round(w * n_pixels)
            for i, a in enumerate(range(n_pixels - width + 1)):
                clock.add(brush_message(view, grid, a, a + width), PAUSE_MS if i == 0 else FRAME_MS)
            clock.add({"type": "clear", "view": view.name}, PAUSE_MS)
    return Trace(info.name, tuple(clock.events),
                 {"workload": "slide", "widths": list(widths), "pixels": n_pixels})


def multi(info: DashboardInfo, *, seed: int = 7, events: int = 600, max_active: int = 3,
          views: list[str] | None = None, n_pixels: int = pixels.PIXELS) -> Trace:
    """Random brushing sessions: brushes are placed on interval views (up to `max_active`
    at once), one of them is dragged a few pixels per frame for a while, then another
    view is dragged, placed or cleared; everything is cleared at the end."""
    rng = random.Random(seed)
    candidates = info.interval_views(views)
    if not candidates:
        msg = "the multi workload needs an interval-brushable view"
        raise ValueError(msg)
    grids = {v.name: grid_of(v, n_pixels) for v in candidates}
    active: dict[str, tuple[int, int]] = {}  # view -> pixel edges of its brush
    clock = _Clock()
    while len(clock.events) < events:
        view = rng.choice(candidates)
        if view.name in active and len(active) > 1 and rng.random() < 0.15:
            del active[view.name]
            clock.add({"type": "clear", "view": view.name}, PAUSE_MS)
            continue
        if view.name not in active and len(active) >= max_active:
            gone = rng.choice(sorted(active))
            del active[gone]
            clock.add({"type": "clear", "view": gone}, PAUSE_MS)
        if view.name not in active:
            width = rng.randint(n_pixels // 10, n_pixels // 2)
            a = rng.randint(0, n_pixels - width)
            active[view.name] = (a, a + width)
            clock.add(brush_message(view, grids[view.name], a, a + width), PAUSE_MS)
        a, b = active[view.name]
        step = rng.choice([-3, -2, -1, 1, 2, 3])
        for _ in range(rng.randint(20, 80)):  # one drag
            if a + step < 0 or b + step > n_pixels:
                step = -step
            a, b = a + step, b + step
            clock.add(brush_message(view, grids[view.name], a, b), FRAME_MS)
        active[view.name] = (a, b)
    clock.add({"type": "clear"}, PAUSE_MS)
    return Trace(info.name, tuple(clock.events), {"workload": "multi", "seed": seed})


def clicks(info: DashboardInfo, *, seed: int = 7, events: int = 200) -> Trace:
    """Clicks on categorical bars: a plain click selects one bar (or clears when it is the
    only one selected), a shift-click adds or removes a bar; then a clear."""
    rng = random.Random(seed)
    views = [v for v in info.views if v.brush == "points" and v.labels]
    if not views:
        msg = "the clicks workload needs a categorical view with a points brush"
        raise ValueError(msg)
    chosen: dict[str, list] = {}
    clock = _Clock()
    while len(clock.events) < events - 1:
        view = rng.choice(views)
        label = rng.choice(view.labels)
        current = chosen.get(view.name, [])
        if rng.random() < 0.5:  # shift-click: toggle one bar in the set
            values = [x for x in current if x != label] if label in current else current + [label]
        else:
            values = [] if current == [label] else [label]
        if values:
            chosen[view.name] = values
            clock.add({"type": "select", "view": view.name, "values": values}, CLICK_MS)
        else:
            chosen.pop(view.name, None)
            clock.add({"type": "clear", "view": view.name}, CLICK_MS)
    clock.add({"type": "clear"}, CLICK_MS)
    return Trace(info.name, tuple(clock.events), {"workload": "clicks", "seed": seed})


def params(info: DashboardInfo, *, seed: int = 7, events: int = 100,
           n_pixels: int = pixels.PIXELS) -> Trace:
    """Dropdown parameter changes (a value, sometimes none), with a brush held on the first
    interval view for the second half; then a clear. Slider parameters are left alone
    (`human` moves them, within the range the description gives)."""
    rng = random.Random(seed)
    dropdowns = [p for p in info.parameters if p.widget == "dropdown" and p.values]
    if not dropdowns:
        msg = "the params workload needs a dropdown parameter"
        raise ValueError(msg)
    held = info.interval_views()[:1]
    clock = _Clock()
    for i in range(events - 1):
        if held and i == events // 2:
            grid = grid_of(held[0], n_pixels)
            a = rng.randint(0, n_pixels // 2)
            clock.add(brush_message(held[0], grid, a, a + n_pixels // 4), CLICK_MS)
            continue
        p = rng.choice(dropdowns)
        value = None if rng.random() < 0.1 else p.pick(rng)
        clock.add({"type": "parameter", "name": p.name, "value": value}, CLICK_MS)
    clock.add({"type": "clear"}, CLICK_MS)
    return Trace(info.name, tuple(clock.events), {"workload": "params", "seed": seed})


# --- human ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Axis:
    """A brushable axis: its extent in data units drawn over `pixels` pixels. Positions
    are pixel floats in [0, pixels]; `value` turns one into a bound as a message carries it."""

    lo: float | int
    hi: float | int
    temporal: bool
    pixels: int

    def value(self, p: float):
        p = min(max(p, 0.0), float(self.pixels))
        span = self.hi - self.lo
        if self.temporal:  # microseconds, to the second
            us = self.lo + round(span * p / self.pixels / 1e6) * 1_000_000
            return pixels.to_iso(min(us, self.hi))
        digits = max(0, 6 - math.ceil(math.log10(span)))
        return min(max(round(self.lo + span * p / self.pixels, digits), self.lo), self.hi)


def axes_of(view: ViewInfo, n_pixels: int = pixels.PIXELS) -> tuple[Axis, ...]:
    """One axis for an interval view, x and y for a heatmap (read off its cell labels)."""
    if view.brush == "rect":
        xs = [c[0] for c in view.labels]
        ys = [c[1] for c in view.labels]
        return (Axis(min(x[0] for x in xs), max(x[1] for x in xs), False, n_pixels),
                Axis(min(y[0] for y in ys), max(y[1] for y in ys), False, n_pixels))
    return (Axis(*extent_of(view), view.temporal, n_pixels),)


def extent_of(view: ViewInfo) -> tuple:
    """An interval view's extent in the units its brushes take: bin edges, UTC microseconds,
    or for a calendar part its values (bars centred on them, as the page draws them)."""
    if view.part is not None:
        first, n = view.part
        return first - 0.5, first + n - 0.5
    return pixels.extent(view.type, view.labels)


Pairs = tuple[tuple[float, float], ...]  # a brush in pixels: (first, second) per axis


class _Human:
    """One simulated user: the brushes on screen (in pixels), what is selected, and the
    gestures that change them, each appending messages to the clock."""

    def __init__(self, info: DashboardInfo, rng: random.Random, views: list[ViewInfo],
                 n_pixels: int, max_brushes: int) -> None:
        self.rng = rng
        self.views = views
        self.axes = {v.name: axes_of(v, n_pixels) for v in views}
        self.points = [v for v in info.views if v.brush == "points" and v.labels]
        self.params = [p for p in info.parameters
                       if (p.widget == "dropdown" and p.values) or (p.widget == "slider" and p.range)]
        self.max_brushes = min(max_brushes, len(views))
        self.goal = self.new_goal()
        self.brushes: dict[str, Pairs] = {}
        self.selected: dict[str, list] = {}
        self.clock = _Clock()
        self.last: str | None = None

    # -- one step of the session --

    def step(self) -> None:
        rng, r = self.rng, self.rng.random()
        if self.points and r < 0.03:
            return self.click()
        if self.params and 0.03 <= r < 0.05:
            return self.parameter()
        if 0.05 <= r < 0.054 and (self.brushes or self.selected):
            self.goal = self.new_goal()
            return self.clear_all()
        if 0.054 <= r < 0.094:
            self.goal = self.new_goal()
        if len(self.brushes) > self.goal or (0.094 <= r < 0.104 and len(self.brushes) >= 2):
            return self.clear(rng.choice(sorted(self.brushes)))
        view = self.pick_view()
        pause = rng.uniform(1000, 5000) if rng.random() < 0.03 else rng.uniform(80, 450)
        g = rng.random()
        if view.name not in self.brushes or g < 0.35:
            frames = self.draw(view)
        elif g < 0.85:
            frames = self.move(view)
        else:
            frames = self.resize(view)
        self.drag(view, frames, pause)
        self.last = view.name

    def new_goal(self) -> int:
        """How many brushes the user is working with for a while (2 to max_brushes)."""
        return self.rng.randint(min(2, self.max_brushes), self.max_brushes)

    def pick_view(self) -> ViewInfo:
        """The view of the next drag: the same as the last one 15 % of the time; else
        another one, unbrushed while there are fewer brushes than the user's goal."""
        rng = self.rng
        if self.last is not None and rng.random() < 0.15:
            return next(v for v in self.views if v.name == self.last)
        others = [v for v in self.views if v.name != self.last] or self.views
        fresh = [v for v in others if v.name not in self.brushes]
        held = [v for v in others if v.name in self.brushes]
        if fresh and (len(self.brushes) < self.goal or not held):
            return rng.choice(fresh)
        return rng.choice(held)

    def drag(self, view: ViewInfo, frames: list[Pairs], pause: float) -> None:
        """Send each frame's brush one animation frame apart (frames the pointer did not
        change are not sent); the brush stays at the last frame."""
        axes, sent = self.axes[view.name], None
        for pairs in frames:
            pairs = tuple((_clamp(a, ax), _clamp(b, ax)) for (a, b), ax in zip(pairs, axes, strict=True))
            message = {"type": "brush", "view": view.name,
                       "interval": [axes[0].value(pairs[0][0]), axes[0].value(pairs[0][1])]}
            if len(axes) == 2:
                message["y"] = [axes[1].value(pairs[1][0]), axes[1].value(pairs[1][1])]
            if message == sent:
                continue
            self.clock.add(message, FRAME_MS if sent else pause)
            sent = message
            self.brushes[view.name] = pairs

    # -- gestures: lists of frames, in pixels --

    def draw(self, view: ViewInfo) -> list[Pairs]:
        rng = self.rng
        zero_start, jump = rng.random() < 0.85, rng.random() < 0.35
        left = [rng.random() < 0.4 for _ in self.axes[view.name]]
        crossover = [lf and rng.random() < 0.3 for lf in left]
        overshoot = rng.random() < 0.15
        n = rng.randint(2, 12) if jump else rng.randint(6, 40)  # frames after the first (two)
        paths = [self.draw_axis(ax, lf, cross, jump, overshoot, n)
                 for ax, lf, cross in zip(self.axes[view.name], left, crossover, strict=True)]
        frames = [tuple(p[i] for p in paths) for i in range(len(paths[0]))]
        if not zero_start:
            frames = frames[1:]
        last = frames[-1]
        if any(a > b for a, b in last) and rng.random() < 0.6:  # released: sorted
            frames.append(tuple((min(a, b), max(a, b)) for a, b in last))
        return frames

    def draw_axis(self, ax: Axis, left: bool, crossover: bool, jump: bool, overshoot: bool,
                  n: int) -> list[tuple[float, float]]:
        """One axis of a draw: the zero-width start, then the pointer's positions."""
        rng, w = self.rng, float(ax.pixels)
        sign = -1.0 if left else 1.0
        if jump:
            length = rng.uniform(0.1, 0.6) * w
            a = rng.uniform(length, w) if left else rng.uniform(0.0, w - length)
            end = a + sign * length
            settle = _pointer(rng, end, end + sign * length * rng.uniform(-0.08, 0.08), n)
            return [(a, a), (a, end)] + [(a, b) for b in settle]
        a = rng.uniform(0.0, w)
        if overshoot:
            target = (-1.0 if left else w + 1.0) + sign * rng.uniform(0, 40)
        else:
            target = a + sign * rng.uniform(0.03, 0.6) * w
        if crossover:
            turn = max(a - rng.uniform(0.03, 0.3) * w, 0.0)
            back = min(a + rng.uniform(0.03, 0.4) * w, w)
            m = max(2, n // 2)
            ends = _pointer(rng, a, turn, m) + _pointer(rng, turn, back, max(2, n - m))
        else:
            ends = _pointer(rng, a, target, n)
        return [(a, a)] + [(a, b) for b in ends]

    def move(self, view: ViewInfo) -> list[Pairs]:
        """Drag the whole brush, keeping its width; it stops at the view's edges."""
        rng, pairs = self.rng, self.brushes[view.name]
        n = rng.randint(6, 40)
        paths = []
        for (a, b), ax in zip(pairs, self.axes[view.name], strict=True):
            lo, hi = -min(a, b), ax.pixels - max(a, b)
            offsets = _pointer(rng, 0.0, rng.gauss(0.0, 0.12 * ax.pixels), n)
            paths.append([(a + o, b + o) for o in (min(max(o, lo), hi) for o in offsets)])
        return [tuple(p[i] for p in paths) for i in range(n)]

    def resize(self, view: ViewInfo) -> list[Pairs]:
        """Drag one edge (a corner of a rect); it may cross the other edge."""
        rng, pairs = self.rng, self.brushes[view.name]
        n = rng.randint(6, 40)
        paths = []
        for (a, b), ax in zip(pairs, self.axes[view.name], strict=True):
            first = rng.random() < 0.5
            edge = a if first else b
            ends = _pointer(rng, edge, edge + rng.gauss(0.0, 0.1 * ax.pixels), n)
            paths.append([(e, b) for e in ends] if first else [(a, e) for e in ends])
        return [tuple(p[i] for p in paths) for i in range(n)]

    # -- discrete messages --

    def clear(self, view: str) -> None:
        self.brushes.pop(view, None)
        self.selected.pop(view, None)
        self.clock.add({"type": "clear", "view": view}, self.rng.uniform(150, 600))

    def clear_all(self) -> None:
        self.brushes.clear()
        self.selected.clear()
        self.clock.add({"type": "clear"}, self.rng.uniform(150, 600))

    def click(self) -> None:
        """A click on a categorical bar (selects it, or clears the view when it was the
        only one selected); half the time a shift-click toggling it in the set."""
        rng = self.rng
        view = rng.choice(self.points)
        label = rng.choice(view.labels)
        current = self.selected.get(view.name, [])
        if rng.random() < 0.5:
            values = [x for x in current if x != label] if label in current else current + [label]
        else:
            values = [] if current == [label] else [label]
        if not values:
            return self.clear(view.name)
        self.selected[view.name] = values
        self.clock.add({"type": "select", "view": view.name, "values": values}, rng.uniform(300, 1200))

    def parameter(self) -> None:
        rng = self.rng
        p = rng.choice(self.params)
        value = None if rng.random() < 0.1 else p.pick(rng)
        self.clock.add({"type": "parameter", "name": p.name, "value": value}, rng.uniform(300, 1200))


def _brushable(info: DashboardInfo, views: list[str] | None, workload: str) -> list[ViewInfo]:
    """The interval and rect views a workload brushes (`views`: only those)."""
    brushable = [v for v in info.views if v.labels and v.brush in ("interval", "rect")]
    if views is not None:
        unknown = set(views) - {v.name for v in brushable}
        if unknown:
            msg = f"not interval- or rect-brushable views: {sorted(unknown)}"
            raise ValueError(msg)
        brushable = [v for v in brushable if v.name in views]
    if not brushable:
        msg = f"the {workload} workload needs an interval- or rect-brushable view"
        raise ValueError(msg)
    return brushable


def _pointer(rng: random.Random, start: float, end: float, n: int) -> list[float]:
    """n pointer positions after `start`, along a minimum-jerk path to `end`, with a
    little tremor (sub-pixel)."""
    out = []
    for i in range(1, n + 1):
        s = i / n
        s = s * s * s * (10 - 15 * s + 6 * s * s)
        out.append(start + (end - start) * s + rng.gauss(0.0, 0.3))
    return out


def _clamp(p: float, ax: Axis) -> float:
    return min(max(p, 0.0), float(ax.pixels))


def human(info: DashboardInfo, *, seed: int = 7, events: int = 50_000,
          views: list[str] | None = None, n_pixels: int = pixels.PIXELS,
          max_brushes: int = 6) -> Trace:
    """A session of `events` messages brushed as people do (the model is in the module
    docstring); the last is a clear of everything."""
    rng = random.Random(seed)
    user = _Human(info, rng, _brushable(info, views, "human"), n_pixels, max_brushes)
    while len(user.clock.events) < events - 1:
        user.step()
    del user.clock.events[max(events - 1, 0):]
    user.clock.t = user.clock.events[-1].t if user.clock.events else 0.0
    user.clock.add({"type": "clear"}, PAUSE_MS)
    return Trace(info.name, tuple(user.clock.events),
                 {"workload": "human", "seed": seed, "pixels": n_pixels, "max_brushes": max_brushes})


# wide: the shapes a jump re-places a brush with, and how often
WIDE_SHAPES = {"whole": 0.25, "wide": 0.25, "zero-width": 0.15, "middle": 0.20, "narrow": 0.15}


def _wide_pair(rng: random.Random, shape: str, n: int) -> tuple[float, float]:
    """A brush of `shape` along an axis of n pixels, as its (first, last) pixel: the whole
    extent, 0-20 % to 80-100 %, [a, a], 10-50 % wide, or 5 % wide."""
    if shape == "whole":
        return 0.0, float(n)
    if shape == "wide":
        return rng.uniform(0, 0.2) * n, rng.uniform(0.8, 1.0) * n
    if shape == "zero-width":
        a = rng.uniform(0, n)
        return a, a
    a = rng.uniform(0, 0.5 if shape == "middle" else 0.95) * n
    return a, min(float(n), a + (rng.uniform(0.1, 0.5) if shape == "middle" else 0.05) * n)


def wide(info: DashboardInfo, *, seed: int = 7, events: int = 2_000,
         views: list[str] | None = None, n_pixels: int = pixels.PIXELS) -> Trace:
    """The worst case of a crossfilter: first every interval and rect view is brushed wide,
    then each event re-places a random view's brush in one jump, each axis with a shape of
    WIDE_SHAPES (a quarter the whole extent, a quarter wide, some zero-width), while all
    the other brushes stay, mostly wide: every update reads most rows under several
    filters. No person brushes like this (`human` is how people do)."""
    rng = random.Random(seed)
    brushable = _brushable(info, views, "wide")

    def brush(view: ViewInfo, shapes: list[str]) -> dict:
        axes = axes_of(view, n_pixels)
        pairs = [_wide_pair(rng, shape, n_pixels) for shape in shapes[:len(axes)]]
        message = {"type": "brush", "view": view.name,
                   "interval": [axes[0].value(pairs[0][0]), axes[0].value(pairs[0][1])]}
        if len(axes) == 2:
            message["y"] = [axes[1].value(pairs[1][0]), axes[1].value(pairs[1][1])]
        return message

    clock = _Clock()
    for view in brushable:
        clock.add(brush(view, ["wide", "wide"]), PAUSE_MS)
    shapes, weights = list(WIDE_SHAPES), list(WIDE_SHAPES.values())
    while len(clock.events) < events - 1:
        view = rng.choice(brushable)
        clock.add(brush(view, rng.choices(shapes, weights, k=2)), PAUSE_MS)
    clock.add({"type": "clear"}, PAUSE_MS)
    return Trace(info.name, tuple(clock.events), {"workload": "wide", "seed": seed, "pixels": n_pixels})


def fixed_state(info: DashboardInfo, *, brushes: int = 2, points: int = 0, exclude: str | None = None,
                seed: int = 7, n_pixels: int = pixels.PIXELS) -> dict:
    """A selection state (tagged filters) of `brushes` interval brushes, 15-50 % of their
    view wide, on pixel edges, on interval views other than `exclude`; plus, with
    `points`, that many of the ten busiest bars of the first categorical view."""
    rng = random.Random(seed)
    views = [v for v in info.interval_views() if v.name != exclude]
    state: dict = {}
    for view in sorted(rng.sample(views, min(brushes, len(views))), key=views.index):
        width = rng.randint(int(0.15 * n_pixels), n_pixels // 2)
        a = rng.randint(0, n_pixels - width)
        state[view.name] = {"interval": brush_message(view, grid_of(view, n_pixels), a, a + width)["interval"]}
    categorical = [v for v in info.views if v.brush == "points" and v.labels]
    if points and categorical:
        busiest = [x for x in categorical[0].labels if x != "(other)"][:10]
        state[categorical[0].name] = {"values": sorted(rng.sample(busiest, min(points, len(busiest))))}
    return state


def lookups(info: DashboardInfo, *, seed: int = 7, events: int = 20) -> Trace:
    """Lineage queries among filters, `events` rounds of: a random state (a `filters`
    message: one brush, or three and a categorical pick), the first and the next details
    page, and a highlight from two bars of each highlight source."""
    if not info.details and not info.highlight_sources:
        msg = "the lookups workload needs details or highlight declared"
        raise ValueError(msg)
    rng = random.Random(seed)
    clock = _Clock()
    sources = {v.name: v for v in info.views if v.name in info.highlight_sources}
    for i in range(events):
        state = fixed_state(info, brushes=1 if i % 2 == 0 else 3, points=0 if i % 2 == 0 else 3,
                            seed=rng.randrange(2**31))
        clock.add({"type": "filters", "filters": state}, PAUSE_MS)
        if info.details:
            clock.add({"type": "details", "page": 0}, CLICK_MS)
            clock.add({"type": "details", "page": 1}, CLICK_MS)
        for name, view in sources.items():
            bars = sorted(rng.sample(range(len(view.labels)), min(2, len(view.labels))))
            clock.add({"type": "highlight", "source": name, "bars": bars}, CLICK_MS)
    clock.add({"type": "clear"}, PAUSE_MS)
    return Trace(info.name, tuple(clock.events), {"workload": "lookups", "seed": seed})


WORKLOADS: dict[str, Callable[..., Trace]] = {"slide": slide, "multi": multi, "clicks": clicks,
                                               "params": params, "human": human, "lookups": lookups,
                                               "wide": wide}


def options(workload: str) -> dict[str, object]:
    """The harness's options (views, seed, events) the workload's generator takes, with
    its defaults: read from its signature, so a new workload needs no other list."""
    params = inspect.signature(WORKLOADS[workload]).parameters
    return {name: params[name].default for name in ("views", "seed", "events") if name in params}
