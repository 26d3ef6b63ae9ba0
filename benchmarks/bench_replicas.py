"""``toolspan serve`` on SQLite (one replica) and on PostgreSQL with one, two and three replicas, side by side
in one run: ingest spans/s, span end to SSE ``observe`` p50/p99, and each process's CPU.

    python benchmarks/bench_replicas.py [--quick] [--output benchmarks/results/replicas.json]
    python benchmarks/bench_replicas.py --chaos 200000    # the replica test at 200,000 spans (minutes)

Starts a real PostgreSQL (Debian's ``postgresql``, a temporary cluster on a free port, as the tests do;
``fsync`` on, as in production) and real ``toolspan serve`` processes (each with its default parse
worker). For each set-up, in the same run:

1. **Ingest**: OTLP/HTTP protobuf requests of 512 spans (the SDK's own encoder, the agent traces of
   ``bench_server.py``), sent over four keep-alive connections spread over the replicas; spans per second
   of wall time, every response a committed transaction. CPU seconds of every process over the phase:
   each replica (with its parse worker), PostgreSQL (all its backends) and the sender (this process).
2. **Live latency**: an application process (SDK ``BatchSpanProcessor``, 50 ms schedule delay, OTLP/HTTP
   exporter) ends tool spans at a steady rate and exports them to the *first* replica; the stream is read
   from the *last* one (with several replicas: across replicas, through ``LISTEN/NOTIFY``). Latency =
   arrival minus the span's end time, p50/p99.

``--chaos N`` runs ``tests/server/test_replicas.py``'s three-replica test (four senders, a replica
SIGKILLed and restarted, PostgreSQL restarted) with N spans instead of the test's 20,000.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import (  # noqa: E402
    BATCH,
    HOST,
    _latency_summary,
    agent_spans,
    cpu_s,
    free_port,
    latency_run,
    wait_http,
)
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from tests.support.postgres import Postgres, bin_dir  # noqa: E402

SETUPS = (("sqlite", 1), ("postgres", 1), ("postgres", 2), ("postgres", 3))
CONNECTIONS = 4


def _serve(db: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "toolspan", "serve", "--db", db, "--port", str(port), "--grpc-port", "-1"]
    with open(log, "ab") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=out)


def _post_spread(ports: list[int], bodies: list[bytes]) -> float:
    """Every body over ``CONNECTIONS`` keep-alive connections, connection ``k`` to replica ``k % n``."""
    import http.client

    errors: list[str] = []

    def worker(port: int, part: list[bytes]) -> None:
        conn = http.client.HTTPConnection(HOST, port, timeout=120)
        for body in part:
            conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                errors.append(str(response.status))
        conn.close()

    threads = [
        threading.Thread(target=worker, args=(ports[k % len(ports)], bodies[k::CONNECTIONS]))
        for k in range(CONNECTIONS)
    ]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError(f"export failed: {errors[:3]}")
    return time.perf_counter() - start


def _latency(producer_port: int, reader_port: int, rate: int, seconds: float) -> dict[str, Any]:
    live = latency_run(producer_port, rate, seconds, reader_port=reader_port)
    return _latency_summary(reader_port, live["arrivals"], live["sent"], rate)


def _postmaster(pg: Postgres) -> int:
    return int((pg.data / "postmaster.pid").read_text().split()[0])


def run_setup(
    engine: str, replicas: int, pg: Postgres, bodies: list[bytes], spans: int, rate: int, seconds: float
) -> dict[str, Any]:
    tmp = pg.root.parent / f"toolspan-bench-{os.getpid()}-{engine}{replicas}"
    tmp.mkdir(exist_ok=True)
    db = str(tmp / "bench.db") if engine == "sqlite" else pg.fresh_url()
    ports = [free_port() for _ in range(replicas)]
    procs = [_serve(db, port, tmp / f"replica{i}.log") for i, port in enumerate(ports)]
    try:
        for port in ports:
            wait_http(port)
        pg_pid = _postmaster(pg)
        before = [cpu_s(p.pid) for p in procs], cpu_s(pg_pid), time.process_time()
        elapsed = _post_spread(ports, bodies)
        after = [cpu_s(p.pid) for p in procs], cpu_s(pg_pid), time.process_time()
        cpu: dict[str, Any] = {
            "replicas_s": [round(b - a, 2) for a, b in zip(before[0], after[0], strict=True)],
            "postgres_s": round(after[1] - before[1], 2) if engine == "postgres" else 0.0,
            "sender_s": round(after[2] - before[2], 2),
        }
        live_before = [cpu_s(p.pid) for p in procs], cpu_s(pg_pid)
        live = _latency(ports[0], ports[-1], rate, seconds)
        live_after = [cpu_s(p.pid) for p in procs], cpu_s(pg_pid)
        live["cpu"] = {
            "replicas_s": [round(b - a, 2) for a, b in zip(live_before[0], live_after[0], strict=True)],
            "postgres_s": round(live_after[1] - live_before[1], 2) if engine == "postgres" else 0.0,
        }
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)
    return {
        "engine": engine,
        "replicas": replicas,
        "ingest": {
            "spans": spans,
            "seconds": round(elapsed, 2),
            "spans_per_s": round(spans / elapsed),
            "cpu": cpu,
            "cpu_us_per_span": round((sum(cpu["replicas_s"]) + cpu["postgres_s"]) / spans * 1e6, 1),
        },
        "live": live,
    }


def chaos(spans: int) -> int:
    env = {**os.environ, "TOOLSPAN_TEST_REPLICA_SPANS": str(spans)}
    test = (
        "tests/server/test_replicas.py"
        "::test_three_replicas_four_senders_a_replica_killed_and_the_database_restarted"
    )
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-s", test], cwd=REPO, env=env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "replicas.json")
    parser.add_argument("--rate", type=int, default=500, help="tool spans per second in the latency run")
    parser.add_argument("--chaos", type=int, default=None, metavar="SPANS", help="run the replica test")
    args = parser.parse_args(argv)
    if args.chaos is not None:
        return chaos(args.chaos)
    binaries = bin_dir()
    if binaries is None:
        sys.stderr.write("bench_replicas: PostgreSQL is not installed (Debian: apt-get install postgresql)\n")
        return 2
    traces = 640 if args.quick else 2560  # 8 spans each: 5,120 or 20,480 spans per set-up
    seconds = 2.0 if args.quick else 6.0
    spans = agent_spans(traces * len(SETUPS))
    per = len(spans) // len(SETUPS)
    pg = Postgres(binaries, fsync=True)
    results: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "load_before": list(os.getloadavg()),
        "batch": BATCH,
        "connections": CONNECTIONS,
        "rate_per_s": args.rate,
        "setups": [],
    }
    try:
        pg.start()
        for n, (engine, replicas) in enumerate(SETUPS):
            mine = spans[n * per : (n + 1) * per]  # distinct spans for every set-up
            bodies = [
                bytes(encode_spans(mine[i : i + BATCH]).SerializeToString())
                for i in range(0, len(mine), BATCH)
            ]
            row = run_setup(engine, replicas, pg, bodies, len(mine), args.rate, seconds)
            results["setups"].append(row)
            print(json.dumps(row), flush=True)
    finally:
        pg.remove()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=1) + "\n")
    print(render(results))
    return 0


def render(results: dict[str, Any]) -> str:
    lines = [
        "| store | replicas | ingest spans/s | CPU s: replicas / PostgreSQL / sender | CPU us/span"
        " | end -> SSE p50 | p99 |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in results["setups"]:
        ing, live = row["ingest"], row["live"]
        cpu = ing["cpu"]
        each = " + ".join(f"{c:g}" for c in cpu["replicas_s"])
        lines.append(
            f"| {row['engine']} | {row['replicas']} | {ing['spans_per_s']:,} |"
            f" {each} / {cpu['postgres_s']:g} / {cpu['sender_s']:g} |"
            f" {ing['cpu_us_per_span']} | {live['p50_ms']} ms | {live['p99_ms']} ms |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
