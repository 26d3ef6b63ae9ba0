"""Microsoft Agent Framework's own telemetry (GenAI conventions, sensitive data on): an ``Agent`` over its
OpenAI Chat Completions client, whose OpenAI client answers from a scripted HTTP transport."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec

recording = rec.Recording()
from opentelemetry import trace  # noqa: E402

# The framework's tracer comes from the global provider (as configure_otel_providers would set it).
trace.set_tracer_provider(recording.tracer_provider)

from _chat_http import ScriptedChat  # noqa: E402
from agent_framework import Agent, tool  # noqa: E402
from agent_framework.observability import enable_instrumentation  # noqa: E402
from agent_framework.openai import OpenAIChatCompletionClient  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402


@tool
def get_weather(city: str) -> dict[str, object]:
    """Current weather of a city."""
    return rec.get_weather(city)


@tool
def get_population(city: str) -> int:
    """Population of a city."""
    return rec.get_population(city)


async def run() -> str:
    chat = ScriptedChat()
    client = AsyncOpenAI(
        api_key="scripted", base_url="http://scripted.invalid/v1", http_client=chat.async_client()
    )
    agent = Agent(
        client=OpenAIChatCompletionClient(model=rec.MODEL, async_client=client),
        name="weather_agent",
        instructions="Answer with the tools.",
        tools=[get_weather, get_population],
    )
    result = await agent.run(rec.USER_REQUEST)
    return str(result.text)


def main(out: str) -> None:
    enable_instrumentation(enable_sensitive_data=True)
    answer = asyncio.run(run())
    assert answer == rec.FINAL_ANSWER, answer
    recording.write(
        out,
        "agent_framework",
        rec.versions("agent-framework-core", "agent-framework-openai", "openai", "opentelemetry-sdk"),
    )


if __name__ == "__main__":
    main(sys.argv[1])
