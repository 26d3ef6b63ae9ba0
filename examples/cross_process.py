"""A tool hands work to a worker process through a queue; the worker's sub-plan lands under the tool span.

    python examples/cross_process.py [OUT_DIR]

What it shows: the ``summarize_remote`` tool puts ``toolspan.inject()`` (W3C ``traceparent``, and
baggage carrying the tool's ``execution_id`` / ``tool_call_id``) on a ``multiprocessing`` queue with the
job; the worker process, with its own tracer provider and trace file, opens
``toolspan.plan("summarize", context=toolspan.extract(carrier))``. Its spans join the caller's trace as
children of the tool span, and the plan records which tool call started it. What to look at: the tree
printed from both processes' trace files read together (the worker's ``plan summarize`` and its
``count_words`` tool sit under ``execute_tool summarize_remote``), and ``OUT_DIR/*.jsonl``.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path
from typing import Any

import toolspan
from toolspan.bridge.readers import read_spans
from toolspan.bridge.views import to_tree

TOOL_CALL = {"type": "tool_use", "id": "toolu_01Summarize", "name": "summarize_remote", "input": {"text": ""}}
TEXT = "OpenTelemetry carries the trace context across processes in a traceparent header"


# --- the worker process ------------------------------------------------------------------------------


@toolspan.tool
def count_words(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


def worker(jobs: Any, results: Any, trace_file: str) -> None:
    provider = toolspan.configure(service_name="summarizer-worker", file=trace_file)
    while (job := jobs.get()) is not None:
        with toolspan.plan("summarize", context=toolspan.extract(job["carrier"])):
            words = count_words(job["text"])
        getattr(provider, "force_flush", lambda: None)()  # the spans are on disk before the reply
        results.put({"words": words, "pid": os.getpid()})
    getattr(provider, "shutdown", lambda: None)()


# --- the agent process -------------------------------------------------------------------------------


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    agent_file, worker_file = out / "traces.jsonl", out / "worker-traces.jsonl"
    for path in (agent_file, worker_file):
        path.unlink(missing_ok=True)
    provider = toolspan.configure(service_name="cross-process-agent", file=agent_file)

    spawn = multiprocessing.get_context("spawn")  # a fresh interpreter, as on macOS and Windows
    jobs, results = spawn.Queue(), spawn.Queue()
    process = spawn.Process(target=worker, args=(jobs, results, str(worker_file)))
    process.start()

    @toolspan.tool
    def summarize_remote(text: str) -> dict[str, Any]:
        """Summarize a text in the worker process."""
        jobs.put({"carrier": toolspan.inject(), "text": text})
        return dict(results.get(timeout=60))

    try:
        with toolspan.agent("assistant", input="Summarize this.") as run:
            call = {**TOOL_CALL, "input": {"text": TEXT}}
            (result,) = toolspan.run_tool_calls([call], [summarize_remote])
            run.set_output(result["content"])
    finally:
        jobs.put(None)
        process.join(timeout=60)
    getattr(provider, "shutdown", lambda: None)()
    print("result for the model:", result)

    spans, _report = read_spans([agent_file, worker_file])
    print_tree(to_tree(spans)["execution_tree"])
    print(f"traces: {agent_file}, {worker_file}")


def print_tree(node: dict[str, Any], depth: int = 0) -> None:
    print(f"{'  ' * depth}{node.get('name') or node['type']}  (span {node['span_id']})")
    for child in node.get("children", []):
        print_tree(child, depth + 1)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-output") / Path(__file__).stem)
