"""``toolspan serve`` as a real subprocess: OTLP ingest (HTTP, gRPC) from the SDK's own exporters, the read
API byte-identical to ``toolspan convert``, refusals with nothing stored, duplicates, auth, listing."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.trace import ReadableSpan

import toolspan
from tests.support.paths import REPO, TESTS
from tests.support.server import HOST, Server, otlp_body, running_server, sdk_env, sse_stream
from toolspan.cli import _main as cli
from toolspan.testing import capture_spans

pytestmark = pytest.mark.processes

DEMO = REPO / "examples" / "demo_agent.py"
CONVERSATION = "conv-demo-0001"


def _convert(path: Path, target: str) -> bytes:
    """What ``toolspan convert PATH --to TARGET`` writes (``--sorted`` for events), run in-process."""
    extra = ["--sorted"] if target == "events" else []
    args = cli._parser().parse_args(["convert", str(path), "--to", target, *extra])
    out, err = io.BytesIO(), io.StringIO()
    assert cli.convert(args, out, err) == 0, err.getvalue()
    return out.getvalue()


def _only_trace(src: Path, dst: Path, trace_id: str) -> None:
    """``src`` (OTLP JSON Lines) with the spans of ``trace_id`` only."""
    with dst.open("w") as out:
        for line in src.read_text().splitlines():
            doc = json.loads(line)
            for rs in doc["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    ss["spans"] = [s for s in ss["spans"] if s["traceId"] == trace_id]
            out.write(json.dumps(doc) + "\n")


def _run_demo(server: Server, protocol: str, out: Path) -> Path:
    subprocess.run(
        [sys.executable, str(DEMO), "--out", str(out)],
        env=sdk_env(server, protocol),
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out / "traces.jsonl"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    """A server that received the demo agent's run over OTLP/HTTP, and the file of the same spans."""
    tmp = tmp_path_factory.mktemp("demo")
    with running_server(tmp) as server:
        yield server, _run_demo(server, "http/protobuf", tmp / "out")


def _trace_ids(server: Server) -> list[str]:
    return [row["trace_id"] for row in server.get_json("/api/traces")["traces"]]


def test_every_read_route_equals_convert_on_the_same_spans(demo: tuple[Server, Path], tmp_path: Path) -> None:
    server, traces = demo
    ids = _trace_ids(server)
    assert len(ids) == 2
    for trace_id in ids:
        one = tmp_path / f"{trace_id}.jsonl"
        _only_trace(traces, one, trace_id)
        for view in ("events", "tree", "plans", "progress"):
            assert server.get(f"/api/traces/{trace_id}/{view}") == _convert(one, view), view
        assert server.get(f"/api/jobs/{trace_id}/trace") == _convert(one, "tree")
        replay = server.get_json(f"/api/jobs/{trace_id}/replay")
        assert replay == {**json.loads(_convert(one, "tree")), "read_only": True}
    assert server.get(f"/api/conversations/{CONVERSATION}/timeline") == _convert(traces, "timeline")


