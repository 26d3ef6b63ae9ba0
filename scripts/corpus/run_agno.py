"""An Agno Agent traced by OpenInference (Agno instrumentor); its OpenAIChat model over a scripted HTTP
transport.

Agno runs the model's parallel calls and sends a failing tool's error back to the model as the tool's
result (the run goes on).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from _chat_http import ScriptedChat


def main(out: str) -> None:
    recording = rec.Recording()
    from openinference.instrumentation.agno import AgnoInstrumentor

    AgnoInstrumentor().instrument(tracer_provider=recording.tracer_provider)

    from agno.agent import Agent
    from agno.models.openai import OpenAIChat

    def get_weather(city: str) -> dict[str, Any]:
        """Current weather of a city.

        Args:
            city: The city.
        """
        return rec.get_weather(city)

    def get_population(city: str) -> int:
        """Population of a city.

        Args:
            city: The city.
        """
        return rec.get_population(city)

    chat = ScriptedChat()
    model = OpenAIChat(
        id=rec.MODEL,
        api_key="scripted",
        base_url="http://scripted.invalid/v1",
        http_client=chat.legacy_client(),
    )
    agent = Agent(
        name="weather_agent",
        model=model,
        tools=[get_weather, get_population],
        instructions="Answer with the tools.",
        telemetry=False,
    )
    response = agent.run(rec.USER_REQUEST)
    answer = str(response.content)
    assert answer == rec.FINAL_ANSWER, answer
    recording.write(
        out,
        "agno_openinference",
        rec.versions("agno", "openai", "openinference-instrumentation-agno", "opentelemetry-sdk"),
    )


if __name__ == "__main__":
    main(sys.argv[1])
