"""``run_tool_calls`` against the real ``openai`` client (Chat Completions and Responses, plain, parsed
and streamed), over a fake HTTP transport: the results go back through the same client, whose request
body is checked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from opentelemetry import trace as trace_api
from pydantic import BaseModel

from tests.support.instrumentation import parent_id
from tests.support.sdk_fake import TOOLS, WEATHER_TEXT, FakeModelAPI, expected_attrs, tool_spans
from toolspan import arun_tool_calls, run_tool_calls
from toolspan.testing import capture_spans

USER = {"role": "user", "content": "Weather in Paris, and 25 + 30?"}
CHAT_CALLS = {"call_Weather0Paris": "get_weather", "call_Add0TwoNumbers": "add"}
CHAT_RESULTS = [
    {"role": "tool", "tool_call_id": "call_Weather0Paris", "content": WEATHER_TEXT},
    {"role": "tool", "tool_call_id": "call_Add0TwoNumbers", "content": "55"},
]
RESPONSES_RESULTS = [
    {"type": "function_call_output", "call_id": "call_Weather0Paris", "output": WEATHER_TEXT},
    {"type": "function_call_output", "call_id": "call_Add0TwoNumbers", "output": "55"},
]
# The assistant message as the SDK sends it back (the recorded response's message, serialised by the SDK).
ASSISTANT_SENT = {
    "role": "assistant",
    "content": None,
    "refusal": None,
    "annotations": [],
    "tool_calls": [
        {
            "id": "call_Weather0Paris",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
        },
        {
            "id": "call_Add0TwoNumbers",
            "type": "function",
            "function": {"name": "add", "arguments": '{"a":25,"b":30}'},
        },
    ],
}
FUNCTION_CALLS_SENT = [
    {
        "id": "fc_68toolspanweather",
        "type": "function_call",
        "status": "completed",
        "arguments": '{"city":"Paris"}',
        "call_id": "call_Weather0Paris",
        "name": "get_weather",
    },
    {
        "id": "fc_68toolspanadd",
        "type": "function_call",
        "status": "completed",
        "arguments": '{"a":25,"b":30}',
        "call_id": "call_Add0TwoNumbers",
        "name": "add",
    },
]


class GetWeather(BaseModel):
    city: str


class Add(BaseModel):
    a: int
    b: int


@pytest.fixture
def parent() -> Iterator[Any]:
    """Capture spans; the test body runs under a parent span: yields (spans(), parent span id)."""
    with capture_spans() as spans, trace_api.get_tracer("test").start_as_current_span("agent") as span:
        yield spans, span.get_span_context().span_id


def check_spans(parent: Any, runs: int = 1) -> None:
    """``runs`` runs of the two recorded calls: one span per call, the model's ids, under the parent."""
    spans, parent_span = parent
    finished = spans()
    assert len(finished) == 2 * runs
    by_id = tool_spans(finished[:2])
    assert set(by_id) == set(CHAT_CALLS)
    for call_id, name in CHAT_CALLS.items():
        span = by_id[call_id]
        assert span.name == f"execute_tool {name}"
        assert dict(span.attributes or {}) == expected_attrs(span, name, call_id)
        assert parent_id(span) == parent_span


# --- Chat Completions --------------------------------------------------------------------------------


def test_chat_completion_calls_run_and_results_go_back_through_the_client(parent: Any) -> None:
    api = FakeModelAPI("openai_chat_tool_calls.json", "openai_chat_final.json")
    client = openai.OpenAI(api_key="test", http_client=api.client())
    completion = client.chat.completions.create(model="gpt-4.1", messages=[USER])
    message = completion.choices[0].message
    assert isinstance(message, openai.types.chat.ChatCompletionMessage)

    results = run_tool_calls(message.tool_calls, TOOLS)
    assert results == CHAT_RESULTS
    check_spans(parent)
    assert run_tool_calls(message, TOOLS) == CHAT_RESULTS  # the whole message
    assert run_tool_calls(completion, TOOLS) == CHAT_RESULTS  # the whole completion (first choice)

    final = client.chat.completions.create(model="gpt-4.1", messages=[USER, message, *results])
    assert api.body()["messages"] == [USER, ASSISTANT_SENT, *CHAT_RESULTS]
    assert final.choices[0].message.content == "It is 22 °C in Paris, and 25 + 30 = 55."
    assert run_tool_calls(final, TOOLS) == []  # tool_calls is None: nothing to run
    assert len(parent[0]()) == 6


