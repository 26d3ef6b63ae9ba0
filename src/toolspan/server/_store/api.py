"""What the layers above use of a store, whichever engine holds it: its storage (``StoreApi``), its change
feed (``ChangeFeed``: how the replicas sharing a store tell each other of commits, text deltas and
decisions), and its control rows (``control.ControlRows``); and how a store's address is shown."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from toolspan.bridge.model import Span
from toolspan.bridge.readers import LogRecord
from toolspan.server._rows.cursor import Cursor
from toolspan.server._rows.spans import IngestResult, Row
from toolspan.server._rows.traces import TraceRow
from toolspan.server._store.control import ControlRows
from toolspan.server._store.dialect import Connection

__all__ = ["ChangeFeed", "StoreApi", "is_postgres_url", "shown"]


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


class ChangeFeed(Protocol):
    """What a store tells the replicas sharing it, and hears from them (nothing on a store of one process)."""

    def watch(
        self,
        on_commit: Callable[..., None],
        on_deltas: Callable[[list[LogRecord]], None],
        on_control: Callable[[], None] | None = None,
    ) -> None:
        """Call ``on_commit(traces or None, conversations)`` after another replica's commit, ``on_deltas``
        with the text deltas it relayed, ``on_control`` after it stored a decision or a cancel request."""

    def publish_deltas(self, records: Sequence[LogRecord]) -> None:
        """Send text deltas to the other replicas (this one relayed them itself)."""

    def publish_control(self) -> None:
        """Tell the other replicas a decision or cancel request was stored."""

    def close(self) -> None: ...


class StoreApi(Protocol):
    """The one store API (``sqlite.Store`` on SQLite, ``postgres.PostgresStore`` on PostgreSQL)."""

    @property
    def engine(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def changes(self) -> ChangeFeed: ...
    @property
    def control(self) -> ControlRows: ...

    def close(self) -> None: ...
    def ingest(self, spans: Sequence[Span]) -> IngestResult: ...
    def ingest_rows(self, rows: Sequence[Row]) -> IngestResult: ...
    def ingest_logs(self, records: Sequence[LogRecord]) -> IngestResult: ...
    def prune(self, *, max_age_ns: int | None, max_spans: int | None) -> int: ...
    def trace_logs(self, trace_id: str) -> list[LogRecord]: ...
    def trace_spans(self, trace_id: str) -> list[Span]: ...
    def trace_version(self, trace_id: str) -> tuple[int, ...] | None: ...
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
    def transaction(self) -> AbstractContextManager[Connection]:
        """A write transaction for another module's tables (their part of ``schema.PARTS``): a connection
        whose ``execute(sql, params)`` takes the statements of ``dialect`` (``?`` placeholders) on either
        engine and returns a cursor (``fetchone``, ``fetchall``, ``rowcount``); committed when the block
        ends, rolled back on an error."""
        ...
