"""The control channel's writes: a decision on one waiting call (``POST /api/control/decisions``) and a
request to cancel one running call (``POST /api/control/cancels``), each with a decider token
(``_http.auth.decider``), its JSON body parsed strictly and every field checked before anything is stored.
The first decision stands; the same one again answers what stands, another is refused with it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from toolspan._util.ids import EXECUTION_ID_PATTERN, TRACE_ID_PATTERN, arguments_sha256, parse_execution_id
from toolspan._util.words import ALLOW, DECISIONS, Decision, parse_decision
from toolspan.bridge.facts import TOOL, classify, tool_call, tool_state
from toolspan.bridge.internal import arguments_text
from toolspan.bridge.model import Span
from toolspan.errors import DecisionError
from toolspan.server._http.auth import decider
from toolspan.server._http.jsonio import JSONResponse, Refused, parse_object, read_body
from toolspan.server._http.routes.control.calls import (
    UNKNOWN_HINT,
    cancel_body,
    decision_body,
    trace_param,
    waiting,
    waiting_since,
)
from toolspan.server._http.routes.control.edits import edit_problem, recorded_schema
from toolspan.server._http.state import ServerState
from toolspan.server._rows.control import CancelRow, DecisionRow
from toolspan.server._store.api import StoreApi

__all__ = [
    "CANCEL_RESPONSES",
    "CANCEL_SCHEMA",
    "DECISION_RESPONSES",
    "DECISION_SCHEMA",
    "cancel",
    "decide",
]

MAX_BODY: Final = 256 * 1024
MAX_TEXT: Final = 2000
# Edited arguments deeper than this are refused (the recorded copy of arguments stops at 32 levels).
MAX_DEPTH: Final = 64
_DECISION_FIELDS: Final = frozenset({"execution_id", "trace_id", "decision", "shown", "arguments", "note"})
_CANCEL_FIELDS: Final = frozenset({"execution_id", "trace_id", "note"})

# --- what the OpenAPI document says of them ------------------------------------------------------------

_TEXT: Final = {"type": ["string", "null"]}
_EXECUTION: Final = {"type": "string", "pattern": EXECUTION_ID_PATTERN, "description": "exec_<span id>"}
_TRACE: Final = {
    "type": "string",
    "pattern": TRACE_ID_PATTERN,
    "description": "the call's trace (needed only when another trace holds the same span id)",
}
DECISION_SCHEMA: Final = {
    "type": "object",
    "additionalProperties": False,
    "required": ["execution_id", "decision", "shown"],
    "properties": {
        "execution_id": _EXECUTION,
        "trace_id": _TRACE,
        "decision": {"enum": list(DECISIONS)},
        "shown": {
            "type": "string",
            "description": "arguments_sha256 of the inbox entry (or page step) the decider was shown",
        },
        "note": _TEXT,
        "arguments": {
            "type": ["object", "null"],
            "description": "edited arguments (allow only): must fit the tool's recorded parameter schema",
        },
    },
}
CANCEL_SCHEMA: Final = {
    "type": "object",
    "additionalProperties": False,
    "required": ["execution_id"],
    "properties": {"execution_id": _EXECUTION, "trace_id": _TRACE, "note": _TEXT},
}
_REFUSALS: Final = {
    "400": "a field missing, malformed or not taken (by included), or a value JSON has no place for (NaN,"
    " 1e999, a lone surrogate, nesting too deep): {error, status}, naming the field",
    "401": "missing or wrong decider token",
    "403": "the server has no decider (--decider NAME=TOKEN), the application's token (it never decides),"
    " or a foreign Origin",
    "404": "no such tool call known here",
    "408": "the body stopped coming",
    "413": "body over the size limit",
    "415": "the body is not application/json",
}
DECISION_RESPONSES: Final = {
    "200": "the decision that stands (made now, or the same one made before)",
    **_REFUSALS,
    "409": "already decided otherwise (body.decision: the one that stands), not waiting (body.state), or"
    " shown does not match what the call recorded (body.arguments_sha256)",
    "422": "the edited arguments do not fit the tool's recorded parameter schema (or it has none)",
}
CANCEL_RESPONSES: Final = {
    "202": "requested",
    "200": "requested before (same body)",
    **_REFUSALS,
    "409": "the call already ended (body.state), or it waits for its approval",
}

# --- what a request names ------------------------------------------------------------------------------


def _text(doc: Mapping[str, Any], key: str, *, required: bool) -> str | None:
    value = doc.get(key)
    if value is None:
        if required:
            raise Refused(400, f"field {key!r} is required")
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise Refused(400, f"field {key!r} must be a non-empty string")
    if len(value) > MAX_TEXT:
        raise Refused(400, f"field {key!r} is longer than {MAX_TEXT} characters")
    return value


def _only(doc: Mapping[str, Any], fields: frozenset[str]) -> None:
    for key in doc:
        if key == "by":
            raise Refused(
                400, "field 'by' is not taken: a decision is recorded as made by the decider token's name"
            )
        if key not in fields:
            raise Refused(400, f"field {key[:80]!r} is not taken here (fields: {', '.join(sorted(fields))})")


def _span_key(doc: Mapping[str, Any]) -> tuple[str | None, str]:
    """``(trace_id or None, span id hex)`` of the call a request names."""
    execution_id = _text(doc, "execution_id", required=True)
    assert execution_id is not None
    span_id = parse_execution_id(execution_id)
    if span_id is None:
        raise Refused(
            400, f"field 'execution_id' is not an execution id (exec_ + 16 hex): {execution_id[:80]!r}"
        )
    raw_trace = _text(doc, "trace_id", required=False)
    trace_id = None if raw_trace is None else trace_param(raw_trace, "field 'trace_id'")
    return trace_id, format(span_id, "016x")


def _find(store: StoreApi, key: tuple[str | None, str], shown: str | None) -> Span:
    """The tool span ``key`` names (``Refused`` 404 when none). A span id alone that more than one trace holds
    names the one whose recorded arguments were shown (409 when that does not single one out)."""
    trace_id, span_id = key
    found: list[Span] = [s for s in store.span(trace_id, span_id) if classify(s) == TOOL]
    if len(found) == 1:
        return found[0]
    if not found:
        raise Refused(404, f"no tool call exec_{span_id} is known here{UNKNOWN_HINT}")
    fitting = [s for s in found if shown is not None and arguments_sha256(arguments_text(s)) == shown]
    if len(fitting) == 1:
        return fitting[0]
    raise Refused(
        409,
        f"execution exec_{span_id} names {len(found)} calls in different traces: name one with 'trace_id'",
        {"trace_ids": sorted(s.trace_id for s in found)},
    )


# A write: the store, the request's JSON body and the decider's name in; its status and body out.
_Write = Callable[[StoreApi, dict[str, Any], str], tuple[int, dict[str, Any]]]


async def _written(state: ServerState, request: Request, write: _Write, changed: int) -> Response:
    """A write's answer: its guards, its body, ``write(store, doc, by)`` in the thread pool; the long polls
    woken when it answers ``changed``."""
    try:
        by = decider(request, state.config)
        raw = await read_body(request, MAX_BODY, state.config.read_timeout_s)
        doc = parse_object(raw, max_depth=MAX_DEPTH)
        status, body = await run_in_threadpool(write, state.store, doc, by)
    except Refused as e:
        return e.response()
    if status == changed:
        state.decided()
    return JSONResponse(body, status_code=status)


# --- decisions -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Asked:
    """What a decision request asks: its call, the decision, the digest shown, a note, edited arguments."""

    key: tuple[str | None, str]
    decision: Decision
    shown: str
    note: str | None
    arguments: dict[str, Any] | None

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> _Asked:
        _only(doc, _DECISION_FIELDS)
        key = _span_key(doc)
        raw = doc.get("decision")
        try:
            decision = parse_decision(raw, "field 'decision'", shown=repr(str(raw)[:40]))
        except DecisionError as e:
            raise Refused(400, str(e)) from None
        shown = _text(doc, "shown", required=True)
        assert shown is not None
        note = _text(doc, "note", required=False)
        arguments = doc.get("arguments")
        if arguments is not None:
            if decision != ALLOW:
                raise Refused(400, f"field 'arguments' (an edit) goes with an {ALLOW!r} decision only")
            if not isinstance(arguments, dict):
                raise Refused(400, "field 'arguments' must be a JSON object (the whole edited arguments)")
        return cls(key, decision, shown, note, arguments)

    @property
    def text(self) -> str | None:
        """The edited arguments as stored (JSON text, keys sorted)."""
        return (
            None if self.arguments is None else json.dumps(self.arguments, ensure_ascii=False, sort_keys=True)
        )


def _may_decide(span: Span, asked: _Asked) -> None:
    """``Refused`` unless ``span`` waits for a decision on the arguments shown and an edit fits its schema."""
    call = tool_call(span)
    if not waiting(span):
        state = tool_state(span) if span.end_ns is not None else "RUNNING"
        raise Refused(
            409,
            f"tool call {call.execution_id} does not wait for a decision (state {state})",
            {"state": state},
        )
    recorded = arguments_sha256(arguments_text(span))
    if asked.shown != recorded:
        raise Refused(
            409,
            f"tool call {call.execution_id} recorded other arguments than those shown: show it again and"
            " decide what it recorded",
            {"arguments_sha256": recorded},
        )
    if asked.arguments is not None:
        problem = edit_problem(recorded_schema(span.attributes), asked.arguments)
        if problem is not None:
            raise Refused(422, problem)


def _decide(store: StoreApi, doc: dict[str, Any], by: str) -> tuple[int, dict[str, Any]]:
    asked = _Asked.of(doc)
    span = _find(store, asked.key, asked.shown)
    call = tool_call(span)
    text = asked.text
    # Read after the span: a span no longer waiting for a decision made here implies it is stored.
    rows = store.control.decision_for((span.trace_id, span.span_id))
    if rows:
        stored = rows[0]
    else:
        _may_decide(span, asked)
        row = DecisionRow(
            span.trace_id,
            span.span_id,
            call.execution_id,
            call.call_id,
            call.name,
            asked.decision,
            asked.shown,
            asked.note,
            by,
            text,
            waiting_since(store.control, span),
            time.time_ns(),
        )
        stored = store.control.insert_decision(row)
        if stored is row:
            return 200, decision_body(stored)
    if (
        stored.decision == asked.decision
        and stored.shown == asked.shown
        and _same_json(stored.arguments, text)
    ):
        return 200, decision_body(stored)
    return 409, {
        "error": f"tool call {call.execution_id} was already decided: {stored.decision} by"
        f" {stored.decided_by}",
        "status": 409,
        "decision": decision_body(stored),
    }


def _same_json(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is b
    return bool(json.loads(a) == json.loads(b))


async def decide(state: ServerState, request: Request) -> Response:
    """``POST /api/control/decisions``."""
    return await _written(state, request, _decide, 200)


# --- cancel requests -----------------------------------------------------------------------------------


def _cancel(store: StoreApi, doc: dict[str, Any], by: str) -> tuple[int, dict[str, Any]]:
    _only(doc, _CANCEL_FIELDS)
    key = _span_key(doc)
    note = _text(doc, "note", required=False)
    span = _find(store, key, None)
    call = tool_call(span)
    stored = [r for r in store.control.cancels_for([span.span_id]) if r.trace_id == span.trace_id]
    if stored:
        return 200, cancel_body(stored[0])
    if span.end_ns is not None:
        state = tool_state(span)
        raise Refused(409, f"tool call {call.execution_id} already ended ({state})", {"state": state})
    if waiting(span):
        raise Refused(
            409,
            f"tool call {call.execution_id} waits for its approval: deny it instead",
            {"state": "AWAITING_APPROVAL"},
        )
    row = CancelRow(span.trace_id, span.span_id, call.execution_id, call.call_id, by, note, time.time_ns())
    stood = store.control.insert_cancel(row)
    return (202 if stood is row else 200), cancel_body(stood)


async def cancel(state: ServerState, request: Request) -> Response:
    """``POST /api/control/cancels``."""
    return await _written(state, request, _cancel, 202)
