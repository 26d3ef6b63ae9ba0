"""Live act/observe events while tools run, and text deltas for live subscribers only.

An exporter only sees ended spans; ``LiveEventProcessor`` is a ``SpanProcessor`` and so sees a tool
span when it *starts*: it emits the bridge's ``act`` event then (before the tool body runs) and the
``observe`` event when the span ends. Events go to callbacks (``subscribe``) and to async iterators
(``stream``) a web server can forward as SSE or WebSocket messages. Every act/observe event is exactly
what ``toolspan.bridge.views.act_event`` / ``observe_event`` return for the same span.

    processor = LiveEventProcessor()
    provider.add_span_processor(processor)
    async for event in processor.stream():
        await websocket.send_json(event)

``text_delta(text)`` streams text of the current tool or LLM span (seed 002): subscribers get one
``{"type": "text_delta", "execution_id", "delta"}`` event per call; the span itself only gets the
accumulated text as the ``toolspan.stream.text`` attribute (one value, within the byte budget).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import IO, Any, Final

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace import Span as SdkSpan

from toolspan import semconv
from toolspan._ids import execution_id
from toolspan.bridge.classify import TOOL
from toolspan.bridge.model import Span
from toolspan.bridge.readers import from_readable_spans
from toolspan.bridge.views import act_event, classify, observe_event
from toolspan.config import get_config
from toolspan.exporters._files import flush_to_disk

__all__ = ["Event", "EventCallback", "LiveEventProcessor", "LiveStream", "text_delta"]

_logger = logging.getLogger(__name__)

Event = dict[str, Any]
EventCallback = Callable[[Event], None]

TEXT_DELTA: Final = "text_delta"
DEFAULT_QUEUE_SIZE: Final = 1000

_SpanKey = tuple[int, int]  # (trace_id, span_id)


def _is_tool(span: Span) -> bool:
    return classify(span) == TOOL


# --- text deltas ------------------------------------------------------------------------------------


class _Aggregate:
    __slots__ = ("full", "parts", "size")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.full = False


_aggregates: weakref.WeakKeyDictionary[trace_api.Span, _Aggregate] = weakref.WeakKeyDictionary()
_aggregates_lock = threading.Lock()
_processors: weakref.WeakSet[LiveEventProcessor] = weakref.WeakSet()
_processors_lock = threading.Lock()


def _aggregate(span: trace_api.Span, text: str) -> None:
    """Set ``toolspan.stream.text`` on ``span`` to all its deltas so far, within the byte budget."""
    config = get_config()
    if not config.capture_content:
        return
    with _aggregates_lock:
        agg = _aggregates.get(span)
        if agg is None:
            agg = _aggregates[span] = _Aggregate()
        if agg.full:
            return
        data = text.encode("utf-8", "surrogatepass")
        room = config.max_attribute_bytes - agg.size
        if len(data) > room:
            agg.parts.append(data[: max(room, 0)].decode("utf-8", "ignore"))
            agg.full = True
        else:
            agg.parts.append(text)
        agg.size += min(len(data), max(room, 0))
        # Set inside the lock so concurrent deltas never leave an older value on the span.
        span.set_attribute(semconv.TOOLSPAN_STREAM_TEXT, "".join(agg.parts))
        if agg.full:
            span.set_attribute(semconv.TOOLSPAN_STREAM_TRUNCATED, True)


def text_delta(text: str, *, span: trace_api.Span | None = None) -> None:
    """Stream ``text`` produced by the current tool or LLM span (or ``span``) to live subscribers.

    Subscribers of every ``LiveEventProcessor`` that saw the span start get
    ``{"type": "text_delta", "execution_id": "exec_<span id>", "delta": text}``. The span records no
    event per delta; its ``toolspan.stream.text`` attribute holds the text so far (when content capture
    is on), cut at the byte budget (then ``toolspan.stream.truncated`` is true). Never raises.
    """
    try:
        if not text:
            return
        target = span if span is not None else trace_api.get_current_span()
        ctx = target.get_span_context()
        if not ctx.is_valid:
            _logger.debug("toolspan: text_delta outside a span; dropped")
            return
        if target.is_recording():
            _aggregate(target, text)
        with _processors_lock:
            processors = list(_processors)
        if not processors:
            return
        event: Event = {
            "type": TEXT_DELTA,
            "execution_id": execution_id(ctx.span_id),
            "delta": text,
        }
        key = (ctx.trace_id, ctx.span_id)
        for processor in processors:
            processor._deliver_delta(key, event)
    except Exception:
        _logger.exception("toolspan: text_delta failed")


# --- async streams ----------------------------------------------------------------------------------


class LiveStream:
    """One subscriber's async iterator of live events (one consumer per stream).

    Producers (any thread) append to a buffer of at most ``maxsize`` events and wake the consumer's
    loop with ``loop.call_soon_threadsafe`` (at most one wake-up pending at a time), so memory stays
    bounded even while the loop is busy. When the consumer is slower than the tools, the oldest
    events are dropped and counted in ``dropped``. Iteration ends after the processor shuts down or
    after ``aclose()``, once the buffered events are read. Also an async context manager that closes
    the stream on exit.
    """

    def __init__(self, processor: LiveEventProcessor, loop: asyncio.AbstractEventLoop, maxsize: int) -> None:
        self._processor = processor
        self._loop = loop
        self._lock = threading.Lock()
        self._buffer: deque[Event] = deque()
        self._maxsize = max(1, maxsize)
        self._ready = asyncio.Event()
        self._wake_pending = False
        self._closed = False
        self.dropped = 0

    def _offer(self, event: Event) -> bool:
        """Buffer ``event`` (from any thread); ``False`` when the consumer's loop is closed."""
        with self._lock:
            if self._closed:
                return True
            dropped = len(self._buffer) >= self._maxsize
            if dropped:
                self._buffer.popleft()
                self.dropped += 1
            self._buffer.append(event)
        if dropped:
            self._processor._count_drop()
        return self._wake()

    def _close(self) -> bool:
        with self._lock:
            self._closed = True
        return self._wake()

    def _wake(self) -> bool:
        with self._lock:
            if self._wake_pending:
                return True
            self._wake_pending = True
        try:
            self._loop.call_soon_threadsafe(self._woken)
        except RuntimeError:  # the loop is closed: nobody will ever read this stream
            return False
        return True

    def _woken(self) -> None:  # on the consumer's loop
        with self._lock:
            self._wake_pending = False
        self._ready.set()

    def __aiter__(self) -> LiveStream:
        return self

    async def __anext__(self) -> Event:
        while True:
            with self._lock:
                if self._buffer:
                    return self._buffer.popleft()
                if self._closed:
                    raise StopAsyncIteration
            await self._ready.wait()
            self._ready.clear()

    async def aclose(self) -> None:
        """Stop receiving events; iteration ends once the buffered events are read."""
        self._processor._remove_stream(self)
        self._close()

    async def __aenter__(self) -> LiveStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# --- durable act log --------------------------------------------------------------------------------


