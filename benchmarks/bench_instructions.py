"""``toolspan serve``'s ingest and first read in instructions per span, next to their peers in the same run.

    python benchmarks/bench_instructions.py [--quick] [--spans 20480] [--output FILE]

On a shared two-core machine the CPU time of one step moves by a fifth from one minute to the next, more than
most changes to it. An instruction count does not: each phase runs in a child Python under Valgrind's
``callgrind`` (no cache simulation; ``PYTHONHASHSEED=0``), twice, on a smaller and a larger share of the same
input, and the difference of the two counts is divided by the spans between them. What both runs share
(starting Python, the imports, reading the input, the first request's set-up: the shapes met first, the
statements prepared) cancels out; what is left is the steady cost of a span. Only the thread running the
phase is counted (the store's checkpoint thread is not), but in ``serve``, which counts every thread.

Phases, on ``gen_agent_spans.py``'s requests of 512 agent spans (as ``bench_vs_jaeger.py`` sends them) and,
for the reads, on copies of ``bench_vs_jaeger.py``'s 1,000-span trace (a run recorded by the real
instrumentation) under distinct trace ids:

- ``prepare``: the parse worker's ``prepare_body`` of each body (the rows made ready to store); its peer
  ``parse``: the OTLP ``ExportTraceServiceRequest`` parsed from each body.
- ``store``: ``ingest_prepared`` of each request's prepared rows on a fresh SQLite store; its peer
  ``insert``: the same span rows into a table of the same columns (no index, no events, no trace
  summaries) with ``executemany``, on the store's pragmas, a commit a request.
- ``decode``: ``trace_spans`` of a stored trace (the SQL read, each record decoded to a neutral span); its
  peer ``records``: the same records read and parsed as OTLP ``Span`` messages.
- ``tree``: the ``/tree`` document's bytes from the decoded spans (the view and its JSON); no peer.
- ``serve``: the real ``toolspan serve`` process under callgrind (its parse worker, a process of its own,
  not counted: that is ``prepare``), sent the requests over HTTP as ``bench_vs_jaeger.py`` sends them (two
  keep-alive connections), then stopped with Ctrl-C; each of its threads counted apart (the event loop, and
  the others: the store's thread pool, the checkpoint thread, the parse pool's hand-offs). Its peer is
  ``store``: the same rows stored without HTTP.

Between them, ``prepare`` and ``store`` are what ``POST /v1/traces`` costs a span in the parse worker and in
the server process, without the web stack and the hand-offs; ``serve`` is the server process with them (so
``serve`` less ``store`` is the web stack and the hand-offs); ``decode`` and ``tree`` are the first read of
``/api/traces/{id}/tree``.
"""

from __future__ import annotations

import argparse
import json
import marshal
import os
import platform
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
BATCH_SPANS = 512
READ_TRACES = (1, 3)  # the reads' smaller and larger share: 1 then 3 copies of the 1,000-span trace
TREE_SPANS = 1000
PEERS = {"prepare": "parse", "store": "insert", "serve": "store", "decode": "records"}
PHASES = ("parse", "prepare", "insert", "store", "serve", "records", "decode", "tree")
BARE = ("parse", "insert", "records")  # the peers that are no part of toolspan: no row of their own
READS = ("records", "decode", "tree")
# The server's start and stop under callgrind (its imports run some fifty times slower).
SERVE_TIMEOUT_S = 600.0
SERVER_PHASES = ("store", "decode", "tree")
# The span rows' columns (``Row``), the bare peer's table.
_COLUMNS = (
    "trace_id TEXT, span_id TEXT, parent TEXT, name TEXT, start_ns INTEGER, end_ns INTEGER, is_tool INTEGER,"
    " tool_name TEXT, tool_state TEXT, is_error INTEGER, service TEXT, conversation_id TEXT, data BLOB,"
    " waiting INTEGER"
)
_WIDTH = 14


# --- the child: one phase on a share of the input ----------------------------------------------------------


def _spans_of(prepared: list[tuple[Any, ...]]) -> int:
    return sum(p[0] for p in prepared)


