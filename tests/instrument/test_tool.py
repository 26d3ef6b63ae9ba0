"""@tool / wrap / wrap_tools: the tool span contract on every kind of function."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
import traceback
import tracemalloc
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import SpanKind, StatusCode

import toolspan
from tests.support.instrumentation import Spans, by_name, exec_id, parent_id, tool_attrs
from toolspan import semconv
from toolspan._capture import serialize as _serialize
from toolspan._instrument.tool import tool_info
from toolspan.config import Config, set_config
from toolspan.testing import capture_spans, installed_tracer_provider

pytestmark = pytest.mark.usefixtures("fresh_config")


class QuotaError(Exception):
    pass


@toolspan.tool
def add(a: int, b: int = 2) -> int:
    """Add two numbers.

    The second paragraph is not part of the description.
    """
    return a + b


@toolspan.tool(name="search_docs", description="Search the docs.", tool_type="datastore")
async def search(query: str, *, limit: int = 3) -> list[str]:
    await asyncio.sleep(0)
    return [query] * limit


@toolspan.tool
def count(n: int):  # type: ignore[no-untyped-def]
    """Count up to n."""
    total = 0
    for i in range(n):
        received = yield i
        total += received or 0
    return total


@toolspan.tool
async def acount(n: int):  # type: ignore[no-untyped-def]
    for i in range(n):
        await asyncio.sleep(0)
        yield i


@toolspan.tool
def fail(reason: str) -> None:
    raise QuotaError(reason)


@toolspan.tool
def fail_builtin() -> None:
    raise ValueError("bad value")


class Toolbox:
    factor = 10

    @toolspan.tool
    def scale(self, x: int) -> int:
        return x * self.factor

    @toolspan.tool
    @classmethod
    def cls_above(cls, x: int) -> int:
        return x * cls.factor

    @classmethod
    @toolspan.tool
    def cls_below(cls, x: int) -> int:
        return x * cls.factor

    @toolspan.tool
    @staticmethod
    def static_above(x: int) -> int:
        return x + 1

    @staticmethod
    @toolspan.tool
    def static_below(x: int) -> int:
        return x + 2

    @toolspan.tool
    async def ascale(self, x: int) -> int:
        return x * self.factor


def only(spans: Spans) -> ReadableSpan:
    finished = spans()
    assert len(finished) == 1, [s.name for s in finished]
    return finished[0]


# --- the span contract, per kind ---------------------------------------------------------------------


def test_sync_function_span_is_complete(spans: Spans) -> None:
    assert add(1) == 3
    span = only(spans)
    assert span.name == "execute_tool add"
    assert span.kind is SpanKind.INTERNAL
    assert span.status.status_code is StatusCode.UNSET
    assert span.events == ()
    assert dict(span.attributes or {}) == tool_attrs(
        span, "add", arguments='{"a": 1, "b": 2}', result="3", description="Add two numbers."
    )


async def test_coroutine_with_explicit_name_description_and_type(spans: Spans) -> None:
    assert await search("otel", limit=2) == ["otel", "otel"]
    span = only(spans)
    assert span.name == "execute_tool search_docs"
    assert dict(span.attributes or {}) == tool_attrs(
        span,
        "search_docs",
        arguments='{"query": "otel", "limit": 2}',
        result='["otel", "otel"]',
        description="Search the docs.",
        tool_type="datastore",
    )


def test_generator_span_covers_iteration_and_forwards_send(spans: Spans) -> None:
    gen = count(3)
    assert spans() == ()  # nothing runs (and no span starts) before the first next()
    assert next(gen) == 0
    assert gen.send(5) == 1
    assert spans() == ()  # still open while iterating
    assert gen.send(7) == 2
    with pytest.raises(StopIteration) as stop:
        gen.send(1)
    assert stop.value.value == 13  # the return value comes through exactly
    span = only(spans)
    assert dict(span.attributes or {}) == tool_attrs(
        span,
        "count",
        arguments='{"n": 3}',
        result="[0, 1, 2]",
        description="Count up to n.",
        toolspan__result__items=3,
    )


def test_generator_throw_is_forwarded() -> None:
    @toolspan.tool
    def resilient():  # type: ignore[no-untyped-def]
        try:
            yield 1
        except KeyError as exc:
            yield f"handled {exc.args[0]}"

    with capture_spans() as spans:
        gen = resilient()
        assert next(gen) == 1
        assert gen.throw(KeyError("k")) == "handled k"
        with pytest.raises(StopIteration):
            next(gen)
    span = only(spans)
    assert dict(span.attributes or {}) == tool_attrs(
        span, "resilient", arguments="{}", result='[1, "handled k"]', toolspan__result__items=2
    )


async def test_async_generator_span(spans: Spans) -> None:
    assert [i async for i in acount(2)] == [0, 1]
    span = only(spans)
    assert dict(span.attributes or {}) == tool_attrs(
        span, "acount", arguments='{"n": 2}', result="[0, 1]", toolspan__result__items=2
    )


def test_generator_child_spans_parent_to_tool_span_at_every_resume(spans: Spans) -> None:
    tracer = trace_api.get_tracer("test")

    @toolspan.tool
    def steps():  # type: ignore[no-untyped-def]
        for i in range(2):
            with tracer.start_as_current_span(f"step {i}"):
                pass
            yield i

    gen = steps()
    with tracer.start_as_current_span("consumer A"):
        next(gen)
    with tracer.start_as_current_span("consumer B"):
        next(gen)
        with pytest.raises(StopIteration):
            next(gen)
        assert trace_api.get_current_span().name == "consumer B"  # type: ignore[attr-defined]
    finished = spans()
    tool_span = by_name(finished, "execute_tool steps")
    assert tool_span.context is not None
    assert parent_id(by_name(finished, "step 0")) == tool_span.context.span_id
    assert parent_id(by_name(finished, "step 1")) == tool_span.context.span_id
    consumer_a = by_name(finished, "consumer A")
    assert consumer_a.context is not None
    assert parent_id(tool_span) == consumer_a.context.span_id  # started at the first next()


async def test_async_generator_child_spans_parent_to_tool_span(spans: Spans) -> None:
    tracer = trace_api.get_tracer("test")

    @toolspan.tool
    async def steps():  # type: ignore[no-untyped-def]
        for i in range(2):
            await asyncio.sleep(0)
            with tracer.start_as_current_span(f"step {i}"):
                pass
            yield i

    agen = steps()
    with tracer.start_as_current_span("consumer"):
        assert await agen.__anext__() == 0
    with tracer.start_as_current_span("other"):
        assert await agen.__anext__() == 1
        with pytest.raises(StopAsyncIteration):
            await agen.__anext__()
    finished = spans()
    tool_span = by_name(finished, "execute_tool steps")
    assert tool_span.context is not None
    for name in ("step 0", "step 1"):
        assert parent_id(by_name(finished, name)) == tool_span.context.span_id


def test_methods_classmethods_staticmethods_leave_out_receiver(spans: Spans) -> None:
    box = Toolbox()
    assert box.scale(2) == 20
    assert Toolbox.scale(box, 3) == 30
    assert Toolbox.cls_above(4) == 40
    assert box.cls_below(5) == 50
    assert Toolbox.static_above(6) == 7
    assert box.static_below(7) == 9
    expected = [
        ("scale", 2, 20),
        ("scale", 3, 30),
        ("cls_above", 4, 40),
        ("cls_below", 5, 50),
        ("static_above", 6, 7),
        ("static_below", 7, 9),
    ]
    finished = spans()
    assert [span.name for span in finished] == [f"execute_tool {name}" for name, _, _ in expected]
    for span, (name, x, result) in zip(finished, expected, strict=True):
        assert dict(span.attributes or {}) == tool_attrs(
            span, name, arguments=f'{{"x": {x}}}', result=str(result)
        )


async def test_async_method(spans: Spans) -> None:
    assert await Toolbox().ascale(4) == 40
    span = only(spans)
    assert dict(span.attributes or {}) == tool_attrs(span, "ascale", arguments='{"x": 4}', result="40")


def test_arguments_mapping_star_args_kwargs_and_defaults(spans: Spans) -> None:
    @toolspan.tool
    def mixed(a, b=1, *rest, flag=False, **extra):  # type: ignore[no-untyped-def]
        return None

    mixed(1, 2, 3, 4, color="red")
    mixed(0)
    mixed(a=5, flag=True)
    got = [(s.attributes or {})["gen_ai.tool.call.arguments"] for s in spans()]
    assert [json.loads(text) for text in got] == [
        {"a": 1, "b": 2, "rest": [3, 4], "color": "red", "flag": False},
        {"a": 0, "b": 1, "flag": False},
        {"a": 5, "flag": True, "b": 1},
    ]
    assert got[0] == '{"a": 1, "b": 2, "rest": [3, 4], "color": "red", "flag": false}'


# --- introspection --------------------------------------------------------------------------------------


def test_decorated_functions_keep_name_signature_doc_and_kind() -> None:
    assert add.__name__ == "add"
    assert add.__doc__ is not None
    assert add.__doc__.startswith("Add two numbers.")
    assert str(inspect.signature(add)) == "(a: 'int', b: 'int' = 2) -> 'int'"
    assert str(inspect.signature(search)) == "(query: 'str', *, limit: 'int' = 3) -> 'list[str]'"
    assert str(inspect.signature(Toolbox().scale)) == "(x: 'int') -> 'int'"
    assert str(inspect.signature(Toolbox.cls_above)) == "(x: 'int') -> 'int'"
    assert str(inspect.signature(Toolbox.cls_below)) == "(x: 'int') -> 'int'"
    assert str(inspect.signature(Toolbox.static_below)) == "(x: 'int') -> 'int'"
    assert str(inspect.signature(Toolbox.static_above)) == "(x: 'int') -> 'int'"
    kinds = {
        fn.__name__: (
            inspect.iscoroutinefunction(fn),
            inspect.isgeneratorfunction(fn),
            inspect.isasyncgenfunction(fn),
        )
        for fn in (add, search, count, acount, Toolbox().ascale, Toolbox().scale)
    }
    assert kinds == {
        "add": (False, False, False),
        "search": (True, False, False),
        "count": (False, True, False),
        "acount": (False, False, True),
        "ascale": (True, False, False),
        "scale": (False, False, False),
    }


# --- outcomes ---------------------------------------------------------------------------------------------


def test_failure_reraises_the_same_exception_with_traceback(spans: Spans) -> None:
    with pytest.raises(QuotaError) as info:
        fail("quota exceeded")
    frames = [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    assert frames[-1] == "fail"  # the tool's own frame is still the origin
    span = only(spans)
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "QuotaError: quota exceeded"
    assert dict(span.attributes or {}) == tool_attrs(
        span,
        "fail",
        arguments='{"reason": "quota exceeded"}',
        state="FAILED",
        error__type=f"{__name__}.QuotaError",
    )
    assert [event.name for event in span.events] == ["exception"]
    event_attrs = dict(span.events[0].attributes or {})
    assert event_attrs["exception.message"] == "quota exceeded"
    assert "QuotaError" in str(event_attrs["exception.type"])
    assert "quota exceeded" in str(event_attrs["exception.stacktrace"])


def test_same_exception_object_is_raised(spans: Spans) -> None:
    error = QuotaError("x")

    @toolspan.tool
    def raiser() -> None:
        raise error

    with pytest.raises(QuotaError) as info:
        raiser()
    assert info.value is error


def test_builtin_error_type_is_not_qualified(spans: Spans) -> None:
    with pytest.raises(ValueError, match="bad value"):
        fail_builtin()
    span = only(spans)
    assert dict(span.attributes or {}) == tool_attrs(
        span, "fail_builtin", arguments="{}", state="FAILED", error__type="ValueError"
    )


async def test_cancelled_task_is_cancelled_not_failed(spans: Spans) -> None:
    started = asyncio.Event()

    @toolspan.tool
    async def slow() -> None:
        started.set()
        await asyncio.sleep(60)

    task = asyncio.create_task(slow())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    span = only(spans)
    assert span.status.status_code is StatusCode.UNSET
    assert span.events == ()
    assert dict(span.attributes or {}) == tool_attrs(
        span, "slow", arguments="{}", state="CANCELLED", error__type="CancelledError"
    )


def test_keyboard_interrupt_is_cancelled(spans: Spans) -> None:
    @toolspan.tool
    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted()
    span = only(spans)
    assert span.status.status_code is StatusCode.UNSET
    assert dict(span.attributes or {}) == tool_attrs(
        span, "interrupted", arguments="{}", state="CANCELLED", error__type="KeyboardInterrupt"
    )


def test_generator_closed_early_is_cancelled_and_runs_cleanup_in_span(spans: Spans) -> None:
    seen: list[str | None] = []

    @toolspan.tool
    def stream():  # type: ignore[no-untyped-def]
        try:
            yield 1
            yield 2
        finally:
            seen.append(toolspan.current_execution_id())

    gen = stream()
    assert next(gen) == 1
    gen.close()
    span = only(spans)
    assert seen == [exec_id(span)]  # the tool's cleanup ran with its span current
    assert span.status.status_code is StatusCode.UNSET
    assert [(e.name, dict(e.attributes or {})) for e in span.events] == [
        ("toolspan.generator.closed", {"toolspan.result.items": 1})
    ]
    assert dict(span.attributes or {}) == tool_attrs(
        span,
        "stream",
        arguments="{}",
        result="[1]",  # what it yielded before it was closed (replay yields it again)
        state="CANCELLED",
        error__type="GeneratorExit",
        toolspan__result__items=1,
    )


async def test_async_generator_closed_early_is_cancelled(spans: Spans) -> None:
    agen = acount(5)
    assert await agen.__anext__() == 0
    await agen.aclose()
    span = only(spans)
    assert [e.name for e in span.events] == ["toolspan.generator.closed"]
    assert dict(span.attributes or {}) == tool_attrs(
        span,
        "acount",
        arguments='{"n": 5}',
        result="[0]",
        state="CANCELLED",
        error__type="GeneratorExit",
        toolspan__result__items=1,
    )


def test_generator_failure_mid_iteration(spans: Spans) -> None:
    @toolspan.tool
    def broken():  # type: ignore[no-untyped-def]
        yield 1
        raise QuotaError("mid")

    with pytest.raises(QuotaError):
        list(broken())
    span = only(spans)
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {}) == tool_attrs(
        span,
        "broken",
        arguments="{}",
        state="FAILED",
        error__type=f"{__name__}.QuotaError",
        toolspan__result__items=1,
    )


def test_tool_denied_is_denied_not_failed(spans: Spans) -> None:
    @toolspan.tool
    def delete_all() -> None:
        toolspan.record_permission_required(note="destructive")
        toolspan.record_permission_decided("deny", note="not today")
        raise toolspan.ToolDenied("not today")

    with pytest.raises(toolspan.ToolDenied) as info:
        delete_all()
    assert info.value.note == "not today"
    span = only(spans)
    assert span.status.status_code is StatusCode.UNSET
    assert dict(span.attributes or {}) == tool_attrs(
        span, "delete_all", arguments="{}", state="DENIED", error__type="toolspan.ToolDenied"
    )
    assert [(e.name, dict(e.attributes or {})) for e in span.events] == [
        ("toolspan.permission_required", {"toolspan.permission.note": "destructive"}),
        (
            "toolspan.permission_decided",
            {"toolspan.permission.decision": "deny", "toolspan.permission.note": "not today"},
        ),
    ]


def test_permission_decided_accepts_bool_and_rejects_nonsense(spans: Spans) -> None:
    @toolspan.tool
    def allowed() -> str:
        toolspan.record_permission_required()
        toolspan.record_permission_decided(True)
        return "ok"

    assert allowed() == "ok"
    span = only(spans)
    assert [(e.name, dict(e.attributes or {})) for e in span.events] == [
        ("toolspan.permission_required", {}),
        ("toolspan.permission_decided", {"toolspan.permission.decision": "allow"}),
    ]
    with pytest.raises(ValueError, match="decision must be"):
        toolspan.record_permission_decided("maybe")


# --- telemetry never breaks the call -------------------------------------------------------------------


def test_serializer_failure_is_logged_and_the_span_still_ends(
    spans: Spans, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(value: Any, config: Config) -> str:
        raise RuntimeError("serializer down")

    monkeypatch.setattr(_serialize, "dumps", explode)
    monkeypatch.setattr(_serialize, "dumps_exact", explode)
    monkeypatch.setattr(_serialize, "dumps_marked", explode)
    with caplog.at_level(logging.WARNING, logger="toolspan"):
        assert add(1, 1) == 2
    span = only(spans)
    assert span.end_time is not None
    # Neither arguments nor result could be serialized; everything else is there.
    assert dict(span.attributes or {}) == tool_attrs(span, "add", description="Add two numbers.")
    assert "could not record the arguments of add" in caplog.text
    assert "could not record the result of add" in caplog.text


def test_serializer_failure_at_the_end_keeps_the_state(spans: Spans, monkeypatch: pytest.MonkeyPatch) -> None:
    real = _serialize.dumps
    calls: list[Any] = []

    def fail_on_result(value: Any, config: Config) -> str:
        calls.append(value)
        if len(calls) == 2:
            raise RuntimeError("boom")
        return real(value, config)

    real_exact = _serialize.dumps_exact

    def exact(value: Any, config: Config) -> tuple[str, bool]:
        calls.append(value)
        return real_exact(value, config)

    monkeypatch.setattr(_serialize, "dumps", fail_on_result)
    monkeypatch.setattr(_serialize, "dumps_exact", exact)
    monkeypatch.setattr(
        _serialize, "dumps_marked", lambda value, config: (fail_on_result(value, config), False)
    )
    assert add(2, 2) == 4
    span = only(spans)
    assert dict(span.attributes or {}) == tool_attrs(
        span, "add", arguments='{"a": 2, "b": 2}', description="Add two numbers."
    )
    assert span.end_time is not None


def test_non_recording_span_serializes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    spy: list[Any] = []
    real = _serialize.dumps

    real_exact = _serialize.dumps_exact

    def counting(value: Any, config: Config) -> str:
        spy.append(value)
        return real(value, config)

    def counting_exact(value: Any, config: Config) -> tuple[str, bool]:
        spy.append(value)
        return real_exact(value, config)

    monkeypatch.setattr(_serialize, "dumps", counting)
    monkeypatch.setattr(_serialize, "dumps_exact", counting_exact)
    monkeypatch.setattr(_serialize, "dumps_marked", counting_exact)
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    seen: list[str | None] = []

    @toolspan.tool
    def observed(x: int) -> int:
        seen.append(toolspan.current_execution_id())
        return x * 2

    with installed_tracer_provider(provider):
        assert observed(21) == 42
        assert list(count(2)) == [0, 1]
    assert exporter.get_finished_spans() == ()
    assert spy == []  # neither arguments nor results were serialized
    assert seen[0] is not None
    assert seen[0].startswith("exec_")
    with capture_spans():  # and the spy does see a recorded call
        observed(1)
    assert spy == [{"x": 1}, 2]


def test_a_call_under_an_unsampled_parent_serializes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's default sampler drops a span whose parent was not sampled: its arguments are never
    serialized, while a root call under the same provider serializes them before the span starts."""
    spy: list[Any] = []
    real_exact = _serialize.dumps_exact

    def counting_exact(value: Any, config: Config) -> tuple[str, bool]:
        spy.append(value)
        return real_exact(value, config)

    monkeypatch.setattr(_serialize, "dumps_exact", counting_exact)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()  # ParentBased(ALWAYS_ON)
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    @toolspan.tool
    def observed(x: int) -> int:
        return x * 2

    unsampled = trace_api.SpanContext(0xAB, 0xCD, is_remote=True, trace_flags=trace_api.TraceFlags(0))
    with installed_tracer_provider(provider):
        token = context_api.attach(trace_api.set_span_in_context(trace_api.NonRecordingSpan(unsampled)))
        try:
            assert observed(21) == 42
        finally:
            context_api.detach(token)
        assert exporter.get_finished_spans() == ()
        assert spy == []
        assert observed(1) == 2
    (span,) = exporter.get_finished_spans()
    assert spy == [{"x": 1}]  # the arguments (the result goes through ``dumps``)
    assert (span.attributes or {})["gen_ai.tool.call.arguments"] == '{"x": 1}'


