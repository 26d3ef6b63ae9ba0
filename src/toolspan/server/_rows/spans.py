"""A span as the store's row: the index columns (ids, times, role, tool state, service, conversation,
whether it waits for an approval) and its stored form (``codec``); and what storing rows did
(``IngestResult``).

A span received as OTLP protobuf is not turned into a full neutral span at ingest: its columns are read
from a partial span (only the attributes in ``INDEX_KEYS``, its events, no links) through the same bridge
functions (``row_of``), and the span itself is stored as the protobuf bytes it came in; it becomes a full
neutral span only when it is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from toolspan import semconv as sc
from toolspan.bridge import coalesce
from toolspan.bridge.facts import TOOL, classify, tool_error, tool_name, tool_state
from toolspan.bridge.internal import ACT_AWAITING_APPROVAL, act_status
from toolspan.bridge.model import Span
from toolspan.server._rows.codec import encode
from toolspan.server._rows.columns import Id, Int8, Record

__all__ = ["INDEX_KEYS", "MAX_STORED_NS", "IngestResult", "Row", "merge", "row_of", "row_of_span"]

# SQLite integers are signed 64-bit: times from 2**63 ns on (the year 2262) cannot be stored.
MAX_STORED_NS: Final = (1 << 63) - 1

# Every attribute ``classify``, ``tool_name``, ``tool_state``, ``tool_error`` and the conversation id read
# (tests/server/ingest/test_protobuf.py checks the columns of partial and full spans agree on the whole
# corpus).
INDEX_KEYS: Final = frozenset(
    {
        sc.TOOLSPAN_PLAN_NAME,
        sc.GEN_AI_OPERATION_NAME,
        sc.OPENINFERENCE_SPAN_KIND,
        sc.TRACELOOP_SPAN_KIND,
        sc.GEN_AI_TOOL_NAME,
        sc.OI_TOOL_NAME,
        sc.TRACELOOP_ENTITY_NAME,
        sc.TOOLSPAN_TOOL_STATE,
        sc.ERROR_TYPE,
        sc.LEGACY_ERROR_TAG,
        sc.GEN_AI_CONVERSATION_ID,
        sc.OI_SESSION_ID,
        sc.HAYSTACK_TOOL_NAME,
        sc.HAYSTACK_TOOL_ERROR,
        sc.ADK_LLM_RESPONSE,
        # The frameworks' own markers and tool names (toolspan.bridge.facts._dialects, tool_name's DSPy rule).
        sc.VERCEL_OPERATION_ID,
        sc.VERCEL_TOOL_CALL_NAME,
        sc.MLFLOW_SPAN_TYPE,
        sc.LOGFIRE_MSG_TEMPLATE,
        sc.LOGFIRE_NAME,
        sc.LOGFIRE_ERROR,
        sc.LANGFUSE_OBSERVATION_TYPE,
        sc.LANGFUSE_STATUS_MESSAGE,
    }
)


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
    for key in (sc.GEN_AI_CONVERSATION_ID, sc.OI_SESSION_ID):
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
