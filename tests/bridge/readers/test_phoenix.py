"""The Arize Phoenix reader, on documents captured from a real Phoenix (tests/e2e/captures/README.md)."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import TESTS
from toolspan.bridge.internal import describe
from toolspan.bridge.model import Span, SpanEvent
from toolspan.bridge.readers import BridgeReadError, read_spans, spans_from_document
from toolspan.bridge.readers._phoenix import looks_like_phoenix, spans_from_phoenix

CAPTURES = TESTS / "e2e" / "captures"
TRACE = "6bd2789722a148ab1efd16bd4fe78240"
AGENT, PLAIN, BAD, SEARCH, SUB = (
    "a06d6375fc4f75b6",
    "ffb151b8a42fd39e",
    "70957129692c35f8",
    "e94e30e1fc457724",
    "a1a48e36210b3e9e",
)
STACK = (
    "Traceback (most recent call last):\n"
    '  File "app.py", line 19, in <module>\n'
    '    raise ValueError("boom")\n'
    "ValueError: boom\n"
)
# 2026-11-22T04:53:09Z in nanoseconds; Phoenix keeps microseconds.
T0 = 1_795_323_189_000_000_000


def _t(micros: int) -> int:
    return T0 + micros * 1000


EXPECTED = {
    AGENT: Span(
        trace_id=TRACE,
        span_id=AGENT,
        parent_span_id=None,
        name="invoke_agent planner",
        start_ns=_t(898571),
        end_ns=_t(899631),
        kind="UNSPECIFIED",
        status="UNSET",
        status_message="",
        attributes={
            # Phoenix derives the two llm.input_messages keys from gen_ai.input.messages.
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "hi",
            "gen_ai.input.messages": '[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]',
            "gen_ai.operation.name": "invoke_agent",
            "openinference.span.kind": "AGENT",
        },
        events=(SpanEvent("toolspan.thought", _t(898607), {"toolspan.thought.content": "think"}),),
    ),
    PLAIN: Span(
        trace_id=TRACE,
        span_id=PLAIN,
        parent_span_id=AGENT,
        name="plain",
        start_ns=_t(899603),
        end_ns=_t(899621),
        kind="UNSPECIFIED",
        status="OK",
    ),
    BAD: Span(
        trace_id=TRACE,
        span_id=BAD,
        parent_span_id=AGENT,
        name="execute_tool bad",
        start_ns=_t(898910),
        end_ns=_t(899529),
        kind="UNSPECIFIED",
        status="ERROR",
        status_message="boom",
        attributes={"error.type": "ValueError", "openinference.span.kind": "TOOL"},
        events=(
            SpanEvent(
                "exception",
                _t(899472),
                {
                    "exception.type": "ValueError",
                    "exception.message": "boom",
                    "exception.escaped": "False",
                    "exception.stacktrace": STACK,
                },
            ),
        ),
    ),
    SEARCH: Span(
        trace_id=TRACE,
        span_id=SEARCH,
        parent_span_id=AGENT,
        name="execute_tool search",
        start_ns=_t(898701),
        end_ns=_t(898879),
        kind="UNSPECIFIED",
        status="UNSET",
        attributes={
            "int_attr": 7,
            "input.value": '{"q": 1}',
            "bool_attr": True,
            "float_attr": 1.5,
            "gen_ai.tool.name": "search",
            "gen_ai.operation.name": "execute_tool",
            "big": 4611686018427387904,
            "toolspan.execution_id": "exec_x",
            "tool.name": "search",
            "list_attr": ["a", "b"],
            "int_list": [1, 2],
            "openinference.span.kind": "TOOL",
        },
    ),
    SUB: Span(
        trace_id=TRACE,
        span_id=SUB,
        parent_span_id=SEARCH,
        name="plan sub",
        start_ns=_t(898822),
        end_ns=_t(898835),
        kind="UNSPECIFIED",
        status="UNSET",
    ),
}


def _load(name: str) -> Any:
    return json.loads((CAPTURES / name).read_text(encoding="utf-8"))


@pytest.fixture
def rest_doc() -> dict[str, Any]:
    return dict(_load("phoenix-20.26.1-spans.json"))


@pytest.fixture
def otlp_doc() -> dict[str, Any]:
    return dict(_load("phoenix-20.26.1-spans-otlpv1.json"))


def _by_id(spans: list[Span]) -> dict[str, Span]:
    return {s.span_id: s for s in spans}


def test_spans_endpoint_reads_every_field(rest_doc: dict[str, Any]) -> None:
    spans = spans_from_phoenix(rest_doc, origin="phx.json")
    assert [s.span_id for s in spans] == [AGENT, PLAIN, BAD, SEARCH, SUB]  # document order
    for span in spans:
        assert span == dataclasses.replace(EXPECTED[span.span_id], origin="phx.json")


def test_otlpv1_endpoint_reads_the_same_spans(otlp_doc: dict[str, Any]) -> None:
    spans = _by_id(spans_from_phoenix(otlp_doc))
    assert set(spans) == set(EXPECTED)
    for sid, span in spans.items():
        assert span == EXPECTED[sid], sid


def test_otlpv1_times_come_back_on_the_stored_microsecond(otlp_doc: dict[str, Any]) -> None:
    # Phoenix serialises int(datetime.timestamp() * 1e9): float noise below the microsecond.
    raw = otlp_doc["data"][0]
    assert raw["start_time_unix_nano"] % 1000 != 0
    span = spans_from_phoenix({"data": [raw], "next_cursor": None})[0]
    assert span.start_ns == EXPECTED[raw["span_id"]].start_ns


def test_bare_list_and_single_span_are_read(rest_doc: dict[str, Any]) -> None:
    items = rest_doc["data"]
    assert looks_like_phoenix(items)
    assert looks_like_phoenix(items[2])
    assert spans_from_phoenix(items) == spans_from_phoenix(rest_doc)
    assert spans_from_phoenix(items[2]) == [EXPECTED[BAD]]


def test_detection(rest_doc: dict[str, Any], otlp_doc: dict[str, Any]) -> None:
    assert looks_like_phoenix(rest_doc)
    assert looks_like_phoenix(otlp_doc)
    assert looks_like_phoenix({"data": [], "next_cursor": None})
    assert looks_like_phoenix({"detail": "Project not found"})
    not_phoenix: list[object] = [
        {},
        [],
        None,
        "text",
        {"data": []},  # a Jaeger v1 envelope with no traces
        {"data": [], "total": 0, "limit": 0, "offset": 0, "errors": None},
        {"data": [{"traceID": "ab", "spans": [], "processes": {}}]},
        {"resourceSpans": []},
        {"batches": []},
        {"trace": {"resourceSpans": []}},
        {"result": {"resourceSpans": []}},
        [{"traceId": "ab", "spanId": "cd", "startTimeUnixNano": "1"}],
        {"data": [rest_doc["data"][0], {"traceID": "ab"}]},
    ]
    for doc in not_phoenix:
        assert not looks_like_phoenix(doc), doc


def test_empty_page_reads_no_spans() -> None:
    assert spans_from_phoenix({"data": [], "next_cursor": None}) == []


def test_error_response_is_a_clear_error() -> None:
    with pytest.raises(BridgeReadError, match=r"^phx\.json: detail: Phoenix returned an error"):
        spans_from_phoenix({"detail": "Project not found"}, origin="phx.json")


@pytest.mark.parametrize(
    ("path", "value", "where", "what"),
    [
        (("context", "span_id"), "xyz", "data[3].context.span_id", "not a hex or base64 span id"),
        (("context", "trace_id"), 12, "data[3].context.trace_id", "not a hex or base64 trace id"),
        (("context",), None, "data[3].context", "not an object"),
        (("parent_id",), "nothex!", "data[3].parent_id", "not a hex or base64 span id"),
        (("start_time",), "yesterday", "data[3].start_time", "not an ISO 8601 time"),
        (("start_time",), "2026-02-30T00:00:00Z", "data[3].start_time", "not an ISO 8601 time"),
        (("end_time",), 5, "data[3].end_time", "not an ISO 8601 time"),
        (("status_code",), "FINE", "data[3].status_code", "unknown status code"),
        (("status_message",), 3, "data[3].status_message", "not a string"),
        (("attributes",), [1], "data[3].attributes", "not an object"),
        (("events",), {}, "data[3].events", "not a list"),
        (("name",), 7, "data[3].name", "not a string"),
        (("span_kind",), 7, "data[3].span_kind", "not a string"),
    ],
)
def test_bad_field_names_origin_and_path(
    rest_doc: dict[str, Any], path: tuple[str, ...], value: Any, where: str, what: str
) -> None:
    doc = copy.deepcopy(rest_doc)
    target = doc["data"][3]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(BridgeReadError) as info:
        spans_from_phoenix(doc, origin="traces/phx.json")
    assert str(info.value).startswith(f"traces/phx.json: {where}: {what}")
    assert info.value.issue is not None
    assert (info.value.issue.source, info.value.issue.field) == ("traces/phx.json", where)


def test_bad_event_time_names_the_event(rest_doc: dict[str, Any]) -> None:
    rest_doc["data"][2]["events"][0]["timestamp"] = "soon"
    with pytest.raises(BridgeReadError, match=r"^<phoenix>: data\[2\]\.events\[0\]\.timestamp: not an ISO"):
        spans_from_phoenix(rest_doc)


def test_bad_otlpv1_value_names_the_attribute(otlp_doc: dict[str, Any]) -> None:
    otlp_doc["data"][0]["attributes"][1]["value"] = {"int_value": "seven"}
    with pytest.raises(BridgeReadError, match=r"data\[0\]\.attributes\[1\]\.value\.intValue: not an integer"):
        spans_from_phoenix(otlp_doc)


def test_data_not_a_list_is_an_error() -> None:
    with pytest.raises(BridgeReadError, match=r"^<phoenix>: data: not a list"):
        spans_from_phoenix({"data": {"a": 1}, "next_cursor": None})


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("2026-11-22T04:53:09.898571+00:00", _t(898571)),
        ("2026-11-22T04:53:09.898571Z", _t(898571)),
        ("2026-11-22T04:53:09.898571", _t(898571)),  # no offset: UTC, as Phoenix stores it
        ("2026-11-22 04:53:09.5+00:00", T0 + 500_000_000),
        ("2026-11-22T04:53:09.123456789Z", T0 + 123_456_789),
        ("2026-11-22T06:53:09.000001+02:00", _t(1)),
        ("2026-11-22T03:23:09-0130", T0),
        ("2026-11-22T04:53:09+00:00", T0),
    ],
)
def test_iso_times(rest_doc: dict[str, Any], text: str, ns: int) -> None:
    raw = rest_doc["data"][1]
    raw["start_time"] = text
    assert spans_from_phoenix(raw)[0].start_ns == ns


def test_open_span_and_nested_attributes_and_missing_kind(rest_doc: dict[str, Any]) -> None:
    raw = rest_doc["data"][1]
    raw["end_time"] = None
    raw["attributes"] = {"a": {"b": 1, "c": {"d": [1, 2]}}, "e": None}
    del raw["span_kind"]
    span = spans_from_phoenix(raw)[0]
    assert span.end_ns is None
    assert span.attributes == {"a.b": 1, "a.c.d": [1, 2], "e": None}


def test_span_kind_unknown_is_not_an_attribute_and_attribute_wins(rest_doc: dict[str, Any]) -> None:
    raw = rest_doc["data"][3]
    raw["attributes"]["openinference.span.kind"] = "CHAIN"
    assert spans_from_phoenix(raw)[0].attributes["openinference.span.kind"] == "CHAIN"
    assert "openinference.span.kind" not in spans_from_phoenix(rest_doc["data"][1])[0].attributes


def test_otlpv1_kvlist_bytes_and_doubles(otlp_doc: dict[str, Any]) -> None:
    raw = otlp_doc["data"][1]
    null = dict.fromkeys(
        (
            "array_value",
            "bool_value",
            "bytes_value",
            "double_value",
            "int_value",
            "kvlist_value",
            "string_value",
        )
    )
    raw["attributes"] = [
        {"key": "b", "value": {**null, "bytes_value": "AQI="}},
        {"key": "inf", "value": {**null, "double_value": "Infinity"}},
        {
            "key": "kv",
            "value": {
                **null,
                "kvlist_value": {"values": [{"key": "x", "value": {**null, "int_value": "5"}}]},
            },
        },
        {"key": "none", "value": null},
    ]
    assert spans_from_phoenix(raw)[0].attributes == {
        "b": "AQI=",
        "inf": "Infinity",
        "kv": {"x": 5},
        "none": None,
    }


def test_readers_auto_detect_phoenix(
    rest_doc: dict[str, Any], otlp_doc: dict[str, Any], tmp_path: Path
) -> None:
    def bare(spans: list[Span]) -> list[Span]:
        return [dataclasses.replace(s, origin="") for s in spans]

    expected = [EXPECTED[s["context"]["span_id"]] for s in rest_doc["data"]]
    assert bare(spans_from_document(rest_doc)) == expected
    assert bare(spans_from_document(rest_doc["data"])) == expected
    assert _by_id(bare(spans_from_document(otlp_doc))) == EXPECTED
    assert describe(rest_doc) == "Phoenix"
    path = tmp_path / "phoenix.json"
    path.write_text(json.dumps(rest_doc), encoding="utf-8")
    spans, report = read_spans(path)
    assert bare(spans) == expected
    assert {s.origin for s in spans} == {f"{path}:1"}
    assert report.spans_read == 5


def test_readers_report_a_bad_phoenix_span_with_file_and_path(
    rest_doc: dict[str, Any], tmp_path: Path
) -> None:
    rest_doc["data"][3]["context"]["span_id"] = "xyz"
    path = tmp_path / "phoenix.json"
    path.write_text(json.dumps(rest_doc), encoding="utf-8")
    with pytest.raises(BridgeReadError, match=r"phoenix\.json:1: data\[3\]\.context\.span_id: not a hex"):
        read_spans(path)
    spans, report = read_spans(path, lenient=True)
    # Only the bad span is skipped; its four neighbours still load.
    good = [d["context"]["span_id"] for i, d in enumerate(rest_doc["data"]) if i != 3]
    assert sorted(s.span_id for s in spans) == sorted(good)
    assert report.spans_read == 4
    assert report.records_skipped == 1
    assert [(i.line, i.field) for i in report.issues] == [(1, "data[3].context.span_id")]


def test_json_text_attributes_are_folded_back(rest_doc: dict[str, Any]) -> None:
    # Phoenix parses tool.parameters / metadata / llm.prompt_template.variables (JSON text) and serves
    # them flattened; lists of objects come back with numeric segments.
    raw = rest_doc["data"][3]
    raw["attributes"] = {
        "tool.parameters.city": "Paris",
        "tool.parameters.days": 3,
        "tool.parameters.stops.0.name": "a",
        "tool.parameters.stops.1.name": "b",
        "tool.parameters.tags": ["x", "y"],
        "metadata.user.id": "u1",
        "llm.prompt_template.variables": ["v"],
        "tool.name": "weather",
    }
    attrs = spans_from_phoenix(raw)[0].attributes
    assert attrs == {
        "tool.parameters": json.dumps(
            {"city": "Paris", "days": 3, "stops": [{"name": "a"}, {"name": "b"}], "tags": ["x", "y"]}
        ),
        "metadata": '{"user": {"id": "u1"}}',
        "llm.prompt_template.variables": '["v"]',
        "tool.name": "weather",
        "openinference.span.kind": "TOOL",
    }


def test_json_text_attribute_already_text_is_left_alone(rest_doc: dict[str, Any]) -> None:
    raw = rest_doc["data"][3]
    raw["attributes"] = {"tool.parameters": "not json", "metadata": '{"a": 1}'}
    attrs = spans_from_phoenix(raw)[0].attributes
    assert attrs == {"tool.parameters": "not json", "metadata": '{"a": 1}', "openinference.span.kind": "TOOL"}
