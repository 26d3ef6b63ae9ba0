"""Every whole number a request of ``toolspan serve`` carries in its query or headers (cursors, bookmarks,
event numbers, limits, times, waits), given what no store holds (2^63 and beyond, twenty nines, a negative
number, an exponent), through the ASGI application in this process: a precise 400 naming the field, or an
answer as for any value it takes; never a 500. Table tests pin the examples found probing it; a property test
covers the class on every route."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server.test_control_hostile import waiting_span
from tests.support.asgi import AsgiAnswer, AsgiClient
from toolspan.bridge.readers import spans_from_document
from toolspan.server import ServerConfig, build_app, open_store

TRACE = "a" * 32
SPAN = "b" * 16
PROBES = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Where each whole number goes: (path with ``{}`` for the value, where it is named, the field named).
NUMBERS = [
    ("/api/control/waiting?after={}-" + TRACE + "-" + SPAN, "query", "after"),
    ("/api/control/waiting?limit={}", "query", "limit"),
    ("/api/traces?from_ms={}", "query", "from_ms"),
    ("/api/traces?to_ms={}", "query", "to_ms"),
    ("/api/traces?limit={}", "query", "limit"),
    ("/api/traces?cursor={}-" + TRACE, "query", "cursor"),
    ("/api/control/decisions/exec_" + SPAN + "?wait={}", "query", "wait"),
    ("/api/control/cancels?execution_id=exec_" + SPAN + "&wait={}", "query", "wait"),
    ("/api/traces/" + TRACE + "/stream?since={}", "query", "since"),
    ("/api/traces/" + TRACE + "/progress/stream?since={}", "query", "since"),
    ("/api/conversations/conv-n/progress/stream?since={}", "query", "since"),
    ("/api/stream?cursor={}-" + TRACE + "-" + SPAN + "-0", "query", "cursor"),
    ("/api/traces/" + TRACE + "/stream?cursor={}-" + TRACE + "-" + SPAN + "-0", "query", "cursor"),
    ("/api/conversations/conv-n/stream?cursor={}-" + TRACE + "-" + SPAN + "-1", "query", "cursor"),
    ("/api/traces/" + TRACE + "/stream", "Last-Event-ID", "Last-Event-ID"),
]
HOSTILE = [
    str(1 << 63),
    str((1 << 63) + 1),
    str(1 << 64),
    "9" * 19,
    "9" * 20,
    "9" * 400,
    "-1",
    "-" + str(1 << 63),
    "+5",
    "1e999",
    "1e18",
    "0x10",
    "\u0661\u0662",  # Arabic-Indic digits: str.isdigit takes them, int() reads them
    "\u00b2",
]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AsgiClient]:
    """The application over a store holding one waiting call of trace ``TRACE`` in conversation ``conv-n``."""
    path: Path = tmp_path_factory.mktemp("numbers") / "store.db"
    store = open_store(str(path))
    try:
        span = waiting_span(TRACE, SPAN)
        span["attributes"].append({"key": "gen_ai.conversation.id", "value": {"stringValue": "conv-n"}})
        doc = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [span]}]}]}
        store.ingest(spans_from_document(doc))
        app, _ = build_app(ServerConfig(db=store.path, parse_workers=0), store)
        with AsgiClient(app) as found:
            yield found
    finally:
        store.close()


def _asked(client: AsgiClient, template: str, where: str, value: str) -> AsgiAnswer:
    if where == "query":
        path = template.replace("{}", urllib.parse.quote(value, safe="-+"), 1)
        return client.request("GET", path, head_only=True)
    return client.request("GET", template, headers={where: value}, head_only=True)


def _names_field_if_refused(answer: AsgiAnswer, field: str) -> bool:
    """Whether a 400 names ``field`` (any other answer: True)."""
    return answer.status != 400 or field in json.loads(answer.body)["error"]


def test_an_inbox_page_after_two_to_the_63_is_a_400_naming_after(client: AsgiClient) -> None:
    """Before, ``after`` past 2^63 reached the store and answered 500."""
    for value in (str(1 << 63), "9" * 19, "9" * 20):
        answer = client.request("GET", f"/api/control/waiting?after={value}-{TRACE}-{SPAN}")
        assert answer.status == 400, (answer.status, answer.body[:300])
        assert answer.json()["error"].startswith("after must be the 'next' of an inbox page"), answer.body
    # The largest time a store holds is a page like any other.
    largest = client.request("GET", f"/api/control/waiting?after={(1 << 63) - 1}-{TRACE}-{SPAN}")
    assert (largest.status, largest.json()["waiting"]) == (200, [])


@pytest.mark.parametrize(("template", "where", "field"), NUMBERS)
@pytest.mark.parametrize("value", HOSTILE)
def test_each_number_past_what_a_store_holds_is_a_400_naming_its_field_or_taken(
    client: AsgiClient, template: str, where: str, field: str, value: str
) -> None:
    answer = _asked(client, template, where, value)
    assert answer.status < 500, (answer.status, answer.body[:300])
    assert _names_field_if_refused(answer, field), answer.body[:300]


@PROBES
@given(
    number=st.sampled_from(NUMBERS),
    value=st.one_of(
        st.integers(min_value=-(1 << 70), max_value=1 << 70).map(str),
        st.integers(min_value=(1 << 63) - 3, max_value=(1 << 63) + 3).map(str),
        st.text(alphabet="0123456789+-.eE", min_size=1, max_size=30),
    ),
)
def test_any_number_anywhere_is_answered_never_a_500(
    client: AsgiClient, number: tuple[str, str, str], value: str
) -> None:
    template, where, field = number
    answer = _asked(client, template, where, value)
    assert answer.status < 500, (answer.status, answer.body[:300])
    assert _names_field_if_refused(answer, field), answer.body[:300]
