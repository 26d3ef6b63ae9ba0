"""Hostile input: files that are not traces, bogus sizes, broken gzip, impossible times, non-finite numbers.

The corpus is generated here. Each case asserts the exact one-line error (file, position, field) in strict
mode, and in lenient mode that it is counted while the other inputs are still read.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolspan.bridge.readers import BridgeReadError, _sources, read_spans

NOT_A_TRACE = (
    "not a trace file (expected OTLP JSON or JSON Lines, Jaeger, Tempo or Phoenix JSON, OTLP protobuf, "
    "or gzip of one)"
)
TRACE = "0af7651916cd43dd8448eb211c80319c"


def span(n: int, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": TRACE,
        "spanId": f"{n:016x}",
        "name": f"op{n}",
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + n),
        "endTimeUnixNano": str(1_700_000_000_100_000_000 + n),
    }
    out.update(extra)
    return out


def line(*spans: dict[str, Any]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}) + "\n"


def good_file(tmp_path: Path) -> Path:
    path = tmp_path / "good.jsonl"
    path.write_text(line(span(1)) + line(span(2)))
    return path


def proto_request(n: int) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    sp = request.resource_spans.add().scope_spans.add().spans.add()
    sp.trace_id = bytes.fromhex(TRACE)
    sp.span_id = n.to_bytes(8, "big")
    sp.name = f"op{n}"
    sp.start_time_unix_nano = 1_700_000_000_000_000_000
    sp.end_time_unix_nano = 1_700_000_000_100_000_000
    return bytes(request.SerializeToString())


def framed(*messages: bytes) -> bytes:
    return b"".join(struct.pack(">I", len(m)) + m for m in messages)


# --- files that are not traces -------------------------------------------------------------------------

RANDOM = bytes([0x9C]) + random.Random(8).randbytes(2999)
PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
)
NOT_TRACES: dict[str, tuple[bytes, str]] = {
    "random.bin": (RANDOM, "it starts with the bytes " + RANDOM[:16].hex(" ") + "..."),
    "notes.txt": (
        b"hello world\nthis is not a trace\n",
        'it starts with the text "hello world\\nthis is not a trace\\n"',
    ),
    "long.txt": (b"x" * 100, 'it starts with the text "' + "x" * 40 + '"...'),
    "image.png": (PNG, "it is a PNG image"),
    "store.db": (
        b"SQLite format 3\0" + bytes(100),
        "it is an SQLite database (toolspan serve's store? read its traces over the server's API)",
    ),
    "zeros.bin": (b"\0" * 4096, "it starts with the bytes " + " ".join(["00"] * 16) + "..."),
    "blank-then-text.txt": (b"\n\n  \nplain text\n", 'it starts with the text "plain text\\n"'),
    "short.bin": (b"\x00\x01", "it starts with the bytes 00 01"),
    "string.json": (b'"just a string"\n', 'it starts with the text "\\"just a string\\"\\n"'),
}


@pytest.mark.parametrize("name", sorted(NOT_TRACES))
def test_a_file_that_is_not_a_trace_is_an_error_naming_it(tmp_path: Path, name: str) -> None:
    data, preview = NOT_TRACES[name]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(BridgeReadError) as info:
        read_spans(path)
    assert str(info.value) == f"{path}: {NOT_A_TRACE}; {preview}"
    assert "b'" not in str(info.value)  # never a Python bytes literal


def test_lenient_counts_a_non_trace_file_and_reads_the_others(tmp_path: Path) -> None:
    bad = tmp_path / "image.png"
    bad.write_bytes(PNG)
    spans, report = read_spans([bad, good_file(tmp_path)], lenient=True)
    assert [s.name for s in spans] == ["op1", "op2"]
    assert (report.records_skipped, report.sources_read) == (1, 2)
    assert [str(i) for i in report.issues] == [f"{bad}: {NOT_A_TRACE}; it is a PNG image"]


class Zeros(io.RawIOBase):
    """``/dev/zero`` without leaving the test: endless zero bytes, counting how many were asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.served = 0
        self.name = "/dev/zero"

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = len(buffer)
        buffer[:n] = bytes(n)
        self.served += n
        return n


