"""The read API of stored traces: ``/api/traces`` (the list, ``_http.trace_list``), a conversation's
timeline and progress, a job's trace and its read-only replay document, a trace's spans as OTLP JSON (what
``toolspan.replay`` reads), and ``/healthz``. A trace this replica does not hold is read from Tempo or Jaeger
when the server names one (``--tempo``, ``--jaeger``); the list then holds Jaeger's recent runs too
(``_http.backend_list``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from toolspan.bridge import to_otlp_json
from toolspan.bridge.model import Span
from toolspan.server._http import backend_list, trace_list
from toolspan.server._http.endpoints import JSON, LINES
from toolspan.server._http.jsonio import JSONResponse, error
from toolspan.server._http.params import trace_id_param
from toolspan.server._http.render import document_bytes, render, tree_document
from toolspan.server._http.state import ServerState
from toolspan.server._store.remote import RemoteError

__all__ = ["conversation", "healthz", "job", "listing", "otlp", "rendered"]


def _missing(param: str, raw: str) -> Response:
    return error(404, f"no {'job' if param == 'job_id' else 'trace'} {raw!r}")


async def rendered(
    state: ServerState, request: Request, param: str, what: Hashable, make: Callable[[Sequence[Span]], bytes]
) -> tuple[str, bytes] | Response:
    """``(trace id, make(spans))`` of the trace named by path parameter ``param``, or a JSON 404 (a 502
    naming the backend and what went wrong when Tempo or Jaeger failed to answer): the bytes kept for
    ``what`` when the trace has not changed since they were made. A trace held here is read and made in one
    trip to the thread pool (``_held``); one the store does not hold is read from Tempo or Jaeger when the
    server names one (``TraceSource.elsewhere``; the store is not read again), never kept."""
    raw = request.path_params[param]
    trace_id = trace_id_param(raw)
    if trace_id is None:
        return _missing(param, raw)
    made = await run_in_threadpool(_held, state, trace_id, what, make)
    if made is not None:
        return trace_id, made
    try:
        spans = await state.traces.elsewhere(trace_id)
    except RemoteError as e:
        return error(502, f"trace {raw!r}: not held here, and the trace backend failed: {e}")
    if not spans:
        return _missing(param, raw)
    return trace_id, await run_in_threadpool(make, spans)


def _held(
    state: ServerState, trace_id: str, what: Hashable, make: Callable[[Sequence[Span]], bytes]
) -> bytes | None:
    """In the thread pool: the bytes of ``what`` of a trace held here, kept or made (``None`` when the store
    holds none of its spans). Each hand-off to the pool costs about as much as making a small trace's view,
    so its version, spans and bytes are read together. The version is read before the spans, so bytes are
    never kept under a version newer than the spans they were made of; a trace without one (no summary row:
    a trace's spans are written and dropped with it) is not held here, and its spans are not looked for."""
    renders, store = state.renders, state.store
    version = None
    if renders.max_bytes:
        version = store.trace_version(trace_id)
        if version is None:
            return None
        kept = renders.get((trace_id, what), version)
        if kept is not None:
            return kept
    spans = store.trace_spans(trace_id)
    if not spans:
        return None
    body = make(spans)
    if version is not None:
        renders.put((trace_id, what), version, body, len(spans))
    return body


async def healthz(state: ServerState, request: Request) -> Response:
    """``GET /healthz``: the store's counts and the streams'."""
    counts = await state.counts.get()
    return JSONResponse(
        {
            "status": "ok",
            **counts,
            "count_scans": state.counts.scans,
            "streams": state.streams,
            "dropped_stream_clients": state.dropped_clients,
            "relayed_text_deltas": state.deltas.relayed,
            "renders": state.renders.stats(),
            "decoded_spans": state.store.decoded.stats(),
            "parse_pipe_bytes": state.parsers.pipe_bytes,
        }
    )


async def listing(state: ServerState, request: Request) -> Response:
    """``GET /api/traces``: one page of trace summaries (with the backend's runs when the server names one:
    a 502 naming it and what went wrong when it failed to answer)."""
    config = state.config
    params = dict(request.query_params)
    try:
        if config.tempo_url or config.jaeger_url:
            page: dict[str, Any] = await run_in_threadpool(
                functools.partial(backend_list.list_traces, timeout_s=config.backend_timeout_s),
                state.store,
                params,
                config.idle_timeout_s,
                config.tempo_url,
                config.jaeger_url,
            )
        else:
            page = await run_in_threadpool(trace_list.list_traces, state.store, params, config.idle_timeout_s)
    except trace_list.QueryError as e:
        return error(400, str(e))
    except RemoteError as e:
        return error(502, f"the runs of the trace backend: {e}")
    return JSONResponse(page)


async def conversation(state: ServerState, request: Request) -> Response:
    """``GET /api/conversations/{id}/timeline`` and ``.../progress``."""
    conversation_id = request.path_params["conversation_id"]
    spans = await run_in_threadpool(state.store.conversation_spans, conversation_id)
    if not spans:
        return error(404, f"no conversation {conversation_id!r}")
    progress = request.url.path.endswith("/progress")
    body = await run_in_threadpool(render, "progress" if progress else "timeline", spans)
    return Response(body, media_type=LINES if progress else JSON)


async def job(state: ServerState, request: Request) -> Response:
    """``GET /api/jobs/{id}/trace`` (the tree) and ``.../replay`` (the tree document, read-only)."""
    replay = request.url.path.endswith("/replay")
    what, make = ("replay", _replay) if replay else ("tree", _tree)
    made = await rendered(state, request, "job_id", what, make)
    if isinstance(made, Response):
        return made
    return Response(made[1], media_type=JSON)


def _tree(spans: Sequence[Span]) -> bytes:
    return render("tree", spans)


def _replay(spans: Sequence[Span]) -> bytes:
    return document_bytes({**tree_document(spans), "read_only": True})


async def otlp(state: ServerState, request: Request) -> Response:
    """``GET /api/traces/{id}/otlp``: the trace's spans as OTLP JSON, log records joined as span events."""
    made = await rendered(state, request, "trace_id", "otlp", _otlp)
    if isinstance(made, Response):
        return made
    return Response(made[1], media_type=JSON)


def _otlp(spans: Sequence[Span]) -> bytes:
    return document_bytes(to_otlp_json(spans))