def test_listing_summarises_newest_first_with_filters_and_cursor(demo: tuple[Server, Path]) -> None:
    server, _ = demo
    rows = server.get_json("/api/traces")["traces"]
    assert [r["start"] for r in rows] == sorted((r["start"] for r in rows), reverse=True)
    first, second = rows
    # The second turn's delete_files call was denied by the approver: a denial, not an error, as the
    # trace page counts it (COMPLETED 5, DENIED 1).
    assert {k: first[k] for k in first if k not in ("trace_id", "start", "duration_ms")} == {
        "name": "Research OpenTelemetry for me, then clean up the scratch files.",
        "root_name": "invoke_agent assistant",
        "input": "Research OpenTelemetry for me, then clean up the scratch files.",
        "service": "toolspan-demo",
        "conversation_id": CONVERSATION,
        "spans": 6,
        "tool_calls": 3,
        "errors": 0,
        "denied": 1,
        "cancelled": 0,
        "waiting": 0,
        "state": "DENIED",
    }
    assert (second["tool_calls"], second["errors"], second["denied"], second["state"]) == (
        2,
        0,
        0,
        "COMPLETED",
    )
    assert second["input"] == "What's the weather in Paris and what is 25 + 30?"
    page = json.loads(server.get(f"/api/traces/{first['trace_id']}/page"))
    assert page["counts"].get("DENIED") == 1
    assert not page["counts"].get("FAILED")
    page = server.get_json("/api/traces?limit=1")
    assert [r["trace_id"] for r in page["traces"]] == [first["trace_id"]]
    rest = server.get_json(f"/api/traces?limit=1&cursor={page['next_cursor']}")
    assert [r["trace_id"] for r in rest["traces"]] == [second["trace_id"]]
    assert rest["next_cursor"] is None

    def ids(query: str) -> list[str]:
        return [r["trace_id"] for r in server.get_json(f"/api/traces?{query}")["traces"]]

    assert ids("tool=delete_files") == [first["trace_id"]]
    assert ids("tool=get_weather") == [second["trace_id"]]
    assert ids("state=COMPLETED") == [second["trace_id"]]
    assert ids("state=DENIED") == [first["trace_id"]]
    assert ids("state=denied") == [first["trace_id"]]
    assert ids("state=failed") == []
    assert ids("state=RUNNING") == []
    assert ids("state=SEALED") == []
    # Search: ids, names and the words the user typed, in any case.
    assert ids("q=DELETE_FILES") == [first["trace_id"]]
    assert ids("q=Paris") == [second["trace_id"]]
    assert ids("q=paris") == [second["trace_id"]]
    assert ids(f"q={first['trace_id'][5:20]}") == [first["trace_id"]]
    assert ids("q=INVOKE_agent") == [first["trace_id"], second["trace_id"]]
    # LIKE's wildcards are literal: as wildcards both would match "invoke_agent assistant".
    assert ids("q=invoke%25assistant") == []
    assert ids("q=invoke_agen_") == []
    assert ids("q=nothing-like-it") == []
    assert ids("q=clean&state=DENIED") == [first["trace_id"]]
    assert ids("service=toolspan-demo") == [first["trace_id"], second["trace_id"]]
    assert ids("service=other") == []
    assert ids(f"conversation_id={CONVERSATION}") == [first["trace_id"], second["trace_id"]]
    assert ids(f"from_ms={first['start']}") == [first["trace_id"]]
    assert ids(f"to_ms={first['start']}") == [second["trace_id"]]
    status, _, body = server.request("GET", "/api/traces?state=NOPE")
    assert (status, json.loads(body)["error"]) == (
        400,
        "state: expected one of RUNNING, AWAITING_APPROVAL, COMPLETED, FAILED, CANCELLED, DENIED, SEALED,"
        " got 'NOPE'",
    )


def test_unknown_ids_are_json_404_and_health_and_openapi_answer(demo: tuple[Server, Path]) -> None:
    server, _ = demo
    for path, what in (
        ("/api/traces/0123/tree", "no trace '0123'"),
        ("/api/traces/not-hex!/events", "no trace 'not-hex!'"),
        ("/api/jobs/0123/trace", "no job '0123'"),
        ("/api/conversations/nobody/timeline", "no conversation 'nobody'"),
        ("/api/nothing", "no route '/api/nothing'"),
    ):
        status, headers, body = server.request("GET", path)
        assert (status, headers["content-type"], json.loads(body)) == (
            404,
            "application/json",
            {"error": what, "status": 404},
        )
    health = server.get_json("/healthz")
    renders = health.pop("renders")  # what the reads above kept (``test_renders``)
    decoded = health.pop("decoded_spans")  # the spans they decoded, kept (``store/test_decoded``)
    # The parse workers' two pipes (``ingest/test_parsers``), none on a machine of one core.
    pipes = health.pop("parse_pipe_bytes")
    # The counts made so far (``http/test_health``): at least this one.
    assert health.pop("count_scans") >= 1
    assert len(pipes) in (0, 2)
    assert all(isinstance(size, int) and size >= 4096 for size in pipes)
    assert health == {
        "status": "ok",
        "spans": 9,
        "traces": 2,
        "log_records": 0,
        "streams": 0,
        "dropped_stream_clients": 0,
        "relayed_text_deltas": 0,
    }
    assert set(renders) == set(decoded) == {"kept", "bytes", "hits", "misses"}
    doc = server.get_json("/openapi.json")
    assert doc["openapi"] == "3.1.0"
    assert "/api/traces/{trace_id}/events" in doc["paths"]


