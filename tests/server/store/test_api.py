"""The server's store in-process, on SQLite and on a real PostgreSQL: merging records of one span, the event
log and its cursors, retention and its horizon, the stored form round trip."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.bridge_data import scenario
from toolspan import semconv as sc
from toolspan.bridge.model import Span, SpanEvent
from toolspan.server._rows.codec import decode, encode
from toolspan.server._rows.cursor import ACT, BOTH, OBSERVE, Cursor
from toolspan.server._store.api import StoreApi, is_postgres_url
from toolspan.server._store.engines import open_store

TRACE = "0" * 31 + "a"
TOOL_ATTRS = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}


def _tool(span_id: str, end: int | None, trace: str = TRACE, **attrs: object) -> Span:
    return Span(trace, span_id, None, "execute_tool lookup", 1_000, end, attributes={**TOOL_ATTRS, **attrs})


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.processes)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "t.db")
    return str(request.getfixturevalue("postgres").fresh_url())


@pytest.fixture
def store(store_url: str) -> Iterator[StoreApi]:
    if is_postgres_url(store_url):
        from toolspan.server._store.postgres import PostgresStore

        # Its replicas sweep at most once a second for the cluster: here every sweep asked for runs.
        db: StoreApi = PostgresStore(store_url, prune_every_s=0)
    else:
        db = open_store(store_url)
    yield db
    db.close()


def _log(store: StoreApi) -> list[tuple[str, int, int | None]]:
    return [
        (c.span_id, phase, span.end_ns)
        for c, phase, span in store.events_after(Cursor(0), trace_id=None, conversation_id=None, limit=100)
    ]


def test_the_stored_form_decodes_to_an_equal_span() -> None:
    spans = scenario()
    assert [decode(encode(s)) for s in spans] == [replace(s, origin="") for s in spans]


def test_a_pending_record_then_its_ended_span_give_one_act_then_one_observe(store: StoreApi) -> None:
    first = store.ingest([_tool("1" * 16, None, **{"gen_ai.tool.call.arguments": '{"q": 1}'})])
    second = store.ingest([_tool("1" * 16, 5_000)])
    again = store.ingest([_tool("1" * 16, 5_000), _tool("1" * 16, None)])
    assert [(r.accepted, r.duplicates) for r in (first, second, again)] == [(1, 0), (1, 0), (2, 2)]
    assert _log(store) == [("1" * 16, ACT, 5_000), ("1" * 16, OBSERVE, 5_000)]
    assert _phases(store) == [ACT, OBSERVE]  # a row each: the act was stored before the call ended
    [span] = store.trace_spans(TRACE)
    # The ended record keeps what only the pending record had (merged as the bridge merges files).
    assert dict(span.attributes) == {**TOOL_ATTRS, "gen_ai.tool.call.arguments": '{"q": 1}'}
    assert store.counts() == {"spans": 1, "traces": 1}


def _phases(store: StoreApi) -> list[int]:
    """The phases of the event log's rows, in cursor order."""
    return [int(r[0]) for r in store._rows("SELECT phase FROM events ORDER BY ns, trace_id, span_id, phase")]  # type: ignore[attr-defined]


def test_a_call_stored_ended_is_one_row_read_as_its_act_then_its_observe(store: StoreApi) -> None:
    sid = "9" * 16
    store.ingest([_tool(sid, 5_000)])
    assert _phases(store) == [BOTH]
    log = store.events_after(Cursor(0), trace_id=None, conversation_id=None, limit=10)
    [(act, act_phase, _), (observe, observe_phase, span)] = log
    assert (act_phase, observe_phase, span.end_ns) == (ACT, OBSERVE, 5_000)
    assert (act.ns, act.span_id, act.phase) == (observe.ns, sid, ACT)
    assert (observe.phase, observe.event) == (BOTH, OBSERVE)
    assert Cursor.parse(str(observe)) == observe
    # A page of one event ends at the act; the next page is the observe alone; then nothing.
    assert [c for c, _, _ in store.events_after(Cursor(0), trace_id=None, conversation_id=None, limit=1)] == [
        act
    ]
    assert store.events_after(act, trace_id=None, conversation_id=None, limit=1) == log[1:]
    assert store.events_after(observe, trace_id=None, conversation_id=None, limit=10) == []
    # The same from a trace's log, and the horizon moves past both once the trace is dropped.
    assert store.events_after(Cursor(0), trace_id=TRACE, conversation_id=None, limit=10) == log
    assert store.prune(max_age_ns=0, max_spans=None) == 1
    assert store.horizon() == observe


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_pages_of_rows_holding_both_events_end_where_the_next_begins(store: StoreApi, limit: int) -> None:
    store.ingest([_tool(f"{n:016x}", 5_000) for n in range(1, 5)])  # four calls, ended: one row each
    store.ingest([_tool("f" * 16, None)])  # a running call: its act alone
    whole = store.events_after(Cursor(0), trace_id=None, conversation_id=None, limit=100)
    assert [phase for _, phase, _ in whole] == [ACT, OBSERVE] * 4 + [ACT]
    pages, position = [], Cursor(0)
    while page := store.events_after(position, trace_id=None, conversation_id=None, limit=limit):
        assert len(page) <= limit
        pages += page
        position = page[-1][0]
    assert pages == whole


