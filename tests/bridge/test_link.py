"""Model requests in every convention, tool content in span events, model calls, and the linking of each
executed tool call to the model call that requested it (``toolspan.bridge.link``)."""

from __future__ import annotations

import dataclasses
import json
from types import MappingProxyType
from typing import Any

import pytest

from tests.support.bridge_data import span
from toolspan import semconv as sc
from toolspan.bridge.facts import AGENT, LLM, TOOL, classify
from toolspan.bridge.facts._event_content import content_attributes
from toolspan.bridge.facts._model_calls import ModelCall, Usage, model_call, total_usage
from toolspan.bridge.facts._requests import (
    Requested,
    normal_arguments,
    normal_result,
    requested_calls,
    result_call_id,
    unwrapped_result,
)
from toolspan.bridge.link import link_tool_calls
from toolspan.bridge.model import Span, SpanEvent

CHAT = {sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT}
PARIS = Requested("call_1", "get_weather", {"city": "Paris"})
TOKYO = Requested("call_2", "get_weather", {"city": "Tokyo"})


def _llm(attrs: dict[str, Any], events: tuple[SpanEvent, ...] = ()) -> Span:
    return span(2, 1, "chat m", 1, 2, {**CHAT, **attrs}, events=events)


GENAI_PARTS = {
    sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(
        [
            {
                "role": "assistant",
                "parts": [
                    {"type": "text", "content": "Let me look."},
                    {
                        "type": "tool_call",
                        "id": "call_1",
                        "name": "get_weather",
                        "arguments": {"city": "Paris"},
                    },
                    {
                        "type": "tool_call",
                        "id": "call_2",
                        "name": "get_weather",
                        "arguments": '{"city": "Tokyo"}',
                    },
                ],
            }
        ]
    )
}
OPENINFERENCE = {
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.tool_calls.1.tool_call.id": "call_2",
    "llm.output_messages.0.message.tool_calls.1.tool_call.function.name": "get_weather",
    "llm.output_messages.0.message.tool_calls.1.tool_call.function.arguments": '{"city": "Tokyo"}',
    "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Paris"}',
}
OPENLLMETRY = {
    "gen_ai.completion.0.role": "assistant",
    "gen_ai.completion.0.tool_calls.0.id": "call_1",
    "gen_ai.completion.0.tool_calls.0.name": "get_weather",
    "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Paris"}',
    "gen_ai.completion.0.tool_calls.1.id": "call_2",
    "gen_ai.completion.0.tool_calls.1.name": "get_weather",
    "gen_ai.completion.0.tool_calls.1.arguments": '{"city": "Tokyo"}',
}
LANGCHAIN = {
    sc.OI_OUTPUT_VALUE: json.dumps(
        {
            "generations": [
                [
                    {
                        "text": "",
                        "message": {
                            "lc": 1,
                            "type": "constructor",
                            "id": ["langchain", "schema", "messages", "AIMessage"],
                            "kwargs": {
                                "content": "",
                                "tool_calls": [
                                    {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}},
                                    {"id": "call_2", "name": "get_weather", "args": {"city": "Tokyo"}},
                                ],
                            },
                        },
                    }
                ]
            ]
        }
    )
}
OPENAI_SHAPE = {
    sc.OI_OUTPUT_VALUE: json.dumps(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'},
                },
            ],
        }
    )
}
BEDROCK_CHOICE = SpanEvent(
    sc.EVENT_GEN_AI_CHOICE,
    0,
    {
        "finish_reason": "tool_use",
        "message": json.dumps(
            [
                {"toolUse": {"toolUseId": "call_1", "name": "get_weather", "input": {"city": "Paris"}}},
                {"toolUse": {"toolUseId": "call_2", "name": "get_weather", "input": {"city": "Tokyo"}}},
            ]
        ),
    },
)
DETAILS = SpanEvent(
    "gen_ai.client.inference.operation.details",
    0,
    {sc.GEN_AI_OUTPUT_MESSAGES: GENAI_PARTS[sc.GEN_AI_OUTPUT_MESSAGES]},
)


