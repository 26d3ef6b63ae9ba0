"""The tool calls a model call asked for, in every convention, and what a tool span says it answered.

Requests are read from (first that has any wins):
1. GenAI ``gen_ai.output.messages`` ``tool_call`` parts (attribute, or an ``...operation.details`` event);
2. OpenInference ``llm.output_messages.<i>.message.tool_calls.<j>.tool_call.*`` (``id``, ``function.name``,
   ``function.arguments``);
3. OpenLLMetry ``gen_ai.completion.<i>.tool_calls.<j>.{id,name,arguments}``;
4. message shapes in the output messages or ``output.value``: OpenAI ``tool_calls`` (``function``),
   LangChain message dicts (``tool_calls`` with ``args``, serialised or not), Bedrock / Strands ``toolUse``;
5. a convention's reading of the model's text (DSPy's ReAct: ``next_tool_name`` and ``next_tool_args``),
   with no call id.

2, 3 and 5 are the conventions' own (``Dialect.requests_of``, ``Dialect.text_requests_of``), and 4 reads
their keys (``Dialect.request_keys``); the Vercel AI SDK's, MLflow's, Logfire's and Langfuse's own
attributes are read as GenAI ones (``_dialects``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final, TypeGuard

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects import Requested, first, hooks, keys
from toolspan.bridge.facts._event_content import content_attributes
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.facts._pyliteral import NotALiteral, python_literal
from toolspan.bridge.model import Span

__all__ = [
    "Requested",
    "earlier_requests",
    "normal_arguments",
    "normal_result",
    "requested_calls",
    "result_call_id",
    "unwrapped_result",
]

_MAX_DEPTH: Final = 8
# Every convention's flattened calls, then the keys its message shapes are in, then its reading of text.
_FLAT_HOOKS: Final = hooks(lambda d: d.requests_of)
_ARGUMENT_HOOKS: Final = hooks(lambda d: d.arguments_of)
_SOURCE_KEYS: Final = keys(lambda d: d.request_keys)
_TEXT_HOOKS: Final = hooks(lambda d: d.text_requests_of)
# Every convention's wrapper of a tool's result, asked before the shared unwrapping.
_result_hook: Final = first(hooks(lambda d: d.results_of))


def _args(value: Any) -> Any:
    return parse_json(value)


def _from_parts(messages: Any) -> list[Requested]:
    out = []
    for message in messages if isinstance(messages, list) else ():
        parts = message.get("parts") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict) and part.get("type") == "tool_call" and part.get("name"):
                cid = part.get("id")
                out.append(
                    Requested(
                        None if cid in (None, "") else str(cid),
                        str(part["name"]),
                        _args(part.get("arguments")),
                    )
                )
    return out


def _one_call(call: Mapping[str, Any]) -> Requested | None:
    use = call.get("toolUse")
    if isinstance(use, Mapping):  # Bedrock / Strands
        call = {"id": use.get("toolUseId"), "name": use.get("name"), "args": use.get("input")}
    gemini = call.get("function_call", call.get("functionCall"))
    if isinstance(gemini, Mapping):  # Python's SDK, JavaScript's camelCase  # Gemini parts (Google ADK)
        call = gemini
    haystack = call.get("tool_call")
    if isinstance(haystack, Mapping) and "tool_name" in haystack:  # Haystack ChatMessage content
        call = {"id": haystack.get("id"), "name": haystack["tool_name"], "args": haystack.get("arguments")}
    function = call.get("function")
    if isinstance(function, Mapping):  # OpenAI
        name, arguments = function.get("name"), function.get("arguments")
    else:  # LangChain
        name = call.get("name")
        arguments = call.get("args", call.get("arguments", call.get("input")))
    if not name:
        return None
    cid = call.get("id")
    return Requested(None if cid in (None, "") else str(cid), str(name), _args(arguments))


def _walk_calls(value: Any, depth: int = 0) -> Iterator[Requested]:
    """Every tool call in message-shaped JSON: ``tool_calls`` lists and ``toolUse`` blocks."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, Mapping):
        if (
            isinstance(value.get("toolUse"), Mapping)
            or isinstance(value.get("function_call"), Mapping)
            or isinstance(value.get("functionCall"), Mapping)
            or (isinstance(value.get("tool_call"), Mapping) and "tool_name" in value["tool_call"])
        ):
            found = _one_call(value)
            if found is not None:
                yield found
            return
        calls = value.get("tool_calls")
        if isinstance(calls, list) and calls:
            for call in calls:
                found = _one_call(call) if isinstance(call, Mapping) else None
                if found is not None:
                    yield found
            return
        for key, item in value.items():
            if key not in ("additional_kwargs", "invalid_tool_calls", "tool_call_chunks"):
                yield from _walk_calls(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _walk_calls(item, depth + 1)
    elif isinstance(value, str) and depth and value[:1] in ("[", "{"):
        yield from _walk_calls(parse_json(value), depth + 1)


def requested_calls(span: Span) -> list[Requested]:
    """The tool calls the model call ``span`` asked for, in the order it asked."""
    attrs = content_attributes(span, is_tool=False)
    outputs = parse_json(attrs.get(sc.GEN_AI_OUTPUT_MESSAGES))
    found = _from_parts(outputs)
    for hook in _FLAT_HOOKS:
        if found:
            return found
        found = hook(attrs)
    if not found:
        for source in (outputs, *(parse_json(attrs.get(key)) for key in _SOURCE_KEYS)):
            found = list(_walk_calls(source, 1))
            if found:
                break
    for hook in _TEXT_HOOKS:
        if found:
            return found
        found = hook(attrs)
    return found


def earlier_requests(span: Span) -> list[Requested]:
    """The tool calls earlier model calls asked for, as model call ``span`` was sent them: the ``tool_call``
    parts of the assistant messages of its GenAI ``gen_ai.input.messages``, those with the model's id only.
    A tracer that records a model call's input but not its output (OpenLLMetry's OpenAI Agents
    instrumentation with a Chat Completions model) has the model's ids there only, in the next model call."""
    inputs = parse_json(content_attributes(span, is_tool=False).get(sc.GEN_AI_INPUT_MESSAGES))
    if not isinstance(inputs, list):
        return []
    assistant = [m for m in inputs if isinstance(m, dict) and m.get("role") == "assistant"]
    return [r for r in _from_parts(assistant) if r.id is not None]


# --- what a tool span recorded, in the frameworks' wrappers ----------------------------------------


def _literal(text: str) -> Any:
    """A Python literal (``"{'city': 'Paris'}"``, as LangChain's ``input_str`` and Semantic Kernel's
    results have it), else ``text``."""
    try:
        return python_literal(text)
    except NotALiteral:
        return text


def normal_arguments(value: Any) -> Any:
    """Unwrap a framework's record of a call into its arguments where the wrapper is recognisable.

    smolagents: ``{"args": [], "kwargs": {...}, "sanitize_inputs_outputs": ...}``; LangChain callbacks via
    OpenLLMetry: ``{"input_str": "{'city': 'Paris'}", "tags": ..., "metadata": ...}``; LlamaIndex via
    OpenInference: ``{"kwargs": {...}}``; a convention's own wrapper (``Dialect.arguments_of``).
    """
    for hook in _ARGUMENT_HOOKS:
        found = hook(value)
        if found is not None:
            return found
    if isinstance(value, dict):
        if "input_str" in value and isinstance(value["input_str"], str):
            inner = parse_json(value["input_str"])
            return _literal(inner) if isinstance(inner, str) else inner
        if isinstance(value.get("kwargs"), dict) and not value.get("args") and "args" in value:
            return value["kwargs"]
        if value.keys() == {"kwargs"} and isinstance(value["kwargs"], dict):  # LlamaIndex via OpenInference
            return value["kwargs"]
    return value


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``, a dict and ``None`` told by their type first: the ABC's check is a
    Python call, and a view asks it four times of each tool call's output."""
    return type(value) is dict or (value is not None and isinstance(value, Mapping))


def _tool_message(value: Any) -> Mapping[str, Any] | None:
    """A LangChain ``ToolMessage`` as a dict (plain, ``{"type": "tool", "data": ...}`` or serialised)."""
    if not _is_mapping(value):
        return None
    if _is_mapping(value.get("output")) and value.keys() <= {"output", "kwargs"}:
        value = value["output"]
    if value.get("lc") == 1 and _is_mapping(value.get("kwargs")):
        ident = value.get("id")
        if isinstance(ident, list) and ident and ident[-1] == "ToolMessage":
            kwargs: Mapping[str, Any] = value["kwargs"]
            return kwargs
        return None
    if value.get("type") == "tool" and _is_mapping(value.get("data")):
        data: Mapping[str, Any] = value["data"]
        return data
    if value.get("type") == "tool" and "tool_call_id" in value:
        plain: Mapping[str, Any] = value
        return plain
    return None


def result_call_id(value: Any) -> str | None:
    """The ``tool_call_id`` of a ToolMessage a tool span recorded as its output, if it is one."""
    return _message_call_id(_tool_message(value))


def _message_call_id(message: Mapping[str, Any] | None) -> str | None:
    cid = message.get("tool_call_id") if message is not None else None
    return None if cid in (None, "") else str(cid)


_TOOL_OUTPUT: Final = frozenset({"tool_name", "raw_input", "raw_output"})


def _text_block(value: Mapping[str, Any]) -> bool:
    # Its keys are "type" and "text" alone (a set of them not made).
    return len(value) == 2 and "text" in value and value.get("type") == "text"


def normal_result(value: Any) -> Any:
    """A tool's result out of a framework's wrapper: a ToolMessage's content; ``[{"text": ...}]`` blocks;
    LlamaIndex's ``ToolOutput`` (its ``raw_output``, the value the function returned); an MCP text content
    block alone (``{"type": "text", "text": ...}``, as the OpenAI Agents SDK records an MCP tool's result);
    a convention's own wrapper (``Dialect.results_of``: OpenLLMetry's MCP server's ``[{"type": "text",
    "content": ...}]``); its text read as JSON."""
    return _normal_result(value, _tool_message(value))


def unwrapped_result(value: Any) -> tuple[Any, str | None]:
    """``(normal_result(value), result_call_id(value))``, the ToolMessage (if it is one) read once: what a
    view reads of every tool call's output."""
    message = _tool_message(value)
    return _normal_result(value, message), _message_call_id(message)


def _normal_result(value: Any, message: Mapping[str, Any] | None) -> Any:
    if _is_mapping(value) and value.keys() >= _TOOL_OUTPUT:
        return value["raw_output"]
    if message is not None:
        value = message.get("content")
    found = _result_hook(value)
    if found is not None:
        value = found
    elif isinstance(value, list) and len(value) == 1 and _is_mapping(value[0]):
        block = value[0]
        if set(block) == {"text"} or _text_block(block):
            value = block["text"]
    elif _is_mapping(value) and _text_block(value):
        value = value["text"]
    value = parse_json(value)
    if isinstance(value, str) and value[:1] in ("{", "["):
        # ``str()`` of a dict or list (Semantic Kernel's ``gen_ai.tool.call.result``), read as a literal.
        value = _literal(value)
    return value
