"""pydantic-ai with its own OpenTelemetry instrumentation (GenAI conventions), scripted by FunctionModel."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import RequestUsage


def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = sum(1 for m in messages if isinstance(m, ModelResponse))
    usage = RequestUsage(**rec.USAGE[turn])
    if turn == 0:
        parts = [ToolCallPart(c["name"], c["arguments"], tool_call_id=c["id"]) for c in rec.CALLS]
        return ModelResponse(parts=parts, usage=usage, model_name=rec.MODEL, finish_reason="tool_call")
    return ModelResponse(
        parts=[TextPart(rec.FINAL_ANSWER)], usage=usage, model_name=rec.MODEL, finish_reason="stop"
    )


def main(out: str) -> None:
    recording = rec.Recording()
    agent = Agent(
        FunctionModel(script, model_name=rec.MODEL),
        name="weather_agent",
    )
    Agent.instrument_all(InstrumentationSettings(tracer_provider=recording.tracer_provider))

    @agent.tool_plain
    def get_weather(city: str) -> dict[str, object]:
        """Current weather of a city."""
        return rec.get_weather(city)

    @agent.tool_plain
    def get_population(city: str) -> int:
        """Population of a city."""
        # pydantic-ai ends the run on any other exception; ModelRetry is how a tool fails to the model.
        return rec.get_population(city, ModelRetry)

    result = agent.run_sync(rec.USER_REQUEST)
    assert result.output == rec.FINAL_ANSWER, result.output
    recording.write(out, "pydantic_ai", rec.versions("pydantic-ai-slim", "opentelemetry-sdk"))


if __name__ == "__main__":
    main(sys.argv[1])
