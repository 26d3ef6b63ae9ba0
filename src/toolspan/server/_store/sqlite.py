"""The server's embedded store: one SQLite file in WAL mode (``SqliteStore``), ``storage``'s storage on it.

What is SQLite's own: one connection and one lock (SQLite has one writer), so a write transaction
(``BEGIN IMMEDIATE``) takes the next tick of the commit clock, kept in memory and stored with the data; the
file checked when it opens (``StoreError`` otherwise: not a directory, an SQLite database, ``PRAGMA
quick_check`` clean, so zeroed or truncated pages are found here, not by every later request, and a write
goes through, so a read-only file is refused here, not at each ingest); and checkpoints run in the
background on a connection of their own, so a commit only appends to the WAL (``synchronous=NORMAL``) and
returns once SQLite has the transaction there: an acknowledged export survives the server being killed.
A scan of every row (``_scan``: the counts ``/healthz`` shows) runs on a connection of its own too, in a
read transaction of WAL's, so it never holds up a write (at 2,000,000 spans a count takes 61 ms).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from typing import Final, TypeVar, cast

from toolspan.server._rows.errors import StoreError
from toolspan.server._store import sql
from toolspan.server._store.changes import LocalChanges
from toolspan.server._store.control import ControlRows
from toolspan.server._store.decoded import DecodedSpans
from toolspan.server._store.dialect import DIALECTS, SQLITE, Connection
from toolspan.server._store.schema import migrate
from toolspan.server._store.sql import engines
from toolspan.server._store.sql.tables import MetaRow
from toolspan.server._store.storage import Storage
from toolspan.server._store.tx import Tx

__all__ = ["SqliteStore"]

_logger = logging.getLogger(__name__)
_CHECKPOINT_S: Final = 1.0
T = TypeVar("T")

# ``sqlite3`` binds an ``int``, ``float``, ``str`` or ``bytearray`` as it is, and looks any other value up as
# one to adapt: two attribute look-ups that fail, for each ``None`` and ``bytes`` of every row (about 8% of
# the instructions storing a span takes). Registered, each is found at once and bound as itself (``bytes``
# of a ``bytes`` is the same object, ``{}.get`` of ``None`` is ``None``): nothing bound changes.
sqlite3.register_adapter(bytes, bytes)
sqlite3.register_adapter(type(None), cast("Callable[[None], None]", {}.get))


class SqliteStore(Storage):
    """Thread-safe access to one SQLite database (one connection, one lock: SQLite has one writer)."""

    dialect = DIALECTS[SQLITE]

    def __init__(self, path: str) -> None:
        self.path = path
        self.changes = LocalChanges()
        self.control = ControlRows(self.transaction)
        self.decoded = DecodedSpans()
        self._lock = threading.Lock()
        self._scanner: Connection | None = None  # ``_scan``'s connection, opened at its first scan
        self._scan_lock = threading.Lock()
        if os.path.isdir(path):
            raise StoreError(f"{path}: is a directory, not a database file")
        try:
            raw = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as e:
            raise StoreError(
                f"{path}: cannot open ({e}): does its directory exist, and may it be written?"
            ) from None
        self._db = Connection(raw, self.dialect)
        try:
            self._clock = self._open()
        except (sqlite3.Error, StoreError) as e:
            raw.close()
            reason = str(e) if isinstance(e, StoreError) else f"{path}: {_reason(e)}"
            raise StoreError(reason) from None
        self._stop = threading.Event()
        self._checkpointer = threading.Thread(
            target=self._checkpoints, name="toolspan-checkpoint", daemon=True
        )
        self._checkpointer.start()

    def _open(self) -> int:
        """Set the connection up, check the file and migrate the schema; returns the commit clock."""
        db = self._db
        for pragma in engines.PRAGMAS:
            db.execute(pragma)
        # (One line each: SQLite's report of a damaged page spans several.)
        problems = [" ".join(str(r[0]).split()) for r in db.execute(engines.INTEGRITY).fetchall()]
        if problems != ["ok"]:
            raise StoreError(f"{self.path}: the database is damaged ({'; '.join(problems)})")
        with self._transaction():
            try:
                migrate(db, self.path)
            except ValueError as e:
                raise StoreError(f"{self.path}: {e}") from None
        row = db.execute(engines.MAX_EVENT_NS).fetchone()
        stored = db.execute(engines.CLOCK).fetchone()
        clock = max(row[0] or 0, 0 if stored is None else int(stored[0]))
        with self._transaction():  # a read-only file fails here, before the server answers anything
            db.execute(sql.META_PUT, MetaRow("clock", clock))
        return int(clock)

    def _checkpoints(self) -> None:
        db = sqlite3.connect(self.path, isolation_level=None)
        try:
            while not self._stop.wait(_CHECKPOINT_S):
                try:
                    db.execute(engines.WAL_CHECKPOINT).fetchall()
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
        with self._scan_lock:
            if self._scanner is not None:
                self._scanner.raw.close()
                self._scanner = None
        with self._lock:
            self._db.execute(engines.WAL_TRUNCATE)
            self._db.raw.close()

    # --- transactions ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """One write transaction, committed at the end of the block and rolled back on any error (the
        caller holds the lock)."""
        db = self._db
        db.execute(engines.BEGIN)
        try:
            yield db
            db.execute(engines.COMMIT)
        except BaseException:
            # SQLite may have rolled back already (a full disk, an I/O error): a second ROLLBACK would
            # fail and hide the error that matters.
            if db.raw.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute(engines.ROLLBACK)
            raise

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A write transaction for another module's tables (``StoreApi.transaction``)."""
        with self._lock, self._transaction() as db:
            yield db

    def _read(self, work: Callable[[Connection], T]) -> T:
        with self._lock:
            return work(self._db)

    def _scan(self, work: Callable[[Connection], T]) -> T:
        """``work`` on the scans' own connection, in one read transaction (a snapshot of the WAL): the
        writer's lock is not taken."""
        with self._scan_lock:
            if self._stop.is_set():
                raise StoreError(f"{self.path}: the store is closed")
            if self._scanner is None:
                raw = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
                raw.execute("PRAGMA query_only=1")
                raw.execute("PRAGMA busy_timeout=5000")  # (as the writer's: a reader may wait out a recovery)
                self._scanner = Connection(raw, self.dialect)
            db = self._scanner
            db.execute("BEGIN")
            try:
                found = work(db)
            except BaseException:
                with contextlib.suppress(sqlite3.Error):  # (the error that matters is work's)
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return found

    def _write(self, work: Callable[[Tx], T]) -> T:
        """``work`` in a write transaction at the next tick of the commit clock, which it stores with the
        data."""
        with self._lock, self._transaction() as db:
            self._clock = max(time.time_ns(), self._clock + 1)
            done = work(Tx(db, self._clock))
            db.execute(sql.META_PUT, MetaRow("clock", self._clock))
            return done

    def _sweep(self, work: Callable[[Connection, int], int]) -> int:
        with self._lock, self._transaction() as db:
            return work(db, time.time_ns())

    def clock(self) -> int:
        """The commit clock now: a cursor at the live tail."""
        with self._lock:
            return self._clock


def _reason(e: sqlite3.Error) -> str:
    text = str(e)
    if "readonly" in text:
        return f"the database is read-only ({text}): toolspan serve needs to write its store"
    if "not a database" in text or "malformed" in text:
        return f"the database is damaged or not an SQLite file ({text})"
    return text
