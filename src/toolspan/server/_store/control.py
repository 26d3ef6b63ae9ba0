"""The control channel's tables: decisions on tool calls that wait for an approval, and requests to cancel
running calls, made through ``toolspan serve`` (``_http.control``).

- ``control_decisions``: one row per model tool call id: the first decision wins (an insert that meets its
  primary key does nothing, and the row that stands is read back), with the waiting span it was made on
  (trace id, span id, execution id), who decided, the note, the edited arguments (JSON text) and when
  (ns since the epoch).
- ``control_cancels``: one row per execution id: who asked, the note and when.

Rows older than ``--retention`` are dropped with the traces (``prune``). Each function takes a connection of
the store's (``run`` gives it one transaction of ``StoreApi.transaction``, on either engine). The tables are
the ``control`` part of the store's versioned schema (``schema.PARTS``), written in its engine words
(``{int8}`` for nanosecond times); the SQL is plain, parameterised with ``?`` on both engines.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Final, TypeVar

__all__ = [
    "SCHEMA",
    "CancelRow",
    "DecisionRow",
    "cancels_for",
    "decision_for",
    "decisions_since",
    "insert_cancel",
    "insert_decision",
    "prune",
    "run",
]

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS control_decisions (
  call_id {id} PRIMARY KEY, trace_id TEXT, span_id TEXT, execution_id TEXT, tool TEXT,
  decision TEXT NOT NULL, note TEXT, decided_by TEXT NOT NULL, arguments TEXT, decided_ns {int8} NOT NULL);
CREATE INDEX IF NOT EXISTS control_decisions_time ON control_decisions (decided_ns);
CREATE TABLE IF NOT EXISTS control_cancels (
  execution_id {id} PRIMARY KEY, trace_id TEXT, call_id TEXT, requested_by TEXT NOT NULL, note TEXT,
  requested_ns {int8} NOT NULL);
"""

T = TypeVar("T")


def run(store: Any, fn: Callable[..., T], *args: Any) -> T:
    """``fn(connection, *args)`` in one transaction of ``store`` (``StoreApi.transaction``): two deciders
    racing are serialized, and the first decision stands."""
    with store.transaction() as conn:
        return fn(conn, *args)


_DECISION_COLUMNS: Final = (
    "call_id, trace_id, span_id, execution_id, tool, decision, note, decided_by, arguments, decided_ns"
)
_CANCEL_COLUMNS: Final = "execution_id, trace_id, call_id, requested_by, note, requested_ns"


@dataclass(frozen=True, slots=True)
class DecisionRow:
    call_id: str
    trace_id: str | None
    span_id: str | None
    execution_id: str | None
    tool: str | None
    decision: str
    note: str | None
    decided_by: str
    arguments: str | None  # JSON text of the edited arguments
    decided_ns: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class CancelRow:
    execution_id: str
    trace_id: str | None
    call_id: str | None
    requested_by: str
    note: str | None
    requested_ns: int


def decision_for(db: Any, call_id: str) -> DecisionRow | None:
    """The decision stored for the model's tool call id ``call_id``, if any."""
    row = db.execute(
        f"SELECT {_DECISION_COLUMNS} FROM control_decisions WHERE call_id = ?", (call_id,)
    ).fetchone()
    return None if row is None else DecisionRow(*row)


def insert_decision(db: Any, row: DecisionRow) -> DecisionRow:
    """Store ``row`` unless a decision on its call is stored already; returns the decision that stands.

    One statement decides: on PostgreSQL two deciders' transactions run at once, so a read before the insert
    would not see a row the other is inserting; ``ON CONFLICT DO NOTHING`` waits for it instead, and the
    read after it sees the winner (the same on SQLite, whose write transactions take turns)."""
    values = (
        row.call_id,
        row.trace_id,
        row.span_id,
        row.execution_id,
        row.tool,
        row.decision,
        row.note,
        row.decided_by,
        row.arguments,
        row.decided_ns,
    )
    sql = (
        f"INSERT INTO control_decisions ({_DECISION_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)"
        " ON CONFLICT (call_id) DO NOTHING"
    )
    return _first(db, sql, values, row, lambda: decision_for(db, row.call_id))


def decisions_since(db: Any, after_ns: int, limit: int) -> list[DecisionRow]:
    """Decisions made after ``after_ns``, oldest first."""
    rows = db.execute(
        f"SELECT {_DECISION_COLUMNS} FROM control_decisions WHERE decided_ns > ?"
        " ORDER BY decided_ns, call_id LIMIT ?",
        (after_ns, limit),
    ).fetchall()
    return [DecisionRow(*r) for r in rows]


def insert_cancel(db: Any, row: CancelRow) -> CancelRow:
    """Store the cancel request ``row`` unless one for its execution is stored; returns the one that
    stands (one statement decides, as in ``insert_decision``)."""
    values = (row.execution_id, row.trace_id, row.call_id, row.requested_by, row.note, row.requested_ns)
    sql = (
        f"INSERT INTO control_cancels ({_CANCEL_COLUMNS}) VALUES (?,?,?,?,?,?)"
        " ON CONFLICT (execution_id) DO NOTHING"
    )
    return _first(db, sql, values, row, lambda: next(iter(cancels_for(db, [row.execution_id])), None))


def _first(db: Any, sql: str, values: tuple[Any, ...], row: T, stored: Callable[[], T | None]) -> T:
    """``row`` when the insert ``sql`` stored it, else the row that kept it out (committed: the insert
    waited for it). Should that row be pruned between the two statements, the insert is tried again."""
    while True:
        if db.execute(sql, values).rowcount == 1:
            return row
        known = stored()
        if known is not None:
            return known


def cancels_for(db: Any, execution_ids: list[str]) -> list[CancelRow]:
    """The cancel requests stored for any of ``execution_ids``."""
    if not execution_ids:
        return []
    marks = ",".join("?" * len(execution_ids))
    rows = db.execute(
        f"SELECT {_CANCEL_COLUMNS} FROM control_cancels WHERE execution_id IN ({marks})"
        " ORDER BY requested_ns, execution_id",
        tuple(execution_ids),
    ).fetchall()
    return [CancelRow(*r) for r in rows]


def prune(db: Any, before_ns: int) -> int:
    """Drop the decisions and cancel requests made before ``before_ns`` (retention); returns how many."""
    dropped = db.execute("DELETE FROM control_decisions WHERE decided_ns < ?", (before_ns,)).rowcount
    dropped += db.execute("DELETE FROM control_cancels WHERE requested_ns < ?", (before_ns,)).rowcount
    return int(dropped)
