"""Server-sent event streams of act/observe events, resumable from a cursor.

A stream reads the store's event log from its cursor onwards (the same code serves the catch-up after a
reconnect and the live tail), then waits for the next commit or sends a heartbeat comment. Nothing is
queued per client: a client that stops reading fills its socket buffer, and once one write has waited
``send_timeout_s`` the client is dropped and counted. Every event is

    id: <cursor>          (ns-traceid-spanid-phase: the store's commit clock and the event's span)
    event: act | observe
    data: <the bridge's act/observe event, JSON>

Each event is linked to the model call that asked for it as the trace's ``/events`` view links it (the
model's call id, ``requested_by``): the trace's spans are read once per page of events that has them.

A client reconnecting with ``Last-Event-ID`` (or ``?cursor=``) older than the retained events first gets
``event: reset`` and then every event still kept (a snapshot) before the live tail.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from toolspan.bridge import coalesce
from toolspan.bridge.facts import ToolCallRecord, tool_call
from toolspan.bridge.link import RequestIndex
from toolspan.bridge.model import Span
from toolspan.bridge.views import TraceIndex, act_event, group_traces, observe_event
from toolspan.server._store.api import StoreApi as Store
from toolspan.server._store.api import StoreUnavailable
from toolspan.server._store.db import ACT, Cursor

__all__ = [
    "CONNECTED",
    "FUTURE",
    "HEARTBEAT",
    "PAGE",
    "EventStreamResponse",
    "Notifier",
    "event_chunks",
    "format_event",
    "linked_calls",
    "render_event",
    "trace_links",
    "tail",
    "within",
]

_logger = logging.getLogger(__name__)
PAGE: Final = 500
HEARTBEAT: Final = b": heartbeat\n\n"
CONNECTED: Final = b"retry: 1000\n: connected\n\n"
# A cursor past the store's commit clock: another replica's clock, a database restored from a backup.
FUTURE: Final = "cursor from the future (another replica's clock or a restored database); a snapshot follows"


async def within(awaitable: Awaitable[Any], timeout_s: float) -> bool:
    """Await ``awaitable`` for at most ``timeout_s`` seconds: ``True`` when it finished (its exception
    raised), ``False`` when the time ran out (it is cancelled then).

    Unlike ``asyncio.wait_for`` on Python 3.11 and older, a cancellation of the caller is never swallowed
    when the awaitable has just finished: a stream whose client hung up always ends.
    """
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
    except BaseException:
        task.cancel()
        raise
    if not done:
        task.cancel()
        return False
    task.result()
    return True


class Notifier:
    """Wakes the waiting streams after a commit (call ``notify`` on the event loop), only those it concerns:
    a stream of one trace wakes on commits of that trace, a conversation's on commits of that conversation
    or of a trace it holds, the all-traces stream on every commit. A commit that cannot say what it touched
    (``notify()`` with no traces) wakes every stream. So many idle streams cost a commit nothing but the
    lookups of the traces it wrote."""

    _SWEEP: Final = 1024  # waiters registered between two sweeps of keys whose waiters are all gone

    def __init__(self) -> None:
        self._all = asyncio.Event()
        self._keyed: dict[tuple[str, str], weakref.WeakSet[asyncio.Event]] = {}
        self._conversations = 0  # keyed conversation waiters registered since the last sweep (a hint)
        self._made = 0

    def waiter(
        self, *, traces: Iterable[str] | None = None, conversations: Iterable[str] = ()
    ) -> asyncio.Event:
        """The event the next commit concerning ``traces`` or ``conversations`` sets (``traces`` ``None``:
        the next commit at all). Taken before a read, so no commit after that read is missed."""
        if traces is None:
            return self._all
        event = asyncio.Event()
        for trace_id in traces:
            self._keyed.setdefault(("t", trace_id), weakref.WeakSet()).add(event)
        for conversation_id in conversations:
            self._keyed.setdefault(("c", conversation_id), weakref.WeakSet()).add(event)
            self._conversations += 1
        self._made += 1
        if self._made >= self._SWEEP:
            self._made = 0
            self._keyed = {k: v for k, v in self._keyed.items() if len(v)}
            self._conversations = sum(1 for k in self._keyed if k[0] == "c")
        return event

    @property
    def conversations_waiting(self) -> bool:
        """Whether any stream may wait on a conversation (then a commit names the conversations of the
        traces it wrote)."""
        return self._conversations > 0

    def notify(self, traces: Iterable[str] | None = None, conversations: Iterable[str] = ()) -> None:
        """A commit of ``traces`` (of those ``conversations``); ``None``: it cannot say which."""
        event, self._all = self._all, asyncio.Event()
        event.set()
        if traces is None:
            keyed, self._keyed = self._keyed, {}
            for waiters in keyed.values():
                for waiting in list(waiters):
                    waiting.set()
            return
        keys = [("t", t) for t in traces] + [("c", c) for c in conversations]
        for key in keys:
            found = self._keyed.pop(key, None)
            for waiting in list(found or ()):
                waiting.set()


def format_event(cursor: Cursor, kind: str, data: Any) -> bytes:
    """One SSE event: its ``id:`` cursor, ``event:`` kind and ``data:`` JSON."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"id: {cursor}\nevent: {kind}\ndata: {text}\n\n".encode()


