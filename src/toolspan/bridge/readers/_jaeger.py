"""Jaeger query API v1 traces (``/api/traces/{id}``: the ``{data: [...]}`` envelope or a bare trace).

Mapping (the one Jaeger's own OTLP translator uses): times are microseconds; ``span.kind`` tag ->
kind; ``otel.status_code`` / ``otel.status_description`` tags -> status (else an ``error`` tag that is
``true`` or ``"true"`` -> ERROR); ``otel.scope.name`` / ``otel.library.name`` tags -> scope; those tags
are consumed (removed from attributes), the scope version tags too (the model keeps no scope version).
The parent is the first same-trace CHILD_OF reference, else the first same-trace FOLLOWS_FROM one;
every other reference is a link with ``opentracing.ref_type`` = ``child_of`` / ``follows_from``.
Logs are events, their ``event`` field is the event name. The process is the resource
(``service.name`` = ``serviceName`` plus the process tags).

What Jaeger's query service changes in a span before it answers, undone here for both APIs'
documents (``from_jaeger``):
- it sorts a span's events by name (its ``SortCollections`` adjuster): put back in the order they
  happened (by time, stable), the order an SDK records them in;
- it gives a span without an end (a pending record, ``end_time_unix_nano`` 0) the end start + 1 ns (API
  v1: duration 0) and says so in its ``@jaeger@warnings`` attribute (API v3: a list). API v1 moves that
  attribute into the ``warnings`` field of the span *with that span id*, and a pending record shares its
  id with its ended record: the note lands on either record, the other keeps the attribute as a tag
  (JSON text). So a span is read back without an end when the note is in its attribute or its
  ``warnings`` *and* it lasted at most the 1 ns Jaeger gave it (an ended record does not: its note is
  its sibling's);
- its warnings (that note, "duplicate span IDs; skipping clock skew adjustment", ...) are Jaeger's notes,
  not the application's data: not kept as attributes.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.model import Span, SpanEvent, SpanLink
from toolspan.bridge.readers._report import Ctx, join
from toolspan.bridge.readers._values import (
    MAX_NS,
    FieldError,
    _short,
    _sub,
    b64_text,
    double,
    in_range,
    kind,
    parent_id,
    span_id,
    trace_id,
)

REF_TYPE: Final = sc.OPENTRACING_REF_TYPE
_LOG_EVENT: Final = "event"  # the Jaeger log field holding the event name (a field name, not a tag key)
_CONSUMED: Final = frozenset(
    {
        sc.JAEGER_SPAN_KIND,
        sc.OTEL_STATUS_CODE,
        sc.OTEL_STATUS_DESCRIPTION,
        sc.OTEL_SCOPE_NAME,
        sc.OTEL_SCOPE_VERSION,
        sc.OTEL_LIBRARY_NAME,
        sc.OTEL_LIBRARY_VERSION,
    }
)


def tag_value(tag: dict[str, Any]) -> Any:
    """The Python value of a typed Jaeger tag (``binary`` stays base64 text)."""
    value = tag.get("value")
    vtype = tag.get("type", "string")
    if vtype == "string":
        if type(value) is not str:
            raise FieldError("value", f"not a string: {_short(value)}")
        return value
    if vtype == "int64":
        if type(value) is int or (type(value) is str and value.lstrip("-").isdigit()):
            return int(value)
        raise FieldError("value", f"not an int64: {_short(value)}")
    if vtype == "float64":
        if isinstance(value, bool):
            raise FieldError("value", f"not a float64: {_short(value)}")
        return double(value, "value", "a float64")
    if vtype == "bool":
        if type(value) is bool:
            return value
        if value in ("true", "false"):
            return value == "true"
        raise FieldError("value", f"not a bool: {_short(value)}")
    if vtype == "binary":
        return b64_text(value, "value")
    raise FieldError("type", f"unknown tag type: {_short(vtype)}")


def tags(items: Any) -> dict[str, Any]:
    """A dict from a list of typed Jaeger tags."""
    out: dict[str, Any] = {}
    if not items:
        return out
    if type(items) is not list:
        raise FieldError("", f"not a list: {_short(items)}")
    for i, tag in enumerate(items):
        if type(tag) is not dict or type(tag.get("key")) is not str:
            raise FieldError(f"[{i}]", f"not a tag object: {_short(tag)}")
        try:
            out[tag["key"]] = tag_value(tag)
        except FieldError as e:
            raise FieldError(_sub(f"[{i}]", e.path), e.message) from None
    return out


def _micros(value: Any) -> int:
    """Nanoseconds of a whole number of microseconds (``0 <= ns < 2**64``)."""
    if type(value) is int or (type(value) is str and value.lstrip("-").isdigit()):
        ns = int(value) * 1000
        if 0 <= ns <= MAX_NS:
            return ns
        raise FieldError("", f"out of range: {_short(value)} (microseconds must be 0 to (2**64-1)/1000)")
    raise FieldError("", f"not an integer of microseconds: {_short(value)}")


def _resource(process: Any) -> dict[str, Any]:
    if type(process) is not dict:
        raise FieldError("", f"not a process object: {_short(process)}")
    try:
        res = tags(process.get("tags"))
    except FieldError as e:
        raise FieldError(_sub("tags", e.path), e.message) from None
    service = process.get("serviceName")
    if service is not None:
        res = {sc.SERVICE_NAME: service, **res}
    return res


def span_from_jaeger(raw: Any, resources: dict[str, dict[str, Any]], origin: str) -> Span:
    """One Jaeger v1 span as a ``Span``; raises ``FieldError`` naming the bad field."""
    if type(raw) is not dict:
        raise FieldError("", f"not a span object: {_short(raw)}")
    where = "traceID"
    try:
        tid = trace_id(raw.get("traceID", ""))
        where = "spanID"
        sid = span_id(raw.get("spanID", ""))
        where = "operationName"
        name = raw.get("operationName", "")
        if type(name) is not str:
            raise FieldError("", f"not a string: {_short(name)}")
        where = "startTime"
        start = _micros(raw.get("startTime"))
        where = "duration"
        dur = raw.get("duration")
        end = None if dur is None else in_range(start + _micros(dur))
        where = "tags"
        attrs = tags(raw.get("tags"))
        where = "references"
        parent, links = _references(raw.get("references"), tid)
        where = "logs"
        events = _logs(raw.get("logs"))
        where = "processID"
        if "process" in raw:
            where = "process"
            resource = _resource(raw["process"])
        else:
            pid = raw.get("processID")
            found = resources.get(pid) if type(pid) is str else None
            if found is None:
                raise FieldError("", f"unknown process: {_short(pid)}")
            resource = found
        where = "tags"
        k = attrs.pop(sc.JAEGER_SPAN_KIND, None)
        kname = "UNSPECIFIED" if k is None else kind(k)
        code, message = _status(attrs)
        scope = attrs.get(sc.OTEL_SCOPE_NAME, attrs.get(sc.OTEL_LIBRARY_NAME, ""))
        if type(scope) is not str:
            raise FieldError(sc.OTEL_SCOPE_NAME, f"not a string: {_short(scope)}")
        for key in _CONSUMED.intersection(attrs):
            del attrs[key]
    except FieldError as e:
        raise FieldError(_sub(where, e.path), e.message) from None
    return Span(
        tid,
        sid,
        parent,
        name,
        start,
        end,
        kname,
        code,
        message,
        attrs,
        events,
        links,
        resource,
        scope,
        origin,
    )


def _status(attrs: dict[str, Any]) -> tuple[str, str]:
    code = attrs.get(sc.OTEL_STATUS_CODE)
    message = attrs.get(sc.OTEL_STATUS_DESCRIPTION, "")
    if type(message) is not str:
        message = str(message)
    if code is not None:
        code = str(code).upper()
        if code not in ("OK", "ERROR", "UNSET"):
            raise FieldError(sc.OTEL_STATUS_CODE, f"unknown status code: {_short(code)}")
        if code == "ERROR" and attrs.get(sc.JAEGER_ERROR) in (True, "true"):
            del attrs[sc.JAEGER_ERROR]  # written together with otel.status_code by OTLP->Jaeger translators
        return code, message
    if attrs.get(sc.JAEGER_ERROR) in (True, "true"):
        del attrs[sc.JAEGER_ERROR]
        return "ERROR", message
    return "UNSET", message


def _references(items: Any, tid: str) -> tuple[str | None, tuple[SpanLink, ...]]:
    if not items:
        return None, ()
    if type(items) is not list:
        raise FieldError("", f"not a list: {_short(items)}")
    refs = []
    for i, ref in enumerate(items):
        if type(ref) is not dict:
            raise FieldError(f"[{i}]", f"not a reference object: {_short(ref)}")
        rtype = ref.get("refType", "CHILD_OF")
        if rtype not in ("CHILD_OF", "FOLLOWS_FROM"):
            raise FieldError(f"[{i}].refType", f"unknown reference type: {_short(rtype)}")
        try:
            rtid = trace_id(ref.get("traceID", tid))
        except FieldError as e:
            raise FieldError(f"[{i}].traceID", e.message) from None
        try:
            rsid = span_id(ref.get("spanID", ""))
        except FieldError as e:
            raise FieldError(f"[{i}].spanID", e.message) from None
        refs.append((rtype, rtid, rsid))
    parent_at = next((i for i, r in enumerate(refs) if r[0] == "CHILD_OF" and r[1] == tid), None)
    if parent_at is None:
        parent_at = next((i for i, r in enumerate(refs) if r[0] == "FOLLOWS_FROM" and r[1] == tid), None)
    parent = None if parent_at is None else parent_id(refs[parent_at][2])
    links = tuple(
        SpanLink(rtid, rsid, {REF_TYPE: rtype.lower()})
        for i, (rtype, rtid, rsid) in enumerate(refs)
        if i != parent_at
    )
    return parent, links


def _logs(items: Any) -> tuple[SpanEvent, ...]:
    if not items:
        return ()
    if type(items) is not list:
        raise FieldError("", f"not a list: {_short(items)}")
    out = []
    for i, log in enumerate(items):
        if type(log) is not dict:
            raise FieldError(f"[{i}]", f"not a log object: {_short(log)}")
        try:
            t = _micros(log.get("timestamp"))
        except FieldError as e:
            raise FieldError(f"[{i}].timestamp", e.message) from None
        try:
            fields = tags(log.get("fields"))
        except FieldError as e:
            raise FieldError(_sub(f"[{i}].fields", e.path), e.message) from None
        name = fields.pop(_LOG_EVENT, "")
        out.append(SpanEvent(name if type(name) is str else str(name), t, fields))
    return tuple(out)


# Jaeger's negative-duration sanitizer on a span whose end was 0 (unset), before its adjusted time.
_NO_END_WARNING: Final = (
    "Negative duration detected, sanitizing end timestamp. "
    "Original end timestamp: 1970-01-01 00:00:00 +0000 UTC"
)


def _notes(value: Any) -> list[Any]:
    """Jaeger's warnings: a list (API v3, the v1 span field), or its JSON text (an API v1 tag)."""
    if type(value) is str:
        try:
            value = json.loads(value)
        except ValueError:
            return [value]
    return list(value) if type(value) in (list, tuple) else []


