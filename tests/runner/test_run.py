"""``run_tool_calls`` / ``arun_tool_calls``: a model's tool calls as tool spans, results for the model."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Literal

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from pydantic import BaseModel

import toolspan
from toolspan import semconv
from toolspan._runner import run as _calls
from toolspan._runner.run import ToolCall, arun_tool_calls, run_tool_calls
from toolspan.testing import capture_spans

_ABSENT: Any = object()


# --- stand-ins for the SDK types (pydantic models, like the real ones: attribute access, iterable) ---


class OpenAIFunction(BaseModel):
    name: str
    arguments: str


class OpenAIToolCall(BaseModel):  # openai.types.chat.ChatCompletionMessageToolCall
    id: str
    type: Literal["function"] = "function"
    function: OpenAIFunction


class OpenAIMessage(BaseModel):  # openai.types.chat.ChatCompletionMessage
    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: list[OpenAIToolCall] | None = None


class AnthropicText(BaseModel):  # anthropic.types.TextBlock
    type: Literal["text"] = "text"
    text: str


class AnthropicToolUse(BaseModel):  # anthropic.types.ToolUseBlock
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


class AnthropicMessage(BaseModel):  # anthropic.types.Message
    role: Literal["assistant"] = "assistant"
    content: list[AnthropicText | AnthropicToolUse]


def openai_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


# --- tools -----------------------------------------------------------------------------------------


def get_weather(city: str, unit: str = "C") -> dict[str, Any]:
    """Current weather of a city."""
    if city == "Atlantis":
        raise ValueError("unknown city: Atlantis")
    return {"city": city, "temp": 22, "unit": unit}


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@toolspan.tool(name="lookup", description="Look a key up.")
def lookup_impl(key: str) -> str:
    return key.upper()


# --- expected spans --------------------------------------------------------------------------------


def tool_attrs(
    span: ReadableSpan,
    name: str,
    call_id: str | None,
    arguments: dict[str, Any],
    *,
    description: str | None = None,
    result: Any = _ABSENT,
    state: str = semconv.STATE_COMPLETED,
    error_type: str | None = None,
    items: int | None = None,
    parameters: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The whole attribute dict a tool span run by run_tool_calls must carry; ``parameters`` (a gated call:
    the JSON Schema of its parameters, recorded with the approval request): name -> JSON type, all
    required."""
    assert span.context is not None
    hex_id = format(span.context.span_id, "016x")
    args = json.dumps(arguments, ensure_ascii=False)
    attrs: dict[str, Any] = {
        semconv.GEN_AI_OPERATION_NAME: semconv.OP_EXECUTE_TOOL,
        semconv.GEN_AI_TOOL_NAME: name,
        semconv.GEN_AI_TOOL_TYPE: "function",
        semconv.OPENINFERENCE_SPAN_KIND: "TOOL",
        semconv.OI_TOOL_NAME: name,
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS: args,
        semconv.OI_INPUT_VALUE: args,
        semconv.OI_INPUT_MIME_TYPE: "application/json",
        semconv.TOOLSPAN_EXECUTION_ID: "exec_" + hex_id,
        semconv.TOOLSPAN_TOOL_CALL_ID: call_id if call_id is not None else "call_" + hex_id,
        semconv.TOOLSPAN_TOOL_STATE: state,
    }
    if call_id is not None:
        attrs[semconv.GEN_AI_TOOL_CALL_ID] = call_id
    if description is not None:
        attrs[semconv.GEN_AI_TOOL_DESCRIPTION] = description
        attrs[semconv.OI_TOOL_DESCRIPTION] = description
    if result is not _ABSENT:
        text = json.dumps(result, ensure_ascii=False)
        attrs[semconv.GEN_AI_TOOL_CALL_RESULT] = text
        attrs[semconv.OI_OUTPUT_VALUE] = text
        attrs[semconv.OI_OUTPUT_MIME_TYPE] = "application/json"
    if error_type is not None:
        attrs[semconv.ERROR_TYPE] = error_type
    if items is not None:
        attrs[semconv.TOOLSPAN_RESULT_ITEMS] = items
    if parameters is not None:
        schema: dict[str, Any] = {
            "additionalProperties": False,
            "properties": {p: {"type": kind} for p, kind in parameters.items()},
            "type": "object",
        }
        if parameters:
            schema["required"] = list(parameters)
        attrs[semconv.TOOLSPAN_TOOL_PARAMETERS] = json.dumps(schema, separators=(",", ":"), sort_keys=True)
    return attrs


def tool_spans(spans: Sequence[ReadableSpan]) -> dict[str, ReadableSpan]:
    """Tool spans by their toolspan.tool_call_id (asserting there is one span per id)."""
    found: dict[str, ReadableSpan] = {}
    for span in spans:
        attrs = span.attributes or {}
        if attrs.get(semconv.GEN_AI_OPERATION_NAME) == semconv.OP_EXECUTE_TOOL:
            call_id = str(attrs[semconv.TOOLSPAN_TOOL_CALL_ID])
            assert call_id not in found, f"two spans with call id {call_id}"
            found[call_id] = span
    return found


def events(span: ReadableSpan) -> list[tuple[str, dict[str, Any]]]:
    return [(e.name, dict(e.attributes or {})) for e in span.events]


