"""One SQL text for both engines (``toolspan.server._store.sql`` and ``dialect``): the same writes give the
same answer from every read of the store on SQLite and on a real PostgreSQL (the commit clock aside: each
engine keeps its own), and each statement is filled in for each engine as written once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.support.bridge_data import CONVERSATION, MS, T0, TRACE_1, TRACE_2, scenario
from tests.support.postgres import Postgres
from toolspan import semconv as sc
from toolspan.bridge.internal import LogRecord
from toolspan.bridge.model import Span, SpanEvent
from toolspan.server._http import trace_list
from toolspan.server._rows.cursor import Cursor
from toolspan.server._store.api import StoreApi
from toolspan.server._store.dialect import DIALECTS, POSTGRES, SQLITE
from toolspan.server._store.engines import open_store
from toolspan.server._store.sql.tables import TraceRow

pytestmark = pytest.mark.processes

TRACE_3 = "0" * 31 + "3"
WAITING = "7" * 16


def _waiting_call() -> Span:
    """A tool call of a third trace, in a conversation of its own, that waits for its approval (a pending
    record)."""
    asked = SpanEvent(sc.PERMISSION_REQUIRED_EVENT, T0 + 2 * MS, {})
    attrs = {
        sc.GEN_AI_OPERATION_NAME: "execute_tool",
        sc.GEN_AI_TOOL_NAME: "wire_money",
        sc.GEN_AI_CONVERSATION_ID: "conv-3",
    }
    return Span(
        TRACE_3, WAITING, None, "execute_tool wire_money", T0 + MS, None, attributes=attrs, events=[asked]
    )


def _records(spans: list[Span]) -> list[LogRecord]:
    """Two log records per tool span (one of them repeated: both kept), in the order they arrive."""
    out = []
    for n, span in enumerate(s for s in spans if s.name.startswith("execute_tool")):
        body = {"content": f"record {n}"}
        out += [
            LogRecord(span.trace_id, span.span_id, span.start_ns + 1, "gen_ai.choice", {"n": n}, body)
        ] * 2
    return out


@pytest.fixture(scope="module")
def stores(postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, StoreApi]]:
    """The same writes on both engines: the scenario in two requests (a span in both: merged), its log
    records, a waiting call, then the scenario's pending records again (nothing new)."""
    opened = {
        SQLITE: open_store(str(tmp_path_factory.mktemp("sql") / "s.db")),
        POSTGRES: open_store(postgres.fresh_url()),
    }
    spans = scenario()
    for store in opened.values():
        assert store.ingest(spans[:7]).accepted == 7
        assert store.ingest(spans[6:]).duplicates == 1
        assert store.ingest_logs(_records(spans)).duplicates == 0
        assert store.ingest_logs(_records(spans)).duplicates == len(_records(spans))
        store.ingest([_waiting_call()])
        store.ingest([replace(s, end_ns=None) for s in spans if s.end_ns is not None][:3])
    yield opened
    for store in opened.values():
        store.close()


def _both(stores: dict[str, StoreApi], read: Any) -> Any:
    sqlite, postgres = read(stores[SQLITE]), read(stores[POSTGRES])
    assert sqlite == postgres
    return sqlite


def _by_span(spans: list[Span]) -> list[Span]:
    return sorted(spans, key=lambda s: (s.trace_id, s.span_id))


def _row(row: TraceRow | None) -> TraceRow | None:
    """A summary row but its ``last_seen_ns`` (each engine's own clock)."""
    return None if row is None else row._replace(last_seen_ns=0)