def _ingest_phase(phase: str, work: Path, count: int) -> tuple[Callable[[], Any], int]:
    from toolspan.server._ingest.otlp import PROTOBUF, prepare_body
    from toolspan.server._store.engines import open_store
    from toolspan.server._store.sql.engines import PRAGMAS
    from toolspan.server._store.writes import Prepared

    bodies = marshal.loads((work / "bodies.marshal").read_bytes())[:count]
    prepared = [Prepared(*p) for p in marshal.loads((work / "prepared.marshal").read_bytes())[:count]]
    spans = _spans_of(prepared)
    if phase == "parse":
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        parse = ExportTraceServiceRequest.FromString
        return lambda: [parse(body) for body in bodies], spans
    if phase == "prepare":
        return lambda: [prepare_body(body, PROTOBUF) for body in bodies], spans
    db_path = work / f"{phase}-{count}.db"
    if phase == "insert":
        db = sqlite3.connect(str(db_path), isolation_level=None)
        for pragma in PRAGMAS:
            db.execute(pragma)
        db.execute(f"CREATE TABLE spans ({_COLUMNS})")
        statement = f"INSERT INTO spans VALUES ({', '.join('?' * _WIDTH)})"
        requests = [[p.values[i : i + _WIDTH] for i in range(0, len(p.values), _WIDTH)] for p in prepared]

        def insert() -> None:
            for rows in requests:
                db.execute("BEGIN IMMEDIATE")
                db.executemany(statement, rows)
                db.execute("COMMIT")

        return insert, spans
    store = open_store(str(db_path))
    return lambda: [store.ingest_prepared(p) for p in prepared], spans


def _read_phase(phase: str, work: Path, count: int) -> tuple[Callable[[], Any], int]:
    from toolspan.server._http.render import document_bytes
    from toolspan.server._store.engines import open_store

    traces = json.loads((work / "traces.json").read_text())
    store = open_store(str(work / "reads.db"))
    if phase == "tree":
        from toolspan.bridge.views.registry import VIEWS

        build = VIEWS["tree"].build
        decoded = [store.trace_spans(t) for t in traces]  # all of them in both runs: cancels out
        return lambda: [document_bytes(build(spans)) for spans in decoded[:count]], count * TREE_SPANS
    if phase == "decode":
        return lambda: [store.trace_spans(t) for t in traces[:count]], count * TREE_SPANS
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    raw = sqlite3.connect(str(work / "reads.db"))
    header = struct.Struct(">II")  # a stored record's prefix: its resource's and scope's lengths (``codec``)

    def records() -> None:
        for trace_id in traces[:count]:
            for (data,) in raw.execute("SELECT data FROM spans WHERE trace_id = ?", (trace_id,)):
                resource_len, scope_len = header.unpack_from(data)
                Span.FromString(data[header.size + resource_len + scope_len :])

    return records, count * TREE_SPANS


def child(phase: str, work: Path, count: int) -> None:
    """Run ``phase`` on the first ``count`` requests (or traces) and print the spans it covered; the garbage
    collector tuned as ``toolspan serve``'s process tunes it for the phases it runs (the store, the reads),
    left as it is for the parse worker's."""
    make = _read_phase if phase in READS else _ingest_phase
    run, spans = make(phase, work, count)
    if phase in SERVER_PHASES:
        from toolspan.server._http.serve import tune_collector

        tune_collector()
    run()
    print(json.dumps({"spans": spans}))


# --- the parent: the input, the runs, the table -----------------------------------------------------------


def _instructions(phase: str, work: Path, count: int) -> tuple[int, int]:
    """``(instructions, spans)`` of one child run under callgrind."""
    out = work / f"callgrind.{phase}.{count}"
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(REPO / "src")}
    argv = [sys.executable, __file__, "--child", phase, "--work", str(work), "--count", str(count)]
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"bench_instructions: the {phase} run failed under callgrind: {proc.stderr[-1500:]}")
    spans = int(json.loads(proc.stdout.strip().splitlines()[-1])["spans"])
    return _total(out), spans


