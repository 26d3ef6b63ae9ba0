"""The event log's phases (``ACT``, ``OBSERVE``, ``BOTH``) and a position in it:
``<commit ns>-<trace id>-<span id>-<phase>``.

A row of the log is one event of a tool span, or both of them: a span that is stored ended when first seen
(the common call, exported once it returned) has its act and its observe in one ``BOTH`` row, one row less
to write at ingest. Its events are read back at two positions, ``-0`` (its act) and ``-2`` (its observe),
so a position's phase is that of the row and its event (``0`` or ``1``), or ``2`` after both events of a
``BOTH`` row (``row_events``).

Events of one trace's stream carry four more parts, ``-<seen>-<key ns>-<key span>-<key phase>``: how many
events of the trace the client has received with this one (``seen``) and the largest *data key* among
them, ``(event time, span id, phase)`` (an act's time is its span's start, an observe's its end). The
data key means the same on every replica, the commit clock only on the one that wrote it: a replica
resumes a foreign cursor when exactly ``seen`` events of the trace have a data key up to the cursor's
(then those are the ones the client has), and sends ``reset`` and a snapshot otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from toolspan._util.ids import hex_id

__all__ = ["ACT", "BOTH", "OBSERVE", "Cursor", "DataKey", "row_events"]

# The phases of a tool span's events: its act (it started, or its act changed), its observe (it ended); and
# of the log's rows, also both at once (the span was stored ended when first seen).
ACT: Final = 0
OBSERVE: Final = 1
BOTH: Final = 2

_MAX_DIGITS: Final = 20  # nanoseconds up to 2**64-1 (OTLP's range); the stream resets what is past its clock


def _number(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= _MAX_DIGITS


def _id(text: str, size: int) -> bool:
    return hex_id(text, size) is not None


# (event time ns, span id, phase): the order of a trace's events in its data.
DataKey = tuple[int, str, int]


@dataclass(frozen=True, slots=True, order=True)
class Cursor:
    """A position in the event log: everything strictly after it is still to be sent."""

    ns: int
    trace_id: str = ""
    span_id: str = ""
    phase: int = -1
    # Per-trace streams only: events of the trace received so far, and the largest data key among them.
    seen: int = field(default=-1, compare=False)
    key: DataKey | None = field(default=None, compare=False)

    @property
    def event(self) -> int:
        """The phase of the event at this position: ``ACT``, or ``OBSERVE`` (also after a ``BOTH`` row)."""
        return OBSERVE if self.phase == BOTH else self.phase

    def __str__(self) -> str:
        base = f"{self.ns}-{self.trace_id}-{self.span_id}-{self.phase}"
        if self.seen < 0 or self.key is None:
            return base
        return f"{base}-{self.seen}-{self.key[0]}-{self.key[1]}-{self.key[2]}"

    @classmethod
    def parse(cls, text: str) -> Cursor | None:
        """The cursor an ``id:`` line carried, or ``None`` for text that is not one (ids in lowercase
        hex, numbers in ASCII digits of at most 20)."""
        parts = text.strip().split("-")
        if len(parts) not in (4, 8) or not _number(parts[0]) or parts[3] not in ("0", "1", "2"):
            return None
        if not (_id(parts[1], 32) and _id(parts[2], 16)):
            return None
        if len(parts) == 4:
            return cls(int(parts[0]), parts[1], parts[2], int(parts[3]))
        seen, key_ns, key_span, key_phase = parts[4:]
        if not (_number(seen) and _number(key_ns) and _id(key_span, 16) and key_phase in ("0", "1")):
            return None
        key = (int(key_ns), key_span, int(key_phase))
        return cls(int(parts[0]), parts[1], parts[2], int(parts[3]), int(seen), key)


def row_events(ns: int, trace_id: str, span_id: str, phase: int) -> tuple[tuple[Cursor, int], ...]:
    """The events of one row of the log, in order: ``(position, ACT or OBSERVE)`` each (two for a ``BOTH``
    row: its act at ``-0``, its observe at ``-2``)."""
    if phase == BOTH:
        return ((Cursor(ns, trace_id, span_id, ACT), ACT), (Cursor(ns, trace_id, span_id, BOTH), OBSERVE))
    return ((Cursor(ns, trace_id, span_id, phase), phase),)
