"""Plan hierarchy (seed 001)."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings

from tests.support.bridge_data import (
    GENAI_FIXTURE,
    TRACE_1,
    TRACE_2,
    scenario,
    sid,
    span,
    span_forests,
    thought,
    tool_attrs,
    validate,
)
from toolspan import semconv as sc
from toolspan.bridge._coalesce import coalesce
from toolspan.bridge.facts import AGENT, classify
from toolspan.bridge.views import SCHEMA_VERSION, to_plans


def test_scenario_plans_sub_plan_and_synthetic_roots() -> None:
    doc = to_plans(scenario())
    validate("plans", doc)
    assert doc["schema_version"] == SCHEMA_VERSION
    plans = doc["plans"]
    root1, sub, root2 = plans
    assert {
        k: root1[k]
        for k in (
            "currentPlanId",
            "rootPlanId",
            "parentPlanId",
            "toolCallId",
            "parentActToolCall",
            "title",
            "userRequest",
            "summary",
            "completed",
            "synthetic",
            "span_id",
        )
    } == {
        "currentPlanId": "plan_" + TRACE_1,
        "rootPlanId": "plan_" + TRACE_1,
        "parentPlanId": None,
        "toolCallId": None,
        "parentActToolCall": None,
        "title": "planner",
        "userRequest": "Plan a trip to Paris",
        "summary": "Your trip is booked.",
        "completed": True,
        "synthetic": True,
        "span_id": None,
    }
    assert {
        k: sub[k]
        for k in (
            "currentPlanId",
            "rootPlanId",
            "parentPlanId",
            "toolCallId",
            "parentActToolCall",
            "title",
            "startTime",
            "endTime",
            "completed",
            "synthetic",
        )
    } == {
        "currentPlanId": "plan_" + sid(4),
        "rootPlanId": "plan_" + TRACE_1,
        "parentPlanId": "plan_" + TRACE_1,
        "toolCallId": "call_" + sid(3),
        "parentActToolCall": {
            "toolCallId": "call_" + sid(3),
            "name": "book_trip",
            "parameters": '{"flight": "AF1"}',
            "result": "booked",
        },
        "title": "booking",
        "startTime": "2023-11-14T22:13:20.013000Z",
        "endTime": "2023-11-14T22:13:20.059000Z",
        "completed": True,
        "synthetic": False,
    }
    (booker,) = sub["agentExecutionSequence"]
    assert booker == {
        "id": sid(5),
        "agentName": "booker",
        "agentDescription": None,
        "agentRequest": "Book flight AF1 and a hotel",
        "result": "Flight booked, hotel reserved twice",
        "status": "FINISHED",
        "errorMessage": None,
        "startTime": "2023-11-14T22:13:20.014000Z",
        "endTime": "2023-11-14T22:13:20.058000Z",
        "thinkActSteps": [
            {
                "id": sid(5) + "-1",
                "thinkOutput": "Check availability, then reserve two hotels in parallel.",
                "actToolInfoList": [
                    {
                        "toolCallId": "call_" + sid(6),
                        "name": "check_availability",
                        "parameters": '{"flight": "AF1"}',
                        "result": "ValueError: sold out",
                        "executionId": "exec_" + sid(6),
                        "requestedBy": None,
                        "state": "FAILED",
                    },
                    {
                        "toolCallId": "call_" + sid(7),
                        "name": "reserve_hotel",
                        "parameters": '{"night": 1}',
                        "result": '{"room": 101}',
                        "executionId": "exec_" + sid(7),
                        "requestedBy": None,
                        "state": "COMPLETED",
                    },
                    {
                        "toolCallId": "call_" + sid(8),
                        "name": "reserve_hotel",
                        "parameters": '{"night": 2}',
                        "result": '{"room": 102}',
                        "executionId": "exec_" + sid(8),
                        "requestedBy": None,
                        "state": "COMPLETED",
                    },
                ],
            }
        ],
    }
    (planner,) = root1["agentExecutionSequence"]
    assert [[t["name"] for t in step["actToolInfoList"]] for step in planner["thinkActSteps"]] == [
        ["search_flights", "book_trip", "delete_files", "send_email"]
    ]
    assert planner["thinkActSteps"][0]["actToolInfoList"][0]["toolCallId"] == "toolu_01"
    assert (root2["currentPlanId"], root2["title"], root2["userRequest"]) == (
        "plan_" + TRACE_2,
        "planner",
        "Also rent a car",
    )
    sealed = root2["agentExecutionSequence"][0]["thinkActSteps"][0]["actToolInfoList"][1]
    assert (sealed["name"], sealed["result"], sealed["state"]) == ("notify", None, "SEALED")


def test_steps_split_on_llm_calls_and_thoughts() -> None:
    agent = {sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.GEN_AI_AGENT_NAME: "a"}
    chat = {sc.GEN_AI_OPERATION_NAME: "chat"}
    spans = [
        span(1, None, "invoke_agent a", 0, 100, agent, events=(thought(30, "second thought"),)),
        span(2, 1, "execute_tool early", 1, 2, tool_attrs(2, "early", {})),  # before any think: own step
        span(3, 1, "chat", 5, 6, chat),
        span(4, 1, "execute_tool x", 10, 20, tool_attrs(4, "x", {})),
        span(5, 1, "execute_tool y", 11, 21, tool_attrs(5, "y", {})),  # parallel: same step
        span(6, 1, "execute_tool z", 40, 41, tool_attrs(6, "z", {})),
        span(7, 1, "chat", 50, 60, chat),  # a final think without tools
    ]
    (plan,) = to_plans(spans)["plans"]
    steps = plan["agentExecutionSequence"][0]["thinkActSteps"]
    assert [(s["id"], s["thinkOutput"], [t["name"] for t in s["actToolInfoList"]]) for s in steps] == [
        (sid(1) + "-1", None, ["early"]),
        (sid(1) + "-2", None, ["x", "y"]),
        (sid(1) + "-3", "second thought", ["z"]),
        (sid(1) + "-4", None, []),
    ]


def test_plan_spans_without_agents_and_cross_trace_sub_plan() -> None:
    top = span(1, None, "plan top", 0, 50, {sc.TOOLSPAN_PLAN_NAME: "top"})
    agent = span(2, 1, "invoke_agent a", 1, 49, {sc.GEN_AI_OPERATION_NAME: "invoke_agent"})
    tool = span(3, 2, "execute_tool spawn", 2, 10, tool_attrs(3, "spawn", {"n": 1}, "ok"))
    # A sub-plan in another trace, linked to its tool only by the toolspan.parent.* attributes.
    remote = span(
        9,
        None,
        "plan remote",
        5,
        8,
        {
            sc.TOOLSPAN_PLAN_NAME: "remote",
            sc.TOOLSPAN_PARENT_EXECUTION_ID: "exec_" + sid(3),
            sc.TOOLSPAN_PARENT_TOOL_CALL_ID: "call_" + sid(3),
        },
        trace=TRACE_2,
    )
    doc = to_plans([remote, tool, agent, top])
    validate("plans", doc)
    got = [
        (
            p["currentPlanId"],
            p["parentPlanId"],
            p["rootPlanId"],
            p["toolCallId"],
            len(p["agentExecutionSequence"]),
        )
        for p in doc["plans"]
    ]
    assert got == [
        ("plan_" + sid(1), None, "plan_" + sid(1), None, 1),
        ("plan_" + sid(9), "plan_" + sid(1), "plan_" + sid(1), "call_" + sid(3), 0),
    ]


def test_duplicate_plan_records_get_their_own_ids_and_no_agent_twice() -> None:
    # Two records of plan span 9 with different content (found by the property test below).
    plan = {sc.TOOLSPAN_PLAN_NAME: "p"}
    first = span(9, None, "plan p", 0, None, plan)
    second = span(9, None, "plan p-other", 0, None, plan)
    agent = span(7, 9, "invoke_agent a", 1, None, {sc.GEN_AI_OPERATION_NAME: "invoke_agent"})
    doc = to_plans([second, agent, first])
    validate("plans", doc)
    got = [(p["currentPlanId"], [a["id"] for a in p["agentExecutionSequence"]]) for p in doc["plans"]]
    assert sorted(got) == [("plan_" + sid(9), [sid(7)]), ("plan_" + sid(9) + "-2", [])]


def test_jaeger_fixture_gets_one_synthetic_plan() -> None:
    from toolspan.bridge.readers import read_spans

    spans, _ = read_spans([str(GENAI_FIXTURE)])
    doc = to_plans(spans)
    validate("plans", doc)
    (plan,) = doc["plans"]
    assert (plan["synthetic"], plan["title"]) == (True, "triage-agent")
    names = [a["agentName"] for a in plan["agentExecutionSequence"]]
    assert names == ["triage-agent", "summarizer"]
    tools = [
        t["name"] for s in plan["agentExecutionSequence"][0]["thinkActSteps"] for t in s["actToolInfoList"]
    ]
    assert tools == ["list_dashboards", "search_traces"] * 3 + ["summarize_findings"]


@settings(max_examples=80, deadline=None)
@given(span_forests())
def test_random_forests_every_agent_in_one_plan(data: tuple[list[Any], int]) -> None:
    spans, _ = data
    agents = [s for s in coalesce(spans) if classify(s) == AGENT]
    doc = to_plans(spans)
    validate("plans", doc)
    placed = [a["id"] for p in doc["plans"] for a in p["agentExecutionSequence"]]
    assert sorted(placed) == sorted(a.span_id for a in agents)
    shuffled = list(spans)
    random.Random(7).shuffle(shuffled)
    assert to_plans(shuffled) == doc
