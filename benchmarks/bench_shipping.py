"""toolspan's main path, side by side in one run: the application -> the OpenTelemetry Collector
(``collector-config/jaeger.yaml``, as it is) -> Jaeger v2, and the same Collector file with its exporter
pointed at ``toolspan serve`` instead (the OTLP/gRPC port), both built and started as the end-to-end tests
do (``scripts/e2e-deps.sh go``; Jaeger with memory storage, ``toolspan serve`` on SQLite).

    python benchmarks/bench_shipping.py [--quick] [--output benchmarks/results/shipping.json]

For each path, in the same run:

1. **Spans per second** (the median of three rounds): OTLP/HTTP protobuf requests of 512 spans (the agent
   traces of ``bench_server.py``, the SDK's own encoder) posted to the Collector over two keep-alive
   connections; the clock stops when the backend holds every span (``toolspan serve``: its span count;
   Jaeger: the last trace sent whole, then every trace checked off the clock, a late one moving it).
   Spans / wall seconds, with the CPU seconds of the Collector and the backend.
2. **Span end to trace readable**: an application process (SDK ``BatchSpanProcessor``, 50 ms schedule delay,
   OTLP/HTTP to the Collector) ends one tool span per trace at a steady rate; this process polls the backend
   for each trace by id (Jaeger ``/api/v3/traces/{id}``, ``toolspan serve`` ``/api/traces/{id}/events``)
   every 20 ms; latency = first readable minus the span's end time, p50/p99. The Collector's ``batch``
   processor (1 s timeout in the file) and Jaeger's own batch (200 ms) are part of the path measured.
3. **What each path loses**: one rich run (``tests/e2e/shipping_app.py run``) through each path, read back
   (Jaeger API v1 and v3, ``toolspan serve``'s ``/api/traces/{id}/otlp``) and compared span by span with the
   application's own file of the run (``tests/e2e/losses.py``): a table of what differs, by kind.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import BATCH, HOST, agent_spans, cpu_s, post_all  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from tests.e2e.losses import losses  # noqa: E402
from tests.e2e.otel_stack import (  # noqa: E402
    CONFIG_DIR,
    Collector,
    Jaeger,
    app_env,
    go_binaries,
    http_get,
    jaeger_ui,
)
from tests.support.server import Server  # noqa: E402

from toolspan.bridge.readers import read_spans  # noqa: E402

APP = REPO / "tests" / "e2e" / "shipping_app.py"

_PRODUCER = """
import sys, time
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
import toolspan
from toolspan.testing import installed_tracer_provider

endpoint, rate, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


class Ended(SpanProcessor):  # each span's trace id and end time, as it ends
    def on_end(self, span):
        sys.stdout.write(f"{span.context.trace_id:032x} {span.end_time}\\n")
        sys.stdout.flush()


provider = TracerProvider()
provider.add_span_processor(Ended())
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


class Backend:
    """Where the Collector ships: Jaeger, or ``toolspan serve``."""

    name = ""
    otlp_grpc = ""
    pid = 0

    def held(self) -> int:  # spans held (cheap): only for toolspan serve
        raise NotImplementedError

    def readable(self, trace_id: str) -> bool:
        raise NotImplementedError

    def spans_of(self, trace_id: str) -> int:
        raise NotImplementedError


class JaegerBackend(Backend):
    name = "Jaeger v2.12 (memory)"

    def __init__(self, jaeger: Jaeger) -> None:
        self.jaeger = jaeger
        self.otlp_grpc = jaeger.otlp_grpc
        self.pid = jaeger.proc.pid

    def readable(self, trace_id: str) -> bool:
        status, _ = http_get(f"{self.jaeger.url}/api/v3/traces/{trace_id}", timeout=10)
        return status == 200

    def spans_of(self, trace_id: str) -> int:
        return self.jaeger.span_count(trace_id)


