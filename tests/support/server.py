"""A real ``toolspan serve`` subprocess on free 127.0.0.1 ports for the server tests, and HTTP helpers."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

HOST = "127.0.0.1"
READY_TIMEOUT_S = 20.0
# Set by conftest with ``--store postgres``: a fresh PostgreSQL database's URL for each server started
# without a store of its own (``running_server``).
DEFAULT_STORE: Callable[[], str] | None = None


def wait_for(predicate: Any, what: str, timeout: float = 30.0) -> Any:
    """The first truthy value of ``predicate()``, polled every 50 ms; fails the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports (each socket stays bound until all are picked, so no two coincide)."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in socks:
            sock.bind((HOST, 0))
        return [int(sock.getsockname()[1]) for sock in socks]
    finally:
        for sock in socks:
            sock.close()


@dataclass
class Server:
    db: Path | str  # an SQLite file, or a PostgreSQL URL
    port: int
    grpc_port: int
    args: Sequence[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    # Its own process group (a terminal's Ctrl-C reaches the server and its parse workers together).
    new_session: bool = False
    # The server's limit on open files, soft and hard (``None``: this process's).
    open_files: int | None = None
    # A command the server runs under (``valgrind ...``), its environment (``None``: this process's) and how
    # long it may take to answer (longer under such a command).
    launcher: Sequence[str] = ()
    env: dict[str, str] | None = None
    ready_timeout_s: float = READY_TIMEOUT_S

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> None:
        cmd = [
            *self.launcher,
            sys.executable,
            "-m",
            "toolspan",
            "serve",
            "--db",
            str(self.db),
            "--port",
            str(self.port),
            "--grpc-port",
            str(self.grpc_port),
            *self.args,
        ]
        with open(self.log, "ab") as log:
            start = log.tell()
            self.proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=log,
                env=self.env,
                start_new_session=self.new_session,
                # (Only setrlimit runs between fork and exec: safe with the test's threads.)
                preexec_fn=None if self.open_files is None else _limit_files(self.open_files),  # noqa: PLW1509
            )
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"toolspan serve exited: {self.log.read_text()}")
            if not self._read_back_ports(start):
                time.sleep(0.05)
                continue
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        self.kill()  # never left running behind a failed test
        raise RuntimeError(f"toolspan serve did not start: {self.log.read_text()}")

    def _read_back_ports(self, start: int) -> bool:
        """Ports given as 0 are bound by the server: read them back from its banner (then kept, so a
        restart binds the same ones). False until the banner is there."""
        if self.port != 0 and self.grpc_port != 0:
            return True
        with open(self.log, "rb") as log:
            log.seek(start)
            text = log.read().decode("utf-8", "replace")
        http = re.search(r"OTLP/HTTP http://[^\s/]+:(\d+)/v1/traces", text)
        if http is None:
            return False
        if self.grpc_port == 0:
            grpc = re.search(r"OTLP/gRPC \S+:(\d+)", text)
            if grpc is None and "no OTLP/gRPC" not in text:
                return False
            self.grpc_port = -1 if grpc is None else int(grpc.group(1))  # (-1: --grpc-port -1 in the args)
        self.port = int(http.group(1))
        return True

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        req = urllib.request.Request(
            self.url + path, data=body, method=method, headers={**self.headers, **(headers or {})}
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def get(self, path: str) -> bytes:
        status, _, body = self.request("GET", path)
        assert status == 200, (path, status, body)
        return body

    def get_json(self, path: str) -> Any:
        return json.loads(self.get(path))

    def post_otlp(self, body: bytes, content_type: str = "application/x-protobuf", **headers: str) -> Any:
        return self.request("POST", "/v1/traces", body, {"Content-Type": content_type, **headers})

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """The rows of ``sql`` read straight from the server's store (SQLite or PostgreSQL)."""
        if isinstance(self.db, str) and self.db.startswith("postgresql://"):
            import psycopg

            with psycopg.connect(self.db) as conn:
                return [tuple(r) for r in conn.execute(sql).fetchall()]
        import sqlite3

        with contextlib.closing(sqlite3.connect(self.db)) as db:
            return [tuple(r) for r in db.execute(sql).fetchall()]

    def counts(self) -> dict[str, int]:
        doc = self.get_json("/healthz")
        return {"spans": doc["spans"], "traces": doc["traces"]}


def _limit_files(count: int) -> Callable[[], None]:
    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))

    return limit


@contextmanager
def open_files_at_least(count: int) -> Iterator[None]:
    """This test process may hold ``count`` descriptors (its soft limit raised up to the hard one), for a
    test that opens many connections itself; the limit is restored after."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < count:
        wanted = count if hard == resource.RLIM_INFINITY else min(count, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@contextmanager
def running_server(tmp: Path, *args: str, db: Path | str | None = None) -> Iterator[Server]:
    # Ports 0: the server binds them and its banner says which (read back by ``Server.start``).
    if db is None:
        db = tmp / "toolspan.db" if DEFAULT_STORE is None else DEFAULT_STORE()
    server = Server(db, 0, 0, args, tmp / "server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def otlp_body(spans: Sequence[ReadableSpan]) -> bytes:
    """The OTLP protobuf request the SDK's own exporter sends for ``spans``."""
    return bytes(encode_spans(spans).SerializeToString())


def sdk_env(server: Server, protocol: str) -> dict[str, str]:
    """Environment for a child process exporting to ``server`` with the SDK's OTLP exporter."""
    endpoint = server.url if protocol == "http/protobuf" else f"http://{HOST}:{server.grpc_port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL=protocol,
        OTEL_BSP_SCHEDULE_DELAY="50",
    )
    return env


@dataclass(frozen=True)
class SseEvent:
    id: str | None
    event: str
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


def sse_stream(
    server: Server,
    path: str,
    *,
    last_event_id: str | None = None,
    timeout: float = 30.0,
    comments: bool = False,
) -> Iterator[SseEvent]:
    """The events of one SSE connection (comments as ``event="comment"`` when asked); ends when the server
    closes the connection, raises ``OSError`` when it dies."""
    import http.client

    conn = http.client.HTTPConnection(HOST, server.port, timeout=timeout)
    headers = dict(server.headers)
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        assert response.status == 200, (response.status, response.read())
        fields: dict[str, str] = {}
        data: list[str] = []
        while True:
            raw = response.fp.readline()
            if not raw:
                return
            line = raw.decode("utf-8").rstrip("\r\n")
            if not line:
                if data or "event" in fields:
                    yield SseEvent(fields.get("id"), fields.get("event", "message"), "\n".join(data))
                fields, data = {}, []
                continue
            if line.startswith(":"):
                if comments:
                    yield SseEvent(None, "comment", line[1:].strip())
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            else:
                fields[name] = value
    finally:
        conn.close()
