"""AG-UI and AI SDK UI message streams of a real ``toolspan serve``, read by the real clients: the
``@ag-ui/client`` ``HttpAgent`` (Node, ``tests/node``) runs against the AG-UI agent endpoint while an
application runs and again after it ended; the ``ai`` package's ``readUIMessageStream`` reads the AI SDK
stream of the same run. Hostile tool output passes through both streams unchanged and well framed."""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolspan
from tests.bridge.views.test_frontends import check_ag_ui, check_run_structure
from tests.support.page_data import big_run, hostile_payloads, hostile_run
from tests.support.paths import APPS, REPO, TESTS
from tests.support.server import Server, SseEvent, running_server, sdk_env, sse_stream, wait_for
from toolspan.bridge._otlp_write import to_otlp_json
from toolspan.bridge.readers import from_readable_spans as read_spans_of
from toolspan.bridge.readers import read_spans
from toolspan.bridge.views import to_ag_ui, to_ai_sdk
from toolspan.cli import main

APP = APPS / "frontend_live_app.py"
NODE_DIR = TESTS / "node"
CONVERSATION = "conv-frontend"
QUESTION = "What is the weather in Paris?"
SAID = "Let me check the weather."
ANSWER = "It is 21 C and sunny in Paris."
ECHO = '</script><script>__pwn()</script> "quoted" \u2028 line\nnext'
CALLS = [
    ("call_weather", "get_weather", {"city": "Paris"}),
    ("call_station", "get_station", {"city": "Paris"}),
    ("call_echo", "echo", {"text": ECHO}),
]
NODE = shutil.which("node")


@pytest.fixture(scope="module")
def node() -> str:
    if NODE is None or not (NODE_DIR / "node_modules" / "@ag-ui" / "client").is_dir():
        pytest.skip("Node clients not installed: run `npm ci` in tests/node (scripts/test.sh does)")
    return NODE