def test_no_provider_calls_straight_through() -> None:
    assert trace_api._TRACER_PROVIDER is None
    seen: list[str | None] = []

    @toolspan.tool
    def plain() -> str:
        seen.append(toolspan.current_execution_id())
        return "ok"

    assert plain() == "ok"
    assert seen == [None]
    gen = count(2)
    assert inspect.isgenerator(gen)
    assert list(gen) == [0, 1]
    coro = search("q", limit=1)
    assert inspect.iscoroutine(coro)
    assert asyncio.run(coro) == ["q"]

    class Shop:
        @toolspan.tool
        def price(self, n: int) -> int:
            seen.append(toolspan.current_execution_id())
            return n * 2

        @toolspan.tool
        @classmethod
        def currency(cls) -> str:
            seen.append(toolspan.current_execution_id())
            return cls.__name__

    assert (Shop().price(3), Shop.currency()) == (6, "Shop")
    assert seen == [None, None, None]
    with capture_spans() as spans:  # a provider installed later is picked up by the same tools
        plain()
        Shop().price(1)
        Shop.currency()
    assert [span.name for span in spans()] == [
        "execute_tool plain",
        "execute_tool price",
        "execute_tool currency",
    ]


def test_explicit_tracer_provider_without_global() -> None:
    with capture_spans(install=False) as spans:
        provider = spans.provider

        @toolspan.tool(tracer_provider=provider)
        def local(x: int) -> int:
            return x

        assert local(5) == 5
    assert [span.name for span in spans()] == ["execute_tool local"]


