"""Acme Agents' own tracer, marked by ``acme.span.type``: ``tool`` a tool (``acme.tool.name``,
``.call_id``, ``.args``, ``.result``, ``.error``), ``model`` a model call (``acme.input`` its messages,
``acme.output`` its answer ``{"content", "tool_calls": [{"id", "name", "args"}]}``, ``acme.model``,
``acme.usage.*``, ``acme.finish``), ``agent`` an agent (``acme.agent.name``, ``acme.input`` the user's text,
``acme.output`` its answer)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect, assistant, tool_attributes, user
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.facts._kinds import AGENT, LLM, TOOL
from toolspan.bridge.model import Span

__all__ = ["ACME"]

_KINDS: Final[Mapping[str, str]] = {"tool": TOOL, "model": LLM, "agent": AGENT}


def _kind(span: Span) -> str | None:
    kind = span.attributes.get(sc.ACME_SPAN_TYPE)
    return _KINDS.get(kind) if isinstance(kind, str) else None


def _answer(value: Any, finish: Any) -> list[dict[str, Any]] | None:
    if not isinstance(value, Mapping):
        return None
    parts: list[dict[str, Any]] = []
    if isinstance(value.get("content"), str) and value["content"]:
        parts.append({"type": "text", "content": value["content"]})
    calls = value.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, Mapping) and call.get("name"):
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": call["name"],
                    "arguments": call.get("args"),
                }
            )
    return [{"role": "assistant", "parts": parts, "finish_reason": finish}]


def _read(span: Span) -> dict[str, Any]:
    attrs = span.attributes
    kind = _kind(span)
    if kind == TOOL:
        return tool_attributes(
            attrs.get(sc.ACME_TOOL_NAME),
            attrs.get(sc.ACME_TOOL_ARGS),
            attrs.get(sc.ACME_TOOL_RESULT),
            attrs.get(sc.ACME_TOOL_CALL_ID),
        )
    if kind == AGENT:
        return {
            sc.GEN_AI_AGENT_NAME: attrs.get(sc.ACME_AGENT_NAME),
            sc.GEN_AI_INPUT_MESSAGES: user(attrs.get(sc.ACME_INPUT)),
            sc.GEN_AI_OUTPUT_MESSAGES: assistant(attrs.get(sc.ACME_OUTPUT)),
        }
    if kind != LLM:
        return {}
    finish = attrs.get(sc.ACME_FINISH)
    return {
        sc.GEN_AI_INPUT_MESSAGES: parse_json(attrs.get(sc.ACME_INPUT)),
        sc.GEN_AI_OUTPUT_MESSAGES: _answer(parse_json(attrs.get(sc.ACME_OUTPUT)), finish),
        sc.GEN_AI_RESPONSE_MODEL: attrs.get(sc.ACME_MODEL),
        sc.GEN_AI_USAGE_INPUT_TOKENS: attrs.get(sc.ACME_USAGE_INPUT),
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: attrs.get(sc.ACME_USAGE_OUTPUT),
        sc.GEN_AI_RESPONSE_FINISH_REASONS: None if finish is None else [finish],
    }


def _error(span: Span) -> str | None:
    error = span.attributes.get(sc.ACME_TOOL_ERROR)
    return error if isinstance(error, str) and error else None


def _failed(attrs: Mapping[str, Any]) -> bool:
    return bool(attrs.get(sc.ACME_TOOL_ERROR))


ACME = Dialect(
    precedence=85,
    name="Acme Agents",
    markers=(sc.ACME_SPAN_TYPE,),
    kind=_kind,
    read=_read,
    error=_error,
    failed=_failed,
    index_keys=frozenset({sc.ACME_SPAN_TYPE, sc.ACME_TOOL_NAME, sc.ACME_TOOL_ERROR}),
)
