"""``toolspan.replay``: recorded results served without running tool bodies; divergence, time travel, sealed
calls, decode, content capture off, and replayed spans linked to the originals."""

from __future__ import annotations

import asyncio
import dataclasses
import http.server
import json
import sys
import threading
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from pydantic import BaseModel

import toolspan
from tests.support.instrumentation import hex_id
from tests.support.paths import TESTS
from toolspan.bridge.readers import from_readable_spans
from toolspan.config import Config, set_config
from toolspan.exporters.otlp_file import OtlpJsonFileExporter
from toolspan.testing import capture_spans, replay_fixture

bodies: Counter[str] = Counter()


@toolspan.tool
def send_email(to: str, body: str = "") -> dict[str, Any]:
    bodies["send_email"] += 1
    return {"id": f"msg-{bodies['send_email']}", "to": to}


@toolspan.tool
async def charge(amount: int) -> str:
    bodies["charge"] += 1
    return f"charged {amount} (#{bodies['charge']})"


@toolspan.tool
def pages(n: int) -> Any:
    bodies["pages"] += 1
    for i in range(n):
        yield {"page": i}


@toolspan.tool
def flaky(x: int) -> int:
    bodies["flaky"] += 1
    raise ValueError(f"bad x {x}")


class Weather(BaseModel):
    city: str
    temp_c: int


@toolspan.tool
def weather(city: str) -> Weather:
    bodies["weather"] += 1
    return Weather(city=city, temp_c=18 + bodies["weather"])


def agent_run() -> list[Any]:
    """The run under test: what it returns is what the agent saw from its tools."""
    seen: list[Any] = []
    with toolspan.agent("assistant", input="go"):
        with toolspan.tool_call_id("toolu_A"):
            seen.append(send_email("a@example.com", body="hi"))
        seen.append(send_email("b@example.com"))
        seen.append(send_email("a@example.com", body="hi"))  # same arguments again: the second record
        seen.append(asyncio.run(charge(5)))
        seen.append(list(pages(2)))
        try:
            flaky(3)
        except Exception as exc:
            seen.append(f"{type(exc).__name__}: {exc}")
        seen.append(weather("Paris"))
    return seen


@pytest.fixture(autouse=True)
def _reset() -> Any:
    bodies.clear()
    set_config(Config())
    yield
    set_config(None)


def record() -> tuple[list[Any], list[ReadableSpan]]:
    with capture_spans() as finished:
        seen = agent_run()
        return seen, list(finished())


def tool_spans(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    tools = [s for s in spans if s.attributes and s.attributes.get("gen_ai.operation.name") == "execute_tool"]
    return sorted(tools, key=lambda s: s.start_time or 0)


def test_replay_serves_every_recorded_result_without_running_a_body(tmp_path: Path) -> None:
    seen, spans = record()
    assert bodies == Counter(send_email=3, charge=1, pages=1, flaky=1, weather=1)
    path = tmp_path / "run.jsonl"
    exporter = OtlpJsonFileExporter(path)
    exporter.export(spans)
    exporter.shutdown()
    for source in (spans, str(path), from_readable_spans(spans)):
        bodies.clear()
        with capture_spans() as replayed, toolspan.replay(source, decode={"weather": Weather.model_validate}):
            again = agent_run()
        assert bodies == Counter()
        assert again[:5] == seen[:5]
        assert again[5] == seen[5] == "ValueError: bad x 3"  # the recorded failure, word for word
        assert again[6] == seen[6]
        assert isinstance(again[6], Weather)
        assert len(tool_spans(list(replayed()))) == 7


def test_replayed_span_attributes_and_link_in_full() -> None:
    _, spans = record()
    original = tool_spans(spans)[0]
    with capture_spans() as replayed, toolspan.replay(spans):
        agent_run()
    span = tool_spans(list(replayed()))[0]
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "send_email",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": "toolu_A",
        "gen_ai.tool.call.arguments": '{"to": "a@example.com", "body": "hi"}',
        "gen_ai.tool.call.result": '{"id": "msg-1", "to": "a@example.com"}',
        "openinference.span.kind": "TOOL",
        "tool.name": "send_email",
        "input.value": '{"to": "a@example.com", "body": "hi"}',
        "input.mime_type": "application/json",
        "output.value": '{"id": "msg-1", "to": "a@example.com"}',
        "output.mime_type": "application/json",
        "toolspan.execution_id": "exec_" + hex_id(span),
        "toolspan.tool_call_id": "toolu_A",
        "toolspan.tool.state": "COMPLETED",
        "toolspan.replay.served": True,
        "toolspan.replay.match": "call_id",
        "toolspan.replay.source.trace_id": format(original.context.trace_id, "032x"),
        "toolspan.replay.source.execution_id": "exec_" + hex_id(original),
    }
    assert [(link.context.trace_id, link.context.span_id) for link in span.links] == [
        (original.context.trace_id, original.context.span_id)
    ]
    assert span.context.trace_id != original.context.trace_id  # the replayed run is its own trace
    second = tool_spans(list(replayed()))[1]
    assert second.attributes["toolspan.replay.match"] == "arguments"


