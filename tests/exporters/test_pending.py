"""``PendingSpanProcessor``: a tool span exported at its start with no end, merged away by the bridge."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolspan
from tests.support.instrumentation import tool_attrs
from toolspan import semconv
from toolspan.bridge.readers import from_readable_spans
from toolspan.bridge.views import act_event
from toolspan.cli import _main as cli
from toolspan.exporters.otlp_file import OtlpJsonFileExporter
from toolspan.exporters.pending import PendingSpanProcessor
from toolspan.testing import installed_tracer_provider


class _Recording(SpanExporter):
    """An exporter that remembers what it exported and whether it was shut down."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []
        self.shut = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.shut = True


def test_a_tool_span_is_exported_at_its_start_without_an_end() -> None:
    exporter = _Recording()
    pending = PendingSpanProcessor(exporter)
    seen_during_call: list[int] = []
    provider = TracerProvider()
    provider.add_span_processor(pending)
    ended = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(ended))

    @toolspan.tool
    def lookup(city: str) -> str:
        pending.force_flush()
        seen_during_call.append(len(exporter.spans))
        return city.upper()

    with installed_tracer_provider(provider):
        assert lookup("paris") == "PARIS"
        with toolspan.agent("helper"):
            pass
    provider.shutdown()
    assert seen_during_call == [1]
    [record] = exporter.spans  # the agent span got none: tools only
    [span] = [s for s in ended.get_finished_spans() if s.name == "execute_tool lookup"]
    assert (record.end_time, record.start_time, record.context, record.parent) == (
        None,
        span.start_time,
        span.context,
        span.parent,
    )
    # What the span holds when it starts: the ids and state are set right after.
    # (OpenInference's span kind, tool name and input repeat the GenAI ones: written with the ids.)
    later = {"toolspan.execution_id", "toolspan.tool_call_id", "toolspan.tool.state", "tool.name"}
    later |= {"input.value", "input.mime_type", "openinference.span.kind"}
    at_start = {
        k: v for k, v in tool_attrs(span, "lookup", arguments='{"city": "paris"}').items() if k not in later
    }
    assert dict(record.attributes or {}) == at_start
    assert exporter.shut is False  # borrowed: the application's own processor owns the exporter


def test_views_of_a_file_with_pending_records_equal_the_views_without(tmp_path: Path) -> None:
    with_pending, without = tmp_path / "with.jsonl", tmp_path / "without.jsonl"
    file_with, file_without = OtlpJsonFileExporter(str(with_pending)), OtlpJsonFileExporter(str(without))
    provider = TracerProvider()
    provider.add_span_processor(PendingSpanProcessor(file_with))
    provider.add_span_processor(SimpleSpanProcessor(file_with))
    provider.add_span_processor(SimpleSpanProcessor(file_without))

    @toolspan.tool
    def add(a: int, b: int) -> int:
        return a + b

    with installed_tracer_provider(provider), toolspan.agent("calc", conversation_id="c-1"):
        add(1, 2)
        add(3, 4)
    provider.shutdown()
    file_with.shutdown()
    assert len(with_pending.read_text().splitlines()) > len(without.read_text().splitlines())

    def convert(path: Path, target: str) -> bytes:
        args = cli._parser().parse_args(["convert", str(path), "--to", target])
        out = io.BytesIO()
        assert cli.convert(args, out, io.StringIO()) == 0
        return out.getvalue()

    for target in ("events", "timeline", "tree", "plans", "progress"):
        assert convert(with_pending, target) == convert(without, target), target