def test_span_processor_on_start_sees_the_start_attributes() -> None:
    seen: list[dict[str, Any]] = []

    class Recorder(SpanProcessor):
        def on_start(self, span: Span, parent_context: Context | None = None) -> None:
            seen.append(dict(span.attributes or {}))

    with capture_spans() as spans:
        spans.provider.add_span_processor(Recorder())
        with toolspan.tool_call_id("toolu_01"):
            add(4, 5)
    assert seen == [
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "add",
            "gen_ai.tool.type": "function",
            "gen_ai.tool.description": "Add two numbers.",
            "gen_ai.tool.call.id": "toolu_01",
            "gen_ai.tool.call.arguments": '{"a": 4, "b": 5}',
        }
    ]
    # OpenInference's span kind, tool name, description and input repeat the GenAI ones: with the ids.
    (span,) = spans()
    attrs = span.attributes or {}
    assert attrs["openinference.span.kind"] == "TOOL"
    assert (attrs["tool.name"], attrs["tool.description"]) == ("add", "Add two numbers.")
    assert (attrs["input.value"], attrs["input.mime_type"]) == ('{"a": 4, "b": 5}', "application/json")


def test_an_openinference_only_span_names_its_tool_at_the_start(fresh_config: None) -> None:
    seen: list[dict[str, Any]] = []

    class Recorder(SpanProcessor):
        def on_start(self, span: Span, parent_context: Context | None = None) -> None:
            seen.append(dict(span.attributes or {}))

    set_config(Config(conventions="openinference"))
    with capture_spans() as spans:
        spans.provider.add_span_processor(Recorder())
        add(4, 5)
    assert (seen[0]["tool.name"], seen[0]["tool.description"]) == ("add", "Add two numbers.")
    assert seen[0]["openinference.span.kind"] == "TOOL"


