"""The recorded application of the replay-from-server tests, as a child process and as a module.

    python replay_server_app.py DIR

runs ``agent_run`` once with ``configure()`` exporting from the environment (OTLP to a ``toolspan serve``)
and to ``DIR/traces.jsonl``, then writes ``DIR/run.json``: what the agent saw and the trace id. The tests
import the same tools and ``agent_run`` to replay the run in their own process: every result carries the pid
of the process whose body produced it, and ``bodies`` counts the bodies run in this process.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from opentelemetry import trace

import toolspan

bodies: Counter[str] = Counter()


@toolspan.tool
def send_email(to: str, body: str = "") -> dict[str, Any]:
    bodies["send_email"] += 1
    return {"id": f"msg-{bodies['send_email']}", "to": to, "pid": os.getpid()}


@toolspan.tool
def charge(amount: int) -> str:
    bodies["charge"] += 1
    return f"charged {amount} by {os.getpid()}"


@toolspan.tool
def flaky(x: int) -> int:
    bodies["flaky"] += 1
    raise ValueError(f"bad x {x}")


def agent_run(second_to: str = "b@example.com") -> tuple[list[Any], str]:
    """What the agent saw from its tools, and its trace id."""
    seen: list[Any] = []
    with toolspan.agent("assistant", input="go"):
        trace_id = f"{trace.get_current_span().get_span_context().trace_id:032x}"
        with toolspan.tool_call_id("toolu_A"):
            seen.append(send_email("a@example.com", body="hi"))
        seen.append(send_email(second_to))
        seen.append(charge(5))
        try:
            flaky(3)
        except Exception as exc:
            seen.append(f"{type(exc).__name__}: {exc}")
        seen.append(send_email("a@example.com", body="hi"))
    return seen, trace_id


def main() -> None:
    out = Path(sys.argv[1])
    provider = toolspan.configure(service_name="replay-app", file=str(out / "traces.jsonl"))
    seen, trace_id = agent_run()
    provider.shutdown()  # type: ignore[attr-defined]
    (out / "run.json").write_text(json.dumps({"seen": seen, "trace_id": trace_id}))


if __name__ == "__main__":
    main()
