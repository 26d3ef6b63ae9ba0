"""The store on PostgreSQL (``toolspan serve --db postgresql://...``, the ``postgres`` extra): many replicas
share one database, one event log and one stream.

The tables and the statements are those of SQLite (``schema`` and ``sql``, written once; migrated at start
under a transaction-level advisory lock, so replicas starting together apply each migration once). What
differs is how concurrent writers stay correct:

- **Ingest.** One transaction per request, committed before the server answers (a 2xx still means
  durable). It first takes a transaction-level advisory lock per trace it writes (in key order, so two
  requests never deadlock): the read of the stored records, the merge of a pending record with its
  ended record (``writes.plan_rows``, as on SQLite) and the read-modify-write of the trace's summary row
  are serialized per trace across every replica. A resend to another replica finds the stored record
  and is a duplicate: stored once. The new rows go in by ``COPY`` (``dialect``), in a savepoint: what it
  cannot take goes in by ``INSERT ... ON CONFLICT``.
- **The commit clock.** An event's cursor is ``(ns, trace id, span id, phase)``, and a stream reads every
  event after its cursor. Concurrent transactions commit in any order, so a clock taken at the start of a
  transaction could be seen committed out of order (``ns = 5`` before ``ns = 4``), and a reader past 5
  would never see 4. Here the clock is a row (``meta.clock``) updated as the *last* statement of a
  transaction that writes events: the row lock it takes is held until that transaction has committed, so
  the next writer gets the next tick only after this one is visible. Ticks are therefore visible in
  order: a reader that sees tick ``n`` sees every tick before it, on every replica. A cursor issued by
  any replica resumes on any other exactly once, with no gap. (Only transactions with tool events take
  the clock; the wait is the commit itself.)
- **Wake-ups** go through ``LISTEN``/``NOTIFY`` (``changes.PostgresChanges``): each write says what it wrote
  at commit.
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
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final, TypeVar

from toolspan.server._rows.errors import StoreError, StoreUnavailable
from toolspan.server._store import sql
from toolspan.server._store.api import shown
from toolspan.server._store.changes import COMMITS, PostgresChanges, commit_payload
from toolspan.server._store.control import ControlRows
from toolspan.server._store.decoded import DecodedSpans
from toolspan.server._store.dialect import DIALECTS, POSTGRES, Connection
from toolspan.server._store.schema import migrate
from toolspan.server._store.sql import engines
from toolspan.server._store.sql.tables import MetaRow
from toolspan.server._store.storage import Storage
from toolspan.server._store.tx import Tx

__all__ = ["PostgresStore", "trace_lock_key"]

_logger = logging.getLogger(__name__)
T = TypeVar("T")

# Advisory lock keys of the schema migration and of the retention sweep (traces use their own keys).
_SCHEMA_LOCK: Final = 0x746F6F6C7370616E  # "toolspan"
_PRUNE_LOCK: Final = _SCHEMA_LOCK + 1
_POOL_SIZE: Final = 8
_CONNECT_TIMEOUT_S: Final = 10.0
_WAIT_S: Final = 3.0  # a request waits this long for a connection (the database down: then a 503)
_PRUNE_EVERY_S: Final = 1.0  # the cluster sweeps at most this often, whichever replica asks


def trace_lock_key(trace_id: str) -> int:
    """The advisory lock key of a trace: a signed 64-bit number from its id."""
    return int.from_bytes(hashlib.blake2b(trace_id.encode(), digest_size=8).digest(), "big", signed=True)


class _Tx(Tx):
    """A write transaction on PostgreSQL: per-trace advisory locks, the clock row, ``NOTIFY`` at commit."""

    def tick(self) -> int:
        return int(self.conn.execute(engines.TICK, (self.ns,)).fetchone()[0])

    def lock_traces(self, trace_ids: Iterable[str]) -> None:
        self.conn.raw.execute(engines.LOCK_TRACES, (sorted({trace_lock_key(t) for t in trace_ids}),))

    def committed(self, traces: Iterable[str], conversations: Iterable[str]) -> None:
        self.conn.execute(engines.NOTIFY, (COMMITS, commit_payload(traces, conversations)))


class PostgresStore(Storage):
    """The store on one PostgreSQL database (see the module's documentation); thread-safe."""

    dialect = DIALECTS[POSTGRES]

    def __init__(
        self, url: str, *, pool_size: int = _POOL_SIZE, prune_every_s: float = _PRUNE_EVERY_S
    ) -> None:
        self.path = shown(url)
        self._prune_every_ns = int(prune_every_s * 1e9)
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
        self.changes = PostgresChanges(url, psycopg, self._notify)
        self.control = ControlRows(self.transaction)
        self.decoded = DecodedSpans()
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
            raise StoreError(f"{self.path}: {self._why_not(e)}") from None

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
        with self._pool.connection() as raw, raw.transaction():
            conn = Connection(raw, self.dialect)
            conn.execute(engines.LOCK, (_SCHEMA_LOCK,))
            try:
                migrate(conn, self.path)
            except ValueError as e:
                raise StoreError(f"{self.path}: {e}") from None
            conn.execute(engines.CLOCK_ROW)

    def close(self) -> None:
        """Stop watching and close the pool (a second call does nothing)."""
        if self._pool.closed:
            return
        self.changes.close()
        self._pool.close()

    # --- running statements ---------------------------------------------------------------------------

    def _run(self, work: Callable[[Connection], T], *, write: bool = False) -> T:
        """``work(connection)`` (in a transaction when ``write``); tried once more on a fresh connection
        when the connection was lost (every write here is idempotent), else ``StoreUnavailable``."""
        for attempt in (1, 2):
            try:
                with self._pool.connection() as raw:
                    if not write:
                        return work(Connection(raw, self.dialect))
                    with raw.transaction():
                        return work(Connection(raw, self.dialect))
            except self._no_connection as e:
                raise StoreUnavailable(_first_line(e)) from None
            except self._lost as e:
                if attempt == 2:
                    raise StoreUnavailable(_first_line(e)) from None
                _logger.info("toolspan serve: lost the database connection (%s); trying again", e)
            except self._errors as e:
                raise StoreUnavailable(_first_line(e)) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _read(self, work: Callable[[Connection], T]) -> T:
        return self._run(work)

    def _write(self, work: Callable[[Tx], T]) -> T:
        return self._run(lambda conn: work(_Tx(conn, time.time_ns())), write=True)

    def _sweep(self, work: Callable[[Connection, int], int]) -> int:
        """``work`` once for the cluster: one replica at a time, and not again within ``prune_every_s`` (a
        second) of the last sweep of any replica."""

        def sweep(conn: Connection) -> int:
            if not conn.execute(engines.TRY_LOCK, (_PRUNE_LOCK,)).fetchone()[0]:
                return 0  # another replica is sweeping
            now = time.time_ns()
            last = conn.execute(engines.PRUNED_AT).fetchone()
            if last is not None and now - int(last[0]) < self._prune_every_ns:
                return 0
            conn.execute(sql.META_PUT, MetaRow("pruned_at", str(now)))
            return work(conn, now)

        return self._run(sweep, write=True)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A write transaction for another module's tables (``StoreApi.transaction``)."""
        try:
            with self._pool.connection() as raw, raw.transaction():
                yield Connection(raw, self.dialect)
        except self._lost as e:  # the database down or the connection lost (constraint errors pass)
            raise StoreUnavailable(_first_line(e)) from None

    def _notify(self, channel: str, payloads: Sequence[str]) -> None:
        """``NOTIFY`` each payload on ``channel`` (``changes``)."""
        self._run(
            lambda conn: conn.raw.cursor().executemany(engines.NOTIFY_RAW, [(channel, p) for p in payloads])
        )

    def clock(self) -> int:
        """The commit clock's last visible tick: a cursor at the live tail."""
        rows = self._rows(engines.CLOCK_TICK)
        return int(rows[0][0]) if rows else 0


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]
