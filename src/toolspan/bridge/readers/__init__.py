"""Read spans from any source into the neutral model (``toolspan.bridge.model.Span``).

Sources: in-process SDK ``ReadableSpan``s; OTLP JSON requests and the Collector ``file`` exporter's
JSON Lines (legacy ``instrumentationLibrarySpans``, enums as numbers or names, hex or base64 ids);
OTLP protobuf (a request body, or the file exporter's 4-byte big-endian length-prefixed ``proto``
format); Jaeger v1 (``{data: [...]}`` or a bare trace) and v3 (``{"result": ...}``); Tempo v1
(``batches``) and v2 (``{"trace": ...}``, ``status: "PARTIAL"``); Arize Phoenix span documents when
``_phoenix`` is present. Inputs: paths, directories (recursive, sorted), globs, ``-`` (stdin),
bytes, binary or text file objects, parsed JSON documents, or a list of those.

Strict by default: the first bad record raises ``BridgeReadError`` naming source, line (or JSON
path) and field. Input that is no supported format at all (text, an image, random bytes, zeros) is
an error naming the source and showing how it starts. Memory is bounded: a single record (a JSON
line, a framed protobuf message, a whole JSON document or protobuf request) holds at most
``MAX_RECORD_BYTES`` (256 MiB; a longer line is a bad record and reading goes on); a bogus length
prefix is an error at its byte offset that ends that source. Cut or corrupt gzip is a bad record.
Times must fit OTLP's unsigned 64-bit nanoseconds and a span must not end before it starts.
Non-finite numbers read as the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` (as OTLP/JSON
writes non-finite doubles), so the model holds strict-JSON values only.

``lenient=True`` skips bad records (a span where possible, else its container),
records each in ``ReadReport.issues`` and counts them in ``records_skipped``. Two things are never
errors, only reported issues: a JSON Lines last line (or framed message) cut off mid-write, and a
backend's ``PARTIAL`` trace. Missing or empty ids (``""``) read as all-zero ids; a missing or zero
end time reads as ``end_ns=None`` (a started span whose end was not recorded). Bytes values become
their base64 text. JSON is parsed with orjson when it is installed (``_json_parse``; ``TOOLSPAN_JSON=stdlib``
turns it off), with the standard library's acceptance and error messages either way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from toolspan._util.lazy import lazy
from toolspan.bridge.model import Span
from toolspan.bridge.readers._detect import describe, iter_document
from toolspan.bridge.readers._report import BridgeReadError, Ctx, ReadIssue, ReadReport

if TYPE_CHECKING:
    from toolspan.bridge._json_write import dumps_document, finite, nonfinite_text, write_json_lines
    from toolspan.bridge.readers._logs import (
        LogRecord,
        attach_logs,
        is_logs_document,
        logs_from_bytes,
        logs_from_json,
        logs_from_proto,
    )
    from toolspan.bridge.readers._otlp_proto import attributes as proto_attributes
    from toolspan.bridge.readers._otlp_proto import bad_times
    from toolspan.bridge.readers._otlp_proto import parse_request as parse_trace_request
    from toolspan.bridge.readers._otlp_proto import resource_attributes as proto_resource_attributes
    from toolspan.bridge.readers._otlp_proto import span_of as proto_span
    from toolspan.bridge.readers._values import ZERO_SPAN, ZERO_TRACE
from toolspan.bridge.readers._readable import from_readable_span, from_readable_spans
from toolspan.bridge.readers._sources import TRACE_SUFFIXES, Source, Sources, iter_source, resolve_inputs

__all__ = [
    "TRACE_SUFFIXES",
    "ZERO_SPAN",
    "ZERO_TRACE",
    "BridgeReadError",
    "Ctx",
    "LogRecord",
    "ReadIssue",
    "ReadReport",
    "Source",
    "Sources",
    "attach_logs",
    "bad_times",
    "describe",
    "dumps_document",
    "finite",
    "from_readable_span",
    "from_readable_spans",
    "is_logs_document",
    "iter_spans",
    "logs_from_bytes",
    "logs_from_json",
    "logs_from_proto",
    "nonfinite_text",
    "parse_trace_request",
    "proto_attributes",
    "proto_resource_attributes",
    "proto_span",
    "read_spans",
    "resolve_inputs",
    "spans_from_document",
    "write_json_lines",
]

# OTLP protobuf and log decoding, and the JSON toolspan writes everything with: for toolspan's server,
# CLI and exporters, and for anyone reading OTLP request bodies (loaded on first use).
_MORE: dict[str, str | tuple[str, str]] = {
    "ZERO_SPAN": "toolspan.bridge.readers._values",
    "ZERO_TRACE": "toolspan.bridge.readers._values",
    "LogRecord": "toolspan.bridge.readers._logs",
    "attach_logs": "toolspan.bridge.readers._logs",
    "is_logs_document": "toolspan.bridge.readers._logs",
    "logs_from_bytes": "toolspan.bridge.readers._logs",
    "logs_from_json": "toolspan.bridge.readers._logs",
    "logs_from_proto": "toolspan.bridge.readers._logs",
    "bad_times": "toolspan.bridge.readers._otlp_proto",
    "parse_trace_request": ("toolspan.bridge.readers._otlp_proto", "parse_request"),
    "proto_attributes": ("toolspan.bridge.readers._otlp_proto", "attributes"),
    "proto_resource_attributes": ("toolspan.bridge.readers._otlp_proto", "resource_attributes"),
    "proto_span": ("toolspan.bridge.readers._otlp_proto", "span_of"),
    "dumps_document": "toolspan.bridge._json_write",
    "finite": "toolspan.bridge._json_write",
    "nonfinite_text": "toolspan.bridge._json_write",
    "write_json_lines": "toolspan.bridge._json_write",
}


__getattr__, __dir__ = lazy(globals(), _MORE)


def iter_spans(
    source: Sources,
    *,
    lenient: bool = False,
    report: ReadReport | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[Span]:
    """Stream the spans of one source (or a list of sources), in input order.

    ``report`` (created if ``None``) is updated as spans are read. ``progress`` is called now and
    then with the number of input bytes consumed since its previous call.
    """
    rep = report if report is not None else ReadReport()
    for span in iter_source(source, lenient, rep, progress):
        rep.spans_read += 1
        yield span


def read_spans(
    sources: Sources, *, lenient: bool = False, progress: Callable[[int], None] | None = None
) -> tuple[list[Span], ReadReport]:
    """All spans of ``sources`` (one source or an iterable of them) and the report of the read."""
    report = ReadReport()
    single = (str, bytes, bytearray, memoryview, dict, os.PathLike)
    if isinstance(sources, single) or hasattr(sources, "read"):
        items: Iterable[Any] = [sources]
    else:
        items = list(sources)
    spans = list(iter_spans(items, lenient=lenient, report=report, progress=progress))
    return spans, report


def spans_from_document(doc: Any, *, origin: str = "") -> list[Span]:
    """The spans of one parsed JSON document of any supported format (strict)."""
    ctx = Ctx(origin or "<document>", False, ReadReport())
    return list(iter_document(doc, ctx))
