"""Content recorded as span events (or as OTLP log records joined to spans) instead of attributes.

Read, whatever the event names a framework uses:
- the GenAI ``...operation.details`` events (``gen_ai.client.inference.operation.details`` and the like),
  which carry ``gen_ai.input.messages`` / ``gen_ai.output.messages`` / ``gen_ai.tool.call.*`` as attributes;
- the older GenAI message events: ``gen_ai.user.message``, ``gen_ai.system.message``,
  ``gen_ai.assistant.message``, ``gen_ai.tool.message`` and ``gen_ai.choice`` (``content`` / ``message``);
  on a tool span, ``gen_ai.tool.message`` is the call's arguments and ``gen_ai.choice`` its result.

``content_attributes(span, is_tool)`` overlays what the events say on the span's own attributes (the span's
attributes win), so every reader of attributes sees event content too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects import with_dialect
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.model import Span

__all__ = ["content_attributes"]

_DETAIL_KEYS: Final = (
    sc.GEN_AI_INPUT_MESSAGES,
    sc.GEN_AI_OUTPUT_MESSAGES,
    sc.GEN_AI_TOOL_CALL_ARGUMENTS,
    sc.GEN_AI_TOOL_CALL_RESULT,
    sc.GEN_AI_TOOL_CALL_ID,
)
_ROLE_EVENTS: Final[Mapping[str, str]] = {
    sc.EVENT_GEN_AI_USER_MESSAGE: "user",
    sc.EVENT_GEN_AI_SYSTEM_MESSAGE: "system",
    sc.EVENT_GEN_AI_ASSISTANT_MESSAGE: "assistant",
    sc.EVENT_GEN_AI_TOOL_MESSAGE: "tool",
}


def _message(role: str, value: Any) -> dict[str, Any]:
    value = parse_json(value)
    if isinstance(value, dict) and "role" in value:
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), (str, list)):
        return {**value, "role": role}
    return {"role": role, "content": value}


def _tool_parts(messages: Any, part_type: str, field: str) -> Any:
    """The ``field`` of the first ``part_type`` part of GenAI ``messages`` (a tool span's details)."""
    messages = parse_json(messages)
    if not isinstance(messages, list):
        return None
    for message in messages:
        parts = message.get("parts") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict) and part.get("type") == part_type and field in part:
                return part[field]
    return None


def content_attributes(span: Span, is_tool: bool) -> Mapping[str, Any]:
    """The span's attributes plus the content its events carry (the attributes win on a clash), and what
    its framework's own attributes say in GenAI names (``_dialects``)."""
    base = with_dialect(span)
    if not span.events:
        return base
    extra: dict[str, Any] = {}
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for event in span.events:
        name = event.name
        attrs = event.attributes
        if name.endswith(sc.EVENT_OPERATION_DETAILS_SUFFIX):
            for key in _DETAIL_KEYS:
                if key in attrs:
                    extra.setdefault(key, attrs[key])
        elif is_tool and name == sc.EVENT_GEN_AI_TOOL_MESSAGE:
            extra.setdefault(sc.GEN_AI_TOOL_CALL_ARGUMENTS, attrs.get("content"))
            if attrs.get("id"):
                extra.setdefault(sc.GEN_AI_TOOL_CALL_ID, attrs["id"])
        elif is_tool and name == sc.EVENT_GEN_AI_CHOICE:
            message = attrs.get("message", attrs.get("content"))
            if isinstance(message, Mapping) and "content" in message:
                message = message["content"]
            extra.setdefault(sc.GEN_AI_TOOL_CALL_RESULT, message)
        elif name in _ROLE_EVENTS:
            inputs.append(_message(_ROLE_EVENTS[name], attrs.get("content", attrs.get("message"))))
        elif name == sc.EVENT_GEN_AI_CHOICE:
            choice = _message("assistant", attrs.get("message", attrs.get("content")))
            if attrs.get("finish_reason") is not None:
                choice.setdefault("finish_reason", attrs["finish_reason"])
            outputs.append(choice)
    if is_tool:
        # Latest GenAI conventions on a tool span: the call is a tool_call part, the result a response part.
        details_in = extra.pop(sc.GEN_AI_INPUT_MESSAGES, None)
        details_out = extra.pop(sc.GEN_AI_OUTPUT_MESSAGES, None)
        if details_in is not None:
            extra.setdefault(sc.GEN_AI_TOOL_CALL_ARGUMENTS, _tool_parts(details_in, "tool_call", "arguments"))
        if details_out is not None:
            extra.setdefault(
                sc.GEN_AI_TOOL_CALL_RESULT, _tool_parts(details_out, "tool_call_response", "response")
            )
    else:
        if inputs:
            extra.setdefault(sc.GEN_AI_INPUT_MESSAGES, inputs)
        if outputs:
            extra.setdefault(sc.GEN_AI_OUTPUT_MESSAGES, outputs)
    extra = {k: v for k, v in extra.items() if v is not None and k not in base}
    if not extra:
        return base
    return {**extra, **base}
