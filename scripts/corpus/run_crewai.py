"""A CrewAI crew of one agent and one task, traced by OpenInference (its CrewAI and OpenAI instrumentors);
its native OpenAI LLM over a scripted HTTP transport.

CrewAI runs the model's calls of one turn and sends a failing tool's error back to the model as the tool's
result (the run goes on).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from _chat_http import ScriptedChat

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
os.environ["OTEL_SDK_DISABLED"] = "false"


def main(out: str) -> None:
    recording = rec.Recording()
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor

    # CrewAI's instrumentor traces the crew, agents and tools; its model calls go through the OpenAI SDK,
    # traced by OpenInference's OpenAI instrumentor (the pairing OpenInference documents for CrewAI).
    CrewAIInstrumentor().instrument(tracer_provider=recording.tracer_provider)
    OpenAIInstrumentor().instrument(tracer_provider=recording.tracer_provider)

    from crewai import LLM, Agent, Crew, Task
    from crewai.tools import tool

    @tool("get_weather")
    def get_weather(city: str) -> dict[str, Any]:
        """Current weather of a city."""
        return rec.get_weather(city)

    @tool("get_population")
    def get_population(city: str) -> int:
        """Population of a city."""
        return rec.get_population(city)

    chat = ScriptedChat()
    llm = LLM(model=f"openai/{rec.MODEL}", api_key="scripted", base_url="http://scripted.invalid/v1")
    # CrewAI's native OpenAI provider builds its SDK clients from one set of parameters (the sync and the
    # async client alike): give each its own scripted transport.
    from openai import AsyncOpenAI, OpenAI

    base = {"api_key": "scripted", "base_url": "http://scripted.invalid/v1"}
    llm._client = OpenAI(**base, http_client=chat.client())
    llm._async_client = AsyncOpenAI(**base, http_client=chat.async_client())
    agent = Agent(
        role="weather_agent",
        goal="Answer with the tools.",
        backstory="A weather assistant.",
        tools=[get_weather, get_population],
        llm=llm,
        verbose=False,
        max_iter=3,
    )
    task = Task(description=rec.USER_REQUEST, expected_output="The answer.", agent=agent)
    result = Crew(agents=[agent], tasks=[task], verbose=False).kickoff()
    answer = str(result.raw)
    assert answer == rec.FINAL_ANSWER, answer
    recording.write(
        out,
        "crewai_openinference",
        rec.versions(
            "crewai",
            "openai",
            "openinference-instrumentation-crewai",
            "openinference-instrumentation-openai",
            "opentelemetry-sdk",
        ),
    )


if __name__ == "__main__":
    main(sys.argv[1])
