"""A trace's summary row (the ``traces`` table), kept up to date as its spans are stored."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["TraceRow", "trace_row"]


@dataclass(frozen=True, slots=True)
class TraceRow:
    trace_id: str
    service: str | None
    conversation_id: str | None
    root_name: str | None
    root_ended: bool
    start_ns: int
    end_ns: int | None
    last_seen_ns: int
    spans: int
    tools: int
    errors: int
    open_tools: int


def trace_row(row: Sequence[Any]) -> TraceRow:
    """A ``traces`` row read in column order."""
    return TraceRow(
        row[0], row[1], row[2], row[3], bool(row[4]), row[5], row[6], row[7], row[8], row[9], row[10], row[11]
    )
