"""Read a tool call (name, arguments, result, state, error, ids) and its approvals out of one span."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

from toolspan import semconv as sc
from toolspan._util import ids
from toolspan._util.records import quick_init
from toolspan._util.words import ALLOW, DECISIONS, DENY, Decision
from toolspan.bridge.facts._dialects import (
    DIALECTS,
    dialect_error,
    dialect_failed,
    first,
    hooks,
    keys,
    with_dialect,
)
from toolspan.bridge.facts._event_content import content_attributes
from toolspan.bridge.facts._json import parse_json
from toolspan.bridge.model import Span

__all__ = [
    "ACT_AWAITING_APPROVAL",
    "ACT_DENIED",
    "ACT_RUNNING",
    "ApprovalEvent",
    "ArgumentsEdit",
    "ToolCallRecord",
    "act_status",
    "approvals",
    "arguments_text",
    "arguments_edit",
    "call_id",
    "edited_input",
    "execution_id",
    "parent_tool_ids",
    "tool_call",
    "tool_error",
    "tool_input",
    "tool_name",
    "tool_output",
    "tool_state",
]

_CANCEL_NAMES: Final = frozenset(name.rsplit(".", 1)[-1] for name in sc.CANCELLATION_ERROR_TYPES)
_KNOWN_STATES: Final = frozenset(sc.TOOL_STATES)
# What recorders other than toolspan write for an allowing decision (toolspan writes ``ALLOW`` itself).
_ALLOW_WORDS: Final = frozenset({ALLOW, "allowed", "approve", "approved", "yes", "true"})
# The ``status`` of an act event: the call runs, waits for its approval, or was refused (its body never ran).
ACT_RUNNING: Final = "running"
ACT_AWAITING_APPROVAL: Final = "awaiting_approval"
ACT_DENIED: Final = "denied"


def execution_id(span: Span) -> str:
    return ids.execution_id(span.span_id)


# Values frameworks write where they have none (Google ADK's failure path): taken as absent.
_PLACEHOLDERS: Final = frozenset().union(*(d.absent_values for d in DIALECTS))
# The keys each reader reads: GenAI's, then every convention's (``_dialects``), then toolspan's.
_CALL_ID_KEYS: Final = (
    sc.GEN_AI_TOOL_CALL_ID,
    *keys(lambda d: d.call_id_keys),
    sc.TOOLSPAN_TOOL_CALL_ID,
)
_NAME_KEYS: Final = (sc.GEN_AI_TOOL_NAME, *keys(lambda d: d.tool_name_keys))
_NAME_HOOKS: Final = hooks(lambda d: d.name_of_tool)
_INPUT_KEYS: Final = (sc.GEN_AI_TOOL_CALL_ARGUMENTS, *keys(lambda d: d.tool_input_keys))
# Where the arguments are the JSON text the model sent, exactly (what a person deciding the call sees).
_TEXT_KEYS: Final = (sc.GEN_AI_TOOL_CALL_ARGUMENTS, *keys(lambda d: d.arguments_text_keys))
_INPUT_HOOKS: Final = hooks(lambda d: d.tool_input_of)
_explained_error: Final = first(hooks(lambda d: d.explained_error))
_OUTPUT_KEYS: Final = (sc.GEN_AI_TOOL_CALL_RESULT, *keys(lambda d: d.tool_output_keys))
_OUTPUT_HOOKS: Final = hooks(lambda d: d.tool_output_of)


def _placeholder(value: Any) -> bool:
    return isinstance(value, str) and value in _PLACEHOLDERS


def _absent(value: Any) -> bool:
    """No value: none at all, or a placeholder (an empty text is a value, a tool may return it)."""
    return value is None or _placeholder(value)


def call_id(span: Span) -> str:
    return _call_id(span, content_attributes(span, is_tool=True))


def _call_id(span: Span, attrs: Mapping[str, Any]) -> str:
    for key in _CALL_ID_KEYS:
        value = attrs.get(key)
        if not _absent(value) and value != "":
            return str(value)
    return ids.synthetic_call_id(span.span_id)


def tool_name(span: Span) -> str:
    attrs = with_dialect(span)
    for key in _NAME_KEYS:
        value = attrs.get(key)
        if value is not None and value != "":
            return str(value)
    name = span.name
    if name.startswith(sc.TOOL_SPAN_PREFIX):
        return name[len(sc.TOOL_SPAN_PREFIX) :]
    for hook in _NAME_HOOKS:  # a convention's name from the span's (DSPy's ``get_weather.__call__``)
        found = hook(span, attrs)
        if found is not None:
            return str(found)
    return name


def tool_input(span: Span) -> Any:
    """The tool's arguments as a value (``None`` when the span has none)."""
    return _tool_input(content_attributes(span, is_tool=True))


