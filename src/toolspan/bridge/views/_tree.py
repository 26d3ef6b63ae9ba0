"""Execution tree and trace document: ``{schema_version, job_id, timeline, node_durations,
execution_tree}`` per trace.

- ``job_id`` is the trace id. ``to_tree`` takes the spans of one trace (``ValueError`` for several);
  ``to_trees`` returns one document per trace, ordered by first span (the CLI prints that list).
- ``execution_tree``: a virtual root ``{span_id: "root", type: "job"}``; every span record is one node below
  it (``type`` plan for plans, tool for tools, node for agents, LLM calls and everything else). Node fields:
  ``span_id, parent_id, type, node_id, tool_name, start_time, end_time`` (ISO 8601 UTC, ``end_time`` null if
  the span never ended), ``step_index`` (1-based index of the node's start event in ``timeline``), ``input`` /
  ``output`` (tools: the arguments the body received and the result or ``{"error": ...}``; with ``edited:
  {by, at (ms), model_input}`` when an approver or decider replaced the model's arguments, also on the
  ``tool_called`` event), ``payload_summary`` (nodes: their output,
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
from toolspan.bridge.facts import AGENT, LLM, PLAN, TOOL, plan_name, tool_output
from toolspan.bridge.internal import agent_input_text, agent_output_text, total_usage
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


class _TraceDoc:
    """The trace document of one trace's spans (coalesced, in start order)."""

    def __init__(self, trace: Sequence[Span]) -> None:
        self.trace = trace
        self.index = index = TraceIndex(trace)
        self.types = [_NODE_TYPES.get(k, "node") for k in index.kinds]
        self.calls = index.tool_calls()
        self.models = index.model_calls()
        self.first_start = min((s.start_ns for s in trace), default=0)
        self.all_ended = bool(trace) and all(s.end_ns is not None for s in trace)
        self.last_end = max((s.end_ns or 0 for s in trace), default=self.first_start)
        self._node_ids: dict[int, str | None] = {}
        self._times: dict[int, str] = {}

    def iso(self, ns: int | None) -> str | None:
        """``iso(ns)``, each time of the trace formatted once (a span's start and end are read by its events
        and its node)."""
        if ns is None:
            return None
        text = self._times.get(ns)
        if text is None:
            text = self._times[ns] = iso(ns)
        return text

    def duration(self, i: int) -> dict[str, Any]:
        span = self.trace[i]
        end = span.end_ns
        return {
            "node_id": span.span_id,
            "started_at": self.iso(span.start_ns),
            "finished_at": self.iso(end),
            "duration_ms": None if end is None else duration_ms(span.start_ns, end),
        }

    def parent_ref(self, i: int) -> str:
        p = self.index.parent[i]
        return "root" if p is None else self.trace[p].span_id

    def node_id(self, i: int) -> str | None:
        """The span id of node ``i``, or of the closest node above tool ``i``; ``None`` otherwise (each
        found once: a tool's is read by its events and its tree node)."""
        if i in self._node_ids:
            return self._node_ids[i]
        types, parent = self.types, self.index.parent
        node_id = None
        if types[i] == "node":
            node_id = self.trace[i].span_id
        elif types[i] == "tool":
            p = parent[i]
            while p is not None and types[p] != "node":
                p = parent[p]
            node_id = None if p is None else self.trace[p].span_id
        self._node_ids[i] = node_id
        return node_id

    def tool_ids(self, i: int) -> dict[str, Any]:
        tc = self.calls[i]
        return {
            "node_id": self.node_id(i),
            "tool_name": tc.name,
            "execution_id": tc.execution_id,
            "call_id": tc.call_id,
            "requested_by": tc.requested_by,
        }

    def span_events(self) -> list[tuple[int, int, int, str, dict[str, Any]]]:
        """Each span's start and end events: ``(time, rank, index, type, payload)``, in timeline order."""
        raw: list[tuple[int, int, int, str, dict[str, Any]]] = []
        for i, span in enumerate(self.trace):
            base = {"trace_span_id": span.span_id, "parent_span_id": self.parent_ref(i)}
            t = self.types[i]
            end = span.end_ns
            end_rank = 0 if end is not None and end > span.start_ns else 2
            end_t = end if end is None else max(end, span.start_ns)
            if t == "plan":
                raw.append((span.start_ns, 1, i, "plan_generated", {**base, "goal": plan_name(span)}))
            elif t == "tool":
                tc, ids = self.calls[i], self.tool_ids(i)
                called = {**base, **ids, "input": tc.input}
                if tc.edit is not None:
                    called.update(tc.edited_mark())
                raw.append((span.start_ns, 1, i, "tool_called", called))
                if end_t is not None:
                    output = tc.output if tc.error is None else {"error": tc.error}
                    ended = {**base, **ids, "output": output, "is_error": tc.is_error}
                    raw.append((end_t, end_rank, i, "tool_returned", ended))
            else:
                nid = {"node_id": span.span_id, "name": span.name}
                raw.append((span.start_ns, 1, i, "node_started", {**base, **nid}))
                if end_t is not None:
                    results = summary(_node_output(span, self.index.kinds[i]))
                    ended = {**base, **nid, "payload_results": results, "status": span.status}
                    raw.append((end_t, end_rank, i, "node_finished", ended))
        # (time, rank, index) is one event's alone (a span's two events differ in rank): the tuples sort by
        # it without a key, never comparing their payloads.
        raw.sort()
        return raw

    def goal(self) -> str | None:
        index = self.index
        kinds = (AGENT, LLM)
        texts = (agent_input_text(self.trace[i]) for i in index.order if index.kinds[i] in kinds)
        return next((text for text in texts if text), None)

    def timeline(self) -> tuple[list[dict[str, Any]], dict[int, int]]:
        """The timeline, and the step of each span's start event."""
        goal = self.goal()
        events: list[tuple[int, str, dict[str, Any]]] = [(self.first_start, "job_created", {"goal": goal})]
        step_of: dict[int, int] = {}
        for time_ns, rank, i, etype, payload in self.span_events():
            if rank == 1:
                step_of[i] = len(events) + 1
            events.append((time_ns, etype, payload))
        if self.all_ended:
            failed = [self.trace[i] for i in self.index.roots if self.trace[i].status == "ERROR"]
            if failed:
                error = failed[0].status_message or failed[0].name
                end = {"goal": goal, "error": error, "parent_span_id": "root"}
                events.append((self.last_end, "job_failed", end))
            else:
                events.append((self.last_end, "job_completed", {"goal": goal, "parent_span_id": "root"}))
        timeline = []
        for step, (time_ns, etype, payload) in enumerate(events, start=1):
            payload["step_index"] = step  # each payload is the event's own dict, made above
            timeline.append({"type": etype, "created_at": self.iso(time_ns), "payload": payload})
        return timeline, step_of

    def node(self, i: int, step: int, duplicate: bool) -> dict[str, Any]:
        """The tree node of span ``i`` (its ``children`` filled in by ``tree``)."""
        span, t, index = self.trace[i], self.types[i], self.index
        node: dict[str, Any] = {
            "span_id": span.span_id,
            "parent_id": self.parent_ref(i),
            "type": t,
            "node_id": self.node_id(i),
            "tool_name": None,
            "start_time": self.iso(span.start_ns),
            "end_time": self.iso(span.end_ns),
            "step_index": step,
            "input": None,
            "output": None,
            "payload_summary": None,
            "name": span.name,
            "kind": index.convention_kinds[i],
            "children": [],
        }
        if t == "tool":
            tc = self.calls[i]
            node["tool_name"] = tc.name
            node["input"] = tc.input
            if tc.edit is not None:
                node.update(tc.edited_mark())
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
        models = self.models
        if i in models:
            node["model_call"] = models[i].as_dict()
        elif index.kinds[i] == AGENT and models:
            own = [m for j, m in models.items() if index.nearest(j, AGENTS) == i]
            node["usage"] = {"model_calls": len(own), **total_usage(own).as_dict()}
        # The flags a node shows only when set, in this order.
        if index.orphan[i]:
            node["orphan"] = True
        if index.cycle[i]:
            node["cycle"] = True
        if duplicate:
            node["duplicate"] = True
        p = index.parent[i]
        if p is not None and span.start_ns < self.trace[p].start_ns:
            node["starts_before_parent"] = True
        return node

    def tree(self, step_of: dict[int, int]) -> dict[str, Any]:
        dup = duplicate_flags(self.trace)
        nodes = [self.node(i, step_of[i], dup[i]) for i in range(len(self.trace))]
        for i, node in enumerate(nodes):
            node["children"].extend(nodes[c] for c in self.index.children[i])
        return {
            "span_id": "root",
            "parent_id": None,
            "type": "job",
            "node_id": None,
            "tool_name": None,
            "start_time": iso(self.first_start) if self.trace else None,
            "end_time": iso(self.last_end) if self.all_ended else None,
            "step_index": 1,
            "input": None,
            "output": None,
            "payload_summary": None,
            "children": [nodes[i] for i in self.index.roots],
        }

    def document(self) -> dict[str, Any]:
        trace = self.trace
        timeline, step_of = self.timeline()
        doc: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "job_id": trace[0].trace_id if trace else "",
            "timeline": timeline,
            "node_durations": [self.duration(i) for i, t in enumerate(self.types) if t == "node"],
            "execution_tree": self.tree(step_of),
        }
        if self.models:
            doc["usage"] = {"model_calls": len(self.models), **total_usage(self.models.values()).as_dict()}
            doc["final_answer"] = _final_answer(self.index)
        return doc


def _trace_doc(trace: Sequence[Span]) -> dict[str, Any]:
    return _TraceDoc(trace).document()


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
