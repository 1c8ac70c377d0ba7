"""The widget in a real JupyterLab, in Debian's chromium: run the notebook's cells with
the keyboard, drag brushes in the widget with the mouse, and check the views against
DuckDB and the filters Python sees; set filters from Python and check the views follow.
A second widget attaches to a real `brushfire serve` app. Screenshots: build/screenshots/."""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from bars import same, sql_count, sql_values
from brushfire.server import create_app
from brushfire.server.security import Security
from live_server import live_server
from oracle import Oracle

pytestmark = pytest.mark.spark

SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
CELLS = [
    'import json, os\nimport brushfire\nw = brushfire.widget(os.environ["BRUSHFIRE_EXAMPLE_SPEC"])\nw',
    "print(json.dumps(w.filters))",
    'w.filters = {"hour": {"interval": [6, 12]}, "destination": {"parameter": "ATL"}}\nprint(json.dumps(w.filters))',
    'remote = brushfire.widget(url=os.environ["BRUSHFIRE_TEST_SERVER"], dashboard="flights")\nremote',
    "print(json.dumps(remote.filters))",
    'remote.filters = {"distance": {"interval": [500, 1500]}}',
]
UI = "globalThis.brushfireWidgets"
SERVER_TOKEN = secrets.token_hex(24)  # the attached widget's server requires it


@pytest.fixture(scope="module")
def lab(kernel_env, flights_dash, tmp_path_factory):
    """JupyterLab on a free loopback port with a random token, its state in a temporary
    folder, serving a notebook of CELLS; shut down through its API, killed if need be.
    The attached widget's server runs in this process, with an access token, allowing
    JupyterLab's origin (as `brushfire serve --allow-origin` does)."""
    root = tmp_path_factory.mktemp("lab")
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in CELLS], metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}),
        root / "widget.ipynb")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    state = root / ".state"
    news = state / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text('{"fetchNews": "false"}')  # no "get notified about Jupyter news?" toast
    rules = Security.for_bind("127.0.0.1", token=SERVER_TOKEN, allow_origins=[f"http://127.0.0.1:{port}"])
    with live_server(create_app([flights_dash], security=rules)) as addr:
        env = {**kernel_env, "BRUSHFIRE_TEST_SERVER": f"http://{addr}/?token={SERVER_TOKEN}",
               "JUPYTER_CONFIG_DIR": str(state / "config"), "JUPYTER_RUNTIME_DIR": str(state / "runtime"),
               "JUPYTERLAB_SETTINGS_DIR": str(state / "settings"),
               "JUPYTERLAB_WORKSPACES_DIR": str(state / "workspaces")}
        log = (root / "jupyterlab.log").open("w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
             f"--port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
             "--ServerApp.terminals_enabled=False", "--LabApp.extension_manager=readonly",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.news_url="],
            env=env, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 90
            while not _up(f"{base}/api/status?token={token}"):
                assert proc.poll() is None, f"JupyterLab exited: {(root / 'jupyterlab.log').read_text()}"
                assert time.monotonic() < deadline, "JupyterLab did not start in 90 s"
                time.sleep(0.3)
            yield base, token
        finally:
            _stop(proc, f"{base}/api/shutdown?token={token}")
            log.close()


def _up(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def _stop(proc: subprocess.Popen, shutdown_url: str) -> None:
    """Shut JupyterLab down through its API (which stops its kernels), else terminate it."""
    with contextlib.suppress(OSError):
        urllib.request.urlopen(urllib.request.Request(shutdown_url, method="POST"), timeout=10)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def notebook(lab, chromium):
    """The notebook open in JupyterLab, its kernel ready; fails on any page error."""
    base, token = lab
    context = chromium.new_context(viewport={"width": 1400, "height": 2200})  # a whole widget in view
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{base}/lab/tree/widget.ipynb?token={token}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    # the kernel is connected once the status bar reports its status
    page.wait_for_selector(".jp-StatusBar-TextItem:has-text('| Idle')", timeout=60_000)
    yield page
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "jupyterlab.png"))
    context.close()
    assert not errors, f"errors in the page: {errors}"


