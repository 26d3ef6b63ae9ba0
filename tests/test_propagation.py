"""inject/extract: a sub-plan in another process (or picked up from a queue) keeps its parent tool."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import baggage, propagate
from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.context import Context, create_key
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.propagators.textmap import (
    Getter,
    Setter,
    TextMapPropagator,
    default_getter,
    default_setter,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

import toolspan
from tests.support.instrumentation import Spans, by_name, call_id, exec_id, hex_id
from tests.support.paths import APPS

pytestmark = pytest.mark.usefixtures("fresh_config")

WORKER = APPS / "subplan_worker.py"


def test_inject_outside_a_tool_writes_only_the_trace_context(spans: Spans) -> None:
    assert toolspan.inject() == {}  # no span: nothing to carry
    tracer = trace_api.get_tracer("test")
    with tracer.start_as_current_span("root") as root:
        carrier: dict[str, str] = {}
        assert toolspan.inject(carrier) is carrier
    context = root.get_span_context()
    flags = f"{int(context.trace_flags):02x}"
    assert carrier == {"traceparent": f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags}"}


def test_inject_inside_a_tool_carries_its_ids(spans: Spans) -> None:
    carriers: list[dict[str, str]] = []

    @toolspan.tool
    def dispatch() -> None:
        carriers.append(toolspan.inject({}))

    with toolspan.tool_call_id("toolu_9"):
        dispatch()
    (span,) = spans()
    (carrier,) = carriers
    assert span.context is not None
    flags = f"{int(span.context.trace_flags):02x}"
    assert carrier["traceparent"] == f"00-{span.context.trace_id:032x}-{hex_id(span)}-{flags}"
    assert set(carrier) == {"traceparent", "baggage"}
    extracted = toolspan.extract(carrier)
    assert baggage.get_all(extracted) == {
        "toolspan.execution_id": exec_id(span),
        "toolspan.tool_call_id": "toolu_9",
    }
    remote = trace_api.get_current_span(extracted).get_span_context()
    assert remote.is_remote
    assert remote.span_id == span.context.span_id  # type: ignore[union-attr]


def test_extract_of_an_empty_carrier_is_an_empty_context() -> None:
    assert not trace_api.get_current_span(toolspan.extract({})).get_span_context().is_valid


def test_subplan_from_a_queue_in_process(spans: Spans) -> None:
    queue: list[dict[str, str]] = []

    @toolspan.tool
    def enqueue(job: str) -> None:
        queue.append(toolspan.inject({}))

    enqueue("j1")
    with toolspan.plan("worker", context=toolspan.extract(queue.pop())):
        pass
    finished = spans()
    tool = by_name(finished, "execute_tool enqueue")
    sub = by_name(finished, "plan worker")
    assert sub.parent is not None
    assert sub.parent.span_id == tool.context.span_id
    assert [link.context.span_id for link in sub.links] == [tool.context.span_id]  # type: ignore[union-attr]
    assert dict(sub.attributes or {}) == {
        "toolspan.plan.name": "worker",
        "openinference.span.kind": "CHAIN",
        "toolspan.parent.execution_id": exec_id(tool),
        "toolspan.parent.tool_call_id": call_id(tool),
    }


def test_stale_tool_ids_in_baggage_are_ignored(spans: Spans) -> None:
    """Baggage whose execution id is not the parent span's (e.g. forwarded one hop further) is ignored."""
    tracer = trace_api.get_tracer("test")
    with tracer.start_as_current_span("other") as other:
        carrier = toolspan.inject({})
    carrier["baggage"] = "toolspan.execution_id=exec_00000000000000aa,toolspan.tool_call_id=call_x"
    with toolspan.plan("unrelated", context=toolspan.extract(carrier)):
        pass
    sub = by_name(spans(), "plan unrelated")
    assert sub.parent is not None
    assert sub.parent.span_id == other.get_span_context().span_id
    assert sub.links == ()
    assert dict(sub.attributes or {}) == {
        "toolspan.plan.name": "unrelated",
        "openinference.span.kind": "CHAIN",
    }


