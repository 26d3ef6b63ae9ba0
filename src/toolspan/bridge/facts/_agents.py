"""Read agents, plans, their messages and the agent's thoughts out of spans."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.facts._dialects import first, hooks, keys, with_dialect
from toolspan.bridge.facts._event_content import content_attributes
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.model import Span

__all__ = ["agent_input_text", "agent_name", "agent_output_text", "plan_name", "thoughts"]

# The keys each reader reads: GenAI's, then every convention's (``_dialects``), in their order.
_NAME_KEYS: Final = (sc.GEN_AI_AGENT_NAME, *keys(lambda d: d.agent_name_keys))
_INPUT_KEYS: Final = (sc.GEN_AI_INPUT_MESSAGES, *keys(lambda d: d.agent_input_keys))
_OUTPUT_KEYS: Final = (sc.GEN_AI_OUTPUT_MESSAGES, *keys(lambda d: d.agent_output_keys))
# An agent's input or answer a convention recorded in a record of its own (CrewAI's ``TaskOutput``).
_text_of: Final = first(hooks(lambda d: d.agent_text_of))
_MESSAGE_HOOKS: Final = hooks(lambda d: d.messages_of)


def agent_name(span: Span) -> str:
    attrs = with_dialect(span)
    for key in _NAME_KEYS:
        value = attrs.get(key)
        if value is not None and value != "":
            return str(value)
    name = span.name
    if name.startswith(sc.AGENT_SPAN_PREFIX):
        return name[len(sc.AGENT_SPAN_PREFIX) :]
    return name


def plan_name(span: Span) -> str:
    value = span.attributes.get(sc.TOOLSPAN_PLAN_NAME)
    if value is not None and value != "":
        return str(value)
    name = span.name
    return name[len(sc.PLAN_SPAN_PREFIX) :] if name.startswith(sc.PLAN_SPAN_PREFIX) else name


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type", "text") == "text":
        text = part.get("content", part.get("text"))
        return text if isinstance(text, str) else None
    return None


def _message_text(message: Mapping[str, Any]) -> str | None:
    parts = message.get("parts")
    if parts is None:
        parts = message.get("content")
    if isinstance(parts, str):
        return parts
    if isinstance(parts, list):
        texts = [t for t in (_part_text(p) for p in parts) if t is not None]
        return "\n".join(texts) if texts else None
    return None


_LC_ROLES: Final[Mapping[str, str]] = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
}


def _lc_message(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """A LangChain message (serialised, ``{"type", "data"}`` or plain) as ``{"role", "content"}``."""
    if "role" in message:
        if message["role"] == "model":  # Gemini's name for the assistant
            return {**message, "role": "assistant"}
        return message
    kind: Any = message.get("type")
    inner: Any = message
    if message.get("lc") == 1 and isinstance(message.get("kwargs"), Mapping):
        inner = message["kwargs"]
        ident = message.get("id")
        kind = inner.get("type") or (ident[-1] if isinstance(ident, list) and ident else None)
    elif isinstance(message.get("data"), Mapping):
        inner = message["data"]
    role = _LC_ROLES.get(kind) if isinstance(kind, str) else None
    if role is None or "content" not in inner:
        return message
    return {"role": role, "content": inner["content"]}


def _dspy_call(value: Mapping[str, Any]) -> bool:
    args = value.get("input_args")
    return isinstance(args, dict) and len(args) == 1 and isinstance(next(iter(args.values())), str)


def _unwrap(value: Any) -> Any:
    """The message list inside the wrappers frameworks record (LangGraph state, LangChain results)."""
    for _ in range(4):
        if not isinstance(value, dict):
            break
        if isinstance(value.get("outputs"), dict) or isinstance(value.get("inputs"), dict):
            value = value.get("outputs") if isinstance(value.get("outputs"), dict) else value["inputs"]
        elif isinstance(value.get("messages"), list):
            value = value["messages"]
        elif isinstance(value.get("replies"), list):  # a Haystack chat generator's output
            value = value["replies"]
        elif isinstance(value.get("generations"), list):
            rows = [g for row in value["generations"] for g in (row if isinstance(row, list) else [row])]
            value = [
                g.get("message") or {"role": "assistant", "content": g.get("text")}
                for g in rows
                if isinstance(g, dict)
            ]
        elif isinstance(value.get("task"), str):  # smolagents' run(task=...)
            return value["task"]
        elif _dspy_call(value):  # a DSPy module called with one text field: ReAct(question=...)
            return next(iter(value["input_args"].values()))
        elif isinstance(value.get("trajectory"), dict):
            # DSPy ReAct's prediction: its trajectory, then the signature's output fields, the answer last.
            texts = [
                v for k, v in value.items() if k not in ("trajectory", "reasoning") and isinstance(v, str)
            ]
            return texts[-1] if texts else value
        elif isinstance(value.get("contents"), list):  # a Gemini request (Google ADK's llm_request)
            value = value["contents"]
        elif isinstance(value.get("content"), dict) and "parts" in value["content"]:  # a Gemini response
            value = [value["content"]]
        else:
            break
    if isinstance(value, list):
        flat = [m for item in value for m in (item if isinstance(item, list) else [item])]
        return [_lc_message(m) if isinstance(m, Mapping) else m for m in flat]
    return value


def _workflow_record(value: Any) -> bool:
    """A LlamaIndex workflow's own record of a run (its start state, its ``StopEvent`` repr): no message in
    it; the run's messages are those of its model calls."""
    if isinstance(value, str):
        return value.startswith("StopEvent(")
    return isinstance(value, dict) and "start_event" in value and "init_state" in value