def waited(span: ReadableSpan) -> dict[str, int]:
    """The latency attribute of a span's permission_decided: from its permission_required, by their times."""
    required, decided = (e.timestamp for e in span.events if e.name.startswith("toolspan.permission_"))
    return {semconv.PERMISSION_LATENCY_MS: (decided - required) // 1_000_000}


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


@pytest.fixture
def parent() -> Iterator[Any]:
    """Capture spans and run the test body under a parent span; yields (spans(), parent span id)."""
    with capture_spans() as spans:
        tracer = trace_api.get_tracer("test")
        with tracer.start_as_current_span("agent") as span:
            yield spans, span.get_span_context().span_id


# --- OpenAI ---------------------------------------------------------------------------------------


def test_openai_dicts_run_in_order_with_model_ids(parent: Any) -> None:
    spans, parent_span = parent
    calls = [
        openai_call("call_w", "get_weather", {"city": "Paris"}),
        openai_call("call_a", "add", {"a": 25, "b": 30}),
    ]
    results = run_tool_calls(calls, {"get_weather": get_weather, "add": add})
    assert results == [
        {"role": "tool", "tool_call_id": "call_w", "content": '{"city": "Paris", "temp": 22, "unit": "C"}'},
        {"role": "tool", "tool_call_id": "call_a", "content": "55"},
    ]
    by_id = tool_spans(spans())
    assert set(by_id) == {"call_w", "call_a"}
    weather, added = by_id["call_w"], by_id["call_a"]
    assert weather.name == "execute_tool get_weather"
    assert weather.kind == trace_api.SpanKind.INTERNAL
    assert dict(weather.attributes or {}) == tool_attrs(
        weather,
        "get_weather",
        "call_w",
        {"city": "Paris", "unit": "C"},
        description="Current weather of a city.",
        result={"city": "Paris", "temp": 22, "unit": "C"},
    )
    assert dict(added.attributes or {}) == tool_attrs(
        added, "add", "call_a", {"a": 25, "b": 30}, description="Add two numbers.", result=55
    )
    assert parent_id(weather) == parent_id(added) == parent_span
    assert weather.status.status_code == added.status.status_code == StatusCode.UNSET


def test_openai_sdk_objects_and_whole_message(parent: Any) -> None:
    spans, _ = parent
    message = OpenAIMessage(
        tool_calls=[
            OpenAIToolCall(id="call_1", function=OpenAIFunction(name="add", arguments='{"a": 1, "b": 2}')),
            OpenAIToolCall(id="call_2", function=OpenAIFunction(name="add", arguments='{"a": 3, "b": 4}')),
        ]
    )
    expected = [
        {"role": "tool", "tool_call_id": "call_1", "content": "3"},
        {"role": "tool", "tool_call_id": "call_2", "content": "7"},
    ]
    assert run_tool_calls(message, [add]) == expected  # the whole assistant message
    assert run_tool_calls(message.tool_calls, [add]) == expected  # its tool_calls list
    assert run_tool_calls(message.model_dump(), [add]) == expected  # the message as a dict
    finished = spans()
    assert len(finished) == 6  # three runs of two calls
    for span in finished:
        call_id = str((span.attributes or {})[semconv.GEN_AI_TOOL_CALL_ID])
        a, b = (1, 2) if call_id == "call_1" else (3, 4)
        assert dict(span.attributes or {}) == tool_attrs(
            span, "add", call_id, {"a": a, "b": b}, description="Add two numbers.", result=a + b
        )


def test_message_without_tool_calls_gives_no_results(parent: Any) -> None:
    spans, _ = parent
    assert run_tool_calls(OpenAIMessage(content="Done."), [add]) == []
    assert run_tool_calls({"role": "assistant", "content": "Done.", "tool_calls": None}, [add]) == []
    assert run_tool_calls(AnthropicMessage(content=[AnthropicText(text="Done.")]), [add]) == []
    assert run_tool_calls([], [add]) == []
    assert spans() == ()


def test_openai_responses_function_call_items(parent: Any) -> None:
    spans, _ = parent
    item = {"type": "function_call", "call_id": "fc_1", "name": "add", "arguments": '{"a": 2, "b": 2}'}
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    assert run_tool_calls([reasoning, item], [add]) == [
        {"type": "function_call_output", "call_id": "fc_1", "output": "4"}
    ]
    (span,) = spans()
    assert dict(span.attributes or {}) == tool_attrs(
        span, "add", "fc_1", {"a": 2, "b": 2}, description="Add two numbers.", result=4
    )


def test_openai_failure_is_an_error_result_and_a_failed_span(parent: Any) -> None:
    spans, parent_span = parent
    results = run_tool_calls([openai_call("call_x", "get_weather", {"city": "Atlantis"})], [get_weather])
    assert results == [
        {"role": "tool", "tool_call_id": "call_x", "content": "ValueError: unknown city: Atlantis"}
    ]
    (span,) = spans()
    assert dict(span.attributes or {}) == tool_attrs(
        span,
        "get_weather",
        "call_x",
        {"city": "Atlantis", "unit": "C"},
        description="Current weather of a city.",
        state=semconv.STATE_FAILED,
        error_type="ValueError",
    )
    assert span.status.status_code == StatusCode.ERROR
    assert [e.name for e in span.events] == ["exception"]
    assert parent_id(span) == parent_span


# --- Anthropic ------------------------------------------------------------------------------------


def test_anthropic_content_blocks_skip_text(parent: Any) -> None:
    spans, parent_span = parent
    content = [
        {"type": "text", "text": "Let me check."},
        tool_use("toolu_01", "get_weather", {"city": "Paris", "unit": "F"}),
        {"type": "thinking", "thinking": "...", "signature": "x"},
        tool_use("toolu_02", "add", {"a": 25, "b": 30}),
    ]
    expected = [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01",
            "content": '{"city": "Paris", "temp": 22, "unit": "F"}',
            "is_error": False,
        },
        {"type": "tool_result", "tool_use_id": "toolu_02", "content": "55", "is_error": False},
    ]
    assert run_tool_calls(content, [get_weather, add]) == expected
    by_id = tool_spans(spans())
    assert dict(by_id["toolu_01"].attributes or {}) == tool_attrs(
        by_id["toolu_01"],
        "get_weather",
        "toolu_01",
        {"city": "Paris", "unit": "F"},
        description="Current weather of a city.",
        result={"city": "Paris", "temp": 22, "unit": "F"},
    )
    assert dict(by_id["toolu_02"].attributes or {}) == tool_attrs(
        by_id["toolu_02"], "add", "toolu_02", {"a": 25, "b": 30}, description="Add two numbers.", result=55
    )
    assert {parent_id(s) for s in by_id.values()} == {parent_span}
    # the whole assistant message, as a dict, gives the same results
    assert run_tool_calls({"role": "assistant", "content": content}, [get_weather, add]) == expected


