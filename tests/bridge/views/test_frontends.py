"""The AG-UI and AI SDK UI message stream views: valid against the protocols' own models, the corpus's tool
calls intact, hostile text carried as data, and the run structure both protocols' clients require."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ag_ui.core import Event
from pydantic import TypeAdapter

from tests.support.bridge_data import scenario, validate
from tests.support.corpus import NO_MESSAGES, REDACTED_ERRORS, SETUPS, expected_calls
from tests.support.corpus import spans as corpus_spans
from tests.support.corpus import truth as corpus_truth
from tests.support.page_data import hostile_payloads, hostile_run
from toolspan.bridge.views import messages_snapshot, to_ag_ui, to_ai_sdk

FRAMEWORKS = sorted(SETUPS)
_EVENT = TypeAdapter(Event)


def check_ag_ui(events: list[dict[str, Any]]) -> None:
    """Every event parses as an ``ag-ui-protocol`` model and says nothing those models do not know (the
    models keep unknown fields, so a round trip that changes nothing is the check), and passes the
    package's schema."""
    for event in events:
        model = _EVENT.validate_python(event)
        assert model.model_dump(mode="json", by_alias=True) == event
        validate("ag-ui", event)


def check_run_structure(events: list[dict[str, Any]]) -> None:
    """What the AG-UI client's verifier enforces: runs do not overlap, messages, tool calls and steps open
    and close inside their run."""
    run = None
    messages: set[str] = set()
    calls: set[str] = set()
    steps: set[str] = set()
    for event in events:
        kind = event["type"]
        if kind == "RUN_STARTED":
            assert run is None
            run = event["runId"]
            continue
        assert run is not None, event
        if kind in ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START"):
            assert event["messageId"] not in messages
            messages.add(event["messageId"])
        elif kind in ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"):
            assert event["messageId"] in messages
        elif kind in ("TEXT_MESSAGE_END", "REASONING_MESSAGE_END"):
            messages.remove(event["messageId"])
        elif kind == "TOOL_CALL_START":
            calls.add(event["toolCallId"])
        elif kind in ("TOOL_CALL_ARGS",):
            assert event["toolCallId"] in calls
        elif kind == "TOOL_CALL_END":
            calls.remove(event["toolCallId"])
        elif kind == "STEP_STARTED":
            assert event["stepName"] not in steps
            steps.add(event["stepName"])
        elif kind == "STEP_FINISHED":
            steps.remove(event["stepName"])
        elif kind in ("RUN_FINISHED", "RUN_ERROR"):
            if kind == "RUN_FINISHED":
                assert (messages, calls, steps) == (set(), set(), set())
            run = None
            messages, calls, steps = set(), set(), set()
    assert run is None


def _corpus_spans(framework: str, encoding: str) -> list[Any]:
    return corpus_spans(framework, f"traces.{encoding}")


def _truth(framework: str, spans: list[Any]) -> dict[str, Any]:
    """The ground truth, each call with the id every view must give it."""
    return {**corpus_truth(framework), "tool_calls": expected_calls(framework, spans)}


def test_the_scenario_is_valid_ag_ui_and_ai_sdk() -> None:
    events = to_ag_ui(scenario())
    check_ag_ui(events)
    check_run_structure(events)
    assert [e["type"] for e in events].count("RUN_STARTED") == 2
    for chunk in to_ai_sdk(scenario()):
        validate("ai-sdk", chunk)


def test_the_views_are_deterministic_and_ignore_input_order() -> None:
    spans = scenario()
    assert to_ag_ui(spans) == to_ag_ui(list(reversed(spans)))
    assert to_ai_sdk(spans) == to_ai_sdk(list(reversed(spans)))


