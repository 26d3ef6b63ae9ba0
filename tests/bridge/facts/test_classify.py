"""Recognition of tool/agent/plan/LLM spans across conventions, and tool call extraction."""

from __future__ import annotations

import json

import pytest

from tests.support.bridge_data import GENAI_FIXTURE, T0, sid, span, tool_attrs
from toolspan import semconv as sc
from toolspan.bridge import facts as cl
from toolspan.bridge import internal
from toolspan.bridge.model import Span, SpanEvent


def _span(attrs: dict[str, object], name: str = "op", **kw: object) -> Span:
    return span(7, None, name, 0, 5, attrs, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("attrs", "name", "kind"),
    [
        ({sc.GEN_AI_OPERATION_NAME: "execute_tool"}, "x", cl.TOOL),
        ({sc.GEN_AI_OPERATION_NAME: "invoke_agent"}, "x", cl.AGENT),
        ({sc.GEN_AI_OPERATION_NAME: "create_agent"}, "x", cl.AGENT),
        ({sc.GEN_AI_OPERATION_NAME: "chat"}, "x", cl.LLM),
        ({sc.GEN_AI_OPERATION_NAME: "text_completion"}, "x", cl.LLM),
        ({sc.GEN_AI_OPERATION_NAME: "generate_content"}, "x", cl.LLM),
        ({sc.GEN_AI_OPERATION_NAME: "embeddings"}, "x", cl.LLM),
        ({sc.GEN_AI_OPERATION_NAME: "retrieval"}, "x", cl.RETRIEVER),
        ({sc.GEN_AI_OPERATION_NAME: "invoke_workflow"}, "x", cl.CHAIN),
        # A stated kind wins over a name that would say otherwise.
        ({sc.GEN_AI_OPERATION_NAME: "invoke_workflow"}, "execute_tool x", cl.CHAIN),
        ({sc.OPENINFERENCE_SPAN_KIND: "LLM"}, "OpenAI._prepare_chat_with_tools", cl.LLM),
        ({sc.GEN_AI_TOOL_NAME: "old"}, "x", cl.TOOL),
        ({}, "execute_tool legacy", cl.TOOL),
        ({sc.OPENINFERENCE_SPAN_KIND: "TOOL"}, "x", cl.TOOL),
        ({sc.OPENINFERENCE_SPAN_KIND: "AGENT"}, "x", cl.AGENT),
        ({sc.OPENINFERENCE_SPAN_KIND: "LLM"}, "x", cl.LLM),
        ({sc.OPENINFERENCE_SPAN_KIND: "EMBEDDING"}, "x", cl.LLM),
        ({sc.OPENINFERENCE_SPAN_KIND: "CHAIN"}, "x", cl.CHAIN),
        ({sc.OPENINFERENCE_SPAN_KIND: "RETRIEVER"}, "x", cl.RETRIEVER),
        ({sc.OPENINFERENCE_SPAN_KIND: "RERANKER"}, "x", cl.OTHER),
        ({sc.TRACELOOP_SPAN_KIND: "tool"}, "x", cl.TOOL),
        ({sc.TRACELOOP_SPAN_KIND: "agent"}, "x", cl.AGENT),
        ({sc.TRACELOOP_SPAN_KIND: "workflow"}, "x", cl.CHAIN),
        ({sc.TRACELOOP_SPAN_KIND: "task"}, "x", cl.CHAIN),
        # toolspan plans also carry openinference CHAIN: the plan name wins.
        ({sc.TOOLSPAN_PLAN_NAME: "p", sc.OPENINFERENCE_SPAN_KIND: "CHAIN"}, "plan p", cl.PLAN),
        # GenAI operation wins over another convention's kind.
        ({sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.OPENINFERENCE_SPAN_KIND: "CHAIN"}, "x", cl.TOOL),
        ({"http.route": "/mcp/tools/call"}, "POST /mcp/tools/call", cl.OTHER),
        ({}, "GET /", cl.OTHER),
    ],
)
def test_classify_recognises_each_convention(attrs: dict[str, object], name: str, kind: str) -> None:
    assert cl.classify(_span(attrs, name)) == kind


