"""A real ``toolspan serve`` probed as a hostile client would: ids of the wrong length, times past what
SQLite stores, lone surrogates, multi-member and trailing-garbage gzip, hostile cursors, bookmarks and
listing numbers, foreign ``Host`` headers. Each gets a precise 4xx with the field named (never a 500),
nothing of a refused request is stored, and the server goes on serving. Table tests pin the examples
found probing it; property tests (hypothesis) cover each class."""

from __future__ import annotations

import gzip
import http.client
import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from playwright.sync_api import Browser

import toolspan
from tests.support.server import HOST, Server, otlp_body, running_server, sse_stream
from toolspan.testing import capture_spans

MAX_NS = (1 << 63) - 1
PROBES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _tool_spans(count: int = 1) -> list[ReadableSpan]:
    @toolspan.tool
    def lookup(city: str) -> str:
        return city.upper()

    with capture_spans() as finished, toolspan.agent("planner"):
        for i in range(count):
            lookup(f"city-{i}")
    return list(finished())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("hostile")) as srv:
        yield srv


@pytest.fixture(scope="module")
def stored(server: Server) -> tuple[Server, list[ReadableSpan]]:
    """The server holding two tool calls of one trace (stored once for the module)."""
    spans = _tool_spans(2)
    assert server.post_otlp(otlp_body(spans))[0] == 200
    return server, spans


def _message(content_type: str, reply: bytes) -> str:
    if content_type.startswith("application/json"):
        doc = json.loads(reply)
        return str(doc.get("message") or doc.get("error"))
    from google.rpc.status_pb2 import Status

    return str(Status.FromString(reply).message)


def _refused(
    server: Server, body: bytes, content_type: str = "application/x-protobuf", **headers: str
) -> str:
    """Post ``body``: it must be a 400 (nothing stored); returns the one-line reason."""
    before = server.counts()
    status, got_headers, reply = server.post_otlp(body, content_type, **headers)
    assert status == 400, (status, reply)
    message = _message(got_headers["content-type"], reply)
    assert "\n" not in message
    assert server.counts() == before
    return message


def _mutated(field: str, value: Any) -> bytes:
    """A real SDK export request with ``field`` of its second span set to ``value``."""
    request = ExportTraceServiceRequest.FromString(otlp_body(_tool_spans(1)))
    setattr(request.resource_spans[0].scope_spans[0].spans[1], field, value)
    return bytes(request.SerializeToString())


# --- ids and times --------------------------------------------------------------------------------------


@pytest.mark.processes
@pytest.mark.parametrize(
    ("field", "size", "expected"),
    [
        ("trace_id", 20, 16),
        ("trace_id", 15, 16),
        ("span_id", 9, 8),
        ("span_id", 1, 8),
        ("parent_span_id", 16, 8),
    ],
)
def test_protobuf_ids_of_the_wrong_length_are_400_naming_the_field(
    server: Server, field: str, size: int, expected: int
) -> None:
    message = _refused(server, _mutated(field, b"\x07" * size))
    assert f"spans[1].{field}: {size} bytes, expected {expected}" in message


@pytest.mark.processes
@PROBES
@given(
    field=st.sampled_from(["trace_id", "span_id", "parent_span_id"]),
    size=st.integers(1, 40),
)
def test_any_protobuf_id_length_is_stored_or_refused_never_a_500(
    server: Server, field: str, size: int
) -> None:
    body = _mutated(field, b"\x05" * size)
    status, _, reply = server.post_otlp(body)
    ok = size == (16 if field == "trace_id" else 8)
    assert status == (200 if ok else 400), reply
    if ok:  # stored, and readable
        trace_id = (
            ExportTraceServiceRequest.FromString(body).resource_spans[0].scope_spans[0].spans[1].trace_id
        )
        assert server.request("GET", f"/api/traces/{trace_id.hex()}/tree")[0] == 200


@pytest.mark.processes
def test_json_ids_of_the_wrong_length_are_400(server: Server) -> None:
    doc = {
        "resourceSpans": [
            {"scopeSpans": [{"spans": [{"traceId": "ab" * 20, "spanId": "01" * 8, "name": "x"}]}]}
        ]
    }
    assert "not a hex or base64 trace id" in _refused(server, json.dumps(doc).encode(), "application/json")


