"""toolspan's own agent loop (``toolspan.agent`` + ``run_tool_calls``) around the OpenAI SDK traced by the
official OpenTelemetry instrumentation (``opentelemetry-instrumentation-openai-v2``), whose message content
arrives as log-based events (OTLP logs tied to the chat span), not attributes. The model is a scripted
Chat Completions endpoint over an ``httpx.MockTransport``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from _chat_http import ScriptedChat


def main(out: str) -> None:
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    from opentelemetry import trace
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    recording = rec.Recording()
    logger_provider = recording.with_logs()
    trace.set_tracer_provider(recording.tracer_provider)
    OpenAIInstrumentor().instrument(
        tracer_provider=recording.tracer_provider, logger_provider=logger_provider
    )

    import openai

    import toolspan

    @toolspan.tool
    def get_weather(city: str) -> dict[str, object]:
        """Current weather of a city."""
        return rec.get_weather(city)

    @toolspan.tool
    def get_population(city: str) -> int:
        """Population of a city."""
        return rec.get_population(city)

    chat = ScriptedChat()
    client = openai.OpenAI(
        api_key="scripted", base_url="http://scripted.invalid/v1", http_client=chat.client()
    )
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tools: list[Any] = [
        {"type": "function", "function": {"name": name, "description": name, "parameters": schema}}
        for name in ("get_weather", "get_population")
    ]
    messages: list[Any] = [{"role": "user", "content": rec.USER_REQUEST}]
    with toolspan.agent("weather_agent", input=rec.USER_REQUEST) as run:
        while True:
            reply = client.chat.completions.create(model=rec.MODEL, messages=messages, tools=tools)
            message = reply.choices[0].message
            if not message.tool_calls:
                answer = message.content or ""
                break
            messages.append(message.model_dump(exclude_none=True))
            messages.extend(toolspan.run_tool_calls(message.tool_calls, [get_weather, get_population]))
        run.set_output(answer)
    assert answer == rec.FINAL_ANSWER, answer
    recording.write(
        out,
        "openai_v2",
        rec.versions("openai", "opentelemetry-instrumentation-openai-v2", "opentelemetry-sdk"),
    )


if __name__ == "__main__":
    main(sys.argv[1])
