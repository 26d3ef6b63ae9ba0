"""A small application instrumented with toolspan, run by the end-to-end tests as a subprocess.

It is set up the way a user sets up toolspan: ``toolspan.configure()`` with the standard ``OTEL_*``
variables (endpoint, protocol, service name, resource attributes, ``OTEL_BSP_*`` queue settings).

    python agent_app.py scenario   agent -> tool -> sub-plan -> agent -> tool, a model call id, a failing
                                   tool; prints one JSON line (trace id, tool results) and exits
    python agent_app.py faults     reads commands on stdin, answers each with one JSON line:
                                   ``run PHASE N``  N tool calls, timed; ``flush``; ``stats``; ``quit``
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

import toolspan

# --- scenario -----------------------------------------------------------------------------------------


@toolspan.tool
def search(query: str, limit: int = 2) -> list[str]:
    """Search the web."""
    return [f"{query} result {i}" for i in range(limit)]


@toolspan.tool
def fetch(url: str) -> dict[str, Any]:
    """Fetch a web page."""
    return {"url": url, "status": 200, "words": 120}


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


def scenario() -> dict[str, Any]:
    provider = toolspan.configure()
    results: dict[str, Any] = {}
    question = "Find and summarise OpenTelemetry"
    with toolspan.agent("planner", input=question, conversation_id="conv-e2e") as run:
        toolspan.thought("search first, then research the best hit")
        with toolspan.tool_call_id("toolu_e2e_search_1"):
            results["search"] = search("opentelemetry")
        results["research"] = research("opentelemetry")
        try:
            divide(1, 0)
        except ZeroDivisionError as e:
            results["divide"] = f"{type(e).__name__}: {e}"
        run.set_output(f"{len(results['search'])} hits; {results['research']}")
        trace_id = format(run.span.get_span_context().trace_id, "032x")
    _shutdown(provider)
    return {"trace_id": trace_id, "results": results}


def _shutdown(provider: trace.TracerProvider) -> None:
    if isinstance(provider, TracerProvider):
        provider.force_flush()
        provider.shutdown()


# --- faults -------------------------------------------------------------------------------------------


@toolspan.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


RAISED: list[BaseException] = []


@toolspan.tool
def lookup(key: str) -> str:
    """Always fails; the caller checks it gets the very exception object raised here."""
    error = KeyError(key)
    RAISED.append(error)
    raise error


class CountingExporter(SpanExporter):
    """Wraps the real exporter: which spans it was handed, and each export's result and times.

    Each export records ``first`` (its spans are ``handed[first:first + spans]``) and its ``start`` /
    ``end`` on ``time.monotonic()``, a system-wide clock the test compares with the outage's times.
    """

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.handed: list[str] = []
        self.failed: list[str] = []
        self.results: list[dict[str, Any]] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        ids = [format(s.context.span_id, "016x") for s in spans if s.context is not None]
        first = len(self.handed)
        self.handed.extend(ids)
        start = time.monotonic()
        result = self.inner.export(spans)
        end = time.monotonic()
        if result is not SpanExportResult.SUCCESS:
            self.failed.extend(ids)
        self.results.append(
            {
                "first": first,
                "spans": len(ids),
                "result": result.name,
                "seconds": round(end - start, 3),
                "start": start,
                "end": end,
            }
        )
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class Recorder(SpanProcessor):
    """Records every ended tool span under the current phase and samples the export queue's length."""

    def __init__(self, queue: Any) -> None:
        self.queue = queue
        self.phase = ""
        self.ended: dict[str, list[str]] = {}
        self.queue_max = 0

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is not None:
            self.ended.setdefault(self.phase, []).append(format(span.context.span_id, "016x"))
        if self.queue is not None:
            self.queue_max = max(self.queue_max, len(self.queue))


def _batch_processor(provider: TracerProvider) -> BatchSpanProcessor:
    processors = provider._active_span_processor._span_processors
    found = [p for p in processors if isinstance(p, BatchSpanProcessor)]
    if len(found) != 1:
        raise SystemExit(f"expected one BatchSpanProcessor from configure(), found {processors!r}")
    return found[0]


def _percentile(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000 if ordered else 0.0


def faults() -> None:
    provider = toolspan.configure()
    if not isinstance(provider, TracerProvider):
        raise SystemExit(f"configure() returned {provider!r}, not an SDK TracerProvider")
    bsp = _batch_processor(provider)
    inner = getattr(bsp, "_batch_processor", None)  # the SDK's shared BatchProcessor (sdk >= 1.33)
    queue = getattr(inner, "_queue", None)
    cap = getattr(inner, "_max_queue_size", None)
    counting: CountingExporter | None = None
    if inner is not None:
        counting = CountingExporter(inner._exporter)
        inner._exporter = counting
    recorder = Recorder(queue)
    provider.add_span_processor(recorder)
    _reply({"ready": True, "queue_cap": cap, "introspection": inner is not None})

    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "run":
            recorder.phase = words[1]
            _reply(_run(recorder, int(words[2])))
        elif words[0] == "flush":
            start = time.monotonic()
            ok = provider.force_flush(timeout_millis=60_000)
            _reply({"flushed": ok, "seconds": round(time.monotonic() - start, 3)})
        elif words[0] == "stats":
            _reply(
                {
                    "ended": recorder.ended,
                    "handed": counting.handed if counting else None,
                    "failed": counting.failed if counting else None,
                    "exports": counting.results if counting else None,
                    "queue_max": recorder.queue_max,
                    "queue_len": len(queue) if queue is not None else None,
                    "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                }
            )
        elif words[0] == "quit":
            provider.shutdown()
            _reply({"bye": True})
            return


def _run(recorder: Recorder, calls: int) -> dict[str, Any]:
    wrong = raised_same = 0
    timings: list[int] = []
    plain: list[int] = []
    undecorated = add.__wrapped__
    began = time.monotonic()
    for i in range(calls):
        start = time.perf_counter_ns()
        value = add(i, 1)
        timings.append(time.perf_counter_ns() - start)
        wrong += value != i + 1
        start = time.perf_counter_ns()
        undecorated(i, 1)
        plain.append(time.perf_counter_ns() - start)
        if i % 10 == 0:
            try:
                lookup(str(i))
            except KeyError as e:
                raised_same += e is RAISED.pop()
    return {
        "phase": recorder.phase,
        "calls": calls,
        "wrong": wrong,
        "failing_calls": len(range(0, calls, 10)),
        "raised_same": raised_same,
        "median_us": _percentile(timings, 0.5),
        "p95_us": _percentile(timings, 0.95),
        "max_us": max(timings) / 1000,
        "undecorated_median_us": _percentile(plain, 0.5),
        "queue_max": recorder.queue_max,
        "seconds": round(time.monotonic() - began, 3),
    }


def _reply(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "scenario"
    if mode == "scenario":
        _reply(scenario())
    elif mode == "faults":
        faults()
    else:
        raise SystemExit(f"unknown mode {mode!r}")
