"""Smoke test of ``benchmarks/bench_vs_jaeger.py``: a ``--quick`` run against the real ``toolspan serve`` and
the real Jaeger (its UI in Debian's Chromium), checking that every figure is computed from the spans each
server stored and gave back. No timing assertions."""

from __future__ import annotations

import importlib.util
import statistics
from typing import Any

import pytest

from tests.support.benchmarks import run_benchmark
from tests.support.paths import REPO

pytestmark = [pytest.mark.e2e, pytest.mark.processes]

SCRIPT = REPO / "benchmarks" / "bench_vs_jaeger.py"
FIGURES = [
    "stored spans/s",
    "acknowledged spans/s",
    "server CPU per span (us)",
    "peak RSS after the ingest (MiB)",
    "peak RSS, end of round (MiB)",
    "1k-span trace as JSON (ms): `/api/traces/{id}/tree` vs `/api/v3/traces/{id}`",
    "1k-span trace as JSON (ms): `/api/traces/{id}/otlp` vs `/api/traces/{id}`",
    "1k-span trace as JSON, first read (ms): `/api/traces/{id}/tree` vs `/api/v3/traces/{id}`",
    "1k-span trace as JSON, first read (ms): `/api/traces/{id}/otlp` vs `/api/v3/traces/{id}`",
    "page of the 1k-span trace, rows visible, cold (ms)",
    "page of the 2,000-tool-call run, rows visible, cold (ms)",
]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    out = tmp_path_factory.mktemp("bench") / "vs_jaeger.json"
    return run_benchmark("bench_vs_jaeger.py", out, "--quick")


def test_quick_run_is_one_round_of_each_server(run: tuple[dict[str, Any], str]) -> None:
    doc, _ = run
    assert doc["benchmark"] == "vs_jaeger"
    assert doc["quick"] is True
    assert doc["rounds"] == 1
    assert {side: len(rounds) for side, rounds in doc["rounds_results"].items()} == {
        "toolspan": 1,
        "jaeger": 1,
    }
    assert doc["ingest"]["spans"] == 5_120
    assert doc["ingest"]["requests"] == 10
    assert set(doc["machine"]) >= {"cpu", "cores", "python", "platform"}


def test_every_span_sent_was_read_back_from_each_server(run: tuple[dict[str, Any], str]) -> None:
    doc, _ = run
    sent = doc["ingest"]
    for side, rounds in doc["rounds_results"].items():
        for result in rounds:
            ingest = result["ingest"]
            assert ingest["spans"] == ingest["spans_read_back"] == sent["spans"], side
            assert ingest["traces"] == ingest["traces_read_back"] == sent["traces"] > 1, side


def test_rates_are_the_spans_read_back_over_the_clock(run: tuple[dict[str, Any], str]) -> None:
    doc, _ = run
    for side, rounds in doc["rounds_results"].items():
        for result in rounds:
            ingest = result["ingest"]
            spans = ingest["spans_read_back"]
            assert ingest["stored_spans_per_s"] == pytest.approx(spans / ingest["stored_s"], rel=1e-3), side
            assert ingest["acknowledged_spans_per_s"] == pytest.approx(
                spans / ingest["acknowledged_s"], rel=1e-3
            )
            assert ingest["cpu_us_per_span"] == pytest.approx(ingest["cpu_s"] / spans * 1e6, abs=0.01)
            assert ingest["cpu_s"] > 0
            assert result["peak_rss_end_mib"] >= ingest["peak_rss_mib"] > 0


def test_trace_reads_and_pages_were_measured_on_the_trace_sent(run: tuple[dict[str, Any], str]) -> None:
    doc, _ = run
    assert doc["trace_1k_spans"] == 1_000
    assert doc["big_run"]["calls"] == 2_000
    assert doc["big_run"]["spans"] > 2_000
    routes = {
        "toolspan": {"tree": "/api/traces/{id}/tree", "raw": "/api/traces/{id}/otlp"},
        "jaeger": {"v3": "/api/v3/traces/{id}", "v1": "/api/traces/{id}"},
    }
    for side, rounds in doc["rounds_results"].items():
        for result in rounds:
            # The script refuses an answer that does not hold the trace's 1,000 spans.
            assert {name: q["path"] for name, q in result["query_1k"].items()} == routes[side]
            for q in result["query_1k"].values():
                assert len(q["ms"]) == doc["query_repeats"]
                assert q["bytes"] > 1_000
            for page in ("page_1k", "page_big"):
                assert result[page]["frame_ms"] >= result[page]["dom_ms"] > 0, (side, page)


