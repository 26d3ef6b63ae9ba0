"""Live streams of a real ``toolspan serve``: a running tool visible before it returns (pending records
through the SDK's own OTLP exporter), SEALED after the process died, resume with ``Last-Event-ID`` across
SIGKILLs, reset for a cursor older than retention, per-trace filtering, heartbeats, non-reading clients."""

from __future__ import annotations

import http.client
import json
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.error
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan

import toolspan
from tests.support.paths import APPS
from tests.support.server import (
    Server,
    SseEvent,
    otlp_body,
    running_server,
    sdk_env,
    sse_stream,
    wait_for,
)
from toolspan.testing import capture_spans

APP = APPS / "server_live_app.py"


def _app(server: Server, workdir: Path, mode: str, pending: str = "true") -> subprocess.Popen[bytes]:
    env = {**sdk_env(server, "http/protobuf"), "TOOLSPAN_PENDING_SPANS": pending}
    return subprocess.Popen([sys.executable, str(APP), str(workdir), mode], env=env)


def _while_running(workdir: Path, setting: str) -> tuple[str | None, str, int]:
    """``(root name, state, spans)`` of the one listed run while its tool runs, with ``setting``."""
    with running_server(workdir) as server:
        app = _app(server, workdir, "finish", setting)
        try:
            wait_for((workdir / "started").exists, "the tool started")
            wanted = 2 if setting == "all" else 1
            wait_for(lambda: server.counts()["spans"] == wanted, "the records")
            (row,) = server.get_json("/api/traces")["traces"]
            assert not (workdir / "returned").exists()
            return row["root_name"], row["state"], row["spans"]
        finally:
            (workdir / "release").write_text("1")
            assert app.wait(60) == 0


@pytest.mark.processes
def test_the_setting_all_streams_the_whole_run_while_it_runs(tmp_path: Path) -> None:
    """``TOOLSPAN_PENDING_SPANS=all``: the agent's record arrives when it starts, so the running run is listed
    under its agent; with ``true`` only the tool's record arrives (the run has no root yet)."""
    (tmp_path / "all").mkdir()
    (tmp_path / "true").mkdir()
    assert _while_running(tmp_path / "all", "all") == ("invoke_agent live-agent", "RUNNING", 2)
    assert _while_running(tmp_path / "true", "true") == (None, "RUNNING", 1)


@pytest.mark.processes
def test_a_running_tool_is_on_the_stream_before_it_returns(tmp_path: Path) -> None:
    with running_server(tmp_path) as server:
        stream = sse_stream(server, "/api/stream", comments=True)
        assert next(stream) == SseEvent(None, "comment", "connected")  # subscribed at the live tail
        events = (e for e in stream if e.event != "comment")
        app = _app(server, tmp_path, "finish")
        try:
            act = next(events)
            assert (act.event, (tmp_path / "returned").exists()) == ("act", False)
            doc = act.json()
            assert (doc["type"], doc["tool_name"], doc["tool_input"], doc["status"]) == (
                "act",
                "slow_tool",
                {"city": "paris"},
                "running",
            )
            rows = server.get_json("/api/traces?state=RUNNING")["traces"]
            assert [r["trace_id"] for r in rows] == [doc["trace_id"]]
            (tmp_path / "release").write_text("1")
            observe = next(events)
            assert observe.event == "observe"
            assert (observe.json()["execution_id"], observe.json()["observation"]) == (
                doc["execution_id"],
                "PARIS",
            )
            assert app.wait(60) == 0
        finally:
            app.kill()
            stream.close()
        # The pending record merged into the ended span: the views equal those of the ended spans alone.
        tree = server.get(f"/api/traces/{doc['trace_id']}/events")
        assert [json.loads(line)["type"] for line in tree.splitlines()] == ["act", "observe"]
        assert server.counts() == {"spans": 2, "traces": 1}


@pytest.mark.processes
def test_a_tool_whose_process_died_is_sealed_after_the_idle_timeout(tmp_path: Path) -> None:
    with running_server(tmp_path, "--idle-timeout", "1") as server:
        app = _app(server, tmp_path, "die")
        assert app.wait(60) == -9
        rows = wait_for(lambda: server.get_json("/api/traces")["traces"], "the pending record")
        trace_id = rows[0]["trace_id"]
        state = wait_for(
            lambda: server.get_json("/api/traces?state=SEALED")["traces"], "the trace to be SEALED"
        )
        assert [(r["trace_id"], r["state"], r["tool_calls"]) for r in state] == [(trace_id, "SEALED", 1)]
        progress = [json.loads(line) for line in server.get(f"/api/traces/{trace_id}/progress").splitlines()]
        ends = [p["event"]["call"]["state"] for p in progress if p["event"]["type"] == "tool:end"]
        assert ends == ["SEALED"]


