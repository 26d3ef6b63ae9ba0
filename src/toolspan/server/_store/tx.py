"""One write transaction of a store, as the write path sees it on either engine: its connection, its time, and
the three things the engines do differently around a write (``Tx``).

- ``ns``: the transaction's time, what the trace summaries' ``last_seen_ns`` move to;
- ``tick()``: the commit clock of the events it writes (SQLite: ``ns``, the clock ticked when the transaction
  began under the store's one writer lock; PostgreSQL: the clock row, updated as the transaction's last
  statement, see ``postgres``);
- ``lock_traces``: serialize writers of the same traces (SQLite: nothing, it has one writer; PostgreSQL:
  advisory locks) and ``committed``: tell the other replicas what was written (PostgreSQL's ``NOTIFY``).
"""

from __future__ import annotations

from collections.abc import Iterable

from toolspan.server._store.dialect import Connection

__all__ = ["Tx"]


class Tx:
    """A write transaction on ``conn`` at time ``ns`` (SQLite's; PostgreSQL's overrides what differs)."""

    def __init__(self, conn: Connection, ns: int) -> None:
        self.conn = conn
        self.dialect = conn.dialect
        self.ns = ns

    def tick(self) -> int:
        """The commit clock of the events written now."""
        return self.ns

    def lock_traces(self, trace_ids: Iterable[str]) -> None:
        """Hold the traces ``trace_ids`` until the transaction ends (nothing on a store of one writer)."""

    def committed(self, traces: Iterable[str], conversations: Iterable[str]) -> None:
        """Say at commit that ``traces`` (of ``conversations``) were written (nothing on a store of one
        process: it wakes its own streams)."""
