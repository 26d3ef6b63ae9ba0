"""Normalisation of ids, times, kinds, statuses and values (``_values``, Jaeger tags)."""

from __future__ import annotations

from typing import Any

import pytest

from toolspan.bridge.readers._jaeger import tag_value
from toolspan.bridge.readers._values import (
    FieldError,
    any_value,
    attributes,
    end_nanos,
    kind,
    nanos,
    parent_id,
    span_id,
    status,
    trace_id,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("5B8EFFF798038103D269B633813FC60C", "5b8efff798038103d269b633813fc60c"),
        ("W47/95gDgQPSabYzgT/HAA==", "5b8efff798038103d269b633813fc700"),
        ("W47_95gDgQPSabYzgT_HAA==", "5b8efff798038103d269b633813fc700"),  # URL-safe base64
        ("0000000000000001", "00000000000000000000000000000001"),  # 64-bit Jaeger id, padded
        ("ff", "000000000000000000000000000000ff"),
        ("", "0" * 32),  # missing
    ],
)
def test_trace_ids(raw: str, expected: str) -> None:
    assert trace_id(raw) == expected


def test_span_and_parent_ids() -> None:
    assert span_id("7uGbfsPBsQA=") == "eee19b7ec3c1b100"
    assert span_id("EEE19B7EC3C1B174") == "eee19b7ec3c1b174"
    assert parent_id("") is None
    assert parent_id(None) is None
    assert parent_id("0000000000000000") is None
    assert parent_id("AAAAAAAAAAE=") == "0000000000000001"
    for bad in ("xyz", "W47/95gDgQPSabYzgT/HAA==", 12, "0" * 17):
        with pytest.raises(FieldError, match="not a hex or base64 span id"):
            span_id(bad)


def test_times() -> None:
    assert nanos("1581452772000000321") == 1581452772000000321
    assert nanos(5) == 5
    assert end_nanos(None) is None
    assert end_nanos("0") is None
    assert end_nanos(0) is None
    assert end_nanos("12") == 12
    for bad in (1.5, True, "1e9", None):
        with pytest.raises(FieldError):
            nanos(bad)


def test_kinds_from_numbers_enum_names_and_jaeger_values() -> None:
    assert [kind(v) for v in (None, 0, 1, 2, 3, 4, 5)] == [
        "UNSPECIFIED",
        "UNSPECIFIED",
        "INTERNAL",
        "SERVER",
        "CLIENT",
        "PRODUCER",
        "CONSUMER",
    ]
    assert kind("SPAN_KIND_CONSUMER") == "CONSUMER"
    assert kind("server") == "SERVER"
    with pytest.raises(FieldError, match="unknown span kind: 9"):
        kind(9)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, ("UNSET", "")),
        ({}, ("UNSET", "")),
        ({"code": 2, "message": "boom"}, ("ERROR", "boom")),
        ({"code": "STATUS_CODE_OK"}, ("OK", "")),
        (
            {"code": "STATUS_CODE_ERROR", "deprecatedCode": "DEPRECATED_STATUS_CODE_UNKNOWN_ERROR"},
            ("ERROR", ""),
        ),
        ({"deprecatedCode": "DEPRECATED_STATUS_CODE_UNKNOWN_ERROR"}, ("ERROR", "")),  # legacy sender
        ({"deprecatedCode": 2}, ("ERROR", "")),
        ({"deprecatedCode": "DEPRECATED_STATUS_CODE_OK"}, ("UNSET", "")),
    ],
)
def test_statuses(raw: Any, expected: tuple[str, str]) -> None:
    assert status(raw) == expected


