"""The private OpenTelemetry (and json) details toolspan relies on: each assumption holds on the
installed versions, and each fallback, used when an upgrade breaks one, gives the same answers."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from typing import Any

import pytest
from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider

from toolspan._instrument.context import TOOL_KEY
from toolspan._util import otel_internals as internals
from toolspan.testing import capture_spans, installed_tracer_provider

# --- the global provider slot ----------------------------------------------------------------------


def test_the_provider_slot_assumption_holds() -> None:
    assert internals.PROVIDER_SLOT_OK is True
    assert internals.check_provider_slot() is True
    assert internals.global_provider is internals.provider_functions(True)[0]


@pytest.mark.parametrize("ok", [True, False], ids=["slot", "fallback"])
def test_global_provider_and_tracing_on_follow_the_installed_provider(ok: bool) -> None:
    global_provider, tracing_on = internals.provider_functions(ok)
    with installed_tracer_provider(trace_api.ProxyTracerProvider()):
        trace_api._TRACER_PROVIDER = None  # the state of a process where no provider was ever set
        assert global_provider() is None
        assert tracing_on() is False
    provider = TracerProvider()
    with installed_tracer_provider(provider):
        assert global_provider() is provider
        assert tracing_on() is True
        assert internals.check_provider_slot() is True


def test_a_missing_provider_slot_selects_the_public_api(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delattr(trace_api, "_TRACER_PROVIDER")
    with caplog.at_level(logging.DEBUG, logger="toolspan._util.otel_internals"):
        assert internals.check_provider_slot() is False
    assert "_TRACER_PROVIDER changed in this OpenTelemetry version" in caplog.text


# --- the current-span context key ------------------------------------------------------------------


def test_the_context_key_assumption_holds() -> None:
    assert internals.CONTEXT_KEY_OK is True
    key = internals.span_key()
    assert isinstance(key, str)
    assert internals.check_context_key(key) is True


@pytest.mark.parametrize("ok", [True, False], ids=["direct", "fallback"])
def test_context_with_makes_the_span_current_and_keeps_the_parent(ok: bool) -> None:
    context_with = internals.context_function(internals.span_key(), ok)
    with capture_spans(install=False) as finished:
        tracer = finished.provider.get_tracer("test")
        span = tracer.start_span("child")
        parent = context_api.set_value("other", 7, Context())
        ctx = context_with(parent, span, TOOL_KEY, "frame")
        assert trace_api.get_current_span(ctx) is span
        assert context_api.get_value(TOOL_KEY, ctx) == "frame"
        assert context_api.get_value("other", ctx) == 7
        assert trace_api.get_current_span(parent) is trace_api.INVALID_SPAN  # the parent is untouched
        assert context_api.get_value(TOOL_KEY, parent) is None
        span.end()


def test_an_unknown_context_key_selects_the_fallback(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="toolspan._util.otel_internals"):
        assert internals.check_context_key("not-the-span-key") is False
        assert internals.check_context_key(None) is False
    assert "the current-span context key changed" in caplog.text

    def two_keys(span: Any, context: Context | None = None) -> Context:
        return Context({"a": span, "b": span})

    monkeypatch.setattr(trace_api, "set_span_in_context", two_keys)
    assert internals.span_key() is None
    assert internals.context_function(None, False).__name__ == "context_with_public"


# --- SDK span end time -----------------------------------------------------------------------------


def test_span_ended_reads_the_sdk_end_time() -> None:
    with capture_spans(install=False) as finished:
        span = finished.provider.get_tracer("test").start_span("s")
        assert internals.span_ended(span) is False
        span.end()
        assert internals.span_ended(span) is True


def test_span_ended_is_false_for_a_span_without_an_end_time() -> None:
    class Raising(trace_api.NonRecordingSpan):
        @property
        def end_time(self) -> int:
            raise RuntimeError("no")

    assert internals.span_ended(trace_api.INVALID_SPAN) is False
    assert internals.span_ended(Raising(trace_api.INVALID_SPAN_CONTEXT)) is False


# --- the C JSON encoder ----------------------------------------------------------------------------

VALUES: list[Any] = [
    {"city": "Paris", "days": 3, "nested": [1, 2.5, None, True, {"é": "\n\u2028"}]},
    "plain",
    "naïve",
    [],
    42,
]


@pytest.mark.parametrize("value", VALUES)
def test_the_c_encoder_writes_what_json_dumps_writes(value: Any) -> None:
    encode = internals.json_encoder()
    assert not hasattr(encode, "__self__")  # the C encoder was accepted, not JSONEncoder.encode
    assert encode(value) == json.dumps(value, ensure_ascii=False)
    compact = internals.json_encoder(key_separator=":", item_separator=",")
    assert compact(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_the_c_encoder_refuses_nan_and_unknown_types() -> None:
    encode = internals.json_encoder()
    with pytest.raises(ValueError, match="not JSON compliant"):
        encode(float("nan"))
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        encode([object()])


@pytest.mark.parametrize(
    "broken",
    [
        {"c_make_encoder": None},
        {"c_encode_basestring": None},
        {"c_make_encoder": lambda *args: lambda value, level: ["wrong"]},
        {"c_make_encoder": lambda *args: 1 / 0},
    ],
    ids=["no-encoder", "no-quote", "different-output", "raises"],
)
def test_a_broken_c_encoder_selects_the_stdlib_encoder(
    monkeypatch: pytest.MonkeyPatch, broken: dict[str, Any]
) -> None:
    for name, value in broken.items():
        monkeypatch.setattr(json.encoder, name, value)
    encode = internals.json_encoder()
    monkeypatch.undo()  # JSONEncoder.encode reads the module's encoder when called
    assert type(getattr(encode, "__self__", None)) is json.JSONEncoder  # the bound stdlib method
    for value in VALUES:
        assert encode(value) == json.dumps(value, ensure_ascii=False)
    with pytest.raises(ValueError, match="not JSON compliant"):
        encode(float("inf"))


# --- swapping the global provider ------------------------------------------------------------------


def test_the_swap_assumption_holds_and_restores_the_previous_state() -> None:
    assert internals.SWAP_OK is True
    before = trace_api.get_tracer_provider()
    first, second = TracerProvider(), TracerProvider()
    saved = internals.swap_global_provider(first)
    assert trace_api.get_tracer_provider() is first
    inner = internals.swap_global_provider(second)
    assert trace_api.get_tracer_provider() is second
    internals.restore_global_provider(inner)
    assert trace_api.get_tracer_provider() is first
    internals.restore_global_provider(saved)
    assert trace_api.get_tracer_provider() is before


def test_missing_swap_globals_fall_back_to_set_tracer_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(trace_api, "_PROXY_TRACER_PROVIDER")
    assert internals.check_swap() is False
    monkeypatch.undo()
    provider = TracerProvider()
    with installed_tracer_provider(trace_api.ProxyTracerProvider()):
        trace_api._TRACER_PROVIDER = None
        trace_api._TRACER_PROVIDER_SET_ONCE = type(trace_api._TRACER_PROVIDER_SET_ONCE)()
        assert internals.swap_global_provider(provider, ok=False) is None
        assert trace_api.get_tracer_provider() is provider
        internals.restore_global_provider(None)
        assert trace_api.get_tracer_provider() is provider  # nothing to restore after the fallback


# --- toolspan on the fallbacks ---------------------------------------------------------------------


@pytest.mark.usefixtures("fresh_config")
def test_tool_spans_nest_and_carry_their_ids_on_every_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    import toolspan
    from toolspan._capture import serialize as _serialize
    from toolspan._instrument import tool as _toolrun
    from toolspan._instrument import tracer as _tracer

    public_provider, _ = internals.provider_functions(False)
    monkeypatch.setattr(_tracer, "global_provider", public_provider)
    monkeypatch.setattr(_toolrun, "context_with", internals.context_function(None, False))
    monkeypatch.setattr(_serialize, "ENCODE", json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode)

    @toolspan.tool
    def inner(x: int) -> int:
        return x + 1

    @toolspan.tool
    def outer(x: int) -> dict[str, Any]:
        return {"ids": toolspan.current_execution_id(), "inner": inner(x)}

    with capture_spans() as finished:
        result = outer(1)
    child, parent = finished()
    parent_hex = format(parent.context.span_id, "016x")  # type: ignore[union-attr]
    assert result == {"ids": "exec_" + parent_hex, "inner": 2}
    assert child.parent is not None
    assert child.parent.span_id == parent.context.span_id  # type: ignore[union-attr]
    assert (parent.attributes or {})["toolspan.execution_id"] == "exec_" + parent_hex
    assert (parent.attributes or {})["gen_ai.tool.call.result"] == json.dumps(result)
    assert (child.attributes or {})["gen_ai.tool.call.arguments"] == '{"x": 1}'


# --- writing the attributes of an SDK span ---------------------------------------------------------


def _sdk_span(**limits: Any) -> Any:
    from opentelemetry.sdk.trace import SpanLimits

    provider = TracerProvider(span_limits=SpanLimits(**limits)) if limits else TracerProvider()
    return provider.get_tracer("test").start_span("s", attributes={"a": 1})


def test_the_attribute_store_assumption_holds() -> None:
    from opentelemetry.attributes import BoundedAttributes

    writer = internals.check_attribute_store()
    assert writer is not None
    assert writer.__name__ == "set_attributes_direct"
    span = _sdk_span()
    assert type(span._attributes) is BoundedAttributes
    writer(span, {"b": "x", "c": 2.5})
    assert dict(span.attributes) == {"a": 1, "b": "x", "c": 2.5}


def test_the_writer_is_chosen_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(internals, "set_attributes", internals._set_attributes_first)
    span = _sdk_span()
    internals.set_attributes(span, {"b": "x"})
    assert internals.set_attributes.__name__ == "set_attributes_direct"
    assert dict(span.attributes) == {"a": 1, "b": "x"}


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "public"])
def test_limits_and_ended_spans_behave_as_the_sdk_says(
    direct: bool, caplog: pytest.LogCaptureFixture
) -> None:
    from opentelemetry.attributes import BoundedAttributes

    def write(span: Any, values: dict[str, Any]) -> None:
        if direct:
            internals.direct_writer(BoundedAttributes)(span, values)
        else:
            span.set_attributes(values)

    cut = _sdk_span(max_span_attribute_length=3)
    write(cut, {"b": "abcdef"})
    assert dict(cut.attributes) == {"a": 1, "b": "abc"}
    full = _sdk_span(max_span_attributes=2)
    write(full, {"b": "x", "c": "y"})
    assert dict(full.attributes) == {"b": "x", "c": "y"}  # the oldest dropped, as the SDK does
    ended = _sdk_span()
    ended.end()
    with caplog.at_level(logging.WARNING):
        write(ended, {"b": "x"})
    assert dict(ended.attributes) == {"a": 1}
    assert "Setting attribute on ended span" in caplog.text
    write(trace_api.INVALID_SPAN, {"b": "x"})  # not an SDK span: its own (no-op) method


def test_a_changed_attribute_store_selects_set_attributes(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import opentelemetry.attributes

    class Other(dict):  # type: ignore[type-arg]
        pass

    monkeypatch.setattr(opentelemetry.attributes, "BoundedAttributes", Other)
    with caplog.at_level(logging.DEBUG, logger="toolspan._util.otel_internals"):
        assert internals.check_attribute_store() is None
    assert "the attribute store of SDK spans changed" in caplog.text
    monkeypatch.undo()
    span = _sdk_span()
    span.set_attributes({"b": "x"})
    internals.direct_writer(Other)(span, {"a": 2})  # never matches: the SDK's method,
    assert list(span.attributes.items()) == [("b", "x"), ("a", 2)]  # which moves a rewritten key last


# --- will the SDK record this span? -----------------------------------------------------------------


def _parent(sampled: bool) -> Context:
    flags = trace_api.TraceFlags(trace_api.TraceFlags.SAMPLED if sampled else trace_api.TraceFlags.DEFAULT)
    span_context = trace_api.SpanContext(0xAB, 0xCD, is_remote=True, trace_flags=flags)
    return trace_api.set_span_in_context(trace_api.NonRecordingSpan(span_context), Context())


def test_sure_to_record_knows_only_the_sdk_default_samplers() -> None:
    from opentelemetry.sdk.trace import _TracerConfig, sampling

    check = internals.sampler_check()
    if not internals.SHORTCUTS:  # the public fallback never claims to know
        assert check(TracerProvider().get_tracer("t"), Context()) is False
        return
    default = TracerProvider().get_tracer("t")  # ParentBased(ALWAYS_ON), the SDK's default
    assert check(default, Context()) is True  # a root span
    assert check(default, _parent(sampled=True)) is True
    assert check(default, _parent(sampled=False)) is False  # an unsampled parent: dropped
    always = TracerProvider(sampler=sampling.ALWAYS_ON).get_tracer("t")
    assert check(always, _parent(sampled=False)) is True
    for other in (
        sampling.ALWAYS_OFF,
        sampling.TraceIdRatioBased(0.5),
        sampling.ParentBased(sampling.ALWAYS_ON),  # the same rule, another object: not known
        sampling.DEFAULT_OFF,
    ):
        assert check(TracerProvider(sampler=other).get_tracer("t"), Context()) is False
    disabled = TracerProvider(_tracer_configurator=lambda scope: _TracerConfig(is_enabled=False))
    assert check(disabled.get_tracer("t"), Context()) is False
    assert check(trace_api.NoOpTracer(), Context()) is False
    assert check(trace_api.ProxyTracer("t"), Context()) is False


def test_changed_default_samplers_select_the_lazy_path(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from opentelemetry.sdk.trace import sampling

    monkeypatch.setattr(sampling, "DEFAULT_ON", sampling.ParentBased(sampling.ALWAYS_OFF))
    with caplog.at_level(logging.DEBUG, logger="toolspan._util.otel_internals"):
        check = internals.sampler_check()
    assert check(TracerProvider().get_tracer("t"), Context()) is False
    assert check.__name__ == "_records_unknown"


# --- a clock injected into one provider -------------------------------------------------------------


def test_a_clocked_provider_times_its_own_spans_only() -> None:
    from opentelemetry.sdk import trace as sdk_trace
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolspan.testing import FakeClock, capture_spans

    real_time_ns = sdk_trace.time_ns
    clock = FakeClock(start_ns=1_000, step_ns=10)
    exporter = InMemorySpanExporter()
    clocked = internals.clocked_provider(clock)
    clocked.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = clocked.get_tracer("t")
    assert isinstance(clocked, TracerProvider)
    assert isinstance(tracer, sdk_trace.Tracer)
    with tracer.start_as_current_span("outer") as outer:  # 1000
        outer.add_event("e")  # 1010
        inner = tracer.start_span("inner", start_time=5)  # an explicit time is kept
        inner.end(end_time=7)
        try:
            with tracer.start_as_current_span("failing"):  # 1020
                raise ValueError("x")  # exception event 1030, end 1040
        except ValueError:
            pass
    # outer ends at 1050
    by_name = {span.name: span for span in exporter.get_finished_spans()}
    assert (by_name["outer"].start_time, by_name["outer"].end_time) == (1_000, 1_050)
    assert [event.timestamp for event in by_name["outer"].events] == [1_010]
    assert (by_name["inner"].start_time, by_name["inner"].end_time) == (5, 7)
    failing = by_name["failing"]
    assert (failing.start_time, failing.end_time) == (1_020, 1_040)
    assert [(event.name, event.timestamp) for event in failing.events] == [("exception", 1_030)]
    # Nothing was patched: another provider, even inside a capture with a clock, reads the real time.
    with capture_spans(clock=FakeClock(start_ns=0)) as spans:
        assert sdk_trace.time_ns is real_time_ns
        before = time.time_ns()
        other = TracerProvider().get_tracer("t").start_span("real")
        other.end()
        after = time.time_ns()
        toolspan_tracer = spans.provider.get_tracer("toolspan")
        toolspan_tracer.start_span("fake").end()
    assert before <= (other.start_time or 0) <= (other.end_time or 0) <= after
    assert [(span.start_time, span.end_time) for span in spans()] == [(0, 1_000_000)]


@pytest.mark.processes
def test_shortcuts_off_selects_every_public_fallback() -> None:
    code = (
        "import json\n"
        "from toolspan._util import otel_internals as o\n"
        "from toolspan._capture import encode\n"
        "print(json.dumps([o.SHORTCUTS, o.PROVIDER_SLOT_OK, o.CONTEXT_KEY_OK,\n"
        "    o.check_attribute_store() is None, o.tracing_on is o._public_tracing_on,\n"
        "    encode.ENCODE.__qualname__]))\n"
    )
    env = {**os.environ, "TOOLSPAN_OTEL_SHORTCUTS": "off"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [False, False, False, True, True, "JSONEncoder.encode"]
