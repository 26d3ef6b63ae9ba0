"""Agent input and output as GenAI JSON message lists:
``[{"role": "user", "parts": [{"type": "text", "content": "..."}]}]``.

Accepted: a string; one message or a list of messages in the OpenAI/Anthropic chat shape
(``{"role", "content"}`` with string or block-list content, OpenAI ``tool_calls``, ``role: "tool"``
results, Anthropic ``tool_use``/``tool_result`` blocks); messages already in the GenAI shape (with
``parts``) pass through. Anything else becomes one text part holding the value.
"""

from __future__ import annotations

from typing import Any

__all__ = ["input_messages", "output_messages"]


def _text(content: Any) -> dict[str, Any]:
    return {"type": "text", "content": content}


def _block_part(block: Any) -> dict[str, Any]:
    if isinstance(block, str):
        return _text(block)
    if not isinstance(block, dict):
        return _text(block)
    kind = block.get("type")
    if kind == "text" or (kind is None and "text" in block):
        return _text(block.get("text", block.get("content")))
    if kind == "tool_use":
        return {
            "type": "tool_call",
            "id": block.get("id"),
            "name": block.get("name"),
            "arguments": block.get("input"),
        }
    if kind == "tool_result":
        return {
            "type": "tool_call_response",
            "id": block.get("tool_use_id"),
            "response": block.get("content"),
        }
    if kind in ("thinking", "reasoning"):
        return {
            "type": "reasoning",
            "content": block.get("thinking", block.get("text", block.get("content"))),
        }
    return dict(block)


def _message(message: Any, default_role: str) -> dict[str, Any]:
    if not isinstance(message, dict):
        return {"role": default_role, "parts": [_text(message)]}
    if "parts" in message and "role" in message:
        return dict(message)
    role = message.get("role", default_role)
    content = message.get("content")
    parts: list[dict[str, Any]] = []
    if role == "tool":
        parts.append({"type": "tool_call_response", "id": message.get("tool_call_id"), "response": content})
    elif isinstance(content, list):
        parts.extend(_block_part(block) for block in content)
    elif content is not None:
        parts.append(_text(content))
    for call in message.get("tool_calls") or ():
        function = call.get("function", {}) if isinstance(call, dict) else {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id") if isinstance(call, dict) else None,
                "name": function.get("name"),
                "arguments": function.get("arguments"),
            }
        )
    out: dict[str, Any] = {"role": role, "parts": parts}
    if "name" in message:
        out["name"] = message["name"]
    return out


def _messages(value: Any, default_role: str) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"role": default_role, "parts": [_text(value)]}]
    if isinstance(value, dict):
        if "role" in value or "parts" in value or "content" in value:
            return [_message(value, default_role)]
        return [{"role": default_role, "parts": [_text(value)]}]
    if isinstance(value, (list, tuple)):
        if all(isinstance(item, dict) and ("role" in item or "parts" in item) for item in value) and value:
            return [_message(item, default_role) for item in value]
        return [{"role": default_role, "parts": [_block_part(item) for item in value]}]
    return [{"role": default_role, "parts": [_text(value)]}]


def input_messages(value: Any) -> list[dict[str, Any]]:
    """The GenAI input message list for what an agent was asked (a string is one user message)."""
    return _messages(value, "user")


def output_messages(value: Any) -> list[dict[str, Any]]:
    """The GenAI output message list for what an agent answered (a string is one assistant message
    with ``finish_reason: "stop"``)."""
    messages = _messages(value, "assistant")
    for message in messages:
        message.setdefault("finish_reason", "stop")
    return messages