def test_anthropic_sdk_objects_and_failure(parent: Any) -> None:
    spans, _ = parent
    message = AnthropicMessage(
        content=[
            AnthropicText(text="Checking."),
            AnthropicToolUse(id="toolu_ok", name="get_weather", input={"city": "Oslo"}),
            AnthropicToolUse(id="toolu_bad", name="get_weather", input={"city": "Atlantis"}),
        ]
    )
    assert run_tool_calls(message, {"get_weather": get_weather}) == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_ok",
            "content": '{"city": "Oslo", "temp": 22, "unit": "C"}',
            "is_error": False,
        },
        {
            "type": "tool_result",
            "tool_use_id": "toolu_bad",
            "content": "ValueError: unknown city: Atlantis",
            "is_error": True,
        },
    ]
    by_id = tool_spans(spans())
    assert by_id["toolu_bad"].attributes is not None
    assert dict(by_id["toolu_bad"].attributes) == tool_attrs(
        by_id["toolu_bad"],
        "get_weather",
        "toolu_bad",
        {"city": "Atlantis", "unit": "C"},
        description="Current weather of a city.",
        state=semconv.STATE_FAILED,
        error_type="ValueError",
    )
    assert by_id["toolu_ok"].attributes is not None
    assert by_id["toolu_ok"].attributes[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_COMPLETED
    # the content list of the SDK message works as well
    assert len(run_tool_calls(message.content, [get_weather])) == 2


# --- errors that happen before a tool runs -----------------------------------------------------------


def test_unknown_tool_is_an_error_result_without_a_span(parent: Any) -> None:
    spans, _ = parent
    results = run_tool_calls(
        [tool_use("toolu_1", "fly", {}), openai_call("call_1", "fly", {})],
        {"add": add, "get_weather": get_weather},
    )
    message = "ToolNotFoundError: no tool named 'fly' (available: add, get_weather)"
    assert results == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": message, "is_error": True},
        {"role": "tool", "tool_call_id": "call_1", "content": message},
    ]
    assert spans() == ()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('{"a": 1,', "InvalidArgumentsError: arguments are not valid JSON: "),
        ("[1, 2]", "InvalidArgumentsError: arguments must be a JSON object, got list"),
        ('"a=1"', "InvalidArgumentsError: arguments must be a JSON object, got str"),
    ],
)
def test_bad_arguments_are_an_error_result_without_a_span(parent: Any, arguments: str, message: str) -> None:
    spans, _ = parent
    (result,) = run_tool_calls([openai_call("call_1", "add", arguments)], [add])
    assert result["role"] == "tool"
    assert result["tool_call_id"] == "call_1"
    assert result["content"].startswith(message)
    assert spans() == ()


def test_empty_arguments_mean_no_arguments(parent: Any) -> None:
    spans, _ = parent

    def ping() -> str:
        return "pong"

    assert run_tool_calls([openai_call("call_1", "ping", "")], [ping]) == [
        {"role": "tool", "tool_call_id": "call_1", "content": '"pong"'}
    ]
    (span,) = spans()
    assert dict(span.attributes or {}) == tool_attrs(span, "ping", "call_1", {}, result="pong")


def test_arguments_not_matching_the_signature_fail_the_span(parent: Any) -> None:
    spans, _ = parent
    (result,) = run_tool_calls([tool_use("toolu_1", "add", {"a": 1, "c": 2})], [add])
    assert result == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "TypeError: add() got an unexpected keyword argument 'c'",
        "is_error": True,
    }
    (span,) = spans()
    assert dict(span.attributes or {}) == tool_attrs(
        span,
        "add",
        "toolu_1",
        {"a": 1, "c": 2},
        description="Add two numbers.",
        state=semconv.STATE_FAILED,
        error_type="TypeError",
    )


def test_unrecognized_input_raises_type_error_before_running_anything(parent: Any) -> None:
    spans, _ = parent
    ran: list[int] = []

    def count() -> None:
        ran.append(1)

    with pytest.raises(TypeError, match=r"calls\[1\] is not an OpenAI tool call"):
        run_tool_calls([tool_use("toolu_1", "count", {}), {"name": "count"}], [count])
    with pytest.raises(TypeError, match=r"calls\[0\] has no call id"):
        run_tool_calls([{"type": "tool_use", "name": "count", "input": {}}], [count])
    with pytest.raises(TypeError, match="calls must be"):
        run_tool_calls("count", [count])
    assert ran == []
    assert spans() == ()


def test_list_registry_with_two_tools_of_one_name_is_rejected() -> None:
    def a() -> None: ...

    def b() -> None: ...

    b.__name__ = "a"
    with pytest.raises(ValueError, match="two tools are named 'a'"):
        run_tool_calls([], [a, b])