@pytest.mark.parametrize(
    ("attrs", "events"),
    [
        (GENAI_PARTS, ()),
        (OPENINFERENCE, ()),
        (OPENLLMETRY, ()),
        (LANGCHAIN, ()),
        (OPENAI_SHAPE, ()),
        ({}, (BEDROCK_CHOICE,)),
        ({}, (DETAILS,)),
    ],
    ids=[
        "genai-parts",
        "openinference",
        "openllmetry",
        "langchain",
        "openai",
        "bedrock-event",
        "details-event",
    ],
)
def test_requested_calls_in_every_convention(attrs: dict[str, Any], events: tuple[SpanEvent, ...]) -> None:
    assert requested_calls(_llm(attrs, events)) == [PARIS, TOKYO]


def test_a_model_call_without_tool_calls_requests_nothing() -> None:
    assert requested_calls(_llm({sc.OI_OUTPUT_VALUE: '{"role": "assistant", "content": "hi"}'})) == []


@pytest.mark.parametrize(
    ("recorded", "arguments"),
    [
        ({"args": [], "sanitize_inputs_outputs": True, "kwargs": {"city": "Paris"}}, {"city": "Paris"}),
        ({"input_str": "{'city': 'Paris'}", "tags": [], "metadata": {}}, {"city": "Paris"}),
        ({"input_str": '{"city": "Paris"}'}, {"city": "Paris"}),
        ({"args": ["Paris"], "kwargs": {}}, {"args": ["Paris"], "kwargs": {}}),
        ({"input": {"city": "Paris"}, "options": None}, {"city": "Paris"}),  # BeeAI via OpenInference
        ({"input": "Paris", "options": None}, {"input": "Paris", "options": None}),
        ("Paris", "Paris"),
    ],
)
def test_framework_wrappers_of_arguments_are_unwrapped(recorded: Any, arguments: Any) -> None:
    assert normal_arguments(recorded) == arguments


TOOL_MESSAGE_SERIALISED = {
    "output": {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "ToolMessage"],
        "kwargs": {"content": '{"temp": 18}', "type": "tool", "tool_call_id": "call_1"},
    },
    "kwargs": {"tags": []},
}
TOOL_MESSAGE_DATA = {"type": "tool", "data": {"content": '{"temp": 18}', "tool_call_id": "call_1"}}


@pytest.mark.parametrize("recorded", [TOOL_MESSAGE_SERIALISED, TOOL_MESSAGE_DATA])
def test_a_tool_message_gives_the_result_and_the_call_id(recorded: Any) -> None:
    assert normal_result(recorded) == {"temp": 18}
    assert result_call_id(recorded) == "call_1"


def test_text_blocks_give_the_result_and_plain_values_have_no_call_id() -> None:
    assert normal_result([{"text": '{"temp": 18}'}]) == {"temp": 18}
    assert normal_result([{"type": "text", "text": "done"}]) == "done"
    assert normal_result({"temp": 18}) == {"temp": 18}
    assert result_call_id({"temp": 18}) is None


UNWRAPPED_OUTPUTS = [
    TOOL_MESSAGE_SERIALISED,
    TOOL_MESSAGE_DATA,
    {"type": "tool", "tool_call_id": "call_2", "content": "[1, 2]"},
    {"type": "tool", "tool_call_id": "", "content": "no id"},
    {"output": {"type": "tool", "tool_call_id": "call_3", "content": "ok"}, "kwargs": {}},
    {"tool_name": "t", "raw_input": {}, "raw_output": {"x": 1}},
    [{"type": "text", "text": "done"}],
    [{"text": '{"temp": 18}'}],
    {"type": "text", "text": "alone"},
    {"type": "text", "text": "more", "extra": 1},
    {"temp": 18},
    "{'city': 'Paris'}",
    None,
    7,
]


@pytest.mark.parametrize("recorded", UNWRAPPED_OUTPUTS)
def test_an_output_unwrapped_once_gives_its_result_and_call_id(recorded: Any) -> None:
    assert unwrapped_result(recorded) == (normal_result(recorded), result_call_id(recorded))


