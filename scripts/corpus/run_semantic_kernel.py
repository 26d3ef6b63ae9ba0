"""Semantic Kernel's ChatCompletionAgent with a plugin, traced by Semantic Kernel's own telemetry (GenAI
conventions, sensitive content on); its OpenAI connector over a scripted HTTP transport.

Semantic Kernel runs the model's parallel calls and sends a failing function's error back to the model as
the function's result (the run goes on). Message content is written as log records (``logs.*``).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Annotated, Any

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from _chat_http import ScriptedChat

os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS"] = "true"
os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE"] = "true"


def main(out: str) -> None:
    import logging

    recording = rec.Recording()
    from opentelemetry import trace
    from opentelemetry.sdk._logs import LoggingHandler

    trace.set_tracer_provider(recording.tracer_provider)
    # Semantic Kernel writes message content as Python log records (its GenAI events): the OpenTelemetry
    # logging handler on its diagnostics logger turns them into OTLP log records tied to the spans.
    handler = LoggingHandler(logger_provider=recording.with_logs())
    diagnostics = logging.getLogger("semantic_kernel.utils.telemetry.model_diagnostics")
    diagnostics.setLevel(logging.INFO)
    diagnostics.addHandler(handler)

    from openai import AsyncOpenAI
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion
    from semantic_kernel.functions import kernel_function

    class WeatherPlugin:
        @kernel_function(description="Current weather of a city.")
        def get_weather(self, city: Annotated[str, "The city."]) -> dict[str, Any]:
            return rec.get_weather(city)

        @kernel_function(description="Population of a city.")
        def get_population(self, city: Annotated[str, "The city."]) -> int:
            return rec.get_population(city)

    rec.rename_tools({n: f"WeatherPlugin-{n}" for n in ("get_weather", "get_population")})
    chat = ScriptedChat()
    client = AsyncOpenAI(
        api_key="scripted", base_url="http://scripted.invalid/v1", http_client=chat.async_client()
    )
    agent = ChatCompletionAgent(
        service=OpenAIChatCompletion(ai_model_id=rec.MODEL, async_client=client),
        name="weather_agent",
        instructions="Answer with the tools.",
        plugins=[WeatherPlugin()],
    )

    async def run() -> str:
        response = await agent.get_response(messages=rec.USER_REQUEST)
        return str(response.content)

    answer = asyncio.run(run())
    assert answer == rec.FINAL_ANSWER, answer
    recording.write(out, "semantic_kernel", rec.versions("semantic-kernel", "openai", "opentelemetry-sdk"))


if __name__ == "__main__":
    main(sys.argv[1])
