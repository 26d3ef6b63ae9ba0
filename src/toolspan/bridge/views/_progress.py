"""Progress stream: progress, control and monitor envelopes ``[{schema_version, channel, event, bookmark}]``.

``bookmark`` is ``{seq, timestamp}``: ``seq`` runs 1, 2, 3... over the whole output (strictly monotonic),
``timestamp`` is ms since the epoch. Every event carries ``type`` and ``channel``; tool events carry a
``call`` snapshot ``{id, name, state, execution_id, inputPreview, startedAt, completedAt, durationMs, result,
error, isError, approval}`` (``approval`` = ``{required, decision, note, decidedAt, by, latencyMs,
arguments}`` when approvals were recorded, else null: who decided, the wait in ms, and the arguments the
approver edited, that the call ran with, when it did). ``inputPreview`` is the arguments the body received:
when an approver or decider replaced the model's, the snapshot also carries ``edited: {by, at (ms),
modelInput}`` (the model's own arguments); a snapshot of a call still waiting for its decision shows the
model's. Per tool span, in time order:

- control ``permission_required`` (state ``AWAITING_APPROVAL``) and ``permission_decided``
  ``{callId, decision, note, decidedAt, by, latencyMs, arguments}`` for each approval event;
- progress ``tool:start`` (state ``RUNNING``) at the start, or at the allowing decision when approval was
  required; a denied call has none, nor has a call still waiting for its decision;
- progress ``tool:error`` ``{call, error}`` when the call FAILED;
- progress ``tool:end`` with the final state (COMPLETED, FAILED, DENIED, CANCELLED) and ``durationMs``;
- monitor ``tool_executed`` with the same snapshot (``durationMs``, ``approval``);
- monitor ``error`` ``{phase, severity, message, callId, execution_id}`` when the call FAILED (phase
  ``tool``, severity ``error``).

Monitor ``error`` also reports a model call that failed (phase ``model``, at its end) and a turn whose
agent span failed (phase ``system``, just before its ``done``); severity is ``error`` for all three
(``info``/``warn`` are reserved by the seed's format for milder reports). Monitor ``state_changed`` ``{from,
to}`` follows the agent's state per trace: ``READY`` -> ``WORKING`` just before the trace's first event (and
the first event after a ``done``), ``WORKING`` -> ``PAUSED`` when a call starts waiting for its approval and
none waited, ``PAUSED`` -> ``WORKING`` when the last waiting call is decided (or ends), and -> ``READY`` just
before each ``done``. They are read from tool spans only, which a live server has from their start.

A tool that started and never ended gets, at the end of its trace, ``tool:end`` with state ``SEALED`` and
the frontends' auto-seal payload as ``result`` (``{ok: false, error, recommendations, _autoSealed: true}``).
progress ``done`` ``{step, reason}`` closes every turn (an agent span with no agent above it) at its end
(``reason`` ``completed``, or ``interrupted`` when it failed, never ended or left a sealed call; ``step`` =
tool calls that ended in the turn); a trace without agents gets one ``done`` at its end.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from toolspan import semconv as sc
from toolspan._util.words import ALLOW
from toolspan.bridge._coalesce import coalesce
from toolspan.bridge.facts import AGENT, TOOL, ApprovalEvent, ToolCallRecord, approvals
from toolspan.bridge.internal import edited_input
from toolspan.bridge.model import Span
from toolspan.bridge.views._common import (
    AGENTS,
    SCHEMA_VERSION,
    TraceIndex,
    duration_ms,
    group_traces,
    ms,
)

__all__ = ["AUTO_SEAL_RESULT", "to_progress"]

AUTO_SEAL_RESULT: Final[dict[str, Any]] = {
    "ok": False,
    "error": "The session was interrupted while the tool was running; the call was sealed automatically.",
    "recommendations": [
        "Check for side effects the tool may have caused",
        "Confirm the state of external systems before retrying",
    ],
    "_autoSealed": True,
}

_Item = tuple[int, int, int, int, int, str, dict[str, Any]]  # time, rank, trace, index, sub, channel, event


def _approval(marks: list[ApprovalEvent], edited: Any) -> dict[str, Any] | None:
    if not marks:
        return None
    decided = [m for m in marks if m.decision is not None]
    last = decided[-1] if decided else None
    return {
        "required": True,
        "decision": None if last is None else last.decision,
        "note": None if last is None else last.note,
        "decidedAt": None if last is None else ms(last.time_ns),
        "by": None if last is None else last.by,
        "latencyMs": None if last is None else last.latency_ms,
        "arguments": edited if last is not None and last.decision == ALLOW else None,
    }


def _snapshot(tc: ToolCallRecord, state: str, marks: list[ApprovalEvent], *, ended: bool) -> dict[str, Any]:
    span = tc.span
    end = span.end_ns if ended else None
    if not ended:
        result = None
    elif state == sc.STATE_SEALED:
        result = dict(AUTO_SEAL_RESULT)
    else:
        result = tc.output if tc.error is None else None
    # A call waiting for its decision shows the model's arguments: an edit comes with the decision.
    waiting = state == sc.STATE_AWAITING_APPROVAL
    return {
        "id": tc.call_id,
        "name": tc.name,
        "state": state,
        "execution_id": tc.execution_id,
        "requested_by": tc.requested_by,
        "inputPreview": tc.model_input if waiting else tc.input,
        **({} if waiting else tc.edited_mark(camel=True)),
        "startedAt": ms(span.start_ns),
        "completedAt": None if end is None else ms(end),
        "durationMs": None if end is None else duration_ms(span.start_ns, end),
        "result": result,
        "error": tc.error if ended else None,
        "isError": tc.is_error if ended else False,
        "approval": _approval(marks, edited_input(span)),
    }


def _tool_items(t: int, i: int, tc: ToolCallRecord, trace_end: int) -> list[_Item]:
    span = tc.span
    marks = approvals(span)
    items: list[_Item] = []
    start_at = span.start_ns
    for n, mark in enumerate(marks):
        event: dict[str, Any]
        if mark.decision is None:
            event = {
                "type": "permission_required",
                "call": _snapshot(tc, sc.STATE_AWAITING_APPROVAL, marks[: n + 1], ended=False),
            }
        else:
            event = {
                "type": "permission_decided",
                "callId": tc.call_id,
                "decision": mark.decision,
                "note": mark.note,
                "decidedAt": ms(mark.time_ns),
                "by": mark.by,
                "latencyMs": mark.latency_ms,
                "arguments": edited_input(span) if mark.decision == ALLOW else None,
            }
            if mark.decision == ALLOW:
                start_at = max(start_at, mark.time_ns)
        items.append((mark.time_ns, 2, t, i, n, "control", event))
    state = tc.state
    waiting = span.end_ns is None and bool(marks) and marks[-1].decision is None
    if state != sc.STATE_DENIED and not waiting:
        items.append(
            (
                start_at,
                3,
                t,
                i,
                100,
                "progress",
                {"type": "tool:start", "call": _snapshot(tc, sc.STATE_RUNNING, marks, ended=False)},
            )
        )
    end = span.end_ns
    if end is None:
        call = _snapshot(tc, sc.STATE_SEALED, marks, ended=True)
        call["isError"] = True
        call["error"] = AUTO_SEAL_RESULT["error"]
        items.append((max(trace_end, start_at), 4, t, i, 101, "progress", {"type": "tool:end", "call": call}))
        return items
    at = max(end, start_at)
    rank = 1 if at > start_at else 4
    call = _snapshot(tc, state, marks, ended=True)
    if state == sc.STATE_FAILED:
        items.append(
            (at, rank, t, i, 101, "progress", {"type": "tool:error", "call": call, "error": tc.error})
        )
    items.append((at, rank, t, i, 102, "progress", {"type": "tool:end", "call": call}))
    items.append((at, rank, t, i, 103, "monitor", {"type": "tool_executed", "call": call}))
    if state == sc.STATE_FAILED:
        error = _error("tool", tc.error or "Tool call failed", tc.call_id, tc.execution_id)
        items.append((at, rank, t, i, 104, "monitor", error))
    return items


def _error(
    phase: str, message: str, call_id: str | None = None, exec_id: str | None = None
) -> dict[str, Any]:
    """A monitor ``error`` event (the seed's classified error)."""
    return {
        "type": "error",
        "phase": phase,
        "severity": "error",
        "message": message,
        "callId": call_id,
        "execution_id": exec_id,
    }


READY: Final = "READY"
WORKING: Final = "WORKING"
PAUSED: Final = "PAUSED"


def _with_states(items: list[_Item]) -> list[_Item]:
    """``items`` (sorted) with the agent's ``state_changed`` events of each trace (see module doc)."""
    out: list[_Item] = []
    states: dict[int, str] = {}
    waiting: dict[int, set[str]] = {}

    def change(item: _Item, old: str, new: str) -> None:
        out.append((*item[:5], "monitor", {"type": "state_changed", "from": old, "to": new}))

    for item in items:
        t, event = item[2], item[6]
        kind = event["type"]
        state = states.get(t, READY)
        calls = waiting.setdefault(t, set())
        if kind == "done":
            if state != READY:
                change(item, state, READY)
            states[t] = READY
            calls.clear()
            out.append(item)
            continue
        if state == READY:
            change(item, READY, WORKING)
            state = WORKING
        out.append(item)
        if kind == "permission_required":
            calls.add(event["call"]["id"])
            if state == WORKING:
                change(item, WORKING, PAUSED)
                state = PAUSED
        elif kind == "permission_decided" or (
            kind == "tool:end" and event["call"]["state"] != sc.STATE_SEALED
        ):
            # (A sealed call never got its decision: the agent stays paused until its turn is done.)
            calls.discard(event["callId"] if kind == "permission_decided" else event["call"]["id"])
            if not calls and state == PAUSED:
                change(item, PAUSED, WORKING)
                state = WORKING
        states[t] = state
    return out


def to_progress(spans: Iterable[Span]) -> list[dict[str, Any]]:
    """Progress/control/monitor envelopes of all given traces, in time order (see module doc)."""
    items: list[_Item] = []
    for t, trace in enumerate(group_traces(coalesce(spans))):
        index = TraceIndex(trace)
        trace_end = index.trace_end_ns()
        turns = [i for i in range(len(trace)) if index.kinds[i] == AGENT and index.nearest(i, AGENTS) is None]
        ended_in: dict[int | None, int] = {}
        sealed_in: set[int | None] = set()
        calls = index.tool_calls()
        for i, span in enumerate(trace):
            if index.is_model_call(i) and span.status == "ERROR" and span.end_ns is not None:
                message = span.status_message or f"model call {span.name} failed"
                items.append((span.end_ns, 1, t, i, 105, "monitor", _error("model", message)))
            if index.kinds[i] != TOOL:
                continue
            items.extend(_tool_items(t, i, calls[i], trace_end))
            turn = index.nearest(i, AGENTS)
            while turn is not None and turn not in turns:
                turn = index.nearest(turn, AGENTS)
            if span.end_ns is None:
                sealed_in.add(turn)
            else:
                ended_in[turn] = ended_in.get(turn, 0) + 1
        if turns:
            for i in turns:
                span = trace[i]
                ok = span.end_ns is not None and span.status != "ERROR" and i not in sealed_in
                at = span.end_ns if span.end_ns is not None else trace_end
                if span.end_ns is not None and span.status == "ERROR":
                    message = span.status_message or f"{span.name} failed"
                    items.append((max(at, span.start_ns), 5, t, i, 199, "monitor", _error("system", message)))
                event = {
                    "type": "done",
                    "step": ended_in.get(i, 0),
                    "reason": "completed" if ok else "interrupted",
                }
                items.append((max(at, span.start_ns), 5, t, i, 200, "progress", event))
        else:
            ok = all(s.end_ns is not None for s in trace) and not any(
                trace[r].status == "ERROR" for r in index.roots
            )
            event = {
                "type": "done",
                "step": sum(ended_in.values()),
                "reason": "completed" if ok else "interrupted",
            }
            items.append((trace_end, 5, t, len(trace), 200, "progress", event))
    items.sort(key=lambda item: item[:5])
    out = []
    for seq, (time_ns, _rank, _t, _i, _n, channel, event) in enumerate(_with_states(items), start=1):
        out.append(
            {
                "schema_version": SCHEMA_VERSION,
                "channel": channel,
                "event": {**event, "channel": channel},
                "bookmark": {"seq": seq, "timestamp": ms(time_ns)},
            }
        )
    return out