def _node(node: str, script: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([node, str(NODE_DIR / script), *args], stdout=subprocess.PIPE, cwd=NODE_DIR)


def _result(proc: subprocess.Popen[bytes]) -> Any:
    out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 0, out
    return json.loads(out)


class Reader(threading.Thread):
    """Collects one SSE connection's events in a thread, with the time each arrived."""

    def __init__(self, server: Server, path: str) -> None:
        super().__init__(daemon=True)
        self.server = server
        self.path = path
        self.events: list[tuple[float, SseEvent]] = []

    def run(self) -> None:
        for event in sse_stream(self.server, self.path, timeout=90):
            self.events.append((time.monotonic(), event))

    def seen(self, **fields: Any) -> bool:
        return any(all(e.json().get(k) == v for k, v in fields.items()) for _, e in self.events)


def _gate(workdir: Path, name: str) -> None:
    (workdir / name).write_text("1")


def _check_ag_ui_messages(messages: list[dict[str, Any]]) -> None:
    """The messages the AG-UI client reconstructed equal the run: its question, the model's text and tool
    calls (ids, names, arguments, in order), each result or error, the answer, the thought."""
    plain = [m for m in messages if m["role"] != "reasoning"]
    assert [m["role"] for m in plain] == ["user", "assistant", "tool", "tool", "tool", "assistant"]
    user, asked, weather, station, echo, answer = plain
    assert user["content"] == QUESTION
    assert asked["content"] == SAID
    calls = [
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in asked["toolCalls"]
    ]
    assert calls == CALLS
    assert weather["toolCallId"] == "call_weather"
    assert json.loads(weather["content"]) == {"city": "Paris", "temp_c": 21, "sky": "sunny"}
    assert weather["metadata"]["toolspan"]["isError"] is False
    assert (station["toolCallId"], station["content"]) == ("call_station", "ValueError: no station in Paris")
    assert station["metadata"]["toolspan"] == {
        "state": "FAILED",
        "isError": True,
        "executionId": station["metadata"]["toolspan"]["executionId"],
    }
    assert (echo["toolCallId"], echo["content"]) == ("call_echo", ECHO)
    assert answer["content"] == ANSWER
    assert [m["content"] for m in messages if m["role"] == "reasoning"] == ["Look the weather up first."]


def _check_ai_sdk_message(message: dict[str, Any]) -> None:
    assert message["metadata"]["userMessage"] == QUESTION
    assert message["metadata"]["threadId"] == CONVERSATION
    texts = [p["text"] for p in message["parts"] if p["type"] == "text"]
    assert texts == [SAID, ANSWER]
    assert [p["text"] for p in message["parts"] if p["type"] == "reasoning"] == ["Look the weather up first."]
    tools = [p for p in message["parts"] if p["type"] == "dynamic-tool"]
    assert [(p["toolCallId"], p["toolName"], p["input"]) for p in tools] == CALLS
    assert [p["state"] for p in tools] == ["output-available", "output-error", "output-available"]
    assert tools[0]["output"] == {"city": "Paris", "temp_c": 21, "sky": "sunny"}
    assert tools[1]["errorText"] == "ValueError: no station in Paris"
    assert tools[2]["output"] == ECHO


@pytest.mark.processes
def test_real_clients_follow_a_live_run_and_its_replay(tmp_path: Path, node: str) -> None:
    with running_server(tmp_path, "--heartbeat", "0.5") as server:
        # Whole runs stream live: the agent's and the model call's records too, from the setting alone.
        env = {
            **sdk_env(server, "http/protobuf"),
            "OTEL_BLRP_SCHEDULE_DELAY": "50",
            "TOOLSPAN_PENDING_SPANS": "all",
        }
        app = subprocess.Popen([sys.executable, str(APP), str(tmp_path), CONVERSATION], env=env)
        try:
            wait_for((tmp_path / "ready").exists, "the agent to start")
            wait_for(lambda: server.get_json("/api/traces")["traces"], "the agent's pending record")
            reader = Reader(server, f"/api/conversations/{CONVERSATION}/ag-ui/stream")
            reader.start()
            live_agent = _node(node, "ag_ui_run.mjs", f"{server.url}/api/ag-ui", CONVERSATION)
            stream_url = f"{server.url}/api/conversations/{CONVERSATION}/ai-sdk/stream"
            live_sdk = _node(node, "ai_sdk_read.mjs", stream_url)
            wait_for(lambda: server.get_json("/healthz")["streams"] >= 3, "the three clients to connect")
            wait_for(lambda: reader.seen(type="RUN_STARTED"), "the run on the stream while it runs")
            question = {"type": "TEXT_MESSAGE_CONTENT", "delta": QUESTION}
            wait_for(lambda: reader.seen(**question), "the user's question while the run runs")
            _gate(tmp_path, "go")
            # The model's text arrives as deltas while the model call runs.
            wait_for(
                lambda: reader.seen(type="TEXT_MESSAGE_CONTENT", delta="the weather."), "the text deltas"
            )
            deltas = [e for _, e in reader.events if e.json()["type"] == "TEXT_MESSAGE_CONTENT"]
            assert [e.json()["delta"] for e in deltas if e.id is None] == [
                "Let me ",
                "check ",
                "the weather.",
            ]
            _gate(tmp_path, "said")
            wait_for((tmp_path / "started").exists, "the tool to start")
            # A running tool is on the stream at its start.
            wait_for(
                lambda: reader.seen(type="TOOL_CALL_START", toolCallId="call_weather"), "the running tool"
            )
            assert not reader.seen(type="TOOL_CALL_RESULT", toolCallId="call_weather")
            assert not (tmp_path / "release").exists()
            _gate(tmp_path, "release")
            assert app.wait(60) == 0
        finally:
            if app.poll() is None:
                app.kill()
        live = _result(live_agent)
        assert live["error"] is None
        _check_ag_ui_messages(live["messages"])
        sdk = _result(live_sdk)
        assert (sdk["header"], sdk["error"]) == ("v1", None)
        (message,) = sdk["messages"]
        _check_ai_sdk_message(message)
        reader.join(30)
        assert not reader.is_alive()  # the conversation's stream ended once it was complete

        # Again after it ended: a fresh client gets the recorded run, equal to what the live one built.
        replay = _result(_node(node, "ag_ui_run.mjs", f"{server.url}/api/ag-ui", CONVERSATION))
        assert replay["error"] is None
        key = lambda m: (m["role"], m["id"])  # noqa: E731
        assert sorted(replay["messages"], key=key) == sorted(live["messages"], key=key)
        _check_ag_ui_messages(replay["messages"])
        (trace,) = server.get_json("/api/traces")["traces"]
        trace_url = f"{server.url}/api/traces/{trace['trace_id']}/ai-sdk/stream"
        sdk_replay = _result(_node(node, "ai_sdk_read.mjs", trace_url))
        (replayed,) = sdk_replay["messages"]
        _check_ai_sdk_message(replayed)
        # The same parts; live, a thought can come after the text deltas that followed it (its record
        # and the deltas travel in different OTLP batches), so their order may differ there.
        parts = lambda m: sorted(json.dumps(p, sort_keys=True) for p in m["parts"])  # noqa: E731
        assert parts(replayed) == parts(message)
        assert replayed["id"] == message["id"]
        # What streamed is the recorded trace's view, event for event, but for the model's message,
        # which the relayed deltas opened and said.
        spans_path = tmp_path / "trace.json"
        spans_path.write_bytes(server.get(f"/api/traces/{trace['trace_id']}/otlp"))
        spans, _ = read_spans(str(spans_path))
        view = to_ag_ui(spans)
        check_ag_ui(view)
        check_run_structure(view)
        framed = [e.json() for _, e in reader.events if e.id is not None]
        said = next(e["messageId"] for e in view if e.get("delta") == SAID)
        unsaid = [e for e in view if e not in framed]
        assert [(e["type"], e["messageId"]) for e in unsaid] == [
            ("TEXT_MESSAGE_START", said),
            ("TEXT_MESSAGE_CONTENT", said),
        ]
        assert sorted(json.dumps(e, sort_keys=True) for e in framed) == sorted(
            json.dumps(e, sort_keys=True) for e in view if e not in unsaid
        )
        # A client that already holds the run gets nothing again.
        known = json.dumps(replay["messages"])
        again = _result(_node(node, "ag_ui_run.mjs", f"{server.url}/api/ag-ui", CONVERSATION, known))
        assert again["events"] == []


def _sse_frames(body: bytes) -> list[dict[str, Any]]:
    """Parse a whole SSE body strictly: every frame is ``id:`` and one ``data:`` line; comments skipped."""
    out = []
    for block in body.decode("utf-8").split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        lines = [line for line in lines if not line.startswith("retry:")]
        if not lines:
            continue
        data = [line for line in lines if line.startswith("data: ")]
        assert len(data) == 1, block[:200]
        assert all(line.startswith(("id: ", "data: ")) for line in lines), block[:200]
        payload = data[0][6:]
        out.append({"done": True} if payload == "[DONE]" else json.loads(payload))
    return out


@pytest.mark.processes
def test_hostile_tool_output_passes_through_both_streams(tmp_path: Path, node: str) -> None:
    # Every kind of payload, and the long one (the megabyte one would make the trace exceed the body
    # limit: it appears a dozen times in its spans; the views take it, tests/bridge/views/test_frontends.py).
    every = hostile_payloads()
    payloads = every[: len(every) // 4] + every[-1:]
    spans = hostile_run(payloads)
    body = json.dumps(to_otlp_json(spans)).encode()
    with running_server(tmp_path, "--heartbeat", "0.5") as server:
        status, _, _ = server.post_otlp(body, "application/json")
        assert status == 200
        trace_id = spans[0].trace_id
        status, headers, raw = server.request("GET", f"/api/traces/{trace_id}/ag-ui/stream")
        assert status == 200
        events = _sse_frames(raw)
        assert events == to_ag_ui(spans)
        status, headers, raw = server.request("GET", f"/api/traces/{trace_id}/ai-sdk/stream")
        assert headers["x-vercel-ai-ui-message-stream"] == "v1"
        chunks = _sse_frames(raw)
        assert chunks == [*to_ai_sdk(spans), {"done": True}]
        # The real AI SDK reads them: one message per turn, its tool error the payload, unchanged.
        sdk = _result(_node(node, "ai_sdk_read.mjs", f"{server.url}/api/traces/{trace_id}/ai-sdk/stream"))
        assert sdk["error"] is None
        errors = [p["errorText"] for m in sdk["messages"] for p in m["parts"] if p["type"] == "dynamic-tool"]
        assert errors == [f"{p}: {p}" for p in payloads]
        texts = [p["text"] for m in sdk["messages"] for p in m["parts"] if p["type"] == "text"]
        assert texts == payloads
        # And the real AG-UI client: every tool call, its arguments and its error, as the run had them.
        agui = _result(_node(node, "ag_ui_run.mjs", f"{server.url}/api/ag-ui", "conv-hostile"))
        assert agui["error"] is None
        calls = [c for m in agui["messages"] for c in m.get("toolCalls", [])]
        assert [c["function"]["name"] for c in calls] == payloads
        assert [json.loads(c["function"]["arguments"]) for c in calls] == [{p: p} for p in payloads]
        tools = [m for m in agui["messages"] if m["role"] == "tool"]
        assert [m["content"] for m in tools] == [f"{p}: {p}" for p in payloads]
        users = [m["content"] for m in agui["messages"] if m["role"] == "user"]
        assert users == payloads


@pytest.mark.processes
def test_bad_requests_get_a_precise_4xx(tmp_path: Path) -> None:
    with running_server(tmp_path) as server:
        for body, needle in (
            (b"not json", "not JSON"),
            (b"[]", "JSON object"),
            (b'{"threadId": "t"}', "RunAgentInput.runId"),
            (b'{"threadId": "t", "runId": "r", "messages": [1]}', "messages[0]"),
        ):
            status, _, raw = server.request("POST", "/api/ag-ui", body, {"Content-Type": "application/json"})
            assert status == 400
            assert needle in json.loads(raw)["error"]
        status, _, raw = server.request("GET", "/api/traces/zz/ag-ui/stream")
        assert status == 404
        status, _, raw = server.request("GET", "/api/traces/ab/ai-sdk/stream?since=x")
        assert status == 400
        paths = server.get_json("/openapi.json")["paths"]
        assert "post" in paths["/api/ag-ui"]
        for protocol in ("ag-ui", "ai-sdk"):
            assert f"/api/traces/{{trace_id}}/{protocol}/stream" in paths
            assert f"/api/conversations/{{conversation_id}}/{protocol}/stream" in paths


@pytest.mark.processes
def test_a_stream_resumes_after_its_last_event_id(tmp_path: Path) -> None:
    """``Last-Event-ID: n`` gives the events after the n-th; an AG-UI stream first sends a
    ``MESSAGES_SNAPSHOT`` of the messages before, for a client that joins late."""
    from tests.support.bridge_data import scenario

    spans = scenario()
    # The second turn left a tool open: its conversation's stream ends once idle (here after 1 s).
    with running_server(tmp_path, "--idle-timeout", "1") as server:
        status, _, _ = server.post_otlp(json.dumps(to_otlp_json(spans)).encode(), "application/json")
        assert status == 200
        view = to_ag_ui([s for s in spans if s.trace_id == spans[0].trace_id])
        path = f"/api/traces/{spans[0].trace_id}/ag-ui/stream"
        whole = list(sse_stream(server, path))
        assert [e.json() for e in whole] == view
        assert [e.id for e in whole] == [str(n) for n in range(1, len(view) + 1)]
        resumed = list(sse_stream(server, path, last_event_id="10"))
        snapshot = resumed[0]
        assert (snapshot.id, snapshot.json()["type"]) == (None, "MESSAGES_SNAPSHOT")
        messages = snapshot.json()["messages"]
        assert [m["role"] for m in messages][:2] == ["user", "reasoning"]
        check_ag_ui([snapshot.json()])
        assert [e.json() for e in resumed[1:]] == view[10:]
        assert resumed[1].id == "11"
        chunks = to_ai_sdk([s for s in spans if s.trace_id == spans[0].trace_id])
        sdk = list(sse_stream(server, f"/api/traces/{spans[0].trace_id}/ai-sdk/stream", last_event_id="5"))
        assert [e.data for e in sdk[-1:]] == ["[DONE]"]
        assert [e.json() for e in sdk[:-1]] == chunks[5:]
        # The plain views answer exactly what `toolspan convert --to ag-ui` / `--to ai-sdk` writes.
        for target, rendered in (("ag-ui", view), ("ai-sdk", chunks)):
            lines = server.get(f"/api/traces/{spans[0].trace_id}/{target}").decode().splitlines()
            assert [json.loads(line) for line in lines] == rendered
            converted = tmp_path / f"{target}.jsonl"
            source = tmp_path / "trace.json"
            source.write_bytes(server.get(f"/api/traces/{spans[0].trace_id}/otlp"))
            assert main(["convert", str(source), "--to", target, "-o", str(converted)]) == 0
            assert converted.read_text("utf-8").splitlines() == lines
        conversation = list(sse_stream(server, "/api/conversations/conv-1/ag-ui/stream"))
        assert [e.json() for e in conversation] == to_ag_ui(spans)


def _types(entries: list[Any]) -> list[tuple[str, str | None]]:
    return [(e[0]["type"], e[0].get("toolCallId")) for e in entries]


def test_settled_events_hold_back_what_open_spans_can_still_change() -> None:
    from tests.support.bridge_data import agent_attrs, span, tool_attrs
    from toolspan import semconv as sc
    from toolspan.server._streams.frontend import AG_UI, AI_SDK, settled_events

    agent = span(1, None, "invoke_agent a", 0, None, agent_attrs("a", "hi", None))
    llm = span(2, 1, "chat m", 1, None, {sc.GEN_AI_OPERATION_NAME: "chat"})
    first = span(3, 1, "execute_tool t", 5, None, tool_attrs(3, "t", {"x": 1}))
    second = span(4, 1, "execute_tool t", 6, 8, tool_attrs(4, "t", {"x": 2}, "ok"))
    # The model call is open: nothing after its start is settled (its output and the calls it asked
    # for come at its end), but the run and the user's message are.
    entries = settled_events(AG_UI, [agent, llm, first], final=False)
    assert [e[0]["type"] for e in entries] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ]
    # The model call ended: the first tool's start is settled, the second tool (after it) is not, since
    # the first, still open, may have ended before it; the run's end waits for the agent span.
    ended_llm = span(2, 1, "chat m", 1, 2, {sc.GEN_AI_OPERATION_NAME: "chat"})
    entries = settled_events(AG_UI, [agent, ended_llm, first, second], final=False)
    assert _types(entries)[4:] == [
        ("TOOL_CALL_START", "call_0000000000000003"),
        ("TOOL_CALL_ARGS", "call_0000000000000003"),
        ("TOOL_CALL_END", "call_0000000000000003"),
    ]
    # Final (idle): the open tool is sealed, the run ends interrupted.
    entries = settled_events(AG_UI, [agent, ended_llm, first, second], final=True)
    assert _types(entries)[-1] == ("RUN_ERROR", None)
    sealed = [e[0] for e in entries if e[0]["type"] == "TOOL_CALL_RESULT"]
    assert [r["metadata"]["toolspan"]["state"] for r in sealed] == ["COMPLETED", "SEALED"]
    chunks = settled_events(AI_SDK, [agent, ended_llm, first, second], final=False)
    assert [c[0]["type"] for c in chunks][-2:] == ["tool-input-start", "tool-input-available"]


def _run_records(tools_only: bool) -> tuple[list[Any], list[Any]]:
    """A run of three tools as two exporters send it: the pending records (``PendingSpanProcessor``) and
    the ended spans (the application's own processor)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolspan.exporters.pending import PendingSpanProcessor
    from toolspan.testing import installed_tracer_provider

    starts, ends = InMemorySpanExporter(), InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(PendingSpanProcessor(starts, tools_only=tools_only))
    provider.add_span_processor(SimpleSpanProcessor(ends))

    @toolspan.tool
    def work(i: int) -> int:
        return i

    with installed_tracer_provider(provider), toolspan.agent("bench", input="go", conversation_id="c1"):
        for i in range(3):
            work(i)
    provider.force_flush()
    return read_spans_of(starts.get_finished_spans()), read_spans_of(ends.get_finished_spans())


def _arrivals(first: list[Any], second: list[Any]) -> Iterator[list[Any]]:
    """Every order in which the records of two exporters can reach a server (each exporter's in order)."""
    n = len(first) + len(second)
    for picks in itertools.combinations(range(n), len(first)):
        a, b = iter(first), iter(second)
        yield [next(a) if k in picks else next(b) for k in range(n)]


@pytest.mark.parametrize("tools_only", [False, True], ids=["all", "tools-only"])
def test_a_stream_never_takes_back_an_event_whatever_order_two_exporters_records_arrive_in(
    tools_only: bool,
) -> None:
    """A tool's end may reach the server before its agent's start (the pending records have their own
    queue): the run is held back until its agent is there, never sent as a run without an agent and then
    taken back (which ends the stream). Read after every record, each stream sends the whole view once."""
    from toolspan.bridge import coalesce
    from toolspan.server._streams.frontend import AG_UI, AI_SDK, _line, _View, settled_events

    starts, ends = _run_records(tools_only)
    assert len(starts) == (3 if tools_only else 4)
    assert len(ends) == 4

    async def sent(protocol: Any, arrival: list[Any]) -> list[str]:
        view = _View(protocol, 0, frozenset(), True)
        out: list[str] = []
        for k in range(1, len(arrival) + 1):
            chunks = await view.chunks(coalesce(arrival[:k]), final=False)
            assert chunks is not None, (protocol.name, [(s.name, s.end_ns) for s in arrival[:k]])
            lines = [line for chunk in chunks for line in chunk.decode().splitlines()]
            out += [line.removeprefix("data: ") for line in lines if line.startswith("data: ")]
        return out

    orders = 0
    for arrival in _arrivals(starts, ends):
        orders += 1
        for protocol in (AG_UI, AI_SDK):
            whole = [_line(e[0]) for e in settled_events(protocol, coalesce(arrival), final=True)]
            assert sorted(asyncio.run(sent(protocol, arrival))) == sorted(whole)
    assert orders == (35 if tools_only else 70)


def test_a_resumed_stream_snapshots_only_settled_messages() -> None:
    """A client resuming after event 3 gets the messages before it as a snapshot once those are settled:
    not while its tools' agent is not stored yet (the run they are in is not known)."""
    from toolspan.bridge import coalesce
    from toolspan.server._streams.frontend import AG_UI, _View

    starts, ends = _run_records(tools_only=True)
    tools_only = coalesce([*starts, *ends[:3]])  # every tool, not its agent yet
    view = _View(AG_UI, 3, frozenset(), True)
    assert asyncio.run(view.chunks(tools_only, final=False)) == []
    chunks = asyncio.run(view.chunks(coalesce([*starts, *ends]), final=False))
    assert chunks is not None
    snapshot = json.loads(chunks[0].decode().removeprefix("data: "))
    assert snapshot["type"] == "MESSAGES_SNAPSHOT"
    assert b"id: 4\n" in chunks[1]


@pytest.mark.processes
def test_the_frontends_benchmark_runs(tmp_path: Path) -> None:
    """A tiny run of ``benchmarks/bench_frontends.py`` writes every figure (no timing asserted)."""
    out = tmp_path / "frontends.json"
    script = REPO / "benchmarks" / "bench_frontends.py"
    args = ["--calls", "50", "--repeat", "1", "--live-calls", "3", "--tool-ms", "1", "--output", str(out)]
    command = [sys.executable, str(script), *args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text("utf-8"))
    views = result["throughput"]["views"]
    assert set(views) == {"events", "progress", "ag-ui", "ai-sdk"}
    assert views["events"]["x_events_view"] == 1.0
    assert views["ag-ui"]["events"] == len(to_ag_ui(big_run(50)))
    for protocol in ("ag-ui", "ai-sdk"):
        assert result["live"][protocol]["events"] == 3
    assert "| ag-ui |" in proc.stdout
