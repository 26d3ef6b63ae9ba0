"""OpenAI Agents SDK traced by OpenInference; the model is the SDK's Chat Completions model over a scripted
HTTP transport."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from _chat_http import ScriptedChat
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
from openai import AsyncOpenAI
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor


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
    recording = rec.Recording()
    OpenAIAgentsInstrumentor().instrument(tracer_provider=recording.tracer_provider)
    answer = asyncio.run(run())
    assert answer == rec.FINAL_ANSWER, answer
    recording.write(
        out,
        "openai_agents",
        rec.versions(
            "openai-agents", "openai", "openinference-instrumentation-openai-agents", "opentelemetry-sdk"
        ),
    )


if __name__ == "__main__":
    main(sys.argv[1])