@pytest.mark.parametrize("recorded", [TOOL_MESSAGE_DATA, {"type": "text", "text": "alone"}, {"temp": 18}])
def test_a_mapping_that_is_no_dict_is_read_as_the_dict_is(recorded: dict[str, Any]) -> None:
    frozen = MappingProxyType(
        {k: MappingProxyType(v) if isinstance(v, dict) else v for k, v in recorded.items()}
    )
    assert unwrapped_result(frozen) == unwrapped_result(recorded)


def test_tool_content_from_older_genai_events_and_details_events() -> None:
    old = span(
        3,
        1,
        "execute_tool get_weather",
        1,
        2,
        {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: "get_weather"},
        events=(
            SpanEvent(
                sc.EVENT_GEN_AI_TOOL_MESSAGE, 1, {"role": "tool", "content": '{"city": "Paris"}', "id": "c1"}
            ),
            SpanEvent(sc.EVENT_GEN_AI_CHOICE, 2, {"message": '[{"text": "18"}]', "id": "c1"}),
        ),
    )
    attrs = content_attributes(old, is_tool=True)
    assert {k: attrs[k] for k in attrs if k.startswith("gen_ai.tool.call")} == {
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"city": "Paris"}',
        sc.GEN_AI_TOOL_CALL_RESULT: '[{"text": "18"}]',
        sc.GEN_AI_TOOL_CALL_ID: "c1",
    }
    latest = span(
        4,
        1,
        "execute_tool get_weather",
        1,
        2,
        {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"city": "Rome"}'},
        events=(
            SpanEvent(
                "gen_ai.client.inference.operation.details",
                1,
                {
                    sc.GEN_AI_INPUT_MESSAGES: json.dumps(
                        [{"role": "tool", "parts": [{"type": "tool_call", "arguments": {"city": "X"}}]}]
                    )
                },
            ),
            SpanEvent(
                "gen_ai.client.inference.operation.details",
                2,
                {
                    sc.GEN_AI_OUTPUT_MESSAGES: json.dumps(
                        [{"role": "tool", "parts": [{"type": "tool_call_response", "response": "sunny"}]}]
                    )
                },
            ),
        ),
    )
    attrs = content_attributes(latest, is_tool=True)
    # The span's own attribute wins over its events.
    assert {k: attrs[k] for k in attrs if k.startswith("gen_ai.tool.call")} == {
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"city": "Rome"}',
        sc.GEN_AI_TOOL_CALL_RESULT: "sunny",
    }


def test_model_call_fields_in_genai_and_openinference() -> None:
    genai = _llm(
        {
            sc.GEN_AI_REQUEST_MODEL: "m-req",
            sc.GEN_AI_RESPONSE_MODEL: "m-resp",
            sc.GEN_AI_USAGE_INPUT_TOKENS: 10,
            sc.GEN_AI_USAGE_OUTPUT_TOKENS: 4,
            sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: 6,
            sc.GEN_AI_USAGE_REASONING_TOKENS: 2,
            sc.GEN_AI_RESPONSE_FINISH_REASONS: ["stop"],
        }
    )
    assert model_call(genai).as_dict() == {
        "model": "m-resp",
        "input_tokens": 10,
        "output_tokens": 4,
        "cached_tokens": 6,
        "reasoning_tokens": 2,
        "finish_reason": "stop",
    }
    oi = _llm(
        {
            sc.OI_LLM_MODEL_NAME: "m-oi",
            sc.OI_TOKEN_COUNT_PROMPT: 7,
            sc.OI_TOKEN_COUNT_COMPLETION: 3,
            sc.OI_TOKEN_COUNT_CACHE_READ: 1,
            sc.OI_TOKEN_COUNT_REASONING: 2,
            sc.OI_LLM_FINISH_REASON: "length",
        }
    )
    assert model_call(oi).as_dict() == {
        "model": "m-oi",
        "input_tokens": 7,
        "output_tokens": 3,
        "cached_tokens": 1,
        "reasoning_tokens": 2,
        "finish_reason": "length",
    }
    bare = model_call(_llm({sc.GEN_AI_REQUEST_MODEL: "unknown"}))
    assert bare == ModelCall(bare.span, None, Usage(), None)
    assert total_usage([model_call(genai), model_call(oi), bare]) == Usage(17, 7, 7, 4)


