"""What checking a decider's edit costs (``edit_problem``: the recorded schema read as untrusted, every
reference resolved inside it, the work counted) against a bare ``jsonschema`` check of the same edit
(``check_schema`` then ``iter_errors`` with the library's defaults), measured in the same run.

    python benchmarks/bench_edits.py [--rounds 7] [--out benchmarks/results/edits.json]

Schemas: a usual tool's parameters (a path, a mode, a nested object, an array of 20 rows), the same with a
``$defs`` reference per row, and the adversarial one of issue 35 (``$defs`` each ``allOf`` two refs to the
next: 2^levels checks). The bare check of the adversarial schema is timed at small depths only (it doubles
with each level: at 40 levels it would never end); the guarded check is timed at 40 levels too, where it
stops at ``MAX_CHECK_STEPS``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import jsonschema

from toolspan.server._http.routes.control.edits import MAX_CHECK_STEPS, edit_problem

USUAL: Any = {
    "type": "object",
    "required": ["path", "mode"],
    "additionalProperties": False,
    "properties": {
        "path": {"type": "string", "minLength": 1, "description": "file to write"},
        "mode": {"enum": ["append", "overwrite"]},
        "options": {
            "type": "object",
            "properties": {"encoding": {"type": "string"}, "retries": {"type": "integer", "minimum": 0}},
        },
        "rows": {
            "type": "array",
            "maxItems": 1000,
            "items": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
            },
        },
    },
}
USUAL_ARGUMENTS: Any = {
    "path": "/tmp/out.txt",
    "mode": "append",
    "options": {"encoding": "utf-8", "retries": 2},
    "rows": [{"id": i, "name": f"row {i}"} for i in range(20)],
}
WITH_REFS: Any = {
    **USUAL,
    "$defs": {"row": USUAL["properties"]["rows"]["items"]},
    "properties": {**USUAL["properties"], "rows": {"type": "array", "items": {"$ref": "#/$defs/row"}}},
}


def branching(levels: int) -> Any:
    defs: dict[str, Any] = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}] * 2} for i in range(levels)}
    defs[f"d{levels}"] = {"type": "integer"}
    return {"$defs": defs, "type": "object", "properties": {"amount": {"$ref": "#/$defs/d0"}}}


def _median_ns(fn: Any, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    return float(statistics.median(samples))


def bare(schema: Any, arguments: Any) -> list[Any]:
    """What a check without the guards does: the draft's meta-schema, then the library's own validation."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return list(cls(schema).iter_errors(arguments))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    cases: list[tuple[str, Any, Any, bool]] = [
        ("usual tool schema, edit fits", USUAL, USUAL_ARGUMENTS, True),
        ("usual tool schema, edit does not fit", USUAL, {**USUAL_ARGUMENTS, "mode": "truncate"}, True),
        ("the same with a $ref per row", WITH_REFS, USUAL_ARGUMENTS, True),
        *((f"allOf 2 refs x {n} levels (2^{n})", branching(n), {"amount": 1}, True) for n in (8, 10, 12)),
        ("allOf 2 refs x 40 levels (2^40, issue 35)", branching(40), {"amount": "x"}, False),
    ]
    rows = []
    for name, schema, arguments, with_bare in cases:
        text = json.dumps(schema)
        problem = edit_problem(text, arguments)
        guarded = _median_ns(lambda t=text, a=arguments: edit_problem(t, a), args.rounds)
        reference = _median_ns(lambda s=schema, a=arguments: bare(s, a), args.rounds) if with_bare else None
        rows.append(
            {
                "schema": name,
                "schema_bytes": len(text),
                "answer": "fits" if problem is None else problem[:60],
                "check_ms": round(guarded / 1e6, 3),
                "bare_ms": None if reference is None else round(reference / 1e6, 3),
                "x_bare": None if reference is None else round(guarded / reference, 2),
            }
        )
    print(f"MAX_CHECK_STEPS = {MAX_CHECK_STEPS}")
    print("| schema | bytes | answer | check ms | bare jsonschema ms | x bare |")
    print("|---|---:|---|---:|---:|---:|")
    for row in rows:
        bare_ms = "never ends" if row["bare_ms"] is None else row["bare_ms"]
        x_bare = "-" if row["x_bare"] is None else row["x_bare"]
        print(
            f"| {row['schema']} | {row['schema_bytes']} | {row['answer']} | {row['check_ms']} | {bare_ms} |"
            f" {x_bare} |"
        )
    if args.out:
        Path(args.out).write_text(
            json.dumps({"max_check_steps": MAX_CHECK_STEPS, "rows": rows}, indent=2) + "\n"
        )


if __name__ == "__main__":
    main()
