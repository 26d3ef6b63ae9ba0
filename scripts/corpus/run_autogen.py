"""AutoGen AgentChat's AssistantAgent traced by AutoGen's own telemetry (GenAI ``execute_tool`` and
``invoke_agent`` spans, from the global tracer provider) and OpenInference's AgentChat instrumentor; its
OpenAI model client over a scripted HTTP transport.

AutoGen runs the model's parallel calls and sends a failing tool's error back to the model as the tool's
result; with ``reflect_on_tool_use`` the model answers after the tools (the run goes on).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from _chat_http import ScriptedChat


def main(out: str) -> None:
    recording = rec.Recording()
    from opentelemetry import trace

    trace.set_tracer_provider(recording.tracer_provider)
    from openinference.instrumentation.autogen_agentchat import AutogenAgentChatInstrumentor

    AutogenAgentChatInstrumentor().instrument(tracer_provider=recording.tracer_provider)

    from autogen_agentchat.agents import AssistantAgent
    from autogen_core.models import ModelInfo
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    async def get_weather(city: str) -> dict[str, Any]:
        """Current weather of a city."""
        return rec.get_weather(city)

    async def get_population(city: str) -> int:
        """Population of a city."""
        return rec.get_population(city)

    chat = ScriptedChat()
    client = OpenAIChatCompletionClient(
        model=rec.MODEL,
        api_key="scripted",
        base_url="http://scripted.invalid/v1",
        http_client=chat.async_client(),
        model_info=ModelInfo(
            vision=False, function_calling=True, json_output=False, family="unknown", structured_output=False
        ),
    )
    agent = AssistantAgent(
        name="weather_agent",
        model_client=client,
        tools=[get_weather, get_population],
        system_message="Answer with the tools.",
        reflect_on_tool_use=True,
    )

    async def run() -> str:
        result = await agent.run(task=rec.USER_REQUEST)
        return str(result.messages[-1].content)

    answer = asyncio.run(run())
    assert answer == rec.FINAL_ANSWER, answer
    recording.write(
        out,
        "autogen_agentchat",
        rec.versions(
            "autogen-agentchat",
            "autogen-ext",
            "openai",
            "openinference-instrumentation-autogen-agentchat",
            "opentelemetry-sdk",
        ),
    )


if __name__ == "__main__":
    main(sys.argv[1])
