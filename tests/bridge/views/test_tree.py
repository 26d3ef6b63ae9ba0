"""Execution tree and trace document (seed 004)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings

from tests.support.bridge_data import (
    FIXTURES,
    GENAI_FIXTURE,
    TRACE_1,
    TRACE_2,
    scenario,
    sid,
    span,
    span_forests,
    tool_attrs,
    validate,
)
from toolspan import semconv as sc
from toolspan.bridge._coalesce import coalesce
from toolspan.bridge.views import SCHEMA_VERSION, to_tree, to_trees


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    stack = list(reversed(node["children"]))
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n["children"]))
    return out


def _shape(node: dict[str, Any]) -> list[Any]:
    return [node["type"], node.get("name", "job"), [_shape(c) for c in node["children"]]]


def test_small_trace_exact_document() -> None:
    spans = [
        span(
            1,
            None,
            "invoke_agent a",
            0,
            10,
            {sc.GEN_AI_OPERATION_NAME: "invoke_agent", sc.GEN_AI_AGENT_NAME: "a"},
        ),
        span(2, 1, "execute_tool add", 2, 4, tool_attrs(2, "add", {"a": 1}, 2, state="COMPLETED")),
    ]
    tool_node = {
        "span_id": sid(2),
        "parent_id": sid(1),
        "type": "tool",
        "node_id": sid(1),
        "tool_name": "add",
        "start_time": "2023-11-14T22:13:20.002000Z",
        "end_time": "2023-11-14T22:13:20.004000Z",
        "step_index": 3,
        "input": {"a": 1},
        "output": 2,
        "payload_summary": None,
        "name": "execute_tool add",
        "kind": "tool",
        "children": [],
        "execution_id": "exec_" + sid(2),
        "call_id": "call_" + sid(2),
        "requested_by": None,
        "state": "COMPLETED",
        "is_error": False,
    }
    agent_node = {
        "span_id": sid(1),
        "parent_id": "root",
        "type": "node",
        "node_id": sid(1),
        "tool_name": None,
        "start_time": "2023-11-14T22:13:20.000000Z",
        "end_time": "2023-11-14T22:13:20.010000Z",
        "step_index": 2,
        "input": None,
        "output": None,
        "payload_summary": None,
        "name": "invoke_agent a",
        "kind": "agent",
        "children": [tool_node],
    }
    assert to_tree(spans) == {
        "schema_version": SCHEMA_VERSION,
        "job_id": TRACE_1,
        "timeline": [
            {
                "type": "job_created",
                "created_at": "2023-11-14T22:13:20.000000Z",
                "payload": {"goal": None, "step_index": 1},
            },
            {
                "type": "node_started",
                "created_at": "2023-11-14T22:13:20.000000Z",
                "payload": {
                    "trace_span_id": sid(1),
                    "parent_span_id": "root",
                    "node_id": sid(1),
                    "name": "invoke_agent a",
                    "step_index": 2,
                },
            },
            {
                "type": "tool_called",
                "created_at": "2023-11-14T22:13:20.002000Z",
                "payload": {
                    "trace_span_id": sid(2),
                    "parent_span_id": sid(1),
                    "node_id": sid(1),
                    "tool_name": "add",
                    "execution_id": "exec_" + sid(2),
                    "call_id": "call_" + sid(2),
                    "requested_by": None,
                    "input": {"a": 1},
                    "step_index": 3,
                },
            },
            {
                "type": "tool_returned",
                "created_at": "2023-11-14T22:13:20.004000Z",
                "payload": {
                    "trace_span_id": sid(2),
                    "parent_span_id": sid(1),
                    "node_id": sid(1),
                    "tool_name": "add",
                    "execution_id": "exec_" + sid(2),
                    "call_id": "call_" + sid(2),
                    "requested_by": None,
                    "output": 2,
                    "is_error": False,
                    "step_index": 4,
                },
            },
            {
                "type": "node_finished",
                "created_at": "2023-11-14T22:13:20.010000Z",
                "payload": {
                    "trace_span_id": sid(1),
                    "parent_span_id": "root",
                    "node_id": sid(1),
                    "name": "invoke_agent a",
                    "payload_results": None,
                    "status": "UNSET",
                    "step_index": 5,
                },
            },
            {
                "type": "job_completed",
                "created_at": "2023-11-14T22:13:20.010000Z",
                "payload": {"goal": None, "parent_span_id": "root", "step_index": 6},
            },
        ],
        "node_durations": [
            {
                "node_id": sid(1),
                "started_at": "2023-11-14T22:13:20.000000Z",
                "finished_at": "2023-11-14T22:13:20.010000Z",
                "duration_ms": 10,
            },
        ],
        "execution_tree": {
            "span_id": "root",
            "parent_id": None,
            "type": "job",
            "node_id": None,
            "tool_name": None,
            "start_time": "2023-11-14T22:13:20.000000Z",
            "end_time": "2023-11-14T22:13:20.010000Z",
            "step_index": 1,
            "input": None,
            "output": None,
            "payload_summary": None,
            "children": [agent_node],
        },
    }


def test_scenario_tree_shape_and_failed_tool() -> None:
    docs = to_trees(scenario())
    assert [d["job_id"] for d in docs] == [TRACE_1, TRACE_2]
    for d in docs:
        validate("tree", d)
    first = docs[0]
    assert _shape(first["execution_tree"]) == [
        "job",
        "job",
        [
            [
                "node",
                "invoke_agent planner",
                [
                    ["tool", "execute_tool search_flights", []],
                    [
                        "tool",
                        "execute_tool book_trip",
                        [
                            [
                                "plan",
                                "plan booking",
                                [
                                    [
                                        "node",
                                        "invoke_agent booker",
                                        [
                                            ["tool", "execute_tool check_availability", []],
                                            ["tool", "execute_tool reserve_hotel", []],
                                            ["tool", "execute_tool reserve_hotel", []],
                                        ],
                                    ],
                                ],
                            ],
                        ],
                    ],
                    ["tool", "execute_tool delete_files", []],
                    ["tool", "execute_tool send_email", []],
                ],
            ],
        ],
    ]
    failed = next(n for n in _nodes(first["execution_tree"]) if n.get("tool_name") == "check_availability")
    assert (failed["node_id"], failed["output"], failed["state"]) == (
        sid(5),
        {"error": "ValueError: sold out"},
        "FAILED",
    )
    assert [e["type"] for e in first["timeline"]][-1] == "job_completed"
    # Turn 2 has a call that never ended: no terminal job event, no end time.
    second = docs[1]
    assert second["timeline"][-1]["type"] != "job_completed"
    assert second["execution_tree"]["end_time"] is None
    sealed = next(n for n in _nodes(second["execution_tree"]) if n.get("tool_name") == "notify")
    assert (sealed["end_time"], sealed["state"]) == (None, "SEALED")
    # step_index points at the node's start event in the timeline.
    for node in _nodes(first["execution_tree"]):
        event = first["timeline"][node["step_index"] - 1]
        assert event["payload"]["trace_span_id"] == node["span_id"]


def test_job_failed_when_a_top_level_span_failed() -> None:
    spans = [
        span(
            1,
            None,
            "invoke_agent a",
            0,
            5,
            {sc.GEN_AI_OPERATION_NAME: "invoke_agent"},
            status="ERROR",
            status_message="boom",
        )
    ]
    doc = to_tree(spans)
    assert doc["timeline"][-1] == {
        "type": "job_failed",
        "created_at": "2023-11-14T22:13:20.005000Z",
        "payload": {"goal": None, "error": "boom", "parent_span_id": "root", "step_index": 4},
    }


def test_to_tree_rejects_several_traces_and_handles_none() -> None:
    with pytest.raises(ValueError, match="to_trees"):
        to_tree(scenario())
    empty = to_tree([])
    validate("tree", empty)
    assert (empty["job_id"], empty["execution_tree"]["children"], empty["node_durations"]) == ("", [], [])


def test_orphan_cycle_duplicate_and_early_child_flags() -> None:
    spans = [
        span(1, None, "root", 10, 20, {}),
        span(2, 99, "orphan", 11, 12, {}),  # parent 99 not in the trace
        span(3, 4, "cycle-a", 13, 14, {}),
        span(4, 3, "cycle-b", 15, 16, {}),
        span(5, 1, "early", 5, 6, {}),  # starts before its parent
        span(6, 1, "dup", 17, 18, {}),
        span(6, 1, "dup-conflicting", 17, 19, {}),
        span(7, 7, "self", 18, 19, {}),
    ]
    doc = to_tree(spans)
    validate("tree", doc)
    flags = {
        n["name"]: {k: n[k] for k in ("orphan", "cycle", "duplicate", "starts_before_parent") if k in n}
        for n in _nodes(doc["execution_tree"])
    }
    assert flags == {
        "root": {},
        "orphan": {"orphan": True},
        "cycle-a": {"cycle": True},
        "cycle-b": {},
        "early": {"starts_before_parent": True},
        "dup": {},
        "dup-conflicting": {"duplicate": True},
        "self": {"cycle": True},
    }
    top = [n["name"] for n in doc["execution_tree"]["children"]]
    assert top == ["root", "orphan", "cycle-a", "self"]
    assert len(_nodes(doc["execution_tree"])) == len(spans)


def test_jaeger_fixtures_tree() -> None:
    from toolspan.bridge.readers import read_spans

    spans, _ = read_spans([str(GENAI_FIXTURE)])
    doc = to_tree(spans)
    validate("tree", doc)
    nodes = _nodes(doc["execution_tree"])
    assert len(nodes) == 57
    agent = next(n for n in nodes if n["name"] == "invoke_agent triage-agent")
    assert [(c["type"], c["name"]) for c in agent["children"]] == [
        ("node", "chat model-a"),
        ("tool", "execute_tool list_dashboards"),
        ("tool", "execute_tool search_traces"),
        ("node", "retrieval vector-search"),
        ("node", "chat model-a"),
        ("tool", "execute_tool list_dashboards"),
        ("tool", "execute_tool search_traces"),
        ("node", "retrieval vector-search"),
        ("node", "chat model-a"),
        ("tool", "execute_tool list_dashboards"),
        ("tool", "execute_tool search_traces"),
        ("node", "retrieval vector-search"),
        ("tool", "execute_tool summarize_findings"),
        ("node", "chat model-a"),
    ]
    summarize = agent["children"][12]
    mcp = summarize["children"][0]
    assert (mcp["type"], mcp["name"], summarize["node_id"]) == (
        "node",
        "POST /mcp/tools/call",
        agent["span_id"],
    )
    assert [c["name"] for c in mcp["children"]] == ["GET /validate", "invoke_agent summarizer"]
    cycle, _ = read_spans([str(FIXTURES / "jaeger" / "v1_ui_edge_parent_cycle.json")])
    cdoc = to_tree(cycle)
    assert [(n["name"], n.get("cycle", False)) for n in _nodes(cdoc["execution_tree"])] == [
        ("someOperationName", True),
        ("anotherOperationName", False),
    ]


def _count(node: dict[str, Any]) -> int:
    return len(_nodes(node))


@settings(max_examples=100, deadline=None)
@given(span_forests())
def test_random_forests_every_record_is_one_node(data: tuple[list[Any], int]) -> None:
    spans, expected = data
    assert len(coalesce(spans)) == expected
    docs = to_trees(spans)
    for d in docs:
        validate("tree", d)
    assert sum(_count(d["execution_tree"]) for d in docs) == expected
    shuffled = list(spans)
    random.Random(5).shuffle(shuffled)
    assert to_trees(shuffled) == docs