def _messages_text(value: Any, role: str, *, last_only: bool) -> str | None:
    value = parse_json(value)
    if _workflow_record(value):
        return None
    value = _unwrap(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "role" in value:
        value = [value]
    if isinstance(value, list):
        texts = [
            text
            for m in value
            if isinstance(m, dict) and m.get("role", role) == role
            for text in (_message_text(m),)
            if text
        ]
        if not texts:
            return None
        return texts[-1] if last_only else "\n".join(texts)
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _flat_messages(attrs: Mapping[str, Any], output: bool) -> list[dict[str, Any]] | None:
    """A model call's own messages in a convention's flattened keys, unless GenAI's are there."""
    if (sc.GEN_AI_OUTPUT_MESSAGES if output else sc.GEN_AI_INPUT_MESSAGES) in attrs:
        return None
    for hook in _MESSAGE_HOOKS:
        messages = hook(attrs, output)
        if messages is not None:
            return messages
    return None


def agent_input_text(span: Span) -> str | None:
    """What the user asked this agent (the last user message of its input), if recorded."""
    attrs = content_attributes(span, is_tool=False)
    task = _text_of(attrs, False)
    if task is not None:
        return task
    messages = _flat_messages(attrs, False)
    if messages is not None and any(m.get("content") for m in messages):
        # A model call's own messages (LlamaIndex's input.value holds Python reprs of its messages).
        text = _messages_text(messages, "user", last_only=True)
        if text:
            return text
    for key in _INPUT_KEYS:
        value = attrs.get(key)
        if value is not None:
            return _messages_text(value, "user", last_only=True)
    return None


def agent_output_text(span: Span) -> str | None:
    """What this agent answered (the text of its assistant output messages), if recorded."""
    attrs = content_attributes(span, is_tool=False)
    task = _text_of(attrs, True)
    if task is not None:
        return task
    messages = _flat_messages(attrs, True)
    if messages is not None and any(m.get("content") for m in messages):
        # A model call's own messages (LlamaIndex's output.value is a text rendering: "assistant: ...").
        return _messages_text(messages, "assistant", last_only=False)
    for key in _OUTPUT_KEYS:
        value = attrs.get(key)
        if value is not None:
            return _messages_text(value, "assistant", last_only=False)
    return None


def thoughts(span: Span) -> list[tuple[int, str]]:
    """``(time_ns, text)`` of every non-empty ``toolspan.thought`` event on ``span``."""
    out = []
    for event in span.events:
        if event.name == sc.THOUGHT_EVENT:
            content = event.attributes.get(sc.THOUGHT_CONTENT)
            if isinstance(content, str) and content.strip():
                out.append((event.time_ns, content))
    return out
