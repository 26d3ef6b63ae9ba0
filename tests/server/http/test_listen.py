"""Where ``toolspan serve`` listens: a busy or forbidden port is one line on stderr naming the flag to
change (no traceback, nothing announced), for the HTTP and the gRPC port alike; run as a real process."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.server import free_port
from toolspan.server._http.listen import BUSY_RESPONSE, ListenError, banner, bind_http, check_grpc_port


@contextmanager
def busy_port() -> Iterator[int]:
    """A port some other program is listening on (as a Collector on 4317/4318 would be)."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    try:
        yield holder.getsockname()[1]
    finally:
        holder.close()


def serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "toolspan", "serve", "--db", str(tmp_path / "t.db"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.processes
@pytest.mark.parametrize(
    ("flag", "what", "advice"),
    [
        ("--port", "OTLP/HTTP and the API", "--port N"),
        ("--grpc-port", "OTLP/gRPC", "--grpc-port N (-1: no gRPC)"),
    ],
)
def test_a_busy_port_is_one_line_naming_the_flag(tmp_path: Path, flag: str, what: str, advice: str) -> None:
    with busy_port() as port:
        other = "--grpc-port" if flag == "--port" else "--port"
        done = serve(tmp_path, flag, str(port), other, str(free_port()))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        f"toolspan serve: error: port {port} on 127.0.0.1 ({what}) is already in use, by another"
        " toolspan serve or an OpenTelemetry Collector or Jaeger (OTLP's default ports are 4317 and 4318);"
        f" choose another with {advice}\n"
    )


@pytest.mark.processes
def test_an_unknown_host_is_one_line(tmp_path: Path) -> None:
    done = serve(tmp_path, "--host", "no-such-host.invalid", "--port", "0", "--grpc-port", "-1")
    assert done.returncode == 1
    assert done.stderr.startswith("toolspan serve: error: cannot resolve --host 'no-such-host.invalid': ")
    assert done.stderr.count("\n") == 1