# --- content policy ---------------------------------------------------------------------------------------


def test_content_off_records_no_arguments_or_results(spans: Spans, content_off: None) -> None:
    assert add(1, 2) == 3
    assert list(count(2)) == [0, 1]
    tool_span, gen_span = spans()
    assert dict(tool_span.attributes or {}) == tool_attrs(tool_span, "add", description="Add two numbers.")
    assert dict(gen_span.attributes or {}) == tool_attrs(
        gen_span, "count", description="Count up to n.", toolspan__result__items=2
    )


def test_secrets_are_redacted_at_any_depth(spans: Spans) -> None:
    @toolspan.tool
    def call_api(request: dict[str, Any], api_key: str) -> dict[str, Any]:
        return {"auth": {"token": "t-123"}, "ok": True}

    call_api({"headers": {"Authorization": "Bearer abc"}, "url": "u"}, api_key="sk-1")
    span = only(spans)
    attrs = dict(span.attributes or {})
    arguments = json.loads(attrs["gen_ai.tool.call.arguments"])
    assert arguments == {
        "request": {"headers": {"Authorization": "[REDACTED]"}, "url": "u"},
        "api_key": "[REDACTED]",
    }
    assert json.loads(attrs["gen_ai.tool.call.result"]) == {"auth": {"token": "[REDACTED]"}, "ok": True}
    for key in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"):
        assert "sk-1" not in attrs[key]
        assert "abc" not in attrs[key]
        assert "t-123" not in attrs[key]