@pytest.mark.parametrize("lenient", [False, True])
def test_endless_zeros_stop_at_once(lenient: bool) -> None:
    zeros = Zeros()
    stream = io.BufferedReader(zeros)
    if lenient:
        spans, report = read_spans(stream, lenient=True)
        assert (spans, report.records_skipped) == ([], 1)
    else:
        with pytest.raises(BridgeReadError, match=r"^/dev/zero: not a trace file"):
            read_spans(stream)
    assert zeros.served <= 1 << 17  # the sniffed head only


# --- sizes: length prefixes and records over the limit -----------------------------------------------


def test_a_bogus_length_prefix_after_good_messages_is_an_error_at_its_offset(tmp_path: Path) -> None:
    good = framed(proto_request(1), proto_request(2))
    path = tmp_path / "traces.binpb"
    path.write_bytes(good + b"\xff\xff\xff\xff" + proto_request(3))
    with pytest.raises(BridgeReadError) as info:
        read_spans(path)
    assert str(info.value) == (
        f"{path}:3: message 3 at byte {len(good):,}: length prefix 4,294,967,295 over the "
        "268,435,456-byte record limit; the rest of the input is skipped"
    )
    spans, report = read_spans(path, lenient=True)
    assert ([s.name for s in spans], report.records_skipped) == (["op1", "op2"], 1)


@pytest.mark.parametrize(
    ("prefix", "problem"),
    [
        (b"\x00\x00\x00\x00", "length prefix 0 (an empty message)"),
        (b"\x00\x00\x00\x05garbage", "the message does not start like an OTLP request (byte 0x67)"),
    ],
)
def test_an_impossible_frame_is_an_error(tmp_path: Path, prefix: bytes, problem: str) -> None:
    first = framed(proto_request(1))
    path = tmp_path / "traces.binpb"
    path.write_bytes(first + prefix)
    with pytest.raises(BridgeReadError) as info:
        read_spans(path)
    assert (
        str(info.value)
        == f"{path}:2: message 2 at byte {len(first)}: {problem}; the rest of the input is skipped"
    )


class Counting(io.RawIOBase):
    """A stream that serves ``data`` and counts the bytes asked of it."""

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self.data = io.BytesIO(data)
        self.largest = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self.largest = max(self.largest, len(buffer))
        return self.data.readinto(buffer)


def test_a_huge_length_prefix_on_a_short_file_never_allocates_its_size() -> None:
    source = Counting(struct.pack(">I", 200 << 20) + b"\x0a\x02ab")  # claims 200 MiB, holds 4 bytes
    spans, report = read_spans(io.BufferedReader(source, 1 << 16), lenient=True)
    assert spans == []
    assert [i.message for i in report.issues] == ["message 1: cut off at end of input (4 of 209715200 bytes)"]
    assert source.largest <= 1 << 20


@pytest.fixture
def small_records(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(_sources, "MAX_RECORD_BYTES", 1000)
    return 1000


def test_a_json_line_over_the_record_limit_is_a_bad_record_and_streaming_goes_on(
    tmp_path: Path, small_records: int
) -> None:
    huge = line(span(2, attributes=[{"key": "pad", "value": {"stringValue": "x" * 5000}}]))
    path = tmp_path / "t.jsonl"
    path.write_text(line(span(1)) + huge + line(span(3)))
    with pytest.raises(BridgeReadError) as info:
        read_spans(path)
    assert str(info.value) == f"{path}:2: a line over the 1,000-byte record limit ({len(huge):,} bytes)"
    spans, report = read_spans(path, lenient=True)
    assert ([s.name for s in spans], report.records_skipped) == (["op1", "op3"], 1)


def test_a_huge_first_line_is_reported_and_the_next_lines_read(tmp_path: Path, small_records: int) -> None:
    huge = line(span(1, name="x" * 5000))
    path = tmp_path / "t.jsonl"
    path.write_text(huge + line(span(2)))
    spans, report = read_spans(path, lenient=True)
    assert [s.name for s in spans] == ["op2"]
    assert [str(i) for i in report.issues] == [
        f"{path}:1: a line over the 1,000-byte record limit ({len(huge):,} bytes)"
    ]


def test_a_json_document_over_the_record_limit_is_an_error(tmp_path: Path, small_records: int) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"data": [{"traceID": TRACE, "spans": [], "pad": "x" * 5000}]}, indent=2))
    with pytest.raises(BridgeReadError) as info:
        read_spans(path)
    assert str(info.value) == f"{path}:1: a JSON document over the 1,000-byte record limit"


