"""Conversation timelines: ``{schema_version, conversationId, timeline, total}`` per conversation.

- Traces are grouped by ``gen_ai.conversation.id`` (or OpenInference ``session.id``); a trace without one is
  its own conversation whose ``conversationId`` is the trace id. Traces of a conversation follow each other
  in order of their first span (one trace = one turn); their items never interleave.
- Items: ``user_message`` (at the start of a turn agent: an agent span with no agent above it),
  ``thought`` (every ``toolspan.thought`` event), ``tool_call`` (tool start), ``tool_result`` (tool end),
  ``assistant_message`` (end of the turn agent). Sub-agents started inside tools contribute their thoughts
  and tool calls but not messages (their input is a tool's request, not the user's).
  When a turn agent recorded no messages, the user text comes from the first LLM span under it and the
  answer from the LLM span that ended last (as in the Jaeger agent fixture).
- ``sequenceNumber`` runs 1..n without gaps over the conversation; ``id`` is ``f"{event_type}-{seq}"`` with
  the stored event type (``user_message``, ``thought``, ``act``, ``observe``, ``assistant_message``).
- ``timestamp`` is ms since the epoch. Tool items also carry ``execution_id`` and ``call_id`` (extra).
  ``toolInput`` is the arguments the body received; a ``tool_call`` whose arguments an approver or decider
  replaced carries ``edited: {by, at (ms), modelInput}`` (who decided, when, the model's own arguments).
- A tool that never ended has only its ``tool_call``. Streaming deltas are never items.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from toolspan.bridge._coalesce import coalesce
from toolspan.bridge.facts import AGENT, TOOL, ToolCallRecord, thoughts
from toolspan.bridge.internal import CONVERSATION_KEYS, total_usage
from toolspan.bridge.model import Span
from toolspan.bridge.views._common import (
    AGENTS,
    SCHEMA_VERSION,
    TraceIndex,
    camel_keys,
    group_traces,
    ms,
    turn_messages,
)

__all__ = ["to_timelines", "trace_items"]

_Item = tuple[int, int, int, int, dict[str, Any]]


def _conversation_id(trace: list[Span]) -> str:
    for key in CONVERSATION_KEYS:
        for span in trace:
            value = span.attributes.get(key)
            if value is not None and value != "":
                return str(value)
    return trace[0].trace_id


def _tool_items(span: Span, tc: ToolCallRecord, i: int) -> list[_Item]:
    """A tool call's act, and its observe once it ended."""
    ids = {"execution_id": tc.execution_id, "call_id": tc.call_id, "requested_by": tc.requested_by}
    act: dict[str, Any] = {"type": "tool_call", "_event": "act", "toolName": tc.name}
    act.update(toolInput={} if tc.input is None else tc.input, **tc.edited_mark(camel=True))
    items: list[_Item] = [(span.start_ns, 3, i, 0, {**act, **ids})]
    end = span.end_ns
    if end is not None:
        output = tc.output if tc.error is None else {"error": tc.error}
        observe = {"type": "tool_result", "_event": "observe", "toolName": tc.name, "toolOutput": output}
        at, rank = max(end, span.start_ns), 1 if end > span.start_ns else 4
        items.append((at, rank, i, 1, {**observe, "isError": tc.is_error, **ids}))
    return items


def _turn_items(index: TraceIndex, i: int) -> list[_Item]:
    """A top agent's turn: the user's message, and its answer once it ended."""
    span = index.spans[i]
    user, answer = turn_messages(index, i)
    items: list[_Item] = []
    if user is not None:
        items.append(
            (span.start_ns, 0, i, 0, {"type": "user_message", "_event": "user_message", "content": user})
        )
    if answer is not None and span.end_ns is not None:
        said = {"type": "assistant_message", "_event": "assistant_message", "content": answer}
        items.append((max(span.end_ns, span.start_ns), 5, i, 1, said))
    return items


def trace_items(trace: Sequence[Span], index: TraceIndex | None = None) -> list[_Item]:
    """The timeline items of one trace in their order, each ``(time_ns, rank, span, n, fields)``; ``index``:
    the trace's ``TraceIndex`` when the caller has built it (the trace page: its calls linked once)."""
    index = TraceIndex(trace) if index is None else index
    calls = index.tool_calls()
    items: list[_Item] = []
    for i, span in enumerate(trace):
        kind = index.kinds[i]
        for n, (t, text) in enumerate(thoughts(span)):
            items.append((t, 2, i, n, {"type": "thought", "_event": "thought", "content": text}))
        if kind == TOOL:
            items.extend(_tool_items(span, calls[i], i))
        elif kind == AGENT and index.nearest(i, AGENTS) is None:
            items.extend(_turn_items(index, i))
    items.sort(key=lambda item: item[:4])
    return items


def to_timelines(spans: Iterable[Span]) -> list[dict[str, Any]]:
    """One timeline document per conversation, ordered by the conversation's first span."""
    conversations: dict[str, list[list[Span]]] = {}
    for trace in group_traces(coalesce(spans)):
        conversations.setdefault(_conversation_id(trace), []).append(trace)
    docs = []
    for conversation_id, traces in conversations.items():
        timeline: list[dict[str, Any]] = []
        for trace in sorted(traces, key=lambda t: (t[0].start_ns, t[0].trace_id)):
            for time_ns, _rank, _i, _n, fields in trace_items(trace):
                seq = len(timeline) + 1
                event_type = fields.pop("_event")
                timeline.append(
                    {
                        "id": f"{event_type}-{seq}",
                        "type": fields.pop("type"),
                        "sequenceNumber": seq,
                        "timestamp": ms(time_ns),
                        **fields,
                    }
                )
        doc: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "conversationId": conversation_id,
            "timeline": timeline,
            "total": len(timeline),
        }
        models = [m for trace in traces for m in TraceIndex(trace).model_calls().values()]
        if models:
            doc["usage"] = {"modelCalls": len(models), **camel_keys(total_usage(models).as_dict())}
        docs.append(doc)
    return docs