def test_long_values_are_truncated_to_valid_json_within_budget(spans: Spans) -> None:
    set_config(Config(max_attribute_bytes=256))

    @toolspan.tool
    def echo(text: str) -> list[str]:
        return [text] * 50

    echo("x" * 5000)
    attrs = dict(only(spans).attributes or {})
    for key in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "input.value", "output.value"):
        text = attrs[key]
        assert len(text.encode()) <= 256
        json.loads(text)  # still valid JSON


def test_generator_aggregate_is_bounded(spans: Spans) -> None:
    set_config(Config(max_attribute_bytes=128))

    @toolspan.tool
    def many():  # type: ignore[no-untyped-def]
        yield from range(10_000)

    assert sum(1 for _ in many()) == 10_000
    attrs = dict(only(spans).attributes or {})
    assert attrs["toolspan.result.items"] == 10_000
    assert len(attrs["gen_ai.tool.call.result"].encode()) <= 128
    json.loads(attrs["gen_ai.tool.call.result"])


def test_generator_of_huge_items_keeps_only_what_the_budget_holds(spans: Spans) -> None:
    mib = 1 << 20

    @toolspan.tool
    def chunks() -> Iterator[str]:
        for index in range(1000):
            yield chr(ord("a") + index % 26) * mib  # a new 1 MiB string each time

    tracemalloc.start()
    try:
        count = sum(1 for _ in chunks())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 1000
    assert peak < 8 * mib  # before: every item kept until the end, +1 GB
    attrs = dict(only(spans).attributes or {})
    assert attrs["toolspan.result.items"] == 1000
    result = attrs["gen_ai.tool.call.result"]
    assert len(result.encode()) <= 16384
    items = json.loads(result)
    assert items[-1] == "...[truncated 999 items]"
    kept = re.fullmatch(r"(a+)\.\.\.\[truncated (\d+) chars\]", items[0])
    assert kept is not None
    assert len(kept[1]) + int(kept[2]) == mib