class ServeBackend(Backend):
    name = "toolspan serve (SQLite)"

    def __init__(self, server: Server) -> None:
        self.server = server
        self.otlp_grpc = f"{HOST}:{server.grpc_port}"
        assert server.proc is not None
        self.pid = server.proc.pid

    def held(self) -> int:
        return int(self.server.counts()["spans"])

    def readable(self, trace_id: str) -> bool:
        status, _, _ = self.server.request("GET", f"/api/traces/{trace_id}/events")
        return status == 200

    def spans_of(self, trace_id: str) -> int:
        status, _, body = self.server.request("GET", f"/api/traces/{trace_id}/otlp")
        return len(read_spans(body)[0]) if status == 200 else 0


@contextlib.contextmanager
def collector_to(otelcol: Path, backend: Backend, work: Path) -> Iterator[Collector]:
    collector = Collector(otelcol, CONFIG_DIR / "jaeger.yaml", work, {"JAEGER_ENDPOINT": backend.otlp_grpc})
    try:
        yield collector
    finally:
        collector.stop()


def throughput(otelcol: Path, backend: Backend, work: Path, traces: int, rounds: int = 3) -> dict[str, Any]:
    """The median of ``rounds`` rounds, each of distinct spans, through one Collector."""
    runs = []
    with collector_to(otelcol, backend, work) as collector:
        for _ in range(rounds):
            runs.append(_round(collector, backend, traces))
    best = sorted(runs, key=lambda r: r["spans_per_s"])[len(runs) // 2]
    return {**best, "rounds_spans_per_s": [r["spans_per_s"] for r in runs]}


def _round(collector: Collector, backend: Backend, traces: int) -> dict[str, Any]:
    spans = agent_spans(traces)
    trace_ids = list(dict.fromkeys(format(s.context.trace_id, "032x") for s in spans))
    per_trace = len(spans) // len(trace_ids)
    bodies = [
        bytes(encode_spans(spans[i : i + BATCH]).SerializeToString()) for i in range(0, len(spans), BATCH)
    ]
    start_held = backend.held() if isinstance(backend, ServeBackend) else 0
    cpu_before = (cpu_s(collector.proc.pid), cpu_s(backend.pid))
    start = time.perf_counter()
    post_all(collector.http_port, bodies, connections=2)
    deadline = start + 300
    if isinstance(backend, ServeBackend):
        while backend.held() - start_held < len(spans) and time.perf_counter() < deadline:
            time.sleep(0.01)
    else:
        while backend.spans_of(trace_ids[-1]) < per_trace and time.perf_counter() < deadline:
            time.sleep(0.02)
    seconds = time.perf_counter() - start
    cpu_after = (cpu_s(collector.proc.pid), cpu_s(backend.pid))
    if isinstance(backend, JaegerBackend):
        # Then every trace checked whole, off the clock (polling 2,500 traces takes seconds of its own);
        # a trace still short puts the clock at the moment it is whole.
        late = [t for t in trace_ids if backend.spans_of(t) < per_trace]
        for trace_id in late:
            while backend.spans_of(trace_id) < per_trace and time.perf_counter() < deadline:
                time.sleep(0.02)
        if late:
            seconds = time.perf_counter() - start
    return {
        "spans": len(spans),
        "seconds": round(seconds, 3),
        "spans_per_s": round(len(spans) / seconds),
        "cpu_s_collector": round(cpu_after[0] - cpu_before[0], 2),
        "cpu_s_backend": round(cpu_after[1] - cpu_before[1], 2),
    }


def latency(otelcol: Path, backend: Backend, rate: int, seconds: float, work: Path) -> dict[str, Any]:
    total = int(rate * seconds)
    ends: dict[str, int] = {}
    readable: dict[str, int] = {}
    with collector_to(otelcol, backend, work) as collector:
        producer = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _PRODUCER,
                collector.endpoint("http/protobuf") + "/v1/traces",
                str(rate),
                str(total),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert producer.stdout is not None

        def read_ends() -> None:
            for line in producer.stdout:  # type: ignore[union-attr]
                trace_id, end = line.split()
                ends[trace_id] = int(end)

        reader = threading.Thread(target=read_ends, daemon=True)
        reader.start()
        deadline = time.monotonic() + seconds + 60
        while len(readable) < total and time.monotonic() < deadline:
            for trace_id in [t for t in list(ends) if t not in readable]:
                if backend.readable(trace_id):
                    readable[trace_id] = time.time_ns()
            time.sleep(0.02)
        producer.wait(30)
        reader.join(5)
    lags = sorted((readable[t] - ends[t]) / 1e6 for t in readable)
    return {
        "spans": total,
        "readable": len(lags),
        "p50_ms": round(statistics.median(lags), 1),
        "p99_ms": round(lags[min(len(lags) - 1, int(0.99 * len(lags)))], 1),
    }


def loss_table(
    otelcol: Path, jaeger: JaegerBackend, serve: ServeBackend, work: Path
) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for backend in (jaeger, serve):
        sdk_file = work / f"loss-{backend.otlp_grpc.replace(':', '-')}.jsonl"
        with collector_to(otelcol, backend, work) as collector:
            env = app_env(
                collector.endpoint("grpc"),
                "grpc",
                OTEL_TRACES_EXPORTER="otlp,toolspan_otlp_file",
                TOOLSPAN_OTLP_FILE=str(sdk_file),
                TOOLSPAN_MAX_ATTRIBUTE_BYTES="200000",
            )
            done = subprocess.run(
                [sys.executable, str(APP), "run"], env=env, capture_output=True, text=True, check=True
            )
            trace_id = json.loads(done.stdout.splitlines()[-1])["trace_id"]
            sent = [s for s in read_spans(str(sdk_file))[0] if s.trace_id == trace_id]
            deadline = time.monotonic() + 60
            while backend.spans_of(trace_id) < len(sent) and time.monotonic() < deadline:
                time.sleep(0.05)
        if isinstance(backend, JaegerBackend):
            table["Jaeger API v1"] = losses(sent, read_spans(backend.jaeger.trace_v1(trace_id))[0])
            table["Jaeger API v3"] = losses(sent, read_spans(backend.jaeger.trace_v3(trace_id))[0])
        else:
            body = serve.server.get(f"/api/traces/{trace_id}/otlp")
            table["toolspan serve"] = losses(sent, read_spans(body)[0])
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer spans and a shorter latency run")
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "results" / "shipping.json"))
    args = parser.parse_args()
    traces, rate, seconds = (250, 20, 5.0) if args.quick else (2500, 20, 15.0)
    otelcol, jaeger_bin = go_binaries()
    out: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg()[0],
        "collector": "toolspan-otelcol 0.160.0, collector-config/jaeger.yaml",
        "batch": BATCH,
        "paths": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        jaeger = Jaeger(jaeger_bin, work, ui=jaeger_ui())
        server = Server(work / "toolspan.db", 0, 0, (), work / "server.log")
        server.start()
        try:
            backends: list[Backend] = [JaegerBackend(jaeger), ServeBackend(server)]
            for backend in backends:
                out["paths"][backend.name] = {
                    "throughput": throughput(otelcol, backend, work, traces),
                    "latency": latency(otelcol, backend, rate, seconds, work),
                }
            out["losses"] = loss_table(otelcol, backends[0], backends[1], work)  # type: ignore[arg-type]
        finally:
            server.stop()
            jaeger.stop()
    Path(args.output).write_text(json.dumps(out, indent=2) + "\n", "utf-8")
    print(f"{'path':34} {'spans/s':>9} {'CPU s coll.':>12} {'CPU s backend':>14} {'p50 ms':>8} {'p99 ms':>8}")
    for name, row in out["paths"].items():
        t, lat = row["throughput"], row["latency"]
        cpu = f"{t['cpu_s_collector']:>12} {t['cpu_s_backend']:>14}"
        print(
            f"{'Collector -> ' + name:34} {t['spans_per_s']:>9,} {cpu} {lat['p50_ms']:>8} {lat['p99_ms']:>8}"
        )
    print("\nlosses (spans differing, by kind):")
    for path, kinds in out["losses"].items():
        print(f"  {path:16} {kinds or 'nothing'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