def run_cell(page, i: int) -> str:
    """Run cell i with Shift+Enter; its output text once the kernel is idle again."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(i)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function("""(i) => /^\\[\\d+\\]:$/.test(document.querySelectorAll(
        '.jp-Notebook .jp-Cell')[i].querySelector('.jp-InputPrompt').textContent.trim())""",
        arg=i, timeout=120_000)  # "[n]:" once run; "[*]:" while running
    assert "Error" not in cell.locator(".jp-OutputArea").inner_text()
    return cell.locator(".jp-OutputArea").inner_text()


def idle(w: int) -> str:
    return f"{UI}[{w}] && {UI}[{w}].pending.size === 0 && !{UI}[{w}].busy"


def to_pixel(page, w: int, view: str, x, y=None) -> tuple[float, float]:
    """Page coordinates of data point (x, y) in a view of widget w (y: mid-height)."""
    return tuple(page.evaluate("""([w, name, x, y]) => {
        const v = globalThis.brushfireWidgets[w].charts.get(name).view;
        const r = v.container().querySelector('canvas').getBoundingClientRect();
        const pad = v.padding(), o = v.origin(), sx = v.scale('x'), sy = v.scale('y');
        const bx = sx.bandwidth ? sx.bandwidth() / 2 : 0;
        return [r.left + pad.left + o[0] + sx(x) + bx,
                r.top + pad.top + o[1] + (y === null ? v.height() / 2 : sy(y))];
    }""", [w, view, x, y]))


def drag(page, w: int, view: str, x0, x1, steps: int = 10) -> None:
    page.evaluate("([w, name]) => globalThis.brushfireWidgets[w].charts.get(name).view.container()"
                  ".scrollIntoView({block: 'center'})", [w, view])
    (ax, ay), (bx, by) = to_pixel(page, w, view, x0), to_pixel(page, w, view, x1)
    page.mouse.move(ax, ay)
    page.mouse.down()
    for i in range(1, steps + 1):
        page.mouse.move(ax + (bx - ax) * i / steps, ay + (by - ay) * i / steps)
    page.mouse.up()
    page.wait_for_function(idle(w))


def shown(page, w: int, view: str) -> list:
    return page.evaluate("""([w, name]) => globalThis.brushfireWidgets[w].charts.get(name).view
        .data('bars').slice().sort((a, b) => a.bar - b.bar).map(r => r.value)""", [w, view])


def assert_views_match(page, w: int, oracle: Oracle, dash) -> None:
    for v in dash.spec.views:
        assert same(shown(page, w, v.name), sql_values(oracle, dash, v.name)), v.name
    assert page.evaluate(f"{UI}[{w}].selected") == sql_count(oracle)


def brush_x(page, w: int, view: str) -> list:
    """The pixel span of a view's drawn interval brush ([0, 0] or []: none)."""
    return page.evaluate(f"([w, name]) => {UI}[w].charts.get(name).view.signal('brush_x')", [w, view])


def scale_x(page, w: int, view: str, values: list) -> list[float]:
    return page.evaluate(f"([w, name, values]) => {{ const s = {UI}[w].charts.get(name).view.scale('x');"
                         " return values.map((v) => s(v)); }", [w, view, values])


