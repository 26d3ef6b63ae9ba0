"""The store on PostgreSQL (``toolspan serve --db postgresql://...``, the ``postgres`` extra): many replicas
share one database, one event log and one stream.

The tables are those of SQLite (``schema``, one versioned schema, migrated at start under a
transaction-level advisory lock, so replicas starting together apply each migration once). What differs
is how concurrent writers stay correct:

- **Ingest.** One transaction per request, committed before the server answers (a 2xx still means
  durable). It first takes a transaction-level advisory lock per trace it writes (in key order, so two
  requests never deadlock): the read of the stored records, the merge of a pending record with its
  ended record (``writes.plan_rows``, as on SQLite) and the read-modify-write of the trace's summary row
  are serialized per trace across every replica. A resend to another replica finds the stored record
  and is a duplicate: stored once.
- **The commit clock.** An event's cursor is ``(ns, trace id, span id, phase)``, and a stream reads every
  event after its cursor. Concurrent transactions commit in any order, so a clock taken at the start of a
  transaction could be seen committed out of order (``ns = 5`` before ``ns = 4``), and a reader past 5
  would never see 4. Here the clock is a row (``meta.clock``) updated as the *last* statement of a
  transaction that writes events: the row lock it takes is held until that transaction has committed, so
  the next writer gets the next tick only after this one is visible. Ticks are therefore visible in
  order: a reader that sees tick ``n`` sees every tick before it, on every replica. A cursor issued by
  any replica resumes on any other exactly once, with no gap. (Only transactions with tool events take
  the clock; the wait is the commit itself.)
- **Wake-ups.** Every write ``NOTIFY``s channel ``toolspan_commits`` at commit, naming the traces it wrote
  (``commit_payload``; nothing when they do not fit: then every stream wakes); each replica ``LISTEN``s
  on its own connection (``watch``) and wakes its streams, which read the log from their cursors (a
  notification lost while the connection was down is made up for by a wake-up on reconnect). Text
  deltas, never stored, go to every replica on channel ``toolspan_deltas`` (``publish_deltas``); one
  longer than a notification's payload limit is sent in consecutive pieces.
- **Retention** (``prune``) runs on one replica at a time (``pg_try_advisory_xact_lock``) and at most once a
  second for the cluster (``meta.pruned_at``). The idle SEAL timeout is read from each trace's
  ``last_seen_ns`` in the shared table, so every replica reports the same state (clocks in step).

Connections come from a ``psycopg_pool`` pool; a statement that fails because the connection was lost (a
database restart) is tried once more on a fresh one, then ``StoreUnavailable`` (a 503, which OTLP
exporters retry).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, TypeVar

from toolspan.bridge.model import Span
from toolspan.bridge.readers import LogRecord, attach_logs
from toolspan.server._ingest.codec import decode
from toolspan.server._ingest.records import Row, row_of_span
from toolspan.server._store.api import StoreUnavailable, shown
from toolspan.server._store.db import WAITING_SQL, StoreError, TraceRow, _log_record, _trace_row, log_rows
from toolspan.server._store.listing import NAMING_SPANS_SQL, TOOL_STATE_COUNTS_SQL, tool_state_counts
from toolspan.server._store.retention import doomed_traces
from toolspan.server._store.schema import POSTGRES, VERSIONS_DDL, pending, statements
from toolspan.server._store.summaries import summary_rows
from toolspan.server._store.writes import IngestResult, merge_batch, plan_rows
from toolspan.server._streams.cursor import Cursor

__all__ = ["COMMITS", "CONTROL", "DELTAS", "PostgresStore", "QmarkConnection"]

_logger = logging.getLogger(__name__)
T = TypeVar("T")

COMMITS: Final = "toolspan_commits"
DELTAS: Final = "toolspan_deltas"
CONTROL: Final = "toolspan_control"
# Advisory lock keys of the schema migration and of the retention sweep (traces use their own keys).
_SCHEMA_LOCK: Final = 0x746F6F6C7370616E  # "toolspan"
_PRUNE_LOCK: Final = _SCHEMA_LOCK + 1
_POOL_SIZE: Final = 8
_CONNECT_TIMEOUT_S: Final = 10.0
_WAIT_S: Final = 3.0  # a request waits this long for a connection (the database down: then a 503)
_PAYLOAD_BYTES: Final = 7000  # PostgreSQL's limit is 8000 bytes per notification
_PRUNE_EVERY_NS: Final = 1_000_000_000
_SPAN_COLUMNS: Final = (
    "trace_id, span_id, parent, name, start_ns, end_ns, is_tool, tool_name, tool_state, is_error,"
    " service, conversation_id, data, waiting"
)
_SPAN_TYPES: Final = (
    "text[]", "text[]", "text[]", "text[]", "bigint[]", "bigint[]", "int[]", "text[]", "text[]", "int[]",
    "text[]", "text[]", "bytea[]", "int[]",
)  # fmt: skip
_DATA: Final = Row._fields.index("data")
_TRACE_COLUMNS: Final = (
    "trace_id, service, conversation_id, root_name, root_ended, start_ns, end_ns, last_seen_ns, spans,"
    " tools, errors, open_tools"
)
_TRACE_TYPES: Final = (
    "text[]", "text[]", "text[]", "text[]", "int[]", "bigint[]", "bigint[]", "bigint[]", "int[]", "int[]",
    "int[]", "int[]",
)  # fmt: skip


def _unnest(types: Sequence[str]) -> str:
    return "unnest(" + ", ".join(f"%b::{t}" for t in types) + ")"


def _updates(columns: str, key: str) -> str:
    names = [c.strip() for c in columns.split(",")]
    return ", ".join(f"{n} = EXCLUDED.{n}" for n in names if n not in key.split(","))


_UPSERT_SPANS: Final = (
    f"INSERT INTO spans ({_SPAN_COLUMNS}) SELECT * FROM {_unnest(_SPAN_TYPES)}"
    f" ON CONFLICT (trace_id, span_id) DO UPDATE SET {_updates(_SPAN_COLUMNS, 'trace_id,span_id')}"
)
_UPSERT_TRACES: Final = (
    f"INSERT INTO traces ({_TRACE_COLUMNS}) SELECT * FROM {_unnest(_TRACE_TYPES)}"
    f" ON CONFLICT (trace_id) DO UPDATE SET {_updates(_TRACE_COLUMNS, 'trace_id')}"
)
# The summary rows of some traces from all their spans, as ``summaries.recompute_summaries`` on SQLite;
# ``last_seen_ns`` moves forward (a replica's clock behind another's never moves it back).
_RECOMPUTE: Final = (
    f"INSERT INTO traces ({_TRACE_COLUMNS}) SELECT s.trace_id, max(s.service), max(s.conversation_id),"
    " (SELECT r.name FROM spans r WHERE r.trace_id = s.trace_id AND r.parent IS NULL"
    "  ORDER BY r.start_ns, r.span_id LIMIT 1),"
    " coalesce((SELECT (r.end_ns IS NOT NULL)::int FROM spans r WHERE r.trace_id = s.trace_id"
    "  AND r.parent IS NULL ORDER BY r.start_ns, r.span_id LIMIT 1), 0),"
    " min(s.start_ns), max(s.end_ns),"
    " greatest(%s, coalesce((SELECT t.last_seen_ns + 1 FROM traces t WHERE t.trace_id = s.trace_id), 0)),"
    " count(*), sum(s.is_tool), sum(s.is_error),"
    " sum(CASE WHEN s.is_tool = 1 AND s.end_ns IS NULL THEN 1 ELSE 0 END)"
    " FROM spans s WHERE s.trace_id = ANY(%s) GROUP BY s.trace_id"
    f" ON CONFLICT (trace_id) DO UPDATE SET {_updates(_TRACE_COLUMNS, 'trace_id')}"
)
# The next tick of the commit clock: the last statement of a transaction that writes events (see above).
_TICK: Final = (
    "UPDATE meta SET value = greatest(value::bigint + 1, %s)::text WHERE key = 'clock'"
    " RETURNING value::bigint"
)


def _text(value: Any) -> Any:
    """A value for a text column or argument: PostgreSQL's text cannot hold NUL (OTLP strings can), so NUL
    is stored and looked up as U+FFFD in the index columns (the record itself, in ``data``, keeps it)."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


