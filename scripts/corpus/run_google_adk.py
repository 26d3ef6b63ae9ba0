"""Google ADK's LlmAgent on its InMemoryRunner, traced by ADK's own telemetry, its model scripted at ADK's
model interface (a ``BaseLlm``): ``run_google_adk.py OUT default|legacy``.

``default``: ADK's current schema (GenAI semantic conventions), message content captured in spans;
``legacy``: ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``, the ``gcp.vertex.agent.*`` attributes of ADK's web UI.
The failing tool's error goes back to the model through ``on_tool_error_callback`` (the run goes on);
``default_raising`` / ``legacy_raising``: either schema without that callback, where the tool's exception
ends the run (ADK's failure path: the failed call's id and result are the placeholder ``<not specified>``).
Usage: ``run_google_adk.py OUT default|legacy|default_raising|legacy_raising``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec


def main(out: str, flavour: str) -> None:
    if flavour.startswith("legacy"):
        os.environ["ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"] = "1"
    else:
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    recording = rec.Recording()
    from opentelemetry import trace

    trace.set_tracer_provider(recording.tracer_provider)

    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    class ScriptedLlm(BaseLlm):
        turn: int = 0

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            turn = min(self.turn, len(rec.USAGE) - 1)
            self.turn += 1
            usage = rec.USAGE[turn]
            if turn == 0:
                parts = [
                    types.Part(
                        function_call=types.FunctionCall(id=c["id"], name=c["name"], args=c["arguments"])
                    )
                    for c in rec.CALLS
                ]
            else:
                parts = [types.Part(text=rec.FINAL_ANSWER)]
            yield LlmResponse(
                content=types.Content(role="model", parts=parts),
                finish_reason=types.FinishReason.STOP,
                model_version=rec.MODEL,
                usage_metadata=types.GenerateContentResponseUsageMetadata(
                    prompt_token_count=usage["input_tokens"],
                    candidates_token_count=usage["output_tokens"],
                    total_token_count=usage["input_tokens"] + usage["output_tokens"],
                ),
            )

    def get_weather(city: str) -> dict[str, Any]:
        """Current weather of a city."""
        return rec.get_weather(city)

    def get_population(city: str) -> int:
        """Population of a city."""
        return rec.get_population(city)

    def tool_error(tool: Any, args: dict[str, Any], tool_context: Any, error: Exception) -> dict[str, Any]:
        return {"error": str(error)}

    agent = LlmAgent(
        name="weather_agent",
        model=ScriptedLlm(model=rec.MODEL),
        instruction="Answer with the tools.",
        tools=[get_weather, get_population],
        on_tool_error_callback=None if flavour.endswith("raising") else tool_error,
    )
    runner = InMemoryRunner(agent=agent, app_name="weather")

    async def run() -> str:
        session = await runner.session_service.create_session(app_name="weather", user_id="user")
        answer = ""
        message = types.Content(role="user", parts=[types.Part(text=rec.USER_REQUEST)])
        async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
            if event.content and event.content.parts and event.content.parts[0].text:
                answer = event.content.parts[0].text
        return answer

    versions = rec.versions("google-adk", "google-genai", "opentelemetry-sdk")
    if flavour.endswith("raising"):
        # No error callback: the tool's exception ends the run (ADK's failure path), after the other calls.
        try:
            asyncio.run(run())
        except ValueError as e:
            recording.write(out, f"google_adk_{flavour}", versions, ended_by=f"{type(e).__name__}: {e}")
            return
        raise AssertionError("the failing tool did not end the run")
    answer = asyncio.run(run())
    assert answer == rec.FINAL_ANSWER, answer
    recording.write(out, f"google_adk_{flavour}", versions)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
