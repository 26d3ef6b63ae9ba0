"""``toolspan serve`` benchmarks: ingest throughput, span end to SSE delivery latency, memory over time.

    python benchmarks/bench_server.py [--quick] [--parse-workers N] [--output benchmarks/results/server.json]

Starts a real ``toolspan serve`` subprocess (fresh SQLite file, 127.0.0.1, free ports) and measures:

1. **Ingest**: OTLP/HTTP protobuf requests of 512 spans each (the SDK's own encoder; agent traces of one agent
   span, an LLM span and six tool spans), sent back to back over two keep-alive connections; spans per
   second of wall time, each response a committed transaction; three rounds of distinct spans, the median
   reported (this machine's speed drifts from second to second). Server CPU counts the server process and
   its parse workers. Baseline in the same run: the same requests to a bare Starlette + uvicorn endpoint
   that only parses the protobuf (what the web stack alone costs).
2. **Live latency**: an application process with the SDK's ``BatchSpanProcessor`` (50 ms schedule delay) and
   OTLP/HTTP exporter ends 1,000 tool spans per second; this process, on ``/api/stream``, records when each
   ``observe`` event arrives. Latency = arrival - the span's end time (same clock, ms): p50 / p99.
3. **Memory**: the RSS of the server and its parse workers sampled once a second through both runs and a
   sustained ingest phase.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parents[1]
BATCH = 512
ROUNDS = 3  # ingest rounds (each of distinct spans); the median is reported
NO_GRPC = ("--grpc-port", "-1")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def wait_http(port: int, path: str = "/healthz", timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection(HOST, port, timeout=1)
            conn.request("GET", path)
            conn.getresponse().read()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing answers on port {port}")


def rss_kib(pid: int) -> int:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:  # a process that just ended
        return 0
    for line in lines:
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def tree(pid: int) -> list[int]:
    """``pid`` and its live descendants (the server and its parse workers)."""
    pids, i = [pid], 0
    while i < len(pids):
        for task in Path(f"/proc/{pids[i]}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                pids += [int(p) for p in task.read_text().split()]
        i += 1
    return pids


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its live descendants so far (``/proc``: what machine
    load does not change)."""
    total = 0
    for p in tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def agent_spans(traces: int) -> list[ReadableSpan]:
    """Real SDK spans of ``traces`` agent runs (1 agent, 1 LLM, 6 tools each)."""
    import toolspan
    from toolspan.testing import capture_spans

    @toolspan.tool
    def lookup(city: str, days: int) -> dict[str, Any]:
        return {"city": city, "days": days, "forecast": "sunny", "temperature_c": 21}

    from opentelemetry import trace

    with capture_spans() as finished:
        tracer = trace.get_tracer("bench")
        for i in range(traces):
            with toolspan.agent("planner", conversation_id=f"conv-{i % 50}"):
                with tracer.start_as_current_span("chat gpt", attributes={"gen_ai.operation.name": "chat"}):
                    pass
                for day in range(6):
                    lookup("Paris", day)
    return list(finished())


def post_all(port: int, bodies: list[bytes], path: str = "/v1/traces", connections: int = 2) -> float:
    """Send every body (split over ``connections`` keep-alive connections); wall seconds."""
    errors: list[str] = []

    def worker(part: list[bytes]) -> None:
        conn = http.client.HTTPConnection(HOST, port, timeout=60)
        for body in part:
            conn.request("POST", path, body, {"Content-Type": "application/x-protobuf"})
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                errors.append(str(response.status))
        conn.close()

    threads = [threading.Thread(target=worker, args=(bodies[i::connections],)) for i in range(connections)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"export failed: {errors[:3]}")
    return elapsed


