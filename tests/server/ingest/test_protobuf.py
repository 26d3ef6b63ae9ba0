"""Store rows read straight from OTLP protobuf: the index columns of the partial span agree with those of
the full span, the stored bytes read back as the bridge reader reads the request, and the incrementally
kept trace summaries equal the ones recomputed from all spans."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.bridge_data import scenario
from tests.support.formats import otlp_proto_request, parity_trace
from tests.support.paths import TESTS
from toolspan.bridge.internal import ZERO_SPAN, ZERO_TRACE
from toolspan.bridge.model import Span
from toolspan.bridge.readers import read_spans
from toolspan.bridge.readers._otlp_proto import iter_proto_request, parse_request
from toolspan.bridge.readers._report import Ctx, ReadReport
from toolspan.server._ingest import protobuf
from toolspan.server._ingest.protobuf import rows_of_body, rows_of_request
from toolspan.server._rows.codec import decode, encode
from toolspan.server._rows.spans import Row, row_of_span
from toolspan.server._store.sqlite import SqliteStore
from toolspan.server._store.summaries import recompute_summaries

CORPUS = TESTS / "corpus"
FRAMEWORKS = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


def _sets() -> dict[str, list[Span]]:
    sets = {"scenario": scenario(), "parity": parity_trace()}
    for name in FRAMEWORKS:
        sets[name] = read_spans([str(CORPUS / name / "traces.jsonl")])[0]
    return sets


SETS = _sets()


def test_the_corpus_is_there() -> None:
    assert len(FRAMEWORKS) >= 8
    assert all(SETS[name] for name in FRAMEWORKS)


@pytest.mark.parametrize("name", sorted(SETS))
def test_protobuf_rows_index_and_store_each_span_as_the_reader_reads_it(name: str) -> None:
    body = otlp_proto_request(SETS[name]).SerializeToString()
    expected = [replace(s, origin="") for s in iter_proto_request(body, Ctx("b", False, ReadReport()))]
    request = otlp_proto_request(SETS[name])
    rows = rows_of_request(request, Ctx("b", False, ReadReport()))
    assert [decode(r.data) for r in rows] == expected
    assert all(isinstance(r.data, bytes) for r in rows)
    # Every column but the stored form is what the full span gives.
    assert [r._replace(data=b"") for r in rows] == [row_of_span(s)._replace(data=b"") for s in expected]
    assert any(r.is_tool for r in rows)


@pytest.mark.parametrize("name", sorted(SETS))
def test_a_body_gives_the_rows_of_its_request_whatever_shapes_are_known(name: str) -> None:
    # Read through the map twin, each span stored as the bytes it came in; the first read builds the
    # shapes, the second reads known shapes only: both are the rows of the parsed request, and every
    # column but the stored form is what the full span gives.
    request = otlp_proto_request(SETS[name])
    body = request.SerializeToString()
    expected = rows_of_request(request, Ctx("b", False, ReadReport()))
    full = [row_of_span(decode(r.data))._replace(data=b"") for r in expected]
    protobuf._SHAPES.clear()
    cold = rows_of_body(body, Ctx("b", False, ReadReport()))
    warm = rows_of_body(body, Ctx("b", False, ReadReport()))
    assert cold == warm == expected
    assert [r._replace(data=b"") for r in warm] == full


@pytest.mark.parametrize("name", sorted(SETS))
def test_a_body_prepared_from_its_plain_rows_is_what_its_rows_prepare(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A parse worker prepares a protobuf body's rows as plain tuples, never a ``Row`` of each: the same
    # values, events, summaries and counts as from the rows ``parse_body`` gives, with a span without a span
    # id rejected and the pending and ended records of one tool span merged alike.
    from toolspan.server._ingest import otlp
    from toolspan.server._ingest.otlp import PROTOBUF, parse_body, prepare_body, split_valid
    from toolspan.server._store.writes import prepare

    spans = SETS[name]
    tool = next(s for s in scenario() if row_of_span(s).is_tool and s.end_ns is not None)
    pending = replace(tool, end_ns=None, attributes={**tool.attributes, "only.pending": "kept"})
    nameless = replace(spans[0], span_id="0" * 16)
    body = otlp_proto_request([*spans, pending, tool, nameless]).SerializeToString()
    assert all(type(row) is tuple for row in protobuf.plain_rows_of_body(body, Ctx("b", False, ReadReport())))
    with monkeypatch.context() as patched:  # the worker's way never makes the body's Rows
        patched.setattr(otlp, "rows_of_body", None)
        prepared = prepare_body(body, PROTOBUF)
    assert prepared == prepare(*split_valid(parse_body(body, PROTOBUF)))
    again = any((s.trace_id, s.span_id) == (tool.trace_id, tool.span_id) for s in spans)  # the scenario's
    assert (prepared.rejected, prepared.duplicates) == (1, 1 + again)
    assert prepared.accepted == len(spans) + 2


def test_spans_of_a_known_shape_share_their_ids_texts_and_each_missing_id_stays_its_own() -> None:
    # One shape read whole, then known: a request's rows hold one text of a trace id, of a span id and of a
    # name (the server reads each once); a span without a trace id, or without a span id, has the zero id
    # of what it lacks, never the other's.
    tool = replace(
        next(s for s in SETS["scenario"] if row_of_span(s).is_tool and not s.events), parent_span_id=None
    )
    spans = [
        replace(tool, span_id=f"{n:016x}", parent_span_id=None if n == 1 else f"{1:016x}")
        for n in range(1, 5)
    ]
    request = otlp_proto_request(spans)
    pb_spans = request.resource_spans[0].scope_spans[0].spans
    pb_spans[2].trace_id = b""
    pb_spans[3].span_id = b""
    body = request.SerializeToString()
    protobuf._SHAPES.clear()
    rows_of_body(body, Ctx("b", False, ReadReport()))  # the shapes met
    rows = rows_of_body(body, Ctx("b", False, ReadReport()))
    assert [(r.trace_id, r.span_id, r.parent) for r in rows] == [
        (tool.trace_id, f"{1:016x}", None),
        (tool.trace_id, f"{2:016x}", f"{1:016x}"),
        (ZERO_TRACE, f"{3:016x}", f"{1:016x}"),
        (tool.trace_id, ZERO_SPAN, f"{1:016x}"),
    ]
    assert rows[1].trace_id is rows[0].trace_id
    assert rows[1].parent is rows[2].parent is rows[0].span_id
    assert rows[3].name is rows[0].name
    assert rows == rows_of_request(request, Ctx("b", False, ReadReport()))
    assert [r._replace(data=b"") for r in rows] == [
        row_of_span(decode(r.data))._replace(data=b"") for r in rows
    ]


def test_a_span_of_long_texts_is_read_but_its_shape_not_kept() -> None:
    span = replace(SETS["scenario"][0], name="x" * 5000, events=())
    body = otlp_proto_request([span]).SerializeToString()
    protobuf._SHAPES.clear()
    [row] = rows_of_body(body, Ctx("b", False, ReadReport()))
    assert row.name == span.name
    assert row._replace(data=b"") == row_of_span(decode(row.data))._replace(data=b"")
    assert protobuf._SHAPES == {}


def test_a_span_of_a_long_status_message_is_read_but_its_shape_not_kept() -> None:
    # The twin holds a span's status as its bytes: they count towards the texts a kept shape may hold.
    span = replace(SETS["scenario"][0], status="ERROR", status_message="x" * 5000, events=())
    body = otlp_proto_request([span]).SerializeToString()
    protobuf._SHAPES.clear()
    [row] = rows_of_body(body, Ctx("b", False, ReadReport()))
    assert row._replace(data=b"") == row_of_span(decode(row.data))._replace(data=b"")
    assert decode(row.data).status_message == span.status_message
    assert protobuf._SHAPES == {}


@pytest.mark.parametrize("chars", [100, 5_000, 20_000])
def test_a_span_is_found_in_the_body_whatever_the_size_of_its_length(chars: int) -> None:
    # A span's length before its bytes takes one, two or three bytes (past 127 and 16,383 bytes).
    span = replace(SETS["scenario"][0], attributes={**SETS["scenario"][0].attributes, "big": "x" * chars})
    request = otlp_proto_request([span, SETS["scenario"][1]])
    body = request.SerializeToString()
    spans = request.resource_spans[0].scope_spans[0].spans
    twin, _ = protobuf._index_types()
    assert protobuf._span_bytes(body, twin.FromString(body)) == [[[s.SerializeToString() for s in spans]]]
    [first, second] = rows_of_body(body, Ctx("b", False, ReadReport()))
    assert first.data.endswith(spans[0].SerializeToString())
    assert second.data.endswith(spans[1].SerializeToString())
    assert [first, second] == rows_of_request(request, Ctx("b", False, ReadReport()))


def test_an_index_attribute_not_a_string_is_never_taken_for_an_empty_string() -> None:
    # The same tool span with a conversation id that is an empty string (none), then the number 7: the shape
    # of the first is known when the second is read, and each gets the columns of its full span, through the
    # map and walked alike.
    tool = next(
        s for s in SETS["scenario"] if row_of_span(s).is_tool and s.end_ns is not None and not s.events
    )
    empty = replace(tool, attributes={**tool.attributes, "gen_ai.conversation.id": ""})
    number = replace(tool, span_id="f" * 16, attributes={**tool.attributes, "gen_ai.conversation.id": 7})
    protobuf._SHAPES.clear()
    for read in (
        lambda span: rows_of_body(
            otlp_proto_request([span]).SerializeToString(), Ctx("b", False, ReadReport())
        ),
        lambda span: rows_of_request(otlp_proto_request([span]), Ctx("b", False, ReadReport())),
    ):
        rows = [row for span in (empty, number) for row in read(span)]
        full = [row_of_span(decode(r.data))._replace(data=b"") for r in rows]
        assert [r._replace(data=b"") for r in rows] == full
        assert [r.conversation_id for r in rows] == [None, "7"]


def test_a_body_not_plainly_laid_out_is_read_as_the_otlp_type_reads_it() -> None:
    spans = SETS["scenario"]
    request = otlp_proto_request(spans)
    expected = rows_of_request(request, Ctx("b", False, ReadReport()))
    # An unknown group in the request (field 9, start and end group): the OTLP type skips it.
    grouped = request.SerializeToString() + bytes([0x4B, 0x4C])
    assert rows_of_body(grouped, Ctx("b", False, ReadReport())) == expected


def test_a_span_is_stored_as_the_bytes_it_came_in() -> None:
    # A span whose name comes twice (the last one counts): kept as received, read as the reader reads it.
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = otlp_proto_request(SETS["scenario"][:1])
    rs = request.resource_spans[0]
    ss = rs.scope_spans[0]
    span = ss.spans[0].SerializeToString() + _field(5, b"renamed")
    scope = _field(1, ss.scope.SerializeToString()) + _field(2, span)
    body = _field(1, _field(1, rs.resource.SerializeToString()) + _field(2, scope))
    [row] = rows_of_body(body, Ctx("b", False, ReadReport()))
    assert row.data.endswith(span)
    [expected] = rows_of_request(ExportTraceServiceRequest.FromString(body), Ctx("b", False, ReadReport()))
    assert row.name == "renamed" == decode(row.data).name
    assert row._replace(data=b"") == expected._replace(data=b"")
    assert decode(row.data) == decode(expected.data)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def test_a_json_row_holds_the_span_as_json() -> None:
    span = scenario()[0]
    row = row_of_span(span)
    assert row.data == encode(span)
    assert decode(row.data) == replace(span, origin="")


def _summaries(store: SqliteStore) -> list[tuple[object, ...]]:
    """Every trace summary but ``last_seen_ns`` (the commit clock)."""
    rows = store._db.execute("SELECT * FROM traces ORDER BY trace_id").fetchall()
    return [r[:7] + r[8:] for r in rows]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_incremental_summaries_equal_the_ones_recomputed_from_all_spans(tmp_path: Path, seed: int) -> None:
    spans = [s for name in sorted(SETS) for s in SETS[name]]
    rng = random.Random(seed)
    # Some spans first arrive as pending records (no end), then ended; batches in shuffled order.
    records = [replace(s, end_ns=None) for s in rng.sample(spans, len(spans) // 4)] + spans
    rng.shuffle(records)
    store = SqliteStore(str(tmp_path / "s.db"))
    try:
        for i in range(0, len(records), 37):
            store.ingest(records[i : i + 37])
        incremental = _summaries(store)
        with store._lock:
            traces = [r[0] for r in store._db.execute("SELECT trace_id FROM traces")]
            recompute_summaries(store._db, traces, 0)
        assert incremental == _summaries(store)
        assert len(incremental) == len({s.trace_id for s in spans})
    finally:
        store.close()


def test_a_second_root_that_starts_earlier_becomes_the_trace_root(tmp_path: Path) -> None:
    trace = "0" * 31 + "b"
    late = Span(trace, "1" * 16, None, "second", 2_000, 3_000)
    child = Span(trace, "3" * 16, "1" * 16, "child", 2_100, None)
    early = Span(trace, "2" * 16, None, "first", 1_000, None)
    store = SqliteStore(str(tmp_path / "r.db"))
    try:
        store.ingest([late, child])
        store.ingest([early])
        row = store.trace_row(trace)
        assert row is not None
        assert (row.root_name, row.root_ended, row.start_ns, row.end_ns, row.spans) == (
            "first",
            False,
            1_000,
            3_000,
            3,
        )
    finally:
        store.close()


def test_a_span_that_ends_before_it_starts_refuses_the_request_as_the_reader_does() -> None:
    from toolspan.bridge.readers import BridgeReadError
    from toolspan.server._ingest.otlp import PROTOBUF, IngestError, parse_body

    good, bad = scenario()[:2]
    body = otlp_proto_request([good, replace(bad, start_ns=10, end_ns=5)]).SerializeToString()
    with pytest.raises(BridgeReadError) as from_reader:
        list(iter_proto_request(body, Ctx("request body", False, ReadReport())))
    with pytest.raises(IngestError) as from_server:
        parse_body(body, PROTOBUF)
    assert from_server.value.status == 400
    assert from_server.value.message == str(from_reader.value)
    assert "spans[1].end_time_unix_nano: before the start time (5 < 10)" in from_server.value.message


def _second_span_not_utf8(field: int) -> bytes:
    """A body of two scenario spans, the second with one more ``field`` (a message) whose field 2 (an
    event's name, a status's message) is no UTF-8."""
    request = otlp_proto_request(SETS["scenario"][:2])
    rs = request.resource_spans[0]
    ss = rs.scope_spans[0]
    bad = ss.spans[1].SerializeToString() + _field(field, _field(2, b"\xff\xfe not UTF-8"))
    scope = _field(1, ss.scope.SerializeToString()) + _field(2, ss.spans[0].SerializeToString())
    return _field(1, _field(1, rs.resource.SerializeToString()) + _field(2, scope + _field(2, bad)))


def _refusals(body: bytes) -> tuple[int, str, str]:
    """``(status, message)`` the server refuses ``body`` with, and the bridge reader's message for it."""
    from toolspan.bridge.readers import BridgeReadError
    from toolspan.server._ingest.otlp import PROTOBUF, IngestError, parse_body

    with pytest.raises(BridgeReadError) as from_reader:
        parse_request(body, Ctx("request body", False, ReadReport()))
    with pytest.raises(IngestError) as from_server:
        parse_body(body, PROTOBUF)
    return from_server.value.status, from_server.value.message, str(from_reader.value).replace("\n", " ")


