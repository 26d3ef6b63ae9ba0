"""Bad input: strict mode names source, line and field; lenient mode skips, counts and keeps the rest."""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolspan.bridge.readers import BridgeReadError, ReadIssue, read_spans, spans_from_document


def span(n: int, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": f"{n:016x}",
        "name": f"op{n}",
        "startTimeUnixNano": str(1_000 + n),
        "endTimeUnixNano": str(2_000 + n),
        "attributes": [{"key": "k", "value": {"stringValue": "v"}}],
    }
    out.update(extra)
    return out


def request(*scope_span_lists: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
                "scopeSpans": [{"scope": {"name": "s"}, "spans": spans} for spans in scope_span_lists],
            }
        ]
    }


def jsonl(tmp_path: Path, *docs: Any, tail: str = "") -> Path:
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs) + tail)
    return path


def test_strict_error_names_file_line_and_json_path_of_the_field(tmp_path: Path) -> None:
    bad = request([span(1)], [span(2), span(3), span(4), span(5), span(6), span(7, spanId="zz-not-an-id")])
    path = jsonl(tmp_path, request([span(8)]), bad)
    with pytest.raises(BridgeReadError) as info:
        read_spans(path)
    assert str(info.value) == (
        f"{path}:2: resourceSpans[0].scopeSpans[1].spans[5].spanId: "
        "not a hex or base64 span id: 'zz-not-an-id'"
    )
    assert info.value.issue == ReadIssue(
        str(path),
        2,
        "resourceSpans[0].scopeSpans[1].spans[5].spanId",
        "not a hex or base64 span id: 'zz-not-an-id'",
    )


@pytest.mark.parametrize(
    ("bad", "field", "message"),
    [
        ({"traceId": 42}, "traceId", "not a hex or base64 trace id: 42"),
        ({"startTimeUnixNano": "soon"}, "startTimeUnixNano", "not an integer of nanoseconds: 'soon'"),
        ({"startTimeUnixNano": None}, "startTimeUnixNano", "missing"),
        ({"kind": "SPAN_KIND_SIDEWAYS"}, "kind", "unknown span kind: 'SPAN_KIND_SIDEWAYS'"),
        ({"status": {"code": 7}}, "status.code", "unknown status code: 7"),
        ({"name": ["x"]}, "name", "not a string: ['x']"),
        (
            {"attributes": [{"key": "a", "value": {"intValue": "1.5"}}]},
            "attributes[0].value.intValue",
            "not an integer: '1.5'",
        ),
        (
            {"attributes": [{"key": "a", "value": {"arrayValue": {"values": [{"boolValue": "yes"}]}}}]},
            "attributes[0].value.arrayValue.values[0].boolValue",
            "not a boolean: 'yes'",
        ),
        ({"attributes": [{"key": 3, "value": {}}]}, "attributes[0].key", "not a string: 3"),
        (
            {"events": [{"timeUnixNano": "1", "name": "e"}, {"timeUnixNano": "x"}]},
            "events[1].timeUnixNano",
            "not an integer of nanoseconds: 'x'",
        ),
        (
            {"links": [{"traceId": "a!b", "spanId": ""}]},
            "links[0].traceId",
            "not a hex or base64 trace id: 'a!b'",
        ),
        (
            {"attributes": [{"key": "b", "value": {"bytesValue": "%%%"}}]},
            "attributes[0].value.bytesValue",
            "not base64: '%%%'",
        ),
    ],
)
def test_strict_errors_name_the_exact_field(bad: dict[str, Any], field: str, message: str) -> None:
    doc = request([span(1), span(2, **bad)])
    with pytest.raises(BridgeReadError) as info:
        spans_from_document(doc, origin="req.json")
    assert str(info.value) == f"req.json: resourceSpans[0].scopeSpans[0].spans[1].{field}: {message}"


