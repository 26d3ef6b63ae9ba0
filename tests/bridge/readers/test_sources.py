"""Inputs of every kind: paths, directories, globs, stdin, bytes, file objects, gzip, protobuf, SDK spans."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.formats import otlp_proto_request, parity_trace, render
from toolspan.bridge.internal import resolve_inputs
from toolspan.bridge.model import Span, SpanEvent, SpanLink
from toolspan.bridge.readers import BridgeReadError, ReadReport, from_readable_spans, iter_spans, read_spans
from toolspan.testing import SequentialIdGenerator


def bare(spans: list[Span]) -> list[Span]:
    return [dataclasses.replace(s, origin="") for s in spans]


def request(names: list[str], **span_extra: Any) -> dict[str, Any]:
    spans = [
        {
            "traceId": "0af7651916cd43dd8448eb211c80319c",
            "spanId": f"{i + 1:016x}",
            "name": name,
            "startTimeUnixNano": "100",
            "endTimeUnixNano": "200",
            **span_extra,
        }
        for i, name in enumerate(names)
    ]
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def test_directories_are_read_recursively_in_sorted_order_and_globs_expand(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "a.jsonl").write_text(json.dumps(request(["a"])) + "\n")
    (tmp_path / "b" / "c.json").write_text(json.dumps(request(["c"])))
    (tmp_path / "b" / "notes.md").write_text("not a trace")
    (tmp_path / ".hidden.json").write_text("{}")
    spans, report = read_spans(tmp_path)
    assert [s.name for s in spans] == ["a", "c"]
    assert report.sources_read == 2
    assert resolve_inputs([str(tmp_path / "**" / "*.json")]) == [tmp_path / "b" / "c.json"]
    spans, _ = read_spans([str(tmp_path / "*.jsonl"), tmp_path / "b" / "c.json"])
    assert [s.name for s in spans] == ["a", "c"]


def test_missing_paths_and_empty_globs_are_read_errors(tmp_path: Path) -> None:
    with pytest.raises(BridgeReadError, match=r"nope\.json: no such file or directory$"):
        read_spans(tmp_path / "nope.json")
    with pytest.raises(BridgeReadError, match=r"\*\.jsonl: no file matches this pattern$"):
        read_spans(str(tmp_path / "*.jsonl"))


def test_bytes_file_objects_text_streams_and_parsed_documents() -> None:
    data = json.dumps(request(["x", "y"])).encode()
    expected = [s.name for s in read_spans(data)[0]]
    assert expected == ["x", "y"]
    assert [s.name for s in read_spans(io.BytesIO(data))[0]] == expected
    assert [s.name for s in read_spans(io.StringIO(data.decode()))[0]] == expected
    assert [s.name for s in read_spans(json.loads(data))[0]] == expected
    assert [s.name for s in read_spans([json.loads(data), data])[0]] == expected * 2


@pytest.mark.processes
def test_stdin_dash_is_read_by_the_cli_path() -> None:
    code = "from toolspan.bridge.readers import read_spans as r; s, n = r('-'); print(len(s), n.sources_read)"
    data = "\n" + json.dumps(request(["a", "b", "c"])) + "\n"
    out = subprocess.run([sys.executable, "-c", code], input=data.encode(), capture_output=True, check=True)
    assert out.stdout.decode().split() == ["3", "1"]


def test_gzip_files_are_decompressed(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl.gz"
    with gzip.open(path, "wb") as f:
        f.write((json.dumps(request(["g1"])) + "\n" + json.dumps(request(["g2"])) + "\n").encode())
    spans, _ = read_spans(path)
    assert [(s.name, s.origin) for s in spans] == [("g1", f"{path}:1"), ("g2", f"{path}:2")]


def test_missing_or_zero_end_time_means_the_span_never_ended() -> None:
    doc = request(["open", "zero", "int0"])
    spans_json = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    del spans_json[0]["endTimeUnixNano"]
    spans_json[1]["endTimeUnixNano"] = "0"
    spans_json[2]["endTimeUnixNano"] = 0
    spans, _ = read_spans(doc)
    assert [s.end_ns for s in spans] == [None, None, None]


def test_proto_body_and_file_exporter_framing_read_like_the_json() -> None:
    trace = parity_trace()
    expected = sorted(trace, key=lambda s: s.span_id)
    for fmt in ("otlp_proto", "otlp_proto_file"):
        spans, report = read_spans(render(fmt, trace))
        assert sorted(bare(spans), key=lambda s: s.span_id) == expected
        assert report.issues == []


def test_a_framed_message_cut_off_at_the_end_is_reported(tmp_path: Path) -> None:
    trace = parity_trace()
    body = otlp_proto_request(trace[:3]).SerializeToString()
    second = otlp_proto_request(trace[3:]).SerializeToString()
    path = tmp_path / "traces.pb"
    path.write_bytes(struct.pack(">I", len(body)) + body + struct.pack(">I", len(second)) + second[:10])
    spans, report = read_spans(path)
    assert [s.span_id for s in spans] == [s.span_id for s in trace[:3]]
    (issue,) = report.issues
    assert (issue.line, issue.skipped) == (2, 1)
    assert issue.message == f"message 2: cut off at end of input (10 of {len(second)} bytes)"


def test_framed_json_messages_are_read(tmp_path: Path) -> None:
    body = json.dumps(request(["framed"])).encode()
    spans, _ = read_spans(struct.pack(">I", len(body)) + body)
    assert [s.name for s in spans] == ["framed"]


def test_garbage_bytes_are_a_read_error() -> None:
    with pytest.raises(BridgeReadError, match=r"^<bytes>: not a valid OTLP protobuf request"):
        read_spans(b"\x0a\xff\xff\xff\xff\xff\xff")


def test_iter_spans_streams_and_updates_the_report_and_progress(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [json.dumps(request([f"s{i}"])) + "\n" for i in range(5)]
    path.write_text("".join(lines))
    report = ReadReport()
    seen: list[int] = []
    it = iter_spans(path, report=report, progress=seen.append)
    first = next(it)
    assert first.name == "s0"
    assert report.spans_read == 1
    rest = list(it)
    assert len(rest) == 4
    assert report.spans_read == 5
    assert sum(seen) == path.stat().st_size


def test_sdk_readable_spans_ended_and_not_ended() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "sdk-test"}), id_generator=SequentialIdGenerator()
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("toolspan.test", "1.0")
    with tracer.start_as_current_span("root", kind=trace_api.SpanKind.SERVER) as root:
        root.set_attribute("tags", ["a", "b"])
        root.add_event("thought", {"n": 1}, timestamp=123)
        open_span = tracer.start_span(
            "child",
            links=[trace_api.Link(root.get_span_context(), {"why": "because"})],
            attributes={"x": 1.5},
        )
        open_span.set_status(trace_api.Status(trace_api.StatusCode.ERROR, "boom"))
    (ended,) = from_readable_spans(exporter.get_finished_spans())
    (live,) = from_readable_spans([open_span])  # type: ignore[list-item]
    ctx = root.get_span_context()
    tid, sid = f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"
    assert ended.end_ns is not None
    assert ended.start_ns <= ended.end_ns
    assert dataclasses.replace(ended, start_ns=0, end_ns=0, resource={}) == Span(
        trace_id=tid,
        span_id=sid,
        parent_span_id=None,
        name="root",
        start_ns=0,
        end_ns=0,
        kind="SERVER",
        status="UNSET",
        attributes={"tags": ["a", "b"]},
        events=(SpanEvent("thought", 123, {"n": 1}),),
        scope="toolspan.test",
    )
    assert ended.resource["service.name"] == "sdk-test"
    assert live.end_ns is None
    assert (live.parent_span_id, live.status, live.status_message, live.attributes) == (
        sid,
        "ERROR",
        "boom",
        {"x": 1.5},
    )
    assert live.links == (SpanLink(tid, sid, {"why": "because"}),)
    open_span.end()


@pytest.mark.parametrize("backend", ["stdlib", "auto"])
def test_both_json_backends_read_the_same_spans(monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    from toolspan.bridge._json_write import backend as current

    monkeypatch.setenv("TOOLSPAN_JSON", backend)
    if backend == "stdlib":
        assert current() == "stdlib"
    trace = parity_trace()
    for fmt in ("otlp_jsonl", "jaeger_v1", "tempo_v2"):
        spans, _ = read_spans(render(fmt, trace))
        assert sorted(bare(spans), key=lambda s: s.span_id) == sorted(trace, key=lambda s: s.span_id)
    # Valid for the standard library, refused by orjson: still read.
    line = json.dumps(request(["nan"], attributes=[{"key": "x", "value": {"doubleValue": float("nan")}}]))
    assert "NaN" in line
    (span,) = read_spans((line + "\n").encode())[0]
    assert span.attributes["x"] == "NaN"  # as OTLP/JSON writes a non-finite double
