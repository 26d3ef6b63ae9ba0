"""The control channel's tables: decisions on tool calls that wait for an approval, requests to cancel
running calls, and when each waiting call's application last asked for its decision, made through
``toolspan serve`` (``_http.routes.control``).

- ``control_decisions``: one row per waiting tool span (its trace id and span id): the first decision wins (an
  insert that meets its primary key does nothing, and the row that stands is read back). A row names the
  exact call: its execution id, the model's call id, the tool, the digest of the arguments the decider was
  shown (``shown``), who decided (the decider token's name), the note, the edited arguments (JSON text), when
  the call began waiting (as the server could verify it) and when it was decided (ns since the epoch).
- ``control_cancels``: one row per running tool span: who asked, the note and when.
- ``control_polls``: per waiting tool span, until when its application is known to be asking for the
  decision (a long poll holds it; ``until_ns`` is the end of the last one, plus a grace for the next): a
  call whose application stopped asking (it died) ages out of the inbox, and only a call whose application
  stopped asking can hand its decision to the same call re-issued after a restart.

Rows older than ``--retention`` are dropped with the traces (``prune``). Each function takes a connection of
the store's (``dialect.Connection``: one transaction of ``StoreApi.transaction``, on either engine); a
store's ``ControlRows`` (``store.control``) runs each in a transaction of its own. The tables are declared
in ``sql.tables`` (their rows in ``_rows.control``), their statements are ``sql.control`` (written once for
both engines, ``dialect``), and they are the ``control`` part of the store's versioned schema
(``schema.CONTROL``). Version 2
replaced version 1's decisions keyed by the model's call id (a decision then named no exact call): decisions
stored under version 1 are dropped by the migration, so the calls waiting then are decided again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from toolspan.server._rows.control import CancelRow, DecisionRow, PollRow
from toolspan.server._store.dialect import Connection
from toolspan.server._store.sql import control as sql

__all__ = [
    "CancelRow",
    "ControlRows",
    "DecisionRow",
    "Transactional",
    "cancels_for",
    "decision_for",
    "decisions_for_spans",
    "decisions_of_call",
    "insert_cancel",
    "insert_decision",
    "poll_until",
    "polled",
    "prune",
    "received_ns",
    "received_ns_of",
    "run",
    "span_state",
]

T = TypeVar("T")
P = ParamSpec("P")


class Transactional(Protocol):
    """A store, as far as its control rows go: one write transaction at a time."""

    def transaction(self) -> AbstractContextManager[Connection]: ...


def run(
    store: Transactional, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """``fn(connection, *args)`` in one transaction of ``store`` (``StoreApi.transaction``): two deciders
    racing are serialized, and the first decision stands."""
    with store.transaction() as conn:
        return fn(conn, *args, **kwargs)


def decision_for(db: Connection, key: tuple[str | None, str]) -> list[DecisionRow]:
    """The decisions stored for the tool span ``(trace_id, span_id)`` (``trace_id`` ``None``: that span id in
    any trace)."""
    trace_id, span_id = key
    if trace_id is None:
        rows = db.execute(sql.DECISIONS_OF_SPAN_ID, (span_id,)).fetchall()
    else:
        rows = db.execute(sql.DECISION_OF_SPAN, (trace_id, span_id)).fetchall()
    return [DecisionRow(*r) for r in rows]


def decisions_for_spans(
    db: Connection, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], DecisionRow]:
    """The decision stored for each of the tool spans ``keys`` (``(trace_id, span_id)``) that has one."""
    if not keys:
        return {}
    rows = db.execute(sql.DECISIONS_OF_SPANS, ([t + s for t, s in keys],)).fetchall()
    return {(r[0], r[1]): DecisionRow(*r) for r in rows}


def decisions_of_call(db: Connection, call_id: str, limit: int = 20) -> list[DecisionRow]:
    """The decisions made on spans of the model's call id ``call_id``, newest first."""
    rows = db.execute(sql.DECISIONS_OF_CALL, (call_id, limit)).fetchall()
    return [DecisionRow(*r) for r in rows]


def insert_decision(db: Connection, row: DecisionRow) -> DecisionRow:
    """Store ``row`` unless a decision on its span is stored already; returns the decision that stands.

    One statement decides: on PostgreSQL two deciders' transactions run at once, so a read before the insert
    would not see a row the other is inserting; ``ON CONFLICT DO NOTHING`` waits for it instead, and the
    read after it sees the winner (the same on SQLite, whose write transactions take turns)."""
    values = dataclasses.astuple(row)
    return _first(
        db,
        sql.INSERT_DECISION,
        values,
        row,
        lambda: next(iter(decision_for(db, (row.trace_id, row.span_id))), None),
    )


def insert_cancel(db: Connection, row: CancelRow) -> CancelRow:
    """Store the cancel request ``row`` unless one for its span is stored; returns the one that stands (one
    statement decides, as in ``insert_decision``)."""
    values = dataclasses.astuple(row)
    return _first(
        db,
        sql.INSERT_CANCEL,
        values,
        row,
        lambda: next(iter(_cancel_of(db, row.trace_id, row.span_id)), None),
    )


