"""The measuring side of a contender process: the tool, the timing loop, the JSON it prints.

A contender script (``benchmarks/contenders/run_<name>.py``) maps each of its modes to a setup function
that returns the decorated tool, then calls ``run(...)``. The orchestrator starts the script with the
contender's own virtual environment, reads the one ``RESULT {...}`` line it prints, and checks it.
With ``--count N`` nothing is timed: the script warms up, makes exactly N calls and flushes, for the
orchestrator to run it under callgrind (instructions per call). ``--processor`` picks the span
processor ``_noop.make_provider`` puts around the do-nothing exporter.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

RESULT_PREFIX = "RESULT "
# Span processors a run can put around the do-nothing exporter (``--processor``); see _noop.py.
PROCESSORS = ("batch", "simple", "none")
ARGS = ("Paris", 3)


def get_forecast(city: str, days: int) -> dict[str, Any]:
    """Return the weather forecast for a city."""
    return {"city": city, "days": days, "forecast": "sunny", "temperature_c": 21}


EXPECTED = get_forecast(*ARGS)


@dataclass
class Setup:
    """What a contender's mode hands to the timing loop."""

    tool: Callable[..., Any]
    # Called between repeats, outside the timed region: drains the span queue so every repeat starts
    # with an empty BatchSpanProcessor queue. None: flush the global provider.
    flush: Callable[[], Any] | None = None
    notes: list[str] = field(default_factory=list)
    # Timed in the same process, in every repeat next to the tool (before it in odd repeats): the
    # hand-written span over the same provider, so a ratio can be taken repeat by repeat (robust to
    # a busy machine).
    reference: Callable[..., Any] | None = None


def flush_global_provider() -> None:
    """Force-flush the global tracer provider, when it is an SDK one."""
    from opentelemetry import trace

    force_flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if force_flush is not None:
        force_flush()


def time_calls(fn: Callable[..., Any], n: int) -> tuple[float, float]:
    """Wall-clock and process CPU nanoseconds per call of ``fn(*ARGS)`` over ``n`` calls (loop
    overhead included). The CPU time counts every thread of the process (the BatchSpanProcessor's
    worker too) and leaves out the time the process waited for a core."""
    a, b = ARGS
    loop = range(n)
    wall, cpu = time.perf_counter_ns, time.process_time_ns
    start_wall, start_cpu = wall(), cpu()
    for _ in loop:
        fn(a, b)
    end_wall, end_cpu = wall(), cpu()
    return (end_wall - start_wall) / n, (end_cpu - start_cpu) / n


def count_calls(tool: Callable[..., Any], flush: Callable[[], Any], warmup: int, n: int) -> None:
    """The body of an instruction count: warm up, flush, collect, then ``n`` calls and a flush (so
    the processor's export of those spans is in the count too). The orchestrator runs this twice
    under callgrind with two values of ``n``; the difference divided by the difference of ``n`` is
    the cost of one call, start-up, imports and warm-up cancelled out."""
    a, b = ARGS
    for _ in range(warmup):
        tool(a, b)
    flush()
    gc.collect()
    for _ in range(n):
        tool(a, b)
    flush()
    from _noop import EXPORTER

    sys.stdout.write(RESULT_PREFIX + json.dumps({"count": n, "spans_exported": EXPORTER.exported}) + "\n")
    sys.stdout.flush()


def versions(distributions: Sequence[str]) -> dict[str, str]:
    """Installed versions of the given distributions (plus the OpenTelemetry API and SDK)."""
    out: dict[str, str] = {}
    for name in ("opentelemetry-api", "opentelemetry-sdk", *distributions):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def run(modes: dict[str, Callable[[], Setup]], distributions: Sequence[str] = ()) -> None:
    """Parse the command line, set up the requested mode, time it, print one RESULT line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=sorted(modes), required=True)
    parser.add_argument("--n", type=int, default=20_000, help="calls per repeat")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=5_000, help="calls before timing")
    parser.add_argument(
        "--count",
        type=int,
        default=None,
        help="no timing: after the warm-up make exactly this many calls, flush, exit (run under callgrind)",
    )
    parser.add_argument(
        "--processor",
        choices=PROCESSORS,
        default="batch",
        help="span processor around the do-nothing exporter (batch: the SDK's default BatchSpanProcessor)",
    )
    opts = parser.parse_args()

    import _noop
    from _noop import EXPORTER

    _noop.PROCESSOR = opts.processor
    started = time.perf_counter()
    setup = modes[opts.mode]()
    setup_s = time.perf_counter() - started
    flush = setup.flush or flush_global_provider
    tool = setup.tool

    result = tool(*ARGS)
    if result != EXPECTED:
        raise SystemExit(f"decorated tool returned {result!r}, expected {EXPECTED!r}")
    if opts.count is not None:
        count_calls(tool, flush, opts.warmup, opts.count)
        return
    for _ in range(2):
        time_calls(tool, opts.warmup)
        time_calls(get_forecast, opts.warmup)
        flush()

    samples: list[float] = []
    cpu_samples: list[float] = []
    bare: list[float] = []
    bare_cpu: list[float] = []
    ref: list[float] = []
    ref_cpu: list[float] = []
    if setup.reference is not None:
        time_calls(setup.reference, opts.warmup)
    for i in range(opts.repeats):
        # With a reference, the two alternate which goes first (tool, reference; reference, tool; ...)
        # so neither always runs on the heap and gc generations the other left behind.
        order = [(tool, samples, cpu_samples)]
        if setup.reference is not None:
            order.append((setup.reference, ref, ref_cpu))
            if i % 2:
                order.reverse()
        for fn, walls, cpus in order:
            flush()
            gc.collect()
            wall_ns, cpu_ns = time_calls(fn, opts.n)
            walls.append(wall_ns)
            cpus.append(cpu_ns)
        wall_ns, cpu_ns = time_calls(get_forecast, opts.n)
        bare.append(wall_ns)
        bare_cpu.append(cpu_ns)
    flush()

    out = {
        "mode": opts.mode,
        "n": opts.n,
        "repeats": opts.repeats,
        "samples_ns": [round(s, 1) for s in samples],
        "cpu_samples_ns": [round(s, 1) for s in cpu_samples],
        "bare_samples_ns": [round(s, 1) for s in bare],
        "bare_cpu_samples_ns": [round(s, 1) for s in bare_cpu],
        "reference_samples_ns": [round(s, 1) for s in ref],
        "reference_cpu_samples_ns": [round(s, 1) for s in ref_cpu],
        "calls": 1 + 2 * opts.warmup + opts.n * opts.repeats,
        "reference_calls": (opts.warmup + opts.n * opts.repeats) if setup.reference is not None else 0,
        "spans_exported": EXPORTER.exported,
        "sample_span": EXPORTER.sample,
        "setup_seconds": round(setup_s, 3),
        "notes": setup.notes,
        "versions": versions(distributions),
        "python": platform.python_version(),
        "executable": sys.executable,
        "pid": os.getpid(),
    }
    sys.stdout.write(RESULT_PREFIX + json.dumps(out) + "\n")
    sys.stdout.flush()
