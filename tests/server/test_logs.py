"""``toolspan serve`` receiving OTLP logs (``POST /v1/logs``, OTLP/gRPC ``LogsService/Export``) as a real
subprocess: log records joined to their spans exactly as ``toolspan convert --logs`` joins them, in every
read route, whichever arrives first; resends stored once; malformed bodies refused with nothing stored."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc

import toolspan
from tests.support.paths import TESTS
from tests.support.server import HOST, Server, otlp_body, running_server, sse_stream
from toolspan.cli import _main as cli
from toolspan.exporters.otlp_file import encode_otlp_json_line
from toolspan.testing import capture_spans

CORPUS = TESTS / "corpus" / "openai_v2"
TRACE = "a5e8b57ed112b58325367f7c32edc967"
VIEWS = ("events", "tree", "plans", "progress")


def _convert(path: Path, target: str, logs: Path | None) -> bytes:
    """What ``toolspan convert PATH --to TARGET [--logs LOGS]`` writes (``--sorted`` for events)."""
    extra = ["--sorted"] if target == "events" else []
    if logs is not None:
        extra += ["--logs", str(logs)]
    args = cli._parser().parse_args(["convert", str(path), "--to", target, *extra])
    out, err = io.BytesIO(), io.StringIO()
    assert cli.convert(args, out, err) == 0, err.getvalue()
    return out.getvalue()


def _post_logs(
    server: Server, body: bytes, content_type: str = "application/x-protobuf", **headers: str
) -> Any:
    return server.request("POST", "/v1/logs", body, {"Content-Type": content_type, **headers})


def _log_records(server: Server) -> int:
    return int(server.get_json("/healthz")["log_records"])


def _assert_routes_equal_convert(server: Server, trace_id: str, traces: Path, logs: Path) -> None:
    for view in VIEWS:
        assert server.get(f"/api/traces/{trace_id}/{view}") == _convert(traces, view, logs), view
    assert server.get(f"/api/jobs/{trace_id}/trace") == _convert(traces, "tree", logs)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with running_server(tmp_path, "--max-body-bytes", "65536") as srv:
        yield srv


@pytest.mark.processes
def test_corpus_logs_before_their_spans_are_joined_as_convert_joins_them(server: Server) -> None:
    traces, logs = CORPUS / "traces.jsonl", CORPUS / "logs.jsonl"
    for _ in range(2):  # an exporter retry: stored once
        status, headers, reply = _post_logs(server, logs.read_bytes(), "application/json")
        assert (status, headers["content-type"], json.loads(reply)) == (200, "application/json", {})
    stored = _log_records(server)
    assert stored > 0
    status, _, _ = server.request("GET", f"/api/traces/{TRACE}/tree")
    assert status == 404  # logs alone are no trace
    status, _, _ = server.post_otlp(traces.read_bytes(), "application/json")
    assert status == 200
    _assert_routes_equal_convert(server, TRACE, traces, logs)
    # The log-based GenAI events are what links the tool calls to the model call that asked for them.
    with_logs = server.get_json(f"/api/traces/{TRACE}/tree")
    assert with_logs != json.loads(_convert(traces, "tree", None))
    assert '"requested_by"' in server.get(f"/api/traces/{TRACE}/tree").decode()
    assert _log_records(server) == stored


@pytest.mark.processes
def test_protobuf_gzip_logs_after_spans_and_resends_stored_once(server: Server) -> None:
    traces, logs = CORPUS / "traces.pb", CORPUS / "logs.pb"
    assert server.post_otlp(traces.read_bytes())[0] == 200
    body = logs.read_bytes()
    for extra in ({}, {"Content-Encoding": "gzip"}):
        data = gzip.compress(body) if extra else body
        status, headers, reply = _post_logs(server, data, **extra)
        assert (status, headers["content-type"]) == (200, "application/x-protobuf")
        assert (
            logs_service_pb2.ExportLogsServiceResponse.FromString(reply).HasField("partial_success") is False
        )
    request = logs_service_pb2.ExportLogsServiceRequest.FromString(body)
    total = sum(len(s.log_records) for r in request.resource_logs for s in r.scope_logs)
    assert _log_records(server) == total
    _assert_routes_equal_convert(server, TRACE, traces, logs)


@pytest.mark.processes
def test_grpc_logs_service_joins_the_same_records(server: Server) -> None:
    traces, logs = CORPUS / "traces.pb", CORPUS / "logs.pb"
    request = logs_service_pb2.ExportLogsServiceRequest.FromString(logs.read_bytes())
    with grpc.insecure_channel(f"{HOST}:{server.grpc_port}") as channel:
        stub: Any = logs_service_pb2_grpc.LogsServiceStub(channel)  # type: ignore[no-untyped-call]
        for _ in range(2):
            response = stub.Export(request, timeout=10)
            assert not response.HasField("partial_success")
        assert server.post_otlp(traces.read_bytes())[0] == 200
        _assert_routes_equal_convert(server, TRACE, traces, logs)
        unlinked = logs_service_pb2.ExportLogsServiceRequest()
        unlinked.CopyFrom(request)
        unlinked.resource_logs[0].scope_logs[0].log_records[0].span_id = b""
        response = stub.Export(unlinked, timeout=10)
        assert (response.partial_success.rejected_log_records, response.partial_success.error_message) == (
            1,
            "1 log record(s) without a trace id or span id",
        )
    _assert_routes_equal_convert(server, TRACE, traces, logs)


def _sdk_run(protocol: str, server: Server) -> tuple[list[Any], bytes]:
    """A tool span and a GenAI log record inside it, the record exported by the SDK's own
    ``OTLPLogExporter`` (``protocol``) to ``server``; returns the finished spans and the same records as
    the SDK's OTLP protobuf logs request (the ``convert --logs`` input)."""
    from opentelemetry._logs import SeverityNumber
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcExporter

        exporter: Any = GrpcExporter(endpoint=f"http://{HOST}:{server.grpc_port}", insecure=True)
    else:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpExporter

        exporter = HttpExporter(endpoint=f"{server.url}/v1/logs")
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = provider.get_logger("test.genai")

    @toolspan.tool
    def lookup(city: str) -> str:
        return city.upper()

    choice = {
        "index": 0,
        "finish_reason": "tool_calls",
        "message": {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_lookup_paris",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"city": "paris"}'},
                }
            ],
        },
    }
    with capture_spans() as finished:
        tracer = finished.provider.get_tracer("test.genai")
        with tracer.start_as_current_span("agent"):
            model = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "m"}
            with tracer.start_as_current_span("chat m", attributes=model):
                logger.emit(
                    severity_number=SeverityNumber.INFO,
                    body=choice,
                    attributes={"gen_ai.system": "openai"},
                    event_name="gen_ai.choice",
                )
            lookup(city="paris")
    provider.shutdown()
    return list(finished()), bytes(encode_logs(memory.get_finished_logs()).SerializeToString())


