"""The live streams (server-sent events, ``_streams``): act/observe events of every trace, of one trace and of
one conversation, resumable from a cursor (``Last-Event-ID`` or ``?cursor=``); progress envelopes, resumable
from a bookmark (``Last-Event-ID`` or ``?since=``); the AG-UI and AI SDK UI message streams, resumable from an
event number; and the AG-UI agent endpoint (``POST /api/ag-ui``). Text deltas are relayed on all of them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from toolspan.server._http.jsonio import Refused, error, parse_object, read_body
from toolspan.server._http.params import trace_id_param
from toolspan.server._http.state import ServerState
from toolspan.server._rows.cursor import Cursor
from toolspan.server._streams.deltas import with_deltas
from toolspan.server._streams.events import LIVE_TAIL_NOTE, event_chunks, live_tail
from toolspan.server._streams.frontend import (
    AG_UI,
    LINGER_S,
    PROTOCOLS,
    StreamTimes,
    UiProtocol,
    input_problem,
    stream_chunks,
)
from toolspan.server._streams.progress import parse_since, progress_chunks
from toolspan.server._streams.readers import Reader, conversation_reader, trace_reader
from toolspan.server._streams.sse import said_after_first
from toolspan.server._streams.trace import trace_chunks

__all__ = ["agent", "events", "frontend", "progress"]

_MAX_INPUT_BYTES: Final = 4 << 20
_MAX_DEPTH: Final = 100


def _reader(state: ServerState, request: Request) -> tuple[str | None, str | None, Reader] | Response:
    """``(trace id, conversation id, reader)`` of a view stream's path, or a JSON 404."""
    idle_s = state.config.idle_timeout_s
    if "trace_id" in request.path_params:
        trace_id = trace_id_param(request.path_params["trace_id"])
        if trace_id is None:
            return error(404, f"no trace {request.path_params['trace_id']!r}")
        return trace_id, None, trace_reader(state.store, trace_id, idle_s, state.traces.remote(trace_id))
    conversation_id = request.path_params["conversation_id"]
    return None, conversation_id, conversation_reader(state.store, conversation_id, idle_s)


async def events(state: ServerState, request: Request) -> Response:
    """``/api/stream``, ``/api/traces/{id}/stream``, ``/api/conversations/{id}/stream``."""
    params = request.path_params
    trace_id: str | None = None
    if "trace_id" in params:
        trace_id = trace_id_param(params["trace_id"])
        if trace_id is None:
            return error(404, f"no trace {params['trace_id']!r}")
    conversation_id = params.get("conversation_id")
    field, raw = _resumed_from(request, "cursor")
    cursor = None
    starts_live = False
    if raw:
        cursor = Cursor.parse(raw)
        if cursor is None:
            return error(400, f"{field}: not a stream cursor: {raw[:80]!r}")
    elif trace_id is None and conversation_id is None and request.query_params.get("from") != "start":
        # The all-traces stream starts at the live tail unless asked for everything kept.
        cursor = live_tail(await run_in_threadpool(state.store.clock))
        starts_live = True
    heartbeat_s = state.config.heartbeat_s
    chunks: AsyncIterator[bytes]
    if trace_id is not None:  # resumable on any replica (``_streams.trace``)
        remote = state.traces.remote(trace_id)
        chunks = trace_chunks(
            state.store, state.notifier, trace_id, cursor, heartbeat_s=heartbeat_s, remote=remote
        )
    else:
        chunks = event_chunks(
            state.store,
            state.notifier,
            cursor,
            trace_id=None,
            conversation_id=conversation_id,
            heartbeat_s=heartbeat_s,
        )
    if starts_live:
        chunks = said_after_first(chunks, LIVE_TAIL_NOTE)
    subscription = state.deltas.subscribe(
        trace_id=trace_id, conversation_id=conversation_id, kind="text_delta"
    )
    return state.stream_response(with_deltas(chunks, subscription))


