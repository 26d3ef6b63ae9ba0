"""Where toolspan's spans go from the application: files, timelines, live subscribers.

- ``OtlpJsonFileExporter``: OTLP JSON Lines, the Collector ``file`` exporter format.
- ``TimelineJsonExporter``: act/observe JSON Lines plus a tree and timeline file per trace.
- ``LiveEventProcessor``: act at tool start, observe at tool end, text deltas; callbacks and async
  streams; optionally a durable act log.

The two exporters are registered as ``opentelemetry_traces_exporter`` entry points
(``toolspan_otlp_file``, ``toolspan_timeline``), so ``OTEL_TRACES_EXPORTER`` can select them.
Names are imported lazily: importing one exporter does not load the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolspan._util.lazy import lazy

if TYPE_CHECKING:
    from toolspan.exporters.live import LiveEventProcessor, LiveStream, text_delta
    from toolspan.exporters.otlp_file import OtlpJsonFileExporter
    from toolspan.exporters.timeline import TimelineJsonExporter

__all__ = ["LiveEventProcessor", "LiveStream", "OtlpJsonFileExporter", "TimelineJsonExporter", "text_delta"]

_WHERE: dict[str, str | tuple[str, str]] = {
    "LiveEventProcessor": "toolspan.exporters.live",
    "LiveStream": "toolspan.exporters.live",
    "text_delta": "toolspan.exporters.live",
    "OtlpJsonFileExporter": "toolspan.exporters.otlp_file",
    "TimelineJsonExporter": "toolspan.exporters.timeline",
}


__getattr__, __dir__ = lazy(globals(), _WHERE)