def test_same_call_twice_gets_the_recorded_results_in_order() -> None:
    _, spans = record()
    bodies.clear()
    with toolspan.replay(spans):
        first = send_email("a@example.com", body="hi")
        second = send_email("a@example.com", body="hi")
    assert (first, second) == ({"id": "msg-1", "to": "a@example.com"}, {"id": "msg-3", "to": "a@example.com"})
    assert bodies == Counter()


def test_model_call_id_beats_argument_order() -> None:
    with capture_spans() as finished:
        with toolspan.tool_call_id("toolu_1"):
            send_email("x@example.com")
        with toolspan.tool_call_id("toolu_2"):
            send_email("x@example.com")
        spans = list(finished())
    with toolspan.replay(spans), capture_spans():
        with toolspan.tool_call_id("toolu_2"):
            second = send_email("x@example.com")
        with toolspan.tool_call_id("toolu_1"):
            first = send_email("x@example.com")
    assert (first["id"], second["id"]) == ("msg-1", "msg-2")


def test_divergence_raises_with_both_calls_side_by_side() -> None:
    _, spans = record()
    bodies.clear()
    with (
        toolspan.replay(spans),
        toolspan.tool_call_id("toolu_A"),
        pytest.raises(toolspan.ReplayDivergence) as info,
    ):
        send_email("evil@example.com", body="hi")
    assert str(info.value) == (
        "replay diverged at call 1:\n"
        '  recorded: send_email({"body":"hi","to":"a@example.com"}) [exec_'
        + hex_id(tool_spans(spans)[0])
        + "]\n"
        '  actual:   send_email({"body":"hi","to":"evil@example.com"})'
    )
    assert bodies == Counter()


def test_on_divergence_live_runs_everything_for_real_from_there_on() -> None:
    _, spans = record()
    bodies.clear()
    with toolspan.replay(spans, on_divergence="live"):
        assert send_email("new@example.com")["id"] == "msg-1"  # diverged: ran for real
        assert send_email("b@example.com")["id"] == "msg-2"  # matches a record, but the run went live
    assert bodies == Counter(send_email=2)


def test_until_serves_before_runs_from_and_keeps_committed_results() -> None:
    _, spans = record()
    tools = tool_spans(spans)
    cut = "exec_" + hex_id(tools[1])  # the second send_email
    bodies.clear()
    with toolspan.replay(spans, until=cut):
        with toolspan.tool_call_id("toolu_A"):
            assert send_email("a@example.com", body="hi")["id"] == "msg-1"  # before the cut: served
        assert send_email("b@example.com")["id"] == "msg-1"  # the cut: runs for real (first real run)
        assert send_email("a@example.com", body="hi")["id"] == "msg-3"  # committed later: still served
        assert send_email("z@example.com")["id"] == "msg-2"  # nothing matches after the cut: live
    assert bodies == Counter(send_email=2)
    with pytest.raises(toolspan.ReplayError, match=r"^until=99: the recording has 7 tool call\(s\)$"):
        toolspan.replay(spans, until=99)
    with pytest.raises(
        toolspan.ReplayError, match=r"^until='exec_nope': no tool call with that execution_id"
    ):
        toolspan.replay(spans, until="exec_nope")
    with toolspan.replay(spans, until=1):
        assert send_email("b@example.com")["id"] == "msg-2"  # matches record 2, past the cut and committed
        with toolspan.tool_call_id("toolu_A"):
            assert send_email("a@example.com", body="hi")["id"] == "msg-3"  # the cut itself: real