def test_lenient_skips_bad_spans_keeps_the_rest_and_counts(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path,
        request([span(1), span(2, spanId=7), span(3)]),
        {
            "resourceSpans": [
                {"resource": {"attributes": "oops"}, "scopeSpans": [{"spans": [span(4), span(5)]}]}
            ]
        },
        request([span(6)]),
    )
    with path.open("a") as f:
        f.write("{not json}\n")
        f.write(json.dumps(request([span(7)])) + "\n")
    spans, report = read_spans(path, lenient=True)
    assert [s.name for s in spans] == ["op1", "op3", "op6", "op7"]
    assert report.spans_read == 4
    assert report.records_skipped == 4  # span 2, spans 4 and 5 (their resource), the bad line
    assert [(i.line, i.field, i.skipped) for i in report.issues] == [
        (1, "resourceSpans[0].scopeSpans[0].spans[1].spanId", 1),
        (2, "resourceSpans[0].resource.attributes", 2),
        (4, "", 1),
    ]
    assert report.issues[2].message.startswith("invalid JSON: ")


def test_a_last_line_cut_mid_write_is_reported_not_raised(tmp_path: Path) -> None:
    full = json.dumps(request([span(2)]))
    path = jsonl(tmp_path, request([span(1)]), tail=full[: len(full) // 2])
    spans, report = read_spans(path)  # strict: still fine
    assert [s.name for s in spans] == ["op1"]
    (issue,) = report.issues
    assert (issue.source, issue.line, issue.skipped) == (str(path), 2, 1)
    assert issue.message.startswith("last line cut off mid-write: ")
    assert report.records_skipped == 1


def test_a_bad_line_in_the_middle_is_an_error_in_strict_mode(tmp_path: Path) -> None:
    path = jsonl(tmp_path, request([span(1)]))
    with path.open("a") as f:
        f.write('{"resourceSpans": [\n')
        f.write(json.dumps(request([span(2)])) + "\n")
    with pytest.raises(BridgeReadError, match=r"traces\.jsonl:2: invalid JSON: "):
        read_spans(path)


def test_pretty_printed_document_with_a_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    text = json.dumps(request([span(1)]), indent=2)
    path.write_text(text.replace('"op1"', '"op1",,', 1))
    with pytest.raises(BridgeReadError) as info:
        read_spans(path)
    line = next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if '"op1",,' in ln)
    assert str(info.value).startswith(f"{path}: invalid JSON at line {line} column ")


def test_unknown_documents_and_server_errors_are_read_errors() -> None:
    with pytest.raises(
        BridgeReadError, match=r"^doc: not a trace document of a known format \(keys: hello\)$"
    ):
        spans_from_document({"hello": 1}, origin="doc")
    with pytest.raises(
        BridgeReadError, match="the server returned an error instead of a trace: 'trace not found'"
    ):
        spans_from_document({"error": {"httpCode": 404, "message": "trace not found"}}, origin="doc")


def test_jaeger_errors_name_the_trace_and_span_path() -> None:
    doc = {
        "data": [
            {
                "traceID": "ab",
                "processes": {"p1": {"serviceName": "s", "tags": []}},
                "spans": [
                    {
                        "traceID": "ab",
                        "spanID": "01",
                        "operationName": "a",
                        "startTime": 5,
                        "duration": 1,
                        "processID": "p1",
                    },
                    {
                        "traceID": "ab",
                        "spanID": "02",
                        "operationName": "b",
                        "startTime": 5,
                        "duration": 1,
                        "processID": "p1",
                        "tags": [{"key": "n", "type": "int64", "value": "12x"}],
                    },
                ],
            }
        ]
    }
    with pytest.raises(BridgeReadError) as info:
        spans_from_document(doc, origin="j.json")
    assert str(info.value) == "j.json: data[0].spans[1].tags[0].value: not an int64: '12x'"
    doc["data"][0]["spans"][1]["processID"] = "p9"
    with pytest.raises(BridgeReadError, match=r"data\[0\]\.spans\[1\]\.tags"):
        spans_from_document(doc)


def test_jaeger_envelope_errors_are_reported_as_issues() -> None:
    doc = {"data": [], "errors": [{"code": 404, "msg": "trace not found", "traceID": "ab"}]}
    spans, report = read_spans(doc)
    assert spans == []
    assert [(i.field, i.message, i.skipped) for i in report.issues] == [
        ("errors", "the server reported: 'trace not found'", 0)
    ]


# --- property-based ------------------------------------------------------------------------------

JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
SPAN_FIELDS = [
    "traceId",
    "spanId",
    "parentSpanId",
    "name",
    "kind",
    "startTimeUnixNano",
    "endTimeUnixNano",
    "attributes",
    "events",
    "links",
    "status",
]


@st.composite
def mutated_documents(draw: st.DrawFn) -> tuple[dict[str, Any], int]:
    """A valid request of N spans, then span-level damage: junk fields, wrong types, junk records."""
    n_scopes = draw(st.integers(1, 3))
    lists = [[span(10 * s + i) for i in range(draw(st.integers(0, 4)))] for s in range(n_scopes)]
    doc = request(*lists)
    total = sum(len(x) for x in lists)
    for spans in doc["resourceSpans"][0]["scopeSpans"]:
        for i in range(len(spans["spans"])):
            action = draw(st.sampled_from(["keep", "junk_field", "wrong_type", "replace", "deep"]))
            if action == "junk_field":
                spans["spans"][i][draw(st.text(max_size=8))] = draw(JUNK)
            elif action == "wrong_type":
                spans["spans"][i][draw(st.sampled_from(SPAN_FIELDS))] = draw(JUNK)
            elif action == "replace":
                spans["spans"][i] = draw(JUNK)
            elif action == "deep":
                spans["spans"][i]["attributes"].append(
                    {"key": "x", "value": {draw(st.text(max_size=12)): draw(JUNK)}}
                )
    return doc, total


@st.composite
def structurally_damaged(draw: st.DrawFn) -> dict[str, Any]:
    doc = request([span(1), span(2)], [span(3)])
    doc["extra"] = draw(JUNK)
    target = draw(
        st.sampled_from(
            [
                ("resourceSpans",),
                ("resourceSpans", 0),
                ("resourceSpans", 0, "resource"),
                ("resourceSpans", 0, "scopeSpans"),
                ("resourceSpans", 0, "scopeSpans", 0),
                ("resourceSpans", 0, "scopeSpans", 0, "scope"),
                ("resourceSpans", 0, "scopeSpans", 1, "spans"),
                ("resourceSpans", 0, "resource", "attributes"),
            ]
        )
    )
    node: Any = doc
    for key in target[:-1]:
        node = node[key]
    node[target[-1]] = draw(JUNK)
    return doc


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_documents())
def test_random_span_damage_strict_raises_only_bridge_errors_and_lenient_accounts_for_every_record(
    case: tuple[dict[str, Any], int],
) -> None:
    doc, total = case
    with contextlib.suppress(BridgeReadError):
        spans_from_document(copy.deepcopy(doc))
    spans, report = read_spans(json.dumps(doc).encode(), lenient=True)
    assert report.spans_read == len(spans)
    assert report.spans_read + report.records_skipped == total
    assert report.records_skipped == len(report.issues)


