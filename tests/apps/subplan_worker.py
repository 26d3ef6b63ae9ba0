"""A worker process for test_propagation: runs a sub-plan under a carried trace context.

    python _subplan_worker.py '<carrier JSON>' <output .jsonl>

Writes one JSON line per finished span (name, ids, parent, links, attributes).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import toolspan


class JsonLinesExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self._path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self._path, "a", encoding="utf-8") as out:
            for span in spans:
                assert span.context is not None
                record = {
                    "name": span.name,
                    "trace_id": format(span.context.trace_id, "032x"),
                    "span_id": format(span.context.span_id, "016x"),
                    "parent_span_id": None if span.parent is None else format(span.parent.span_id, "016x"),
                    "parent_is_remote": None if span.parent is None else span.parent.is_remote,
                    "links": [format(link.context.span_id, "016x") for link in span.links],
                    "attributes": dict(span.attributes or {}),
                }
                out.write(json.dumps(record) + "\n")
        return SpanExportResult.SUCCESS


@toolspan.tool
def remote_lookup(key: str) -> str:
    return key[::-1]


def main() -> None:
    carrier = json.loads(sys.argv[1])
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(sys.argv[2])))
    with toolspan.plan("remote step", context=toolspan.extract(carrier), tracer_provider=provider):
        toolspan.tool(remote_lookup, tracer_provider=provider)("abc")
    provider.shutdown()


if __name__ == "__main__":
    main()
