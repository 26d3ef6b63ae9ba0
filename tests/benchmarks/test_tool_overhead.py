"""Smoke test of ``benchmarks/tool_overhead.py``: a tiny run of the bare, hand-written and toolspan
contenders with this interpreter (no venvs), checking the JSON it writes. No timing assertions."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import REPO

pytestmark = pytest.mark.processes

SCRIPT = REPO / "benchmarks" / "tool_overhead.py"
ROWS = {
    ("bare", "bare"),
    ("handwritten", "minimal"),
    ("handwritten", "on"),
    ("handwritten", "off"),
    ("toolspan", "on"),
    ("toolspan", "genai"),
    ("toolspan", "nocapture"),
    ("toolspan", "off"),
}
# Attributes whose values differ between two spans (ids) or between the two contenders' tool names.
TABLE_HEADER = (
    "| contender | tracing | median ns/call | min ns/call | x minimal span | ns above bare "
    "| CPU ns/call | CPU x minimal span | paired CPU | paired wall | instructions/call "
    "| instr. x minimal span |"
)
PER_CALL = {"toolspan.execution_id", "toolspan.tool_call_id"}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    out = tmp_path_factory.mktemp("bench") / "tool_overhead.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--no-venv",
            "--only",
            "bare,handwritten,toolspan",
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


def rows_by_key(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["contender"], r["mode"]): r for r in doc["rows"]}


def test_writes_one_row_per_contender_and_mode(run: tuple[dict[str, Any], str]) -> None:
    doc, _ = run
    assert doc["benchmark"] == "tool_overhead"
    assert set(rows_by_key(doc)) == ROWS
    assert doc["run"]["quick"] is True
    assert doc["run"]["no_venv"] is True
    assert doc["run"]["rounds"] == 1
    assert set(doc["machine"]) >= {"cpu", "cores", "python", "implementation", "platform"}
    assert {"opentelemetry-api", "opentelemetry-sdk", "toolspan"} <= set(doc["versions"])


def test_every_row_has_its_numbers(run: tuple[dict[str, Any], str]) -> None:
    doc, _ = run
    n = doc["run"]["repeats"] * doc["run"]["rounds"]
    for key, row in rows_by_key(doc).items():
        assert "error" not in row, (key, row.get("error"))
        assert len(row["samples_ns"]) == n
        assert row["samples"] == n
        assert 0 < row["min_ns"] <= row["median_ns"], key
        assert len(row["cpu_samples_ns"]) == n
        assert 0 < row["cpu_min_ns"] <= row["cpu_median_ns"], key
        assert row["in_process_bare_median_ns"] > 0
    rows = rows_by_key(doc)
    assert rows[("handwritten", "minimal")]["x_handwritten"] == 1.0
    assert rows[("handwritten", "minimal")]["cpu_x_handwritten"] == 1.0
    assert "x_handwritten" not in rows[("bare", "bare")]
    assert rows[("bare", "bare")]["above_bare_ns"] == 0
    assert rows[("bare", "bare")]["cpu_above_bare_ns"] == 0
    for key in [("handwritten", "off"), ("toolspan", "off")]:
        assert "above_bare_ns" in rows[key]
        assert "paired_above_bare_ns" in rows[key]
    # toolspan's on rows time the minimal hand-written span in the same process too.
    for key in [("toolspan", "on"), ("toolspan", "genai"), ("toolspan", "nocapture")]:
        assert rows[key]["paired_x_handwritten"] > 0
        assert rows[key]["reference_calls"] > 0
    assert "paired_x_handwritten" not in rows[("handwritten", "on")]
    assert "above_bare_ns" not in rows[("toolspan", "on")]


def test_spans_reach_the_noop_exporter_only_with_tracing_on(run: tuple[dict[str, Any], str]) -> None:
    doc, _ = run
    for (contender, mode), row in rows_by_key(doc).items():
        if mode in ("on", "minimal", "genai", "nocapture"):
            # Every call made a span; none was dropped at this size (the queue holds 2048).
            assert row["spans_exported"] == row["calls"] + row["reference_calls"] > 0, (contender, mode)
            assert row["spans_dropped"] == 0
            assert row["sample_span"]["name"] == "execute_tool get_forecast"
        else:
            assert row["spans_exported"] == 0, (contender, mode)
            assert row["spans_dropped"] == 0
            assert row["sample_span"] is None


def test_handwritten_span_carries_toolspans_attributes(run: tuple[dict[str, Any], str]) -> None:
    rows = rows_by_key(run[0])
    hand = rows[("handwritten", "on")]["sample_span"]["attributes"]
    tool = rows[("toolspan", "on")]["sample_span"]["attributes"]
    assert set(hand) == set(tool)
    assert {k: v for k, v in hand.items() if k not in PER_CALL} == {
        k: v for k, v in tool.items() if k not in PER_CALL
    }
    for key in PER_CALL:
        assert hand[key][:5] == tool[key][:5]


def test_minimal_span_carries_only_the_genai_tool_call_attributes(run: tuple[dict[str, Any], str]) -> None:
    rows = rows_by_key(run[0])
    minimal = rows[("handwritten", "minimal")]["sample_span"]["attributes"]
    call_id = minimal.pop("gen_ai.tool.call.id")
    assert call_id.startswith("call_")
    assert len(call_id) == 21
    assert minimal == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_forecast",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.arguments": '{"city": "Paris", "days": 3}',
        "gen_ai.tool.call.result": '{"city": "Paris", "days": 3, "forecast": "sunny", "temperature_c": 21}',
    }


def test_genai_row_writes_only_genai_keys(run: tuple[dict[str, Any], str]) -> None:
    attrs = rows_by_key(run[0])[("toolspan", "genai")]["sample_span"]["attributes"]
    assert sorted(attrs) == [
        "gen_ai.operation.name",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.tool.description",
        "gen_ai.tool.name",
        "gen_ai.tool.type",
    ]


def test_capture_off_row_records_no_content(run: tuple[dict[str, Any], str]) -> None:
    attrs = rows_by_key(run[0])[("toolspan", "nocapture")]["sample_span"]["attributes"]
    assert not {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "input.value", "output.value"} & set(
        attrs
    )
    assert attrs["toolspan.tool.state"] == "COMPLETED"


def test_targets_and_table(run: tuple[dict[str, Any], str]) -> None:
    doc, stdout = run
    names = [t["target"] for t in doc["targets"]]
    genai = "toolspan GenAI conventions <= 1.05x minimal GenAI span"
    default = "toolspan default settings <= 1.15x minimal GenAI span"
    off = "toolspan tracing off <= 300 ns above the bare call"
    assert names == 3 * [genai, default, off] + [genai, default]
    clocks = [t["clock"] for t in doc["targets"]]
    assert clocks == 3 * ["wall"] + 3 * ["cpu"] + 3 * ["paired cpu"] + 2 * ["paired wall"]
    assert all(isinstance(t["met"], bool) for t in doc["targets"])
    assert TABLE_HEADER in stdout
    assert stdout.count("| toolspan @tool |") == 4
    assert "| hand-written OTel span | on, minimal GenAI span (reference) |" in stdout


def test_quick_run_times_only_and_pairs_the_wall_clock_too(run: tuple[dict[str, Any], str]) -> None:
    doc, _ = run
    assert doc["run"]["instructions"] is None
    assert doc["run"]["processor"] == "batch"
    rows = rows_by_key(doc)
    assert all("instructions" not in row for row in rows.values())
    for key in [("toolspan", "on"), ("toolspan", "genai"), ("toolspan", "nocapture")]:
        assert rows[key]["paired_wall_x_handwritten"] > 0
    assert "paired_wall_x_handwritten" not in rows[("handwritten", "minimal")]


def _load_tool_overhead() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("tool_overhead", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tool_overhead"] = module
    spec.loader.exec_module(module)
    return module


def test_instructions_per_call_subtract_the_shorter_run_thread_by_thread() -> None:
    per_call = _load_tool_overhead().per_call
    # Thread 1 calls the tool; thread 2 (the processor's worker) and a thread only the longer run had.
    low = {1: 1_000_000, 2: 10_000}
    high = {1: 3_000_000, 2: 210_000, 3: 50_000}
    assert per_call(low, high, 1_000) == {"total": 2_250.0, "main_thread": 2_000.0, "other_threads": 250.0}


@pytest.mark.parametrize(
    ("only", "message"),
    [("nosuch", "unknown contender 'nosuch'"), ("handwritten:nosuch", "handwritten has no mode 'nosuch'")],
)
def test_unknown_rows_are_refused_in_one_line(only: str, message: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--no-venv",
            "--only",
            only,
            "--output",
            str(tmp_path / "x.json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "x.json").exists()


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="instruction counts need valgrind")
def test_instruction_counts_sit_beside_the_wall_clock(tmp_path: Path) -> None:
    out = tmp_path / "tool_overhead.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--no-venv",
            "--only",
            "handwritten:minimal,handwritten:off",
            "--instructions",
            "--instr-calls",
            "100",
            "--instr-low",
            "0",
            "--instr-warmup",
            "20",
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["run"]["instructions"]["calls"] == 100
    rows = rows_by_key(doc)
    assert set(rows) == {("handwritten", "minimal"), ("handwritten", "off")}
    minimal, off = rows[("handwritten", "minimal")], rows[("handwritten", "off")]
    for row in (minimal, off):
        counted = row["instructions"]
        assert counted["calls"] == 100
        assert counted["total"] == pytest.approx(counted["main_thread"] + counted["other_threads"], abs=0.2)
    # A recording SDK span costs more than the same code over the API's no-op tracer.
    assert minimal["instructions"]["total"] > off["instructions"]["total"] > 0
    assert minimal["instructions_x_handwritten"] == 1.0
    assert 0 < off["instructions_x_handwritten"] < 1
    line = next(ln for ln in proc.stdout.splitlines() if "minimal GenAI span (reference)" in ln)
    assert f"| 1.00x | - | - | {minimal['instructions']['total']:,.0f}" in line
    assert line.rstrip().endswith(" | 1.00x |")
