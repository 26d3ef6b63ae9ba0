"""Link each executed tool call to the model call (generation) that asked for it.

For one trace: the requests of every LLM span (``_requests.requested_calls``) are matched to the tool spans,
each request used once. A tool span is matched, in this order, to
1. the request with its own model call id (on the span, in a ToolMessage it returned, or on the span that
   dispatched it: LangGraph's ``tools`` task records ``{"tool_call": {"id": ...}}`` as its input);
2. the first unused request of the same name and arguments;
3. the first unused request of the same name, when the span's arguments are lossy (a bare value for a
   one-argument tool, or none at all).
Candidates are requests of model calls that started before the tool span, under the same agent run (the
nearest agent ancestor), latest model call first. A match fills in the model's call id and the arguments
as the model sent them when the span lacks them, and sets ``requested_by`` to the model call's span id.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolspan import semconv as sc
from toolspan._kernel import ids
from toolspan.bridge._kinds import AGENT, LLM, TOOL, parse_json
from toolspan.bridge._requests import (
    Requested,
    normal_arguments,
    normal_result,
    requested_calls,
    result_call_id,
)
from toolspan.bridge._tools import ToolCallRecord, tool_call
from toolspan.bridge.model import Span

__all__ = ["link_tool_calls"]


def _own_id(call: ToolCallRecord) -> str | None:
    return None if call.call_id == ids.synthetic_call_id(call.span.span_id) else call.call_id


def _dispatch_id(parent: Span | None) -> str | None:
    if parent is None:
        return None
    for key in (sc.OI_INPUT_VALUE, sc.TRACELOOP_ENTITY_INPUT):
        value = parse_json(parent.attributes.get(key))
        if isinstance(value, Mapping) and isinstance(value.get("inputs"), Mapping):
            value = value["inputs"]
        call = value.get("tool_call") if isinstance(value, Mapping) else None
        if isinstance(call, Mapping) and call.get("id"):
            return str(call["id"])
    return None


def _same_args(tool_args: Any, requested: Any) -> bool:
    if tool_args == requested:
        return True
    # A one-argument tool recorded as the bare value.
    return (
        isinstance(requested, Mapping)
        and len(requested) == 1
        and not isinstance(tool_args, Mapping)
        and next(iter(requested.values())) == tool_args
    )


def _lossy(tool_args: Any) -> bool:
    return not isinstance(tool_args, Mapping)


def _agents(i: int, parent: Sequence[int | None], kinds: Sequence[str]) -> list[int | None]:
    """The agent spans above ``i``, nearest first, ending with ``None`` (the trace itself)."""
    out: list[int | None] = []
    p = parent[i]
    seen = 0
    while p is not None and seen <= len(parent):
        if kinds[p] == AGENT:
            out.append(p)
        p = parent[p]
        seen += 1
    out.append(None)
    return out


def _pick(
    candidates: list[tuple[int, int, Requested]],
    test: Callable[[Requested], bool],
) -> tuple[int, int, Requested] | None:
    for item in candidates:
        if test(item[2]):
            return item
    return None


def _match(
    candidates: list[tuple[int, int, Requested]], name: str, args: Any, known_id: str | None
) -> tuple[int, int, Requested] | None:
    match = None
    if known_id is not None:
        match = _pick(candidates, lambda r: r.id == known_id)
    if match is None:
        match = _pick(candidates, lambda r: r.name == name and _same_args(args, r.arguments))
    if match is None and _lossy(args):
        match = _pick(candidates, lambda r: r.name == name)
    return match


def link_tool_calls(
    spans: Sequence[Span], kinds: Sequence[str], parent: Sequence[int | None]
) -> dict[int, ToolCallRecord]:
    """The tool call of every tool span of one trace (by index), linked to the model call that asked."""
    calls = {i: tool_call(span) for i, span in enumerate(spans) if kinds[i] == TOOL}
    llms = sorted((i for i, k in enumerate(kinds) if k == LLM), key=lambda i: (spans[i].start_ns, i))
    requests: list[tuple[int, int, Requested]] = [
        (llm, order, req) for llm in llms for order, req in enumerate(requested_calls(spans[llm]))
    ]
    used: set[tuple[int, int]] = set()
    llm_agents = {i: _agents(i, parent, kinds) for i in llms}
    out: dict[int, ToolCallRecord] = {}
    for i in sorted(calls, key=lambda i: (spans[i].start_ns, i)):
        call = calls[i]
        args = normal_arguments(call.input)
        output = normal_result(call.output)
        p = parent[i]
        known_id = (
            _own_id(call) or result_call_id(call.output) or _dispatch_id(None if p is None else spans[p])
        )
        start = spans[i].start_ns
        # Same agent run: the tool's nearest agent is the model call's agent or one above it.
        agent = _agents(i, parent, kinds)[0]
        candidates = sorted(
            (
                r
                for r in requests
                if (r[0], r[1]) not in used and spans[r[0]].start_ns <= start and agent in llm_agents[r[0]]
            ),
            key=lambda r: (-spans[r[0]].start_ns, r[1]),
        )
        match = _match(candidates, call.name, args, known_id)
        changes: dict[str, Any] = {"input": args, "output": output}
        if match is not None:
            used.add((match[0], match[1]))
            req = match[2]
            changes["requested_by"] = spans[match[0]].span_id
            if _lossy(args) and req.arguments is not None:
                changes["input"] = req.arguments
            if known_id is None and req.id is not None:
                known_id = req.id
        if known_id is not None:
            changes["call_id"] = known_id
        out[i] = dataclasses.replace(call, **changes)
    return out
