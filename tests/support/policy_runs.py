"""Real agent runs (toolspan instrumentation, the real SDK) for the policy audit tests: one trace each.

A step is ``(tool, arguments, approve)``: ``approve`` ``None`` calls the decorated tool directly; ``True`` or
``False`` runs it through ``run_tool_calls`` with an approver giving that decision. A list of steps runs them
as one parallel batch of ``run_tool_calls``. ``delegate`` starts a sub-plan with agent ``helper`` running the
steps given in its ``steps`` argument.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

import toolspan
from toolspan.bridge.model import Span
from toolspan.bridge.readers import from_readable_spans
from toolspan.testing import capture_spans

Step = Any


@toolspan.tool
def web_search(query: str) -> list[str]:
    return [f"result for {query}"]


@toolspan.tool
def read_file(path: str) -> str:
    return f"contents of {path}"


@toolspan.tool
def read_secrets(name: str) -> str:
    return "s3cr3t"


@toolspan.tool
def send_email(to: str, body: str = "") -> str:
    return "sent"


@toolspan.tool
def run_sql(query: str) -> int:
    return 1


@toolspan.tool
def transfer(amount: Any, currency: str = "EUR") -> str:
    if isinstance(amount, int | float) and amount < 0:
        raise ValueError("negative amount")
    return "ok"


@toolspan.tool
def charge_card(amount: int) -> str:
    return "charged"


@toolspan.tool
def shell(cmd: str) -> str:
    return ""


@toolspan.tool
def delegate(task: str, steps: list[Any]) -> str:
    with toolspan.plan(f"sub-{task}"), toolspan.agent("helper"):
        run_steps(steps)
    return "done"


TOOLS = {
    f.__name__: f
    for f in (
        web_search,
        read_file,
        read_secrets,
        send_email,
        run_sql,
        transfer,
        charge_card,
        shell,
        delegate,
    )
}


def _call(n: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def run_steps(steps: Sequence[Step]) -> None:
    for n, step in enumerate(steps):
        if isinstance(step, list):
            toolspan.run_tool_calls([_call(n * 100 + k, s[0], s[1]) for k, s in enumerate(step)], TOOLS)
            continue
        name, args, approve = step
        if approve is None:
            with contextlib.suppress(ValueError, toolspan.ToolDenied):
                TOOLS[name](**args)
        else:
            toolspan.run_tool_calls([_call(n, name, args)], TOOLS, approve=lambda _c, a=approve: a)


def record_run(agent: str, steps: Sequence[Step]) -> list[ReadableSpan]:
    """The finished spans of one agent run (one trace)."""
    with capture_spans() as finished:
        with toolspan.agent(agent, input="do the task"):
            run_steps(steps)
        return list(finished())


def run_spans(agent: str, steps: Sequence[Step]) -> list[Span]:
    return from_readable_spans(record_run(agent, steps))