# --- content -------------------------------------------------------------------------------------------


def test_content_is_full_unredacted_json_while_telemetry_is_redacted_and_bounded(parent: Any) -> None:
    spans, _ = parent
    big = "x" * 40_000

    def secrets() -> dict[str, Any]:
        return {"api_key": "sk-123", "payload": big}

    (result,) = run_tool_calls([tool_use("toolu_1", "secrets", {})], [secrets])
    assert json.loads(result["content"]) == {"api_key": "sk-123", "payload": big}
    (span,) = spans()
    recorded = str((span.attributes or {})[semconv.GEN_AI_TOOL_CALL_RESULT])
    assert "sk-123" not in recorded
    assert len(recorded.encode()) <= 16384
    json.loads(recorded)  # still valid JSON


def test_string_result_is_json_text() -> None:
    (result,) = run_tool_calls([openai_call("c1", "lookup", {"key": "ab"})], [lookup_impl])
    assert result == {"role": "tool", "tool_call_id": "c1", "content": '"AB"'}


def test_generator_tools_give_the_list_they_yielded(parent: Any) -> None:
    spans, _ = parent

    def count_to(n: int) -> Iterator[int]:
        yield from range(1, n + 1)

    async def acount_to(n: int) -> AsyncIterator[int]:
        for i in range(1, n + 1):
            yield i

    results = run_tool_calls(
        [tool_use("toolu_1", "count_to", {"n": 3}), tool_use("toolu_2", "acount_to", {"n": 2})],
        [count_to, acount_to],
    )
    assert [r["content"] for r in results] == ["[1, 2, 3]", "[1, 2]"]
    by_id = tool_spans(spans())
    assert dict(by_id["toolu_1"].attributes or {}) == tool_attrs(
        by_id["toolu_1"], "count_to", "toolu_1", {"n": 3}, result=[1, 2, 3], items=3
    )
    assert dict(by_id["toolu_2"].attributes or {}) == tool_attrs(
        by_id["toolu_2"], "acount_to", "toolu_2", {"n": 2}, result=[1, 2], items=2
    )


# --- registries ------------------------------------------------------------------------------------------


def test_decorated_tools_keep_their_name_and_the_registry_is_untouched(parent: Any) -> None:
    spans, _ = parent
    registry = {"lookup": lookup_impl, "add": add}
    before = dict(registry)
    assert run_tool_calls([openai_call("c1", "lookup", {"key": "k"})], registry) == [
        {"role": "tool", "tool_call_id": "c1", "content": '"K"'}
    ]
    assert registry == before
    assert all(registry[k] is before[k] for k in registry)
    assert toolspan._instrument.tool.tool_info(add) is None  # the plain function was not decorated in place
    (span,) = spans()
    assert span.name == "execute_tool lookup"
    assert dict(span.attributes or {}) == tool_attrs(
        span, "lookup", "c1", {"key": "k"}, description="Look a key up.", result="K"
    )


def test_list_registry_names_decorated_tools_by_their_tool_name() -> None:
    assert (
        run_tool_calls([openai_call("c1", "lookup", {"key": "z"})], [lookup_impl, add])[0]["content"] == '"Z"'
    )
    result = run_tool_calls([openai_call("c2", "lookup_impl", {"key": "z"})], [lookup_impl])[0]["content"]
    assert result.startswith("ToolNotFoundError: no tool named 'lookup_impl'")


def test_dict_key_names_an_undecorated_tool(parent: Any) -> None:
    spans, _ = parent
    assert (
        run_tool_calls([tool_use("t1", "sum_two", {"a": 1, "b": 1})], {"sum_two": add})[0]["content"] == "2"
    )
    (span,) = spans()
    assert span.name == "execute_tool sum_two"


def test_methods_decorated_or_not(parent: Any) -> None:
    spans, _ = parent

    class Calculator:
        def __init__(self, base: int) -> None:
            self.base = base

        def plus(self, x: int) -> int:
            """Add to the base."""
            return self.base + x

        @toolspan.tool
        def times(self, x: int) -> int:
            """Multiply the base."""
            return self.base * x

    calc = Calculator(10)
    results = run_tool_calls(
        [tool_use("t1", "plus", {"x": 5}), tool_use("t2", "times", {"x": 3})], [calc.plus, calc.times]
    )
    assert [r["content"] for r in results] == ["15", "30"]
    by_id = tool_spans(spans())
    assert dict(by_id["t1"].attributes or {}) == tool_attrs(
        by_id["t1"], "plus", "t1", {"x": 5}, description="Add to the base.", result=15
    )
    assert dict(by_id["t2"].attributes or {}) == tool_attrs(
        by_id["t2"], "times", "t2", {"x": 3}, description="Multiply the base.", result=30
    )


def test_instrumentation_is_cached_per_callable() -> None:
    first = _calls._instrumented(add, "add", None)
    assert _calls._instrumented(add, "add", None) is first
    assert _calls._instrumented(add, "plus", None) is not first

    class Box:
        def get(self) -> int:
            return 1

    box = Box()
    assert _calls._instrumented(box.get, "get", None) is _calls._instrumented(box.get, "get", None)
    assert _calls._instrumented(Box().get, "get", None) is not _calls._instrumented(box.get, "get", None)


