"""OTLP JSON Lines file exporter: the OpenTelemetry Collector ``file`` exporter's format.

Every ``export`` call appends one line holding one OTLP/JSON ``ExportTraceServiceRequest``
(``{"resourceSpans": [...]}``), encoded as the OTLP specification requires: lowerCamelCase keys,
trace and span ids as lowercase hex (not base64), 64-bit integers as decimal strings, enums as
numbers, spans grouped by resource and instrumentation scope. ``toolspan convert`` and every OTLP
JSON reader read the file back; so does a Collector's ``otlpjsonfile`` receiver.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
from collections.abc import Sequence
from typing import IO, Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from toolspan._util import env as _env
from toolspan.exporters._files import append_whole, ends_mid_line, flush_to_disk, open_append

__all__ = ["OtlpJsonFileExporter", "encode_otlp_json", "encode_otlp_json_line"]

_logger = logging.getLogger(__name__)

_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(message: dict[str, Any]) -> None:
    """Rewrite protobuf JSON's base64 ids of a span or link as lowercase hex, in place."""
    for key in _ID_KEYS:
        value = message.get(key)
        if value:
            message[key] = base64.b64decode(value).hex()


def encode_otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The OTLP/JSON ``ExportTraceServiceRequest`` of ``spans`` (ended or not) as a JSON-able dict.

    A span that has not ended has no ``endTimeUnixNano``.
    """
    request: dict[str, Any] = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource_spans in request.get("resourceSpans", ()):
        for scope_spans in resource_spans.get("scopeSpans", ()):
            for span in scope_spans.get("spans", ()):
                _hex_ids(span)
                for link in span.get("links", ()):
                    _hex_ids(link)
    return request


def encode_otlp_json_line(spans: Sequence[ReadableSpan]) -> str:
    """One JSON Lines record (with its trailing newline) holding ``encode_otlp_json(spans)``."""
    return json.dumps(encode_otlp_json(spans), ensure_ascii=False, separators=(",", ":")) + "\n"


class OtlpJsonFileExporter(SpanExporter):
    """Append one OTLP/JSON request per export call to a JSON Lines file.

    ``path`` defaults to ``TOOLSPAN_OTLP_FILE`` (``toolspan-traces.jsonl``). The file and its parent
    directories are created on the first export. Thread-safe. Never raises into the application: a
    write error is logged and the export returns ``FAILURE`` (the next export tries again). Records are
    appended whole: a write cut short (full disk, file size limit) is truncated back, so the file never
    holds a partial line in its middle; a file that ends mid-line (a crashed writer) gets a newline
    before the next record.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        if path is None:
            path = _env.get(_env.TOOLSPAN_OTLP_FILE) or _env.TOOLSPAN_OTLP_FILE.default
        self._path = os.fspath(path)
        self._lock = threading.Lock()
        self._file: IO[bytes] | None = None
        self._shutdown = False

    @property
    def path(self) -> str:
        """Where the JSON Lines go."""
        return self._path

    def _open(self) -> tuple[IO[bytes], bytes]:
        """The open file, and what must precede the next record (a newline after a cut line)."""
        if self._file is None:
            self._file = open_append(self._path)
            return self._file, b"\n" if ends_mid_line(self._file) else b""
        return self._file, b""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            _logger.warning(
                "toolspan: OTLP JSON file exporter already shut down; %d spans dropped", len(spans)
            )
            return SpanExportResult.FAILURE
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            line = encode_otlp_json_line(spans).encode("utf-8")
        except Exception:
            _logger.exception("toolspan: cannot encode %d spans as OTLP JSON", len(spans))
            return SpanExportResult.FAILURE
        with self._lock:
            if self._shutdown:
                return SpanExportResult.FAILURE
            try:
                handle, before = self._open()
                append_whole(handle, before + line)
            except (OSError, ValueError) as exc:
                _logger.warning("toolspan: cannot write OTLP JSON to %s: %s", self._path, exc)
                self._close_quietly()
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush and fsync the file; ``False`` when that failed."""
        with self._lock:
            return flush_to_disk(self._file, self._path)

    def shutdown(self) -> None:
        """Flush and close the file. Idempotent; later exports return ``FAILURE``."""
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True
            flush_to_disk(self._file, self._path)
            self._close_quietly()

    def _close_quietly(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                _logger.warning("toolspan: cannot close %s: %s", self._path, exc)
            self._file = None
