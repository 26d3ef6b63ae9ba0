"""Who may do what on ``toolspan serve``: its bearer tokens and what each may do, read one way for OTLP/HTTP,
the read API, the control channel and OTLP/gRPC alike (``Tokens``), checked on every HTTP request
(``BearerAuth``), on every OTLP/gRPC export (``ingest_check``) and, for deciding and cancelling, by
``decider``.

Two kinds of token:

- the application's (``--token`` / ``TOOLSPAN_SERVER_TOKEN``): it may send spans (``ingest``) and read
  (``read``: the API, pages, streams, and the control channel's GET routes an application long-polls); it
  never decides or cancels;
- deciders' (``--decider NAME=TOKEN``, repeatable, or ``TOOLSPAN_DECIDERS=name=token,...``): each may read
  and ``decide`` (decide and cancel tool calls through the control channel), never send spans. A decision
  or cancel request is recorded as made by the name of the decider token that made it.

Without any token sent, a client may do what the server leaves open: ingest and read when it has no
application token, nothing otherwise. A token is ``Authorization: Bearer <token>`` with the scheme in any
case, the token exactly as sent, surrounding whitespace dropped (RFC 6750); every token of the server is
compared with it in constant time (all of them, whichever matches).

Guessing a token is slowed down per client address (``FailureThrottle``): after ``--auth-failures`` wrong
tokens from one address within ``--auth-window`` seconds, that address's requests carrying a token are
answered 429 with ``Retry-After`` (a right token included, so a guess cannot be confirmed) until its oldest
failure is that old. Other addresses are never refused for it, and the table of addresses is bounded.
"""

from __future__ import annotations

import collections
import hmac
import logging
import math
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from typing import Final, NamedTuple

from starlette.requests import Request
from starlette.routing import compile_path
from starlette.types import ASGIApp, Receive, Scope, Send

from toolspan.server._http.config import ServerConfig
from toolspan.server._http.jsonio import JSONResponse, Refused, error

__all__ = [
    "ACCESS_KEY",
    "ANY_TOKEN",
    "DECIDE",
    "INGEST",
    "PUBLIC",
    "READ",
    "WITHOUT_TOKEN",
    "Access",
    "BearerAuth",
    "FailureThrottle",
    "Needs",
    "Tokens",
    "access_of",
    "bearer_token",
    "decider",
    "decider_problem",
    "ingest_check",
    "token_matches",
]

INGEST: Final = "ingest"
READ: Final = "read"
DECIDE: Final = "decide"
_ORDER: Final = (INGEST, READ, DECIDE)
_logger = logging.getLogger(__name__)
# A decider's name is what decisions record as ``by``: short, printable, no separators of the flag's format.
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")


def bearer_token(value: bytes | str) -> bytes:
    """The token of one ``Authorization`` value, ``b""`` when it is no bearer credential."""
    raw = value.encode("latin-1", "replace") if isinstance(value, str) else bytes(value)
    raw = raw.strip()
    if raw[:7].lower() != b"bearer ":
        return b""
    return raw[7:].strip()


def token_matches(given: bytes, expected: bytes) -> bool:
    """Whether ``given`` is the token ``expected`` (constant time; an empty token never matches)."""
    return bool(given) and hmac.compare_digest(given, expected)


class Access(NamedTuple):
    """What one request's token may do: ``name`` (the decider's, else ``None``) and ``can`` (a subset of
    ``ingest``, ``read``, ``decide``); ``known`` is false for a token the server does not hold."""

    name: str | None
    can: frozenset[str]
    known: bool = True

    def listed(self) -> list[str]:
        """``can`` in its fixed order (``/api/whoami``)."""
        return [c for c in _ORDER if c in self.can]


