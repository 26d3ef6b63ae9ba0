"""Reading one 1 MiB attribute of every adversarial shape (``tests/support/adversarial.py``: brackets a
million deep, a string of escaped quotes that never ends after 300 brackets, runs of backslashes, a number
of a million digits, many keys, brackets inside strings, lone surrogate escapes, a Python literal), as the
fact readers read it, and the ratio to the bare ``json.loads`` of the same text, measured in the same run
(issue 35: every reader step is linear in its input).

    python benchmarks/bench_attribute.py [--mib 1] [--rounds 5] [--out benchmarks/results/attribute.json]

Two readers per shape: ``parse_json`` (the attribute read as JSON, or kept as text: the depth guard, the
decoder, the lone-surrogate check), and ``tool_call`` of a tool span holding the text as its arguments (every
fact reader step a view takes for one call: the arguments read, a Python literal tried, the result). The
reference ``json.loads`` fails fast on some shapes (too deep, an integer over the int-to-text limit): the
ratio is then large while the time stays small; the times are what a reader pays.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.adversarial import MIB, SHAPES, shape  # noqa: E402

from toolspan import semconv  # noqa: E402
from toolspan.bridge.facts import parse_json, tool_call  # noqa: E402
from toolspan.bridge.model import Span  # noqa: E402


def _median_ns(fn: Callable[[], Any], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    return float(statistics.median(samples))


def _loads(text: str) -> None:
    with contextlib.suppress(ValueError, RecursionError):
        json.loads(text)


def _tool_span(arguments: str) -> Span:
    return Span(
        trace_id="a" * 32,
        span_id="b" * 16,
        parent_span_id=None,
        name="execute_tool t",
        start_ns=1,
        end_ns=2,
        attributes={
            semconv.GEN_AI_OPERATION_NAME: "execute_tool",
            semconv.GEN_AI_TOOL_NAME: "t",
            semconv.GEN_AI_TOOL_CALL_ARGUMENTS: arguments,
            semconv.GEN_AI_TOOL_CALL_RESULT: arguments,
        },
    )


def _row(name: str, size: int, rounds: int) -> dict[str, Any]:
    text = shape(name, size)
    arguments = json.dumps({"input_str": text}) if name == "python literal" else text
    span = _tool_span(arguments)
    reference = _median_ns(lambda: _loads(arguments), rounds)
    parse = _median_ns(lambda: parse_json(arguments), rounds)
    call = _median_ns(lambda: tool_call(span), rounds)
    return {
        "shape": name,
        "attribute_bytes": len(arguments.encode("utf-8", "surrogatepass")),
        "json_loads_ms": round(reference / 1e6, 3),
        "parse_json_ms": round(parse / 1e6, 3),
        "parse_json_x_loads": round(parse / reference, 2),
        "tool_call_ms": round(call / 1e6, 3),
        "tool_call_x_loads": round(call / reference, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mib", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    size = int(args.mib * MIB)
    rows = [_row(name, size, args.rounds) for name in SHAPES]
    print("| shape | attribute bytes | json.loads ms | parse_json ms | x loads | tool_call ms | x loads |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['shape']} | {r['attribute_bytes']:,} | {r['json_loads_ms']} | {r['parse_json_ms']}"
            f" | {r['parse_json_x_loads']} | {r['tool_call_ms']} | {r['tool_call_x_loads']} |"
        )
    if args.out:
        machine = {"python": platform.python_version(), "platform": platform.platform()}
        Path(args.out).write_text(json.dumps({"machine": machine, "rows": rows}, indent=2) + "\n", "utf-8")


if __name__ == "__main__":
    main()