def test_chat_parse_with_pydantic_tools_has_parsed_arguments(parent: Any) -> None:
    api = FakeModelAPI("openai_chat_tool_calls.json")
    client = openai.OpenAI(api_key="test", http_client=api.client())
    tools = [
        openai.pydantic_function_tool(GetWeather, name="get_weather"),
        openai.pydantic_function_tool(Add, name="add"),
    ]
    completion = client.chat.completions.parse(model="gpt-4.1", messages=[USER], tools=tools)
    calls = completion.choices[0].message.tool_calls
    assert calls is not None
    assert [call.function.parsed_arguments for call in calls] == [GetWeather(city="Paris"), Add(a=25, b=30)]
    assert run_tool_calls(calls, TOOLS) == CHAT_RESULTS
    check_spans(parent)
    assert api.body()["tools"][0]["function"]["strict"] is True


def test_chat_stream_final_completion(parent: Any) -> None:
    api = FakeModelAPI("openai_chat_stream.sse", "openai_chat_final.json")
    client = openai.OpenAI(api_key="test", http_client=api.client())
    with client.chat.completions.stream(model="gpt-4.1", messages=[USER]) as stream:
        final = stream.get_final_completion()
    message = final.choices[0].message
    results = run_tool_calls(message, TOOLS)
    assert results == CHAT_RESULTS
    check_spans(parent)
    client.chat.completions.create(model="gpt-4.1", messages=[USER, message, *results])
    # The SDK sends its accumulated message as it is (stream index and parsed_arguments included).
    streamed_calls = [
        {**call, "index": index, "function": {**call["function"], "parsed_arguments": None}}
        for index, call in enumerate(ASSISTANT_SENT["tool_calls"])
    ]
    streamed = {
        **ASSISTANT_SENT,
        "annotations": None,
        "audio": None,
        "function_call": None,
        "parsed": None,
        "tool_calls": streamed_calls,
    }
    assert api.body()["messages"] == [USER, streamed, *CHAT_RESULTS]


async def test_async_chat_with_arun_tool_calls(parent: Any) -> None:
    api = FakeModelAPI("openai_chat_tool_calls.json", "openai_chat_final.json")
    client = openai.AsyncOpenAI(api_key="test", http_client=api.async_client())
    completion = await client.chat.completions.create(model="gpt-4.1", messages=[USER])
    message = completion.choices[0].message
    results = await arun_tool_calls(message, TOOLS)
    assert results == CHAT_RESULTS
    check_spans(parent)
    await client.chat.completions.create(model="gpt-4.1", messages=[USER, message, *results])
    assert api.body()["messages"] == [USER, ASSISTANT_SENT, *CHAT_RESULTS]


def test_chat_failing_tool_is_an_error_message_the_client_sends() -> None:
    api = FakeModelAPI("openai_chat_tool_calls.json", "openai_chat_final.json")
    client = openai.OpenAI(api_key="test", http_client=api.client())
    message = client.chat.completions.create(model="gpt-4.1", messages=[USER]).choices[0].message

    def get_weather(city: str) -> dict[str, Any]:
        raise ConnectionError(f"weather service down for {city}")

    results = run_tool_calls(message, {"get_weather": get_weather, "add": TOOLS[1]})
    error = {
        "role": "tool",
        "tool_call_id": "call_Weather0Paris",
        "content": "ConnectionError: weather service down for Paris",
    }
    assert results == [error, CHAT_RESULTS[1]]
    client.chat.completions.create(model="gpt-4.1", messages=[USER, message, *results])
    assert api.body()["messages"][2:] == [error, CHAT_RESULTS[1]]


