"""A durable approvals book: tool calls waiting for a decision, and the decisions, in one SQLite file.

An agent service whose approvals outlive its process passes the book as the approver::

    book = toolspan.ApprovalBook("approvals.db")
    results = toolspan.run_tool_calls(message.tool_calls, tools, approve=book)

A call the book has not decided is written into it (the model's tool call id, tool name, arguments, and the
trace id and span id of the tool span that waits), and the approver waits, polling the file, until a
decision arrives. Anyone with the file decides: ``book.waiting()`` lists the calls, ``book.decide(call_id,
"allow", note=..., by=..., arguments=...)`` answers one (a frontend, a queue consumer, another process).
A decision stays in the book (a call re-issued gets it again) until ``book.forget(call_id)``.

When the process dies while a call waits, the restarted agent re-issues the same model tool call (same
``tool_call_id``, same tool, same arguments): the book matches it by that id, and checks that the tool and the
arguments are those it holds: a call that reuses the id for another tool or other arguments is refused
(denied, with the reason), never given a decision made for another call. Otherwise the book returns the
decision (given while nobody waited, or awaited now), and the new tool span gets a span link to the span that
waited (``toolspan.link.type`` = ``resumes_approval``) and ``toolspan.approval.resumes`` = that span's
execution_id. The recorded latency runs from the first ``permission_required`` of the call. Standard library
only; any number of processes may share the file (SQLite in WAL mode). The arguments in the book are the
model's, unredacted: the decider needs them.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from toolspan._approvals.approval import Approval, Decision, ToolCall
from toolspan._approvals.asking import abandoned
from toolspan._capture.serialize import canonical
from toolspan._instrument import permissions as _permissions
from toolspan._util.words import parse_decision

__all__ = ["ApprovalBook", "WaitingCall"]

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS approvals (
  call_id TEXT PRIMARY KEY, tool TEXT NOT NULL, arguments TEXT NOT NULL, trace_id TEXT, span_id TEXT,
  required_ns INTEGER NOT NULL, decision TEXT, note TEXT, decided_by TEXT, edited_arguments TEXT,
  decided_ns INTEGER)
"""


def _canonical(text_or_value: Any) -> str:
    return canonical(json.loads(text_or_value) if isinstance(text_or_value, str) else text_or_value)


def _same_call(call: ToolCall, tool: str, arguments: str) -> None:
    """Raise ``LookupError`` unless ``call`` is the call the book holds under its id (the approver then
    denies it, with this reason)."""
    if call.name != tool:
        raise LookupError(
            f"the approval book holds tool call {call.id!r} for tool {tool!r}, not {call.name!r}: a decision"
            " is never given to another call"
        )
    try:
        same = _canonical(arguments) == _canonical(call.arguments)
    except (ValueError, TypeError):
        same = False
    if not same:
        raise LookupError(
            f"the approval book holds tool call {call.id!r} of {tool!r} with other arguments: a decision is"
            " never given to another call"
        )