def test_sealed_call_is_never_rerun_silently() -> None:
    _, spans = record()
    bridge = from_readable_spans(spans)
    first = min((s for s in bridge if s.name == "execute_tool send_email"), key=lambda s: s.start_ns)
    sealed = [dataclasses.replace(s, end_ns=None) if s is first else s for s in bridge]
    bodies.clear()
    with (
        toolspan.replay(sealed),
        toolspan.tool_call_id("toolu_A"),
        pytest.raises(toolspan.ReplaySealed, match=r"^tool 'send_email' \(exec_[0-9a-f]{16}\) started but"),
    ):
        send_email("a@example.com", body="hi")
    assert bodies == Counter()
    asked: list[str] = []
    approve = lambda r: asked.append(r.execution_id) or True  # noqa: E731
    with toolspan.replay(sealed, approve_sealed=approve), toolspan.tool_call_id("toolu_A"):
        assert send_email("a@example.com", body="hi")["id"] == "msg-1"
    assert asked == ["exec_" + first.span_id]
    assert bodies == Counter(send_email=1)


def test_a_recording_without_content_is_refused_up_front() -> None:
    set_config(Config(capture_content=False))
    _, spans = record()
    with pytest.raises(toolspan.ReplayError) as info:
        toolspan.replay(spans)
    assert str(info.value) == (
        "the recording was made with content capture off: tool 'send_email'"
        f" (exec_{hex_id(tool_spans(spans)[0])}) has no recorded arguments or result; it cannot be replayed"
    )


def test_truncated_results_are_refused_when_reached() -> None:
    set_config(Config(max_attribute_bytes=64))

    @toolspan.tool
    def big() -> str:
        return "x" * 1000

    with capture_spans() as finished:
        big()
        spans = list(finished())
    with (
        toolspan.replay(spans),
        pytest.raises(toolspan.ReplayError, match=r"was cut or redacted when recorded"),
    ):
        big()


def test_replay_works_with_tracing_off_and_as_a_decorator() -> None:
    _, spans = record()
    bodies.clear()

    @toolspan.replay(spans)
    def again() -> list[Any]:
        return agent_run()

    result = again()  # no tracer provider installed here
    assert bodies == Counter()
    assert result[0] == {"id": "msg-1", "to": "a@example.com"}


def test_trace_id_picks_one_trace_of_several() -> None:
    _, one = record()
    _, two = record()
    trace_id = format(two[0].context.trace_id, "032x")
    with toolspan.replay(one + two, trace_id=trace_id), toolspan.tool_call_id("toolu_A"):
        assert send_email("a@example.com", body="hi")["id"] == "msg-4"
    with toolspan.replay(one + two), toolspan.tool_call_id("toolu_A"):
        assert send_email("a@example.com", body="hi")["id"] == "msg-1"  # every trace, in start order
    missing = r"^trace 1 is not in the recording \(it holds [0-9a-f]{32}\)$"
    with pytest.raises(toolspan.ReplayError, match=missing):
        toolspan.replay(one, trace_id="1")


def test_parallel_tool_calls_in_threads_are_served() -> None:
    calls = [
        {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "send_email", "arguments": json.dumps({"to": f"{i}@x"})},
        }
        for i in range(4)
    ]
    with capture_spans() as finished:
        recorded = toolspan.run_tool_calls(calls, [send_email])
        spans = list(finished())
    bodies.clear()
    with capture_spans(), toolspan.replay(spans):
        replayed = toolspan.run_tool_calls(calls, [send_email])
    assert replayed == recorded
    assert bodies == Counter()