# --- resume ----------------------------------------------------------------------------------------


def _tool_spans(count: int, size: int = 0) -> list[ReadableSpan]:
    @toolspan.tool
    def step(i: int, pad: str) -> int:
        return i

    pad = "x" * size
    with capture_spans() as finished:
        for i in range(count):
            step(i, pad)
    return list(finished())


def _take(server: Server, path: str, count: int, last: str | None = None) -> list[tuple[str, str, str]]:
    """The first ``count`` act/observe events of a fresh connection: ``(id, event, execution_id)``."""
    got: list[tuple[str, str, str]] = []
    stream = sse_stream(server, path, last_event_id=last)
    for event in stream:
        if event.event in ("act", "observe"):
            assert event.id is not None
            got.append((event.id, event.event, event.json()["execution_id"]))
            if len(got) == count:
                break
    stream.close()
    return got


def _post_until_stored(server: Server, body: bytes, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            status, _, _ = server.post_otlp(body)
            if status == 200:
                return
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.05)


@pytest.mark.processes
def test_resume_across_sigkills_receives_exactly_the_full_sequence(tmp_path: Path) -> None:
    spans = _tool_spans(5000)
    batches = [otlp_body(spans[i : i + 250]) for i in range(0, len(spans), 250)]
    server = Server(tmp_path / "resume.db", 0, -1, (), tmp_path / "log")
    server.start()
    stop = threading.Event()
    received: list[tuple[str, str, str]] = []

    pace = random.Random(11)  # the sender's own: the kills below draw from theirs in another thread

    def sender() -> None:
        for body in batches:
            _post_until_stored(server, body, stop)
            time.sleep(pace.uniform(0, 0.05))

    failures: list[BaseException] = []

    def client() -> None:
        last: str | None = None
        try:
            while len(received) < 10_000 and not stop.is_set():
                try:
                    for event in sse_stream(server, "/api/stream?from=start", last_event_id=last, timeout=5):
                        if event.event in ("act", "observe"):
                            assert event.id is not None
                            received.append((event.id, event.event, event.json()["execution_id"]))
                            last = event.id
                            if len(received) >= 10_000:
                                return
                except (OSError, http.client.HTTPException):  # the server was killed mid-stream: resume
                    time.sleep(0.05)
        except BaseException as exc:  # an assertion fails the test, in the main thread
            failures.append(exc)

    rng = random.Random(10)
    threads = [threading.Thread(target=sender), threading.Thread(target=client)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(20):
            time.sleep(rng.uniform(0.0, 0.4))
            server.kill()
            server.start()
        threads[0].join(120)
        threads[1].join(60)
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
        full = _take(server, "/api/stream?from=start", 10_000)
        server.stop()
    assert failures == []
    assert len(full) == 10_000
    assert received == full
    ids = {f"exec_{s.context.span_id:016x}" for s in spans}
    assert {e[2] for e in full} == ids


@pytest.mark.processes
def test_streams_filter_by_trace_and_conversation_and_send_heartbeats(tmp_path: Path) -> None:
    spans = _tool_spans(3)
    with running_server(tmp_path, "--heartbeat", "0.2") as server:
        assert server.post_otlp(otlp_body(spans))[0] == 200
        trace_id = f"{spans[1].context.trace_id:032x}"
        one = _take(server, f"/api/traces/{trace_id}/stream", 2)
        assert [(e[1], e[2]) for e in one] == [
            ("act", f"exec_{spans[1].context.span_id:016x}"),
            ("observe", f"exec_{spans[1].context.span_id:016x}"),
        ]
        # A trace without a conversation id is its own conversation.
        # The per-trace cursor is the commit cursor plus its data part (seen, data key): see
        # server/_streams/trace.py.
        per_trace = [("-".join(e[0].split("-")[:4]), *e[1:]) for e in one]
        assert [e[0].split("-")[4:] for e in one] == [
            ["1", str(spans[1].start_time), f"{spans[1].context.span_id:016x}", "0"],
            ["2", str(spans[1].end_time), f"{spans[1].context.span_id:016x}", "1"],
        ]
        assert _take(server, f"/api/conversations/{trace_id}/stream", 2) == per_trace
        everything = _take(server, "/api/stream?from=start", 6)
        # One commit: its events in (trace id, span id) order, each act followed by its observe.
        by_trace = sorted(spans, key=lambda s: s.context.trace_id)
        assert [(e[1], e[2]) for e in everything] == [
            (kind, f"exec_{s.context.span_id:016x}") for s in by_trace for kind in ("act", "observe")
        ]
        # Resuming after the first trace's observe gives the rest, nothing twice.
        assert _take(server, "/api/stream", 4, last=everything[1][0]) == everything[2:]
        stream = sse_stream(server, f"/api/traces/{trace_id}/stream", last_event_id=one[-1][0], comments=True)
        assert [next(stream).data for _ in range(2)] == ["connected", "heartbeat"]
        stream.close()
        status, _, body = server.request("GET", "/api/stream", headers={"Last-Event-ID": "garbage"})
        assert (status, json.loads(body)["error"]) == (400, "Last-Event-ID: not a stream cursor: 'garbage'")


@pytest.mark.processes
def test_a_cursor_older_than_retention_gets_reset_then_a_snapshot(tmp_path: Path) -> None:
    first, second = _tool_spans(1), _tool_spans(1)
    with running_server(tmp_path, "--max-spans", "1") as server:
        assert server.post_otlp(otlp_body(first))[0] == 200
        old = _take(server, "/api/stream?from=start", 2)
        assert server.post_otlp(otlp_body(second))[0] == 200
        wait_for(lambda: server.counts() == {"spans": 1, "traces": 1}, "retention to drop the first trace")
        stream = sse_stream(server, "/api/stream", last_event_id=old[0][0])
        reset = next(stream)
        assert reset.event == "reset"
        assert reset.json()["reason"] == "cursor older than the retained events; a snapshot follows"
        snapshot = [next(stream), next(stream)]
        stream.close()
        assert [(e.event, e.json()["execution_id"]) for e in snapshot] == [
            ("act", f"exec_{second[0].context.span_id:016x}"),
            ("observe", f"exec_{second[0].context.span_id:016x}"),
        ]


@pytest.mark.processes
def test_a_client_that_stops_reading_is_dropped_and_counted(tmp_path: Path) -> None:
    # More than the largest socket send buffer Linux grows to (4 MiB), so the server must block.
    spans = _tool_spans(800, size=8000)
    with running_server(tmp_path, "--send-timeout", "1", "--heartbeat", "0.5") as server:
        for i in range(0, len(spans), 100):
            assert server.post_otlp(otlp_body(spans[i : i + 100]))[0] == 200
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", server.port))
        sock.sendall(b"GET /api/stream?from=start HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        try:
            # Dropped and counted, and its stream closed (the two are not updated at the same instant).
            health = wait_for(
                lambda: (
                    (h := server.get_json("/healthz"))["dropped_stream_clients"] == 1
                    and h["streams"] == 0
                    and h
                ),
                "the server to drop the stuck client",
                timeout=60,
            )
            assert (health["dropped_stream_clients"], health["streams"]) == (1, 0)
        finally:
            sock.close()


@pytest.mark.processes
def test_a_conversation_stream_holds_the_events_of_its_traces_only(tmp_path: Path) -> None:
    @toolspan.tool
    def step(i: int) -> int:
        return i

    with capture_spans() as finished:
        for i, conversation in enumerate(("conv-a", "conv-b", "conv-a")):
            with toolspan.agent("planner", conversation_id=conversation):
                step(i)
    spans = list(finished())
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert len(tools) == 3
    with running_server(tmp_path) as server:
        # The first trace's tool arrives alone: its conversation is known only once its agent span comes.
        assert server.post_otlp(otlp_body([tools[0]]))[0] == 200
        assert server.post_otlp(otlp_body([s for s in spans if s is not tools[0]]))[0] == 200
        got = _take(server, "/api/conversations/conv-a/stream", 4)
        everything = _take(server, "/api/stream?from=start", 6)
    expected = [e for e in everything if e[2] != f"exec_{tools[1].context.span_id:016x}"]
    assert got == expected
    assert [(e[1], e[2]) for e in got] == [
        ("act", f"exec_{tools[0].context.span_id:016x}"),
        ("observe", f"exec_{tools[0].context.span_id:016x}"),
        ("act", f"exec_{tools[2].context.span_id:016x}"),
        ("observe", f"exec_{tools[2].context.span_id:016x}"),
    ]