def test_a_protobuf_request_over_the_record_limit_is_an_error(tmp_path: Path, small_records: int) -> None:
    path = tmp_path / "trace.pb"
    path.write_bytes(proto_request(1) * 40)
    with pytest.raises(BridgeReadError) as info:
        read_spans(path)
    assert str(info.value) == f"{path}: a protobuf request over the 1,000-byte record limit"


# --- gzip ------------------------------------------------------------------------------------------------

GZ_TEXT = "".join(line(span(n)) for n in range(1, 41)).encode()


def decompressible(data: bytes) -> int:
    return len(zlib.decompressobj(31).decompress(data))


def gz_cut() -> bytes:
    data = gzip.compress(GZ_TEXT)
    return data[: len(data) - 40]


def gz_corrupt() -> bytes:
    data = bytearray(gzip.compress(GZ_TEXT))
    data[-8] ^= 0xFF  # the CRC-32 of the trailer
    return bytes(data)


def gz_bad_deflate() -> bytes:
    data = bytearray(gzip.compress(GZ_TEXT))
    data[10] = 0xFF  # first deflate block header: an invalid block type
    return bytes(data)


@pytest.mark.parametrize(
    ("make", "decompressed", "message"),
    [
        (gz_cut, decompressible(gz_cut()), "gzip data cut off after {n:,} decompressed bytes"),
        (gz_corrupt, len(GZ_TEXT), "corrupt gzip data after {n:,} decompressed bytes: CRC check failed 0x"),
        (
            gz_bad_deflate,
            0,
            "corrupt gzip data after 0 decompressed bytes: Error -3 while decompressing data",
        ),
    ],
)
def test_a_cut_or_corrupt_gzip_is_a_one_line_error_and_lenient_keeps_the_rest(
    tmp_path: Path, make: Callable[[], bytes], decompressed: int, message: str
) -> None:
    path = tmp_path / "traces.jsonl.gz"
    path.write_bytes(make())
    with pytest.raises(BridgeReadError) as info:
        read_spans(path)
    got = str(info.value)
    assert got.startswith(f"{path}: " + message.format(n=decompressed))
    assert "\n" not in got
    assert 0 < decompressed < len(GZ_TEXT) or make is not gz_cut  # the cut is in the middle
    spans, report = read_spans([path, good_file(tmp_path)], lenient=True)
    assert (report.records_skipped, [str(i) for i in report.issues]) == (1, [got])
    whole_lines = GZ_TEXT[:decompressed].count(b"\n")  # every line that came out whole was read
    assert [s.name for s in spans] == [f"op{n}" for n in range(1, whole_lines + 1)] + ["op1", "op2"]


def test_gzip_of_a_non_trace_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.gz"
    path.write_bytes(gzip.compress(b"hello world\n"))
    with pytest.raises(BridgeReadError) as info:
        read_spans(path)
    assert str(info.value) == f'{path}: {NOT_A_TRACE}; it starts with the text "hello world\\n"'


# --- times -----------------------------------------------------------------------------------------------