recorded_run = replay_fixture(
    TESTS / "golden" / "replay_run.jsonl",
    decode={"weather": Weather.model_validate},
)


def test_pytest_fixture_replays_a_committed_recording(recorded_run: Any) -> None:
    seen = agent_run()
    assert bodies == Counter()
    assert seen[0] == {"id": "msg-1", "to": "a@example.com"}
    assert seen[6] == Weather(city="Paris", temp_c=19)
    assert isinstance(recorded_run, toolspan.replay)


def test_one_replay_entered_by_two_tasks_gives_each_its_own_session() -> None:
    from toolspan._decisions import chain

    _, spans = record()
    bodies.clear()
    player = toolspan.replay(spans)

    async def task() -> list[str]:
        with player:
            await asyncio.sleep(0)  # the other task enters in between
            first = send_email("a@example.com", body="hi")["id"]
            await asyncio.sleep(0)
            return [first, send_email("a@example.com", body="hi")["id"]]

    async def both() -> list[list[str]]:
        return list(await asyncio.gather(task(), task()))

    assert asyncio.run(both()) == [["msg-1", "msg-3"], ["msg-1", "msg-3"]]
    assert bodies == Counter()
    assert chain.ACTIVE[0] == 0


class _Orders(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_POST(self) -> None:
        type(self).hits += 1
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'{"order": ' + body + b"}")

    def log_message(self, *args: Any) -> None:
        pass


_CONNECTS: list[int] = [0]
_WATCHING: list[bool] = [False]


def _audit(event: str, args: Any) -> None:
    if _WATCHING[0] and event == "socket.connect":
        _CONNECTS[0] += 1


sys.addaudithook(_audit)


def test_thousand_steps_three_hundred_side_effects_replayed_with_no_body_and_no_socket() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Orders)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/orders"

    @toolspan.tool
    def place_order(n: int) -> Any:
        bodies["place_order"] += 1
        with urllib.request.urlopen(urllib.request.Request(url, data=str(n).encode()), timeout=5) as resp:
            return json.loads(resp.read())

    @toolspan.tool
    def compute(n: int) -> int:
        bodies["compute"] += 1
        return n * n

    def run() -> list[Any]:
        out = []
        with toolspan.agent("shop"):
            for i in range(1000):
                out.append(place_order(i) if i % 10 in (0, 3, 6) else compute(i))
        return out

    try:
        with capture_spans() as finished:
            recorded = run()
            spans = list(finished())
        assert (bodies, _Orders.hits) == (Counter(place_order=300, compute=700), 300)
        bodies.clear()
        _WATCHING[0] = True
        try:
            with capture_spans() as replayed, toolspan.replay(spans):
                again = run()
        finally:
            _WATCHING[0] = False
        assert again == recorded
        assert (bodies, _Orders.hits, _CONNECTS[0]) == (Counter(), 300, 0)
        served = [
            s for s in replayed() if s.attributes and s.attributes.get("toolspan.replay.served") is True
        ]
        assert len(served) == 1000
    finally:
        server.shutdown()
        server.server_close()


def _scrubbed(line: str) -> str:
    """An exported line with recorded stack traces replaced: they name the files of the machine that ran."""
    doc = json.loads(line)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for event in span.get("events", []):
                    for attr in event.get("attributes", []):
                        if attr["key"] == "exception.stacktrace":
                            attr["value"] = {"stringValue": "<stack trace>"}
    return json.dumps(doc, separators=(",", ":")) + "\n"


if __name__ == "__main__":  # regenerate tests/golden/replay_run.jsonl
    _, spans = record()
    out = TESTS / "golden" / "replay_run.jsonl"
    out.unlink(missing_ok=True)
    exp = OtlpJsonFileExporter(out)
    exp.export(spans)
    exp.shutdown()
    out.write_text("".join(_scrubbed(line) for line in out.read_text().splitlines()))
    sys.stdout.write(f"wrote {out.name}\n")
