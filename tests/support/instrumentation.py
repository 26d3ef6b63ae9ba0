"""Helpers of the instrumentation tests: expected tool span attributes, span lookups."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from toolspan import semconv

Spans = Callable[[], Sequence[ReadableSpan]]


def hex_id(span: ReadableSpan) -> str:
    assert span.context is not None
    return format(span.context.span_id, "016x")


def exec_id(span: ReadableSpan) -> str:
    return "exec_" + hex_id(span)


def call_id(span: ReadableSpan) -> str:
    return "call_" + hex_id(span)


def tool_attrs(
    span: ReadableSpan,
    name: str,
    *,
    arguments: str | None = None,
    result: str | None = None,
    state: str = semconv.STATE_COMPLETED,
    description: str | None = None,
    tool_type: str = "function",
    model_call_id: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The complete attribute dict a tool span must have (ids computed from the span itself)."""
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.type": tool_type,
        "openinference.span.kind": "TOOL",
        "tool.name": name,
        "toolspan.execution_id": exec_id(span),
        "toolspan.tool_call_id": model_call_id or call_id(span),
        "toolspan.tool.state": state,
    }
    if description is not None:
        attrs["gen_ai.tool.description"] = description
        attrs["tool.description"] = description
    if model_call_id is not None:
        attrs["gen_ai.tool.call.id"] = model_call_id
    if arguments is not None:
        attrs["gen_ai.tool.call.arguments"] = arguments
        attrs["input.value"] = arguments
        attrs["input.mime_type"] = "application/json"
    if result is not None:
        attrs["gen_ai.tool.call.result"] = result
        attrs["output.value"] = result
        attrs["output.mime_type"] = "application/json"
    attrs.update({key.replace("__", "."): value for key, value in extra.items()})
    return attrs


def by_name(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = [span for span in spans if span.name == name]
    assert len(found) == 1, f"{len(found)} spans named {name!r} in {[s.name for s in spans]}"
    return found[0]


def parent_id(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id
