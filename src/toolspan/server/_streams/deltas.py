"""Text deltas relayed to live stream clients, never stored.

An application's ``toolspan.text_delta(text)`` goes out as an ordinary OpenTelemetry log record (event
name ``toolspan.text_delta``, body: the text, in the span's trace/span context) through the OTLP logs
pipeline. ``toolspan serve`` takes those records out of ``/v1/logs`` and gRPC ``LogsService/Export``
requests before anything is stored and hands them to the stream clients of their trace, of their
conversation and of all traces, as

    event: text_delta            (act/observe streams; data: {type, trace_id, execution_id, delta})
    event: text_chunk            (progress streams; data: a progress envelope with ``bookmark: null``)

without an ``id:``: a delta is gone once relayed, so a reconnecting client cannot get it again (the
span's ``toolspan.stream.text`` holds the whole text once it ends). Each client buffers at most
``delta_buffer`` deltas; one more and that client is dropped (its stream ends) and counted, exactly like
a client that stopped reading.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from toolspan import semconv as sc
from toolspan._util.ids import execution_id
from toolspan.bridge.internal import LogRecord
from toolspan.bridge.views import SCHEMA_VERSION
from toolspan.errors import ToolspanError

__all__ = ["DeltaDropped", "DeltaHub", "Subscription", "relay_until_commit", "split_deltas", "with_deltas"]

_logger = logging.getLogger(__name__)


class DeltaDropped(ToolspanError):
    """The client's delta buffer overflowed: its stream ends."""


def split_deltas(records: Sequence[LogRecord]) -> tuple[list[LogRecord], list[LogRecord]]:
    """``(records to store, text deltas)`` of one logs request."""
    keep: list[LogRecord] = []
    deltas: list[LogRecord] = []
    for record in records:
        (deltas if record.event_name == sc.TEXT_DELTA_EVENT else keep).append(record)
    return keep, deltas


def _text(record: LogRecord) -> str:
    body = record.body
    return body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)


def _delta_event(record: LogRecord) -> dict[str, Any]:
    return {
        "type": "text_delta",
        "trace_id": record.trace_id,
        "execution_id": execution_id(int(record.span_id, 16)),
        "delta": _text(record),
    }


def _chunk_envelope(record: LogRecord) -> dict[str, Any]:
    event = {
        "type": "text_chunk",
        "execution_id": execution_id(int(record.span_id, 16)),
        "delta": _text(record),
        "channel": "progress",
    }
    return {"schema_version": SCHEMA_VERSION, "channel": "progress", "event": event, "bookmark": None}


def _sse(kind: str, data: dict[str, Any]) -> bytes:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"event: {kind}\ndata: {text}\n\n".encode()


class Subscription:
    """One stream client's bounded queue of delta chunks (used on the event loop only)."""

    def __init__(
        self, hub: DeltaHub, trace_id: str | None, conversation_id: str | None, kind: str, size: int
    ) -> None:
        self.trace_id = trace_id
        self.conversation_id = conversation_id
        self.kind = kind
        self.dropped = False
        self._hub = hub
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=size)

    def offer(self, chunk: bytes) -> None:
        if self.dropped:
            return
        try:
            self._queue.put_nowait(chunk)
        except asyncio.QueueFull:
            self.dropped = True
            self._hub.count_drop()
            _logger.warning("toolspan serve: dropped a stream client whose delta buffer overflowed")
            # Make room for the end mark so ``get`` ends the stream at once.
            self._queue.get_nowait()
            self._queue.put_nowait(None)

    async def get(self) -> bytes:
        """The next delta chunk; ``DeltaDropped`` once the buffer overflowed."""
        chunk = await self._queue.get()
        if chunk is None or self.dropped:
            raise DeltaDropped
        return chunk

    def close(self) -> None:
        self._hub.unsubscribe(self)


