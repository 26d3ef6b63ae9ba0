"""The trace page's data view (``to_page`` / ``to_pages``)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.bridge_data import (
    MS,
    T0,
    TRACE_1,
    TRACE_2,
    agent_attrs,
    messages,
    permission,
    scenario,
    sid,
    span,
    span_forests,
    thought,
    tool_attrs,
    validate,
)
from toolspan import semconv as sc
from toolspan.bridge.model import SpanEvent
from toolspan.bridge.views import SCHEMA_VERSION, to_page, to_pages
from toolspan.bridge.views.internal import page_head


def _by_label(page: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["label"]: s for s in page["steps"]}


def test_small_trace_exact_document() -> None:
    args = tool_attrs(2, "add", {"a": 1, "b": 2}, 3, state=sc.STATE_COMPLETED, model_id="toolu_1")
    args[sc.GEN_AI_TOOL_DESCRIPTION] = "Add two numbers."
    spans = [
        span(
            1,
            None,
            "invoke_agent calc",
            0,
            10,
            agent_attrs("calc", "1 + 2?", "3"),
            events=(thought(1, "Use add."),),
        ),
        span(2, 1, "execute_tool add", 2, 6, args, events=(permission(3), permission(4, "allow", "fine"))),
    ]
    page = to_page(spans)
    validate("page", page)
    assert page == {
        "schema_version": SCHEMA_VERSION,
        "trace_id": TRACE_1,
        "title": "1 + 2?",  # the run's one name: what the user asked
        "start_time": "2023-11-14T22:13:20.000000Z",
        "start_ms": T0 // MS,
        "duration_us": 10_000,
        "live": False,
        "conversation_id": "conv-1",
        "counts": {"COMPLETED": 2},
        "steps": [
            {
                "id": sid(1),
                "parent": None,
                "kind": "agent",
                "label": "calc",
                "name": "invoke_agent calc",
                "start_us": 0,
                "dur_us": 10_000,
                "state": "COMPLETED",
                "input": "1 + 2?",
                "output": "3",
                "thoughts": [[1000, "Use add."]],
                # The message lists stay: the step's input and output are only their texts.
                "attributes": {
                    sc.GEN_AI_CONVERSATION_ID: "conv-1",
                    sc.GEN_AI_INPUT_MESSAGES: messages("user", "1 + 2?"),
                    sc.GEN_AI_OUTPUT_MESSAGES: messages("assistant", "3"),
                },
                "critical": True,
            },
            {
                "id": sid(2),
                "parent": 0,
                "kind": "tool",
                "label": "add",
                "name": "execute_tool add",
                "start_us": 2000,
                "dur_us": 4000,
                "state": "COMPLETED",
                "execution_id": "exec_" + sid(2),
                "call_id": "toolu_1",
                "input": {"a": 1, "b": 2},
                "output": 3,
                "approvals": [
                    {"t_us": 3000, "decision": None, "note": None, "wait_us": None},
                    {"t_us": 4000, "decision": "allow", "note": "fine", "wait_us": 1000},
                ],
                "wait": [3000, 1000],
                "attributes": {
                    sc.GEN_AI_TOOL_DESCRIPTION: "Add two numbers.",
                    sc.GEN_AI_TOOL_TYPE: "function",
                },
                "critical": True,
            },
        ],
        "conversation": [
            {"type": "user_message", "t_ms": 0, "text": "1 + 2?"},
            {"type": "thought", "t_ms": 1, "text": "Use add."},
            {"type": "tool_call", "t_ms": 2, "step": 1},
            {"type": "tool_result", "t_ms": 6, "step": 1},
            {"type": "assistant_message", "t_ms": 10, "text": "3"},
        ],
    }


def test_scenario_states_errors_links_and_critical_path() -> None:
    pages = to_pages(scenario())
    for page in pages:
        validate("page", page)
    assert [p["trace_id"] for p in pages] == [TRACE_1, TRACE_2]
    first, second = pages
    steps = first["steps"]
    assert [s["label"] for s in steps] == [
        "planner",
        "search_flights",
        "book_trip",
        "booking",
        "booker",
        "check_availability",
        "reserve_hotel",
        "reserve_hotel",
        "delete_files",
        "send_email",
    ]
    assert first["counts"] == {"COMPLETED": 8, "FAILED": 1, "DENIED": 1}
    by = _by_label(first)
    # The sub-plan and the tool that started it point at each other.
    assert by["book_trip"]["subplans"] == [sid(4)]
    assert by["booking"]["from"] == "exec_" + sid(3)
    assert by["booker"].get("from") is None
    assert by["check_availability"]["error"] == {"type": "ValueError", "message": "sold out", "stack": None}
    assert by["delete_files"]["state"] == "DENIED"
    assert by["delete_files"]["error"] == {
        "type": None,
        "message": "Permission denied: Deleting is not allowed",
        "stack": None,
    }
    assert by["delete_files"]["wait"] == [63_000, 2_000]
    # Critical path: planner, then walking back from its end: send_email, delete_files, book_trip (its
    # plan, agent and the hotel that ended last, then check_availability), search_flights.
    critical = [s["label"] + ":" + s["id"][-1] for s in steps if s.get("critical")]
    assert critical == [
        "planner:1",
        "search_flights:2",
        "book_trip:3",
        "booking:4",
        "booker:5",
        "check_availability:6",
        "reserve_hotel:7",
        "delete_files:9",
        "send_email:a",
    ]
    notify = _by_label(second)["notify"]
    assert (notify["state"], notify["dur_us"]) == ("SEALED", None)
    assert second["counts"] == {"COMPLETED": 2, "SEALED": 1}


def test_attributes_keep_everything_the_fields_do_not_show() -> None:
    tool = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
        sc.GEN_AI_TOOL_NAME: "search",
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"q": "a"}',
        sc.OI_INPUT_VALUE: '{"q": "b"}',  # differs from the arguments shown: kept
        sc.OI_INPUT_MIME_TYPE: "application/json",
        sc.GEN_AI_TOOL_CALL_RESULT: "[1]",
        sc.OI_OUTPUT_VALUE: "[1]",  # the same as the result shown: not repeated
        sc.OI_OUTPUT_MIME_TYPE: "application/json",
        sc.OI_TOOL_DESCRIPTION: "OpenInference only",
        sc.TOOLSPAN_TOOL_CALL_ID: "call_x",
        sc.TOOLSPAN_TOOL_STATE: sc.STATE_COMPLETED,
        sc.OPENINFERENCE_SPAN_KIND: "TOOL",
    }
    llm = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
        sc.GEN_AI_INPUT_MESSAGES: messages("user", "hi"),
        sc.GEN_AI_OUTPUT_MESSAGES: messages("assistant", "yo"),
        sc.GEN_AI_REQUEST_MODEL: "m-1",
    }
    plan = {sc.TOOLSPAN_PLAN_NAME: "p", sc.OPENINFERENCE_SPAN_KIND: "CHAIN", "x": 1}
    tool_step, llm_step, plan_step = to_page(
        [
            span(1, None, "execute_tool search", 0, 5, tool),
            span(2, None, "chat m-1", 6, 8, llm),
            span(3, None, "plan p", 9, 10, plan),
        ]
    )["steps"]
    assert tool_step["input"] == {"q": "a"}
    assert tool_step["output"] == [1]
    assert tool_step["attributes"] == {
        sc.OI_INPUT_VALUE: '{"q": "b"}',
        sc.OI_INPUT_MIME_TYPE: "application/json",
        sc.OI_TOOL_DESCRIPTION: "OpenInference only",
    }
    assert (llm_step["kind"], llm_step["input"], llm_step["output"]) == (
        "llm",
        [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}],
        [{"role": "assistant", "parts": [{"type": "text", "content": "yo"}]}],
    )
    assert llm_step["attributes"] == {sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT, sc.GEN_AI_REQUEST_MODEL: "m-1"}
    assert plan_step["attributes"] == {"x": 1}


def test_live_pages_show_running_and_awaiting_approval() -> None:
    spans = [
        span(1, None, "invoke_agent a", 0, None, agent_attrs("a", "go", None)),
        span(2, 1, "execute_tool slow", 1, None, tool_attrs(2, "slow", {})),
        span(3, 1, "execute_tool risky", 2, None, tool_attrs(3, "risky", {}), events=(permission(3),)),
    ]
    live = _by_label(to_page(spans, live=True))
    assert [live[n]["state"] for n in ("a", "slow", "risky")] == ["RUNNING", "RUNNING", "AWAITING_APPROVAL"]
    assert live["risky"]["wait"] == [3000, None]
    done = _by_label(to_page(spans))
    assert [done[n]["state"] for n in ("a", "slow", "risky")] == ["SEALED", "SEALED", "SEALED"]


def test_truncated_values_and_extra_events_are_marked() -> None:
    attrs = tool_attrs(1, "big", {"text": "abc...[truncated 99 chars]"}, {"ok": True})
    attrs["custom.key"] = 7
    other = SpanEvent("retry", T0 + 1 * MS, {"attempt": 2})
    step = to_page([span(1, None, "execute_tool big", 0, 2, attrs, events=(other,))])["steps"][0]
    assert step["truncated"] is True
    assert step["events"] == [[1000, "retry", {"attempt": 2}]]
    assert step["attributes"] == {sc.GEN_AI_TOOL_TYPE: "function", "custom.key": 7}
    plain = to_page([span(1, None, "execute_tool t", 0, 2, tool_attrs(1, "t", {"a": 1}))])["steps"][0]
    assert "truncated" not in plain


def test_subplan_in_another_trace_links_across_pages() -> None:
    spans = [
        span(1, None, "execute_tool research", 0, 50, tool_attrs(1, "research", {"q": "x"}, "done")),
        span(
            2,
            None,
            "plan sub",
            5,
            40,
            {sc.TOOLSPAN_PLAN_NAME: "sub", sc.TOOLSPAN_PARENT_EXECUTION_ID: "exec_" + sid(1)},
            trace=TRACE_2,
        ),
    ]
    first, second = to_pages(spans)
    assert first["steps"][0]["subplans"] == [sid(2)]
    assert second["steps"][0]["from"] == "exec_" + sid(1)


def test_to_page_rejects_several_traces_and_accepts_none() -> None:
    with pytest.raises(ValueError, match="2 traces"):
        to_page(scenario())
    empty = to_page([])
    validate("page", empty)
    assert (empty["steps"], empty["trace_id"], empty["counts"]) == ([], "", {})


def test_no_conversation_without_a_conversation_id() -> None:
    page = to_page([span(1, None, "execute_tool t", 0, 2, tool_attrs(1, "t", {}))])
    assert (page["conversation_id"], page["conversation"]) == (None, [])


@settings(max_examples=60, deadline=None)
@given(span_forests())
def test_any_forest_is_valid_deterministic_and_keeps_every_record(data: tuple[list[Any], int]) -> None:
    spans, survivors = data
    pages = to_pages(spans)
    for page in pages:
        validate("page", page)
        for i, step in enumerate(page["steps"]):
            assert step["parent"] is None or 0 <= step["parent"] < len(page["steps"])
            assert step["parent"] != i
    assert sum(len(p["steps"]) for p in pages) == survivors
    shuffled = list(spans)
    random.Random(7).shuffle(shuffled)
    assert to_pages(shuffled) == pages


def test_deeply_nested_values_are_read_and_marked() -> None:
    """JSON text up to 256 levels deep is read as its value; deeper, it stays the text it is, whatever the
    depth of the caller's stack (one answer for every view: the page, its HTML, the CLI)."""
    for levels, shown in ((256, list), (257, str), (900, str)):
        attrs = tool_attrs(1, "deep", {})
        attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = "[" * levels + '"x...[truncated 5 chars]"' + "]" * levels
        step = to_page([span(1, None, "execute_tool deep", 0, 1, attrs)])["steps"][0]
        assert type(step["input"]) is shown
        assert step["truncated"] is True
        depth, value = 0, step["input"]
        while isinstance(value, list):
            depth, value = depth + 1, value[0]
        if shown is list:
            assert (depth, value) == (levels, "x...[truncated 5 chars]")


