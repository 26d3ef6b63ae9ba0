"""HTTP pieces of ``toolspan serve`` shared by its routes: the JSON error, bearer-token authentication
(``--token``), the Host check against DNS rebinding (``--allowed-host``), the security headers of every
response, and the trace id of a path."""

from __future__ import annotations

import base64
import html
import ipaddress
import logging
import re
import urllib.parse
from collections.abc import Iterable
from typing import Final

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolspan.bridge.model import pad_trace_id
from toolspan.server._auth import INGEST, READ, Access, Tokens, bearer_token
from toolspan.server._http.jsonio import JSONResponse

__all__ = [
    "ACCESS_KEY",
    "WITHOUT_TOKEN",
    "BearerAuth",
    "Failures",
    "HostCheck",
    "SecurityHeaders",
    "access_of",
    "allowed_hosts",
    "error",
    "host_allowed",
    "trace_id_param",
]

_logger = logging.getLogger(__name__)
_HEX: Final = frozenset("0123456789abcdef")
_WILDCARDS: Final = frozenset({"", "0.0.0.0", "::", "[::]", "*"})


def error(status: int, message: str) -> JSONResponse:
    """The server's JSON error: ``{"error": message, "status": status}``."""
    return JSONResponse({"error": message, "status": status}, status_code=status)


_OPEN: Final = frozenset({"/healthz", "/api/whoami"})
_INGEST_PATHS: Final = frozenset({"/v1/traces", "/v1/logs"})
# Set on the scope of a page request that came without a token the server holds: the page is served
# holding no data, and asks for the token.
WITHOUT_TOKEN: Final = "toolspan.without_token"


def access_of(scope: Scope) -> Access:
    """What the request's token may do (set by ``BearerAuth``; anonymous when it did not run)."""
    found = scope.get("state", {}).get(ACCESS_KEY)
    return found if isinstance(found, Access) else Access(None, frozenset({INGEST, READ}))


ACCESS_KEY: Final = "toolspan_access"


def is_page(method: str, path: str, pages: frozenset[str]) -> bool:
    """Whether a request asks for one of the HTML pages (``pages``, a trace page, a job's trace page)."""
    if method not in ("GET", "HEAD"):
        return False
    if path in pages:
        return True
    parts = path.split("/")
    return (len(parts) == 3 and parts[1] == "traces" and parts[2] != "") or (
        len(parts) == 6 and parts[1:3] == ["api", "jobs"] and parts[4:] == ["trace", "page"]
    )


class BearerAuth:
    """Refuse requests whose token may not do what they ask (``toolspan.server._auth``): without a token a
    request may do what the server leaves open, a token the server does not hold is a 401, the application's
    token may send spans and read, a decider's may read (and decide: the control routes check that). Sending
    spans is ``POST /v1/traces`` and ``/v1/logs``; ``/healthz``, ``/api/whoami`` and CORS preflights pass;
    everything else is a read. A GET may carry the token as ``?access_token=`` instead (browsers'
    ``EventSource`` cannot set headers); a write never. What the token may do is left in the request's
    state for the routes (``access_of``). A browser asking for a page (``pages``, a trace page) without a
    token the server holds gets the page without its data (``WITHOUT_TOKEN`` on the scope): it asks for
    the token, where a 401 in JSON greeted it at the very address the banner printed."""

    def __init__(self, app: ASGIApp, tokens: Tokens, pages: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.tokens = tokens
        self.pages = pages

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tokens = self.tokens
        given = b""
        if tokens.any:
            for name, value in scope["headers"]:
                if name == b"authorization":
                    given = bearer_token(value)
            if not given and scope["method"] == "GET":
                query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
                # Percent-escapes decode as UTF-8 (any text, never an error), as the token given is encoded.
                given = query.get("access_token", [""])[0].encode("utf-8", "surrogatepass")
        access = tokens.access(given)
        scope.setdefault("state", {})[ACCESS_KEY] = access
        path = scope["path"]
        if scope["method"] == "OPTIONS" or path == "/healthz":
            await self.app(scope, receive, send)
            return
        need = INGEST if path in _INGEST_PATHS and scope["method"] == "POST" else READ
        refused: JSONResponse | None = None
        if not access.known and (tokens.app is not None or path in _OPEN):
            refused = error(401, "missing or wrong bearer token")
        elif path in _OPEN:
            refused = None
        elif need not in access.can:
            if access.name is not None:  # a decider's token: it reads and decides, never sends spans
                refused = error(
                    403, "a decider token may not send spans: the application exports with its own token"
                )
            else:
                refused = error(401, "missing or wrong bearer token")
        if refused is not None and refused.status_code == 401 and is_page(scope["method"], path, self.pages):
            await self.app({**scope, WITHOUT_TOKEN: True}, receive, send)
            return
        if refused is not None:
            if refused.status_code == 401:
                refused.headers["www-authenticate"] = "Bearer"
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)


def trace_id_param(raw: str) -> str | None:
    """A path's trace id as the bridge spells it (32 lowercase hex), from hex or base64; else ``None``."""
    text = raw.strip().lower()
    if text and len(text) <= 32 and set(text) <= _HEX:
        return pad_trace_id(text)
    try:
        decoded = base64.b64decode(raw, validate=True)
    except ValueError:
        return None
    return decoded.hex() if len(decoded) == 16 else None


