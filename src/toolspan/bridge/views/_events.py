"""Act/observe event stream: an ``act`` when a tool starts, an ``observe`` when it ends.

act:     {schema_version, type: "act", execution_id, tool_name, call_id, tool_input, status, timestamp (ms,
          tool start), trace_id, span_id}
observe: {schema_version, type: "observe", execution_id, tool_name, call_id, observation, duration_ms,
          is_error, state, timestamp (ms, tool end), trace_id, span_id}

``tool_input`` is the arguments the body received, ``{}`` when the span recorded none (content capture
off). When an approver or decider replaced the model's arguments (``run_tool_calls(approve=...)``, a
decision with edited arguments), ``tool_input`` is the edit and the act carries ``edited: {by, at (ms),
model_input}`` (who decided, when, and the model's own arguments); an act re-sent once the edit is recorded
carries it. ``observation`` is the tool's result, or ``{"error": "<text>"}`` when the call failed, was
cancelled or denied (``is_error``).
``state`` (extra) is the final tool state (COMPLETED, FAILED, CANCELLED, DENIED). An act's ``status`` is
``running``, or, for a call behind an approval, ``awaiting_approval`` while no decision is recorded and
``denied`` once it was refused (the body never ran); a live stream sends the act again when it changes.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolspan.bridge._coalesce import coalesce
from toolspan.bridge.facts import TOOL, ToolCallRecord, classify, tool_call
from toolspan.bridge.internal import act_status
from toolspan.bridge.link import RequestIndex
from toolspan.bridge.model import Span
from toolspan.bridge.views._common import NS_PER_MS, SCHEMA_VERSION, TraceIndex, duration_ms

__all__ = ["act_event", "match_observe", "observe_event", "to_events"]


def act_event(span: Span, call: ToolCallRecord | None = None) -> dict[str, Any]:
    """The ``act`` event of a tool span; works on a span that has not ended.

    ``call``: the span's tool call as linked (``StreamLinker.feed``, ``TraceIndex.tool_calls``); without
    it, the call is read from the span alone (no model call to link it to).
    """
    return _act(_unlinked(span) if call is None else call)


def observe_event(span: Span, call: ToolCallRecord | None = None) -> dict[str, Any]:
    """The ``observe`` event of an ended tool span (``ValueError`` if ``span.end_ns`` is ``None``)."""
    if span.end_ns is None:
        raise ValueError(f"span {span.span_id} has not ended: it has no observe event")
    return _observe(_unlinked(span) if call is None else call)


def _unlinked(span: Span) -> ToolCallRecord:
    return RequestIndex().link(tool_call(span))


def _act(tc: ToolCallRecord) -> dict[str, Any]:
    span = tc.span
    return {
        "schema_version": SCHEMA_VERSION,
        "type": "act",
        "execution_id": tc.execution_id,
        "tool_name": tc.name,
        "call_id": tc.call_id,
        "tool_input": {} if tc.input is None else tc.input,
        "status": act_status(span),
        "timestamp": span.start_ns // NS_PER_MS,
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "requested_by": tc.requested_by,
        **tc.edited_mark(),
    }


def _observe(tc: ToolCallRecord) -> dict[str, Any]:
    span = tc.span
    end = span.end_ns
    assert end is not None
    return {
        "schema_version": SCHEMA_VERSION,
        "type": "observe",
        "execution_id": tc.execution_id,
        "tool_name": tc.name,
        "call_id": tc.call_id,
        "observation": tc.output if tc.error is None else {"error": tc.error},
        "duration_ms": duration_ms(span.start_ns, end),
        "is_error": tc.is_error,
        "state": tc.state,
        "timestamp": end // NS_PER_MS,
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "requested_by": tc.requested_by,
    }


def to_events(spans: Iterable[Span]) -> list[dict[str, Any]]:
    """Act and observe events of every tool span, in time order (act at start, observe at end).

    A tool span that never ended gives only its act. Ties are broken deterministically: at equal times an
    observe of a call that took time comes before an act, and an act before the observe of a zero-length call.
    """
    acts: list[tuple[int, int, int, dict[str, Any]]] = []
    observes: list[tuple[int, int, int, dict[str, Any]]] = []
    for i, tc in _linked_calls(coalesce(spans)):
        span = tc.span
        start = span.start_ns
        acts.append((start, 1, i, _act(tc)))
        end = span.end_ns
        if end is not None:
            observes.append((max(end, start), 0 if end > start else 2, i, _observe(tc)))
    observes.sort(key=_key)
    return [item[3] for item in heapq.merge(acts, observes, key=_key)]


def _linked_calls(spans: list[Span]) -> list[tuple[int, ToolCallRecord]]:
    """``(position, tool call)`` of every tool span, linked within its trace, in input order."""
    positions: dict[str, list[int]] = {}
    for i, span in enumerate(spans):
        positions.setdefault(span.trace_id, []).append(i)
    out: list[tuple[int, ToolCallRecord]] = []
    for members in positions.values():
        if not any(classify(spans[i]) == TOOL for i in members):
            continue
        index = TraceIndex([spans[i] for i in members])
        out.extend((members[j], tc) for j, tc in index.tool_calls().items())
    out.sort(key=lambda item: item[0])
    return out


def _key(item: tuple[int, int, int, dict[str, Any]]) -> tuple[int, int, int]:
    return item[0], item[1], item[2]


def _name(event: Mapping[str, Any]) -> Any:
    return event.get("tool_name", event.get("toolName"))


def match_observe(
    events: Sequence[Mapping[str, Any]],
) -> list[tuple[Mapping[str, Any], Mapping[str, Any] | None]]:
    """Pair every act with its observe (``None`` if none), in act order, as the act/observe frontends do.

    An act with an ``execution_id`` matches the first later unmatched observe with the same id, wherever it
    is (ids are unique, so parallel calls pair correctly). Only when the act has no id, the legacy
    fallback applies: the first later unmatched observe that also has no id and the same tool name
    (``tool_name`` or ``toolName``), searching no further than the next ``act`` or ``user_message``.
    """
    by_id: dict[Any, list[int]] = {}
    for j, event in enumerate(events):
        if event.get("type") == "observe" and event.get("execution_id"):
            by_id.setdefault(event["execution_id"], []).append(j)
    used: set[int] = set()
    pairs: list[tuple[Mapping[str, Any], Mapping[str, Any] | None]] = []
    for i, act in enumerate(events):
        if act.get("type") != "act":
            continue
        found: int | None = None
        exec_id = act.get("execution_id")
        if exec_id:
            found = next((j for j in by_id.get(exec_id, ()) if j > i and j not in used), None)
        else:
            name = _name(act)
            for j in range(i + 1, len(events)):
                event = events[j]
                kind = event.get("type")
                if (
                    kind == "observe"
                    and j not in used
                    and not event.get("execution_id")
                    and _name(event) == name
                ):
                    found = j
                    break
                if kind in ("act", "user_message"):
                    break
        if found is not None:
            used.add(found)
        pairs.append((act, None if found is None else events[found]))
    return pairs