@pytest.mark.processes
@PROBES
@given(
    field=st.sampled_from(["start_time_unix_nano", "end_time_unix_nano"]),
    value=st.integers(MAX_NS + 1, (1 << 64) - 1),
)
def test_times_past_2_63_are_400_naming_the_field(server: Server, field: str, value: int) -> None:
    request = ExportTraceServiceRequest.FromString(_mutated(field, value))
    if field == "start_time_unix_nano":  # an unended span: the start is what is refused
        request.resource_spans[0].scope_spans[0].spans[1].end_time_unix_nano = 0
    message = _refused(server, request.SerializeToString())
    assert f"spans[1].{field}: {value} is past 2**63-1 ns" in message
    times = {"startTimeUnixNano": "1"}
    times["startTimeUnixNano" if field.startswith("start") else "endTimeUnixNano"] = str(value)
    span = {"traceId": "ab" * 16, "spanId": "01" * 8, "name": "x", **times}
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    message = _refused(server, json.dumps(doc).encode(), "application/json")
    assert f"{field} {value} is past 2**63-1 ns" in message


@pytest.mark.processes
def test_grpc_input_errors_are_invalid_argument(server: Server) -> None:
    with grpc.insecure_channel(f"{HOST}:{server.grpc_port}") as channel:
        stub: Any = trace_service_pb2_grpc.TraceServiceStub(channel)  # type: ignore[no-untyped-call]
        for field, value, reason in (
            ("trace_id", b"\x01" * 20, "trace_id: 20 bytes, expected 16"),
            ("end_time_unix_nano", 1, "before the start time"),
            ("end_time_unix_nano", 1 << 63, "is past 2**63-1 ns"),
        ):
            request = trace_service_pb2.ExportTraceServiceRequest.FromString(_mutated(field, value))
            with pytest.raises(grpc.RpcError) as refused:
                stub.Export(request, timeout=10)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert reason in str(refused.value.details())


# --- text -------------------------------------------------------------------------------------------------


