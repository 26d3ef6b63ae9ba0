"""``toolspan serve`` as a careless operator runs it, as a real process: a store that cannot serve is one
line and exit status 2 before anything listens; SIGTERM and Ctrl-C run the shutdown path (checkpointed,
no WAL left, no traceback); flags out of range are refused naming the flag; binding every address
without a token warns; half-open and slow sockets are closed so clients are not locked out; a full
disk is a retryable 503 (UNAVAILABLE on gRPC) with the real error, and the retried export is stored."""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.trace import ReadableSpan

import toolspan
from tests.support.server import HOST, Server, open_files_at_least, otlp_body, running_server, wait_for
from toolspan.cli import _main as cli
from toolspan.server import ServerConfig, SqliteStore, build_app
from toolspan.testing import capture_spans


def _tool_spans(count: int, size: int = 0) -> list[ReadableSpan]:
    @toolspan.tool
    def lookup(city: str, pad: str) -> str:
        return city.upper()

    with capture_spans() as finished, toolspan.agent("planner"):
        for i in range(count):
            lookup(f"city-{i}", "x" * size)
    return list(finished())


# --- the database at start --------------------------------------------------------------------------------


def _good_store(path: Path) -> None:
    store = SqliteStore(str(path))
    store.ingest_rows([])
    assert store.ingest(_spans_of(_tool_spans(40, 400))).accepted
    store.close()


def _spans_of(spans: list[ReadableSpan]) -> Any:
    from toolspan.bridge.readers import read_spans

    neutral, _ = read_spans(otlp_body(spans))
    return neutral


