"""The Vercel AI SDK (``experimental_telemetry``), marked by ``ai.operationId``.

``ai.toolCall`` is a tool (``ai.toolCall.name``, ``.id``, ``.args``, ``.result``); ``ai.generateText`` /
``ai.streamText`` an agent (the SDK's tool loop; its name ``ai.telemetry.functionId``, its messages
``ai.prompt`` and ``ai.response.text``); ``*.doGenerate`` / ``*.doStream`` / ``*.doEmbed`` a model call
(requests ``ai.response.toolCalls``, text ``ai.response.text``, ``ai.response.finishReason``,
``ai.prompt.messages``, ``ai.usage.*``, ``ai.response.model`` / ``ai.model.id``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect, assistant, tool_attributes, user
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.facts._kinds import AGENT, LLM, TOOL
from toolspan.bridge.model import Span

__all__ = ["VERCEL_AI"]


def _kind(span: Span) -> str | None:
    op = span.attributes.get(sc.VERCEL_OPERATION_ID)
    if not isinstance(op, str):
        return None
    if op == sc.VERCEL_TOOL_CALL:
        return TOOL
    if op in sc.VERCEL_LOOPS:
        return AGENT
    if op.endswith(sc.VERCEL_MODEL_CALL_SUFFIXES):
        return LLM
    return None


def _agent(attrs: Mapping[str, Any]) -> dict[str, Any]:
    prompt = parse_json(attrs.get(sc.VERCEL_PROMPT))
    messages = None
    if isinstance(prompt, Mapping):
        found = prompt.get("messages")
        messages = found if isinstance(found, list) else user(prompt.get("prompt"))
    return {
        sc.GEN_AI_AGENT_NAME: attrs.get(sc.VERCEL_FUNCTION_ID),
        sc.GEN_AI_INPUT_MESSAGES: messages,
        sc.GEN_AI_OUTPUT_MESSAGES: assistant(attrs.get(sc.VERCEL_RESPONSE_TEXT)),
    }


def _model_call(attrs: Mapping[str, Any]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    text = attrs.get(sc.VERCEL_RESPONSE_TEXT)
    if isinstance(text, str) and text:
        parts.append({"type": "text", "content": text})
    calls = parse_json(attrs.get(sc.VERCEL_RESPONSE_TOOL_CALLS))
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, Mapping) and call.get("toolName"):
            arguments = call.get("input", call.get("args"))  # ``args`` before ai 5
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("toolCallId"),
                    "name": call["toolName"],
                    "arguments": parse_json(arguments),
                }
            )
    finish = attrs.get(sc.VERCEL_RESPONSE_FINISH_REASON)
    output = {"role": "assistant", "parts": parts, "finish_reason": finish} if parts or finish else None
    return {
        sc.GEN_AI_INPUT_MESSAGES: parse_json(attrs.get(sc.VERCEL_PROMPT_MESSAGES)),
        sc.GEN_AI_OUTPUT_MESSAGES: None if output is None else [output],
        sc.GEN_AI_RESPONSE_MODEL: attrs.get(sc.VERCEL_RESPONSE_MODEL),
        sc.GEN_AI_REQUEST_MODEL: attrs.get(sc.VERCEL_MODEL_ID),
        sc.GEN_AI_USAGE_INPUT_TOKENS: attrs.get(
            sc.VERCEL_USAGE_INPUT_TOKENS, attrs.get(sc.VERCEL_USAGE_PROMPT_TOKENS)
        ),
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: attrs.get(
            sc.VERCEL_USAGE_OUTPUT_TOKENS, attrs.get(sc.VERCEL_USAGE_COMPLETION_TOKENS)
        ),
    }


def _read(span: Span) -> dict[str, Any]:
    attrs = span.attributes
    kind = _kind(span)
    if kind == TOOL:
        return tool_attributes(
            attrs.get(sc.VERCEL_TOOL_CALL_NAME),
            attrs.get(sc.VERCEL_TOOL_CALL_ARGS),
            attrs.get(sc.VERCEL_TOOL_CALL_RESULT),
            attrs.get(sc.VERCEL_TOOL_CALL_ID),
        )
    if kind == AGENT:
        return _agent(attrs)
    return _model_call(attrs) if kind == LLM else {}


VERCEL_AI = Dialect(
    precedence=30,
    name="Vercel AI SDK",
    markers=(sc.VERCEL_OPERATION_ID,),
    kind=_kind,
    read=_read,
    index_keys=frozenset({sc.VERCEL_OPERATION_ID, sc.VERCEL_TOOL_CALL_NAME}),
)