def _json_body(route: str, name: str, key: str, value: str) -> bytes:
    """An OTLP JSON request for ``route`` whose span (or log record) name, attribute key and value are
    the JSON string literals given (escapes and all)."""
    ids = {"traceId": "ab" * 16, "spanId": "01" * 8, "startTimeUnixNano": "5"}
    attrs = [{"key": "@KEY@", "value": {"stringValue": "@VALUE@"}}]
    if route == "/v1/traces":
        doc: dict[str, Any] = {
            "resourceSpans": [{"scopeSpans": [{"spans": [{**ids, "name": "@NAME@", "attributes": attrs}]}]}]
        }
    else:
        record = {
            **ids,
            "timeUnixNano": "5",
            "eventName": "@NAME@",
            "attributes": attrs,
            "body": {"stringValue": "b"},
        }
        doc = {"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}
    text = json.dumps(doc)
    for placeholder, literal in (("@NAME@", name), ("@KEY@", key), ("@VALUE@", value)):
        text = text.replace(placeholder, literal)
    return text.encode()


@pytest.mark.processes
@pytest.mark.parametrize("where", ["name", "attribute", "key"])
@pytest.mark.parametrize("route", ["/v1/traces", "/v1/logs"])
def test_a_lone_surrogate_in_otlp_json_is_400(server: Server, where: str, route: str) -> None:
    name = "\\ud800" if where == "name" else "tool"
    key = "\\udfff" if where == "key" else "k"
    value = "\\udabc" if where == "attribute" else "v"
    before = server.get_json("/healthz")
    body = _json_body(route, name, key, value)
    status, headers, reply = server.request("POST", route, body, {"Content-Type": "application/json"})
    assert status == 400, reply
    assert "lone surrogate" in _message(headers["content-type"], reply)
    after = server.get_json("/healthz")
    assert (after["spans"], after["log_records"]) == (before["spans"], before["log_records"])


@pytest.mark.processes
def test_a_paired_surrogate_escape_is_text_and_stored(server: Server) -> None:
    body = _json_body("/v1/traces", "\\ud83d\\ude00", "k", "\\uD83D\\uDE00")
    assert server.post_otlp(body, "application/json")[0] == 200
    assert server.get(f"/api/traces/{'ab' * 16}/otlp").decode("utf-8").count("\U0001f600") == 2


# --- gzip -------------------------------------------------------------------------------------------------


@pytest.mark.processes
def test_every_member_of_a_multi_member_gzip_body_is_stored(server: Server) -> None:
    spans = _tool_spans(3)
    whole = otlp_body(spans)
    cut = len(whole) // 2
    body = gzip.compress(whole[:cut]) + gzip.compress(whole[cut:])
    status, _, _ = server.post_otlp(body, **{"Content-Encoding": "gzip"})
    assert status == 200
    trace_id = f"{spans[0].context.trace_id:032x}"
    stored = server.get_json(f"/api/traces/{trace_id}/otlp")
    assert sum(len(ss["spans"]) for rs in stored["resourceSpans"] for ss in rs["scopeSpans"]) == len(spans)


@pytest.mark.processes
@pytest.mark.parametrize("tail", [b"garbage", b"\0" * 8, b"\x1f", b"\x1f\x8b\x08"])
def test_trailing_bytes_after_gzip_are_400(server: Server, tail: bytes) -> None:
    body = gzip.compress(otlp_body(_tool_spans(1))) + tail
    message = _refused(server, body, **{"Content-Encoding": "gzip"})
    assert "gzip body" in message


# --- the listing ------------------------------------------------------------------------------------------


@pytest.mark.processes
@pytest.mark.parametrize(
    "query",
    [
        "to_ms=9999999999999",
        "from_ms=9223372036855",
        "from_ms=-1",
        "to_ms=" + "9" * 5000,
        "limit=" + "9" * 30,
        "limit=\u00b2",
        "cursor=" + "9" * 30 + "-" + "ab" * 16,
        "cursor=9223372036854775808-" + "ab" * 16,
        "cursor=\u00b2-" + "ab" * 16,
        "cursor=12-" + "zz" * 16,
    ],
)
def test_hostile_listing_numbers_and_cursors_are_400(server: Server, query: str) -> None:
    name, _, value = query.partition("=")
    status, _, reply = server.request("GET", "/api/traces?" + urllib.parse.urlencode({name: value}))
    assert status == 400, reply
    assert json.loads(reply)["error"].startswith(f"{name}: ")


# Numbers as a hostile client writes them: huge, negative, Unicode digits (``str.isdigit`` accepts ``²``
# and ``٣``; ``int`` refuses the first); listing cursors of such a number and a trace id.
_DIGITS = st.text("0123456789\u00b2\u0663-", min_size=1, max_size=30)
_NUMBERS = st.one_of(st.integers(-(1 << 70), 1 << 70).map(str), _DIGITS, st.text(max_size=30))
_LISTING_VALUES = st.one_of(
    _NUMBERS, st.tuples(_NUMBERS, st.sampled_from(["ab" * 16, "AB" * 16, "zz" * 16, "ab"])).map("-".join)
)


@pytest.mark.processes
@PROBES
@given(name=st.sampled_from(["from_ms", "to_ms", "limit", "cursor"]), value=_LISTING_VALUES)
def test_any_listing_parameter_is_a_page_or_a_400(server: Server, name: str, value: str) -> None:
    status, _, reply = server.request("GET", "/api/traces?" + urllib.parse.urlencode({name: value}))
    assert status in (200, 400), reply
    if status == 400:
        assert json.loads(reply)["error"].startswith(f"{name}: ")


# --- stream cursors and progress bookmarks ----------------------------------------------------------------


def _stream_status(server: Server, path: str, last_event_id: str | None = None) -> tuple[int, bytes]:
    """The status of a stream request and its first bytes (the connection is closed right after)."""
    conn = http.client.HTTPConnection(HOST, server.port, timeout=10)
    try:
        headers = {} if last_event_id is None else {"Last-Event-ID": last_event_id}
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.read(200) if response.status != 200 else response.read1(200)
    finally:
        conn.close()


def _first_events(server: Server, path: str, cursor: str, count: int) -> list[tuple[str, Any]]:
    stream = sse_stream(server, path, last_event_id=cursor, timeout=10)
    try:
        return [(e.event, e.json()) for _, e in zip(range(count), stream, strict=False)]
    finally:
        stream.close()


@pytest.mark.processes
@pytest.mark.parametrize("ns", [1 << 63, (1 << 64) - 1, 4_000_000_000_000_000_000])
@pytest.mark.parametrize("per_trace", [False, True])
def test_a_cursor_past_2_63_or_the_clock_gets_a_reset_then_the_snapshot(
    stored: tuple[Server, list[ReadableSpan]], ns: int, per_trace: bool
) -> None:
    server, spans = stored
    trace_id = f"{spans[0].context.trace_id:032x}"
    path = f"/api/traces/{trace_id}/stream" if per_trace else "/api/stream"
    cursor = f"{ns}-{trace_id}-{'01' * 8}-0"
    events = _first_events(server, path, cursor, 3)
    assert events[0][0] == "reset"
    assert events[0][1]["reason"].startswith("cursor from the future")
    assert [e[0] for e in events[1:]] == ["act", "observe"]  # the snapshot from the first event


@pytest.mark.processes
@pytest.mark.parametrize(
    "cursor",
    [
        "\u00b2" + "1-" + "ab" * 16 + "-" + "01" * 8 + "-0",
        "9" * 21 + "-" + "ab" * 16 + "-" + "01" * 8 + "-0",
        "1-" + "AB" * 16 + "-" + "01" * 8 + "-0",
        "1-" + "zz" * 16 + "-" + "01" * 8 + "-0",
        "1-" + "ab" * 16 + "-" + "01" * 8 + "-0-" + "9" * 5000 + "-1-" + "01" * 8 + "-0",
    ],
)
def test_malformed_stream_cursors_are_400(server: Server, cursor: str) -> None:
    for path in ("/api/stream?cursor=" + urllib.parse.quote(cursor), f"/api/traces/{'ab' * 16}/stream"):
        status, body = _stream_status(server, path, None if "cursor=" in path else cursor)
        assert status == 400, body
        field = "cursor" if "cursor=" in path else "Last-Event-ID"
        assert json.loads(body)["error"].startswith(f"{field}: not a stream cursor")


@pytest.mark.processes
@PROBES
@given(cursor=st.text(min_size=1, max_size=120).filter(lambda t: t.strip() != ""))
def test_any_stream_cursor_is_a_stream_or_a_400(
    stored: tuple[Server, list[ReadableSpan]], cursor: str
) -> None:
    server, spans = stored
    trace_id = f"{spans[0].context.trace_id:032x}"
    for path in ("/api/stream", f"/api/traces/{trace_id}/stream", f"/api/conversations/{trace_id}/stream"):
        status, _ = _stream_status(server, path + "?" + urllib.parse.urlencode({"cursor": cursor}))
        assert status in (200, 400)


@pytest.mark.processes
@PROBES
@given(
    numbers=st.lists(
        st.one_of(st.integers(0, (1 << 64) + 5), st.text("0123456789\u00b2\u0663", min_size=1, max_size=25)),
        min_size=3,
        max_size=3,
    )
)
def test_any_numbers_in_a_well_formed_cursor_are_a_stream_or_a_400(
    stored: tuple[Server, list[ReadableSpan]], numbers: list[Any]
) -> None:
    server, spans = stored
    trace_id = f"{spans[0].context.trace_id:032x}"
    ns, seen, key_ns = (str(n) for n in numbers)
    cursor = f"{ns}-{trace_id}-{'01' * 8}-1-{seen}-{key_ns}-{'01' * 8}-0"
    for path in ("/api/stream", f"/api/traces/{trace_id}/stream"):
        status, _ = _stream_status(server, path + "?" + urllib.parse.urlencode({"cursor": cursor}))
        assert status in (200, 400)


@pytest.mark.processes
@pytest.mark.parametrize(
    "since",
    ["9" * 5000, "[" * 5000, "[[[", '{"seq": ' + "9" * 30 + "}", "9223372036854775808", "-1", "\u00b2"],
)
def test_hostile_progress_bookmarks_are_400(stored: tuple[Server, list[ReadableSpan]], since: str) -> None:
    server, spans = stored
    trace_id = f"{spans[0].context.trace_id:032x}"
    status, body = _stream_status(
        server, f"/api/traces/{trace_id}/progress/stream?" + urllib.parse.urlencode({"since": since})
    )
    assert status == 400, body
    assert json.loads(body)["error"].startswith("since: not a progress bookmark")


@pytest.mark.processes
@PROBES
@given(since=st.text(min_size=1, max_size=60).filter(lambda t: t.strip() != ""))
def test_any_progress_bookmark_is_a_stream_or_a_400(
    stored: tuple[Server, list[ReadableSpan]], since: str
) -> None:
    server, spans = stored
    trace_id = f"{spans[0].context.trace_id:032x}"
    path = f"/api/traces/{trace_id}/progress/stream?" + urllib.parse.urlencode({"since": since})
    assert _stream_status(server, path)[0] in (200, 400)


# --- tokens -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # Every guess is looked at (no --auth-failures limit): what each token is answered is the probe.
    with running_server(
        tmp_path_factory.mktemp("guarded"), "--token", "s3cret", "--auth-failures", "0"
    ) as srv:
        yield srv


@pytest.mark.processes
@PROBES
@given(token=st.text(max_size=30))
def test_any_access_token_is_401_or_200_never_a_500(guarded: Server, token: str) -> None:
    status, _, _ = guarded.request("GET", "/api/traces?" + urllib.parse.urlencode({"access_token": token}))
    assert status == (200 if token == "s3cret" else 401)


@pytest.mark.processes
def test_an_access_token_outside_latin_1_is_401(guarded: Server) -> None:
    assert guarded.request("GET", "/api/traces?access_token=%E2%82%AC%F0%9F%98%80")[0] == 401


def _from(server: Server, source: str, token: str) -> tuple[int, dict[str, str]]:
    """``GET /api/traces`` with ``token`` from the loopback address ``source``."""
    conn = http.client.HTTPConnection(HOST, server.port, timeout=30, source_address=(source, 0))
    try:
        conn.request("GET", "/api/traces", headers={"Authorization": f"Bearer {token}"})
        response = conn.getresponse()
        response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


@pytest.mark.processes
def test_guesses_from_one_address_are_slowed_down_never_the_right_token_from_another(tmp_path: Path) -> None:
    args = ("--token", "s3cret", "--auth-failures", "3", "--auth-window", "600")
    with running_server(tmp_path, *args) as server:
        assert [_from(server, "127.0.0.2", "guess")[0] for _ in range(3)] == [401, 401, 401]
        status, headers = _from(server, "127.0.0.2", "s3cret")
        assert status == 429
        assert 1 <= int(headers["retry-after"]) <= 600
        assert _from(server, "127.0.0.3", "s3cret")[0] == 200
        assert _from(server, HOST, "s3cret")[0] == 200


@pytest.mark.processes
def test_guesses_over_grpc_count_against_their_address_over_both_protocols(tmp_path: Path) -> None:
    args = ("--token", "s3cret", "--auth-failures", "3", "--auth-window", "600")
    request = ExportTraceServiceRequest.FromString(otlp_body(_tool_spans(1)))
    with running_server(tmp_path, *args) as server:
        with grpc.insecure_channel(f"{HOST}:{server.grpc_port}") as channel:
            stub: Any = trace_service_pb2_grpc.TraceServiceStub(channel)  # type: ignore[no-untyped-call]

            def export(token: str) -> grpc.StatusCode:
                try:
                    stub.Export(request, metadata=[("authorization", f"Bearer {token}")], timeout=30)
                except grpc.RpcError as e:
                    return e.code()  # type: ignore[no-any-return]
                return grpc.StatusCode.OK

            assert [export("guess") for _ in range(3)] == [grpc.StatusCode.UNAUTHENTICATED] * 3
            assert export("s3cret") == grpc.StatusCode.RESOURCE_EXHAUSTED  # a guess cannot be confirmed
        assert _from(server, HOST, "s3cret")[0] == 429  # the same address over HTTP
        assert _from(server, "127.0.0.2", "s3cret")[0] == 200  # never another address
        assert server.counts()["spans"] == 0


# --- the Host header: DNS rebinding ------------------------------------------------------------------------


def _host_status(server: Server, host: str, path: str = "/api/traces") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(HOST, server.port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=True)
        conn.putheader("Host", host)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.mark.processes
@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("127.0.0.1:{port}", 200),
        ("localhost:{port}", 200),
        ("LOCALHOST.", 200),
        ("app.localhost:{port}", 200),
        ("[::1]:{port}", 200),
        ("10.1.2.3", 200),
        ("evil.example", 403),
        ("evil.example:{port}", 403),
        ("localhost.evil.example", 403),
        ("127.0.0.1.nip.io:{port}", 403),
        ("", 403),
    ],
)
def test_only_ip_addresses_and_loopback_names_are_served_by_default(
    server: Server, host: str, status: int
) -> None:
    for path in ("/api/traces", "/healthz", "/traces", "/api/stream?cursor=x"):
        got, body = _host_status(server, host.format(port=server.port), path)
        assert got == (status if status != 200 or "stream" not in path else 400), (host, path, body)
        if got == 403:
            assert "--allowed-host" in json.loads(body)["error"]