def test_a_gated_call_is_first_exported_awaiting_approval_then_refreshed_at_its_decision() -> None:
    exporter = _Recording()
    pending = PendingSpanProcessor(exporter)
    provider = TracerProvider()
    provider.add_span_processor(pending)
    ended = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(ended))
    seen_by_approver: list[list[list[str]]] = []

    def approve(call: toolspan.ToolCall) -> bool:
        pending.force_flush()
        seen_by_approver.append([[e.name for e in r.events] for r in exporter.spans])
        return True

    @toolspan.tool(tracer_provider=provider)
    def inner(city: str) -> str:
        return city.upper()

    def lookup(city: str) -> str:
        return inner(city)

    call = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"city": "paris"}}
    assert toolspan.run_tool_calls([call], [lookup], approve=approve, tracer_provider=provider)[0][
        "content"
    ] == ('"PARIS"')
    provider.shutdown()
    # While the approver waited, the server had one record of the call: the one that says it waits.
    assert seen_by_approver == [[["toolspan.permission_required"]]]
    spans = {s.name: s for s in ended.get_finished_spans()}
    gated, body = spans["execute_tool lookup"], spans["execute_tool inner"]
    assert [(r.context, r.end_time, [e.name for e in r.events]) for r in exporter.spans] == [
        (gated.context, None, ["toolspan.permission_required"]),
        (gated.context, None, ["toolspan.permission_required", "toolspan.permission_decided"]),
        (body.context, None, []),  # a tool the allowed body calls: its start record as usual
    ]


def upper(text: str) -> str:
    return text.upper()


def test_no_refresh_for_a_span_this_processor_did_not_start_or_after_shutdown() -> None:
    exporter = _Recording()
    idle = PendingSpanProcessor(exporter)  # on no provider: it sees no span start
    closed = PendingSpanProcessor(exporter)
    provider = TracerProvider()
    provider.add_span_processor(closed)
    closed.shutdown()
    finished = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(finished))
    call = {"type": "tool_use", "id": "toolu_1", "name": "upper", "input": {"text": "a"}}
    assert (
        toolspan.run_tool_calls([call], [upper], approve=lambda c: True, tracer_provider=provider)[0][
            "content"
        ]
        == '"A"'
    )
    idle.shutdown()
    assert exporter.spans == []
    assert [e.name for e in finished.get_finished_spans()[0].events] == [
        "toolspan.permission_required",
        "toolspan.permission_decided",
    ]


def test_the_record_refreshed_at_an_edit_carries_it_and_so_does_the_act_a_live_stream_resends() -> None:
    exporter = _Recording()
    pending = PendingSpanProcessor(exporter)
    provider = TracerProvider()
    provider.add_span_processor(pending)

    def approve(call: toolspan.ToolCall) -> toolspan.Approval:
        return toolspan.Approval("allow", by="alice", arguments={"city": "oslo"})

    def lookup(city: str) -> str:
        return city.upper()

    call = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"city": "paris"}}
    (result,) = toolspan.run_tool_calls([call], [lookup], approve=approve, tracer_provider=provider)
    provider.shutdown()
    assert result["content"] == '"OSLO"'
    asked, decided = (act_event(span) for span in from_readable_spans(exporter.spans))
    assert (asked["status"], asked["tool_input"], "edited" in asked) == (
        "awaiting_approval",
        {"city": "paris"},
        False,
    )
    assert (decided["status"], decided["tool_input"]) == ("running", {"city": "oslo"})
    assert (decided["edited"]["by"], decided["edited"]["model_input"]) == ("alice", {"city": "paris"})


def test_an_agent_is_exported_once_at_its_start_with_its_input() -> None:
    """The input is a start attribute: the one record at the start has it (a second record would reach a
    server after the run's tools, and change what a live stream already sent)."""
    exporter = _Recording()
    provider = TracerProvider()
    provider.add_span_processor(PendingSpanProcessor(exporter, tools_only=False))
    with installed_tracer_provider(provider):
        with toolspan.agent("helper", input="What is the weather?", conversation_id="c1"):
            pass

        @toolspan.agent
        def planner(question: str) -> str:
            return question

        planner("Where?")
    provider.shutdown()
    records = [(s.name, dict(s.attributes or {})) for s in exporter.spans]
    assert [name for name, _ in records] == ["invoke_agent helper", "invoke_agent planner"]
    inputs = [attrs[semconv.GEN_AI_INPUT_MESSAGES] for _, attrs in records]
    assert ['"What is the weather?"' in inputs[0], '"Where?"' in inputs[1]] == [True, True]
