"""Where ``toolspan serve`` listens, and what it says about it: the HTTP socket bound before anything is
announced (so a busy port is one line naming the flag to change, not a traceback), the gRPC port's
failure worded the same way, and the start-up banner naming the trace list first.

The HTTP socket is a ``Listener``: it holds at most ``cap`` accepted connections open at once, and answers
one beyond them 503 and closes it in ``accept`` itself, so a burst of clients can never take the server past
its open-files limit (``connection_cap`` in ``serve`` sets the cap below that limit).

The default ports are OTLP's (4318 HTTP, 4317 gRPC): an application whose OTLP exporter keeps the SDK's
default endpoint reaches ``toolspan serve`` with no setting at all. The price is a clash with a
Collector or Jaeger already listening there, hence the message.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import weakref
from typing import Final

from toolspan.errors import ToolspanError

__all__ = ["BUSY_RESPONSE", "ListenError", "Listener", "banner", "bind_http", "check_grpc_port", "grpc_error"]

_GRPC_FLAG = "--grpc-port N (-1: no gRPC)"


class ListenError(ToolspanError):
    """A port ``toolspan serve`` cannot listen on; ``str()`` is the one-line message for the operator."""


BUSY_RESPONSE: Final = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: 77\r\n"
    b"retry-after: 1\r\nconnection: close\r\nx-content-type-options: nosniff\r\n"
    b"x-frame-options: DENY\r\nreferrer-policy: no-referrer\r\n"
    b"content-security-policy: default-src 'none'; frame-ancestors 'none'\r\n\r\n"
    b'{"error":"too many open connections: try again in a moment","status":503}    '
)
# Connections refused in one call of ``accept`` at most before it lets the event loop run again.
_REFUSED_PER_CALL: Final = 256


class _Connection(socket.socket):
    """An accepted connection that gives its place back to its listener once: when it is closed, or when it
    is collected unclosed (an event loop that failed to make it a transport drops it)."""

    _give_back: weakref.finalize[[], _Connection] | None = None

    def held_by(self, listener: Listener) -> None:
        listener.open += 1
        self._give_back = weakref.finalize(self, listener.give_back)

    def close(self) -> None:
        if self._give_back is not None:
            self._give_back()  # runs once: later calls, and the collection, do nothing
        super().close()


class Listener(socket.socket):
    """The HTTP port's listening socket, holding at most ``cap`` accepted connections open at once: one
    beyond is answered 503 (``BUSY_RESPONSE``) and closed here, at ``accept``, before the event loop makes a
    transport of it. Refused any later, a burst of clients outran the refusals: asyncio accepts up to its
    backlog per wake-up and closes a refused connection only turns of the loop later, so ``accept`` failed
    with "Too many open files" (logged with a traceback, the port deaf for a second). ``open`` counts the
    accepted connections not closed yet."""

    cap: int = 2**31
    open: int = 0

    def accept(self) -> tuple[socket.socket, object]:
        for _ in range(_REFUSED_PER_CALL):
            fd, address = self._accept()  # type: ignore[attr-defined]
            conn = _Connection(self.family, self.type, self.proto, fileno=fd)
            if self.open < self.cap:
                conn.held_by(self)
                return conn, address
            _refuse(conn)
        raise BlockingIOError(errno.EAGAIN, "refused enough for one turn of the event loop")

    def give_back(self) -> None:
        """A connection of this listener was closed."""
        self.open -= 1


def _refuse(conn: socket.socket) -> None:
    """Answer 503 and close: what the client sent is read first, so closing sends FIN, not a reset that
    could drop the answer before the client reads it."""
    try:
        conn.setblocking(False)
        with contextlib.suppress(OSError):
            conn.recv(65536)
        with contextlib.suppress(OSError):
            conn.send(BUSY_RESPONSE)
    finally:
        conn.close()


def _reason(host: str, port: int, what: str, flag: str, err: BaseException) -> str:
    code = getattr(err, "errno", None)
    if code == errno.EADDRINUSE or "in use" in str(err).lower():
        return (
            f"port {port} on {host} ({what}) is already in use, by another toolspan serve or an OpenTelemetry"
            f" Collector or Jaeger (OTLP's default ports are 4317 and 4318); choose another with {flag}"
        )
    if code == errno.EACCES:
        return f"no permission to listen on {host}:{port} ({what}); choose a port above 1023 with {flag}"
    lines = str(err).splitlines()
    detail = getattr(err, "strerror", None) or (lines[0] if lines else type(err).__name__)
    return f"cannot listen on {host}:{port} ({what}): {detail}; check --host and {flag}"


def bind_http(host: str, port: int) -> Listener:
    """A listening TCP socket on ``host:port`` for uvicorn; ``ListenError`` when that fails."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as e:
        raise ListenError(f"cannot resolve --host {host!r}: {e}") from None
    # A name with both (localhost): IPv4 first, the address clients try when one fails.
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    family, kind, proto, _, address = infos[0]
    sock = Listener(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(2048)
    except OSError as e:
        sock.close()
        raise ListenError(_reason(host, port, "OTLP/HTTP and the API", "--port N", e)) from None
    return sock


def _probe(host: str, port: int) -> OSError | None:
    """Why binding ``host:port`` fails now, or ``None``: grpcio only says "Failed to bind" (and logs it)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as e:
        return OSError(str(e))
    family, kind, proto, _, address = infos[0]
    probe = socket.socket(family, kind, proto)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(address)
    except OSError as e:
        return e
    finally:
        probe.close()
    return None


def check_grpc_port(host: str, port: int) -> None:
    """``ListenError`` when the gRPC port cannot be bound now (asked before grpcio tries and logs)."""
    if port == 0:
        return
    err = _probe(host, port)
    if err is not None:
        raise ListenError(_reason(host, port, "OTLP/gRPC", _GRPC_FLAG, err))


def grpc_error(host: str, port: int, err: BaseException) -> ListenError:
    """The operator's message for a gRPC port grpcio failed to bind."""
    return ListenError(_reason(host, port, "OTLP/gRPC", _GRPC_FLAG, _probe(host, port) or err))


def banner(base: str, grpc: str | None, db: str, token: bool = False) -> str:
    """What ``toolspan serve`` prints on stderr once it listens: the page to open first (and, with a token,
    how: the page asks for it), then the rest."""
    how = (
        "open it in a browser and paste the token when it asks (kept in that tab only); / leads there"
        if token
        else "open it in a browser; / leads there"
    )
    return (
        f"toolspan serve: trace list {base}/traces ({how})\n"
        f"  inbox {base}/inbox (tool calls waiting for a decision)\n"
        f"  OTLP/HTTP {base}/v1/traces" + (f", OTLP/gRPC {grpc}" if grpc else ", no OTLP/gRPC") + "\n"
        f"  API {base}/api/traces; live stream {base}/api/stream (SSE, from the live tail on);"
        f" OpenAPI {base}/openapi.json\n"
        f"  store {db}\n"
    )