def test_an_event_that_is_no_valid_protobuf_refuses_the_request_with_the_otlp_types_message() -> None:
    # The twin reads a span's events as bytes; an event whose name is no UTF-8 is refused when the span
    # is read from its bytes, with the message the OTLP type gives the whole body.
    status, message, readers = _refusals(_second_span_not_utf8(11))
    assert (status, message) == (400, readers)
    assert "not a valid OTLP protobuf request" in message


@pytest.mark.parametrize("shape_known", [False, True])
def test_a_status_that_is_no_valid_protobuf_refuses_the_request_with_the_otlp_types_message(
    shape_known: bool,
) -> None:
    # The twin reads a span's status as bytes; a status message that is no UTF-8 is refused when the span
    # is read from its bytes, with the OTLP type's message, even when a span of the same shape is known.
    protobuf._SHAPES.clear()
    if shape_known:
        rows_of_body(
            otlp_proto_request(SETS["scenario"][:2]).SerializeToString(), Ctx("b", False, ReadReport())
        )
        assert protobuf._SHAPES
    status, message, readers = _refusals(_second_span_not_utf8(15))
    assert (status, message) == (400, readers)
    assert "not a valid OTLP protobuf request" in message


def _proto_rows(spans: list[Span]) -> list[Row]:
    return rows_of_request(otlp_proto_request(spans), Ctx("b", False, ReadReport()))


