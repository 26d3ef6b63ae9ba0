"""Frameworks whose own attribute names say what the GenAI conventions say elsewhere, read as GenAI.

Four tracers write no ``gen_ai.operation.name`` (nor OpenInference's or OpenLLMetry's kinds) on the spans
that matter; each marks its spans with a key of its own, and ``dialect_kind`` / ``with_dialect`` read them
(versions checked: ``docs/frameworks.md``):

- **The Vercel AI SDK** (``experimental_telemetry``), marked by ``ai.operationId``: ``ai.toolCall`` is a
  tool (``ai.toolCall.name``, ``.id``, ``.args``, ``.result``); ``ai.generateText`` / ``ai.streamText`` an
  agent (the SDK's tool loop; its name ``ai.telemetry.functionId``, its messages ``ai.prompt`` and
  ``ai.response.text``); ``*.doGenerate`` / ``*.doStream`` / ``*.doEmbed`` a model call (requests
  ``ai.response.toolCalls``, text ``ai.response.text``, ``ai.response.finishReason``, ``ai.prompt.messages``,
  ``ai.usage.*``, ``ai.response.model`` / ``ai.model.id``).
- **MLflow Tracing**'s native OTLP export, marked by ``mlflow.spanType`` (JSON text): ``TOOL`` a tool (named
  by the span; ``mlflow.spanInputs`` its arguments, ``mlflow.spanOutputs`` its result), ``CHAT_MODEL`` /
  ``LLM`` / ``EMBEDDING`` a model call (its messages in the same two keys, an OpenAI response's ``choices``
  read as messages; ``mlflow.llm.model``, ``mlflow.chat.tokenUsage``), ``AGENT`` an agent, ``CHAIN`` a
  chain, ``RETRIEVER`` a retriever.
- **Logfire**'s OpenAI Agents integration, marked by ``logfire.msg_template``: ``Function: {name}`` a tool
  (``name``, ``input``, ``output``, ``error``: ``{"message": ...}``), ``Agent run: {name!r}`` an agent,
  ``Chat completion with {gen_ai.request.model!r}`` / ``Responses API with ...`` a model call (``input``,
  ``output`` messages).
- **Langfuse**'s OpenTelemetry-based SDK, marked by ``langfuse.observation.type``: ``tool`` a tool (named by
  the span; ``langfuse.observation.input`` its arguments, ``.output`` its result, ``.status_message`` its
  error), ``generation`` / ``embedding`` a model call (its messages in the same two keys,
  ``langfuse.observation.model.name``, ``.usage_details``), ``agent`` an agent, ``chain`` a chain,
  ``retriever`` a retriever.

The span's own attributes win over what is read here (a span with GenAI names keeps them).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.facts._kinds import AGENT, CHAIN, LLM, RETRIEVER, TOOL
from toolspan.bridge.model import Span

__all__ = ["dialect_error", "dialect_kind", "with_dialect"]

_MLFLOW_KINDS: Final[Mapping[str, str]] = {
    "TOOL": TOOL,
    "CHAT_MODEL": LLM,
    "LLM": LLM,
    "EMBEDDING": LLM,
    "AGENT": AGENT,
    "CHAIN": CHAIN,
    "RETRIEVER": RETRIEVER,
}


_LANGFUSE_KINDS: Final[Mapping[str, str]] = {
    "tool": TOOL,
    "generation": LLM,
    "embedding": LLM,
    "agent": AGENT,
    "chain": CHAIN,
    "retriever": RETRIEVER,
}


def _vercel_kind(op: str) -> str | None:
    if op == sc.VERCEL_TOOL_CALL:
        return TOOL
    if op in sc.VERCEL_LOOPS:
        return AGENT
    if op.endswith(sc.VERCEL_MODEL_CALL_SUFFIXES):
        return LLM
    return None


def _mlflow_kind(value: Any) -> str | None:
    kind = parse_json(value)
    return _MLFLOW_KINDS.get(kind) if isinstance(kind, str) else None


def _logfire_kind(template: str) -> str | None:
    if template == sc.LOGFIRE_TOOL_TEMPLATE:
        return TOOL
    if template == sc.LOGFIRE_AGENT_TEMPLATE:
        return AGENT
    if template in sc.LOGFIRE_MODEL_TEMPLATES:
        return LLM
    return None


def dialect_kind(span: Span) -> str | None:
    """The kind a framework's own marker gives ``span`` (``None``: no marker, or a kind no view uses)."""
    attrs = span.attributes
    op = attrs.get(sc.VERCEL_OPERATION_ID)
    if isinstance(op, str):
        return _vercel_kind(op)
    mlflow = attrs.get(sc.MLFLOW_SPAN_TYPE)
    if mlflow is not None:
        return _mlflow_kind(mlflow)
    template = attrs.get(sc.LOGFIRE_MSG_TEMPLATE)
    if isinstance(template, str):
        return _logfire_kind(template)
    langfuse = attrs.get(sc.LANGFUSE_OBSERVATION_TYPE)
    if isinstance(langfuse, str):
        return _LANGFUSE_KINDS.get(langfuse)
    return None


