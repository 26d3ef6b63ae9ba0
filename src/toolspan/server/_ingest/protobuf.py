"""An OTLP protobuf ``ExportTraceServiceRequest`` as the store's rows, without building full spans: each
span's columns come from its index attributes (``INDEX_KEYS`` only), and it is stored as the protobuf bytes
it came in, behind its resource and scope (``codec.proto_header``).

A request body (``rows_of_body``) is parsed with a twin of the OTLP request type (``_index_types``) whose
spans hold their attributes as a map, which the protobuf runtime builds in C: the index keys a span holds
are found by one set intersection with the map's keys and only those read, not walked one by one in Python.
The twin reads exactly the bytes the OTLP type reads (a map field is on the wire what a repeated
``KeyValue`` is; a span's events, only counted here, and its status, a part of its shape, are read as
bytes; every other field is the OTLP one), so a body it refuses is refused with the OTLP type's own
message; a span whose events or status the OTLP type refuses (when it is read from its bytes) sends the
whole body to the OTLP type, for that message. Each span is stored as the bytes it came in
(``_span_bytes`` finds them in the body), never encoded again. A request parsed already (gRPC) is read the
same way, its attributes walked (``rows_of_request``).

Most spans of an agent share their shape: the same name, kind, status and index attributes, only ids and
times differ. The columns that depend on the shape alone (role, tool name, state, error, conversation) are
kept per shape (``_SHAPES``), so a span of a shape met before is not built as a partial span: its ids and
times are read and its shape looked up. A span with events, an index attribute that is not a string, or a
shape not met yet is read as a partial span through the bridge reader (``row_of``), as ``toolspan convert``
reads it, and its shape kept. A shape's status is the bytes it came in: a shape is kept only once a span
of it was read whole from its bytes, so a status of the same bytes is one the OTLP type reads.
``tests/server/ingest/test_protobuf.py`` checks every way gives the same rows on the whole corpus.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge.internal import ZERO_SPAN, ZERO_TRACE, Ctx, bad_times, parse_trace_request
from toolspan.bridge.internal import proto_resource_attributes as resource_attributes
from toolspan.bridge.internal import proto_span as span_of
from toolspan.bridge.readers import ReadReport
from toolspan.server._rows.codec import proto_header
from toolspan.server._rows.spans import INDEX_KEYS, MAX_STORED_NS, Row, row_of

__all__ = ["bad_id_or_time", "plain_rows_of_body", "rows_of_body", "rows_of_request"]

_ID_BYTES: Final = (("trace_id", 16), ("span_id", 8), ("parent_span_id", 8))
_KEY_SET: Final = frozenset(INDEX_KEYS)
# The fields of ``Span`` the twin reads as bytes: its events (11) and its status (15).
_AS_BYTES: Final = (11, 15)
_PACKAGE: Final = "toolspan.server.ingest"
# Shapes kept at most (per process: a parse worker's, or the server's own); past it they are met again.
_MAX_SHAPES: Final = 4096
_MAX_SHAPE_CHARS: Final = 1024
# Shape -> (is_tool, tool_name, tool_state, is_error, conversation_id, name): the columns of ``row_of`` that
# depend on the shape only (a span without events never waits for an approval). The name is the first span's
# of the shape: every span of it then holds the same text object, sent to the server once a request.
_Columns = tuple[int, str | None, str | None, int, str | None, str]
_SHAPES: dict[tuple[Any, ...], _Columns] = {}


def bad_id_or_time(sp: Any) -> tuple[str, str] | None:
    """``(field, reason)`` when a protobuf ``Span`` has an id of the wrong length (OTLP: a trace id of 16
    bytes, span ids of 8; an empty one means missing) or a time the store cannot keep, else ``None``."""
    for name, size in _ID_BYTES:
        length = len(getattr(sp, name))
        if length not in (0, size):
            return name, f"{length} bytes, expected {size}"
    for name in ("start_time_unix_nano", "end_time_unix_nano"):
        value = getattr(sp, name)
        if value > MAX_STORED_NS:
            return name, f"{value} is past 2**63-1 ns (the year 2262), the latest time the server stores"
    return None


@cache
def _index_types() -> tuple[Any, Any]:
    """The twin of ``ExportTraceServiceRequest`` whose spans hold their attributes as a map (field 9, a
    ``map<string, AnyValue>``: on the wire, a repeated ``KeyValue``), and the OTLP ``Span`` type."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    from opentelemetry.proto.common.v1 import common_pb2
    from opentelemetry.proto.trace.v1 import trace_pb2

    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="toolspan/server/ingest/index.proto",
        package=_PACKAGE,
        syntax="proto3",
        dependency=[trace_service_pb2.DESCRIPTOR.name, trace_pb2.DESCRIPTOR.name, common_pb2.DESCRIPTOR.name],
    )

    def twin(message: Any, number: int, type_name: str) -> Any:
        copy = proto.message_type.add()
        message.DESCRIPTOR.CopyToProto(copy)
        del copy.nested_type[:], copy.enum_type[:]  # the OTLP ones are referred to by their full names
        for f in copy.field:
            if f.number == number:
                f.type_name = f".{_PACKAGE}.{type_name}"
        return copy

    span = twin(trace_pb2.Span, 9, "Span.AttributesEntry")
    for f in span.field:
        if f.number in _AS_BYTES:
            # Read as the bytes they came in: a span with events, or of a shape not met yet, is read
            # as a partial span from its bytes, which checks them.
            f.type = field.TYPE_BYTES
            f.ClearField("type_name")
    entry = span.nested_type.add(name="AttributesEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", json_name="key", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    entry.field.add(
        name="value",
        json_name="value",
        number=2,
        type=field.TYPE_MESSAGE,
        label=field.LABEL_OPTIONAL,
        type_name=".opentelemetry.proto.common.v1.AnyValue",
    )
    twin(trace_pb2.ScopeSpans, 2, "Span")
    twin(trace_pb2.ResourceSpans, 2, "ScopeSpans")
    twin(trace_service_pb2.ExportTraceServiceRequest, 1, "ResourceSpans")
    pool = descriptor_pool.Default()
    pool.AddSerializedFile(proto.SerializeToString())
    request = pool.FindMessageTypeByName(f"{_PACKAGE}.ExportTraceServiceRequest")
    return message_factory.GetMessageClass(request), trace_pb2.Span


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def _fields(data: bytes, start: int, end: int, number: int) -> list[tuple[int, int]] | None:
    """Where the length-delimited fields ``number`` of the message ``data[start:end]`` hold their bytes,
    in order; ``None`` for a message this does not read plainly (a group)."""
    found: list[tuple[int, int]] = []
    i = start
    while i < end:
        key = data[i]
        i += 1
        if key >= 0x80:
            key, i = _varint(data, i - 1)
        kind = key & 7
        if kind == 2:
            size = data[i]
            i += 1
            if size >= 0x80:
                if data[i] < 0x80:  # two bytes: a span's length, mostly
                    size = (size & 0x7F) | data[i] << 7
                    i += 1
                else:
                    size, i = _varint(data, i - 1)
            if key >> 3 == number:
                found.append((i, i + size))
            i += size
        elif kind == 0:
            _, i = _varint(data, i)
        elif kind == 1:
            i += 8
        elif kind == 5:
            i += 4
        else:
            return None
    return found if i == end else None


def _span_bytes(body: bytes, request: Any) -> list[list[list[bytes]]] | None:
    """The bytes of each span of ``body`` as received, by resource and scope; ``None`` when they cannot
    be told apart plainly, or do not match the parsed ``request`` span for span."""
    resources = _fields(body, 0, len(body), 1)
    if resources is None or len(resources) != len(request.resource_spans):
        return None
    out: list[list[list[bytes]]] = []
    for (start, end), rs in zip(resources, request.resource_spans, strict=True):
        scopes = _fields(body, start, end, 2)
        if scopes is None or len(scopes) != len(rs.scope_spans):
            return None
        of_resource: list[list[bytes]] = []
        for (s_start, s_end), ss in zip(scopes, rs.scope_spans, strict=True):
            spans = _fields(body, s_start, s_end, 2)
            if spans is None or len(spans) != len(ss.spans):
                return None
            of_resource.append([body[a:b] for a, b in spans])
        out.append(of_resource)
    return out


def _service(resource: Mapping[str, Any]) -> str | None:
    found = resource.get(sc.SERVICE_NAME)
    return None if found is None else str(found)


class _Hexes(dict[bytes, str]):
    """Each id's text, made once a request (a trace's, a parent's): one object the rows share, which the
    server process then reads once."""

    def __missing__(self, raw: bytes) -> str:
        text = self[raw] = raw.hex()
        return text


def _keep(shape: tuple[Any, ...] | None, row: Row) -> Row:
    # A shape of long texts (a huge name or attribute: a hostile client's) is not kept, so the shapes kept
    # hold at most ``_MAX_SHAPES`` times ``_MAX_SHAPE_CHARS`` characters.
    if shape is not None and sum(len(v) for v in shape if isinstance(v, (str, bytes))) <= _MAX_SHAPE_CHARS:
        if len(_SHAPES) >= _MAX_SHAPES:
            _SHAPES.clear()
        _SHAPES[shape] = (
            row.is_tool,
            row.tool_name,
            row.tool_state,
            row.is_error,
            row.conversation_id,
            row.name,
        )
    return row


def _rows(
    request: Any, ctx: Ctx, stored: list[list[list[bytes]]] | None, span_type: Any
) -> list[tuple[Any, ...]]:
    """The rows of a parsed request, as plain tuples (``Row``'s fields, in order). With ``stored`` (the
    bytes of each span as received, by resource and scope: ``_span_bytes``) the request is of the twin type
    (``_index_types``): each span is stored as its bytes and a partial span read from them with
    ``span_type`` when its shape is not known; without, it is an OTLP request, each span written again."""
    rows: list[tuple[Any, ...]] = []
    append = rows.append
    hexes = _Hexes()
    shapes = _SHAPES
    keys = _KEY_SET
    max_ns = MAX_STORED_NS
    twin = stored is not None
    for r, rs in enumerate(request.resource_spans):
        resource = resource_attributes(rs)
        service = _service(resource)
        resource_bytes = rs.resource.SerializeToString()
        for s, ss in enumerate(rs.scope_spans):
            scope = ss.scope.name
            header = proto_header(resource_bytes, ss.scope.SerializeToString())
            of_scope = stored[r][s] if stored is not None else None
            for i, sp in enumerate(ss.spans):
                start = sp.start_time_unix_nano
                end = sp.end_time_unix_nano
                if end and end < start:
                    ctx.fail(*(bad_times(sp, r, s, i) or ("", "")))
                    continue
                trace_id = sp.trace_id
                span_id = sp.span_id
                parent = sp.parent_span_id
                if (
                    len(trace_id) != 16
                    or len(span_id) != 8
                    or (parent and len(parent) != 8)
                    or start > max_ns
                    or end > max_ns
                ):
                    bad = bad_id_or_time(sp)
                    if bad is not None:
                        ctx.fail(f"resource_spans[{r}].scope_spans[{s}].spans[{i}].{bad[0]}", bad[1])
                        continue
                data = header + (of_scope[i] if of_scope is not None else bytes(sp.SerializeToString()))
                shape = None
                if not sp.events:
                    attributes = sp.attributes
                    if twin:
                        shape = _mapped_shape(sp, bool(end), attributes, keys)
                    else:
                        shape = _walked_shape(sp, bool(end), attributes, keys)
                columns = None if shape is None else shapes.get(shape)
                if columns is None:
                    full = span_type.FromString(of_scope[i]) if of_scope is not None else sp
                    span = span_of(full, resource, scope, "", INDEX_KEYS)
                    append(tuple(_keep(shape, row_of(span, data))))
                    continue
                parent_hex = hexes[parent] if parent else None
                append(
                    (
                        hexes[trace_id] if trace_id else ZERO_TRACE,
                        hexes[span_id] if span_id else ZERO_SPAN,
                        None if parent_hex == ZERO_SPAN else parent_hex,
                        columns[5],
                        start,
                        end or None,
                        columns[0],
                        columns[1],
                        columns[2],
                        columns[3],
                        service,
                        columns[4],
                        data,
                        0,
                    )
                )
    return rows


def _walked_shape(sp: Any, ended: bool, attributes: Any, keys: frozenset[str]) -> tuple[Any, ...] | None:
    """The shape of an OTLP ``Span``: its name, kind, status, whether it ended, and its index
    attributes (strings only, else ``None``; the last of a key repeated, as the reader keeps it), by key."""
    found: dict[str, str] = {}
    for kv in attributes:
        key = kv.key
        if key in keys:
            value = kv.value
            text = value.string_value
            if not text and value.WhichOneof("value") != "string_value":
                return None
            found[key] = text
    status = sp.status
    shape: list[Any] = [sp.name, sp.kind, status.code, status.message, ended]
    for key in sorted(found):
        shape += (key, found[key])
    return tuple(shape)


def _mapped_shape(sp: Any, ended: bool, attributes: Any, keys: frozenset[str]) -> tuple[Any, ...] | None:
    """The shape of a span of the twin type: as ``_walked_shape``, its status the bytes it came in (never
    equal to the code of a walked shape) and its index attributes those of the keys its map holds."""
    shape: list[Any] = [sp.name, sp.kind, sp.status, ended]
    for key in sorted(keys.intersection(attributes)):
        value = attributes[key]
        text = value.string_value
        # (A value of another type has no string: the oneof is asked only then.)
        if not text and value.WhichOneof("value") != "string_value":
            return None
        shape += (key, text)
    return tuple(shape)


def rows_of_request(request: Any, ctx: Ctx) -> list[Row]:
    """The rows of a parsed ``ExportTraceServiceRequest``, each span stored as its protobuf bytes; a span
    that ends before it starts fails ``ctx`` as the bridge reader does, and so does one with an id of the
    wrong length or a time past what SQLite stores (``bad_id_or_time``)."""
    new = tuple.__new__
    return [new(Row, values) for values in _rows(request, ctx, None, None)]


def plain_rows_of_body(body: bytes, ctx: Ctx) -> list[tuple[Any, ...]]:
    """``rows_of_body`` as plain tuples (``Row``'s fields, in order): what a parse worker makes ready to
    store, without a ``Row`` of each."""
    from google.protobuf.message import DecodeError

    twin, span_type = _index_types()
    try:
        request = twin.FromString(body)
    except DecodeError:
        request = None
    spans = None if request is None else _span_bytes(body, request)
    if request is not None and spans is not None:
        # What the twin reads as bytes (a span's status and events) is checked when a span is read from
        # its bytes: a span that fails there sends the whole body to the OTLP type, for its message.
        scratch = Ctx(ctx.source, ctx.lenient, ReadReport(), ctx.line)
        try:
            rows = _rows(request, scratch, spans, span_type)
        except DecodeError:
            pass
        else:
            for issue in scratch.report.issues:
                ctx.report.add(issue)
            return rows
    # Refused, or not plainly laid out: read as the OTLP type reads it (its message when refused).
    parsed = parse_trace_request(body, ctx)
    return [] if parsed is None else _rows(parsed, ctx, None, None)


def rows_of_body(body: bytes, ctx: Ctx) -> list[Row]:
    """The rows of an ``ExportTraceServiceRequest`` body (``rows_of_request`` of it, each span stored as the
    bytes it came in); ``[]`` after ``ctx.fail`` when the body is no valid request."""
    new = tuple.__new__
    return [new(Row, values) for values in plain_rows_of_body(body, ctx)]
