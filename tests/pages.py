"""Driving the dashboard page from Playwright: data to pixels, mouse drags, what each view
draws (its Vega dataset and scenegraph), and the SQL comparison."""

from __future__ import annotations

import math
import re
from datetime import datetime
from pathlib import Path

import numpy as np

from bars import sql_values

SCREENSHOTS = Path(__file__).resolve().parents[1] / "build" / "screenshots"
IDLE = "window.brushfire.ui.pending.size === 0 && !window.brushfire.ui.busy"


def to_pixel(page, view: str, x, y=None) -> tuple[float, float]:
    """Page coordinates of data point (x, y) in a view (y: mid-height when None; band
    scales: the band's middle)."""
    return tuple(page.evaluate("""([name, x, y]) => {
        const v = window.brushfire.ui.charts.get(name).view;
        const r = v.container().querySelector('canvas').getBoundingClientRect();
        const pad = v.padding(), o = v.origin(), sx = v.scale('x'), sy = v.scale('y');
        const bx = sx.bandwidth ? sx.bandwidth() / 2 : 0;
        const by = sy.bandwidth ? sy.bandwidth() / 2 : 0;
        return [r.left + pad.left + o[0] + sx(x) + bx,
                r.top + pad.top + o[1] + (y === null ? v.height() / 2 : sy(y) + by)];
    }""", [view, x, y]))


def into_view(page, view: str) -> None:
    """Scroll a view's chart into the window's middle unless all of it is in sight (below
    the header, which stays at the top)."""
    page.evaluate("""(name) => {
        const body = window.brushfire.ui.charts.get(name).body, r = body.getBoundingClientRect();
        const top = document.querySelector('.bf-header')?.getBoundingClientRect().bottom ?? 0;
        if (r.top < top || r.bottom > window.innerHeight) body.scrollIntoView({block: 'center'});
    }""", view)


def drag(page, view: str, x0, x1, y0=None, y1=None, steps: int = 12) -> None:
    into_view(page, view)
    (ax, ay), (bx, by) = to_pixel(page, view, x0, y0), to_pixel(page, view, x1, y1)
    page.mouse.move(ax, ay)
    page.mouse.down()
    for i in range(1, steps + 1):
        page.mouse.move(ax + (bx - ax) * i / steps, ay + (by - ay) * i / steps)
    page.mouse.up()
    page.wait_for_function(IDLE)


def shown(page, view: str, field: str = "value") -> list:
    """The values a view draws, by bar (from its Vega dataset)."""
    return page.evaluate("""([name, field]) => window.brushfire.ui.charts.get(name).view
        .data('bars').slice().sort((a, b) => a.bar - b.bar).map(r => r[field])""", [view, field])


def drawn_items(page, view: str, marktype: str = "rect") -> list[dict]:
    """The bars a view draws: per mark of that type drawing bars (layers in order; not the
    brush), its items' `bar` and pixel box, from the Vega scenegraph."""
    return page.evaluate("""([name, marktype]) => {
        const out = [];
        const visit = (mark) => {
            if (mark.marktype === 'group') {
                for (const g of mark.items) for (const child of g.items || []) visit(child);
            } else if (mark.marktype === marktype && !/brush/.test(mark.name || '')) {
                const bars = mark.items.filter(i => i.datum && i.datum.bar !== undefined);
                if (bars.length) out.push(bars.map(i => ({bar: i.datum.bar, x: i.x, y: i.y, w: i.width, h: i.height})));
            }
        };
        visit(window.brushfire.ui.charts.get(name).view.scenegraph().root);
        return out;
    }""", [view, marktype])


def brush_pixels(page, view: str) -> dict:
    """The drawn brush of a view: its pixel signals (empty: [0, 0] or [])."""
    return page.evaluate("""(name) => {
        const v = window.brushfire.ui.charts.get(name).view;
        const get = (s) => { try { return v.signal(s); } catch (e) { return null; } };
        return {x: get('brush_x'), y: get('brush_y')};
    }""", view)


def scale_pixels(page, view: str, channel: str, values: list) -> list[float]:
    return page.evaluate("""([name, channel, values]) => {
        const s = window.brushfire.ui.charts.get(name).view.scale(channel);
        return values.map(v => s(typeof v === 'string' ? +new Date(v) : v));
    }""", [view, channel, values])


def assert_views_match(page, oracle, dash, skip=()) -> None:
    for v in dash.spec.views:
        if v.name in skip:
            continue
        want, got = sql_values(oracle, dash, v.name), shown(page, v.name)
        assert len(want) == len(got), v.name
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            if b is None or (isinstance(b, float) and math.isnan(b)):
                assert a is None, (v.name, i, a)
            else:
                assert a is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), (v.name, i, a, b)


def selected(page) -> int:
    return page.evaluate("window.brushfire.ui.selected")


_ISO = re.compile(r"^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")


def formatted(v) -> str:
    """How the page (frontend/src/format.js) shows a value: integers with thousands
    separators, fractions in the fewest digits that give the value back (as a float32 when
    it is one), instants as "2001-01-05 14:30", null and NaN as ∅."""
    if v is None or v == "NaN" or (isinstance(v, float) and math.isnan(v)):
        return "∅"
    if isinstance(v, datetime):
        v = v.replace(tzinfo=None).isoformat()
    if isinstance(v, str):
        m = _ISO.match(v)
        if not m:
            return v
        date, hm, sec, frac, _ = m.groups()
        frac = frac if frac and float(frac) else ""
        return f"{date} {hm}" + (f":{sec or '00'}{frac.rstrip('0')}" if (sec and sec != "00") or frac else "")
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 2**53):
        return f"{int(v):,}"
    float32 = float(np.float32(v)) == v
    for p in range(1, 17):
        y = float(f"{v:.{p - 1}e}")
        if (float(np.float32(y)) == v) if float32 else (y == v):
            break
    text = np.format_float_positional(v, precision=p, unique=False, fractional=False, trim="-")
    whole, _, fraction = text.partition(".")
    sign = "-" if whole.startswith("-") else ""
    whole = f"{int(whole.lstrip('-')):,}"
    return f"{sign}{whole}" + (f".{fraction}" if fraction else "")