@pytest.mark.processes
def test_allowed_hosts_are_served(tmp_path: Path) -> None:
    with running_server(tmp_path, "--allowed-host", "traces.internal", "--allowed-host", "Box.LAN") as srv:
        assert _host_status(srv, "traces.internal:4318")[0] == 200
        assert _host_status(srv, "box.lan")[0] == 200
        assert _host_status(srv, "evil.example")[0] == 403
    with running_server(tmp_path, "--allowed-host", "*", db=tmp_path / "any.db") as srv:
        assert _host_status(srv, "evil.example")[0] == 200


@pytest.mark.processes
@PROBES
@given(
    name=st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,10}){1,3}", fullmatch=True).filter(
        lambda n: not n.endswith(".localhost")
    ),
    port=st.one_of(st.none(), st.integers(1, 65535)),
)
def test_any_other_name_is_403(server: Server, name: str, port: int | None) -> None:
    host = name if port is None else f"{name}:{port}"
    assert _host_status(server, host)[0] == 403


# --- headers ----------------------------------------------------------------------------------------------


@pytest.mark.processes
def test_every_response_carries_the_security_headers_and_pages_their_policy(
    stored: tuple[Server, list[ReadableSpan]],
) -> None:
    import re

    server, spans = stored
    trace_id = f"{spans[0].context.trace_id:032x}"
    for path in ("/api/traces", "/healthz", f"/traces/{trace_id}", "/traces", "/no/such/route"):
        status, headers, body = server.request("GET", path)
        assert status in (200, 404)
        lower = {k.lower(): v for k, v in headers.items()}
        assert (lower["x-frame-options"], lower["x-content-type-options"]) == ("DENY", "nosniff")
        policy = lower["content-security-policy"]
        assert policy.endswith("frame-ancestors 'none'")
        if lower["content-type"].startswith("text/html"):
            meta = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', body.decode())
            assert meta is not None
            # The page's own policy, the same in the header, plus what only a header can say.
            assert policy == meta.group(1).replace("&#x27;", "'") + "; frame-ancestors 'none'"
        else:
            assert policy == "default-src 'none'; frame-ancestors 'none'"


