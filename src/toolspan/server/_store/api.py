"""What the HTTP and stream layers use of a store, whichever engine holds it (``StoreApi``), and the
error a store raises when its database cannot answer now (``StoreUnavailable``: a retryable 503).

``open_store`` picks the engine from ``--db``: a ``postgresql://`` (or ``postgres://``) URL opens the
PostgreSQL store (``toolspan[postgres]``), anything else is an SQLite file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from toolspan.bridge.model import Span
from toolspan.bridge.readers import LogRecord
from toolspan.server._ingest.records import Row
from toolspan.server._store.db import Store, TraceRow
from toolspan.server._store.writes import IngestResult
from toolspan.server._streams.cursor import Cursor

__all__ = ["StoreApi", "StoreUnavailable", "is_postgres_url", "open_store", "shown"]


class StoreUnavailable(Exception):
    """The database cannot answer now (a restart, a lost connection): the request may be retried."""


def is_postgres_url(db: str) -> bool:
    return db.startswith(("postgresql://", "postgres://"))


def shown(db: str) -> str:
    """``db`` as the banner and the logs show it: a URL's password replaced by ``***``."""
    if not is_postgres_url(db):
        return db
    scheme, _, rest = db.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not at or ":" not in userinfo:
        return db
    return f"{scheme}://{userinfo.split(':', 1)[0]}:***@{host}"


class StoreApi(Protocol):
    """The one store API (``db.Store`` on SQLite, ``postgres.PostgresStore`` on PostgreSQL)."""

    @property
    def engine(self) -> str: ...
    @property
    def path(self) -> str: ...

    def close(self) -> None: ...
    def ingest(self, spans: Sequence[Span]) -> IngestResult: ...
    def ingest_rows(self, rows: Sequence[Row]) -> IngestResult: ...
    def ingest_logs(self, records: Sequence[LogRecord]) -> IngestResult: ...
    def prune(self, *, max_age_ns: int | None, max_spans: int | None) -> int: ...
    def trace_logs(self, trace_id: str) -> list[LogRecord]: ...
    def trace_spans(self, trace_id: str) -> list[Span]: ...
    def pending_tool_spans(self, limit: int) -> list[Span]: ...
    def waiting_tool_spans(
        self, after: tuple[int, str, str], live_since_ns: int, seen_since_ns: int, limit: int
    ) -> list[Span]: ...
    def span(self, trace_id: str | None, span_id: str) -> list[Span]: ...
    def spans_by_trace(self, trace_ids: Sequence[str]) -> dict[str, list[Span]]: ...
    def conversation_spans(self, conversation_id: str) -> list[Span]: ...
    def trace_conversations(self, trace_ids: Sequence[str]) -> set[str]: ...
    def trace_row(self, trace_id: str) -> TraceRow | None: ...
    def list_traces(self, where: str, args: Sequence[Any], limit: int) -> list[TraceRow]: ...
    def listing_details(self, trace_ids: Sequence[str]) -> tuple[dict[str, dict[str, int]], list[Span]]: ...
    def clock(self) -> int: ...
    def horizon(self) -> Cursor: ...
    def events_after(
        self, cursor: Cursor, *, trace_id: str | None, conversation_id: str | None, limit: int
    ) -> list[tuple[Cursor, int, Span]]: ...
    def counts(self) -> dict[str, int]: ...
    def log_count(self) -> int: ...
    def watch(
        self,
        on_commit: Callable[..., None],
        on_deltas: Callable[[list[LogRecord]], None],
        on_control: Callable[[], None] | None = None,
    ) -> None: ...
    def publish_deltas(self, records: Sequence[LogRecord]) -> None: ...
    def publish_control(self) -> None: ...
    def transaction(self) -> AbstractContextManager[Any]:
        """A write transaction for another module's tables (their part of ``schema.PARTS``): a connection
        whose ``execute(sql, params)`` takes SQL with ``?`` placeholders on either engine and returns a
        cursor (``fetchone``, ``fetchall``, ``rowcount``); committed when the block ends, rolled back on
        an error."""
        ...


def open_store(db: str) -> StoreApi:
    """The store ``db`` names (``StoreError`` when it cannot serve)."""
    if is_postgres_url(db):
        from toolspan.server._store.postgres import PostgresStore

        return PostgresStore(db)
    return Store(db)
