"""Haystack's Agent traced by Haystack's own tracer with its OpenTelemetry backend (opentelemetry-haystack,
content tracing on); its OpenAIChatGenerator over a scripted HTTP transport.

Haystack runs the model's parallel calls, each in its ``haystack.agent.step.tool`` span, and by default
(``raise_on_tool_invocation_failure=False``) sends a failing tool's error back to the model (the run goes on).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from _chat_http import ScriptedChat

os.environ["HAYSTACK_CONTENT_TRACING_ENABLED"] = "true"
os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"


def main(out: str) -> None:
    recording = rec.Recording()
    from haystack import tracing
    from haystack.components.agents import Agent
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage
    from haystack.tools import Tool
    from haystack.utils import Secret
    from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer

    tracing.enable_tracing(OpenTelemetryTracer(recording.tracer_provider.get_tracer("haystack")))

    def get_weather(city: str) -> dict[str, Any]:
        return rec.get_weather(city)

    def get_population(city: str) -> int:
        return rec.get_population(city)

    params = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tools = [
        Tool(
            name="get_weather",
            description="Current weather of a city.",
            parameters=params,
            function=get_weather,
        ),
        Tool(
            name="get_population",
            description="Population of a city.",
            parameters=params,
            function=get_population,
        ),
    ]
    chat = ScriptedChat()
    generator = OpenAIChatGenerator(
        api_key=Secret.from_token("scripted"),
        model=rec.MODEL,
        api_base_url="http://scripted.invalid/v1",
        http_client_kwargs={"transport": chat.legacy_transport()},
    )
    agent = Agent(
        chat_generator=generator,
        tools=tools,
        system_prompt="Answer with the tools.",
    )
    agent.warm_up()
    result = agent.run(messages=[ChatMessage.from_user(rec.USER_REQUEST)])
    answer = result["messages"][-1].text
    assert answer == rec.FINAL_ANSWER, answer
    recording.write(
        out, "haystack", rec.versions("haystack-ai", "opentelemetry-haystack", "openai", "opentelemetry-sdk")
    )


if __name__ == "__main__":
    main(sys.argv[1])
