"""Neutral spans back to an OTLP JSON ``ExportTraceServiceRequest``: what ``toolspan serve`` returns for a
trace (``GET /api/traces/{id}/otlp``), so any OTLP reader, and ``toolspan.replay``, gets the trace as sent.

Lossless for the bridge: reading the document back (``spans_from_document``) gives the same spans, field
for field (``model.span_fields``, and the scope's schema URL). Spans are grouped by resource, then scope
(its name and schema URL), in the order each first appears, and keep their input order within a group; an
unended span has no ``endTimeUnixNano``; integers are ``intValue`` strings, ``None`` an empty AnyValue,
lists ``arrayValue`` and dicts ``kvlistValue``, as the OTLP JSON encoding writes them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any, Final

from toolspan.bridge._json_write import nonfinite_text
from toolspan.bridge.model import SPAN_KINDS, STATUS_CODES, Span

__all__ = ["to_otlp_json"]

_KIND_NUMBERS: Final = {name: number for number, name in enumerate(SPAN_KINDS)}
_STATUS_NUMBERS: Final = {name: number for number, name in enumerate(STATUS_CODES)}
_NO_RESOURCE: Final = object()


def _any(value: Any) -> dict[str, Any]:
    """The OTLP JSON AnyValue of a model value (iterative: nesting depth is not limited by the stack)."""
    root: dict[str, Any] = {}
    stack: list[tuple[Any, dict[str, Any]]] = [(value, root)]
    while stack:
        item, out = stack.pop()
        if item is None:
            continue
        if item is True or item is False:
            out["boolValue"] = item
        elif isinstance(item, int):
            out["intValue"] = str(item)
        elif isinstance(item, float):
            out["doubleValue"] = item if math.isfinite(item) else nonfinite_text(item)
        elif isinstance(item, str):
            out["stringValue"] = item
        elif isinstance(item, list | tuple):
            values: list[dict[str, Any]] = [{} for _ in item]
            out["arrayValue"] = {"values": values}
            stack.extend(zip(item, values, strict=True))
        elif isinstance(item, Mapping):
            slots: list[dict[str, Any]] = [{} for _ in item]
            out["kvlistValue"] = {
                "values": [{"key": str(k), "value": v} for k, v in zip(item, slots, strict=True)]
            }
            stack.extend(zip(item.values(), slots, strict=True))
        else:
            out["stringValue"] = str(item)
    return root


def _attributes(attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for k, v in attrs.items():
        t = type(v)  # the common scalars here, the rest (and their subclasses) by ``_any``
        if t is str:
            value: dict[str, Any] = {"stringValue": v}
        elif t is int:
            value = {"intValue": str(v)}
        elif t is bool:
            value = {"boolValue": v}
        else:
            value = _any(v)
        out.append({"key": k, "value": value})
    return out


def _span(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": span.trace_id, "spanId": span.span_id}
    if span.parent_span_id is not None:
        out["parentSpanId"] = span.parent_span_id
    out["name"] = span.name
    out["kind"] = _KIND_NUMBERS.get(span.kind, 0)
    out["startTimeUnixNano"] = str(span.start_ns)
    if span.end_ns is not None:
        out["endTimeUnixNano"] = str(span.end_ns)
    if span.attributes:
        out["attributes"] = _attributes(span.attributes)
    if span.events:
        out["events"] = [
            {"timeUnixNano": str(e.time_ns), "name": e.name, "attributes": _attributes(e.attributes)}
            for e in span.events
        ]
    if span.links:
        out["links"] = [
            {"traceId": li.trace_id, "spanId": li.span_id, "attributes": _attributes(li.attributes)}
            for li in span.links
        ]
    status: dict[str, Any] = {"code": _STATUS_NUMBERS.get(span.status, 0)}
    if span.status_message:
        status["message"] = span.status_message
    out["status"] = status
    return out


def _scope_spans(name: str, schema_url: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """One ``scopeSpans`` block; its ``schemaUrl`` when the spans' scope declared one."""
    block: dict[str, Any] = {"scope": {"name": name}, "spans": items}
    if schema_url:
        block["schemaUrl"] = schema_url
    return block


def to_otlp_json(spans: Iterable[Span]) -> dict[str, Any]:
    """The OTLP JSON ``ExportTraceServiceRequest`` holding ``spans``, in their order (see the module doc)."""
    blocks: list[dict[str, Any]] = []
    by_resource: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = {}
    last_resource: object = _NO_RESOURCE
    key = ""
    for span in spans:
        if span.resource is not last_resource:  # spans of one request or one stored header share the dict
            last_resource = span.resource
            key = json.dumps(span.resource, sort_keys=True, ensure_ascii=False, default=repr)
        scopes = by_resource.get(key)
        if scopes is None:
            scopes = by_resource[key] = {}
            blocks.append({"resource": {"attributes": _attributes(span.resource)}, "scopeSpans": scopes})
        scopes.setdefault((span.scope, span.scope_schema_url), []).append(_span(span))
    for block in blocks:
        scopes = block["scopeSpans"]
        block["scopeSpans"] = [_scope_spans(name, url, items) for (name, url), items in scopes.items()]
    return {"resourceSpans": blocks}
