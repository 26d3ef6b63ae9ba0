"""A trace's act/observe stream resumed across replicas (``server/_streams/trace.py``): two real ``toolspan
serve`` processes; replica A holds the trace (the load balancer routed it there), replica B reads it from
a local stand-in for Tempo answering in Tempo's ``/api/v2/traces/{id}`` format. A client reads part of the
stream from A, the next part from B with A's ``Last-Event-ID`` (while the trace grows), the rest from A
again with B's: it gets the full stream exactly once, in order. The progress stream too (its id is the
bookmark seq)."""

from __future__ import annotations

import dataclasses
import http.server
import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

import toolspan
from tests.support.server import HOST, Server, otlp_body, running_server, sse_stream
from toolspan.bridge.model import Span
from toolspan.server._rows.cursor import ACT, BOTH, OBSERVE, Cursor, row_events
from toolspan.server._streams.trace import _anchor, data_key
from toolspan.testing import capture_spans

Event = tuple[str, str, str]  # (id, event, data)


class _Tempo:
    """Answers ``/api/v2/traces/{id}`` with the spans given so far, as Tempo's JSON encoder writes them
    (``{"trace": {"resourceSpans": ...}}``: the OTLP protobuf mapped to JSON, base64 ids, enum names)."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []
        self.lock = threading.Lock()

    def body(self, trace_id: str) -> bytes | None:
        with self.lock:
            spans = [s for s in self.spans if f"{s.context.trace_id:032x}" == trace_id]
        if not spans:
            return None
        return json.dumps({"trace": MessageToDict(encode_spans(spans))}).encode()


@pytest.fixture
def tempo() -> Iterator[tuple[str, _Tempo]]:
    backend = _Tempo()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            prefix = "/api/v2/traces/"
            body = backend.body(self.path[len(prefix) :]) if self.path.startswith(prefix) else None
            self.send_response(200 if body else 404)
            payload = body or b'{"error": "trace not found"}'
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer((HOST, 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://{HOST}:{httpd.server_address[1]}", backend
    finally:
        httpd.shutdown()
        httpd.server_close()


def _trace(count: int) -> list[ReadableSpan]:
    @toolspan.tool
    def step(i: int) -> int:
        return i * 2

    with capture_spans() as finished, toolspan.agent("replica-agent"):
        for i in range(count):
            step(i)
    return list(finished())


def _read(stream: Iterator[Any], count: int) -> list[Event]:
    got: list[Event] = []
    for event in stream:
        assert event.event != "reset", event
        if event.event in ("act", "observe"):
            got.append((event.id, event.event, event.data))
            if len(got) == count:
                break
    return got


def _envelopes(stream: Iterator[Any], count: int) -> list[Event]:
    got: list[Event] = []
    for event in stream:
        assert event.event != "reset", event
        if event.event in ("progress", "monitor"):
            got.append((event.id, event.event, event.data))
            if len(got) == count:
                break
    return got


def _export(server: Server, tempo: _Tempo, spans: Sequence[ReadableSpan]) -> None:
    """What the Collector does: the spans to the replica the trace is routed to, and to Tempo."""
    for span in spans:
        assert server.post_otlp(otlp_body([span]))[0] == 200
    with tempo.lock:
        tempo.spans += spans


@pytest.mark.processes
def test_a_client_resumes_a_trace_stream_on_the_other_replica_and_back(
    tmp_path: Path, tempo: tuple[str, _Tempo]
) -> None:
    url, backend = tempo
    spans = _trace(6)  # six tools, then the agent
    trace_id = f"{spans[0].context.trace_id:032x}"
    path = f"/api/traces/{trace_id}/stream"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        running_server(tmp_path / "a", "--heartbeat", "0.5") as a,
        running_server(tmp_path / "b", "--heartbeat", "0.5", "--tempo", url) as b,
    ):
        _export(a, backend, spans[:3])
        from_a = _read(sse_stream(a, path), 3)
        from_b_stream = sse_stream(b, path, last_event_id=from_a[-1][0])
        from_b = _read(from_b_stream, 3)
        _export(a, backend, spans[3:])  # the trace goes on while the client reads from B
        from_b += _read(from_b_stream, 3)
        from_b_stream.close()
        back_on_a = _read(sse_stream(a, path, last_event_id=from_b[-1][0]), 3)
        full_a = _read(sse_stream(a, path), 12)
        full_b = _read(sse_stream(b, path), 12)
        # The progress stream's id is the bookmark seq, from the data: it resumes on B the same way.
        progress = f"/api/traces/{trace_id}/progress/stream"
        head = _envelopes(sse_stream(a, progress), 7)
        # (the agent's state_changed to WORKING, 6 x start, end, executed, back to READY, done)
        tail = _envelopes(sse_stream(b, progress, last_event_id=head[-1][0]), 14)
        view = a.get(f"/api/traces/{trace_id}/progress").decode().splitlines()
        assert b.get_json("/healthz")["spans"] == 0  # B holds nothing of it
    assert [e[2] for e in head + tail] == view
    assert [e[0] for e in head + tail] == [str(n) for n in range(1, 22)]
    received = from_a + from_b + back_on_a
    assert [e[1:] for e in received] == [e[1:] for e in full_a] == [e[1:] for e in full_b]
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    assert [(e[1], json.loads(e[2])["execution_id"]) for e in received] == [
        (kind, f"exec_{s.context.span_id:016x}") for s in tools for kind in ("act", "observe")
    ]
    # Every id says how many events the client has then and the largest data key among them.
    assert [Cursor.parse(e[0]).seen for e in received] == list(range(1, 13))  # type: ignore[union-attr]


@pytest.mark.processes
def test_a_cursor_the_other_replica_cannot_place_gets_reset_and_a_snapshot(
    tmp_path: Path, tempo: tuple[str, _Tempo]
) -> None:
    url, backend = tempo
    spans = _trace(1)
    trace_id = f"{spans[0].context.trace_id:032x}"
    with running_server(tmp_path, "--tempo", url) as b:
        with backend.lock:
            backend.spans += spans
        act = f"{spans[0].start_time}-{trace_id}-{spans[0].context.span_id:016x}-0"
        stream = sse_stream(b, f"/api/traces/{trace_id}/stream", last_event_id=act)  # no seen count
        events = [next(stream) for _ in range(3)]
        stream.close()
    assert [e.event for e in events] == ["reset", "act", "observe"]
    assert events[0].json() == {"reason": "cursor not resumable on this replica; a snapshot follows"}


def _span(span_id: str, start: int, end: int) -> Span:
    return Span("1" * 32, span_id, None, "execute_tool t", start, end)


def test_anchor_resumes_a_matching_seen_count_and_resets_a_different_one() -> None:
    first, second = _span("a" * 16, 10, 30), _span("b" * 16, 20, 25)
    # Both ended in one commit: the log is in span id order, not in data order.
    log = [(Cursor(5, "1" * 32, s.span_id, p), p, s) for s in (first, second) for p in (0, 1)]
    at_first_end = log[1][0]
    # The client saw first's act and end here: 2 events, data key (30, a.., 1).
    mine = Cursor(at_first_end.ns, "1" * 32, "a" * 16, 1, 2, (30, "a" * 16, 1))
    assert _anchor(log, mine, Cursor(0)) == (at_first_end, 2, (30, "a" * 16, 1), False)
    # From another replica, in data order, the client had first act, second act, second end, first end's
    # key was not reached: 3 events up to (25, b.., 1); here first's end comes before: not the same set.
    foreign = Cursor(999, "1" * 32, "b" * 16, 1, 3, (25, "b" * 16, 1))
    assert _anchor(log, foreign, Cursor(0)) == (Cursor(0), 0, None, True)
    assert data_key(0, second) == (20, "b" * 16, 0)


def test_anchor_places_a_cursor_of_either_form_of_a_call_stored_ended() -> None:
    call = _span("c" * 16, 10, 30)
    # Here the call is one row of the log: its act at -0, its observe at -2.
    log = [(position, phase, call) for position, phase in row_events(5, "1" * 32, call.span_id, BOTH)]
    observe = log[1][0]
    mine = dataclasses.replace(observe, seen=2, key=(30, call.span_id, OBSERVE))
    assert _anchor(log, mine, Cursor(0)) == (observe, 2, (30, call.span_id, OBSERVE), False)
    # Another replica stored its act and its observe as two rows: its cursor names the observe as phase 1.
    foreign = Cursor(999, "1" * 32, call.span_id, OBSERVE, 2, (30, call.span_id, OBSERVE))
    assert _anchor(log, foreign, Cursor(0)) == (observe, 2, (30, call.span_id, OBSERVE), False)
    after_act = Cursor(999, "1" * 32, call.span_id, ACT, 1, (10, call.span_id, ACT))
    assert _anchor(log, after_act, Cursor(0)) == (log[0][0], 1, (10, call.span_id, ACT), False)