def test_runs_and_approves_without_an_sdk_provider() -> None:
    calls = [openai_call("c1", "add", {"a": 1, "b": 1}), openai_call("c2", "get_weather", {"city": "Rome"})]
    assert run_tool_calls(calls, [add, get_weather]) == [
        {"role": "tool", "tool_call_id": "c1", "content": "2"},
        {"role": "tool", "tool_call_id": "c2", "content": '{"city": "Rome", "temp": 22, "unit": "C"}'},
    ]
    assert run_tool_calls(calls, [add, get_weather], approve=lambda call: call.name == "add") == [
        {"role": "tool", "tool_call_id": "c1", "content": "2"},
        {"role": "tool", "tool_call_id": "c2", "content": "PermissionDenied: denied by the approver"},
    ]


# --- parallelism -----------------------------------------------------------------------------------------


def test_parallel_calls_of_one_tool_get_distinct_spans_and_ids(parent: Any) -> None:
    spans, parent_span = parent
    n = 4
    barrier = threading.Barrier(n, timeout=30)  # passes only if all n calls run at the same time
    threads: set[int] = set()

    def echo(text: str) -> str:
        """Echo."""
        threads.add(threading.get_ident())
        barrier.wait()
        return text

    calls = [tool_use(f"toolu_{i}", "echo", {"text": f"t{i}"}) for i in range(n)]
    results = run_tool_calls(calls, [echo])
    assert results == [
        {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f'"t{i}"', "is_error": False}
        for i in range(n)
    ]
    assert len(threads) == n
    by_id = tool_spans(spans())
    assert set(by_id) == {f"toolu_{i}" for i in range(n)}
    for i in range(n):
        span = by_id[f"toolu_{i}"]
        assert dict(span.attributes or {}) == tool_attrs(
            span, "echo", f"toolu_{i}", {"text": f"t{i}"}, description="Echo.", result=f"t{i}"
        )
        assert parent_id(span) == parent_span
    assert len({s.context.span_id for s in by_id.values() if s.context}) == n


def test_not_parallel_runs_in_order_in_the_calling_thread(parent: Any) -> None:
    spans, parent_span = parent
    seen: list[tuple[str, int]] = []

    def note(text: str) -> str:
        seen.append((text, threading.get_ident()))
        return text

    calls = [openai_call(f"c{i}", "note", {"text": str(i)}) for i in range(3)]
    results = run_tool_calls(calls, [note], parallel=False)
    assert [r["content"] for r in results] == ['"0"', '"1"', '"2"']
    assert seen == [(str(i), threading.get_ident()) for i in range(3)]
    assert [s.attributes[semconv.GEN_AI_TOOL_CALL_ID] for s in spans() if s.attributes] == ["c0", "c1", "c2"]
    assert {parent_id(s) for s in spans()} == {parent_span}


def test_max_workers_bounds_the_pool() -> None:
    threads: set[int] = set()

    def where(i: int) -> int:
        threads.add(threading.get_ident())
        return i

    results = run_tool_calls([tool_use(f"t{i}", "where", {"i": i}) for i in range(6)], [where], max_workers=1)
    assert [r["content"] for r in results] == [str(i) for i in range(6)]
    assert len(threads) == 1


def test_coroutine_tools_in_sync_run(parent: Any) -> None:
    spans, parent_span = parent

    async def double(x: int) -> int:
        """Double."""
        await asyncio.sleep(0)
        return 2 * x

    for parallel in (True, False):
        results = run_tool_calls(
            [tool_use("t1", "double", {"x": 2}), tool_use("t2", "double", {"x": 5})],
            [double],
            parallel=parallel,
        )
        assert [r["content"] for r in results] == ["4", "10"]
    finished = spans()
    assert len(finished) == 4
    for span in finished:
        call_id = str((span.attributes or {})[semconv.GEN_AI_TOOL_CALL_ID])
        x = 2 if call_id == "t1" else 5
        assert dict(span.attributes or {}) == tool_attrs(
            span, "double", call_id, {"x": x}, description="Double.", result=2 * x
        )
        assert parent_id(span) == parent_span


async def test_sync_run_inside_a_running_loop_runs_coroutine_tools_in_a_helper_thread() -> None:
    async def triple(x: int) -> int:
        return 3 * x

    with capture_spans() as spans:
        results = run_tool_calls([tool_use("t1", "triple", {"x": 3})], [triple], parallel=False)
    assert results[0]["content"] == "9"
    assert len(spans()) == 1


# --- async ---------------------------------------------------------------------------------------------


async def test_arun_gathers_coroutine_tools_and_threads_sync_ones() -> None:
    n = 3
    arrived = 0
    all_here = asyncio.Event()
    loop_thread = threading.get_ident()
    sync_threads: list[int] = []

    async def meet(i: int) -> int:
        """Wait for the others."""
        nonlocal arrived
        arrived += 1
        if arrived == n:
            all_here.set()
        await asyncio.wait_for(all_here.wait(), 30)  # completes only if the calls run concurrently
        return i

    def blocking(i: int) -> int:
        sync_threads.append(threading.get_ident())
        return -i

    with capture_spans() as spans:
        tracer = trace_api.get_tracer("test")
        with tracer.start_as_current_span("agent") as agent:
            calls = [tool_use(f"m{i}", "meet", {"i": i}) for i in range(n)]
            calls.append(openai_call("b1", "blocking", {"i": 7}))
            results = await arun_tool_calls(calls, [meet, blocking])
    assert results[:n] == [
        {"type": "tool_result", "tool_use_id": f"m{i}", "content": str(i), "is_error": False}
        for i in range(n)
    ]
    assert results[n] == {"role": "tool", "tool_call_id": "b1", "content": "-7"}
    assert sync_threads
    assert sync_threads[0] != loop_thread
    by_id = tool_spans(spans())
    assert set(by_id) == {"m0", "m1", "m2", "b1"}
    for i in range(n):
        span = by_id[f"m{i}"]
        assert dict(span.attributes or {}) == tool_attrs(
            span, "meet", f"m{i}", {"i": i}, description="Wait for the others.", result=i
        )
    assert dict(by_id["b1"].attributes or {}) == tool_attrs(
        by_id["b1"], "blocking", "b1", {"i": 7}, result=-7
    )
    assert {parent_id(s) for s in by_id.values()} == {agent.get_span_context().span_id}


