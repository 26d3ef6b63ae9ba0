"""In-process OpenTelemetry SDK ``ReadableSpan``s (ended or not) as neutral spans.

What another instrumentation set on a span is read as every reader reads it (``_writable``): a lone surrogate
in any text as the text of its escape, an integer too long for decimal text as its hex text."""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from toolspan.bridge._json_write import nonfinite_text, writable_int
from toolspan.bridge.model import Span, SpanEvent, SpanLink
from toolspan.bridge.readers._writable import writable_text


def _plain(value: Any) -> Any:
    if type(value) is str:
        return writable_text(value)
    if type(value) is int:
        return writable_int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else nonfinite_text(value)
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Mapping):
        return {writable_text(str(k)): _plain(v) for k, v in value.items()}
    return value


def _attrs(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    return {} if not attributes else {writable_text(k): _plain(v) for k, v in attributes.items()}


def from_readable_span(span: ReadableSpan) -> Span:
    """One SDK span; a span that has not ended gets ``end_ns=None``."""
    ctx = span.context
    if ctx is None:
        raise ValueError(f"span {span.name!r} has no span context")
    parent = span.parent
    resource = _attrs(span.resource.attributes) if span.resource is not None else {}
    scope_of = span.instrumentation_scope
    scope, schema_url = ("", "") if scope_of is None else (scope_of.name, scope_of.schema_url or "")
    return Span(
        trace_id=f"{ctx.trace_id:032x}",
        span_id=f"{ctx.span_id:016x}",
        parent_span_id=f"{parent.span_id:016x}" if parent is not None and parent.span_id else None,
        name=writable_text(span.name),
        start_ns=span.start_time or 0,
        end_ns=span.end_time,
        kind=span.kind.name,
        status=span.status.status_code.name,
        status_message=writable_text(span.status.description or ""),
        attributes=_attrs(span.attributes),
        events=tuple(
            SpanEvent(writable_text(e.name), e.timestamp, _attrs(e.attributes)) for e in span.events
        ),
        links=tuple(
            SpanLink(f"{ln.context.trace_id:032x}", f"{ln.context.span_id:016x}", _attrs(ln.attributes))
            for ln in span.links
        ),
        resource=resource,
        scope=scope,
        origin="",
        scope_schema_url=writable_text(schema_url),
    )


def from_readable_spans(spans: Iterable[ReadableSpan]) -> list[Span]:
    """SDK spans (from ``InMemorySpanExporter`` or any exporter), ended or not."""
    return [from_readable_span(s) for s in spans]
