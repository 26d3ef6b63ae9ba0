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

from toolspan._util.records import quick_init

SPAN_KINDS: Final = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
STATUS_CODES: Final = ("UNSET", "OK", "ERROR")

_EMPTY: Final[Mapping[str, Any]] = {}


@quick_init  # one per event read
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


@quick_init  # a Span per span read
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
    # The schema URL of the span's instrumentation scope (the semantic conventions it follows), "" if none.
    scope_schema_url: str = ""

    @property
    def duration_ns(self) -> int | None:
        return None if self.end_ns is None else max(0, self.end_ns - self.start_ns)


def span_fields(span: Span) -> list[Any]:
    """A span as a list of plain values, every field but ``origin`` and ``scope_schema_url``, in a fixed
    order: the total order of conflicting records (``bridge._coalesce``) and the stored form of a span
    (``toolspan serve``, which keeps a scope's name only)."""
    return [
        span.trace_id,
        span.span_id,
        span.parent_span_id,
        span.name,
        span.start_ns,
        span.end_ns,
        span.kind,
        span.status,
        span.status_message,
        dict(span.attributes),
        [[e.name, e.time_ns, dict(e.attributes)] for e in span.events],
        [[li.trace_id, li.span_id, dict(li.attributes)] for li in span.links],
        dict(span.resource),
        span.scope,
    ]


def span_from_fields(row: list[Any]) -> Span:
    """The span of ``span_fields`` values (``origin`` empty)."""
    return Span(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        row[7],
        row[8],
        row[9],
        tuple(SpanEvent(e[0], e[1], e[2]) for e in row[10]),
        tuple(SpanLink(li[0], li[1], li[2]) for li in row[11]),
        row[12],
        row[13],
    )
