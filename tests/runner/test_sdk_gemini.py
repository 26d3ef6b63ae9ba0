"""``run_tool_calls`` against the real ``google-genai`` client (``generate_content``, streamed and async),
over a fake HTTP transport: Gemini ``function_call`` parts in, ``function_response`` parts back through
the same client, whose request body is checked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from google import genai
from google.genai import types
from opentelemetry import trace as trace_api

from tests.support.instrumentation import call_id, parent_id
from tests.support.sdk_fake import (
    DATA,
    TOOLS,
    WEATHER,
    FakeModelAPI,
    broken_weather,
    expected_attrs,
    tool_spans,
)
from toolspan import Approval, arun_tool_calls, run_tool_calls
from toolspan.testing import capture_spans

MODEL = "gemini-2.5-flash"
PROMPT = "Weather in Paris, and 25 + 30?"
CALLS = {"fc-weather-paris": "get_weather", "fc-add-two": "add"}
RESULTS = [
    {
        "function_response": {
            "id": "fc-weather-paris",
            "name": "get_weather",
            "response": {"output": WEATHER},
        }
    },
    {"function_response": {"id": "fc-add-two", "name": "add", "response": {"output": 55}}},
]
SIGNATURE = "dG9vbHNwYW4gcmVjb3JkZWQtc2hhcGUgdGhvdWdodCBzaWduYXR1cmUh"
USER_SENT = {"role": "user", "parts": [{"text": PROMPT}]}
MODEL_SENT = {
    "role": "model",
    "parts": [
        {
            "functionCall": {"id": "fc-weather-paris", "name": "get_weather", "args": {"city": "Paris"}},
            "thoughtSignature": SIGNATURE,
        },
        {"functionCall": {"id": "fc-add-two", "name": "add", "args": {"a": 25, "b": 30}}},
    ],
}
RESULTS_SENT = {
    "role": "user",
    "parts": [
        {
            "functionResponse": {
                "id": "fc-weather-paris",
                "name": "get_weather",
                "response": {"output": WEATHER},
            }
        },
        {"functionResponse": {"id": "fc-add-two", "name": "add", "response": {"output": 55}}},
    ],
}


@pytest.fixture
def parent() -> Iterator[Any]:
    """Capture spans; the test body runs under a parent span: yields (spans(), parent span id)."""
    with capture_spans() as spans, trace_api.get_tracer("test").start_as_current_span("agent") as span:
        yield spans, span.get_span_context().span_id


def client_for(api: FakeModelAPI) -> genai.Client:
    options = types.HttpOptions(httpx_client=api.client(), httpx_async_client=api.async_client())
    return genai.Client(api_key="test", http_options=options)


def check_spans(parent: Any) -> None:
    spans, parent_span = parent
    by_id = tool_spans(spans())
    assert set(by_id) == set(CALLS)
    for model_id, name in CALLS.items():
        span = by_id[model_id]
        assert dict(span.attributes or {}) == expected_attrs(span, name, model_id)
        assert parent_id(span) == parent_span


def test_function_call_parts_run_and_responses_go_back_through_the_client(parent: Any) -> None:
    api = FakeModelAPI("gemini_function_calls.json", "gemini_final.json")
    client = client_for(api)
    response = client.models.generate_content(model=MODEL, contents=PROMPT)
    assert isinstance(response, types.GenerateContentResponse)

    results = run_tool_calls(response, TOOLS)  # the whole response: its first candidate's parts
    assert results == RESULTS
    check_spans(parent)
    content = response.candidates[0].content
    assert run_tool_calls(content, TOOLS) == RESULTS  # the model's Content
    assert run_tool_calls(response.function_calls, TOOLS) == RESULTS  # a property: FunctionCall list

    contents: list[Any] = [
        types.Content(role="user", parts=[types.Part(text=PROMPT)]),
        content,
        types.Content(role="user", parts=results),  # dict parts, validated into Parts by the SDK
    ]
    final = client.models.generate_content(model=MODEL, contents=contents)
    assert api.requests[-1].path == f"/v1/models/{MODEL}:generateContent"
    assert api.body()["contents"] == [USER_SENT, MODEL_SENT, RESULTS_SENT]
    assert final.text == "It is 22 °C in Paris, and 25 + 30 = 55."
    assert run_tool_calls(final, TOOLS) == []
    # The results as a plain dict content are accepted the same way.
    api = FakeModelAPI("gemini_final.json")
    client_for(api).models.generate_content(
        model=MODEL, contents=[contents[0], content, {"role": "user", "parts": results}]
    )
    assert api.body()["contents"] == [USER_SENT, MODEL_SENT, RESULTS_SENT]


def test_function_call_without_id_gets_toolspan_id_and_a_response_without_id(parent: Any) -> None:
    api = FakeModelAPI("gemini_function_calls_no_id.json", "gemini_final.json")
    client = client_for(api)
    response = client.models.generate_content(model=MODEL, contents=PROMPT)
    results = run_tool_calls(response, TOOLS)  # the text part is skipped
    assert results == [{"function_response": {"name": "get_weather", "response": {"output": WEATHER}}}]
    spans, parent_span = parent
    (span,) = spans()
    assert dict(span.attributes or {}) == expected_attrs(span, "get_weather", None)
    assert span.attributes["toolspan.tool_call_id"] == call_id(span)
    assert parent_id(span) == parent_span
    content = response.candidates[0].content
    client.models.generate_content(
        model=MODEL, contents=[PROMPT, content, {"role": "user", "parts": results}]
    )
    assert api.body()["contents"][2] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_weather", "response": {"output": WEATHER}}}],
    }


def test_failing_tool_is_an_error_response_the_client_sends(parent: Any) -> None:
    api = FakeModelAPI("gemini_function_calls.json", "gemini_final.json")
    client = client_for(api)
    response = client.models.generate_content(model=MODEL, contents=PROMPT)
    results = run_tool_calls(response, {"get_weather": broken_weather, "add": TOOLS[1]})
    error = {"error": "ConnectionError: weather service down for Paris"}
    assert results == [
        {"function_response": {"id": "fc-weather-paris", "name": "get_weather", "response": error}},
        RESULTS[1],
    ]
    span = tool_spans(parent[0]())["fc-weather-paris"]
    assert dict(span.attributes or {}) == expected_attrs(
        span, "get_weather", "fc-weather-paris", result=None, state="FAILED", error__type="ConnectionError"
    )
    content = response.candidates[0].content
    client.models.generate_content(
        model=MODEL, contents=[PROMPT, content, {"role": "user", "parts": results}]
    )
    sent = api.body()["contents"][2]["parts"]
    assert sent == [
        {"functionResponse": {"id": "fc-weather-paris", "name": "get_weather", "response": error}},
        RESULTS_SENT["parts"][1],
    ]


def test_stream_parts_of_all_chunks(parent: Any) -> None:
    api = FakeModelAPI("gemini_stream.sse", "gemini_final.json")
    client = client_for(api)
    parts = []
    for chunk in client.models.generate_content_stream(model=MODEL, contents=PROMPT):
        parts.extend(chunk.candidates[0].content.parts)
    assert api.requests[0].path == f"/v1/models/{MODEL}:streamGenerateContent"
    results = run_tool_calls(parts, TOOLS)
    assert results == RESULTS
    check_spans(parent)
    content = types.Content(role="model", parts=parts)
    client.models.generate_content(
        model=MODEL, contents=[PROMPT, content, {"role": "user", "parts": results}]
    )
    assert api.body()["contents"] == [USER_SENT, MODEL_SENT, RESULTS_SENT]


async def test_async_client_with_arun_tool_calls(parent: Any) -> None:
    api = FakeModelAPI("gemini_function_calls.json", "gemini_final.json")
    client = client_for(api)
    response = await client.aio.models.generate_content(model=MODEL, contents=PROMPT)
    results = await arun_tool_calls(response, TOOLS)
    assert results == RESULTS
    check_spans(parent)
    content = response.candidates[0].content
    await client.aio.models.generate_content(
        model=MODEL, contents=[PROMPT, content, {"role": "user", "parts": results}]
    )
    assert api.body()["contents"] == [USER_SENT, MODEL_SENT, RESULTS_SENT]


def test_rest_json_dicts_in_camel_case(parent: Any) -> None:
    recorded = json.loads((DATA / "gemini_function_calls.json").read_text(encoding="utf-8"))
    assert run_tool_calls(recorded, TOOLS) == RESULTS  # the raw REST response
    check_spans(parent)
    parts = recorded["candidates"][0]["content"]["parts"]
    assert run_tool_calls([{"text": "Looking."}, *parts], TOOLS) == RESULTS  # text part skipped


def test_denied_call_is_an_error_response_and_a_denied_span(parent: Any) -> None:
    api = FakeModelAPI("gemini_function_calls.json", "gemini_final.json")
    client = client_for(api)
    response = client.models.generate_content(model=MODEL, contents=PROMPT)
    seen: list[tuple[str, str, dict[str, Any], str]] = []

    def approve(call: Any) -> Any:
        seen.append((call.id, call.name, call.arguments, call.api))
        return Approval("deny", note="no weather today") if call.name == "get_weather" else True

    results = run_tool_calls(response, TOOLS, approve=approve, parallel=False)
    denied = {"error": "PermissionDenied: no weather today"}
    assert results == [
        {"function_response": {"id": "fc-weather-paris", "name": "get_weather", "response": denied}},
        RESULTS[1],
    ]
    assert seen == [
        ("fc-weather-paris", "get_weather", {"city": "Paris"}, "gemini"),
        ("fc-add-two", "add", {"a": 25, "b": 30}, "gemini"),
    ]
    span = tool_spans(parent[0]())["fc-weather-paris"]
    assert dict(span.attributes or {}) == expected_attrs(
        span,
        "get_weather",
        "fc-weather-paris",
        result=None,
        state="DENIED",
        error__type="toolspan.ToolDenied",
        # The JSON Schema of its parameters, recorded with the approval request.
        toolspan__tool__parameters='{"additionalProperties":false,"properties":{"city":{"type":"string"}},'
        '"required":["city"],"type":"object"}',
    )
    assert [event.name for event in span.events] == [
        "toolspan.permission_required",
        "toolspan.permission_decided",
    ]
    content = response.candidates[0].content
    client.models.generate_content(
        model=MODEL, contents=[PROMPT, content, {"role": "user", "parts": results}]
    )
    assert api.body()["contents"][2]["parts"][0] == {
        "functionResponse": {"id": "fc-weather-paris", "name": "get_weather", "response": denied}
    }
