"""Progress / control / monitor envelopes (seed 003)."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings

from tests.support.bridge_data import (
    GENAI_FIXTURE,
    T0,
    scenario,
    sid,
    span,
    span_forests,
    tool_attrs,
    validate,
)
from toolspan import semconv as sc
from toolspan.bridge._coalesce import coalesce
from toolspan.bridge.facts import TOOL, classify
from toolspan.bridge.views import SCHEMA_VERSION, to_progress
from toolspan.bridge.views.internal import AUTO_SEAL_RESULT

MS0 = T0 // 1_000_000


def _brief(envelopes: list[dict[str, Any]], monitor: bool = False) -> list[tuple[Any, ...]]:
    """Each envelope in brief (the agent's ``state_changed`` and ``error`` reports with ``monitor`` only)."""
    out = []
    for env in envelopes:
        ev = env["event"]
        if not monitor and ev["type"] in ("state_changed", "error"):
            continue
        call = ev.get("call") or {}
        if ev["type"] == "state_changed":  # the agent's state: from -> to in the name's place
            call = {"name": f"{ev['from']}->{ev['to']}"}
        elif ev["type"] == "error":  # a classified error: its phase and severity in the name's place
            call = {"name": f"{ev['phase']}:{ev['severity']}"}
        out.append(
            (
                env["channel"],
                ev["type"],
                call.get("name"),
                call.get("state"),
                ev.get("decision"),
                ev.get("reason"),
            )
        )
    return out


def test_scenario_envelopes() -> None:
    envelopes = to_progress(scenario())
    for env in envelopes:
        validate("progress", env)
        assert env["schema_version"] == SCHEMA_VERSION
        assert env["event"]["channel"] == env["channel"]
    assert [e["bookmark"]["seq"] for e in envelopes] == list(range(1, len(envelopes) + 1))
    stamps = [e["bookmark"]["timestamp"] for e in envelopes]
    assert stamps == sorted(stamps)
    assert _brief(envelopes, monitor=True) == [
        ("monitor", "state_changed", "READY->WORKING", None, None, None),
        ("progress", "tool:start", "search_flights", "RUNNING", None, None),
        ("progress", "tool:end", "search_flights", "COMPLETED", None, None),
        ("monitor", "tool_executed", "search_flights", "COMPLETED", None, None),
        ("progress", "tool:start", "book_trip", "RUNNING", None, None),
        ("progress", "tool:start", "check_availability", "RUNNING", None, None),
        ("progress", "tool:error", "check_availability", "FAILED", None, None),
        ("progress", "tool:end", "check_availability", "FAILED", None, None),
        ("monitor", "tool_executed", "check_availability", "FAILED", None, None),
        ("monitor", "error", "tool:error", None, None, None),
        ("progress", "tool:start", "reserve_hotel", "RUNNING", None, None),
        ("progress", "tool:start", "reserve_hotel", "RUNNING", None, None),
        ("progress", "tool:end", "reserve_hotel", "COMPLETED", None, None),
        ("monitor", "tool_executed", "reserve_hotel", "COMPLETED", None, None),
        ("progress", "tool:end", "reserve_hotel", "COMPLETED", None, None),
        ("monitor", "tool_executed", "reserve_hotel", "COMPLETED", None, None),
        ("progress", "tool:end", "book_trip", "COMPLETED", None, None),
        ("monitor", "tool_executed", "book_trip", "COMPLETED", None, None),
        ("control", "permission_required", "delete_files", "AWAITING_APPROVAL", None, None),
        ("monitor", "state_changed", "WORKING->PAUSED", None, None, None),  # paused for the approval
        ("control", "permission_decided", None, None, "deny", None),
        ("monitor", "state_changed", "PAUSED->WORKING", None, None, None),
        ("progress", "tool:end", "delete_files", "DENIED", None, None),  # denied: never started
        ("monitor", "tool_executed", "delete_files", "DENIED", None, None),
        ("control", "permission_required", "send_email", "AWAITING_APPROVAL", None, None),
        ("monitor", "state_changed", "WORKING->PAUSED", None, None, None),
        ("control", "permission_decided", None, None, "allow", None),
        ("monitor", "state_changed", "PAUSED->WORKING", None, None, None),
        ("progress", "tool:start", "send_email", "RUNNING", None, None),  # starts once allowed
        ("progress", "tool:end", "send_email", "COMPLETED", None, None),
        ("monitor", "tool_executed", "send_email", "COMPLETED", None, None),
        ("monitor", "state_changed", "WORKING->READY", None, None, None),
        ("progress", "done", None, None, None, "completed"),
        ("monitor", "state_changed", "READY->WORKING", None, None, None),
        ("progress", "tool:start", "rent_car", "RUNNING", None, None),
        ("progress", "tool:end", "rent_car", "COMPLETED", None, None),
        ("monitor", "tool_executed", "rent_car", "COMPLETED", None, None),
        ("progress", "tool:start", "notify", "RUNNING", None, None),
        ("progress", "tool:end", "notify", "SEALED", None, None),
        ("monitor", "state_changed", "WORKING->READY", None, None, None),
        ("progress", "done", None, None, None, "interrupted"),
    ]
    by_seq = {e["bookmark"]["seq"]: e for e in envelopes}
    assert by_seq[33]["event"] == {"type": "done", "step": 7, "reason": "completed", "channel": "progress"}
    assert by_seq[7]["event"]["error"] == "ValueError: sold out"
    assert by_seq[10]["event"] == {
        "type": "error",
        "phase": "tool",
        "severity": "error",
        "message": "ValueError: sold out",
        "callId": "call_" + sid(6),
        "execution_id": "exec_" + sid(6),
        "channel": "monitor",
    }
    decided = by_seq[27]
    assert decided == {
        "schema_version": SCHEMA_VERSION,
        "channel": "control",
        "event": {
            "type": "permission_decided",
            "callId": "call_" + sid(10),
            "decision": "allow",
            "note": "ok",
            "decidedAt": MS0 + 73,
            "by": "alice",
            "latencyMs": 2,  # from its permission_required at +71 ms (the event records no latency)
            "arguments": None,
            "channel": "control",
        },
        "bookmark": {"seq": 27, "timestamp": MS0 + 73},
    }
    assert by_seq[29]["bookmark"]["timestamp"] == MS0 + 73
    waiting = by_seq[25]["event"]["call"]
    assert (waiting["state"], waiting["approval"]) == (
        "AWAITING_APPROVAL",
        {
            "required": True,
            "decision": None,
            "note": None,
            "decidedAt": None,
            "by": None,
            "latencyMs": None,
            "arguments": None,
        },
    )
    executed = by_seq[31]["event"]["call"]
    assert executed == {
        "id": "call_" + sid(10),
        "name": "send_email",
        "state": "COMPLETED",
        "execution_id": "exec_" + sid(10),
        "requested_by": None,
        "inputPreview": {"to": "me"},
        "startedAt": MS0 + 70,
        "completedAt": MS0 + 80,
        "durationMs": 10,
        "result": {"sent": True},
        "error": None,
        "isError": False,
        "approval": {
            "required": True,
            "decision": "allow",
            "note": "ok",
            "decidedAt": MS0 + 73,
            "by": "alice",
            "latencyMs": 2,
            "arguments": None,
        },
    }


def test_sealed_call_carries_the_auto_seal_payload() -> None:
    spans = [
        span(1, None, "invoke_agent a", 0, None, {sc.GEN_AI_OPERATION_NAME: "invoke_agent"}),
        span(2, 1, "execute_tool slow", 3, None, tool_attrs(2, "slow", {"x": 1})),
    ]
    envelopes = to_progress(spans)
    for env in envelopes:
        validate("progress", env)
    assert _brief(envelopes) == [
        ("progress", "tool:start", "slow", "RUNNING", None, None),
        ("progress", "tool:end", "slow", "SEALED", None, None),
        ("progress", "done", None, None, None, "interrupted"),
    ]
    (call,) = [e["event"]["call"] for e in envelopes if e["event"]["type"] == "tool:end"]
    assert (
        call["result"]
        == AUTO_SEAL_RESULT
        == {
            "ok": False,
            "error": (
                "The session was interrupted while the tool was running; the call was sealed automatically."
            ),
            "recommendations": [
                "Check for side effects the tool may have caused",
                "Confirm the state of external systems before retrying",
            ],
            "_autoSealed": True,
        }
    )
    assert (call["isError"], call["completedAt"], call["durationMs"]) == (True, None, None)


def test_trace_without_agents_gets_one_done() -> None:
    spans = [span(1, None, "execute_tool t", 0, 4, tool_attrs(1, "t", {}, 1))]
    assert _brief(to_progress(spans))[-1] == ("progress", "done", None, None, None, "completed")
    assert to_progress(spans)[-1]["event"]["step"] == 1


def test_cancelled_call_has_no_tool_error() -> None:
    attrs = tool_attrs(1, "t", {})
    attrs[sc.ERROR_TYPE] = "CancelledError"
    attrs[sc.TOOLSPAN_TOOL_STATE] = "CANCELLED"
    types = [
        (e["event"]["type"], (e["event"].get("call") or {}).get("state"))
        for e in to_progress([span(1, None, "execute_tool t", 0, 4, attrs)])
    ]
    # No tool:error and no monitor error either: a cancellation is not a failure.
    assert types == [
        ("state_changed", None),
        ("tool:start", "RUNNING"),
        ("tool:end", "CANCELLED"),
        ("tool_executed", "CANCELLED"),
        ("state_changed", None),
        ("done", None),
    ]


def test_jaeger_fixture_progress() -> None:
    from toolspan.bridge.readers import read_spans

    spans, _ = read_spans([str(GENAI_FIXTURE)])
    envelopes = to_progress(spans)
    for env in envelopes:
        validate("progress", env)
    kinds = [e["event"]["type"] for e in envelopes]
    assert (kinds.count("tool:start"), kinds.count("tool:end"), kinds.count("tool_executed")) == (7, 7, 7)
    assert kinds[-1] == "done"
    assert envelopes[-1]["event"]["step"] == 7


@settings(max_examples=80, deadline=None)
@given(span_forests())
def test_random_forests_one_tool_end_per_call_and_monotonic_seq(data: tuple[list[Any], int]) -> None:
    spans, _ = data
    tools = [s for s in coalesce(spans) if classify(s) == TOOL]
    envelopes = to_progress(spans)
    for env in envelopes:
        validate("progress", env)
    assert [e["bookmark"]["seq"] for e in envelopes] == list(range(1, len(envelopes) + 1))
    ends = [e for e in envelopes if e["event"]["type"] == "tool:end"]
    assert len(ends) == len(tools)
    assert sum(e["event"]["call"]["state"] == "SEALED" for e in ends) == sum(s.end_ns is None for s in tools)
    shuffled = list(spans)
    random.Random(11).shuffle(shuffled)
    assert to_progress(shuffled) == envelopes


def test_who_decided_the_wait_the_reason_and_both_argument_versions() -> None:
    import toolspan
    from toolspan.bridge.readers import from_readable_spans
    from toolspan.testing import capture_spans

    def transfer(amount: int, to: str) -> str:
        """Move money."""
        return f"{amount} to {to}"

    approval = toolspan.Approval(
        "allow", note="capped", by="alice", arguments={"amount": 100, "to": "acct-1"}
    )
    call = {
        "type": "tool_use",
        "id": "toolu_t",
        "name": "transfer",
        "input": {"amount": 5000, "to": "acct-1"},
    }
    with capture_spans() as finished:
        toolspan.run_tool_calls([call], [transfer], approve=lambda c: approval)
        (tool,) = finished()
    latency = dict(tool.events[1].attributes or {})[sc.PERMISSION_LATENCY_MS]
    envelopes = to_progress(from_readable_spans([tool]))
    for env in envelopes:
        validate("progress", env)
    (decided,) = [e["event"] for e in envelopes if e["event"]["type"] == "permission_decided"]
    assert {k: v for k, v in decided.items() if k != "decidedAt"} == {
        "type": "permission_decided",
        "channel": "control",
        "callId": "toolu_t",
        "decision": "allow",
        "note": "capped",
        "by": "alice",
        "latencyMs": latency,
        "arguments": {"amount": 100, "to": "acct-1"},
    }
    (executed,) = [e["event"]["call"] for e in envelopes if e["event"]["type"] == "tool_executed"]
    # What the body received, marked edited, with the model's own beside it.
    assert executed["inputPreview"] == {"amount": 100, "to": "acct-1"}
    assert executed["edited"] == {
        "by": "alice",
        "at": decided["decidedAt"],
        "modelInput": {"amount": 5000, "to": "acct-1"},
    }
    assert executed["result"] == "100 to acct-1"
    assert executed["approval"] == {
        "required": True,
        "decision": "allow",
        "note": "capped",
        "decidedAt": decided["decidedAt"],
        "by": "alice",
        "latencyMs": latency,
        "arguments": {"amount": 100, "to": "acct-1"},
    }


def test_a_call_still_waiting_for_its_decision_has_not_started() -> None:
    from tests.support.bridge_data import permission

    agent = span(1, None, "invoke_agent a", 0, 10, {sc.GEN_AI_OPERATION_NAME: "invoke_agent"})

    def brief(*marks: Any) -> list[tuple[str, Any]]:
        tool = span(2, 1, "execute_tool rm", 0, None, tool_attrs(2, "rm", {"p": "/"}), events=marks)
        envelopes = to_progress([agent, tool])
        return [
            (e["event"]["type"], (e["event"].get("call") or {}).get("state") or e["event"].get("to"))
            for e in envelopes
        ]

    assert brief(permission(1)) == [
        ("state_changed", "WORKING"),
        ("permission_required", "AWAITING_APPROVAL"),
        ("state_changed", "PAUSED"),  # the agent waits for the decision
        ("tool:end", "SEALED"),  # read as a finished trace: the call never ended
        ("state_changed", "READY"),
        ("done", None),
    ]
    assert brief(permission(1), permission(2, "allow")) == [
        ("state_changed", "WORKING"),
        ("permission_required", "AWAITING_APPROVAL"),
        ("state_changed", "PAUSED"),
        ("permission_decided", None),
        ("state_changed", "WORKING"),
        ("tool:start", "RUNNING"),
        ("tool:end", "SEALED"),
        ("state_changed", "READY"),
        ("done", None),
    ]


def test_a_failed_model_call_and_a_failed_turn_are_monitor_errors() -> None:
    agent = span(
        1,
        None,
        "invoke_agent a",
        0,
        20,
        {sc.GEN_AI_OPERATION_NAME: "invoke_agent"},
        status="ERROR",
        status_message="RuntimeError: gave up",
    )
    model = span(
        2,
        1,
        "chat gpt-4o",
        1,
        5,
        {sc.GEN_AI_OPERATION_NAME: "chat"},
        status="ERROR",
        status_message="RateLimitError: slow down",
    )
    envelopes = to_progress([agent, model])
    for env in envelopes:
        validate("progress", env)
    events = [e["event"] for e in envelopes]
    assert [(e["type"], e.get("phase"), e.get("message")) for e in events] == [
        ("state_changed", None, None),
        ("error", "model", "RateLimitError: slow down"),
        ("error", "system", "RuntimeError: gave up"),
        ("state_changed", None, None),
        ("done", None, None),
    ]
    assert {e["severity"] for e in events if e["type"] == "error"} == {"error"}
    assert events[-1]["reason"] == "interrupted"
