"""The guards every response of ``toolspan serve`` passes: the Host check against DNS rebinding
(``--allowed-host``), the security headers, and the server's JSON error for a handler that failed."""

from __future__ import annotations

import html
import ipaddress
import logging
import re
from collections.abc import Iterable
from typing import Final

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolspan.server._http.jsonio import error

__all__ = ["Failures", "HostCheck", "SecurityHeaders", "allowed_hosts", "host_allowed"]

_logger = logging.getLogger(__name__)
_WILDCARDS: Final = frozenset({"", "0.0.0.0", "::", "[::]", "*"})


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
