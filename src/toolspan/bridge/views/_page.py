"""The trace page's data: everything the HTML page shows of one trace, as one JSON document.

``to_pages(spans, live=False)`` returns one document per trace (ordered by first span); ``to_page`` takes the
spans of one trace. Schema ``page``. A document:

- ``schema_version``, ``trace_id``, ``title`` (the run's one name, ``run_name``: what the user asked, else
  the root's name),
  ``start_time`` (ISO 8601 UTC) and ``start_ms`` (epoch ms) of the first span, ``duration_us`` (first start to
  last recorded time), ``live``, ``conversation_id`` (``null`` when no span names a conversation),
  ``counts`` (steps per state);
- ``steps``: one per span record, in the coalesced order (by start). Times are integer microseconds relative
  to the trace start (``start_us``; ``dur_us`` is ``null`` for a span that has not ended). ``parent`` is the
  parent step's index (``null`` for a root). ``kind`` is the classification (``tool``, ``agent``, ``plan``,
  ``llm``, ``chain``, ``retriever``, ``other``). ``state``: a tool's state (the progress stream's tool
  state machine); other steps are ``COMPLETED``, ``FAILED`` (status ERROR), ``CANCELLED`` (stopped: a
  cancellation's ``error.type``, Ctrl-C) or, not ended, ``SEALED``
  (``RUNNING`` when ``live``). A live tool that asked for approval and got no decision yet is
  ``AWAITING_APPROVAL``.
  Optional fields appear only when they have a value: ``execution_id``, ``call_id`` (tools),
  ``arguments_sha256`` (a tool ``AWAITING_APPROVAL``: the digest of its recorded arguments' JSON text, which a
  decision on it names as ``shown``), ``input`` /
  ``output`` (tools: the arguments the body received and the result; agents: the user text and the
  answer), ``edited`` (a tool whose arguments an approver or decider replaced: ``{by, t_us, model_input}``,
  who decided, when, and the model's own arguments; ``input`` is then the edit), ``error``
  (``{type, message, stack}``), ``thoughts`` (``[t_us, text]``), ``approvals`` (``{t_us, decision, note,
  wait_us}`` and ``by``, who decided, when recorded; ``decision`` ``null`` for a request), ``wait``
  (``[start_us, dur_us]``: the approval wait drawn as its own bar segment), ``events`` (other span
  events, ``[t_us, name, attributes]``), ``attributes`` (the
  span attributes the fields above do not already show), ``subplans`` (span ids of the plans and agents
  this tool started, in any trace of the input), ``from`` (execution id of the tool that started this plan or
  agent), ``critical`` (on the critical path: the chain of spans that determined the run's end),
  ``truncated`` (a shown value carries toolspan's ``...[truncated`` marker), ``orphan``, ``cycle``,
  ``duplicate``.
- ``conversation``: the conversation timeline's turns of this trace when it has a conversation id
  (``{type, t_ms, text}`` for ``user_message`` / ``thought`` / ``assistant_message``, ``{type, t_ms, step}``
  for ``tool_call`` / ``tool_result``), else ``[]``.

Deterministic: the same spans in any order give the same documents.

``page_head(spans, live=False, end_ns=None)``: the first screen of a long trace's page, before its whole
document is built: the page document of ``spans``, the first records of one trace in start order (as a store
holds them: one record per span), with ``partial: true``. Its steps are the first steps of the whole document,
each with the fields its own span gives; what only the whole trace says is left out: ``counts`` is ``{}``,
``conversation_id`` ``null``, ``conversation`` ``[]``, and no step has ``critical``, ``orphan``, ``cycle``,
``subplans`` or ``from`` (a parent not among ``spans`` is ``null``); ``duration_us`` runs to ``end_ns`` (the
trace's last recorded time, when known) or the last time of ``spans``. The page shows it marked as loading
until the whole document replaces it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from toolspan import semconv as sc
from toolspan._util.ids import arguments_sha256
from toolspan.bridge._coalesce import coalesce, duplicate_flags
from toolspan.bridge.facts import (
    AGENT,
    LLM,
    PLAN,
    TOOL,
    ToolCallRecord,
    agent_name,
    approvals,
    parse_json,
    plan_name,
    thoughts,
)
from toolspan.bridge.internal import (
    CONVERSATION_KEYS,
    agent_input_text,
    agent_output_text,
    arguments_text,
    is_cancellation,
    parent_tool_ids,
)
from toolspan.bridge.model import Span
from toolspan.bridge.views._common import SCHEMA_VERSION, TraceIndex, group_traces, iso, ms
from toolspan.bridge.views._names import run_name
from toolspan.bridge.views._timeline import trace_items

__all__ = ["page_head", "to_page", "to_pages"]

TRUNCATION_MARK: Final = "...[truncated"
_STATES: Final = (
    sc.STATE_COMPLETED,
    sc.STATE_FAILED,
    sc.STATE_CANCELLED,
    sc.STATE_DENIED,
    sc.STATE_SEALED,
    sc.STATE_RUNNING,
    sc.STATE_AWAITING_APPROVAL,
    sc.STATE_PENDING,
)
# Groups of attributes holding one value the page shows through its own field (first present key wins).
_TOOL_INPUT: Final = (sc.GEN_AI_TOOL_CALL_ARGUMENTS, sc.OI_INPUT_VALUE, sc.TRACELOOP_ENTITY_INPUT)
_TOOL_OUTPUT: Final = (sc.GEN_AI_TOOL_CALL_RESULT, sc.OI_OUTPUT_VALUE, sc.TRACELOOP_ENTITY_OUTPUT)
_TOOL_NAME: Final = (sc.GEN_AI_TOOL_NAME, sc.OI_TOOL_NAME, sc.TRACELOOP_ENTITY_NAME)
_TOOL_DESCRIPTION: Final = (sc.GEN_AI_TOOL_DESCRIPTION, sc.OI_TOOL_DESCRIPTION)
_CALL_IDS: Final = (sc.GEN_AI_TOOL_CALL_ID, sc.OI_TOOL_CALL_ID, sc.OI_TOOL_ID, sc.TOOLSPAN_TOOL_CALL_ID)
_LLM_INPUT: Final = (sc.GEN_AI_INPUT_MESSAGES, sc.OI_INPUT_VALUE)
_LLM_OUTPUT: Final = (sc.GEN_AI_OUTPUT_MESSAGES, sc.OI_OUTPUT_VALUE)
_AGENT_NAME: Final = (sc.GEN_AI_AGENT_NAME, sc.OI_AGENT_NAME)
# Classification markers implied by ``kind``.
_KIND_MARKS: Final[Mapping[str, Mapping[str, str]]] = {
    TOOL: {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_TOOL},
    AGENT: {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_AGENT},
    PLAN: {sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_CHAIN},
    LLM: {sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_LLM},
}
_SHOWN_EVENTS: Final = frozenset(
    {sc.THOUGHT_EVENT, sc.PERMISSION_REQUIRED_EVENT, sc.PERMISSION_DECIDED_EVENT, sc.EXCEPTION_EVENT}
)


def _us(ns: int, t0: int) -> int:
    return (ns - t0) // 1000


def _has_mark(value: Any) -> bool:
    """Whether ``value`` holds toolspan's truncation marker anywhere (iterative: any depth)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if TRUNCATION_MARK in item:
                return True
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            if item.get("toolspan.truncated") is True or any(TRUNCATION_MARK in k for k in item):
                return True
            stack.extend(item.values())
    return False


