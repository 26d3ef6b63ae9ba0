"""The trace list of ``toolspan serve --jaeger URL`` (and ``--tempo URL``), through the application in this
process over a Jaeger stand-in on a loopback port answering with the real Jaeger's recorded answers
(``tests/fixtures/jaeger``): Jaeger's runs listed beside the ones held here, newest first, named as
``toolspan find`` names them and summarised as the same spans held here would be; paged with one cursor;
filtered; and, where the backend cannot list, one line saying why (a 502 when it fails, never a 500).
Against the real Jaeger: ``tests/e2e/test_serve_jaeger.py``."""

from __future__ import annotations

import dataclasses
import json
import socket
import urllib.parse
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import pytest

from tests.support.asgi import AsgiClient
from tests.support.backend import Backend, backend_server, jaeger_search, json_answer
from tests.support.formats import jaeger_recording
from tests.support.paths import TESTS
from toolspan.bridge.model import Span
from toolspan.bridge.readers import read_spans
from toolspan.cli import main
from toolspan.server import ServerConfig, SqliteStore, build_app

JAEGER: Final = TESTS / "fixtures" / "jaeger"
# The real Jaeger's v1 answers, as its search answers them for each service.
PARITY: Final = jaeger_recording("parity", "v1").read_bytes()  # agent-svc, conversation conv-1
CHANGES: Final = jaeger_recording("changes", "v1").read_bytes()  # changes-svc
_GENAI = json.loads((JAEGER / "v1_ui_genai_agent_trace.json").read_bytes())  # 57 spans, 10 services
GENAI: Final = json.dumps({"data": [_GENAI], "total": 0, "limit": 0, "offset": 0, "errors": None}).encode()
ANSWERS: Final = {"agent-svc": PARITY, "changes-svc": CHANGES, "coding-agent": GENAI}

PARITY_ID: Final = "0000000000000000a1b2c3d4e5f60718"  # Jaeger's 64-bit id, padded
CHANGES_ID: Final = "5eb6c1f0a1b2c3d4e5f60718293a4b5c"
GENAI_ID: Final = "4a1b2c3d4e5f60718293a4b5c6d7e8f9"
NEWEST_FIRST: Final = [GENAI_ID, PARITY_ID, CHANGES_ID]
EVER: Final = "?from_ms=0"  # the recorded runs are years old: the list's default is the last hour


class Served:
    """``toolspan serve`` built in process over ``store``, given a backend; ``get`` answers a path."""

    def __init__(self, store: SqliteStore, **backend: str) -> None:
        app, _ = build_app(ServerConfig(db=store.path, parse_workers=0, **backend), store)
        self.client = AsgiClient(app)
        self.client.__enter__()

    def get(self, path: str) -> tuple[int, Any]:
        answer = self.client.request("GET", path)
        return answer.status, answer.json()

    def rows(self, path: str = "/api/traces" + EVER) -> list[dict[str, Any]]:
        status, body = self.get(path)
        assert status == 200, body
        rows: list[dict[str, Any]] = body["traces"]
        return rows

    def close(self) -> None:
        self.client.__exit__(None, None, None)


@pytest.fixture
def jaeger() -> Iterator[Backend]:
    with backend_server() as backend:
        jaeger_search(backend, ANSWERS)
        yield backend


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(str(tmp_path / "serve.db"))
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def served(store: SqliteStore, jaeger: Backend) -> Iterator[Served]:
    server = Served(store, jaeger_url=jaeger.url)
    try:
        yield server
    finally:
        server.close()


def searched(backend: Backend) -> list[dict[str, list[str]]]:
    """The query of each search Jaeger was asked (``/api/traces?...``)."""
    return [
        urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
        for path, _ in backend.asked
        if urllib.parse.urlsplit(path).path == "/api/traces"
    ]


def recorded_spans(answer: bytes) -> list[Span]:
    return read_spans(json.loads(answer))[0]


