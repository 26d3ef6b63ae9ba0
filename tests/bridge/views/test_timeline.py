"""Conversation timelines (seed 002)."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings

from tests.support.bridge_data import (
    GENAI_FIXTURE,
    T0,
    TRACE_1,
    TRACE_2,
    agent_attrs,
    scenario,
    sid,
    span,
    span_forests,
    thought,
    tool_attrs,
    validate,
)
from toolspan import semconv as sc
from toolspan.bridge.facts import TOOL, classify
from toolspan.bridge.model import SpanEvent
from toolspan.bridge.views import SCHEMA_VERSION, to_timelines

MS0 = T0 // 1_000_000


def test_small_turn_exact_document() -> None:
    attrs = agent_attrs("a", "What is 2+2?", "4")
    spans = [
        span(1, None, "invoke_agent a", 0, 10, attrs, events=(thought(1, "Use the calculator."),)),
        span(2, 1, "execute_tool add", 2, 4, tool_attrs(2, "add", {"a": 2, "b": 2}, 4, state="COMPLETED")),
    ]
    assert to_timelines(spans) == [
        {
            "schema_version": SCHEMA_VERSION,
            "conversationId": "conv-1",
            "timeline": [
                {
                    "id": "user_message-1",
                    "type": "user_message",
                    "sequenceNumber": 1,
                    "timestamp": MS0,
                    "content": "What is 2+2?",
                },
                {
                    "id": "thought-2",
                    "type": "thought",
                    "sequenceNumber": 2,
                    "timestamp": MS0 + 1,
                    "content": "Use the calculator.",
                },
                {
                    "id": "act-3",
                    "type": "tool_call",
                    "sequenceNumber": 3,
                    "timestamp": MS0 + 2,
                    "toolName": "add",
                    "toolInput": {"a": 2, "b": 2},
                    "execution_id": "exec_" + sid(2),
                    "call_id": "call_" + sid(2),
                    "requested_by": None,
                },
                {
                    "id": "observe-4",
                    "type": "tool_result",
                    "sequenceNumber": 4,
                    "timestamp": MS0 + 4,
                    "toolName": "add",
                    "toolOutput": 4,
                    "isError": False,
                    "execution_id": "exec_" + sid(2),
                    "call_id": "call_" + sid(2),
                    "requested_by": None,
                },
                {
                    "id": "assistant_message-5",
                    "type": "assistant_message",
                    "sequenceNumber": 5,
                    "timestamp": MS0 + 10,
                    "content": "4",
                },
            ],
            "total": 5,
        }
    ]


def test_scenario_two_turns_one_conversation() -> None:
    docs = to_timelines(scenario())
    assert len(docs) == 1
    doc = docs[0]
    validate("timeline", doc)
    assert doc["conversationId"] == "conv-1"
    items = doc["timeline"]
    assert (
        [it["sequenceNumber"] for it in items]
        == list(range(1, len(items) + 1))
        == list(range(1, doc["total"] + 1))
    )
    assert [(it["type"], it.get("content") or it.get("toolName")) for it in items] == [
        ("user_message", "Plan a trip to Paris"),
        ("thought", "Search flights first, then book."),
        ("tool_call", "search_flights"),
        ("tool_result", "search_flights"),
        ("tool_call", "book_trip"),
        ("thought", "Check availability, then reserve two hotels in parallel."),
        ("tool_call", "check_availability"),
        ("tool_result", "check_availability"),
        ("tool_call", "reserve_hotel"),
        ("tool_call", "reserve_hotel"),
        ("tool_result", "reserve_hotel"),
        ("tool_result", "reserve_hotel"),
        ("tool_result", "book_trip"),
        ("tool_call", "delete_files"),
        ("tool_result", "delete_files"),
        ("tool_call", "send_email"),
        ("tool_result", "send_email"),
        ("assistant_message", "Your trip is booked."),
        # turn 2
        ("user_message", "Also rent a car"),
        ("tool_call", "rent_car"),
        ("tool_result", "rent_car"),
        ("tool_call", "notify"),  # never ended: no result
        ("assistant_message", "The car is rented."),
    ]
    failed = items[7]
    assert (failed["isError"], failed["toolOutput"]) == (True, {"error": "ValueError: sold out"})
    assert [it["id"] for it in items[:4]] == ["user_message-1", "thought-2", "act-3", "observe-4"]
    # The sub-agent "booker" contributes its thought and tools but no user/assistant messages.
    assert "Book flight AF1 and a hotel" not in [it.get("content") for it in items]


def test_traces_without_conversation_id_are_their_own_conversations() -> None:
    a = span(1, None, "execute_tool x", 50, 60, tool_attrs(1, "x", {}), trace=TRACE_1)
    b = span(2, None, "execute_tool y", 0, 10, tool_attrs(2, "y", {}), trace=TRACE_2)
    docs = to_timelines([a, b])
    assert [(d["conversationId"], d["total"]) for d in docs] == [(TRACE_2, 2), (TRACE_1, 2)]
    for d in docs:
        validate("timeline", d)


def test_openinference_session_id_groups_traces() -> None:
    a = span(
        1,
        None,
        "agent",
        0,
        10,
        {sc.OPENINFERENCE_SPAN_KIND: "AGENT", sc.OI_SESSION_ID: "s", sc.OI_INPUT_VALUE: "hi"},
    )
    b = span(
        2,
        None,
        "agent",
        20,
        30,
        {sc.OPENINFERENCE_SPAN_KIND: "AGENT", sc.OI_SESSION_ID: "s", sc.OI_OUTPUT_VALUE: "bye"},
        trace=TRACE_2,
    )
    (doc,) = to_timelines([b, a])
    assert [(it["type"], it["content"]) for it in doc["timeline"]] == [
        ("user_message", "hi"),
        ("assistant_message", "bye"),
    ]


def test_streaming_deltas_never_appear() -> None:
    attrs = agent_attrs("a", "q", "full answer")
    attrs[sc.TOOLSPAN_STREAM_TEXT] = "full answer"
    deltas = tuple(
        SpanEvent(name, T0 + 2_000_000, {"delta": "tok"}) for name in ("text_start", "text_delta", "text_end")
    )
    spans = [span(1, None, "invoke_agent a", 0, 10, attrs, events=deltas)]
    (doc,) = to_timelines(spans)
    assert [it["type"] for it in doc["timeline"]] == ["user_message", "assistant_message"]


def test_jaeger_agent_fixture_messages_from_llm_spans() -> None:
    from toolspan.bridge.readers import read_spans

    spans, _ = read_spans([str(GENAI_FIXTURE)])
    (doc,) = to_timelines(spans)
    validate("timeline", doc)
    items = doc["timeline"]
    assert doc["conversationId"] == "4a1b2c3d4e5f60718293a4b5c6d7e8f9"
    assert items[0]["type"] == "user_message"
    assert items[0]["content"] == "Why did the checkout latency regress this afternoon?"
    assert items[-1] == {
        "id": f"assistant_message-{len(items)}",
        "type": "assistant_message",
        "sequenceNumber": len(items),
        "timestamp": 1770000042004,
        "content": "Latency rose with a slow pod rollout. Checking the dashboards and traces now.",
    }
    assert sum(it["type"] == "tool_call" for it in items) == 7
    assert sum(it["type"] == "tool_result" for it in items) == 7


@settings(max_examples=80, deadline=None)
@given(span_forests())
def test_random_forests_timeline_keeps_every_tool_call(data: tuple[list[Any], int]) -> None:
    spans, _ = data
    from toolspan.bridge._coalesce import coalesce

    tools = [s for s in coalesce(spans) if classify(s) == TOOL]
    docs = to_timelines(spans)
    for d in docs:
        validate("timeline", d)
        assert [it["sequenceNumber"] for it in d["timeline"]] == list(range(1, d["total"] + 1))
    calls = [it for d in docs for it in d["timeline"] if it["type"] == "tool_call"]
    assert len(calls) == len(tools)
    shuffled = list(spans)
    random.Random(3).shuffle(shuffled)
    assert to_timelines(shuffled) == docs