@pytest.mark.processes
def test_another_origin_cannot_frame_the_trace_page_in_chromium(
    stored: tuple[Server, list[ReadableSpan]], browser: Browser
) -> None:
    import http.server
    import threading

    server, spans = stored
    trace_id = f"{spans[0].context.trace_id:032x}"
    frame_html = f'<!doctype html><iframe src="{server.url}/traces/{trace_id}"></iframe>'.encode()

    class Attacker(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(frame_html)

        def log_message(self, *args: Any) -> None:
            pass

    # Another origin on this machine (another port), as a page of a local dev server would be.
    attacker = http.server.ThreadingHTTPServer((HOST, 0), Attacker)
    threading.Thread(target=attacker.serve_forever, args=(0.02,), daemon=True).start()
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"http://{HOST}:{attacker.server_address[1]}/")
        page.wait_for_load_state("load")
        (framed,) = [f for f in page.frames if f is not page.main_frame]
        # Chromium refuses to render it (an error page in its place): nothing of the trace is drawn.
        assert framed.url == "chrome-error://chromewebdata/", framed.url
        # The page itself, opened directly, renders.
        page.goto(f"{server.url}/traces/{trace_id}")
        page.wait_for_selector("body[data-ready='1']")
    finally:
        context.close()
        attacker.shutdown()
        attacker.server_close()