def test_every_read_gives_the_same_answer_on_both_engines(stores: dict[str, StoreApi]) -> None:
    assert _both(stores, lambda s: s.counts()) == {"spans": 14, "traces": 3}
    assert _both(stores, lambda s: s.log_count()) == 2 * 9
    for trace_id in (TRACE_1, TRACE_2, TRACE_3):
        spans = _both(stores, lambda s, t=trace_id: _by_span(s.trace_spans(t)))
        assert {s.trace_id for s in spans} == {trace_id}
        logs = _both(stores, lambda s, t=trace_id: s.trace_logs(t))
        assert [r.body for r in logs] == [r.body for r in _records(scenario()) if r.trace_id == trace_id]
        assert _both(stores, lambda s, t=trace_id: _row(s.trace_row(t))) is not None
    by_trace = _both(
        stores, lambda s: {t: _by_span(v) for t, v in s.spans_by_trace([TRACE_2, TRACE_1]).items()}
    )
    assert set(by_trace) == {TRACE_1, TRACE_2}
    assert _both(stores, lambda s: _by_span(s.conversation_spans(CONVERSATION))) == _by_span(
        [*by_trace[TRACE_1], *by_trace[TRACE_2]]
    )
    assert _both(stores, lambda s: s.trace_conversations([TRACE_1, TRACE_2, TRACE_3])) == {
        CONVERSATION,
        "conv-3",
    }
    listed = _both(stores, lambda s: [_row(r) for r in s.list_traces("1 = 1", (), 10)])
    assert {r.trace_id for r in listed if r is not None} == {TRACE_1, TRACE_2, TRACE_3}
    counted = _both(stores, lambda s: s.listing_details([TRACE_1, TRACE_3])[0])
    assert counted == {TRACE_1: {sc.STATE_DENIED: 1}, TRACE_3: {sc.STATE_AWAITING_APPROVAL: 1}}
    naming = _both(stores, lambda s: _by_span(s.listing_details([TRACE_1, TRACE_2, TRACE_3])[1]))
    assert [s.parent_span_id for s in naming] == [None, None, None]
    for store in stores.values():  # each engine's own clock in its versions: compared within one
        held = (TRACE_1, TRACE_2, TRACE_3)
        versions = store.trace_versions([*held, "f" * 32])
        assert versions == {t: store.trace_version(t) for t in held}
    assert [s.span_id for s in _both(stores, lambda s: s.span(None, WAITING))] == [WAITING]
    assert _both(stores, lambda s: s.span(TRACE_1, WAITING)) == []
    now = time.time_ns()
    waiting = _both(stores, lambda s: s.waiting_tool_spans((-1, "", ""), now, now - 60 * 10**9, 10))
    assert [s.span_id for s in waiting] == [WAITING]


def test_the_event_log_and_its_records_read_the_same_on_both_engines(stores: dict[str, StoreApi]) -> None:
    def log(store: StoreApi) -> list[tuple[str, str, int, Span]]:
        rows = store.events_after(Cursor(0), trace_id=None, conversation_id=None, limit=1000)
        return [(c.trace_id, c.span_id, phase, span) for c, phase, span in rows]

    events = _both(stores, log)
    assert {e[2] for e in events} == {0, 1}
    assert len({e[1] for e in events}) == 10  # every tool span
    # Each event's span carries its own log records, joined as convert joins them.
    records = {e[1]: [x.name for x in e[3].events if x.name == "gen_ai.choice"] for e in events}
    assert records == {span_id: ["gen_ai.choice"] * 2 if span_id != WAITING else [] for span_id in records}
    for trace_id, conversation_id in ((TRACE_2, None), (None, CONVERSATION)):
        _both(
            stores,
            lambda s, t=trace_id, c=conversation_id: [
                (r[0].span_id, r[1])
                for r in s.events_after(Cursor(0), trace_id=t, conversation_id=c, limit=5)
            ],
        )


def test_the_trace_list_filters_and_searches_the_same_on_both_engines(stores: dict[str, StoreApi]) -> None:
    for params in (
        {},
        {"state": "AWAITING_APPROVAL"},
        {"state": "DENIED"},
        {"tool": "book_trip"},
        {"q": "planner"},
        {"q": "wire"},
        {"conversation_id": CONVERSATION, "limit": "1"},
    ):
        page = _both(stores, lambda s, p=params: trace_list.list_traces(s, dict(p), 3600.0))
        assert page["traces"] or params.get("state") == "DENIED", params


def test_retention_drops_the_same_traces_and_moves_the_horizon_on_both_engines(
    postgres: Postgres, tmp_path: Path
) -> None:
    opened = [open_store(str(tmp_path / "r.db")), open_store(postgres.fresh_url())]
    try:
        for store in opened:
            spans = scenario()
            store.ingest([s for s in spans if s.trace_id == TRACE_1])
            store.ingest([s for s in spans if s.trace_id == TRACE_2])
            store.ingest_logs(_records(spans))
        dropped = [store.prune(max_age_ns=None, max_spans=3) for store in opened]
        assert dropped == [1, 1]
        assert [s.counts() for s in opened] == [{"spans": 3, "traces": 1}] * 2
        assert [s.log_count() for s in opened] == [2 * 2] * 2
        assert [s.trace_spans(TRACE_1) for s in opened] == [[], []]
        horizons = [(h.trace_id, h.span_id, h.phase) for h in (s.horizon() for s in opened)]
        assert horizons[0] == horizons[1]
        assert horizons[0][0] == TRACE_1  # the newest event dropped
    finally:
        for store in opened:
            store.close()


