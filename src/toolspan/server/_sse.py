"""Server-sent event streams of act/observe events, resumable from a cursor.

A stream reads the store's event log from its cursor onwards (the same code serves the catch-up after a
reconnect and the live tail), then waits for the next commit or sends a heartbeat comment. Nothing is
queued per client: a client that stops reading fills its socket buffer, and once one write has waited
``send_timeout_s`` the client is dropped and counted. Every event is

    id: <cursor>          (ns-traceid-spanid-phase: the store's commit clock and the event's span)
    event: act | observe
    data: <the bridge's act/observe event, JSON>

A client reconnecting with ``Last-Event-ID`` (or ``?cursor=``) older than the retained events first gets
``event: reset`` and then every event still kept (a snapshot) before the live tail.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from toolspan.bridge.views import act_event, observe_event
from toolspan.server._store import ACT, Cursor, Store

__all__ = ["EventStreamResponse", "Notifier", "event_chunks"]

_logger = logging.getLogger(__name__)
_PAGE: Final = 500


class Notifier:
    """Wakes every waiting stream after a commit (call ``notify`` on the event loop)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def waiter(self) -> asyncio.Event:
        return self._event

    def notify(self) -> None:
        event, self._event = self._event, asyncio.Event()
        event.set()


def _format(cursor: Cursor, kind: str, data: Any) -> bytes:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"id: {cursor}\nevent: {kind}\ndata: {text}\n\n".encode()


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
    yield b"retry: 1000\n: connected\n\n"
    horizon = await run_in_threadpool(store.horizon)
    if cursor is not None and cursor < horizon:
        reason = "cursor older than the retained events; a snapshot follows"
        reset = {"reason": reason, "horizon": str(horizon)}
        yield f"event: reset\ndata: {json.dumps(reset)}\n\n".encode()
        cursor = None
    position = cursor if cursor is not None else Cursor(0)
    while True:
        waiter = notifier.waiter()
        rows = await run_in_threadpool(
            store.events_after, position, trace_id=trace_id, conversation_id=conversation_id, limit=_PAGE
        )
        chunk = bytearray()
        for row_cursor, phase, span in rows:
            if phase == ACT:
                chunk += _format(row_cursor, "act", act_event(span))
            elif span.end_ns is not None:
                chunk += _format(row_cursor, "observe", observe_event(span))
            position = row_cursor
        if chunk:
            yield bytes(chunk)
        if len(rows) == _PAGE:
            continue
        try:
            await asyncio.wait_for(waiter.wait(), heartbeat_s)
        except asyncio.TimeoutError:
            yield b": heartbeat\n\n"


class EventStreamResponse(Response):
    """``text/event-stream`` from an async iterator of chunks, with a per-write timeout and disconnect
    detection (the iterator is closed either way)."""

    media_type = "text/event-stream"

    def __init__(
        self, chunks: AsyncIterator[bytes], *, send_timeout_s: float, on_drop: Callable[[], None]
    ) -> None:
        super().__init__(headers={"cache-control": "no-cache", "x-accel-buffering": "no"})
        self._chunks = chunks
        self._send_timeout_s = send_timeout_s
        self._on_drop = on_drop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(k, v) for k, v in self.raw_headers if k != b"content-length"]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        pump = asyncio.ensure_future(self._pump(send))
        watch = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.wait({pump, watch}, return_when=asyncio.FIRST_COMPLETED)
            if pump.done() and not pump.cancelled() and pump.exception() is not None:
                _logger.error("toolspan serve: stream failed", exc_info=pump.exception())
        finally:
            for task in (pump, watch):
                task.cancel()
            await asyncio.gather(pump, watch, return_exceptions=True)
            aclose = getattr(self._chunks, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _pump(self, send: Send) -> None:
        async for chunk in self._chunks:
            message: Message = {"type": "http.response.body", "body": chunk, "more_body": True}
            try:
                await asyncio.wait_for(send(message), self._send_timeout_s)
            except asyncio.TimeoutError:
                _logger.warning("toolspan serve: dropped a stream client that stopped reading")
                self._on_drop()
                return


async def _disconnected(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
