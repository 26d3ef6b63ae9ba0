"""Generate an OTLP JSON Lines file (the Collector ``file`` exporter's format) of agent traces.

Each line is one ``ExportTraceServiceRequest`` holding a batch of spans (like a BatchSpanProcessor
export). Each trace is an agent run: an ``invoke_agent`` span with thoughts, then steps of one LLM
``chat`` span and one to three ``execute_tool`` spans carrying the toolspan span contract attributes
(about one tool call in ten fails). Deterministic for a given seed.

    python benchmarks/gen_agent_spans.py OUT.jsonl --spans 1000000
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

TOOLS = [
    ("search_docs", "Search the documentation index", {"query": "how to rotate api keys", "top_k": 5}),
    ("read_file", "Read a file from the workspace", {"path": "src/app/config.py", "max_bytes": 65536}),
    (
        "run_shell",
        "Run a shell command in the sandbox",
        {"cmd": "pytest -q tests/test_api.py", "timeout": 120},
    ),
    ("http_get", "Fetch a URL", {"url": "https://api.example.com/v1/orders?limit=20", "headers": {}}),
    ("sql_query", "Query the analytics warehouse", {"sql": "select count(*) from orders where day = ?"}),
]
BASE_NS = 1_760_000_000_000_000_000


def _s(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _i(key: str, value: int) -> dict[str, Any]:
    return {"key": key, "value": {"intValue": str(value)}}


def _msgs(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


class Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.next_span = 1
        self.next_trace = 1

    def span_id(self) -> str:
        self.next_span += 1
        return f"{self.next_span:016x}"

    def trace(self, t0: int) -> list[dict[str, Any]]:
        rng = self.rng
        self.next_trace += 1
        tid = f"{self.next_trace:032x}"
        conv = f"conv-{self.next_trace // 3:08d}"
        root = self.span_id()
        spans: list[dict[str, Any]] = []
        t = t0 + 1_000_000
        for _step in range(rng.randint(2, 6)):
            llm = self.span_id()
            dur = rng.randint(300_000_000, 2_000_000_000)
            spans.append(
                {
                    "traceId": tid,
                    "spanId": llm,
                    "parentSpanId": root,
                    "name": "chat gpt-4o",
                    "kind": 3,
                    "startTimeUnixNano": str(t),
                    "endTimeUnixNano": str(t + dur),
                    "attributes": [
                        _s("gen_ai.operation.name", "chat"),
                        _s("gen_ai.provider.name", "openai"),
                        _s("gen_ai.request.model", "gpt-4o"),
                        _i("gen_ai.usage.input_tokens", rng.randint(200, 9000)),
                        _i("gen_ai.usage.output_tokens", rng.randint(20, 900)),
                        _s("openinference.span.kind", "LLM"),
                    ],
                    "status": {},
                }
            )
            t += dur + 1_000_000
            for _call in range(rng.randint(1, 3)):
                name, desc, args = TOOLS[rng.randrange(len(TOOLS))]
                sid = self.span_id()
                dur = rng.randint(5_000_000, 900_000_000)
                failed = rng.random() < 0.1
                arguments = json.dumps(args)
                result = json.dumps(
                    {
                        "items": [f"result line {k} for {name}" for k in range(rng.randint(1, 4))],
                        "ok": not failed,
                    }
                )
                model_id = f"call_{rng.getrandbits(64):016x}"
                attrs = [
                    _s("gen_ai.operation.name", "execute_tool"),
                    _s("gen_ai.tool.name", name),
                    _s("gen_ai.tool.type", "function"),
                    _s("gen_ai.tool.description", desc),
                    _s("gen_ai.tool.call.id", model_id),
                    _s("gen_ai.tool.call.arguments", arguments),
                    _s("toolspan.execution_id", "exec_" + sid),
                    _s("toolspan.tool_call_id", model_id),
                    _s("toolspan.tool.state", "FAILED" if failed else "COMPLETED"),
                    _s("openinference.span.kind", "TOOL"),
                    _s("tool.name", name),
                    _s("input.value", arguments),
                ]
                if failed:
                    attrs.append(_s("error.type", "TimeoutError"))
                else:
                    attrs += [_s("gen_ai.tool.call.result", result), _s("output.value", result)]
                spans.append(
                    {
                        "traceId": tid,
                        "spanId": sid,
                        "parentSpanId": root,
                        "name": f"execute_tool {name}",
                        "kind": 1,
                        "startTimeUnixNano": str(t),
                        "endTimeUnixNano": str(t + dur),
                        "attributes": attrs,
                        "status": {"code": 2, "message": "TimeoutError: tool timed out"} if failed else {},
                    }
                )
                t += dur + 500_000
        spans.insert(
            0,
            {
                "traceId": tid,
                "spanId": root,
                "name": "invoke_agent coder",
                "kind": 1,
                "startTimeUnixNano": str(t0),
                "endTimeUnixNano": str(t + 1_000_000),
                "attributes": [
                    _s("gen_ai.operation.name", "invoke_agent"),
                    _s("gen_ai.agent.name", "coder"),
                    _s("gen_ai.conversation.id", conv),
                    _s(
                        "gen_ai.input.messages",
                        _msgs("user", "Please fix the failing test in tests/test_api.py"),
                    ),
                    _s(
                        "gen_ai.output.messages",
                        _msgs("assistant", "The test passes now: the config was stale."),
                    ),
                    _s("openinference.span.kind", "AGENT"),
                ],
                "events": [
                    {
                        "timeUnixNano": str(t0 + 500_000),
                        "name": "toolspan.thought",
                        "attributes": [
                            _s("toolspan.thought.content", "I should look at the test output first.")
                        ],
                    }
                ],
                "status": {},
            },
        )
        return spans


def generate(out: Path, n_spans: int, batch: int = 200, seed: int = 7) -> None:
    gen = Gen(seed)
    resource = {
        "attributes": [
            _s("service.name", "agent-bench"),
            _s("telemetry.sdk.language", "python"),
            _s("telemetry.sdk.name", "opentelemetry"),
            _s("telemetry.sdk.version", "1.38.0"),
        ]
    }
    scope = {"name": "toolspan", "version": "0.1.0"}
    written = 0
    pending: list[dict[str, Any]] = []
    t0 = BASE_NS
    tmp = out.with_suffix(out.suffix + ".part")
    with tmp.open("w", encoding="utf-8") as f:
        while written < n_spans:
            while len(pending) < batch:
                pending.extend(gen.trace(t0))
                t0 += 60_000_000_000
            take = min(batch, n_spans - written)
            chunk, pending = pending[:take], pending[take:]
            request = {
                "resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": chunk}]}]
            }
            f.write(json.dumps(request, separators=(",", ":")))
            f.write("\n")
            written += take
    tmp.replace(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=200, help="spans per line (request)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    generate(args.out, args.spans, args.batch, args.seed)
    print(f"wrote {args.spans} spans to {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