Links = Mapping[tuple[str, str], ToolCallRecord]


def linked_calls(spans: Iterable[Span]) -> dict[tuple[str, str], ToolCallRecord]:
    """``{(trace id, span id): tool call}`` of every tool span, linked as the views link them."""
    out: dict[tuple[str, str], ToolCallRecord] = {}
    for trace in group_traces(coalesce(spans)):
        for call in TraceIndex(trace).tool_calls().values():
            out[(call.span.trace_id, call.span.span_id)] = call
    return out


def trace_links(
    store: Store, rows: Sequence[tuple[Cursor, int, Span]]
) -> dict[tuple[str, str], ToolCallRecord]:
    """The linked tool calls of the traces of ``rows`` (one read of each trace from the store)."""
    out: dict[tuple[str, str], ToolCallRecord] = {}
    for spans in store.spans_by_trace(sorted({span.trace_id for _, _, span in rows})).values():
        out.update(linked_calls(spans))
    return out


def _call(span: Span, links: Links | None) -> ToolCallRecord | None:
    linked = None if links is None else links.get((span.trace_id, span.span_id))
    if linked is None:
        return None
    if span.end_ns is not None and linked.span.end_ns == span.end_ns:
        return linked  # the ended call, as the trace's views read it (with a nested record's failure)
    # This record's own state (an act may be the open record), with the link the whole trace gives.
    own = RequestIndex().link(tool_call(span))
    return dataclasses.replace(
        own, call_id=linked.call_id, requested_by=linked.requested_by, input=linked.input
    )


def render_event(phase: int, span: Span, links: Links | None = None) -> tuple[str, Any] | None:
    """``(kind, data)`` of a log entry: the span's act, or its observe once it ended (else ``None``);
    ``links``: the linked tool calls of its trace (``trace_links``)."""
    if phase == ACT:
        return "act", act_event(span, _call(span, links))
    if span.end_ns is not None:
        return "observe", observe_event(span, _call(span, links))
    return None


async def tail(
    store: Store,
    notifier: Notifier,
    position: Cursor,
    *,
    trace_id: str | None,
    conversation_id: str | None,
    heartbeat_s: float,
) -> AsyncGenerator[list[tuple[Cursor, int, Span]] | None, None]:
    """The event log after ``position``, forever: each page of entries as it is read, ``None`` when
    ``heartbeat_s`` passed without a commit (time for a heartbeat). It wakes on commits of its trace, of its
    conversation or the traces it read of it, or (neither given) on every commit."""
    seen: set[str] = set()
    while True:
        if trace_id is not None:
            waiter = notifier.waiter(traces=(trace_id,))
        elif conversation_id is not None:
            waiter = notifier.waiter(traces=seen, conversations=(conversation_id,))
        else:
            waiter = notifier.waiter()
        rows = await run_in_threadpool(
            store.events_after, position, trace_id=trace_id, conversation_id=conversation_id, limit=PAGE
        )
        if rows:
            position = rows[-1][0]
            if conversation_id is not None:
                seen.update(span.trace_id for _, _, span in rows)
            yield rows
        if len(rows) == PAGE:
            continue
        if not await within(waiter.wait(), heartbeat_s):
            yield None