def _label(span: Span, kind: str) -> str:
    if kind == AGENT:
        return agent_name(span)
    if kind == PLAN:
        return plan_name(span)
    return span.name


def _error(span: Span, text: str | None) -> dict[str, Any] | None:
    for event in span.events:
        if event.name == sc.EXCEPTION_EVENT:
            attrs = event.attributes
            return {
                "type": _opt_str(attrs.get(sc.EXCEPTION_TYPE)),
                "message": _opt_str(attrs.get(sc.EXCEPTION_MESSAGE)),
                "stack": _opt_str(attrs.get(sc.EXCEPTION_STACKTRACE)),
            }
    if text is None:
        return None
    etype = span.attributes.get(sc.ERROR_TYPE)
    return {"type": _opt_str(etype), "message": text, "stack": None}


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _approval_fields(
    span: Span, t0: int, end_us: int | None
) -> tuple[list[dict[str, Any]], list[int | None] | None]:
    out: list[dict[str, Any]] = []
    wait: list[int | None] | None = None
    asked: int | None = None
    for a in approvals(span):
        t = _us(a.time_ns, t0)
        item: dict[str, Any] = {"t_us": t, "decision": a.decision, "note": a.note, "wait_us": None}
        if a.by is not None:
            item["by"] = a.by
        if a.decision is None:
            asked = t
        elif asked is not None:
            item["wait_us"] = max(0, t - asked)
            if wait is None:
                wait = [asked, max(0, t - asked)]
            asked = None
        out.append(item)
    if asked is not None and wait is None:
        # Still waiting (or never decided): the wait runs to the span's end, or to now in a live page.
        wait = [asked, None if end_us is None else max(0, end_us - asked)]
    return out, wait


