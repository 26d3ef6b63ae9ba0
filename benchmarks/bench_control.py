"""Benchmark the control channel: from a decision's HTTP response to the tool body starting.

A real ``toolspan serve --token`` and an application process (``tests/apps/control_live_app.py``, mode
``bench``) that runs ``--decisions`` gated tool calls one after the other, each approved through
``toolspan.ServerApprover`` (which long-polls the server for the decision). For each call the benchmark
waits for the call in the inbox (``GET /api/control/waiting``), posts ``allow`` and takes the time the
response was read; the tool body writes the time it started. Latency = body start - response read (both
processes on this machine's clock), median and p99. Reference measured in the same run: the median round
trip of ``GET /healthz`` on the same server (the smallest request it answers), so the latency is also given
as a ratio to one round trip.

Results go to ``benchmarks/results/control.json`` and a line is printed.

    python benchmarks/bench_control.py [--decisions 200]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.server import running_server, sdk_env, wait_for  # noqa: E402

APP = REPO / "tests" / "apps" / "control_live_app.py"
TOKEN = "bench-control-token"
DECIDER = "bench-control-decider-token"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _waiting(server: Any, call_id: str) -> dict[str, Any] | None:
    doc = server.get_json("/api/control/waiting")
    return next((entry for entry in doc["waiting"] if entry["call_id"] == call_id), None)


def _body_times(path: Path) -> list[float]:
    if not path.exists():
        return []
    return [json.loads(line)["t"] for line in path.read_text().splitlines() if line.strip()]


def run(decisions: int) -> dict[str, Any]:
    decider = ("--decider", f"bench={DECIDER}")
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_server(Path(tmp), "--token", TOKEN, *decider) as server,
    ):
        server.headers = {"Authorization": f"Bearer {TOKEN}"}
        env = {
            **sdk_env(server, "http/protobuf"),
            "TOOLSPAN_PENDING_SPANS": "true",
            "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer%20{TOKEN}",
        }
        workdir = Path(tmp)
        app = subprocess.Popen(
            [sys.executable, str(APP), str(workdir), "bench", "bench", server.url, TOKEN, str(decisions)],
            env=env,
        )
        bodies = workdir / "bench-bodies.jsonl"
        latencies: list[float] = []
        round_trips: list[float] = []
        try:
            for i in range(decisions):
                call_id = f"toolu_b{i}"
                entry = wait_for(
                    lambda call_id=call_id: _waiting(server, call_id), f"{call_id} in the inbox", 60
                )
                start = time.perf_counter()
                server.get("/healthz")  # the reference: one round trip of the smallest request
                round_trips.append(time.perf_counter() - start)
                status, _, raw = server.request(
                    "POST",
                    "/api/control/decisions",
                    json.dumps(
                        {
                            "execution_id": entry["execution_id"],
                            "trace_id": entry["trace_id"],
                            "decision": "allow",
                            "shown": entry["arguments_sha256"],
                        }
                    ).encode(),
                    {"Content-Type": "application/json", "Authorization": f"Bearer {DECIDER}"},
                )
                answered = time.time()
                assert status == 200, raw
                times = wait_for(lambda n=i: len(ts := _body_times(bodies)) > n and ts, f"body {i}", 60)
                latencies.append(times[i] - answered)
            assert app.wait(120) == 0
        finally:
            if app.poll() is None:
                app.kill()
    ms = [x * 1000 for x in latencies]
    rtt = statistics.median(round_trips) * 1000
    return {
        "decisions": decisions,
        "decision_to_body_ms": {
            "median": round(statistics.median(ms), 2),
            "p99": round(_percentile(ms, 0.99), 2),
            "min": round(min(ms), 2),
            "max": round(max(ms), 2),
        },
        "reference_healthz_round_trip_ms": round(rtt, 2),
        "median_x_round_trip": round(statistics.median(ms) / rtt, 2),
        "p99_x_round_trip": round(_percentile(ms, 0.99) / rtt, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=200)
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "results" / "control.json"))
    args = parser.parse_args(argv)
    result = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **run(args.decisions),
    }
    Path(args.output).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    row = result["decision_to_body_ms"]
    print(
        f"decision response -> tool body start over {args.decisions} decisions: median {row['median']} ms,"
        f" p99 {row['p99']} ms ({result['median_x_round_trip']}x / {result['p99_x_round_trip']}x one"
        f" GET /healthz round trip of {result['reference_healthz_round_trip_ms']} ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
