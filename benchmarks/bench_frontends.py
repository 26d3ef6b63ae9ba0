"""Benchmark the AG-UI and AI SDK UI message stream views and their live streams.

Throughput: the run of 10,000 tool calls the trace page benchmark uses
(``tests/support/page_data.big_run``, the real instrumentation's spans) through ``to_ag_ui`` and
``to_ai_sdk``, and through ``to_events`` and ``to_progress`` as the references measured in the same run, each
``--repeat`` times (medians): events per second and the time of each view over ``to_events``'s.

Live latency: a real ``toolspan serve`` and an application process running ``--live-calls`` tools one
after the other (each sleeps ``--tool-ms``), exporting over OTLP with pending records of every span; a
client reads the trace's AG-UI stream and the AI SDK stream. For each tool's result: the time from the
span's end (the event's ``timestamp``, ms) to the client's receipt of that event, p50 and p99 (the
application's batch exporter waits up to 50 ms: ``OTEL_BSP_SCHEDULE_DELAY``).

Results go to ``benchmarks/results/frontends.json`` and a Markdown table is printed.

    python benchmarks/bench_frontends.py [--calls 10000] [--repeat 5] [--live-calls 100] [--tool-ms 20]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.page_data import big_run  # noqa: E402

from toolspan.bridge.views import to_ag_ui, to_ai_sdk, to_events, to_progress  # noqa: E402

APP = """
import sys, time
import toolspan
from toolspan.exporters.pending import PendingSpanProcessor

calls, ms = int(sys.argv[1]), float(sys.argv[2])
provider = toolspan.configure(service_name="bench-frontends")
provider.add_span_processor(PendingSpanProcessor(tools_only=False))

@toolspan.tool
def work(i: int) -> int:
    time.sleep(ms / 1000)
    return i

with toolspan.agent("bench", input="go", conversation_id="bench-conv"):
    for i in range(calls):
        work(i)
provider.shutdown()
"""


def _views(calls: int, repeat: int) -> dict[str, Any]:
    spans = big_run(calls)
    views: dict[str, Callable[[Any], list[Any]]] = {
        "events": to_events,
        "progress": to_progress,
        "ag-ui": to_ag_ui,
        "ai-sdk": to_ai_sdk,
    }
    times: dict[str, list[float]] = {name: [] for name in views}
    counts: dict[str, int] = {}
    for _ in range(repeat):
        for name, view in views.items():  # back to back each round: a slow moment hits all alike
            start = time.perf_counter()
            out = view(spans)
            times[name].append(time.perf_counter() - start)
            counts[name] = len(out)
    reference = statistics.median(times["events"])
    rows = {}
    for name in views:
        median = statistics.median(times[name])
        rows[name] = {
            "events": counts[name],
            "median_s": round(median, 4),
            "events_per_s": round(counts[name] / median),
            "spans_per_s": round(len(spans) / median),
            "x_events_view": round(median / reference, 2),
        }
    return {"spans": len(spans), "tool_calls": calls, "repeat": repeat, "views": rows}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _live(calls: int, tool_ms: float) -> dict[str, Any]:
    from tests.support.server import running_server, sdk_env, sse_stream, wait_for

    out: dict[str, Any] = {"tool_calls": calls, "tool_ms": tool_ms}
    with tempfile.TemporaryDirectory() as tmp, running_server(Path(tmp), "--heartbeat", "0.5") as server:
        env = sdk_env(server, "http/protobuf")
        app = subprocess.Popen([sys.executable, "-c", APP, str(calls), str(tool_ms)], env=env)
        rows = wait_for(lambda: server.get_json("/api/traces")["traces"], "the agent's pending record")
        trace = rows[0]["trace_id"]
        latencies: dict[str, list[float]] = {"ag-ui": [], "ai-sdk": []}

        def read(protocol: str, result_type: str) -> None:
            for event in sse_stream(server, f"/api/traces/{trace}/{protocol}/stream", timeout=120):
                now_ms = time.time_ns() / 1e6
                if event.data == "[DONE]":
                    return
                data = event.json()
                if data.get("type") == result_type and "timestamp" in data:
                    latencies[protocol].append(now_ms - data["timestamp"])
                elif data.get("type") == result_type:
                    latencies[protocol].append(now_ms)  # the AI SDK chunk has no time: joined below

        readers = [
            threading.Thread(target=read, args=("ag-ui", "TOOL_CALL_RESULT"), daemon=True),
            threading.Thread(target=read, args=("ai-sdk", "tool-output-available"), daemon=True),
        ]
        for reader in readers:
            reader.start()
        app.wait(300)
        for reader in readers:
            reader.join(120)
        # The AI SDK chunks carry no time: their span ends are the AG-UI results' (same calls, same order).
        spans_end = _ag_ui_result_times(server, trace)
        sdk = latencies["ai-sdk"]
        latencies["ai-sdk"] = [arrived - end for arrived, end in zip(sdk, spans_end, strict=True)]
        for protocol, values in latencies.items():
            out[protocol] = {
                "events": len(values),
                "p50_ms": round(_percentile(values, 0.5), 1),
                "p99_ms": round(_percentile(values, 0.99), 1),
                "max_ms": round(max(values), 1),
            }
    return out


def _ag_ui_result_times(server: Any, trace: str) -> list[float]:
    status, _, raw = server.request("GET", f"/api/traces/{trace}/ag-ui/stream")
    assert status == 200
    times = []
    for block in raw.decode().split("\n\n"):
        for line in block.split("\n"):
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["type"] == "TOOL_CALL_RESULT":
                    times.append(float(event["timestamp"]))
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--live-calls", type=int, default=100)
    parser.add_argument("--tool-ms", type=float, default=20.0)
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "results" / "frontends.json"))
    args = parser.parse_args(argv)
    result = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "throughput": _views(args.calls, args.repeat),
        "live": _live(args.live_calls, args.tool_ms),
    }
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print("| view | events | median s | events/s | x to_events |")
    print("|---|---|---|---|---|")
    for name, row in result["throughput"]["views"].items():
        cells = (name, row["events"], row["median_s"], row["events_per_s"], row["x_events_view"])
        print("| " + " | ".join(str(c) for c in cells) + " |")
    live = result["live"]
    for protocol in ("ag-ui", "ai-sdk"):
        row = live[protocol]
        print(f"live {protocol}: span end -> client event p50 {row['p50_ms']} ms, p99 {row['p99_ms']} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