_BASELINE = """
import sys
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
import uvicorn

async def traces(request):
    ExportTraceServiceRequest.FromString(await request.body())
    return Response(b"", media_type="application/x-protobuf")

async def health(request):
    return Response(b"ok")

app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/healthz", health)])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[tuple[float, int]] = []
        self.stop = threading.Event()
        self.t0 = time.monotonic()

    def run(self) -> None:
        while not self.stop.is_set():
            rss = sum(rss_kib(p) for p in tree(self.pid))
            self.samples.append((round(time.monotonic() - self.t0, 1), rss))
            self.stop.wait(1.0)


_PRODUCER = """
import sys, time
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
import toolspan
from toolspan.testing import installed_tracer_provider

endpoint, rate, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint), schedule_delay_millis=50))

@toolspan.tool
def step(i: int) -> int:
    return i

with installed_tracer_provider(provider):
    start = time.perf_counter()
    for i in range(total):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        step(i)
provider.shutdown()
"""


def latency_run(
    server_port: int, rate: int, seconds: float, reader_port: int | None = None
) -> dict[str, Any]:
    """The application (its own process: tools, SDK batch processor, OTLP/HTTP exporter) ends ``rate``
    tool spans per second to ``server_port``; this process only reads the stream of ``reader_port`` (the
    same server unless given: another replica) and notes each observe's arrival."""
    arrivals: dict[str, int] = {}
    conn = http.client.HTTPConnection(HOST, reader_port or server_port, timeout=60)
    conn.request("GET", "/api/stream")
    response = conn.getresponse()
    total = int(rate * seconds)
    endpoint = f"http://{HOST}:{server_port}/v1/traces"
    producer = subprocess.Popen([sys.executable, "-c", _PRODUCER, endpoint, str(rate), str(total)])
    event = ""
    deadline = time.monotonic() + seconds + 60
    try:
        while len(arrivals) < total and time.monotonic() < deadline:
            line = response.fp.readline().decode()
            if not line:
                break
            if line.startswith("event: "):
                event = line[7:].strip()
            elif line.startswith("data: ") and event == "observe":
                arrivals[json.loads(line[6:])["execution_id"]] = time.time_ns()
    finally:
        conn.close()
        producer.wait(60)
    return {"sent": total, "arrivals": arrivals}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "server.json")
    parser.add_argument("--rate", type=int, default=1000, help="tool spans per second in the latency run")
    parser.add_argument("--parse-workers", type=int, default=None, help="passed to toolspan serve")
    args = parser.parse_args(argv)
    traces = 1280 if args.quick else 5120  # 8 spans each: 10,240 or 40,960 spans
    rate, seconds = args.rate, (2.0 if args.quick else 10.0)

    # ROUNDS rounds of distinct spans (a span sent again would only be counted as a duplicate).
    spans = agent_spans(traces * ROUNDS)
    every = [
        bytes(encode_spans(spans[i : i + BATCH]).SerializeToString()) for i in range(0, len(spans), BATCH)
    ]
    rounds = [every[r::ROUNDS] for r in range(ROUNDS)]
    bodies = rounds[0]
    per_round = len(spans) // ROUNDS
    tmp = Path(tempfile.mkdtemp(prefix="toolspan-bench-"))
    load_before = list(os.getloadavg())
    results: dict[str, Any] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}

    base_port = free_port()
    baseline = subprocess.Popen([sys.executable, "-c", _BASELINE, str(base_port)])
    try:
        wait_http(base_port)
        base_s = statistics.median(post_all(base_port, r) for r in rounds)
    finally:
        baseline.terminate()
        baseline.wait(10)

    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolspan",
            "serve",
            "--db",
            str(tmp / "bench.db"),
            "--port",
            str(port),
            *NO_GRPC,
            *(() if args.parse_workers is None else ("--parse-workers", str(args.parse_workers))),
        ],
        stderr=subprocess.DEVNULL,
    )
    sampler = Sampler(server.pid)
    try:
        wait_http(port)
        sampler.start()
        cpu0 = cpu_s(server.pid)
        round_s = [post_all(port, r) for r in rounds]
        ingest_cpu = cpu_s(server.pid) - cpu0
        ingest_s = statistics.median(round_s)
        results["ingest"] = {
            "spans": per_round,
            "rounds": ROUNDS,
            "batch": BATCH,
            "seconds": round(ingest_s, 3),
            "spans_per_s": round(per_round / ingest_s),
            "rounds_spans_per_s": [round(per_round / t) for t in round_s],
            "baseline_parse_only_spans_per_s": round(per_round / base_s),
            "x_baseline_time": round(ingest_s / base_s, 2),
            "server_cpu_s": round(ingest_cpu, 2),
            "server_cpu_us_per_span": round(ingest_cpu / len(spans) * 1e6, 1),
            "parse_workers": args.parse_workers,
            "load_before": load_before,
        }
        cpu0 = cpu_s(server.pid)
        live = latency_run(port, rate, seconds)
        live_cpu = cpu_s(server.pid) - cpu0
        results["live"] = _latency_summary(port, live["arrivals"], live["sent"], rate)
        results["live"]["server_cpu_us_per_span"] = round(live_cpu / live["sent"] * 1e6, 1)
        # Sustained ingest at a steady pace, watching memory.
        steady_until = time.monotonic() + (5 if args.quick else 30)
        while time.monotonic() < steady_until:
            post_all(port, bodies[:8], connections=1)
        sampler.stop.set()
        sampler.join()
        rss = [kib for _, kib in sampler.samples]
        results["memory"] = {
            "samples_kib": sampler.samples,
            "first_kib": rss[0],
            "last_kib": rss[-1],
            "max_kib": max(rss),
            "median_second_half_kib": statistics.median(rss[len(rss) // 2 :]),
        }
    finally:
        server.terminate()
        server.wait(10)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=1) + "\n")
    ing, live_r, mem = results["ingest"], results["live"], results["memory"]
    print("| measure | value | goal |\n|---|---|---|")
    print(
        f"| ingest, OTLP/HTTP protobuf, batches of {BATCH} | {ing['spans_per_s']:,} spans/s "
        f"(bare Starlette parse-only: {ing['baseline_parse_only_spans_per_s']:,}/s); server CPU "
        f"{ing['server_cpu_us_per_span']} us/span | >= 20,000 spans/s |"
    )
    print(
        f"| span end -> SSE observe at {rate} spans/s | p50 {live_r['p50_ms']} ms, p99 {live_r['p99_ms']} ms "
        f"({live_r['received']}/{live_r['sent']} received; "
        f"server CPU {live_r['server_cpu_us_per_span']} us/span) | p99 <= 250 ms |"
    )
    print(
        f"| server RSS | first {mem['first_kib'] // 1024} MiB, max {mem['max_kib'] // 1024} MiB, "
        f"last {mem['last_kib'] // 1024} MiB | flat |"
    )
    print(f"load average before the run: {load_before}")
    return 0


def _latency_summary(port: int, arrivals: dict[str, int], sent: int, rate: int) -> dict[str, Any]:
    """Arrival minus end time per observe, with end times read from the stored spans."""
    conn = http.client.HTTPConnection(HOST, port, timeout=60)
    conn.request("GET", "/api/stream?from=start")
    response = conn.getresponse()
    ends: dict[str, int] = {}
    event = ""
    while len(ends) < len(arrivals):
        line = response.fp.readline().decode()
        if not line:
            break
        if line.startswith("event: "):
            event = line[7:].strip()
        elif line.startswith("data: ") and event == "observe":
            doc = json.loads(line[6:])
            if doc["execution_id"] in arrivals:
                ends[doc["execution_id"]] = doc["timestamp"]
    conn.close()
    latencies = sorted(arrivals[k] / 1e6 - ends[k] for k in ends)
    return {
        "rate_per_s": rate,
        "sent": sent,
        "received": len(latencies),
        "p50_ms": round(statistics.median(latencies), 1),
        "p99_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 1),
        "max_ms": round(latencies[-1], 1),
    }


if __name__ == "__main__":
    sys.exit(main())
