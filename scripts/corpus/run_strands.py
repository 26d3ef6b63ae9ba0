"""Strands Agents with its built-in OpenTelemetry tracing and a scripted model (a ``strands.models.Model``
that streams the script). ``run_strands.py OUT default|latest``: ``latest`` opts into the newest GenAI
conventions (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec


def main(out: str, flavour: str) -> None:
    if flavour == "latest":
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    from opentelemetry import trace

    recording = rec.Recording()
    trace.set_tracer_provider(recording.tracer_provider)

    from strands import Agent, tool
    from strands.models.model import Model

    class ScriptedModel(Model):
        def __init__(self) -> None:
            self.turn = 0
            self.config: dict[str, Any] = {"model_id": rec.MODEL}

        def update_config(self, **config: Any) -> None:
            self.config.update(config)

        def get_config(self) -> Any:
            return self.config

        def structured_output(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            turn = self.turn
            self.turn += 1
            yield {"messageStart": {"role": "assistant"}}
            if turn == 0:
                for call in rec.CALLS:
                    start = {"toolUse": {"toolUseId": call["id"], "name": call["name"]}}
                    yield {"contentBlockStart": {"start": start}}
                    delta = {"toolUse": {"input": json.dumps(call["arguments"])}}
                    yield {"contentBlockDelta": {"delta": delta}}
                    yield {"contentBlockStop": {}}
                stop = "tool_use"
            else:
                yield {"contentBlockDelta": {"delta": {"text": rec.FINAL_ANSWER}}}
                yield {"contentBlockStop": {}}
                stop = "end_turn"
            yield {"messageStop": {"stopReason": stop}}
            usage = rec.USAGE[turn]
            yield {
                "metadata": {
                    "usage": {
                        "inputTokens": usage["input_tokens"],
                        "outputTokens": usage["output_tokens"],
                        "totalTokens": usage["input_tokens"] + usage["output_tokens"],
                    },
                    "metrics": {"latencyMs": 1},
                }
            }

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

    agent = Agent(
        model=ScriptedModel(),
        name="weather_agent",
        tools=[get_weather, get_population],
        callback_handler=None,
    )
    result = agent(rec.USER_REQUEST)
    answer = str(result).strip()
    assert answer == rec.FINAL_ANSWER, answer
    recording.write(out, f"strands_{flavour}", rec.versions("strands-agents", "opentelemetry-sdk"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