def test_a_running_call_whose_approval_state_changes_gets_its_act_again(store: StoreApi) -> None:
    sid = "3" * 16
    required = SpanEvent(sc.PERMISSION_REQUIRED_EVENT, 2_000, {})
    allowed = SpanEvent(sc.PERMISSION_DECIDED_EVENT, 3_000, {sc.PERMISSION_DECISION: "allow"})
    start = _tool(sid, None)
    store.ingest([start])
    store.ingest([replace(start, events=(required,))])  # now waiting: act again
    store.ingest([replace(start, events=(required,))])  # the same again: nothing
    store.ingest([replace(start, events=(required, allowed))])  # allowed: act again
    store.ingest([replace(start, end_ns=5_000, events=(required, allowed))])
    assert _log(store) == [(sid, ACT, 5_000), (sid, ACT, 5_000), (sid, ACT, 5_000), (sid, OBSERVE, 5_000)]
    [span] = store.trace_spans(TRACE)
    assert span.events == (required, allowed)


def test_both_records_in_one_request_merge_into_one_span(store: StoreApi) -> None:
    result = store.ingest([_tool("2" * 16, 9_000), _tool("2" * 16, None)])
    assert (result.accepted, result.duplicates) == (2, 1)
    assert _log(store) == [("2" * 16, ACT, 9_000), ("2" * 16, OBSERVE, 9_000)]


def test_cursors_order_commits_and_survive_a_reopen(store: StoreApi, store_url: str) -> None:
    store.ingest([_tool("3" * 16, 2_000)])
    store.ingest([_tool("4" * 16, 2_000)])
    log = store.events_after(Cursor(0), trace_id=None, conversation_id=None, limit=10)
    cursors = [c for c, _, _ in log]
    assert cursors == sorted(cursors)
    assert [c.span_id for c in cursors] == ["3" * 16, "3" * 16, "4" * 16, "4" * 16]
    assert Cursor.parse(str(cursors[1])) == cursors[1]
    after = store.events_after(cursors[1], trace_id=None, conversation_id=None, limit=10)
    assert [c for c, _, _ in after] == cursors[2:]
    store.close()
    reopened = open_store(store_url)
    reopened.ingest([_tool("5" * 16, 2_000)])
    newest = reopened.events_after(cursors[-1], trace_id=None, conversation_id=None, limit=10)
    assert [c.span_id for c, _, _ in newest] == ["5" * 16, "5" * 16]
    reopened.close()


_IDS = "0" * 32 + "-" + "0" * 16


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1-2-3",
        "x-" + _IDS + "-0",
        "1-ab-" + "0" * 16 + "-0",
        f"1-{_IDS}-3",
        f"1-{_IDS}-1-1-1-{'0' * 16}-2",
    ],
)
def test_cursor_parse_refuses_what_is_not_a_cursor(text: str) -> None:
    assert Cursor.parse(text) is None


@pytest.mark.parametrize(("phase", "event"), [(ACT, ACT), (OBSERVE, OBSERVE), (BOTH, OBSERVE)])
def test_a_cursor_names_the_event_at_its_position(phase: int, event: int) -> None:
    cursor = Cursor.parse(f"1-{_IDS}-{phase}")
    assert cursor is not None
    assert (cursor.phase, cursor.event) == (phase, event)


def test_retention_drops_oldest_traces_and_moves_the_horizon(store: StoreApi) -> None:
    store.ingest([_tool("6" * 16, 2_000, trace="0" * 31 + "1")])
    store.ingest([_tool("7" * 16, 2_000, trace="0" * 31 + "2")])
    [first_act, first_observe, *_] = [
        c for c, _, _ in store.events_after(Cursor(0), trace_id=None, conversation_id=None, limit=10)
    ]
    assert store.prune(max_age_ns=None, max_spans=1) == 1
    assert store.counts() == {"spans": 1, "traces": 1}
    assert store.horizon() == first_observe
    assert first_act < store.horizon()  # a client that saw only the act missed something: reset
    assert store.prune(max_age_ns=None, max_spans=1) == 0


def test_retention_by_age_drops_traces_not_updated_within_it(store: StoreApi) -> None:
    store.ingest([_tool("8" * 16, 2_000)])
    assert store.prune(max_age_ns=3600 * 10**9, max_spans=None) == 0
    assert store.prune(max_age_ns=0, max_spans=None) == 1
    assert store.counts() == {"spans": 0, "traces": 0}


