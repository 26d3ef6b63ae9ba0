"""Spans as the store's rows: the index columns (ids, times, role, tool state, service, conversation) and
the stored form (``_ingest.codec``).

A span received as OTLP protobuf is not turned into a full neutral span at ingest: its columns are read
from a partial span (only the attributes in ``INDEX_KEYS``, its events, no links) through the same bridge
functions, and the span itself is stored as the protobuf bytes it came in; it becomes a full neutral span
only when it is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from toolspan import semconv as sc
from toolspan.bridge import coalesce
from toolspan.bridge.facts import (
    ACT_AWAITING_APPROVAL,
    TOOL,
    act_status,
    classify,
    tool_error,
    tool_name,
    tool_state,
)
from toolspan.bridge.model import Span
from toolspan.bridge.readers import Ctx, bad_times
from toolspan.bridge.readers import proto_resource_attributes as resource_attributes
from toolspan.bridge.readers import proto_span as span_of
from toolspan.server._ingest.codec import encode, proto_header

__all__ = ["INDEX_KEYS", "MAX_STORED_NS", "Row", "bad_id_or_time", "merge", "row_of_span", "rows_of_request"]

# SQLite integers are signed 64-bit: times from 2**63 ns on (the year 2262) cannot be stored.
MAX_STORED_NS: Final = (1 << 63) - 1
_ID_BYTES: Final = (("trace_id", 16), ("span_id", 8), ("parent_span_id", 8))

# Every attribute ``classify``, ``tool_name``, ``tool_state``, ``tool_error`` and the conversation id read
# (tests/test_server_records.py checks the columns of partial and full spans agree on the whole corpus).
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
        # The frameworks' own markers and tool names (toolspan.bridge._dialects, tool_name's DSPy rule).
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


class Row(NamedTuple):
    """One row of the ``spans`` table, in column order."""

    trace_id: str
    span_id: str
    parent: str | None
    name: str
    start_ns: int
    end_ns: int | None
    is_tool: int
    tool_name: str | None
    tool_state: str | None
    is_error: int
    service: str | None
    conversation_id: str | None
    data: str | bytes
    # 1 when the tool span waits for an approval (its last approval event asks for one) and has not ended.
    waiting: int = 0


def _conversation(attrs: Mapping[str, Any]) -> str | None:
    for key in (sc.GEN_AI_CONVERSATION_ID, sc.OI_SESSION_ID):
        value = attrs.get(key)
        if value is not None and value != "":
            return str(value)
    return None


def _row(span: Span, data: str | bytes) -> Row:
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
    return _row(span, encode(span))


def merge(old: Span, new: Span) -> Span | None:
    """One span from two records of it as the bridge merges them; ``None`` when they conflict."""
    merged = coalesce([old, new])
    return merged[0] if len(merged) == 1 else None


def bad_id_or_time(sp: Any) -> tuple[str, str] | None:
    """``(field, reason)`` when a protobuf ``Span`` has an id of the wrong length (OTLP: a trace id of 16
    bytes, span ids of 8; an empty one means missing) or a time the store cannot keep, else ``None``."""
    for name, size in _ID_BYTES:
        length = len(getattr(sp, name))
        if length not in (0, size):
            return name, f"{length} bytes, expected {size}"
    for name in ("start_time_unix_nano", "end_time_unix_nano"):
        value = getattr(sp, name)
        if value > MAX_STORED_NS:
            return name, f"{value} is past 2**63-1 ns (the year 2262), the latest time the server stores"
    return None


def rows_of_request(request: Any, ctx: Ctx) -> list[Row]:
    """The rows of a parsed ``ExportTraceServiceRequest``, each span stored as its protobuf bytes; a span
    that ends before it starts fails ``ctx`` as the bridge reader does, and so does one with an id of the
    wrong length or a time past what SQLite stores (``bad_id_or_time``)."""
    rows: list[Row] = []
    keys = INDEX_KEYS
    for r, rs in enumerate(request.resource_spans):
        resource = resource_attributes(rs)
        resource_bytes = rs.resource.SerializeToString()
        for s, ss in enumerate(rs.scope_spans):
            scope = ss.scope.name
            header = proto_header(resource_bytes, ss.scope.SerializeToString())
            for i, sp in enumerate(ss.spans):
                end = sp.end_time_unix_nano
                if end and end < sp.start_time_unix_nano:
                    ctx.fail(*(bad_times(sp, r, s, i) or ("", "")))
                    continue
                bad = bad_id_or_time(sp)
                if bad is not None:
                    ctx.fail(f"resource_spans[{r}].scope_spans[{s}].spans[{i}].{bad[0]}", bad[1])
                    continue
                partial = span_of(sp, resource, scope, "", keys)
                rows.append(_row(partial, header + sp.SerializeToString()))
    return rows
