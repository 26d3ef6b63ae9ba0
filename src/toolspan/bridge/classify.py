"""Recognise tool, agent, plan and LLM spans whatever wrote them, and read a tool call out of a span.

Conventions read (first match wins, in this order):

1. toolspan plans: ``toolspan.plan.name`` present -> ``plan``.
2. OTel GenAI: ``gen_ai.operation.name`` = ``execute_tool`` -> ``tool``; ``invoke_agent`` / ``create_agent``
   -> ``agent``; ``chat`` / ``text_completion`` / ``generate_content`` / ``embeddings`` -> ``llm``;
   ``retrieval`` -> ``retriever``.
3. OpenInference: ``openinference.span.kind`` TOOL / AGENT / LLM / EMBEDDING / CHAIN / RETRIEVER.
4. OpenLLMetry: ``traceloop.span.kind`` tool / agent / workflow / task (the last two -> ``chain``).
5. Older GenAI spans with only ``gen_ai.tool.name``, or a span named ``execute_tool {name}`` -> ``tool``.

Everything else is ``other``. MCP transport spans (``POST /mcp/tools/call`` in the Jaeger agent fixture) carry
no tool attributes: they are the HTTP leg of the ``execute_tool`` span above them, so they stay ``other``
(counting them as tool calls would report every MCP call twice).

Ids follow the instrumentation contract whatever wrote the span: ``execution_id`` = ``exec_`` + span id;
``call_id`` = the model's id (``gen_ai.tool.call.id``, OpenInference ``tool_call.id`` or ``tool.id``), else
``toolspan.tool_call_id``, else ``call_`` + span id.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from json.scanner import make_scanner
from typing import Any, Final

from toolspan import _ids as ids
from toolspan import semconv as sc
from toolspan.bridge.model import Span

__all__ = [
    "AGENT",
    "CHAIN",
    "LLM",
    "OTHER",
    "PLAN",
    "RETRIEVER",
    "TOOL",
    "Approval",
    "ToolCallRecord",
    "agent_input_text",
    "agent_name",
    "agent_output_text",
    "approvals",
    "call_id",
    "classify",
    "execution_id",
    "parent_tool_ids",
    "parse_json",
    "plan_name",
    "thoughts",
    "tool_call",
    "tool_error",
    "tool_input",
    "tool_name",
    "tool_output",
    "tool_state",
]

TOOL: Final = "tool"
AGENT: Final = "agent"
PLAN: Final = "plan"
LLM: Final = "llm"
CHAIN: Final = "chain"
RETRIEVER: Final = "retriever"
OTHER: Final = "other"

_OP_KINDS: Final[Mapping[str, str]] = {
    sc.OP_EXECUTE_TOOL: TOOL,
    sc.OP_INVOKE_AGENT: AGENT,
    sc.OP_CREATE_AGENT: AGENT,
    sc.OP_CHAT: LLM,
    sc.OP_TEXT_COMPLETION: LLM,
    sc.OP_GENERATE_CONTENT: LLM,
    sc.OP_EMBEDDINGS: LLM,
    sc.OP_RETRIEVAL: RETRIEVER,
}
_OI_KINDS: Final[Mapping[str, str]] = {
    sc.OI_KIND_TOOL: TOOL,
    sc.OI_KIND_AGENT: AGENT,
    sc.OI_KIND_LLM: LLM,
    sc.OI_KIND_EMBEDDING: LLM,
    sc.OI_KIND_CHAIN: CHAIN,
    sc.OI_KIND_RETRIEVER: RETRIEVER,
}
_TRACELOOP_KINDS: Final[Mapping[str, str]] = {
    sc.TRACELOOP_KIND_TOOL: TOOL,
    sc.TRACELOOP_KIND_AGENT: AGENT,
    sc.TRACELOOP_KIND_WORKFLOW: CHAIN,
    sc.TRACELOOP_KIND_TASK: CHAIN,
}
_CANCEL_NAMES: Final = frozenset(name.rsplit(".", 1)[-1] for name in sc.CANCELLATION_ERROR_TYPES)
_KNOWN_STATES: Final = frozenset(
    {
        sc.STATE_PENDING,
        sc.STATE_AWAITING_APPROVAL,
        sc.STATE_RUNNING,
        sc.STATE_COMPLETED,
        sc.STATE_FAILED,
        sc.STATE_DENIED,
        sc.STATE_CANCELLED,
        sc.STATE_SEALED,
    }
)
_ALLOW_WORDS: Final = frozenset({"allow", "allowed", "approve", "approved", "yes", "true"})
_JSON_START: Final = frozenset('{["-0123456789tfn')
_scan_once: Final[Callable[[str, int], tuple[Any, int]]] = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def classify(span: Span) -> str:
    """The role of ``span``: ``tool``, ``agent``, ``plan``, ``llm``, ``chain``, ``retriever`` or ``other``."""
    attrs = span.attributes
    if sc.TOOLSPAN_PLAN_NAME in attrs:
        return PLAN
    op = attrs.get(sc.GEN_AI_OPERATION_NAME)
    if op is not None:
        kind = _OP_KINDS.get(op) if isinstance(op, str) else None
        if kind is not None:
            return kind
    oi = attrs.get(sc.OPENINFERENCE_SPAN_KIND)
    if isinstance(oi, str):
        kind = _OI_KINDS.get(oi.upper())
        if kind is not None:
            return kind
    tl = attrs.get(sc.TRACELOOP_SPAN_KIND)
    if isinstance(tl, str):
        kind = _TRACELOOP_KINDS.get(tl.lower())
        if kind is not None:
            return kind
    if sc.GEN_AI_TOOL_NAME in attrs or span.name.startswith(sc.TOOL_SPAN_PREFIX):
        return TOOL
    return OTHER


def parse_json(value: Any) -> Any:
    """``value`` parsed if it is a string holding JSON; anything else (or non-JSON text) unchanged."""
    if isinstance(value, str) and value:
        first = value[0]
        if first in _JSON_START:
            # The C scanner directly: json.loads' wrapper costs more than decoding a small value.
            try:
                obj, end = _scan_once(value, 0)
            except (StopIteration, ValueError, RecursionError):
                return value
            if end == len(value) or not value[end:].strip():
                return obj
            return value
        if first in " \t\r\n":
            try:
                return json.loads(value)
            except (ValueError, RecursionError):
                return value
    return value


def execution_id(span: Span) -> str:
    return ids.execution_id(span.span_id)


def call_id(span: Span) -> str:
    attrs = span.attributes
    for key in (sc.GEN_AI_TOOL_CALL_ID, sc.OI_TOOL_CALL_ID, sc.OI_TOOL_ID, sc.TOOLSPAN_TOOL_CALL_ID):
        value = attrs.get(key)
        if value is not None and value != "":
            return str(value)
    return ids.synthetic_call_id(span.span_id)


def tool_name(span: Span) -> str:
    attrs = span.attributes
    for key in (sc.GEN_AI_TOOL_NAME, sc.OI_TOOL_NAME, sc.TRACELOOP_ENTITY_NAME):
        value = attrs.get(key)
        if value is not None and value != "":
            return str(value)
    name = span.name
    if name.startswith(sc.TOOL_SPAN_PREFIX):
        return name[len(sc.TOOL_SPAN_PREFIX) :]
    return name


def _unwrap_traceloop_input(value: Any) -> Any:
    # OpenLLMetry records a call as {"args": [...], "kwargs": {...}}; keyword-only calls become the kwargs.
    if isinstance(value, dict) and value and value.keys() <= {"args", "kwargs"}:
        args = value.get("args")
        kwargs = value.get("kwargs")
        if not args and isinstance(kwargs, dict):
            return kwargs
    return value


def tool_input(span: Span) -> Any:
    """The tool's arguments as a value (``None`` when the span has none)."""
    attrs = span.attributes
    value = attrs.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS)
    if value is not None:
        return parse_json(value)
    value = attrs.get(sc.OI_INPUT_VALUE)
    if value is not None:
        return parse_json(value)
    value = attrs.get(sc.TRACELOOP_ENTITY_INPUT)
    if value is not None:
        return _unwrap_traceloop_input(parse_json(value))
    return None


