"""One trace's progress stream over SSE (``/api/traces/{id}/progress/stream``), resumable from its bookmark.

Each event is one envelope of the trace's ``/progress`` view, byte for byte the line that view holds:

    id: <bookmark seq>
    event: progress | control | monitor      (the envelope's channel)
    data: <the envelope, exactly as the /progress line>

The ``id`` is the envelope's ``bookmark.seq``: a position in the trace's own data, not in a server's
commit log, so it means the same thing after a restart and on every replica that can read the trace
(from its store, or from Tempo/Jaeger with ``--tempo``/``--jaeger``). A client resumes with
``Last-Event-ID`` or ``?since=<seq>`` (the seed's ``since: bookmark``; a bookmark object
``{"seq": n, ...}`` is accepted too) and gets every envelope after it.

Only *settled* envelopes are sent: the prefix of the view that later spans cannot change. The view ends
every open tool with ``tool:end`` SEALED and every turn with ``done``: those wait until the trace is
complete (every span held has ended and it has a root) or idle for ``--idle-timeout``. And the prefix
ends with the first envelope of a tool still open (its ``tool:start``, or its ``permission_required``
while it waits for approval): its end may come before anything after it. So a tool's start is on the
stream as soon as its pending record (``TOOLSPAN_PENDING_SPANS``) is stored; tools that run at the
same time as an earlier one are sent once that one has ended. Should a record that arrives late (say,
from another process with its own clock) change what was sent anyway, the stream sends ``event:
reset`` and the view again from seq 1.

Text deltas of the trace (``toolspan.text_delta``) are relayed as ``event: text_chunk`` without an
``id`` (they are never stored, so they cannot be replayed).
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from toolspan import semconv as sc
from toolspan.bridge.facts import TOOL, classify, execution_id
from toolspan.bridge.model import Span
from toolspan.bridge.readers import write_json_lines
from toolspan.bridge.views import to_progress
from toolspan.server._http.auth import error, trace_id_param
from toolspan.server._store.api import StoreApi as Store
from toolspan.server._streams.deltas import DeltaDropped, DeltaHub, Subscription, relay_until_commit
from toolspan.server._streams.sse import CONNECTED, HEARTBEAT, EventStreamResponse, Notifier

if TYPE_CHECKING:
    from toolspan.server._http.app import ServerHandlers

__all__ = [
    "conversation_reader",
    "parse_since",
    "progress_chunks",
    "progress_response",
    "settled",
    "trace_reader",
]

_REMOTE_POLL_S: Final = 1.0
_MAX_SEQ: Final = (1 << 63) - 1


def parse_since(raw: str) -> int | None:
    """The seq a client resumes after: ``"12"`` or a bookmark ``{"seq": 12, ...}``; ``None`` if neither
    (or a seq past 2**63-1: no view is that long)."""
    text = raw.strip()
    if text.isascii() and text.isdigit():
        seq = int(text) if len(text) <= 19 else None
    else:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return None
        seq = value.get("seq") if isinstance(value, dict) else None
        if not isinstance(seq, int) or isinstance(seq, bool):
            return None
    return seq if seq is not None and 0 <= seq <= _MAX_SEQ else None


def _complete(spans: Sequence[Span]) -> bool:
    """Every span held has ended and every trace has its root among them."""
    rooted = {s.trace_id for s in spans if s.parent_span_id is None}
    return bool(spans) and all(s.end_ns is not None and s.trace_id in rooted for s in spans)


def _provisional(envelope: dict[str, Any]) -> bool:
    event = envelope["event"]
    kind = event.get("type")
    call = event.get("call")
    return (
        kind == "done"
        # Just before a done: the state back to READY, the failure of the turn's agent span.
        or (kind == "state_changed" and event.get("to") == "READY")
        or (kind == "error" and event.get("phase") == "system")
        or (kind == "tool:end" and isinstance(call, dict) and call.get("state") == sc.STATE_SEALED)
    )


def settled(spans: Sequence[Span], *, final: bool) -> list[dict[str, Any]]:
    """The envelopes of the trace's progress view that later spans cannot change (all when ``final``).

    While the trace runs, the prefix ends before the first provisional envelope (a SEALED end, a
    ``done``) and right after the first envelope of a tool still open: its end (exported later than
    the start records of the tools after it) may fall before anything that follows.
    """
    envelopes = to_progress(list(spans))
    if final or _complete(spans):
        return envelopes
    open_tools = {execution_id(s) for s in spans if s.end_ns is None and classify(s) == TOOL}
    for n, envelope in enumerate(envelopes):
        if _provisional(envelope):
            return envelopes[:n]
        call = envelope["event"].get("call")
        if isinstance(call, dict) and call.get("execution_id") in open_tools:
            return envelopes[: n + 1]
    return envelopes


def _line(envelope: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    write_json_lines([envelope], out)
    return out.getvalue().rstrip(b"\n")


def _chunk(envelope: dict[str, Any], line: bytes) -> bytes:
    seq = envelope["bookmark"]["seq"]
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (seq, envelope["channel"].encode(), line)


# What a stream reads on each wake: (the trace's spans, whether they are final, whether they came from
# this replica's store: a remote trace is polled instead of waiting for commits).
Reader = Callable[[], Awaitable[tuple[list[Span], bool, bool]]]


Remote = Callable[[], Awaitable[list[Span] | None]]


def trace_reader(store: Store, trace_id: str, idle_timeout_s: float, remote: Remote | None) -> Reader:
    """What a trace's progress stream reads: the store's spans (read again only once the trace changed),
    final once idle; else, with ``remote``, the trace from Tempo/Jaeger (polled)."""
    held: list[Any] = [None, []]

    async def read() -> tuple[list[Span], bool, bool]:
        row = await run_in_threadpool(store.trace_row, trace_id)
        if row is not None:
            if held[0] != row.last_seen_ns:
                held[:] = [row.last_seen_ns, await run_in_threadpool(store.trace_spans, trace_id)]
            return held[1], time.time_ns() - row.last_seen_ns > idle_timeout_s * 1e9, True
        if remote is None:
            return [], False, True
        return (await remote()) or [], False, False

    return read


def conversation_reader(store: Store, conversation_id: str, idle_timeout_s: float) -> Reader:
    """What a conversation's progress stream reads: the spans of its traces in the store, final once every
    one of them is idle (a later turn's envelopes come after, in time order)."""
    held: list[Any] = [None, []]
    where = "(conversation_id = ? OR trace_id = ?)"

    async def read() -> tuple[list[Span], bool, bool]:
        rows = await run_in_threadpool(store.list_traces, where, (conversation_id, conversation_id), 10_000)
        seen = sorted((r.trace_id, r.last_seen_ns) for r in rows)
        if held[0] != seen:
            held[:] = [seen, await run_in_threadpool(store.conversation_spans, conversation_id)]
        newest = max((r.last_seen_ns for r in rows), default=None)
        idle = newest is not None and time.time_ns() - newest > idle_timeout_s * 1e9
        return held[1], idle, True

    return read


async def progress_chunks(
    read: Reader,
    notifier: Notifier,
    since: int,
    *,
    heartbeat_s: float,
    deltas: DeltaHub | None = None,
    trace_id: str | None = None,
    conversation_id: str | None = None,
) -> AsyncIterator[bytes]:
    """The SSE chunks of one trace's progress stream after bookmark ``since`` (0: from the start)."""
    yield CONNECTED
    subscription: Subscription | None = None
    if deltas is not None:
        subscription = deltas.subscribe(trace_id=trace_id, conversation_id=conversation_id, kind="text_chunk")
    sent: list[bytes] = []  # lines sent on this connection, from seq ``since + 1``
    last: tuple[list[Span], bool] | None = None
    held: set[str] = set() if trace_id is None else {trace_id}  # the traces whose commits wake it
    try:
        while True:
            waiter = notifier.waiter(
                traces=held, conversations=() if conversation_id is None else (conversation_id,)
            )
            spans, final, local = await read()
            if conversation_id is not None:
                held = {span.trace_id for span in spans}
            if (spans, final) != last:  # the same spans (the store's cached list) give the same view
                last = (spans, final)
                envelopes = settled(spans, final=final)
                lines = [_line(e) for e in envelopes[since:]]
                if lines[: len(sent)] != sent:
                    reason = "the trace changed what was sent; the view follows from seq 1"
                    yield f"event: reset\ndata: {json.dumps({'reason': reason})}\n\n".encode()
                    since, sent = 0, []
                    lines = [_line(e) for e in envelopes]
                fresh = range(len(sent), len(lines))
                if fresh:
                    yield b"".join(_chunk(envelopes[since + n], lines[n]) for n in fresh)
                    sent = lines
            timeout = heartbeat_s if local else min(heartbeat_s, _REMOTE_POLL_S)
            async for chunk in relay_until_commit(waiter, subscription, timeout, local):
                yield HEARTBEAT if chunk is None else chunk
    except DeltaDropped:
        return
    finally:
        if subscription is not None:
            subscription.close()


async def progress_response(app: ServerHandlers, request: Request) -> Response:
    """``/api/traces/{id}/progress/stream`` and ``/api/conversations/{id}/progress/stream``."""
    raw = request.headers.get("last-event-id") or request.query_params.get("since")
    since = parse_since(raw) if raw else 0
    if since is None:
        return error(400, f"not a progress bookmark: {(raw or '')[:80]!r}")
    idle_s = app.config.idle_timeout_s
    trace_id = conversation_id = None
    if "trace_id" in request.path_params:
        trace_id = trace_id_param(request.path_params["trace_id"])
        if trace_id is None:
            return error(404, f"no trace {request.path_params['trace_id']!r}")
        read = trace_reader(app.store, trace_id, idle_s, app.remote_reader(trace_id))
    else:
        conversation_id = request.path_params["conversation_id"]
        read = conversation_reader(app.store, conversation_id, idle_s)
    chunks = progress_chunks(
        read,
        app.notifier,
        since,
        heartbeat_s=app.config.heartbeat_s,
        deltas=app.deltas,
        trace_id=trace_id,
        conversation_id=conversation_id,
    )
    return EventStreamResponse(
        app._counted(chunks), send_timeout_s=app.config.send_timeout_s, on_drop=app._drop, ending=app.ending
    )
