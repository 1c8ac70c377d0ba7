"""Workload generators: pure functions from a dashboard description to valid traces."""

from __future__ import annotations

import pytest

from brushfire import protocol
from brushfire.bench import pixels
from brushfire.bench.trace import parse_trace
from brushfire.bench.workloads import DashboardInfo, clicks, multi, params, slide

DAYS = [f"2001-01-{d:02d}T00:00:00+00:00" for d in range(1, 31)]
DESCRIPTION = {  # the shape of GET /api/dashboards/<name>, cut down
    "name": "flights", "title": "t", "rows": 10,
    "views": [
        {"name": "delay", "type": "histogram", "brush": "interval",
         "labels": [[-60.0 + 10 * i, -50.0 + 10 * i] for i in range(24)]},
        {"name": "origin", "type": "categorical", "brush": "points",
         "labels": ["ORD", "DFW", "ATL", "(other)"]},
        {"name": "day", "type": "temporal", "brush": "interval", "labels": DAYS},
        {"name": "mean", "type": "histogram", "brush": None, "labels": [[0.0, 1.0], [1.0, 2.0]]},
    ],
    "parameters": [{"name": "destination", "field": "destination", "widget": "dropdown",
                    "op": "eq", "values": ["LAX", "SFO", "JFK"]}],
}
INFO = DashboardInfo.from_description(DESCRIPTION)


def test_slide_moves_each_width_across_the_extent_one_pixel_at_a_time():
    trace = slide(INFO)
    sweeps, current = [], []
    for e in trace.events:
        protocol.parse(e.message)
        if e.message["type"] == "clear":
            assert current and e.message["view"] == current[0]["view"]
            sweeps.append(current)
            current = []
        else:
            current.append(e.message)
    assert not current  # every sweep ends with a clear
    assert [(s[0]["view"], len(s)) for s in sweeps] == [
        ("delay", 541), ("delay", 481), ("delay", 421), ("day", 541), ("day", 481), ("day", 421)]
    for sweep, width in zip(sweeps, [60, 120, 180] * 2, strict=True):
        view = INFO.views[0] if sweep[0]["view"] == "delay" else INFO.views[2]
        grid = pixels.edges(*pixels.extent(view.type, view.labels))
        values = [[pixels.to_micros(x) if view.temporal else x for x in m["interval"]] for m in sweep]
        assert values == [[grid[i], grid[i + width]] for i in range(len(sweep))]  # 1-px steps
        assert values[0][0] == grid[0] and values[-1][1] == grid[-1]  # the whole extent
    delay = [m["interval"] for m in sweeps[0]]
    assert delay[0] == [-60.0, -36.0] and delay[1] == [-59.6, -35.6]  # 10 % of 240, 0.4 per pixel
    assert sweeps[3][0]["interval"] == ["2001-01-01T00:00:00+00:00", "2001-01-04T00:00:00+00:00"]
    times = [e.t for e in trace.events]
    assert times == sorted(times) and times[1] - times[0] == pytest.approx(1000 / 60, abs=1e-3)


def test_slide_can_be_limited_to_some_views_and_widths():
    trace = slide(INFO, views=["day"], widths=(0.5,))
    assert len(trace.events) == 301 + 1
    with pytest.raises(ValueError, match="not interval-brushable views: \\['origin'\\]"):
        slide(INFO, views=["origin"])


def test_multi_keeps_several_brushes_with_one_moving_and_is_seeded():
    trace = multi(INFO, seed=3, events=400)
    assert trace == multi(INFO, seed=3, events=400)
    assert trace != multi(INFO, seed=4, events=400)
    parse_trace(trace.to_json())  # every message valid
    active: dict[str, list] = {}
    most, moved = 0, set()
    grids = {v.name: pixels.edges(*pixels.extent(v.type, v.labels)) for v in INFO.views if v.brush == "interval"}
    for e in trace.events:
        m = e.message
        if m["type"] == "brush":
            view = next(v for v in INFO.views if v.name == m["view"])
            lo, hi = (pixels.to_micros(x) if view.temporal else x for x in m["interval"])
            assert lo in grids[m["view"]] and hi in grids[m["view"]] and lo < hi  # pixel edges
            if m["view"] in active:
                moved.add(m["view"])
            active[m["view"]] = m["interval"]
        elif m["type"] == "clear":
            active = {} if "view" not in m else {k: v for k, v in active.items() if k != m["view"]}
        most = max(most, len(active))
    assert most == 2 and moved == {"delay", "day"}  # both views are dragged while the other holds
    assert len(trace.events) >= 400 and trace.events[-1].message == {"type": "clear"}


def test_clicks_select_single_bars_and_sets_of_bars():
    trace = clicks(INFO, seed=5, events=120)
    assert trace == clicks(INFO, seed=5, events=120)
    parse_trace(trace.to_json())
    selects = [e.message for e in trace.events if e.message["type"] == "select"]
    assert {m["view"] for m in selects} == {"origin"}
    assert all(set(m["values"]) <= {"ORD", "DFW", "ATL", "(other)"} for m in selects)
    sizes = {len(m["values"]) for m in selects}
    assert 1 in sizes and max(sizes) >= 3  # plain clicks and shift-click sets
    assert any("(other)" in m["values"] for m in selects)
    assert len(trace.events) == 120 and trace.events[-1].message == {"type": "clear"}


def test_params_change_dropdown_values_with_a_brush_held():
    trace = params(INFO, seed=2, events=60)
    assert trace == params(INFO, seed=2, events=60)
    parse_trace(trace.to_json())
    values = [e.message["value"] for e in trace.events if e.message["type"] == "parameter"]
    assert set(values) <= {"LAX", "SFO", "JFK", None} and len(set(values) - {None}) == 3
    kinds = [e.message["type"] for e in trace.events]
    assert kinds.count("brush") == 1 and kinds[-1] == "clear"


def test_generators_without_suitable_views_say_what_is_missing():
    bare = DashboardInfo("d", INFO.views[3:], ())
    with pytest.raises(ValueError, match="interval-brushable view"):
        multi(bare)
    with pytest.raises(ValueError, match="categorical view"):
        clicks(bare)
    with pytest.raises(ValueError, match="dropdown parameter"):
        params(bare)
