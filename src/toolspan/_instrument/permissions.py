"""Approval events on the running tool's span: ``toolspan.permission_required`` and
``toolspan.permission_decided``. A refused call raises ``toolspan.ToolDenied`` (state DENIED).

A note and edited arguments are user content: recorded only when content capture is on (and redacted).
Each event also refreshes the span's pending record (``toolspan.exporters.pending``), so a server sees the
wait while it lasts."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace as trace_api

from toolspan import semconv
from toolspan._capture.serialize import digest, dumps_exact, json_values, redact_text
from toolspan._instrument import hooks
from toolspan._instrument.context import current_agents, current_tool, suppressed
from toolspan._util import ids as _ids
from toolspan._util.words import parse_decision
from toolspan.config import get_config

_logger = logging.getLogger(__name__)

__all__ = [
    "link_waiting_span",
    "record_edited_arguments",
    "record_permission_decided",
    "record_permission_required",
    "recorded_arguments",
    "tool_span",
]


def refresh_pending(span: trace_api.Span) -> None:
    """Tell the span hooks (the pending processor) that ``span``'s approval state changed."""
    hooks.refresh(span)


def tool_span() -> trace_api.Span:
    """The running tool's span (``INVALID_SPAN`` when suppressed)."""
    return _tool_span()


def _tool_span() -> trace_api.Span:
    if suppressed():
        return trace_api.INVALID_SPAN
    frame = current_tool()
    return frame.span if frame is not None else trace_api.get_current_span()


def _note(note: object) -> dict[str, str]:
    """The note attribute: redacted, and only when content capture is on."""
    config = get_config()
    return {semconv.PERMISSION_NOTE: redact_text(str(note), config)} if config.capture_content else {}


def record_permission_required(
    note: str | None = None, *, timestamp: int | None = None, parameters: str | None = None
) -> None:
    """Record on the running tool's span that the call waits for a permission decision (at
    ``timestamp``, ns since the epoch, default now), with the agent it runs under (``gen_ai.agent.name``:
    an inbox names it while the agent's own span, which ends later, is not exported yet) and, when given,
    the JSON Schema of the tool's parameters (``toolspan.tool.parameters``: a decider's edit must fit it)."""
    try:
        span = _tool_span()
        if span.is_recording():
            if parameters is not None:
                span.set_attribute(semconv.TOOLSPAN_TOOL_PARAMETERS, parameters)
            attrs = {} if note is None else _note(note)
            agents = current_agents()
            if agents:
                attrs[semconv.GEN_AI_AGENT_NAME] = agents[-1]
            span.add_event(semconv.PERMISSION_REQUIRED_EVENT, attrs, timestamp)
            refresh_pending(span)
    except Exception:
        _logger.warning("toolspan: could not record permission_required", exc_info=True)


def record_permission_decided(
    decision: str | bool,
    note: str | None = None,
    *,
    by: str | None = None,
    latency_ms: int | None = None,
    timestamp: int | None = None,
) -> None:
    """Record on the running tool's span the decision: ``"allow"``/``True`` or ``"deny"``/``False``, who
    or what decided (``by``: a person's id, ``"policy"``, ``"timeout"``, ...) and how long the call waited
    for it (``latency_ms``, from ``permission_required``); at ``timestamp`` (ns since the epoch, default now).

    To refuse the call, raise ``toolspan.ToolDenied(note)`` afterwards (state DENIED).
    """
    verdict = parse_decision(decision, bools=True)  # another word: toolspan.errors.DecisionError
    try:
        span = _tool_span()
        if span.is_recording():
            attrs: dict[str, str] = {semconv.PERMISSION_DECISION: verdict}
            if note is not None:
                attrs.update(_note(note))
            if by is not None:
                attrs[semconv.PERMISSION_DECIDED_BY] = str(by)
            event: dict[str, Any] = dict(attrs)
            if latency_ms is not None:
                event[semconv.PERMISSION_LATENCY_MS] = int(latency_ms)
            span.add_event(semconv.PERMISSION_DECIDED_EVENT, event, timestamp)
            refresh_pending(span)
    except Exception:
        _logger.warning("toolspan: could not record permission_decided", exc_info=True)


def record_edited_arguments(arguments: Mapping[str, Any]) -> None:
    """Record on the running tool's span the arguments an approver edited (the span's
    ``gen_ai.tool.call.arguments`` keeps the model's); only with content capture on, redacted."""
    try:
        span = _tool_span()
        config = get_config()
        if span.is_recording() and config.capture_content:
            text, exact = dumps_exact(dict(arguments), config)
            span.set_attribute(semconv.TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS, text)
            if not exact:  # the copy may differ from the edit: its digest says so (the audit reads it)
                span.set_attribute(
                    semconv.TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS_DIGEST, digest(json_values(dict(arguments)))
                )
    except Exception:
        _logger.warning("toolspan: could not record the edited arguments", exc_info=True)


def link_waiting_span(trace_id: int, span_id: int) -> None:
    """Link the running tool's span to the span that waited for this approval before a restart."""
    try:
        span = _tool_span()
        if span.is_recording():
            waiting = trace_api.SpanContext(trace_id, span_id, is_remote=True)
            span.add_link(waiting, {semconv.TOOLSPAN_LINK_TYPE: semconv.LINK_TYPE_RESUMES_APPROVAL})
            span.set_attribute(semconv.TOOLSPAN_APPROVAL_RESUMES, _ids.execution_id(span_id))
    except Exception:
        _logger.warning("toolspan: could not link the waiting span", exc_info=True)


# The attributes a tool span records its arguments under, in order of preference (GenAI, OpenInference).
_ARGUMENT_KEYS = (semconv.GEN_AI_TOOL_CALL_ARGUMENTS, semconv.OI_INPUT_VALUE)


def recorded_arguments(attributes: Mapping[str, Any] | None = None) -> tuple[str | None, str | None]:
    """``(arguments, digest)`` as a tool span recorded them: its JSON text of the arguments and, when that
    copy may differ from the call (cut or redacted), the digest of the whole arguments. Of ``attributes``,
    or of the running tool's span. ``(None, None)`` when nothing was recorded (content capture off)."""
    if attributes is None:
        span = _tool_span()
        attributes = getattr(span, "attributes", None) if span.get_span_context().is_valid else None
    if not isinstance(attributes, Mapping):
        return None, None
    text = next((attributes[k] for k in _ARGUMENT_KEYS if isinstance(attributes.get(k), str)), None)
    digest = attributes.get(semconv.TOOLSPAN_TOOL_CALL_ARGUMENTS_DIGEST)
    return text, digest if isinstance(digest, str) else None
