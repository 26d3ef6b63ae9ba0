"""A full tool loop on Gemini with the real ``google-genai`` client, every function call a span.

    python examples/gemini_loop.py [OUT_DIR]

What it shows: ``toolspan.run_tool_calls(response, tools)`` takes the whole ``GenerateContentResponse``,
runs the ``function_call`` parts of its first candidate in parallel (one ``execute_tool`` span each,
with the model's function call id when it gives one), and returns ``function_response`` parts
(``{"output": ...}``, or ``{"error": ...}`` when a tool fails); they go back as a ``user`` content after
the model's own content (which keeps its thought signatures). Automatic function calling is not used:
the loop is yours, the spans are toolspan's.

Offline by default (a scripted model behind the client's ``httpx_client`` hook, ``_offline.py``); set
``GEMINI_API_KEY`` to run it for real. What to look at: the printed answer and ``OUT_DIR/traces.jsonl``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from google import genai
from google.genai import types

import toolspan

MODEL = os.environ.get("GEMINI_MODEL", "gemini-2.5-flash")
DECLARATIONS = [
    types.FunctionDeclaration(
        name="get_weather",
        description="Current weather of a city.",
        parameters_json_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    ),
    types.FunctionDeclaration(
        name="add",
        description="Add two numbers.",
        parameters_json_schema={
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    ),
]


@toolspan.tool
def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city."""
    return {"city": city, "temp_c": 18, "sky": "cloudy"}


@toolspan.tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def make_client() -> genai.Client:
    if os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"):
        return genai.Client()
    import _offline

    return genai.Client(api_key="offline", http_options=types.HttpOptions(httpx_client=_offline.gemini()))


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "traces.jsonl").unlink(missing_ok=True)
    provider = toolspan.configure(service_name="gemini-loop", file=out / "traces.jsonl")
    client = make_client()
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=DECLARATIONS)],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    question = "What's the weather in Paris, and what is 25 + 30?"
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=question)])]
    print(f"user: {question}")
    with toolspan.agent("assistant", input=question) as run:
        while True:
            response = client.models.generate_content(model=MODEL, contents=contents, config=config)
            results = toolspan.run_tool_calls(response, [get_weather, add])
            if not results:
                break
            for call, result in zip(response.function_calls or [], results, strict=True):  # in call order
                said = result["function_response"]["response"]  # type: ignore[index]
                print(f"  {call.name}({json.dumps(call.args)}) -> {json.dumps(said)}")
            contents.append(response.candidates[0].content)  # type: ignore[index]
            contents.append(types.Content(role="user", parts=results))  # type: ignore[arg-type]
        run.set_output(response.text or "")
    print(f"assistant: {response.text}")
    getattr(provider, "shutdown", lambda: None)()  # flush the trace file
    print(f"trace: {out / 'traces.jsonl'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-output") / Path(__file__).stem)
