"""smolagents' ToolCallingAgent traced by OpenInference; its OpenAI model over a scripted HTTP transport.

smolagents ends a run with its own ``final_answer`` tool call: the script asks for it in the last turn, and
it is a tool call that ran like any other (recorded in the ground truth too).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from _chat_http import ScriptedChat
from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from smolagents import OpenAIServerModel, ToolCallingAgent, tool
from smolagents.default_tools import FinalAnswerTool

FINAL_CALL = {"id": "call_final_answer", "name": "final_answer", "arguments": {"answer": rec.FINAL_ANSWER}}


class RecordedFinalAnswer(FinalAnswerTool):
    def forward(self, answer: Any) -> Any:
        rec.record("final_answer", {"answer": answer}, answer)
        return super().forward(answer)


@tool
def get_weather(city: str) -> dict[str, object]:
    """Current weather of a city.

    Args:
        city: The city.
    """
    return rec.get_weather(city)


@tool
def get_population(city: str) -> int:
    """Population of a city.

    Args:
        city: The city.
    """
    return rec.get_population(city)


def main(out: str) -> None:
    recording = rec.Recording()
    SmolagentsInstrumentor().instrument(tracer_provider=recording.tracer_provider)
    chat = ScriptedChat(final_call=FINAL_CALL)
    model = OpenAIServerModel(
        model_id=rec.MODEL,
        api_base="http://scripted.invalid/v1",
        api_key="scripted",
        client_kwargs={"http_client": chat.client()},
    )
    agent = ToolCallingAgent(
        tools=[get_weather, get_population, RecordedFinalAnswer()],
        model=model,
        name="weather_agent",
        verbosity_level=0,
        max_steps=3,
    )
    answer = agent.run(rec.USER_REQUEST)
    assert answer == rec.FINAL_ANSWER, answer
    rec.CALLS.append(FINAL_CALL)  # so the ground truth knows its id
    recording.write(
        out,
        "smolagents",
        rec.versions("smolagents", "openai", "openinference-instrumentation-smolagents", "opentelemetry-sdk"),
    )


if __name__ == "__main__":
    main(sys.argv[1])
