"""The bridge's neutral span model: what every reader produces and every view consumes.

Normalisation rules, whatever the source:
- ``trace_id``: 32 lowercase hex characters (shorter ids are left-padded with zeros);
- ``span_id`` / ``parent_span_id``: 16 lowercase hex characters; a root span has ``parent_span_id=None``;
- every time is an integer of nanoseconds since the Unix epoch; ``end_ns`` is ``None`` for a span
  whose end was never recorded (a live act, a durable act of a process that died);
- ``kind`` is one of ``SPAN_KINDS``; ``status`` one of ``STATUS_CODES``;
- attribute values are plain JSON-able Python values (str, bool, int, float, list, dict, None).
  JSON strings stay strings here; views decide what to parse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

SPAN_KINDS: Final = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
STATUS_CODES: Final = ("UNSET", "OK", "ERROR")

_EMPTY: Final[Mapping[str, Any]] = {}


@dataclass(frozen=True, slots=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SpanLink:
    trace_id: str
    span_id: str
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Span:
    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    start_ns: int
    end_ns: int | None
    kind: str = "INTERNAL"
    status: str = "UNSET"
    status_message: str = ""
    attributes: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    links: tuple[SpanLink, ...] = ()
    resource: Mapping[str, Any] = field(default_factory=dict)
    scope: str = ""
    # Where the span was read from, "file:line" (or "" for in-process spans); used in diagnostics.
    origin: str = ""

    @property
    def duration_ns(self) -> int | None:
        return None if self.end_ns is None else max(0, self.end_ns - self.start_ns)


def pad_trace_id(hex_id: str) -> str:
    """Lowercase and left-pad a hex trace id to 32 characters."""
    return hex_id.lower().rjust(32, "0")


def pad_span_id(hex_id: str) -> str:
    """Lowercase and left-pad a hex span id to 16 characters."""
    return hex_id.lower().rjust(16, "0")