def test_tool_calls_carry_the_asking_message_and_results_their_errors() -> None:
    events = to_ag_ui(scenario())
    results = {e["toolCallId"]: e for e in events if e["type"] == "TOOL_CALL_RESULT"}
    assert results["toolu_01"]["content"] == '{"flights":["AF1"]}'
    assert results["toolu_01"]["metadata"]["toolspan"]["isError"] is False
    failed = results["call_0000000000000006"]
    assert (failed["content"], failed["metadata"]["toolspan"]["state"]) == ("ValueError: sold out", "FAILED")
    denied = results["call_0000000000000009"]["metadata"]["toolspan"]["state"]
    assert denied == "DENIED"
    approvals = [e["value"] for e in events if e["type"] == "CUSTOM"]
    assert [(a["toolCallId"], a["decision"]) for a in approvals] == [
        ("call_0000000000000009", None),
        ("call_0000000000000009", "deny"),
        ("call_000000000000000a", None),
        ("call_000000000000000a", "allow"),
    ]
    # The second turn left a tool running: the run is interrupted, the tool sealed.
    assert (events[-1]["type"], events[-1]["code"]) == ("RUN_ERROR", "interrupted")
    assert results["call_000000000000000d"]["metadata"]["toolspan"]["state"] == "SEALED"
    chunks = to_ai_sdk(scenario())
    assert {"type": "tool-output-denied", "toolCallId": "call_0000000000000009"} in chunks
    assert chunks[-1] == {"type": "abort", "reason": "the run was interrupted before it ended"}