def tool_output(span: Span) -> Any:
    """The tool's result as a value (``None`` when the span has none)."""
    attrs = span.attributes
    for key in (sc.GEN_AI_TOOL_CALL_RESULT, sc.OI_OUTPUT_VALUE, sc.TRACELOOP_ENTITY_OUTPUT):
        value = attrs.get(key)
        if value is not None:
            return parse_json(value)
    return None


def _is_cancel(error_type: Any) -> bool:
    return isinstance(error_type, str) and error_type.rsplit(".", 1)[-1] in _CANCEL_NAMES


def _decision(span: Span) -> str | None:
    decision = None
    for event in span.events:
        if event.name == sc.PERMISSION_DECIDED_EVENT:
            decision = _normal_decision(event.attributes.get(sc.PERMISSION_DECISION))
    return decision


def _legacy_error(attrs: Mapping[str, Any]) -> bool:
    value = attrs.get(sc.LEGACY_ERROR_TAG)
    return value is True or value == "true"


def tool_state(span: Span) -> str:
    """Final state per seed 003's state machine (plus ``CANCELLED``); ``SEALED`` if the span never ended."""
    if span.end_ns is None:
        return sc.STATE_SEALED
    attrs = span.attributes
    state = attrs.get(sc.TOOLSPAN_TOOL_STATE)
    if isinstance(state, str) and state in _KNOWN_STATES:
        return state
    if _is_cancel(attrs.get(sc.ERROR_TYPE)):
        return sc.STATE_CANCELLED
    if span.events and _decision(span) == "deny":
        return sc.STATE_DENIED
    if span.status == "ERROR" or _legacy_error(attrs):
        return sc.STATE_FAILED
    return sc.STATE_COMPLETED


