"""Hand-written OpenTelemetry spans around the tool: the floors toolspan is measured against.

``minimal``: the reference of every ratio. A span that sets only what the GenAI semantic conventions
ask of a tool call: ``gen_ai.operation.name``, ``gen_ai.tool.name``, ``gen_ai.tool.type`` and the
arguments at start, ``gen_ai.tool.call.id`` right after (``call_`` + the span id, as toolspan makes
one when the model gave none), the result at the end; ``json.dumps`` for the JSON.

``on``: the full attribute set of a toolspan tool span with its default conventions, at the same
moments (name, type, description, arguments at start; ids right after; result and state at the end),
with ``json.dumps`` for the arguments and the result (the smoke test checks that it and toolspan's
span carry the same keys). Both: an SDK provider with the BatchSpanProcessor and the do-nothing
exporter. ``off``: the ``on`` code with no SDK provider installed (the API's no-op tracer).
"""

from __future__ import annotations

import json
from typing import Any

from _harness import Setup, get_forecast, run
from _noop import make_provider
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

TOOL_NAME = get_forecast.__name__
DESCRIPTION = get_forecast.__doc__ or ""
SPAN_NAME = "execute_tool " + TOOL_NAME
# Written once per tool, not per call (as a careful hand-written integration would).
STATIC_ATTRIBUTES = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": TOOL_NAME,
    "gen_ai.tool.type": "function",
    "gen_ai.tool.description": DESCRIPTION,
    "openinference.span.kind": "TOOL",
    "tool.name": TOOL_NAME,
    "tool.description": DESCRIPTION,
}


MINIMAL_STATIC = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": TOOL_NAME,
    "gen_ai.tool.type": "function",
}


def minimal_tool() -> Any:
    """The minimal GenAI tool span, written as a careful integration would (no error handling extras
    beyond what ``start_as_current_span`` does: it records the exception and sets the status)."""
    tracer = trace.get_tracer("handwritten")

    def get_forecast_minimal(city: str, days: int) -> dict[str, Any]:
        attributes = dict(MINIMAL_STATIC)
        attributes["gen_ai.tool.call.arguments"] = json.dumps({"city": city, "days": days})
        with tracer.start_as_current_span(SPAN_NAME, attributes=attributes) as span:
            call_id = "call_" + format(span.get_span_context().span_id, "016x")
            span.set_attribute("gen_ai.tool.call.id", call_id)
            result = get_forecast(city, days)
            span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
            return result

    return get_forecast_minimal


def traced_tool() -> Any:
    tracer = trace.get_tracer("handwritten")

    def get_forecast_traced(city: str, days: int) -> dict[str, Any]:
        arguments = json.dumps({"city": city, "days": days})
        attributes = dict(STATIC_ATTRIBUTES)
        attributes["gen_ai.tool.call.arguments"] = arguments
        attributes["input.value"] = arguments
        attributes["input.mime_type"] = "application/json"
        with tracer.start_as_current_span(
            SPAN_NAME,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            span_id = format(span.get_span_context().span_id, "016x")
            span.set_attributes(
                {"toolspan.execution_id": "exec_" + span_id, "toolspan.tool_call_id": "call_" + span_id}
            )
            try:
                result = get_forecast(city, days)
            except BaseException as exc:
                span.set_attribute("toolspan.tool.state", "FAILED")
                span.set_attribute("error.type", type(exc).__qualname__)
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                raise
            text = json.dumps(result)
            span.set_attributes(
                {
                    "gen_ai.tool.call.result": text,
                    "output.value": text,
                    "output.mime_type": "application/json",
                    "toolspan.tool.state": "COMPLETED",
                }
            )
            return result

    return get_forecast_traced


def minimal() -> Setup:
    trace.set_tracer_provider(make_provider())
    return Setup(tool=minimal_tool())


def on() -> Setup:
    trace.set_tracer_provider(make_provider())
    return Setup(tool=traced_tool())


def off() -> Setup:
    return Setup(tool=traced_tool(), notes=["no SDK provider: the API's no-op tracer; JSON still built"])


if __name__ == "__main__":
    run({"minimal": minimal, "on": on, "off": off})
