"""``run_tool_calls`` against the real ``anthropic`` client (Messages, plain and streamed), over a fake
HTTP transport: the ``tool_result`` blocks go back through the same client, whose request body is
checked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from opentelemetry import trace as trace_api
from opentelemetry.trace import StatusCode

from tests.support.instrumentation import parent_id
from tests.support.sdk_fake import (
    TOOLS,
    WEATHER_TEXT,
    FakeModelAPI,
    broken_weather,
    expected_attrs,
    tool_spans,
)
from toolspan import arun_tool_calls, run_tool_calls
from toolspan.testing import capture_spans

MODEL = "claude-sonnet-4-6"
USER = {"role": "user", "content": "Weather in Paris, and 25 + 30?"}
CALLS = {"toolu_01WeatherParis": "get_weather", "toolu_01AddTwoNumbers": "add"}
RESULTS = [
    {
        "type": "tool_result",
        "tool_use_id": "toolu_01WeatherParis",
        "content": WEATHER_TEXT,
        "is_error": False,
    },
    {"type": "tool_result", "tool_use_id": "toolu_01AddTwoNumbers", "content": "55", "is_error": False},
]
ASSISTANT_SENT = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": "I'll check the weather and do the sum."},
        {"type": "tool_use", "id": "toolu_01WeatherParis", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_01AddTwoNumbers", "name": "add", "input": {"a": 25, "b": 30}},
    ],
}


@pytest.fixture
def parent() -> Iterator[Any]:
    """Capture spans; the test body runs under a parent span: yields (spans(), parent span id)."""
    with capture_spans() as spans, trace_api.get_tracer("test").start_as_current_span("agent") as span:
        yield spans, span.get_span_context().span_id


def check_spans(parent: Any) -> None:
    spans, parent_span = parent
    by_id = tool_spans(spans())
    assert set(by_id) == set(CALLS)
    for call_id, name in CALLS.items():
        span = by_id[call_id]
        assert dict(span.attributes or {}) == expected_attrs(span, name, call_id)
        assert parent_id(span) == parent_span


def next_turn(client: anthropic.Anthropic, content: Any, results: list[dict[str, Any]]) -> Any:
    return client.messages.create(
        model=MODEL,
        max_tokens=1024,
        messages=[USER, {"role": "assistant", "content": content}, {"role": "user", "content": results}],
    )


def test_message_tool_use_blocks_run_and_results_go_back_through_the_client(parent: Any) -> None:
    api = FakeModelAPI("anthropic_tool_use.json", "anthropic_final.json")
    client = anthropic.Anthropic(api_key="test", http_client=api.client())
    message = client.messages.create(model=MODEL, max_tokens=1024, messages=[USER])
    assert isinstance(message, anthropic.types.Message)
    assert message.stop_reason == "tool_use"

    results = run_tool_calls(message, TOOLS)  # the whole message: the text block is skipped
    assert results == RESULTS
    check_spans(parent)
    assert run_tool_calls(message.content, TOOLS) == RESULTS

    final = next_turn(client, message.content, results)
    assert api.body()["messages"] == [USER, ASSISTANT_SENT, {"role": "user", "content": RESULTS}]
    assert final.content[0].type == "text"
    assert run_tool_calls(final, TOOLS) == []


def test_stream_final_message(parent: Any) -> None:
    api = FakeModelAPI("anthropic_stream.sse", "anthropic_final.json")
    client = anthropic.Anthropic(api_key="test", http_client=api.client())
    with client.messages.stream(model=MODEL, max_tokens=1024, messages=[USER]) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "I'll check the weather and do the sum."
    results = run_tool_calls(final, TOOLS)
    assert results == RESULTS
    check_spans(parent)
    next_turn(client, final.content, results)
    assert api.body()["messages"] == [USER, ASSISTANT_SENT, {"role": "user", "content": RESULTS}]


def test_failing_tool_is_an_is_error_block_the_client_sends(parent: Any) -> None:
    api = FakeModelAPI("anthropic_tool_use.json", "anthropic_final.json")
    client = anthropic.Anthropic(api_key="test", http_client=api.client())
    message = client.messages.create(model=MODEL, max_tokens=1024, messages=[USER])
    results = run_tool_calls(message, {"get_weather": broken_weather, "add": TOOLS[1]})
    error = {
        "type": "tool_result",
        "tool_use_id": "toolu_01WeatherParis",
        "content": "ConnectionError: weather service down for Paris",
        "is_error": True,
    }
    assert results == [error, RESULTS[1]]
    span = tool_spans(parent[0]())["toolu_01WeatherParis"]
    assert span.status.status_code == StatusCode.ERROR
    assert dict(span.attributes or {}) == expected_attrs(
        span,
        "get_weather",
        "toolu_01WeatherParis",
        result=None,
        state="FAILED",
        error__type="ConnectionError",
    )
    next_turn(client, message.content, results)
    assert api.body()["messages"][2] == {"role": "user", "content": [error, RESULTS[1]]}


async def test_async_client_with_arun_tool_calls(parent: Any) -> None:
    api = FakeModelAPI("anthropic_stream.sse", "anthropic_final.json")
    client = anthropic.AsyncAnthropic(api_key="test", http_client=api.async_client())
    async with client.messages.stream(model=MODEL, max_tokens=1024, messages=[USER]) as stream:
        final = await stream.get_final_message()
    results = await arun_tool_calls(final.content, TOOLS)
    assert results == RESULTS
    check_spans(parent)
    await client.messages.create(
        model=MODEL,
        max_tokens=1024,
        messages=[
            USER,
            {"role": "assistant", "content": final.content},
            {"role": "user", "content": results},
        ],
    )
    assert api.body()["messages"] == [USER, ASSISTANT_SENT, {"role": "user", "content": RESULTS}]