def test_bind_http_reads_back_port_zero_and_refuses_a_busy_one() -> None:
    sock = bind_http("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        assert port > 0
        with pytest.raises(ListenError, match=rf"port {port} on 127.0.0.1 .* already in use"):
            bind_http("127.0.0.1", port)
        with pytest.raises(ListenError, match=r"--grpc-port N \(-1: no gRPC\)"):
            check_grpc_port("127.0.0.1", port)
    finally:
        sock.close()
    check_grpc_port("127.0.0.1", 0)  # any free port: nothing to check


def test_the_banner_names_the_trace_list_first() -> None:
    text = banner("http://127.0.0.1:4318", None, "toolspan.db")
    lines = text.splitlines()
    assert (
        lines[0]
        == "toolspan serve: trace list http://127.0.0.1:4318/traces (open it in a browser; / leads there)"
    )
    assert lines[1] == "  inbox http://127.0.0.1:4318/inbox (tool calls waiting for a decision)"
    assert lines[2] == "  OTLP/HTTP http://127.0.0.1:4318/v1/traces, no OTLP/gRPC"
    assert "live stream http://127.0.0.1:4318/api/stream (SSE, from the live tail on)" in lines[3]
    assert lines[4] == "  store toolspan.db"


def test_with_a_token_the_banner_says_how_to_open_the_list() -> None:
    (first, *_) = banner("http://127.0.0.1:4318", None, "toolspan.db", token=True).splitlines()
    assert first == (
        "toolspan serve: trace list http://127.0.0.1:4318/traces (open it in a browser and paste the token"
        " when it asks (kept in that tab only); / leads there)"
    )


@pytest.mark.processes
def test_an_otlp_grpc_exporter_on_the_http_port_is_named_on_the_server(tmp_path: Path) -> None:
    """The SDK's default protocol is gRPC: an exporter given the HTTP port sends HTTP/2 there. The server sees
    that mistake and names it, once for the client's retries; the same exporter on the gRPC port delivers."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExportResult

    from tests.support.server import running_server, wait_for
    from toolspan.server._http.serve import grpc_on_http_port

    def one_span() -> list:  # type: ignore[type-arg]
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        memory = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        with provider.get_tracer("t").start_as_current_span("grpc-here"):
            pass
        return list(memory.get_finished_spans())

    with running_server(tmp_path) as server:
        wrong = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{server.port}", insecure=True, timeout=3)
        assert wrong.export(one_span()) == SpanExportResult.FAILURE
        wrong.shutdown()
        log = (tmp_path / "server.log").read_text("utf-8")
        warnings = [line for line in log.splitlines() if "sent HTTP/2" in line]
        right = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{server.grpc_port}", insecure=True, timeout=10)
        assert right.export(one_span()) == SpanExportResult.SUCCESS
        right.shutdown()
        wait_for(lambda: server.counts()["spans"] == 1, "the span sent to the gRPC port")
        status = server.request("GET", "/healthz")[0]
    assert status == 200  # the server went on serving
    assert len(warnings) == 1, log  # the exporter retried: one warning for them all
    (line,) = warnings
    assert line.startswith("toolspan serve: 127.0.0.1:")
    assert line.endswith(
        f"sent HTTP/2 to the OTLP/HTTP port {server.port}: an OTLP/gRPC exporter (the SDK's default protocol)"
        f" whose spans are lost here; send gRPC to port {server.grpc_port}"
        f" (OTEL_EXPORTER_OTLP_ENDPOINT=http://HOST:{server.grpc_port}), or keep this port with"
        " OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"
    )
    assert "Invalid HTTP request" not in log
    assert "no gRPC (--grpc-port -1)" in grpc_on_http_port("h:1", 4318, None)


@pytest.mark.processes
def test_curl_speaking_http2_to_the_http_port_reads_why_it_was_refused(tmp_path: Path) -> None:
    from tests.support.server import running_server

    with (
        running_server(tmp_path, "--grpc-port", "-1") as server,
        socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock,
    ):
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes(9))
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert body.decode().startswith("127.0.0.1:")
    assert (
        "this server has no gRPC (--grpc-port -1): keep this port with OTEL_EXPORTER_OTLP_PROTOCOL"
        in body.decode()
    )


def test_the_listener_refuses_a_connection_beyond_its_cap_as_it_accepts_it() -> None:
    listener = bind_http("127.0.0.1", 0)
    listener.cap = 2
    listener.setblocking(False)
    port = listener.getsockname()[1]
    clients = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(4)]
    try:
        kept = [listener.accept()[0] for _ in range(2)]
        assert listener.open == 2
        # The third and fourth are answered 503 and closed within this accept, which then has none to give.
        with pytest.raises(BlockingIOError):
            listener.accept()
        assert listener.open == 2
        for refused in clients[2:]:
            answer = b"".join(iter(lambda sock=refused: sock.recv(4096), b""))  # up to its close
            assert answer == BUSY_RESPONSE
            assert answer.startswith(b"HTTP/1.1 503 ")
            assert b"too many open connections" in answer
        # A closed connection gives its place back, once, however often it is closed.
        kept[0].close()
        kept[0].close()
        assert listener.open == 1
        late = socket.create_connection(("127.0.0.1", port), timeout=5)
        clients.append(late)
        kept.append(listener.accept()[0])
        assert listener.open == 2
        late.sendall(b"ping")
        assert kept[-1].recv(4) == b"ping"  # a connection within the cap is the client's, untouched
        for conn in kept:
            conn.close()
        assert listener.open == 0
        # One the event loop drops without closing (it failed to make a transport of it) gives it back too.
        clients.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        dropped = listener.accept()[0]
        assert listener.open == 1
        with pytest.warns(ResourceWarning):  # Python's word for a socket collected unclosed
            del dropped  # its last reference: collected here
        assert listener.open == 0
    finally:
        for client in clients:
            client.close()
        listener.close()
