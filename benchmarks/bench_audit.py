"""Policy audit of one 10,000-span agent trace: seconds, and the ratio to building the same trace's execution
tree (``to_trees``, which the audit includes) in the same run.

    python benchmarks/bench_audit.py [--spans 10000] [--rounds 5]

The trace: one ``invoke_agent`` root, sub-plans every 50 calls, tool spans with the toolspan span contract
(arguments recorded), a policy with one rule of every kind. Deterministic.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from toolspan.bridge.model import Span, SpanEvent
from toolspan.bridge.views import audit, to_trees
from toolspan.policy import parse_policy

POLICY = parse_policy(
    {
        "id": "bench",
        "version": 1,
        "rules": [
            {
                "id": "tools",
                "kind": "tools",
                "agent": "assistant",
                "allow": ["search_*", "read_*", "charge_*", "delegate"],
            },
            {"id": "deny", "kind": "tools", "deny": ["shell"]},
            {"id": "limit", "kind": "arguments", "tool": "read_file", "path": "max_bytes", "max": 65536},
            {
                "id": "sql",
                "kind": "arguments",
                "tool": "search_*",
                "path": "query",
                "not_pattern": "(?i)drop",
            },
            {"id": "pay", "kind": "approval", "tools": ["charge_*"]},
            {"id": "budget", "kind": "budget", "tool": "search_*", "max_calls": 100_000},
            {"id": "order", "kind": "order", "after": "read_secrets", "forbid": "send_*"},
        ],
    }
)
TRACE = "0af7651916cd43dd8448eb211c80319c"


def _tool(n: int, parent: str, name: str, args: dict[str, object]) -> Span:
    return Span(
        trace_id=TRACE,
        span_id=f"{n:016x}",
        parent_span_id=parent,
        name=f"execute_tool {name}",
        start_ns=1_000_000 * n,
        end_ns=1_000_000 * n + 500_000,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.arguments": json.dumps(args),
            "gen_ai.tool.call.result": '{"ok": true}',
            "toolspan.tool.state": "COMPLETED",
        },
        events=(
            SpanEvent(
                "toolspan.permission_decided", 1_000_000 * n, {"toolspan.permission.decision": "allow"}
            ),
        )
        if name.startswith("charge")
        else (),
    )


def make_trace(n_spans: int) -> list[Span]:
    root = Span(
        trace_id=TRACE,
        span_id=f"{1:016x}",
        parent_span_id=None,
        name="invoke_agent assistant",
        start_ns=0,
        end_ns=1_000_000 * (n_spans + 2),
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "assistant"},
    )
    spans = [root]
    parent = root.span_id
    for n in range(2, n_spans + 1):
        if n % 50 == 0:
            spans.append(_tool(n, root.span_id, "delegate", {"task": str(n)}))
            parent = spans[-1].span_id
            continue
        kind = n % 4
        if kind == 0:
            spans.append(_tool(n, parent, "search_docs", {"query": f"q{n}", "top_k": 5}))
        elif kind == 1:
            spans.append(_tool(n, parent, "read_file", {"path": f"/f/{n}", "max_bytes": 4096}))
        elif kind == 2:
            spans.append(_tool(n, parent, "charge_card", {"amount": n}))
        else:
            spans.append(_tool(n, parent, "read_secrets", {"name": "k"}))
    return spans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spans", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    spans = make_trace(args.spans)
    audit_s: list[float] = []
    tree_s: list[float] = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        report = audit(spans, POLICY)
        t1 = time.perf_counter()
        to_trees(spans)
        t2 = time.perf_counter()
        audit_s.append(t1 - t0)
        tree_s.append(t2 - t1)
    a, t = statistics.median(audit_s), statistics.median(tree_s)
    print(
        json.dumps(
            {
                "spans": len(spans),
                "tool_calls": report["summary"]["tool_calls"],
                "violations": report["summary"]["violations"],
                "audit_s_median": round(a, 3),
                "audit_s_min": round(min(audit_s), 3),
                "to_trees_s_median": round(t, 3),
                "audit_over_to_trees": round(a / t, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