def test_each_statement_is_written_once_and_filled_in_per_engine() -> None:
    sqlite, postgres = DIALECTS[SQLITE], DIALECTS[POSTGRES]
    statement = (
        "SELECT l.data FROM {ids} {join} logs AS l ON l.trace_id = j.value WHERE l.ns > ?"
        " ORDER BY l.{log_order}"
    )
    assert sqlite.sql(statement) == (
        "SELECT l.data FROM json_each(?) AS j CROSS JOIN logs AS l ON l.trace_id = j.value WHERE l.ns > ?"
        " ORDER BY l.rowid"
    )
    assert postgres.sql(statement) == (
        "SELECT l.data FROM unnest(%b::text[]) AS j(value) JOIN logs AS l ON l.trace_id = j.value"
        " WHERE l.ns > %s ORDER BY l.seq"
    )
    # A literal % is PostgreSQL's %% (psycopg's placeholders); a word no dialect knows stays as written.
    assert postgres.sql("SELECT '100%' WHERE ? LIKE '{kept}'") == "SELECT '100%%' WHERE %s LIKE '{kept}'"
    assert sqlite.param(["a", "b"]) == '["a", "b"]'
    assert postgres.param(["a", "b"]) == ["a", "b"]
    assert postgres.param("a\x00b") == "a\ufffdb"
    assert postgres.record(b'[1,"x"]') == '[1,"x"]'
    assert postgres.record(memoryview(b"\x00\x01")) == b"\x00\x01"


def _span_row(span_id: str, name: str, tool: str | None, data: str | bytes) -> tuple[Any, ...]:
    """A span row (``Row``'s fields, in order) of trace ``TRACE_3``."""
    is_tool = int(tool is not None)
    return (TRACE_3, span_id, None, name, T0, T0 + MS, is_tool, tool, None, 0, "svc", None, data, 0)


def test_postgresql_copies_new_rows_and_inserts_what_copy_refuses(
    postgres: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A request's new rows go in by COPY; a row stored already (COPY has no conflict clause) and a text
    # holding NUL (PostgreSQL's text cannot) make the whole request go in as ``insert`` writes it.
    from toolspan.server._store.sql.tables import SPANS

    dialect = DIALECTS[POSTGRES]
    inserted: list[int] = []
    unnest = dialect._unnest  # type: ignore[attr-defined]

    def counted(*args: Any) -> int:
        inserted.append(len(args[2][0]))
        return int(unnest(*args))

    monkeypatch.setattr(dialect, "_unnest", counted)
    store = open_store(postgres.fresh_url())

    def put(*rows: tuple[Any, ...]) -> int:
        with store.transaction() as conn:
            return dialect.insert_flat(conn, SPANS, [v for row in rows for v in row], SPANS.upsert)

    def stored() -> list[tuple[Any, ...]]:
        rows = store._rows("SELECT span_id, name, tool_name, data FROM spans ORDER BY span_id")  # type: ignore[attr-defined]
        return [(r[0], r[1], r[2], bytes(r[3])) for r in rows]

    try:
        # New rows, one of them a record made as JSON text: copied, the text stored as its UTF-8 bytes.
        first = _span_row("1" * 16, "one", "lookup", b"\x00\x01")
        assert put(first, _span_row("2" * 16, "two", None, '[1,"é"]')) == 2
        assert inserted == []
        # A row stored already, with a new name: the request is inserted, the conflict clause replacing it.
        again = _span_row("1" * 16, "one again", "lookup", b"\x02")
        assert put(again, _span_row("3" * 16, "three", None, b"3")) == 2
        assert inserted == [2]
        # A tool name holding NUL: inserted, the NUL stored as U+FFFD in the index column.
        assert put(_span_row("4" * 16, "four", "lo\x00kup", b"\x00")) == 1
        assert inserted == [2, 1]
        assert stored() == [
            ("1" * 16, "one again", "lookup", b"\x02"),
            ("2" * 16, "two", None, '[1,"é"]'.encode()),
            ("3" * 16, "three", None, b"3"),
            ("4" * 16, "four", "lo\ufffdkup", b"\x00"),
        ]
    finally:
        store.close()