def test_an_llm_span_that_only_builds_a_request_calls_no_model() -> None:
    prepare = _span({sc.OPENINFERENCE_SPAN_KIND: "LLM"}, "OpenAI._prepare_chat_with_tools")
    achat = _span({sc.OPENINFERENCE_SPAN_KIND: "LLM"}, "OpenAI.achat")
    assert (cl.classify(prepare), internal.calls_model(prepare)) == (cl.LLM, False)
    assert (cl.classify(achat), internal.calls_model(achat)) == (cl.LLM, True)


def test_jaeger_agent_fixture_classification() -> None:
    doc = json.loads(GENAI_FIXTURE.read_text())
    from toolspan.bridge.readers import spans_from_document

    spans = spans_from_document(doc)
    kinds: dict[str, list[str]] = {}
    for s in spans:
        kinds.setdefault(cl.classify(s), []).append(s.name)
    assert sorted(kinds[cl.TOOL]) == sorted(
        ["execute_tool list_dashboards", "execute_tool search_traces"] * 3
        + ["execute_tool summarize_findings"]
    )
    assert sorted(kinds[cl.AGENT]) == ["invoke_agent summarizer", "invoke_agent triage-agent"]
    assert len(kinds[cl.LLM]) == 5
    assert len(kinds[cl.RETRIEVER]) == 3
    # MCP transport spans are the HTTP leg of an execute_tool span, not tool calls of their own.
    assert kinds[cl.OTHER].count("POST /mcp/tools/call") == 7


def test_parse_json() -> None:
    assert cl.parse_json('{"a": [1, 2]}') == {"a": [1, 2]}
    assert cl.parse_json('"ok"') == "ok"
    assert cl.parse_json(" 12") == 12
    assert cl.parse_json("true") is True
    assert cl.parse_json("null") is None
    assert cl.parse_json("hello") == "hello"
    assert cl.parse_json("{not json") == "{not json"
    assert cl.parse_json("") == ""
    assert cl.parse_json(5) == 5
    assert cl.parse_json(["x"]) == ["x"]


def test_tool_call_from_toolspan_contract() -> None:
    s = _span(tool_attrs(7, "search", {"q": "x"}, {"n": 1}, state="COMPLETED", model_id="toolu_9"))
    assert cl.tool_call(s) == cl.ToolCallRecord(
        span=s,
        name="search",
        input={"q": "x"},
        output={"n": 1},
        error=None,
        call_id="toolu_9",
        execution_id="exec_" + sid(7),
        state="COMPLETED",
        is_error=False,
        parent_execution_id=None,
        parent_call_id=None,
    )


def test_tool_call_from_openinference() -> None:
    s = _span(
        {
            sc.OPENINFERENCE_SPAN_KIND: "TOOL",
            sc.OI_TOOL_NAME: "weather",
            sc.OI_INPUT_VALUE: '{"city": "Paris"}',
            sc.OI_OUTPUT_VALUE: "sunny",
            sc.OI_TOOL_CALL_ID: "call_abc",
        },
        status="OK",
    )
    assert cl.tool_call(s) == cl.ToolCallRecord(
        span=s,
        name="weather",
        input={"city": "Paris"},
        output="sunny",
        error=None,
        call_id="call_abc",
        execution_id="exec_" + sid(7),
        state="COMPLETED",
        is_error=False,
        parent_execution_id=None,
        parent_call_id=None,
    )


def test_tool_call_from_openllmetry() -> None:
    s = _span(
        {
            sc.TRACELOOP_SPAN_KIND: "tool",
            sc.TRACELOOP_ENTITY_NAME: "add",
            sc.TRACELOOP_ENTITY_INPUT: '{"args": [], "kwargs": {"a": 1, "b": 2}}',
            sc.TRACELOOP_ENTITY_OUTPUT: "3",
        }
    )
    tc = cl.tool_call(s)
    assert (tc.name, tc.input, tc.output, tc.call_id) == ("add", {"a": 1, "b": 2}, 3, "call_" + sid(7))
    positional = _span(
        {sc.TRACELOOP_SPAN_KIND: "tool", sc.TRACELOOP_ENTITY_INPUT: '{"args": [1], "kwargs": {}}'}
    )
    assert cl.tool_input(positional) == {"args": [1], "kwargs": {}}