async def event_chunks(
    store: Store,
    notifier: Notifier,
    cursor: Cursor | None,
    *,
    trace_id: str | None,
    conversation_id: str | None,
    heartbeat_s: float,
) -> AsyncIterator[bytes]:
    """The SSE byte chunks of one stream, from after ``cursor`` (``None``: everything kept)."""
    yield CONNECTED
    horizon = await run_in_threadpool(store.horizon)
    if cursor is not None and cursor < horizon:
        reason = "cursor older than the retained events; a snapshot follows"
        reset = {"reason": reason, "horizon": str(horizon)}
        yield f"event: reset\ndata: {json.dumps(reset)}\n\n".encode()
        cursor = None
    elif cursor is not None and cursor.ns > await run_in_threadpool(store.clock):
        yield f"event: reset\ndata: {json.dumps({'reason': FUTURE})}\n\n".encode()
        cursor = None
    position = cursor if cursor is not None else Cursor(0)
    pages = tail(
        store, notifier, position, trace_id=trace_id, conversation_id=conversation_id, heartbeat_s=heartbeat_s
    )
    async with contextlib.aclosing(pages):
        async for rows in pages:
            if rows is None:
                yield HEARTBEAT
                continue
            chunk = bytearray()
            links = await run_in_threadpool(trace_links, store, rows)
            for row_cursor, phase, span in rows:
                event = render_event(phase, span, links)
                if event is not None:
                    chunk += format_event(row_cursor, *event)
            if chunk:
                yield bytes(chunk)


class EventStreamResponse(Response):
    """``text/event-stream`` from an async iterator of chunks, with a per-write timeout and disconnect
    detection (the iterator is closed either way)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        chunks: AsyncIterator[bytes],
        *,
        send_timeout_s: float,
        on_drop: Callable[[], None],
        ending: asyncio.Event | None = None,
    ) -> None:
        super().__init__(headers={"cache-control": "no-cache", "x-accel-buffering": "no"})
        self._chunks = chunks
        self._send_timeout_s = send_timeout_s
        self._on_drop = on_drop
        self._ending = ending

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        pump = asyncio.ensure_future(self._pump(send))
        watch = asyncio.ensure_future(_disconnected(receive))
        # The server shutting down ends the stream as its client hanging up does.
        end = asyncio.ensure_future(
            self._ending.wait() if self._ending is not None else asyncio.Event().wait()
        )
        stuck = False
        try:
            await asyncio.wait({pump, watch, end}, return_when=asyncio.FIRST_COMPLETED)
            if pump.done() and not pump.cancelled():
                failure = pump.exception()
                if isinstance(failure, StoreUnavailable):  # its client resumes with its cursor
                    _logger.warning(
                        "toolspan serve: a stream ended (the store cannot answer now): %s", failure
                    )
                elif failure is not None:
                    _logger.error("toolspan serve: stream failed", exc_info=failure)
                else:
                    stuck = pump.result()
        finally:
            for task in (pump, watch, end):
                task.cancel()
            await asyncio.gather(pump, watch, end, return_exceptions=True)
            aclose = getattr(self._chunks, "aclose", None)
            if aclose is not None:
                await aclose()
        # End the response (a no-op once the client is gone); a client that stopped reading would never
        # take it, so its connection is closed by ending the response with an error instead.
        last: Message = {"type": "http.response.body", "body": b"", "more_body": False}
        if not stuck:
            # (At shutdown a client not reading gets a moment only: the server is waiting.)
            wait_s = (
                min(self._send_timeout_s, 0.25)
                if end.done() and not end.cancelled()
                else self._send_timeout_s
            )
            with contextlib.suppress(Exception):
                await within(send(last), wait_s)

    async def _pump(self, send: Send) -> bool:
        """Send every chunk; ``True`` when the client stopped reading (and was dropped)."""
        async for chunk in self._chunks:
            message: Message = {"type": "http.response.body", "body": chunk, "more_body": True}
            if not await within(send(message), self._send_timeout_s):
                _logger.warning("toolspan serve: dropped a stream client that stopped reading")
                self._on_drop()
                return True
        return False


async def _disconnected(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
