"""Genkit's own tracing, read as GenAI (the Go SDK checked: ``docs/frameworks.md``).

Genkit writes no GenAI, OpenInference or OpenLLMetry names: every span of one of its actions is marked by
``genkit:type`` and says what it ran in ``genkit:metadata:subtype``, its action's name in ``genkit:name``
and its input and output as JSON text (``genkit:input``, ``genkit:output``):

- a tool (subtype ``tool``, or ``tool.v2``, whose output is ``{"output": value, "content": [...]}``: the
  value is the result): named by ``genkit:name``, its arguments its input;
- a model call (subtype ``model``, ``background-model`` or ``embedder``): its input a ``ModelRequest``
  (``messages``), its output a ``ModelResponse`` (``message``, ``finishReason``, ``usage``:
  ``inputTokens``, ``outputTokens``, ``cachedContentTokens``, ``thoughtsTokens``); the model is the action's
  name less its plugin's prefix (``openai/gpt-4o`` is ``gpt-4o``). Genkit messages (``role``, ``model`` for
  the assistant; ``content`` parts ``text``, ``toolRequest`` ``{name, ref, input}``, ``toolResponse``
  ``{name, ref, output}``) are read as GenAI messages, a tool request's ``ref`` as the model's call id;
- ``generate`` (type ``util``), which runs the model and tool loop: an agent, its input the request's
  ``messages``, its output the final ``ModelResponse``;
- a retriever (subtype ``retriever``); a flow (subtype ``flow``) and a flow's step (type ``flowStep``) are
  chains.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects._record import Dialect
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.facts._kinds import AGENT, CHAIN, LLM, RETRIEVER, TOOL
from toolspan.bridge.model import Span

__all__ = ["GENKIT"]


def _kind(span: Span) -> str | None:
    """The kind Genkit's marker gives ``span`` (``None``: an action no view uses)."""
    attrs = span.attributes
    subtype = attrs.get(sc.GENKIT_SUBTYPE)
    if subtype in (sc.GENKIT_TOOL, sc.GENKIT_TOOL_V2):
        return TOOL
    if subtype in sc.GENKIT_MODEL_SUBTYPES:
        return LLM
    if subtype == sc.GENKIT_RETRIEVER:
        return RETRIEVER
    kind = attrs.get(sc.GENKIT_TYPE)
    if subtype == sc.GENKIT_FLOW or kind == sc.GENKIT_FLOW_STEP:
        return CHAIN
    if kind == sc.GENKIT_UTIL and attrs.get(sc.GENKIT_NAME) == sc.GENKIT_GENERATE:
        return AGENT
    return None


def _part(part: Any) -> dict[str, Any] | None:
    if not isinstance(part, Mapping):
        return None
    if isinstance(part.get("text"), str):
        return {"type": "text", "content": part["text"]}
    request = part.get("toolRequest")
    if isinstance(request, Mapping) and request.get("name"):
        return {
            "type": "tool_call",
            "id": request.get("ref"),
            "name": request["name"],
            "arguments": request.get("input"),
        }
    response = part.get("toolResponse")
    if isinstance(response, Mapping):
        return {"type": "tool_call_response", "id": response.get("ref"), "response": response.get("output")}
    return None


def _message(message: Any, finish: Any = None) -> dict[str, Any] | None:
    """A Genkit message as a GenAI one (``model`` is the assistant)."""
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
        return None
    role = "assistant" if message["role"] == "model" else message["role"]
    content = message.get("content")
    parts = [p for p in (_part(c) for c in content) if p is not None] if isinstance(content, list) else []
    out: dict[str, Any] = {"role": role, "parts": parts}
    if isinstance(finish, str) and finish:
        out["finish_reason"] = finish
    return out


def _messages(request: Any) -> list[dict[str, Any]] | None:
    """The messages of a ``ModelRequest`` (or ``generate``'s options)."""
    messages = request.get("messages") if isinstance(request, Mapping) else None
    if not isinstance(messages, list):
        return None
    return [m for m in (_message(message) for message in messages) if m is not None]


def _response(response: Any) -> list[dict[str, Any]] | None:
    """A ``ModelResponse``'s message, with its finish reason."""
    if not isinstance(response, Mapping):
        return None
    message = _message(response.get("message"), response.get("finishReason"))
    return None if message is None else [message]


def _tool_result(span: Span, output: Any) -> Any:
    if span.attributes.get(sc.GENKIT_SUBTYPE) == sc.GENKIT_TOOL_V2 and isinstance(output, Mapping):
        return output.get("output")
    return output


def _model(name: Any) -> Any:
    # A model action is named ``plugin/model`` (a model's own name may hold more slashes).
    return name.split("/", 1)[1] if isinstance(name, str) and "/" in name else name


def _read(span: Span) -> dict[str, Any]:
    """What a Genkit span says, in GenAI names."""
    attrs = span.attributes
    kind = _kind(span)
    name = attrs.get(sc.GENKIT_NAME) or span.name
    if kind == TOOL:
        output = parse_json(attrs.get(sc.GENKIT_OUTPUT))
        return {
            sc.GEN_AI_TOOL_NAME: name,
            sc.GEN_AI_TOOL_CALL_ARGUMENTS: attrs.get(sc.GENKIT_INPUT),
            sc.GEN_AI_TOOL_CALL_RESULT: None if output is None else _tool_result(span, output),
        }
    if kind == AGENT:
        return {
            sc.GEN_AI_INPUT_MESSAGES: _messages(parse_json(attrs.get(sc.GENKIT_INPUT))),
            sc.GEN_AI_OUTPUT_MESSAGES: _response(parse_json(attrs.get(sc.GENKIT_OUTPUT))),
        }
    if kind != LLM:
        return {}
    output = parse_json(attrs.get(sc.GENKIT_OUTPUT))
    usage = output.get("usage") if isinstance(output, Mapping) else None
    usage = usage if isinstance(usage, Mapping) else {}
    return {
        sc.GEN_AI_INPUT_MESSAGES: _messages(parse_json(attrs.get(sc.GENKIT_INPUT))),
        sc.GEN_AI_OUTPUT_MESSAGES: _response(output),
        sc.GEN_AI_REQUEST_MODEL: _model(name),
        sc.GEN_AI_USAGE_INPUT_TOKENS: usage.get("inputTokens"),
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: usage.get("outputTokens"),
        sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: usage.get("cachedContentTokens"),
        sc.GEN_AI_USAGE_REASONING_TOKENS: usage.get("thoughtsTokens"),
    }


GENKIT = Dialect(
    precedence=70,
    name="Genkit",
    markers=(sc.GENKIT_TYPE,),
    kind=_kind,
    read=_read,
    # Its marker, and what its kind and its tool's name are read from.
    index_keys=frozenset({sc.GENKIT_TYPE, sc.GENKIT_SUBTYPE, sc.GENKIT_NAME}),
)
