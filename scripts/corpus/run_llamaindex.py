"""LlamaIndex's FunctionAgent (agent workflow) traced by OpenInference; its OpenAI LLM over a scripted HTTP
transport.

LlamaIndex runs the model's parallel calls and returns a failing tool's error to the model as the tool's
output (the run goes on). Usage: ``run_llamaindex.py OUT [chat|streaming]``: ``chat`` (the default) asks the
model with ``achat``; ``streaming`` is the agent's own default, ``astream_chat``, the model's usage asked for
(``stream_options.include_usage``).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from _chat_http import ScriptedChat


def main(out: str, mode: str = "chat") -> None:
    streaming = {"chat": False, "streaming": True}[mode]
    recording = rec.Recording()
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    LlamaIndexInstrumentor().instrument(tracer_provider=recording.tracer_provider)

    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import LLMMetadata
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai import OpenAI

    class ScriptedOpenAI(OpenAI):
        """LlamaIndex's OpenAI LLM; its model's metadata given, as for any model it does not list."""

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(
                context_window=128_000,
                num_output=1024,
                is_chat_model=True,
                is_function_calling_model=True,
                model_name=self.model,
            )

    def get_weather(city: str) -> dict[str, Any]:
        """Current weather of a city."""
        return rec.get_weather(city)

    def get_population(city: str) -> int:
        """Population of a city."""
        return rec.get_population(city)

    chat = ScriptedChat()
    llm = ScriptedOpenAI(
        model=rec.MODEL,
        api_key="scripted",
        api_base="http://scripted.invalid/v1",
        http_client=chat.client(),
        async_http_client=chat.async_client(),
        additional_kwargs={"stream_options": {"include_usage": True}} if streaming else {},
    )
    agent = FunctionAgent(
        name="weather_agent",
        tools=[FunctionTool.from_defaults(get_weather), FunctionTool.from_defaults(get_population)],
        llm=llm,
        system_prompt="Answer with the tools.",
        streaming=streaming,
    )

    async def run() -> str:
        response = await agent.run(user_msg=rec.USER_REQUEST)
        return str(response)

    answer = asyncio.run(run())
    assert answer == rec.FINAL_ANSWER, answer
    recording.write(
        out,
        "llamaindex_openinference_streaming" if streaming else "llamaindex_openinference",
        rec.versions(
            "llama-index-core",
            "llama-index-llms-openai",
            "openinference-instrumentation-llama-index",
            "opentelemetry-sdk",
        ),
    )


if __name__ == "__main__":
    main(*sys.argv[1:3])
