"""A span whose arguments read as a value no JSON can carry, through ``toolspan serve``'s application in this
process (issue 35): LangChain's ``input_str`` written as a Python literal holding a lone surrogate
(``'\\ud800'``) or a hex literal of 20,000 digits (over Python's int-to-text limit). Ingesting it is accepted;
its run's views answer 200 with strict UTF-8 JSON (the literal kept as its text), another run's views answer
as before, and ``/api/stream`` carries both runs' events: one bad span never stops a stream.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolspan import semconv
from toolspan.bridge.views.registry import VIEWS
from toolspan.server import ServerConfig, build_app, open_store

GOOD = "a" * 32
LITERALS = {
    "surrogate": "{'city': '\\ud800'}",
    "hex": "{'n': 0x" + "f" * 20_000 + "}",
    "surrogate key": "{'\\udc00': 1}",
}
BAD = {name: f"{n + 1:032x}" for n, name in enumerate(LITERALS)}
# The views the server serves as JSON (/api/traces/{id}/{view}).
JSON_VIEWS = tuple(name for name, view in VIEWS.items() if view.per_trace and view.media == "json")


def _asgi(
    app: Any,
    method: str,
    path: str,
    body: bytes = b"",
    headers: tuple[tuple[bytes, bytes], ...] = (),
    until: Callable[[bytes], bool] | None = None,
) -> tuple[int, bytes]:
    """One request through the ASGI application in this process: status and body. ``until``: the client
    hangs up once the body so far satisfies it (a stream)."""
    path, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), *headers],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    sent: list[dict[str, Any]] = []

    async def exchange() -> None:
        asked = False
        gone = asyncio.Event()

        async def receive() -> dict[str, Any]:
            nonlocal asked
            if not asked:
                asked = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)
            so_far = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
            if until is not None and until(so_far):
                gone.set()

        # A guard against a hang only (the stream ends when its client hangs up): never a time measured.
        await asyncio.wait_for(app(scope, receive, send), timeout=60)

    asyncio.run(exchange())
    (start,) = [m for m in sent if m["type"] == "http.response.start"]
    return start["status"], b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def _tool_span(trace_id: str, arguments: str) -> dict[str, Any]:
    def text(key: str, value: str) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": value}}

    return {
        "traceId": trace_id,
        "spanId": trace_id[16:],
        "name": "execute_tool get_weather",
        "kind": 1,
        "startTimeUnixNano": "1000000000",
        "endTimeUnixNano": "2000000000",
        "attributes": [
            text(semconv.GEN_AI_OPERATION_NAME, "execute_tool"),
            text(semconv.GEN_AI_TOOL_NAME, "get_weather"),
            text(semconv.GEN_AI_TOOL_CALL_ARGUMENTS, arguments),
        ],
    }


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    path: Path = tmp_path_factory.mktemp("unwritable") / "store.db"
    store = open_store(str(path))
    try:
        served, _ = build_app(ServerConfig(db=store.path, parse_workers=0), store)
        spans = [_tool_span(BAD[name], json.dumps({"input_str": text})) for name, text in LITERALS.items()]
        spans.append(_tool_span(GOOD, json.dumps({"city": "Paris"})))
        for span in spans:  # one request per run, each accepted whole
            doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
            status, reply = _asgi(
                served,
                "POST",
                "/v1/traces",
                json.dumps(doc).encode(),
                ((b"content-type", b"application/json"),),
            )
            assert status == 200, reply
            assert b"rejected" not in reply, reply
        yield served
    finally:
        store.close()


def _json_values(body: bytes) -> list[Any]:
    text = body.decode("utf-8")  # strict UTF-8: a lone surrogate raw in the body fails here
    try:
        return [json.loads(text)]
    except ValueError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("view", JSON_VIEWS)
@pytest.mark.parametrize("literal", list(LITERALS))
def test_a_run_with_an_unwritable_literal_answers_every_view_with_strict_utf8(
    app: Any, view: str, literal: str
) -> None:
    status, body = _asgi(app, "GET", f"/api/traces/{BAD[literal]}/{view}")
    assert status == 200, body[:300]
    assert _json_values(body)
    if view == "events":
        (act,) = [e for e in _json_values(body) if e["type"] == "act"]
        assert act["tool_input"] == LITERALS[literal]  # the literal kept as the text it is


@pytest.mark.parametrize("view", JSON_VIEWS)
def test_another_run_answers_as_before(app: Any, view: str) -> None:
    status, body = _asgi(app, "GET", f"/api/traces/{GOOD}/{view}")
    assert status == 200, body[:300]
    if view == "events":
        (act,) = [e for e in _json_values(body) if e["type"] == "act"]
        assert act["tool_input"] == {"city": "Paris"}


def test_the_all_traces_stream_carries_every_run_past_the_bad_ones(app: Any) -> None:
    def seen(body: bytes) -> set[str]:
        found = set()
        for block in body.split(b"\n\n"):
            for line in block.split(b"\n"):
                if line.startswith(b"data: {"):
                    event = json.loads(line[6:].decode("utf-8"))
                    if event.get("type") == "observe":
                        found.add(event["trace_id"])
        return found

    every = {GOOD, *BAD.values()}
    status, body = _asgi(app, "GET", "/api/stream?from=start", until=lambda so_far: seen(so_far) >= every)
    assert status == 200
    assert seen(body) == every
    body.decode("utf-8")


def test_a_lone_surrogate_in_raw_bytes_is_a_400_naming_it_and_stores_nothing(app: Any) -> None:
    """The bytes ``ED A0 80`` (a surrogate written as UTF-8 would be; ``json.loads`` reads them with
    ``surrogatepass``) in a string of an OTLP/JSON body: refused as its escape is, never a 500."""
    trace = "e" * 32
    span = _tool_span(trace, "city: RAW")
    raw = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    status, reply = _asgi(
        app,
        "POST",
        "/v1/traces",
        raw.replace(b"RAW", b"\xed\xa0\x80"),
        ((b"content-type", b"application/json"),),
    )
    assert status == 400, reply
    assert "lone surrogate \\ud800" in json.loads(reply)["message"]
    assert _asgi(app, "GET", f"/api/traces/{trace}/events")[0] == 404
    assert _asgi(app, "GET", f"/api/traces/{GOOD}/events")[0] == 200
