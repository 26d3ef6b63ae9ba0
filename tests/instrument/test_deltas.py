"""``toolspan.text_delta`` as OpenTelemetry log records (``_instrument/deltas.py``): one record per chunk,
event name ``toolspan.text_delta``, the text as body, in the span's trace and span context; nothing without
a span. The logger is a real SDK ``LoggerProvider``'s (not installed globally)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

import toolspan
from toolspan._instrument import deltas as _deltas
from toolspan.testing import capture_spans


@pytest.fixture
def records(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryLogRecordExporter]:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(shutdown_on_exit=False)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    monkeypatch.setattr(_deltas, "_delta_logger", provider.get_logger("toolspan"))
    yield exporter
    provider.shutdown()


def test_each_delta_is_one_log_record_in_its_span_context(
    records: InMemoryLogRecordExporter, fresh_config: None
) -> None:
    @toolspan.tool
    def talk() -> str:
        toolspan.text_delta("Hel")
        toolspan.text_delta("")  # nothing to send
        toolspan.text_delta("lo")
        return "Hello"

    with capture_spans() as finished:
        talk()
    toolspan.text_delta("outside any span")
    (span,) = finished()
    got = [
        (r.log_record.event_name, r.log_record.body, r.log_record.trace_id, r.log_record.span_id)
        for r in records.get_finished_logs()
    ]
    assert got == [
        ("toolspan.text_delta", "Hel", span.context.trace_id, span.context.span_id),
        ("toolspan.text_delta", "lo", span.context.trace_id, span.context.span_id),
    ]