class Tokens:
    """The tokens of one server: the application's (``token``) and the deciders' (``name -> token``)."""

    def __init__(self, token: str | None, deciders: Sequence[tuple[str, str]] = ()) -> None:
        self.app = token.encode() if token else None
        self.deciders = tuple((name, secret.encode()) for name, secret in deciders)

    @property
    def any(self) -> bool:
        """Whether the server has any token (else every request is anonymous and may ingest and read)."""
        return self.app is not None or bool(self.deciders)

    @property
    def anonymous(self) -> Access:
        """What a request without a token may do."""
        return Access(None, frozenset() if self.app is not None else frozenset({INGEST, READ}))

    def access(self, given: bytes) -> Access:
        """What the token ``given`` may do (``b""``: none sent). Every token is compared, in constant time,
        whichever matches; a token the server does not hold is ``known=False`` with what anonymous may do."""
        if not given:
            return self.anonymous
        found: Access | None = None
        if self.app is not None and hmac.compare_digest(given, self.app):
            found = Access(None, frozenset({INGEST, READ}))
        for name, secret in self.deciders:
            if hmac.compare_digest(given, secret) and found is None:
                found = Access(name, frozenset({READ, DECIDE}))
        if found is not None:
            return found
        return self.anonymous._replace(known=False)


def decider_problem(token: str | None, deciders: Sequence[tuple[str, str]]) -> str | None:
    """Why the server cannot start with these tokens (``None`` when it can): a decider token equal to the
    application's (whoever sends spans could decide), two deciders sharing a token or a name, or a name that
    cannot be recorded as ``by``."""
    names: set[str] = set()
    secrets: set[str] = set()
    for name, secret in deciders:
        if not _NAME.fullmatch(name):
            return (
                f"decider name {name[:80]!r} is not 1-64 letters, digits or . _ @ + - (starting with a letter"
                " or a digit)"
            )
        if name in names:
            return f"two deciders are named {name!r}: each decider token has a name of its own"
        if token is not None and hmac.compare_digest(secret.encode(), token.encode()):
            return (
                f"decider {name!r} has the application's token (--token): what may send spans may not decide;"
                " give each decider a token of its own"
            )
        if secret in secrets:
            return f"decider {name!r} shares its token with another decider: each decider needs its own token"
        names.add(name)
        secrets.add(secret)
    return None


def ingest_check(
    token: str | None, throttle: FailureThrottle | None = None
) -> Callable[[str | None, str], tuple[bool, float]] | None:
    """What OTLP/gRPC checks of an export's ``authorization`` metadata (``None``: none sent) from a client
    address: ``(admitted, wait_s)``, the application's token admitted, when the server has one (``None``:
    every export may send). A wrong token counts against the address in ``throttle``, as over HTTP; an
    address past its limit is refused for ``wait_s`` seconds, whatever it sends."""
    if token is None:
        return None
    expected = token.encode()

    def check(value: str | None, client: str) -> tuple[bool, float]:
        if throttle is not None:
            wait = throttle.wait_s(client)
            if wait > 0:
                return False, wait
        if token_matches(bearer_token(value or b""), expected):
            return True, 0.0
        if throttle is not None:
            throttle.failed(client)
        return False, 0.0

    return check


# --- HTTP ----------------------------------------------------------------------------------------------

ACCESS_KEY: Final = "toolspan_access"
# Set on the scope of a page request that came without a token the server holds: the page is served
# holding no data, and asks for the token.
WITHOUT_TOKEN: Final = "toolspan.without_token"
# What a route needs beyond ``INGEST`` and ``READ``: nothing at all (``/healthz``), or only that a token
# sent be one the server holds (``/api/whoami``).
PUBLIC: Final = "public"
ANY_TOKEN: Final = "any token"


def access_of(scope: Scope) -> Access:
    """What the request's token may do (set by ``BearerAuth``; anonymous when it did not run)."""
    found = scope.get("state", {}).get(ACCESS_KEY)
    return found if isinstance(found, Access) else Access(None, frozenset({INGEST, READ}))


