"""An edited call through ``toolspan serve``'s trace API (the ASGI application in this process): every view
route and the trace page's data give the arguments the body received, marked edited, with the model's own,
who decided and when.

The trace is a real run (``tests.support.edited_runs``): the model asked ``transfer(amount=5000)``, the
approver ``alice`` allowed it with ``amount=50``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.bridge_data import validate
from tests.support.edited_runs import (
    CALL_ID,
    EDITED_ARGUMENTS,
    EDITED_BY,
    MODEL_ARGUMENTS,
    decided_at_ns,
    edited_mark,
    edited_run,
)
from toolspan.bridge.model import Span
from toolspan.server import ServerConfig, build_app, open_store


def asgi_get(app: Any, path: str) -> tuple[int, bytes]:
    """One GET through the ASGI application in this process (no server): status and body."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    sent: list[dict[str, Any]] = []
    asked = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if not asked.is_set():
            asked.set()
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()  # the client never leaves: the response ends the exchange
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    (start,) = [m for m in sent if m["type"] == "http.response.start"]
    return start["status"], b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, list[Span]]]:
    spans = edited_run()
    path: Path = tmp_path_factory.mktemp("served") / "store.db"
    store = open_store(str(path))
    try:
        store.ingest(spans)
        app, _ = build_app(ServerConfig(db=store.path, parse_workers=0), store)
        yield app, spans
    finally:
        store.close()


def get_json(app: Any, path: str) -> Any:
    status, body = asgi_get(app, path)
    assert status == 200, body
    return json.loads(body)


def get_lines(app: Any, path: str) -> list[Any]:
    status, body = asgi_get(app, path)
    assert status == 200, body
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def test_events_route_gives_the_received_arguments_marked_edited(served: tuple[Any, list[Span]]) -> None:
    app, spans = served
    trace = spans[0].trace_id
    (act,) = [e for e in get_lines(app, f"/api/traces/{trace}/events") if e["type"] == "act"]
    validate("events", act)
    assert (act["tool_input"], act["edited"]) == (EDITED_ARGUMENTS, edited_mark(spans))


def test_tree_route_gives_the_received_arguments_marked_edited(served: tuple[Any, list[Span]]) -> None:
    app, spans = served
    doc = get_json(app, f"/api/traces/{spans[0].trace_id}/tree")
    validate("tree", doc)
    (node,) = [n for n in doc["execution_tree"]["children"][0]["children"] if n["type"] == "tool"]
    assert (node["input"], node["edited"]) == (EDITED_ARGUMENTS, edited_mark(spans))


def test_ai_sdk_route_ends_the_tool_part_with_the_edit(served: tuple[Any, list[Span]]) -> None:
    app, spans = served
    chunks = get_lines(app, f"/api/traces/{spans[0].trace_id}/ai-sdk")
    inputs = [c for c in chunks if c["type"] == "tool-input-available" and c["toolCallId"] == CALL_ID]
    assert inputs[-1]["input"] == EDITED_ARGUMENTS
    assert inputs[-1]["providerMetadata"] == {"toolspan": {"edited": edited_mark(spans, "modelInput")}}


def test_trace_page_data_gives_the_received_arguments_marked_edited(served: tuple[Any, list[Span]]) -> None:
    app, spans = served
    page = get_json(app, f"/api/traces/{spans[0].trace_id}/page")
    validate("page", page)
    (step,) = [s for s in page["steps"] if s["kind"] == "tool"]
    assert step["input"] == EDITED_ARGUMENTS
    assert step["edited"] == {
        "by": EDITED_BY,
        "t_us": (decided_at_ns(spans) - min(s.start_ns for s in spans)) // 1000,
        "model_input": MODEL_ARGUMENTS,
    }
