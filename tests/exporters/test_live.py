"""LiveEventProcessor: act at tool start, observe at tool end, text deltas, streams, durable act log."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolspan
from tests.support.paths import APPS
from toolspan import semconv as sc
from toolspan.bridge.readers import from_readable_spans, read_spans
from toolspan.bridge.views import act_event, observe_event, to_events, to_progress
from toolspan.config import Config, get_config, set_config
from toolspan.exporters.live import LiveEventProcessor, text_delta

Event = dict[str, Any]


class Rig:
    """A real SDK provider with a LiveEventProcessor and an in-memory exporter."""

    def __init__(self, processor: LiveEventProcessor) -> None:
        self.processor = processor
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource({"service.name": "toolspan-test"}))
        self.provider.add_span_processor(processor)
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        self.tracer = self.provider.get_tracer(sc.SCOPE_NAME)

    def finished(self) -> list[ReadableSpan]:
        return list(self.memory.get_finished_spans())

    def tool(self, name: str, args: dict[str, Any], body: Callable[[], Any]) -> Any:
        """Call ``body`` as the ``@toolspan.tool`` named ``name`` with keyword arguments ``args``."""
        return run_tool(self.provider, name, args, body)


def run_tool(
    provider: trace_api.TracerProvider, name: str, args: dict[str, Any], body: Callable[[], Any]
) -> Any:
    def call(**kwargs: Any) -> Any:
        """A test tool."""
        return body()

    return toolspan.tool(call, name=name, tracer_provider=provider)(**args)


@pytest.fixture
def rig() -> Iterator[Rig]:
    made = Rig(LiveEventProcessor())
    yield made
    made.provider.shutdown()


@pytest.fixture
def budget() -> Iterator[Callable[[Config], None]]:
    saved = get_config()
    yield set_config
    set_config(saved)


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def bridge_events(span: ReadableSpan) -> list[Event]:
    """What the bridge says about the same (finished) span: its act and observe events."""
    (converted,) = from_readable_spans([span])
    return [act_event(converted), observe_event(converted)]


# --- act / observe ----------------------------------------------------------------------------------


def test_act_is_emitted_before_the_tool_body_and_observe_after_it(rig: Rig) -> None:
    got: list[Event] = []
    rig.processor.subscribe(got.append)
    seen_in_body: list[list[str]] = []

    def body() -> int:
        seen_in_body.append([e["type"] for e in got])
        return 3

    with rig.tracer.start_as_current_span(
        "invoke_agent planner", attributes={sc.GEN_AI_OPERATION_NAME: "invoke_agent"}
    ):
        assert rig.tool("add", {"a": 1, "b": 2}, body) == 3
    assert seen_in_body == [["act"]]
    tool_span = next(s for s in rig.finished() if s.name == "execute_tool add")
    assert got == bridge_events(tool_span)  # exactly the bridge's events, and nothing for the agent span
    assert got[0]["tool_input"] == {"a": 1, "b": 2}
    assert got[1]["observation"] == 3


def test_failed_tool_observe_equals_the_bridge_and_the_error_still_propagates(rig: Rig) -> None:
    got: list[Event] = []
    rig.processor.subscribe(got.append)
    error = ValueError("nope")

    def body() -> None:
        raise error

    with pytest.raises(ValueError) as raised:
        rig.tool("bad", {}, body)
    assert raised.value is error
    (span,) = rig.finished()
    assert got == bridge_events(span)
    assert got[1]["is_error"] is True


def test_a_raising_callback_is_logged_and_affects_neither_others_nor_the_tool(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    first: list[Event] = []
    last: list[Event] = []
    rig.processor.subscribe(first.append)

    def broken(event: Event) -> None:
        raise RuntimeError("subscriber bug")

    rig.processor.subscribe(broken)
    rig.processor.subscribe(last.append)
    with caplog.at_level(logging.ERROR, logger="toolspan.exporters.live"):
        assert rig.tool("echo", {"x": 1}, lambda: "ok") == "ok"
    assert first == last == bridge_events(rig.finished()[0])
    logged = [str(r.exc_info[1]) for r in caplog.records if r.exc_info is not None]
    assert logged == ["subscriber bug", "subscriber bug"]  # act and observe, each logged with its traceback


def test_unsubscribe_stops_delivery(rig: Rig) -> None:
    got: list[Event] = []
    unsubscribe = rig.processor.subscribe(got.append)
    rig.tool("one", {}, lambda: 1)
    unsubscribe()
    unsubscribe()  # idempotent
    rig.tool("two", {}, lambda: 2)
    assert [e["tool_name"] for e in got] == ["one", "one"]


def test_events_from_parallel_threads_pair_up_by_execution_id(rig: Rig) -> None:
    got: list[Event] = []
    lock = threading.Lock()

    def record(event: Event) -> None:
        with lock:
            got.append(event)

    rig.processor.subscribe(record)
    threads = [threading.Thread(target=rig.tool, args=("same", {"i": i}, lambda: None)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = [e for span in rig.finished() for e in bridge_events(span)]
    assert sorted(got, key=lambda e: (e["execution_id"], e["type"])) == sorted(
        expected, key=lambda e: (e["execution_id"], e["type"])
    )
    assert len({e["execution_id"] for e in got}) == 8


def test_the_act_carries_the_models_call_id_handed_over_at_start(rig: Rig) -> None:
    got: list[Event] = []
    rig.processor.subscribe(got.append)
    seen_in_body: list[list[str]] = []

    @toolspan.tool(tracer_provider=rig.provider)
    def get_weather(city: str) -> dict[str, Any]:
        """Current weather of a city."""
        seen_in_body.append([e["call_id"] for e in got])
        return {"city": city, "temp": 22}

    with toolspan.agent("planner", input="Weather?", tracer_provider=rig.provider) as run:
        with toolspan.tool_call_id("toolu_01A"):
            run.set_output(str(get_weather("Paris")))
        with toolspan.plan("sub", tracer_provider=rig.provider):
            get_weather("Oslo")
    paris, oslo = (s for s in rig.finished() if s.name == "execute_tool get_weather")
    assert seen_in_body[0] == ["toolu_01A"]  # known at tool start, before the body runs
    assert got == bridge_events(paris) + bridge_events(oslo)  # nothing for the agent and the plan
    assert got[2]["call_id"] == "call_" + got[2]["span_id"]


def test_act_and_observe_are_linked_to_the_model_call_that_asked_as_the_views_link_them(rig: Rig) -> None:
    # The model call ends before the tools it asked for start: the processor indexes its requests, so the
    # tool spans (which carry no id of the model's) get the model's ids, as to_events gives them.
    got: list[Event] = []
    rig.processor.subscribe(got.append)
    calls = [
        {"type": "tool_call", "id": "call_paris", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"type": "tool_call", "id": "call_oslo", "name": "get_weather", "arguments": {"city": "Oslo"}},
    ]
    with rig.tracer.start_as_current_span(
        "invoke_agent planner", attributes={sc.GEN_AI_OPERATION_NAME: "invoke_agent"}
    ):
        with rig.tracer.start_as_current_span(
            "chat model",
            attributes={
                sc.GEN_AI_OPERATION_NAME: "chat",
                sc.GEN_AI_OUTPUT_MESSAGES: json.dumps([{"role": "assistant", "parts": calls}]),
            },
        ) as llm:
            llm_id = format(llm.get_span_context().span_id, "016x")
        for city in ("Oslo", "Paris"):  # not in the order asked: matched by arguments
            rig.tool("get_weather", {"city": city}, lambda: {"ok": True})
    assert [(e["type"], e["call_id"], e["requested_by"]) for e in got] == [
        ("act", "call_oslo", llm_id),
        ("observe", "call_oslo", llm_id),
        ("act", "call_paris", llm_id),
        ("observe", "call_paris", llm_id),
    ]
    assert got == to_events(from_readable_spans(rig.finished()))


async def test_async_and_async_generator_tools_emit_act_before_and_observe_after(rig: Rig) -> None:
    got: list[Event] = []
    rig.processor.subscribe(got.append)
    seen: list[list[str]] = []

    @toolspan.tool(tracer_provider=rig.provider)
    async def fetch(url: str) -> str:
        """Fetch a URL."""
        seen.append([e["type"] for e in got])
        await asyncio.sleep(0)
        return "<html>"

    @toolspan.tool(tracer_provider=rig.provider)
    async def numbers(n: int) -> Any:
        """Count."""
        for i in range(n):
            seen.append([e["type"] for e in got])
            yield i

    assert await fetch("u") == "<html>"
    assert [i async for i in numbers(2)] == [0, 1]
    assert seen == [["act"], ["act", "observe", "act"], ["act", "observe", "act"]]
    assert got == [e for span in rig.finished() for e in bridge_events(span)]


# --- async streams ----------------------------------------------------------------------------------


async def test_stream_yields_live_events_and_ends_on_shutdown(rig: Rig) -> None:
    stream = rig.processor.stream()
    await asyncio.to_thread(rig.tool, "fetch", {"url": "u"}, lambda: {"ok": True})
    rig.tool("local", {}, lambda: None)  # from the loop's own thread too
    rig.processor.shutdown()
    rig.processor.shutdown()  # idempotent
    got = [event async for event in stream]
    assert got == [e for span in rig.finished() for e in bridge_events(span)]
    assert stream.dropped == 0


async def test_slow_consumer_drops_the_oldest_events_and_counts_them(rig: Rig) -> None:
    stream = rig.processor.stream(maxsize=3)
    other = rig.processor.stream()
    for i in range(5):
        rig.tool(f"t{i}", {}, lambda: None)
    rig.processor.shutdown()
    got = [event async for event in stream]
    everything = [event async for event in other]
    assert len(everything) == 10
    assert got == everything[-3:]
    assert stream.dropped == 7
    assert other.dropped == 0
    assert rig.processor.dropped == 7


async def test_closed_stream_gets_nothing_more_and_a_late_stream_ends_at_once(rig: Rig) -> None:
    async with rig.processor.stream() as stream:
        rig.tool("a", {}, lambda: None)
        assert (await anext(stream))["type"] == "act"
    rig.tool("b", {}, lambda: None)
    rest = [event async for event in stream]
    assert [(e["type"], e["tool_name"]) for e in rest] == [("observe", "a")]  # queued before close
    rig.processor.shutdown()
    assert [event async for event in rig.processor.stream()] == []


async def test_stream_read_while_many_threads_feed_it_keeps_each_threads_order(rig: Rig) -> None:
    stream = rig.processor.stream(maxsize=10_000)

    async def consume() -> list[Event]:
        return [event async for event in stream]

    consumer = asyncio.create_task(consume())  # reads while the tools run

    def worker(n: int) -> None:
        for i in range(20):
            rig.tool(f"w{n}", {"i": i}, lambda: None)

    await asyncio.gather(*(asyncio.to_thread(worker, n) for n in range(4)))
    rig.processor.shutdown()
    got = await consumer
    assert len(got) == 160
    for n in range(4):
        mine = [e for e in got if e["tool_name"] == f"w{n}"]
        assert [e["type"] for e in mine] == ["act", "observe"] * 20
        assert [e["tool_input"] for e in mine[::2]] == [{"i": i} for i in range(20)]
        assert [e["execution_id"] for e in mine[::2]] == [e["execution_id"] for e in mine[1::2]]


# --- text deltas ----------------------------------------------------------------------------------------


def test_text_deltas_reach_subscribers_in_order_and_the_span_gets_one_aggregate(rig: Rig) -> None:
    got: list[Event] = []
    rig.processor.subscribe(got.append)

    @toolspan.tool(tracer_provider=rig.provider)
    def writer(topic: str) -> str:
        """Write about a topic."""
        for chunk in ("Hel", "lo", " wörld"):
            toolspan.text_delta(chunk)
        return "done"

    assert writer("greetings") == "done"
    (span,) = rig.finished()
    sid = f"{span.context.span_id:016x}"
    delta = {"type": "text_delta", "execution_id": "exec_" + sid}
    assert got == [
        bridge_events(span)[0],
        {**delta, "delta": "Hel"},
        {**delta, "delta": "lo"},
        {**delta, "delta": " wörld"},
        bridge_events(span)[1],
    ]
    assert span.events == ()  # never one span event per delta
    assert attrs(span) == {
        sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
        sc.GEN_AI_TOOL_NAME: "writer",
        sc.GEN_AI_TOOL_TYPE: sc.TOOL_TYPE_FUNCTION,
        sc.GEN_AI_TOOL_DESCRIPTION: "Write about a topic.",
        sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"topic": "greetings"}',
        sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_TOOL,
        sc.OI_TOOL_NAME: "writer",
        sc.OI_TOOL_DESCRIPTION: "Write about a topic.",
        sc.OI_INPUT_VALUE: '{"topic": "greetings"}',
        sc.OI_INPUT_MIME_TYPE: sc.MIME_JSON,
        sc.TOOLSPAN_EXECUTION_ID: "exec_" + sid,
        sc.TOOLSPAN_TOOL_CALL_ID: "call_" + sid,
        sc.TOOLSPAN_STREAM_TEXT: "Hello wörld",  # the one aggregated value
        sc.GEN_AI_TOOL_CALL_RESULT: '"done"',
        sc.OI_OUTPUT_VALUE: '"done"',
        sc.OI_OUTPUT_MIME_TYPE: sc.MIME_JSON,
        sc.TOOLSPAN_TOOL_STATE: sc.STATE_COMPLETED,
    }


def test_llm_span_deltas_are_streamed_without_act_or_observe(rig: Rig) -> None:
    got: list[Event] = []
    rig.processor.subscribe(got.append)
    with rig.tracer.start_as_current_span(
        "chat gpt", attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT}
    ) as span:
        text_delta("a")
        text_delta("")  # nothing to stream
        text_delta("b")
    exec_id = f"exec_{span.get_span_context().span_id:016x}"
    assert got == [
        {"type": "text_delta", "execution_id": exec_id, "delta": "a"},
        {"type": "text_delta", "execution_id": exec_id, "delta": "b"},
    ]
    (finished,) = rig.finished()
    assert attrs(finished) == {sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT, sc.TOOLSPAN_STREAM_TEXT: "ab"}


def test_aggregate_is_cut_at_the_byte_budget_and_marked(rig: Rig, budget: Callable[[Config], None]) -> None:
    budget(Config(max_attribute_bytes=64))
    got: list[Event] = []
    rig.processor.subscribe(got.append)
    chunks = ["a" * 55, "abcd", "ééé", "tail"]  # 55 + 4 + 6 bytes: the cut falls inside the third chunk
    with rig.tracer.start_as_current_span("chat m", attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT}):
        for chunk in chunks:
            text_delta(chunk)
    assert [e["delta"] for e in got] == chunks  # subscribers get everything
    (span,) = rig.finished()
    assert attrs(span) == {
        sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
        sc.TOOLSPAN_STREAM_TEXT: "a" * 55 + "abcdéé",  # 63 bytes: whole characters only
        sc.TOOLSPAN_STREAM_TRUNCATED: True,
    }


def test_no_aggregate_when_content_capture_is_off(rig: Rig, budget: Callable[[Config], None]) -> None:
    budget(Config(capture_content=False))
    got: list[Event] = []
    rig.processor.subscribe(got.append)
    with rig.tracer.start_as_current_span("chat m", attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT}):
        text_delta("secret")
    assert [e["delta"] for e in got] == ["secret"]
    assert attrs(rig.finished()[0]) == {sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT}


def test_deltas_go_only_to_processors_that_saw_the_span_start(rig: Rig) -> None:
    other = Rig(LiveEventProcessor())
    mine: list[Event] = []
    theirs: list[Event] = []
    rig.processor.subscribe(mine.append)
    other.processor.subscribe(theirs.append)
    with rig.tracer.start_as_current_span("chat m", attributes={sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT}):
        text_delta("x")
    text_delta("outside any span")  # dropped, never raises
    other.provider.shutdown()
    assert [e["delta"] for e in mine] == ["x"]
    assert theirs == []


def test_text_delta_without_any_live_processor_still_aggregates() -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("t").start_as_current_span("chat m") as span:
        text_delta("a", span=span)
        text_delta("b")
    provider.shutdown()
    assert attrs(memory.get_finished_spans()[0]) == {sc.TOOLSPAN_STREAM_TEXT: "ab"}


# --- durable act log -------------------------------------------------------------------------------------


def _durable_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _only_span(line: dict[str, Any]) -> dict[str, Any]:
    (resource_spans,) = line["resourceSpans"]
    (scope_spans,) = resource_spans["scopeSpans"]
    (span,) = scope_spans["spans"]
    return dict(span)


def test_durable_log_has_the_act_on_disk_before_the_body_runs_and_the_end_after(tmp_path: Path) -> None:
    path = tmp_path / "acts.jsonl"
    rig = Rig(LiveEventProcessor(durable_path=path))
    on_disk_in_body: list[list[dict[str, Any]]] = []
    rig.tool("save", {"k": "v"}, lambda: on_disk_in_body.append(_durable_lines(path)))
    rig.provider.shutdown()
    (lines_in_body,) = on_disk_in_body
    (started,) = lines_in_body
    assert "endTimeUnixNano" not in _only_span(started)
    assert _only_span(started)["name"] == "execute_tool save"
    assert [line["resourceSpans"] for line in _durable_lines(path)[:1]] == [started["resourceSpans"]]
    ended = _only_span(_durable_lines(path)[1])
    assert ended["spanId"] == _only_span(started)["spanId"]
    assert "endTimeUnixNano" in ended
    spans, report = read_spans([path])
    assert report.records_skipped == 0
    assert len(spans) == 2  # the started record and the ended one
    in_process = from_readable_spans(rig.finished())
    assert to_events(spans) == to_events(in_process)  # the file alone gives the same act/observe pair
    assert to_progress(spans) == to_progress(in_process)


def test_durable_path_that_cannot_be_written_fails_at_construction(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    path = blocker / "acts.jsonl"
    with pytest.raises(OSError, match=r"cannot open the durable act log .*a-file/acts\.jsonl for appending"):
        LiveEventProcessor(durable_path=path)


def test_force_flush_reports_false_after_a_write_failed_and_the_tool_is_unaffected(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # /dev/full accepts open() and fails every write with ENOSPC: a disk that filled up after start.
    processor = LiveEventProcessor(durable_path="/dev/full")
    rig = Rig(processor)
    with caplog.at_level(logging.WARNING, logger="toolspan.exporters.live"):
        assert rig.tool("save", {"k": "v"}, lambda: "saved") == "saved"
    assert processor.force_flush() is False
    # The start record and the end record each fail (and the handle, with its unwritten buffer, too).
    assert [r.getMessage() for r in caplog.records] == 2 * [
        "toolspan: cannot write the durable act log /dev/full: [Errno 28] No space left on device",
        "toolspan: cannot close /dev/full: [Errno 28] No space left on device",
    ]
    assert [s.name for s in rig.finished()] == ["execute_tool save"]
    rig.provider.shutdown()


def test_force_flush_is_true_when_every_write_succeeded(tmp_path: Path) -> None:
    processor = LiveEventProcessor(durable_path=tmp_path / "acts.jsonl")
    rig = Rig(processor)
    rig.tool("save", {"k": "v"}, lambda: None)
    assert processor.force_flush() is True
    rig.provider.shutdown()


@pytest.mark.processes
def test_the_progress_view_reports_a_tool_of_a_process_that_died_as_sealed(tmp_path: Path) -> None:
    path = tmp_path / "acts.jsonl"
    child = subprocess.run(
        [sys.executable, str(APPS / "live_crash_child.py"), str(path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert child.returncode == 1, child.stderr
    assert child.stdout.strip() == "inside the tool"  # it died inside the tool body
    spans, report = read_spans([path])
    assert report.records_skipped == 0
    agent, tool = spans  # both started, neither ended: one record each
    assert [(s.name, s.end_ns) for s in spans] == [
        ("invoke_agent cleaner", None),
        ("execute_tool delete_files", None),
    ]
    assert tool.parent_span_id == agent.span_id
    assert tool.attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS] == '{"pattern": "*.tmp"}'
    (act,) = to_events(spans)  # an act and no observe
    assert (act["type"], act["tool_name"], act["tool_input"]) == ("act", "delete_files", {"pattern": "*.tmp"})
    ends = [
        envelope["event"]
        for envelope in to_progress(spans)
        if envelope["event"]["type"] == "tool:end" and envelope["event"]["call"]["name"] == "delete_files"
    ]
    assert [end["call"]["state"] for end in ends] == [sc.STATE_SEALED]
    assert ends[0]["call"]["execution_id"] == "exec_" + tool.span_id
