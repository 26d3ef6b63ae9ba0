"""Text deltas relayed by a real ``toolspan serve`` (``server/_streams/deltas.py``): a real application
streams ``toolspan.text_delta`` chunks inside a running tool; they travel as OTLP log records (HTTP and
gRPC), reach the SSE clients of all traces, of the trace's conversation and of its progress stream before
the tool ends, carry no ``id:``, and are never stored. The per-client bound, on the real hub and event
loop."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import APPS
from tests.support.server import Server, SseEvent, running_server, sdk_env, sse_stream
from toolspan import semconv as sc
from toolspan.bridge.readers._logs import LogRecord
from toolspan.server._streams.deltas import DeltaDropped, DeltaHub, split_deltas

APP = APPS / "server_stream_app.py"
TRACE = "5" * 32
SPAN = "6" * 16


def _app(server: Server, workdir: Path, protocol: str) -> subprocess.Popen[bytes]:
    env = {
        **sdk_env(server, protocol),
        "TOOLSPAN_PENDING_SPANS": "true",
        "OTEL_BLRP_SCHEDULE_DELAY": "50",
    }
    return subprocess.Popen([sys.executable, str(APP), str(workdir), "2"], env=env)


def _until(stream: Iterator[SseEvent], count: int, kinds: tuple[str, ...]) -> list[SseEvent]:
    got: list[SseEvent] = []
    deadline = time.monotonic() + 20
    for event in stream:
        assert time.monotonic() < deadline, f"only {got}"
        if event.event in kinds:
            got.append(event)
            if len(got) == count:
                break
    return got


@pytest.mark.processes
@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_deltas_reach_stream_clients_before_the_span_ends_and_are_never_stored(
    tmp_path: Path, protocol: str
) -> None:
    with running_server(tmp_path, "--heartbeat", "0.5") as server:
        everything = sse_stream(server, "/api/stream", comments=True)
        # Subscribed (at the live tail) before the application starts.
        assert next(everything).data == "connected"
        app = _app(server, tmp_path, protocol)
        try:
            seen = _until(everything, 3, ("act", "text_delta"))
            trace_id = seen[[e.event for e in seen].index("act")].json()["trace_id"]
            progress = sse_stream(server, f"/api/traces/{trace_id}/progress/stream", comments=True)
            assert [e.json()["event"]["type"] for e in _until(progress, 1, ("progress",))] == ["tool:start"]
            assert not (tmp_path / "started-1").exists()  # step 0 still runs
            (tmp_path / "release-0").write_text("1")
            live = _until(progress, 5, ("progress", "monitor", "text_chunk"))
            assert not (tmp_path / "release-1").exists()  # step 1 still runs
        finally:
            for i in (0, 1):
                (tmp_path / f"release-{i}").write_text("1")
        assert app.wait(60) == 0
        progress.close()
        everything.close()
        acts = [e.json()["execution_id"] for e in seen if e.event == "act"]
        deltas = [e for e in seen if e.event == "text_delta"]
        assert [(e.id, e.json()) for e in deltas] == [
            (None, {"type": "text_delta", "trace_id": trace_id, "execution_id": acts[0], "delta": d})
            for d in ("step 0 ", "thinking")
        ]
        chunks = [e for e in live if e.event == "text_chunk"]
        step_1 = live[[e.json()["event"]["type"] for e in live].index("tool:start")].json()
        assert [(e.id, e.json()) for e in chunks] == [
            (
                None,
                {
                    "schema_version": "1.1",
                    "channel": "progress",
                    "event": {
                        "type": "text_chunk",
                        "execution_id": step_1["event"]["call"]["execution_id"],
                        "delta": d,
                        "channel": "progress",
                    },
                    "bookmark": None,
                },
            )
            for d in ("step 1 ", "thinking")
        ]
        # Stored: the spans (the text aggregated on each), not one log record; the views hold no delta.
        health = server.get_json("/healthz")
        assert (health["log_records"], health["relayed_text_deltas"]) == (0, 4)
        events = server.get(f"/api/traces/{trace_id}/events").decode()
        assert [json.loads(line)["type"] for line in events.splitlines()] == ["act", "observe"] * 2
        assert server.query("SELECT count(*) FROM logs") == [(0,)]


def _record(trace_id: str, name: str, body: Any = "hi") -> LogRecord:
    return LogRecord(trace_id, SPAN, 1, name, {}, body)


def test_split_deltas_takes_out_only_text_delta_records() -> None:
    delta = _record(TRACE, sc.TEXT_DELTA_EVENT)
    other = _record(TRACE, "gen_ai.choice")
    assert split_deltas([other, delta, other]) == ([other, other], [delta])


def test_deltas_go_to_the_streams_of_their_trace_conversation_and_all_traces() -> None:
    async def scenario() -> list[int]:
        hub = DeltaHub(10, lambda: None)
        subscriptions = [
            hub.subscribe(trace_id=None, conversation_id=None, kind="text_delta"),
            hub.subscribe(trace_id=TRACE, conversation_id=None, kind="text_chunk"),
            hub.subscribe(trace_id=None, conversation_id="conv-a", kind="text_delta"),
            hub.subscribe(trace_id=None, conversation_id=TRACE, kind="text_delta"),
            hub.subscribe(trace_id="7" * 32, conversation_id=None, kind="text_delta"),
            hub.subscribe(trace_id=None, conversation_id="conv-b", kind="text_delta"),
        ]
        # The trace's conversation as the store knows it, or as the record says.
        hub.publish([_record(TRACE, sc.TEXT_DELTA_EVENT)], {TRACE: "conv-a"})
        tagged = LogRecord("8" * 32, SPAN, 1, sc.TEXT_DELTA_EVENT, {sc.GEN_AI_CONVERSATION_ID: "conv-b"}, "x")
        hub.publish([tagged], {})
        return [s._queue.qsize() for s in subscriptions]

    assert asyncio.run(scenario()) == [2, 1, 1, 1, 0, 1]


def test_a_client_over_its_delta_buffer_is_dropped_and_counted() -> None:
    async def scenario() -> tuple[list[bytes], int, bool, list[bytes]]:
        drops: list[int] = []
        hub = DeltaHub(2, lambda: drops.append(1))
        slow = hub.subscribe(trace_id=TRACE, conversation_id=None, kind="text_delta")
        other = hub.subscribe(trace_id="7" * 32, conversation_id=None, kind="text_delta")
        hub.publish([_record(TRACE, sc.TEXT_DELTA_EVENT, f"d{i}") for i in range(3)], {})
        got: list[bytes] = []
        try:
            while True:
                got.append(await slow.get())
        except DeltaDropped:
            pass
        hub.publish([_record("7" * 32, sc.TEXT_DELTA_EVENT, "x")], {})
        return got, len(drops), slow.dropped, [await other.get()]

    got, drops, dropped, other = asyncio.run(scenario())
    # The first delta was taken out to make room for the end mark: the client ends at once.
    assert (got, drops, dropped) == ([], 1, True)
    assert other == [
        b'event: text_delta\ndata: {"type":"text_delta","trace_id":"'
        + b"7" * 32
        + b'","execution_id":"exec_'
        + b"6" * 16
        + b'","delta":"x"}\n\n'
    ]


def test_relay_until_commit_ends_at_a_commit_of_a_local_trace_and_polls_a_remote_one() -> None:
    from toolspan.server._streams.deltas import relay_until_commit

    class Chunks:
        def __init__(self, *chunks: bytes) -> None:
            self.queue: asyncio.Queue[bytes] = asyncio.Queue()
            for chunk in chunks:
                self.queue.put_nowait(chunk)
            self.gets = 0

        async def get(self) -> bytes:
            self.gets += 1
            return await self.queue.get()

    async def collect(waiter: asyncio.Event, chunks: Any, timeout: float, local: bool) -> list[Any]:
        return [c async for c in relay_until_commit(waiter, chunks, timeout, local)]

    async def main() -> None:
        committed = asyncio.Event()
        committed.set()
        # A local trace: a commit ends the wait at once, with nothing to relay.
        assert await collect(committed, None, 5.0, True) == []
        # No commit within the time: a heartbeat is due.
        assert await collect(asyncio.Event(), None, 0.05, True) == [None]
        # Deltas are relayed as they come, until the time runs out.
        chunks = Chunks(b"a", b"b")
        assert await collect(asyncio.Event(), chunks, 0.1, True) == [b"a", b"b", None]
        # A remote trace: the store's commits say nothing of it, so an old commit neither ends the wait
        # nor makes it spin; it is polled at the timeout, without a heartbeat.
        chunks = Chunks(b"c")
        started = time.monotonic()
        assert await collect(committed, chunks, 0.2, False) == [b"c"]
        assert time.monotonic() - started >= 0.2
        assert chunks.gets == 2  # one for the delta, one pending when the time ran out: no busy loop

    asyncio.run(main())
