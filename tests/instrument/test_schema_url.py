"""toolspan's tracer declares the semantic conventions its spans follow: its instrumentation scope carries
``semconv.SCHEMA_URL``, the newest schema of the ``opentelemetry-semantic-conventions`` release the project
pins, and the OTLP writers and the bridge's readers keep it."""

from __future__ import annotations

import io
import json
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.semconv.schemas import Schemas

import toolspan
from toolspan import semconv
from toolspan.bridge import to_otlp_json
from toolspan.bridge.readers import from_readable_spans, read_spans, spans_from_document
from toolspan.exporters import OtlpJsonFileExporter
from toolspan.testing import capture_spans


def test_the_schema_url_is_the_pinned_semantic_conventions_newest_schema() -> None:
    assert list(Schemas)[-1].value == semconv.SCHEMA_URL


def test_tool_agent_and_plan_spans_carry_the_schema_url_on_their_instrumentation_scope() -> None:
    @toolspan.tool
    def lookup(city: str) -> str:
        return city.upper()

    with capture_spans() as spans, toolspan.agent("planner"), toolspan.plan("trip"):
        lookup("paris")
    scopes = {(s.name, s.instrumentation_scope.name, s.instrumentation_scope.schema_url) for s in spans()}
    assert scopes == {
        ("execute_tool lookup", "toolspan", semconv.SCHEMA_URL),
        ("invoke_agent planner", "toolspan", semconv.SCHEMA_URL),
        ("plan trip", "toolspan", semconv.SCHEMA_URL),
    }


def test_the_otlp_writers_and_the_readers_keep_the_schema_url(tmp_path: Path) -> None:
    @toolspan.tool
    def lookup(city: str) -> str:
        return city.upper()

    with capture_spans() as spans:
        lookup("paris")
    readable = spans()
    # In process, and through the bridge's own OTLP JSON writer and back.
    [span] = from_readable_spans(readable)
    assert span.scope_schema_url == semconv.SCHEMA_URL
    document = to_otlp_json([span])
    assert document["resourceSpans"][0]["scopeSpans"][0]["schemaUrl"] == semconv.SCHEMA_URL
    assert [s.scope_schema_url for s in spans_from_document(document)] == [semconv.SCHEMA_URL]
    # The OTLP JSON Lines file exporter, read back.
    path = tmp_path / "traces.jsonl"
    exporter = OtlpJsonFileExporter(path)
    exporter.export(readable)
    exporter.shutdown()
    record = json.loads(path.read_text("utf-8").splitlines()[0])
    assert record["resourceSpans"][0]["scopeSpans"][0]["schemaUrl"] == semconv.SCHEMA_URL
    read, _ = read_spans(path)
    assert [s.scope_schema_url for s in read] == [semconv.SCHEMA_URL]
    # An OTLP protobuf request body, read back.
    body = encode_spans(readable).SerializeToString()
    read, _ = read_spans(io.BytesIO(body))
    assert [s.scope_schema_url for s in read] == [semconv.SCHEMA_URL]


def test_a_scope_without_a_schema_url_writes_none() -> None:
    document = {
        "resourceSpans": [
            {
                "resource": {"attributes": []},
                "scopeSpans": [
                    {
                        "scope": {"name": "other"},
                        "spans": [
                            {
                                "traceId": "1" * 32,
                                "spanId": "2" * 16,
                                "name": "work",
                                "startTimeUnixNano": "1",
                                "endTimeUnixNano": "2",
                            }
                        ],
                    }
                ],
            }
        ]
    }
    [span] = spans_from_document(document)
    assert span.scope_schema_url == ""
    assert "schemaUrl" not in to_otlp_json([span])["resourceSpans"][0]["scopeSpans"][0]
