"""A local fake model API for the real-SDK tests: the real ``openai``, ``anthropic`` and ``google-genai``
clients talk to it through their supported ``httpx`` injection point (an ``httpx2`` client on a
``MockTransport``), so all of their own request building and response parsing runs; it serves the
recorded-shape responses of ``tests/data/sdk/`` in order and records every request body."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx2

from tests.support.paths import TESTS

DATA = TESTS / "data" / "sdk"


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: Any


class FakeModelAPI:
    """Answers each request with the next file of ``responses`` (``.sse`` files as an event stream)."""

    def __init__(self, *responses: str) -> None:
        self._responses = list(responses)
        self.requests: list[Request] = []

    def _handle(self, request: httpx2.Request) -> httpx2.Response:
        raw = request.read()
        self.requests.append(Request(request.method, request.url.path, json.loads(raw) if raw else None))
        assert self._responses, f"unexpected request {request.method} {request.url}"
        name = self._responses.pop(0)
        kind = "text/event-stream" if name.endswith(".sse") else "application/json"
        return httpx2.Response(200, content=(DATA / name).read_bytes(), headers={"content-type": kind})

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self._handle))

    def async_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self._handle))

    def body(self, index: int = -1) -> Any:
        return self.requests[index].body

    def done(self) -> bool:
        return not self._responses


# --- the tools the recorded responses call, and what their spans must hold ------------------------


def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city."""
    return {"city": city, "temp_c": 22}


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def broken_weather(city: str) -> dict[str, Any]:
    """Current weather of a city."""
    raise ConnectionError(f"weather service down for {city}")


TOOLS = [get_weather, add]
WEATHER = {"city": "Paris", "temp_c": 22}
WEATHER_TEXT = json.dumps(WEATHER)


def expected_attrs(span: Any, name: str, model_call_id: str | None, **kwargs: Any) -> dict[str, Any]:
    """The whole attribute dict of a tool span of ``get_weather(city="Paris")`` or ``add(25, 30)``."""
    from tests.support.instrumentation import tool_attrs

    if name == "get_weather":
        arguments, result = {"city": "Paris"}, WEATHER
    else:
        arguments, result = {"a": 25, "b": 30}, 55
    fields: dict[str, Any] = {
        "arguments": json.dumps(arguments),
        "result": json.dumps(result),
        "description": "Current weather of a city." if name == "get_weather" else "Add two numbers.",
        "model_call_id": model_call_id,
    }
    fields.update(kwargs)
    return tool_attrs(span, name, **fields)


def tool_spans(spans: Any) -> dict[str, Any]:
    """Tool spans by their ``toolspan.tool_call_id``, one span per id."""
    found: dict[str, Any] = {}
    for span in spans:
        attrs = span.attributes or {}
        if attrs.get("gen_ai.operation.name") == "execute_tool":
            call_id = str(attrs["toolspan.tool_call_id"])
            assert call_id not in found, f"two spans with call id {call_id}"
            found[call_id] = span
    return found
