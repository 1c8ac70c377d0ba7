"""Workload generators: pure functions from a dashboard description to valid traces."""

from __future__ import annotations

from itertools import pairwise

import pytest

from brushfire import protocol, selection
from brushfire.bench import pixels
from brushfire.bench.trace import parse_trace
from brushfire.bench.workloads import (
    DashboardInfo,
    clicks,
    fixed_state,
    human,
    lookups,
    multi,
    options,
    params,
    slide,
    wide,
)

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


# --- human ----------------------------------------------------------------------------

def _hist(name: str, lo: float, step: float, n: int) -> dict:
    return {"name": name, "type": "histogram", "brush": "interval",
            "labels": [[lo + i * step, lo + (i + 1) * step] for i in range(n)]}


SIX = {  # six linked histograms as in issue 10, a temporal view, clicks and a parameter
    "name": "flights6", "title": "t", "rows": 10,
    "views": [_hist("distance", 0.0, 100.0, 30), _hist("dep_time", 0.0, 1.0, 24),
              _hist("arr_time", 0.0, 1.0, 24), _hist("dep_delay", -20.0, 5.0, 16),
              _hist("arr_delay", -20.0, 5.0, 16), _hist("air_time", 0.0, 20.0, 25),
              {"name": "day", "type": "temporal", "brush": "interval", "labels": DAYS},
              {"name": "origin", "type": "categorical", "brush": "points",
               "labels": ["ORD", "DFW", "ATL", "(other)"]}],
    "parameters": [{"name": "destination", "field": "destination", "widget": "dropdown",
                    "op": "eq", "values": ["LAX", "SFO", "JFK"]},
                   {"name": "max_delay", "field": "delay", "widget": "slider", "op": "lte",
                    "range": [-20, 300]}],
}
SIX_INFO = DashboardInfo.from_description(SIX)
TAXI = {  # two 100 x 100 heatmaps and three histograms
    "name": "taxi", "title": "t", "rows": 10,
    "views": [{"name": loc, "type": "heatmap", "brush": "rect",
               "labels": [[[-74.05 + 0.003 * i, -74.05 + 0.003 * (i + 1)],
                           [40.6 + 0.003 * j, 40.6 + 0.003 * (j + 1)]]
                          for i in range(100) for j in range(100)]}
              for loc in ("pickup", "dropoff")]
             + [_hist("distance", 0.0, 0.5, 40), _hist("fare", 0.0, 2.0, 40), _hist("hour", 0.0, 1.0, 24)],
    "parameters": [],
}
TAXI_INFO = DashboardInfo.from_description(TAXI)


@pytest.fixture(scope="module")
def session():
    return human(SIX_INFO, seed=11, events=50_000)


def _numbers(view: str, bounds: list) -> list[float]:
    return [pixels.to_micros(b) / 1e6 if view == "day" else b for b in bounds]


def _extent(info: DashboardInfo, view: str) -> tuple[float, float]:
    v = next(v for v in info.views if v.name == view)
    lo, hi = pixels.extent(v.type, v.labels)
    return (lo / 1e6, hi / 1e6) if v.temporal else (lo, hi)


def _walk(trace):
    """(event, gap to the previous event, brushes before it): the brushes as numbers."""
    brushes: dict[str, list] = {}
    last = None
    for e in trace.events:
        yield e, (e.t - last if last is not None else None), dict(brushes)
        last = e.t
        m = e.message
        if m["type"] == "brush":
            brushes[m["view"]] = _numbers(m["view"], m["interval"])
        elif m["type"] == "clear":
            brushes = {} if "view" not in m else {k: v for k, v in brushes.items() if k != m["view"]}


def test_human_has_the_event_count_is_seeded_and_valid(session):
    assert len(session.events) == 50_000 and session.events[-1].message == {"type": "clear"}
    assert session.meta["workload"] == "human" and session.meta["seed"] == 11
    assert human(SIX_INFO, seed=11, events=2_000).events[:-1] == session.events[:1_999]  # a prefix
    assert human(SIX_INFO, seed=12, events=2_000) != human(SIX_INFO, seed=11, events=2_000)
    assert parse_trace(session.to_json()).events == session.events  # every message valid
    assert len(human(SIX_INFO).events) == 50_000  # the default


