"""The worst-case cost of one live policy check: pattern rules on a 1 MB argument, and the ratio to reading
the same argument once (``str.encode``: RE2 reads UTF-8, so this is the least any check of the text costs),
measured in the same run.

    python benchmarks/bench_policy.py [--mb 1] [--rounds 7] [--out benchmarks/results/policy.json]

Patterns: a plain one, a case-insensitive one with ``\\s+``, and ``^(a+)+$``, which on Python's backtracking
engine takes exponential time (about seconds at 28 characters; a 1 MB argument would never end). Each is
checked through ``Checker.evaluate`` on the whole argument, as the live guard does. Deterministic input:
1 MB of ``a`` with one ``!`` at the end (the worst case for ``^(a+)+$``), and 1 MB of text with the
forbidden words at the very end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from toolspan.policy import Call, Checker, parse_policy

PATTERNS = {
    "plain": ("not_pattern", "sk_live_"),
    "drop-table": ("not_pattern", r"(?i)drop\s+table"),
    "nested-quantifier": ("pattern", r"^(a+)+$"),
}


def _median_ns(fn: Any, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    return float(statistics.median(samples))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    inputs = {
        "plain": "x" * (size - 12) + "sk_live_1234",
        "drop-table": "select 1;" + " " * (size - 30) + "DROP \t TABLE users",
        "nested-quantifier": "a" * (size - 1) + "!",
    }
    rows = []
    for name, (field, pattern) in PATTERNS.items():
        policy = parse_policy(
            {
                "id": "b",
                "version": 1,
                "rules": [{"id": name, "kind": "arguments", "tool": "t", "path": "x", field: pattern}],
            }
        )
        checker = Checker(policy)
        call = Call(tool="t", arguments={"x": inputs[name]})
        verdict = checker.evaluate(call)
        assert [f.rule_id for f in verdict.violations] == [name], verdict
        text = inputs[name]
        reference = _median_ns(lambda text=text: text.encode("utf-8"), args.rounds)
        check = _median_ns(lambda checker=checker, call=call: checker.evaluate(call), args.rounds)
        rows.append(
            {
                "pattern": name,
                "argument_bytes": len(text.encode("utf-8")),
                "check_ms": round(check / 1e6, 3),
                "reference_ms": round(reference / 1e6, 3),
                "x_reference": round(check / reference, 2),
            }
        )
    print("| pattern | argument bytes | check ms | read once ms | x read once |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['pattern']} | {row['argument_bytes']} | {row['check_ms']} | {row['reference_ms']}"
            f" | {row['x_reference']} |"
        )
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows}, indent=2) + "\n", "utf-8")


if __name__ == "__main__":
    main()