def _serve_instructions(work: Path, count: int) -> tuple[int, int, dict[str, int]]:
    """``(instructions, spans, by thread)`` of ``toolspan serve`` under callgrind (started as the server
    tests start it), sent the first ``count`` requests over HTTP and stopped with Ctrl-C; by thread:
    ``event_loop`` (its main thread) and ``others``. (``prepare_input`` put the repository on the path.)"""
    from bench_server import post_all
    from tests.support.server import Server

    bodies = marshal.loads((work / "bodies.marshal").read_bytes())[:count]
    prepared = marshal.loads((work / "prepared.marshal").read_bytes())[:count]
    run = work / f"serve-{count}"
    run.mkdir()
    out = run / "callgrind.out"
    server = Server(
        run / "s.db",
        0,
        -1,  # no OTLP/gRPC
        (),
        run / "serve.log",
        launcher=("valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}"),
        env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(REPO / "src")},
        ready_timeout_s=SERVE_TIMEOUT_S,
    )
    server.start()
    assert server.proc is not None
    try:
        post_all(server.port, bodies)
        server.proc.send_signal(signal.SIGINT)
        server.proc.wait(SERVE_TIMEOUT_S)
    finally:
        server.kill()  # (only if it is still running)
    if server.proc.returncode != 0:
        tail = server.log.read_text(errors="replace")[-1500:]
        raise SystemExit(
            f"bench_instructions: toolspan serve under callgrind exited {server.proc.returncode}: {tail}"
        )
    # One file per thread, ``<out>-01`` the main thread (the event loop), in the order they started.
    counted = {f.name: _total(f) for f in sorted(run.glob("callgrind.out-*"))}
    if not counted:
        raise SystemExit("bench_instructions: callgrind wrote no count for toolspan serve")
    main_thread = counted.pop(f"{out.name}-01", 0)
    threads = {"event_loop": main_thread, "others": sum(counted.values())}
    return main_thread + threads["others"], _spans_of(prepared), threads


def _total(path: Path) -> int:
    for line in path.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit(f"bench_instructions: no instruction total in {path.name}")


def prepare_input(work: Path, spans: int) -> dict[str, Any]:
    """The requests, their prepared rows, and a store holding copies of the 1,000-span trace."""
    sys.path[:0] = [str(REPO), str(HERE)]
    from bench_vs_jaeger import agent_requests, run_of_spans, run_requests

    from toolspan.server._ingest.otlp import PROTOBUF, prepare_body
    from toolspan.server._store.engines import open_store
    from toolspan.server._store.writes import Prepared

    bodies, per_trace = agent_requests(spans, work)
    prepared = [tuple(prepare_body(body, PROTOBUF)) for body in bodies]
    if _spans_of(prepared) != sum(per_trace.values()):
        raise SystemExit("bench_instructions: the prepared rows do not hold every span generated")
    (work / "bodies.marshal").write_bytes(marshal.dumps(bodies))
    (work / "prepared.marshal").write_bytes(marshal.dumps(prepared))
    calls = run_of_spans(TREE_SPANS)
    traces = [f"{'d' * 28}{i:04x}" for i in range(max(READ_TRACES))]
    store = open_store(str(work / "reads.db"))
    try:
        for trace_id in traces:
            trace_bodies, count = run_requests(calls, trace_id)
            for body in trace_bodies:
                store.ingest_prepared(Prepared(*prepare_body(body, PROTOBUF)))
            if count != TREE_SPANS or len(store.trace_spans(trace_id)) != TREE_SPANS:
                raise SystemExit(f"bench_instructions: trace {trace_id} not stored whole")
    finally:
        store.close()
    (work / "traces.json").write_text(json.dumps(traces))
    return {"requests": len(bodies), "spans": _spans_of(prepared), "traces": len(per_trace)}


