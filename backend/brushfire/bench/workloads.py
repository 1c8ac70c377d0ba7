"""Workload generators: pure functions from a dashboard's description (the JSON of
`GET /api/dashboards/<name>`) to traces. Randomized ones take a seed; none reads a clock.

- slide:  the Mosaic selection benchmark: on each interval view, brushes 10, 20 and 30 %
          as wide as the view's extent move across it one pixel of a 600-pixel view at a
          time, each sweep ending with a clear;
- multi:  sessions with several brushes active, one being dragged, the dragged view
          switching now and then;
- clicks: selects on categorical views: single bars, and shift-click style growing and
          shrinking sets of bars ('(other)' included);
- params: dropdown parameter changes while a brush is held.
All brush edges lie on pixel edges (`pixels.edges`), as a brush drawn in a browser does.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from brushfire.bench import pixels
from brushfire.bench.trace import Event, Trace

FRAME_MS = 1000 / 60  # a drag sends at most one brush per animation frame
PAUSE_MS = 500.0  # between gestures
CLICK_MS = 700.0


@dataclass(frozen=True)
class ViewInfo:
    name: str
    type: str
    brush: str | None  # interval, points, rect, or None (not brushable)
    labels: list

    @property
    def temporal(self) -> bool:
        return self.type == "temporal"


@dataclass(frozen=True)
class ParameterInfo:
    name: str
    widget: str
    values: list | None  # a dropdown's values


@dataclass(frozen=True)
class DashboardInfo:
    """What the generators need from a dashboard's description."""

    name: str
    views: tuple[ViewInfo, ...]
    parameters: tuple[ParameterInfo, ...]

    @classmethod
    def from_description(cls, d: dict) -> DashboardInfo:
        views = tuple(ViewInfo(v["name"], v["type"], v["brush"], v["labels"]) for v in d["views"])
        params = tuple(ParameterInfo(p["name"], p["widget"], p.get("values"))
                       for p in d["parameters"])
        return cls(d["name"], views, params)

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
    return pixels.edges(*pixels.extent(view.type, view.labels), n_pixels)


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
    interval view for the second half; then a clear. Slider parameters are left alone:
    a description gives no range for them."""
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
        value = None if rng.random() < 0.1 else rng.choice(p.values)
        clock.add({"type": "parameter", "name": p.name, "value": value}, CLICK_MS)
    clock.add({"type": "clear"}, CLICK_MS)
    return Trace(info.name, tuple(clock.events), {"workload": "params", "seed": seed})


WORKLOADS: dict[str, Callable[..., Trace]] = {"slide": slide, "multi": multi, "clicks": clicks,
                                               "params": params}