def _damaged(tmp: Path, kind: str) -> Path:
    path = tmp / f"{kind}.db"
    if kind == "garbage":
        path.write_bytes(b"this is not an SQLite database " * 100)
    elif kind == "directory":
        path.mkdir()
    elif kind == "unwritable":
        path = tmp / "no" / "such" / "directory" / "toolspan.db"
    else:
        _good_store(path)
        data = bytearray(path.read_bytes())
        if kind == "truncated":
            data = data[: len(data) // 2]
        elif kind == "zeroed-pages":
            data[4096 * 3 : 4096 * 5] = bytes(8192)
        elif kind == "read-only":
            data[18] = 3  # a file format write version SQLite does not know: it opens the file read-only
        path.write_bytes(bytes(data))
        if kind == "read-only-mode":
            path.chmod(0o444)
    return path


START_CASES = ["garbage", "truncated", "directory", "unwritable", "read-only", "zeroed-pages"]
if os.geteuid() != 0:  # file modes do not bind root
    START_CASES.append("read-only-mode")


@pytest.mark.processes
@pytest.mark.parametrize("kind", START_CASES)
def test_a_store_that_cannot_serve_is_one_line_and_exit_2(tmp_path: Path, kind: str) -> None:
    path = _damaged(tmp_path, kind)
    port = 0  # refused before anything listens
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolspan",
            "serve",
            "--db",
            str(path),
            "--port",
            str(port),
            "--grpc-port",
            "-1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = done.stderr.strip().splitlines()
    assert (done.returncode, len(lines)) == (2, 1), done.stderr
    assert lines[0].startswith(f"toolspan serve: error: cannot use the store {path}: "), lines[0]
    expected = {
        "garbage": "not an SQLite file",
        "truncated": "damaged",
        "directory": "is a directory",
        "unwritable": "does its directory exist",
        "read-only": "read-only",
        "read-only-mode": "read-only",
        "zeroed-pages": "damaged",
    }[kind]
    assert expected in lines[0]
    with socket.socket() as probe:  # nothing listened
        assert probe.connect_ex((HOST, port)) != 0


# --- shutdown ---------------------------------------------------------------------------------------------


@pytest.mark.processes
def test_sigterm_runs_the_shutdown_path_and_leaves_no_wal(tmp_path: Path) -> None:
    db = tmp_path / "toolspan.db"
    with running_server(tmp_path, "--parse-workers", "1", db=db) as server:  # SQLite's WAL
        assert server.post_otlp(otlp_body(_tool_spans(50)))[0] == 200
        assert Path(f"{db}-wal").exists()  # commits are in the WAL while it runs
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(30) == 0
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
    log = server.log.read_text()
    assert "Traceback" not in log, log
    store = SqliteStore(str(db))
    try:
        assert store.counts() == {"spans": 51, "traces": 1}
    finally:
        store.close()


@pytest.mark.processes
def test_ctrl_c_stops_the_server_and_its_parse_worker_without_tracebacks(tmp_path: Path) -> None:
    args = ("--parse-workers", "1")
    server = Server(tmp_path / "toolspan.db", 0, 0, args, tmp_path / "log", new_session=True)
    server.start()
    assert server.proc is not None
    try:
        assert server.post_otlp(otlp_body(_tool_spans(5)))[0] == 200
        os.killpg(server.proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
        assert server.proc.wait(30) == 0
    finally:
        server.kill()
    log = server.log.read_text()
    assert "Traceback" not in log, log
    assert "KeyboardInterrupt" not in log, log
    assert not Path(f"{server.db}-wal").exists() or Path(f"{server.db}-wal").stat().st_size == 0


# --- flags ------------------------------------------------------------------------------------------------

BAD_FLAGS = [
    ("--heartbeat", "0"),
    ("--heartbeat", "-1"),
    ("--heartbeat", "nan"),
    ("--send-timeout", "0"),
    ("--send-timeout", "inf"),
    ("--max-body-bytes", "-5"),
    ("--max-body-bytes", "0"),
    ("--retention", "-1"),
    ("--retention", "0"),
    ("--idle-timeout", "0"),
    ("--max-spans", "0"),
    ("--delta-buffer", "0"),
    ("--parse-workers", "-1"),
    ("--port", "70000"),
    ("--grpc-port", "-2"),
    ("--max-connections", "0"),
    ("--read-timeout", "0"),
    ("--backend-timeout", "0"),
    ("--backend-timeout", "inf"),
    ("--token", ""),
    ("--token", "two words"),
    ("--token", "t\u00f6ken"),
    ("--allowed-host", ""),
    ("--allowed-host", "http://evil.example/"),
]


def _parse_serve(capsys: pytest.CaptureFixture[str], flag: str, value: str) -> tuple[Any, list[str]]:
    """The exit status of parsing ``serve FLAG=VALUE`` (``None``: accepted) and the lines on stderr."""
    with pytest.raises(SystemExit) as exited:
        cli._parser().parse_args(["serve", f"{flag}={value}"])
    return exited.value.code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize(("flag", "value"), BAD_FLAGS)
def test_flags_out_of_range_are_refused_naming_the_flag(
    capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    status, err = _parse_serve(capsys, flag, value)
    assert status == 2
    assert err[-1].startswith(f"toolspan serve: error: argument {flag}: "), err


def _not_a_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return True
    return False


_SECONDS_FLAGS = [
    "--heartbeat",
    "--send-timeout",
    "--idle-timeout",
    "--read-timeout",
    "--retention",
    "--backend-timeout",
]
_COUNT_FLAGS = ["--max-body-bytes", "--max-spans", "--delta-buffer", "--max-connections"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    flag=st.sampled_from(_SECONDS_FLAGS + _COUNT_FLAGS),
    value=st.one_of(
        st.floats(max_value=0.0999),
        st.sampled_from([math.inf, -math.inf, math.nan]),
        st.integers(max_value=0),
        st.text(max_size=8).filter(_not_a_number),
    ),
)
def test_any_value_out_of_range_is_refused(capsys: pytest.CaptureFixture[str], flag: str, value: Any) -> None:
    if flag in _COUNT_FLAGS and isinstance(value, float) and math.isfinite(value) and value == int(value):
        value = int(value)
    status, err = _parse_serve(capsys, flag, str(value))
    assert status == 2
    assert err[-1].startswith(f"toolspan serve: error: argument {flag}: "), err


def test_sane_values_are_taken(capsys: pytest.CaptureFixture[str]) -> None:
    args = cli._parser().parse_args(
        [
            "serve",
            "--heartbeat",
            "0.5",
            "--retention",
            "3600",
            "--token",
            "s3cret-Token_1",
            "--max-body-bytes",
            "2048",
        ]
    )
    assert (args.heartbeat, args.retention, args.token, args.max_body_bytes) == (
        0.5,
        3600.0,
        "s3cret-Token_1",
        2048,
    )


def test_each_flag_sets_its_field_and_defaults_to_the_configurations_default() -> None:
    # A flag's default is its field's: ``toolspan serve`` and a server built from ``ServerConfig()`` agree.
    from toolspan.cli import _serve
    from toolspan.server import ServerConfig

    defaults = _serve._fields(cli._parser().parse_args(["serve"]))
    plain = ServerConfig()
    assert defaults == {field: getattr(plain, field) for field in defaults}
    given = _serve._fields(cli._parser().parse_args(["serve", "--backend-timeout", "2.5"]))
    assert given["backend_timeout_s"] == 2.5


def test_a_token_from_the_environment_is_checked_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("TOOLSPAN_SERVER_TOKEN", "t\u00f6ken")
    assert cli.main(["serve", "--db", str(tmp_path / "unused.db")]) == 2
    assert capsys.readouterr().err == (
        "toolspan serve: error: TOOLSPAN_SERVER_TOKEN: a token is visible ASCII without spaces"
        " (it travels in an Authorization header)\n"
    )


def _log_of(tmp: Path, *args: str) -> str:
    tmp.mkdir()
    with running_server(tmp, *args):
        pass
    return (tmp / "server.log").read_text()


@pytest.mark.processes
def test_every_address_without_a_token_warns_and_grpc_binds_the_http_host(tmp_path: Path) -> None:
    warning = "warning: listening on every address of this machine (0.0.0.0) without a token"
    assert warning in _log_of(tmp_path / "open", "--host", "0.0.0.0")
    assert "warning" not in _log_of(tmp_path / "guarded", "--host", "0.0.0.0", "--token", "s3cret")
    assert "warning" not in _log_of(tmp_path / "loopback")
    # The default host is loopback: gRPC listens there only, as HTTP does.
    with running_server(tmp_path, db=tmp_path / "c.db") as server:
        for port in (server.port, server.grpc_port):
            with socket.socket() as other, socket.socket() as same:
                assert same.connect_ex(("127.0.0.1", port)) == 0
                assert other.connect_ex(("127.0.0.2", port)) != 0


# --- connections ------------------------------------------------------------------------------------------


def _closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    return True


@pytest.mark.processes
def test_half_open_and_slow_header_sockets_are_closed_and_clients_served(tmp_path: Path) -> None:
    with running_server(tmp_path, "--read-timeout", "0.5", "--max-connections", "20") as server:
        idle = [socket.create_connection((HOST, server.port)) for _ in range(25)]
        slow = []
        for _ in range(5):  # a request line and half the headers, then nothing: slowloris
            sock = socket.create_connection((HOST, server.port))
            sock.sendall(b"GET /api/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            slow.append(sock)
        try:
            # Each is closed by the server (recv sees the end) within moments: none is left waiting.
            started = time.monotonic()
            assert all(_closed_by_server(sock) for sock in idle + slow)
            assert time.monotonic() - started < 8
            assert server.request("GET", "/api/traces")[0] == 200
        finally:
            for sock in idle + slow:
                sock.close()


@pytest.mark.processes
def test_1100_half_open_sockets_do_not_lock_clients_out(tmp_path: Path) -> None:
    with open_files_at_least(2048), running_server(tmp_path, "--read-timeout", "1") as server:
        idle = [socket.create_connection((HOST, server.port)) for _ in range(1100)]
        try:
            started = time.monotonic()
            assert all(_closed_by_server(sock) for sock in idle)
            assert time.monotonic() - started < 10
            assert server.request("GET", "/api/traces")[0] == 200
        finally:
            for sock in idle:
                sock.close()


@pytest.mark.processes
def test_over_the_connection_limit_requests_get_503_not_a_hang(tmp_path: Path) -> None:
    with running_server(tmp_path, "--max-connections", "3", "--read-timeout", "30") as server:
        held = [socket.create_connection((HOST, server.port)) for _ in range(3)]
        try:
            # Once the server holds the three connections (whenever its loop accepts them), a fourth is a
            # 503: waited for, never raced against a sleep.
            wait_for(lambda: server.request("GET", "/api/traces")[0] == 503, "a 503 once the server is full")
        finally:
            for sock in held:
                sock.close()
        assert wait_for(
            lambda: server.request("GET", "/api/traces")[0] == 200, "the server to serve again", 10
        )


@pytest.mark.processes
def test_a_body_that_stops_coming_is_408(tmp_path: Path) -> None:
    with running_server(tmp_path, "--read-timeout", "0.5") as server:
        with socket.create_connection((HOST, server.port), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b'Content-Length: 1000\r\n\r\n{"resourceSpans": ['
            )
            reply = b""
            while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
                data = sock.recv(4096)
                if not data:
                    break
                reply += data
        assert reply.startswith(b"HTTP/1.1 408 "), reply
        assert b"request timed out" in reply
        assert server.counts() == {"spans": 0, "traces": 0}


# --- a full disk --------------------------------------------------------------------------------------------


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[tuple[str, SqliteStore, int]]:
    """An in-process server (uvicorn in a thread, OTLP/gRPC beside it) over a store SQLite finds full:
    ``max_page_count`` is the size it has, as a full disk would leave it. Yields (base URL, store, gRPC
    port)."""
    import uvicorn

    from toolspan.server._ingest.grpc import start_grpc

    store = SqliteStore(str(tmp_path / "full.db"))
    starlette, app = build_app(ServerConfig(db=str(tmp_path / "full.db"), parse_workers=0), store)
    uv = uvicorn.Server(uvicorn.Config(starlette, host=HOST, port=0, log_level="critical"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    wait_for(lambda: uv.started, "uvicorn to start", 20)
    port = uv.servers[0].sockets[0].getsockname()[1]
    grpc_server, grpc_port = start_grpc(app, HOST, 0, None, 1 << 20)
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages}")
    try:
        yield f"http://{HOST}:{port}", store, grpc_port
    finally:
        grpc_server.stop(0).wait()
        uv.should_exit = True
        thread.join(10)
        store.close()


def _post(url: str, body: bytes, content_type: str) -> tuple[int, dict[str, str], bytes]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def test_a_full_disk_is_a_retryable_503_with_the_real_error_and_the_retry_is_stored(
    full_disk: tuple[str, SqliteStore, int],
) -> None:
    from google.rpc.status_pb2 import Status

    base, store, grpc_port = full_disk
    spans = _tool_spans(30, 500)
    body = otlp_body(spans)
    status, headers, reply = _post(base + "/v1/traces", body, "application/x-protobuf")
    assert (status, headers["content-type"], headers["retry-after"]) == (503, "application/x-protobuf", "5")
    refusal = Status.FromString(reply)
    assert refusal.code == 14  # UNAVAILABLE: OTLP exporters retry it
    assert "database or disk is full" in refusal.message
    assert "rollback" not in refusal.message
    status, headers, reply = _post(
        base + "/v1/traces", json.dumps({"resourceSpans": []}).encode(), "application/json"
    )
    assert status == 200  # nothing to write: served
    with grpc.insecure_channel(f"{HOST}:{grpc_port}") as channel:
        stub: Any = trace_service_pb2_grpc.TraceServiceStub(channel)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.RpcError) as refused:
            stub.Export(trace_service_pb2.ExportTraceServiceRequest.FromString(body), timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert store.counts() == {"spans": 0, "traces": 0}
    store._db.execute("PRAGMA max_page_count = 1000000")  # room again: the exporter's retry goes through
    assert _post(base + "/v1/traces", body, "application/x-protobuf")[0] == 200
    assert store.counts() == {"spans": len(spans), "traces": 1}


def test_a_store_failing_under_the_server_is_a_json_503_on_reads(
    full_disk: tuple[str, SqliteStore, int],
) -> None:
    import sqlite3
    import urllib.error
    import urllib.request

    base, store, _ = full_disk
    other = sqlite3.connect(store.path)
    other.execute("DROP TABLE traces")  # the store damaged behind the server's back
    other.commit()
    other.close()
    for path in ("/api/traces", "/healthz"):
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(base + path, timeout=10)
        assert failed.value.code == 503
        assert failed.value.headers["retry-after"] == "5"
        assert json.loads(failed.value.read()) == {
            "error": "the store cannot answer now (no such table: traces): retry",
            "status": 503,
        }
