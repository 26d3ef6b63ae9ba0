"""A tiny scripted model behind each SDK's own HTTP client, so the loop examples run with no network
and no key: ``httpx.Client(transport=httpx.MockTransport(handler))`` (``httpx2`` for the SDK releases
built on it) is the injection point the ``openai``, ``anthropic`` and ``google-genai`` clients
support, so all of their own code still runs.

The "model" asks for ``get_weather(city="Paris")`` and ``add(a=25, b=30)`` on the first request, and on
the request that carries their results answers with text quoting those results, in each API's wire
shape. Not part of toolspan: delete it and pass a real key to run the examples for real.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

try:  # the HTTP library the installed SDKs are built on
    import httpx2 as httpx
except ImportError:  # older SDK releases
    import httpx  # type: ignore[no-redef]

QUESTION = "What's the weather in Paris, and what is 25 + 30?"
CALLS = [("get_weather", {"city": "Paris"}), ("add", {"a": 25, "b": 30})]
USAGE = {"prompt_tokens": 80, "completion_tokens": 20, "total_tokens": 100}


def _client(answer: Callable[[dict[str, Any]], dict[str, Any]]) -> httpx.Client:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=answer(json.loads(request.read())))

    return httpx.Client(transport=httpx.MockTransport(handle))


def _answer(results: list[str]) -> str:
    return "Here is what the tools said: " + "; ".join(results)


def openai_chat() -> httpx.Client:
    """Chat Completions: ``tool_calls`` first, then text once the ``tool`` messages come back."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        results = [m["content"] for m in body["messages"] if m.get("role") == "tool"]
        message: dict[str, Any] = {"role": "assistant", "content": _answer(results) if results else None}
        if not results:
            message["tool_calls"] = [
                {
                    "id": f"call_offline_{i}",
                    "type": "function",
                    "function": {"name": n, "arguments": json.dumps(a)},
                }
                for i, (n, a) in enumerate(CALLS, 1)
            ]
        finish = "stop" if results else "tool_calls"
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        return {
            "id": "chatcmpl-offline",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [choice],
            "usage": USAGE,
        }

    return _client(answer)


def openai_responses() -> httpx.Client:
    """Responses: ``function_call`` items first, then a message once ``function_call_output`` items come."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        items = body["input"] if isinstance(body["input"], list) else []
        results = [i["output"] for i in items if i.get("type") == "function_call_output"]
        if results:
            text = {"type": "output_text", "text": _answer(results), "annotations": []}
            output: list[dict[str, Any]] = [
                {
                    "id": "msg_offline",
                    "type": "message",
                    "status": "completed",
                    "role": "assistant",
                    "content": [text],
                }
            ]
        else:
            output = [
                {
                    "id": f"fc_offline_{i}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": f"call_offline_{i}",
                    "name": n,
                    "arguments": json.dumps(a),
                }
                for i, (n, a) in enumerate(CALLS, 1)
            ]
        return {
            "id": "resp_offline",
            "object": "response",
            "created_at": 0,
            "status": "completed",
            "model": body["model"],
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }

    return _client(answer)


def anthropic_messages() -> httpx.Client:
    """Messages: ``tool_use`` blocks first, then text once the ``tool_result`` blocks come back."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        last = body["messages"][-1]["content"]
        results = (
            [b["content"] for b in last if b.get("type") == "tool_result"] if isinstance(last, list) else []
        )
        if results:
            content: list[dict[str, Any]] = [{"type": "text", "text": _answer(results)}]
        else:
            content = [{"type": "text", "text": "Let me look that up."}]
            content += [
                {"type": "tool_use", "id": f"toolu_offline_{i}", "name": n, "input": a}
                for i, (n, a) in enumerate(CALLS, 1)
            ]
        return {
            "id": "msg_offline",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "end_turn" if results else "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 80, "output_tokens": 20},
        }

    return _client(answer)


def gemini() -> httpx.Client:
    """generateContent: ``functionCall`` parts first, then text once ``functionResponse`` parts come."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        parts = body["contents"][-1]["parts"]
        results = [json.dumps(p["functionResponse"]["response"]) for p in parts if "functionResponse" in p]
        if results:
            out: list[dict[str, Any]] = [{"text": _answer(results)}]
        else:
            out = [
                {"functionCall": {"id": f"fc_offline_{i}", "name": n, "args": a}}
                for i, (n, a) in enumerate(CALLS, 1)
            ]
        candidate = {"content": {"role": "model", "parts": out}, "finishReason": "STOP", "index": 0}
        return {"candidates": [candidate], "modelVersion": "offline", "responseId": "offline"}

    return _client(answer)