def _user(value: Any) -> list[dict[str, Any]] | None:
    return None if value is None else [{"role": "user", "content": value}]


def _assistant(value: Any) -> list[dict[str, Any]] | None:
    return None if value is None else [{"role": "assistant", "content": value}]


def _tool(name: Any, arguments: Any, result: Any, call_id: Any = None) -> dict[str, Any]:
    return {
        sc.GEN_AI_TOOL_NAME: name,
        sc.GEN_AI_TOOL_CALL_ID: call_id,
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: arguments,
        sc.GEN_AI_TOOL_CALL_RESULT: result,
    }


def _vercel(span: Span, op: str) -> dict[str, Any]:
    attrs = span.attributes
    kind = _vercel_kind(op)
    if kind == TOOL:
        return _tool(
            attrs.get(sc.VERCEL_TOOL_CALL_NAME),
            attrs.get(sc.VERCEL_TOOL_CALL_ARGS),
            attrs.get(sc.VERCEL_TOOL_CALL_RESULT),
            attrs.get(sc.VERCEL_TOOL_CALL_ID),
        )
    if kind == AGENT:
        prompt = parse_json(attrs.get(sc.VERCEL_PROMPT))
        messages = None
        if isinstance(prompt, Mapping):
            found = prompt.get("messages")
            messages = found if isinstance(found, list) else _user(prompt.get("prompt"))
        return {
            sc.GEN_AI_AGENT_NAME: attrs.get(sc.VERCEL_FUNCTION_ID),
            sc.GEN_AI_INPUT_MESSAGES: messages,
            sc.GEN_AI_OUTPUT_MESSAGES: _assistant(attrs.get(sc.VERCEL_RESPONSE_TEXT)),
        }
    if kind != LLM:
        return {}
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


def _mlflow_messages(value: Any) -> Any:
    """A model call's recorded inputs or outputs as a message list: an OpenAI response's ``choices`` (each
    message with its ``finish_reason``), a request's ``messages``, or the value itself."""
    if isinstance(value, Mapping):
        choices = value.get("choices")
        if isinstance(choices, list):
            return [
                {**c["message"], "finish_reason": c.get("finish_reason")}
                for c in choices
                if isinstance(c, Mapping) and isinstance(c.get("message"), Mapping)
            ]
        messages = value.get("messages")
        if isinstance(messages, list):
            return messages
    return value


def _mlflow(span: Span, value: Any) -> dict[str, Any]:
    attrs = span.attributes
    kind = _mlflow_kind(value)
    inputs = parse_json(attrs.get(sc.MLFLOW_SPAN_INPUTS))
    outputs = parse_json(attrs.get(sc.MLFLOW_SPAN_OUTPUTS))
    if kind == TOOL:
        return _tool(span.name, inputs, outputs)
    if kind == AGENT:
        return {
            sc.GEN_AI_AGENT_NAME: span.name,
            sc.GEN_AI_INPUT_MESSAGES: _user(inputs) if isinstance(inputs, str) else inputs,
            sc.GEN_AI_OUTPUT_MESSAGES: _assistant(outputs) if isinstance(outputs, str) else outputs,
        }
    if kind != LLM:
        return {}
    usage = parse_json(attrs.get(sc.MLFLOW_TOKEN_USAGE))
    usage = usage if isinstance(usage, Mapping) else {}
    return {
        sc.GEN_AI_INPUT_MESSAGES: _mlflow_messages(inputs),
        sc.GEN_AI_OUTPUT_MESSAGES: _mlflow_messages(outputs),
        sc.GEN_AI_REQUEST_MODEL: parse_json(attrs.get(sc.MLFLOW_LLM_MODEL)),
        sc.GEN_AI_USAGE_INPUT_TOKENS: usage.get("input_tokens"),
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: usage.get("output_tokens"),
    }


def _logfire(span: Span, template: str) -> dict[str, Any]:
    attrs = span.attributes
    kind = _logfire_kind(template)
    if kind == TOOL:
        return _tool(attrs.get(sc.LOGFIRE_NAME), attrs.get(sc.LOGFIRE_INPUT), attrs.get(sc.LOGFIRE_OUTPUT))
    if kind == AGENT:
        return {sc.GEN_AI_AGENT_NAME: attrs.get(sc.LOGFIRE_NAME)}
    if kind != LLM:
        return {}
    return {
        sc.GEN_AI_INPUT_MESSAGES: parse_json(attrs.get(sc.LOGFIRE_INPUT)),
        sc.GEN_AI_OUTPUT_MESSAGES: parse_json(attrs.get(sc.LOGFIRE_OUTPUT, attrs.get(sc.LOGFIRE_RESPONSE))),
    }


