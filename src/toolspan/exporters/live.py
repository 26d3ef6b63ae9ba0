"""Live act/observe events while tools run, and text deltas for live subscribers only.

An exporter only sees ended spans; ``LiveEventProcessor`` is a ``SpanProcessor`` and so sees a tool
span when it *starts*: it emits the bridge's ``act`` event then (before the tool body runs) and the
``observe`` event when the span ends. Events go to callbacks (``subscribe``) and to async iterators
(``stream``) a web server can forward as SSE or WebSocket messages. Every act/observe event is what
``toolspan.bridge.views.act_event`` / ``observe_event`` return for the same span, linked (while there are
subscribers) to the model call that asked for it, as the views link it: the model's call id and
``requested_by``.

    processor = LiveEventProcessor()
    provider.add_span_processor(processor)
    async for event in processor.stream():
        await websocket.send_json(event)

``text_delta(text)`` streams text of the current tool or LLM span (conversation timeline): subscribers get one
``{"type": "text_delta", "execution_id", "delta"}`` event per call; the span itself only gets the
accumulated text as the ``toolspan.stream.text`` attribute (one value, within the byte budget).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, Final

from opentelemetry import context as context_api
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace import Span as SdkSpan

from toolspan._instrument import hooks
from toolspan._instrument.deltas import text_delta
from toolspan.bridge.facts import TOOL, ToolCallRecord, classify
from toolspan.bridge.link import StreamLinker
from toolspan.bridge.model import Span
from toolspan.bridge.readers import from_readable_spans
from toolspan.bridge.views import act_event, observe_event
from toolspan.exporters._durable import DurableLog
from toolspan.exporters._livestream import LiveStream

__all__ = ["Event", "EventCallback", "LiveEventProcessor", "LiveStream", "text_delta"]

_logger = logging.getLogger(__name__)

Event = dict[str, Any]
EventCallback = Callable[[Event], None]

DEFAULT_QUEUE_SIZE: Final = 1000

_SpanKey = tuple[int, int]  # (trace_id, span_id)


def _is_tool(span: Span) -> bool:
    return classify(span) == TOOL


class LiveEventProcessor(SpanProcessor):
    """Emit the bridge's ``act`` event when a tool span starts and ``observe`` when it ends.

    ``durable_path``: opened for appending here (``OSError`` naming it when that is impossible); every span
    is appended to this OTLP JSON Lines file when it starts (flushed, and fsynced when ``durable_fsync``,
    before the tool body runs) and again when it ends, so a process
    that dies mid-tool leaves a span without ``endTimeUnixNano`` that the bridge reports as ``SEALED``;
    the file alone is a complete trace log (a span that ended appears twice: started and ended).

    Callbacks run synchronously in the thread that starts or ends the span; a raising callback is
    logged and affects neither the other subscribers nor the tool. Every subscriber gets the same
    event object: treat it as read-only. Nothing here raises into the application.
    """

    def __init__(
        self,
        durable_path: str | os.PathLike[str] | None = None,
        *,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        durable_fsync: bool = True,
    ) -> None:
        self._lock = threading.Lock()
        self._callbacks: tuple[EventCallback, ...] = ()
        self._streams: weakref.WeakSet[LiveStream] = weakref.WeakSet()
        self._open: set[_SpanKey] = set()
        self._queue_size = queue_size
        self._dropped = 0
        self._shutdown = False
        self._durable = DurableLog(os.fspath(durable_path), durable_fsync) if durable_path else None
        # The bridge's bounded per-trace index of model requests (toolspan.bridge.link.StreamLinker).
        self._linker = StreamLinker()
        self._link_lock = threading.Lock()
        hooks.register(self)  # on_text_delta: text deltas of the spans it saw start

    @property
    def durable_path(self) -> str | None:
        return None if self._durable is None else self._durable.path

    @property
    def dropped(self) -> int:
        """Events dropped so far across all streams (slow consumers)."""
        return self._dropped

    def subscribe(self, callback: EventCallback) -> Callable[[], None]:
        """Call ``callback(event)`` for every live event; returns a function that unsubscribes."""
        with self._lock:
            if not self._shutdown:
                self._callbacks = (*self._callbacks, callback)

        def unsubscribe() -> None:
            with self._lock:
                callbacks = list(self._callbacks)
                if callback in callbacks:
                    callbacks.remove(callback)
                    self._callbacks = tuple(callbacks)

        return unsubscribe

    def stream(self, *, maxsize: int | None = None) -> LiveStream:
        """A new async iterator of the live events from now on; call it inside the consuming loop."""
        loop = asyncio.get_running_loop()
        stream = LiveStream(self, loop, self._queue_size if maxsize is None else maxsize)
        with self._lock:
            if not self._shutdown:
                self._streams.add(stream)
                return stream
        stream._close()
        return stream

    # --- SpanProcessor ---

    def on_start(self, span: SdkSpan, parent_context: context_api.Context | None = None) -> None:
        if self._shutdown:
            return
        try:
            ctx = span.get_span_context()
            with self._lock:
                self._open.add((ctx.trace_id, ctx.span_id))
            if self._durable is not None:
                self._durable.write(span, sync=True)
            if self._has_subscribers():
                converted = from_readable_spans([span])
                if converted and _is_tool(converted[0]):
                    with self._link_lock:
                        call = self._linker.feed(converted[0], TOOL)
                        released = self._linker.released()
                    if call is not None:
                        self._publish(act_event(converted[0], call))
                    self._publish_released(released)
        except Exception:
            _logger.exception("toolspan: live act event failed for span %r", getattr(span, "name", "?"))

    def on_end(self, span: ReadableSpan) -> None:
        if self._shutdown:
            return
        try:
            if self._durable is not None:
                self._durable.write(span, sync=False)
            if self._has_subscribers():
                converted = from_readable_spans([span])
                if converted:
                    # Model calls are indexed as they end (before the tools they ask for start), so a
                    # tool's act and observe carry the model's call id and the model call that asked.
                    kind = classify(converted[0])
                    with self._link_lock:
                        call = self._linker.feed(converted[0], kind)
                        released = self._linker.released()
                        corrected = self._linker.corrected()
                    if kind == TOOL and call is not None:
                        self._publish(observe_event(converted[0], call))
                    self._publish_released(released)
                    # Calls whose model id only this model call's input showed: their act and observe again.
                    for record, linked in corrected:
                        self._publish(act_event(record, linked))
                        self._publish(observe_event(record, linked))
        except Exception:
            _logger.exception("toolspan: live observe event failed for span %r", span.name)
        finally:
            ctx = span.get_span_context()
            if ctx is not None:
                with self._lock:
                    self._open.discard((ctx.trace_id, ctx.span_id))

    def shutdown(self) -> None:
        """Close every stream (after its queued events), drop callbacks, close the durable log."""
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True
            streams = list(self._streams)
            self._streams = weakref.WeakSet()
            self._callbacks = ()
            self._open.clear()
        hooks.unregister(self)
        for stream in streams:
            stream._close()
        if self._durable is not None:
            self._durable.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush and fsync the durable log (events themselves are delivered immediately); ``False`` when
        its last write or this flush failed."""
        return True if self._durable is None else self._durable.flush()

    # --- internals ---

    def _publish_released(self, released: list[tuple[Span, ToolCallRecord]]) -> None:
        """The events of records the linker withheld (maybe an MCP call's transport leg, its parents not
        ended yet) and now knows to be calls: an act for an open record, an observe for an ended one."""
        for span, call in released:
            self._publish(act_event(span, call) if span.end_ns is None else observe_event(span, call))

    def _has_subscribers(self) -> bool:
        return bool(self._callbacks) or len(self._streams) > 0

    def _publish(self, event: Event) -> None:
        for callback in self._callbacks:
            try:
                callback(event)
            except Exception:
                _logger.exception("toolspan: live event subscriber %r raised", callback)
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            if not stream._offer(event):
                self._remove_stream(stream)

    def on_text_delta(self, span: Any, event: Event) -> None:
        """A text delta of ``span`` (``hooks.SpanHook``): published if this processor saw it start."""
        ctx = span.get_span_context()
        if (ctx.trace_id, ctx.span_id) in self._open and self._has_subscribers():
            self._publish(event)

    def on_refresh(self, span: Any) -> None:
        """A running span's approval state changed: the act and observe events say all this processor
        publishes."""

    def _remove_stream(self, stream: LiveStream) -> None:
        with self._lock:
            self._streams.discard(stream)

    def _count_drop(self) -> None:
        with self._lock:
            self._dropped += 1