@pytest.mark.processes
def test_subplan_in_a_real_subprocess(spans: Spans, tmp_path: Path) -> None:
    out = tmp_path / "worker-spans.jsonl"

    @toolspan.tool
    def run_remote(task: str) -> int:
        carrier = toolspan.inject({})
        done = subprocess.run(
            [sys.executable, str(WORKER), json.dumps(carrier), str(out)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.returncode

    with toolspan.tool_call_id("toolu_remote"):
        run_remote("index the docs")
    tool = by_name(spans(), "execute_tool run_remote")
    records = {record["name"]: record for record in map(json.loads, out.read_text().splitlines())}
    assert sorted(records) == ["execute_tool remote_lookup", "plan remote step"]
    sub = records["plan remote step"]
    assert tool.context is not None
    assert sub["trace_id"] == format(tool.context.trace_id, "032x")
    assert sub["parent_span_id"] == hex_id(tool)
    assert sub["parent_is_remote"] is True
    assert sub["links"] == [hex_id(tool)]
    assert sub["attributes"] == {
        "toolspan.plan.name": "remote step",
        "openinference.span.kind": "CHAIN",
        "toolspan.parent.execution_id": exec_id(tool),
        "toolspan.parent.tool_call_id": "toolu_remote",
    }
    inner = records["execute_tool remote_lookup"]
    assert inner["parent_span_id"] == sub["span_id"]
    assert inner["links"] == []
    assert inner["attributes"] == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "remote_lookup",
        "gen_ai.tool.type": "function",
        "openinference.span.kind": "TOOL",
        "tool.name": "remote_lookup",
        "gen_ai.tool.call.arguments": '{"key": "abc"}',
        "input.value": '{"key": "abc"}',
        "input.mime_type": "application/json",
        "toolspan.execution_id": "exec_" + inner["span_id"],
        "toolspan.tool_call_id": "call_" + inner["span_id"],
        "toolspan.tool.state": "COMPLETED",
        "gen_ai.tool.call.result": '"cba"',
        "output.value": '"cba"',
        "output.mime_type": "application/json",
    }


class RequestIdPropagator(TextMapPropagator):
    """An application's own propagator (as ``OTEL_PROPAGATORS`` or ``set_global_textmap`` installs one): a
    request id carried in ``x-request-id``."""

    KEY = create_key("request-id")

    def inject(
        self, carrier: Any, context: Context | None = None, setter: Setter[Any] = default_setter
    ) -> None:
        value = context_api.get_value(self.KEY, context)
        if value is not None:
            setter.set(carrier, "x-request-id", str(value))

    def extract(
        self, carrier: Any, context: Context | None = None, getter: Getter[Any] = default_getter
    ) -> Context:
        values = getter.get(carrier, "x-request-id")
        return context_api.set_value(self.KEY, values[0], context) if values else (context or Context())

    @property
    def fields(self) -> set[str]:
        return {"x-request-id"}


@pytest.fixture
def global_textmap() -> Iterator[Callable[[TextMapPropagator], None]]:
    before = propagate.get_global_textmap()
    yield propagate.set_global_textmap
    propagate.set_global_textmap(before)


def test_inject_and_extract_follow_the_applications_propagators(
    spans: Spans, global_textmap: Callable[[TextMapPropagator], None]
) -> None:
    global_textmap(
        CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator(), RequestIdPropagator()])
    )
    carriers: list[dict[str, str]] = []

    @toolspan.tool
    def dispatch() -> None:
        ctx = context_api.set_value(RequestIdPropagator.KEY, "req-7")
        carriers.append(toolspan.inject({}, context=baggage.set_baggage("tenant", "acme", ctx)))

    with toolspan.tool_call_id("toolu_3"):
        dispatch()
    (span,) = spans()
    (carrier,) = carriers
    assert set(carrier) == {"traceparent", "baggage", "x-request-id"}
    extracted = toolspan.extract(carrier)
    assert context_api.get_value(RequestIdPropagator.KEY, extracted) == "req-7"
    assert baggage.get_all(extracted) == {
        "tenant": "acme",
        "toolspan.execution_id": exec_id(span),
        "toolspan.tool_call_id": "toolu_3",
    }


def test_a_propagator_without_baggage_still_carries_the_tool_calls_ids_and_nothing_else(
    spans: Spans, global_textmap: Callable[[TextMapPropagator], None]
) -> None:
    # OTEL_PROPAGATORS=tracecontext: the application keeps its baggage to itself.
    global_textmap(CompositePropagator([TraceContextTextMapPropagator()]))
    carriers: list[dict[str, str]] = []

    @toolspan.tool
    def dispatch() -> None:
        ctx = baggage.set_baggage("tenant", "acme")
        carriers.append(toolspan.inject({}, context=ctx))

    with toolspan.tool_call_id("toolu_4"):
        dispatch()
    (span,) = spans()
    (carrier,) = carriers
    assert set(carrier) == {"traceparent", "baggage"}
    assert "tenant" not in carrier["baggage"]
    extracted = toolspan.extract(carrier)
    assert baggage.get_all(extracted) == {
        "toolspan.execution_id": exec_id(span),
        "toolspan.tool_call_id": "toolu_4",
    }
    assert span.context is not None
    assert trace_api.get_current_span(extracted).get_span_context().span_id == span.context.span_id
