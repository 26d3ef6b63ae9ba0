"""The progress stream of a real ``toolspan serve`` (``server/_streams/progress.py``): a real application
process exporting over OTLP, a client that reads, disconnects mid-run, lives through a server restart and
resumes with its bookmark; what it received equals the trace's ``/progress`` view byte for byte. A
conversation's stream resumed into its next turn; which envelopes are settled while a trace runs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

import toolspan
from tests.support.paths import APPS
from tests.support.server import Server, SseEvent, otlp_body, running_server, sdk_env, sse_stream, wait_for
from toolspan.bridge.model import Span
from toolspan.server._streams.progress import parse_since, settled
from toolspan.testing import capture_spans

APP = APPS / "server_stream_app.py"


def _app(server: Server, workdir: Path, count: int) -> subprocess.Popen[bytes]:
    env = {**sdk_env(server, "http/protobuf"), "TOOLSPAN_PENDING_SPANS": "true"}
    return subprocess.Popen([sys.executable, str(APP), str(workdir), str(count)], env=env)


def _envelopes(stream: Iterator[SseEvent], count: int) -> list[SseEvent]:
    """The next ``count`` progress envelopes of ``stream`` (text chunks, heartbeats skipped)."""
    got: list[SseEvent] = []
    deadline = time.monotonic() + 60
    for event in stream:
        assert time.monotonic() < deadline, f"only {got} of {count} envelopes"
        assert event.event != "reset", event
        if event.event in ("progress", "control", "monitor"):
            got.append(event)
            if len(got) == count:
                break
    return got


def _kinds(events: list[SseEvent]) -> list[tuple[str | None, str]]:
    return [(e.id, e.json()["event"]["type"]) for e in events]


@pytest.mark.processes
def test_a_client_resumes_from_its_bookmark_across_a_restart_and_gets_exactly_the_view(
    tmp_path: Path,
) -> None:
    with running_server(tmp_path, "--heartbeat", "0.5") as server:
        app = _app(server, tmp_path, 4)
        try:
            rows = wait_for(lambda: server.get_json("/api/traces")["traces"], "the first pending record")
            path = f"/api/traces/{rows[0]['trace_id']}/progress/stream"
            stream = sse_stream(server, path)
            first = _envelopes(stream, 2)
            # Live: the agent at work and the running tool's start, before it returns; nothing provisional
            # (no SEALED, no done, no state back to READY).
            assert _kinds(first) == [("1", "state_changed"), ("2", "tool:start")]
            assert not (tmp_path / "returned").exists()
            (tmp_path / "release-0").write_text("1")
            first += _envelopes(stream, 3)
            stream.close()
            assert _kinds(first) == [
                ("1", "state_changed"),
                ("2", "tool:start"),
                ("3", "tool:end"),
                ("4", "tool_executed"),
                ("5", "tool:start"),
            ]
            # Disconnected: step 1 fails and step 2 starts; then the server is killed and restarted.
            (tmp_path / "release-1").write_text("1")
            wait_for((tmp_path / "started-2").exists, "step 2 to start")
            events = f"/api/traces/{rows[0]['trace_id']}/events"
            wait_for(lambda: len(server.get(events).splitlines()) == 5, "step 2's pending record")
            server.kill()
            server.start()
            bookmark = urllib.parse.quote(json.dumps(first[-1].json()["bookmark"]))
            resumed = sse_stream(server, f"{path}?since={bookmark}")
            rest = _envelopes(resumed, 5)
            assert _kinds(rest) == [
                ("6", "tool:error"),
                ("7", "tool:end"),
                ("8", "tool_executed"),
                ("9", "error"),
                ("10", "tool:start"),
            ]
            for i in (2, 3):
                (tmp_path / f"release-{i}").write_text("1")
            assert app.wait(60) == 0
            rest += _envelopes(resumed, 7)
            resumed.close()
        finally:
            app.kill()
        view = server.get(f"/api/traces/{rows[0]['trace_id']}/progress").decode().splitlines()
        received = first + rest
        assert [e.data for e in received] == view
        assert [e.id for e in received] == [str(json.loads(line)["bookmark"]["seq"]) for line in view]
        assert [e.event for e in received] == [json.loads(line)["channel"] for line in view]
        assert received[-2].json()["event"] == {
            "type": "state_changed",
            "from": "WORKING",
            "to": "READY",
            "channel": "monitor",
        }
        assert received[-1].json()["event"] == {
            "type": "done",
            "step": 4,
            "reason": "completed",
            "channel": "progress",
        }
        # Last-Event-ID resumes the same way, on a complete trace at once.
        again = sse_stream(server, path, last_event_id="10")
        assert [e.data for e in _envelopes(again, 7)] == view[10:]
        again.close()
        status, _, body = server.request("GET", f"{path}?since=yesterday")
        assert (status, json.loads(body)) == (
            400,
            {"error": "since: not a progress bookmark: 'yesterday'", "status": 400},
        )


def _turn(conversation: str, tools: int) -> list[ReadableSpan]:
    @toolspan.tool
    def look(i: int) -> int:
        return i

    with capture_spans() as finished, toolspan.agent("turn", conversation_id=conversation):
        for i in range(tools):
            look(i)
    return list(finished())


@pytest.mark.processes
def test_a_conversation_stream_resumes_into_its_next_turn(tmp_path: Path) -> None:
    first, second = _turn("conv-p", 2), _turn("conv-p", 1)
    path = "/api/conversations/conv-p/progress/stream"
    with running_server(tmp_path, "--heartbeat", "0.5") as server:
        assert server.post_otlp(otlp_body(first))[0] == 200
        stream = sse_stream(server, path)
        # The agent at work, 2 x (start, end, executed), back to READY and done: the turn is complete.
        turn_one = _envelopes(stream, 9)
        stream.close()
        assert server.post_otlp(otlp_body(second))[0] == 200
        resumed = sse_stream(server, path, last_event_id=turn_one[-1].id)
        turn_two = _envelopes(resumed, 6)
        resumed.close()
        view = server.get("/api/conversations/conv-p/progress").decode().splitlines()
    assert [e.data for e in turn_one + turn_two] == view
    assert [json.loads(line)["event"]["type"] for line in view[6:]] == [
        "tool_executed",
        "state_changed",
        "done",
        "state_changed",
        "tool:start",
        "tool:end",
        "tool_executed",
        "state_changed",
        "done",
    ]


@pytest.mark.parametrize(
    ("raw", "seq"),
    [
        ("12", 12),
        ('{"seq": 3, "timestamp": 17}', 3),
        ("0", 0),
        ("-1", None),
        ('{"seq": true}', None),
        ("x", None),
    ],
)
def test_parse_since_reads_a_seq_or_a_bookmark(raw: str, seq: int | None) -> None:
    assert parse_since(raw) == seq


def _span(span_id: str, parent: str | None, name: str, start: int, end: int | None, **attrs: Any) -> Span:
    return Span(
        trace_id="1" * 32,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_ns=start,
        end_ns=end,
        attributes=attrs,
    )


def test_settled_holds_back_sealed_ends_and_done_until_the_trace_is_complete() -> None:
    agent = _span(
        "a" * 16, None, "invoke_agent x", 1_000_000, None, **{"gen_ai.operation.name": "invoke_agent"}
    )
    tool_attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"}
    done_tool = _span("b" * 16, "a" * 16, "execute_tool t", 2_000_000, 3_000_000, **tool_attrs)
    open_tool = _span("c" * 16, "a" * 16, "execute_tool t", 4_000_000, None, **tool_attrs)
    running = [agent, done_tool, open_tool]
    kinds = [e["event"]["type"] for e in settled(running, final=False)]
    assert kinds == ["state_changed", "tool:start", "tool:end", "tool_executed", "tool:start"]
    # Idle past the timeout (final): the view as it is, SEALED end, the state back to READY and the
    # interrupted done included.
    sealed = settled(running, final=True)
    assert [e["event"]["type"] for e in sealed[5:]] == ["tool:end", "state_changed", "done"]
    assert (sealed[5]["event"]["call"]["state"], sealed[6]["event"]["to"], sealed[7]["event"]["reason"]) == (
        "SEALED",
        "READY",
        "interrupted",
    )
    # A tool still open holds back what comes after its start: its end may be exported after them.
    early = _span("d" * 16, "a" * 16, "execute_tool t", 1_500_000, None, **tool_attrs)
    held = settled([agent, early, done_tool], final=False)
    assert [(e["event"]["type"], (e["event"].get("call") or {}).get("execution_id")) for e in held] == [
        ("state_changed", None),
        ("tool:start", "exec_" + "d" * 16),
    ]
    # Complete (every span ended, the root among them): everything.
    ended = [_span("a" * 16, None, "invoke_agent x", 1_000_000, 5_000_000, **agent.attributes), done_tool]
    assert [e["event"]["type"] for e in settled(ended, final=False)] == [
        "state_changed",
        "tool:start",
        "tool:end",
        "tool_executed",
        "state_changed",
        "done",
    ]
