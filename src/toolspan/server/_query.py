"""``GET /api/traces``: filters to parameterised SQL, summary rows, cursor pagination (newest first).

Query parameters: ``service``, ``tool`` (a tool name called in the trace), ``state`` (the trace's state:
``RUNNING``, ``COMPLETED``, ``FAILED``, ``SEALED``), ``from_ms`` / ``to_ms`` (trace start, ms since the
epoch, inclusive / exclusive), ``conversation_id``, ``limit`` (1..500, default 50) and ``cursor`` (the
``next_cursor`` of the previous page).

A trace is ``RUNNING`` until its root span has ended or nothing arrived for it for the idle timeout; then it
is ``SEALED`` when a tool in it never ended, else ``FAILED`` when a span failed, else ``COMPLETED``.
"""

from __future__ import annotations

import time
from typing import Any, Final

from toolspan.bridge.views._common import NS_PER_MS
from toolspan.server._store import Store, TraceRow

__all__ = ["STATES", "QueryError", "list_traces", "trace_state"]

STATES: Final = ("RUNNING", "COMPLETED", "FAILED", "SEALED")
_DEFAULT_LIMIT: Final = 50
_MAX_LIMIT: Final = 500
_KNOWN: Final = frozenset(
    {"service", "tool", "state", "from_ms", "to_ms", "conversation_id", "limit", "cursor", "access_token"}
)
_SEALED_SQL: Final = "(root_ended = 1 OR last_seen_ns < ?)"
# Trace start times are SQLite integers (signed 64-bit nanoseconds).
_MAX_NS: Final = (1 << 63) - 1
_MAX_MS: Final = _MAX_NS // NS_PER_MS
_HEX: Final = frozenset("0123456789abcdef")


class QueryError(ValueError):
    """A bad query parameter (answered with 400)."""


def trace_state(row: TraceRow, idle_cut_ns: int) -> str:
    if not (row.root_ended or row.last_seen_ns < idle_cut_ns):
        return "RUNNING"
    if row.open_tools:
        return "SEALED"
    return "FAILED" if row.errors else "COMPLETED"


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _int(params: dict[str, str], name: str, low: int, high: int) -> int | None:
    """Query parameter ``name`` as a whole number in ``low..high`` (``None`` when absent)."""
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    text = raw.strip()
    if not (_digits(text) or (text[:1] == "-" and _digits(text[1:]))) or len(text) > 20:
        raise QueryError(f"{name}: expected a whole number, got {raw[:40]!r}")
    value = int(text)
    if not low <= value <= high:
        raise QueryError(f"{name}: expected {low}..{high}, got {text}")
    return value


def _summary(row: TraceRow, idle_cut_ns: int) -> dict[str, Any]:
    return {
        "trace_id": row.trace_id,
        "root_name": row.root_name,
        "service": row.service,
        "conversation_id": row.conversation_id,
        "start": row.start_ns // NS_PER_MS,
        "duration_ms": None if row.end_ns is None else (row.end_ns - row.start_ns) // NS_PER_MS,
        "spans": row.spans,
        "tool_calls": row.tools,
        "errors": row.errors,
        "state": trace_state(row, idle_cut_ns),
    }


def list_traces(store: Store, params: dict[str, str], idle_timeout_s: float) -> dict[str, Any]:
    """One page of trace summaries: ``{"traces": [...], "next_cursor": str | None}``."""
    unknown = sorted(set(params) - _KNOWN)
    if unknown:
        raise QueryError(f"unknown query parameter {unknown[0]!r}")
    idle_cut = time.time_ns() - int(idle_timeout_s * 1e9)
    where = ["1 = 1"]
    args: list[Any] = []
    if params.get("service"):
        where.append("service = ?")
        args.append(params["service"])
    if params.get("conversation_id"):
        where.append("conversation_id = ?")
        args.append(params["conversation_id"])
    if params.get("tool"):
        where.append(
            "EXISTS (SELECT 1 FROM spans s WHERE s.trace_id = traces.trace_id AND s.is_tool = 1"
            " AND s.tool_name = ?)"
        )
        args.append(params["tool"])
    start_from = _int(params, "from_ms", 0, _MAX_MS)
    if start_from is not None:
        where.append("start_ns >= ?")
        args.append(start_from * NS_PER_MS)
    start_to = _int(params, "to_ms", 0, _MAX_MS)
    if start_to is not None:
        where.append("start_ns < ?")
        args.append(start_to * NS_PER_MS)
    state = params.get("state")
    if state:
        state = state.upper()
        if state not in STATES:
            raise QueryError(f"state: expected one of {', '.join(STATES)}, got {params['state']!r}")
        if state == "RUNNING":
            where.append(f"NOT {_SEALED_SQL}")
        else:
            where.append(_SEALED_SQL)
            where.append(
                {"SEALED": "open_tools > 0", "FAILED": "open_tools = 0 AND errors > 0"}.get(
                    state, "open_tools = 0 AND errors = 0"
                )
            )
        args.append(idle_cut)
    cursor = params.get("cursor")
    if cursor:
        ns, _, trace_id = cursor.partition("-")
        if not (_digits(ns) and len(ns) <= 19 and int(ns) <= _MAX_NS and len(trace_id) == 32):
            raise QueryError(f"cursor: not a cursor of this listing: {cursor[:80]!r}")
        if not set(trace_id) <= _HEX:
            raise QueryError(f"cursor: not a cursor of this listing: {cursor[:80]!r}")
        where.append("(start_ns, trace_id) < (?, ?)")
        args += [int(ns), trace_id]
    limit = _int(params, "limit", 1, _MAX_LIMIT)
    limit = _DEFAULT_LIMIT if limit is None else limit
    rows = store.list_traces(" AND ".join(where), args, limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = f"{rows[-1].start_ns}-{rows[-1].trace_id}" if more and rows else None
    return {"traces": [_summary(r, idle_cut) for r in rows], "next_cursor": next_cursor}
