"""Smoke test of ``benchmarks/bench_page_served.py``: one round on a run long enough to be answered with its
first screen, against the real ``toolspan serve`` in Debian's Chromium; the summary figures are computed from
the round's own measurements. No timing assertions."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from tests.support.benchmarks import run_benchmark

pytestmark = [pytest.mark.e2e, pytest.mark.processes]


def test_one_round_measures_rows_the_whole_document_and_the_long_tasks(tmp_path: Path) -> None:
    out = tmp_path / "page_served.json"
    doc, stdout = run_benchmark("bench_page_served.py", out, "--calls", "300", "--rounds", "1")
    assert doc["calls"] == 300
    assert doc["spans"] > 300
    (round_,) = doc["rounds"]
    assert doc["rows_ms_median"] == statistics.median([round_["rows_ms"]]) > 0
    assert doc["whole_s_median"] == round_["whole_s"] > 0
    assert doc["longest_task_loading_ms"] == max(round_["load_long_ms"], default=0)
    assert doc["longest_task_scrolling_ms"] == max(round_["scroll_long_ms"], default=0)
    assert "300 calls: rows visible, cold" in stdout
