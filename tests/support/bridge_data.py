"""Shared data for the bridge view tests: the hand-built scenario, fixture paths, span-forest strategies."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
from hypothesis import strategies as st

from tests.support.paths import REPO
from toolspan import semconv as sc
from toolspan.bridge.model import Span, SpanEvent
from toolspan.bridge.views import load_schema

FIXTURES = REPO / "tests" / "fixtures"  # vendored; provenance in tests/fixtures/SOURCES.md
GENAI_FIXTURE = FIXTURES / "jaeger" / "v1_ui_genai_agent_trace.json"

T0 = 1_700_000_000_000_000_000
MS = 1_000_000
TRACE_1 = "0" * 31 + "1"
TRACE_2 = "0" * 31 + "2"
CONVERSATION = "conv-1"

_VALIDATORS: dict[str, jsonschema.Draft202012Validator] = {}


def validate(name: str, instance: Any) -> None:
    """Validate ``instance`` against the packaged schema ``name`` (raises on the first error)."""
    validator = _VALIDATORS.get(name)
    if validator is None:
        schema = load_schema(name)
        jsonschema.Draft202012Validator.check_schema(schema)
        validator = _VALIDATORS[name] = jsonschema.Draft202012Validator(schema)
    validator.validate(instance)


def sid(n: int) -> str:
    return f"{n:016x}"


def span(
    n: int,
    parent: int | None,
    name: str,
    start_ms: int,
    end_ms: int | None,
    attrs: Mapping[str, Any],
    *,
    trace: str = TRACE_1,
    status: str = "UNSET",
    status_message: str = "",
    events: tuple[SpanEvent, ...] = (),
) -> Span:
    return Span(
        trace_id=trace,
        span_id=sid(n),
        parent_span_id=None if parent is None else sid(parent),
        name=name,
        start_ns=T0 + start_ms * MS,
        end_ns=None if end_ms is None else T0 + end_ms * MS,
        status=status,
        status_message=status_message,
        attributes=dict(attrs),
        events=events,
    )


def messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def agent_attrs(name: str, user: str, answer: str | None) -> dict[str, Any]:
    attrs = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
        sc.GEN_AI_AGENT_NAME: name,
        sc.GEN_AI_CONVERSATION_ID: CONVERSATION,
        sc.GEN_AI_INPUT_MESSAGES: messages("user", user),
        sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_AGENT,
    }
    if answer is not None:
        attrs[sc.GEN_AI_OUTPUT_MESSAGES] = messages("assistant", answer)
    return attrs


def tool_attrs(
    n: int, name: str, args: Any, result: Any = None, *, state: str | None = None, model_id: str | None = None
) -> dict[str, Any]:
    """The tool span attributes of the instrumentation contract (issue 2)."""
    attrs: dict[str, Any] = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
        sc.GEN_AI_TOOL_NAME: name,
        sc.GEN_AI_TOOL_TYPE: sc.TOOL_TYPE_FUNCTION,
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(args),
        sc.TOOLSPAN_EXECUTION_ID: "exec_" + sid(n),
        sc.TOOLSPAN_TOOL_CALL_ID: model_id or "call_" + sid(n),
        sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_TOOL,
        sc.OI_TOOL_NAME: name,
        sc.OI_INPUT_VALUE: json.dumps(args),
    }
    if model_id is not None:
        attrs[sc.GEN_AI_TOOL_CALL_ID] = model_id
    if result is not None:
        attrs[sc.GEN_AI_TOOL_CALL_RESULT] = json.dumps(result)
        attrs[sc.OI_OUTPUT_VALUE] = json.dumps(result)
    if state is not None:
        attrs[sc.TOOLSPAN_TOOL_STATE] = state
    return attrs


def thought(at_ms: int, text: str) -> SpanEvent:
    return SpanEvent(sc.THOUGHT_EVENT, T0 + at_ms * MS, {sc.THOUGHT_CONTENT: text})


def permission(
    at_ms: int, decision: str | None = None, note: str | None = None, by: str | None = None
) -> SpanEvent:
    if decision is None:
        return SpanEvent(sc.PERMISSION_REQUIRED_EVENT, T0 + at_ms * MS, {})
    attrs = {sc.PERMISSION_DECISION: decision}
    if note is not None:
        attrs[sc.PERMISSION_NOTE] = note
    if by is not None:
        attrs[sc.PERMISSION_DECIDED_BY] = by
    return SpanEvent(sc.PERMISSION_DECIDED_EVENT, T0 + at_ms * MS, attrs)


def scenario() -> list[Span]:
    """Two turns of one conversation, built by hand following the span contract.

    Turn 1 (trace 1): agent ``planner`` thinks, calls ``search_flights`` (a model id) and ``book_trip``, which
    runs sub-plan ``booking`` -> agent ``booker`` -> failing ``check_availability`` and two parallel
    ``reserve_hotel`` calls; then ``delete_files`` (denied) and ``send_email`` (approved).
    Turn 2 (trace 2): agent ``planner`` calls ``rent_car`` and ``notify``, which never ends (sealed).
    """
    failing = SpanEvent(
        sc.EXCEPTION_EVENT,
        T0 + 24 * MS,
        {sc.EXCEPTION_TYPE: "ValueError", sc.EXCEPTION_MESSAGE: "sold out"},
    )
    plan_attrs = {
        sc.TOOLSPAN_PLAN_NAME: "booking",
        sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_CHAIN,
        sc.TOOLSPAN_PARENT_EXECUTION_ID: "exec_" + sid(3),
        sc.TOOLSPAN_PARENT_TOOL_CALL_ID: "call_" + sid(3),
    }
    booker = agent_attrs("booker", "Book flight AF1 and a hotel", "Flight booked, hotel reserved twice")
    booker.pop(sc.GEN_AI_CONVERSATION_ID)
    failed_attrs = tool_attrs(6, "check_availability", {"flight": "AF1"}, state=sc.STATE_FAILED)
    failed_attrs[sc.ERROR_TYPE] = "ValueError"
    return [
        span(
            1,
            None,
            "invoke_agent planner",
            0,
            100,
            agent_attrs("planner", "Plan a trip to Paris", "Your trip is booked."),
            events=(thought(1, "Search flights first, then book."),),
        ),
        span(
            2,
            1,
            "execute_tool search_flights",
            2,
            10,
            tool_attrs(
                2,
                "search_flights",
                {"city": "Paris"},
                {"flights": ["AF1"]},
                state="COMPLETED",
                model_id="toolu_01",
            ),
        ),
        span(
            3,
            1,
            "execute_tool book_trip",
            12,
            60,
            tool_attrs(3, "book_trip", {"flight": "AF1"}, "booked", state=sc.STATE_COMPLETED),
        ),
        span(4, 3, "plan booking", 13, 59, plan_attrs),
        span(
            5,
            4,
            "invoke_agent booker",
            14,
            58,
            booker,
            events=(thought(15, "Check availability, then reserve two hotels in parallel."),),
        ),
        span(
            6,
            5,
            "execute_tool check_availability",
            20,
            25,
            failed_attrs,
            status="ERROR",
            status_message="ValueError: sold out",
            events=(failing,),
        ),
        span(
            7,
            5,
            "execute_tool reserve_hotel",
            30,
            50,
            tool_attrs(7, "reserve_hotel", {"night": 1}, {"room": 101}, state=sc.STATE_COMPLETED),
        ),
        span(
            8,
            5,
            "execute_tool reserve_hotel",
            31,
            45,
            tool_attrs(8, "reserve_hotel", {"night": 2}, {"room": 102}, state=sc.STATE_COMPLETED),
        ),
        span(
            9,
            1,
            "execute_tool delete_files",
            62,
            66,
            tool_attrs(9, "delete_files", {"path": "/tmp"}, state=sc.STATE_DENIED),
            events=(permission(63), permission(65, "deny", "Deleting is not allowed")),
        ),
        span(
            10,
            1,
            "execute_tool send_email",
            70,
            80,
            tool_attrs(10, "send_email", {"to": "me"}, {"sent": True}, state=sc.STATE_COMPLETED),
            events=(permission(71), permission(73, "allow", "ok", by="alice")),
        ),
        span(
            11,
            None,
            "invoke_agent planner",
            200,
            300,
            agent_attrs("planner", "Also rent a car", "The car is rented."),
            trace=TRACE_2,
        ),
        span(
            12,
            11,
            "execute_tool rent_car",
            210,
            220,
            tool_attrs(12, "rent_car", {"days": 3}, {"car": "C3"}, state=sc.STATE_COMPLETED),
            trace=TRACE_2,
        ),
        span(
            13,
            11,
            "execute_tool notify",
            230,
            None,
            tool_attrs(13, "notify", {"msg": "car"}),
            trace=TRACE_2,
        ),
    ]


# --- random span forests ---------------------------------------------------------------------------

_ATTR_CHOICES = [
    {},
    {
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
        sc.GEN_AI_TOOL_NAME: "t",
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: "{}",
    },
    {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_CALL_RESULT: "not json"},
    {sc.OPENINFERENCE_SPAN_KIND: "TOOL", sc.OI_TOOL_NAME: "oi", sc.OI_INPUT_VALUE: "[1, 2]"},
    {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_INPUT_MESSAGES: messages("user", "hi")},
    {sc.TOOLSPAN_PLAN_NAME: "p", sc.TOOLSPAN_PARENT_TOOL_CALL_ID: "call_x"},
    {sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT, sc.GEN_AI_OUTPUT_MESSAGES: messages("assistant", "yo")},
    {sc.TRACELOOP_SPAN_KIND: "tool", sc.TRACELOOP_ENTITY_INPUT: '{"args": [], "kwargs": {"a": 1}}'},
]


@st.composite
def span_forests(draw: st.DrawFn) -> tuple[list[Span], int]:
    """Random span records (orphans, cycles, duplicates, missing ends, shuffled) and the number of records
    that must survive coalescing: identical copies collapse, an open copy merges into its completion,
    conflicting copies are all kept."""
    n = draw(st.integers(min_value=0, max_value=14))
    traces = draw(st.lists(st.sampled_from([TRACE_1, TRACE_2]), min_size=n, max_size=n))
    spans: list[Span] = []
    for i in range(n):
        parent = draw(
            st.one_of(st.none(), st.integers(min_value=1, max_value=n + 3))
        )  # may be self/cycle/orphan
        start = draw(st.integers(min_value=0, max_value=50))
        end = draw(st.one_of(st.none(), st.integers(min_value=start - 2, max_value=start + 50)))
        attrs = dict(draw(st.sampled_from(_ATTR_CHOICES)))
        events: tuple[SpanEvent, ...] = ()
        if draw(st.booleans()):
            events = (
                thought(start, "hmm"),
                permission(start),
                permission(start, draw(st.sampled_from(["allow", "deny"]))),
            )
        spans.append(
            span(
                i + 1,
                parent,
                f"s{i}",
                start,
                end,
                attrs,
                trace=traces[i],
                status=draw(st.sampled_from(["UNSET", "OK", "ERROR"])),
                events=events,
            )
        )
    expected = len(spans)
    extra: list[Span] = []
    for original in spans:
        kind = draw(st.sampled_from(["none", "none", "identical", "conflict", "open_copy"]))
        if kind == "identical":
            extra.append(Span(**{**_fields(original), "origin": "copy"}))
        elif kind == "conflict":
            extra.append(Span(**{**_fields(original), "name": original.name + "-other"}))
            expected += 1
        elif kind == "open_copy" and original.end_ns is not None:
            extra.append(Span(**{**_fields(original), "end_ns": None, "attributes": {"act.only": 1}}))
    records = spans + extra
    order = draw(st.permutations(list(range(len(records)))))
    return [records[i] for i in order], expected


def _fields(s: Span) -> dict[str, Any]:
    return {f: getattr(s, f) for f in Span.__dataclass_fields__}