@settings(max_examples=100, deadline=None)
@given(structurally_damaged())
def test_random_structural_damage_never_escapes_as_another_exception(doc: dict[str, Any]) -> None:
    with contextlib.suppress(BridgeReadError):
        spans_from_document(copy.deepcopy(doc))
    spans, report = read_spans(json.dumps(doc).encode(), lenient=True)
    assert report.spans_read == len(spans) <= 3
    assert report.spans_read + report.records_skipped >= 1 or spans == []
    assert all(i.skipped >= 1 for i in report.issues)


def test_phoenix_documents_are_detected_and_read_span_by_span_in_lenient_mode() -> None:
    pytest.importorskip("toolspan.bridge.readers._phoenix")
    item = {
        "context": {"trace_id": "0af7651916cd43dd8448eb211c80319c", "span_id": "00f067aa0ba902b7"},
        "name": "x",
        "span_kind": "INTERNAL",
        "start_time": "2024-01-01T00:00:00Z",
        "end_time": "2024-01-01T00:00:01Z",
        "status_code": "OK",
        "attributes": {},
    }
    doc = {"data": [item, dict(item, start_time="garbage")], "next_cursor": None}
    with pytest.raises(BridgeReadError, match=r"^p\.json: data\[1\]\.start_time: "):
        spans_from_document(doc, origin="p.json")
    spans, report = read_spans(json.dumps(doc).encode(), lenient=True)
    assert [s.span_id for s in spans] == ["00f067aa0ba902b7"]
    assert [(i.field, i.skipped) for i in report.issues] == [("data[1].start_time", 1)]
