"""The words ``toolspan serve`` takes and gives, through the ASGI application in this process: a decision
word it does not know is a 400 naming the field (never read as a denial, nothing stored), and every page it
serves carries the states and decision words in its config, from their one home."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.server.test_control_hostile import waiting_span
from tests.support.asgi import AsgiAnswer, AsgiClient
from toolspan import semconv
from toolspan._util.ids import arguments_sha256
from toolspan._util.words import DECISIONS, choices
from toolspan.bridge.readers import spans_from_document
from toolspan.server import ServerConfig, build_app, open_store

DECIDER = "decider-token-w"
TRACE = "c" * 32
SPAN = "d" * 16
ARGUMENTS = '{"amount": 1}'
AUTH = {"Authorization": f"Bearer {DECIDER}", "Content-Type": "application/json"}
WITHIN_S = 60.0


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AsgiClient]:
    """The application over a store holding one call of trace ``TRACE`` waiting for its decision."""
    store = open_store(str(tmp_path_factory.mktemp("words") / "store.db"))
    try:
        span = waiting_span(TRACE, SPAN, call_id="toolu_w", arguments=ARGUMENTS)
        store.ingest(
            spans_from_document(
                {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [span]}]}]}
            )
        )
        config = ServerConfig(db=store.path, parse_workers=0, deciders=(("alice", DECIDER),))
        app, _ = build_app(config, store)
        with AsgiClient(app) as found:
            yield found
    finally:
        store.close()


def _decide(client: AsgiClient, decision: Any) -> AsgiAnswer:
    body = {
        "execution_id": f"exec_{SPAN}",
        "trace_id": TRACE,
        "decision": decision,
        "shown": arguments_sha256(ARGUMENTS),
    }
    return client.request("POST", "/api/control/decisions", json.dumps(body).encode(), AUTH, within=WITHIN_S)


def _waiting(client: AsgiClient) -> dict[str, Any]:
    answer = client.request("GET", "/api/control/waiting", headers=AUTH, within=WITHIN_S)
    assert answer.status == 200, answer.body[:300]
    (entry,) = answer.json()["waiting"]
    return dict(entry)


@pytest.mark.parametrize("word", ["maybe", "Deny", "ALLOW", "denied", "", True, None, 0])
def test_a_decision_word_the_server_does_not_know_is_a_400_naming_the_field(
    client: AsgiClient, word: Any
) -> None:
    answer = _decide(client, word)
    assert answer.status == 400, answer.body[:300]
    assert answer.json()["error"] == f"field 'decision' must be {choices()}, got {str(word)[:40]!r}"
    # Not read as a denial: nothing is stored, the call still waits for its decision.
    assert _waiting(client)["decision"] is None


def test_the_decision_words_the_openapi_document_states_are_the_ones_taken(client: AsgiClient) -> None:
    answer = client.request("GET", "/openapi.json", within=WITHIN_S)
    assert answer.status == 200, answer.body[:300]
    found = [
        node["enum"]
        for node in _nodes(answer.json())
        if isinstance(node, dict) and "enum" in node and set(node["enum"]) & {"allow", "deny"}
    ]
    assert found, "the OpenAPI document states no decision words"
    assert all(enum == list(DECISIONS) for enum in found), found


@pytest.mark.parametrize("path", ["/traces", "/inbox", f"/traces/{TRACE}"])
def test_every_page_gets_the_states_and_decision_words_in_its_config(client: AsgiClient, path: str) -> None:
    answer = client.request("GET", path, within=WITHIN_S)
    assert answer.status == 200, answer.body[:300]
    match = re.search(r'<script id="ts-config" type="application/json">(.*?)</script>', answer.body.decode())
    assert match is not None
    assert json.loads(match.group(1))["words"] == {
        "tool_states": list(semconv.TOOL_STATES),
        "trace_states": list(semconv.TRACE_STATES),
        "live_states": list(semconv.LIVE_TRACE_STATES),
        "decisions": list(DECISIONS),
    }


def _nodes(value: Any) -> Iterator[Any]:
    yield value
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        yield from _nodes(child)
