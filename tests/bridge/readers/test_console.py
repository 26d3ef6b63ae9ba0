"""The OpenTelemetry Python SDK's ``ConsoleSpanExporter`` output, the first thing OpenTelemetry's tutorials
print, is read like any trace file: pretty-printed span objects one after the other, or one per line. The
spans read are those the SDK recorded (times to the microsecond the output keeps, no scope: it prints none),
and a bad field is an error naming file, line and field."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolspan.bridge.model import Span
from toolspan.bridge.readers import BridgeReadError, from_readable_spans, read_spans
from toolspan.bridge.readers._detect import describe


def _recorded(formatter: object = None) -> tuple[str, list[ReadableSpan]]:
    """A small run through the real SDK: what its console exporter printed, and the spans it recorded."""
    out = io.StringIO()
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    console = (
        ConsoleSpanExporter(out=out)
        if formatter is None
        else ConsoleSpanExporter(out=out, formatter=formatter)
    )  # type: ignore[arg-type]
    provider.add_span_processor(SimpleSpanProcessor(console))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tutorial")
    with tracer.start_as_current_span(
        "invoke_agent assistant", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        with tracer.start_as_current_span(
            "execute_tool get_weather",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "n": [1, 2],
            },
        ) as tool:
            tool.add_event("retry", {"attempt": 2})
            tool.set_status(trace_api.StatusCode.ERROR, "upstream timed out")
        with tracer.start_as_current_span(
            "linked", links=[trace_api.Link(tool.get_span_context(), {"why": "x"})]
        ):
            pass
    provider.shutdown()
    return out.getvalue(), list(memory.get_finished_spans())


def _to_microseconds(span: Span) -> Span:
    """What the console output keeps of a span: times to the microsecond, no scope, no origin."""

    def us(ns: int | None) -> int | None:
        return None if ns is None else ns // 1000 * 1000

    events = tuple(dataclasses.replace(e, time_ns=us(e.time_ns)) for e in span.events)
    return dataclasses.replace(
        span, start_ns=us(span.start_ns), end_ns=us(span.end_ns), events=events, scope="", origin=""
    )


def _close(a: Span, b: Span) -> bool:
    """Equal but for times, which may differ by a microsecond (the SDK formats them through a float)."""
    if abs(a.start_ns - b.start_ns) > 1000 or abs((a.end_ns or 0) - (b.end_ns or 0)) > 1000:
        return False
    strip = dict(start_ns=0, end_ns=0, events=tuple(dataclasses.replace(e, time_ns=0) for e in a.events))
    other = dict(start_ns=0, end_ns=0, events=tuple(dataclasses.replace(e, time_ns=0) for e in b.events))
    return dataclasses.replace(a, **strip) == dataclasses.replace(b, **other)


@pytest.mark.parametrize("form", ["pretty", "one line"])
def test_the_console_exporter_output_reads_as_the_spans_the_sdk_recorded(form: str, tmp_path: Path) -> None:
    text, recorded = _recorded(None if form == "pretty" else (lambda s: s.to_json(indent=None) + "\n"))
    path = tmp_path / "console.txt"
    path.write_text(text)
    spans, report = read_spans(path)
    expected = [_to_microseconds(s) for s in from_readable_spans(recorded)]
    got = [dataclasses.replace(s, origin="") for s in spans]
    assert report.spans_read == 3
    assert len(got) == len(expected)
    by_id = sorted(expected, key=lambda s: s.span_id)
    for mine, theirs in zip(sorted(got, key=lambda s: s.span_id), by_id, strict=True):
        assert _close(mine, theirs), (mine, theirs)
    tool = next(s for s in spans if s.name == "execute_tool get_weather")
    assert (tool.status, tool.status_message, tool.kind) == ("ERROR", "upstream timed out", "INTERNAL")
    assert tool.attributes["n"] == [1, 2]
    first_lines = [s.origin.rsplit(":", 1)[1] for s in spans]
    if form == "pretty":  # each span is named by the line it starts on
        assert first_lines[0] == "1"
        assert len(set(first_lines)) == 3
        assert text.splitlines()[int(first_lines[1]) - 1] == "{"
    else:
        assert first_lines == ["1", "2", "3"]


@pytest.mark.processes
def test_a_program_printing_its_spans_to_the_console_converts_as_written(tmp_path: Path) -> None:
    """`configure(console=True)` in a real process; its stdout, saved to a file, converts to events."""
    program = textwrap.dedent(
        """
        import toolspan

        toolspan.configure(service_name="tutorial", console=True)

        @toolspan.tool
        def get_weather(city: str) -> dict:
            return {"city": city, "temp_c": 18}

        with toolspan.agent("assistant", input="Weather in Paris?"):
            get_weather("Paris")
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TOOLSPAN_"))}
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, env=env, cwd=tmp_path
    )
    (tmp_path / "console.txt").write_text(done.stdout)
    converted = subprocess.run(
        [sys.executable, "-m", "toolspan", "convert", "console.txt", "--to", "events"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert (converted.returncode, converted.stderr) == (0, "")
    events = [json.loads(line) for line in converted.stdout.splitlines()]
    assert [(e["type"], e["tool_name"]) for e in events] == [
        ("act", "get_weather"),
        ("observe", "get_weather"),
    ]
    assert events[0]["tool_input"] == {"city": "Paris"}
    assert events[1]["observation"] == {"city": "Paris", "temp_c": 18}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("start_time", "yesterday", "start_time: not an ISO 8601 time: 'yesterday'"),
        ("kind", "SpanKind.SIDEWAYS", "kind: unknown span kind: 'SIDEWAYS'"),
        ("status", {"status_code": "MAYBE"}, "status.status_code: unknown status code: 'MAYBE'"),
        ("attributes", [1], "attributes: not an object of attributes: [1]"),
        ("end_time", "1999-01-01T00:00:00.000000Z", "end_time: before the start time"),
    ],
)
def test_a_bad_field_names_file_line_and_field(
    field: str, value: object, message: str, tmp_path: Path
) -> None:
    text, _ = _recorded()
    docs = [json.loads(chunk) for chunk in _split(text)]
    docs[1][field] = value
    path = tmp_path / "console.txt"
    path.write_text("".join(json.dumps(d, indent=4) + "\n" for d in docs))
    start = 1 + json.dumps(docs[0], indent=4).count("\n") + 1
    with pytest.raises(BridgeReadError) as info:
        read_spans(path)
    assert str(info.value).startswith(f"{path}:{start}: {message}")
    spans, report = read_spans(path, lenient=True)
    assert (len(spans), report.records_skipped) == (2, 1)


def _split(text: str) -> list[str]:
    decoder = json.JSONDecoder()
    at, out = 0, []
    while at < len(text.rstrip()):
        while text[at].isspace():
            at += 1
        _, stop = decoder.raw_decode(text, at)
        out.append(text[at:stop])
        at = stop
    return out


def test_the_format_is_named_and_text_that_only_looks_alike_is_still_refused(tmp_path: Path) -> None:
    text, _ = _recorded()
    assert describe(json.loads(_split(text)[0])) == "OpenTelemetry SDK console"
    path = tmp_path / "mixed.txt"
    path.write_text(text + "\nSome program output\n")  # not only JSON objects: the JSON error stands
    with pytest.raises(BridgeReadError, match="invalid JSON"):
        read_spans(path)
