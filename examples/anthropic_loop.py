"""A full tool loop on Anthropic Messages with the real ``anthropic`` client, every tool call a span.

    python examples/anthropic_loop.py [OUT_DIR]

What it shows: ``toolspan.run_tool_calls(message, tools)`` takes the whole assistant ``Message``, runs
its ``tool_use`` blocks in parallel (text blocks are skipped), one ``execute_tool`` span each with the
model's ``toolu_...`` id, and returns the ``tool_result`` blocks that make the next user message. The
``anthropic`` client traces its own API calls with OpenTelemetry too: its ``anthropic.messages.create``
spans land in the same trace, beside the tool spans, under the ``invoke_agent`` span.

Offline by default (a scripted model behind the client's ``http_client`` hook, ``_offline.py``); set
``ANTHROPIC_API_KEY`` to run it for real. What to look at: the printed answer and ``OUT_DIR/traces.jsonl``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anthropic

import toolspan

MODEL = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-6")
TOOL_SCHEMAS: list[Any] = [
    {
        "name": "get_weather",
        "description": "Current weather of a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
    {
        "name": "add",
        "description": "Add two numbers.",
        "input_schema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
]


@toolspan.tool
def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city."""
    return {"city": city, "temp_c": 18, "sky": "cloudy"}


@toolspan.tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def make_client() -> anthropic.Anthropic:
    if os.environ.get("ANTHROPIC_API_KEY"):
        return anthropic.Anthropic()
    import _offline

    return anthropic.Anthropic(api_key="offline", http_client=_offline.anthropic_messages())


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "traces.jsonl").unlink(missing_ok=True)
    provider = toolspan.configure(service_name="anthropic-loop", file=out / "traces.jsonl")
    client = make_client()
    question = "What's the weather in Paris, and what is 25 + 30?"
    messages: list[Any] = [{"role": "user", "content": question}]
    print(f"user: {question}")
    with toolspan.agent("assistant", input=question) as run:
        while True:
            message = client.messages.create(
                model=MODEL, max_tokens=1024, messages=messages, tools=TOOL_SCHEMAS
            )
            if message.stop_reason != "tool_use":
                break
            messages.append({"role": "assistant", "content": message.content})
            results = toolspan.run_tool_calls(message, [get_weather, add])
            calls = [block for block in message.content if block.type == "tool_use"]
            for call, result in zip(calls, results, strict=True):  # one result per call, in order
                print(f"  {call.name}({json.dumps(call.input)}) -> {result['content']}")  # type: ignore[union-attr]
            messages.append({"role": "user", "content": results})
        answer = "".join(block.text for block in message.content if block.type == "text")
        run.set_output(answer)
    print(f"assistant: {answer}")
    getattr(provider, "shutdown", lambda: None)()  # flush the trace file
    print(f"trace: {out / 'traces.jsonl'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-output") / Path(__file__).stem)