def test_every_any_value_kind() -> None:
    assert any_value({"stringValue": "s"}) == "s"
    assert any_value({"boolValue": False}) is False
    assert any_value({"intValue": "9007199254740993"}) == 9007199254740993  # > 2**53 stays exact
    assert any_value({"intValue": 7}) == 7
    assert any_value({"doubleValue": 2}) == 2.0
    assert isinstance(any_value({"doubleValue": 2}), float)
    assert any_value({"doubleValue": "NaN"}) == "NaN"  # non-finite doubles stay strict JSON
    assert any_value({"doubleValue": "-Infinity"}) == "-Infinity"
    assert any_value({"doubleValue": 1e999}) == "Infinity"
    assert any_value({"bytesValue": "AQID"}) == "AQID"
    assert any_value({"bytesValue": "-_8"}) == "+/8="  # URL-safe in, standard padded base64 out
    assert any_value({"arrayValue": {}}) == []
    assert any_value({"arrayValue": {"values": [{"intValue": "1"}, {}]}}) == [1, None]
    assert any_value({"kvlistValue": {"values": [{"key": "a", "value": {"boolValue": True}}]}}) == {"a": True}
    assert any_value({}) is None
    assert any_value(None) is None


def test_attribute_lists_tolerate_an_omitted_value_and_reject_bad_items() -> None:
    assert attributes([{"key": "a"}, {"key": "b", "value": {"stringValue": "x"}}]) == {"a": None, "b": "x"}
    assert attributes(
        [{"key": "a", "value": {"stringValue": "1"}}, {"key": "a", "value": {"intValue": 2}}]
    ) == {"a": 2}
    with pytest.raises(FieldError) as info:
        attributes([{"key": "a", "value": {"stringValue": "x"}}, ["not", "a", "kv"]])
    assert (info.value.path, info.value.message) == ("[1]", "not a key/value object: ['not', 'a', 'kv']")
    with pytest.raises(FieldError) as info:
        attributes([{"key": "a", "value": {"stringValue": 5}}])
    assert (info.value.path, info.value.message) == ("[0].value.stringValue", "not a string: 5")


def test_jaeger_typed_tags() -> None:
    assert tag_value({"key": "k", "type": "string", "value": "v"}) == "v"
    assert tag_value({"key": "k", "type": "int64", "value": "9223372036854775222"}) == 9223372036854775222
    assert tag_value({"key": "k", "type": "int64", "value": -3}) == -3
    assert tag_value({"key": "k", "type": "float64", "value": 72.5}) == 72.5
    assert tag_value({"key": "k", "type": "bool", "value": True}) is True
    assert tag_value({"key": "k", "type": "bool", "value": "false"}) is False
    assert tag_value({"key": "k", "type": "binary", "value": "AAAwOQ=="}) == "AAAwOQ=="
    assert tag_value({"key": "k", "value": "untyped means string"}) == "untyped means string"
    with pytest.raises(FieldError, match="unknown tag type: 'complex'"):
        tag_value({"key": "k", "type": "complex", "value": 1})


def test_every_protobuf_any_value_kind() -> None:
    # The protobuf reader reads a non-empty text without asking which value is set: an empty text, another
    # kind of value (whose text reads as "") and no value at all must each still read as what they are.
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList

    from toolspan.bridge.readers._otlp_proto import attributes as proto_attributes

    items = [
        KeyValue(key="text", value=AnyValue(string_value="s")),
        KeyValue(key="empty", value=AnyValue(string_value="")),
        KeyValue(key="unset"),
        KeyValue(key="false", value=AnyValue(bool_value=False)),
        KeyValue(key="int", value=AnyValue(int_value=0)),
        KeyValue(key="double", value=AnyValue(double_value=2.5)),
        KeyValue(key="nan", value=AnyValue(double_value=float("nan"))),
        KeyValue(key="bytes", value=AnyValue(bytes_value=b"\x01\x02\x03")),
        KeyValue(
            key="array", value=AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=1), AnyValue()]))
        ),
        KeyValue(key="kvlist", value=AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key="a")]))),
        KeyValue(key="text", value=AnyValue(string_value="last")),  # a key repeated: the last one
    ]
    assert proto_attributes(items) == {
        "text": "last",
        "empty": "",
        "unset": None,
        "false": False,
        "int": 0,
        "double": 2.5,
        "nan": "NaN",
        "bytes": "AQID",
        "array": [1, None],
        "kvlist": {"a": None},
    }