def _texts(values: Sequence[Any]) -> list[Any]:
    return [_text(v) for v in values]


def _sql(text: str) -> str:
    """SQL written with SQLite's ``?`` placeholders (``query``'s fragments) in psycopg's ``%s``."""
    return text.replace("%", "%%").replace("?", "%s")


def trace_lock_key(trace_id: str) -> int:
    """The advisory lock key of a trace: a signed 64-bit number from its id."""
    return int.from_bytes(hashlib.blake2b(trace_id.encode(), digest_size=8).digest(), "big", signed=True)


def _stored(data: bytes | memoryview) -> str | bytes:
    """A record as ``codec.decode`` takes it: a JSON record (its first byte ``[``) as text, else bytes."""
    raw = bytes(data)
    return raw.decode("utf-8") if raw[:1] == b"[" else raw


def _as_bytes(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


def delta_payloads(origin: str, records: Sequence[LogRecord]) -> list[str]:
    """Notification payloads carrying ``records`` (each under the payload limit): records whose text
    is longer than a payload are cut into consecutive pieces (a client joins deltas in order)."""
    out: list[str] = []
    group: list[list[Any]] = []
    size = 0

    def flush() -> None:
        nonlocal group, size
        if group:
            out.append(json.dumps({"origin": origin, "records": group}, ensure_ascii=False))
        group, size = [], 0

    for record in records:
        body = record.body if isinstance(record.body, str) else json.dumps(record.body, ensure_ascii=False)
        head = [record.trace_id, record.span_id, record.time_ns, record.event_name, dict(record.attributes)]
        room = _PAYLOAD_BYTES - len(json.dumps(head, ensure_ascii=False).encode()) - 200
        pieces = [body]
        if len(body.encode()) > room:
            step = max(1, room // 6)  # at most 6 bytes per character once escaped in JSON
            pieces = [body[i : i + step] for i in range(0, len(body), step)] or [""]
        for piece in pieces:
            item = [*head, piece]
            length = len(json.dumps(item, ensure_ascii=False).encode())
            if size + length > _PAYLOAD_BYTES:
                flush()
            group.append(item)
            size += length + 1
    flush()
    return out


def commit_payload(rows: Sequence[Row]) -> str:
    """The payload of a commit notification: the traces (and conversations) it wrote, so each replica wakes
    only the streams they concern; empty (every stream wakes) when they do not fit a notification."""
    traces = sorted({r.trace_id for r in rows})
    conversations = sorted({r.conversation_id for r in rows if r.conversation_id is not None})
    text = json.dumps({"t": traces, "c": conversations}, ensure_ascii=False)
    return text if len(text.encode("utf-8", "surrogatepass")) <= _PAYLOAD_BYTES else ""


def commit_scope(payload: str) -> tuple[list[str] | None, list[str]]:
    """``(traces, conversations)`` of a commit notification (``None``: it says not which: all of them)."""
    try:
        doc = json.loads(payload) if payload else None
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("t"), list):
        return None, []
    conversations = doc.get("c")
    return [str(t) for t in doc["t"]], [str(c) for c in conversations] if isinstance(
        conversations, list
    ) else []


def _records(payload: str, own: str) -> list[LogRecord]:
    """The delta records of a notification, unless this process sent it (it relayed them already)."""
    message = json.loads(payload)
    if message.get("origin") == own:
        return []
    return [LogRecord(r[0], r[1], r[2], r[3], r[4], r[5]) for r in message.get("records", [])]


class QmarkConnection:
    """A psycopg connection taking SQL written for SQLite's ``?`` placeholders (one convention for SQL
    shared by both engines)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(_sql(sql), _texts(params))


class PostgresStore:
    """The store on one PostgreSQL database (see the module's documentation); thread-safe."""

    engine: Final = POSTGRES

    def __init__(self, url: str, *, pool_size: int = _POOL_SIZE) -> None:
        self.path = shown(url)
        self._url = url
        try:
            import psycopg
            import psycopg_pool
        except ImportError:
            raise StoreError(
                f"{self.path}: a PostgreSQL store needs the postgres extra (psycopg; in a checkout of"
                " toolspan: pip install '.[server,postgres]')"
            ) from None
        self._psycopg = psycopg
        self._errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        self._lost: tuple[type[BaseException], ...] = (psycopg.OperationalError,)
        # No connection to be had within the wait: the database is down, the request is a 503 at once.
        self._no_connection: tuple[type[BaseException], ...] = (psycopg_pool.PoolTimeout,)
        self._origin = uuid.uuid4().hex
        self._stop = threading.Event()
        self._listener: threading.Thread | None = None
        # One connection first: a database that cannot be reached is one line now, not the pool's retries.
        try:
            with psycopg.connect(url, connect_timeout=int(_CONNECT_TIMEOUT_S)):
                pass
        except psycopg.Error as e:
            raise StoreError(f"{self.path}: cannot connect ({_first_line(e)})") from None
        try:
            self._pool = psycopg_pool.ConnectionPool(
                url,
                min_size=1,
                max_size=max(1, pool_size),
                kwargs={"autocommit": True},
                open=False,
                name="toolspan",
                timeout=_WAIT_S,
            )
        except psycopg.Error as e:  # a malformed URL
            raise StoreError(f"{self.path}: {_first_line(e)}") from None
        try:
            self._pool.open(wait=True, timeout=_CONNECT_TIMEOUT_S)
            self._migrate()
        except (*self._errors, StoreError) as e:
            self._pool.close()
            if isinstance(e, StoreError):
                raise
            reason = self._why_not(e)
            raise StoreError(f"{self.path}: {reason}") from None

    def _why_not(self, e: BaseException) -> str:
        """Why the database cannot be used, in one line (the pool's timeout hides the connection error)."""
        try:
            with self._psycopg.connect(self._url, connect_timeout=int(_CONNECT_TIMEOUT_S)):
                pass
        except self._psycopg.Error as direct:
            return f"cannot connect ({_first_line(direct)})"
        return _first_line(e)

    def _migrate(self) -> None:
        """Apply the schema's pending migrations once, whichever replica gets there first."""
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            conn.execute(VERSIONS_DDL)
            found = conn.execute("SELECT part, version FROM schema_versions")
            applied = {str(r[0]): int(r[1]) for r in found}
            try:
                todo = pending(applied)
            except ValueError as e:
                raise StoreError(f"{self.path}: {e}") from None
            for part, version, text in todo:
                for statement in statements(text, POSTGRES):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_versions VALUES (%s, %s)"
                    " ON CONFLICT (part) DO UPDATE SET version = EXCLUDED.version",
                    (part.name, version),
                )
                _logger.info("toolspan serve: schema %s migrated to version %d", part.name, version)
            conn.execute("INSERT INTO meta VALUES ('clock', '0') ON CONFLICT (key) DO NOTHING")

    def close(self) -> None:
        """Stop watching and close the pool (a second call does nothing)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._listener is not None:
            self._listener.join(5)
        self._pool.close()

    # --- running statements ---

    def _run(self, work: Callable[[Any], T], *, write: bool = False) -> T:
        """``work(connection)`` (in a transaction when ``write``); tried once more on a fresh connection
        when the connection was lost (every write here is idempotent), else ``StoreUnavailable``."""
        for attempt in (1, 2):
            try:
                with self._pool.connection() as conn:
                    if not write:
                        return work(conn)
                    with conn.transaction():
                        return work(conn)
            except self._no_connection as e:
                raise StoreUnavailable(_first_line(e)) from None
            except self._lost as e:
                if attempt == 2:
                    raise StoreUnavailable(_first_line(e)) from None
                _logger.info("toolspan serve: lost the database connection (%s); trying again", e)
            except self._errors as e:
                raise StoreUnavailable(_first_line(e)) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._run(lambda conn: list(conn.execute(sql, args).fetchall()))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[QmarkConnection]:
        """A write transaction for another module's tables, taking SQL with ``?`` placeholders
        (``StoreApi.transaction``)."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield QmarkConnection(conn)
        except self._lost as e:  # the database down or the connection lost (constraint errors pass)
            raise StoreUnavailable(_first_line(e)) from None

    # --- change feed ---

    def watch(
        self,
        on_commit: Callable[..., None],
        on_deltas: Callable[[list[LogRecord]], None],
        on_control: Callable[[], None] | None = None,
    ) -> None:
        """Call ``on_commit`` after every commit of any replica, ``on_deltas`` with the text deltas other
        replicas relayed, and ``on_control`` after a decision or cancel request stored by any replica
        (``publish_control``), from a thread of its own (``LISTEN`` on a connection of its own)."""
        self._listener = threading.Thread(
            target=self._listen,
            args=(on_commit, on_deltas, on_control or (lambda: None)),
            name="toolspan-listen",
            daemon=True,
        )
        self._listener.start()

    def publish_control(self) -> None:
        """Tell every replica a decision or cancel request was stored (their long polls read it now)."""
        self._run(lambda conn: conn.execute("SELECT pg_notify(%s, '')", (CONTROL,)))

    def _listen(
        self,
        on_commit: Callable[..., None],
        on_deltas: Callable[[list[LogRecord]], None],
        on_control: Callable[[], None],
    ) -> None:
        backoff = 0.1
        while not self._stop.is_set():
            try:
                with self._psycopg.connect(self._url, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(f"LISTEN {COMMITS}")
                    conn.execute(f"LISTEN {DELTAS}")
                    conn.execute(f"LISTEN {CONTROL}")
                    backoff = 0.1
                    # Anything committed or decided while this connection was down is read now.
                    _wake(on_commit)
                    _wake(on_control)
                    while not self._stop.is_set():
                        # Each notification as it arrives (the timeout only looks at ``_stop`` again).
                        for note in conn.notifies(timeout=0.5):
                            if note.channel == DELTAS:
                                self._deliver(note.payload, on_deltas)
                            elif note.channel == CONTROL:
                                _wake(on_control)
                            else:
                                _wake(on_commit, *commit_scope(note.payload))
                            if self._stop.is_set():
                                break
            except self._psycopg.Error as e:
                if self._stop.is_set():
                    return
                _logger.warning("toolspan serve: lost the notification connection (%s); reconnecting", e)
                self._stop.wait(backoff)
                backoff = min(2.0, backoff * 2)

    def _deliver(self, payload: str, on_deltas: Callable[[list[LogRecord]], None]) -> None:
        try:
            records = _records(payload, self._origin)
        except (ValueError, TypeError, IndexError, AttributeError):
            _logger.warning("toolspan serve: ignored a text delta notification that is not toolspan's")
            return
        if records:
            try:
                on_deltas(records)
            except Exception:  # a relay failure must not end the listener
                _logger.exception("toolspan serve: relaying text deltas failed")

    def publish_deltas(self, records: Sequence[LogRecord]) -> None:
        """Send text deltas to the other replicas (this one relayed them itself)."""
        payloads = delta_payloads(self._origin, records)
        if payloads:
            self._run(
                lambda conn: conn.cursor().executemany(
                    "SELECT pg_notify(%s, %s)", [(DELTAS, p) for p in payloads]
                )
            )

    # --- writes ---

    def ingest(self, spans: Sequence[Span]) -> IngestResult:
        return self.ingest_rows([row_of_span(s) for s in spans])

    def ingest_rows(self, rows: Sequence[Row]) -> IngestResult:
        """Store span rows in one transaction (committed when this returns)."""
        batch = merge_batch(rows, IngestResult())

        def write(conn: Any) -> IngestResult:
            result = IngestResult(accepted=len(rows), duplicates=len(rows) - len(batch))
            self._put(conn, batch, result)
            return result

        return self._run(write, write=True)

    def _put(self, conn: Any, batch: dict[tuple[str, str], Row], result: IngestResult) -> None:
        if not batch:
            return
        keys = sorted({trace_lock_key(t) for t, _ in batch})
        conn.execute("SELECT pg_advisory_xact_lock(k) FROM unnest(%b::bigint[]) AS k", (keys,))
        traces = [t for t, _ in batch]
        spans = [s for _, s in batch]
        existing: Mapping[tuple[str, str], tuple[str | bytes, int | None]] = {
            (r[0], r[1]): (_stored(r[2]), r[3])
            for r in conn.execute(
                "SELECT s.trace_id, s.span_id, s.data, s.end_ns"
                " FROM unnest(%b::text[], %b::text[]) AS k(t, sp)"
                " JOIN spans s ON s.trace_id = k.t AND s.span_id = k.sp",
                (traces, spans),
            )
        }
        inserts, replaces, events = plan_rows(batch, existing, result)
        if not inserts and not replaces:
            return
        written = inserts + replaces
        columns = [_texts(c) for c in zip(*written, strict=True)]
        columns[_DATA] = [_as_bytes(d) for d in columns[_DATA]]
        conn.execute(_UPSERT_SPANS, columns)
        changed = {r.trace_id for r in replaces}
        wanted = sorted({r.trace_id for r in inserts} - changed)
        old_rows = {
            r[0]: r
            for r in conn.execute(f"SELECT {_TRACE_COLUMNS} FROM traces WHERE trace_id = ANY(%s)", (wanted,))
        }
        now = time.time_ns()
        rows, recompute = summary_rows(
            inserts, changed, old_rows, lambda old: now if old is None else max(now, int(old[7]) + 1)
        )
        if rows:
            conn.execute(_UPSERT_TRACES, [_texts(c) for c in zip(*rows, strict=True)])
        if recompute:
            conn.execute(_RECOMPUTE, (now, sorted(recompute)))
        conn.execute("SELECT pg_notify(%s, %s)", (COMMITS, commit_payload(written)))
        if events:
            # Last: the clock row stays locked until this transaction is visible (see the module doc).
            ns = conn.execute(_TICK, (now,)).fetchone()[0]
            conn.execute(
                "INSERT INTO events (ns, trace_id, span_id, phase)"
                " SELECT %s, * FROM unnest(%b::text[], %b::text[], %b::int[]) ON CONFLICT DO NOTHING",
                (ns, *[list(c) for c in zip(*events, strict=True)]),
            )

    def ingest_logs(self, records: Sequence[LogRecord]) -> IngestResult:
        """Store span-tied log records in one transaction; a record already stored is a duplicate."""
        rows = log_rows(records)

        def write(conn: Any) -> IngestResult:
            result = IngestResult(accepted=len(records))
            if not rows:
                return result
            columns = [list(c) for c in zip(*rows, strict=True)]
            cursor = conn.execute(
                "INSERT INTO logs (trace_id, span_id, digest, ns, data)"
                " SELECT t, s, d, %s, x FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[])"
                " AS r(t, s, d, x) ON CONFLICT DO NOTHING",
                (time.time_ns(), *columns),
            )
            result.duplicates = len(rows) - max(0, cursor.rowcount)
            traces = sorted({r[0] for r in rows})
            payload = json.dumps({"t": traces, "c": []})
            conn.execute(
                "SELECT pg_notify(%s, %s)", (COMMITS, payload if len(payload) <= _PAYLOAD_BYTES else "")
            )
            return result

        return self._run(write, write=True)

    def prune(self, *, max_age_ns: int | None, max_spans: int | None) -> int:
        """Drop whole traces as ``db.Store.prune`` does, once for the cluster: one replica at a time, and
        not again within a second of the last sweep of any replica."""
        return self._run(lambda conn: self._prune(conn, max_age_ns, max_spans), write=True)

    def _prune(self, conn: Any, max_age_ns: int | None, max_spans: int | None) -> int:
        if not conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (_PRUNE_LOCK,)).fetchone()[0]:
            return 0  # another replica is sweeping
        now = time.time_ns()
        last = conn.execute("SELECT value FROM meta WHERE key = 'pruned_at'").fetchone()
        if last is not None and now - int(last[0]) < _PRUNE_EVERY_NS:
            return 0
        conn.execute(
            "INSERT INTO meta VALUES ('pruned_at', %s)"
            " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (str(now),),
        )
        doomed = doomed_traces(QmarkConnection(conn).execute, now, max_age_ns, max_spans)
        if max_age_ns is not None:
            conn.execute(
                "DELETE FROM logs l WHERE l.ns < %s"
                " AND NOT EXISTS (SELECT 1 FROM traces t WHERE t.trace_id = l.trace_id)",
                (now - max_age_ns,),
            )
        if not doomed:
            return 0
        keys = sorted({trace_lock_key(t) for t in doomed})
        conn.execute("SELECT pg_advisory_xact_lock(k) FROM unnest(%b::bigint[]) AS k", (keys,))
        horizon = self._horizon(conn)
        top = conn.execute(
            "SELECT ns, trace_id, span_id, phase FROM events WHERE trace_id = ANY(%s)"
            " ORDER BY ns DESC, trace_id DESC, span_id DESC, phase DESC LIMIT 1",
            (doomed,),
        ).fetchone()
        if top is not None:
            horizon = max(horizon, Cursor(*top))
        for table in ("spans", "events", "traces", "logs"):
            conn.execute(f"DELETE FROM {table} WHERE trace_id = ANY(%s)", (doomed,))
        conn.execute(
            "INSERT INTO meta VALUES ('horizon', %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (str(horizon),),
        )
        return len(doomed)

    # --- reads ---

    def _spans(self, sql: str, args: Sequence[Any]) -> list[Span]:
        def read(conn: Any) -> tuple[list[Any], list[Any]]:
            rows = conn.execute(sql, args).fetchall()
            traces = sorted({r[1] for r in rows})
            logs = conn.execute(
                "SELECT data FROM logs WHERE trace_id = ANY(%s) ORDER BY seq", (traces,)
            ).fetchall()
            return rows, logs

        rows, logs = self._run(read)
        spans = [decode(_stored(r[0])) for r in rows]
        if not logs:
            return spans
        return attach_logs(spans, [_log_record(r[0]) for r in logs])[0]

    def trace_logs(self, trace_id: str) -> list[LogRecord]:
        rows = self._rows("SELECT data FROM logs WHERE trace_id = %s ORDER BY seq", (trace_id,))
        return [_log_record(r[0]) for r in rows]

    def trace_spans(self, trace_id: str) -> list[Span]:
        return self._spans("SELECT data, trace_id FROM spans WHERE trace_id = %s", (trace_id,))

    def pending_tool_spans(self, limit: int) -> list[Span]:
        """Tool spans not ended (as far as the store knows), oldest first: the calls that wait or run."""
        return self._spans(
            "SELECT data, trace_id FROM spans WHERE is_tool = 1 AND end_ns IS NULL"
            " ORDER BY start_ns, span_id LIMIT %s",
            (limit,),
        )

    def waiting_tool_spans(
        self, after: tuple[int, str, str], live_since_ns: int, seen_since_ns: int, limit: int
    ) -> list[Span]:
        """The waiting tool spans of the control channel's inbox (``db.Store.waiting_tool_spans``)."""
        return self._spans(_sql(WAITING_SQL), (*after, live_since_ns, seen_since_ns, limit))

    def span(self, trace_id: str | None, span_id: str) -> list[Span]:
        """The span ``span_id`` (of ``trace_id`` when given); a list of at most one span per trace."""
        if trace_id is None:
            return self._spans("SELECT data, trace_id FROM spans WHERE span_id = %s", (span_id,))
        return self._spans(
            "SELECT data, trace_id FROM spans WHERE trace_id = %s AND span_id = %s", (trace_id, span_id)
        )

    def spans_by_trace(self, trace_ids: Sequence[str]) -> dict[str, list[Span]]:
        """``trace_spans`` of each of ``trace_ids``, in one round trip (a stream page's traces)."""
        out: dict[str, list[Span]] = {trace_id: [] for trace_id in trace_ids}
        spans = self._spans("SELECT data, trace_id FROM spans WHERE trace_id = ANY(%s)", (list(trace_ids),))
        for span in spans:
            out.setdefault(span.trace_id, []).append(span)
        return out

    def conversation_spans(self, conversation_id: str) -> list[Span]:
        return self._spans(
            "SELECT data, trace_id FROM spans WHERE trace_id IN"
            " (SELECT trace_id FROM traces WHERE conversation_id = %s OR trace_id = %s)",
            (_text(conversation_id), _text(conversation_id)),
        )

    def trace_conversations(self, trace_ids: Sequence[str]) -> set[str]:
        """The conversation ids of the traces ``trace_ids`` (those that have one)."""
        rows = self._rows(
            "SELECT conversation_id FROM traces WHERE trace_id = ANY(%s) AND conversation_id IS NOT NULL",
            (list(trace_ids),),
        )
        return {str(r[0]) for r in rows}

    def trace_row(self, trace_id: str) -> TraceRow | None:
        rows = self._rows(f"SELECT {_TRACE_COLUMNS} FROM traces WHERE trace_id = %s", (_text(trace_id),))
        return _trace_row(rows[0]) if rows else None

    def list_traces(self, where: str, args: Sequence[Any], limit: int) -> list[TraceRow]:
        """Trace rows matching ``where`` (fixed fragments with ``?`` placeholders), newest first."""
        sql = (
            f"SELECT {_TRACE_COLUMNS} FROM traces WHERE {_sql(where)}"
            " ORDER BY start_ns DESC, trace_id DESC LIMIT %s"
        )
        return [_trace_row(r) for r in self._rows(sql, (*_texts(args), limit))]

    def listing_details(self, trace_ids: Sequence[str]) -> tuple[dict[str, dict[str, int]], list[Span]]:
        ids = list(trace_ids)
        counted = self._rows(
            TOOL_STATE_COUNTS_SQL.format(from_where="FROM spans s WHERE s.trace_id = ANY(%s)"), (ids,)
        )
        naming = self._spans(
            f"SELECT data, trace_id FROM spans s WHERE trace_id = ANY(%s) AND {NAMING_SPANS_SQL}", (ids,)
        )
        return tool_state_counts(counted), naming

    def clock(self) -> int:
        """The commit clock's last visible tick: a cursor at the live tail."""
        rows = self._rows("SELECT value::bigint FROM meta WHERE key = 'clock'")
        return int(rows[0][0]) if rows else 0

    @staticmethod
    def _horizon(conn: Any) -> Cursor:
        row = conn.execute("SELECT value FROM meta WHERE key = 'horizon'").fetchone()
        return (None if row is None else Cursor.parse(str(row[0]))) or Cursor(0)

    def horizon(self) -> Cursor:
        return self._run(self._horizon)

    def events_after(
        self, cursor: Cursor, *, trace_id: str | None, conversation_id: str | None, limit: int
    ) -> list[tuple[Cursor, int, Span]]:
        """Events after ``cursor`` in cursor order: ``(cursor, phase, span)``."""
        sql = (
            "SELECT e.ns, e.trace_id, e.span_id, e.phase, s.data FROM events e"
            " JOIN spans s ON s.trace_id = e.trace_id AND s.span_id = e.span_id"
            " WHERE e.ns >= %s AND (e.ns, e.trace_id, e.span_id, e.phase) > (%s, %s, %s, %s)"
        )
        args: list[Any] = [cursor.ns, cursor.ns, cursor.trace_id, cursor.span_id, cursor.phase]
        if trace_id is not None:
            sql += " AND e.trace_id = %s"
            args.append(trace_id)
        if conversation_id is not None:
            sql += (
                " AND e.trace_id IN (SELECT trace_id FROM traces WHERE conversation_id = %s OR trace_id = %s)"
            )
            args += [_text(conversation_id), _text(conversation_id)]
        sql += " ORDER BY e.ns, e.trace_id, e.span_id, e.phase LIMIT %s"
        args.append(limit)

        def read(conn: Any) -> tuple[list[Any], list[Any]]:
            rows = conn.execute(sql, args).fetchall()
            pairs = sorted({(r[1], r[2]) for r in rows})
            logs = []
            if pairs:
                logs = conn.execute(
                    "SELECT l.data FROM unnest(%b::text[], %b::text[]) AS k(t, sp)"
                    " JOIN logs l ON l.trace_id = k.t AND l.span_id = k.sp ORDER BY l.seq",
                    ([p[0] for p in pairs], [p[1] for p in pairs]),
                ).fetchall()
            return rows, logs

        rows, logs = self._run(read)
        decoded: dict[tuple[str, str], Span] = {}
        spans = []
        for r in rows:
            span = decoded.get((r[1], r[2]))
            if span is None:
                span = decoded[r[1], r[2]] = decode(_stored(r[4]))
            spans.append(span)
        if logs:
            spans = attach_logs(spans, [_log_record(r[0]) for r in logs])[0]
        return [(Cursor(r[0], r[1], r[2], r[3]), r[3], span) for r, span in zip(rows, spans, strict=True)]

    def counts(self) -> dict[str, int]:
        def read(conn: Any) -> dict[str, int]:
            spans = conn.execute("SELECT count(*) FROM spans").fetchone()[0]
            traces = conn.execute("SELECT count(*) FROM traces").fetchone()[0]
            return {"spans": int(spans), "traces": int(traces)}

        return self._run(read)

    def log_count(self) -> int:
        return int(self._rows("SELECT count(*) FROM logs")[0][0])


def _wake(on_commit: Callable[..., None], *args: Any) -> None:
    try:
        on_commit(*args)
    except Exception:  # (the server shutting down): the listener goes on until it is stopped
        _logger.debug("toolspan serve: could not wake the streams", exc_info=True)


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]
