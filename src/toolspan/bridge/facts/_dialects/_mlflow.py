"""MLflow Tracing's native OTLP export, marked by ``mlflow.spanType`` (JSON text).

``TOOL`` a tool (named by the span; ``mlflow.spanInputs`` its arguments, ``mlflow.spanOutputs`` its
result), ``CHAT_MODEL`` / ``LLM`` / ``EMBEDDING`` a model call (its messages in the same two keys, an OpenAI
response's ``choices`` read as messages; ``mlflow.llm.model``, ``mlflow.chat.tokenUsage``), ``AGENT`` an
agent, ``CHAIN`` a chain, ``RETRIEVER`` a retriever.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import (
    Dialect,
    assistant,
    chat_messages,
    tool_attributes,
    user,
)
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.facts._kinds import AGENT, CHAIN, LLM, RETRIEVER, TOOL
from toolspan.bridge.model import Span

__all__ = ["MLFLOW"]

_KINDS: Final[Mapping[str, str]] = {
    "TOOL": TOOL,
    "CHAT_MODEL": LLM,
    "LLM": LLM,
    "EMBEDDING": LLM,
    "AGENT": AGENT,
    "CHAIN": CHAIN,
    "RETRIEVER": RETRIEVER,
}


def _kind(span: Span) -> str | None:
    kind = parse_json(span.attributes.get(sc.MLFLOW_SPAN_TYPE))
    return _KINDS.get(kind) if isinstance(kind, str) else None


def _read(span: Span) -> dict[str, Any]:
    attrs = span.attributes
    kind = _kind(span)
    inputs = parse_json(attrs.get(sc.MLFLOW_SPAN_INPUTS))
    outputs = parse_json(attrs.get(sc.MLFLOW_SPAN_OUTPUTS))
    if kind == TOOL:
        return tool_attributes(span.name, inputs, outputs)
    if kind == AGENT:
        return {
            sc.GEN_AI_AGENT_NAME: span.name,
            sc.GEN_AI_INPUT_MESSAGES: user(inputs) if isinstance(inputs, str) else inputs,
            sc.GEN_AI_OUTPUT_MESSAGES: assistant(outputs) if isinstance(outputs, str) else outputs,
        }
    if kind != LLM:
        return {}
    usage = parse_json(attrs.get(sc.MLFLOW_TOKEN_USAGE))
    usage = usage if isinstance(usage, Mapping) else {}
    return {
        sc.GEN_AI_INPUT_MESSAGES: chat_messages(inputs),
        sc.GEN_AI_OUTPUT_MESSAGES: chat_messages(outputs),
        sc.GEN_AI_REQUEST_MODEL: parse_json(attrs.get(sc.MLFLOW_LLM_MODEL)),
        sc.GEN_AI_USAGE_INPUT_TOKENS: usage.get("input_tokens"),
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: usage.get("output_tokens"),
    }


MLFLOW = Dialect(
    precedence=40,
    name="MLflow Tracing",
    markers=(sc.MLFLOW_SPAN_TYPE,),
    kind=_kind,
    read=_read,
    index_keys=frozenset({sc.MLFLOW_SPAN_TYPE}),
)
