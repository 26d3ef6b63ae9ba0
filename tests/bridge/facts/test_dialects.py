"""The frameworks' own attributes read as GenAI (``toolspan.bridge.facts._dialects``): the kinds their markers
give, and what malformed values give (nothing, never an error). The corpus (tests/frameworks/test_corpus.py)
checks each on a real run; these pin the edges no run produces."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolspan.bridge.facts import AGENT, CHAIN, LLM, OTHER, TOOL, classify, tool_call
from toolspan.bridge.link import link_tool_calls
from toolspan.bridge.model import Span


def _span(name: str, attrs: dict[str, Any], span_id: str = "00000000000000a1", **kw: Any) -> Span:
    return Span(
        "0" * 31 + "1", span_id, kw.pop("parent", None), name, kw.pop("start", 1), 2, attributes=attrs, **kw
    )


@pytest.mark.parametrize(
    ("attrs", "kind"),
    [
        ({"ai.operationId": "ai.toolCall"}, TOOL),
        ({"ai.operationId": "ai.generateText"}, AGENT),
        ({"ai.operationId": "ai.streamText"}, AGENT),
        ({"ai.operationId": "ai.generateText.doGenerate"}, LLM),
        ({"ai.operationId": "ai.streamObject.doStream"}, LLM),
        ({"ai.operationId": "ai.generateObject"}, OTHER),
        ({"mlflow.spanType": '"TOOL"'}, TOOL),
        ({"mlflow.spanType": '"CHAT_MODEL"'}, LLM),
        ({"mlflow.spanType": '"CHAIN"'}, CHAIN),
        ({"mlflow.spanType": "TOOL"}, TOOL),  # plain text read as well as JSON text
        ({"mlflow.spanType": '"PARSER"'}, OTHER),
        ({"logfire.msg_template": "Function: {name}"}, TOOL),
        ({"logfire.msg_template": "Agent run: {name!r}"}, AGENT),
        ({"logfire.msg_template": "Chat completion with {gen_ai.request.model!r}"}, LLM),
        ({"logfire.msg_template": "Turn {turn} for agent weather_agent"}, OTHER),
        ({"langfuse.observation.type": "tool"}, TOOL),
        ({"langfuse.observation.type": "generation"}, LLM),
        ({"langfuse.observation.type": "span"}, OTHER),
        ({"gen_ai.operation.name": "framework", "spring.ai.kind": "chat_client"}, AGENT),
        ({"gen_ai.operation.name": "framework", "spring.ai.kind": "advisor"}, OTHER),
        ({"gen_ai.operation.name": "execute_tool", "spring.ai.kind": "tool_call"}, TOOL),
        ({"spring.ai.kind": "tool_call"}, TOOL),
        # A convention's own kind wins over a framework's marker.
        ({"gen_ai.operation.name": "chat", "ai.operationId": "ai.toolCall"}, LLM),
        ({"openinference.span.kind": "CHAIN", "mlflow.spanType": '"AGENT"'}, CHAIN),
    ],
)
def test_each_marker_gives_its_kind(attrs: dict[str, Any], kind: str) -> None:
    assert classify(_span("x", attrs)) == kind


@pytest.mark.parametrize(
    "attrs",
    [
        {"ai.operationId": "ai.toolCall", "ai.toolCall.args": "{not json", "ai.toolCall.result": 3},
        {"ai.operationId": "ai.toolCall", "ai.toolCall.name": ["a"], "ai.toolCall.id": 7},
        {"mlflow.spanType": '"TOOL"', "mlflow.spanInputs": "[[[", "mlflow.spanOutputs": None},
        {"logfire.msg_template": "Function: {name}", "name": None, "error": "[1, 2"},
        {"langfuse.observation.type": "tool", "langfuse.observation.status_message": 5},
        {"spring.ai.kind": "tool_call", "spring.ai.tool.call.arguments": "{not", "spring.ai.tool.call.id": 3},
    ],
)
def test_malformed_tool_values_read_as_what_they_are(attrs: dict[str, Any]) -> None:
    call = tool_call(_span("weather", attrs))
    assert isinstance(call.name, str)
    assert isinstance(call.call_id, str)


@pytest.mark.parametrize(
    "attrs",
    [
        {"ai.operationId": "ai.generateText.doGenerate", "ai.response.toolCalls": "not json"},
        {
            "ai.operationId": "ai.generateText.doGenerate",
            "ai.response.toolCalls": '[1, {"toolName": ""}, null]',
        },
        {"mlflow.spanType": '"CHAT_MODEL"', "mlflow.spanOutputs": '{"choices": [1, {"message": 2}]}'},
        {"logfire.msg_template": "Chat completion with {gen_ai.request.model!r}", "output": "{"},
        {"langfuse.observation.type": "generation", "langfuse.observation.usage_details": "[]"},
        {
            "gen_ai.operation.name": "chat",
            "spring.ai.model.request.tool.names": "[",
            "gen_ai.response.finish_reasons": 5,
        },
        {
            "gen_ai.operation.name": "chat",
            "spring.ai.model.request.tool.names": 1,
            "gen_ai.response.finish_reasons": "[1]",
        },
    ],
)
def test_malformed_model_calls_request_nothing(attrs: dict[str, Any]) -> None:
    llm = _span("model", attrs, "00000000000000b1")
    tool = _span("execute_tool get_weather", {"gen_ai.tool.name": "get_weather"}, "00000000000000b2", start=2)
    calls = link_tool_calls([llm, tool], [LLM, TOOL], [None, None])
    assert calls[1].requested_by is None


def test_a_vercel_request_links_by_the_models_own_id() -> None:
    llm = _span(
        "ai.generateText.doGenerate",
        {
            "ai.operationId": "ai.generateText.doGenerate",
            "ai.response.toolCalls": json.dumps(
                [{"toolCallId": "c1", "toolName": "w", "input": json.dumps({"city": "Oslo"})}]
            ),
        },
        "00000000000000c1",
    )
    tool = _span(
        "ai.toolCall", {"ai.operationId": "ai.toolCall", "ai.toolCall.name": "w"}, "00000000000000c2", start=2
    )
    calls = link_tool_calls([llm, tool], [LLM, TOOL], [None, None])
    assert (calls[1].call_id, calls[1].input, calls[1].requested_by) == (
        "c1",
        {"city": "Oslo"},
        "00000000000000c1",
    )


def test_a_dspy_tool_span_is_named_after_its_tool() -> None:
    for name in ("get_weather.__call__", "get_weather.acall"):
        span = _span(name, {"openinference.span.kind": "TOOL"})
        assert tool_call(span).name == "get_weather"
    # Without OpenInference's kind it is some other method: its name stays.
    assert tool_call(_span("get_weather.__call__", {"gen_ai.operation.name": "execute_tool"})).name == (
        "get_weather.__call__"
    )