def test_approvals_say_who_decided_when_recorded() -> None:
    decided = SpanEvent(
        sc.PERMISSION_DECIDED_EVENT,
        T0 + 3 * MS,
        {sc.PERMISSION_DECISION: "deny", sc.PERMISSION_NOTE: "no", sc.PERMISSION_DECIDED_BY: "policy"},
    )
    events = (permission(1), decided)
    page = to_page([span(1, None, "execute_tool risky", 0, 4, tool_attrs(1, "risky", {}), events=events)])
    validate("page", page)
    assert page["steps"][0]["approvals"] == [
        {"t_us": 1000, "decision": None, "note": None, "wait_us": None},
        {"t_us": 3000, "decision": "deny", "note": "no", "wait_us": 2000, "by": "policy"},
    ]


# What only the whole trace says of a step: a first screen (``page_head``) leaves it out.
_WHOLE_TRACE_FLAGS = ("critical", "orphan", "cycle", "subplans", "from")


def _stored(spans: list[Any]) -> list[Any]:
    """The records of one trace as a store holds them (one per span id), in start order (the store's)."""
    kept = {s.span_id: s for s in spans if s.trace_id == TRACE_1}
    return sorted(kept.values(), key=lambda s: (s.start_ns, s.span_id))


@settings(max_examples=100, deadline=None)
@given(span_forests(), st.integers(min_value=1, max_value=20))
def test_a_first_screen_is_the_first_steps_of_the_whole_page(data: tuple[list[Any], int], cut: int) -> None:
    """``page_head`` of a trace's first records gives the whole document's first steps, each with the fields
    its own span gives (a parent among those records at the same index), and leaves out what only the
    whole trace says; in any order of its input."""
    records = _stored(data[0])
    if not records:
        return
    whole = to_page(records, live=True)
    first = records[:cut]
    # The trace's last recorded time (an end before its start counts as the start), as its summary holds it.
    last = max(max(s.start_ns, s.end_ns or 0) for s in records)
    head = page_head(first, live=True, end_ns=last)
    shuffled = list(first)
    random.Random(3).shuffle(shuffled)
    assert page_head(shuffled, live=True, end_ns=last) == head
    validate("page", head)
    assert head["partial"] is True
    assert (head["counts"], head["conversation_id"], head["conversation"]) == ({}, None, [])
    assert head["duration_us"] == whole["duration_us"]
    assert len(head["steps"]) == len(first)
    for i, (shown, step) in enumerate(zip(head["steps"], whole["steps"], strict=False)):
        expected = {k: v for k, v in step.items() if k not in _WHOLE_TRACE_FLAGS}
        # A parent that starts after its child is not among the first records yet: no parent so far.
        p = step["parent"]
        expected["parent"] = p if p is None or p < len(first) else None
        if step.get("cycle"):
            # The whole trace cut this record's link to break a cycle, which the first records may not
            # close: so far its parent is the one it recorded (if among them), or none where they do.
            ids = [r.span_id for r in first]
            recorded = first[i].parent_span_id
            assert shown["parent"] in {None, ids.index(recorded) if recorded in ids else None}, i
            expected["parent"] = shown["parent"]
        assert shown == expected, i
        assert not set(_WHOLE_TRACE_FLAGS) & set(shown)


