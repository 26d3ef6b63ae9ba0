"""The store's storage, written once for both engines: spans keyed by ``(trace_id, span_id)``, the summary row
of each trace, the log records tied to spans, and the event log of the live streams (``schema.CORE``).

- ``spans``: one row per span (a record sent twice is stored once; a started record and its ended record
  merge exactly as the bridge merges them in a file, see ``toolspan.bridge._coalesce``). ``data`` holds the
  span as received over OTLP protobuf, or as JSON (``_rows.codec``); its other columns index it
  (``_rows.spans``). Written by ``writes``.
- ``traces``: a summary row per trace, kept up to date in the same transaction (``summaries``).
- ``logs``: OTLP log records tied to spans (log-based GenAI events), one row per record, keyed by trace,
  span and a digest of the record (``logs``), so a resend is stored once. They are joined to their spans as
  span events when a trace is read (``attach_logs``, exactly as ``toolspan convert --logs`` joins them), so
  a record that arrives before its span is joined once it does.
- ``events``: the live stream's log of act/observe events of tool spans, a row per event or one for both
  (a span stored ended when first seen: ``_rows.cursor.BOTH``). Its key is the event's cursor
  ``(ns, trace_id, span_id, phase)``: ``ns`` is the store's commit clock (wall-clock nanoseconds, kept
  strictly increasing and stored with the data), so a cursor means the same thing after a restart. A
  conversation's events are those of its traces (``traces.conversation_id``, as its timeline reads them).

Every statement is parameterised and written once (``sql``, in the words of ``dialect``). An engine
(``sqlite.Store``, ``postgres.PostgresStore``) says how a statement gets a connection (``_read``; and a scan
of every row, ``_scan``, which may run beside the writes), how a write transaction begins and commits
(``_write``, ``Tx``), how a retention sweep is admitted (``_sweep``), and keeps the commit clock
(``clock``); beside its storage, each has its change feed (``changes``) and the control channel's rows
(``control``).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from toolspan.bridge.internal import LogRecord, attach_logs
from toolspan.bridge.model import Span
from toolspan.server._rows.codec import decode
from toolspan.server._rows.cursor import Cursor, row_events
from toolspan.server._rows.spans import IngestResult, Row, row_of_span
from toolspan.server._store import sql
from toolspan.server._store.changes import ChangeFeed
from toolspan.server._store.control import ControlRows
from toolspan.server._store.decoded import DecodedSpans
from toolspan.server._store.dialect import Connection, Dialect
from toolspan.server._store.listing import tool_state_counts
from toolspan.server._store.logs import log_record, log_rows
from toolspan.server._store.retention import doomed_traces
from toolspan.server._store.sql import listing
from toolspan.server._store.sql.tables import (
    DO_NOTHING,
    EVENTS,
    LOGS,
    SPANS,
    TRACES,
    LogRow,
    MetaRow,
    TraceRow,
    trace_row,
)
from toolspan.server._store.tx import Tx
from toolspan.server._store.writes import Prepared, merge_batch, put_prepared, put_rows

__all__ = ["Storage"]

T = TypeVar("T")
_WRITES_LOCK = threading.Lock()  # (``Storage.writes``: no increment lost between two threads' commits)
# The tables a retention sweep drops a trace's rows from.
_PRUNED: tuple[str, ...] = (SPANS.name, EVENTS.name, TRACES.name, LOGS.name)


class Storage(ABC):
    """The one store API (``api.StoreApi``), written once over the engine's hooks: both engines implement
    it (``sqlite.Store``, ``postgres.PostgresStore``), the layers above use it."""

    dialect: Dialect
    path: str
    changes: ChangeFeed
    control: ControlRows
    decoded: DecodedSpans  # the spans its reads decoded, kept for the next read (``decoded``)
    # The write transactions of spans, logs and retention this process has committed (counted after each
    # commit): a count of rows made after it last changed holds them all.
    writes: int = 0

    @property
    def engine(self) -> str:
        return self.dialect.engine

    # --- what each engine provides ------------------------------------------------------------------

    @abstractmethod
    def _read(self, work: Callable[[Connection], T]) -> T:
        """``work(connection)``: reads of one consistent moment."""

    def _scan(self, work: Callable[[Connection], T]) -> T:
        """``work(connection)``: a read of every row of a table (a count), which an engine may run beside
        the writes (SQLite: on a connection of its own); else ``_read``."""
        return self._read(work)

    @abstractmethod
    def _write(self, work: Callable[[Tx], T]) -> T:
        """``work(transaction)`` in one write transaction, committed when this returns (``work`` may run
        again on a fresh connection: it must start from nothing each time)."""

    @abstractmethod
    def _sweep(self, work: Callable[[Connection, int], int]) -> int:
        """``work(connection, now ns)`` in the write transaction of a retention sweep, when one may run now
        (else 0)."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Connection]:
        """A write transaction for another module's tables (their part of ``schema.PARTS``): a connection
        whose ``execute(sql, params)`` takes the statements of ``dialect`` (``?`` placeholders) on either
        engine and returns a cursor (``fetchone``, ``fetchall``, ``rowcount``); committed when the block
        ends, rolled back on an error."""

    @abstractmethod
    def clock(self) -> int:
        """The commit clock now: a cursor at the live tail."""

    @abstractmethod
    def close(self) -> None:
        """Stop watching and close (a second call does nothing)."""

    # --- writes ---------------------------------------------------------------------------------------

    def ingest(self, spans: Sequence[Span]) -> IngestResult:
        """Store neutral spans in one transaction (committed when this returns)."""
        return self.ingest_rows([row_of_span(s) for s in spans])

    def ingest_rows(self, rows: Sequence[Row]) -> IngestResult:
        """Store span rows in one transaction (committed when this returns)."""
        batch = merge_batch(rows, IngestResult())

        def write(tx: Tx) -> IngestResult:
            result = IngestResult(accepted=len(rows), duplicates=len(rows) - len(batch))
            put_rows(tx, batch, result)
            return result

        return self._committed(self._write(write))

    def ingest_prepared(self, prepared: Prepared) -> IngestResult:
        """Store a request's rows made ready by ``writes.prepare`` in one transaction (committed when this
        returns): what ``ingest_rows`` of the same rows stores, with the same counts."""
        result = IngestResult(prepared.accepted, prepared.rejected, prepared.duplicates, prepared.message)
        if not prepared.sums:
            return result

        def write(tx: Tx) -> IngestResult:
            done = IngestResult(result.accepted, result.rejected, result.duplicates, result.message)
            put_prepared(tx, prepared, done)
            return done

        return self._committed(self._write(write))

    def ingest_logs(self, records: Sequence[LogRecord]) -> IngestResult:
        """Store span-tied log records in one transaction (committed when this returns); a record already
        stored (the same request sent again) is counted as a duplicate."""
        rows = log_rows(records)

        def write(tx: Tx) -> IngestResult:
            result = IngestResult(accepted=len(records))
            if rows:
                stored = [LogRow(t, s, key, tx.ns, data) for t, s, key, data in rows]
                added = tx.dialect.insert(tx.conn, LOGS, stored, DO_NOTHING)
                result.duplicates = len(rows) - added
                tx.committed(sorted({r[0] for r in rows}), ())
            return result

        return self._committed(self._write(write))

    def prune(self, *, max_age_ns: int | None, max_spans: int | None) -> int:
        """Drop whole traces older than ``max_age_ns`` (by last update) and, oldest first, beyond
        ``max_spans`` spans; returns the number of traces dropped. The event log's horizon moves up to
        the newest event dropped, so a client behind it is told to reset."""

        def sweep(conn: Connection, now: int) -> int:
            doomed = doomed_traces(conn.execute, now, max_age_ns, max_spans)
            if max_age_ns is not None:
                conn.execute(sql.OLD_LOGS, (now - max_age_ns,))
            if not doomed:
                return 0
            horizon = _horizon(conn)
            top = conn.execute(sql.LAST_EVENT_OF_TRACES, (doomed,)).fetchone()
            if top is not None:
                horizon = max(horizon, Cursor(*top))
            for table in _PRUNED:
                conn.execute(sql.delete_traces(table), (doomed,))
            conn.execute(sql.META_PUT, MetaRow("horizon", str(horizon)))
            return len(doomed)

        return self._committed(self._sweep(sweep))

    def _committed(self, result: T) -> T:
        with _WRITES_LOCK:
            self.writes += 1
        return result

    # --- reads ----------------------------------------------------------------------------------------

    def _spans(self, statement: str, args: Sequence[Any], keep: bool = False) -> list[Span]:
        """The spans ``statement`` selects (``data``, ``trace_id``), with their stored log records joined;
        those decoded are kept for the next read with ``keep`` (``decoded``: what a live page or stream reads
        again at each commit)."""

        def read(conn: Connection) -> tuple[list[Any], list[Any]]:
            rows = conn.execute(statement, args).fetchall()
            logs = conn.execute(sql.LOGS_OF_TRACES, (sorted({r[1] for r in rows}),)).fetchall()
            return rows, logs

        rows, logs = self._read(read)
        record = self.dialect.record
        spans = self.decoded.decode([record(r[0]) for r in rows], keep=keep)
        if not logs:
            return spans
        return attach_logs(spans, [log_record(r[0]) for r in logs])[0]

    def _rows(self, statement: str, args: Sequence[Any] = ()) -> list[Any]:
        return self._read(lambda conn: list(conn.execute(statement, args).fetchall()))

    def trace_logs(self, trace_id: str) -> list[LogRecord]:
        """The stored log records of a trace, in the order they arrived."""
        return [log_record(r[0]) for r in self._rows(sql.LOGS_OF_TRACE, (trace_id,))]

    def trace_spans(self, trace_id: str, *, keep: bool = False) -> list[Span]:
        """The trace's spans; ``keep``: those decoded are kept for the next read (a live page, a stream)."""
        return self._spans(sql.SPANS_OF_TRACE, (trace_id,), keep)

    def first_spans(self, trace_id: str, limit: int) -> list[Span]:
        """The first ``limit`` spans of a trace by start time (then span id), in no order: the first steps of
        its views (a view sorts them)."""
        return self._spans(sql.SPANS_OF_TRACE_FIRST, (trace_id, trace_id, limit), keep=True)

    def spans_by_trace(self, trace_ids: Sequence[str], *, keep: bool = False) -> dict[str, list[Span]]:
        """``trace_spans`` of each of ``trace_ids``, in one read (a stream page's traces); ``keep`` as
        ``trace_spans``."""
        out: dict[str, list[Span]] = {trace_id: [] for trace_id in trace_ids}
        for span in self._spans(sql.SPANS_OF_TRACES, (list(trace_ids),), keep):
            out.setdefault(span.trace_id, []).append(span)
        return out

    def conversation_spans(self, conversation_id: str, *, keep: bool = False) -> list[Span]:
        """The spans of the conversation's traces; ``keep`` as ``trace_spans``."""
        return self._spans(sql.SPANS_OF_CONVERSATION, (conversation_id, conversation_id), keep)

    def waiting_tool_spans(
        self, after: tuple[int, str, str], live_since_ns: int, seen_since_ns: int, limit: int
    ) -> list[Span]:
        """Tool spans that wait for an approval (``spans.waiting``), after ``after`` (``(start_ns, trace_id,
        span_id)``) in that order: those whose application asked for the decision until ``live_since_ns`` or
        later (``control_polls``), and those it never asked for whose trace arrived at ``seen_since_ns`` or
        later."""
        return self._spans(sql.WAITING_SPANS, (*after, live_since_ns, seen_since_ns, limit))

    def span(self, trace_id: str | None, span_id: str) -> list[Span]:
        """The span ``span_id`` (of ``trace_id`` when given); a list of at most one span per trace."""
        if trace_id is None:
            return self._spans(sql.SPAN_ANY_TRACE, (span_id,))
        return self._spans(sql.SPAN, (trace_id, span_id))

    def trace_conversations(self, trace_ids: Sequence[str]) -> set[str]:
        """The conversation ids of the traces ``trace_ids`` (those that have one)."""
        return {str(r[0]) for r in self._rows(sql.TRACE_CONVERSATIONS, (list(trace_ids),))}

    def trace_version(self, trace_id: str) -> tuple[int, ...] | None:
        """A value that changes whenever the trace's spans or log records do (what ``trace_spans`` gives),
        ``None`` when the trace is not held here: what a reader keeps a rendering of the trace by."""
        rows = self._rows(sql.TRACE_VERSION, (trace_id,))
        return tuple(int(v or 0) for v in rows[0]) if rows else None

    def trace_versions(self, trace_ids: Sequence[str]) -> dict[str, tuple[int, ...]]:
        """``trace_version`` of each of ``trace_ids`` held here, in one read (the traces a stream may read
        again)."""
        rows = self._rows(sql.TRACE_VERSIONS, (list(trace_ids),))
        return {str(r[0]): tuple(int(v or 0) for v in r[1:]) for r in rows}

    def trace_row(self, trace_id: str) -> TraceRow | None:
        rows = self._rows(sql.TRACE_ROW, (trace_id,))
        return trace_row(rows[0]) if rows else None

    def list_traces(self, where: str, args: Sequence[Any], limit: int) -> list[TraceRow]:
        """Trace rows matching ``where`` (built by the caller from fixed fragments and ``?`` only), newest
        first."""
        return [
            trace_row(r) for r in self._rows(sql.TRACES_WHERE + where + sql.TRACES_LISTED, (*args, limit))
        ]

    def listing_details(self, trace_ids: Sequence[str]) -> tuple[dict[str, dict[str, int]], list[Span]]:
        """What a page of the trace list shows beyond the summary rows: each trace's number of tool calls
        per listed state (``LISTED_TOOL_STATES``), and the spans that name its run (``run_name``): its roots,
        or its first span while no root has arrived."""
        ids = list(trace_ids)
        counted = self._rows(listing.TOOL_STATE_COUNTS, (ids,))
        return tool_state_counts(counted), self._spans(listing.NAMING_SPANS, (ids,))

    def horizon(self) -> Cursor:
        """The newest event dropped by retention: a client whose cursor is before it missed events."""
        return self._read(_horizon)

    def events_after(
        self, cursor: Cursor, *, trace_id: str | None, conversation_id: str | None, limit: int
    ) -> list[tuple[Cursor, int, Span]]:
        """Events after ``cursor`` in cursor order, at most ``limit``: ``(cursor, phase, span)`` (a ``BOTH``
        row of the log gives its act and its observe, ``_rows.cursor.row_events``)."""
        statement = sql.EVENTS_AFTER
        args: list[Any] = [cursor.ns, cursor.ns, cursor.trace_id, cursor.span_id, cursor.phase]
        if trace_id is not None:
            statement += sql.EVENTS_OF_TRACE
            args.append(trace_id)
        if conversation_id is not None:
            statement += sql.EVENTS_OF_CONVERSATION
            args += [conversation_id, conversation_id]
        statement += sql.EVENTS_ORDER
        args.append(limit)

        def read(conn: Connection) -> tuple[list[tuple[Cursor, int, Any]], list[Any]]:
            rows = conn.execute(statement, args).fetchall()
            # Only the rows of the first ``limit`` events are decoded and joined to their records: a page of
            # ``BOTH`` rows holds twice its events, and the next page starts at the first event left out.
            events = [
                (position, phase, r)
                for r in rows
                for position, phase in row_events(r[0], r[1], r[2], r[3])
                if position > cursor  # (a ``BOTH`` row read from its act on: its observe only)
            ][:limit]
            keys = sorted({r[1] + r[2] for _, _, r in events})
            logs = conn.execute(sql.LOGS_OF_SPANS, (keys,)).fetchall() if keys else []
            return events, logs

        events, logs = self._read(read)
        # The events of one span in one page share one decoded span. (Nothing is kept: the events are read
        # from a cursor on, each once.)
        record = self.dialect.record
        decoded: dict[tuple[str, str], Span] = {}
        spans = []
        for _, _, r in events:
            span = decoded.get((r[1], r[2]))
            if span is None:
                span = decoded[r[1], r[2]] = decode(record(r[4]))
            spans.append(span)
        if logs:
            # Each event is of its own span (as ``convert --to events`` streams them), with its log records.
            spans = attach_logs(spans, [log_record(r[0]) for r in logs])[0]
        return [(position, phase, span) for (position, phase, _), span in zip(events, spans, strict=True)]

    def counts(self) -> dict[str, int]:
        def read(conn: Connection) -> dict[str, int]:
            spans = conn.execute(sql.COUNT_SPANS).fetchone()[0]
            traces = conn.execute(sql.COUNT_TRACES).fetchone()[0]
            return {"spans": int(spans), "traces": int(traces)}

        return self._scan(read)

    def log_count(self) -> int:
        """The number of stored log records."""
        return int(self._scan(lambda conn: conn.execute(sql.COUNT_LOGS).fetchone()[0]))


def _horizon(conn: Connection) -> Cursor:
    row = conn.execute(sql.HORIZON).fetchone()
    return (None if row is None else Cursor.parse(str(row[0]))) or Cursor(0)
