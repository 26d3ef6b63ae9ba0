"""OTLP/HTTP trace and log request bodies to store rows and log records, and the OTLP responses
(``/v1/traces``, ``/v1/logs``).

Bodies are parsed by the bridge readers (protobuf via the generated ``opentelemetry-proto`` classes, its
spans kept as protobuf bytes with their index columns, see ``protobuf``; JSON via the bridge's OTLP JSON
reader). A gzip body is inflated as a stream with a cap, so a small body that
inflates past the size limit is refused without being unpacked into memory.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from toolspan.bridge.internal import ZERO_SPAN, ZERO_TRACE, Ctx, LogRecord, is_logs_document
from toolspan.bridge.internal import logs_from_json as _from_json
from toolspan.bridge.internal import logs_from_proto as _from_proto
from toolspan.bridge.readers import BridgeReadError, ReadReport, spans_from_document
from toolspan.errors import ToolspanError
from toolspan.server._ingest.protobuf import plain_rows_of_body, rows_of_body
from toolspan.server._rows.spans import MAX_STORED_NS, Row, row_of_span
from toolspan.server._store.writes import Prepared, R, prepare

__all__ = [
    "JSON",
    "PROTOBUF",
    "IngestError",
    "inflate",
    "load_json",
    "logs_response_body",
    "media_type",
    "parse_logs",
    "parse_logs_request",
    "parse_body",
    "prepare_body",
    "response_body",
    "split_valid",
    "status_body",
]

T = TypeVar("T")

PROTOBUF: Final = "application/x-protobuf"
JSON: Final = "application/json"
_TYPES: Final = {
    "application/x-protobuf": PROTOBUF,
    "application/protobuf": PROTOBUF,
    "application/json": JSON,
}
_CHUNK: Final = 64 << 10


class IngestError(ToolspanError):
    """A request refused as a whole: ``status`` (400, 413, 415; 503 to retry) and a one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def __reduce__(self) -> tuple[type[IngestError], tuple[int, str]]:
        # Raised in a parse worker process (``parsers``) and pickled back to the server.
        return IngestError, (self.status, self.message)


def media_type(content_type: str | None) -> str:
    """``PROTOBUF`` or ``JSON`` for a request's ``Content-Type`` (415 for anything else)."""
    base = (content_type or "").split(";", 1)[0].strip().lower()
    found = _TYPES.get(base)
    if found is None:
        raise IngestError(415, f"unsupported content type {base or '(none)'!r}: use {PROTOBUF} or {JSON}")
    return found


def inflate(body: bytes, limit: int) -> bytes:
    """The gunzipped ``body``: every member of it, one after the other, as ``gunzip`` and the Collector's
    Go reader decode them (a gzip file is a series of members, RFC 1952); 413 as soon as the output
    would pass ``limit`` bytes, 400 if not gzip, truncated, or followed by bytes that are no member."""
    out = bytearray()
    data = body
    members = 0
    try:
        while True:
            inflater = zlib.decompressobj(wbits=31)
            members += 1
            while data:
                room = limit + 1 - len(out)
                out += inflater.decompress(data, min(room, _CHUNK))
                if len(out) > limit:
                    raise IngestError(413, f"gzip body inflates past the size limit of {limit} bytes")
                data = inflater.unconsumed_tail
            if not inflater.eof:
                raise IngestError(400, "gzip body is truncated")
            data = inflater.unused_data
            if not data:
                return bytes(out)
            if data[:2] != b"\x1f\x8b":
                raise IngestError(
                    400, f"gzip body has {len(data)} byte(s) of trailing garbage after member {members}"
                )
    except zlib.error as e:
        raise IngestError(400, f"gzip body is not valid: {e}") from None


def load_json(body: bytes) -> Any:
    """The JSON document of a request body; 400 if it is not JSON, or holds a lone surrogate: an escape
    (``"\\ud800"``: JSON allows it) or its bytes (``ED A0 80``, which ``json.loads`` reads with
    ``surrogatepass``): it is no Unicode text and cannot be stored."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as e:
        raise IngestError(400, f"request body is not valid JSON: {e}") from None
    # UTF-8 cannot hold a surrogate: only a \u escape or a surrogate's bytes (lead byte ED) can, so a body
    # with neither needs no check.
    if b"\\ud" in body or b"\\uD" in body or b"\xed" in body:
        try:
            json.dumps(doc, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as e:
            escape = "".join(f"\\u{ord(c):04x}" for c in e.object[e.start : e.end])
            raise IngestError(
                400, f"request body holds a lone surrogate {escape} in a string: not Unicode text"
            ) from None
    return doc


def _json_rows(doc: Any) -> list[Row]:
    rows = []
    for span in spans_from_document(doc, origin="request body"):
        for name, value in (("start_time_unix_nano", span.start_ns), ("end_time_unix_nano", span.end_ns)):
            if value is not None and value > MAX_STORED_NS:
                raise IngestError(
                    400,
                    f"request body: span {span.span_id} of trace {span.trace_id}: {name} {value} is past"
                    " 2**63-1 ns (the year 2262), the latest time the server stores",
                )
        rows.append(row_of_span(span))
    return rows


def parse_body(body: bytes, kind: str) -> list[Row]:
    """The span rows of one ``ExportTraceServiceRequest`` body; 400 with the reader's reason if malformed."""
    return _parsed(body, kind, rows_of_body)


def _parsed(body: bytes, kind: str, of_protobuf: Callable[[bytes, Ctx], list[T]]) -> list[T] | list[Row]:
    """``parse_body``, a protobuf body's rows made by ``of_protobuf``."""
    try:
        if kind == PROTOBUF:
            return of_protobuf(body, Ctx("request body", False, ReadReport()))
        doc = load_json(body)
        if not isinstance(doc, dict) or not (set(doc) <= {"resourceSpans", "resource_spans"}):
            raise IngestError(400, "request body is not an OTLP ExportTraceServiceRequest (resourceSpans)")
        return _json_rows(doc)
    except BridgeReadError as e:
        raise IngestError(400, str(e).replace("\n", " ")) from None


