"""Smoke test of ``benchmarks/bench_instructions.py``: a ``--quick`` run under the real callgrind, checking
that each figure is the difference of its two counts over the spans between them, that the runs covered the
spans asked (the real ``toolspan serve`` sent every request), and that the table shows each phase next to its
peer. No instruction-count assertions."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.support.benchmarks import run_benchmark

pytestmark = [
    pytest.mark.processes,
    pytest.mark.skipif(shutil.which("valgrind") is None, reason="instruction counts need valgrind"),
]

PHASES = ("parse", "prepare", "store", "serve", "records", "decode")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    out = tmp_path_factory.mktemp("bench") / "instructions.json"
    return run_benchmark("bench_instructions.py", out, "--quick", "--phases", ",".join(PHASES))


def test_each_figure_is_the_difference_of_its_two_counts_over_the_spans_between(
    run: tuple[dict[str, Any], str],
) -> None:
    doc, _ = run
    assert doc["benchmark"] == "instructions"
    assert doc["quick"] is True
    assert sorted(doc["phases"]) == sorted(PHASES)
    for phase, result in doc["phases"].items():
        low, high = result["runs"]
        assert high["count"] > low["count"] > 0, phase
        assert result["spans"] == high["spans"] - low["spans"] > 0, phase
        assert result["ir_per_span"] == pytest.approx((high["ir"] - low["ir"]) / result["spans"], abs=0.1)


def test_the_ingest_runs_cover_the_requests_and_the_reads_whole_traces(
    run: tuple[dict[str, Any], str],
) -> None:
    doc, _ = run
    made = doc["input"]
    assert made["spans"] == 5120
    assert made["requests"] == 10
    for phase in ("parse", "prepare", "store", "serve"):
        assert [r["count"] for r in doc["phases"][phase]["runs"]] == [5, 10]
        assert doc["phases"][phase]["runs"][1]["spans"] == made["spans"]
    for phase in ("records", "decode"):
        assert [r["spans"] for r in doc["phases"][phase]["runs"]] == [1000, 3000]


def test_the_table_shows_each_phase_with_its_peer_and_their_ratio(run: tuple[dict[str, Any], str]) -> None:
    doc, stdout = run
    phases = doc["phases"]
    rows = {row["phase"]: row for row in doc["figures"]}
    assert {phase: row["peer"] for phase, row in rows.items()} == {
        "prepare": "parse",
        "store": "insert",
        "serve": "store",
        "decode": "records",
    }
    assert (rows["store"]["peer_ir_per_span"], rows["store"]["ratio"]) == (None, None)  # insert: not run
    for phase, row in rows.items():
        if row["peer"] not in phases:
            continue
        own, theirs = phases[phase]["ir_per_span"], phases[row["peer"]]["ir_per_span"]
        assert (row["ir_per_span"], row["peer_ir_per_span"]) == (own, theirs)
        assert row["ratio"] == pytest.approx(own / theirs, abs=0.01)
        assert f"| {phase} | {own:,.0f} | {row['peer']} | {theirs:,.0f} | {own / theirs:.2f}x |" in stdout


def test_the_servers_count_is_its_threads_counts(run: tuple[dict[str, Any], str]) -> None:
    doc, stdout = run
    serve = doc["phases"]["serve"]
    for r in serve["runs"]:
        assert set(r["threads"]) == {"event_loop", "others"}
        assert r["threads"]["event_loop"] > 0
        assert r["threads"]["others"] > 0
        assert sum(r["threads"].values()) == r["ir"]
    split = serve["threads_ir_per_span"]
    assert sum(split.values()) == pytest.approx(serve["ir_per_span"], abs=0.2)
    assert f"serve, by thread: the event loop {split['event_loop']:,.0f}," in stdout
