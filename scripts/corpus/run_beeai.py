"""BeeAI Framework's RequirementAgent traced by OpenInference (BeeAI instrumentor); its OpenAI chat model
(LiteLLM underneath) against a scripted Chat Completions endpoint served on loopback.

BeeAI's chat models allow one tool call a model turn by default (``allow_parallel_tool_calls=False``): the
script asks for the three calls one a turn, in the same order. The RequirementAgent sends a failing tool's
error back to the model (the run goes on), and ends a run with its own ``final_answer`` tool call: the
script asks for it in the last turn, and it is a tool call that ran like any other (recorded in the ground
truth too).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec
from _chat_http import ScriptedChat

FINAL_CALL = {"id": "call_final_answer", "name": "final_answer", "arguments": {"response": rec.FINAL_ANSWER}}
# One model turn a call: each turn's usage.
TURN_USAGE = [
    {"input_tokens": 120, "output_tokens": 15},
    {"input_tokens": 160, "output_tokens": 15},
    {"input_tokens": 200, "output_tokens": 15},
    {"input_tokens": 260, "output_tokens": 30},
]


class OneCallATurn(ScriptedChat):
    """The script's calls, one a model turn, then the final answer's call."""

    def _answer(self, request: Any, module: Any) -> Any:
        if not request.url.path.endswith("/chat/completions"):
            return module.Response(404, json={"error": {"message": f"not scripted: {request.url.path}"}})
        self.requests.append(json.loads(request.content))
        turn = min(self.turn, len(TURN_USAGE) - 1)
        self.turn += 1
        call = [*rec.CALLS, FINAL_CALL][turn]
        usage = TURN_USAGE[turn]
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
                }
            ],
        }
        body = {
            "id": f"chatcmpl-scripted-{turn}",
            "object": "chat.completion",
            "created": 1_700_000_000 + turn,
            "model": rec.MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {
                "prompt_tokens": usage["input_tokens"],
                "completion_tokens": usage["output_tokens"],
                "total_tokens": usage["input_tokens"] + usage["output_tokens"],
            },
        }
        return module.Response(200, json=body)


def serve(chat: ScriptedChat) -> ThreadingHTTPServer:
    """The script as an HTTP server on loopback (LiteLLM builds its own clients: none can be handed in)."""
    import httpx

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            url = f"http://127.0.0.1{self.path}"
            answer = chat._answer(httpx.Request("POST", url, content=body), httpx)
            content = answer.read()
            self.send_response(answer.status_code)
            self.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(out: str) -> None:
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no download of LiteLLM's price list
    recording = rec.Recording()
    from openinference.instrumentation.beeai import BeeAIInstrumentor

    BeeAIInstrumentor().instrument(tracer_provider=recording.tracer_provider)

    from beeai_framework.adapters.openai import OpenAIChatModel
    from beeai_framework.agents.requirement import RequirementAgent
    from beeai_framework.agents.requirement.utils._tool import FinalAnswerTool
    from beeai_framework.tools import tool

    # The agent's own final_answer tool (built by the agent for each run): its body records what it ran
    # with, as the other tools do.
    run_final_answer = FinalAnswerTool._run

    async def recorded_final_answer(self: Any, input: Any, options: Any, context: Any) -> Any:
        output = await run_final_answer(self, input, options, context)
        rec.record("final_answer", input.model_dump(), output.get_text_content())
        return output

    FinalAnswerTool._run = recorded_final_answer  # type: ignore[method-assign]

    @tool
    def get_weather(city: str) -> dict[str, Any]:
        """Current weather of a city."""
        return rec.get_weather(city)

    @tool
    def get_population(city: str) -> int:
        """Population of a city."""
        return rec.get_population(city)

    chat = OneCallATurn()
    server = serve(chat)
    try:
        model = OpenAIChatModel(
            rec.MODEL,
            api_key="scripted",
            base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
        )
        agent = RequirementAgent(
            llm=model,
            tools=[get_weather, get_population],
            name="weather_agent",
            instructions="Answer with the tools.",
        )

        async def run() -> Any:
            return await agent.run(rec.USER_REQUEST)

        response = asyncio.run(run())
    finally:
        server.shutdown()
    answer = response.last_message.text
    assert answer == rec.FINAL_ANSWER, answer
    rec.CALLS.append(FINAL_CALL)  # so the ground truth knows its id
    rec.USAGE[:] = TURN_USAGE
    recording.write(
        out,
        "beeai_openinference",
        rec.versions(
            "beeai-framework", "litellm", "openinference-instrumentation-beeai", "opentelemetry-sdk"
        ),
    )


if __name__ == "__main__":
    main(sys.argv[1])
