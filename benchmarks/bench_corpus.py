"""Benchmark the bridge on the formats of the frameworks' own traces (issue 29) and its streaming memory.

Two measurements, in one run:

- **Throughput.** For each corpus setup given (default: the Vercel AI SDK, MLflow, Logfire, Langfuse, DSPy,
  Microsoft Agent Framework, LangGraph.js and the OpenAI Agents SDK for JS), its ``traces.jsonl`` repeated
  with a new trace id per copy into a file of ``--traces`` traces; then, each in a fresh process,
  ``json.loads`` of every line (the baseline) and ``python -m toolspan convert FILE --to events -o
  /dev/null`` (standard library json), paired in ``--repeat`` rounds, each less the same command on an
  empty file (start-up). Reported: CPU seconds of each (best run), spans per second, and the ratio of the
  conversion to the baseline (best runs, and the median of the per-round ratios).
- **Streaming memory.** The largest corpus trace (``traces.jsonl`` by size) repeated ``--memory-traces``
  times (two sizes, the larger four times the smaller; both past the stream's bound of ``MAX_TRACES``
  trace indexes), streamed by ``toolspan convert --to events``'s code path at the default bounds with
  ``tracemalloc`` on, in a fresh process: the peak of Python allocations, and that every call was linked.

Results go to ``benchmarks/results/corpus.json``.

    python benchmarks/bench_corpus.py [--traces 2000] [--repeat 3] [--memory-traces 2048 8192]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_convert import BASELINE, best, count_spans, median, run_child  # noqa: E402

CORPUS = HERE.parent / "tests" / "corpus"
SETUPS = (
    "vercel_ai_generate",
    "vercel_ai_stream",
    "mlflow_native",
    "mlflow_genai",
    "logfire_openai_agents",
    "langfuse_openai",
    "dspy_react",
    "agent_framework",
    "langgraph_js_openinference",
    "openai_agents_js",
)

STREAM_PEAK = """
import json, sys, tracemalloc
from toolspan.bridge.readers import iter_spans
from toolspan.cli._main import _events_stream
tracemalloc.start()
observes = linked = 0
for event in _events_stream(iter_spans(sys.argv[1])):
    if event["type"] == "observe":
        observes += 1
        linked += event["requested_by"] is not None
_, peak = tracemalloc.get_traced_memory()
print(json.dumps({"peak_bytes": peak, "observes": observes, "linked": linked}))
"""


def repeated(setup: str, traces: int, target: Path) -> None:
    """``setup``'s OTLP JSON Lines, one copy a trace, each copy under a trace id of its own."""
    lines = (CORPUS / setup / "traces.jsonl").read_text("utf-8").splitlines()
    originals = sorted(
        {
            s["traceId"]
            for line in lines
            for rs in json.loads(line)["resourceSpans"]
            for ss in rs["scopeSpans"]
            for s in ss["spans"]
        }
    )
    with target.open("w", encoding="utf-8") as f:
        for n in range(traces):
            for line in lines:
                copy = line
                for k, original in enumerate(originals):
                    copy = copy.replace(original, f"{n + 1:024x}{k:08x}")
                f.write(copy + "\n")


def _minus(run: dict[str, float], empty: dict[str, float]) -> dict[str, float]:
    return {**run, "cpu_s": run["cpu_s"] - empty["cpu_s"], "wall_s": run["wall_s"] - empty["wall_s"]}


def throughput(setup: str, traces: int, rounds: int, py: str, tmp: Path) -> dict[str, Any]:
    path = tmp / f"{setup}.jsonl"
    repeated(setup, traces, path)
    spans = count_spans(path)
    empty = tmp / "empty.jsonl"
    empty.write_bytes(b"")
    base_runs, conv_runs, ratios = [], [], []
    env = {**os.environ, "TOOLSPAN_JSON": "stdlib"}

    def convert(file: Path) -> dict[str, float]:
        return run_child(
            [py, "-m", "toolspan", "convert", str(file), "--to", "events", "-o", os.devnull], env
        )

    for _ in range(rounds):
        # Each minus the same command on an empty file: interpreter start-up and imports cancel out.
        base = _minus(run_child([py, "-c", BASELINE, str(path)]), run_child([py, "-c", BASELINE, str(empty)]))
        conv = _minus(convert(path), convert(empty))
        base_runs.append(base)
        conv_runs.append(conv)
        ratios.append(conv["cpu_s"] / base["cpu_s"])
    b, c = best(base_runs), best(conv_runs)
    size = path.stat().st_size
    path.unlink()
    return {
        "traces": traces,
        "spans": spans,
        "bytes": size,
        "json_loads_cpu_s": round(b["cpu_s"], 3),
        "convert_cpu_s": round(c["cpu_s"], 3),
        "spans_per_s": round(spans / c["cpu_s"]),
        "ratio_best": round(c["cpu_s"] / b["cpu_s"], 2),
        "ratio_median": round(median(ratios), 2),
        "convert_peak_rss_bytes": c["peak_rss_bytes"],
    }


def memory(setup: str, traces: int, py: str, tmp: Path) -> dict[str, Any]:
    path = tmp / f"memory-{setup}-{traces}.jsonl"
    repeated(setup, traces, path)
    proc = subprocess.run([py, "-c", STREAM_PEAK, str(path)], capture_output=True, check=True, text=True)
    found: dict[str, Any] = json.loads(proc.stdout)
    size = path.stat().st_size
    path.unlink()
    return {"setup": setup, "traces": traces, "bytes": size, **found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setups", nargs="*", default=list(SETUPS))
    parser.add_argument("--traces", type=int, default=2000, help="traces in each throughput file")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of every throughput measurement")
    parser.add_argument("--memory-traces", type=int, nargs=2, default=[2048, 8192])
    parser.add_argument("--results", type=Path, default=HERE / "results" / "corpus.json")
    args = parser.parse_args(argv)
    py = sys.executable
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_before = os.getloadavg()
    out: dict[str, Any] = {"throughput": {}, "memory": []}
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        for setup in args.setups:
            print(f"throughput: {setup} ...", file=sys.stderr)
            out["throughput"][setup] = throughput(setup, args.traces, args.repeat, py, tmp)
        largest = max((p.stat().st_size, p.parent.name) for p in CORPUS.glob("*/traces.jsonl"))[1]
        for traces in args.memory_traces:
            print(f"memory: {largest} x {traces} ...", file=sys.stderr)
            out["memory"].append(memory(largest, traces, py, tmp))
    results = {
        "measured_at": started,
        "python": platform.python_version(),
        "machine": {"cpus": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()},
        **out,
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
