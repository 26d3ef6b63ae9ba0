"""OTLP/HTTP ingest: ``POST /v1/traces`` and ``POST /v1/logs`` (protobuf or JSON, optionally gzip), stored
before the answer, and answered as OTLP asks (a ``partial_success`` when records were rejected, a
``google.rpc.Status`` when the request was, a retryable 503 when the store cannot take it now)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from toolspan.server._http.jsonio import RETRY_AFTER_S, Refused, read_body
from toolspan.server._http.state import ServerState
from toolspan.server._ingest import otlp
from toolspan.server._ingest.otlp import IngestError
from toolspan.server._rows.errors import STORE_BUSY
from toolspan.server._rows.spans import IngestResult

__all__ = ["RESPONSES", "logs", "traces"]

_logger = logging.getLogger(__name__)

# What an export is answered (the OpenAPI document's, for both routes).
RESPONSES: Final = {
    "400": "malformed body; nothing stored",
    "408": "the body stopped coming for --read-timeout; nothing stored",
    "413": "body (or inflated body) over the size limit",
    "415": "unsupported content type or encoding",
    "503": "the store cannot take it now (a full disk): retry",
}


async def _stored(store: Callable[..., IngestResult], *args: object) -> IngestResult:
    """``store(*args)`` in the thread pool; a store that cannot take the request now (a full disk, an I/O
    error, a locked or damaged file) is a retryable 503: OTLP exporters retry 503, never 500."""
    try:
        return await run_in_threadpool(store, *args)
    except STORE_BUSY as e:
        _logger.error("toolspan serve: the store refused an export: %s", e)
        raise IngestError(503, f"the store cannot take this request now ({e}): retry") from None


async def _body(state: ServerState, request: Request) -> tuple[str, bytes]:
    """``(media kind, inflated body)`` of an OTLP/HTTP export; ``IngestError`` (408, 413, 415, 400)."""
    kind = otlp.media_type(request.headers.get("content-type"))
    limit = state.config.max_body_bytes
    try:  # a client that stops sending its body is cut off (``--read-timeout``), not waited on
        body = await read_body(request, limit, state.config.read_timeout_s)
    except Refused as e:
        raise IngestError(e.status, e.message) from None
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding == "gzip":
        body = otlp.inflate(body, limit)
    elif encoding not in ("", "identity"):
        raise IngestError(415, f"unsupported content encoding {encoding!r}: use gzip")
    return kind, body


def _refused(request: Request, e: IngestError) -> Response:
    _logger.info("toolspan serve: refused an export (%d): %s", e.status, e.message)
    base = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    kind = otlp.JSON if base == otlp.JSON else otlp.PROTOBUF
    # google.rpc codes: UNAVAILABLE (14) for a request to retry, else INVALID_ARGUMENT (3).
    code = 14 if e.status == 503 else 3
    headers = {"retry-after": str(RETRY_AFTER_S)} if e.status == 503 else None
    return Response(otlp.status_body(kind, code, e.message), e.status, headers, media_type=kind)


async def traces(state: ServerState, request: Request) -> Response:
    """``POST /v1/traces``."""
    try:
        kind, body = await _body(state, request)
        prepared = await state.parsers.prepare(body, kind)
        result = await _stored(state.ingest_prepared, prepared)
    except IngestError as e:
        return _refused(request, e)
    return Response(otlp.response_body(kind, result.rejected, result.message), media_type=kind)


async def logs(state: ServerState, request: Request) -> Response:
    """``POST /v1/logs``."""
    try:
        kind, body = await _body(state, request)
        records, rejected, message = await run_in_threadpool(otlp.parse_logs, body, kind)
        result = await _stored(state.ingest_logs, records, rejected, message)
    except IngestError as e:
        return _refused(request, e)
    return Response(otlp.logs_response_body(kind, result.rejected, result.message), media_type=kind)