def _tool_input(attrs: Mapping[str, Any]) -> Any:
    for key in _INPUT_KEYS:
        value = attrs.get(key)
        if not _absent(value):
            return parse_json(value)
    for hook in _INPUT_HOOKS:  # a convention's own shape of a call (OpenLLMetry's ``{"args", "kwargs"}``)
        found = hook(attrs)
        if found is not None:
            return found
    return None


def arguments_text(span: Span) -> str | None:
    """The arguments' JSON text exactly as the tool span recorded it (``gen_ai.tool.call.arguments``, else a
    convention's key of the same text: OpenInference's ``input.value``), ``None`` when it recorded none: what
    a person deciding the call sees, and what the control channel's ``shown`` digest covers
    (``toolspan._util.ids.arguments_sha256``)."""
    attrs = span.attributes
    for key in _TEXT_KEYS:
        value = attrs.get(key)
        if isinstance(value, str):
            return value
    return None


def edited_input(span: Span) -> Any:
    """The arguments an approver edited, that the tool ran with (``None`` when not edited or not captured)."""
    value = span.attributes.get(sc.TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS)
    return None if value is None else parse_json(value)


@dataclass(frozen=True, slots=True)
class ArgumentsEdit:
    """Arguments that replaced the model's before the body ran (an approver's or a decider's edit): the
    model's own arguments, who decided (``permission_decided``'s ``decided_by``) and when (ns)."""

    model_input: Any
    by: str | None
    at_ns: int | None

    def mark(self, *, camel: bool = False) -> dict[str, Any]:
        """The ``edited`` mark of a view: ``{by, at (ms), model_input}`` (``modelInput`` with ``camel``)."""
        at = None if self.at_ns is None else self.at_ns // 1_000_000
        return {"by": self.by, "at": at, "modelInput" if camel else "model_input": self.model_input}


def arguments_edit(span: Span) -> tuple[Any, ArgumentsEdit | None]:
    """``(the arguments the body received, the edit)``: the recorded edit when one was recorded and the last
    decision on the call allowed it (with the model's arguments, who decided and when), else the model's
    arguments and ``None``."""
    return _arguments_edit(span, content_attributes(span, is_tool=True))


def _arguments_edit(span: Span, attrs: Mapping[str, Any]) -> tuple[Any, ArgumentsEdit | None]:
    model = _tool_input(attrs)
    edited = span.attributes.get(sc.TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS)
    if edited is None:
        return model, None
    decided = None
    for event in span.events:
        if event.name == sc.PERMISSION_DECIDED_EVENT:
            decided = event
    if decided is None:
        return parse_json(edited), ArgumentsEdit(model, None, None)
    if _normal_decision(decided.attributes.get(sc.PERMISSION_DECISION)) != ALLOW:
        return model, None
    by = decided.attributes.get(sc.PERMISSION_DECIDED_BY)
    return parse_json(edited), ArgumentsEdit(model, None if by is None else str(by), decided.time_ns)


def tool_output(span: Span) -> Any:
    """The tool's result as a value (``None`` when the span has none)."""
    return _tool_output(span, content_attributes(span, is_tool=True))