def _group(attrs: Mapping[str, Any], keys: tuple[str, ...], hidden: set[str]) -> Any:
    """The value of the first key of ``keys`` present; it and every other key with the same value are
    shown through a field of the step, so they are not repeated under ``attributes``."""
    value = next((attrs[k] for k in keys if attrs.get(k) is not None), None)
    if value is not None:
        hidden.update(k for k in keys if attrs.get(k) == value)
    return value


def _hide_equal(attrs: Mapping[str, Any], hidden: set[str], shown: Mapping[str, Any]) -> None:
    hidden.update(k for k, v in shown.items() if v is not None and attrs.get(k) == v)


def _other_attributes(attrs: Mapping[str, Any], hidden: set[str]) -> dict[str, Any]:
    """Every attribute the step's own fields do not already show: nothing recorded is lost."""
    return {k: attrs[k] for k in sorted(attrs) if k not in hidden}


def _critical(index: TraceIndex, start: list[int], end: list[int]) -> list[bool]:
    """Mark the chain of spans that ended last at every level, walking back from the end (Jaeger's rule)."""
    crit = [False] * len(start)
    # (candidates, cursor): pick, latest end first, the spans that ended by the cursor without overlapping.
    stack: list[tuple[list[int], int]] = [(index.roots, max(end, default=0))]
    while stack:
        candidates, cursor = stack.pop()
        for c in sorted(candidates, key=lambda i: (-end[i], start[i], i)):
            if end[c] <= cursor:
                crit[c] = True
                stack.append((index.children[c], end[c]))
                cursor = start[c]
    return crit


def _step_state(span: Span, tc: ToolCallRecord | None, live: bool, waiting: bool) -> str:
    if span.end_ns is None:
        if live:
            return sc.STATE_AWAITING_APPROVAL if waiting else sc.STATE_RUNNING
        return sc.STATE_SEALED
    if tc is not None:
        return tc.state
    if is_cancellation(span):  # stopped (Ctrl-C, a cancelled task): not a failure
        return sc.STATE_CANCELLED
    return sc.STATE_FAILED if span.status == "ERROR" else sc.STATE_COMPLETED


def _conversation_id(trace: Sequence[Span]) -> str | None:
    for key in CONVERSATION_KEYS:
        for span in trace:
            value = span.attributes.get(key)
            if value is not None and value != "":
                return str(value)
    return None


def _conversation(
    trace: Sequence[Span], index: TraceIndex, steps_by_exec: Mapping[str, int], start_ms: int
) -> list[Any]:
    """The conversation timeline's items of ``trace`` (as ``to_timelines`` gives them), each pointing at its
    step; read through the page's own ``index``, so each call is read and linked once for the page."""
    out: list[dict[str, Any]] = []
    for time_ns, _rank, _i, _n, item in trace_items(trace, index):
        entry: dict[str, Any] = {"type": item["type"], "t_ms": ms(time_ns) - start_ms}
        if "execution_id" in item:
            entry["step"] = steps_by_exec.get(item["execution_id"])
        else:
            entry["text"] = item["content"]
        out.append(entry)
    return out