def test_human_drags_at_60_hz_and_switches_views_every_few_hundred_ms(session):
    gaps, starts = [], []
    for e, gap, _ in _walk(session):
        if e.message["type"] != "brush" or gap is None:
            continue
        if gap < 20:
            gaps.append(gap)
        else:
            starts.append(e)
    assert all(g == pytest.approx(1000 / 60, abs=1e-3) for g in gaps)  # within a drag: frames
    assert len(gaps) > 0.9 * sum(e.message["type"] == "brush" for e in session.events)
    switched = [b.message["view"] != a.message["view"] for a, b in pairwise(starts)]
    assert 0.75 < sum(switched) / len(switched) < 0.95
    switch_times = [b.t for a, b in pairwise(starts) if a.message["view"] != b.message["view"]]
    between = sorted(b - a for a, b in pairwise(switch_times))
    assert 200 < between[len(between) // 2] < 1_000  # median: a few hundred ms


def test_human_starts_brushes_at_zero_width_and_drags_leftwards_inverted(session):
    brushes = [e.message for e in session.events if e.message["type"] == "brush"]
    spans = [_numbers(m["view"], m["interval"]) for m in brushes]
    zero = sum(lo == hi for lo, hi in spans)
    inverted = sum(lo > hi for lo, hi in spans)
    assert 0.01 < zero / len(brushes) < 0.1 and 0.1 < inverted / len(brushes) < 0.4
    starts = [e for e, gap, _ in _walk(session) if e.message["type"] == "brush" and gap and gap > 20]
    zero_starts = [e for e in starts if len(set(e.message["interval"])) == 1]
    assert 0.25 < len(zero_starts) / len(starts) < 0.6  # most draws; moves start elsewhere
    crossings = 0
    for a, b in pairwise(brushes):
        (alo, ahi), (blo, bhi) = _numbers(a["view"], a["interval"]), _numbers(b["view"], b["interval"])
        crossings += a["view"] == b["view"] and alo == blo and alo > ahi and blo < bhi  # same anchor
    assert crossings > 50


def test_human_jumps_from_empty_or_zero_width_to_10_to_60_percent(session):
    jumps, from_zero = 0, []
    for e, _, before in _walk(session):
        m = e.message
        if m["type"] != "brush":
            continue
        lo, hi = _numbers(m["view"], m["interval"])
        elo, ehi = _extent(SIX_INFO, m["view"])
        share = abs(hi - lo) / (ehi - elo)
        old = before.get(m["view"])
        if old is None or old[0] >= old[1]:  # no brush, zero-width or inverted: selects nothing
            jumps += lo < hi and 0.1 <= share <= 0.6
            if old is not None and old[0] == old[1] and share >= 0.1:
                from_zero.append(share)
    assert jumps > 250
    assert len(from_zero) > 200 and max(from_zero) <= 0.61  # one frame from zero width


def test_human_drags_with_one_to_five_other_brushes_fixed(session):
    others = [sum(k != e.message["view"] for k in before) for e, _, before in _walk(session)
              if e.message["type"] == "brush"]
    assert max(others) <= 5 and sum(1 <= n <= 5 for n in others) / len(others) > 0.95
    assert all(others.count(n) > 0.05 * len(others) for n in range(1, 6))  # each of 1-5


def test_human_bounds_are_inside_the_extent_and_off_pixel_edges(session):
    on_edge = total = 0
    for e in session.events:
        m = e.message
        if m["type"] != "brush":
            continue
        lo, hi = _extent(SIX_INFO, m["view"])
        for x in _numbers(m["view"], m["interval"]):
            assert lo <= x <= hi
            total += 1
            p = (x - lo) / (hi - lo) * pixels.PIXELS
            on_edge += abs(p - round(p)) < 1e-6
    assert on_edge / total < 0.1  # the extent's ends (clamped drags) and chance
    days = [e.message["interval"] for e in session.events
            if e.message["type"] == "brush" and e.message["view"] == "day"]
    assert days and all(isinstance(x, str) and x.endswith("+00:00") for d in days for x in d)


def test_human_mixes_in_clears_clicks_and_parameters_at_a_low_rate(session):
    kinds: dict[str, int] = {}
    for e in session.events:
        m = e.message
        k = m["type"] + ("" if m["type"] != "clear" else ("_view" if "view" in m else "_all"))
        kinds[k] = kinds.get(k, 0) + 1
    assert 50 < kinds["clear_view"] < 500 and 3 <= kinds["clear_all"] < 50
    assert 20 < kinds["select"] < 500 and 20 < kinds["parameter"] < 500
    values = {e.message["value"] for e in session.events if e.message["type"] == "parameter"
              and e.message["name"] == "max_delay"}
    assert None in values and all(v is None or -20 <= v <= 300 for v in values)


def test_human_produces_the_shapes_of_the_slow_events_of_issue_10(session):
    """The four examples (active filters -> message): zero-width then grown, with others
    fixed; inverted then sorted and wide; a moved brush with another fixed; a fixed brush
    ending on the extent's edge."""
    grown = sorted_wide = moved = 0
    at_edge = False
    for e, _, before in _walk(session):
        m = e.message
        if m["type"] != "brush" or len(before) < 2:
            continue
        lo, hi = _numbers(m["view"], m["interval"])
        old = before.get(m["view"])
        others = {k: v for k, v in before.items() if k != m["view"]}
        elo, ehi = _extent(SIX_INFO, m["view"])
        at_edge |= any(x in (elo, ehi) for k, v in others.items() if k != "day" for x in v)
        if old is None or not others:
            continue
        grown += old[0] == old[1] == lo < hi
        sorted_wide += old[0] > old[1] and [lo, hi] == old[::-1] and hi - lo >= 0.1 * (ehi - elo)
        moved += old[0] < old[1] and lo != old[0] and hi - lo == pytest.approx(old[1] - old[0], abs=1e-3)
    assert grown > 100 and sorted_wide > 100 and moved > 1_000 and at_edge


def test_human_draws_rect_brushes_on_heatmaps():
    trace = human(TAXI_INFO, seed=3, events=5_000)
    parse_trace(trace.to_json())
    rects = [e.message for e in trace.events if e.message.get("view") in ("pickup", "dropoff")
             and e.message["type"] == "brush"]
    assert len(rects) > 1_000 and all("y" in m for m in rects)
    assert all("y" not in e.message for e in trace.events if e.message.get("view") == "fare")
    assert any(m["interval"][0] == m["interval"][1] and m["y"][0] == m["y"][1] for m in rects)
    assert any(m["y"][0] > m["y"][1] for m in rects) and any(m["interval"][0] > m["interval"][1] for m in rects)
    for m in rects:
        assert all(-74.05 <= x <= -73.75 + 1e-9 for x in m["interval"])
        assert all(40.6 <= y <= 40.9 + 1e-9 for y in m["y"])


def test_human_needs_a_brushable_view_and_known_views():
    with pytest.raises(ValueError, match="interval- or rect-brushable view"):
        human(DashboardInfo("d", INFO.views[1:2], ()))
    with pytest.raises(ValueError, match="not interval- or rect-brushable views: \\['origin'\\]"):
        human(SIX_INFO, views=["distance", "origin"])
    only = human(SIX_INFO, views=["distance", "air_time"], events=500)
    assert {e.message["view"] for e in only.events if e.message["type"] == "brush"} == {"distance", "air_time"}


def test_wide_keeps_every_view_brushed_and_jumps_one_at_a_time():
    trace = wide(TAXI_INFO, seed=5, events=1_000)
    assert trace == wide(TAXI_INFO, seed=5, events=1_000) and trace != wide(TAXI_INFO, seed=6, events=1_000)
    parse_trace(trace.to_json())
    messages = [e.message for e in trace.events]
    names = [v.name for v in TAXI_INFO.views]
    assert [m["view"] for m in messages[:5]] == names  # every view brushed first
    assert len(messages) == 1_000 and messages[-1] == {"type": "clear"}
    assert all(m["type"] == "brush" for m in messages[:-1])  # then never cleared
    shares = {"whole": 0, "zero-width": 0}
    for m in messages[5:-1]:
        lo, hi = _extent(TAXI_INFO, m["view"]) if "y" not in m else (-74.05, -73.75)
        assert lo <= m["interval"][0] <= m["interval"][1] <= hi + 1e-9
        shares["whole"] += m["interval"] == pytest.approx([lo, hi])
        shares["zero-width"] += m["interval"][0] == m["interval"][1]
        assert ("y" in m) == (m["view"] in ("pickup", "dropoff"))
    assert 0.2 < shares["whole"] / 995 < 0.3 and 0.1 < shares["zero-width"] / 995 < 0.2
    with pytest.raises(ValueError, match="wide workload needs an interval- or rect-brushable view"):
        wide(DashboardInfo("d", INFO.views[1:2], ()))


def test_fixed_states_are_seeded_tagged_brushes_on_pixel_edges():
    state = fixed_state(INFO, brushes=2, points=2, exclude="delay", seed=3)
    assert state == fixed_state(INFO, brushes=2, points=2, exclude="delay", seed=3)
    assert set(state) == {"day", "origin"}  # delay excluded; one other interval view
    selection.check_names(selection.parse_state(state), selection.tags_of_description(DESCRIPTION))
    lo, hi = (pixels.to_micros(x) for x in state["day"]["interval"])
    grid = pixels.edges(*pixels.extent("temporal", DAYS))
    assert lo in grid and hi in grid and 0.15 <= (hi - lo) / (grid[-1] - grid[0]) <= 0.5
    assert len(state["origin"]["values"]) == 2 and "(other)" not in state["origin"]["values"]


def test_lookups_page_details_and_highlight_among_random_filters():
    info = DashboardInfo.from_description({**DESCRIPTION, "details": {"columns": ["x"], "page_size": 5},
                                           "highlight": [{"source": "origin", "targets": ["delay"]}]})
    trace = parse_trace(lookups(info, events=4).to_json())
    kinds = [e.message["type"] for e in trace.events]
    assert kinds == ["filters", "details", "details", "highlight"] * 4 + ["clear"]
    with pytest.raises(ValueError, match="needs details or highlight declared"):
        lookups(INFO)


def test_options_are_read_from_each_generators_signature():
    """The harness passes --views, --seed and --events only to a workload that takes them."""
    assert options("slide") == {"views": None}
    assert options("clicks") == {"seed": 7, "events": 200}
    assert options("human") == {"views": None, "seed": 7, "events": 50_000}
    assert options("wide")["events"] == 2_000
