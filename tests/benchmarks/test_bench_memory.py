"""Smoke test of ``benchmarks/bench_memory.py``: a ``--quick`` run against the real ``toolspan serve`` and the
real Jaeger, checking that the figures are computed from each round's peak resident sets and that every large
attribute was read back whole (the benchmark refuses otherwise). No timing or size assertions."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.benchmarks import run_benchmark

pytestmark = [pytest.mark.e2e, pytest.mark.processes]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    out = tmp_path_factory.mktemp("bench") / "memory.json"
    return run_benchmark("bench_memory.py", out, "--quick", "--count", "2", "--mib", "0.5")


def test_quick_run_is_one_round_of_each_server_with_the_asked_attribute(
    run: tuple[dict[str, Any], str],
) -> None:
    doc, _ = run
    assert (doc["benchmark"], doc["quick"], doc["rounds"], doc["count"]) == ("memory", True, 1, 2)
    assert doc["attribute_bytes"] == 512 * 1024
    assert {side: len(rounds) for side, rounds in doc["rounds_results"].items()} == {
        "toolspan": 1,
        "jaeger": 1,
    }


def test_growth_per_mib_is_the_growth_over_the_attributes_sent(run: tuple[dict[str, Any], str]) -> None:
    doc, _ = run
    mib = doc["attribute_bytes"] / (1 << 20)
    for side, rounds in doc["rounds_results"].items():
        for result in rounds:
            one, many = result["one"], result["many"]
            assert one["per_attribute_mib"] == pytest.approx(one["growth_mib"] / mib, abs=0.02), side
            assert many["per_attribute_mib"] == pytest.approx(
                many["growth_mib"] / (mib * many["count"]), abs=0.02
            ), side
            assert many["growth_mib"] >= one["growth_mib"] >= 0, side


def test_the_table_has_a_row_per_figure_with_the_ratio_of_the_medians(
    run: tuple[dict[str, Any], str],
) -> None:
    doc, stdout = run
    assert len(doc["figures"]) == 3
    for row in doc["figures"]:
        assert row["figure"] in stdout
        jaeger = row["jaeger"]["median"]
        if jaeger:
            assert row["ratio"] == pytest.approx(row["toolspan"]["median"] / jaeger, abs=0.01)