def measure(work: Path, requests: int, phases: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Each phase's two runs (two at a time: a count does not depend on what else runs) and its instructions
    per span."""
    shares = {"ingest": (requests // 2, requests), "read": READ_TRACES}
    runs = [(phase, n) for phase in phases for n in shares["read" if phase in READS else "ingest"]]

    def count(run: tuple[str, int]) -> tuple[int, int, dict[str, int]]:
        if run[0] == "serve":
            return _serve_instructions(work, run[1])
        return (*_instructions(run[0], work, run[1]), {})

    with ThreadPoolExecutor(max_workers=2) as pool:
        counted = dict(zip(runs, pool.map(count, runs), strict=True))
    results: dict[str, dict[str, Any]] = {}
    for phase in phases:
        low, high = shares["read" if phase in READS else "ingest"]
        (low_ir, low_spans, low_threads), (high_ir, high_spans, high_threads) = (
            counted[phase, low],
            counted[phase, high],
        )
        spans = high_spans - low_spans
        results[phase] = {
            "runs": [
                {
                    "count": low,
                    "spans": low_spans,
                    "ir": low_ir,
                    **({"threads": low_threads} if low_threads else {}),
                },
                {
                    "count": high,
                    "spans": high_spans,
                    "ir": high_ir,
                    **({"threads": high_threads} if high_threads else {}),
                },
            ],
            "spans": spans,
            "ir_per_span": round((high_ir - low_ir) / spans, 1),
        }
        if high_threads:
            results[phase]["threads_ir_per_span"] = {
                name: round((high_threads[name] - low_threads[name]) / spans, 1) for name in high_threads
            }
    return results


def table(results: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """One row per measured phase: its instructions per span, its peer's and their ratio."""
    rows: list[dict[str, Any]] = []
    lines = ["| phase | instructions per span | peer | peer's | ratio |", "|---|---:|---|---:|---:|"]
    for phase in PHASES:
        if phase not in results or phase in BARE:
            continue
        own = results[phase]["ir_per_span"]
        peer = PEERS.get(phase)
        theirs = results[peer]["ir_per_span"] if peer in results else None
        ratio = round(own / theirs, 2) if theirs else None
        rows.append(
            {"phase": phase, "ir_per_span": own, "peer": peer, "peer_ir_per_span": theirs, "ratio": ratio}
        )
        shown = (f"{theirs:,.0f}", f"{own / theirs:.2f}x") if theirs else ("", "")
        lines.append(f"| {phase} | {own:,.0f} | {peer or ''} | {shown[0]} | {shown[1]} |")
        threads = results[phase].get("threads_ir_per_span")
        if threads:
            rows[-1]["threads_ir_per_span"] = threads
    serve = results.get("serve", {}).get("threads_ir_per_span")
    if serve:
        lines.append(
            f"\nserve, by thread: the event loop {serve['event_loop']:,.0f},"
            f" the others {serve['others']:,.0f} instructions a span"
        )
    return rows, "\n".join(lines)


def _commit() -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() if proc.returncode == 0 else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,120 spans (10 requests)")
    parser.add_argument("--spans", type=int, default=20480, help="ingest spans (default 20,480: 40 requests)")
    parser.add_argument("--phases", default=",".join(PHASES), help="phases to count, comma-separated")
    parser.add_argument("--output", type=Path, help="the results as JSON")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        child(opts.child, opts.work, opts.count)
        return
    phases = tuple(p for p in opts.phases.split(",") if p)
    unknown = sorted(set(phases) - set(PHASES))
    if unknown:
        parser.error(f"--phases: unknown {', '.join(unknown)} (known: {', '.join(PHASES)})")
    if shutil.which("valgrind") is None:
        parser.error("instruction counts need valgrind (apt-get install valgrind)")
    spans = 5120 if opts.quick else opts.spans
    if spans < 2 * BATCH_SPANS:
        parser.error(f"--spans: at least {2 * BATCH_SPANS} (two requests)")
    with tempfile.TemporaryDirectory(prefix="toolspan-instructions-") as tmp:
        work = Path(tmp)
        made = prepare_input(work, spans)
        print(
            f"{made['spans']:,} spans in {made['requests']} requests; counting {', '.join(phases)}",
            flush=True,
        )
        results = measure(work, made["requests"], phases)
    rows, text = table(results)
    print(text)
    if opts.output:
        doc = {
            "benchmark": "instructions",
            "quick": opts.quick,
            "input": made,
            "phases": results,
            "figures": rows,
            "python": platform.python_version(),
            "commit": _commit(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "tool": "valgrind --tool=callgrind, PYTHONHASHSEED=0",
        }
        opts.output.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
