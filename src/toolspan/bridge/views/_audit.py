"""Policy audit of recorded runs: ``audit(spans, policy)`` -> the violations report, with the execution tree
of every trace whose offending tool nodes are marked.

A run is a trace. Tool calls are checked in the order the live guard judged and counted them: at the allow
of a call that asked for an approval, else at its start; a call's agents are the agent spans above it,
through sub-plans too, outermost first. A call that asked for an approval and never got an allow (SEALED or
CANCELLED while it waited) never ran its body: like a denied one, it is not counted, and what it breaks is
listed under ``enforced``. Both argument sets of a call are checked:
the model's and, when an approver edited them, the edit the body ran with. A denied call (state ``DENIED``:
its body never ran) that breaks a rule is listed under ``enforced``, not ``violations``: the policy held; so
is every rule the live policy named on the span when it denied the call (``toolspan.policy.rules``), even
when the record cannot show why (content capture off). A rule that applies but cannot be evaluated is listed
under ``unchecked``: arguments not recorded, or the value it reads cut at the byte budget or redacted (a
recorded copy is never taken for the value the call had). A copy is read as cut or redacted only where the
span says it may differ from the call (the digest of the whole arguments beside it): in an exact copy a
value that merely contains ``[REDACTED]`` is judged as the value it is; and arguments whose JSON text does
not parse were cut where toolspan did not mark it (an SDK attribute length limit): unknown.

Each finding: ``policy_id``, ``policy_version``, ``rule_id``, ``rule_kind``, ``trace_id``, ``span_id``,
``execution_id``, ``call_id``, ``tool_name``, ``agent`` (the innermost agent, or null) and a one-line
``reason``. Tree nodes of tool calls with violations get ``policy_violations``: their rule ids, in policy
order. The document validates against the ``audit`` schema.

``mark_pages(pages, report)`` puts the findings of a report on the trace page documents (``to_pages``) of
the same spans: each tool step gets ``policy_findings`` (``outcome`` ``violation``, ``enforced`` or
``unchecked``, ``rule_id``, ``rule_kind``, ``reason``, ``policy_id``, ``policy_version``; violations first,
then in report order) and each page an ``audit`` summary of its trace (policy id and version, counts), so
the page shows a violations list even when it is empty (``violations``, ``enforced``, ``unchecked``: how many
findings of each its steps carry).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from toolspan import semconv as sc
from toolspan._util.words import ALLOW, DENY
from toolspan.bridge._coalesce import coalesce, duplicate_flags
from toolspan.bridge.facts import AGENT, TOOL, ToolCallRecord, agent_name, approvals, tool_call
from toolspan.bridge.internal import edited_input
from toolspan.bridge.model import Span
from toolspan.bridge.views._common import SCHEMA_VERSION, TraceIndex, group_traces
from toolspan.bridge.views._tree import _trace_doc as trace_doc
from toolspan.policy import (
    UNKNOWN,
    Call,
    Checker,
    Finding,
    PartialArray,
    PartialObject,
    Policy,
    Verdict,
    rule_kind,
)

__all__ = ["audit", "mark_pages"]

_OUTCOMES: Final = (("violations", "violation"), ("enforced", "enforced"), ("unchecked", "unchecked"))
_BUCKET: Final = {outcome: bucket for bucket, outcome in _OUTCOMES}


def _agents(index: TraceIndex, i: int) -> tuple[str, ...]:
    names: list[str] = []
    p = index.parent[i]
    while p is not None:
        if index.kinds[p] == AGENT:
            names.append(agent_name(index.spans[p]))
        p = index.parent[p]
    return tuple(reversed(names))


def _known(recorded: Any, inexact: bool) -> Any:
    """A recorded argument value for the checker: what was cut or redacted becomes unknown (``UNKNOWN``, or a
    partial object or array), never a value the call did not have. Markers count only in a copy the span
    says may differ from the call (``inexact``: it recorded the digest of the whole arguments beside it); in
    an exact copy, ``[REDACTED]`` or ``...[truncated`` is what the call was given, and is judged as such."""
    if not inexact:
        return recorded

    def convert(value: Any) -> Any:
        if isinstance(value, str):
            if sc.REDACTED_VALUE in value or sc.TRUNCATION_MARKER in value:
                return UNKNOWN
            return value
        if isinstance(value, list):
            partial = (
                bool(value) and isinstance(value[-1], str) and value[-1].startswith(sc.TRUNCATION_MARKER)
            )
            items = [convert(v) for v in (value[:-1] if partial else value)]
            return PartialArray(items) if partial else items
        if isinstance(value, dict):
            if value.get(sc.TRUNCATION_FALLBACK_KEY) is True:
                return UNKNOWN
            partial = any(sc.TRUNCATION_MARKER in k for k in value)
            entries = {k: convert(v) for k, v in value.items() if sc.TRUNCATION_MARKER not in k}
            return PartialObject(entries) if partial else entries
        return value

    # Captured values are at most 32 deep (the serializer's limit): the recursion is bounded by the data.
    try:
        return convert(recorded)
    except RecursionError:
        return UNKNOWN


def _recorded(span: Span, text_key: str, digest_key: str, value: Any) -> Any:
    """A recorded argument set for the checker: ``UNKNOWN`` when its text is not the JSON toolspan writes (a
    copy cut where toolspan did not mark it: an SDK attribute length limit), else ``_known``."""
    text = span.attributes.get(text_key)
    if text_key == sc.GEN_AI_TOOL_CALL_ARGUMENTS and not isinstance(text, str):
        text = span.attributes.get(sc.OI_INPUT_VALUE)
        json_text = span.attributes.get(sc.OI_INPUT_MIME_TYPE, sc.MIME_JSON) == sc.MIME_JSON
    else:
        json_text = True
    if isinstance(text, str) and json_text and value is text:
        return UNKNOWN  # JSON text that does not parse: cut (or not toolspan's), never judged as a string
    return _known(value, isinstance(span.attributes.get(digest_key), str))


def _ran(span: Span, state: str) -> bool:
    """Whether the call's body ran, as the live guard counts it: not denied, and when it asked for an
    approval, allowed (a call that never got its allow, SEALED or CANCELLED while it waited, never ran)."""
    if state == sc.STATE_DENIED:
        return False
    marks = approvals(span)
    return not marks or any(a.decision == ALLOW for a in marks)


def _counted_at(span: Span) -> int:
    """When the live guard counted the call for budgets and order: at its allow when it asked for an
    approval (step 3 of the decision chain), else at its start."""
    allows = [a.time_ns for a in approvals(span) if a.decision == ALLOW]
    return allows[-1] if allows else span.start_ns


def _enforced_live(span: Span, policy: Policy) -> list[str]:
    """The ids of this policy's rules the live policy named when it denied the call."""
    if span.attributes.get(sc.TOOLSPAN_POLICY_ID) != policy.id:
        return []
    rules = span.attributes.get(sc.TOOLSPAN_POLICY_RULES)
    if not isinstance(rules, list | tuple):
        return []
    known = {r.id for r in policy.rules}
    return [str(r) for r in rules if str(r) in known]


def _mark(node: dict[str, Any], marks: dict[str, list[str]]) -> None:
    stack = [node]
    while stack:
        current = stack.pop()
        rules = marks.get(current["span_id"])
        if rules and current.get("type") == "tool" and not current.get("duplicate"):
            current["policy_violations"] = rules
        stack.extend(current["children"])


def _call(span: Span, tc: ToolCallRecord, agents: tuple[str, ...]) -> Call:
    """The policy's view of a recorded call: what it was given (the digest when the copy was cut), its
    approvals, whether it ran, the approver's edit."""
    edited = edited_input(span)
    return Call(
        tool=tc.name,
        agents=agents,
        arguments=_recorded(
            span, sc.GEN_AI_TOOL_CALL_ARGUMENTS, sc.TOOLSPAN_TOOL_CALL_ARGUMENTS_DIGEST, tc.model_input
        ),
        arguments_recorded=tc.model_input is not None,
        approved=any(a.decision == ALLOW for a in approvals(span)),
        ran=_ran(span, tc.state),
        edited_arguments=None
        if edited is None
        else _recorded(
            span,
            sc.TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS,
            sc.TOOLSPAN_TOOL_CALL_EDITED_ARGUMENTS_DIGEST,
            edited,
        ),
    )


def audit(spans: Iterable[Span], policy: Policy) -> dict[str, Any]:
    """The audit report of ``spans`` (any number of traces) against ``policy``."""
    head = {"policy_id": policy.id, "policy_version": policy.version}
    findings: dict[str, list[dict[str, Any]]] = {"violations": [], "enforced": [], "unchecked": []}
    trees: list[dict[str, Any]] = []
    calls = 0
    traces = group_traces(coalesce(spans))
    for trace in traces:
        index = TraceIndex(trace)
        dup = duplicate_flags(trace)
        checker = Checker(policy)
        marks: dict[str, list[str]] = {}
        # In the order the live guard judged and counted them (``_counted_at``), not the order they started.
        tools = sorted(
            (i for i, span in enumerate(trace) if index.kinds[i] == TOOL and not dup[i]),
            key=lambda i: (_counted_at(trace[i]), i),
        )
        for i in tools:
            span = trace[i]
            calls += 1
            tc = tool_call(span)
            agents = _agents(index, i)
            call = _call(span, tc, agents)
            verdict = checker.check(call)
            if not call.ran:
                verdict = _with_live_denials(verdict, _enforced_live(span, policy), policy, span)
            where = {
                **head,
                "trace_id": span.trace_id,
                "span_id": span.span_id,
                "execution_id": tc.execution_id,
                "call_id": tc.call_id,
                "tool_name": tc.name,
                "agent": agents[-1] if agents else None,
            }

            def entry(f: Finding, where: dict[str, Any] = where) -> dict[str, Any]:
                return {**where, "rule_id": f.rule_id, "rule_kind": f.kind, "reason": f.reason}

            bucket = "violations" if call.ran else "enforced"
            findings[bucket].extend(entry(f) for f in verdict.violations)
            findings["unchecked"].extend(entry(f) for f in verdict.unchecked)
            if call.ran and verdict.violations:
                marks[span.span_id] = [f.rule_id for f in verdict.violations]
        doc = trace_doc(trace)
        _mark(doc["execution_tree"], marks)
        trees.append(doc)
    return {
        "schema_version": SCHEMA_VERSION,
        "policy": {"id": policy.id, "version": policy.version},
        "summary": {
            "traces": len(traces),
            "tool_calls": calls,
            "violations": len(findings["violations"]),
            "enforced": len(findings["enforced"]),
            "unchecked": len(findings["unchecked"]),
        },
        **findings,
        "trees": trees,
    }


def _with_live_denials(verdict: Verdict, live: list[str], policy: Policy, span: Span) -> Verdict:
    """``verdict`` with the rules the live policy denied the call by counted as broken (enforced): the
    record may not show why (content capture off), the span says that they were."""
    if not live:
        return verdict
    found = {f.rule_id for f in verdict.violations}
    note = next((a.note for a in reversed(approvals(span)) if a.decision == DENY and a.note), None)
    kinds = {r.id: rule_kind(r) for r in policy.rules}
    extra = tuple(
        Finding(rule_id, kinds[rule_id], f"denied by the live policy{': ' + note if note else ''}")
        for rule_id in live
        if rule_id not in found
    )
    unchecked = tuple(f for f in verdict.unchecked if f.rule_id not in live)
    order = {r.id: i for i, r in enumerate(policy.rules)}
    broken = sorted(verdict.violations + extra, key=lambda f: order.get(f.rule_id, len(order)))
    return Verdict(tuple(broken), unchecked)


def mark_pages(pages: Iterable[dict[str, Any]], report: dict[str, Any]) -> list[dict[str, Any]]:
    """Copies of the page documents ``pages`` with the findings of the audit ``report`` on their tool
    steps (see the module docstring); the pages and the report must come from the same spans."""
    policy = report["policy"]
    by_span: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for bucket, outcome in _OUTCOMES:
        for f in report[bucket]:
            by_span.setdefault((f["trace_id"], f["span_id"]), []).append(
                {
                    "outcome": outcome,
                    "rule_id": f["rule_id"],
                    "rule_kind": f["rule_kind"],
                    "reason": f["reason"],
                    "policy_id": f["policy_id"],
                    "policy_version": f["policy_version"],
                }
            )
    out: list[dict[str, Any]] = []
    for page in pages:
        counts = dict.fromkeys((bucket for bucket, _ in _OUTCOMES), 0)
        steps = []
        for step in page["steps"]:
            found = None
            if step["kind"] == TOOL and not step.get("duplicate"):
                found = by_span.get((page["trace_id"], step["id"]))
            if not found:
                steps.append(step)
                continue
            steps.append({**step, "policy_findings": found})
            for f in found:
                counts[_BUCKET[f["outcome"]]] += 1
        summary = {"policy_id": policy["id"], "policy_version": policy["version"], **counts}
        out.append({**page, "steps": steps, "audit": summary})
    return out