def _trace(*spans: Span) -> dict[int, Any]:
    kinds = [classify(s) for s in spans]
    index = {s.span_id: i for i, s in enumerate(spans)}
    parent = [None if s.parent_span_id is None else index.get(s.parent_span_id) for s in spans]
    return link_tool_calls(spans, kinds, parent)


AGENT_ATTRS = {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT}


def _oi_tool(n: int, start: int, value: Any, parent: int = 1) -> Span:
    attrs = {sc.OPENINFERENCE_SPAN_KIND: "TOOL", sc.OI_TOOL_NAME: "get_weather", sc.OI_INPUT_VALUE: value}
    return span(n, parent, "get_weather", start, start + 1, attrs)


def test_lossy_tool_spans_get_the_models_ids_and_arguments_in_order() -> None:
    agent = span(1, None, "invoke_agent a", 0, 10, AGENT_ATTRS)
    llm = span(2, 1, "chat m", 1, 2, {**CHAT, **OPENINFERENCE})
    calls = _trace(agent, llm, _oi_tool(3, 3, "Tokyo"), _oi_tool(4, 4, "Paris"))
    assert [(c.call_id, c.input, c.requested_by) for c in calls.values()] == [
        ("call_2", {"city": "Tokyo"}, llm.span_id),
        ("call_1", {"city": "Paris"}, llm.span_id),
    ]


def test_same_name_calls_without_arguments_match_in_request_order() -> None:
    agent = span(1, None, "invoke_agent a", 0, 10, AGENT_ATTRS)
    llm = span(2, 1, "chat m", 1, 2, {**CHAT, **OPENINFERENCE})
    bare = {sc.OPENINFERENCE_SPAN_KIND: "TOOL", sc.OI_TOOL_NAME: "get_weather"}
    calls = _trace(agent, llm, span(3, 1, "t", 3, 4, bare), span(4, 1, "t", 5, 6, bare))
    assert [(c.call_id, c.input) for c in calls.values()] == [
        ("call_1", {"city": "Paris"}),
        ("call_2", {"city": "Tokyo"}),
    ]


def test_a_tool_span_with_its_own_id_keeps_its_own_arguments() -> None:
    agent = span(1, None, "invoke_agent a", 0, 10, AGENT_ATTRS)
    llm = span(2, 1, "chat m", 1, 2, {**CHAT, **GENAI_PARTS})
    own = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
        sc.GEN_AI_TOOL_NAME: "get_weather",
        sc.GEN_AI_TOOL_CALL_ID: "call_2",
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"city": "Tokyo", "units": "C"}',
    }
    calls = _trace(agent, llm, span(3, 1, "execute_tool get_weather", 3, 4, own))
    assert [(c.call_id, c.input, c.requested_by) for c in calls.values()] == [
        ("call_2", {"city": "Tokyo", "units": "C"}, llm.span_id)
    ]


def test_the_id_on_the_dispatching_parent_span_is_used() -> None:
    agent = span(1, None, "invoke_agent a", 0, 10, AGENT_ATTRS)
    llm = span(2, 1, "chat m", 1, 2, {**CHAT, **LANGCHAIN})
    task = span(
        3,
        1,
        "tools",
        3,
        6,
        {sc.OI_INPUT_VALUE: json.dumps({"tool_call": {"id": "call_2", "name": "get_weather"}})},
    )
    calls = _trace(agent, llm, task, _oi_tool(4, 4, "somewhere", parent=3))
    assert [(c.call_id, c.input, c.requested_by) for c in calls.values()] == [
        ("call_2", {"city": "Tokyo"}, llm.span_id)
    ]


