"""Who may use a Brushfire server: the Host header, the Origin of browser requests, and an
access token, checked on every HTTP request and WebSocket handshake by one ASGI
middleware (docs/deploy.md, "Security").

- Host: DNS rebinding points an attacker's name at the server's address; the browser
  then sends `Host: attacker.example`. Only loopback names, the bind address and names
  given with `--allow-host` are served (when bound to every interface, also the
  machine's own names and IP literals, which no rebinding can produce).
- Origin: a browser says which page a request comes from. Same-origin requests and the
  origins given with `--allow-origin` pass; every other origin, `null` included, is
  refused, so no other web page can open a WebSocket or read the API. Requests without
  an Origin (curl, Python clients) pass this check.
- Token: when set, every request carries it: `?token=` (after which the page keeps it
  in an HttpOnly cookie), an `Authorization: token ...` / `Bearer ...` header, or that
  cookie. Compared in constant time.

A refused request gets 403 (host, origin) or 401 (token) with the reason; a refused
WebSocket handshake the same status, so the socket never opens (browsers report close
code 1006). CORS headers go only to allowed origins, never `*`.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
import socket
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs, urlsplit

from brushfire.errors import BrushfireError

WILDCARD_BINDS = {"", "0.0.0.0", "::", "*"}
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}
TOKEN_TEXT = re.compile(r"[A-Za-z0-9._~-]{1,256}")  # travels in URLs and a cookie as is


@dataclass(frozen=True)
class Security:
    """The server's access rules. `token` None: no token needed. `allow_origins`: exact
    origins (`http://localhost:8888`), or `*` for any. `allow_hosts`: extra host names,
    `.example.com` for a domain and its subdomains, or `*` to skip the host check.
    `bind`: the address the server listens on."""

    token: str | None = None
    allow_origins: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    bind: str = "127.0.0.1"
    own_names: frozenset[str] = field(default_factory=frozenset)  # filled in by `for_bind`

    @classmethod
    def for_bind(cls, bind: str, *, token: str | None = None, allow_origins=(),
                 allow_hosts=()) -> Security:
        """Rules for a server bound to `bind`; bound to every interface, the machine's
        own host names are allowed too."""
        if token and not TOKEN_TEXT.fullmatch(token):
            msg = ("an access token is 1-256 letters, digits and . _ ~ - (it travels in URLs); "
                   "leave it out and one is generated")
            raise BrushfireError(msg)
        own: set[str] = set()
        if bind in WILDCARD_BINDS:
            for name in (socket.gethostname(), socket.getfqdn()):
                own.add(_normal_name(name))
        return cls(token=token or None, allow_origins=tuple(normal_origin(o) for o in allow_origins),
                   allow_hosts=tuple(_normal_name(h) for h in allow_hosts), bind=bind,
                   own_names=frozenset(own))

    # --- the three checks: each returns None, or the reason for refusing -----------------

    def host_problem(self, host_header: str | None) -> str | None:
        if host_header is None or "*" in self.allow_hosts:
            return None
        name = host_name(host_header)
        if self.host_allowed(name):
            return None
        return (f"host {name!r} is not allowed (DNS rebinding protection); start the server "
                f"with --allow-host {name} if that name is yours")

    def host_allowed(self, name: str) -> bool:
        if is_loopback(name) or name == _normal_name(self.bind) or name in self.own_names:
            return True
        if self.bind in WILDCARD_BINDS and _is_ip(name):
            return True
        return any(name == h or (h.startswith(".") and (name.endswith(h) or name == h[1:]))
                   for h in self.allow_hosts)

    def origin_problem(self, origin: str | None, host_header: str | None) -> str | None:
        if origin is None or self.origin_allowed(origin, host_header):
            return None
        return (f"origin {origin[:100]!r} is not allowed; start the server with "
                f"--allow-origin {origin[:100]} if that page is yours")

    def origin_allowed(self, origin: str, host_header: str | None) -> bool:
        if "*" in self.allow_origins:
            return True
        if origin.strip().lower() == "null":
            return "null" in self.allow_origins
        o = normal_origin(origin)
        if o in self.allow_origins:
            return True
        netloc = urlsplit(o).netloc
        return host_header is not None and netloc != "" and netloc == _normal_netloc(host_header)

    def token_problem(self, given: str | None) -> str | None:
        if self.token is None:
            return None
        if given is None:
            return ("this server needs its access token: open the URL `brushfire serve` "
                    "printed (it ends in ?token=...), or send the header "
                    "'Authorization: token <token>'")
        if not hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode()):
            return "wrong access token"
        return None

    def cors_origins(self) -> tuple[list[str], str | None]:
        """(origins, origin regex) for the CORS middleware: the allowed origins only."""
        if "*" in self.allow_origins:
            return [], ".*"  # echoes the request's origin; never the literal `*`
        return [o for o in self.allow_origins if o != "null"], None


class SecurityMiddleware:
    """ASGI middleware applying `Security` to every HTTP request and WebSocket handshake."""

    def __init__(self, app, security: Security) -> None:
        self.app, self.security = app, security

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = _headers(scope)
        s = self.security
        token, from_query = _given_token(scope, headers)
        preflight = (scope["type"] == "http" and scope.get("method") == "OPTIONS"
                     and "access-control-request-method" in headers)
        for status, problem in ((403, s.host_problem(headers.get("host"))),
                                (403, s.origin_problem(headers.get("origin"), headers.get("host"))),
                                (401, None if preflight else s.token_problem(token))):
            if problem is not None:
                return await _refuse(scope, receive, send, status, problem, headers)
        if scope["type"] == "http" and from_query and s.token is not None:
            send = _setting_cookie(send, scope, headers, s.token)
        return await self.app(scope, receive, send)


def cookie_name(scope) -> str:
    """The token cookie's name, per port (cookies ignore ports; two servers on one host
    must not overwrite each other's)."""
    server = scope.get("server") or ("", 0)
    return f"brushfire-token-{server[1] or 0}"


