"""OTLP log records (log-based GenAI events), read and joined to the spans they belong to.

The OpenTelemetry Span Events API is giving way to log-based events: GenAI content (``gen_ai.user.message``,
``gen_ai.choice``, ``gen_ai.client.inference.operation.details``, ...) increasingly arrives as log records
carrying the trace and span id of the span they describe. Read here, in every encoding the trace readers
take: OTLP/JSON (one ``ExportLogsServiceRequest`` document, or the Collector ``file`` exporter's JSON Lines)
and OTLP protobuf (a request body, or the ``file`` exporter's length-prefixed records). ``attach_logs`` turns
each record tied to a span into an event of that span (name: the record's event name, else its
``event.name`` attribute; attributes: the record's attributes plus its body's fields, or ``body``), so the
bridge reads log-based content exactly like span events. Records tied to no span that was read are counted.
"""

from __future__ import annotations

import dataclasses
import json
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolspan import semconv as sc
from toolspan.bridge.facts import parse_json
from toolspan.bridge.model import Span, SpanEvent
from toolspan.bridge.readers._values import any_value, attributes, nanos, span_id, trace_id
from toolspan.bridge.readers._writable import may_hold_surrogates, writable_document

__all__ = [
    "LogRecord",
    "attach_logs",
    "is_logs_document",
    "logs_from_bytes",
    "logs_from_json",
    "logs_from_proto",
]

_MAX_RECORD: int = 1 << 30


@dataclass(frozen=True, slots=True)
class LogRecord:
    trace_id: str
    span_id: str
    time_ns: int
    event_name: str
    attributes: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None


def is_logs_document(doc: Any) -> bool:
    """True for an OTLP/JSON ``ExportLogsServiceRequest`` (``{"resourceLogs": [...]}``)."""
    return isinstance(doc, dict) and "resourceLogs" in doc


def _name(event_name: Any, attrs: Mapping[str, Any]) -> str:
    if isinstance(event_name, str) and event_name:
        return event_name
    value = attrs.get(sc.LOG_EVENT_NAME)
    return str(value) if value else "log"


def logs_from_json(doc: Mapping[str, Any]) -> Iterator[LogRecord]:
    for resource_logs in doc.get("resourceLogs") or ():
        for scope_logs in (
            resource_logs.get("scopeLogs") or resource_logs.get("instrumentationLibraryLogs") or ()
        ):
            for raw in scope_logs.get("logRecords") or ():
                trace = raw.get("traceId") or ""
                span = raw.get("spanId") or ""
                if not trace or not span:
                    continue
                attrs = attributes(raw.get("attributes") or [])
                time = raw.get("timeUnixNano") or raw.get("observedTimeUnixNano") or 0
                yield LogRecord(
                    trace_id=trace_id(trace),
                    span_id=span_id(span),
                    time_ns=nanos(time),
                    event_name=_name(raw.get("eventName"), attrs),
                    attributes=attrs,
                    body=any_value(raw["body"]) if isinstance(raw.get("body"), dict) else None,
                )


def _proto_value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_proto_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _proto_value(kv.value) for kv in v.kvlist_value.values}
    if which == "bytes_value":
        return v.bytes_value.hex()
    return None if which is None else getattr(v, which)


def logs_from_proto(data: bytes) -> Iterator[LogRecord]:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    request = ExportLogsServiceRequest()
    request.ParseFromString(data)
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            for raw in scope_logs.log_records:
                if not raw.trace_id or not raw.span_id:
                    continue
                attrs = {kv.key: _proto_value(kv.value) for kv in raw.attributes}
                yield LogRecord(
                    trace_id=raw.trace_id.hex(),
                    span_id=raw.span_id.hex(),
                    time_ns=raw.time_unix_nano or raw.observed_time_unix_nano,
                    event_name=_name(getattr(raw, "event_name", ""), attrs),
                    attributes=attrs,
                    body=_proto_value(raw.body) if raw.HasField("body") else None,
                )


def _length_prefixed(data: bytes) -> list[bytes] | None:
    """The records of the Collector ``file`` exporter's ``proto`` format, or ``None`` if it is not one."""
    out = []
    at = 0
    while at < len(data):
        if at + 4 > len(data):
            return None
        (size,) = struct.unpack(">I", data[at : at + 4])
        if size > _MAX_RECORD or at + 4 + size > len(data):
            return None
        out.append(data[at + 4 : at + 4 + size])
        at += 4 + size
    return out


def logs_from_bytes(data: bytes) -> list[LogRecord]:
    """Every span-tied log record of one logs file (OTLP JSON, JSON Lines or protobuf, detected)."""
    text = data.lstrip()[:1]
    if text in (b"{", b"["):
        records: list[LogRecord] = []
        try:
            docs: Iterable[Any] = [json.loads(data)]
        except ValueError:
            docs = (json.loads(line) for line in data.splitlines() if line.strip())
        mend = may_hold_surrogates(data)
        for parsed in docs:
            # A lone surrogate read as the text of its escape, as every reader reads it.
            doc = writable_document(parsed) if mend else parsed
            for item in doc if isinstance(doc, list) else [doc]:
                if is_logs_document(item):
                    records.extend(logs_from_json(item))
        return records
    parts = _length_prefixed(data)
    if parts is not None and parts:
        try:
            return [r for part in parts for r in logs_from_proto(part)]
        except Exception:  # protobuf's DecodeError: not this framing, try a plain body
            pass
    try:
        return list(logs_from_proto(data))
    except Exception as e:  # protobuf's DecodeError
        raise ValueError(f"neither OTLP/JSON nor OTLP protobuf logs ({type(e).__name__})") from e


def _event(record: LogRecord) -> SpanEvent:
    attrs = dict(record.attributes)
    body = record.body
    if isinstance(body, str) and body.startswith("{"):
        # A body written as JSON text of an object (Semantic Kernel's GenAI events): its fields.
        parsed = parse_json(body)
        body = parsed if isinstance(parsed, Mapping) else body
    if isinstance(body, Mapping):
        for key, value in body.items():
            attrs.setdefault(str(key), value)
    elif body is not None:
        attrs.setdefault("body", body)
    return SpanEvent(record.event_name, record.time_ns, attrs)


def attach_logs(spans: Sequence[Span], records: Iterable[LogRecord]) -> tuple[list[Span], int]:
    """``spans`` with each log record added as an event of its span (in time order), and how many records
    matched no span."""
    by_span: dict[tuple[str, str], list[SpanEvent]] = {}
    for record in records:
        by_span.setdefault((record.trace_id, record.span_id), []).append(_event(record))
    if not by_span:
        return list(spans), 0
    matched: set[tuple[str, str]] = set()
    out = []
    for span in spans:
        key = (span.trace_id, span.span_id)
        extra = by_span.get(key)
        if extra is None:
            out.append(span)
            continue
        matched.add(key)
        events = tuple(sorted((*span.events, *extra), key=lambda e: e.time_ns))
        out.append(dataclasses.replace(span, events=events))
    unmatched = sum(len(v) for k, v in by_span.items() if k not in matched)
    return out, unmatched