def test_grpc_exporter_stores_the_same_spans_as_http(demo: tuple[Server, Path], tmp_path: Path) -> None:
    http_server, _ = demo
    with running_server(tmp_path) as server:
        traces = _run_demo(server, "grpc", tmp_path / "out")
        assert server.counts() == {"spans": 9, "traces": 2}
        assert server.get(f"/api/conversations/{CONVERSATION}/timeline") == _convert(traces, "timeline")
    assert http_server.counts() == {"spans": 9, "traces": 2}


# --- ingest edge cases (bodies built by the SDK's own OTLP encoder) -----------------------------------


def _spans() -> list[ReadableSpan]:
    @toolspan.tool
    def lookup(city: str) -> str:
        return city.upper()

    with capture_spans() as finished:
        lookup("paris")
        lookup("tokyo")
    return list(finished())


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with running_server(tmp_path, "--max-body-bytes", "65536") as srv:
        yield srv


@pytest.fixture(scope="module")
def refusing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the refusal tests: each checks that nothing at all was stored."""
    with running_server(tmp_path_factory.mktemp("refusing"), "--max-body-bytes", "65536") as srv:
        yield srv


def test_duplicate_sends_are_stored_once(server: Server) -> None:
    body = otlp_body(_spans())
    for _ in range(3):
        status, _, reply = server.post_otlp(body)
        assert (status, reply) == (200, b"")
    assert server.counts() == {"spans": 2, "traces": 2}
    status, _, reply = server.post_otlp(gzip.compress(body), **{"Content-Encoding": "gzip"})
    assert (status, server.counts()) == (200, {"spans": 2, "traces": 2})


def test_json_ingest_and_partial_success(server: Server) -> None:
    spans = _spans()
    from google.protobuf.json_format import MessageToDict

    from toolspan.exporters.otlp_file import encode_otlp_json_line

    doc = json.loads(encode_otlp_json_line(spans[:1]))
    bad = json.loads(json.dumps(doc))
    bad["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = ""
    doc["resourceSpans"] += bad["resourceSpans"]
    status, headers, reply = server.post_otlp(json.dumps(doc).encode(), "application/json")
    assert (status, headers["content-type"], json.loads(reply)) == (
        200,
        "application/json",
        {"partialSuccess": {"rejectedSpans": "1", "errorMessage": "1 span(s) without a trace id or span id"}},
    )
    assert server.counts() == {"spans": 1, "traces": 1}
    assert MessageToDict(trace_service_pb2.ExportTraceServiceResponse()) == {}


@pytest.mark.parametrize(
    ("content_type", "encoding", "body", "status", "reason"),
    [
        ("application/x-protobuf", None, b"\x0a\xff\xff", 400, "not a valid OTLP protobuf request"),
        ("application/json", None, b"{not json", 400, "request body is not valid JSON"),
        ("application/json", None, b'{"data": []}', 400, "request body is not an OTLP"),
        ("text/plain", None, b"hello", 415, "unsupported content type 'text/plain'"),
        ("application/x-protobuf", "br", b"x", 415, "unsupported content encoding 'br'"),
        ("application/x-protobuf", None, b"\0" * 70000, 413, "over the size limit of 65536 bytes"),
        ("application/x-protobuf", "gzip", gzip.compress(b"\0" * (50 << 20)), 413, "inflates past the size"),
        ("application/x-protobuf", "gzip", b"\x1f\x8b not gzip", 400, "gzip body is not valid"),
    ],
)
def test_bad_bodies_are_refused_with_nothing_stored(
    refusing: Server, content_type: str, encoding: str | None, body: bytes, status: int, reason: str
) -> None:
    headers = {"Content-Encoding": encoding} if encoding else {}
    server = refusing
    got, got_headers, reply = server.post_otlp(body, content_type, **headers)
    assert got == status
    if got_headers["content-type"] == "application/json":
        message = json.loads(reply)["message"]
    else:
        from google.rpc.status_pb2 import Status

        message = Status.FromString(reply).message
    assert reason in message
    assert "\n" not in message
    assert server.counts() == {"spans": 0, "traces": 0}


def test_a_bad_part_in_a_good_request_refuses_the_whole_request(refusing: Server) -> None:
    good = otlp_body(_spans())
    status, _, _ = refusing.post_otlp(good + b"\x0a\x05\xff\xff")
    assert status == 400
    assert refusing.counts() == {"spans": 0, "traces": 0}


def test_bearer_token_guards_ingest_reads_and_grpc(tmp_path: Path) -> None:
    body = otlp_body(_spans())
    with running_server(tmp_path, "--token", "s3cret") as srv:
        for method, path, data in (("POST", "/v1/traces", body), ("GET", "/api/traces", None)):
            for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
                status, headers, reply = srv.request(method, path, data, auth)
                assert (status, headers["www-authenticate"], json.loads(reply)) == (
                    401,
                    "Bearer",
                    {"error": "missing or wrong bearer token", "status": 401},
                )
        assert srv.request("GET", "/healthz")[0] == 200
        assert srv.request("GET", "/api/traces?access_token=wrong")[0] == 401
        assert srv.request("POST", "/v1/traces?access_token=s3cret", body)[0] == 401  # GET only
        assert srv.request("GET", "/api/traces?access_token=s3cret")[0] == 200  # EventSource-style
        srv.headers = {"Authorization": "Bearer s3cret"}
        assert srv.post_otlp(body)[0] == 200
        assert len(srv.get_json("/api/traces")["traces"]) == 2
        with grpc.insecure_channel(f"{HOST}:{srv.grpc_port}") as channel:
            stub: Any = trace_service_pb2_grpc.TraceServiceStub(channel)  # type: ignore[no-untyped-call]
            request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
            with pytest.raises(grpc.RpcError) as refused:
                stub.Export(request, timeout=10)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            stub.Export(request, metadata=[("authorization", "Bearer s3cret")], timeout=10)
        assert srv.counts() == {"spans": 2, "traces": 2}


def test_cors_allows_only_listed_origins(tmp_path: Path) -> None:
    with running_server(tmp_path, "--cors-origin", "http://app.example") as srv:
        _, ok, _ = srv.request("GET", "/api/traces", headers={"Origin": "http://app.example"})
        _, other, _ = srv.request("GET", "/api/traces", headers={"Origin": "http://evil.example"})
    assert ok["access-control-allow-origin"] == "http://app.example"
    assert "access-control-allow-origin" not in other


# --- traces this replica does not hold: Tempo and Jaeger query APIs -----------------------------------

SERVER_FIXTURES = TESTS / "server_fixtures"
TEMPO_TRACE = "0af7651916cd43dd8448eb211c80319c"
JAEGER_TRACE = "f77950feed55c1ce91dd8e8789000001"


@pytest.fixture
def backends() -> Iterator[tuple[str, str, list[str]]]:
    """A local stand-in answering Tempo's and Jaeger's trace-by-id routes with recorded responses."""
    import http.server
    import threading

    routes = {
        f"/tempo/api/v2/traces/{TEMPO_TRACE}": SERVER_FIXTURES / "tempo_v2_trace.json",
        f"/jaeger/api/v3/traces/{JAEGER_TRACE}": SERVER_FIXTURES / "jaeger_v3_trace.json",
    }
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            path = routes.get(self.path)
            body = path.read_bytes() if path else b'{"error": "trace not found"}'
            self.send_response(200 if path else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer((HOST, 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    base = f"http://{HOST}:{httpd.server_address[1]}"
    try:
        yield f"{base}/tempo", f"{base}/jaeger", asked
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_traces_not_held_are_read_from_tempo_then_jaeger(
    tmp_path: Path, backends: tuple[str, str, list[str]]
) -> None:
    tempo, jaeger, asked = backends
    with running_server(tmp_path, "--tempo", tempo, "--jaeger", jaeger) as srv:
        for trace_id, fixture in (
            (TEMPO_TRACE, "tempo_v2_trace.json"),
            (JAEGER_TRACE, "jaeger_v3_trace.json"),
        ):
            for view in ("events", "tree", "plans", "progress"):
                assert srv.get(f"/api/traces/{trace_id}/{view}") == _convert(SERVER_FIXTURES / fixture, view)
        events = [json.loads(line) for line in srv.get(f"/api/traces/{TEMPO_TRACE}/events").splitlines()]
        assert [(e["type"], e["tool_name"]) for e in events] == [
            ("act", "get_weather"),
            ("observe", "get_weather"),
        ]
        status, _, body = srv.request("GET", f"/api/traces/{'ab' * 16}/tree")
        assert (status, json.loads(body)["status"]) == (404, 404)
        assert srv.counts() == {"spans": 0, "traces": 0}  # read through, not stored
    # Each read asks Tempo first, then Jaeger when Tempo has no such trace.
    missing = "ab" * 16
    assert set(asked) == {
        f"/tempo/api/v2/traces/{TEMPO_TRACE}",
        f"/tempo/api/v2/traces/{JAEGER_TRACE}",
        f"/jaeger/api/v3/traces/{JAEGER_TRACE}",
        f"/tempo/api/v2/traces/{missing}",
        f"/jaeger/api/v3/traces/{missing}",
    }
    for trace_id in (JAEGER_TRACE, missing):
        tempo_at = asked.index(f"/tempo/api/v2/traces/{trace_id}")
        assert asked[tempo_at + 1] == f"/jaeger/api/v3/traces/{trace_id}"


def test_the_page_stream_of_a_trace_not_held_reads_it_from_tempo(
    tmp_path: Path, backends: tuple[str, str, list[str]]
) -> None:
    """A replica that does not hold the trace streams its page from Tempo (polled): the whole document
    first, the one ``/page`` answers, tagged as its ``ETag``; nothing stored."""
    tempo, jaeger, _ = backends
    with running_server(tmp_path, "--tempo", tempo, "--jaeger", jaeger) as srv:
        status, headers, body = srv.request("GET", f"/api/traces/{TEMPO_TRACE}/page")
        assert status == 200
        stream = sse_stream(srv, f"/api/traces/{TEMPO_TRACE}/page/stream")
        first = next(stream)
        stream.close()
        assert (first.event, first.json()) == ("page", json.loads(body))
        assert {k.lower(): v for k, v in headers.items()}["etag"] == f'"{first.id}"'
        assert srv.counts() == {"spans": 0, "traces": 0}


def test_grpc_partial_success_and_size_limit(server: Server) -> None:
    request = trace_service_pb2.ExportTraceServiceRequest.FromString(otlp_body(_spans()))
    request.resource_spans[0].scope_spans[0].spans[0].trace_id = b""
    with grpc.insecure_channel(f"{HOST}:{server.grpc_port}") as channel:
        stub: Any = trace_service_pb2_grpc.TraceServiceStub(channel)  # type: ignore[no-untyped-call]
        response = stub.Export(request, timeout=10)
        assert (response.partial_success.rejected_spans, response.partial_success.error_message) == (
            1,
            "1 span(s) without a trace id or span id",
        )
        assert server.counts() == {"spans": 1, "traces": 1}
        big = trace_service_pb2.ExportTraceServiceRequest.FromString(otlp_body(_spans()))
        big.resource_spans[0].scope_spans[0].spans[0].name = "x" * 70_000
        with pytest.raises(grpc.RpcError) as refused:
            stub.Export(big, timeout=10)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert server.counts() == {"spans": 1, "traces": 1}
