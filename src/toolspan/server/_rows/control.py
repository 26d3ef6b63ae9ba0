"""The control channel's rows: a decision on a tool call that waits for its approval, a request to cancel a
running one, and until when a waiting call's application asks for its decision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from toolspan.server._rows.columns import Id, Int8

__all__ = ["CancelRow", "DecisionRow", "PollRow"]


@dataclass(frozen=True, slots=True)
class DecisionRow:
    """A row of ``control_decisions``: its columns, in order (``columns``)."""

    trace_id: Id
    span_id: Id
    execution_id: str
    call_id: str | None
    tool: str | None
    decision: str
    shown: str  # arguments_sha256 of the arguments the decider was shown
    note: str | None
    decided_by: str  # the name of the decider token
    arguments: str | None  # JSON text of the edited arguments
    waiting_since_ns: Int8 | None
    decided_ns: Int8


@dataclass(frozen=True, slots=True)
class CancelRow:
    """A row of ``control_cancels``: its columns, in order (``columns``)."""

    trace_id: Id
    span_id: Id
    execution_id: str
    call_id: str | None
    requested_by: str
    note: str | None
    requested_ns: Int8


class PollRow(NamedTuple):
    """A row of ``control_polls``: until when a waiting tool span's application asks for its decision."""

    trace_id: Id
    span_id: Id
    until_ns: Int8