def host_name(host_header: str) -> str:
    """The name of a Host header, lower case, without port or trailing dot."""
    h = host_header.strip()
    if h.startswith("["):  # [::1]:8000
        h = h[1:].split("]", 1)[0]
    elif h.count(":") == 1:
        h = h.split(":", 1)[0]
    return _normal_name(h)


def is_loopback(name: str) -> bool:
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def normal_origin(origin: str) -> str:
    """scheme://host[:port] in lower case, without a default port or trailing slash."""
    o = origin.strip().lower().rstrip("/")
    if o in ("*", "null"):
        return o
    parts = urlsplit(o)
    netloc = parts.netloc
    if parts.port is not None and DEFAULT_PORTS.get(parts.scheme) == str(parts.port):
        netloc = netloc.rsplit(":", 1)[0]
    return f"{parts.scheme}://{netloc}"


# --- helpers --------------------------------------------------------------------------------


def _normal_name(name: str) -> str:
    return name.strip().lower().rstrip(".")


def _normal_netloc(host_header: str) -> str:
    h = host_header.strip().lower()
    for port in (":80", ":443"):
        if h.endswith(port):
            return h[: -len(port)]
    return h


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _headers(scope) -> dict[str, str]:
    """Header names (lower case) -> the first value."""
    out: dict[str, str] = {}
    for k, v in scope.get("headers", []):
        out.setdefault(k.decode("latin-1").lower(), v.decode("latin-1"))
    return out


def _given_token(scope, headers: dict[str, str]) -> tuple[str | None, bool]:
    """(the token the request carries, whether it came in the query string)."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if query.get("token"):
        return query["token"][0], True
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() in ("token", "bearer") and value.strip():
        return value.strip(), False
    if "cookie" in headers:
        try:
            cookie = SimpleCookie(headers["cookie"])
        except CookieError:
            return None, False
        morsel = cookie.get(cookie_name(scope))
        if morsel is not None:
            return morsel.value, False
    return None, False


def _setting_cookie(send, scope, headers: dict[str, str], token: str):
    """`send` adding the token cookie to the response start (the page's first load)."""
    secure = scope.get("scheme") == "https" or headers.get("x-forwarded-proto") == "https"
    value = (f"{cookie_name(scope)}={token}; Path=/; HttpOnly; SameSite=Lax"
             + ("; Secure" if secure else ""))

    async def sending(message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []),
                                              (b"set-cookie", value.encode("latin-1"))]}
        await send(message)

    return sending


async def _refuse(scope, receive, send, status: int, problem: str, headers: dict[str, str]) -> None:
    body, kind = _refusal_body(status, problem, headers)
    response_headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode())]
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": status, "headers": response_headers})
        await send({"type": "http.response.body", "body": body})
        return
    message = await receive()  # websocket.connect
    if message["type"] != "websocket.connect":
        return
    if "websocket.http.response" in scope.get("extensions", {}):
        await send({"type": "websocket.http.response.start", "status": status,
                    "headers": response_headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:  # the server answers the handshake with 403
        await send({"type": "websocket.close", "code": 1008,
                    "reason": problem.encode()[:120].decode("utf-8", "ignore")})


def _refusal_body(status: int, problem: str, headers: dict[str, str]) -> tuple[bytes, bytes]:
    if "text/html" in headers.get("accept", ""):
        import html

        page = (f"<!doctype html><title>Brushfire: {status}</title><h1>Brushfire</h1>"
                f"<p>{html.escape(problem)}</p>")
        return page.encode(), b"text/html; charset=utf-8"
    return json.dumps({"detail": problem}).encode(), b"application/json"