async def progress(state: ServerState, request: Request) -> Response:
    """``/api/traces/{id}/progress/stream`` and ``/api/conversations/{id}/progress/stream``."""
    field, raw = _resumed_from(request, "since")
    since = parse_since(raw) if raw else 0
    if since is None:
        return error(400, f"{field}: not a progress bookmark: {(raw or '')[:80]!r}")
    found = _reader(state, request)
    if isinstance(found, Response):
        return found
    trace_id, conversation_id, read = found
    chunks = progress_chunks(
        read,
        state.notifier,
        since,
        heartbeat_s=state.config.heartbeat_s,
        deltas=state.deltas,
        trace_id=trace_id,
        conversation_id=conversation_id,
    )
    return state.stream_response(chunks)


def _resumed_from(request: Request, param: str) -> tuple[str, str | None]:
    """Where a stream resumes: the ``Last-Event-ID`` header an ``EventSource`` sends again, else the query
    parameter ``param``; with the field's name, for the 400 that refuses it."""
    header = request.headers.get("last-event-id")
    if header:
        return "Last-Event-ID", header
    return param, request.query_params.get(param)


def _event_number(request: Request) -> tuple[str, int | None]:
    """The event number a client resumes after (``Last-Event-ID`` or ``?since=``) and where it came from;
    ``None`` unless it is ASCII digits of a number no view reaches beyond (``str.isdigit`` alone takes
    ``²``, and ``int`` refuses thousands of digits with an error)."""
    field, raw = _resumed_from(request, "since")
    text = (raw or "0").strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 18):
        return field, None
    return field, int(text)


def _times(state: ServerState) -> StreamTimes:
    idle_s = state.config.idle_timeout_s
    return StreamTimes(state.config.heartbeat_s, idle_s, min(LINGER_S, idle_s))


def _frontend_response(state: ServerState, protocol: UiProtocol, chunks: AsyncIterator[bytes]) -> Response:
    # The stream ends when its chunks do, and so does its connection.
    return state.stream_response(chunks, {**protocol.headers, "connection": "close"})


async def frontend(state: ServerState, request: Request) -> Response:
    """``/api/traces/{id}/<protocol>/stream`` and ``/api/conversations/{id}/<protocol>/stream``."""
    protocol = PROTOCOLS[request.url.path.rstrip("/").split("/")[-2]]
    field, since = _event_number(request)
    if since is None:
        return error(400, f"{field} must be an event number (a non-negative integer)")
    found = _reader(state, request)
    if isinstance(found, Response):
        return found
    trace_id, conversation_id, read = found
    subscription = state.deltas.subscribe(
        trace_id=trace_id, conversation_id=conversation_id, kind="text_delta"
    )
    chunks = stream_chunks(
        protocol,
        read,
        state.notifier,
        since,
        times=_times(state),
        subscription=subscription,
        end_when_complete=trace_id is not None,
        trace_id=trace_id,
        conversation_id=conversation_id,
    )
    return _frontend_response(state, protocol, chunks)


async def agent(state: ServerState, request: Request) -> Response:
    """``POST /api/ag-ui``: the conversation ``RunAgentInput.threadId`` as an AG-UI agent's run stream. The
    body is read as a stream (413 past ``_MAX_INPUT_BYTES`` before the rest is read, 408 when it stops coming
    for ``--read-timeout``) and parsed strictly (``NaN``, ``1e999``, lone surrogates, nesting deeper than
    ``_MAX_DEPTH``: a 400 naming the field)."""
    try:
        raw = await read_body(request, _MAX_INPUT_BYTES, state.config.read_timeout_s)
        body = parse_object(raw, max_depth=_MAX_DEPTH, what="the RunAgentInput")
    except Refused as e:
        return e.response()
    problem = input_problem(body)
    if problem is not None:
        return error(400, problem)
    thread = body["threadId"]
    read = conversation_reader(state.store, thread, state.config.idle_timeout_s)
    subscription = state.deltas.subscribe(trace_id=None, conversation_id=thread, kind="text_delta")
    chunks = stream_chunks(
        AG_UI,
        read,
        state.notifier,
        0,
        times=_times(state),
        subscription=subscription,
        end_when_complete=False,
        known=frozenset(m["id"] for m in body.get("messages", [])),
        with_ids=False,
        conversation_id=thread,
    )
    return _frontend_response(state, AG_UI, chunks)