def _langfuse(span: Span, kind: str | None) -> dict[str, Any]:
    attrs = span.attributes
    if kind == TOOL:
        return _tool(span.name, attrs.get(sc.LANGFUSE_INPUT), attrs.get(sc.LANGFUSE_OUTPUT))
    if kind == AGENT:
        output = parse_json(attrs.get(sc.LANGFUSE_OUTPUT))
        return {
            sc.GEN_AI_AGENT_NAME: span.name,
            sc.GEN_AI_OUTPUT_MESSAGES: _assistant(output) if isinstance(output, str) else None,
        }
    if kind != LLM:
        return {}
    usage = parse_json(attrs.get(sc.LANGFUSE_USAGE_DETAILS))
    usage = usage if isinstance(usage, Mapping) else {}
    output = parse_json(attrs.get(sc.LANGFUSE_OUTPUT))
    return {
        sc.GEN_AI_INPUT_MESSAGES: _mlflow_messages(parse_json(attrs.get(sc.LANGFUSE_INPUT))),
        sc.GEN_AI_OUTPUT_MESSAGES: [output] if isinstance(output, Mapping) else _mlflow_messages(output),
        sc.GEN_AI_REQUEST_MODEL: attrs.get(sc.LANGFUSE_MODEL_NAME),
        sc.GEN_AI_USAGE_INPUT_TOKENS: usage.get("prompt_tokens", usage.get("input")),
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: usage.get("completion_tokens", usage.get("output")),
    }


# The last spans read, by their attributes' identity (the entry holds the attributes, so an id is not reused
# while cached): the readers of one span (name, arguments, requests, usage, messages) each ask for its
# dialect, which parses its JSON values once.
_MEMO_SIZE: Final = 64
_memo: OrderedDict[int, tuple[Mapping[str, Any], dict[str, Any] | None]] = OrderedDict()
_memo_lock = threading.Lock()


def _dialect(span: Span) -> dict[str, Any] | None:
    attrs = span.attributes
    if (
        sc.VERCEL_OPERATION_ID not in attrs
        and sc.MLFLOW_SPAN_TYPE not in attrs
        and sc.LOGFIRE_MSG_TEMPLATE not in attrs
        and sc.LANGFUSE_OBSERVATION_TYPE not in attrs
    ):
        return None
    key = id(attrs)
    with _memo_lock:
        hit = _memo.get(key)
        if hit is not None and hit[0] is attrs:
            return hit[1]
    read = _read_dialect(span)
    found = None
    if read:
        extra = {k: v for k, v in read.items() if v is not None and k not in attrs}
        found = {**extra, **attrs} if extra else None
    with _memo_lock:
        _memo[key] = (attrs, found)
        if len(_memo) > _MEMO_SIZE:
            _memo.popitem(last=False)
    return found


def _read_dialect(span: Span) -> dict[str, Any] | None:
    attrs = span.attributes
    op = attrs.get(sc.VERCEL_OPERATION_ID)
    if isinstance(op, str):
        return _vercel(span, op)
    mlflow = attrs.get(sc.MLFLOW_SPAN_TYPE)
    if mlflow is not None:
        return _mlflow(span, mlflow)
    template = attrs.get(sc.LOGFIRE_MSG_TEMPLATE)
    if isinstance(template, str):
        return _logfire(span, template)
    langfuse = attrs.get(sc.LANGFUSE_OBSERVATION_TYPE)
    if isinstance(langfuse, str):
        return _langfuse(span, _LANGFUSE_KINDS.get(langfuse))
    return None


def with_dialect(span: Span) -> Mapping[str, Any]:
    """The span's attributes, plus the GenAI names its framework's own attributes give (the span's win).
    Values parsed from JSON are shared by the calls on one span: readers never change them."""
    found = _dialect(span)
    return span.attributes if found is None else found


def dialect_error(span: Span) -> str | None:
    """The error message a framework recorded as an attribute (Logfire's ``error``, Langfuse's
    ``langfuse.observation.status_message``), if any."""
    message = span.attributes.get(sc.LANGFUSE_STATUS_MESSAGE)
    if isinstance(message, str) and message:
        return message
    template = span.attributes.get(sc.LOGFIRE_MSG_TEMPLATE)
    if template != sc.LOGFIRE_TOOL_TEMPLATE:
        return None
    error = parse_json(span.attributes.get(sc.LOGFIRE_ERROR))
    if isinstance(error, Mapping) and isinstance(error.get("message"), str):
        return str(error["message"])
    return error if isinstance(error, str) and error else None