# --- Responses ---------------------------------------------------------------------------------------


def test_responses_function_calls_run_and_outputs_go_back_through_the_client(parent: Any) -> None:
    api = FakeModelAPI("openai_responses_function_calls.json", "openai_responses_final.json")
    client = openai.OpenAI(api_key="test", http_client=api.client())
    response = client.responses.create(model="gpt-4.1", input=[USER])
    assert [item.type for item in response.output] == ["reasoning", "function_call", "function_call"]

    results = run_tool_calls(response.output, TOOLS)  # the reasoning item is skipped
    assert results == RESPONSES_RESULTS
    check_spans(parent)
    assert run_tool_calls(response, TOOLS) == RESPONSES_RESULTS  # the whole Response

    final = client.responses.create(model="gpt-4.1", input=[USER, *response.output, *results])
    reasoning = {"id": "rs_68toolspanreasoning", "type": "reasoning", "summary": []}
    assert api.body()["input"] == [USER, reasoning, *FUNCTION_CALLS_SENT, *RESPONSES_RESULTS]
    assert final.output_text == "It is 22 °C in Paris, and 25 + 30 = 55."  # a property of the model
    assert run_tool_calls(final, TOOLS) == []


def test_responses_stream_final_response(parent: Any) -> None:
    api = FakeModelAPI("openai_responses_stream.sse", "openai_responses_final.json")
    client = openai.OpenAI(api_key="test", http_client=api.client())
    with client.responses.stream(model="gpt-4.1", input=[USER]) as stream:
        deltas = [event.delta for event in stream if event.type == "response.function_call_arguments.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == '{"city":"Paris"}{"a":25,"b":30}'
    results = run_tool_calls(final, TOOLS)
    assert results == RESPONSES_RESULTS
    check_spans(parent)
    client.responses.create(model="gpt-4.1", input=[USER, *final.output, *results])
    assert api.body()["input"] == [USER, *FUNCTION_CALLS_SENT, *RESPONSES_RESULTS]


def test_responses_parse_with_pydantic_tools_has_parsed_arguments(parent: Any) -> None:
    api = FakeModelAPI("openai_responses_function_calls.json")
    client = openai.OpenAI(api_key="test", http_client=api.client())
    tools = [
        openai.pydantic_function_tool(GetWeather, name="get_weather"),
        openai.pydantic_function_tool(Add, name="add"),
    ]
    response = client.responses.parse(model="gpt-4.1", input=[USER], tools=tools)
    calls = [item for item in response.output if item.type == "function_call"]
    assert [call.parsed_arguments for call in calls] == [GetWeather(city="Paris"), Add(a=25, b=30)]
    assert run_tool_calls(response.output, TOOLS) == RESPONSES_RESULTS
    check_spans(parent)
    assert json.loads(json.dumps(api.body()["tools"]))[0]["name"] == "get_weather"


async def test_async_responses_with_arun_tool_calls(parent: Any) -> None:
    api = FakeModelAPI("openai_responses_function_calls.json", "openai_responses_final.json")
    client = openai.AsyncOpenAI(api_key="test", http_client=api.async_client())
    response = await client.responses.create(model="gpt-4.1", input=[USER])
    results = await arun_tool_calls(response, TOOLS, parallel=False)
    assert results == RESPONSES_RESULTS
    check_spans(parent)
    await client.responses.create(model="gpt-4.1", input=[USER, *response.output, *results])
    assert api.body()["input"][-2:] == RESPONSES_RESULTS


def test_sdk_model_of_another_kind_is_a_type_error_not_iterated(parent: Any) -> None:
    api = FakeModelAPI("openai_chat_tool_calls.json")
    client = openai.OpenAI(api_key="test", http_client=api.client())
    completion = client.chat.completions.create(model="gpt-4.1", messages=[USER])
    with pytest.raises(TypeError, match="calls must be a list of tool calls or an assistant message"):
        run_tool_calls(completion.usage, TOOLS)  # a pydantic model iterates over its fields: never run
    assert parent[0]() == ()
