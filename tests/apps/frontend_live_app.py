"""A child process for the AG-UI / AI SDK stream tests: one turn of an agent whose model call streams its
text and asks for three tools, paced by the test.

    python frontend_live_app.py DIR CONVERSATION_ID

Exports with ``configure()`` from the environment (OTLP to the server; text deltas as OTLP log records),
plus a pending record of every span at its start (``TOOLSPAN_PENDING_SPANS=all``, set by the test: the
agent's run and the model call are on the stream while they run, not only the tools). After the agent span
started it writes ``DIR/ready`` and waits for ``DIR/go``. The model call is a GenAI ``chat`` span, as a
model SDK's instrumentation records it, streaming its text as deltas (then it waits for ``DIR/said``).
``get_weather`` writes ``DIR/started``, waits for ``DIR/release`` and returns a result; ``get_station``
raises; ``echo`` returns its argument. The process writes ``DIR/returned`` after the agent span ended.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from opentelemetry import trace

import toolspan
from toolspan import semconv as sc

DIR = Path(sys.argv[1])
CONVERSATION = sys.argv[2]
QUESTION = "What is the weather in Paris?"
SAID = "Let me check the weather."
ANSWER = "It is 21 C and sunny in Paris."
ECHO = '</script><script>__pwn()</script> "quoted" \u2028 line\nnext'


@toolspan.tool
def get_weather(city: str) -> dict[str, Any]:
    (DIR / "started").write_text("1")
    _wait_for("release")
    return {"city": city, "temp_c": 21, "sky": "sunny"}


@toolspan.tool
def get_station(city: str) -> str:
    raise ValueError(f"no station in {city}")


@toolspan.tool
def echo(text: str) -> str:
    return text


def _wait_for(name: str) -> None:
    deadline = time.monotonic() + 60
    while not (DIR / name).exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def _calls() -> list[dict[str, Any]]:
    return [
        {"type": "tool_call", "id": "call_weather", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"type": "tool_call", "id": "call_station", "name": "get_station", "arguments": {"city": "Paris"}},
        {"type": "tool_call", "id": "call_echo", "name": "echo", "arguments": {"text": ECHO}},
    ]


def main() -> None:
    provider: Any = toolspan.configure(service_name="frontend-app")
    tracer = trace.get_tracer("frontend-app")
    with toolspan.agent("assistant", input=QUESTION, conversation_id=CONVERSATION) as run:
        (DIR / "ready").write_text("1")
        _wait_for("go")
        toolspan.thought("Look the weather up first.")
        with tracer.start_as_current_span(
            "chat scripted-model",
            attributes={sc.GEN_AI_OPERATION_NAME: "chat", sc.GEN_AI_REQUEST_MODEL: "scripted-model"},
        ) as chat:
            for piece in ("Let me ", "check ", "the weather."):
                toolspan.text_delta(piece)
            _wait_for("said")
            output = [{"role": "assistant", "parts": [{"type": "text", "content": SAID}, *_calls()]}]
            chat.set_attribute(sc.GEN_AI_OUTPUT_MESSAGES, json.dumps(output))
        with toolspan.tool_call_id("call_weather"):
            get_weather("Paris")
        with toolspan.tool_call_id("call_station"), contextlib.suppress(ValueError):
            get_station("Paris")
        with toolspan.tool_call_id("call_echo"):
            echo(ECHO)
        run.set_output(ANSWER)
    (DIR / "returned").write_text("1")
    provider.shutdown()


if __name__ == "__main__":
    main()
