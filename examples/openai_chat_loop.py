"""A full tool loop on OpenAI Chat Completions with the real ``openai`` client, every tool call a span.

    python examples/openai_chat_loop.py [OUT_DIR]

What it shows: the model's ``tool_calls`` go straight into ``toolspan.run_tool_calls``, which runs them
in parallel (one ``execute_tool`` span each, carrying the model's ``call_...`` id, under the
``invoke_agent`` span) and returns the ``{"role": "tool", ...}`` messages to append for the next request.

Offline by default: the client talks to a scripted model through its own ``http_client`` hook
(``_offline.py``). Set ``OPENAI_API_KEY`` (and ``OPENAI_BASE_URL`` for another endpoint) to run it for real.
What to look at: the printed answer, and ``OUT_DIR/traces.jsonl`` (OTLP JSON Lines), e.g.
``toolspan convert OUT_DIR/traces.jsonl --to events``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import openai

import toolspan

MODEL = os.environ.get("OPENAI_MODEL", "gpt-4.1-mini")
TOOL_SCHEMAS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
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


def make_client() -> openai.OpenAI:
    if os.environ.get("OPENAI_API_KEY"):
        return openai.OpenAI()
    import _offline

    return openai.OpenAI(api_key="offline", http_client=_offline.openai_chat())


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "traces.jsonl").unlink(missing_ok=True)
    provider = toolspan.configure(service_name="openai-chat-loop", file=out / "traces.jsonl")
    client = make_client()
    question = "What's the weather in Paris, and what is 25 + 30?"
    messages: list[Any] = [{"role": "user", "content": question}]
    print(f"user: {question}")
    with toolspan.agent("assistant", input=question) as run:
        while True:
            reply = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOL_SCHEMAS)
            message = reply.choices[0].message
            if not message.tool_calls:
                break
            messages.append(message)  # the SDK sends its own message object back as it is
            results = toolspan.run_tool_calls(message, [get_weather, add])
            for call, result in zip(
                message.tool_calls, results, strict=True
            ):  # one result per call, in order
                print(f"  {call.function.name}({call.function.arguments}) -> {result['content']}")  # type: ignore[union-attr]
            messages += results
        run.set_output(message.content or "")
    print(f"assistant: {message.content}")
    getattr(provider, "shutdown", lambda: None)()  # flush the trace file
    print(f"trace: {out / 'traces.jsonl'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-output") / Path(__file__).stem)