def _tool_step(step: dict[str, Any], span: Span, tc: ToolCallRecord, hidden: set[str], t0: int) -> str | None:
    """A tool call's fields of its step (the attributes they repeat hidden); its error text, once it ended."""
    attrs = span.attributes
    for group in (_TOOL_INPUT, _TOOL_OUTPUT, _TOOL_NAME):
        _group(attrs, group, hidden)
    if attrs.get(sc.OI_TOOL_DESCRIPTION) == attrs.get(sc.GEN_AI_TOOL_DESCRIPTION):
        hidden.add(sc.OI_TOOL_DESCRIPTION)
    _hide_equal(attrs, hidden, dict.fromkeys(_CALL_IDS, tc.call_id))
    _hide_equal(
        attrs, hidden, {sc.TOOLSPAN_EXECUTION_ID: tc.execution_id, sc.TOOLSPAN_TOOL_STATE: step["state"]}
    )
    for value_key, mime_key in (
        (sc.OI_INPUT_VALUE, sc.OI_INPUT_MIME_TYPE),
        (sc.OI_OUTPUT_VALUE, sc.OI_OUTPUT_MIME_TYPE),
    ):
        if value_key in hidden:
            hidden.add(mime_key)
    step["label"] = tc.name
    step["execution_id"] = tc.execution_id
    step["call_id"] = tc.call_id
    if tc.input is not None:
        step["input"] = tc.input
    if tc.edit is not None:
        # The body received the edit (``input``): who decided, when, and the model's own arguments beside it.
        at = tc.edit.at_ns
        step["edited"] = {
            "by": tc.edit.by,
            "t_us": None if at is None else _us(at, t0),
            "model_input": tc.edit.model_input,
        }
        hidden.add(sc.TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS)
    if step["state"] == sc.STATE_AWAITING_APPROVAL:
        # What a decision on this call must echo as ``shown`` (the control channel of toolspan serve).
        step["arguments_sha256"] = arguments_sha256(arguments_text(span))
    if tc.output is not None:
        step["output"] = tc.output
    return tc.error if span.end_ns is not None else None


def _span_step(step: dict[str, Any], span: Span, kind: str, hidden: set[str]) -> str | None:
    """An agent's, model call's or plan's fields of its step; its error text, if it failed."""
    attrs = span.attributes
    if kind == AGENT:
        # The texts of the turn; the whole message lists stay under ``attributes``.
        text_in, text_out = agent_input_text(span), agent_output_text(span)
        if text_in is not None:
            step["input"] = text_in
        if text_out is not None:
            step["output"] = text_out
        _group(attrs, _AGENT_NAME, hidden)
    elif kind == LLM:
        value_in, value_out = _group(attrs, _LLM_INPUT, hidden), _group(attrs, _LLM_OUTPUT, hidden)
        if value_in is not None:
            step["input"] = parse_json(value_in)
        if value_out is not None:
            step["output"] = parse_json(value_out)
    elif kind == PLAN:
        _hide_equal(attrs, hidden, {sc.TOOLSPAN_PLAN_NAME: step["label"]})
    return (span.status_message or "failed") if span.status == "ERROR" else None


def _step(
    span: Span, kind: str, t0: int, start_us: int, live: bool, *, tc: ToolCallRecord | None
) -> dict[str, Any]:
    """The step of one span (``parent``, and the flags of its place in the trace, are the caller's); ``tc``:
    a tool span's call as it recorded it (``TraceIndex.recorded_calls``: its state and its step's fields)."""
    end_us = None if span.end_ns is None else max(start_us, _us(span.end_ns, t0))
    step: dict[str, Any] = {
        "id": span.span_id,
        "parent": None,
        "kind": kind,
        "label": _label(span, kind),
        "name": span.name,
        "start_us": start_us,
        "dur_us": None if end_us is None else end_us - start_us,
    }
    approval_list, wait = _approval_fields(span, t0, end_us)
    waiting = bool(approval_list) and approval_list[-1]["decision"] is None
    step["state"] = _step_state(span, tc, live, waiting)
    attrs = span.attributes
    hidden: set[str] = {k for k, v in _KIND_MARKS.get(kind, {}).items() if attrs.get(k) == v}
    error_text = (
        _span_step(step, span, kind, hidden) if tc is None else _tool_step(step, span, tc, hidden, t0)
    )
    error = _error(span, error_text) if error_text is not None or span.status == "ERROR" else None
    if error is not None:
        step["error"] = error
    thought_list = [[_us(t, t0), text] for t, text in thoughts(span)]
    if thought_list:
        step["thoughts"] = thought_list
    if approval_list:
        step["approvals"] = approval_list
    if wait is not None:
        step["wait"] = wait
    other_events = [
        [_us(e.time_ns, t0), e.name, dict(e.attributes)] for e in span.events if e.name not in _SHOWN_EVENTS
    ]
    if other_events:
        step["events"] = other_events
    other = _other_attributes(attrs, hidden)
    if other:
        step["attributes"] = other
    if _has_mark([step.get("input"), step.get("output"), other]):
        step["truncated"] = True
    return step