def test_an_open_tool_is_running_until_its_root_ended_then_sealed(store: StoreApi) -> None:
    from toolspan.server._http.trace_list import list_traces

    root = Span(
        TRACE,
        "9" * 16,
        None,
        "invoke_agent a",
        500,
        None,
        attributes={"gen_ai.operation.name": "invoke_agent"},
    )
    tool = replace(_tool("a" * 16, None), parent_span_id="9" * 16)
    store.ingest([root, tool])

    def states() -> list[tuple[str, int, int]]:
        rows = list_traces(store, {}, idle_timeout_s=3600)["traces"]
        return [(r["state"], r["tool_calls"], r["spans"]) for r in rows]

    assert states() == [("RUNNING", 1, 2)]
    store.ingest([replace(root, end_ns=9_000)])  # the root ended; the tool never will (its process died)
    assert states() == [("SEALED", 1, 2)]
    assert [r["trace_id"] for r in list_traces(store, {"state": "SEALED"}, 3600)["traces"]] == [TRACE]
    assert list_traces(store, {"state": "RUNNING"}, 3600)["traces"] == []


@pytest.mark.parametrize("engine", ["sqlite", pytest.param("postgres", marks=pytest.mark.processes)])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_prepared_request_stores_what_its_rows_store(
    engine: str, seed: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # The parse worker's hand-off (``prepare``, then ``ingest_prepared``) against the rows stored one by one
    # (``ingest_rows``): requests of new traces, of traces stored already, resent records, a pending record
    # and its ended span in one request or in two, roots after their children.
    import random

    from toolspan.server._rows.spans import row_of_span
    from toolspan.server._store.writes import prepare

    rng = random.Random(seed)
    # The scenario, and its spans again as a trace whose spans failed (errors) and whose tool calls run on.
    failed = [
        replace(s, trace_id="e" * 32, status="ERROR", end_ns=None if i % 2 else s.end_ns)
        for i, s in enumerate(scenario())
    ]
    spans = scenario() + failed
    records = [replace(s, end_ns=None) for s in rng.sample(spans, len(spans) // 3) if s.end_ns is not None]
    records += spans + rng.sample(spans, len(spans) // 4)
    rng.shuffle(records)
    requests, i = [], 0
    while i < len(records):
        size = rng.randint(1, 16)
        requests.append([row_of_span(s) for s in records[i : i + size]])
        i += size
    if engine == "sqlite":
        rows_db, prepared_db = open_store(str(tmp_path / "rows.db")), open_store(str(tmp_path / "prep.db"))
    else:
        from toolspan.server._store.postgres import PostgresStore

        server = request.getfixturevalue("postgres")
        rows_db = PostgresStore(server.fresh_url(), prune_every_s=0)
        prepared_db = PostgresStore(server.fresh_url(), prune_every_s=0)
    try:
        results = [
            (rows_db.ingest_rows(rows), prepared_db.ingest_prepared(prepare(rows))) for rows in requests
        ]
        assert [r for r, _ in results] == [p for _, p in results]
        assert sum(r.duplicates for r, _ in results) >= len(spans) // 4

        def tables(db: StoreApi) -> list[list[tuple[object, ...]]]:
            return [
                [tuple(r) for r in db._rows("SELECT * FROM spans ORDER BY trace_id, span_id")],  # type: ignore[attr-defined]
                [tuple(r[:7]) + tuple(r[8:]) for r in db._rows("SELECT * FROM traces ORDER BY trace_id")],  # type: ignore[attr-defined]
                [
                    tuple(r[1:4])
                    for r in db._rows("SELECT * FROM events ORDER BY ns, trace_id, span_id, phase")
                ],  # type: ignore[attr-defined]
            ]

        stored = tables(rows_db)
        assert tables(prepared_db) == stored
        assert len(stored[0]) == len({(s.trace_id, s.span_id) for s in spans})
        assert any(phase == OBSERVE for _, _, phase in stored[2])
        # (errors, open tool calls) of the failed trace: both counted.
        [(errors, running)] = [(r[9], r[10]) for r in stored[1] if r[0] == "e" * 32]
        assert errors > 0
        assert running > 0
    finally:
        rows_db.close()
        prepared_db.close()


def test_counts_do_not_wait_for_a_write_in_progress_and_see_what_was_committed(store: StoreApi) -> None:
    # ``/healthz``'s counts read every row: a write transaction left open meanwhile (another module's
    # tables, through ``transaction()``) does not hold them up, nor they it.
    import threading

    store.ingest([_tool("1" * 16, 2_000)])
    opened, done, leaving = threading.Event(), threading.Event(), threading.Event()

    def writer() -> None:
        with store.transaction():
            opened.set()
            done.wait(10)
            leaving.set()  # (a count that waited for the transaction could only return after this)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert opened.wait(30)
        assert (store.counts(), store.log_count()) == ({"spans": 1, "traces": 1}, 0)
        assert not leaving.is_set()
    finally:
        done.set()
        thread.join(30)
    store.ingest([_tool("2" * 16, 2_000)])
    assert store.counts() == {"spans": 2, "traces": 1}