class Needs:
    """What each route needs of a request's token, and which routes are HTML pages, from the routes'
    ``(method, path, need, page)`` (Starlette paths). A path that needs nothing (``PUBLIC``) or any token
    the server holds (``ANY_TOKEN``) needs that whatever the method; anything else not listed is a read."""

    def __init__(self, routes: Iterable[tuple[str, str, str, bool]]) -> None:
        self._exact: dict[str, list[tuple[str, str, bool]]] = {}
        self._patterns: list[tuple[re.Pattern[str], tuple[str, str, bool]]] = []
        for method, path, need, page in routes:
            if "{" in path:
                self._patterns.append((compile_path(path)[0], (method, need, page)))
            else:
                self._exact.setdefault(path, []).append((method, need, page))

    def __call__(self, method: str, path: str) -> tuple[str, bool]:
        """``(need, page)`` of a request (a HEAD as its GET)."""
        method = "GET" if method == "HEAD" else method
        routes = self._exact.get(path) or [r for pattern, r in self._patterns if pattern.match(path)]
        for route_method, need, page in routes:
            if route_method == method:
                return need, page
        opened = [need for _, need, _ in routes if need in (PUBLIC, ANY_TOKEN)]
        return (opened[0] if opened else READ), False


class FailureThrottle:
    """Wrong bearer tokens per client address: after ``limit`` of them within ``window_s`` seconds an address
    waits (``wait_s``) until the oldest is ``window_s`` old. At most ``max_clients`` addresses are held (the
    one that failed least lately is forgotten first), so memory stays bounded whatever the addresses.
    ``clock``: monotonic seconds (tests give their own). ``limit`` 0: no limit."""

    def __init__(
        self,
        limit: int,
        window_s: float,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window_s = window_s
        self.max_clients = max_clients
        self.clock = clock
        self._failures: collections.OrderedDict[str, collections.deque[float]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._failures)

    def wait_s(self, client: str) -> float:
        """Seconds ``client`` must wait before a token it sends is looked at again (0: none)."""
        if self.limit <= 0:
            return 0.0
        with self._lock:
            times = self._failures.get(client)
            if times is None or len(times) < self.limit:
                return 0.0
            return max(0.0, times[0] + self.window_s - self.clock())

    def failed(self, client: str) -> None:
        """``client`` sent a token the server does not hold."""
        if self.limit <= 0:
            return
        now = self.clock()
        with self._lock:
            times = self._failures.pop(client, None)
            if times is None:
                times = collections.deque(maxlen=self.limit)
            while times and times[0] <= now - self.window_s:
                times.popleft()
            times.append(now)
            self._failures[client] = times
            while len(self._failures) > self.max_clients:
                self._failures.popitem(last=False)
        if len(times) == self.limit:
            _logger.warning(
                "toolspan serve: %d wrong tokens from %s within %g s: its requests wait",
                self.limit,
                client,
                self.window_s,
            )


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "?"


class BearerAuth:
    """Refuse requests whose token may not do what they ask: without a token a request may do what the server
    leaves open, a token the server does not hold is a 401, the application's token may send spans and read,
    a decider's may read (and decide: ``decider`` checks that). What each route needs is the routes' own
    (``needs``): sending spans (``POST /v1/traces`` and ``/v1/logs``), nothing (``/healthz``), a token the
    server holds if any is sent (``/api/whoami``), else a read; CORS preflights pass. A GET may carry the
    token as ``?access_token=`` instead (browsers' ``EventSource`` cannot set headers); a write never. What
    the token may do is left in the request's state for the routes (``access_of``). A browser asking for a
    page (the trace list, the inbox, a trace page) without a token the server holds gets the page without
    its data (``WITHOUT_TOKEN`` on the scope): it asks for the token, where a 401 in JSON greeted it at the
    very address the banner printed."""

    def __init__(
        self, app: ASGIApp, tokens: Tokens, needs: Needs, throttle: FailureThrottle | None = None
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.needs = needs
        self.throttle = throttle if throttle is not None else FailureThrottle(0, 1.0)

    def _given(self, scope: Scope) -> bytes:
        given = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = bearer_token(value)
        if not given and scope["method"] == "GET":
            query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
            # Percent-escapes decode as UTF-8 (any text, never an error), as the token given is encoded.
            given = query.get("access_token", [""])[0].encode("utf-8", "surrogatepass")
        return given

    def _refusal(self, access: Access, need: str) -> JSONResponse | None:
        if need == PUBLIC:
            return None
        if not access.known and (self.tokens.app is not None or need == ANY_TOKEN):
            return error(401, "missing or wrong bearer token")
        if need == ANY_TOKEN or need in access.can:
            return None
        if access.name is not None:  # a decider's token: it reads and decides, never sends spans
            return error(
                403, "a decider token may not send spans: the application exports with its own token"
            )
        return error(401, "missing or wrong bearer token")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = self._given(scope) if self.tokens.any else b""
        if given and scope["method"] != "OPTIONS" and (wait := self.throttle.wait_s(_client(scope))) > 0:
            await _too_many(wait)(scope, receive, send)
            return
        access = self.tokens.access(given)
        scope.setdefault("state", {})[ACCESS_KEY] = access
        if scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        if given and not access.known:
            self.throttle.failed(_client(scope))
        need, page = self.needs(scope["method"], scope["path"])
        refused = self._refusal(access, need)
        if refused is not None and refused.status_code == 401 and page:
            await self.app({**scope, WITHOUT_TOKEN: True}, receive, send)
            return
        if refused is not None:
            if refused.status_code == 401:
                refused.headers["www-authenticate"] = "Bearer"
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _too_many(wait_s: float) -> JSONResponse:
    seconds = max(1, math.ceil(wait_s))
    refused = error(
        429,
        f"too many wrong bearer tokens from this address: retry in {seconds} s",
        {"retry_after_s": seconds},
    )
    refused.headers["retry-after"] = str(seconds)
    return refused


def decider(request: Request, config: ServerConfig) -> str:
    """The name of the decider token of a request that decides or cancels, after its guards (else
    ``Refused``): the server has deciders, the token came in the ``Authorization`` header (never a URL) and
    is a decider's, the request comes from this server's own origin (or a ``--cors-origin``), and its body
    is JSON."""
    if not config.deciders:
        raise Refused(
            403,
            "deciding and cancelling need a decider token, and this server has none: start toolspan serve"
            " with --decider NAME=TOKEN (or TOOLSPAN_DECIDERS=name=token) and send that token as"
            " Authorization: Bearer <token>",
        )
    sent = any(name == b"authorization" and bearer_token(value) for name, value in request.headers.raw)
    if not sent:
        raise Refused(
            401,
            "deciding needs a decider token in the Authorization header (Bearer <token>), never in a URL",
        )
    access = access_of(request.scope)
    if DECIDE not in access.can or access.name is None:
        if access.known:
            raise Refused(
                403,
                "the application's token may send spans and read, never decide or cancel: deciding needs a"
                " decider token (toolspan serve --decider NAME=TOKEN)",
            )
        raise Refused(401, "missing or wrong decider token (send it as Authorization: Bearer <token>)")
    origin = request.headers.get("origin")
    if origin is not None and not _same_origin(origin, request, config.cors_origins):
        raise Refused(403, f"requests from origin {origin[:100]!r} may not decide or cancel here")
    media = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise Refused(415, f"the body must be application/json, got {media[:60] or 'no content type'!r}")
    return access.name


def _same_origin(origin: str, request: Request, cors_origins: Sequence[str]) -> bool:
    if origin in cors_origins:
        return True
    parsed = urllib.parse.urlsplit(origin)
    host = request.headers.get("host")
    return parsed.scheme in ("http", "https") and host is not None and parsed.netloc == host
