"""The shapes of a model's tool calls and of the results it expects back (OpenAI Chat Completions,
OpenAI Responses, Anthropic Messages, Google Gemini), as dicts or SDK objects (the ``openai``,
``anthropic`` and ``google-genai`` pydantic models, read by attribute and never iterated). Used by
``run_tool_calls`` (``run``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from toolspan._approvals.approval import DEFAULT_DENY_NOTE, Api, ToolCall
from toolspan.errors import (
    InvalidArgumentsError,
    ToolDenied,
    ToolNotFoundError,
    UnsupportedToolCallError,
)

__all__ = [
    "DEFAULT_DENY_NOTE",
    "Api",
    "InvalidArgumentsError",
    "ModelObject",
    "ToolCall",
    "ToolCalls",
    "ToolNotFoundError",
    "UnsupportedToolCallError",
    "error_text",
    "parse_calls",
    "result_for",
]

DENIED_ERROR = "PermissionDenied"


class ModelObject(Protocol):
    """An object of a model SDK (``openai``, ``anthropic``, ``google-genai``: pydantic models)."""

    def model_dump(self) -> dict[str, Any]: ...


ToolCalls: TypeAlias = "Sequence[Mapping[str, Any] | ModelObject] | Mapping[str, Any] | ModelObject"
"""What ``run_tool_calls`` runs: the model's tool calls (a list of them), or the whole assistant message or
model response that holds them; dicts or SDK objects."""


# --- parsing the model's calls ------------------------------------------------------------------


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


# Keys of a Gemini ``Part`` (SDK snake_case and REST camelCase) that are not a function call.
_GEMINI_PART_KEYS = frozenset(
    {
        "text",
        "thought",
        "thought_signature",
        "thoughtSignature",
        "inline_data",
        "inlineData",
        "file_data",
        "fileData",
        "function_response",
        "functionResponse",
        "executable_code",
        "executableCode",
        "code_execution_result",
        "codeExecutionResult",
        "video_metadata",
        "videoMetadata",
    }
)


def _gemini_call(item: Any) -> Any:
    """The ``function_call`` of a Gemini part (SDK object or dict in either case), or ``None``."""
    found = _get(item, "function_call")
    if found is None and isinstance(item, Mapping):
        found = item.get("functionCall")
    return found


def _first(seq: Any) -> Any:
    return seq[0] if isinstance(seq, (list, tuple)) and seq else None


def _call_items(calls: Any) -> list[Any]:
    """The individual call items of ``calls`` (a list, a whole assistant message or model response)."""
    if isinstance(calls, (list, tuple)):
        return list(calls)
    if calls is not None and not isinstance(calls, (str, bytes)):
        if _has(calls, "candidates"):  # Gemini GenerateContentResponse: its first candidate's parts
            candidate = _first(_get(calls, "candidates"))
            return _call_items(_get(candidate, "content")) if candidate is not None else []
        if _has(calls, "choices"):  # OpenAI ChatCompletion: its first choice's message
            choice = _first(_get(calls, "choices"))
            return _call_items(_get(choice, "message")) if choice is not None else []
        output = _get(calls, "output")
        if isinstance(output, (list, tuple)):  # OpenAI Responses Response: its output items
            return list(output)
        tool_calls = _get(calls, "tool_calls")
        if tool_calls is not None:  # OpenAI assistant message
            return list(tool_calls)
        content = _get(calls, "content")
        if isinstance(content, (list, tuple)):  # Anthropic assistant message
            return list(content)
        parts = _get(calls, "parts")
        if isinstance(parts, (list, tuple)):  # Gemini Content
            return list(parts)
        if (
            _get(calls, "function") is not None
            or _get(calls, "type") in ("tool_use", "function_call")
            or _gemini_call(calls) is not None
        ):
            return [calls]
        if _has(calls, "tool_calls") or _has(calls, "content") or _has(calls, "parts"):
            return []  # a message without tool calls (tool_calls=None, text-only content, parts=None)
        if not isinstance(calls, Mapping) and not _is_model(calls) and isinstance(calls, Iterable):
            return list(calls)
    raise TypeError(f"calls must be a list of tool calls or an assistant message, not {calls!r:.80}")


def _is_model(obj: Any) -> bool:
    """A pydantic model (every SDK type): iterable, but over its fields, never over calls."""
    return hasattr(type(obj), "model_fields")


def _has(obj: Any, key: str) -> bool:
    return key in obj if isinstance(obj, Mapping) else hasattr(obj, key)


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, (str, bytes, bytearray)):
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise InvalidArgumentsError(f"arguments are not valid JSON: {exc}") from None
    else:
        value = raw
    if isinstance(value, Mapping):
        return dict(value)
    raise InvalidArgumentsError(f"arguments must be a JSON object, got {type(value).__name__}")


@dataclass
class _Parsed:
    call: ToolCall
    error: Exception | None = None


def _parse(item: Any, index: int) -> _Parsed | None:
    """Parse one item; ``None`` for a block that is not a client tool call (text, thinking...)."""
    function = _get(item, "function")
    kind = _get(item, "type")
    gemini = _gemini_call(item)
    unsupported = False
    if function is not None:
        api: Api = "openai"
        call_id, name, raw_args = _get(item, "id"), _get(function, "name"), _get(function, "arguments")
    elif kind == "tool_use":
        api = "anthropic"
        call_id, name, raw_args = _get(item, "id"), _get(item, "name"), _get(item, "input")
    elif kind == "function_call":
        api = "openai_responses"
        call_id, name, raw_args = _get(item, "call_id"), _get(item, "name"), _get(item, "arguments")
    elif kind == "custom" and _get(item, "custom") is not None:  # OpenAI custom (free-form) tool call
        api = "openai"
        call_id, name = _get(item, "id"), _get(_get(item, "custom"), "name")
        raw_args, unsupported = None, True
    elif gemini is not None or (kind is None and _has(item, "args") and _has(item, "name")):
        api = "gemini"  # a Part with a function_call, or a FunctionCall (response.function_calls)
        call = gemini if gemini is not None else item
        call_id, name, raw_args = _get(call, "id") or "", _get(call, "name"), _get(call, "args")
    elif isinstance(kind, str) or _has(item, "function_call"):
        return None  # text, thinking, server_tool_use, ... blocks, Gemini parts: not ours to run
    elif isinstance(item, Mapping) and not _GEMINI_PART_KEYS.isdisjoint(item):
        return None  # a Gemini part as a dict (text, thought, ...)
    else:
        raise TypeError(
            f"calls[{index}] is not an OpenAI tool call, an Anthropic tool_use block nor a Gemini"
            f" function call: {item!r:.120}"
        )
    if not isinstance(call_id, str) or (not call_id and api != "gemini"):
        raise TypeError(f"calls[{index}] has no call id: {item!r:.120}")
    error: Exception | None = None
    try:
        arguments = _parse_arguments(raw_args)
    except InvalidArgumentsError as exc:
        arguments, error = {}, exc
    if unsupported:
        error = UnsupportedToolCallError("custom (free-form input) tool calls are not supported")
    return _Parsed(ToolCall(id=call_id, name=str(name or ""), arguments=arguments, api=api, raw=item), error)


def parse_calls(calls: ToolCalls) -> list[_Parsed]:
    parsed = []
    for index, item in enumerate(_call_items(calls)):
        one = _parse(item, index)
        if one is not None:
            parsed.append(one)
    return parsed


# --- results ---------------------------------------------------------------------------------------


def error_text(exc: BaseException) -> str:
    if isinstance(exc, ToolDenied):
        return f"{DENIED_ERROR}: {_denial_note(exc)}"
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _denial_note(exc: BaseException) -> str:
    note = getattr(exc, "note", None)
    if note is None:
        note = str(exc)
    return str(note) if note else DEFAULT_DENY_NOTE


def result_for(call: ToolCall, content: str, is_error: bool) -> dict[str, Any]:
    if call.api == "gemini":
        response: dict[str, Any] = {"error": content} if is_error else {"output": json.loads(content)}
        function_response: dict[str, Any] = {"name": call.name, "response": response}
        if call.id:
            function_response = {"id": call.id, **function_response}
        return {"function_response": function_response}
    if call.api == "anthropic":
        return {"type": "tool_result", "tool_use_id": call.id, "content": content, "is_error": is_error}
    if call.api == "openai_responses":
        return {"type": "function_call_output", "call_id": call.id, "output": content}
    return {"role": "tool", "tool_call_id": call.id, "content": content}
