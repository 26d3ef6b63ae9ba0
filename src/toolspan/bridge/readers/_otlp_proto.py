"""OTLP protobuf: a binary ``ExportTraceServiceRequest`` body and the Collector ``file`` exporter's
``proto`` format (each message preceded by its length as a 4-byte big-endian unsigned integer)."""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Iterator, Mapping
from functools import cache
from typing import IO, Any

from toolspan.bridge._json_write import nonfinite_text
from toolspan.bridge.model import SPAN_KINDS, Span, SpanEvent, SpanLink
from toolspan.bridge.readers._report import Ctx
from toolspan.bridge.readers._values import ZERO_SPAN, ZERO_TRACE

_STATUS = ("UNSET", "OK", "ERROR")
_CHUNK = 1 << 20


@cache
def _request_type() -> Any:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    return ExportTraceServiceRequest


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which == "string_value":
        return v.string_value
    if which == "bool_value":
        return v.bool_value
    if which == "int_value":
        return v.int_value
    if which == "double_value":
        number = v.double_value
        return number if math.isfinite(number) else nonfinite_text(number)
    if which == "bytes_value":
        return base64.b64encode(v.bytes_value).decode("ascii")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return _attrs(v.kvlist_value.values)
    return None


def attributes(items: Any) -> dict[str, Any]:
    """A protobuf ``KeyValue`` list as a dict of plain values."""
    out = {}
    for kv in items:
        value = kv.value
        text = value.string_value
        if text:  # most attributes: a text, read without asking which value the oneof holds
            out[kv.key] = text
            continue
        which = value.WhichOneof("value")
        if which == "string_value":
            out[kv.key] = text
        elif which == "int_value":
            out[kv.key] = value.int_value
        else:
            out[kv.key] = _value(value)
    return out


_attrs = attributes


def _hex(raw: bytes, zero: str) -> str:
    return raw.hex().rjust(len(zero), "0") if raw else zero


def span_of(
    sp: Any,
    resource: Mapping[str, Any],
    scope: str,
    origin: str,
    keys: frozenset[str] | None = None,
    *,
    schema_url: str = "",
) -> Span:
    """The neutral span of one protobuf ``Span`` (its end time already checked). With ``keys``, a partial
    span for indexing: only those attributes, no links (what the span's role and state are read from)."""
    parent = sp.parent_span_id.hex() if sp.parent_span_id else None
    if parent == ZERO_SPAN:
        parent = None
    kind = sp.kind
    status = sp.status
    code = status.code
    links: tuple[SpanLink, ...] = ()
    if keys is None:
        attributes = _attrs(sp.attributes)
        if sp.links:
            links = tuple(
                SpanLink(_hex(ln.trace_id, ZERO_TRACE), _hex(ln.span_id, ZERO_SPAN), _attrs(ln.attributes))
                for ln in sp.links
            )
    else:
        attributes = {}
        for kv in sp.attributes:
            key = kv.key
            if key in keys:
                attributes[key] = _value(kv.value)
    events = sp.events
    return Span(
        _hex(sp.trace_id, ZERO_TRACE),
        _hex(sp.span_id, ZERO_SPAN),
        parent,
        sp.name,
        sp.start_time_unix_nano,
        sp.end_time_unix_nano or None,
        SPAN_KINDS[kind] if 0 <= kind < len(SPAN_KINDS) else "UNSPECIFIED",
        _STATUS[code] if 0 <= code < 3 else "UNSET",
        status.message,
        attributes,
        tuple(SpanEvent(e.name, e.time_unix_nano, _attrs(e.attributes)) for e in events) if events else (),
        links,
        resource,
        scope,
        origin,
        schema_url,
    )


def resource_attributes(rs: Any) -> dict[str, Any]:
    """The resource attributes of one protobuf ``ResourceSpans``."""
    return _attrs(rs.resource.attributes)


def bad_times(sp: Any, r: int, s: int, i: int) -> tuple[str, str] | None:
    """``(path, reason)`` when a protobuf ``Span`` ends before it starts, else ``None``."""
    if sp.end_time_unix_nano and sp.end_time_unix_nano < sp.start_time_unix_nano:
        return (
            f"resource_spans[{r}].scope_spans[{s}].spans[{i}].end_time_unix_nano",
            f"before the start time ({sp.end_time_unix_nano} < {sp.start_time_unix_nano})",
        )
    return None