class _DurableLog:
    """Append-only OTLP JSON Lines log of span starts and ends (the ``OtlpJsonFileExporter`` format)."""

    def __init__(self, path: str, fsync: bool) -> None:
        self.path = path
        self._fsync = fsync
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self._broken_line = False
        self._closed = False

    def write(self, span: ReadableSpan, *, sync: bool) -> None:
        # Imported here: the OTLP encoder (protobuf) is only needed with a durable log.
        from toolspan.exporters.otlp_file import encode_otlp_json_line

        line = encode_otlp_json_line([span])
        with self._lock:
            if self._closed:
                return
            try:
                if self._file is None:
                    parent = os.path.dirname(self.path)
                    if parent:
                        os.makedirs(parent, exist_ok=True)
                    self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
                self._file.write("\n" + line if self._broken_line else line)
                self._file.flush()
                self._broken_line = False
                if sync and self._fsync:
                    os.fsync(self._file.fileno())
            except (OSError, ValueError) as exc:
                _logger.warning("toolspan: cannot write the durable act log %s: %s", self.path, exc)
                self._broken_line = self._file is not None
                self._close_file()

    def flush(self) -> bool:
        with self._lock:
            return flush_to_disk(self._file, self.path)

    def close(self) -> None:
        self.flush()
        with self._lock:
            self._closed = True
            self._close_file()

    def _close_file(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                _logger.warning("toolspan: cannot close %s: %s", self.path, exc)
            self._file = None


# --- the processor ----------------------------------------------------------------------------------


class LiveEventProcessor(SpanProcessor):
    """Emit the bridge's ``act`` event when a tool span starts and ``observe`` when it ends.

    ``durable_path``: append every span to this OTLP JSON Lines file when it starts (flushed, and
    fsynced when ``durable_fsync``, before the tool body runs) and again when it ends, so a process
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
        self._durable = _DurableLog(os.fspath(durable_path), durable_fsync) if durable_path else None
        with _processors_lock:
            _processors.add(self)

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
                    self._publish(act_event(converted[0]))
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
                if converted and _is_tool(converted[0]):
                    self._publish(observe_event(converted[0]))
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
        with _processors_lock:
            _processors.discard(self)
        for stream in streams:
            stream._close()
        if self._durable is not None:
            self._durable.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush and fsync the durable log (events themselves are delivered immediately)."""
        return True if self._durable is None else self._durable.flush()

    # --- internals ---

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

    def _deliver_delta(self, key: _SpanKey, event: Event) -> None:
        if key in self._open and self._has_subscribers():
            self._publish(event)

    def _remove_stream(self, stream: LiveStream) -> None:
        with self._lock:
            self._streams.discard(stream)

    def _count_drop(self) -> None:
        with self._lock:
            self._dropped += 1