def _cancel_of(db: Connection, trace_id: str, span_id: str) -> list[CancelRow]:
    rows = db.execute(sql.CANCEL_OF_SPAN, (trace_id, span_id)).fetchall()
    return [CancelRow(*r) for r in rows]


def _first(db: Connection, insert: str, values: tuple[Any, ...], row: T, stored: Callable[[], T | None]) -> T:
    """``row`` when the insert ``sql`` stored it, else the row that kept it out (committed: the insert
    waited for it). Should that row be pruned between the two statements, the insert is tried again."""
    while True:
        if db.execute(insert, values).rowcount == 1:
            return row
        known = stored()
        if known is not None:
            return known


def cancels_for(db: Connection, span_ids: Sequence[str]) -> list[CancelRow]:
    """The cancel requests stored for any of the tool spans ``span_ids`` (in any trace: the caller checks
    the trace)."""
    if not span_ids:
        return []
    rows = db.execute(sql.CANCELS_OF_SPANS, (list(span_ids),)).fetchall()
    return [CancelRow(*r) for r in rows]


def polled(db: Connection, trace_id: str, span_id: str, until_ns: int) -> None:
    """The application of the tool span asks for its decision until ``until_ns`` (never moved back while a
    later poll holds it, except to end it: a poll whose client hung up sets the time it hung up)."""
    db.execute(sql.POLLED, PollRow(trace_id, span_id, until_ns))


def poll_until(db: Connection, trace_id: str, span_id: str) -> int | None:
    """Until when the tool span's application was last known to ask for its decision (``None``: never)."""
    row = db.execute(sql.POLL_UNTIL, (trace_id, span_id)).fetchone()
    return None if row is None else int(row[0])


def received_ns(db: Connection, trace_id: str, span_id: str) -> int | None:
    """When the server first received the tool span (its first act in the event log, on the server's
    commit clock), ``None`` when it has no event of it."""
    row = db.execute(sql.RECEIVED, (trace_id, span_id)).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def received_ns_of(db: Connection, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """``received_ns`` of each of the tool spans ``keys`` that has an event."""
    if not keys:
        return {}
    rows = db.execute(sql.RECEIVED_OF_SPANS, ([t + s for t, s in keys],)).fetchall()
    return {(r[0], r[1]): int(r[2]) for r in rows}


def span_state(db: Connection, trace_id: str, span_id: str) -> tuple[int | None, int] | None:
    """``(end_ns, waiting)`` of a stored span, ``None`` when it is not stored."""
    row = db.execute(sql.SPAN_STATE, (trace_id, span_id)).fetchone()
    return None if row is None else (None if row[0] is None else int(row[0]), int(row[1]))


def prune(db: Connection, before_ns: int) -> int:
    """Drop the decisions, cancel requests and poll marks older than ``before_ns`` (retention); returns how
    many."""
    dropped = db.execute(sql.DROP_DECISIONS, (before_ns,)).rowcount
    dropped += db.execute(sql.DROP_CANCELS, (before_ns,)).rowcount
    dropped += db.execute(sql.DROP_POLLS, (before_ns,)).rowcount
    return int(dropped)


class ControlRows:
    """The control channel's rows of one store, each read or write in a transaction of its own."""

    def __init__(self, transaction: Callable[[], AbstractContextManager[Connection]]) -> None:
        self._transaction = transaction

    def _run(self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        with self._transaction() as conn:
            return fn(conn, *args, **kwargs)

    def decision_for(self, key: tuple[str | None, str]) -> list[DecisionRow]:
        return self._run(decision_for, key)

    def decisions_for_spans(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], DecisionRow]:
        return self._run(decisions_for_spans, keys)

    def decisions_of_call(self, call_id: str) -> list[DecisionRow]:
        return self._run(decisions_of_call, call_id)

    def insert_decision(self, row: DecisionRow) -> DecisionRow:
        return self._run(insert_decision, row)

    def insert_cancel(self, row: CancelRow) -> CancelRow:
        return self._run(insert_cancel, row)

    def cancels_for(self, span_ids: Sequence[str]) -> list[CancelRow]:
        return self._run(cancels_for, span_ids)

    def polled(self, trace_id: str, span_id: str, until_ns: int) -> None:
        self._run(polled, trace_id, span_id, until_ns)

    def poll_until(self, trace_id: str, span_id: str) -> int | None:
        return self._run(poll_until, trace_id, span_id)

    def received_ns(self, trace_id: str, span_id: str) -> int | None:
        return self._run(received_ns, trace_id, span_id)

    def received_ns_of(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], int]:
        return self._run(received_ns_of, keys)

    def span_state(self, trace_id: str, span_id: str) -> tuple[int | None, int] | None:
        return self._run(span_state, trace_id, span_id)

    def prune(self, before_ns: int) -> int:
        return self._run(prune, before_ns)
