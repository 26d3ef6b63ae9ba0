"""The do-nothing exporter every contender shares, and the SDK provider built around it.

Spans go through the SDK's ``BatchSpanProcessor`` (default settings) into ``NoopExporter``, which
drops them. It counts what it receives and keeps the first span's name and attributes, so the
orchestrator can check that a contender really produced spans (or, with tracing off, produced none)
and show what each library records.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)


class NoopExporter(SpanExporter):
    """Accepts every batch and does nothing with it (beyond a counter and one sample span)."""

    def __init__(self) -> None:
        self.exported = 0
        self.sample: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            self.exported += len(spans)
            if self.sample is None and spans:
                self.sample = describe_span(spans[0])
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def describe_span(span: ReadableSpan) -> dict[str, Any]:
    """Name, kind and attributes of one span, JSON-friendly (values longer than 200 chars cut)."""
    attributes = {}
    for key, value in dict(span.attributes or {}).items():
        text = value if isinstance(value, (str, int, float, bool)) else repr(value)
        if isinstance(text, str) and len(text) > 200:
            text = text[:200] + "..."
        attributes[key] = text
    return {"name": span.name, "kind": span.kind.name, "attributes": attributes}


# One exporter per process: every contender routes its spans here.
EXPORTER = NoopExporter()
# Set by the harness from ``--processor`` before a contender's setup runs: "batch" (the SDK's
# BatchSpanProcessor with default settings: what the benchmark measures), "simple" (the SDK's
# SimpleSpanProcessor: the export runs on the calling thread, at the span's end) or "none" (no
# processor: the span is built and ended, nothing receives it). The last two are only used to show
# where the reference span's time goes; contenders with their own processor ignore them.
PROCESSOR = "batch"


def batch_processor() -> SpanProcessor:
    """The processor chosen by ``PROCESSOR`` around the shared do-nothing exporter (default: the SDK's
    BatchSpanProcessor with default settings)."""
    if PROCESSOR == "simple":
        return SimpleSpanProcessor(EXPORTER)
    return BatchSpanProcessor(EXPORTER)


def make_provider() -> TracerProvider:
    """An SDK ``TracerProvider`` whose only processor is ``batch_processor()`` (none with
    ``PROCESSOR == "none"``)."""
    provider = TracerProvider()
    if PROCESSOR != "none":
        provider.add_span_processor(batch_processor())
    return provider
