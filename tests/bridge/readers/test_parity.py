"""The same trace written in every wire format reads back to the same neutral spans."""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import pytest

from tests.support.formats import (
    FORMATS,
    JAEGER_FORMATS,
    jaeger_changes_trace,
    jaeger_recording,
    parity_trace,
    render,
    render_all,
)
from toolspan.bridge.internal import describe
from toolspan.bridge.model import Span
from toolspan.bridge.readers import from_readable_spans, read_spans


def normal(spans: list[Span]) -> list[Span]:
    """Order-independent comparison form: no origin, no scope schema URL (only OTLP carries one: its round
    trip is ``tests/instrument/test_schema_url.py``'s), sorted by (trace, span)."""
    bare = (dataclasses.replace(s, origin="", scope_schema_url="") for s in spans)
    return sorted(bare, key=lambda s: (s.trace_id, s.span_id, s.end_ns is None))  # a pending record last


def test_render_all_yields_every_format_once() -> None:
    assert [name for name, _ in render_all(parity_trace())] == list(FORMATS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_parity_trace_reads_back_identically_from(fmt: str) -> None:
    trace = parity_trace()
    spans, report = read_spans(render(fmt, trace))
    assert report.issues == []
    assert report.spans_read == len(trace) == 7
    assert normal(spans) == normal(trace)


def test_the_formats_really_differ_on_the_wire() -> None:
    blobs = dict(render_all(parity_trace()))
    kinds = {
        name: describe(json.loads(blob.splitlines()[0] if name == "otlp_jsonl" else blob))
        for name, blob in blobs.items()
        if name not in ("otlp_proto", "otlp_proto_file")
    }
    assert kinds == {
        "otlp_json": "OTLP JSON",
        "otlp_jsonl": "OTLP JSON",
        "jaeger_v1": "Jaeger v1 envelope",
        "jaeger_v1_bare": "Jaeger v1 trace",
        "jaeger_v3": "Jaeger v3",
        "tempo_v1": "Tempo v1",
        "tempo_v2": "Tempo v2",
    }
    assert blobs["otlp_jsonl"].count(b"\n") == 3
    assert blobs["otlp_proto_file"][:1] == b"\x00"
    assert blobs["otlp_proto"][:1] == b"\x0a"
    jaeger = json.loads(blobs["jaeger_v1"])["data"][0]  # the real Jaeger's answer
    assert jaeger["traceID"] == "a1b2c3d4e5f60718"  # 16 hex chars: the reader pads it back
    root = next(s for s in jaeger["spans"] if s["spanID"] == "0000000000000001")
    assert root["startTime"] == 1_700_000_000_000_007  # microseconds
    tempo = json.loads(blobs["tempo_v2"])["trace"]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert tempo["traceId"] == base64.b64encode(bytes.fromhex("0000000000000000a1b2c3d4e5f60718")).decode()
    assert tempo["kind"] == "SPAN_KIND_INTERNAL"
    assert (
        json.loads(blobs["otlp_json"])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"]
        == "0000000000000001"
    )


def test_what_the_real_jaeger_changes_reads_back_as_documented() -> None:
    """Recorded answers of the real Jaeger to a trace with everything it changes (``tests.support.formats``):
    API v3 reads back exactly what was sent (the reader puts the events Jaeger sorted by name back in time
    order, and gives the pending record Jaeger gave an end its missing end back); API v1 exactly the v1
    rule."""
    from tests.e2e.losses import ARRAYS, LINK_ATTRS, SUB_US, jaeger_v1, losses

    sent = jaeger_changes_trace()
    raw_v3 = json.loads(jaeger_recording("changes", "v3").read_bytes())
    agent = next(
        sp
        for rs in raw_v3["result"]["resourceSpans"]
        for ss in rs["scopeSpans"]
        for sp in ss["spans"]
        if sp["name"] == "invoke_agent planner"
    )
    assert [e["name"] for e in agent["events"]] == ["exception", "toolspan.thought"]  # Jaeger's order
    v3, report = read_spans(render("jaeger_v3", sent))
    assert report.issues == []
    assert normal(v3) == normal(sent)
    v1, report = read_spans(render("jaeger_v1", sent))
    assert report.issues == []
    assert normal(v1) == normal([jaeger_v1(s) for s in sent])
    assert losses(sent, v1) == {SUB_US: 3, ARRAYS: 2, LINK_ATTRS: 2}  # the tool's two records each
    tool = next(s for s in v1 if s.end_ns is not None and s.name == "execute_tool search")
    assert tool.attributes["search.engines"] == '["web","news"]'
    assert tool.attributes["search.options"] == '{"region":"eu","safe":true}'


def test_only_recorded_spans_have_a_jaeger_answer() -> None:
    trace = parity_trace()
    odd = dataclasses.replace(trace[0], start_ns=trace[0].start_ns + 1)
    for fmt in sorted(JAEGER_FORMATS):
        with pytest.raises(ValueError, match="no recorded Jaeger answer holds these spans"):
            render(fmt, [odd, *trace[1:]])


def _instrumented_trace() -> list[Span]:
    """A trace written by toolspan's own instrumentation (deterministic ids and clock)."""
    toolspan = pytest.importorskip("toolspan")
    from toolspan.testing import capture_spans

    @toolspan.tool
    def lookup(city: str) -> dict[str, Any]:
        """Weather of a city."""
        return {"city": city, "temp_c": 21}

    @toolspan.tool
    def explode(reason: str) -> None:
        """Always fails."""
        raise RuntimeError(reason)

    with capture_spans(deterministic=True) as finished:
        with toolspan.agent("planner", input="Weather in Paris?") as run:
            toolspan.thought("Look it up first.")
            with toolspan.tool_call_id("toolu_01"):
                lookup("Paris")
            with pytest.raises(RuntimeError):
                explode("boom")
            run.set_output("21 C in Paris")
        return from_readable_spans(finished())


def test_a_trace_written_by_the_instrumentation_survives_every_format() -> None:
    spans = _instrumented_trace()
    assert len(spans) == 3
    tools = sorted(s.attributes.get("gen_ai.tool.name") for s in spans if s.name.startswith("execute_tool"))
    assert tools == ["explode", "lookup"]
    expected = normal(spans)
    for fmt, blob in render_all(spans, [f for f in FORMATS if f not in JAEGER_FORMATS]):
        got, report = read_spans(blob)
        assert report.issues == [], fmt
        assert normal(got) == expected, fmt
