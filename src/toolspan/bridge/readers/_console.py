"""What the OpenTelemetry Python SDK's ``ConsoleSpanExporter`` prints: each span's ``ReadableSpan.to_json()``,
pretty-printed JSON objects one after the other (or one per line with a one-line formatter). It is the first
thing OpenTelemetry's tutorials print, so a file of it is read like any trace file.

Mapping: ``context.trace_id`` / ``context.span_id`` / ``parent_id`` are ``0x``-prefixed hex; ``kind`` is the
SDK's enum text (``SpanKind.INTERNAL``); ``start_time`` / ``end_time`` are ISO 8601 UTC (microseconds; an
end of ``null``: the span had not ended); ``status.status_code`` / ``status.description``; ``attributes`` and
event and link attributes are plain JSON values; events carry an ISO ``timestamp``; ``resource.attributes``
is the resource. The output names no instrumentation scope: ``scope`` is empty.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any, Final

from toolspan.bridge.model import Span, SpanEvent, SpanLink
from toolspan.bridge.readers._report import Ctx, join
from toolspan.bridge.readers._values import (
    FieldError,
    _short,
    _sub,
    in_range,
    kind,
    parent_id,
    span_id,
    trace_id,
)

__all__ = ["iter_console_span", "looks_like_console_span"]

_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_STATUS: Final = frozenset({"UNSET", "OK", "ERROR"})


def looks_like_console_span(doc: Any) -> bool:
    """Whether a parsed JSON object is one span as ``ReadableSpan.to_json()`` writes it."""
    if type(doc) is not dict or type(doc.get("name")) is not str:
        return False
    context = doc.get("context")
    return type(context) is dict and "span_id" in context and "trace_id" in context and "start_time" in doc


def _hex(value: Any) -> Any:
    return value[2:] if type(value) is str and value[:2] in ("0x", "0X") else value


def _time(value: Any) -> int:
    """Nanoseconds since the epoch of an ISO 8601 time (a naive time is UTC, as the SDK writes it)."""
    if type(value) is not str:
        raise FieldError("", f"not an ISO 8601 time: {_short(value)}")
    try:
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise FieldError("", f"not an ISO 8601 time: {_short(value)}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return in_range((when - _EPOCH) // dt.timedelta(microseconds=1) * 1000)


def _attributes(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if type(value) is not dict:
        raise FieldError("", f"not an object of attributes: {_short(value)}")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "INTERNAL"
    if type(value) is not str:
        raise FieldError("", f"not a span kind: {_short(value)}")
    return kind(value.rpartition(".")[2])


def _status(value: Any) -> tuple[str, str]:
    if value is None:
        return "UNSET", ""
    if type(value) is not dict:
        raise FieldError("", f"not a status object: {_short(value)}")
    code = str(value.get("status_code", "UNSET")).rpartition(".")[2].upper()
    if code not in _STATUS:
        raise FieldError("status_code", f"unknown status code: {_short(value.get('status_code'))}")
    message = value.get("description") or ""
    return code, message if type(message) is str else str(message)


def _events(items: Any) -> tuple[SpanEvent, ...]:
    if not items:
        return ()
    if type(items) is not list:
        raise FieldError("", f"not a list of events: {_short(items)}")
    out = []
    for i, item in enumerate(items):
        if type(item) is not dict:
            raise FieldError(f"[{i}]", f"not an event object: {_short(item)}")
        where = "timestamp"
        try:
            when = _time(item.get("timestamp"))
            where = "attributes"
            attrs = _attributes(item.get("attributes"))
        except FieldError as e:
            raise FieldError(_sub(f"[{i}].{where}", e.path), e.message) from None
        out.append(SpanEvent(str(item.get("name", "")), when, attrs))
    return tuple(out)


def _links(items: Any) -> tuple[SpanLink, ...]:
    if not items:
        return ()
    if type(items) is not list:
        raise FieldError("", f"not a list of links: {_short(items)}")
    out = []
    for i, item in enumerate(items):
        context = item.get("context") if type(item) is dict else None
        if type(context) is not dict:
            raise FieldError(f"[{i}].context", f"not a span context: {_short(context)}")
        try:
            link = SpanLink(
                trace_id(_hex(context.get("trace_id", ""))),
                span_id(_hex(context.get("span_id", ""))),
                _attributes(item.get("attributes")),
            )
        except FieldError as e:
            raise FieldError(_sub(f"[{i}]", e.path), e.message) from None
        out.append(link)
    return tuple(out)


def span_from_console(doc: dict[str, Any], origin: str) -> Span:
    """One span of the console exporter's output; ``FieldError`` naming the bad field."""
    context = doc["context"]
    where = "context.trace_id"
    try:
        tid = trace_id(_hex(context.get("trace_id", "")))
        where = "context.span_id"
        sid = span_id(_hex(context.get("span_id", "")))
        where = "parent_id"
        parent = parent_id(_hex(doc.get("parent_id")))
        where = "start_time"
        start = _time(doc.get("start_time"))
        where = "end_time"
        end = None if doc.get("end_time") is None else _time(doc["end_time"])
        if end is not None and end < start:
            raise FieldError("", f"before the start time ({doc['end_time']} < {doc['start_time']})")
        where = "kind"
        span_kind = _kind(doc.get("kind"))
        where = "status"
        code, message = _status(doc.get("status"))
        where = "attributes"
        attrs = _attributes(doc.get("attributes"))
        where = "events"
        events = _events(doc.get("events"))
        where = "links"
        links = _links(doc.get("links"))
        where = "resource"
        resource = doc.get("resource")
        resource_attrs = _attributes(resource.get("attributes") if type(resource) is dict else None)
    except FieldError as e:
        raise FieldError(_sub(where, e.path), e.message) from None
    return Span(
        tid,
        sid,
        parent,
        doc["name"],
        start,
        end,
        span_kind,
        code,
        message,
        attrs,
        events,
        links,
        resource_attrs,
        "",
        origin,
    )


def iter_console_span(doc: dict[str, Any], ctx: Ctx, prefix: str) -> Iterator[Span]:
    """The span of one console-exporter object (a bad field fails ``ctx``)."""
    try:
        yield span_from_console(doc, ctx.origin)
    except FieldError as e:
        ctx.fail(join(prefix, e.path), e.message)
