"""The page with an access token, and a page from another origin trying to use the server,
in real Chromium: the token opens the dashboard and then lives in a cookie (not in the
address bar); a page on another origin (another port of the same host, so the browser
even sends that cookie) cannot open a WebSocket or read the API."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from browser.conftest import SCREENSHOTS, browser_spec
from brushfire import Dashboard
from brushfire.server import create_app
from brushfire.server.security import Security
from brushfire.spec import parse_dashboard
from live_server import live_server

pytestmark = pytest.mark.spark

TOKEN = "page-test-token-4f1c0a"
READY = "window.brushfire.ready || window.brushfire.error"

# what a foreign page tries: a WebSocket to the server, and reading its API
TRY_WEBSOCKET = """(url) => new Promise((resolve) => {
    const events = [];
    const ws = new WebSocket(url);
    ws.onopen = () => events.push("open");
    ws.onmessage = (e) => events.push("message " + String(e.data).slice(0, 80));
    ws.onerror = () => events.push("error");
    ws.onclose = (e) => { events.push("close " + e.code); resolve(events); };
    setTimeout(() => resolve(events), 15000);
})"""
TRY_FETCH = """(url) => fetch(url, {credentials: "include"})
    .then((r) => r.text().then((t) => "read " + r.status + " " + t.slice(0, 80)))
    .catch((e) => "failed: " + e.message)"""


@pytest.fixture(scope="module")
def dash(spark, small_parquet, tmp_path_factory):
    return Dashboard.open(parse_dashboard(browser_spec(small_parquet)), spark=spark,
                          cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def tokened(dash):
    rules = Security.for_bind("127.0.0.1", token=TOKEN)
    with live_server(create_app([dash], security=rules)) as addr:
        yield addr


@pytest.fixture(scope="module")
def foreign():
    """Another web site: a page on another port of the same host."""
    app = FastAPI()

    @app.get("/", response_class=HTMLResponse)
    def page() -> str:
        return "<!doctype html><title>elsewhere</title><p>another site</p>"

    with live_server(app) as addr:
        yield addr


@pytest.fixture
def context(chromium, request):
    ctx = chromium.new_context(viewport={"width": 1400, "height": 1100})
    yield ctx
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for i, pg in enumerate(ctx.pages):
        pg.screenshot(path=str(SCREENSHOTS / f"{request.node.name}-{i}.png"))
    ctx.close()


def open_dashboard(context, url: str):
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_function(READY, timeout=30_000)
    return page, errors


def test_the_page_works_with_a_token_kept_in_a_cookie(context, tokened, dash):
    port = tokened.split(":")[1]
    page, errors = open_dashboard(context, f"http://{tokened}/?token={TOKEN}&dashboard=browse")
    assert page.evaluate("window.brushfire.error || null") is None and not errors
    assert "token" not in page.url and page.url.endswith("/?dashboard=browse")  # off the address bar
    cookie = next(c for c in context.cookies() if c["name"] == f"brushfire-token-{port}")
    assert cookie["value"] == TOKEN and cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    assert page.evaluate("document.cookie") == ""  # page scripts cannot read it
    # the session answers, over the WebSocket the page opened with the token
    reply = page.evaluate("window.brushfire.connection.request({type: 'brush', view: 'hx', interval: [20, 60]})")
    assert reply["type"] == "update" and reply["selected"] == _selected(dash, (20, 60))
    # a reload (no token in the URL any more) works from the cookie
    page.reload()
    page.wait_for_function(READY, timeout=30_000)
    assert page.evaluate("window.brushfire.error || null") is None and not errors


def _selected(dash, interval) -> int:
    s = dash.session()
    s.brush("hx", interval)
    return s.count_selected()


def test_without_the_token_the_page_says_what_to_do(context, tokened):
    page = context.new_page()
    response = page.goto(f"http://{tokened}/?dashboard=browse")
    assert response.status == 401
    assert "?token=" in page.inner_text("body")
    page.goto(f"http://{tokened}/?token=wrong")
    assert "wrong access token" in page.inner_text("body")


def test_a_page_on_another_origin_cannot_open_the_websocket(context, tokened, foreign):
    # the user has the dashboard open (the token cookie is set) and visits another site
    page, _ = open_dashboard(context, f"http://{tokened}/?token={TOKEN}")
    assert page.evaluate("window.brushfire.ready")
    evil = context.new_page()
    evil.goto(f"http://{foreign}/")
    for url in [f"ws://{tokened}/ws/browse", f"ws://{tokened}/ws/browse?token={TOKEN}"]:
        events = evil.evaluate(TRY_WEBSOCKET, url)
        assert events == ["error", "close 1006"], (url, events)  # never opened, no message
    for url in [f"http://{tokened}/api/dashboards", f"http://{tokened}/api/dashboards/browse?token={TOKEN}"]:
        assert evil.evaluate(TRY_FETCH, url).startswith("failed:"), url
    # the dashboard's own page is unaffected
    reply = page.evaluate("window.brushfire.connection.request({type: 'state'})")
    assert reply["type"] == "state"


def test_without_a_token_other_origins_are_still_refused(context, dash, foreign):
    with live_server(create_app([dash])) as addr:
        page, errors = open_dashboard(context, f"http://{addr}/")
        assert page.evaluate("window.brushfire.ready") and not errors
        evil = context.new_page()
        evil.goto(f"http://{foreign}/")
        assert evil.evaluate(TRY_WEBSOCKET, f"ws://{addr}/ws/browse") == ["error", "close 1006"]
        assert evil.evaluate(TRY_FETCH, f"http://{addr}/api/dashboards").startswith("failed:")
