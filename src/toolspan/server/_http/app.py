"""The Starlette application: OTLP/HTTP ingest (traces and logs), the read API and the live streams.

Every handler is a thin shell: bytes in -> bridge readers -> store; store -> bridge views -> bytes out.
The trace page and the trace list (``_http.pages``) are routes like the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sqlite3
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from toolspan.bridge import to_otlp_json
from toolspan.bridge.model import Span
from toolspan.bridge.readers import LogRecord, attach_logs
from toolspan.server._auth import Tokens
from toolspan.server._http import pages as _pages
from toolspan.server._http.auth import (
    WITHOUT_TOKEN,
    BearerAuth,
    Failures,
    HostCheck,
    SecurityHeaders,
    allowed_hosts,
    error,
    trace_id_param,
)
from toolspan.server._http.config import ServerConfig
from toolspan.server._http.control import ControlRoutes
from toolspan.server._http.jsonio import BodyError, JSONResponse, read_body
from toolspan.server._http.openapi import openapi_document
from toolspan.server._http.render import LINES, TARGETS, document_bytes, render, tree_document
from toolspan.server._ingest import otlp as _ingest
from toolspan.server._ingest.parsers import Parsers
from toolspan.server._ingest.records import Row
from toolspan.server._store import query as _query
from toolspan.server._store.api import StoreApi, StoreUnavailable
from toolspan.server._store.db import Cursor, IngestResult
from toolspan.server._store.remote import RemoteError, fetch_remote
from toolspan.server._streams.deltas import DeltaHub, split_deltas, with_deltas
from toolspan.server._streams.frontend import agent_response, frontend_response
from toolspan.server._streams.progress import progress_response
from toolspan.server._streams.sse import EventStreamResponse, Notifier, event_chunks
from toolspan.server._streams.trace import trace_chunks

__all__ = ["ServerHandlers", "build_app"]

_logger = logging.getLogger(__name__)
_NDJSON: Final = "application/x-ndjson"
_RETRY_AFTER_S: Final = 5


async def _stored(store: Any, *args: Any) -> IngestResult:
    """``store(*args)`` in the thread pool; a store that cannot take the request now (a full disk, an I/O
    error, a locked or damaged file) is a retryable 503: OTLP exporters retry 503, never 500."""
    try:
        result: IngestResult = await run_in_threadpool(store, *args)
    except (sqlite3.Error, StoreUnavailable) as e:
        _logger.error("toolspan serve: the store refused an export: %s", e)
        raise _ingest.IngestError(503, f"the store cannot take this request now ({e}): retry") from None
    return result


class ServerHandlers:
    """Holds the store, the stream notifier and the counters of one server."""

    def __init__(self, config: ServerConfig, store: StoreApi) -> None:
        self.config = config
        self.store = store
        self.notifier = Notifier()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.dropped_clients = 0
        self.streams = 0
        self.deltas = DeltaHub(config.delta_buffer, self._drop)
        self.parsers = Parsers(config.parse_workers)
        # Set when the server shuts down: every stream ends its response then (``end_streams``).
        self.ending: asyncio.Event | None = None
        self.control = ControlRoutes(self)  # decide and cancel tool calls (``_http.control``)

    def watch_store(self) -> None:
        """Wake the streams on commits of other replicas, and relay their text deltas (a store shared by
        replicas calls back from a thread of its own; a store of one process never does)."""
        loop = self.loop
        if loop is None:
            return

        def committed(traces: Sequence[str] | None = None, conversations: Sequence[str] = ()) -> None:
            # Another replica's commit: the traces it wrote, when its notification could say (else all).
            self._wake(loop, None if traces is None else set(traces), set(conversations))

        def relayed(records: list[LogRecord]) -> None:
            if not loop.is_closed():
                self.deltas.relay(loop, records, self.store.trace_row)

        def decided() -> None:  # a decision or cancel request stored by another replica
            if not loop.is_closed():
                loop.call_soon_threadsafe(self.control.changes.notify)

        self.store.watch(committed, relayed, decided)

    def end_streams(self) -> None:
        """End every open stream, on the event loop (the server is shutting down)."""
        if self.ending is not None:
            self.ending.set()

    # --- ingest (shared with gRPC) ---

    def ingest_rows(self, rows: list[Row]) -> IngestResult:
        """Store span rows (any thread) and wake the streams; returns the counts."""
        good, rejected, message = _ingest.split_valid(rows)
        result = self.store.ingest_rows(good) if good else IngestResult()
        result.rejected = rejected
        result.message = message
        loop = self.loop
        if loop is not None and good:
            traces = {r.trace_id for r in good}
            self._wake(loop, traces, {r.conversation_id for r in good if r.conversation_id is not None})
        return result

    def _wake(
        self, loop: asyncio.AbstractEventLoop, traces: set[str] | None, conversations: set[str]
    ) -> None:
        """Wake the streams a commit of ``traces`` concerns (any thread; ``None``: every stream). A stream of
        a conversation wakes also for a trace of it whose records written now do not name it: the store says
        which conversations the traces belong to (asked only while such a stream waits)."""
        if traces is not None and self.notifier.conversations_waiting:
            try:
                conversations = conversations | self.store.trace_conversations(sorted(traces))
            except Exception:  # the store cannot say now: every stream looks
                traces = None
        if not loop.is_closed():
            loop.call_soon_threadsafe(self.notifier.notify, traces, conversations)

    def ingest_logs(self, records: list[LogRecord], rejected: int, message: str) -> IngestResult:
        """Store span-tied log records (any thread); returns the counts. Records are joined to their spans
        when a trace is read, so nothing live changes here; text deltas are relayed, never stored."""
        records, deltas = split_deltas(records)
        if deltas and self.loop is not None:
            self.deltas.relay(self.loop, deltas, self.store.trace_row)
        if deltas:
            try:  # to the clients of the other replicas of a shared store
                self.store.publish_deltas(deltas)
            except Exception as e:  # a delta is never stored: its loss must not fail the export
                _logger.warning("toolspan serve: text deltas not sent to the other replicas: %s", e)
        result = self.store.ingest_logs(records) if records else IngestResult()
        result.accepted += len(deltas)
        result.rejected = rejected
        result.message = message
        return result

    async def _read_body(self, request: Request) -> bytes:
        # A client that stops sending its body is cut off (``--read-timeout``), not waited on.
        try:
            return await read_body(request, self.config.max_body_bytes, self.config.read_timeout_s)
        except BodyError as e:
            raise _ingest.IngestError(e.status, e.message) from None

    async def _otlp_body(self, request: Request) -> tuple[str, bytes]:
        """``(media kind, inflated body)`` of an OTLP/HTTP export; ``IngestError`` (413, 415, 400)."""
        kind = _ingest.media_type(request.headers.get("content-type"))
        body = await self._read_body(request)
        encoding = request.headers.get("content-encoding", "identity").strip().lower()
        if encoding == "gzip":
            body = _ingest.inflate(body, self.config.max_body_bytes)
        elif encoding not in ("", "identity"):
            raise _ingest.IngestError(415, f"unsupported content encoding {encoding!r}: use gzip")
        return kind, body

    def _refused(self, request: Request, e: _ingest.IngestError) -> Response:
        _logger.info("toolspan serve: refused an export (%d): %s", e.status, e.message)
        base = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
        kind = _ingest.JSON if base == _ingest.JSON else _ingest.PROTOBUF
        # google.rpc codes: UNAVAILABLE (14) for a request to retry, else INVALID_ARGUMENT (3).
        code = 14 if e.status == 503 else 3
        headers = {"retry-after": str(_RETRY_AFTER_S)} if e.status == 503 else None
        return Response(_ingest.status_body(kind, code, e.message), e.status, headers, media_type=kind)

    async def otlp_traces(self, request: Request) -> Response:
        try:
            kind, body = await self._otlp_body(request)
            rows = await self.parsers.parse(body, kind)
            result = await _stored(self.ingest_rows, rows)
        except _ingest.IngestError as e:
            return self._refused(request, e)
        return Response(_ingest.response_body(kind, result.rejected, result.message), media_type=kind)

    async def otlp_logs(self, request: Request) -> Response:
        try:
            kind, body = await self._otlp_body(request)
            records, rejected, message = await run_in_threadpool(_ingest.parse_logs, body, kind)
            result = await _stored(self.ingest_logs, records, rejected, message)
        except _ingest.IngestError as e:
            return self._refused(request, e)
        return Response(_ingest.logs_response_body(kind, result.rejected, result.message), media_type=kind)

    # --- reads ---

    async def trace_spans(self, trace_id: str) -> list[Span] | None:
        """The spans of a trace: from the store, else from Tempo/Jaeger when configured."""
        spans = await run_in_threadpool(self.store.trace_spans, trace_id)
        if spans:
            return spans
        if self.config.tempo_url or self.config.jaeger_url:
            try:
                remote = await run_in_threadpool(
                    fetch_remote, trace_id, self.config.tempo_url, self.config.jaeger_url
                )
            except RemoteError as e:
                _logger.warning("toolspan serve: %s", e)
                return None
            if not remote:
                return None
            logs = await run_in_threadpool(self.store.trace_logs, trace_id)
            return attach_logs(remote, logs)[0] if logs else remote
        return None

    async def trace_view(self, request: Request) -> Response:
        view = request.path_params["view"]
        found = await self._lookup(request, "trace_id")
        if isinstance(found, Response):
            return found
        body = await run_in_threadpool(render, view, found[1])
        return Response(body, media_type=_NDJSON if view in LINES else "application/json")

    async def _lookup(self, request: Request, param: str) -> tuple[str, list[Span]] | Response:
        """``(trace id, spans)`` of the trace named by path parameter ``param``, or a JSON 404."""
        raw = request.path_params[param]
        trace_id = trace_id_param(raw)
        spans = None if trace_id is None else await self.trace_spans(trace_id)
        if spans is None or trace_id is None:
            return error(404, f"no {'job' if param == 'job_id' else 'trace'} {raw!r}")
        return trace_id, spans

    async def _listing(
        self, request: Request, params: dict[str, str] | None = None
    ) -> dict[str, Any] | Response:
        params = dict(request.query_params) if params is None else params
        try:
            page: dict[str, Any] = await run_in_threadpool(
                _query.list_traces, self.store, params, self.config.idle_timeout_s
            )
        except _query.QueryError as e:
            return error(400, str(e))
        return page

    async def job(self, request: Request) -> Response:
        found = await self._lookup(request, "job_id")
        if isinstance(found, Response):
            return found
        spans = found[1]
        if request.url.path.endswith("/replay"):
            document = await run_in_threadpool(tree_document, spans)
            body = document_bytes({**document, "read_only": True})
        else:
            body = await run_in_threadpool(render, "tree", spans)
        return Response(body, media_type="application/json")

    async def trace_page(self, request: Request) -> Response:
        param = "trace_id" if "trace_id" in request.path_params else "job_id"
        if request.scope.get(WITHOUT_TOKEN):
            # Asked for without the token: the page without its data (nothing said of the trace, not even
            # whether it exists); it reads the data with the token it asks for.
            trace_id = trace_id_param(request.path_params[param])
            if trace_id is None:
                return error(404, f"no trace {request.path_params[param]!r}")
            text = await run_in_threadpool(_pages.trace_page_html, trace_id, None, self._control)
            return HTMLResponse(text)
        found = await self._lookup(request, param)
        if isinstance(found, Response):
            return found
        text = await run_in_threadpool(_pages.trace_page_html, *found, self._control)
        return HTMLResponse(text)

    @property
    def _control(self) -> bool:
        """Whether the pages show the buttons that decide and cancel: deciding needs a decider token."""
        return bool(self.config.deciders)

    async def page_data(self, request: Request) -> Response:
        found = await self._lookup(request, "trace_id")
        if isinstance(found, Response):
            return found
        text = await run_in_threadpool(_pages.page_data, found[1])
        return Response(
            text.encode("utf-8"), media_type="application/json", headers={"cache-control": "no-store"}
        )

    # --- replay source: a trace's spans as OTLP JSON (toolspan.replay reads it) ---

    async def trace_otlp(self, request: Request) -> Response:
        found = await self._lookup(request, "trace_id")
        if isinstance(found, Response):
            return found
        document = await run_in_threadpool(to_otlp_json, found[1])
        return Response(document_bytes(document), media_type="application/json")

    async def home(self, request: Request) -> Response:
        """``/``: the trace list (a browser pointed at the server's address lands on it)."""
        query = request.url.query
        return RedirectResponse("/traces" + (f"?{query}" if query else ""), status_code=307)

    async def trace_list(self, request: Request) -> Response:
        return HTMLResponse(_pages.trace_list_html())

    async def inbox_page(self, request: Request) -> Response:
        return HTMLResponse(_pages.inbox_html())

    async def conversation_timeline(self, request: Request) -> Response:
        conversation_id = request.path_params["conversation_id"]
        spans = await run_in_threadpool(self.store.conversation_spans, conversation_id)
        if not spans:
            return error(404, f"no conversation {conversation_id!r}")
        progress = request.url.path.endswith("/progress")
        body = await run_in_threadpool(render, "progress" if progress else "timeline", spans)
        return Response(body, media_type=_NDJSON if progress else "application/json")

    async def list_traces(self, request: Request) -> Response:
        page = await self._listing(request)
        return page if isinstance(page, Response) else JSONResponse(page)

    async def healthz(self, request: Request) -> Response:
        counts = await run_in_threadpool(self.store.counts)
        counts["log_records"] = await run_in_threadpool(self.store.log_count)
        return JSONResponse(
            {
                "status": "ok",
                **counts,
                "streams": self.streams,
                "dropped_stream_clients": self.dropped_clients,
                "relayed_text_deltas": self.deltas.relayed,
            }
        )

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi_document())

    # --- streams ---

    def _drop(self) -> None:
        self.dropped_clients += 1

    async def stream(self, request: Request) -> Response:
        params = request.path_params
        trace_id: str | None = None
        if "trace_id" in params:
            trace_id = trace_id_param(params["trace_id"])
            if trace_id is None:
                return error(404, f"no trace {params['trace_id']!r}")
        conversation_id = params.get("conversation_id")
        raw = request.headers.get("last-event-id") or request.query_params.get("cursor")
        cursor = None
        live_tail = False
        if raw:
            cursor = Cursor.parse(raw)
            if cursor is None:
                return error(400, f"not a stream cursor: {raw[:80]!r}")
        elif trace_id is None and conversation_id is None and request.query_params.get("from") != "start":
            # The all-traces stream starts at the live tail unless asked for everything kept.
            # (Past every event committed so far, yet not past the clock: not a cursor from the future.)
            cursor = Cursor(await run_in_threadpool(self.store.clock), "f" * 32, "f" * 16, 1)
            live_tail = True
        if trace_id is not None:  # resumable on any replica (``_trace_stream``)
            heartbeat_s = self.config.heartbeat_s
            remote = self.remote_reader(trace_id)
            chunks = trace_chunks(
                self.store, self.notifier, trace_id, cursor, heartbeat_s=heartbeat_s, remote=remote
            )
        else:
            chunks = event_chunks(
                self.store,
                self.notifier,
                cursor,
                trace_id=None,
                conversation_id=conversation_id,
                heartbeat_s=self.config.heartbeat_s,
            )
        if live_tail:
            chunks = _pages.said_after_first(chunks, _pages.LIVE_TAIL_NOTE)
        subscription = self.deltas.subscribe(
            trace_id=trace_id, conversation_id=conversation_id, kind="text_delta"
        )
        return EventStreamResponse(
            self._counted(with_deltas(chunks, subscription)),
            send_timeout_s=self.config.send_timeout_s,
            on_drop=self._drop,
            ending=self.ending,
        )

    def remote_reader(self, trace_id: str) -> Any:
        """Reads the trace from Tempo/Jaeger when configured (for streams of traces not held here)."""
        if self.config.tempo_url or self.config.jaeger_url:
            return functools.partial(self.trace_spans, trace_id)
        return None

    async def progress_stream(self, request: Request) -> Response:
        return await progress_response(self, request)

    async def frontend_stream(self, request: Request) -> Response:
        return await frontend_response(self, request)

    async def ag_ui_agent(self, request: Request) -> Response:
        return await agent_response(self, request)

    async def _counted(self, chunks: Any) -> Any:
        self.streams += 1
        try:
            async for chunk in chunks:
                yield chunk
        finally:
            self.streams -= 1
            await chunks.aclose()

    def routes(self) -> list[Route]:
        views = "{view:str}"
        return [
            Route("/v1/traces", self.otlp_traces, methods=["POST"]),
            Route("/v1/logs", self.otlp_logs, methods=["POST"]),
            Route("/healthz", self.healthz),
            Route("/openapi.json", self.openapi),
            Route("/api/traces", self.list_traces),
            Route("/api/stream", self.stream),
            Route("/api/traces/{trace_id:str}/stream", self.stream),
            Route("/api/traces/{trace_id:str}/progress/stream", self.progress_stream),
            Route("/api/conversations/{conversation_id:str}/progress/stream", self.progress_stream),
            # AG-UI and the AI SDK UI message stream (toolspan.server._streams.frontend).
            Route("/api/traces/{trace_id:str}/ag-ui/stream", self.frontend_stream),
            Route("/api/traces/{trace_id:str}/ai-sdk/stream", self.frontend_stream),
            Route("/api/conversations/{conversation_id:str}/ag-ui/stream", self.frontend_stream),
            Route("/api/conversations/{conversation_id:str}/ai-sdk/stream", self.frontend_stream),
            Route("/api/ag-ui", self.ag_ui_agent, methods=["POST"]),
            *self.control.routes(),
            Route("/api/conversations/{conversation_id:str}/progress", self.conversation_timeline),
            Route("/api/conversations/{conversation_id:str}/stream", self.stream),
            Route("/api/conversations/{conversation_id:str}/timeline", self.conversation_timeline),
            Route("/api/jobs/{job_id:str}/trace", self.job),
            Route("/api/jobs/{job_id:str}/replay", self.job),
            Route("/api/jobs/{job_id:str}/trace/page", self.trace_page),
            Route("/", self.home),
            Route("/traces", self.trace_list),
            Route("/inbox", self.inbox_page),
            Route("/traces/{trace_id:str}", self.trace_page),
            Route("/api/traces/{trace_id:str}/page", self.page_data),
            Route("/api/traces/{trace_id:str}/otlp", self.trace_otlp),
            Route(f"/api/traces/{{trace_id:str}}/{views}", self._checked_view),
        ]

    async def _checked_view(self, request: Request) -> Response:
        if request.path_params["view"] not in TARGETS:
            return error(404, f"no route {request.url.path!r}")
        return await self.trace_view(request)