@pytest.mark.processes
@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_the_sdk_log_exporter_is_joined_like_convert(server: Server, tmp_path: Path, protocol: str) -> None:
    spans, sent = _sdk_run(protocol, server)
    assert _log_records(server) == 1
    assert server.post_otlp(otlp_body(spans))[0] == 200
    traces = tmp_path / "traces.jsonl"
    traces.write_text(encode_otlp_json_line(spans) + "\n", "utf-8")
    logs = tmp_path / "logs.pb"
    logs.write_bytes(sent)
    trace_id = format(spans[0].context.trace_id, "032x")
    _assert_routes_equal_convert(server, trace_id, traces, logs)
    # The model call's log-based choice is what names the requesting generation and the model's call id.
    model = next(format(s.context.span_id, "016x") for s in spans if s.name == "chat m")
    events = [json.loads(line) for line in server.get(f"/api/traces/{trace_id}/events").splitlines()]
    assert {e.get("requested_by") for e in events} == {model}, events
    assert {e.get("call_id") for e in events} == {"call_lookup_paris"}, events


@pytest.mark.processes
def test_partial_success_for_records_tied_to_no_span(server: Server) -> None:
    doc = json.loads((CORPUS / "logs.jsonl").read_bytes())
    records = doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    records[0]["spanId"] = ""
    status, _, reply = _post_logs(server, json.dumps(doc).encode(), "application/json")
    assert (status, json.loads(reply)) == (
        200,
        {
            "partialSuccess": {
                "rejectedLogRecords": "1",
                "errorMessage": "1 log record(s) without a trace id or span id",
            }
        },
    )
    total = sum(len(s["logRecords"]) for r in doc["resourceLogs"] for s in r["scopeLogs"])
    assert _log_records(server) == total - 1


@pytest.fixture(scope="module")
def refusing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("refusing-logs"), "--max-body-bytes", "65536") as srv:
        yield srv


