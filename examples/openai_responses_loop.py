"""A full tool loop on the OpenAI Responses API with the real ``openai`` client, every tool call a span.

    python examples/openai_responses_loop.py [OUT_DIR]

What it shows: ``toolspan.run_tool_calls(response, tools)`` takes the whole ``Response``, runs its
``function_call`` items (reasoning and message items are skipped), one ``execute_tool`` span each with
the model's ``call_id``, and returns the ``function_call_output`` items; the next request's ``input`` is
the previous input, the model's output items and those results.

Offline by default (a scripted model behind the client's ``http_client`` hook, ``_offline.py``); set
``OPENAI_API_KEY`` to run it for real. What to look at: the printed answer and ``OUT_DIR/traces.jsonl``.
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
        "name": "get_weather",
        "description": "Current weather of a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
    {
        "type": "function",
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {
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


def make_client() -> openai.OpenAI:
    if os.environ.get("OPENAI_API_KEY"):
        return openai.OpenAI()
    import _offline

    return openai.OpenAI(api_key="offline", http_client=_offline.openai_responses())


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "traces.jsonl").unlink(missing_ok=True)
    provider = toolspan.configure(service_name="openai-responses-loop", file=out / "traces.jsonl")
    client = make_client()
    question = "What's the weather in Paris, and what is 25 + 30?"
    items: list[Any] = [{"role": "user", "content": question}]
    print(f"user: {question}")
    with toolspan.agent("assistant", input=question) as run:
        while True:
            response = client.responses.create(model=MODEL, input=items, tools=TOOL_SCHEMAS)
            results = toolspan.run_tool_calls(response, [get_weather, add])
            if not results:
                break
            calls = [item for item in response.output if item.type == "function_call"]
            for call, result in zip(calls, results, strict=True):  # one result per call, in order
                print(f"  {call.name}({call.arguments}) -> {result['output']}")  # type: ignore[union-attr]
            items += [*response.output, *results]
        run.set_output(response.output_text)
    print(f"assistant: {response.output_text}")
    getattr(provider, "shutdown", lambda: None)()  # flush the trace file
    print(f"trace: {out / 'traces.jsonl'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-output") / Path(__file__).stem)