def test_no_request_from_a_later_model_call_or_another_agent() -> None:
    root = span(1, None, "invoke_agent a", 0, 20, AGENT_ATTRS)
    other = span(5, None, "invoke_agent b", 0, 20, AGENT_ATTRS)
    late = span(2, 1, "chat m", 10, 11, {**CHAT, **OPENINFERENCE})
    elsewhere = span(6, 5, "chat m", 0, 1, {**CHAT, **OPENINFERENCE})
    calls = _trace(root, other, late, elsewhere, _oi_tool(3, 3, "Paris"))
    assert [(c.call_id, c.input, c.requested_by) for c in calls.values()] == [
        ("call_" + "0" * 15 + "3", "Paris", None)
    ]


def test_kinds_of_the_spans_used() -> None:
    assert [
        classify(s) for s in (span(1, None, "a", 0, 1, AGENT_ATTRS), _llm(OPENINFERENCE), _oi_tool(3, 0, "x"))
    ] == [
        AGENT,
        LLM,
        TOOL,
    ]


def test_a_chain_span_above_completes_a_model_call_that_lacks_name_and_finish_reason() -> None:
    message = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {"content": "", "response_metadata": {"model_name": "m-lc", "finish_reason": "tool_calls"}},
    }
    chain = span(
        5, 1, "RunnableSequence", 0, 3, {sc.TRACELOOP_ENTITY_OUTPUT: json.dumps({"outputs": message})}
    )
    llm = _llm({sc.GEN_AI_REQUEST_MODEL: "unknown", sc.GEN_AI_USAGE_INPUT_TOKENS: 5})
    assert model_call(llm).as_dict()["model"] is None
    assert model_call(llm, [chain]).as_dict() == {
        "model": "m-lc",
        "input_tokens": 5,
        "output_tokens": None,
        "cached_tokens": None,
        "reasoning_tokens": None,
        "finish_reason": "tool_calls",
    }


# --- the stream's linker: the same links, in any input order within its read-ahead, in bounded memory ---


def _stream(spans: list[Span], **bounds: Any) -> dict[str, Any]:
    from toolspan.bridge.link import StreamLinker, link_stream

    linker = StreamLinker(**bounds)
    return {s.span_id: c for s, c in link_stream(spans, linker) if c is not None}


def test_the_stream_links_as_the_views_whatever_the_order_of_the_records() -> None:
    agent = span(1, None, "invoke_agent a", 0, 10, AGENT_ATTRS)
    llm = span(2, 1, "chat m", 1, 2, {**CHAT, **OPENINFERENCE})
    tools = [_oi_tool(3, 3, "Tokyo"), _oi_tool(4, 4, "Paris")]
    batch = {
        c.span.span_id: (c.call_id, c.input, c.requested_by) for c in _trace(agent, llm, *tools).values()
    }
    for order in ([agent, llm, *tools], [*tools, llm, agent], [tools[1], llm, tools[0], agent]):
        streamed = {k: (c.call_id, c.input, c.requested_by) for k, c in _stream(order).items()}
        assert streamed == batch


def test_an_open_record_and_its_completion_get_the_same_request() -> None:
    from toolspan.bridge.link import StreamLinker

    llm = span(2, 1, "chat m", 1, 2, {**CHAT, **OPENINFERENCE})
    ended = _oi_tool(3, 3, "Tokyo")
    opened = span(3, 1, "get_weather", 3, None, dict(ended.attributes))
    linker = StreamLinker()
    assert linker.feed(llm) is None
    first, second = linker.feed(opened), linker.feed(ended)
    assert first is not None
    assert second is not None
    assert (
        (first.call_id, first.requested_by)
        == (second.call_id, second.requested_by)
        == ("call_2", "0000000000000002")
    )


def test_the_stream_keeps_a_bounded_number_of_traces_and_entries() -> None:
    from toolspan.bridge.link import StreamLinker

    linker = StreamLinker(max_traces=8, max_entries=40)
    for n in range(100):
        trace = f"{n + 1:032x}"
        for s in (
            span(1, None, "invoke_agent a", 0, 10, AGENT_ATTRS),
            span(2, 1, "chat m", 1, 2, {**CHAT, **OPENINFERENCE}),
        ):
            linker.note(dataclasses.replace(s, trace_id=trace))
        assert len(linker) <= 8
        assert linker.entries <= 40
    # The latest traces are still linked.
    tool = dataclasses.replace(_oi_tool(3, 3, "Tokyo"), trace_id=f"{100:032x}")
    call = linker.link(tool)
    assert call is not None
    assert call.call_id == "call_2"