def parse_request(data: bytes, ctx: Ctx, what: str = "protobuf request") -> Any:
    """The parsed ``ExportTraceServiceRequest`` of ``data``; ``None`` (after ``ctx.fail``) when invalid."""
    from google.protobuf.message import DecodeError

    try:
        return _request_type().FromString(data)
    except DecodeError as e:
        ctx.fail("", f"not a valid OTLP {what}: {e}")
        return None


def iter_proto_request(data: bytes, ctx: Ctx, what: str = "protobuf request") -> Iterator[Span]:
    """Spans of one binary ``ExportTraceServiceRequest``."""
    request = parse_request(data, ctx, what)
    if request is None:
        return
    origin = ctx.origin
    for r, rs in enumerate(request.resource_spans):
        resource = resource_attributes(rs)
        for s, ss in enumerate(rs.scope_spans):
            scope, schema_url = ss.scope.name, ss.schema_url
            for i, sp in enumerate(ss.spans):
                bad = bad_times(sp, r, s, i)
                if bad is not None:
                    ctx.fail(*bad)
                    continue
                yield span_of(sp, resource, scope, origin, schema_url=schema_url)


def read_upto(stream: IO[bytes], n: int) -> bytes:
    """Up to ``n`` bytes, read in chunks so that a bogus size never allocates more than the data."""
    parts: list[bytes] = []
    while n > 0:
        chunk = stream.read(min(n, _CHUNK))
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


_MESSAGE_STARTS = (0x0A, 0x7B)  # field 1 of a request (resource_spans), or ``{`` of a JSON request


def looks_length_prefixed(head: bytes, limit: int) -> bool:
    """Whether bytes start like the file exporter's framing: a 4-byte big-endian length from 1 to
    ``limit``, then a message that starts like a request (protobuf field 1, or JSON ``{``)."""
    if len(head) < 5:
        return False
    (size,) = struct.unpack(">I", head[:4])
    return 0 < size <= limit and head[4] in _MESSAGE_STARTS


def _bad_prefix(size: int, first: bytes, limit: int) -> str | None:
    if size == 0:
        return "length prefix 0 (an empty message)"
    if size > limit:
        return f"length prefix {size:,} over the {limit:,}-byte record limit"
    if first and first[0] not in _MESSAGE_STARTS:
        return f"the message does not start like an OTLP request (byte 0x{first[0]:02x})"
    return None


def iter_length_prefixed(stream: IO[bytes], ctx: Ctx, on_bytes: Any, limit: int) -> Iterator[Span]:
    """Spans of a length-prefixed file; a message cut short at the end is reported, not raised.

    A framed message that starts with ``{`` is JSON (what the exporter writes for ``json`` with
    compression); it is parsed as an OTLP JSON request. A bogus length prefix (0, over ``limit``, or
    followed by something that is not a request) is a read error at its byte offset; the messages
    after it cannot be found, so the rest of the input is skipped (counted as one record).
    """
    from toolspan.bridge.readers._json_parse import loads_function
    from toolspan.bridge.readers._otlp_json import iter_request

    loads = loads_function()

    index = 0
    offset = 0
    while True:
        head = stream.read(4)
        if not head:
            return
        index += 1
        ctx.line = index
        if len(head) < 4:
            ctx.warn("", f"message {index}: incomplete length prefix at end of input (cut off)", 1)
            return
        (size,) = struct.unpack(">I", head)
        first = stream.read(1) if 0 < size <= limit else b""
        problem = _bad_prefix(size, first, limit)
        if problem is not None:
            ctx.fail("", f"message {index} at byte {offset:,}: {problem}; the rest of the input is skipped")
            return
        data = first + read_upto(stream, size - 1)
        if on_bytes is not None:
            on_bytes(4 + len(data))
        if len(data) < size:
            ctx.warn("", f"message {index}: cut off at end of input ({len(data)} of {size} bytes)", 1)
            return
        offset += 4 + size
        if data[:1] == b"{":
            try:
                doc = loads(data)
            except ValueError as e:
                ctx.fail("", f"message {index}: invalid JSON: {e}")
                continue
            if type(doc) is not dict:
                ctx.fail("", f"message {index}: not an OTLP JSON request")
                continue
            yield from iter_request(doc, ctx)
        else:
            yield from iter_proto_request(data, ctx, f"protobuf message {index}")