# --- the Host rule itself ---------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    address=st.one_of(st.ip_addresses(v=4).map(str), st.ip_addresses(v=6).map(lambda a: f"[{a}]")),
    port=st.one_of(st.none(), st.integers(0, 65535)),
)
def test_host_rule_serves_every_ip_address(address: str, port: int | None) -> None:
    from toolspan.server._http.guards import allowed_hosts, host_allowed

    header = address if port is None else f"{address}:{port}"
    assert host_allowed(header, allowed_hosts("127.0.0.1", ()))


@settings(max_examples=200, deadline=None)
@given(name=st.from_regex(r"[a-z0-9-]{1,20}(\.[a-z0-9-]{1,12}){0,3}", fullmatch=True))
def test_host_rule_serves_a_name_only_when_allowed(name: str) -> None:
    import ipaddress

    from toolspan.server._http.guards import allowed_hosts, host_allowed

    try:
        ipaddress.ip_address(name)
    except ValueError:
        pass
    else:
        return  # an address (a name of digits and dots can be one): served, as above
    loopback = name == "localhost" or name.endswith(".localhost")
    assert host_allowed(f"{name}:4318", allowed_hosts("127.0.0.1", ())) == loopback
    assert host_allowed(name.upper() + ".", allowed_hosts("127.0.0.1", [name]))
    assert host_allowed(name, allowed_hosts(name, ()))  # the --host name itself
    assert not host_allowed("x" + name + ".evil.example", allowed_hosts("0.0.0.0", [name]))
