"""OTLP logs (log-based GenAI events) read in every encoding and joined to their spans as span events."""

from __future__ import annotations

import base64
import io
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

from toolspan.bridge.model import SpanEvent
from toolspan.bridge.readers import from_readable_spans
from toolspan.bridge.readers._logs import attach_logs, logs_from_bytes
from toolspan.cli import _main as cli
from toolspan.exporters.otlp_file import encode_otlp_json_line
from toolspan.testing import capture_spans


@pytest.fixture
def recorded() -> Iterator[tuple[Any, Any]]:
    """A chat span and a tool-less agent span, with two log-based events tied to the chat span and one
    record tied to a span that was never exported."""
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    logger = provider.get_logger("genai.test")
    with capture_spans() as finished:
        tracer = trace.get_tracer("genai.test")
        with (
            tracer.start_as_current_span(
                "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}
            ),
            tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}),
        ):
            logger.emit(event_name="gen_ai.user.message", body={"content": "Weather in Paris?"})
            logger.emit(
                event_name="gen_ai.choice",
                body={
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                            }
                        ],
                    },
                },
                attributes={"gen_ai.provider.name": "openai"},
            )
        orphan = trace.get_tracer("genai.test").start_span("never exported")
        with trace.use_span(orphan):
            logger.emit(body="lost", attributes={"event.name": "gen_ai.system.message"})
        orphan.end()
        spans = list(finished())
    provider.force_flush()
    yield spans, exporter.get_finished_logs()
    provider.shutdown()


def _json_doc(logs: Any) -> dict[str, Any]:
    doc: dict[str, Any] = MessageToDict(encode_logs(logs), use_integers_for_enums=True)
    # OTLP/JSON has hex ids where protobuf's JSON mapping has base64.
    for resource in doc["resourceLogs"]:
        for scope in resource["scopeLogs"]:
            for record in scope["logRecords"]:
                for key in ("traceId", "spanId"):
                    record[key] = base64.b64decode(record[key]).hex()
    return doc


def _encodings(logs: Any) -> dict[str, bytes]:
    body = encode_logs(logs).SerializeToString()
    doc = _json_doc(logs)
    return {
        "json": json.dumps(doc).encode(),
        "jsonl": (json.dumps(doc) + "\n" + json.dumps(doc) + "\n").encode(),
        "proto": body,
        "length-prefixed proto": struct.pack(">I", len(body)) + body,
    }


@pytest.mark.parametrize("encoding", ["json", "jsonl", "proto", "length-prefixed proto"])
def test_every_encoding_gives_the_same_records(recorded: tuple[Any, Any], encoding: str) -> None:
    spans, logs = recorded
    records = logs_from_bytes(_encodings(logs)[encoding])
    copies = 2 if encoding == "jsonl" else 1
    assert len(records) == 3 * copies
    chat = next(s for s in spans if s.name == "chat m")
    first = records[0]
    assert (first.trace_id, first.span_id) == (
        f"{chat.context.trace_id:032x}",
        f"{chat.context.span_id:016x}",
    )
    assert [r.event_name for r in records[:3]] == [
        "gen_ai.user.message",
        "gen_ai.choice",
        "gen_ai.system.message",
    ]
    assert records[0].body == {"content": "Weather in Paris?"}
    assert records[1].attributes == {"gen_ai.provider.name": "openai"}
    assert records[1].body["message"]["tool_calls"][0]["id"] == "call_1"


def test_records_join_their_spans_as_events_and_unmatched_ones_are_counted(recorded: tuple[Any, Any]) -> None:
    spans, logs = recorded
    exported = from_readable_spans(spans)
    joined, unmatched = attach_logs(exported, logs_from_bytes(_encodings(logs)["proto"]))
    assert unmatched == 0  # the "never exported" span was exported by capture_spans too
    chat = next(s for s in joined if s.name == "chat m")
    assert [e.name for e in chat.events] == ["gen_ai.user.message", "gen_ai.choice"]
    assert chat.events[0] == SpanEvent(
        "gen_ai.user.message", chat.events[0].time_ns, {"content": "Weather in Paris?"}
    )
    assert chat.events[1].attributes["gen_ai.provider.name"] == "openai"
    assert chat.events[1].attributes["finish_reason"] == "tool_calls"
    without = [s for s in exported if s.name != "never exported"]
    joined, unmatched = attach_logs(without, logs_from_bytes(_encodings(logs)["json"]))
    assert unmatched == 1
    assert [s.span_id for s in joined] == [s.span_id for s in without]


def test_convert_joins_logs_given_with_logs(recorded: tuple[Any, Any], tmp_path: Path) -> None:
    spans, logs = recorded
    traces = tmp_path / "traces.jsonl"
    traces.write_text(encode_otlp_json_line([s for s in spans if s.name != "never exported"]))
    logs_file = tmp_path / "logs.pb"
    logs_file.write_bytes(_encodings(logs)["proto"])
    out, err = io.BytesIO(), io.StringIO()
    args = cli._parser().parse_args(["convert", str(traces), "--to", "timeline", "--logs", str(logs_file)])
    assert cli.convert(args, out, err) == 0
    assert err.getvalue() == "toolspan: 1 of 3 log records matched no span\n"
    doc = json.loads(out.getvalue())
    items = [(i["type"], i.get("content")) for d in doc for i in d["timeline"]]
    assert ("user_message", "Weather in Paris?") in items


def test_a_file_that_is_not_logs_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\xff\x00garbage")
    traces = tmp_path / "t.jsonl"
    traces.write_text("")
    out, err = io.BytesIO(), io.StringIO()
    args = cli._parser().parse_args(["convert", str(traces), "--to", "events", "--logs", str(bad)])
    assert cli.convert(args, out, err) == 1
    assert err.getvalue().startswith(f"toolspan: error: {bad}: cannot read OTLP logs: ")
    assert err.getvalue().count("\n") == 1