@pytest.mark.processes
@pytest.mark.parametrize(
    ("content_type", "encoding", "body", "status", "reason"),
    [
        ("application/x-protobuf", None, b"\x0a\xff\xff", 400, "not a valid OTLP protobuf logs request"),
        (
            "application/x-protobuf",
            None,
            (CORPUS / "logs.pb").read_bytes() + b"\x0a\x05\xff",
            400,
            "not a valid",
        ),
        ("application/json", None, b"{not json", 400, "request body is not valid JSON"),
        ("application/json", None, b'{"resourceSpans": []}', 400, "not an OTLP ExportLogsServiceRequest"),
        ("application/json", None, b'{"resourceLogs": "x"}', 400, "not a valid OTLP logs request"),
        (
            "application/json",
            None,
            b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": "zz",'
            b' "spanId": "0102030405060708"}]}]}]}',
            400,
            "not a valid OTLP logs request",
        ),
        ("text/plain", None, b"hello", 415, "unsupported content type 'text/plain'"),
        ("application/x-protobuf", "br", b"x", 415, "unsupported content encoding 'br'"),
        ("application/x-protobuf", None, b"\0" * 70000, 413, "over the size limit of 65536 bytes"),
        ("application/x-protobuf", "gzip", gzip.compress(b"\0" * (50 << 20)), 413, "inflates past the size"),
        ("application/x-protobuf", "gzip", b"\x1f\x8b not gzip", 400, "gzip body is not valid"),
    ],
)
def test_bad_log_bodies_are_refused_with_nothing_stored(
    refusing: Server, content_type: str, encoding: str | None, body: bytes, status: int, reason: str
) -> None:
    headers = {"Content-Encoding": encoding} if encoding else {}
    got, got_headers, reply = _post_logs(refusing, body, content_type, **headers)
    assert got == status
    if got_headers["content-type"] == "application/json":
        message = json.loads(reply)["message"]
    else:
        from google.rpc.status_pb2 import Status

        message = Status.FromString(reply).message
    assert reason in message
    assert "\n" not in message
    assert _log_records(refusing) == 0


@pytest.mark.processes
def test_live_stream_events_carry_their_spans_log_records(server: Server) -> None:
    """The SSE act/observe events equal ``convert --to events --logs`` (each span with its own records)."""
    traces, logs = CORPUS / "traces.jsonl", CORPUS / "logs.jsonl"
    assert _post_logs(server, logs.read_bytes(), "application/json")[0] == 200
    assert server.post_otlp(traces.read_bytes(), "application/json")[0] == 200
    args = cli._parser().parse_args(["convert", str(traces), "--to", "events", "--logs", str(logs)])
    out, err = io.BytesIO(), io.StringIO()
    assert cli.convert(args, out, err) == 0, err.getvalue()
    expected = [json.loads(line) for line in out.getvalue().splitlines()]
    got = []
    for event in sse_stream(server, f"/api/traces/{TRACE}/stream", timeout=10):
        got.append(event.json())
        if len(got) == len(expected):
            break
    key = json.dumps
    assert sorted(map(key, got)) == sorted(map(key, expected))


def test_store_keeps_unjoined_records_only_as_long_as_retention(tmp_path: Path) -> None:
    from dataclasses import replace

    from toolspan.bridge.readers import spans_from_document
    from toolspan.bridge.readers._logs import logs_from_bytes
    from toolspan.server._rows.cursor import Cursor
    from toolspan.server._store.sqlite import SqliteStore

    store = SqliteStore(str(tmp_path / "s.db"))
    try:
        records = logs_from_bytes((CORPUS / "logs.pb").read_bytes())
        assert store.ingest_logs(records).duplicates == 0
        assert store.ingest_logs(records).duplicates == len(records)
        assert store.log_count() == len(records)
        assert store.prune(max_age_ns=3600 * 10**9, max_spans=None) == 0
        assert store.log_count() == len(records)  # young: kept for its spans
        tied = {(r.trace_id, r.span_id) for r in records}
        spans = spans_from_document(json.loads((CORPUS / "traces.jsonl").read_bytes()), origin="t")
        stored = store.ingest([replace(s, events=()) for s in spans if (s.trace_id, s.span_id) in tied])
        assert stored.accepted > 0
        # The stream's spans carry their own records (act and observe of a tool span alike).
        for _, _, span in store.events_after(Cursor(0), trace_id=None, conversation_id=None, limit=100):
            assert {e.name for e in span.events} == {
                r.event_name for r in records if r.span_id == span.span_id
            }
        for span in store.trace_spans(TRACE):
            assert len(span.events) == sum(r.span_id == span.span_id for r in records)
        assert store.prune(max_age_ns=3600 * 10**9, max_spans=0) == 1
        assert store.log_count() == 0  # dropped with their trace
        assert store.ingest_logs(records).duplicates == 0
        store.prune(max_age_ns=0, max_spans=None)
        assert store.log_count() == 0
    finally:
        store.close()


@pytest.mark.processes
def test_bearer_token_guards_logs_over_http_and_grpc(tmp_path: Path) -> None:
    body = (CORPUS / "logs.pb").read_bytes()
    with running_server(tmp_path, "--token", "s3cret") as server:
        assert _post_logs(server, body)[0] == 401
        request = logs_service_pb2.ExportLogsServiceRequest.FromString(body)
        with grpc.insecure_channel(f"{HOST}:{server.grpc_port}") as channel:
            stub: Any = logs_service_pb2_grpc.LogsServiceStub(channel)  # type: ignore[no-untyped-call]
            with pytest.raises(grpc.RpcError) as refused:
                stub.Export(request, timeout=10)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            stub.Export(request, timeout=10, metadata=[("authorization", "Bearer s3cret")])
        server.headers["Authorization"] = "Bearer s3cret"
        assert _post_logs(server, body)[0] == 200
        assert _log_records(server) == len(request.resource_logs[0].scope_logs[0].log_records)
