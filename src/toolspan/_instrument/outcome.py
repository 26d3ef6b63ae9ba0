"""How a span ends: the outcome of the code it covers (completed, failed, cancelled, denied).

- failure: status ERROR (``"<Type>: <message>"``), ``error.type`` = the exception class,
  module-qualified unless builtin, and an ``exception`` event. With content capture off the
  message and the stack trace are user content: the status says ``"<Type>"`` and the event holds
  ``exception.type`` only. With capture on, message and stack trace are redacted like any captured
  text (``api_key=[REDACTED]``) and cut to the attribute budget;
- cancellation (``asyncio.CancelledError``, ``KeyboardInterrupt``, ``GeneratorExit``): status left
  UNSET, ``error.type`` = the class name;
- ``ToolCancelled`` (a cancellation requested through ``toolspan serve``): status left UNSET,
  ``error.type = "toolspan.ToolCancelled"``, who asked in ``toolspan.tool.cancelled_by`` (the note, user
  content, only with capture on);
- ``ToolDenied``: status left UNSET (a refusal is not a failure), ``error.type = "toolspan.ToolDenied"``.

Telemetry never breaks the call: every function here logs and swallows its own errors.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from typing import Any

from opentelemetry import trace as trace_api
from opentelemetry.trace import Status, StatusCode

from toolspan import semconv
from toolspan._capture.serialize import redact_text
from toolspan.config import get_config
from toolspan.errors import ToolCancelled, ToolDenied

_logger = logging.getLogger(__name__)

__all__ = ["CANCELLATIONS", "ToolDenied", "end_span", "error_type", "record_outcome", "state_of"]

CANCELLATIONS: tuple[type[BaseException], ...] = (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit)


def error_type(exc: BaseException) -> str:
    """The exception's class, module-qualified unless it is a builtin."""
    cls = type(exc)
    module = cls.__module__
    if module == "builtins":
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


def _exception_type(exc: BaseException) -> str:
    """``exception.type`` as the SDK's ``record_exception`` writes it (the class's qualified name)."""
    return type(exc).__qualname__


def state_of(exc: BaseException) -> str:
    """The tool state an exception ends a call in."""
    if isinstance(exc, ToolDenied):
        return semconv.STATE_DENIED
    if isinstance(exc, (*CANCELLATIONS, ToolCancelled)):
        return semconv.STATE_CANCELLED
    return semconv.STATE_FAILED


def record_outcome(span: trace_api.Span, exc: BaseException, *, tool: bool, **extra: Any) -> None:
    """Record that the code under ``span`` ended by raising ``exc`` (``tool`` adds the tool state)."""
    try:
        if not span.is_recording():
            return
        state = state_of(exc)
        attrs: dict[str, Any] = dict(extra)
        if state == semconv.STATE_FAILED:
            attrs[semconv.ERROR_TYPE] = error_type(exc)
            name = type(exc).__name__
            config = get_config()
            if config.capture_content:
                message = redact_text(str(exc), config)
                trace = redact_text("".join(traceback.format_exception(exc)), config)
                span.record_exception(
                    exc, {semconv.EXCEPTION_MESSAGE: message, semconv.EXCEPTION_STACKTRACE: trace}
                )
                span.set_status(Status(StatusCode.ERROR, f"{name}: {message}" if message else name))
            else:
                span.add_event(semconv.EXCEPTION_EVENT, {semconv.EXCEPTION_TYPE: _exception_type(exc)})
                span.set_status(Status(StatusCode.ERROR, name))
        elif isinstance(exc, ToolCancelled):
            attrs[semconv.ERROR_TYPE] = error_type(exc)
            if exc.by is not None:
                attrs[semconv.TOOLSPAN_TOOL_CANCELLED_BY] = str(exc.by)
            config = get_config()
            if exc.note is not None and config.capture_content:
                attrs[semconv.TOOLSPAN_TOOL_CANCEL_NOTE] = redact_text(str(exc.note), config)
        elif state == semconv.STATE_CANCELLED:
            attrs[semconv.ERROR_TYPE] = type(exc).__name__
        else:
            attrs[semconv.ERROR_TYPE] = error_type(exc)
        if tool:
            attrs[semconv.TOOLSPAN_TOOL_STATE] = state
        span.set_attributes(attrs)
    except Exception:
        _logger.warning("toolspan: could not record the outcome of span", exc_info=True)


def end_span(span: trace_api.Span) -> None:
    """End ``span``; never raises."""
    try:
        span.end()
    except Exception:
        _logger.warning("toolspan: could not end span", exc_info=True)