def _tool_output(span: Span, attrs: Mapping[str, Any]) -> Any:
    for key in _OUTPUT_KEYS:
        value = attrs.get(key)
        if not _absent(value):
            value = parse_json(value)
            # A placeholder response (ADK's failure path: {"result": "<not specified>"}): none was made.
            if isinstance(value, dict) and len(value) == 1 and _placeholder(value.get("result")):
                return None
            for hook in _OUTPUT_HOOKS:  # a convention's wrapper of a result (OpenLLMetry's MCP client's)
                value = hook(span, value)
            return value
    return None


def _is_cancel(error_type: Any) -> bool:
    return isinstance(error_type, str) and error_type.rsplit(".", 1)[-1] in _CANCEL_NAMES


def is_cancellation(span: Span) -> bool:
    """Whether ``span`` ended by being stopped (``error.type`` a cancellation: Ctrl-C, a cancelled task, a
    cancel request): a cancelled run, not a failed one."""
    return _is_cancel(span.attributes.get(sc.ERROR_TYPE))


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
    """Final state per the progress stream's state machine (plus ``CANCELLED``); ``SEALED`` if never ended."""
    if span.end_ns is None:
        return sc.STATE_SEALED
    attrs = span.attributes
    state = attrs.get(sc.TOOLSPAN_TOOL_STATE)
    if isinstance(state, str) and state in _KNOWN_STATES:
        return state
    if _is_cancel(attrs.get(sc.ERROR_TYPE)):
        return sc.STATE_CANCELLED
    if span.events and _decision(span) == DENY:
        return sc.STATE_DENIED
    if span.status == "ERROR" or _legacy_error(attrs) or dialect_failed(attrs):
        return sc.STATE_FAILED
    return sc.STATE_COMPLETED


def tool_error(span: Span, state: str | None = None) -> str | None:
    """A one-line error text when the call did not succeed, else ``None``."""
    state = tool_state(span) if state is None else state
    if state in (sc.STATE_COMPLETED, sc.STATE_RUNNING, sc.STATE_PENDING, sc.STATE_AWAITING_APPROVAL):
        return None
    explained = _explained_error(span)
    if explained is not None:
        return explained
    for event in span.events:
        if event.name == sc.EXCEPTION_EVENT:
            etype = event.attributes.get(sc.EXCEPTION_TYPE)
            message = event.attributes.get(sc.EXCEPTION_MESSAGE)
            if etype and message:
                return f"{etype}: {message}"
            if etype or message:
                return str(etype or message)
    recorded = dialect_error(span)
    if recorded is not None:
        return recorded
    error_type = span.attributes.get(sc.ERROR_TYPE)
    detail = _result_error(span)
    if detail is not None:
        # The error went back to the model as the tool's result (an error handler's ``{"error": ...}``).
        kind = span.status_message or error_type
        return f"{kind}: {detail}" if kind and kind != detail else detail
    if span.status_message:
        return span.status_message
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


def _result_error(span: Span) -> str | None:
    value = tool_output(span)
    if isinstance(value, dict) and isinstance(value.get("error"), str) and value["error"]:
        return str(value["error"])
    return None


def parent_tool_ids(span: Span) -> tuple[str | None, str | None]:
    """``(parent execution_id, parent tool call id)`` recorded on a sub-plan or sub-agent span."""
    attrs = span.attributes
    exec_id = attrs.get(sc.TOOLSPAN_PARENT_EXECUTION_ID)
    tc_id = attrs.get(sc.TOOLSPAN_PARENT_TOOL_CALL_ID)
    return (
        None if exec_id is None else str(exec_id),
        None if tc_id is None else str(tc_id),
    )