def test_a_run_waiting_for_approval_ends_with_an_interrupt_outcome() -> None:
    spans = [s for s in scenario() if s.trace_id.endswith("2")]
    from dataclasses import replace

    from toolspan import semconv as sc
    from toolspan.bridge.model import SpanEvent

    waiting = []
    for s in spans:
        changed = s
        if s.name.endswith("notify"):
            changed = replace(s, events=(SpanEvent(sc.PERMISSION_REQUIRED_EVENT, s.start_ns + 1, {}),))
        if s.parent_span_id is None:
            changed = replace(changed, end_ns=None)
        waiting.append(changed)
    events = to_ag_ui(waiting)
    check_ag_ui(events)
    end = events[-1]
    assert end["type"] == "RUN_FINISHED"
    assert end["outcome"]["type"] == "interrupt"
    assert [i["toolCallId"] for i in end["outcome"]["interrupts"]] == ["call_000000000000000d"]
    assert not any(e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"].endswith("d") for e in events)
    chunks = to_ai_sdk(waiting)
    assert chunks[-1] == {"type": "finish", "finishReason": "other"}
    assert any(c["type"] == "tool-approval-request" for c in chunks)


@pytest.mark.parametrize("encoding", ["jsonl", "pb"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_framework_converts_with_its_tool_calls_intact(framework: str, encoding: str) -> None:
    spans = _corpus_spans(framework, encoding)
    truth = _truth(framework, spans)
    events = to_ag_ui(spans)
    check_ag_ui(events)
    check_run_structure(events)
    starts = {e["toolCallId"]: e for e in events if e["type"] == "TOOL_CALL_START"}
    args = {e["toolCallId"]: json.loads(e["delta"]) for e in events if e["type"] == "TOOL_CALL_ARGS"}
    results = {e["toolCallId"]: e for e in events if e["type"] == "TOOL_CALL_RESULT"}
    chunks = to_ai_sdk(spans)
    for chunk in chunks:
        validate("ai-sdk", chunk)
    inputs = {c["toolCallId"]: c for c in chunks if c["type"] == "tool-input-available"}
    outputs = {c["toolCallId"]: c for c in chunks if c["type"].startswith("tool-output-")}
    expected_ids = [t["call_id"] for t in truth["tool_calls"]]
    assert sorted(starts) == sorted(inputs) == sorted(results) == sorted(outputs) == expected_ids
    for expected in truth["tool_calls"]:
        call = expected["call_id"]
        assert starts[call]["toolCallName"] == inputs[call]["toolName"] == expected["name"]
        assert args[call] == inputs[call]["input"] == expected["arguments"]
        assert starts[call]["parentMessageId"].startswith("msg-")  # the model call that asked for it
        if expected["error"] is None:
            assert results[call]["metadata"]["toolspan"]["isError"] is False
            assert outputs[call]["output"] == expected["result"]
            expected_text = expected["result"]
            if not isinstance(expected_text, str):
                assert json.loads(results[call]["content"]) == expected_text
            else:
                assert results[call]["content"] == expected_text
        else:
            assert results[call]["metadata"]["toolspan"]["isError"] is True
            assert outputs[call]["type"] == "tool-output-error"
            if framework not in REDACTED_ERRORS:
                assert expected["error"]["message"] in results[call]["content"]
                assert expected["error"]["message"] in outputs[call]["errorText"]
    if framework in NO_MESSAGES:  # no message in the trace: none made up
        assert [e for e in events if e["type"].startswith("TEXT_MESSAGE")] == []
    else:  # the user's request opens the conversation
        user = next(e for e in events if e["type"] == "TEXT_MESSAGE_START")
        assert user["role"] == "user"
        content = next(e for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert content["delta"] == truth["user_request"]
    snapshot = messages_snapshot(events)
    tool_messages = {m["toolCallId"] for m in snapshot if m["role"] == "tool"}
    assert sorted(tool_messages) == expected_ids


def test_hostile_text_passes_through_both_views_as_data() -> None:
    payloads = hostile_payloads()
    spans = hostile_run(payloads)
    events = to_ag_ui(spans)
    check_ag_ui(events)
    check_run_structure(events)
    results = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    names = [e["toolCallName"] for e in events if e["type"] == "TOOL_CALL_START"]
    args = [json.loads(e["delta"]) for e in events if e["type"] == "TOOL_CALL_ARGS"]
    thoughts = [e["delta"] for e in events if e["type"] == "REASONING_MESSAGE_CONTENT"]
    users = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert names == payloads
    assert args == [{p: p} for p in payloads]
    errors = [f"{p}: {p}" for p in payloads]  # exception type and message, each the payload
    assert [r["content"] for r in results] == errors
    assert thoughts == payloads
    assert users == [p for p in payloads for _ in (0, 1)]  # the question and the answer of each turn
    chunks = to_ai_sdk(spans)
    for chunk in chunks:
        validate("ai-sdk", chunk)
    assert [c["toolName"] for c in chunks if c["type"] == "tool-input-available"] == payloads
    assert [c["errorText"] for c in chunks if c["type"] == "tool-output-error"] == errors
    assert [c["messageMetadata"]["userMessage"] for c in chunks if c["type"] == "start"] == payloads


def test_a_record_is_unplaced_while_its_line_of_parents_is_cut_below_any_agent() -> None:
    """What a live AG-UI or AI SDK stream waits on: a span whose agent may still be on its way."""
    from tests.support.bridge_data import agent_attrs, span, tool_attrs
    from toolspan.bridge.views._common import TraceIndex

    spans = [
        span(1, None, "invoke_agent a", 0, 9, agent_attrs("a", "hi", None)),
        span(2, 1, "execute_tool t", 1, 2, tool_attrs(2, "t", {}, "ok")),  # under its agent
        span(3, 99, "execute_tool t", 1, 2, tool_attrs(3, "t", {}, "ok")),  # its parent not here
        span(4, 98, "step", 1, 5, {}),  # a plain span whose parent is not here ...
        span(5, 4, "execute_tool t", 2, 3, tool_attrs(5, "t", {}, "ok")),  # ... and a tool under it
        span(6, 97, "invoke_agent b", 1, 5, agent_attrs("b", "hi", None)),  # an agent, parent elsewhere
        span(7, 6, "execute_tool t", 2, 3, tool_attrs(7, "t", {}, "ok")),  # under that agent
        span(8, None, "execute_tool t", 1, 2, tool_attrs(8, "t", {}, "ok")),  # a root of its own
    ]
    index = TraceIndex(spans)
    by_id = {span.span_id: index.unplaced(i) for i, span in enumerate(spans)}
    assert [by_id[s.span_id] for s in spans] == [False, False, True, True, True, True, False, False]