def test_page_head_takes_the_first_records_of_one_trace_only() -> None:
    with pytest.raises(ValueError, match="2 traces"):
        page_head([span(1, None, "a", 0, 1, {}), span(2, None, "b", 0, 1, {}, trace=TRACE_2)])
    empty = page_head([])
    validate("page", empty)
    assert empty["steps"] == []
    assert empty["partial"] is True


def test_a_page_reads_each_tool_call_once_for_its_steps_and_links(monkeypatch: pytest.MonkeyPatch) -> None:
    # The steps show a call as it recorded it; the conversation links the same records: one read for both.
    from toolspan.bridge import link
    from toolspan.bridge.facts import TOOL, classify, tool_call
    from toolspan.bridge.views import _common, _page

    spans = scenario()
    read: list[str] = []

    def counting(record: Any) -> Any:
        read.append(record.span_id)
        return tool_call(record)

    for module in (link, _common, _page):  # wherever the page and the linking could read a call
        monkeypatch.setattr(module, "tool_call", counting, raising=False)
    pages = to_pages(spans)
    tools = [s.span_id for s in spans if classify(s) == TOOL]
    assert sorted(read) == sorted(tools)
    assert len(set(read)) == len(read) > 0
    monkeypatch.undo()
    assert pages == to_pages(spans)