def build_app(config: ServerConfig, store: StoreApi) -> tuple[Starlette, ServerHandlers]:
    """The ASGI application of ``config`` over ``store``, and the ``ServerHandlers`` behind it (the server's
    state and request handlers)."""
    app = ServerHandlers(config, store)
    middleware: list[Middleware] = [
        Middleware(SecurityHeaders),
        Middleware(Failures),
        Middleware(HostCheck, allowed=allowed_hosts(config.host, config.allowed_hosts)),
    ]
    if config.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(config.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["authorization", "content-type", "content-encoding", "last-event-id"],
            )
        )
    # Always: it also tells the routes what the request's token may do (``auth.access_of``).
    tokens = Tokens(config.token, config.deciders)
    middleware.append(Middleware(BearerAuth, tokens=tokens, pages=_pages.PAGE_PATHS))

    async def not_found(request: Request, exc: Exception) -> Response:
        return error(404, f"no route {request.url.path!r}")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        allowed = getattr(exc, "headers", None) or {}
        response = error(405, f"{request.method[:20]} is not allowed on {request.url.path[:200]!r}")
        if "allow" in {k.lower() for k in allowed}:
            response.headers["allow"] = next(v for k, v in allowed.items() if k.lower() == "allow")
        return response

    async def store_failed(request: Request, exc: Exception) -> Response:
        _logger.error("toolspan serve: the store failed a read: %s", exc)
        response = error(503, f"the store cannot answer now ({exc}): retry")
        response.headers["retry-after"] = str(_RETRY_AFTER_S)
        return response

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        app.loop = asyncio.get_running_loop()
        app.ending = asyncio.Event()
        app.watch_store()
        await app.parsers.start()
        try:
            yield
        finally:
            app.loop = None
            await run_in_threadpool(app.parsers.close)

    starlette = Starlette(
        routes=app.routes(),
        middleware=middleware,
        exception_handlers={
            404: not_found,
            405: not_allowed,
            sqlite3.Error: store_failed,
            StoreUnavailable: store_failed,
        },
        lifespan=lifespan,
    )
    return starlette, app
