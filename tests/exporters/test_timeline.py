"""TimelineJsonExporter: act/observe JSON Lines and per-trace tree/timeline files, written as the run goes."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from opentelemetry import trace as trace_api
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

import toolspan
from toolspan import semconv as sc
from toolspan.bridge.readers import from_readable_spans
from toolspan.bridge.views import act_event, load_schema, observe_event, to_timelines, to_tree
from toolspan.exporters.timeline import TimelineJsonExporter


def run_tool(
    provider: trace_api.TracerProvider, name: str, args: dict[str, Any], body: Callable[[], Any]
) -> Any:
    """Call ``body`` as the ``@toolspan.tool`` named ``name`` with keyword arguments ``args``."""

    def call(**kwargs: Any) -> Any:
        """A test tool."""
        return body()

    return toolspan.tool(call, name=name, tracer_provider=provider)(**args)


class Rig:
    def __init__(self, directory: Path, **limits: int) -> None:
        self.exporter = TimelineJsonExporter(directory, **limits)
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource({"service.name": "toolspan-test"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(sc.SCOPE_NAME)
        self.directory = directory

    def finished(self, trace_id: str | None = None) -> list[ReadableSpan]:
        spans = list(self.memory.get_finished_spans())
        return [s for s in spans if trace_id is None or f"{s.context.trace_id:032x}" == trace_id]

    def agent(self, name: str, body: Callable[[], Any], context: Any = None) -> str:
        """Run ``body`` in the ``toolspan.agent`` ``name`` (asked "hi", answering "bye"); its trace id."""
        with toolspan.agent(name, input="hi", context=context, tracer_provider=self.provider) as run:
            body()
            run.set_output("bye")
        return f"{run.span.get_span_context().trace_id:032x}"

    def tool(self, name: str, args: dict[str, Any], body: Callable[[], Any] = lambda: None) -> Any:
        return run_tool(self.provider, name, args, body)

    def events(self) -> list[dict[str, Any]]:
        path = self.directory / "events.jsonl"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]

    def events_text(self) -> str:
        return (self.directory / "events.jsonl").read_text(encoding="utf-8")

    def tree(self, trace_id: str) -> Any:
        return json.loads((self.directory / f"{trace_id}.tree.json").read_text(encoding="utf-8"))

    def timeline(self, trace_id: str) -> Any:
        return json.loads((self.directory / f"{trace_id}.timeline.json").read_text(encoding="utf-8"))


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def expected_files(spans: list[ReadableSpan]) -> tuple[Any, Any]:
    converted = from_readable_spans(spans)
    (timeline,) = to_timelines(converted)
    return as_json(to_tree(converted)), as_json(timeline)


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    made = Rig(tmp_path / "out")
    yield made
    made.provider.shutdown()


def _fail() -> None:
    raise KeyError("missing")


def test_act_observe_lines_as_tools_end_and_files_when_the_root_ends(rig: Rig) -> None:
    seen: dict[str, Any] = {}

    def body() -> None:
        rig.tool("search", {"q": "x"}, lambda: ["r1"])
        with pytest.raises(KeyError):
            rig.tool("lookup", {"id": 7}, _fail)
        seen["events_before_root_end"] = rig.events()
        seen["files_before_root_end"] = sorted(p.name for p in rig.directory.iterdir())

    trace_id = rig.agent("planner", body)
    search, lookup = (from_readable_spans([s])[0] for s in rig.finished()[:2])
    expected_events = as_json(
        [act_event(search), observe_event(search), act_event(lookup), observe_event(lookup)]
    )
    assert seen["events_before_root_end"] == expected_events
    assert seen["files_before_root_end"] == ["events.jsonl"]
    assert rig.events() == expected_events  # the agent span adds no lines
    tree, timeline = expected_files(rig.finished())
    assert rig.tree(trace_id) == tree
    assert rig.timeline(trace_id) == timeline
    assert sorted(p.name for p in rig.directory.iterdir()) == sorted(
        [f"{trace_id}.timeline.json", f"{trace_id}.tree.json", "events.jsonl"]
    )
    validate = {
        name: Draft202012Validator(load_schema(name)).validate for name in ("events", "tree", "timeline")
    }
    for event in rig.events():
        validate["events"](event)
    validate["tree"](rig.tree(trace_id))
    validate["timeline"](rig.timeline(trace_id))
    assert [item["type"] for item in timeline["timeline"]] == [
        "user_message",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "assistant_message",
    ]


def test_a_span_with_a_remote_parent_is_a_local_root(rig: Rig) -> None:
    remote = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    trace_id = rig.agent("worker", lambda: rig.tool("t", {}), set_span_in_context(NonRecordingSpan(remote)))
    assert trace_id == f"{0xABC:032x}"
    tree, timeline = expected_files(rig.finished())
    assert rig.tree(trace_id) == tree
    assert rig.timeline(trace_id) == timeline


def test_a_span_arriving_after_its_root_ended_rewrites_the_files(rig: Rig) -> None:
    holder: list[trace_api.Span] = []

    def body() -> None:
        holder.append(rig.tracer.start_span("plan late", attributes={sc.TOOLSPAN_PLAN_NAME: "late"}))

    trace_id = rig.agent("a", body)
    first_tree = rig.tree(trace_id)
    holder[0].end()
    tree, timeline = expected_files(rig.finished())
    assert rig.tree(trace_id) == tree != first_tree
    assert rig.timeline(trace_id) == timeline


def test_full_buffer_writes_the_oldest_unfinished_trace_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rig = Rig(tmp_path / "out", max_traces=2)
    roots = [
        rig.tracer.start_span(f"invoke_agent a{i}", attributes={sc.GEN_AI_OPERATION_NAME: "invoke_agent"})
        for i in range(3)
    ]
    trace_ids = [f"{r.get_span_context().trace_id:032x}" for r in roots]
    with caplog.at_level(logging.WARNING, logger="toolspan.exporters.timeline"):
        for root in roots:
            with trace_api.use_span(root, end_on_exit=False):
                rig.tool("t", {})
    assert rig.exporter.evicted_traces == 1
    assert f"writing trace {trace_ids[0]} before its root span ended" in caplog.text
    assert sorted(p.name for p in rig.directory.glob("*.tree.json")) == [f"{trace_ids[0]}.tree.json"]
    assert rig.tree(trace_ids[0]) == expected_files(rig.finished(trace_ids[0]))[0]
    for root in roots:
        root.end()
    rig.provider.shutdown()
    for trace_id in trace_ids[1:]:
        assert rig.tree(trace_id) == expected_files(rig.finished(trace_id))[0]


def test_span_bound_forgets_written_traces_first(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rig = Rig(tmp_path / "out", max_spans=3)
    done = rig.agent("finished", lambda: rig.tool("t", {}))  # 2 spans, files written
    open_root = rig.tracer.start_span(
        "invoke_agent open", attributes={sc.GEN_AI_OPERATION_NAME: "invoke_agent"}
    )
    with (
        caplog.at_level(logging.WARNING, logger="toolspan.exporters.timeline"),
        trace_api.use_span(open_root, end_on_exit=False),
    ):
        rig.tool("u", {})
        rig.tool("v", {})  # 4 spans buffered: the written trace goes, silently
    assert rig.exporter.evicted_traces == 0
    assert caplog.text == ""
    open_root.end()
    open_id = f"{open_root.get_span_context().trace_id:032x}"
    assert rig.tree(open_id) == expected_files(rig.finished(open_id))[0]
    assert rig.tree(done) == expected_files(rig.finished(done))[0]
    rig.provider.shutdown()


def test_spans_of_a_forgotten_trace_go_to_a_new_part_and_never_overwrite_its_files(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "out", max_traces=1)
    late: list[trace_api.Span] = []
    first = rig.agent(
        "a", lambda: late.append(rig.tracer.start_span("plan late", attributes={sc.TOOLSPAN_PLAN_NAME: "l"}))
    )
    written = rig.tree(first)
    second = rig.agent("b", lambda: rig.tool("t", {}))  # pushes the finished first trace out
    late[0].end()  # the first trace comes back with one span: a new part, not an overwrite
    rig.provider.shutdown()
    assert rig.tree(first) == written == expected_files(rig.finished(first)[:1])[0]
    (late_span,) = from_readable_spans(rig.finished(first)[1:])
    part2 = json.loads((rig.directory / f"{first}.part2.tree.json").read_text(encoding="utf-8"))
    assert part2 == as_json(to_tree([late_span]))
    assert rig.tree(second) == expected_files(rig.finished(second))[0]
    assert rig.exporter.evicted_traces == 0  # only finished traces were pushed out


def test_shutdown_writes_unfinished_traces_is_idempotent_and_then_refuses(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    root = rig.tracer.start_span(
        "invoke_agent never_ends", attributes={sc.GEN_AI_OPERATION_NAME: "invoke_agent"}
    )
    with trace_api.use_span(root, end_on_exit=False):
        rig.tool("t", {"n": 1})
    trace_id = f"{root.get_span_context().trace_id:032x}"
    assert not (rig.directory / f"{trace_id}.tree.json").exists()
    rig.exporter.shutdown()
    rig.exporter.shutdown()
    tree, timeline = expected_files(rig.finished())
    assert rig.tree(trace_id) == tree
    assert rig.timeline(trace_id) == timeline
    # the root never ended: the tool hangs under the tree's root as an orphan
    assert tree["execution_tree"]["children"][0]["orphan"] is True
    with caplog.at_level(logging.WARNING, logger="toolspan.exporters.timeline"):
        assert rig.exporter.export(rig.finished()) is SpanExportResult.FAILURE
    assert "already shut down" in caplog.text
    assert rig.exporter.force_flush() is True


def test_unwritable_directory_is_logged_and_returns_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "file").write_text("x")
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("t").start_as_current_span(
        "invoke_agent a", attributes={sc.GEN_AI_OPERATION_NAME: "invoke_agent"}
    ):
        run_tool(provider, "t", {}, lambda: None)
    exporter = TimelineJsonExporter(tmp_path / "file" / "out")
    with caplog.at_level(logging.WARNING, logger="toolspan.exporters.timeline"):
        assert exporter.export(memory.get_finished_spans()) is SpanExportResult.FAILURE
    assert "cannot write" in caplog.text
    exporter.shutdown()
    provider.shutdown()


def test_concurrent_traces_from_many_threads(rig: Rig) -> None:
    trace_ids: list[str] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        for i in range(5):
            args = {"n": n, "i": i}

            def two_tools(args: dict[str, Any] = args) -> None:
                rig.tool("t", args)
                rig.tool("u", {})

            tid = rig.agent(f"a{n}", two_tools)
            with lock:
                trace_ids.append(tid)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(trace_ids) == 30
    events = rig.events()
    assert len(events) == 30 * 4
    for trace_id in trace_ids:
        tree, timeline = expected_files(rig.finished(trace_id))
        assert rig.tree(trace_id) == tree
        assert rig.timeline(trace_id) == timeline
        assert [e["type"] for e in events if e["trace_id"] == trace_id] == ["act", "observe"] * 2


def test_constructible_without_arguments_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSPAN_TIMELINE_DIR", str(tmp_path / "env"))
    (entry,) = [
        e for e in entry_points(group="opentelemetry_traces_exporter") if e.name == "toolspan_timeline"
    ]
    exporter = entry.load()()
    assert isinstance(exporter, TimelineJsonExporter)
    assert exporter.directory == str(tmp_path / "env")
    monkeypatch.delenv("TOOLSPAN_TIMELINE_DIR")
    assert TimelineJsonExporter().directory == "toolspan-timeline"
    assert not (tmp_path / "env").exists()  # nothing is created before the first export


_FULL_DISK_SCRIPT = """
import os, resource, signal, sys
from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import TracerProvider
from toolspan.exporters.timeline import TimelineJsonExporter

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
tracer = TracerProvider().get_tracer("t")
parent = tracer.start_span("invoke_agent a")  # never ends: no trace files, only events.jsonl lines
pad = '{"pad": "%s"}' % ("x" * 5000)
attributes = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "t",
    "gen_ai.tool.call.arguments": pad,
    "gen_ai.tool.call.result": pad,
}
tool = tracer.start_span("execute_tool t", trace_api.set_span_in_context(parent), attributes=attributes)
tool.end()
exporter = TimelineJsonExporter(sys.argv[1])
events = os.path.join(sys.argv[1], "events.jsonl")
results = [exporter.export([tool]).name]
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(events) + int(sys.argv[2]), hard))
results.append(exporter.export([tool]).name)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
results.append(exporter.export([tool]).name)
exporter.force_flush()
print(",".join(results))
"""


@pytest.mark.processes
@pytest.mark.skipif(sys.platform == "win32", reason="needs RLIMIT_FSIZE and SIGXFSZ")
@pytest.mark.parametrize("room", [0, 100, 6000])  # none, a part of the act line, the act line and a part
def test_a_full_disk_leaves_only_whole_event_lines_and_the_next_ones_are_whole(
    tmp_path: Path, room: int
) -> None:
    """A real EFBIG (RLIMIT_FSIZE in a child process): the cut lines are truncated away."""
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-c", _FULL_DISK_SCRIPT, str(out), str(room)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "SUCCESS,FAILURE,SUCCESS"
    assert f"toolspan: cannot write {out / 'events.jsonl'}: [Errno 27] File too large" in run.stderr
    text = (out / "events.jsonl").read_text(encoding="utf-8")
    assert text.endswith("\n")
    events = [json.loads(line) for line in text.splitlines()]
    assert [e["type"] for e in events] == ["act", "observe", "act", "observe"]
    assert events[:2] == events[2:]


def test_events_after_a_line_cut_by_a_crash_start_on_their_own_line(rig: Rig) -> None:
    rig.directory.mkdir()
    (rig.directory / "events.jsonl").write_text('{"type": "act", "cut')
    rig.tool("t", {})
    cut, *lines = (rig.directory / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert cut == '{"type": "act", "cut'
    assert [json.loads(line)["type"] for line in lines] == ["act", "observe"]


def test_non_finite_numbers_are_written_as_strict_json(rig: Rig) -> None:
    with (
        rig.tracer.start_as_current_span(
            "invoke_agent a", attributes={sc.GEN_AI_OPERATION_NAME: "invoke_agent"}
        ),
        rig.tracer.start_as_current_span(
            "execute_tool t",
            attributes={
                sc.GEN_AI_OPERATION_NAME: "execute_tool",
                sc.GEN_AI_TOOL_NAME: "t",
                sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"x": NaN, "y": [Infinity, -Infinity]}',
            },
        ),
    ):
        pass

    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in the output")

    events = [json.loads(line, parse_constant=refuse) for line in rig.events_text().splitlines()]
    assert [(e["type"], e["tool_input"]) for e in events[:1]] == [
        ("act", {"x": "NaN", "y": ["Infinity", "-Infinity"]})
    ]
    for path in rig.directory.glob("*.json"):
        json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)
