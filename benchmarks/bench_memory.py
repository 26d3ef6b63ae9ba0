"""What a 1 MiB attribute costs in memory: ``toolspan serve`` (SQLite) and Jaeger v2 (memory storage), side by
side in one run.

    python benchmarks/bench_memory.py [--quick] [--rounds 3] [--output benchmarks/results/memory.json]

Issue 36 asks that a 1 MiB attribute cost memory in proportion. Per round and server (interleaved, each round
a fresh server on free ports, as ``bench_vs_jaeger.py`` starts them), one trace per request, each request an
agent span and a tool span (``execute_tool``) whose result (``gen_ai.tool.call.result``) is a text of
``--mib`` MiB (1), sent over OTLP/HTTP protobuf one after the other, each read back whole through the
server's own read API before the next (toolspan's ``/api/traces/{id}/otlp``, Jaeger's
``/api/v3/traces/{id}``; the read back holds the attribute's every character):

1. a warm-up request whose result is 1 KiB (the first request's one-time costs: imports, caches, pools);
2. one request with the large attribute: the growth of the peak resident set (``VmHWM`` of the server and
   its children) over the warm-up's, per MiB of attribute;
3. ``--count`` (16; ``--quick``: 4) such requests in all: the growth per MiB of attribute again. A server
   that keeps what it stored on disk grows by a bounded amount; one that keeps it in memory by at least
   the attributes' size.

Ratio: toolspan / Jaeger of the medians. Every figure is computed from what was read back.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import post_all  # noqa: E402
from bench_vs_jaeger import (  # noqa: E402
    JaegerSide,
    Side,
    ToolspanSide,
    fmt,
    hwm_kib,
    load,
    protobuf,
    run_facts,
    save,
)
from tests.e2e.otel_stack import go_binaries, jaeger_ui  # noqa: E402

from toolspan import semconv as sc  # noqa: E402

MIB = 1 << 20
TIMEOUT_S = 120.0


def request(trace_no: int, size: int) -> tuple[bytes, str, str]:
    """One request: an agent span and its tool span holding a result of ``size`` characters; ``(body,
    trace id, the result)``."""
    trace_id = f"{trace_no:032x}"
    # Not one repeated character: a text the way a tool's output is, different in every request.
    unit = f"row {trace_no} " + "abcdefghijklmnopqrstuvwxyz0123456789" * 3 + "\n"
    result = (unit * (size // len(unit) + 1))[:size]
    t0 = 1_700_000_000_000_000_000 + trace_no * 10_000_000_000

    def attr(key: str, value: str) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": value}}

    agent_id, tool_id = f"{trace_no:08x}a0000001", f"{trace_no:08x}b0000002"
    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr(sc.SERVICE_NAME, "memory-bench")]},
                "scopeSpans": [
                    {
                        "scope": {"name": "bench_memory"},
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": agent_id,
                                "name": "invoke_agent bench",
                                "kind": 1,
                                "startTimeUnixNano": str(t0),
                                "endTimeUnixNano": str(t0 + 3_000_000),
                                "attributes": [
                                    attr(sc.GEN_AI_OPERATION_NAME, "invoke_agent"),
                                    attr(sc.GEN_AI_AGENT_NAME, "bench"),
                                ],
                            },
                            {
                                "traceId": trace_id,
                                "spanId": tool_id,
                                "parentSpanId": agent_id,
                                "name": f"{sc.TOOL_SPAN_PREFIX}read_file",
                                "kind": 1,
                                "startTimeUnixNano": str(t0 + 1_000_000),
                                "endTimeUnixNano": str(t0 + 2_000_000),
                                "attributes": [
                                    attr(sc.GEN_AI_OPERATION_NAME, "execute_tool"),
                                    attr(sc.GEN_AI_TOOL_NAME, "read_file"),
                                    attr(sc.GEN_AI_TOOL_CALL_ID, f"call_{trace_no}"),
                                    attr(sc.GEN_AI_TOOL_CALL_ARGUMENTS, '{"path": "big.txt"}'),
                                    attr(sc.GEN_AI_TOOL_CALL_RESULT, result),
                                ],
                            },
                        ],
                    }
                ],
            }
        ]
    }
    return protobuf(doc), trace_id, result


def stored_result(side: Side, trace_id: str) -> str | None:
    """The tool span's result as read back, once the trace is whole (else ``None``)."""
    path = f"/api/traces/{trace_id}/otlp" if isinstance(side, ToolspanSide) else f"/api/v3/traces/{trace_id}"
    status, body = side.read(path)
    if status != 200:
        return None
    doc = json.loads(body)
    doc = doc.get("result", doc)
    spans = [sp for rs in doc.get("resourceSpans") or [] for ss in rs["scopeSpans"] for sp in ss["spans"]]
    if len(spans) < 2:
        return None
    for sp in spans:
        for kv in sp.get("attributes") or ():
            if kv["key"] == sc.GEN_AI_TOOL_CALL_RESULT:
                return str(kv["value"].get("stringValue"))
    return None


