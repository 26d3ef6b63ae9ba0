"""An application instrumented with toolspan, shipping through the real Collector (set up as a user does:
``toolspan.configure()`` with the standard ``OTEL_*`` variables; ``TOOLSPAN_OTLP_FILE`` also writes what
the SDK exported, the reference the tests compare every backend with).

    python shipping_app.py run          one rich run: an agent, a sub-plan under a tool, a model call id, a
                                        failing tool, an array attribute, a link to another trace, a long
                                        result, an explicit OK status, non-ASCII text; prints one JSON line
    python shipping_app.py runs N       N small runs, each its own trace; prints their trace ids
    python shipping_app.py staged DIR   a run in two stages: the first tool call is exported, then the app
                                        waits for DIR/release before the second call and the agent's end
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import StatusCode

import toolspan


@toolspan.tool
def search(query: str, limit: int = 2) -> list[str]:
    """Search the web."""
    span = trace.get_current_span()
    span.set_attribute("search.engines", ["web", "news"])
    span.set_attribute("search.shards", [3, 5, 8])
    return [f"{query} result {i}" for i in range(limit)]


@toolspan.tool
def fetch(url: str) -> dict[str, Any]:
    """Fetch a web page."""
    trace.get_current_span().set_status(StatusCode.OK)
    return {"url": url, "status": 200, "words": 120, "title": "Café ☕ — OpenTelemetry"}


@toolspan.tool
def read_file(path: str) -> str:
    """Read a long file."""
    return "x" * 60_000 + path


@toolspan.tool(name="divide", description="Divide two numbers.")
def divide(a: float, b: float) -> float:
    return a / b


@toolspan.agent(name="reader")
def reader(url: str) -> str:
    toolspan.thought("fetch the page, then count its words")
    page = fetch(url)
    return f"{page['words']} words"


@toolspan.tool(name="research", description="Research a topic with a sub-plan.")
def research(topic: str) -> str:
    with toolspan.plan("deep-dive", input=topic) as run:
        summary = reader(f"https://example.org/{topic}")
        run.set_output(summary)
    return summary


def _trace_id(span: Any) -> str:
    return format(span.get_span_context().trace_id, "032x")


def _shutdown(provider: trace.TracerProvider) -> None:
    if isinstance(provider, TracerProvider):
        provider.force_flush()
        provider.shutdown()


def run() -> dict[str, Any]:
    provider = toolspan.configure()
    tracer = trace.get_tracer("shipping-app")
    # A span of another trace (an ingest job), linked from the agent's tool call below.
    with tracer.start_as_current_span("ingest", context=None) as ingest:
        pass
    question = "Find and summarise OpenTelemetry"
    with toolspan.agent("planner", input=question, conversation_id="conv-ship") as agent:
        toolspan.thought("search first, then research the best hit")
        with toolspan.tool_call_id("toolu_ship_search_1"):
            hits = search("opentelemetry")
        trace.get_current_span().add_link(ingest.get_span_context(), {"link.reason": "source"})
        summary = research("opentelemetry")
        text = read_file("notes.md")
        with contextlib.suppress(ZeroDivisionError):
            divide(1, 0)
        agent.set_output(f"{len(hits)} hits; {summary}; {len(text)} chars")
        trace_id = _trace_id(agent.span)
    _shutdown(provider)
    return {"trace_id": trace_id, "link_trace_id": _trace_id(ingest)}


def runs(n: int) -> dict[str, Any]:
    provider = toolspan.configure()
    ids = []
    for i in range(n):
        with toolspan.agent("worker", input=f"job {i}") as agent:
            search(f"topic {i}", limit=1)
            fetch(f"https://example.org/{i}")
            ids.append(_trace_id(agent.span))
    _shutdown(provider)
    return {"trace_ids": ids}


def staged(directory: Path) -> dict[str, Any]:
    provider = toolspan.configure()
    with toolspan.agent("stager", input="two stages") as agent:
        trace_id = _trace_id(agent.span)
        with toolspan.tool_call_id("call_stage_1"):
            search("first stage", limit=1)
        provider.force_flush()  # type: ignore[attr-defined]
        (directory / "trace_id").write_text(trace_id)
        deadline = time.monotonic() + 120
        while not (directory / "release").exists():
            if time.monotonic() > deadline:
                raise SystemExit("never released")
            time.sleep(0.05)
        with toolspan.tool_call_id("call_stage_2"):
            fetch("https://example.org/second")
        agent.set_output("done")
    _shutdown(provider)
    return {"trace_id": trace_id}


def main(argv: list[str]) -> None:
    mode = argv[1] if len(argv) > 1 else "run"
    if mode == "run":
        result = run()
    elif mode == "runs":
        result = runs(int(argv[2]))
    elif mode == "staged":
        result = staged(Path(argv[2]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main(sys.argv)
