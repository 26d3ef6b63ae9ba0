"""Plan records (the plan hierarchy): ``{schema_version, plans: [PlanExecutionRecord, ...]}``.

One record per plan span, ordered by trace then start:
``{currentPlanId, rootPlanId, parentPlanId, toolCallId, parentActToolCall, title, userRequest, startTime,
endTime, completed, status, summary, agentExecutionSequence, trace_id, span_id, synthetic}``.

- Plan ids are ``"plan_" + span id`` (a duplicate record of the same span id gets ``-2``, ``-3``, ...).
  A trace with agents outside every plan gets one synthetic root plan
  (``"plan_" + trace id``, ``synthetic: true``, title = the first such agent's name) holding those agents.
- A sub-plan (a plan below a tool, or carrying ``toolspan.parent.tool_call_id``) has ``toolCallId`` = the
  call id of that tool and ``parentActToolCall {toolCallId, name, parameters, result}``; its
  ``parentPlanId`` is the plan of the agent that called the tool (looked up across all given traces).
- ``agentExecutionSequence``: the agents whose closest plan is this one, by start:
  ``{id, agentName, agentDescription, agentRequest, result, status (RUNNING | FINISHED | FAILED),
  errorMessage, startTime, endTime, thinkActSteps}``.
- ``thinkActSteps``: an agent's own tool calls (those whose closest agent is it) cut into steps: a thought
  event or an LLM span under the agent starts a new step once the current step has tool calls; parallel calls
  after one thought share a step. ``{id, thinkOutput (thought texts joined by a newline, or null),
  actToolInfoList: [{toolCallId, name, parameters, result, executionId, state}]}``.
- As in the platform's records, ``parameters`` is the arguments' JSON text and ``result`` the result as text
  (a string result as is, others as JSON text; the error text for a failed call; null while running).
  ``parameters`` are the arguments the body received: when an approver or decider replaced the model's, the
  call carries ``edited: {by, at (ISO 8601), modelParameters (the model's own, JSON text)}``.
- Times are ISO 8601 UTC strings; ``endTime`` is null and ``completed`` false for a plan that never ended.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from toolspan import semconv as sc
from toolspan._util.ids import plan_id
from toolspan.bridge._coalesce import coalesce
from toolspan.bridge.facts import AGENT, PLAN, TOOL, ToolCallRecord, agent_name, plan_name, thoughts
from toolspan.bridge.internal import parent_tool_ids, total_usage
from toolspan.bridge.model import Span
from toolspan.bridge.views._common import (
    AGENTS,
    PLANS,
    SCHEMA_VERSION,
    TOOLS,
    TraceIndex,
    camel_keys,
    group_traces,
    iso,
    turn_messages,
)

__all__ = ["PLAN_ID_PREFIX", "to_plans"]

PLAN_ID_PREFIX = sc.PLAN_ID_PREFIX


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)


def _act_info(tc: ToolCallRecord) -> dict[str, Any]:
    if tc.span.end_ns is None:
        result = None
    elif tc.error is not None:
        result = tc.error
    else:
        result = _text(tc.output)
    info: dict[str, Any] = {
        "toolCallId": tc.call_id,
        "name": tc.name,
        "parameters": _text({} if tc.input is None else tc.input),
        "result": result,
        "executionId": tc.execution_id,
        "state": tc.state,
        "requestedBy": tc.requested_by,
    }
    edit = tc.edit
    if edit is not None:
        model = _text({} if edit.model_input is None else edit.model_input)
        info["edited"] = {"by": edit.by, "at": iso(edit.at_ns), "modelParameters": model}
    return info


def _parent_call(tc: ToolCallRecord) -> dict[str, Any]:
    info = _act_info(tc)
    keys = ("toolCallId", "name", "parameters", "result", "edited")
    return {key: info[key] for key in keys if key in info}


def _steps(index: TraceIndex, agent: int, calls: dict[int, ToolCallRecord]) -> list[dict[str, Any]]:
    spans = index.spans
    # (time, rank, record, sub-index, thought text, tool record)
    marks: list[tuple[int, int, int, int, str | None, int | None]] = []
    for i in range(len(spans)):
        own = i == agent or (index.kinds[i] != AGENT and index.nearest(i, AGENTS) == agent)
        if not own:
            continue
        for n, (t, content) in enumerate(thoughts(spans[i])):
            marks.append((t, 1, i, n, content, None))
        if i != agent and index.is_model_call(i):
            marks.append((spans[i].start_ns, 0, i, 0, None, None))
        if index.kinds[i] == TOOL:
            marks.append((spans[i].start_ns, 2, i, 0, None, i))
    marks.sort(key=lambda m: m[:4])
    steps: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for _t, _rank, i, _n, text, tool in marks:
        if tool is None:
            is_model = i != agent and index.is_model_call(i) and text is None
            if current is None or current["actToolInfoList"] or (is_model and "modelCall" in current):
                current = {"thinkOutput": None, "actToolInfoList": []}
                steps.append(current)
            if is_model:
                current["modelCall"] = camel_keys(index.model_calls()[i].as_dict())
            if text is not None:
                prev = current["thinkOutput"]
                current["thinkOutput"] = text if prev is None else prev + "\n" + text
        else:
            if current is None:
                current = {"thinkOutput": None, "actToolInfoList": []}
                steps.append(current)
            current["actToolInfoList"].append(_act_info(calls[tool]))
    agent_id = spans[agent].span_id
    return [{"id": f"{agent_id}-{n}", **step} for n, step in enumerate(steps, start=1)]


def _agent_record(index: TraceIndex, i: int, calls: dict[int, ToolCallRecord]) -> dict[str, Any]:
    span = index.spans[i]
    if span.end_ns is None:
        status = "RUNNING"
    elif span.status == "ERROR":
        status = "FAILED"
    else:
        status = "FINISHED"
    description = span.attributes.get(sc.GEN_AI_AGENT_DESCRIPTION)
    request, result = turn_messages(index, i)
    models = [m for j, m in index.model_calls().items() if index.nearest(j, AGENTS) == i]
    usage = (
        {"usage": {"modelCalls": len(models), **camel_keys(total_usage(models).as_dict())}} if models else {}
    )
    return {
        "id": span.span_id,
        "agentName": agent_name(span),
        "agentDescription": None if description is None else str(description),
        "agentRequest": request,
        "result": result,
        "status": status,
        "errorMessage": (span.status_message or None) if span.status == "ERROR" else None,
        "startTime": iso(span.start_ns),
        "endTime": iso(span.end_ns),
        "thinkActSteps": _steps(index, i, calls),
        **usage,
    }


class _Plans:
    """The plan records of all given traces: each trace's index, its tool calls (found by call id and
    execution id across traces, for sub-plans started in another trace) and the id of every plan."""

    def __init__(self, spans: Iterable[Span]) -> None:
        self.traces = [TraceIndex(t) for t in group_traces(coalesce(spans))]
        self.tool_calls: list[dict[int, ToolCallRecord]] = []
        self.by_call: dict[str, tuple[int, int]] = {}
        self.by_exec: dict[str, tuple[int, int]] = {}
        for t, index in enumerate(self.traces):
            calls = index.tool_calls()
            self.tool_calls.append(calls)
            for i, tc in calls.items():
                self.by_call.setdefault(tc.call_id, (t, i))
                self.by_exec.setdefault(tc.execution_id, (t, i))
        self.plan_ids: list[dict[int, str]] = []
        self.synthetic: list[str | None] = []
        used: set[str] = set()
        for index in self.traces:
            self.plan_ids.append(self._plan_ids(index, used))
            loose = any(
                index.kinds[i] == AGENT and index.nearest(i, PLANS) is None for i in range(len(index.spans))
            )
            self.synthetic.append(plan_id(index.spans[0].trace_id) if loose else None)
        self.parents: dict[str, str | None] = {}

    @staticmethod
    def _plan_ids(index: TraceIndex, used: set[str]) -> dict[int, str]:
        """The plan id of every plan span of a trace: a duplicate record of a plan span gets its own id
        (suffix "-2", "-3", ...), so no agent is placed twice."""
        ids: dict[int, str] = {}
        for i in range(len(index.spans)):
            if index.kinds[i] == PLAN:
                base = pid = plan_id(index.spans[i].span_id)
                n = 1
                while pid in used:
                    n += 1
                    pid = f"{base}-{n}"
                used.add(pid)
                ids[i] = pid
        return ids

    def plan_of(self, t: int, i: int) -> str | None:
        """Plan id owning record i of trace t (closest plan above, else the synthetic root)."""
        p = self.traces[t].nearest(i, PLANS)
        return self.plan_ids[t][p] if p is not None else self.synthetic[t]

    def entries(self, t: int) -> list[tuple[int, int, str, dict[str, Any]]]:
        """The plans of trace ``t`` (its synthetic root first among equals), by start."""
        index = self.traces[t]
        members: dict[str, list[int]] = {}
        for i in range(len(index.spans)):
            if index.kinds[i] == AGENT:
                owner = self.plan_of(t, i)
                if owner is not None:
                    members.setdefault(owner, []).append(i)
        entries: list[tuple[int, int, str, dict[str, Any]]] = []
        sid = self.synthetic[t]
        if sid is not None:
            agents = members[sid]
            first = index.spans[agents[0]]
            ended = all(index.spans[a].end_ns is not None for a in agents)
            end = max((index.spans[a].end_ns or 0) for a in agents) if ended else None
            info = {"title": agent_name(first), "start_ns": first.start_ns, "end_ns": end, "parent": None}
            info |= {"tool": None, "span_id": None, "synthetic": True, "agents": agents}
            entries.append((first.start_ns, -1, sid, info))
        for i, pid in self.plan_ids[t].items():
            entries.append((index.spans[i].start_ns, i, pid, self._plan(t, i, members.get(pid, []))))
        entries.sort(key=lambda e: e[:2])
        return entries

    def _plan(self, t: int, i: int, agents: list[int]) -> dict[str, Any]:
        """A plan span: its trigger (the tool that started it, here or in another trace) and parent plan."""
        index = self.traces[t]
        span = index.spans[i]
        tool_ref: tuple[int, int] | None = None
        tool_idx = index.nearest(i, TOOLS)
        parent_plan_idx = index.nearest(i, PLANS)
        if tool_idx is not None and (
            parent_plan_idx is None or index.nearest(tool_idx, PLANS) == parent_plan_idx
        ):
            tool_ref = (t, tool_idx)
        else:
            exec_id, call = parent_tool_ids(span)
            tool_ref = (self.by_exec.get(exec_id) if exec_id else None) or (
                self.by_call.get(call) if call else None
            )
        parent: str | None
        if parent_plan_idx is not None:
            parent = self.plan_ids[t][parent_plan_idx]
        elif tool_ref is not None:
            parent = self.plan_of(*tool_ref)
        else:
            parent = None
        info = {"title": plan_name(span), "start_ns": span.start_ns, "end_ns": span.end_ns, "parent": parent}
        return info | {"tool": tool_ref, "span_id": span.span_id, "synthetic": False, "agents": agents}

    def record(self, t: int, pid: str, info: dict[str, Any]) -> dict[str, Any]:
        index = self.traces[t]
        self.parents[pid] = info["parent"] if info["parent"] != pid else None
        ref = info["tool"]
        trigger = self.tool_calls[ref[0]][ref[1]] if ref is not None else None
        agents = info["agents"]
        first_request = next((r for a in agents for r in (turn_messages(index, a)[0],) if r), None)
        last_result = next((r for a in reversed(agents) for r in (turn_messages(index, a)[1],) if r), None)
        return {
            "currentPlanId": pid,
            "rootPlanId": pid,  # resolved by ``document``
            "parentPlanId": self.parents[pid],
            "toolCallId": None if trigger is None else trigger.call_id,
            "parentActToolCall": None if trigger is None else _parent_call(trigger),
            "title": info["title"],
            "userRequest": first_request,
            "startTime": iso(info["start_ns"]),
            "endTime": iso(info["end_ns"]),
            "completed": info["end_ns"] is not None,
            "summary": last_result,
            "agentExecutionSequence": [_agent_record(index, a, self.tool_calls[t]) for a in agents],
            "trace_id": index.spans[0].trace_id,
            "span_id": info["span_id"],
            "synthetic": info["synthetic"],
        }

    def document(self) -> dict[str, Any]:
        records = [
            self.record(t, pid, info) for t in range(len(self.traces)) for _, _, pid, info in self.entries(t)
        ]
        for record in records:
            root = record["currentPlanId"]
            seen = {root}
            while (up := self.parents.get(root)) is not None and up not in seen:
                root = up
                seen.add(root)
            record["rootPlanId"] = root
        return {"schema_version": SCHEMA_VERSION, "plans": records}


def to_plans(spans: Iterable[Span]) -> dict[str, Any]:
    """The plan records of all given traces (see module doc)."""
    return _Plans(spans).document()