def test_generator_items_are_redacted_as_they_arrive(spans: Spans) -> None:
    @toolspan.tool
    def pages() -> Iterator[Any]:
        box = {"token": "t1", "n": 1}
        yield box
        box["n"] = 2  # later changes to a yielded object do not rewrite what was recorded
        yield ("Authorization", "Bearer b2")

    assert list(pages()) == [{"token": "t1", "n": 2}, ("Authorization", "Bearer b2")]
    attrs = dict(only(spans).attributes or {})
    assert json.loads(attrs["gen_ai.tool.call.result"]) == [
        {"token": "[REDACTED]", "n": 1},
        ["Authorization", "[REDACTED]"],
    ]


def test_string_result_is_json(spans: Spans) -> None:
    @toolspan.tool
    def greet() -> str:
        return "ok"

    greet()
    assert (only(spans).attributes or {})["gen_ai.tool.call.result"] == '"ok"'


# --- wrap / wrap_tools -----------------------------------------------------------------------------------


def test_wrap_instruments_an_existing_callable(spans: Spans) -> None:
    def multiply(a: int, b: int) -> int:
        return a * b

    wrapped = toolspan.tool(multiply, name="mul")
    assert wrapped(2, 3) == 6
    assert multiply(2, 3) == 6  # the original is untouched
    span = only(spans)
    assert dict(span.attributes or {}) == tool_attrs(span, "mul", arguments='{"a": 2, "b": 3}', result="6")
    assert toolspan.tool(wrapped) is wrapped  # not wrapped twice
    renamed = toolspan.tool(wrapped, name="times")
    renamed(1, 1)
    assert [s.name for s in spans()] == ["execute_tool mul", "execute_tool times"]