@dataclass(frozen=True)
class WaitingCall:
    """A tool call in the book with no decision yet."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    trace_id: str | None  # 32-hex trace id of the span that waits (None when no span was recording)
    span_id: str | None  # 16-hex span id of that span
    required_ns: int  # when the call first asked for its approval (ns since the epoch)


class ApprovalBook:
    """Tool calls waiting for an approval and their decisions, durable in the SQLite file ``path``.

    Usable as ``run_tool_calls(approve=book)``; ``poll_interval`` (seconds) is how often a waiting call
    looks for its decision. Give ``run_tool_calls`` an ``approve_timeout`` to stop waiting (then denied, by
    ``"timeout"``; the call stays in the book, and a later run of the same call id finds its decision).
    """

    def __init__(self, path: str | os.PathLike[str], *, poll_interval: float = 0.2) -> None:
        if (
            not isinstance(poll_interval, (int, float))
            or isinstance(poll_interval, bool)
            or not 0 < poll_interval <= 3600  # NaN and infinities fail too
        ):
            raise ValueError(f"poll_interval must be a positive number of seconds, got {poll_interval!r}")
        self.path = os.fspath(path)
        self.poll_interval = poll_interval
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(_SCHEMA)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        try:
            yield db
        finally:
            db.close()

    def _row(self, db: sqlite3.Connection, call_id: str) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = db.execute(
            "SELECT trace_id, span_id, required_ns, decision, note, decided_by, edited_arguments, tool,"
            " arguments FROM approvals WHERE call_id = ?",
            (call_id,),
        ).fetchone()
        return row

    # --- the agent's side ---------------------------------------------------------------------------

    def __call__(self, call: ToolCall) -> Approval:
        """The approver: book the call (or find it booked before a restart), then wait for its decision."""
        if not call.id:
            raise ValueError(
                f"the approval book needs the model's tool call id; the call of {call.name!r} has none"
            )
        ctx = _permissions.tool_span().get_span_context()
        here = (f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}") if ctx.is_valid else (None, None)
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                row = self._row(db, call.id)
                if row is None:
                    db.execute(
                        "INSERT INTO approvals (call_id, tool, arguments, trace_id, span_id, required_ns)"
                        " VALUES (?,?,?,?,?,?)",
                        (
                            call.id,
                            call.name,
                            json.dumps(call.arguments, ensure_ascii=False),
                            *here,
                            time.time_ns(),
                        ),
                    )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        if row is not None:
            _same_call(call, row[7], row[8])
        if row is not None and row[1] is not None and (row[0], row[1]) != here:
            _permissions.link_waiting_span(int(row[0], 16), int(row[1], 16))
        while True:
            with self._connect() as db:
                row = self._row(db, call.id)
            if row is None:
                raise LookupError(f"tool call {call.id!r} was removed from the approval book while it waited")
            # Checked on every poll, not only when booked: the id may have been forgotten and booked again by
            # another call (another tool, other arguments) meanwhile; its decision is not this call's.
            _same_call(call, row[7], row[8])
            if row[3] is not None:
                edited = None if row[6] is None else json.loads(row[6])
                return Approval(row[3], note=row[4], by=row[5], arguments=edited, required_ns=row[2])
            if abandoned():  # the call stopped waiting (approve_timeout); it stays booked
                raise TimeoutError(f"tool call {call.id!r} stopped waiting for its approval")
            time.sleep(self.poll_interval)

    # --- the decider's side -------------------------------------------------------------------------

    def waiting(self) -> list[WaitingCall]:
        """The calls with no decision yet, oldest first."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT call_id, tool, arguments, trace_id, span_id, required_ns FROM approvals"
                " WHERE decision IS NULL ORDER BY required_ns, call_id"
            ).fetchall()
        return [WaitingCall(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5]) for r in rows]

    def decide(
        self,
        call_id: str,
        decision: Decision | bool,
        *,
        note: str | None = None,
        by: str | None = None,
        arguments: Mapping[str, Any] | None = None,
    ) -> None:
        """Decide the waiting call ``call_id``: ``"allow"``/``True`` or ``"deny"``/``False``, with the reason
        (``note``), who decided (``by``) and, to run it with other arguments, the edited ``arguments``.

        Raises ``KeyError`` for a call id the book does not hold, ``ValueError`` for a call already decided,
        ``toolspan.errors.DecisionError`` (a ``ValueError``) for a decision that is none of these."""
        verdict = parse_decision(decision, bools=True)
        if arguments is not None and not isinstance(arguments, Mapping):
            raise ValueError(f"arguments must be a mapping, got {type(arguments).__name__}")
        edited = None if arguments is None else json.dumps(dict(arguments), ensure_ascii=False)
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                row = self._row(db, call_id)
                if row is None:
                    raise KeyError(f"no tool call {call_id!r} waits in the approval book {self.path}")
                if row[3] is not None:
                    raise ValueError(
                        f"tool call {call_id!r} was already decided: {row[3]} by {row[5] or 'unknown'}"
                    )
                db.execute(
                    "UPDATE approvals SET decision = ?, note = ?, decided_by = ?, edited_arguments = ?,"
                    " decided_ns = ? WHERE call_id = ?",
                    (verdict, note, by, edited, time.time_ns(), call_id),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def forget(self, call_id: str) -> None:
        """Remove the call ``call_id`` from the book (once its run is over: a decision stays, so the same call
        re-issued gets it again). ``KeyError`` for a call id the book does not hold."""
        with self._connect() as db:
            if db.execute("DELETE FROM approvals WHERE call_id = ?", (call_id,)).rowcount == 0:
                raise KeyError(f"no tool call {call_id!r} in the approval book {self.path}")