def from_jaeger(span: Span, warnings: Any = ()) -> Span:
    """``span`` as the application sent it, where Jaeger's answer allows: events in time order, no end for
    a span Jaeger says had none, Jaeger's ``@jaeger@warnings`` attribute dropped (``warnings``: API v1's
    field of the span)."""
    attrs = span.attributes
    notes = _notes(warnings)
    if sc.JAEGER_WARNINGS in attrs:
        attrs = dict(attrs)
        notes += _notes(attrs.pop(sc.JAEGER_WARNINGS))
    end = span.end_ns
    if (
        end is not None
        and end - span.start_ns <= 1
        and any(type(n) is str and n.startswith(_NO_END_WARNING) for n in notes)
    ):
        end = None
    events = span.events
    if any(events[i].time_ns > events[i + 1].time_ns for i in range(len(events) - 1)):
        events = tuple(sorted(events, key=lambda e: e.time_ns))
    if attrs is span.attributes and end == span.end_ns and events is span.events:
        return span
    return dataclasses.replace(span, attributes=attrs, end_ns=end, events=events)


def iter_trace(trace: Any, ctx: Ctx, prefix: str = "") -> Iterator[Span]:
    """Spans of one Jaeger v1 trace object (``traceID``, ``spans``, ``processes``)."""
    if type(trace) is not dict:
        ctx.fail(prefix, f"not a trace object: {_short(trace)}")
        return
    spans = trace.get("spans")
    if type(spans) is not list:
        ctx.fail(join(prefix, "spans"), f"not a list: {_short(spans)}")
        return
    resources: dict[str, dict[str, Any]] = {}
    processes = trace.get("processes") or {}
    if type(processes) is not dict:
        ctx.fail(join(prefix, "processes"), f"not an object: {_short(processes)}", len(spans) or 1)
        return
    bad_processes = set()
    for pid, process in processes.items():
        try:
            resources[pid] = _resource(process)
        except FieldError as e:
            bad_processes.add(pid)
            ctx.fail(_sub(join(prefix, f"processes.{pid}"), e.path), e.message, 0)
    origin = ctx.origin
    for i, raw in enumerate(spans):
        path = join(prefix, f"spans[{i}]")
        if type(raw) is dict and raw.get("processID") in bad_processes:
            ctx.fail(f"{path}.processID", "its process could not be read")
            continue
        try:
            span = span_from_jaeger(raw, resources, origin)
        except FieldError as e:
            ctx.fail(_sub(path, e.path), e.message)
            continue
        yield from_jaeger(span, raw.get("warnings") if type(raw) is dict else ())


def iter_envelope(doc: dict[str, Any], ctx: Ctx, prefix: str = "") -> Iterator[Span]:
    """Spans of a v1 ``{data: [trace...], errors: [...]}`` response; its errors become issues."""
    errors = doc.get("errors")
    if errors:
        for err in errors if type(errors) is list else [errors]:
            msg = err.get("msg", err) if type(err) is dict else err
            ctx.warn(join(prefix, "errors"), f"the server reported: {_short(msg)}")
    data = doc.get("data")
    if data is None:
        return
    if type(data) is not list:
        ctx.fail(join(prefix, "data"), f"not a list: {_short(data)}")
        return
    for t, trace in enumerate(data):
        yield from iter_trace(trace, ctx, join(prefix, f"data[{t}]"))