def test_the_list_holds_jaegers_runs_newest_first_named_as_find_names_them(
    served: Served, jaeger: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = served.rows()
    assert [r["trace_id"] for r in rows] == NEWEST_FIRST
    assert main(["find", "--jaeger", jaeger.url, "--start", "0"]) == 0
    found = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [f["trace_id"] for f in found] == NEWEST_FIRST
    for row, run in zip(rows, found, strict=True):
        assert (row["name"], row["service"]) == (run["name"], run["service"])
        started = datetime.fromisoformat(run["started_at"].replace("Z", "+00:00"))
        assert row["start"] == int(started.timestamp() * 1000)
    assert [r["name"] for r in rows] == ["POST /api/graphql", "invoke_agent planner", "invoke_agent planner"]


def test_each_jaeger_run_is_summarised_as_the_same_spans_held_here_are(
    served: Served, tmp_path: Path
) -> None:
    local = SqliteStore(str(tmp_path / "local.db"))
    for answer in ANSWERS.values():
        local.ingest(recorded_spans(answer))
    here = Served(local)
    try:
        held = {r["trace_id"]: r for r in here.rows()}
    finally:
        here.close()
        local.close()
    from_jaeger = served.rows()
    assert {r["trace_id"] for r in from_jaeger} == set(held)
    for row in from_jaeger:
        same = held[row["trace_id"]]
        assert row["name"] == same["root_name"]  # find's name: the root span's
        assert {k: v for k, v in row.items() if k not in ("name", "service")} == {
            k: v for k, v in same.items() if k not in ("name", "service")
        }
    by_id = {r["trace_id"]: r for r in from_jaeger}
    assert (by_id[GENAI_ID]["spans"], by_id[GENAI_ID]["tool_calls"], by_id[GENAI_ID]["state"]) == (
        57,
        7,
        "FAILED",
    )
    assert (by_id[PARITY_ID]["denied"], by_id[PARITY_ID]["conversation_id"]) == (1, "conv-1")


def test_by_default_the_list_asks_jaeger_for_the_last_hour_of_every_service(
    served: Served, jaeger: Backend
) -> None:
    assert served.rows("/api/traces") == []  # the recorded runs are older than an hour
    assert jaeger.paths()[0] == "/api/services"
    asked = searched(jaeger)
    assert sorted(q["service"][0] for q in asked) == sorted(ANSWERS)
    for query in asked:
        start, end = int(query["start"][0]), int(query["end"][0])  # microseconds
        assert end - start in (3_600_000_000, 3_600_000_001)  # the end rounded up to the microsecond
        assert query["limit"] == ["51"]  # the page's 50, and one to know there are more


def _moved(spans: list[Span], trace_id: str, by_ns: int) -> list[Span]:
    return [
        dataclasses.replace(
            s,
            trace_id=trace_id,
            start_ns=s.start_ns + by_ns,
            end_ns=None if s.end_ns is None else s.end_ns + by_ns,
        )
        for s in spans
    ]


def test_pages_go_through_the_runs_held_here_and_jaegers_newest_first_each_once(
    served: Served, store: SqliteStore
) -> None:
    # Held here: a run between Jaeger's (the changes trace, moved), and Jaeger's parity run itself.
    between = "ab" * 16
    store.ingest(_moved(recorded_spans(CHANGES), between, 35_000_000 * 1_000_000_000))
    store.ingest(recorded_spans(PARITY))
    whole = served.rows()
    assert [r["trace_id"] for r in whole] == [GENAI_ID, between, PARITY_ID, CHANGES_ID]
    parity = whole[2]
    assert parity["name"] == "Find the release notes"  # held here: named as the list names what it holds
    seen: list[str] = []
    cursor = ""
    for _ in range(10):
        status, page = served.get("/api/traces" + EVER + "&limit=1" + cursor)
        assert status == 200, page
        assert len(page["traces"]) <= 1
        seen += [r["trace_id"] for r in page["traces"]]
        if page["next_cursor"] is None:
            break
        cursor = "&cursor=" + page["next_cursor"]
    assert seen == [r["trace_id"] for r in whole]


@pytest.mark.parametrize(
    ("query", "listed"),
    [
        ("&state=failed", NEWEST_FIRST),
        ("&state=COMPLETED", []),
        ("&q=RELEASE", [PARITY_ID]),  # what was asked: "Find the release notes"
        ("&q=graphql", [GENAI_ID]),
        ("&q=5eb6c1", [CHANGES_ID]),
        ("&conversation_id=conv-1", [PARITY_ID]),
        ("&to_ms=1700000000001", [PARITY_ID, CHANGES_ID]),
        ("&from_ms=1700000000001", [GENAI_ID]),
    ],
)
def test_the_lists_filters_apply_to_jaegers_runs(served: Served, query: str, listed: list[str]) -> None:
    assert [r["trace_id"] for r in served.rows("/api/traces" + EVER + query)] == listed


def test_a_service_or_tool_asked_for_is_asked_of_jaeger(served: Served, jaeger: Backend) -> None:
    rows = served.rows("/api/traces" + EVER + "&service=coding-agent&tool=search_traces")
    ((query,),) = [searched(jaeger)]
    assert "/api/services" not in jaeger.paths()
    assert query["service"] == ["coding-agent"]
    assert json.loads(query["tags"][0]) == {"gen_ai.tool.name": "search_traces"}
    assert [r["trace_id"] for r in rows] == [GENAI_ID]
    assert served.rows("/api/traces" + EVER + "&service=coding-agent&tool=no_such_tool") == []


def test_a_bad_parameter_is_a_400_and_jaeger_is_not_asked(served: Served, jaeger: Backend) -> None:
    status, body = served.get("/api/traces?cursor=nope")
    assert (status, body["error"]) == (400, "cursor: not a cursor of this listing: 'nope'")
    assert jaeger.asked == []


def test_a_jaeger_that_knows_no_service_is_one_line_saying_so(served: Served, jaeger: Backend) -> None:
    jaeger_search(jaeger, {})
    status, body = served.get("/api/traces" + EVER)
    assert status == 200
    assert body["traces"] == []
    assert (
        body["note"] == f"Jaeger at {jaeger.url} knows no service yet: the runs it receives are listed here"
    )


@pytest.mark.parametrize(
    ("path", "answer", "says"),
    [
        ("/api/services", json_answer(b"forbidden", 403), "/api/services: HTTP 403"),
        ("/api/traces", json_answer(b"<html>login</html>"), "/api/traces: not JSON: '<html>login</html>'"),
        ("/api/traces", json_answer(b'{"data": [{"traceID": 7}]}'), "/api/traces: "),
    ],
)
def test_a_jaeger_that_fails_is_a_502_in_one_line(
    served: Served, jaeger: Backend, path: str, answer: Any, says: str
) -> None:
    jaeger.answers[path] = answer
    status, body = served.get("/api/traces" + EVER)
    assert (status, body["status"]) == (502, 502)
    assert body["error"].startswith(f"the runs of the trace backend: Jaeger: {jaeger.url}")
    assert says in body["error"]
    assert "\n" not in body["error"]


def test_an_unreachable_jaeger_is_a_502_in_one_line(store: SqliteStore) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        server = Served(store, jaeger_url=url)
        try:
            status, body = server.get("/api/traces")
        finally:
            server.close()
    assert status == 502
    assert body["error"].startswith(f"the runs of the trace backend: Jaeger: {url}/api/services: ")
    assert "\n" not in body["error"]


def test_with_tempo_only_the_list_holds_the_runs_held_here_and_says_why_in_one_line(
    store: SqliteStore, jaeger: Backend
) -> None:
    store.ingest(recorded_spans(CHANGES))
    server = Served(store, tempo_url=jaeger.url)
    try:
        status, body = server.get("/api/traces" + EVER)
    finally:
        server.close()
    assert status == 200
    assert [r["trace_id"] for r in body["traces"]] == [CHANGES_ID]
    assert body["note"] == (
        "the runs in Tempo are not listed here (its search gives no run's spans: no state, no tool calls);"
        f" open one at /traces/TRACE_ID, or list them with toolspan find --tempo {jaeger.url}"
    )
    assert jaeger.asked == []


def test_without_a_backend_the_list_has_no_note(store: SqliteStore) -> None:
    server = Served(store)
    try:
        status, body = server.get("/api/traces")
    finally:
        server.close()
    assert (status, body) == (200, {"traces": [], "next_cursor": None})