def test_wrap_tools_dict_and_list(spans: Spans) -> None:
    def lookup(key: str) -> str:
        return key.upper()

    registry = OrderedDict([("find", lookup), ("add", add)])
    wrapped = toolspan.wrap_tools(registry)
    assert type(wrapped) is OrderedDict
    assert wrapped is not registry
    assert registry["find"] is lookup  # original untouched
    assert wrapped["add"] is add  # already a tool: not wrapped again
    info = tool_info(wrapped["find"])
    assert info is not None
    assert info.name == "find"
    assert wrapped["find"]("a") == "A"
    as_list = toolspan.wrap_tools([lookup, add])
    assert type(as_list) is list
    assert as_list[1] is add
    as_list[0]("b")
    assert [s.name for s in spans()] == ["execute_tool find", "execute_tool lookup"]
    with pytest.raises(TypeError, match="dict or a list"):
        toolspan.wrap_tools(42)  # type: ignore[type-var]


def test_tool_rejects_non_callables() -> None:
    with pytest.raises(TypeError, match="needs a callable"):
        toolspan.tool(42)  # type: ignore[call-overload]


def test_tool_info_of_bound_method() -> None:
    info = tool_info(Toolbox().scale)
    assert info is not None
    assert info.name == "scale"
    assert tool_info(len) is None
    assert semconv.TOOL_SPAN_PREFIX + info.name == info.span_name


