"""Langfuse's OpenTelemetry-based Python SDK: its OpenAI integration (``langfuse.openai``) records each model
call as a generation, and a small agent loop of its own marks itself and its tools with ``@observe``
(``as_type="agent"`` / ``"tool"``); the model is the OpenAI client over a scripted HTTP transport. The SDK
sends its spans to a Langfuse host by OTLP: here a receiver on loopback."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import _record as rec

receiver = rec.OtlpReceiver()

from _chat_http import ScriptedChat  # noqa: E402
from langfuse import Langfuse, observe  # noqa: E402
from langfuse.openai import OpenAI  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": doc,
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
    for name, doc in (
        ("get_weather", "Current weather of a city."),
        ("get_population", "Population of a city."),
    )
]


@observe(name="get_weather", as_type="tool")
def get_weather(city: str) -> dict[str, Any]:
    return rec.get_weather(city)


@observe(name="get_population", as_type="tool")
def get_population(city: str) -> int:
    return rec.get_population(city)


FUNCTIONS = {"get_weather": get_weather, "get_population": get_population}


@observe(name="weather_agent", as_type="agent")
def run(client: OpenAI, question: str) -> str:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Answer with the tools."},
        {"role": "user", "content": question},
    ]
    while True:
        reply = client.chat.completions.create(model=rec.MODEL, messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            return str(message.content)
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            try:
                result = json.dumps(FUNCTIONS[call.function.name](**json.loads(call.function.arguments)))
            except ValueError as error:
                result = json.dumps({"error": str(error)})
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def main(out: str) -> None:
    base = receiver.endpoint.rsplit("/v1/traces", 1)[0]
    langfuse = Langfuse(public_key="pk-lf-scripted", secret_key="sk-lf-scripted", host=base)
    chat = ScriptedChat()
    client = OpenAI(api_key="scripted", base_url="http://scripted.invalid/v1", http_client=chat.client())
    answer = run(client, rec.USER_REQUEST)
    assert answer == rec.FINAL_ANSWER, answer
    langfuse.flush()
    request = receiver.request()
    assert request.resource_spans, "Langfuse exported no span"
    rec.write_request(Path(out), request)
    rec.write_truth(Path(out), "langfuse_openai", rec.versions("langfuse", "openai", "opentelemetry-sdk"))


if __name__ == "__main__":
    main(sys.argv[1])