def snap(page, w: int, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    widget = page.locator(".bf-widget").nth(w)
    widget.evaluate("e => e.scrollIntoView({block: 'start'})")
    widget.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def test_brushing_in_jupyterlab_filters_the_views_and_python_sees_the_filters(notebook, flights_dash):
    page, dash = notebook, flights_dash
    run_cell(page, 0)
    page.wait_for_function(f"{UI}?.length === 1 && {UI}[0].selected !== null", timeout=60_000)
    drag(page, 0, "delay", -15, 35)
    lo, hi = page.evaluate(f"{UI}[0].filters.delay.interval")
    assert -17 < lo < -13 and 33 < hi < 37  # where the mouse went, in minutes
    oracle = Oracle(dash.spec)
    oracle.brush("delay", (lo, hi))
    assert_views_match(page, 0, oracle, dash)
    assert json.loads(run_cell(page, 1)) == {"delay": {"interval": [lo, hi]}}  # the kernel's w.filters
    # hovering an origin bar highlights its share of the delay view
    label = dash.store.view("origin").labels[0]
    page.evaluate("([w, name]) => globalThis.brushfireWidgets[w].charts.get(name).view.container()"
                  ".scrollIntoView({block: 'center'})", [0, "origin"])
    page.mouse.move(*to_pixel(page, 0, "origin", label, 1))
    page.wait_for_function(f"{UI}[0].metrics.some(m => m.type === 'highlight')")
    want = sql_values(oracle, dash, "delay", extra=f"origin = '{label}'")
    assert page.evaluate("""() => globalThis.brushfireWidgets[0].charts.get('delay').view.data('bars')
        .slice().sort((a, b) => a.bar - b.bar).map(r => r.hl)""") == want
    snap(page, 0, "jupyterlab-brushed")


def test_filters_set_from_python_update_the_rendered_views(notebook, flights_dash):
    page, dash = notebook, flights_dash
    out = json.loads(run_cell(page, 2))
    assert out == {"hour": {"interval": [6, 12]}, "destination": {"parameter": "ATL"}}
    page.wait_for_function(f"{UI}[0].filters.hour && {idle(0)}")
    oracle = Oracle(dash.spec)
    oracle.brush("hour", (6, 12))
    oracle.set_parameter("destination", "ATL")
    assert_views_match(page, 0, oracle, dash)
    # the brush Python set is drawn where its interval is; the delay brush dragged before is gone
    assert brush_x(page, 0, "hour") == pytest.approx(scale_x(page, 0, "hour", [6, 12]), abs=0.01)
    assert brush_x(page, 0, "delay") in ([0, 0], [])
    widget = page.locator(".bf-widget").nth(0)
    assert f"{sql_count(oracle):,} selected" in widget.locator(".bf-status").inner_text()
    assert widget.locator("input[name=destination]").input_value() == "ATL"  # (a searchable picker)
    widget.locator("[data-action=details]").click()  # details on demand, through the kernel
    widget.locator(".bf-table tr:nth-child(2)").wait_for()
    assert f"of {sql_count(oracle):,}" in widget.locator(".bf-details-info").inner_text()
    rows = widget.locator(".bf-table tr").count() - 1
    assert rows == min(sql_count(oracle), dash.spec.interactions.details.page_size)
    snap(page, 0, "jupyterlab-set-from-python")


def test_a_widget_attached_to_a_server_mirrors_its_filters_to_python(notebook, flights_dash):
    page, dash = notebook, flights_dash
    run_cell(page, 3)
    page.wait_for_function(f"{UI}?.length === 2 && {UI}[1].selected !== null", timeout=60_000)
    drag(page, 1, "distance", 400, 1800)
    lo, hi = page.evaluate(f"{UI}[1].filters.distance.interval")
    oracle = Oracle(dash.spec)
    oracle.brush("distance", (lo, hi))
    assert_views_match(page, 1, oracle, dash)
    assert json.loads(run_cell(page, 4)) == {"distance": {"interval": [lo, hi]}}
    run_cell(page, 5)  # and from Python to the server's session
    page.wait_for_function(f"{UI}[1].filters.distance.interval[0] === 500 && {idle(1)}")
    oracle.brush("distance", (500, 1500))
    assert_views_match(page, 1, oracle, dash)
    assert json.loads(run_cell(page, 4)) == {"distance": {"interval": [500, 1500]}}
    snap(page, 1, "jupyterlab-attached")