def test_a_call_recorded_twice_by_two_instrumentations_is_one_call_a_tool_calling_itself_is_two() -> None:
    from toolspan.bridge.views import to_events

    genai = {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: "get_weather"}
    outer = _oi_tool(3, 3, '{"city": "Paris"}')
    inner = dataclasses.replace(span(4, 3, "execute_tool get_weather", 3, 4, genai), scope="autogen-core")
    outer = dataclasses.replace(outer, scope="openinference.instrumentation.autogen_agentchat")
    observes = [e for e in to_events([outer, inner]) if e["type"] == "observe"]
    assert [e["span_id"] for e in observes] == [outer.span_id]
    streamed = _stream([inner, outer])
    assert list(streamed) == [outer.span_id]
    # The same instrumentation twice, nested: a tool that called itself, two calls.
    recursive = dataclasses.replace(inner, scope=outer.scope)
    assert len([e for e in to_events([outer, recursive]) if e["type"] == "observe"]) == 2
    assert len(_stream([recursive, outer])) == 2


def test_a_placeholder_is_no_value_and_an_empty_text_is_one() -> None:
    from toolspan.bridge.facts._tools import call_id, tool_output

    genai = {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: "t"}
    placeholder = span(3, 1, "execute_tool t", 3, 4, {**genai, sc.GEN_AI_TOOL_CALL_ID: sc.ADK_NOT_SPECIFIED})
    assert call_id(placeholder) == "call_0000000000000003"
    legacy = span(
        3, 1, "execute_tool t", 3, 4, {**genai, sc.ADK_TOOL_RESPONSE: '{"result": "<not specified>"}'}
    )
    assert tool_output(legacy) is None
    empty = span(3, 1, "execute_tool t", 3, 4, {**genai, sc.GEN_AI_TOOL_CALL_RESULT: ""})
    assert tool_output(empty) == ""
    na = span(3, 1, "execute_tool t", 3, 4, {**genai, sc.GEN_AI_TOOL_CALL_RESULT: "N/A"})
    assert tool_output(na) == "N/A"


def test_an_open_record_without_id_or_arguments_does_not_use_up_a_request() -> None:
    from toolspan.bridge.link import StreamLinker

    # Parallel calls of one tool whose spans get their arguments only when they end: the open records
    # must not take each other's requests by name.
    llm = span(2, 1, "chat m", 1, 2, {**CHAT, **OPENINFERENCE})
    tokyo_open = span(
        3, 1, "get_weather", 3, None, {sc.OPENINFERENCE_SPAN_KIND: "TOOL", sc.OI_TOOL_NAME: "get_weather"}
    )
    paris_open = span(4, 1, "get_weather", 3, None, dict(tokyo_open.attributes))
    linker = StreamLinker()
    linker.feed(llm)
    assert linker.feed(tokyo_open) is not None  # by name alone it would take Paris's request
    assert linker.feed(paris_open) is not None
    tokyo = linker.feed(_oi_tool(3, 3, '{"city": "Tokyo"}'))
    paris = linker.feed(_oi_tool(4, 3, '{"city": "Paris"}'))
    assert tokyo is not None
    assert paris is not None
    assert (tokyo.call_id, paris.call_id) == ("call_2", "call_1")


def _adk_model_call(n: int, start: int, **attrs: Any) -> Span:
    return span(n, 1, "call_llm", start, start + 1, {"gen_ai.system": "gcp.vertex.agent", **attrs})