def tool_error(span: Span, state: str | None = None) -> str | None:
    """A one-line error text when the call did not succeed, else ``None``."""
    state = tool_state(span) if state is None else state
    if state in (sc.STATE_COMPLETED, sc.STATE_RUNNING, sc.STATE_PENDING, sc.STATE_AWAITING_APPROVAL):
        return None
    for event in span.events:
        if event.name == sc.EXCEPTION_EVENT:
            etype = event.attributes.get(sc.EXCEPTION_TYPE)
            message = event.attributes.get(sc.EXCEPTION_MESSAGE)
            if etype and message:
                return f"{etype}: {message}"
            if etype or message:
                return str(etype or message)
    if span.status_message:
        return span.status_message
    error_type = span.attributes.get(sc.ERROR_TYPE)
    if state == sc.STATE_DENIED:
        note = None
        for event in span.events:
            if event.name == sc.PERMISSION_DECIDED_EVENT:
                note = event.attributes.get(sc.PERMISSION_NOTE, note)
        return f"Permission denied: {note}" if note else "Permission denied"
    if error_type:
        return str(error_type)
    if state == sc.STATE_CANCELLED:
        return "Cancelled"
    if state == sc.STATE_SEALED:
        return "The tool call never finished"
    return "Tool call failed"


def parent_tool_ids(span: Span) -> tuple[str | None, str | None]:
    """``(parent execution_id, parent tool call id)`` recorded on a sub-plan or sub-agent span."""
    attrs = span.attributes
    exec_id = attrs.get(sc.TOOLSPAN_PARENT_EXECUTION_ID)
    tc_id = attrs.get(sc.TOOLSPAN_PARENT_TOOL_CALL_ID)
    return (
        None if exec_id is None else str(exec_id),
        None if tc_id is None else str(tc_id),
    )


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """Everything the views need about one tool span."""

    span: Span
    name: str
    input: Any
    output: Any
    error: str | None
    call_id: str
    execution_id: str
    state: str
    is_error: bool
    parent_execution_id: str | None
    parent_call_id: str | None


def tool_call(span: Span) -> ToolCallRecord:
    """Read the tool call recorded by ``span`` (any convention)."""
    state = tool_state(span)
    error = tool_error(span, state)
    parent_exec, parent_call = parent_tool_ids(span)
    return ToolCallRecord(
        span=span,
        name=tool_name(span),
        input=tool_input(span),
        output=tool_output(span),
        error=error,
        call_id=call_id(span),
        execution_id=execution_id(span),
        state=state,
        is_error=error is not None,
        parent_execution_id=parent_exec,
        parent_call_id=parent_call,
    )


# --- agents, plans, messages ---------------------------------------------------------------------


def agent_name(span: Span) -> str:
    attrs = span.attributes
    for key in (sc.GEN_AI_AGENT_NAME, sc.OI_AGENT_NAME, sc.TRACELOOP_ENTITY_NAME):
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


def _messages_text(value: Any, role: str, *, last_only: bool) -> str | None:
    value = parse_json(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, dict) and "role" in value:
        value = [value]
    if isinstance(value, list):
        texts = [
            text
            for m in value
            if isinstance(m, dict) and m.get("role", role) == role
            for text in (_message_text(m),)
            if text is not None
        ]
        if not texts:
            return None
        return texts[-1] if last_only else "\n".join(texts)
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def agent_input_text(span: Span) -> str | None:
    """What the user asked this agent (the last user message of its input), if recorded."""
    attrs = span.attributes
    for key in (sc.GEN_AI_INPUT_MESSAGES, sc.OI_INPUT_VALUE, sc.TRACELOOP_ENTITY_INPUT):
        value = attrs.get(key)
        if value is not None:
            return _messages_text(value, "user", last_only=True)
    return None


def agent_output_text(span: Span) -> str | None:
    """What this agent answered (the text of its assistant output messages), if recorded."""
    attrs = span.attributes
    for key in (sc.GEN_AI_OUTPUT_MESSAGES, sc.OI_OUTPUT_VALUE, sc.TRACELOOP_ENTITY_OUTPUT):
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


@dataclass(frozen=True, slots=True)
class Approval:
    """A ``permission_required`` (``decision is None``) or ``permission_decided`` event."""

    time_ns: int
    decision: str | None
    note: str | None


def _normal_decision(value: Any) -> str:
    # Anything but an explicit allow counts as a denial (a missing decision never lets a call run).
    return "allow" if str(value).lower() in _ALLOW_WORDS else "deny"


def approvals(span: Span) -> list[Approval]:
    """The approval events of ``span`` in recorded order; decisions normalised to ``allow`` / ``deny``."""
    out = []
    for event in span.events:
        if event.name == sc.PERMISSION_REQUIRED_EVENT:
            out.append(Approval(event.time_ns, None, None))
        elif event.name == sc.PERMISSION_DECIDED_EVENT:
            note = event.attributes.get(sc.PERMISSION_NOTE)
            out.append(
                Approval(
                    event.time_ns,
                    _normal_decision(event.attributes.get(sc.PERMISSION_DECISION)),
                    None if note is None else str(note),
                )
            )
    return out