async def test_arun_sequential_and_errors() -> None:
    order: list[int] = []

    async def step(i: int) -> int:
        order.append(i)
        if i == 1:
            raise RuntimeError("step 1 broke")
        return i

    with capture_spans() as spans:
        results = await arun_tool_calls(
            [tool_use(f"s{i}", "step", {"i": i}) for i in range(3)] + [tool_use("s9", "nope", {})],
            [step],
            parallel=False,
        )
    assert order == [0, 1, 2]
    assert [(r["content"], r["is_error"]) for r in results] == [
        ("0", False),
        ("RuntimeError: step 1 broke", True),
        ("2", False),
        ("ToolNotFoundError: no tool named 'nope' (available: step)", True),
    ]
    failed = tool_spans(spans())["s1"]
    assert dict(failed.attributes or {}) == tool_attrs(
        failed, "step", "s1", {"i": 1}, state=semconv.STATE_FAILED, error_type="RuntimeError"
    )


async def test_arun_max_workers_bounds_concurrency() -> None:
    running = 0
    peak = 0

    async def busy(i: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0)
        running -= 1
        return i

    results = await arun_tool_calls(
        [tool_use(f"b{i}", "busy", {"i": i}) for i in range(5)], [busy], max_workers=2
    )
    assert [r["content"] for r in results] == [str(i) for i in range(5)]
    assert peak == 2


# --- approvals ---------------------------------------------------------------------------------------------


def test_approval_allow_runs_the_tool_with_events_on_its_span(parent: Any) -> None:
    spans, _ = parent
    seen: list[ToolCall] = []

    def approve(call: ToolCall) -> bool:
        seen.append(call)
        return True

    results = run_tool_calls([tool_use("toolu_1", "add", {"a": 1, "b": 2})], [add], approve=approve)
    assert results == [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3", "is_error": False}]
    assert seen == [ToolCall(id="toolu_1", name="add", arguments={"a": 1, "b": 2}, api="anthropic")]
    (span,) = spans()
    assert dict(span.attributes or {}) == tool_attrs(
        span,
        "add",
        "toolu_1",
        {"a": 1, "b": 2},
        description="Add two numbers.",
        result=3,
        parameters={"a": "integer", "b": "integer"},
    )
    assert events(span) == [
        (semconv.PERMISSION_REQUIRED_EVENT, {}),
        (semconv.PERMISSION_DECIDED_EVENT, {semconv.PERMISSION_DECISION: "allow", **waited(span)}),
    ]


def test_approval_deny_does_not_run_the_tool(parent: Any) -> None:
    spans, _ = parent
    ran: list[str] = []

    def bash_run(command: str) -> str:
        ran.append(command)
        return "done"

    def approve(call: ToolCall) -> toolspan.Approval:
        if call.name == "bash_run":
            return toolspan.Approval("deny", note="Demo inbox denies bash_run by default.")
        return toolspan.Approval("allow", note="fine")

    results = run_tool_calls(
        [
            tool_use("toolu_1", "bash_run", {"command": "rm -rf /"}),
            openai_call("call_2", "add", {"a": 1, "b": 1}),
        ],
        [bash_run, add],
        approve=approve,
    )
    assert results == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": "PermissionDenied: Demo inbox denies bash_run by default.",
            "is_error": True,
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "2"},
    ]
    assert ran == []
    by_id = tool_spans(spans())
    denied, allowed = by_id["toolu_1"], by_id["call_2"]
    assert dict(denied.attributes or {}) == tool_attrs(
        denied,
        "bash_run",
        "toolu_1",
        {"command": "rm -rf /"},
        state=semconv.STATE_DENIED,
        error_type="toolspan.ToolDenied",
        parameters={"command": "string"},
    )
    assert denied.status.status_code == StatusCode.UNSET
    assert events(denied) == [
        (semconv.PERMISSION_REQUIRED_EVENT, {}),
        (
            semconv.PERMISSION_DECIDED_EVENT,
            {
                semconv.PERMISSION_DECISION: "deny",
                semconv.PERMISSION_NOTE: "Demo inbox denies bash_run by default.",
                **waited(denied),
            },
        ),
    ]
    assert events(allowed) == [
        (semconv.PERMISSION_REQUIRED_EVENT, {}),
        (
            semconv.PERMISSION_DECIDED_EVENT,
            {semconv.PERMISSION_DECISION: "allow", semconv.PERMISSION_NOTE: "fine", **waited(allowed)},
        ),
    ]


