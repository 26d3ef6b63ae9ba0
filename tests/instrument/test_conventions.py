"""The attributes a tool span is written with under each conventions setting (GenAI, OpenInference,
both: toolspan's ids and COMPLETED state come with the OpenInference keys), and the bridge reading
the spans of every setting into the same views."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolspan
from tests.support.instrumentation import Spans
from toolspan.bridge import views
from toolspan.bridge.readers import from_readable_spans
from toolspan.config import Config, set_config
from toolspan.testing import capture_spans, installed_tracer_provider

GENAI = "genai"
OPENINFERENCE = "openinference"
BOTH = "genai,openinference"


@pytest.fixture(autouse=True)
def _config_reset() -> Iterator[None]:
    yield
    set_config(None)


@toolspan.tool
def get_forecast(city: str, days: int = 1) -> dict[str, Any]:
    """Return the weather forecast for a city."""
    return {"city": city, "days": days}


@toolspan.tool
def undocumented(x: int) -> int:
    if x < 0:
        raise ValueError("negative")
    return x


@toolspan.tool
def countdown(n: int) -> Iterator[int]:
    yield from range(n, 0, -1)


def _ids(span: ReadableSpan, call_id: str | None = None) -> dict[str, str]:
    sid = format(span.context.span_id, "016x")  # type: ignore[union-attr]
    return {"toolspan.execution_id": "exec_" + sid, "toolspan.tool_call_id": call_id or "call_" + sid}


GENAI_START = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "get_forecast",
    "gen_ai.tool.type": "function",
    "gen_ai.tool.description": "Return the weather forecast for a city.",
}
OI_START = {
    "openinference.span.kind": "TOOL",
    "tool.name": "get_forecast",
    "tool.description": "Return the weather forecast for a city.",
}
ARGS = '{"city": "Paris", "days": 3}'
RESULT = '{"city": "Paris", "days": 3}'


@pytest.mark.parametrize(
    ("conventions", "expected"),
    [
        (
            GENAI,
            {
                **GENAI_START,
                "gen_ai.tool.call.id": "toolu_1",
                "gen_ai.tool.call.arguments": ARGS,
                "gen_ai.tool.call.result": RESULT,
            },
        ),
        (
            OPENINFERENCE,
            {
                **OI_START,
                "tool_call.id": "toolu_1",
                "input.value": ARGS,
                "input.mime_type": "application/json",
                "output.value": RESULT,
                "output.mime_type": "application/json",
            },
        ),
        (
            BOTH,
            {
                **GENAI_START,
                **OI_START,
                "gen_ai.tool.call.id": "toolu_1",
                "gen_ai.tool.call.arguments": ARGS,
                "input.value": ARGS,
                "input.mime_type": "application/json",
                "gen_ai.tool.call.result": RESULT,
                "output.value": RESULT,
                "output.mime_type": "application/json",
            },
        ),
    ],
)
def test_each_setting_writes_exactly_its_keys(
    spans: Spans, conventions: str, expected: dict[str, Any]
) -> None:
    set_config(Config(conventions=conventions))
    with toolspan.tool_call_id("toolu_1"):
        assert get_forecast("Paris", 3) == {"city": "Paris", "days": 3}
    (span,) = spans()
    if conventions != GENAI:  # toolspan's ids and state come with the OpenInference keys
        expected = {**expected, **_ids(span, "toolu_1"), "toolspan.tool.state": "COMPLETED"}
    assert dict(span.attributes or {}) == expected


def test_genai_only_is_lean_without_a_model_id_or_description(spans: Spans) -> None:
    """GenAI alone: no toolspan ids (``exec_``/``call_`` + span id) and no COMPLETED state, which
    the bridge derives from the span; see the round trip below."""
    set_config(Config(conventions=GENAI))
    assert undocumented(4) == 4
    (span,) = spans()
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "undocumented",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.arguments": '{"x": 4}',
        "gen_ai.tool.call.result": "4",
    }


def test_genai_only_failure_keeps_the_outcome_attributes(spans: Spans) -> None:
    set_config(Config(conventions=GENAI))
    with pytest.raises(ValueError, match="negative"):
        undocumented(-1)
    (span,) = spans()
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "undocumented",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.arguments": '{"x": -1}',
        "error.type": "ValueError",
        "toolspan.tool.state": "FAILED",
    }


def test_openinference_only_generator_result(spans: Spans) -> None:
    set_config(Config(conventions=OPENINFERENCE))
    assert list(countdown(3)) == [3, 2, 1]
    (span,) = spans()
    assert dict(span.attributes or {}) == {
        "openinference.span.kind": "TOOL",
        "tool.name": "countdown",
        "input.value": '{"n": 3}',
        "input.mime_type": "application/json",
        "output.value": "[3, 2, 1]",
        "output.mime_type": "application/json",
        "toolspan.result.items": 3,
        **_ids(span),
        "toolspan.tool.state": "COMPLETED",
    }


def test_capture_off_with_genai_only_writes_no_content(spans: Spans) -> None:
    set_config(Config(capture_content=False, conventions=GENAI))
    get_forecast("Paris", 3)
    (span,) = spans()
    assert dict(span.attributes or {}) == GENAI_START


@pytest.mark.parametrize(
    ("conventions", "expected"),
    [
        (GENAI, {**GENAI_START, "gen_ai.tool.call.arguments": ARGS}),
        (OPENINFERENCE, {**OI_START, "input.value": ARGS, "input.mime_type": "application/json"}),
    ],
)
def test_span_processors_see_the_start_attributes_of_the_setting(
    conventions: str, expected: dict[str, Any]
) -> None:
    seen: list[dict[str, Any]] = []

    class Recorder(SpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            seen.append(dict(span.attributes or {}))

    provider = TracerProvider()
    provider.add_span_processor(Recorder())
    set_config(Config(conventions=conventions))
    with installed_tracer_provider(provider):
        get_forecast("Paris", 3)
    assert seen == [expected]


def test_a_setting_changed_after_decoration_applies_to_the_next_call(spans: Spans) -> None:
    set_config(Config(conventions=OPENINFERENCE))
    get_forecast("Paris", 3)
    set_config(Config(conventions=GENAI))
    get_forecast("Paris", 3)
    first, second = spans()
    assert "gen_ai.tool.name" not in (first.attributes or {})
    assert (first.attributes or {})["tool.name"] == "get_forecast"
    assert "tool.name" not in (second.attributes or {})
    assert (second.attributes or {})["gen_ai.tool.name"] == "get_forecast"


def test_start_attributes_a_sampler_replaced_are_set_after_start_in_the_setting() -> None:
    from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult

    class Replacing(Sampler):
        def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
            return SamplingResult(Decision.RECORD_AND_SAMPLE, {"sampled.by": "test"})

        def get_description(self) -> str:
            return "Replacing"

    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=Replacing())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    set_config(Config(conventions=GENAI))
    with installed_tracer_provider(provider), toolspan.tool_call_id("toolu_2"):
        get_forecast("Paris", 3)
    (span,) = exporter.get_finished_spans()
    assert dict(span.attributes or {}) == {
        "sampled.by": "test",
        "gen_ai.tool.call.id": "toolu_2",
        "gen_ai.tool.call.arguments": ARGS,
        "gen_ai.tool.call.result": RESULT,
    }


# -- the bridge reads every setting identically ------------------------------------------------------


@toolspan.tool
async def lookup(key: str) -> str:
    await asyncio.sleep(0)
    return key.upper()


def _scenario() -> None:
    with toolspan.agent("planner", input="Weather in Paris?") as run:
        with toolspan.plan("trip", input="forecast then lookup"):
            with toolspan.tool_call_id("toolu_forecast"):
                get_forecast("Paris", 3)
            asyncio.run(lookup("paris"))
            list(countdown(2))
            with pytest.raises(ValueError, match="negative"):
                undocumented(-1)
        run.set_output("sunny")


def _views(conventions: str) -> dict[str, Any]:
    set_config(Config(conventions=conventions))
    with capture_spans(deterministic=True) as finished:
        _scenario()
        model = from_readable_spans(finished())
    return {
        "events": views.to_events(model),
        "trees": views.to_trees(model),
        "timelines": views.to_timelines(model),
        "plans": views.to_plans(model),
        "progress": views.to_progress(model),
    }


def test_the_bridge_reads_every_setting_into_the_same_views() -> None:
    both = _views(BOTH)
    acts = [(e["tool_name"], e["tool_input"]) for e in both["events"] if e["type"] == "act"]
    assert acts == [
        ("get_forecast", {"city": "Paris", "days": 3}),
        ("lookup", {"key": "paris"}),
        ("countdown", {"n": 2}),
        ("undocumented", {"x": -1}),
    ]
    observed = [(e["call_id"], e["state"], e["observation"]) for e in both["events"] if e["type"] != "act"]
    assert observed[0] == ("toolu_forecast", "COMPLETED", {"city": "Paris", "days": 3})
    assert [state for _, state, _ in observed] == ["COMPLETED", "COMPLETED", "COMPLETED", "FAILED"]
    assert _views(GENAI) == both
    assert _views(OPENINFERENCE) == both