def test_protobuf_records_of_one_span_merge_as_the_bridge_merges_them(tmp_path: Path) -> None:
    from toolspan.bridge._coalesce import coalesce
    from toolspan.server._rows.cursor import ACT, OBSERVE, Cursor

    tool = next(s for s in scenario() if row_of_span(s).is_tool and s.end_ns is not None)
    pending = replace(tool, end_ns=None, attributes={**tool.attributes, "only.pending": "kept"})
    store = SqliteStore(str(tmp_path / "m.db"))
    try:
        first = store.ingest_rows(_proto_rows([pending]))
        again = store.ingest_rows(_proto_rows([pending]))
        ended = store.ingest_rows(_proto_rows([tool]))
        both = store.ingest_rows(_proto_rows([tool, pending]))
        assert [(r.accepted, r.duplicates) for r in (first, again, ended, both)] == [
            (1, 0),
            (1, 1),
            (1, 0),
            (2, 2),
        ]
        [stored] = store.trace_spans(tool.trace_id)
        assert stored == replace(coalesce([pending, tool])[0], origin="")
        assert stored.attributes["only.pending"] == "kept"
        log = store.events_after(Cursor(0), trace_id=None, conversation_id=None, limit=10)
        assert [(c.span_id, phase, span.end_ns) for c, phase, span in log] == [
            (tool.span_id, ACT, tool.end_ns),
            (tool.span_id, OBSERVE, tool.end_ns),
        ]
    finally:
        store.close()


@pytest.mark.parametrize(("rejected", "message"), [(0, ""), (2, "2 span(s) without a trace id or span id")])
def test_an_export_is_answered_with_the_bytes_of_the_otlp_response_types(rejected: int, message: str) -> None:
    # Nothing rejected: the empty message, without the protobuf runtime in the server process.
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    from toolspan.server._ingest.otlp import PROTOBUF, logs_response_body, response_body

    traces = ExportTraceServiceResponse()
    logs = ExportLogsServiceResponse()
    if rejected:
        traces.partial_success.rejected_spans = rejected
        traces.partial_success.error_message = message
        logs.partial_success.rejected_log_records = rejected
        logs.partial_success.error_message = message
    assert response_body(PROTOBUF, rejected, message) == traces.SerializeToString()
    assert logs_response_body(PROTOBUF, rejected, message) == logs.SerializeToString()
    parsed = ExportTraceServiceResponse.FromString(response_body(PROTOBUF, rejected, message))
    assert parsed.HasField("partial_success") == bool(rejected)
    assert parsed.partial_success.rejected_spans == rejected