@pytest.mark.parametrize("verdict", [False, toolspan.Approval("deny")], ids=["False", "deny"])
def test_approval_deny_without_a_note(parent: Any, verdict: Any) -> None:
    spans, _ = parent
    (result,) = run_tool_calls(
        [openai_call("c1", "add", {"a": 1, "b": 1})], [add], approve=lambda call: verdict
    )
    assert result == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "PermissionDenied: denied by the approver",
    }
    (span,) = spans()
    assert (span.attributes or {})[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_DENIED
    assert events(span)[1] == (
        semconv.PERMISSION_DECIDED_EVENT,
        {semconv.PERMISSION_DECISION: "deny", **waited(span)},
    )


def test_approval_that_raises_denies_and_logs(parent: Any, caplog: pytest.LogCaptureFixture) -> None:
    spans, _ = parent
    ran: list[int] = []

    def count() -> int:
        ran.append(1)
        return 1

    def approve(call: ToolCall) -> bool:
        raise RuntimeError("approval service down")

    with caplog.at_level(logging.WARNING, logger="toolspan._runner.run"):
        (result,) = run_tool_calls([tool_use("t1", "count", {})], [count], approve=approve)
    note = "approval failed: RuntimeError: approval service down"
    assert result == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": f"PermissionDenied: {note}",
        "is_error": True,
    }
    assert ran == []
    assert any(r.exc_info and isinstance(r.exc_info[1], RuntimeError) for r in caplog.records)
    (span,) = spans()
    assert dict(span.attributes or {}) == tool_attrs(
        span, "count", "t1", {}, state=semconv.STATE_DENIED, error_type="toolspan.ToolDenied", parameters={}
    )
    assert events(span) == [
        (semconv.PERMISSION_REQUIRED_EVENT, {}),
        (
            semconv.PERMISSION_DECIDED_EVENT,
            {semconv.PERMISSION_DECISION: "deny", semconv.PERMISSION_NOTE: note, **waited(span)},
        ),
    ]


def test_approval_with_an_unknown_answer_denies(parent: Any) -> None:
    spans, _ = parent
    (result,) = run_tool_calls(
        [openai_call("c1", "add", {"a": 1, "b": 1})], [add], approve=lambda call: "maybe"
    )
    assert result["content"] == (
        "PermissionDenied: approval failed: ValueError: approve returned 'maybe'; "
        "expected True, False or an Approval"
    )
    (span,) = spans()
    assert (span.attributes or {})[semconv.TOOLSPAN_TOOL_STATE] == semconv.STATE_DENIED


def test_async_approver_in_sync_run_and_generator_tool_gated(parent: Any) -> None:
    spans, _ = parent
    started: list[int] = []

    def numbers(n: int) -> Iterator[int]:
        started.append(n)
        yield from range(n)

    async def approve(call: ToolCall) -> bool:
        await asyncio.sleep(0)
        return call.arguments["n"] < 5

    results = run_tool_calls(
        [tool_use("t1", "numbers", {"n": 2}), tool_use("t2", "numbers", {"n": 9})], [numbers], approve=approve
    )
    assert [r["content"] for r in results] == ["[0, 1]", "PermissionDenied: denied by the approver"]
    assert started == [2]
    by_id = tool_spans(spans())
    assert by_id["t2"].attributes is not None
    assert dict(by_id["t2"].attributes) == tool_attrs(
        by_id["t2"],
        "numbers",
        "t2",
        {"n": 9},
        state=semconv.STATE_DENIED,
        error_type="toolspan.ToolDenied",
        items=0,
        parameters={"n": "integer"},
    )


async def test_arun_async_approver_for_async_and_sync_tools() -> None:
    asked: list[str] = []
    loop = asyncio.get_running_loop()

    async def approve(call: ToolCall) -> toolspan.Approval:
        assert asyncio.get_running_loop() is loop  # async approvers run on the caller's loop
        asked.append(call.id)
        return toolspan.Approval("allow" if call.name != "wipe" else "deny", note=f"checked {call.id}")

    async def wipe() -> str:
        raise AssertionError("must not run")

    with capture_spans() as spans:
        results = await arun_tool_calls(
            [tool_use("a1", "add", {"a": 2, "b": 3}), tool_use("w1", "wipe", {})],
            [add, wipe],
            approve=approve,
        )
    assert results == [
        {"type": "tool_result", "tool_use_id": "a1", "content": "5", "is_error": False},
        {
            "type": "tool_result",
            "tool_use_id": "w1",
            "content": "PermissionDenied: checked w1",
            "is_error": True,
        },
    ]
    assert sorted(asked) == ["a1", "w1"]
    by_id = tool_spans(spans())
    assert events(by_id["a1"])[1] == (
        semconv.PERMISSION_DECIDED_EVENT,
        {
            semconv.PERMISSION_DECISION: "allow",
            semconv.PERMISSION_NOTE: "checked a1",
            **waited(by_id["a1"]),
        },
    )
    assert dict(by_id["w1"].attributes or {}) == tool_attrs(
        by_id["w1"],
        "wipe",
        "w1",
        {},
        state=semconv.STATE_DENIED,
        error_type="toolspan.ToolDenied",
        parameters={},
    )


def test_no_approver_records_no_permission_events(parent: Any) -> None:
    spans, _ = parent
    run_tool_calls([openai_call("c1", "add", {"a": 1, "b": 1})], [add])
    (span,) = spans()
    assert events(span) == []