@quick_init  # two per tool call a view shows (read, then linked)
@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """Everything the views need about one tool span."""

    span: Span
    name: str
    input: Any  # the arguments the body received: an edit's when one replaced the model's (``edit``)
    output: Any
    error: str | None
    call_id: str
    execution_id: str
    state: str
    is_error: bool
    parent_execution_id: str | None
    parent_call_id: str | None
    # The span id of the model call that asked for this call (``None`` when no model call did, or unknown).
    requested_by: str | None = None
    # The edit that replaced the model's arguments before the body ran (``None``: it received the model's).
    edit: ArgumentsEdit | None = None

    @property
    def model_input(self) -> Any:
        """The arguments the model asked with (the same as ``input`` unless edited)."""
        return self.input if self.edit is None else self.edit.model_input

    def with_model_input(self, value: Any) -> ToolCallRecord:
        """This record with the model's arguments ``value`` (the received ones too, unless edited)."""
        if self.edit is None:
            return dataclasses.replace(self, input=value)
        return dataclasses.replace(self, edit=dataclasses.replace(self.edit, model_input=value))

    def edited_mark(self, *, camel: bool = False) -> dict[str, Any]:
        """``{"edited": mark}`` when edited (``ArgumentsEdit.mark``), else ``{}``: spread into a view's."""
        return {} if self.edit is None else {"edited": self.edit.mark(camel=camel)}


def tool_call(span: Span) -> ToolCallRecord:
    """Read the tool call recorded by ``span`` (any convention)."""
    state = tool_state(span)
    error = tool_error(span, state)
    parent_exec, parent_call = parent_tool_ids(span)
    attrs = content_attributes(span, is_tool=True)  # read by three of the readers below: made once
    received, edit = _arguments_edit(span, attrs)
    return ToolCallRecord(
        span=span,
        name=tool_name(span),
        input=received,
        output=_tool_output(span, attrs),
        error=error,
        call_id=_call_id(span, attrs),
        execution_id=execution_id(span),
        state=state,
        is_error=error is not None,
        parent_execution_id=parent_exec,
        parent_call_id=parent_call,
        edit=edit,
    )


def act_status(span: Span) -> str:
    """The call's status as its act shows it, from the approval events recorded so far: ``awaiting_approval``
    after a ``permission_required`` not yet decided, ``denied`` after a denial, else ``running``."""
    status = ACT_RUNNING
    for event in span.events:
        if event.name == sc.PERMISSION_REQUIRED_EVENT:
            status = ACT_AWAITING_APPROVAL
        elif event.name == sc.PERMISSION_DECIDED_EVENT:
            allowed = _normal_decision(event.attributes.get(sc.PERMISSION_DECISION)) == ALLOW
            status = ACT_RUNNING if allowed else ACT_DENIED
    return status


@dataclass(frozen=True, slots=True)
class ApprovalEvent:
    """A ``permission_required`` (``decision is None``) or ``permission_decided`` event."""

    time_ns: int
    decision: str | None
    note: str | None
    by: str | None = None  # who or what decided, when recorded
    # The wait for the decision: as recorded, else from the last permission_required before it (else None).
    latency_ms: int | None = None


def _normal_decision(value: Any) -> Decision:
    # A recorded decision tells what was done, not what to do: a word of toolspan's is what it says, another
    # recorder's allow is an allow, and nothing else let the call run (a missing word never did). Words are
    # parsed strictly where a decision is *made* (``words.parse_decision``).
    if value in DECISIONS and type(value) is str:
        return cast(Decision, value)
    return ALLOW if str(value).lower() in _ALLOW_WORDS else DENY


def approvals(span: Span) -> list[ApprovalEvent]:
    """The approval events of ``span`` in recorded order; decisions normalised to ``allow`` / ``deny``."""
    out = []
    asked: int | None = None
    for event in span.events:
        if event.name == sc.PERMISSION_REQUIRED_EVENT:
            out.append(ApprovalEvent(event.time_ns, None, None))
            asked = event.time_ns
        elif event.name == sc.PERMISSION_DECIDED_EVENT:
            note = event.attributes.get(sc.PERMISSION_NOTE)
            by = event.attributes.get(sc.PERMISSION_DECIDED_BY)
            latency = event.attributes.get(sc.PERMISSION_LATENCY_MS)
            if not isinstance(latency, int) or isinstance(latency, bool):
                latency = None if asked is None else max(0, event.time_ns - asked) // 1_000_000
            out.append(
                ApprovalEvent(
                    event.time_ns,
                    _normal_decision(event.attributes.get(sc.PERMISSION_DECISION)),
                    None if note is None else str(note),
                    None if by is None else str(by),
                    latency,
                )
            )
            asked = None
    return out
