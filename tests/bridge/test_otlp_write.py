"""``toolspan.bridge._otlp_write``: neutral spans to OTLP JSON, read back by the bridge field for field."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.bridge_data import TRACE_1, TRACE_2, scenario
from toolspan.bridge._otlp_write import to_otlp_json
from toolspan.bridge.model import Span, SpanEvent, SpanLink, span_fields
from toolspan.bridge.readers import spans_from_document

S1 = "00000000000000a1"
S2 = "00000000000000a2"


def _round_trip(spans: list[Span]) -> list[Span]:
    # Through JSON text, as it travels over HTTP.
    return spans_from_document(json.loads(json.dumps(to_otlp_json(spans), ensure_ascii=False)))


def _key(spans: list[Span]) -> list[str]:
    return sorted(json.dumps(span_fields(s), sort_keys=True) for s in spans)


def test_one_span_in_full() -> None:
    span = Span(
        TRACE_1,
        S2,
        S1,
        "execute_tool t",
        10,
        25,
        "CLIENT",
        "ERROR",
        "boom",
        {"s": "x", "i": 3, "f": 1.5, "b": True, "n": None, "l": [1, "a"], "d": {"k": [False]}},
        (SpanEvent("exception", 20, {"exception.type": "ValueError"}),),
        (SpanLink(TRACE_2, S1, {"why": "replay"}),),
        {"service.name": "app"},
        "toolspan",
    )
    assert to_otlp_json([span]) == {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "app"}}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "toolspan"},
                        "spans": [
                            {
                                "traceId": TRACE_1,
                                "spanId": S2,
                                "parentSpanId": S1,
                                "name": "execute_tool t",
                                "kind": 3,
                                "startTimeUnixNano": "10",
                                "endTimeUnixNano": "25",
                                "attributes": [
                                    {"key": "s", "value": {"stringValue": "x"}},
                                    {"key": "i", "value": {"intValue": "3"}},
                                    {"key": "f", "value": {"doubleValue": 1.5}},
                                    {"key": "b", "value": {"boolValue": True}},
                                    {"key": "n", "value": {}},
                                    {
                                        "key": "l",
                                        "value": {
                                            "arrayValue": {
                                                "values": [{"intValue": "1"}, {"stringValue": "a"}]
                                            }
                                        },
                                    },
                                    {
                                        "key": "d",
                                        "value": {
                                            "kvlistValue": {
                                                "values": [
                                                    {
                                                        "key": "k",
                                                        "value": {
                                                            "arrayValue": {"values": [{"boolValue": False}]}
                                                        },
                                                    }
                                                ]
                                            }
                                        },
                                    },
                                ],
                                "events": [
                                    {
                                        "timeUnixNano": "20",
                                        "name": "exception",
                                        "attributes": [
                                            {"key": "exception.type", "value": {"stringValue": "ValueError"}}
                                        ],
                                    }
                                ],
                                "links": [
                                    {
                                        "traceId": TRACE_2,
                                        "spanId": S1,
                                        "attributes": [{"key": "why", "value": {"stringValue": "replay"}}],
                                    }
                                ],
                                "status": {"code": 2, "message": "boom"},
                            }
                        ],
                    }
                ],
            }
        ]
    }
    assert [span_fields(s) for s in _round_trip([span])] == [span_fields(span)]


def test_an_unended_root_span_has_no_end_and_no_parent() -> None:
    span = Span(TRACE_1, S1, None, "act", 5, None)
    (raw,) = to_otlp_json([span])["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert raw == {
        "traceId": TRACE_1,
        "spanId": S1,
        "name": "act",
        "kind": 1,
        "startTimeUnixNano": "5",
        "status": {"code": 0},
    }
    assert [span_fields(s) for s in _round_trip([span])] == [span_fields(span)]


def test_the_golden_scenario_reads_back_unchanged() -> None:
    spans = scenario()
    assert _key(_round_trip(spans)) == _key(spans)


def test_resources_and_scopes_group_in_first_seen_order() -> None:
    a = Span(TRACE_1, S1, None, "a", 1, 2, resource={"service.name": "one"}, scope="x")
    b = Span(TRACE_1, S2, None, "b", 1, 2, resource={"service.name": "two"}, scope="x")
    c = Span(TRACE_2, S1, None, "c", 1, 2, resource={"service.name": "one"}, scope="y")
    doc = to_otlp_json([a, b, c])
    assert [
        [(sc["scope"]["name"], [s["name"] for s in sc["spans"]]) for sc in block["scopeSpans"]]
        for block in doc["resourceSpans"]
    ] == [[("x", ["a"]), ("y", ["c"])], [("x", ["b"])]]
    assert [s.name for s in _round_trip([a, b, c])] == ["a", "c", "b"]


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=6), st.sampled_from(["UNSET", "OK", "ERROR"])
)
def test_any_attribute_values_read_back_unchanged(attrs: dict[str, Any], status: str) -> None:
    span = Span(TRACE_1, S1, None, "s", 1, 2, "SERVER", status, "m" if status == "ERROR" else "", attrs)
    assert [span_fields(s) for s in _round_trip([span])] == [span_fields(span)]


def test_non_finite_floats_read_back_as_the_model_holds_them() -> None:
    span = Span(TRACE_1, S1, None, "s", 1, 2, attributes={"x": [float("inf"), float("-inf"), float("nan")]})
    (back,) = _round_trip([span])
    assert back.attributes == {"x": ["Infinity", "-Infinity", "NaN"]}
