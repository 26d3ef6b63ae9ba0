"""Parallel tools in a thread pool, a tool that starts a sub-plan, and the execution tree printed.

    python examples/threads_and_subplans.py [OUT_DIR]

What it shows: ``run_tool_calls`` runs three model calls at once in its thread pool; the ``research``
tool starts a sub-plan (``toolspan.plan``) that fans out to its own ``ThreadPoolExecutor``. Every span
keeps the right parent across the threads (``configure()`` turns on OpenTelemetry's threading
instrumentation; ``run_tool_calls`` copies the context into its workers), and the sub-plan records which
tool call started it (``toolspan.parent.tool_call_id``). What to look at: the printed tree (the
``fetch_page`` tools sit under the plan, which sits under ``research``) and ``OUT_DIR/tree.json``.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import toolspan
from toolspan.bridge.readers import read_spans
from toolspan.bridge.views import to_tree

PAGES = {
    "https://example.org/otel": "OpenTelemetry gives traces metrics and logs one model",
    "https://example.org/spans": "A span is one operation with a parent",
}
# What a model asked for (OpenAI Chat Completions tool calls, as dicts).
TOOL_CALLS = [
    {
        "id": "call_weather",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    },
    {"id": "call_add", "type": "function", "function": {"name": "add", "arguments": '{"a": 25, "b": 30}'}},
    {
        "id": "call_research",
        "type": "function",
        "function": {"name": "research", "arguments": '{"topic": "spans"}'},
    },
]


@toolspan.tool
def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city."""
    time.sleep(0.05)  # some I/O: the three calls overlap
    return {"city": city, "temp_c": 18}


@toolspan.tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@toolspan.tool
def fetch_page(url: str) -> str:
    """Fetch a page (from a dict here)."""
    time.sleep(0.05)
    return PAGES[url]


@toolspan.tool
def research(topic: str) -> dict[str, Any]:
    """Research a topic: a sub-plan fetching pages in parallel threads."""
    with toolspan.plan(f"research {topic}"), ThreadPoolExecutor(max_workers=2) as pool:
        texts = list(pool.map(fetch_page, PAGES))
    return {"topic": topic, "words": sum(len(text.split()) for text in texts)}


def print_tree(node: dict[str, Any], depth: int = 0) -> None:
    label = node.get("name") or node["type"]  # "execute_tool add", "plan research spans", ...
    print(f"{'  ' * depth}{label}  (span {node['span_id']})")
    for child in node.get("children", []):
        print_tree(child, depth + 1)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    traces = out / "traces.jsonl"
    traces.unlink(missing_ok=True)
    provider = toolspan.configure(service_name="threads-and-subplans", file=traces)

    with toolspan.agent("assistant", input="Weather, a sum, and some research, please.") as run:
        results = toolspan.run_tool_calls(TOOL_CALLS, [get_weather, add, research])
        run.set_output(" / ".join(result["content"] for result in results))
    getattr(provider, "shutdown", lambda: None)()  # flush the trace file

    spans, _report = read_spans(traces)
    tree = to_tree(spans)
    (out / "tree.json").write_text(json.dumps(tree, indent=2) + "\n", encoding="utf-8")
    print_tree(tree["execution_tree"])
    print(f"trace: {traces}; tree: {out / 'tree.json'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-output") / Path(__file__).stem)
