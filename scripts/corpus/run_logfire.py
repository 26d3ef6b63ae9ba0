"""Logfire's OpenAI Agents integration (``logfire.instrument_openai_agents()``): its message-template spans of
the agent, its tools and its model calls; the model is the SDK's Chat Completions model over a scripted HTTP
transport. Logfire sends to an OpenTelemetry backend of one's own (``send_to_logfire=False`` and
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``): a receiver on loopback."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec

receiver = rec.OtlpReceiver()
os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = receiver.endpoint

import logfire  # noqa: E402
from _chat_http import ScriptedChat  # noqa: E402
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402


@function_tool
def get_weather(city: str) -> dict[str, object]:
    """Current weather of a city."""
    return rec.get_weather(city)


@function_tool
def get_population(city: str) -> int:
    """Population of a city."""
    return rec.get_population(city)


async def run() -> str:
    chat = ScriptedChat()
    client = AsyncOpenAI(
        api_key="scripted", base_url="http://scripted.invalid/v1", http_client=chat.async_client()
    )
    agent = Agent(
        name="weather_agent",
        instructions="Answer with the tools.",
        model=OpenAIChatCompletionsModel(model=rec.MODEL, openai_client=client),
        tools=[get_weather, get_population],
    )
    result = await Runner.run(agent, rec.USER_REQUEST)
    return str(result.final_output)


def main(out: str) -> None:
    logfire.configure(send_to_logfire=False, service_name="weather-agent", console=False)
    logfire.instrument_openai_agents()
    answer = asyncio.run(run())
    assert answer == rec.FINAL_ANSWER, answer
    logfire.force_flush()
    request = receiver.request()
    assert request.resource_spans, "Logfire exported no span"
    rec.write_request(Path(out), request)
    rec.write_truth(
        Path(out),
        "logfire_openai_agents",
        rec.versions("logfire", "openai-agents", "openai", "opentelemetry-sdk"),
    )


if __name__ == "__main__":
    main(sys.argv[1])
