"""The control channel's rows: a decision on a tool call that waits for its approval, and a request to cancel
a running one."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CancelRow", "DecisionRow"]


@dataclass(frozen=True, slots=True)
class DecisionRow:
    trace_id: str
    span_id: str
    execution_id: str
    call_id: str | None
    tool: str | None
    decision: str
    shown: str  # arguments_sha256 of the arguments the decider was shown
    note: str | None
    decided_by: str  # the name of the decider token
    arguments: str | None  # JSON text of the edited arguments
    waiting_since_ns: int | None
    decided_ns: int


@dataclass(frozen=True, slots=True)
class CancelRow:
    trace_id: str
    span_id: str
    execution_id: str
    call_id: str | None
    requested_by: str
    note: str | None
    requested_ns: int