def _host_name(header: str) -> str:
    """The host name of a ``Host`` header (no port, no brackets, lowercase, no trailing dot)."""
    text = header.strip().lower()
    if text.startswith("["):
        return text[1 : text.find("]")] if "]" in text else text
    return text.rsplit(":", 1)[0].rstrip(".") if text.count(":") <= 1 else text


def _port_ok(header: str) -> bool:
    """Whether the port of a ``Host`` header, if it has one, is a port (1 to 5 ASCII digits up to 65535)."""
    text = header.strip()
    if text.startswith("["):
        end = text.find("]")
        rest = text[end + 1 :] if end >= 0 else ":"
    elif text.count(":") == 1:
        rest = text[text.index(":") :]
    else:
        rest = ""  # no port (or a bare IPv6 address, which has none)
    if not rest:
        return True
    port = rest[1:]
    return rest[0] == ":" and port.isascii() and port.isdigit() and len(port) <= 5 and int(port) <= 65535


def host_allowed(header: str | None, allowed: frozenset[str]) -> bool:
    """Whether a request's ``Host`` may be served. A DNS rebinding attack needs a name its attacker
    controls, so an IP address, ``localhost`` (and ``*.localhost``, which resolve to loopback) and the
    names in ``allowed`` (``*``: every name) pass; any other name does not, and neither does a header whose
    port is not a number."""
    if header is None:
        return True
    if not _port_ok(header):
        return False
    if "*" in allowed:
        return True
    name = _host_name(header)
    if name == "localhost" or name.endswith(".localhost") or name in allowed:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def allowed_hosts(bound: str, extra: Iterable[str]) -> frozenset[str]:
    """The names a server bound to ``bound`` serves besides IP addresses and ``localhost``: the bound
    name itself (unless it is a wildcard address) and each ``--allowed-host``."""
    names = {_host_name(h) if h.strip() != "*" else "*" for h in extra}
    if bound.strip().lower() not in _WILDCARDS:
        names.add(_host_name(bound))
    return frozenset(names)


class Failures:
    """Answer a request whose handler failed unexpectedly with the server's JSON error (500), inside the
    security headers (Starlette's own error page is outside every middleware); the failure is logged with
    its traceback. A response already started cannot be replaced: its connection is closed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except ClientDisconnect:  # its client is gone: nobody to answer
            _logger.debug("toolspan serve: %s %s: the client hung up", scope.get("method"), scope.get("path"))
        except Exception as exc:
            _logger.exception("toolspan serve: %s %s failed", scope.get("method"), scope.get("path"))
            if started:
                raise
            response = error(500, f"the server failed this request ({type(exc).__name__}); see its log")
            await response(scope, receive, send)


class HostCheck:
    """Refuse (403) a request whose ``Host`` names a host this server does not serve (``host_allowed``):
    with the default setup (loopback, no token) a web page could otherwise read every trace and inject
    spans through a name it rebinds to 127.0.0.1."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = None
            for name, value in scope["headers"]:
                if name == b"host":
                    header = value.decode("latin-1")
                    break
            if not host_allowed(header, self.allowed):
                shown = (header or "")[:100]
                why = (
                    f"host {shown!r} has a port that is not a number"
                    if header is not None and not _port_ok(header)
                    else f"host {shown!r} is not served here (a DNS rebinding guard): start toolspan serve"
                    " with --allowed-host NAME to serve a name"
                )
                response = error(403, why)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


_CSP_META: Final = re.compile(
    rb'<meta\s+http-equiv="Content-Security-Policy"\s+content="([^"]*)"', re.IGNORECASE
)
_API_CSP: Final = b"default-src 'none'; frame-ancestors 'none'"
_FIXED: Final = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)


def _html_policy(body: bytes) -> bytes:
    """The policy of an HTML page as a header: its ``<meta>`` policy plus ``frame-ancestors 'none'``
    (which a ``<meta>`` policy cannot carry)."""
    found = _CSP_META.search(body)
    if found is None:
        return b"frame-ancestors 'none'"
    policy = html.unescape(found.group(1).decode("utf-8", "replace")).encode("utf-8")
    return policy.rstrip(b"; ") + b"; frame-ancestors 'none'"


class SecurityHeaders:
    """Every response: ``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY``,
    ``Referrer-Policy: no-referrer`` (a page's URL may carry ``?access_token``) and a
    Content-Security-Policy header with ``frame-ancestors 'none'``: an HTML page's own policy from its
    ``<meta>`` tag, ``default-src 'none'`` for everything else. No other origin can frame a page."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        body = bytearray()

        async def send_with_headers(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.lower() != b"content-security-policy"
                ]
                headers += _FIXED
                html_page = any(
                    k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in headers
                )
                if not html_page:
                    await send({**message, "headers": [*headers, (b"content-security-policy", _API_CSP)]})
                    return
                start = {**message, "headers": headers}
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            # An HTML page (never streamed here): held until complete, then sent with its policy.
            body.extend(message.get("body", b""))
            if message.get("more_body", False):
                return
            policy = _html_policy(bytes(body))
            await send({**start, "headers": [*start["headers"], (b"content-security-policy", policy)]})
            await send({"type": "http.response.body", "body": bytes(body), "more_body": False})

        await self.app(scope, receive, send_with_headers)
