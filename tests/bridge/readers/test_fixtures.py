"""Every recorded trace under ``tests/fixtures`` loads; spans, parents and attributes checked.

The files and their provenance are listed in ``tests/fixtures/SOURCES.md``. A missing file fails these
tests (the readers raise on a path that does not exist); nothing here skips.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

from tests.support.paths import TESTS
from toolspan.bridge.model import Span, SpanEvent, SpanLink
from toolspan.bridge.readers import read_spans, spans_from_document

FIX = TESTS / "fixtures"


def load(rel: str) -> list[Span]:
    spans, report = read_spans(FIX / rel)
    assert report.issues == []
    assert report.records_skipped == 0
    assert report.spans_read == len(spans)
    return spans


def bare(spans: list[Span]) -> list[Span]:
    return [dataclasses.replace(s, origin="") for s in spans]


EXPECTED_COUNTS = {
    "otlp/proto_examples_trace.json": 1,
    "otlp/spec_file_exporter_traces.jsonl": 8,
    "otlp/spec_legacy_instrumentation_library_traces.jsonl": 8,
    "otlp/jaeger_memstore_otel_traces_01.json": 4,
    "jaeger/v1_ui_trace_all_tag_types.json": 5,
    "jaeger/v1_api_traces_envelope_parity.json": 2,
    "jaeger/v3_api_traces_parity.json": 2,
    "jaeger/v3_get_trace_all_anyvalues_2.21.0.json": 3,
    "jaeger/v3_get_trace_hotrod.json": 40,
    "jaeger/v1_ui_genai_agent_trace.json": 57,
    "jaeger/v1_ui_edge_parent_cycle.json": 2,
    "jaeger/v1_ui_edge_follows_from_orphan.json": 2,
    # Recorded from the real Jaeger by tests/e2e/test_jaeger_recordings.py (tests/support/formats.py's
    # traces).
    "jaeger/jaeger-2.12.0-parity-v1.json": 7,
    "jaeger/jaeger-2.12.0-parity-v3.json": 7,
    "jaeger/jaeger-2.12.0-changes-v1.json": 3,
    "jaeger/jaeger-2.12.0-changes-v3.json": 3,
    "tempo/v1_batches_trace.json": 1,
    "tempo/base64_ids_enum_names.json": 3,
    "tempo/v2_trace_by_id.json": 1,
}


def test_every_fixture_file_is_listed_and_loads_with_its_span_count() -> None:
    on_disk = {p.relative_to(FIX).as_posix() for p in FIX.rglob("*") if p.suffix in (".json", ".jsonl")}
    assert on_disk == set(EXPECTED_COUNTS)
    for rel, count in EXPECTED_COUNTS.items():
        spans = load(rel)
        assert len(spans) == count, rel
        for s in spans:
            assert len(s.trace_id) == 32
            assert s.trace_id == s.trace_id.lower()
            assert len(s.span_id) == 16
            assert s.span_id == s.span_id.lower()
            assert isinstance(s.start_ns, int)
            # Every span ended, but the pending record of the recorded "changes" answers.
            assert isinstance(s.end_ns, int) or ("changes" in rel and s.span_id == "a000000000000002")


def test_reading_the_fixture_directory_reads_every_trace_file_and_skips_the_markdown() -> None:
    spans, report = read_spans(FIX)
    assert len(spans) == sum(EXPECTED_COUNTS.values())
    assert report.sources_read == len(EXPECTED_COUNTS)
    # Sorted, recursive: jaeger/ before otlp/ before tempo/.
    assert spans[0].origin.endswith("jaeger-2.12.0-changes-v1.json")
    assert spans[-1].origin.endswith("v2_trace_by_id.json:1")  # a one-line document: line 1


def test_proto_example_upper_case_hex_ids_int_kind_string_times() -> None:
    (span,) = load("otlp/proto_examples_trace.json")
    assert dataclasses.replace(span, origin="") == Span(
        trace_id="5b8efff798038103d269b633813fc60c",
        span_id="eee19b7ec3c1b174",
        parent_span_id="eee19b7ec3c1b173",
        name="I'm a server span",
        start_ns=1544712660000000000,
        end_ns=1544712661000000000,
        kind="SERVER",
        status="UNSET",
        attributes={"my.span.attr": "some value"},
        resource={"service.name": "my.service"},
        scope="my.library",
    )
    assert span.origin == str(FIX / "otlp/proto_examples_trace.json")


def test_tempo_v1_batches_reads_like_the_same_otlp_request() -> None:
    assert bare(load("tempo/v1_batches_trace.json")) == bare(load("otlp/proto_examples_trace.json"))


def test_file_exporter_lines_empty_ids_events_links_and_status() -> None:
    spans = load("otlp/spec_file_exporter_traces.jsonl")
    assert [s.name for s in spans] == ["operationA", "operationB"] * 4
    name = str(FIX / "otlp/spec_file_exporter_traces.jsonl")
    assert [s.origin for s in spans] == [f"{name}:{n}" for n in (1, 1, 2, 2, 3, 3, 4, 4)]
    for s in spans:  # empty-string ids mean missing: all-zero ids, no parent
        assert (s.trace_id, s.span_id, s.parent_span_id) == ("0" * 32, "0" * 16, None)
        assert s.resource == {"resource-attr": "resource-attr-val-1"}
        assert s.scope == ""
        assert s.attributes == {}
    a, b = spans[0], spans[1]
    assert (a.status, a.status_message) == ("ERROR", "status-cancelled")
    assert (b.status, b.status_message) == ("UNSET", "")
    assert (a.start_ns, a.end_ns) == (1581452772000000321, 1581452773000000789)
    assert a.events == (
        SpanEvent("event-with-attr", 1581452773000000123, {"span-event-attr": "span-event-attr-val"}),
        SpanEvent("event", 1581452773000000123, {}),
    )
    assert a.links == ()
    assert b.events == ()
    assert b.links == (
        SpanLink("0" * 32, "0" * 16, {"span-link-attr": "span-link-attr-val"}),
        SpanLink("0" * 32, "0" * 16, {}),
    )
    assert spans[7].start_ns == 1581452772000011821
    assert spans[7].end_ns == 1581452772000012924


def test_legacy_instrumentation_library_spans_and_status_names_read_like_the_current_shape() -> None:
    legacy = load("otlp/spec_legacy_instrumentation_library_traces.jsonl")
    current = load("otlp/spec_file_exporter_traces.jsonl")
    assert bare(legacy) == bare(current)
    assert [s.status for s in legacy] == ["ERROR", "UNSET"] * 4


def test_jaeger_memstore_otlp_kinds_orphans_links_and_typed_values() -> None:
    spans = load("otlp/jaeger_memstore_otel_traces_01.json")
    assert [(s.trace_id, s.span_id, s.parent_span_id, s.kind, s.scope) for s in spans] == [
        (
            "00000000000000010000000000000000",
            "0000000000000002",
            "0000000000000003",
            "SERVER",
            "testing-library-2",
        ),
        (
            "00000000000000020000000000000000",
            "0000000000000003",
            "0000000000000010",
            "CLIENT",
            "testing-library-2",
        ),
        (
            "00000000000000010000000000000000",
            "0000000000000004",
            "0000000000000011",
            "PRODUCER",
            "testing-library-3",
        ),
        (
            "00000000000000020000000000000000",
            "0000000000000005",
            "0000000000000010",
            "CONSUMER",
            "testing-library-3",
        ),
    ]
    for s in spans:
        assert s.attributes == {
            "peer.service": "service-y",
            "peer.ipv4": 23456,
            "blob": "AAAwOQ==",
            "temperature": 72.5,
        }
        assert s.status == "ERROR"
        assert s.resource == {"service.name": "service-x"}
        assert s.events == (
            SpanEvent("testing-event", 1485467191639875000, {"event-x": "event-y"}),
            SpanEvent("", 1485467191639875000, {"x": "y"}),
        )
        assert s.links == (
            SpanLink(
                "00000000000000010000000000000000",
                "0000000000000004",
                {"opentracing.ref_type": "follows_from"},
            ),
            SpanLink(
                "00000000000000ff0000000000000000", "00000000000000ff", {"opentracing.ref_type": "child_of"}
            ),
        )


def test_jaeger_v1_all_tag_types_duplicate_span_ids_references_and_padding() -> None:
    spans = load("jaeger/v1_ui_trace_all_tag_types.json")
    tid = "0" * 31 + "1"  # 16-char Jaeger trace id, left-padded
    assert all(s.trace_id == tid for s in spans)
    assert [(s.span_id, s.parent_span_id) for s in spans] == [
        ("0000000000000002", None),
        ("0000000000000002", None),  # duplicate span id: kept as a second record
        ("0000000000000003", "0000000000000002"),
        ("0000000000000004", "0000000000000002"),
        ("0000000000000005", "0000000000000004"),
    ]
    first, dup, third, refs, fifth = spans
    assert first.events == (
        SpanEvent("some-event", 1485467191639875000, {}),
        SpanEvent("", 1485467191639875000, {"x": "y"}),
    )
    assert (first.start_ns, first.end_ns) == (1485467191639875000, 1485467191639880000)
    assert dup.attributes == {
        "peer.service": "service-y",
        "peer.ipv4": 23456,
        "temperature": 72.5,
        "javascript_limit": 9223372036854775222,  # int64 sent as a string, beyond 2**53
        "blob": "AAAwOQ==",
    }
    assert dup.status == "ERROR"  # the bool `error` tag, consumed into the status
    assert first.resource == {"service.name": "service-x"}
    assert third.resource == {"service.name": "service-y"}
    assert refs.links == (
        SpanLink("0" * 30 + "ff", "00000000000000ff", {"opentracing.ref_type": "child_of"}),  # cross-trace
        SpanLink(tid, "0000000000000002", {"opentracing.ref_type": "follows_from"}),
    )
    assert fifth.end_ns - fifth.start_ns == 4000
    assert all(s.kind == "UNSPECIFIED" and s.scope == "" for s in spans)


def test_jaeger_v1_and_v3_parity_capture_differ_only_where_jaeger_converted_differently() -> None:
    v1 = load("jaeger/v1_api_traces_envelope_parity.json")
    v3 = load("jaeger/v3_api_traces_parity.json")
    assert [dataclasses.replace(s, origin="") for s in v1[1:]] == [
        dataclasses.replace(s, origin="") for s in v3[1:]
    ]
    a1, a3 = v1[0], v3[0]
    assert a1.kind == a3.kind == "SERVER"
    assert (a1.start_ns, a1.end_ns) == (a3.start_ns, a3.end_ns) == (1_000_000, 2_000_000)
    assert a1.events == a3.events == (SpanEvent("test-event", 1_100_000, {"foo": "bar"}),)
    assert a1.resource == a3.resource == {"service.name": "test-service", "res-tag": "res-val"}
    # v1: the string `error` tag is the status and otel.library.* the scope; Jaeger's v3 conversion kept
    # them as plain attributes.
    assert (a1.status, a1.scope, a1.attributes) == (
        "ERROR",
        "test-lib",
        {"gen_ai.operation.name": "chat", "http.method": "GET"},
    )
    assert (a3.status, a3.scope) == ("UNSET", "")
    assert a3.attributes == {
        "error": "true",
        "gen_ai.operation.name": "chat",
        "http.method": "GET",
        "otel.library.name": "test-lib",
        "otel.library.version": "1.0",
    }


def test_jaeger_v3_every_any_value_kind() -> None:
    root, unset, numeric = load("jaeger/v3_get_trace_all_anyvalues_2.21.0.json")
    assert dataclasses.replace(root, origin="") == Span(
        trace_id="0123456789abcdef0123456789abcdef",
        span_id="0123456789abcdef",
        parent_span_id=None,
        name="root-with-any-values",
        start_ns=1786934400000000000,
        end_ns=1786934400001000000,
        kind="UNSPECIFIED",
        status="ERROR",
        status_message="probe error status",
        attributes={
            "array": ["first", False, 9223372036854775807],
            "bytes": "AQID",
            "empty": "",
            "false": False,
            "float": 1.5,
            "integer": 0,
            "nested": {"child": ["value"]},
        },
        events=(SpanEvent("retry", 1786934400000500000, {"attempt": 1}),),
        links=(SpanLink("fedcba9876543210fedcba9876543210", "fedcba9876543210", {}),),
        resource={"service.name": "lfx-wire-probe"},
        scope="lfx-proposal",
    )
    assert (unset.parent_span_id, unset.kind, unset.status, unset.attributes) == (
        "0123456789abcdef",
        "UNSPECIFIED",
        "UNSET",
        {},
    )
    assert (numeric.kind, numeric.status) == ("SERVER", "OK")


def test_jaeger_v3_hotrod_services_events_and_errors() -> None:
    spans = load("jaeger/v3_get_trace_hotrod.json")
    assert len({s.trace_id for s in spans}) == 1
    assert sum(len(s.events) for s in spans) == 52
    assert [(s.name, s.status_message) for s in spans if s.status == "ERROR"] == [
        ("GetDriver", "An error occurred")
    ] * 3
    assert Counter(s.kind for s in spans) == {"CLIENT": 27, "SERVER": 13}
    assert len({s.resource["service.name"] for s in spans}) == 6
    first = spans[0]
    assert first.resource == {
        "host.name": "2fd43f7d79c6",
        "os.type": "linux",
        "service.name": "frontend",
        "telemetry.sdk.language": "go",
        "telemetry.sdk.name": "opentelemetry",
        "telemetry.sdk.version": "1.44.0",
    }
    assert first.attributes == {
        "http.request.method": "GET",
        "http.response.status_code": 200,
        "network.protocol.version": "1.1",
        "server.address": "0.0.0.0",
        "server.port": 8081,
        "url.full": "http://0.0.0.0:8081/customer?customer=123",
    }
    assert any(e.name == "exception" for s in spans for e in s.events)


def test_jaeger_genai_agent_trace_tools_processes_and_error() -> None:
    spans = load("jaeger/v1_ui_genai_agent_trace.json")
    assert len({s.resource["service.name"] for s in spans}) == 10
    (failed,) = [s for s in spans if s.status == "ERROR"]
    assert failed.span_id == "0000000000000011"
    assert failed.attributes == {
        "http.request.method": "GET",
        "http.route": "/api/v1/pods",
        "http.response.status_code": 500,
    }
    tool = next(s for s in spans if s.span_id == "0000000000000007")
    assert dataclasses.replace(tool, origin="") == Span(
        trace_id="4a1b2c3d4e5f60718293a4b5c6d7e8f9",
        span_id="0000000000000007",
        parent_span_id="0000000000000004",
        name="execute_tool list_dashboards",
        start_ns=1770000000007000000,
        end_ns=1770000000907000000,
        kind="INTERNAL",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "list_dashboards",
            "gen_ai.tool.call.id": "call_list_dashboards",
            "gen_ai.tool.call.arguments": '{"window":"1h"}',
            "gen_ai.tool.call.result": '{"status":"ok","rows":12}',
        },
        resource={"service.name": "coding-agent"},
    )
    raw = json.loads((FIX / "jaeger/v1_ui_genai_agent_trace.json").read_text())
    assert sum(1 for s in spans if s.name.startswith("execute_tool")) == sum(
        1 for s in raw["spans"] if s["operationName"].startswith("execute_tool")
    )
    roots = [s for s in spans if s.parent_span_id is None]
    assert [r.span_id for r in roots] == ["0000000000000001"]


def test_parent_cycle_keeps_both_spans_with_their_parents() -> None:
    a, b = load("jaeger/v1_ui_edge_parent_cycle.json")
    assert (a.span_id, a.parent_span_id) == ("000000000000000a", "000000000000000b")
    assert (b.span_id, b.parent_span_id) == ("000000000000000b", "000000000000000a")


def test_follows_from_to_a_missing_span_is_the_parent_of_an_orphan() -> None:
    root, orphan = load("jaeger/v1_ui_edge_follows_from_orphan.json")
    assert (root.span_id, root.parent_span_id) == ("d4dcb46e95b781f5", None)
    assert (orphan.span_id, orphan.parent_span_id, orphan.links) == (
        "0000000000000008",
        "aaaaaaaaaaaaaaaa",
        (),
    )
    assert orphan.start_ns < root.start_ns


def test_tempo_base64_ids_parent_ids_and_enum_names_over_two_traces_and_three_resources() -> None:
    root, tool, consumer = load("tempo/base64_ids_enum_names.json")
    trip, booking = "7f3a9c1e5b2d48f6a0c4e8b1d3f5a7c9", "3e8ff8b2c41d9a06be57f03dd2c6a1e4"
    assert dataclasses.replace(root, origin="") == Span(
        trace_id=trip,  # fzqcHlstSPagxOix0/WnyQ==
        span_id="c0ffeefbe5a1d2c3",  # wP/u++Wh0sM=
        parent_span_id=None,
        name="invoke_agent trip-planner",
        start_ns=1767225600000000000,
        end_ns=1767225600850000000,
        kind="SERVER",
        status="OK",
        attributes={"gen_ai.operation.name": "invoke_agent"},
        resource={"service.name": "trip-planner"},
        scope="toolspan",
    )
    assert dataclasses.replace(tool, origin="") == Span(
        trace_id=trip,
        span_id="5af7d2e3b4c69f01",
        parent_span_id="c0ffeefbe5a1d2c3",  # a base64 parentSpanId
        name="execute_tool search_flights",
        start_ns=1767225600120000000,
        end_ns=1767225600610000000,
        kind="CLIENT",
        status="ERROR",
        status_message="no seats left",
        attributes={"gen_ai.tool.name": "search_flights"},
        resource={"service.name": "flight-search"},
        scope="toolspan",
    )
    assert dataclasses.replace(consumer, origin="") == Span(
        trace_id=booking,  # Po/4ssQdmga+V/A90sah5A==
        span_id="9d0c8ab7e6f51234",
        parent_span_id=None,
        name="consume booking",
        start_ns=1767225601000000000,
        end_ns=1767225601045000000,
        kind="CONSUMER",
        status="UNSET",  # "status": {}
        attributes={"messaging.system": "kafka"},
        resource={"service.name": "booking-queue"},
        scope="queue-consumer",
    )


def test_tempo_v2_wrapper_decodes_the_base64_ids() -> None:
    spans, report = read_spans(FIX / "tempo/v2_trace_by_id.json")
    (span,) = spans
    assert dataclasses.replace(span, origin="") == Span(
        trace_id="1c2d3e4f5a6b7c8d9e0fa1b2c3d4e5f6",  # HC0+T1prfI2eD6Gyw9Tl9g==
        span_id="fb3f0e1d2c4b5a69",  # +z8OHSxLWmk=
        parent_span_id=None,
        name="execute_tool save_note",
        start_ns=1767225700000000000,
        end_ns=1767225700250000000,
        kind="SERVER",
        status="UNSET",
        attributes={"note.title": "groceries"},
        resource={"service.name": "notes-agent"},
        scope="notes.tools",
    )
    assert report.partial_traces == []


def test_tempo_v2_partial_status_is_reported_and_the_spans_kept() -> None:
    doc = json.loads((FIX / "tempo/v2_trace_by_id.json").read_text())
    doc["status"] = "PARTIAL"
    doc["message"] = "Trace exceeds maximum size of 10 bytes, a partial trace is returned"
    spans, report = read_spans(json.dumps(doc).encode())
    assert [s.span_id for s in spans] == ["fb3f0e1d2c4b5a69"]
    assert report.partial_traces == ["1c2d3e4f5a6b7c8d9e0fa1b2c3d4e5f6"]
    (issue,) = report.issues
    assert (issue.source, issue.line, issue.field, issue.skipped) == ("<bytes>", 1, "status", 0)
    assert issue.message == (
        "PARTIAL trace 1c2d3e4f5a6b7c8d9e0fa1b2c3d4e5f6: "
        "Trace exceeds maximum size of 10 bytes, a partial trace is returned"
    )
    assert report.records_skipped == 0


def test_spans_from_document_detects_every_fixture_shape() -> None:
    for rel, count in EXPECTED_COUNTS.items():
        if rel.endswith(".jsonl"):
            continue
        doc = json.loads((FIX / rel).read_text())
        assert len(spans_from_document(doc, origin=rel)) == count
