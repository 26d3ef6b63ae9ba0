"""Langfuse's OpenTelemetry-based SDK, marked by ``langfuse.observation.type``.

``tool`` a tool (named by the span; ``langfuse.observation.input`` its arguments, ``.output`` its result,
``.status_message`` its error), ``generation`` / ``embedding`` a model call (its messages in the same two
keys, ``langfuse.observation.model.name``, ``.usage_details``), ``agent`` an agent, ``chain`` a chain,
``retriever`` a retriever.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect, assistant, chat_messages, tool_attributes
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.facts._kinds import AGENT, CHAIN, LLM, RETRIEVER, TOOL
from toolspan.bridge.model import Span

__all__ = ["LANGFUSE"]

_KINDS: Final[Mapping[str, str]] = {
    "tool": TOOL,
    "generation": LLM,
    "embedding": LLM,
    "agent": AGENT,
    "chain": CHAIN,
    "retriever": RETRIEVER,
}


def _kind(span: Span) -> str | None:
    kind = span.attributes.get(sc.LANGFUSE_OBSERVATION_TYPE)
    return _KINDS.get(kind) if isinstance(kind, str) else None


def _read(span: Span) -> dict[str, Any]:
    attrs = span.attributes
    kind = _kind(span)
    if kind == TOOL:
        return tool_attributes(span.name, attrs.get(sc.LANGFUSE_INPUT), attrs.get(sc.LANGFUSE_OUTPUT))
    if kind == AGENT:
        output = parse_json(attrs.get(sc.LANGFUSE_OUTPUT))
        return {
            sc.GEN_AI_AGENT_NAME: span.name,
            sc.GEN_AI_OUTPUT_MESSAGES: assistant(output) if isinstance(output, str) else None,
        }
    if kind != LLM:
        return {}
    usage = parse_json(attrs.get(sc.LANGFUSE_USAGE_DETAILS))
    usage = usage if isinstance(usage, Mapping) else {}
    output = parse_json(attrs.get(sc.LANGFUSE_OUTPUT))
    return {
        sc.GEN_AI_INPUT_MESSAGES: chat_messages(parse_json(attrs.get(sc.LANGFUSE_INPUT))),
        sc.GEN_AI_OUTPUT_MESSAGES: [output] if isinstance(output, Mapping) else chat_messages(output),
        sc.GEN_AI_REQUEST_MODEL: attrs.get(sc.LANGFUSE_MODEL_NAME),
        sc.GEN_AI_USAGE_INPUT_TOKENS: usage.get("prompt_tokens", usage.get("input")),
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: usage.get("completion_tokens", usage.get("output")),
    }


def _error(span: Span) -> str | None:
    message = span.attributes.get(sc.LANGFUSE_STATUS_MESSAGE)
    return message if isinstance(message, str) and message else None


LANGFUSE = Dialect(
    precedence=60,
    name="Langfuse",
    markers=(sc.LANGFUSE_OBSERVATION_TYPE,),
    kind=_kind,
    read=_read,
    error=_error,
    index_keys=frozenset({sc.LANGFUSE_OBSERVATION_TYPE, sc.LANGFUSE_STATUS_MESSAGE}),
)
