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
from typing import Any

from toolspan.bridge.model import Span
from toolspan.bridge.readers._detect import iter_document
from toolspan.bridge.readers._readable import from_readable_span, from_readable_spans
from toolspan.bridge.readers._report import BridgeReadError, Ctx, ReadIssue, ReadReport
from toolspan.bridge.readers._sources import Sources, iter_source

# Exactly what docs/bridge.md documents (its test holds them to it); what toolspan's own server, CLI and
# exporters read beyond these is ``toolspan.bridge.internal``.
__all__ = [
    "BridgeReadError",
    "ReadIssue",
    "ReadReport",
    "Sources",
    "from_readable_span",
    "from_readable_spans",
    "iter_spans",
    "read_spans",
    "spans_from_document",
]


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
