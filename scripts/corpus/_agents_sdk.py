"""The OpenAI Agents SDK's agent of the corpus, shared by the runs that trace it their own way (OpenInference,
MLflow, Logfire): its two tools and one run, the model being the SDK's Chat Completions model over a
scripted HTTP transport."""

from __future__ import annotations

import _record as rec
from _chat_http import ScriptedChat
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
from openai import AsyncOpenAI


@function_tool
def get_weather(city: str) -> dict[str, object]:
    """Current weather of a city."""
    return rec.get_weather(city)


@function_tool
def get_population(city: str) -> int:
    """Population of a city."""
    return rec.get_population(city)


async def run() -> str:
    """One run of the agent on the user's request; its final output."""
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
