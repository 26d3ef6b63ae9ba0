"""OtlpJsonFileExporter: the Collector ``file`` exporter's OTLP JSON Lines, written safely."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

import toolspan
from toolspan.bridge.readers import from_readable_spans, read_spans
from toolspan.exporters.otlp_file import OtlpJsonFileExporter, encode_otlp_json, encode_otlp_json_line
from toolspan.testing import FakeClock, SequentialIdGenerator, clocked_tracer_provider

TRACE_ID = 0x5B8EFFF798038103D269B633813FC60C
RESOURCE = Resource({"service.name": "toolspan-test", "deployment.environment": "test"})
RESOURCE_JSON = {
    "attributes": [
        {"key": "service.name", "value": {"stringValue": "toolspan-test"}},
        {"key": "deployment.environment", "value": {"stringValue": "test"}},
    ]
}
SCOPE_JSON = {"name": "toolspan", "version": "0.1.0"}


def _provider(
    *processors: Any, resource: Resource = RESOURCE, first_span_id: int = 0xABC0, start_ns: int | None = None
) -> TracerProvider:
    provider = clocked_tracer_provider(
        FakeClock() if start_ns is None else FakeClock(start_ns=start_ns),
        resource=resource,
        id_generator=SequentialIdGenerator(first_span_id=first_span_id, first_trace_id=TRACE_ID),
    )
    for processor in processors:
        provider.add_span_processor(processor)
    return provider


def _run_two_spans(provider: TracerProvider) -> None:
    tracer = provider.get_tracer("toolspan", "0.1.0")
    with tracer.start_as_current_span("invoke_agent planner", kind=SpanKind.SERVER) as root:
        span = tracer.start_span(
            "execute_tool add",
            attributes={"s": "x", "i": 2**62, "f": 1.5, "b": True, "l": ["a", "b"], "li": [1, 2]},
            links=[Link(root.get_span_context(), {"k": "v"})],
        )
        span.add_event("toolspan.thought", {"toolspan.thought.content": "hm"})
        span.set_status(Status(StatusCode.ERROR, "boom"))
        span.end()


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


CHILD_JSON = {
    "traceId": "5b8efff798038103d269b633813fc60c",
    "spanId": "000000000000abc1",
    "parentSpanId": "000000000000abc0",
    "name": "execute_tool add",
    "kind": 1,
    "startTimeUnixNano": "1700000000001000000",
    "endTimeUnixNano": "1700000000003000000",
    "attributes": [
        {"key": "s", "value": {"stringValue": "x"}},
        {"key": "i", "value": {"intValue": "4611686018427387904"}},
        {"key": "f", "value": {"doubleValue": 1.5}},
        {"key": "b", "value": {"boolValue": True}},
        {"key": "l", "value": {"arrayValue": {"values": [{"stringValue": "a"}, {"stringValue": "b"}]}}},
        {"key": "li", "value": {"arrayValue": {"values": [{"intValue": "1"}, {"intValue": "2"}]}}},
    ],
    "events": [
        {
            "timeUnixNano": "1700000000002000000",
            "name": "toolspan.thought",
            "attributes": [{"key": "toolspan.thought.content", "value": {"stringValue": "hm"}}],
        }
    ],
    "links": [
        {
            "traceId": "5b8efff798038103d269b633813fc60c",
            "spanId": "000000000000abc0",
            "attributes": [{"key": "k", "value": {"stringValue": "v"}}],
            "flags": 256,
        }
    ],
    "status": {"message": "boom", "code": 2},
    "flags": 256,
}
ROOT_JSON = {
    "traceId": "5b8efff798038103d269b633813fc60c",
    "spanId": "000000000000abc0",
    "name": "invoke_agent planner",
    "kind": 2,
    "startTimeUnixNano": "1700000000000000000",
    "endTimeUnixNano": "1700000000004000000",
    "status": {},
    "flags": 256,
}


def _request(*spans: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {"resource": RESOURCE_JSON, "scopeSpans": [{"scope": SCOPE_JSON, "spans": list(spans)}]}
        ]
    }


@pytest.fixture
def captured() -> Iterator[list[ReadableSpan]]:
    memory = InMemorySpanExporter()
    provider = _provider(SimpleSpanProcessor(memory))
    _run_two_spans(provider)
    yield list(memory.get_finished_spans())
    provider.shutdown()


def test_one_otlp_json_request_per_export_call_in_the_spec_encoding(tmp_path: Path) -> None:
    # hex ids (not base64), lowerCamelCase keys, int64 as strings, enums as numbers, no empty parent
    path = tmp_path / "traces.jsonl"
    exporter = OtlpJsonFileExporter(path)
    provider = _provider(SimpleSpanProcessor(exporter))
    _run_two_spans(provider)
    provider.shutdown()
    assert _lines(path) == [_request(CHILD_JSON), _request(ROOT_JSON)]


def test_batch_is_grouped_by_resource_then_scope(tmp_path: Path, captured: list[ReadableSpan]) -> None:
    memory = InMemorySpanExporter()
    other = _provider(
        SimpleSpanProcessor(memory),
        resource=Resource({"service.name": "other"}),
        first_span_id=7,
        start_ns=5_000,
    )
    with other.get_tracer("other-lib").start_as_current_span("work"):
        pass
    other.shutdown()
    exporter = OtlpJsonFileExporter(tmp_path / "t.jsonl")
    assert exporter.export([*captured, *memory.get_finished_spans()]) is SpanExportResult.SUCCESS
    exporter.shutdown()
    other_span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "0000000000000007",
        "name": "work",
        "kind": 1,
        "startTimeUnixNano": "5000",
        "endTimeUnixNano": "1005000",
        "status": {},
        "flags": 256,
    }
    assert _lines(tmp_path / "t.jsonl") == [
        {
            "resourceSpans": [
                {
                    "resource": RESOURCE_JSON,
                    "scopeSpans": [{"scope": SCOPE_JSON, "spans": [CHILD_JSON, ROOT_JSON]}],
                },
                {
                    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "other"}}]},
                    "scopeSpans": [{"scope": {"name": "other-lib"}, "spans": [other_span]}],
                },
            ]
        }
    ]


def test_unended_span_has_no_end_time() -> None:
    provider = _provider()
    span = provider.get_tracer("toolspan", "0.1.0").start_span("execute_tool slow")
    request = encode_otlp_json([span])  # type: ignore[list-item]
    span.end()
    provider.shutdown()
    assert request == _request(
        {
            "traceId": "5b8efff798038103d269b633813fc60c",
            "spanId": "000000000000abc0",
            "name": "execute_tool slow",
            "kind": 1,
            "startTimeUnixNano": "1700000000000000000",
            "status": {},
            "flags": 256,
        }
    )


def test_empty_export_writes_nothing(tmp_path: Path) -> None:
    exporter = OtlpJsonFileExporter(tmp_path / "t.jsonl")
    assert exporter.export([]) is SpanExportResult.SUCCESS
    assert not (tmp_path / "t.jsonl").exists()


def test_appends_to_an_existing_file_and_creates_parent_directories(
    tmp_path: Path, captured: list[ReadableSpan]
) -> None:
    path = tmp_path / "a" / "b" / "t.jsonl"
    for _ in range(2):
        exporter = OtlpJsonFileExporter(path)
        assert exporter.export(captured[:1]) is SpanExportResult.SUCCESS
        exporter.shutdown()
    assert _lines(path) == [_request(CHILD_JSON), _request(CHILD_JSON)]


def test_concurrent_exports_never_interleave_lines(tmp_path: Path, captured: list[ReadableSpan]) -> None:
    path = tmp_path / "t.jsonl"
    exporter = OtlpJsonFileExporter(path)
    results: list[SpanExportResult] = []

    def worker() -> None:
        for _ in range(25):
            results.append(exporter.export(captured))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    exporter.shutdown()
    assert results == [SpanExportResult.SUCCESS] * 200
    assert _lines(path) == [_request(CHILD_JSON, ROOT_JSON)] * 200


def test_shutdown_is_idempotent_and_later_exports_fail_without_raising(
    tmp_path: Path, captured: list[ReadableSpan], caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "t.jsonl"
    exporter = OtlpJsonFileExporter(path)
    assert exporter.export(captured) is SpanExportResult.SUCCESS
    exporter.shutdown()
    exporter.shutdown()
    with caplog.at_level(logging.WARNING, logger="toolspan.exporters.otlp_file"):
        assert exporter.export(captured) is SpanExportResult.FAILURE
    assert "already shut down" in caplog.text
    assert _lines(path) == [_request(CHILD_JSON, ROOT_JSON)]
    assert exporter.force_flush() is True


@pytest.mark.parametrize("where", ["a_directory", "under_a_file"])
def test_unwritable_path_is_logged_and_returns_failure(
    tmp_path: Path, captured: list[ReadableSpan], caplog: pytest.LogCaptureFixture, where: str
) -> None:
    if where == "a_directory":
        path = tmp_path
    else:
        (tmp_path / "file").write_text("x")
        path = tmp_path / "file" / "t.jsonl"
    exporter = OtlpJsonFileExporter(path)
    with caplog.at_level(logging.WARNING, logger="toolspan.exporters.otlp_file"):
        assert exporter.export(captured) is SpanExportResult.FAILURE
        assert exporter.export(captured) is SpanExportResult.FAILURE
    assert caplog.text.count(f"cannot write OTLP JSON to {path}") == 2
    exporter.shutdown()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_disk_is_logged_and_returns_failure(
    captured: list[ReadableSpan], caplog: pytest.LogCaptureFixture
) -> None:
    exporter = OtlpJsonFileExporter("/dev/full")
    with caplog.at_level(logging.WARNING, logger="toolspan.exporters.otlp_file"):
        assert exporter.export(captured) is SpanExportResult.FAILURE
    assert "No space left on device" in caplog.text
    exporter.shutdown()


_CUT_WRITE_SCRIPT = """
import os, resource, signal, sys
from opentelemetry.sdk.trace import TracerProvider
from toolspan.exporters.otlp_file import OtlpJsonFileExporter

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
provider = TracerProvider()
span = provider.get_tracer("t").start_span("execute_tool t", attributes={"pad": "x" * 5000})
span.end()
exporter = OtlpJsonFileExporter(sys.argv[1])
results = [exporter.export([span]).name]
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
room = os.path.getsize(sys.argv[1]) + int(sys.argv[2])  # the disk fills up within the second record
resource.setrlimit(resource.RLIMIT_FSIZE, (room, hard))
results.append(exporter.export([span]).name)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
results.append(exporter.export([span]).name)
exporter.shutdown()
print(",".join(results))
"""


@pytest.mark.processes
@pytest.mark.skipif(sys.platform == "win32", reason="needs RLIMIT_FSIZE and SIGXFSZ")
@pytest.mark.parametrize("room", [0, 1000])  # no byte of the second record fits; a part of it does
def test_a_full_disk_leaves_only_whole_records_and_the_next_one_is_whole(tmp_path: Path, room: int) -> None:
    """A real EFBIG (RLIMIT_FSIZE in a child process): the cut record is truncated away."""
    path = tmp_path / "t.jsonl"
    run = subprocess.run(
        [sys.executable, "-c", _CUT_WRITE_SCRIPT, str(path), str(room)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "SUCCESS,FAILURE,SUCCESS"
    assert f"toolspan: cannot write OTLP JSON to {path}: [Errno 27] File too large" in run.stderr
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    first, last = (json.loads(line) for line in text.splitlines())
    assert first == last
    assert first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"] == "execute_tool t"


def test_a_file_ending_mid_line_gets_the_next_record_on_its_own_line(
    tmp_path: Path, captured: list[ReadableSpan]
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"resourceSpans": [{"cut by a crash')
    exporter = OtlpJsonFileExporter(path)
    assert exporter.export(captured) is SpanExportResult.SUCCESS
    exporter.shutdown()
    cut, line = path.read_text(encoding="utf-8").split("\n", 1)
    assert cut == '{"resourceSpans": [{"cut by a crash'
    assert line == encode_otlp_json_line(captured)


def test_constructible_without_arguments_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSPAN_OTLP_FILE", str(tmp_path / "env.jsonl"))
    (entry,) = [
        e for e in entry_points(group="opentelemetry_traces_exporter") if e.name == "toolspan_otlp_file"
    ]
    exporter = entry.load()()
    assert isinstance(exporter, OtlpJsonFileExporter)
    assert exporter.path == str(tmp_path / "env.jsonl")
    monkeypatch.delenv("TOOLSPAN_OTLP_FILE")
    assert OtlpJsonFileExporter().path == "toolspan-traces.jsonl"
    assert not (tmp_path / "env.jsonl").exists()  # nothing is created before the first export


def test_the_bridge_reads_the_file_back_as_the_same_spans(
    tmp_path: Path, captured: list[ReadableSpan]
) -> None:
    path = tmp_path / "t.jsonl"
    exporter = OtlpJsonFileExporter(path)
    assert exporter.export(captured[:1]) is SpanExportResult.SUCCESS
    assert exporter.export(captured[1:]) is SpanExportResult.SUCCESS
    exporter.shutdown()
    spans, report = read_spans([path])
    assert report.records_skipped == 0
    assert [replace(s, origin="") for s in spans] == from_readable_spans(captured)
    assert [s.origin for s in spans] == [f"{path}:1", f"{path}:2"]


def test_toolspan_spans_round_trip_through_the_file_with_every_attribute(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    memory = InMemorySpanExporter()
    provider = _provider(SimpleSpanProcessor(memory), SimpleSpanProcessor(OtlpJsonFileExporter(path)))

    @toolspan.tool(tracer_provider=provider)
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    with toolspan.agent("calc", input="1/0?", tracer_provider=provider) as run:
        toolspan.thought("try it")
        with toolspan.tool_call_id("toolu_01A"), pytest.raises(ZeroDivisionError):
            divide(1, 0)
        run.set_output(str(divide(1, 4)))
    provider.shutdown()
    spans, report = read_spans([path])
    assert report.records_skipped == 0
    assert [replace(s, origin="") for s in spans] == from_readable_spans(memory.get_finished_spans())
