"""The server's embedded store: one SQLite file in WAL mode, spans keyed by ``(trace_id, span_id)``.

- ``spans``: one row per span (a rowid table: its rows, about a kilobyte each, are too large for
  ``WITHOUT ROWID``) (a record sent twice is stored once; a started record and its ended record
  merge exactly as the bridge merges them in a file, see ``toolspan.bridge._coalesce``). ``data`` holds
  the span as received over OTLP protobuf, or as JSON (``_ingest.codec``); its other columns index it
  (``_ingest.records``). Written by ``writes``.
- ``traces``: a summary row per trace, kept up to date in the same transaction (``summaries``).
- ``logs``: OTLP log records tied to spans (log-based GenAI events), one row per record, keyed by trace,
  span and a digest of the record (with its rank among equal records of one request), so a resend is stored
  once. They are joined to their spans as span events when a trace is read (``attach_logs``, exactly as
  ``toolspan convert --logs`` joins them), so a record that arrives before its span is joined once it does.
- ``events``: the live stream's log of act/observe events of tool spans. Its key is the event's cursor
  ``(ns, trace_id, span_id, phase)``: ``ns`` is the store's commit clock (wall-clock nanoseconds, kept
  strictly increasing and stored with the data), so a cursor means the same thing after a restart. A
  conversation's events are those of its traces (``traces.conversation_id``, as its timeline reads them);
  the log's own ``conversation_id`` column is left NULL (it was filled by 0.1.0).

The DDL is ``schema.CORE`` (one versioned schema for SQLite and PostgreSQL, migrated at start); the
PostgreSQL store (``postgres``) keeps the same tables for replicas sharing one database.

Every statement is parameterised. A commit returns only once SQLite has the transaction in its WAL, so an
acknowledged export survives the server being killed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from toolspan.bridge.model import Span
from toolspan.bridge.readers import LogRecord, attach_logs
from toolspan.server._ingest.codec import decode
from toolspan.server._ingest.records import Row, row_of_span
from toolspan.server._store.listing import NAMING_SPANS_SQL, TOOL_STATE_COUNTS_SQL, tool_state_counts
from toolspan.server._store.retention import doomed_traces
from toolspan.server._store.schema import SQLITE, VERSIONS_DDL, pending, statements
from toolspan.server._store.writes import ACT, OBSERVE, IngestResult, merge_batch, put_rows
from toolspan.server._streams.cursor import Cursor

__all__ = [
    "ACT",
    "OBSERVE",
    "WAITING_SQL",
    "Cursor",
    "IngestResult",
    "Store",
    "StoreError",
    "TraceRow",
    "log_rows",
]

_logger = logging.getLogger(__name__)
_CHECKPOINT_S: Final = 1.0
# The waiting tool spans of the control channel's inbox (``waiting_tool_spans``), on both engines (``?``).
WAITING_SQL: Final = (
    "SELECT s.data, s.trace_id FROM spans s JOIN traces t ON t.trace_id = s.trace_id"
    " LEFT JOIN control_polls p ON p.trace_id = s.trace_id AND p.span_id = s.span_id"
    " WHERE s.waiting = 1 AND (s.start_ns, s.trace_id, s.span_id) > (?, ?, ?)"
    " AND (p.until_ns >= ? OR (p.until_ns IS NULL AND t.last_seen_ns >= ?))"
    " ORDER BY s.start_ns, s.trace_id, s.span_id LIMIT ?"
)


@dataclass(frozen=True, slots=True)
class TraceRow:
    trace_id: str
    service: str | None
    conversation_id: str | None
    root_name: str | None
    root_ended: bool
    start_ns: int
    end_ns: int | None
    last_seen_ns: int
    spans: int
    tools: int
    errors: int
    open_tools: int


_dump_log = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=False).encode


def _log_data(record: LogRecord) -> str:
    return _dump_log(
        [
            record.trace_id,
            record.span_id,
            record.time_ns,
            record.event_name,
            dict(record.attributes),
            record.body,
        ]
    )


def log_rows(records: Sequence[LogRecord]) -> list[tuple[str, str, str, str]]:
    """``(trace_id, span_id, key, data)`` of each log record, on either engine. The key is a digest of the
    record and its rank among equal records of ``records``: equal records within one request are all kept
    (the CLI joins every one of them), and the same request sent again maps to the same keys (stored once)."""
    rows: list[tuple[str, str, str, str]] = []
    seen: dict[tuple[str, str, str], int] = {}
    for record in records:
        data = _log_data(record)
        digest = hashlib.sha256(data.encode("utf-8")).hexdigest()[:32]
        key = (record.trace_id, record.span_id, digest)
        rank = seen.get(key, 0)
        seen[key] = rank + 1
        rows.append((record.trace_id, record.span_id, f"{digest}:{rank}", data))
    return rows


def _log_record(text: str) -> LogRecord:
    row: list[Any] = json.loads(text)
    return LogRecord(row[0], row[1], row[2], row[3], row[4], row[5])


class StoreError(Exception):
    """The database cannot serve as the store: a one-line reason (``toolspan serve`` exits with it)."""


class Store:
    """Thread-safe access to one SQLite database (one connection, one lock: SQLite has one writer).

    Opening checks the file is a healthy, writable store (``StoreError`` otherwise): not a directory,
    an SQLite database, ``PRAGMA quick_check`` clean (zeroed or truncated pages are found here, not by
    every later request), and a write goes through (a read-only file is refused here, not at each
    ingest).
    """

    engine: Final = SQLITE

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        if os.path.isdir(path):
            raise StoreError(f"{path}: is a directory, not a database file")
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as e:
            raise StoreError(
                f"{path}: cannot open ({e}): does its directory exist, and may it be written?"
            ) from None
        try:
            self._clock = self._open()
        except (sqlite3.Error, StoreError) as e:
            self._db.close()
            reason = str(e) if isinstance(e, StoreError) else f"{path}: {_reason(e)}"
            raise StoreError(reason) from None
        self._stop = threading.Event()
        self._checkpointer = threading.Thread(
            target=self._checkpoints, name="toolspan-checkpoint", daemon=True
        )
        self._checkpointer.start()

    def _open(self) -> int:
        """Set the connection up, check the file and create the schema; returns the commit clock."""
        db = self._db
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=5000")
        db.execute("PRAGMA cache_size=-32768")
        # Checkpoints (the only fsyncs in WAL mode with synchronous=NORMAL) run in the background on their
        # own connection, so a commit only appends to the WAL: still durable when the process is killed.
        db.execute("PRAGMA wal_autocheckpoint=0")
        # (One line each: SQLite's report of a damaged page spans several.)
        problems = [" ".join(str(r[0]).split()) for r in db.execute("PRAGMA quick_check(3)").fetchall()]
        if problems != ["ok"]:
            raise StoreError(f"{self.path}: the database is damaged ({'; '.join(problems)})")
        with self._transaction():
            db.execute(VERSIONS_DDL)
            applied = {str(r[0]): int(r[1]) for r in db.execute("SELECT part, version FROM schema_versions")}
            try:
                todo = pending(applied)
            except ValueError as e:
                raise StoreError(f"{self.path}: {e}") from None
            for part, version, text in todo:
                for statement in statements(text, SQLITE):
                    db.execute(statement)
                db.execute("INSERT OR REPLACE INTO schema_versions VALUES (?, ?)", (part.name, version))
        row = db.execute("SELECT max(ns) FROM events").fetchone()
        clock = max(row[0] or 0, self._meta("clock") or 0)
        with self._transaction():  # a read-only file fails here, before the server answers anything
            db.execute("INSERT OR REPLACE INTO meta VALUES ('clock', ?)", (clock,))
        return int(clock)

    def _checkpoints(self) -> None:
        db = sqlite3.connect(self.path, isolation_level=None)
        try:
            while not self._stop.wait(_CHECKPOINT_S):
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:
                    _logger.warning("toolspan serve: WAL checkpoint failed: %s", exc)
        finally:
            db.close()

    def close(self) -> None:
        """Checkpoint and close (a second call does nothing)."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._checkpointer.join(10)
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.close()

    def watch(
        self,
        on_commit: Callable[..., None],
        on_deltas: Callable[[list[LogRecord]], None],
        on_control: Callable[[], None] | None = None,
    ) -> None:
        """Nothing to watch: one process writes this store, and wakes its own streams."""

    def publish_control(self) -> None:
        """Nothing to publish: the process that stored a decision wakes its own long polls."""

    def publish_deltas(self, records: Sequence[LogRecord]) -> None:
        """Nothing to publish: the text deltas this process relays reach every client of the store."""

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction for another module's tables (``StoreApi.transaction``)."""
        with self._lock, self._transaction() as db:
            yield db

    # --- writes -------------------------------------------------------------------------------------

    def _tick(self) -> int:
        self._clock = max(time.time_ns(), self._clock + 1)
        return self._clock

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, committed at the end of the block and rolled back on any error (the
        caller holds the lock)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.execute("COMMIT")
        except BaseException:
            # SQLite may have rolled back already (a full disk, an I/O error): a second ROLLBACK would
            # fail and hide the error that matters.
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            raise

    @contextlib.contextmanager
    def _stamped(self) -> Iterator[tuple[sqlite3.Connection, int]]:
        """A write transaction at the next tick of the commit clock, which it stores with the data."""
        with self._transaction() as db:
            ns = self._tick()
            yield db, ns
            db.execute("INSERT OR REPLACE INTO meta VALUES ('clock', ?)", (ns,))

    def _meta(self, key: str) -> int | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else int(row[0])

    def ingest(self, spans: Sequence[Span]) -> IngestResult:
        """Store neutral spans in one transaction (committed when this returns)."""
        return self.ingest_rows([row_of_span(s) for s in spans])

    def ingest_rows(self, rows: Sequence[Row]) -> IngestResult:
        """Store span rows in one transaction (committed when this returns)."""
        result = IngestResult(accepted=len(rows))
        batch = merge_batch(rows, result)
        with self._lock, self._stamped() as (db, ns):
            put_rows(db, batch, ns, result)
        return result

    def ingest_logs(self, records: Sequence[LogRecord]) -> IngestResult:
        """Store span-tied log records in one transaction (committed when this returns); a record already
        stored (the same request sent again) is counted as a duplicate."""
        result = IngestResult(accepted=len(records))
        rows = log_rows(records)
        with self._lock, self._stamped() as (db, ns):
            before = db.total_changes
            db.executemany(
                "INSERT OR IGNORE INTO logs (trace_id, span_id, digest, ns, data) VALUES (?,?,?,?,?)",
                [(t, sp, d, ns, data) for t, sp, d, data in rows],
            )
            result.duplicates = len(rows) - (db.total_changes - before)
        return result

    def prune(self, *, max_age_ns: int | None, max_spans: int | None) -> int:
        """Drop whole traces older than ``max_age_ns`` (by last update) and, oldest first, beyond
        ``max_spans`` spans; returns the number of traces dropped. The event log's horizon moves up to
        the newest event dropped, so a client behind it is told to reset."""
        with self._lock:
            db = self._db
            doomed = doomed_traces(db.execute, time.time_ns(), max_age_ns, max_spans)
            if max_age_ns is not None:
                # Log records whose spans never arrived are kept only as long as a trace would be.
                db.execute(
                    "DELETE FROM logs WHERE ns < ? AND trace_id NOT IN (SELECT trace_id FROM traces)",
                    (time.time_ns() - max_age_ns,),
                )
            if not doomed:
                return 0
            with self._transaction():
                horizon = self._horizon()
                for trace_id in doomed:
                    top = db.execute(
                        "SELECT ns, trace_id, span_id, phase FROM events WHERE trace_id = ?"
                        " ORDER BY ns DESC, span_id DESC, phase DESC LIMIT 1",
                        (trace_id,),
                    ).fetchone()
                    if top is not None:
                        horizon = max(horizon, Cursor(*top))
                    for table in ("spans", "events", "traces", "logs"):
                        db.execute(f"DELETE FROM {table} WHERE trace_id = ?", (trace_id,))
                db.execute("INSERT OR REPLACE INTO meta VALUES ('horizon', ?)", (str(horizon),))
            return len(doomed)

    # --- reads --------------------------------------------------------------------------------------

    def _spans(self, sql: str, args: Iterable[Any]) -> list[Span]:
        """The spans ``sql`` selects (``data``, ``trace_id``), with their stored log records joined."""
        with self._lock:
            rows = self._db.execute(sql, tuple(args)).fetchall()
            traces = json.dumps(sorted({r[1] for r in rows}))
            logs = self._db.execute(
                "SELECT l.data FROM json_each(?) AS j CROSS JOIN logs AS l ON l.trace_id = j.value"
                " ORDER BY l.rowid",
                (traces,),
            ).fetchall()
        spans = [decode(r[0]) for r in rows]
        if not logs:
            return spans
        return attach_logs(spans, [_log_record(r[0]) for r in logs])[0]

    def trace_logs(self, trace_id: str) -> list[LogRecord]:
        """The stored log records of a trace, in the order they arrived."""
        with self._lock:
            rows = self._db.execute(
                "SELECT data FROM logs WHERE trace_id = ? ORDER BY rowid", (trace_id,)
            ).fetchall()
        return [_log_record(r[0]) for r in rows]

    def trace_spans(self, trace_id: str) -> list[Span]:
        return self._spans("SELECT data, trace_id FROM spans WHERE trace_id = ?", (trace_id,))

    def spans_by_trace(self, trace_ids: Sequence[str]) -> dict[str, list[Span]]:
        """``trace_spans`` of each of ``trace_ids``."""
        return {trace_id: self.trace_spans(trace_id) for trace_id in trace_ids}

    def conversation_spans(self, conversation_id: str) -> list[Span]:
        return self._spans(
            "SELECT data, trace_id FROM spans WHERE trace_id IN"
            " (SELECT trace_id FROM traces WHERE conversation_id = ? OR trace_id = ?)",
            (conversation_id, conversation_id),
        )

    def trace_conversations(self, trace_ids: Sequence[str]) -> set[str]:
        """The conversation ids of the traces ``trace_ids`` (those that have one)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT t.conversation_id FROM json_each(?) AS j CROSS JOIN traces AS t"
                " ON t.trace_id = j.value WHERE t.conversation_id IS NOT NULL",
                (json.dumps(list(trace_ids)),),
            ).fetchall()
        return {str(r[0]) for r in rows}

    def trace_row(self, trace_id: str) -> TraceRow | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()
        return None if row is None else _trace_row(row)

    def list_traces(self, where: str, args: Sequence[Any], limit: int) -> list[TraceRow]:
        """Trace rows matching ``where`` (built by the caller from fixed fragments and ``?`` only),
        newest first."""
        sql = f"SELECT * FROM traces WHERE {where} ORDER BY start_ns DESC, trace_id DESC LIMIT ?"
        with self._lock:
            rows = self._db.execute(sql, (*args, limit)).fetchall()
        return [_trace_row(r) for r in rows]

    def listing_details(self, trace_ids: Sequence[str]) -> tuple[dict[str, dict[str, int]], list[Span]]:
        """What a page of the trace list shows beyond the summary rows: each trace's number of tool calls
        per listed state (``LISTED_TOOL_STATES``), and the spans that name its run (``run_name``): its roots,
        or its first span while no root has arrived."""
        ids = json.dumps(list(trace_ids))
        with self._lock:
            joined = "FROM json_each(?) AS j CROSS JOIN spans AS s ON s.trace_id = j.value WHERE 1 = 1"
            counted = self._db.execute(TOOL_STATE_COUNTS_SQL.format(from_where=joined), (ids,)).fetchall()
        naming = self._spans(
            "SELECT s.data, s.trace_id FROM json_each(?) AS j CROSS JOIN spans AS s ON s.trace_id = j.value"
            f" WHERE {NAMING_SPANS_SQL}",
            (ids,),
        )
        return tool_state_counts(counted), naming

    def clock(self) -> int:
        """The commit clock now: a cursor at the live tail."""
        with self._lock:
            return self._clock

    def _horizon(self) -> Cursor:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'horizon'").fetchone()
        return (None if row is None else Cursor.parse(str(row[0]))) or Cursor(0)

    def horizon(self) -> Cursor:
        """The newest event dropped by retention: a client whose cursor is before it missed events."""
        with self._lock:
            return self._horizon()

    def events_after(
        self, cursor: Cursor, *, trace_id: str | None, conversation_id: str | None, limit: int
    ) -> list[tuple[Cursor, int, Span]]:
        """Events after ``cursor`` in cursor order: ``(cursor, phase, span)``."""
        sql = (
            "SELECT e.ns, e.trace_id, e.span_id, e.phase, s.data FROM events e"
            " JOIN spans s ON s.trace_id = e.trace_id AND s.span_id = e.span_id"
            " WHERE (e.ns, e.trace_id, e.span_id, e.phase) > (?, ?, ?, ?)"
        )
        args: list[Any] = [cursor.ns, cursor.trace_id, cursor.span_id, cursor.phase]
        if trace_id is not None:
            sql += " AND e.trace_id = ?"
            args.append(trace_id)
        if conversation_id is not None:
            # The conversation's traces, as its timeline reads them (no index on the event log for it:
            # one index less to write on every ingest).
            sql += (
                " AND e.trace_id IN (SELECT trace_id FROM traces WHERE conversation_id = ? OR trace_id = ?)"
            )
            args += [conversation_id, conversation_id]
        sql += " ORDER BY e.ns, e.trace_id, e.span_id, e.phase LIMIT ?"
        args.append(limit)
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
            keys = json.dumps(sorted({r[1] + r[2] for r in rows}))
            logs = self._db.execute(
                "SELECT l.data FROM json_each(?) AS j CROSS JOIN logs AS l"
                " ON l.trace_id = substr(j.value, 1, 32) AND l.span_id = substr(j.value, 33)"
                " ORDER BY l.rowid",
                (keys,),
            ).fetchall()
        # An act and an observe of one span in one page share one decoded span.
        decoded: dict[tuple[str, str], Span] = {}
        spans = []
        for r in rows:
            span = decoded.get((r[1], r[2]))
            if span is None:
                span = decoded[r[1], r[2]] = decode(r[4])
            spans.append(span)
        if logs:
            # Each event is of its own span (as ``convert --to events`` streams them), with its log records.
            spans = attach_logs(spans, [_log_record(r[0]) for r in logs])[0]
        return [(Cursor(r[0], r[1], r[2], r[3]), r[3], span) for r, span in zip(rows, spans, strict=True)]

    def counts(self) -> dict[str, int]:
        with self._lock:
            spans = self._db.execute("SELECT count(*) FROM spans").fetchone()[0]
            traces = self._db.execute("SELECT count(*) FROM traces").fetchone()[0]
        return {"spans": int(spans), "traces": int(traces)}

    def pending_tool_spans(self, limit: int) -> list[Span]:
        """Tool spans not ended (as far as the store knows), oldest first: the calls that wait or run."""
        return self._spans(
            "SELECT data, trace_id FROM spans WHERE is_tool = 1 AND end_ns IS NULL"
            " ORDER BY start_ns, span_id LIMIT ?",
            (limit,),
        )

    def waiting_tool_spans(
        self, after: tuple[int, str, str], live_since_ns: int, seen_since_ns: int, limit: int
    ) -> list[Span]:
        """Tool spans that wait for an approval (``spans.waiting``), after ``after`` (``(start_ns, trace_id,
        span_id)``) in that order: those whose application asked for the decision until ``live_since_ns`` or
        later (``control_polls``), and those it never asked for whose trace arrived at ``seen_since_ns`` or
        later."""
        return self._spans(WAITING_SQL, (*after, live_since_ns, seen_since_ns, limit))

    def span(self, trace_id: str | None, span_id: str) -> list[Span]:
        """The span ``span_id`` (of ``trace_id`` when given); a list of at most one span per trace."""
        if trace_id is None:
            return self._spans("SELECT data, trace_id FROM spans WHERE span_id = ?", (span_id,))
        return self._spans(
            "SELECT data, trace_id FROM spans WHERE trace_id = ? AND span_id = ?", (trace_id, span_id)
        )

    def log_count(self) -> int:
        """The number of stored log records."""
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM logs").fetchone()[0])


def _reason(e: sqlite3.Error) -> str:
    text = str(e)
    if "readonly" in text:
        return f"the database is read-only ({text}): toolspan serve needs to write its store"
    if "not a database" in text or "malformed" in text:
        return f"the database is damaged or not an SQLite file ({text})"
    return text


def _trace_row(row: Sequence[Any]) -> TraceRow:
    return TraceRow(
        row[0], row[1], row[2], row[3], bool(row[4]), row[5], row[6], row[7], row[8], row[9], row[10], row[11]
    )