class DeltaHub:
    """The delta subscriptions of one server; ``publish`` runs on the event loop."""

    def __init__(self, buffer: int, on_drop: Callable[[], None]) -> None:
        self.buffer = max(1, buffer)
        self.relayed = 0
        self._on_drop = on_drop
        self._subscriptions: set[Subscription] = set()

    def subscribe(self, *, trace_id: str | None, conversation_id: str | None, kind: str) -> Subscription:
        subscription = Subscription(self, trace_id, conversation_id, kind, self.buffer)
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    def count_drop(self) -> None:
        self._on_drop()

    def relay(
        self, loop: asyncio.AbstractEventLoop, deltas: Sequence[LogRecord], trace_row: Callable[[str], Any]
    ) -> None:
        """From any thread: look up each delta's trace's conversation (``trace_row``), then ``publish``
        on ``loop``."""
        conversations: dict[str, str | None] = {}
        for trace_id in {d.trace_id for d in deltas}:
            row = trace_row(trace_id)
            conversations[trace_id] = None if row is None else row.conversation_id
        loop.call_soon_threadsafe(self.publish, deltas, conversations)

    def publish(self, deltas: Sequence[LogRecord], conversations: dict[str, str | None]) -> None:
        """Hand ``deltas`` to every matching client (``conversations``: trace id -> its conversation)."""
        for record in deltas:
            conversation = record.attributes.get(sc.GEN_AI_CONVERSATION_ID) or conversations.get(
                record.trace_id
            )
            chunks: dict[str, bytes] = {}
            for subscription in list(self._subscriptions):
                if subscription.trace_id is not None and subscription.trace_id != record.trace_id:
                    continue
                if subscription.conversation_id is not None and subscription.conversation_id not in (
                    conversation,
                    record.trace_id,
                ):
                    continue
                chunk = chunks.get(subscription.kind)
                if chunk is None:
                    if subscription.kind == "text_chunk":
                        chunk = _sse("text_chunk", _chunk_envelope(record))
                    else:
                        chunk = _sse("text_delta", _delta_event(record))
                    chunks[subscription.kind] = chunk
                subscription.offer(chunk)
            self.relayed += 1


async def with_deltas(chunks: AsyncIterator[bytes], subscription: Subscription) -> AsyncIterator[bytes]:
    """The chunks of a stream with the subscription's deltas put in between as they come; ends when
    either ends (a dropped subscription ends the stream)."""
    following = asyncio.ensure_future(anext(chunks))
    delta = asyncio.ensure_future(subscription.get())
    try:
        while True:
            done, _ = await asyncio.wait({following, delta}, return_when=asyncio.FIRST_COMPLETED)
            if delta in done:
                try:
                    chunk = delta.result()
                except DeltaDropped:
                    return
                yield chunk
                delta = asyncio.ensure_future(subscription.get())
            if following in done:
                try:
                    chunk = following.result()
                except StopAsyncIteration:
                    return
                yield chunk
                following = asyncio.ensure_future(anext(chunks))
    finally:
        for task in (following, delta):
            task.cancel()
        await asyncio.gather(following, delta, return_exceptions=True)
        subscription.close()
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


async def relay_until_commit(
    waiter: asyncio.Event, subscription: Subscription | None, timeout: float, local: bool
) -> AsyncIterator[Any]:
    """What a view stream does between two reads: yield each chunk ``subscription`` relays (text deltas)
    until the store's next commit (``waiter``), or ``timeout`` seconds; then ``None`` when the time ran out
    on a trace this store holds (``local``: a heartbeat is due). A trace read from elsewhere (Tempo, Jaeger)
    is polled at ``timeout``: the store's commits say nothing of it, so they are not waited for."""
    deadline = time.monotonic() + timeout
    commit = asyncio.ensure_future(waiter.wait()) if local else None
    delta: asyncio.Future[Any] | None = None
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                if local:
                    yield None
                return
            if subscription is not None and delta is None:
                delta = asyncio.ensure_future(subscription.get())
            tasks = {task for task in (commit, delta) if task is not None}
            if not tasks:
                await asyncio.sleep(left)
                continue
            done, _ = await asyncio.wait(tasks, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            if delta is not None and delta in done:
                chunk, delta = delta.result(), None
                yield chunk
            if commit is not None and commit in done:
                return
    finally:
        for task in (commit, delta):
            if task is not None and not task.done():
                task.cancel()