def send_and_check(side: Side, trace_no: int, size: int) -> None:
    body, trace_id, result = request(trace_no, size)
    post_all(side.otlp_port, [body], connections=1)
    deadline = time.perf_counter() + TIMEOUT_S
    while (found := stored_result(side, trace_id)) is None:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{side.name}: trace {trace_id} not read back after {TIMEOUT_S} s")
        time.sleep(0.01)
    if found != result:
        raise RuntimeError(f"{side.name}: the {size}-character result of {trace_id} came back changed")


def one_round(side_of: Callable[[Path], Side], size: int, count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="toolspan-memory-") as tmp:
        side = side_of(Path(tmp))
        try:
            send_and_check(side, 1, 1024)
            base = hwm_kib(side.pid)
            send_and_check(side, 2, size)
            one = hwm_kib(side.pid)
            for n in range(3, count + 2):
                send_and_check(side, n, size)
            many = hwm_kib(side.pid)
        finally:
            side.stop()
    mib = size / MIB
    return {
        "base_hwm_mib": round(base / 1024, 1),
        "one": {
            "growth_mib": round((one - base) / 1024, 2),
            "per_attribute_mib": round((one - base) / 1024 / mib, 2),
        },
        "many": {
            "count": count,
            "growth_mib": round((many - base) / 1024, 2),
            "per_attribute_mib": round((many - base) / 1024 / (mib * count), 2),
        },
        "load": load(),
    }


FIGURES: list[tuple[str, Callable[[dict[str, Any]], float]]] = [
    ("peak RSS before the large attributes (MiB)", lambda r: r["base_hwm_mib"]),
    ("peak RSS growth, one 1 MiB attribute (MiB)", lambda r: r["one"]["growth_mib"]),
    (
        "peak RSS growth per MiB of attribute, {count} requests (MiB)",
        lambda r: r["many"]["per_attribute_mib"],
    ),
]


def figures(results: dict[str, list[dict[str, Any]]], count: int) -> list[dict[str, Any]]:
    rows = []
    for label, get in FIGURES:
        row: dict[str, Any] = {"figure": label.format(count=count)}
        for key, rounds in results.items():
            values = [get(r) for r in rounds]
            row[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
        jaeger = row["jaeger"]["median"]
        row["ratio"] = round(row["toolspan"]["median"] / jaeger, 2) if jaeger else None
        row["load"] = round(statistics.median(r["load"] for rs in results.values() for r in rs), 1)
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    def cell(spread: dict[str, float]) -> str:
        return f"{fmt(spread['median'])} ({fmt(spread['min'])} to {fmt(spread['max'])})"

    lines = [
        "| figure | toolspan serve: median (min to max) | Jaeger: median (min to max)"
        " | toolspan / Jaeger | load |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}x"
        lines.append(
            f"| {row['figure']} | {cell(row['toolspan'])} | {cell(row['jaeger'])} | {ratio} | {row['load']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1 round, 4 requests: < 30 s")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per server (3; --quick: 1)")
    parser.add_argument("--count", type=int, default=None, help="large requests (16; --quick: 4)")
    parser.add_argument("--mib", type=float, default=1.0, help="size of the large attribute, MiB")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "memory.json")
    args = parser.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 3)
    count = args.count or (4 if args.quick else 16)
    size = int(args.mib * MIB)

    jaeger_bin, ui = go_binaries()[1], jaeger_ui()
    sides: dict[str, Callable[[Path], Side]] = {
        "toolspan": ToolspanSide,
        "jaeger": lambda work: JaegerSide(work, jaeger_bin, ui),
    }
    load_before = os.getloadavg()
    results: dict[str, list[dict[str, Any]]] = {"toolspan": [], "jaeger": []}
    for n in range(rounds):
        for key in ["toolspan", "jaeger"] if n % 2 == 0 else ["jaeger", "toolspan"]:
            results[key].append(one_round(sides[key], size, count))
    rows = figures(results, count)
    doc = {
        "benchmark": "memory",
        "quick": args.quick,
        "rounds": rounds,
        "attribute_bytes": size,
        "count": count,
        "servers": {"toolspan": ToolspanSide.name, "jaeger": JaegerSide.name},
        **run_facts(load_before),
        "figures": rows,
        "rounds_results": results,
    }
    save(doc, args.output)
    print(table(rows))
    print(
        f"\n{rounds} round(s) per server, interleaved; {count} requests of a {args.mib:g} MiB attribute"
        f" after a warm-up; ratio = toolspan / Jaeger. {doc['machine']['cpu']}, {os.cpu_count()} cores;"
        f" {doc['measured']}, commit {doc['commit']}."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
