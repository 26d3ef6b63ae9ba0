"""Text deltas of the conversation timeline: streamed text for live subscribers only, never stored per chunk.

``text_delta(text)`` hands each chunk to every span hook (``hooks.SpanHook.on_text_delta``: the live
processors, which relay it to the subscribers of spans they saw start), and emits it as one OpenTelemetry log
record (event name ``toolspan.text_delta``, body: the text, in the span's context) to the application's
``LoggerProvider``, if any (``configure()`` installs one from ``OTEL_LOGS_EXPORTER``): that is how a chunk
reaches ``toolspan serve``, which relays it to its live stream clients and never stores it. The span itself
only gets the accumulated text as ``toolspan.stream.text`` (one value, within the byte budget).
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Final

from opentelemetry import trace as trace_api

from toolspan import semconv
from toolspan._instrument import hooks
from toolspan._util.ids import execution_id
from toolspan.config import get_config

__all__ = ["TEXT_DELTA", "text_delta"]

_logger = logging.getLogger(__name__)

TEXT_DELTA: Final = "text_delta"


class _Aggregate:
    __slots__ = ("full", "parts", "size")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.full = False


_aggregates: weakref.WeakKeyDictionary[trace_api.Span, _Aggregate] = weakref.WeakKeyDictionary()
_aggregates_lock = threading.Lock()
_delta_logger: Any = None


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


def _logger_of_deltas() -> Any:
    global _delta_logger
    if _delta_logger is None:
        from opentelemetry import _logs

        _delta_logger = _logs.get_logger("toolspan")
    return _delta_logger


def _emit(span: trace_api.Span, text: str) -> None:
    """One OpenTelemetry log record for the chunk, in the span's context (a no-op without a
    ``LoggerProvider``)."""
    logger = _logger_of_deltas()
    context = trace_api.set_span_in_context(span)
    try:
        logger.emit(body=text, context=context, event_name=semconv.TEXT_DELTA_EVENT)
    except TypeError:  # an API before keyword emit (1.35): the event name as the ``event.name`` attribute
        from opentelemetry._logs import LogRecord

        ctx = span.get_span_context()
        logger.emit(
            LogRecord(
                trace_id=ctx.trace_id,
                span_id=ctx.span_id,
                trace_flags=ctx.trace_flags,
                body=text,
                attributes={"event.name": semconv.TEXT_DELTA_EVENT},
            )
        )


def text_delta(text: str, *, span: trace_api.Span | None = None) -> None:
    """Stream ``text`` produced by the current tool or LLM span (or ``span``) to live subscribers.

    Every span hook hears of it (``hooks.SpanHook.on_text_delta``): subscribers of every
    ``LiveEventProcessor`` that saw the span start get
    ``{"type": "text_delta", "execution_id": "exec_<span id>", "delta": text}``. The span records no
    event per delta; its ``toolspan.stream.text`` attribute holds the text so far (when content capture
    is on), cut at the byte budget (then ``toolspan.stream.truncated`` is true). The chunk also goes to
    the OpenTelemetry logs pipeline as a ``toolspan.text_delta`` log record. Never raises.
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
        _emit(target, text)
        listeners = hooks.hooks()
        if not listeners:
            return
        event: dict[str, Any] = {
            "type": TEXT_DELTA,
            "execution_id": execution_id(ctx.span_id),
            "delta": text,
        }
        for hook in listeners:
            try:
                hook.on_text_delta(target, dict(event))
            except Exception:
                _logger.warning("toolspan: a span hook failed on a text delta", exc_info=True)
    except Exception:
        _logger.exception("toolspan: text_delta failed")