def _trace_page(trace: Sequence[Span], live: bool, whole: bool = True) -> dict[str, Any]:
    """The page document of one trace (``whole=False``: its conversation not read, ``page_head``'s)."""
    index = TraceIndex(trace)
    recorded = index.recorded_calls()  # read once, for the steps and the linking alike
    dup = duplicate_flags(trace)
    t0 = min((s.start_ns for s in trace), default=0)
    # An end recorded before its start counts as the start (a clock step): no negative time anywhere.
    last = max((max(s.start_ns, s.end_ns or 0) for s in trace), default=t0)
    starts = [_us(s.start_ns, t0) for s in trace]
    ends = [max(starts[i], _us(s.end_ns if s.end_ns is not None else last, t0)) for i, s in enumerate(trace)]
    steps: list[dict[str, Any]] = []
    by_exec: dict[str, int] = {}
    counts = dict.fromkeys(_STATES, 0)
    for i, span in enumerate(trace):
        step = _step(span, index.convention_kinds[i], t0, starts[i], live, tc=recorded.get(i))
        step["parent"] = index.parent[i]
        for flag, values in (("orphan", index.orphan), ("cycle", index.cycle), ("duplicate", dup)):
            if values[i]:
                step[flag] = True
        counts[step["state"]] = counts.get(step["state"], 0) + 1
        if "execution_id" in step:
            by_exec[step["execution_id"]] = i
        steps.append(step)
    for i, on_path in enumerate(_critical(index, starts, ends)):
        if on_path:
            steps[i]["critical"] = True
    start_ms = ms(t0)
    conversation_id = _conversation_id(trace)
    return {
        "schema_version": SCHEMA_VERSION,
        "trace_id": trace[0].trace_id if trace else "",
        "title": run_name(trace),
        "start_time": iso(t0) if trace else None,
        "start_ms": start_ms,
        "duration_us": _us(last, t0),
        "live": live,
        "conversation_id": conversation_id,
        "counts": {k: v for k, v in counts.items() if v},
        "steps": steps,
        "conversation": []
        if conversation_id is None or not whole
        else _conversation(trace, index, by_exec, start_ms),
    }


def _link_subplans(pages: list[dict[str, Any]], traces: list[list[Span]]) -> None:
    tools: dict[str, dict[str, Any]] = {}
    for page in pages:
        for step in page["steps"]:
            if "execution_id" in step:
                tools.setdefault(step["execution_id"], step)
    for page, trace in zip(pages, traces, strict=True):
        steps = page["steps"]
        for i, span in enumerate(trace):
            step = steps[i]
            if step["kind"] == TOOL:
                continue
            parent_exec, _ = parent_tool_ids(span)
            p = step["parent"]
            if parent_exec is None and p is not None and steps[p]["kind"] == TOOL:
                parent_exec = steps[p]["execution_id"]
            if parent_exec is None:
                continue
            step["from"] = parent_exec
            tool = tools.get(parent_exec)
            if tool is not None:
                tool.setdefault("subplans", []).append(step["id"])


def to_pages(spans: Iterable[Span], live: bool = False) -> list[dict[str, Any]]:
    """One page document per trace, ordered by each trace's first span (``live``: unended = running)."""
    traces = group_traces(coalesce(spans))
    pages = [_trace_page(trace, live) for trace in traces]
    _link_subplans(pages, traces)
    return pages


def to_page(spans: Iterable[Span], live: bool = False) -> dict[str, Any]:
    """The page document of the spans of one trace (``ValueError`` if they span several traces)."""
    pages = to_pages(spans, live)
    if len(pages) > 1:
        raise ValueError(f"to_page got {len(pages)} traces; use to_pages for several traces")
    return pages[0] if pages else _trace_page([], live)


# What only the whole trace says of a step: left out of the first screen (``page_head``).
_WHOLE_TRACE_FLAGS: Final = ("critical", "orphan", "cycle", "subplans", "from")


def page_head(spans: Iterable[Span], live: bool = False, end_ns: int | None = None) -> dict[str, Any]:
    """The first screen of one trace's page (see the module doc): ``spans`` are its first records by start."""
    traces = group_traces(coalesce(spans))
    if len(traces) > 1:
        raise ValueError(f"page_head got {len(traces)} traces; it shows the first records of one trace")
    trace = traces[0] if traces else []
    page = _trace_page(trace, live, whole=False)
    for step in page["steps"]:
        for flag in _WHOLE_TRACE_FLAGS:
            step.pop(flag, None)
    if trace and end_ns is not None:
        t0 = trace[0].start_ns
        page["duration_us"] = max(page["duration_us"], _us(end_ns, t0))
    page["counts"] = {}
    page["conversation_id"] = None
    page["conversation"] = []
    page["partial"] = True
    return page
