"""Stream clients that hang up, against a real ``toolspan serve``: every stream ends with its client
(counted in ``/healthz`` ``streams``), and the server logs nothing about it."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan

import toolspan
from tests.support.server import Server, otlp_body, running_server
from toolspan.testing import capture_spans

pytestmark = pytest.mark.processes

NOISE = ("ASGI callable returned without completing response", "Task was destroyed", "Traceback")


def _tool_spans(count: int, size: int) -> list[ReadableSpan]:
    @toolspan.tool
    def step(i: int, pad: str) -> int:
        return i

    with capture_spans() as finished, toolspan.agent("planner", conversation_id="conv-hangups"):
        for i in range(count):
            step(i, "x" * size)
    return list(finished())


def _hang_up_mid_catch_up(server: Server, path: str, read: int) -> None:
    """Open a stream, read ``read`` bytes of its catch-up, hang up."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # A small receive buffer: the server's writes wait for this client (its flow control pauses).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(10)
        sock.connect(("127.0.0.1", server.port))
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        got = 0
        while got < read:
            data = sock.recv(65536)
            if not data:
                break
            got += len(data)
        time.sleep(0.01)


def test_clients_hanging_up_mid_catch_up_leave_no_stream_open(tmp_path: Path) -> None:
    spans = _tool_spans(600, 1500)
    with running_server(tmp_path, "--heartbeat", "30") as server:
        for i in range(0, len(spans), 201):
            assert server.post_otlp(otlp_body(spans[i : i + 200]))[0] == 200
        trace_id = f"{spans[0].context.trace_id:032x}"
        paths = [
            "/api/stream?from=start",
            f"/api/traces/{trace_id}/stream",
            "/api/conversations/conv-hangups/stream",
        ]
        for n in range(100):
            _hang_up_mid_catch_up(server, paths[n % 3], 1000 + 997 * n)
        # Each stream ends within moments of its client's hang-up; before, 3 in 4 ran on forever.
        deadline = time.monotonic() + 10
        while (open_streams := server.get_json("/healthz")["streams"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert open_streams == 0
    log = server.log.read_text()
    assert not [line for line in log.splitlines() if any(n in line for n in NOISE)], log[-3000:]


def test_dropped_and_hung_up_streams_and_a_shutdown_with_streams_open_log_nothing_else(
    tmp_path: Path,
) -> None:
    spans = _tool_spans(800, 8000)
    with running_server(tmp_path, "--send-timeout", "1", "--heartbeat", "0.3") as server:
        for i in range(0, len(spans), 100):
            assert server.post_otlp(otlp_body(spans[i : i + 100]))[0] == 200
        trace_id = f"{spans[0].context.trace_id:032x}"
        # One client that stops reading (dropped after --send-timeout) ...
        stuck = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck.connect(("127.0.0.1", server.port))
        stuck.sendall(b"GET /api/stream?from=start HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        # ... clients of every kind of stream hanging up ...
        paths = [
            "/api/stream",
            f"/api/traces/{trace_id}/stream",
            f"/api/traces/{trace_id}/progress/stream",
            "/api/conversations/conv-hangups/progress/stream",
            "/api/conversations/conv-hangups/stream",
        ]
        for path in paths * 4:
            _hang_up_mid_catch_up(server, path, 10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            health = server.get_json("/healthz")
            if health["dropped_stream_clients"] == 1 and health["streams"] == 0:
                break
            time.sleep(0.05)
        assert (health["dropped_stream_clients"], health["streams"]) == (1, 0)
        # ... and streams still open when the server is stopped.
        # (They do not read: those with a catch-up larger than the socket buffers are dropped too.)
        held = [socket.create_connection(("127.0.0.1", server.port)) for _ in paths]
        for sock, path in zip(held, paths, strict=True):
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        time.sleep(0.5)
        assert server.proc is not None
        server.proc.terminate()
        assert server.proc.wait(30) == 0
        for sock in [stuck, *held]:
            sock.close()
    lines = [
        line
        for line in server.log.read_text().splitlines()
        if not line.startswith(("toolspan serve: trace list", "  "))  # the banner
    ]
    assert lines == ["toolspan serve: dropped a stream client that stopped reading"], lines