def prepare_body(body: bytes, kind: str) -> Prepared:
    """The span rows of one ``ExportTraceServiceRequest`` body made ready to store (``writes.prepare``): its
    usable rows, with the rejected count and message of the others (``split_valid``); what a parse worker
    hands back. A protobuf body's rows stay plain tuples (``plain_rows_of_body``: a ``Row`` made of each
    span cost the worker about 4% of its instructions). 400 as ``parse_body``."""
    rows: Sequence[tuple[Any, ...]] = _parsed(body, kind, plain_rows_of_body)
    good, rejected, message = split_valid(rows)
    return prepare(good, rejected, message)


def _tied(records: Sequence[LogRecord], total: int) -> tuple[list[LogRecord], int, str]:
    good = [r for r in records if r.trace_id != ZERO_TRACE and r.span_id != ZERO_SPAN]
    untied = total - len(good)
    # Ids of the wrong length (protobuf bytes fields take any length) name no span: never joined.
    tied = [r for r in good if len(r.trace_id) == len(ZERO_TRACE) and len(r.span_id) == len(ZERO_SPAN)]
    malformed = len(good) - len(tied)
    reasons = []
    if untied:
        reasons.append(f"{untied} log record(s) without a trace id or span id")
    if malformed:
        reasons.append(f"{malformed} log record(s) with a trace id or span id not of 16 and 8 bytes")
    return tied, untied + malformed, "; ".join(reasons)


def parse_logs_request(request: Any) -> tuple[list[LogRecord], int, str]:
    """``(span-tied records, rejected count, message)`` of one parsed ``ExportLogsServiceRequest``: a record
    tied to no span cannot be joined, so it is rejected (partial success)."""
    total = sum(len(s.log_records) for r in request.resource_logs for s in r.scope_logs)
    records = list(_from_proto(request.SerializeToString()))
    return _tied(records, total)


def parse_logs(body: bytes, kind: str) -> tuple[list[LogRecord], int, str]:
    """The log records of one ``ExportLogsServiceRequest`` body, read as ``toolspan convert --logs`` reads
    them, with the rejected count and message; 400 with a one-line reason if malformed."""
    if kind == PROTOBUF:
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

        try:
            request = ExportLogsServiceRequest.FromString(body)
        except (DecodeError, ValueError, RecursionError) as e:
            reason = str(e).replace("\n", " ")
            raise IngestError(
                400, f"request body is not a valid OTLP protobuf logs request: {reason}"
            ) from None
        return parse_logs_request(request)
    doc = load_json(body)
    if not is_logs_document(doc) or not (set(doc) <= {"resourceLogs"}):
        raise IngestError(400, "request body is not an OTLP ExportLogsServiceRequest (resourceLogs)")
    try:
        total = sum(
            len(scope.get("logRecords") or ())
            for resource in doc["resourceLogs"] or ()
            for scope in (resource.get("scopeLogs") or resource.get("instrumentationLibraryLogs") or ())
        )
        records = list(_from_json(doc))
    except (BridgeReadError, ValueError, TypeError, AttributeError, KeyError, RecursionError) as e:
        reason = str(e).replace("\n", " ") or type(e).__name__
        raise IngestError(400, f"request body is not a valid OTLP logs request: {reason}") from None
    return _tied(records, total)


def logs_response_body(kind: str, rejected: int, message: str) -> bytes:
    """An ``ExportLogsServiceResponse``, with ``partial_success`` when log records were rejected."""
    if kind == JSON:
        doc: dict[str, object] = {}
        if rejected:
            doc["partialSuccess"] = {"rejectedLogRecords": str(rejected), "errorMessage": message}
        return json.dumps(doc).encode()
    if not rejected:
        return b""  # an empty message (as ``response_body``)
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

    response = ExportLogsServiceResponse()
    response.partial_success.rejected_log_records = rejected
    response.partial_success.error_message = message
    return bytes(response.SerializeToString())


def split_valid(rows: Sequence[R]) -> tuple[list[R], int, str]:
    """``(usable rows, rejected count, message)`` of ``Row``s or their plain tuples: a span without a trace id
    or span id is rejected."""
    good = [s for s in rows if s[0] != ZERO_TRACE and s[1] != ZERO_SPAN]  # its trace id, its span id
    rejected = len(rows) - len(good)
    message = f"{rejected} span(s) without a trace id or span id" if rejected else ""
    return good, rejected, message


def response_body(kind: str, rejected: int, message: str) -> bytes:
    """An ``ExportTraceServiceResponse``, with ``partial_success`` when spans were rejected."""
    if kind == JSON:
        doc: dict[str, object] = {}
        if rejected:
            doc["partialSuccess"] = {"rejectedSpans": str(rejected), "errorMessage": message}
        return json.dumps(doc).encode()
    if not rejected:
        # An empty message is no bytes: the server process answers without the protobuf runtime (which it
        # would otherwise import on its first export, in the parse workers' place).
        return b""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    response = ExportTraceServiceResponse()
    response.partial_success.rejected_spans = rejected
    response.partial_success.error_message = message
    return bytes(response.SerializeToString())


def status_body(kind: str, code: int, message: str) -> bytes:
    """A ``google.rpc.Status`` (the OTLP/HTTP error body) with ``message``."""
    if kind == JSON:
        return json.dumps({"code": code, "message": message}).encode()
    from google.rpc.status_pb2 import Status

    return bytes(Status(code=code, message=message).SerializeToString())