def test_tool_call_from_old_genai_span_without_ids() -> None:
    s = _span({sc.GEN_AI_TOOL_NAME: "lookup"}, name="whatever")
    tc = cl.tool_call(s)
    assert (tc.name, tc.input, tc.output, tc.call_id, tc.execution_id) == (
        "lookup",
        None,
        None,
        "call_" + sid(7),
        "exec_" + sid(7),
    )
    named = _span({sc.GEN_AI_OPERATION_NAME: "execute_tool"}, name="execute_tool summarize")
    assert cl.tool_name(named) == "summarize"


def test_call_id_precedence() -> None:
    both = {sc.GEN_AI_TOOL_CALL_ID: "model", sc.TOOLSPAN_TOOL_CALL_ID: "call_x", sc.OI_TOOL_CALL_ID: "oi"}
    assert cl.call_id(_span(both)) == "model"
    assert cl.call_id(_span({sc.OI_TOOL_CALL_ID: "oi", sc.TOOLSPAN_TOOL_CALL_ID: "call_x"})) == "oi"
    assert cl.call_id(_span({sc.OI_TOOL_ID: "oi-id", sc.TOOLSPAN_TOOL_CALL_ID: "call_x"})) == "oi-id"
    assert cl.call_id(_span({sc.TOOLSPAN_TOOL_CALL_ID: "call_x"})) == "call_x"
    assert cl.call_id(_span({sc.GEN_AI_TOOL_CALL_ID: ""})) == "call_" + sid(7)


@pytest.mark.parametrize(
    ("attrs", "status", "end", "events", "state"),
    [
        ({}, "UNSET", 5, (), "COMPLETED"),
        ({}, "OK", 5, (), "COMPLETED"),
        ({}, "ERROR", 5, (), "FAILED"),
        ({sc.LEGACY_ERROR_TAG: True}, "UNSET", 5, (), "FAILED"),
        ({}, "UNSET", None, (), "SEALED"),
        ({sc.TOOLSPAN_TOOL_STATE: "DENIED"}, "UNSET", 5, (), "DENIED"),
        ({sc.TOOLSPAN_TOOL_STATE: "bogus"}, "ERROR", 5, (), "FAILED"),
        ({sc.ERROR_TYPE: "CancelledError"}, "UNSET", 5, (), "CANCELLED"),
        ({sc.ERROR_TYPE: "asyncio.exceptions.CancelledError"}, "UNSET", 5, (), "CANCELLED"),
        ({sc.ERROR_TYPE: "KeyboardInterrupt"}, "UNSET", 5, (), "CANCELLED"),
        ({sc.ERROR_TYPE: "GeneratorExit"}, "UNSET", 5, (), "CANCELLED"),
        ({sc.ERROR_TYPE: "ValueError"}, "ERROR", 5, (), "FAILED"),
        (
            {},
            "UNSET",
            5,
            (SpanEvent(sc.PERMISSION_DECIDED_EVENT, T0, {sc.PERMISSION_DECISION: "deny"}),),
            "DENIED",
        ),
    ],
)
def test_tool_state(
    attrs: dict[str, object], status: str, end: int | None, events: tuple[SpanEvent, ...], state: str
) -> None:
    s = span(
        7,
        None,
        "execute_tool t",
        0,
        end,
        {sc.GEN_AI_OPERATION_NAME: "execute_tool", **attrs},
        status=status,
        events=events,
    )
    assert cl.tool_state(s) == state