def test_start_attributes_dropped_by_a_sampler_are_set_after_start() -> None:
    from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult

    class Replacing(Sampler):
        """Records every span but replaces its start attributes (as a sampler may)."""

        def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
            return SamplingResult(Decision.RECORD_AND_SAMPLE, {"sampled.by": "test"})

        def get_description(self) -> str:
            return "Replacing"

    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=Replacing())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with installed_tracer_provider(provider):
        assert add(1, 1) == 2
    (span,) = exporter.get_finished_spans()
    sid = format(span.context.span_id, "016x")  # type: ignore[union-attr]
    assert dict(span.attributes or {}) == {
        "sampled.by": "test",
        "gen_ai.tool.call.arguments": '{"a": 1, "b": 1}',
        "input.value": '{"a": 1, "b": 1}',
        "input.mime_type": "application/json",
        "toolspan.execution_id": "exec_" + sid,
        "toolspan.tool_call_id": "call_" + sid,
        "openinference.span.kind": "TOOL",  # OpenInference's repeats of GenAI attributes: with the ids
        "tool.name": "add",
        "tool.description": "Add two numbers.",
        "toolspan.tool.state": "COMPLETED",
        "gen_ai.tool.call.result": "2",
        "output.value": "2",
        "output.mime_type": "application/json",
    }


def test_wrap_bound_methods_partials_and_callable_objects(spans: Spans) -> None:
    import functools

    class Pricer:
        def __init__(self, rate: float) -> None:
            self.rate = rate

        def price(self, amount: float) -> float:
            return amount * self.rate

        async def __call__(self, amount: float) -> float:
            return amount + self.rate

    pricer = Pricer(2.0)
    assert toolspan.tool(pricer.price, name="price")(3.0) == 6.0
    assert toolspan.tool(functools.partial(pow, 2), name="pow2")(5) == 32
    wrapped_obj = toolspan.tool(pricer, name="add_rate")
    assert asyncio.run(wrapped_obj(1.0)) == 3.0
    got = [(s.name, (s.attributes or {}).get("gen_ai.tool.call.arguments")) for s in spans()]
    assert got == [
        ("execute_tool price", '{"amount": 3.0}'),
        ("execute_tool pow2", '{"exp": 5, "mod": null}'),
        ("execute_tool add_rate", '{"amount": 1.0}'),
    ]


def test_a_partial_is_named_and_described_by_its_function(spans: Spans) -> None:
    import functools

    def convert(amount: float, rate: float) -> float:
        """Convert an amount at a rate.

        More detail that is not part of the description."""
        return amount * rate

    to_eur = toolspan.tool(functools.partial(convert, rate=0.5))
    assert to_eur(4.0) == 2.0
    (span,) = spans()
    attrs = dict(span.attributes or {})
    assert (span.name, attrs["gen_ai.tool.name"], attrs["gen_ai.tool.description"]) == (
        "execute_tool convert",
        "convert",
        "Convert an amount at a rate.",
    )
    assert attrs["gen_ai.tool.call.arguments"] == '{"amount": 4.0, "rate": 0.5}'
