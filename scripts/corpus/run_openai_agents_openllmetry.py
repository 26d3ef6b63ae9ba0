"""OpenAI Agents SDK traced by OpenLLMetry (``opentelemetry-instrumentation-openai-agents``); the model is the
SDK's Chat Completions model over a scripted HTTP transport. OpenLLMetry records a Chat Completions model
call's input messages, not its output: the model's call ids reach the trace only in the next model call's
``gen_ai.input.messages``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from _agents_sdk import run
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor


def main(out: str) -> None:
    recording = rec.Recording()
    OpenAIAgentsInstrumentor().instrument(tracer_provider=recording.tracer_provider)
    answer = asyncio.run(run())
    assert answer == rec.FINAL_ANSWER, answer
    recording.write(
        out,
        "openai_agents_openllmetry",
        rec.versions(
            "openai-agents", "openai", "opentelemetry-instrumentation-openai-agents", "opentelemetry-sdk"
        ),
    )


if __name__ == "__main__":
    main(sys.argv[1])
