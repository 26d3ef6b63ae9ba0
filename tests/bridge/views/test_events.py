"""Act/observe events (seed 000) and their pairing."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings

from tests.support.bridge_data import (
    GENAI_FIXTURE,
    T0,
    TRACE_1,
    scenario,
    sid,
    span,
    span_forests,
    tool_attrs,
    validate,
)
from toolspan import semconv as sc
from toolspan.bridge.facts import TOOL, classify
from toolspan.bridge.model import SpanEvent
from toolspan.bridge.views import SCHEMA_VERSION, act_event, match_observe, observe_event, to_events


def test_act_event_exact_on_a_span_that_has_not_ended() -> None:
    s = span(3, 1, "execute_tool search", 2, None, tool_attrs(3, "search", {"q": "x"}, model_id="toolu_1"))
    event = act_event(s)
    assert event == {
        "schema_version": SCHEMA_VERSION,
        "type": "act",
        "execution_id": "exec_" + sid(3),
        "tool_name": "search",
        "call_id": "toolu_1",
        "tool_input": {"q": "x"},
        "status": "running",
        "timestamp": T0 // 1_000_000 + 2,
        "trace_id": TRACE_1,
        "span_id": sid(3),
        "requested_by": None,
    }
    validate("events", event)
    with pytest.raises(ValueError, match="has not ended"):
        observe_event(s)


def test_observe_event_exact_success_and_failure() -> None:
    ok = span(
        3, 1, "execute_tool search", 2, 9, tool_attrs(3, "search", {"q": "x"}, [1, 2], state="COMPLETED")
    )
    assert observe_event(ok) == {
        "schema_version": SCHEMA_VERSION,
        "type": "observe",
        "execution_id": "exec_" + sid(3),
        "tool_name": "search",
        "call_id": "call_" + sid(3),
        "observation": [1, 2],
        "duration_ms": 7,
        "is_error": False,
        "state": "COMPLETED",
        "timestamp": T0 // 1_000_000 + 9,
        "trace_id": TRACE_1,
        "span_id": sid(3),
        "requested_by": None,
    }
    exc = SpanEvent(sc.EXCEPTION_EVENT, T0, {sc.EXCEPTION_TYPE: "ValueError", sc.EXCEPTION_MESSAGE: "bad"})
    failed = span(4, 1, "execute_tool parse", 2, 3, tool_attrs(4, "parse", {}), status="ERROR", events=(exc,))
    event = observe_event(failed)
    assert (event["observation"], event["is_error"], event["state"], event["duration_ms"]) == (
        {"error": "ValueError: bad"},
        True,
        "FAILED",
        1,
    )
    for e in (observe_event(ok), event):
        validate("events", e)


def test_act_without_recorded_arguments_has_empty_input() -> None:
    s = span(
        3, None, "execute_tool t", 0, 1, {sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_TOOL_NAME: "t"}
    )
    assert act_event(s)["tool_input"] == {}


def test_to_events_scenario_order_and_sealed_act_only() -> None:
    events = to_events(scenario())
    for e in events:
        validate("events", e)
    summary = [(e["type"], e["tool_name"], e["timestamp"] - T0 // 1_000_000) for e in events]
    assert summary == [
        ("act", "search_flights", 2),
        ("observe", "search_flights", 10),
        ("act", "book_trip", 12),
        ("act", "check_availability", 20),
        ("observe", "check_availability", 25),
        ("act", "reserve_hotel", 30),
        ("act", "reserve_hotel", 31),
        ("observe", "reserve_hotel", 45),
        ("observe", "reserve_hotel", 50),
        ("observe", "book_trip", 60),
        ("act", "delete_files", 62),
        ("observe", "delete_files", 66),
        ("act", "send_email", 70),
        ("observe", "send_email", 80),
        ("act", "rent_car", 210),
        ("observe", "rent_car", 220),
        ("act", "notify", 230),  # never ended: its act only
    ]
    denied = next(e for e in events if e["type"] == "observe" and e["tool_name"] == "delete_files")
    assert (denied["state"], denied["is_error"], denied["observation"]) == (
        "DENIED",
        True,
        {"error": "Permission denied: Deleting is not allowed"},
    )


def test_zero_length_call_act_before_its_observe_and_ties_deterministic() -> None:
    a = span(1, None, "execute_tool a", 5, 5, tool_attrs(1, "a", {}))
    b = span(2, None, "execute_tool b", 0, 5, tool_attrs(2, "b", {}))
    c = span(3, None, "execute_tool c", 5, 9, tool_attrs(3, "c", {}))
    events = to_events([c, a, b])
    assert [(e["type"], e["tool_name"]) for e in events] == [
        ("act", "b"),
        ("observe", "b"),  # ended at 5 after taking time: before the acts at 5
        ("act", "a"),
        ("act", "c"),
        ("observe", "a"),  # zero-length: after its own act
        ("observe", "c"),
    ]


def test_match_observe_by_execution_id_with_parallel_calls() -> None:
    events = to_events(scenario())
    pairs = match_observe(events)
    assert len(pairs) == 9
    for act, observe in pairs:
        if act["tool_name"] == "notify":
            assert observe is None
        else:
            assert observe is not None
            assert (observe["execution_id"], observe["call_id"], observe["tool_name"]) == (
                act["execution_id"],
                act["call_id"],
                act["tool_name"],
            )
    hotels = [(a["span_id"], o["span_id"]) for a, o in pairs if a["tool_name"] == "reserve_hotel" and o]
    assert hotels == [(sid(7), sid(7)), (sid(8), sid(8))]


def test_match_observe_legacy_by_tool_name_only_without_ids() -> None:
    legacy: list[dict[str, Any]] = [
        {"type": "user_message"},
        {"type": "act", "toolName": "MemorySearch"},
        {"type": "observe", "toolName": "Other"},
        {"type": "observe", "toolName": "MemorySearch", "n": 1},
        {"type": "act", "tool_name": "Web"},
        {"type": "observe", "tool_name": "Web", "execution_id": "exec_x"},  # has an id: no name fallback
        {"type": "act", "tool_name": "Late"},
        {"type": "user_message"},
        {"type": "observe", "tool_name": "Late"},  # beyond the next user_message: not searched
    ]
    pairs = match_observe(legacy)
    assert [(a.get("toolName", a.get("tool_name")), o) for a, o in pairs] == [
        ("MemorySearch", legacy[3]),
        ("Web", None),
        ("Late", None),
    ]
    # An act with an id never falls back to the name.
    with_id = [
        {"type": "act", "tool_name": "t", "execution_id": "exec_1"},
        {"type": "observe", "tool_name": "t"},
    ]
    assert match_observe(with_id) == [(with_id[0], None)]


def test_jaeger_agent_fixture_act_observe_pairs() -> None:
    from toolspan.bridge.readers import read_spans

    spans, _report = read_spans([str(GENAI_FIXTURE)])
    events = to_events(spans)
    for e in events:
        validate("events", e)
    pairs = match_observe(events)
    got = [
        (a["tool_name"], a["call_id"], a["span_id"][-2:], o["span_id"][-2:] if o else None) for a, o in pairs
    ]
    assert got == [
        ("list_dashboards", "call_list_dashboards", "07", "07"),
        ("search_traces", "call_search_traces", "0c", "0c"),
        ("list_dashboards", "call_list_dashboards", "16", "16"),
        ("search_traces", "call_search_traces", "1b", "1b"),
        ("list_dashboards", "call_list_dashboards", "25", "25"),
        ("search_traces", "call_search_traces", "2a", "2a"),
        ("summarize_findings", "call_0000000000000032", "32", "32"),
    ]
    first_act, first_observe = pairs[0]
    assert first_act["tool_input"] == {"window": "1h"}
    assert first_observe is not None
    assert (first_observe["observation"], first_observe["duration_ms"], first_observe["is_error"]) == (
        {"status": "ok", "rows": 12},
        900,
        False,
    )


@settings(max_examples=80, deadline=None)
@given(span_forests())
def test_random_forests_never_lose_a_tool_call(data: tuple[list[Any], int]) -> None:
    spans, _expected = data
    from toolspan.bridge._coalesce import coalesce

    tools = [s for s in coalesce(spans) if classify(s) == TOOL]
    events = to_events(spans)
    for e in events:
        validate("events", e)
    assert sum(e["type"] == "act" for e in events) == len(tools)
    assert sum(e["type"] == "observe" for e in events) == sum(s.end_ns is not None for s in tools)
    shuffled = list(spans)
    random.Random(len(spans)).shuffle(shuffled)
    assert to_events(shuffled) == events


def test_load_schema_ships_every_schema_as_package_data() -> None:
    from toolspan.bridge.views import SCHEMA_NAMES, load_schema

    for name in SCHEMA_NAMES:
        schema = load_schema(name)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"].endswith(f"/{name}.schema.json")
    load_schema("events")["mutated"] = True
    assert "mutated" not in load_schema("events")
    with pytest.raises(ValueError, match="unknown schema"):
        load_schema("nope")


def test_an_act_says_whether_the_call_waits_for_its_approval_or_was_denied() -> None:
    def asked(*marks: SpanEvent, end: int | None = None) -> dict[str, Any]:
        tool = span(2, None, "execute_tool rm", 0, end, tool_attrs(2, "rm", {"p": "/"}), events=marks)
        (act,) = [e for e in to_events([tool]) if e["type"] == "act"]
        assert act == {**act_event(tool), "requested_by": act["requested_by"]}  # live and file acts agree
        validate("events", act)
        return act

    required = SpanEvent(sc.PERMISSION_REQUIRED_EVENT, T0 + 1, {})
    allow = SpanEvent(sc.PERMISSION_DECIDED_EVENT, T0 + 2, {sc.PERMISSION_DECISION: "allow"})
    deny = SpanEvent(sc.PERMISSION_DECIDED_EVENT, T0 + 2, {sc.PERMISSION_DECISION: "deny"})
    assert asked()["status"] == "running"
    assert asked(required)["status"] == "awaiting_approval"
    assert asked(required, allow)["status"] == "running"
    assert asked(required, deny)["status"] == "denied"
    assert asked(required, deny, end=T0 + 3)["status"] == "denied"
    assert asked(required, allow, end=T0 + 3)["status"] == "running"