# --- nesting -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("parallel", [True, False])
def test_sub_plan_in_a_tool_is_a_child_of_that_tool_span(parallel: bool) -> None:
    def search(query: str) -> list[str]:
        return [query]

    def research(topic: str) -> int:
        """Research with a sub-plan."""
        with toolspan.plan(f"research {topic}"):
            (found,) = run_tool_calls([tool_use(f"sub_{topic}", "search", {"query": topic})], [search])
        return len(found["content"])

    with capture_spans() as spans:
        results = run_tool_calls(
            [
                tool_use("toolu_r1", "research", {"topic": "a"}),
                tool_use("toolu_r2", "research", {"topic": "b"}),
            ],
            [research],
            parallel=parallel,
        )
    assert [r["content"] for r in results] == ["5", "5"]
    finished = spans()
    by_id = tool_spans(finished)
    plans = {s.name: s for s in finished if s.name.startswith("plan ")}
    assert set(plans) == {"plan research a", "plan research b"}
    for topic in ("a", "b"):
        tool_span, plan_span, sub_tool = (
            by_id[f"toolu_r{'ab'.index(topic) + 1}"],
            plans[f"plan research {topic}"],
            by_id[f"sub_{topic}"],
        )
        assert tool_span.context is not None
        assert plan_span.context is not None
        assert parent_id(plan_span) == tool_span.context.span_id
        assert parent_id(sub_tool) == plan_span.context.span_id
        assert dict(plan_span.attributes or {}) == {
            semconv.TOOLSPAN_PLAN_NAME: f"research {topic}",
            semconv.OPENINFERENCE_SPAN_KIND: "CHAIN",
            semconv.TOOLSPAN_PARENT_EXECUTION_ID: "exec_" + format(tool_span.context.span_id, "016x"),
            semconv.TOOLSPAN_PARENT_TOOL_CALL_ID: f"toolu_r{'ab'.index(topic) + 1}",
        }
        assert plan_span.links == ()
        assert dict(sub_tool.attributes or {}) == tool_attrs(
            sub_tool, "search", f"sub_{topic}", {"query": topic}, result=[topic]
        )


def test_public_names() -> None:
    assert toolspan.run_tool_calls is run_tool_calls
    assert toolspan.arun_tool_calls is arun_tool_calls
    assert toolspan.ToolCall is ToolCall


def test_openai_custom_tool_call_gets_an_error_result(parent: Any) -> None:
    spans, _ = parent
    call = {"id": "call_c", "type": "custom", "custom": {"name": "add", "input": "1 + 1"}}
    assert run_tool_calls([call], [add]) == [
        {
            "role": "tool",
            "tool_call_id": "call_c",
            "content": "UnsupportedToolCallError: custom (free-form input) tool calls are not supported",
        }
    ]
    assert spans() == ()


def test_unrecognized_dict_is_rejected() -> None:
    with pytest.raises(TypeError, match="calls must be"):
        run_tool_calls({"name": "add"}, [add])


@pytest.mark.parametrize("bad", [0, -1])
async def test_bad_max_workers_is_rejected(bad: int) -> None:
    with pytest.raises(ValueError, match="max_workers must be a positive int"):
        run_tool_calls([], [add], max_workers=bad)
    with pytest.raises(ValueError, match="max_workers must be a positive int"):
        await arun_tool_calls([], [add], max_workers=bad)


def test_tracer_provider_argument_receives_the_spans() -> None:
    with capture_spans() as global_spans, capture_spans(install=False) as own_spans:
        provider = own_spans.provider
        results = run_tool_calls(
            [openai_call("c1", "add", {"a": 1, "b": 2}), openai_call("c2", "lookup", {"key": "x"})],
            [add, lookup_impl],
            tracer_provider=provider,
        )
    assert [r["content"] for r in results] == ["3", '"X"']
    assert global_spans() == ()
    by_id = tool_spans(own_spans())
    assert dict(by_id["c1"].attributes or {}) == tool_attrs(
        by_id["c1"], "add", "c1", {"a": 1, "b": 2}, description="Add two numbers.", result=3
    )
    assert dict(by_id["c2"].attributes or {}) == tool_attrs(
        by_id["c2"], "lookup", "c2", {"key": "x"}, description="Look a key up.", result="X"
    )


def test_structured_results_become_json_objects() -> None:
    from dataclasses import dataclass

    @dataclass
    class Forecast:
        city: str
        temps: tuple[int, ...]

    class Report(BaseModel):
        title: str
        forecast: list[int]

    def forecast() -> Forecast:
        return Forecast("Paris", (18, 19))

    def report() -> Report:
        return Report(title="weekly", forecast=[1, 2])

    results = run_tool_calls(
        [tool_use("t1", "forecast", {}), tool_use("t2", "report", {})], [forecast, report]
    )
    assert [json.loads(r["content"]) for r in results] == [
        {"city": "Paris", "temps": [18, 19]},
        {"title": "weekly", "forecast": [1, 2]},
    ]


async def test_callable_objects_and_partials_in_a_dict_registry() -> None:
    import functools

    class Scale:
        """Scale a number."""

        def __init__(self, factor: int) -> None:
            self.factor = factor

        def __call__(self, x: int) -> int:
            return self.factor * x

    class AsyncScale(Scale):
        async def __call__(self, x: int) -> int:  # type: ignore[override]
            await asyncio.sleep(0)
            return self.factor * x

    registry = {"double": Scale(2), "triple": AsyncScale(3), "add_ten": functools.partial(add, 10)}
    calls = [
        tool_use("d", "double", {"x": 4}),
        tool_use("t", "triple", {"x": 4}),
        tool_use("a", "add_ten", {"b": 1}),
    ]
    with capture_spans() as spans:
        results = await arun_tool_calls(calls, registry)
    assert [r["content"] for r in results] == ["8", "12", "11"]
    by_id = tool_spans(spans())
    assert dict(by_id["d"].attributes or {}) == tool_attrs(
        by_id["d"], "double", "d", {"x": 4}, description="Scale a number.", result=8
    )
    assert dict(by_id["t"].attributes or {}) == tool_attrs(
        by_id["t"],
        "triple",
        "t",
        {"x": 4},
        result=12,  # a docstring is not inherited
    )
    assert dict(by_id["a"].attributes or {}) == tool_attrs(
        by_id["a"], "add_ten", "a", {"b": 1}, description="Add two numbers.", result=11
    )