WHERE = "resourceSpans[0].scopeSpans[0].spans[0]"
RANGE = "(nanoseconds since the Unix epoch: 0 to 2**64-1)"


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        (
            {"startTimeUnixNano": "100000000000000000000000000"},
            f"startTimeUnixNano: out of range: 100000000000000000000000000 {RANGE}",
        ),
        (
            {"startTimeUnixNano": "18446744073709551616"},
            f"startTimeUnixNano: out of range: 18446744073709551616 {RANGE}",
        ),
        ({"startTimeUnixNano": "-5"}, f"startTimeUnixNano: out of range: -5 {RANGE}"),
        (
            {"endTimeUnixNano": "100000000000000000000000000"},
            f"endTimeUnixNano: out of range: 100000000000000000000000000 {RANGE}",
        ),
        ({"endTimeUnixNano": "1"}, "endTimeUnixNano: before the start time (1 < 1700000000000000001)"),
        ({"startTimeUnixNano": 1e26}, "startTimeUnixNano: not an integer of nanoseconds: 1e+26"),
    ],
)
def test_impossible_times_name_the_file_line_and_field(
    tmp_path: Path, fields: dict[str, Any], error: str
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(line(span(1, **fields)))
    with pytest.raises(BridgeReadError) as info:
        read_spans(path)
    assert str(info.value) == f"{path}:1: {WHERE}.{error}"


@pytest.mark.parametrize(
    ("backend", "error"),
    [
        ("stdlib", f"out of range: {10**26} {RANGE}"),
        ("auto", "not an integer of nanoseconds: 1e+26"),  # orjson reads integers over 64 bits as floats
    ],
)
def test_a_json_integer_time_beyond_64_bits_names_the_field(
    monkeypatch: pytest.MonkeyPatch, backend: str, error: str
) -> None:
    monkeypatch.setenv("TOOLSPAN_JSON", backend)
    with pytest.raises(BridgeReadError) as info:
        read_spans(line(span(1, startTimeUnixNano=10**26)).encode())
    assert str(info.value) == f"<bytes>:1: {WHERE}.startTimeUnixNano: {error}"


def test_the_largest_time_is_read() -> None:
    (got,), _ = read_spans(line(span(1, endTimeUnixNano=str(2**64 - 1))).encode())
    assert got.end_ns == 2**64 - 1


def jaeger(**fields: Any) -> bytes:
    sp = {
        "traceID": TRACE,
        "spanID": "0000000000000001",
        "operationName": "op",
        "startTime": 1_700_000_000_000_000,
        "duration": 5,
        "processID": "p1",
    }
    sp.update(fields)
    return json.dumps(
        {"data": [{"traceID": TRACE, "spans": [sp], "processes": {"p1": {"serviceName": "s"}}}]}
    ).encode()


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        (
            {"startTime": 10**17},
            f"startTime: out of range: {10**17} (microseconds must be 0 to (2**64-1)/1000)",
        ),
        ({"duration": -5}, "duration: out of range: -5 (microseconds must be 0 to (2**64-1)/1000)"),
        ({"startTime": -1}, "startTime: out of range: -1 (microseconds must be 0 to (2**64-1)/1000)"),
    ],
)
def test_impossible_jaeger_times_name_the_field(fields: dict[str, Any], error: str) -> None:
    with pytest.raises(BridgeReadError) as info:
        read_spans(jaeger(**fields))
    assert str(info.value) == f"<bytes>:1: data[0].spans[0].{error}"


def test_a_protobuf_span_ending_before_it_starts_is_a_bad_record() -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest.FromString(proto_request(1))
    request.resource_spans[0].scope_spans[0].spans[0].end_time_unix_nano = 5
    data = request.SerializeToString()
    with pytest.raises(BridgeReadError) as info:
        read_spans(data)
    assert str(info.value) == (
        "<bytes>: resource_spans[0].scope_spans[0].spans[0].end_time_unix_nano: before the start time "
        "(5 < 1700000000000000000)"
    )
    spans, report = read_spans(data, lenient=True)
    assert (spans, report.records_skipped) == ([], 1)


# --- non-finite numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["stdlib", "auto"])
def test_non_finite_numbers_read_as_the_otlp_json_strings(
    monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    monkeypatch.setenv("TOOLSPAN_JSON", backend)
    attributes = [
        {"key": "a", "value": {"doubleValue": "NaN"}},
        {"key": "b", "value": {"doubleValue": "-Infinity"}},
        {"key": "c", "value": {"doubleValue": 1.5}},
    ]
    text = line(span(1, attributes=attributes)).replace("1.5", "1e999")
    (got,), _ = read_spans(text.encode())
    assert got.attributes == {"a": "NaN", "b": "-Infinity", "c": "Infinity"}
    literal = line(span(1, attributes=[{"key": "d", "value": {"doubleValue": 0.25}}])).replace("0.25", "NaN")
    (got,), _ = read_spans(literal.encode())
    assert got.attributes == {"d": "NaN"}
    (got,), _ = read_spans(jaeger(tags=[{"key": "e", "type": "float64", "value": "-inf"}]))
    assert got.attributes["e"] == "-Infinity"
