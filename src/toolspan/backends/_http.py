"""One GET from a trace backend, standard library only (``urllib``, so the environment's proxies apply), with
every way a backend's answer can go wrong bounded and named in one line (a ``BackendError``):

- **A deadline for the whole answer**: connecting, the status line, the headers and the body, over every
  redirect, end within ``timeout_s`` seconds. Each socket read is given only the time left (``_DeadlineIO``),
  so a backend that trickles a byte a second is given up at the deadline, and the thread reading it (a
  worker of ``toolspan serve``) is free again then.
- **A cap on the size**: a ``Content-Length`` over ``max_bytes`` is refused before anything is read; a body
  without one is read until it passes the cap. The body is read into one ``bytearray``, nothing beside it.
- **Redirects**: at most ``MAX_REDIRECTS``, to ``http://`` and ``https://`` URLs only, the body of a 3xx never
  read. The caller's headers (``--header``: ``Authorization``, cookies, API keys) go to the same origin only
  (scheme, host and port; or ``http`` to ``https`` on the same host and default ports, as requests allows):
  a redirect to another origin is followed without them, as curl and requests do.
- **Errors**: an HTTP status with the first line of the answer (at most 300 bytes of it read), an unreachable
  host, a malformed answer (``http.client``'s own limits on status and header lines), a cut-off body.
"""

from __future__ import annotations

import functools
import http.client
import io
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import IO, Any, Final, cast

from toolspan.errors import BackendError

__all__ = ["MAX_REDIRECTS", "get"]

MAX_REDIRECTS: Final = 5
_CHUNK: Final = 1 << 20  # bytes asked of the socket per read
_DETAIL_BYTES: Final = 300  # of an error answer, read for its first line
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_KEPT_ACROSS_ORIGINS: Final = frozenset({"accept"})


class _Request(urllib.request.Request):
    """A GET with the deadline of its whole exchange (redirects included) and the URL first asked."""

    def __init__(self, url: str, headers: Mapping[str, str], deadline: float, first: str, hops: int = 0):
        super().__init__(url, headers=dict(headers))
        self.deadline = deadline
        self.first = first
        self.hops = hops


class _DeadlineIO(io.RawIOBase):
    """A response's socket reads (``raw``, the response's own ``SocketIO``), each given only the time left."""

    def __init__(self, raw: Any, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._raw = raw
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        self._sock.settimeout(left)
        read: int | None = self._raw.readinto(buffer)
        return read

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _DeadlineResponse(http.client.HTTPResponse):
    """An ``HTTPResponse`` whose status line, headers and body are read within ``deadline``."""

    def __init__(self, sock: socket.socket, *args: Any, deadline: float, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        raw = self.fp.detach()  # the SocketIO, which holds the socket open until it is closed
        self.fp = io.BufferedReader(_DeadlineIO(raw, sock, deadline))


def _connection(base: type[http.client.HTTPConnection], deadline: float) -> Any:
    """What ``do_open`` calls for a connection: ``base`` connecting within the time left, its response read
    within ``deadline``."""

    def make(host: str, **kwargs: Any) -> http.client.HTTPConnection:
        kwargs["timeout"] = max(deadline - time.monotonic(), 0.001)
        connection = base(host, **kwargs)
        cast(Any, connection).response_class = functools.partial(_DeadlineResponse, deadline=deadline)
        return connection

    return make


def _deadline(request: urllib.request.Request) -> float:
    return cast(_Request, request).deadline


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_connection(http.client.HTTPConnection, _deadline(req)), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_connection(http.client.HTTPSConnection, _deadline(req)), req)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port


def same_origin(old: str, new: str) -> bool:
    """Whether ``new`` may be sent the headers given for ``old``: the same scheme, host and port, or ``http``
    to ``https`` on the same host and default ports (as requests allows)."""
    before, after = _origin(old), _origin(new)
    if before == after:
        return True
    return before == ("http", after[1], 80) and after == ("https", before[1], 443)


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows at most ``MAX_REDIRECTS`` redirects to ``http(s)://`` URLs, within the first request's
    deadline; the caller's headers go to the same origin only; a redirect's body is never read."""

    def http_error_302(
        self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: Any
    ) -> Any:
        asked = cast(_Request, req)
        location = headers.get("Location") or headers.get("URI")
        if not location:
            return None  # the 3xx is then an HTTPError
        fp.close()
        target = urllib.parse.urljoin(req.full_url, location.strip().replace(" ", "%20"))
        if urllib.parse.urlsplit(target).scheme.lower() not in _DEFAULT_PORTS:
            raise BackendError(
                f"{asked.first}: HTTP {code}: redirected to {target[:200]!r}, not an http:// or https:// URL"
            )
        if asked.hops >= MAX_REDIRECTS:
            raise BackendError(
                f"{asked.first}: more than {MAX_REDIRECTS} redirects (the last to {target[:200]})"
            )
        given = dict(req.header_items())
        if not same_origin(req.full_url, target):
            given = {k: v for k, v in given.items() if k.lower() in _KEPT_ACROSS_ORIGINS}
        follow = _Request(target, given, asked.deadline, asked.first, asked.hops + 1)
        return self.parent.open(follow, timeout=req.timeout)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


_OPENER: Final = urllib.request.build_opener(_HTTPHandler, _HTTPSHandler, _Redirects)


def _first_line(body: bytes) -> str:
    text = body[:_DETAIL_BYTES].decode("utf-8", "replace").strip().splitlines()
    return text[0][:200] if text else ""


def _read_body(response: http.client.HTTPResponse, url: str, max_bytes: int) -> bytearray:
    """The whole body, in one ``bytearray``; ``BackendError`` when over ``max_bytes`` or cut off."""
    length = response.length
    if length is not None and length > max_bytes:
        raise BackendError(f"{url}: answer over {max_bytes:,} bytes (Content-Length: {length:,})")
    body = bytearray()
    while True:
        chunk = response.read1(_CHUNK)
        if not chunk:
            break
        body += chunk
        if len(body) > max_bytes:
            raise BackendError(f"{url}: answer over {max_bytes:,} bytes")
    if response.length:  # the connection closed before Content-Length bytes came
        raise BackendError(
            f"{url}: answer cut off after {len(body):,} bytes of {len(body) + response.length:,}"
        )
    return body


def get(
    url: str, headers: Mapping[str, str], *, timeout_s: float, max_bytes: int, where: str | None = None
) -> bytearray | None:
    """The body of ``GET url`` read within ``timeout_s`` seconds in all; ``None`` on 404; ``BackendError``,
    one line naming ``where`` (``url`` by default: a name without the query reads better), on anything
    else."""
    deadline = time.monotonic() + timeout_s
    request = _Request(url, headers, deadline, where or url)
    url = where or url
    try:
        with _OPENER.open(request, timeout=timeout_s) as response:
            return _read_body(response, url, max_bytes)
    except urllib.error.HTTPError as e:
        with e:
            if e.code == 404:
                return None
            try:
                detail = _first_line(e.read(_DETAIL_BYTES))
            except (OSError, http.client.HTTPException):
                detail = ""
        raise BackendError(f"{url}: HTTP {e.code}" + (f": {detail}" if detail else "")) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        if isinstance(reason, TimeoutError) or time.monotonic() >= deadline:
            raise BackendError(f"{url}: no complete answer within {timeout_s:g} s") from None
        text = str(reason).splitlines()[0][:200] if str(reason).strip() else type(reason).__name__
        raise BackendError(f"{url}: {text}") from None