def test_a_tool_call_recorded_without_anything_takes_the_response_sent_back_to_the_model() -> None:
    """Google ADK for JavaScript records a call only when its tool returns: a bare ``execute_tool`` span's
    outcome is the response ADK sent the model for its id; a call that recorded its own keeps it."""
    calls = [
        {"functionCall": {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}}},
        {"functionCall": {"id": "call_2", "name": "get_population", "args": {"city": "Atlantis"}}},
    ]
    sent = [
        {"functionResponse": {"id": "call_1", "name": "get_weather", "response": {"other": True}}},
        {"functionResponse": {"id": "call_2", "name": "get_population", "response": {"error": "boom"}}},
    ]
    asked = {sc.ADK_LLM_RESPONSE: json.dumps({"content": {"role": "model", "parts": calls}})}
    answered = {
        sc.ADK_LLM_REQUEST: json.dumps({"contents": [{"role": "user", "parts": sent}]}),
        sc.ADK_LLM_RESPONSE: json.dumps({"content": {"role": "model", "parts": [{"text": "done"}]}}),
    }
    recorded = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
        sc.GEN_AI_TOOL_NAME: "get_weather",
        sc.GEN_AI_TOOL_CALL_ID: "call_1",
        sc.ADK_TOOL_CALL_ARGS: '{"city": "Paris"}',
        sc.ADK_TOOL_RESPONSE: '{"temp_c": 18}',
    }
    found = _trace(
        span(1, None, "invoke_agent a", 0, 20, AGENT_ATTRS),
        _adk_model_call(2, 1, **asked),
        span(3, 2, "execute_tool get_weather", 3, 4, recorded),
        span(4, 2, "execute_tool get_population", 5, 6, {}),
        _adk_model_call(5, 7, **answered),
    )
    assert [(c.call_id, c.input, c.output, c.error, c.is_error) for c in found.values()] == [
        ("call_1", {"city": "Paris"}, {"temp_c": 18}, None, False),
        ("call_2", {"city": "Atlantis"}, {"error": "boom"}, "boom", True),
    ]


def _spring_tool(n: int, start: int, call_id: str, city: str) -> Span:
    attrs = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
        sc.SPRING_AI_KIND: sc.SPRING_AI_KIND_TOOL_CALL,
        sc.SPRING_AI_TOOL_NAME: "get_weather",
        sc.SPRING_AI_TOOL_CALL_ID: call_id,
        sc.SPRING_AI_TOOL_CALL_ARGUMENTS: json.dumps({"city": city}),
    }
    return span(n, 1, "execute_tool get_weather", start, start + 1, attrs)


def _spring_chat(n: int, start: int, reason: str) -> Span:
    attrs = {
        **CHAT,
        sc.GEN_AI_RESPONSE_FINISH_REASONS: [reason],
        sc.SPRING_AI_MODEL_TOOL_NAMES: ["get_weather"],
    }
    return span(n, 1, "chat m", start, start + 1, attrs)


def test_a_model_call_that_records_no_requests_asked_for_the_tools_after_it() -> None:
    """Spring AI's model call records none of the model's messages: each tool span, with the model's own id,
    is requested by the latest such model call before it that stopped to call tools."""
    client = span(1, None, "spring_ai chat_client", 0, 40, {sc.SPRING_AI_KIND: "chat_client"})
    first = _spring_chat(2, 1, "TOOL_CALLS")
    second = _spring_chat(5, 10, "TOOL_CALLS")
    answer = _spring_chat(8, 20, "STOP")
    calls = _trace(
        client,
        first,
        _spring_tool(3, 3, "call_1", "Paris"),
        _spring_tool(4, 4, "call_2", "Tokyo"),
        second,
        _spring_tool(6, 12, "call_3", "Rome"),
        answer,
    )
    assert [(c.call_id, c.input, c.requested_by) for c in calls.values()] == [
        ("call_1", {"city": "Paris"}, first.span_id),
        ("call_2", {"city": "Tokyo"}, first.span_id),
        ("call_3", {"city": "Rome"}, second.span_id),
    ]
    # A model call that records no requests and is not Spring AI's (or did not stop for tools) links none.
    plain = span(2, 1, "chat m", 1, 2, {**CHAT, sc.GEN_AI_RESPONSE_FINISH_REASONS: ["tool_calls"]})
    for model in (plain, _spring_chat(2, 1, "STOP")):
        calls = _trace(client, model, _spring_tool(3, 3, "call_1", "Paris"))
        assert [(c.call_id, c.requested_by) for c in calls.values()] == [("call_1", None)]
