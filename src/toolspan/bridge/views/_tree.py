"""Execution tree and trace document: ``{schema_version, job_id, timeline, node_durations,
execution_tree}`` per trace.

- ``job_id`` is the trace id. ``to_tree`` takes the spans of one trace (``ValueError`` for several);
  ``to_trees`` returns one document per trace, ordered by first span (the CLI prints that list).
- ``execution_tree``: a virtual root ``{span_id: "root", type: "job"}``; every span record is one node below
  it (``type`` plan for plans, tool for tools, node for agents, LLM calls and everything else). Node fields:
  ``span_id, parent_id, type, node_id, tool_name, start_time, end_time`` (ISO 8601 UTC, ``end_time`` null if
  the span never ended), ``step_index`` (1-based index of the node's start event in ``timeline``), ``input`` /
  ``output`` (tools: arguments and result or ``{"error": ...}``), ``payload_summary`` (nodes: their output,
  truncated), ``children`` (ordered by start). ``node_id`` of a node is its span id; of a tool, the
  ``node_id`` of the closest node above it (null if none). Extra: ``name`` (span name), ``kind``
  (classification), and for tools ``execution_id``, ``call_id``, ``state``, ``is_error``.
- Flags (present only when true): ``orphan`` (parent id not in the trace: hung under the root), ``cycle``
  (its parent link was cut to break a parent cycle: hung under the root), ``duplicate`` (a second, conflicting
  record of a span id: kept as its own node; children attach to the first record), ``starts_before_parent``.
  Every input record is exactly one non-root node.
- ``timeline``: ``{type, created_at, payload}`` with the trace page's types: ``job_created``,
  ``plan_generated``, ``node_started`` / ``node_finished``, ``tool_called`` / ``tool_returned``, and
  ``job_completed`` or ``job_failed`` (a top-level span has status ERROR) once every span has ended.
  Payloads carry
  ``trace_span_id``, ``parent_span_id`` (``"root"`` at the top) and ``step_index`` (the event's own 1-based
  index).
- ``node_durations``: ``{node_id, started_at, finished_at, duration_ms}`` for every ``node``-type record.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from toolspan.bridge._coalesce import coalesce, duplicate_flags
from toolspan.bridge.facts import (
    AGENT,
    LLM,
    PLAN,
    TOOL,
    agent_input_text,
    agent_output_text,
    plan_name,
    tool_output,
    total_usage,
)
from toolspan.bridge.model import Span
from toolspan.bridge.views._common import (
    AGENTS,
    SCHEMA_VERSION,
    TraceIndex,
    duration_ms,
    group_traces,
    iso,
    summary,
)

__all__ = ["to_tree", "to_trees"]

_NODE_TYPES = {PLAN: "plan", TOOL: "tool"}


def _node_output(span: Span, kind: str) -> Any:
    if kind == AGENT:
        return agent_output_text(span)
    text = agent_output_text(span)
    return text if text is not None else tool_output(span)


def _duration(span: Span) -> dict[str, Any]:
    end = span.end_ns
    return {
        "node_id": span.span_id,
        "started_at": iso(span.start_ns),
        "finished_at": iso(end),
        "duration_ms": None if end is None else duration_ms(span.start_ns, end),
    }


def _trace_doc(trace: Sequence[Span]) -> dict[str, Any]:
    index = TraceIndex(trace)
    dup = duplicate_flags(trace)
    n = len(trace)
    types = [_NODE_TYPES.get(k, "node") for k in index.kinds]
    calls = index.tool_calls()

    def parent_ref(i: int) -> str:
        p = index.parent[i]
        return "root" if p is None else trace[p].span_id

    def node_id(i: int) -> str | None:
        if types[i] == "node":
            return trace[i].span_id
        if types[i] == "tool":
            p = index.parent[i]
            while p is not None and types[p] != "node":
                p = index.parent[p]
            return None if p is None else trace[p].span_id
        return None

    # --- timeline events: (time, rank, index, payload type, payload) ---
    raw: list[tuple[int, int, int, str, dict[str, Any]]] = []
    for i, span in enumerate(trace):
        base = {"trace_span_id": span.span_id, "parent_span_id": parent_ref(i)}
        t = types[i]
        end = span.end_ns
        end_rank = 0 if end is not None and end > span.start_ns else 2
        end_t = end if end is None else max(end, span.start_ns)
        if t == "plan":
            raw.append((span.start_ns, 1, i, "plan_generated", {**base, "goal": plan_name(span)}))
        elif t == "tool":
            tc = calls[i]
            ids = {
                "node_id": node_id(i),
                "tool_name": tc.name,
                "execution_id": tc.execution_id,
                "call_id": tc.call_id,
                "requested_by": tc.requested_by,
            }
            raw.append((span.start_ns, 1, i, "tool_called", {**base, **ids, "input": tc.input}))
            if end_t is not None:
                output = tc.output if tc.error is None else {"error": tc.error}
                raw.append(
                    (
                        end_t,
                        end_rank,
                        i,
                        "tool_returned",
                        {**base, **ids, "output": output, "is_error": tc.is_error},
                    )
                )
        else:
            nid = {"node_id": span.span_id, "name": span.name}
            raw.append((span.start_ns, 1, i, "node_started", {**base, **nid}))
            if end_t is not None:
                results = summary(_node_output(span, index.kinds[i]))
                raw.append(
                    (
                        end_t,
                        end_rank,
                        i,
                        "node_finished",
                        {**base, **nid, "payload_results": results, "status": span.status},
                    )
                )
    raw.sort(key=lambda item: item[:3])
    first_start = min((s.start_ns for s in trace), default=0)
    all_ended = n > 0 and all(s.end_ns is not None for s in trace)
    last_end = max((s.end_ns or 0 for s in trace), default=first_start)
    goal = next(
        (
            text
            for i in index.order
            if index.kinds[i] in (AGENT, LLM)
            for text in (agent_input_text(trace[i]),)
            if text
        ),
        None,
    )
    models = index.model_calls()
    events: list[tuple[int, str, dict[str, Any]]] = [(first_start, "job_created", {"goal": goal})]
    step_of: dict[int, int] = {}
    for time_ns, rank, i, etype, payload in raw:
        if rank == 1:
            step_of[i] = len(events) + 1
        events.append((time_ns, etype, payload))
    if all_ended:
        failed = [trace[i] for i in index.roots if trace[i].status == "ERROR"]
        if failed:
            error = failed[0].status_message or failed[0].name
            events.append((last_end, "job_failed", {"goal": goal, "error": error, "parent_span_id": "root"}))
        else:
            events.append((last_end, "job_completed", {"goal": goal, "parent_span_id": "root"}))
    timeline = []
    for step, (time_ns, etype, payload) in enumerate(events, start=1):
        timeline.append(
            {"type": etype, "created_at": iso(time_ns), "payload": {**payload, "step_index": step}}
        )

    # --- tree ---
    nodes: list[dict[str, Any]] = []
    for i, span in enumerate(trace):
        t = types[i]
        node: dict[str, Any] = {
            "span_id": span.span_id,
            "parent_id": parent_ref(i),
            "type": t,
            "node_id": node_id(i),
            "tool_name": None,
            "start_time": iso(span.start_ns),
            "end_time": iso(span.end_ns),
            "step_index": step_of[i],
            "input": None,
            "output": None,
            "payload_summary": None,
            "name": span.name,
            "kind": index.convention_kinds[i],
            "children": [],
        }
        if t == "tool":
            tc = calls[i]
            node["tool_name"] = tc.name
            node["input"] = tc.input
            node["output"] = tc.output if tc.error is None else {"error": tc.error}
            node.update(
                execution_id=tc.execution_id,
                call_id=tc.call_id,
                state=tc.state,
                is_error=tc.is_error,
                requested_by=tc.requested_by,
            )
        elif t == "node":
            node["payload_summary"] = summary(_node_output(span, index.kinds[i]))
        if i in models:
            node["model_call"] = models[i].as_dict()
        elif index.kinds[i] == AGENT and models:
            own = [m for j, m in models.items() if index.nearest(j, AGENTS) == i]
            node["usage"] = {"model_calls": len(own), **total_usage(own).as_dict()}
        if index.orphan[i]:
            node["orphan"] = True
        if index.cycle[i]:
            node["cycle"] = True
        if dup[i]:
            node["duplicate"] = True
        p = index.parent[i]
        if p is not None and span.start_ns < trace[p].start_ns:
            node["starts_before_parent"] = True
        nodes.append(node)
    for i in range(n):
        for c in index.children[i]:
            nodes[i]["children"].append(nodes[c])
    root = {
        "span_id": "root",
        "parent_id": None,
        "type": "job",
        "node_id": None,
        "tool_name": None,
        "start_time": iso(first_start) if n else None,
        "end_time": iso(last_end) if all_ended else None,
        "step_index": 1,
        "input": None,
        "output": None,
        "payload_summary": None,
        "children": [nodes[i] for i in index.roots],
    }
    durations = [_duration(trace[i]) for i in range(n) if types[i] == "node"]
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "job_id": trace[0].trace_id if n else "",
        "timeline": timeline,
        "node_durations": durations,
        "execution_tree": root,
    }
    if models:
        doc["usage"] = {"model_calls": len(models), **total_usage(models.values()).as_dict()}
        doc["final_answer"] = _final_answer(index)
    return doc


def _final_answer(index: TraceIndex) -> str | None:
    """The top agent's answer, else the text of the last model call that ended."""
    for i in index.order:
        if index.kinds[i] == AGENT:
            text = agent_output_text(index.spans[i])
            if text:
                return text
    ended = [
        i for i in range(len(index.kinds)) if index.is_model_call(i) and index.spans[i].end_ns is not None
    ]
    for i in sorted(ended, key=lambda i: (index.spans[i].end_ns or 0, i), reverse=True):
        text = index.model_output_text(i)
        if text:
            return text
    return None


def to_trees(spans: Iterable[Span]) -> list[dict[str, Any]]:
    """One trace document per trace, ordered by each trace's first span."""
    return [_trace_doc(trace) for trace in group_traces(coalesce(spans))]


def to_tree(spans: Iterable[Span]) -> dict[str, Any]:
    """The trace document of the spans of one trace (``ValueError`` if they span several traces)."""
    docs = to_trees(spans)
    if len(docs) > 1:
        raise ValueError(f"to_tree got {len(docs)} traces; use to_trees for several traces")
    return docs[0] if docs else _trace_doc([])
