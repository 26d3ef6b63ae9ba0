"""A span as the store's row: the index columns (ids, times, role, tool state, service, conversation,
whether it waits for an approval) and its stored form (``codec``); and what storing rows did
(``IngestResult``).

A span received as OTLP protobuf is not turned into a full neutral span at ingest: its columns are read
from a partial span (only the attributes in ``INDEX_KEYS``, its events, no links) through the same bridge
functions (``row_of``; ``INDEX_KEYS`` is the bridge's, every attribute they read, computed from its
framework conventions; tests/server/ingest/test_protobuf.py checks partial and full spans give the same
columns on the whole corpus), and the span itself is stored as the protobuf bytes it came in; it becomes a
full neutral span only when it is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from toolspan import semconv as sc
from toolspan.bridge import coalesce
from toolspan.bridge.facts import TOOL, classify, tool_error, tool_name, tool_state
from toolspan.bridge.internal import ACT_AWAITING_APPROVAL, CONVERSATION_KEYS, INDEX_KEYS, act_status
from toolspan.bridge.model import Span
from toolspan.server._rows.codec import encode
from toolspan.server._rows.columns import Id, Int8, Record

__all__ = ["INDEX_KEYS", "MAX_STORED_NS", "IngestResult", "Row", "merge", "row_of", "row_of_span"]

# SQLite integers are signed 64-bit: times from 2**63 ns on (the year 2262) cannot be stored.
MAX_STORED_NS: Final = (1 << 63) - 1


@dataclass(slots=True)
class IngestResult:
    """What storing one request did: records accepted, rejected (with the reason) and already stored."""

    accepted: int = 0
    rejected: int = 0
    duplicates: int = 0
    message: str = ""


class Row(NamedTuple):
    """One row of the ``spans`` table: its columns, in order (``columns``)."""

    trace_id: Id
    span_id: Id
    parent: str | None
    name: str
    start_ns: Int8
    end_ns: Int8 | None
    is_tool: int
    tool_name: str | None
    tool_state: str | None
    is_error: int
    service: str | None
    conversation_id: str | None
    data: Record
    # 1 when the tool span waits for an approval (its last approval event asks for one) and has not ended.
    waiting: int = 0


def _conversation(attrs: Mapping[str, Any]) -> str | None:
    for key in CONVERSATION_KEYS:
        value = attrs.get(key)
        if value is not None and value != "":
            return str(value)
    return None


def row_of(span: Span, data: str | bytes) -> Row:
    """The row of ``span`` (a full span, or a partial one read with ``INDEX_KEYS``), stored as ``data``."""
    tool = classify(span) == TOOL
    state = tool_state(span) if tool and span.end_ns is not None else None
    if tool:
        error = span.end_ns is not None and tool_error(span, state) is not None
    else:
        error = span.status == "ERROR"
    service = span.resource.get(sc.SERVICE_NAME)
    return Row(
        span.trace_id,
        span.span_id,
        span.parent_span_id,
        span.name,
        span.start_ns,
        span.end_ns,
        int(tool),
        tool_name(span) if tool else None,
        state,
        int(error),
        None if service is None else str(service),
        _conversation(span.attributes),
        data,
        int(tool and span.end_ns is None and act_status(span) == ACT_AWAITING_APPROVAL),
    )


def row_of_span(span: Span) -> Row:
    """The row of a full neutral span (stored as JSON)."""
    return row_of(span, encode(span))


def merge(old: Span, new: Span) -> Span | None:
    """One span from two records of it as the bridge merges them; ``None`` when they conflict."""
    merged = coalesce([old, new])
    return merged[0] if len(merged) == 1 else None
