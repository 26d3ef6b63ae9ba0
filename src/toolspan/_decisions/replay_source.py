"""A trace held by ``toolspan serve`` as a replay source: ``toolspan.replay("http://host:port/api/traces/<id>")``.

The trace is fetched whole before the replay starts (``GET /api/traces/{id}/otlp``: OTLP JSON, log records
joined), with the standard library only, and read by the bridge exactly as a file would be. Accepted URLs:
the server's trace URLs (``/api/traces/<id>``, with or without a view after it, ``/traces/<id>``, the page),
the job aliases (``/api/jobs/<id>/replay``, ``/api/jobs/<id>/trace``, ``.../trace/page``), or the server's
base URL with the trace named by ``trace_id=``. A path prefix before them (a reverse proxy) and a query
string (``?access_token=``) are kept.

The bearer token is ``token=``, else ``TOOLSPAN_SERVER_TOKEN`` (the variable ``toolspan serve`` reads its own
from), else none; a redirect is never followed (it would take the token elsewhere). Every failure (server
unreachable, token refused, unknown trace, a body that is not a trace) raises ``SourceError`` with a one-line
reason before anything is replayed. The fetch is bounded: at most ``MAX_BYTES`` of body, within ``DEADLINE_S``
seconds in all (each read within ``TIMEOUT_S``), so a server that sends without end, or a byte a minute, fails
the replay instead of holding it.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Final, TypeGuard

from toolspan._util import env as _env
from toolspan._util.http import OPENER as _OPENER
from toolspan.bridge.model import Span
from toolspan.errors import ToolspanError

__all__ = ["SourceError", "fetch_spans", "is_server_url"]

TIMEOUT_S: Final = 30.0  # each read
DEADLINE_S: Final = 120.0  # the whole fetch
MAX_BYTES: Final = 256 << 20
_CHUNK: Final = 1 << 16
_TRACE_PATH: Final = re.compile(r"^(?P<prefix>.*?)/(?:api/traces|traces|api/jobs)/(?P<id>[^/]+)(?:/.*)?$")


class SourceError(ToolspanError):
    """The trace could not be fetched from the server (the message says why, in one line)."""


def is_server_url(source: object) -> TypeGuard[str]:
    """Whether ``source`` is an ``http://`` or ``https://`` URL (a trace held by ``toolspan serve``)."""
    return isinstance(source, str) and source.lower().startswith(("http://", "https://"))


def _locate(url: str, trace_id: str | None) -> tuple[str, str, str]:
    """``(base URL, trace id, query)`` of a server URL."""
    parts = urllib.parse.urlsplit(url)
    if not parts.netloc:
        raise SourceError(f"{url}: not a server URL (expected http://host:port/api/traces/<trace id>)")
    path = urllib.parse.unquote(parts.path)
    match = _TRACE_PATH.match(path)
    if match is not None:
        prefix, found = match.group("prefix"), match.group("id")
    else:
        prefix, found = path.rstrip("/"), None
    name = found or trace_id
    if not name:
        raise SourceError(
            f"{url}: which trace? Give its URL (.../api/traces/<trace id>) or trace_id= with the server's URL"
        )
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, prefix, "", ""))
    return base, name, parts.query


def _server_message(error: urllib.error.HTTPError) -> str:
    """The server's one-line reason: its JSON ``error``, else the HTTP reason phrase (never a whole page)."""
    text = error.reason if isinstance(error.reason, str) else ""
    try:
        doc = json.loads(error.read(4096))
    except Exception:  # not toolspan's JSON error (a proxy's page, nothing): the status says enough
        doc = None
    if isinstance(doc, dict) and "error" in doc:
        text = str(doc["error"])
    return " ".join(text.split())[:300]


def _read_bounded(reply: Any, where: str, name: str) -> bytes:
    deadline = time.monotonic() + DEADLINE_S
    length = reply.headers.get("Content-Length")
    if length is not None and length.isascii() and length.isdigit() and int(length) > MAX_BYTES:
        raise SourceError(
            f"{where} sent {int(length)} bytes for trace {name!r}; a replay reads at most {MAX_BYTES}"
        )
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = reply.read1(_CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_BYTES:
            raise SourceError(
                f"{where} sent more than {MAX_BYTES} bytes for trace {name!r}; a replay reads no more"
            )
        if time.monotonic() > deadline:
            raise SourceError(f"{where} did not send trace {name!r} within {DEADLINE_S:g} s")
        chunks.append(chunk)


def fetch_spans(url: str, trace_id: str | None = None, token: str | None = None) -> list[Span]:
    """The spans of the trace at ``url`` on a ``toolspan serve`` (see the module docstring)."""
    from toolspan.bridge.readers import BridgeReadError, spans_from_document

    base, name, query = _locate(url, trace_id)
    target = f"{base}/api/traces/{urllib.parse.quote(name, safe='')}/otlp" + (f"?{query}" if query else "")
    token = token if token is not None else _env.get(_env.TOOLSPAN_SERVER_TOKEN)
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    where = f"toolspan serve at {base or url}"
    try:
        with _OPENER.open(urllib.request.Request(target, headers=headers), timeout=TIMEOUT_S) as reply:
            body = _read_bounded(reply, where, name)
    except urllib.error.HTTPError as e:
        if 300 <= e.code < 400:  # never followed: the token goes to the URL given only
            raise SourceError(
                f"{where} redirected trace {name!r} ({e.code}) to {str(e.headers.get('location'))[:120]!r}:"
                " not followed (give the URL it redirects to)"
            ) from None
        message = _server_message(e)
        if e.code == 401:
            hint = "the token given was refused" if token else "pass token= or set TOOLSPAN_SERVER_TOKEN"
            raise SourceError(f"{where} refused the request (401: {message}): {hint}") from None
        if e.code == 404 and message.startswith("no route"):
            raise SourceError(
                f"{where} cannot serve a trace for replay ({message}): an older server?"
            ) from None
        if e.code == 404:
            raise SourceError(f"{where} has no trace {name!r}") from None
        raise SourceError(f"{where} answered {e.code} for trace {name!r}: {message}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = e.reason if isinstance(e, urllib.error.URLError) else e
        raise SourceError(f"cannot reach {where}: {reason}") from None
    try:
        spans = spans_from_document(json.loads(body), origin=target)
    except (ValueError, BridgeReadError) as e:
        raise SourceError(f"{where} sent no readable trace for {name!r}: {e}") from None
    if not spans:
        raise SourceError(f"{where} has no spans for trace {name!r}")
    return spans
