"""The shapes of a model's tool calls and of the results it expects back (OpenAI Chat Completions,
OpenAI Responses, Anthropic), as dicts or SDK objects. Used by ``run_tool_calls`` (``_calls``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolspan import _tool

__all__ = [
    "DEFAULT_DENY_NOTE",
    "Api",
    "InvalidArgumentsError",
    "ToolCall",
    "ToolNotFoundError",
    "UnsupportedToolCallError",
    "error_text",
    "parse_calls",
    "result_for",
]

Api = Literal["openai", "openai_responses", "anthropic"]

DENIED_ERROR = "PermissionDenied"
DEFAULT_DENY_NOTE = "denied by the approver"


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a model, parsed: what ``approve`` is given."""

    id: str
    name: str
    arguments: dict[str, Any]
    api: Api
    raw: Any = field(default=None, repr=False, compare=False)


class ToolNotFoundError(LookupError):
    """The model called a tool that is not in the registry."""


class InvalidArgumentsError(ValueError):
    """The model's arguments are not a JSON object."""


class UnsupportedToolCallError(TypeError):
    """A kind of tool call that toolspan cannot run (an OpenAI custom tool call)."""


# --- parsing the model's calls ------------------------------------------------------------------


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _call_items(calls: Any) -> list[Any]:
    """The individual call items of ``calls`` (a list, or a whole assistant message)."""
    if isinstance(calls, (list, tuple)):
        return list(calls)
    if calls is not None and not isinstance(calls, (str, bytes)):
        tool_calls = _get(calls, "tool_calls")
        if tool_calls is not None:  # OpenAI assistant message
            return list(tool_calls)
        content = _get(calls, "content")
        if isinstance(content, (list, tuple)):  # Anthropic assistant message
            return list(content)
        if _get(calls, "function") is not None or _get(calls, "type") in ("tool_use", "function_call"):
            return [calls]
        if _has(calls, "tool_calls") or _has(calls, "content"):
            return []  # a message without tool calls (OpenAI tool_calls=None, or text-only content)
        if not isinstance(calls, Mapping) and isinstance(calls, Iterable):
            return list(calls)
    raise TypeError(f"calls must be a list of tool calls or an assistant message, not {calls!r:.80}")


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
    elif isinstance(kind, str):
        return None  # text, thinking, server_tool_use, ... blocks: not ours to run
    else:
        raise TypeError(
            f"calls[{index}] is not an OpenAI tool call nor an Anthropic tool_use block: {item!r:.120}"
        )
    if not isinstance(call_id, str) or not call_id:
        raise TypeError(f"calls[{index}] has no call id: {item!r:.120}")
    error: Exception | None = None
    try:
        arguments = _parse_arguments(raw_args)
    except InvalidArgumentsError as exc:
        arguments, error = {}, exc
    if unsupported:
        error = UnsupportedToolCallError("custom (free-form input) tool calls are not supported")
    return _Parsed(ToolCall(id=call_id, name=str(name or ""), arguments=arguments, api=api, raw=item), error)


def parse_calls(calls: Any) -> list[_Parsed]:
    parsed = []
    for index, item in enumerate(_call_items(calls)):
        one = _parse(item, index)
        if one is not None:
            parsed.append(one)
    return parsed


# --- results ---------------------------------------------------------------------------------------


def error_text(exc: BaseException) -> str:
    if isinstance(exc, _tool.ToolDenied):
        return f"{DENIED_ERROR}: {_denial_note(exc)}"
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _denial_note(exc: BaseException) -> str:
    note = getattr(exc, "note", None)
    if note is None:
        note = str(exc)
    return str(note) if note else DEFAULT_DENY_NOTE


def result_for(call: ToolCall, content: str, is_error: bool) -> dict[str, Any]:
    if call.api == "anthropic":
        return {"type": "tool_result", "tool_use_id": call.id, "content": content, "is_error": is_error}
    if call.api == "openai_responses":
        return {"type": "function_call_output", "call_id": call.id, "output": content}
    return {"role": "tool", "tool_call_id": call.id, "content": content}
