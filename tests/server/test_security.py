"""Host, Origin and token checks (brushfire.server.security) on a real uvicorn server with
real HTTP and WebSocket clients. No Spark: the app serves no dashboard, so a WebSocket
that passes every check is closed with 4404 (unknown dashboard), one that fails is
refused at the handshake."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from brushfire.cli import main, serve_token, serve_urls
from brushfire.server import create_app
from brushfire.server.security import Security, host_name, normal_origin
from live_server import live_server

TOKEN = "s3cret-token_0123456789"
PATHS = ["/health", "/api/dashboards", "/api/dashboards/x", "/api/docs", "/openapi.json", "/",
         "/index.html"]


@pytest.fixture(scope="module")
def open_server():
    """Default rules: loopback hosts, same origin, no token."""
    with live_server(create_app([])) as addr:
        yield addr


@pytest.fixture(scope="module")
def token_server():
    rules = Security.for_bind("127.0.0.1", token=TOKEN, allow_origins=["http://localhost:8888"],
                              allow_hosts=["dash.example.com", ".corp.example"])
    with live_server(create_app([], security=rules)) as addr:
        yield addr


def ws_outcome(addr: str, *, host: str | None = None, query: str = "", **kwargs) -> str:
    """'refused <status>' when the handshake is refused, else the close code ('4404': the
    socket opened, so every check passed)."""
    ip, port = addr.split(":")
    sock = socket.create_connection((ip, int(port)))
    try:
        with connect(f"ws://{host or addr}/ws/none{query}", sock=sock, open_timeout=10, **kwargs) as ws:
            reply = json.loads(ws.recv(timeout=10))
            assert reply["type"] == "error"
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=10)
            return str(closed.value.rcvd.code)
    except InvalidStatus as e:
        return f"refused {e.response.status_code}: {e.response.body.decode()}"


# --- Host: DNS rebinding --------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
def test_a_foreign_host_gets_nothing(open_server, path):
    r = httpx.get(f"http://{open_server}{path}", headers={"Host": "attacker.example"})
    assert r.status_code == 403, (path, r.text)
    assert "host 'attacker.example' is not allowed" in r.text
    assert "dashboards" not in r.text.split("allowed")[0]


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:80", "127.0.0.1", "127.0.0.2:8000",
                                  "[::1]:8000", "app.localhost"])
def test_loopback_hosts_are_served(open_server, host):
    assert httpx.get(f"http://{open_server}/health", headers={"Host": host}).status_code == 200


def test_a_foreign_host_cannot_open_a_websocket(open_server):
    port = open_server.split(":")[1]
    assert ws_outcome(open_server, host=f"attacker.example:{port}").startswith("refused 403")
    assert ws_outcome(open_server, host=f"localhost:{port}") == "4404"


@pytest.mark.parametrize(("host", "status"), [
    ("dash.example.com", 200), ("a.corp.example", 200), ("corp.example", 200),
    ("dash.example.com.evil.example", 403), ("xcorp.example", 403), ("10.0.0.5", 403),
])
def test_allowed_host_names(token_server, host, status):
    r = httpx.get(f"http://{token_server}/health?token={TOKEN}", headers={"Host": host})
    assert r.status_code == status, r.text


@pytest.mark.parametrize(("bind", "allow", "name", "ok"), [
    ("127.0.0.1", (), "localhost", True),
    ("127.0.0.1", (), "10.1.2.3", False),
    ("10.1.2.3", (), "10.1.2.3", True),  # the bind address
    ("10.1.2.3", (), "10.1.2.4", False),
    ("0.0.0.0", (), "10.1.2.4", True),  # bound everywhere: IP literals (no DNS, no rebinding)
    ("0.0.0.0", (), "rebind.attacker.example", False),
    ("0.0.0.0", ("*",), "anything.example", True),
    ("::", (), "fe80::1", True),
])
def test_host_rules(bind, allow, name, ok):
    rules = Security.for_bind(bind, allow_hosts=allow)
    assert (rules.host_problem(name) is None) is ok


def test_the_machines_own_name_is_allowed_when_bound_everywhere():
    own = socket.gethostname()
    assert Security.for_bind("0.0.0.0").host_problem(f"{own}:8000") is None


@pytest.mark.parametrize(("header", "name"), [
    ("Example.COM:8000", "example.com"), ("[::1]:80", "::1"), ("::1", "::1"), ("host.", "host"),
])
def test_host_names(header, name):
    assert host_name(header) == name


# --- Origin: cross-site WebSocket hijacking, CORS -----------------------------------------


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1:1",
                                    "https://localhost", "file://"])
def test_foreign_origins_cannot_open_a_websocket(open_server, origin):
    outcome = ws_outcome(open_server, origin=origin)
    assert outcome.startswith("refused 403") and "is not allowed" in outcome, outcome


def test_same_origin_and_non_browser_clients_pass(open_server):
    assert ws_outcome(open_server, origin=f"http://{open_server}") == "4404"
    assert ws_outcome(open_server) == "4404"  # no Origin: not a browser


@pytest.mark.parametrize("origin", ["http://evil.example", "null"])
def test_foreign_origins_cannot_read_the_api(open_server, origin):
    r = httpx.get(f"http://{open_server}/api/dashboards", headers={"Origin": origin})
    assert r.status_code == 403 and "access-control-allow-origin" not in r.headers


def test_cors_names_only_allowed_origins(token_server):
    ok = httpx.get(f"http://{token_server}/api/dashboards?token={TOKEN}",
                   headers={"Origin": "http://localhost:8888"})
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "http://localhost:8888"
    # a preflight carries no token
    pre = httpx.options(f"http://{token_server}/api/dashboards",
                        headers={"Origin": "http://localhost:8888", "Access-Control-Request-Method": "GET",
                                 "Access-Control-Request-Headers": "authorization"})
    assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == "http://localhost:8888"
    bad = httpx.options(f"http://{token_server}/api/dashboards",
                        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "GET"})
    assert bad.status_code == 403 and "access-control-allow-origin" not in bad.headers
    assert ws_outcome(token_server, origin="http://localhost:8888", query=f"?token={TOKEN}") == "4404"


def test_any_origin_when_asked_but_never_a_literal_star():
    rules = Security.for_bind("127.0.0.1", allow_origins=["*"])
    with live_server(create_app([], security=rules)) as addr:
        r = httpx.get(f"http://{addr}/health", headers={"Origin": "http://elsewhere.example"})
        assert r.headers["access-control-allow-origin"] == "http://elsewhere.example"
        assert ws_outcome(addr, origin="null") == "4404"


@pytest.mark.parametrize(("origin", "normal"), [
    ("HTTP://LocalHost:8888/", "http://localhost:8888"), ("https://a.example:443", "https://a.example"),
    ("http://a.example:80", "http://a.example"), ("null", "null"),
])
def test_origins_are_compared_normalized(origin, normal):
    assert normal_origin(origin) == normal


# --- the access token -----------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
def test_no_token_no_data(token_server, path):
    for headers in ({}, {"Authorization": "token wrong"}, {"Cookie": "brushfire-token-1=wrong"}):
        r = httpx.get(f"http://{token_server}{path}", headers=headers)
        assert r.status_code == 401, (path, headers, r.text)
    r = httpx.get(f"http://{token_server}{path}?token=nope")
    assert r.status_code == 401 and "wrong access token" in r.text


def test_a_browser_asking_for_the_page_is_told_what_to_do(token_server):
    r = httpx.get(f"http://{token_server}/", headers={"Accept": "text/html"})
    assert r.status_code == 401 and r.headers["content-type"].startswith("text/html")
    assert "?token=" in r.text


def test_the_token_in_the_url_sets_a_cookie_that_then_suffices(token_server):
    port = token_server.split(":")[1]
    first = httpx.get(f"http://{token_server}/health?token={TOKEN}")
    assert first.status_code == 200
    cookie = first.headers["set-cookie"]
    assert cookie.startswith(f"brushfire-token-{port}={TOKEN};")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    again = httpx.get(f"http://{token_server}/api/dashboards",
                      headers={"Cookie": f"brushfire-token-{port}={TOKEN}"})
    assert again.status_code == 200 and again.json() == []
    for scheme in ("token", "Bearer"):
        r = httpx.get(f"http://{token_server}/openapi.json", headers={"Authorization": f"{scheme} {TOKEN}"})
        assert r.status_code == 200 and "set-cookie" not in r.headers


def test_websockets_need_the_token(token_server):
    port = token_server.split(":")[1]
    assert ws_outcome(token_server).startswith("refused 401")
    assert ws_outcome(token_server, query="?token=wrong").startswith("refused 401")
    assert ws_outcome(token_server, query=f"?token={TOKEN}") == "4404"
    assert ws_outcome(token_server, additional_headers={"Authorization": f"token {TOKEN}"}) == "4404"
    assert ws_outcome(token_server, additional_headers={"Cookie": f"brushfire-token-{port}={TOKEN}"}) == "4404"
    # the right token does not let a foreign page in
    assert ws_outcome(token_server, origin="http://evil.example", query=f"?token={TOKEN}") \
        .startswith("refused 403")


@pytest.mark.parametrize(("given", "no_token", "host", "env", "expected"), [
    (None, False, "127.0.0.1", None, None),  # loopback: optional
    (None, False, "localhost", None, None),
    (None, False, "0.0.0.0", None, "random"),  # anything else: generated
    (None, False, "10.0.0.5", None, "random"),
    ("", False, "127.0.0.1", None, "random"),  # --token without a value
    ("mine", False, "127.0.0.1", None, "mine"),
    (None, False, "127.0.0.1", "fromenv", "fromenv"),
    ("mine", False, "0.0.0.0", "fromenv", "mine"),
    (None, True, "0.0.0.0", "fromenv", None),  # --no-token wins
])
def test_which_token_serve_requires(monkeypatch, given, no_token, host, env, expected):
    monkeypatch.delenv("BRUSHFIRE_TOKEN", raising=False)
    if env:
        monkeypatch.setenv("BRUSHFIRE_TOKEN", env)
    token = serve_token(given, no_token, host)
    if expected == "random":
        assert token and len(token) == 48 and token != serve_token(given, no_token, host)
    else:
        assert token == expected


def test_serve_prints_tokenized_urls():
    assert serve_urls("127.0.0.1", 8000, "abc") == ["http://127.0.0.1:8000/?token=abc"]
    assert serve_urls("::1", 8000, None) == ["http://[::1]:8000/"]
    assert serve_urls("0.0.0.0", 80, "t") == [f"http://{socket.gethostname()}:80/?token=t",
                                               "http://127.0.0.1:80/?token=t"]


@pytest.mark.parametrize(("args", "expected"), [
    (["--allow-origin", "localhost:8888"], "argument --allow-origin: 'localhost:8888' is not an origin"),
    (["--token=a b"], "argument --token: a token is 1-256 letters"),
    (["--max-sessions", "0"], "argument --max-sessions: '0' is not a positive whole number"),
    (["--allow-host", "http://x/"], "argument --allow-host: 'http://x/' is not a host name"),
    (["--token", "x", "--no-token"], "not allowed with argument"),
])
def test_bad_serve_options_are_usage_errors(capsys, args, expected):
    with pytest.raises(SystemExit) as e:
        main(["serve", "spec.yaml", *args])
    assert e.value.code == 2 and expected in capsys.readouterr().err