def test_the_first_reads_are_made_from_the_stored_spans(run: tuple[dict[str, Any], str]) -> None:
    """toolspan's first read of each view finds no rendering kept (the trace was waited for without
    reading it), and every read after it finds the one kept."""
    doc, _ = run
    (result,) = doc["rounds_results"]["toolspan"]
    views = len(result["query_1k"])
    assert result["renders_during_query"] == {"misses": views, "hits": views * (doc["query_repeats"] - 1)}
    assert "renders_during_query" not in doc["rounds_results"]["jaeger"][0]


def test_the_table_is_the_medians_and_ratios_of_the_rounds(run: tuple[dict[str, Any], str]) -> None:
    doc, stdout = run
    rows = {row["figure"]: row for row in doc["figures"]}
    assert list(rows) == FIGURES
    ts, jg = doc["rounds_results"]["toolspan"], doc["rounds_results"]["jaeger"]
    stored = rows["stored spans/s"]
    assert stored["toolspan"]["median"] == statistics.median(r["ingest"]["stored_spans_per_s"] for r in ts)
    assert stored["jaeger"]["median"] == statistics.median(r["ingest"]["stored_spans_per_s"] for r in jg)
    tree = rows[FIGURES[5]]
    assert tree["toolspan"]["median"] == statistics.median(x for r in ts for x in r["query_1k"]["tree"]["ms"])
    assert tree["jaeger"]["min"] == min(x for r in jg for x in r["query_1k"]["v3"]["ms"])
    first = rows[FIGURES[7]]  # each round's first read of the trace
    assert first["toolspan"]["max"] == max(r["query_1k"]["tree"]["ms"][0] for r in ts)
    assert first["jaeger"]["median"] == statistics.median(r["query_1k"]["v3"]["ms"][0] for r in jg)
    first_raw = rows[FIGURES[8]]
    assert first_raw["toolspan"]["min"] == min(r["query_1k"]["raw"]["ms"][0] for r in ts)
    assert first_raw["jaeger"] == first["jaeger"]
    for row in rows.values():
        assert row["ratio"] == round(row["toolspan"]["median"] / row["jaeger"]["median"], 2)
        assert row["load"] >= 0
        assert f"| {row['figure']} |" in stdout
        assert f"| {row['ratio']:.2f}x |" in stdout
    assert "| figure | toolspan serve: median (min to max) | Jaeger: median (min to max) |" in stdout


def test_requests_carry_the_generated_ids_as_bytes() -> None:
    """The OTLP JSON (hex ids) turned into the protobuf an SDK sends: ids as their bytes."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    spec = importlib.util.spec_from_file_location("bench_vs_jaeger", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    span = {
        "traceId": "0123456789abcdef0123456789abcdef",
        "spanId": "0011223344556677",
        "parentSpanId": "8899aabbccddeeff",
        "name": "execute_tool lookup",
        "kind": 1,
        "startTimeUnixNano": "1760000000000000000",
        "endTimeUnixNano": "1760000000000000500",
        "attributes": [{"key": "gen_ai.tool.name", "value": {"stringValue": "lookup"}}],
        "status": {"code": 2, "message": "failed"},
    }
    body = module.protobuf(
        {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": [span]}]}]}
    )
    decoded = ExportTraceServiceRequest.FromString(body).resource_spans[0].scope_spans[0].spans[0]
    assert decoded.trace_id.hex() == "0123456789abcdef0123456789abcdef"
    assert decoded.span_id.hex() == "0011223344556677"
    assert decoded.parent_span_id.hex() == "8899aabbccddeeff"
    assert decoded.end_time_unix_nano - decoded.start_time_unix_nano == 500
    assert decoded.status.code == 2
    assert decoded.attributes[0].value.string_value == "lookup"
    assert module.last_traces([body]) == {"0123456789abcdef0123456789abcdef"}