def test_tool_error_texts() -> None:
    exc = SpanEvent(sc.EXCEPTION_EVENT, T0, {sc.EXCEPTION_TYPE: "KeyError", sc.EXCEPTION_MESSAGE: "'k'"})
    assert cl.tool_error(_span({}, status="ERROR", events=(exc,))) == "KeyError: 'k'"
    assert cl.tool_error(_span({}, status="ERROR", status_message="boom")) == "boom"
    assert cl.tool_error(_span({sc.ERROR_TYPE: "TimeoutError"}, status="ERROR")) == "TimeoutError"
    assert cl.tool_error(_span({sc.ERROR_TYPE: "CancelledError"})) == "CancelledError"
    denied = SpanEvent(
        sc.PERMISSION_DECIDED_EVENT, T0, {sc.PERMISSION_DECISION: "deny", sc.PERMISSION_NOTE: "no"}
    )
    assert cl.tool_error(_span({}, events=(denied,))) == "Permission denied: no"
    assert cl.tool_error(_span({})) is None


def test_agent_messages_genai_parts_and_legacy_content() -> None:
    history = [
        {"role": "user", "parts": [{"type": "text", "content": "first"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "reply"}]},
        {
            "role": "user",
            "parts": [{"type": "text", "content": "second"}, {"type": "text", "content": "line"}],
        },
    ]
    agent = _span(
        {
            sc.GEN_AI_INPUT_MESSAGES: json.dumps(history),
            sc.GEN_AI_OUTPUT_MESSAGES: json.dumps([{"role": "assistant", "content": "answer"}]),
        }
    )
    assert internal.agent_input_text(agent) == "second\nline"
    assert internal.agent_output_text(agent) == "answer"
    oi = _span(
        {
            sc.OI_INPUT_VALUE: "plain question",
            sc.OI_OUTPUT_VALUE: json.dumps(
                {"messages": [{"role": "assistant", "content": [{"type": "text", "text": "hi"}]}]}
            ),
        }
    )
    assert (internal.agent_input_text(oi), internal.agent_output_text(oi)) == ("plain question", "hi")
    assert (internal.agent_input_text(_span({})), internal.agent_output_text(_span({}))) == (None, None)


def test_thoughts_and_approvals() -> None:
    s = _span(
        {},
        events=(
            SpanEvent(sc.THOUGHT_EVENT, T0 + 1, {sc.THOUGHT_CONTENT: "think"}),
            SpanEvent(sc.THOUGHT_EVENT, T0 + 2, {sc.THOUGHT_CONTENT: "   "}),
            SpanEvent(sc.PERMISSION_REQUIRED_EVENT, T0 + 3, {}),
            SpanEvent(
                sc.PERMISSION_DECIDED_EVENT,
                T0 + 4,
                {sc.PERMISSION_DECISION: "ALLOW", sc.PERMISSION_NOTE: "ok"},
            ),
            SpanEvent(sc.PERMISSION_DECIDED_EVENT, T0 + 5, {sc.PERMISSION_DECISION: "maybe"}),
        ),
    )
    assert cl.thoughts(s) == [(T0 + 1, "think")]
    assert cl.approvals(s) == [
        cl.ApprovalEvent(T0 + 3, None, None),
        cl.ApprovalEvent(T0 + 4, "allow", "ok", None, 0),  # the wait from its permission_required (1 ns)
        cl.ApprovalEvent(T0 + 5, "deny", None),  # none asked since the last decision: no wait known
    ]


def test_parent_tool_ids_and_names() -> None:
    plan = _span(
        {
            sc.TOOLSPAN_PLAN_NAME: "sub",
            sc.TOOLSPAN_PARENT_EXECUTION_ID: "exec_1",
            sc.TOOLSPAN_PARENT_TOOL_CALL_ID: "c1",
        }
    )
    assert internal.parent_tool_ids(plan) == ("exec_1", "c1")
    assert cl.plan_name(plan) == "sub"
    assert cl.plan_name(_span({}, name="plan fallback")) == "fallback"
    assert cl.agent_name(_span({}, name="invoke_agent bob")) == "bob"
    assert cl.agent_name(_span({sc.GEN_AI_AGENT_NAME: "amy"}, name="invoke_agent bob")) == "amy"
