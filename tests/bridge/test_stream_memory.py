"""The streaming events path (``toolspan convert --to events``) links every tool call in bounded memory.

Measured with tracemalloc (allocations, not time) on large multi-trace files made from a corpus trace in
which the tool spans come before the model call that asked for them (one export request groups its spans
by instrumentation scope): once past its bounds, the peak stays flat as the file grows fourfold, and every
call is linked. The bounds are scaled down here (the same code, reaching them sooner: a fast test); at the
defaults the same holds past ``MAX_TRACES`` traces (docs/frameworks.md gives the figures).
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from tests.support.paths import TESTS
from toolspan.bridge import link
from toolspan.bridge.readers import iter_spans
from toolspan.cli import _main as cli
from toolspan.cli._main import _events_stream

LOOKAHEAD = 64
MAX_TRACES = 2 * LOOKAHEAD


@pytest.fixture(autouse=True)
def small_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(link, "LOOKAHEAD", LOOKAHEAD)
    monkeypatch.setattr(link, "MAX_TRACES", MAX_TRACES)
    monkeypatch.setattr(link, "MAX_ENTRIES", 8 * MAX_TRACES)
    monkeypatch.setattr(cli, "_MAX_ENDED", 4 * MAX_TRACES)


CORPUS = TESTS / "corpus"


def _big_file(tmp_path: Path, traces: int) -> Path:
    line = (CORPUS / "crewai_openinference" / "traces.jsonl").read_text("utf-8").strip()
    doc = json.loads(line)
    original = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    out = tmp_path / f"traces-{traces}.jsonl"
    with out.open("w", encoding="utf-8") as f:
        for n in range(traces):
            f.write(line.replace(original, f"{n + 1:032x}") + "\n")
    return out


def _peak(path: Path) -> tuple[int, int, int]:
    """(peak bytes allocated while streaming, observes, observes linked to a model call)."""
    tracemalloc.start()
    try:
        observes = linked = 0
        for event in _events_stream(iter_spans(str(path))):
            if event["type"] == "observe":
                observes += 1
                linked += event["requested_by"] is not None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, observes, linked


def test_streaming_events_stay_in_bounded_memory_on_a_large_multi_trace_file(tmp_path: Path) -> None:
    small, large = 4 * MAX_TRACES, 16 * MAX_TRACES  # both past every bound
    small_peak, small_observes, small_linked = _peak(_big_file(tmp_path, small))
    large_peak, large_observes, large_linked = _peak(_big_file(tmp_path, large))
    assert (small_observes, small_linked) == (3 * small, 3 * small)
    assert (large_observes, large_linked) == (3 * large, 3 * large)
    # Four times the traces, the same peak (within a margin): nothing grows with the file.
    assert large_peak < 1.3 * small_peak, (small_peak, large_peak)
