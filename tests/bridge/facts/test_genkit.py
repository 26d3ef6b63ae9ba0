"""Genkit's own tracing read as GenAI (``toolspan.bridge.facts._dialects._genkit``): the kinds its actions
give, the two shapes of a tool's output, the model's name, and what malformed values give (nothing, never an
error). The corpus (``tests/corpus/genkit_go``, tests/frameworks/test_corpus.py) checks a real run; these pin
the edges that run does not produce."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolspan.bridge.facts import AGENT, CHAIN, LLM, OTHER, RETRIEVER, TOOL, classify, model_call, tool_call
from toolspan.bridge.model import Span
from toolspan.bridge.views import to_events


def _span(name: str, attrs: dict[str, Any], span_id: str = "00000000000000a1", **kw: Any) -> Span:
    return Span(
        "0" * 31 + "1", span_id, kw.pop("parent", None), name, kw.pop("start", 1), 2, attributes=attrs, **kw
    )


def _action(subtype: str, name: str = "x", kind: str = "action", **attrs: Any) -> dict[str, Any]:
    return {"genkit:type": kind, "genkit:metadata:subtype": subtype, "genkit:name": name, **attrs}


@pytest.mark.parametrize(
    ("attrs", "kind"),
    [
        (_action("tool"), TOOL),
        (_action("tool.v2"), TOOL),
        (_action("model"), LLM),
        (_action("embedder"), LLM),
        (_action("retriever"), RETRIEVER),
        (_action("flow"), CHAIN),
        (_action("flowStep", kind="flowStep"), CHAIN),
        (_action("util", name="generate", kind="util"), AGENT),
        (_action("util", name="prompt", kind="util"), OTHER),
        (_action("evaluator", kind="evaluator"), OTHER),
        ({"genkit:type": "action"}, OTHER),
        # A convention's own kind wins over Genkit's marker.
        ({"gen_ai.operation.name": "chat", **_action("tool")}, LLM),
    ],
)
def test_each_action_gives_its_kind(attrs: dict[str, Any], kind: str) -> None:
    assert classify(_span("x", attrs)) == kind


def test_a_tool_v2_output_is_its_output_field_and_a_tool_output_is_itself() -> None:
    result = {"output": {"temp_c": 18}}
    v2 = tool_call(
        _span("get_weather", _action("tool.v2", "get_weather", **{"genkit:output": json.dumps(result)}))
    )
    assert (v2.name, v2.output) == ("get_weather", {"temp_c": 18})
    v1 = tool_call(
        _span("get_weather", _action("tool", "get_weather", **{"genkit:output": json.dumps(result)}))
    )
    assert v1.output == result


def test_a_model_call_reads_its_model_usage_and_requests() -> None:
    request = {"messages": [{"role": "user", "content": [{"text": "weather in Paris?"}]}]}
    response = {
        "finishReason": "stop",
        "message": {
            "role": "model",
            "content": [
                {"toolRequest": {"name": "get_weather", "ref": "call_1", "input": {"city": "Paris"}}}
            ],
        },
        "usage": {"inputTokens": 12, "outputTokens": 5, "cachedContentTokens": 3, "thoughtsTokens": 2},
    }
    attrs = _action(
        "model",
        "openrouter/acme/model-1",
        **{"genkit:input": json.dumps(request), "genkit:output": json.dumps(response)},
    )
    llm = _span("openrouter/acme/model-1", attrs, "00000000000000a1", start=1)
    call = model_call(llm)
    assert call.as_dict() == {
        "model": "acme/model-1",
        "input_tokens": 12,
        "output_tokens": 5,
        "cached_tokens": 3,
        "reasoning_tokens": 2,
        "finish_reason": "stop",
    }
    tool = _span(
        "get_weather",
        _action("tool.v2", "get_weather", **{"genkit:input": '{"city": "Paris"}'}),
        "00000000000000b2",
        start=2,
    )
    acts = [e for e in to_events([llm, tool]) if e["type"] == "act"]
    assert [(e["call_id"], e["requested_by"], e["tool_input"]) for e in acts] == [
        ("call_1", "00000000000000a1", {"city": "Paris"})
    ]


@pytest.mark.parametrize(
    "attrs",
    [
        _action("tool.v2", **{"genkit:input": "{not json", "genkit:output": "[1, 2"}),
        _action("tool", name=None, **{"genkit:output": None}),  # type: ignore[arg-type]
        _action(
            "model", **{"genkit:output": '{"message": 3, "usage": []}', "genkit:input": '{"messages": 1}'}
        ),
        _action(
            "model", **{"genkit:output": '{"message": {"role": "model", "content": [1, {"toolRequest": 2}]}}'}
        ),
        _action("util", name="generate", kind="util", **{"genkit:input": "[]", "genkit:output": "{"}),
    ],
)
def test_malformed_values_read_as_what_they_are(attrs: dict[str, Any]) -> None:
    span = _span("x", attrs)
    if classify(span) == TOOL:
        call = tool_call(span)
        assert isinstance(call.name, str)
        assert isinstance(call.call_id, str)
    else:
        model_call(span)
        to_events([span])
