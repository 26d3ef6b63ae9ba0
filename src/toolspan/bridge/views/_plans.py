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
- Times are ISO 8601 UTC strings; ``endTime`` is null and ``completed`` false for a plan that never ended.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from toolspan import semconv as sc
from toolspan._util.ids import plan_id
from toolspan.bridge._coalesce import coalesce
from toolspan.bridge.facts import (
    AGENT,
    PLAN,
    TOOL,
    ToolCallRecord,
    agent_name,
    parent_tool_ids,
    plan_name,
    thoughts,
    total_usage,
)
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
    return {
        "toolCallId": tc.call_id,
        "name": tc.name,
        "parameters": _text({} if tc.input is None else tc.input),
        "result": result,
        "executionId": tc.execution_id,
        "state": tc.state,
        "requestedBy": tc.requested_by,
    }


def _parent_call(tc: ToolCallRecord) -> dict[str, Any]:
    info = _act_info(tc)
    return {key: info[key] for key in ("toolCallId", "name", "parameters", "result")}


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


def to_plans(spans: Iterable[Span]) -> dict[str, Any]:
    """The plan records of all given traces (see module doc)."""
    traces = [TraceIndex(t) for t in group_traces(coalesce(spans))]
    # Tool calls of every trace, by call id and execution id, to resolve sub-plans in other traces.
    tool_calls: list[dict[int, ToolCallRecord]] = []
    by_call: dict[str, tuple[int, int]] = {}
    by_exec: dict[str, tuple[int, int]] = {}
    for t, index in enumerate(traces):
        calls = index.tool_calls()
        tool_calls.append(calls)
        for i, tc in calls.items():
            by_call.setdefault(tc.call_id, (t, i))
            by_exec.setdefault(tc.execution_id, (t, i))
    # Plan id of every plan span and of each trace's synthetic root.
    # A duplicate record of a plan span gets its own id (suffix "-2", "-3", ...), so no agent is placed twice.
    plan_ids: list[dict[int, str]] = []
    synthetic: list[str | None] = []
    used: set[str] = set()
    for index in traces:
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
        plan_ids.append(ids)
        loose = any(
            index.kinds[i] == AGENT and index.nearest(i, PLANS) is None for i in range(len(index.spans))
        )
        synthetic.append(plan_id(index.spans[0].trace_id) if loose else None)

    def plan_of(t: int, i: int) -> str | None:
        """Plan id owning record i of trace t (closest plan above, else the synthetic root)."""
        p = traces[t].nearest(i, PLANS)
        return plan_ids[t][p] if p is not None else synthetic[t]

    records: list[dict[str, Any]] = []
    parents: dict[str, str | None] = {}
    for t, index in enumerate(traces):
        spans = index.spans
        calls = tool_calls[t]
        members: dict[str, list[int]] = {}
        for i in range(len(spans)):
            if index.kinds[i] == AGENT:
                owner = plan_of(t, i)
                if owner is not None:
                    members.setdefault(owner, []).append(i)
        entries: list[tuple[int, int, str, dict[str, Any]]] = []
        sid = synthetic[t]
        if sid is not None:
            agents = members[sid]
            first = spans[agents[0]]
            ended = all(spans[a].end_ns is not None for a in agents)
            end = max((spans[a].end_ns or 0) for a in agents) if ended else None
            entries.append(
                (
                    first.start_ns,
                    -1,
                    sid,
                    {
                        "title": agent_name(first),
                        "start_ns": first.start_ns,
                        "end_ns": end,
                        "parent": None,
                        "tool": None,
                        "span_id": None,
                        "synthetic": True,
                        "agents": agents,
                    },
                )
            )
        for i, pid in plan_ids[t].items():
            span = spans[i]
            tool_ref: tuple[int, int] | None = None
            tool_idx = index.nearest(i, TOOLS)
            parent_plan_idx = index.nearest(i, PLANS)
            if tool_idx is not None and (
                parent_plan_idx is None or index.nearest(tool_idx, PLANS) == parent_plan_idx
            ):
                tool_ref = (t, tool_idx)
            else:
                exec_id, call = parent_tool_ids(span)
                tool_ref = (by_exec.get(exec_id) if exec_id else None) or (
                    by_call.get(call) if call else None
                )
            parent: str | None
            if parent_plan_idx is not None:
                parent = plan_ids[t][parent_plan_idx]
            elif tool_ref is not None:
                parent = plan_of(*tool_ref)
            else:
                parent = None
            entries.append(
                (
                    span.start_ns,
                    i,
                    pid,
                    {
                        "title": plan_name(span),
                        "start_ns": span.start_ns,
                        "end_ns": span.end_ns,
                        "parent": parent,
                        "tool": tool_ref,
                        "span_id": span.span_id,
                        "synthetic": False,
                        "agents": members.get(pid, []),
                    },
                )
            )
        entries.sort(key=lambda e: e[:2])
        for _start, _i, pid, info in entries:
            parents[pid] = info["parent"] if info["parent"] != pid else None
            ref = info["tool"]
            trigger = tool_calls[ref[0]][ref[1]] if ref is not None else None
            agents = info["agents"]
            first_request = next((r for a in agents for r in (turn_messages(index, a)[0],) if r), None)
            last_result = next(
                (r for a in reversed(agents) for r in (turn_messages(index, a)[1],) if r), None
            )
            records.append(
                {
                    "currentPlanId": pid,
                    "rootPlanId": pid,  # resolved below
                    "parentPlanId": parents[pid],
                    "toolCallId": None if trigger is None else trigger.call_id,
                    "parentActToolCall": None if trigger is None else _parent_call(trigger),
                    "title": info["title"],
                    "userRequest": first_request,
                    "startTime": iso(info["start_ns"]),
                    "endTime": iso(info["end_ns"]),
                    "completed": info["end_ns"] is not None,
                    "summary": last_result,
                    "agentExecutionSequence": [_agent_record(index, a, calls) for a in agents],
                    "trace_id": spans[0].trace_id,
                    "span_id": info["span_id"],
                    "synthetic": info["synthetic"],
                }
            )
    for record in records:
        root = record["currentPlanId"]
        seen = {root}
        while (up := parents.get(root)) is not None and up not in seen:
            root = up
            seen.add(root)
        record["rootPlanId"] = root
    return {"schema_version": SCHEMA_VERSION, "plans": records}
