"""Approval events on the running tool's span: ``toolspan.permission_required`` and
``toolspan.permission_decided``. A refused call raises ``toolspan.ToolDenied`` (state DENIED).

A note is user content: recorded only when content capture is on."""

from __future__ import annotations

import logging

from opentelemetry import trace as trace_api

from toolspan import semconv
from toolspan._context import current_tool, suppressed
from toolspan._serialize import redact_text
from toolspan.config import get_config

_logger = logging.getLogger(__name__)

__all__ = ["record_permission_decided", "record_permission_required"]

_DECISIONS = {True: "allow", False: "deny", "allow": "allow", "deny": "deny"}


def _tool_span() -> trace_api.Span:
    if suppressed():
        return trace_api.INVALID_SPAN
    frame = current_tool()
    return frame.span if frame is not None else trace_api.get_current_span()


def _note(note: object) -> dict[str, str]:
    """The note attribute: redacted, and only when content capture is on."""
    config = get_config()
    return {semconv.PERMISSION_NOTE: redact_text(str(note), config)} if config.capture_content else {}


def record_permission_required(note: str | None = None) -> None:
    """Record on the running tool's span that the call waits for a permission decision."""
    try:
        span = _tool_span()
        if span.is_recording():
            attrs = {} if note is None else _note(note)
            span.add_event(semconv.PERMISSION_REQUIRED_EVENT, attrs)
    except Exception:
        _logger.warning("toolspan: could not record permission_required", exc_info=True)


def record_permission_decided(
    decision: str | bool, note: str | None = None, *, by: str | None = None
) -> None:
    """Record on the running tool's span the decision: ``"allow"``/``True`` or ``"deny"``/``False``, and
    who or what decided (``by``: a person's id, ``"policy"``, ...).

    To refuse the call, raise ``toolspan.ToolDenied(note)`` afterwards (state DENIED).
    """
    verdict = _DECISIONS.get(decision) if isinstance(decision, (str, bool)) else None
    if verdict is None:
        raise ValueError(f"decision must be 'allow', 'deny', True or False, got {decision!r}")
    try:
        span = _tool_span()
        if span.is_recording():
            attrs = {semconv.PERMISSION_DECISION: verdict}
            if note is not None:
                attrs.update(_note(note))
            if by is not None:
                attrs[semconv.PERMISSION_DECIDED_BY] = str(by)
            span.add_event(semconv.PERMISSION_DECIDED_EVENT, attrs)
    except Exception:
        _logger.warning("toolspan: could not record permission_decided", exc_info=True)
