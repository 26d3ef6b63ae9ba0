"""``GET /api/traces``: filters to parameterised SQL, summary rows, cursor pagination (newest first).

Query parameters: ``service``, ``tool`` (a tool name called in the trace), ``state`` (the trace's state:
``RUNNING``, ``AWAITING_APPROVAL``, ``COMPLETED``, ``FAILED``, ``CANCELLED``, ``DENIED``, ``SEALED``), ``q``
(search: a part of the trace id, the root span's name, the service, the conversation id, a tool name or (3
characters or more) the root's recorded input, ignoring the case of ASCII letters), ``from_ms`` / ``to_ms``
(trace start, ms since the epoch, inclusive / exclusive), ``conversation_id``, ``limit`` (1..500, default 50)
and ``cursor`` (the ``next_cursor`` of the previous page).

A trace is ``RUNNING`` until its root span has ended or nothing arrived for it for the idle timeout
(``AWAITING_APPROVAL`` while one of its tool calls waits for an approval); then it is ``SEALED`` when a tool
in it never ended, else ``FAILED`` when a span failed, else ``CANCELLED`` when a tool call was cancelled (from
the page, by a cancel request, by Ctrl-C), else ``DENIED`` when a tool call was denied (by an approver or the
policy: the run went on as designed, the call's body never ran), else ``COMPLETED``. ``errors`` counts the
spans that failed, ``denied`` and ``cancelled`` the denied and cancelled tool calls (neither is an error),
``waiting`` the calls waiting for an approval, so the list agrees with the trace page's counts. ``name`` is
the run's one name (``toolspan.bridge.views.run_name``: what the user asked, else its root's name), as the
trace page titles it; ``input`` is what the user asked the run (its root's recorded input, the last user
message, cut at 200 characters), or ``null``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

from toolspan import semconv as sc
from toolspan._util.ids import parse_trace_id
from toolspan.bridge.model import Span
from toolspan.bridge.views import request_text, run_name
from toolspan.bridge.views.internal import NS_PER_MS
from toolspan.errors import ToolspanError
from toolspan.server._store.api import StoreApi
from toolspan.server._store.sql import listing as sql
from toolspan.server._store.sql.tables import TraceRow

__all__ = [
    "PARAMETERS",
    "STATES",
    "Key",
    "QueryError",
    "ascii_lower",
    "cursor_of",
    "list_page",
    "list_traces",
    "page_limit",
    "parse_cursor",
    "start_bounds",
    "summary",
    "trace_state",
]

STATES: Final = sc.TRACE_STATES
_DEFAULT_LIMIT: Final = 50
_MAX_LIMIT: Final = 500
# The listing's query parameters, listed once (the OpenAPI document reads them here).
PARAMETERS: Final = (
    "service",
    "tool",
    "state",
    "q",
    "from_ms",
    "to_ms",
    "conversation_id",
    "limit",
    "cursor",
)
_KNOWN: Final = frozenset({*PARAMETERS, "access_token"})
# The root's stored record is searched for words of 3 bytes or more only: a needle that short would match
# the binary fields of a protobuf record by chance.
_MIN_ROOT_NEEDLE: Final = 3
_MAX_SEARCH: Final = 200

# Trace start times are SQLite integers (signed 64-bit nanoseconds).
_MAX_NS: Final = (1 << 63) - 1
_MAX_MS: Final = _MAX_NS // NS_PER_MS

# Where a row is in the listing's order (newest first): its start and trace id; cursors name one.
Key = tuple[int, str]


class QueryError(ToolspanError, ValueError):
    """A bad query parameter (answered with 400)."""


def trace_state(row: TraceRow, idle_cut_ns: int, calls: Mapping[str, int] | None = None) -> str:
    """The trace's state; ``calls``: its tool calls per listed state (DENIED and CANCELLED ones are counted
    among ``row.errors``; AWAITING_APPROVAL ones among its open tools)."""
    calls = calls or {}
    denied = calls.get(sc.STATE_DENIED, 0)
    cancelled = calls.get(sc.STATE_CANCELLED, 0)
    if not (row.root_ended or row.last_seen_ns < idle_cut_ns):
        return "AWAITING_APPROVAL" if calls.get(sc.STATE_AWAITING_APPROVAL) else "RUNNING"
    if row.open_tools:
        return "SEALED"
    if row.errors > denied + cancelled:
        return "FAILED"
    if cancelled:
        return "CANCELLED"
    return "DENIED" if denied else "COMPLETED"


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


def summary(row: TraceRow, idle_cut_ns: int, calls: Mapping[str, int], naming: list[Span]) -> dict[str, Any]:
    denied = calls.get(sc.STATE_DENIED, 0)
    cancelled = calls.get(sc.STATE_CANCELLED, 0)
    return {
        "trace_id": row.trace_id,
        "name": run_name(naming) or row.root_name or row.trace_id,
        "root_name": row.root_name,
        "input": _input(naming),
        "service": row.service,
        "conversation_id": row.conversation_id,
        "start": row.start_ns // NS_PER_MS,
        "duration_ms": None if row.end_ns is None else (row.end_ns - row.start_ns) // NS_PER_MS,
        "spans": row.spans,
        "tool_calls": row.tools,
        "errors": row.errors - denied - cancelled,
        "denied": denied,
        "cancelled": cancelled,
        "waiting": calls.get(sc.STATE_AWAITING_APPROVAL, 0),
        "state": trace_state(row, idle_cut_ns, calls),
    }


def _input(naming: list[Span]) -> str | None:
    """What the user asked the run: the first of its roots (in start order) that recorded it."""
    for span in sorted(naming, key=lambda s: (s.start_ns, s.span_id)):
        if span.parent_span_id is None:
            text = request_text(span)
            if text is not None:
                return text
    return None


def ascii_lower(text: str) -> str:
    """``text`` with ASCII letters in lower case, as SQLite's ``lower()`` does (other letters kept)."""
    return "".join(c.lower() if c.isascii() else c for c in text)


def _search(q: str) -> tuple[str, list[Any]]:
    """The SQL condition and arguments of ``q=``: a part of an id or a name, or of the root span's stored
    record (its recorded input, in whatever encoding it arrived: the words match), ASCII case ignored."""
    if len(q) > _MAX_SEARCH:
        raise QueryError(f"q: at most {_MAX_SEARCH} characters, got {len(q)}")
    lower = ascii_lower(q)
    try:
        needle = lower.encode("utf-8")
    except UnicodeEncodeError:
        raise QueryError("q: not valid text (a lone surrogate)") from None
    escaped = lower.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    if len(needle) < _MIN_ROOT_NEEDLE:
        return sql.SEARCH + ")", [f"%{escaped}%"] * 5
    return sql.SEARCH + sql.SEARCH_ROOT + ")", [f"%{escaped}%"] * 5 + [needle]


def list_traces(store: StoreApi, params: dict[str, str], idle_timeout_s: float) -> dict[str, Any]:
    """One page of trace summaries: ``{"traces": [...], "next_cursor": str | None}``."""
    rows, more = list_page(store, params, idle_timeout_s)
    next_cursor = cursor_of(rows[-1][0]) if more and rows else None
    return {"traces": [row for _, row in rows], "next_cursor": next_cursor}


def cursor_of(key: Key) -> str:
    """The cursor of the page after the row of ``key``."""
    return f"{key[0]}-{key[1]}"


def parse_cursor(cursor: str) -> Key:
    """The key of a ``cursor`` (the rows after it are listed); ``QueryError`` when it is none."""
    ns, _, trace_id = cursor.partition("-")
    if not (_digits(ns) and len(ns) <= 19 and int(ns) <= _MAX_NS and len(trace_id) == 32):
        raise QueryError(f"cursor: not a cursor of this listing: {cursor[:80]!r}")
    if parse_trace_id(trace_id) is None:
        raise QueryError(f"cursor: not a cursor of this listing: {cursor[:80]!r}")
    return int(ns), trace_id


def list_page(
    store: StoreApi, params: dict[str, str], idle_timeout_s: float
) -> tuple[list[tuple[Key, dict[str, Any]]], bool]:
    """The rows of one page, each with its key (newest first), and whether more follow."""
    unknown = sorted(set(params) - _KNOWN)
    if unknown:
        raise QueryError(f"unknown query parameter {unknown[0]!r}")
    idle_cut = time.time_ns() - int(idle_timeout_s * 1e9)
    where = [sql.ALL]
    args: list[Any] = []
    if params.get("service"):
        where.append(sql.SERVICE_IS)
        args.append(params["service"])
    if params.get("conversation_id"):
        where.append(sql.CONVERSATION_IS)
        args.append(params["conversation_id"])
    if params.get("tool"):
        where.append(sql.TOOL_CALLED)
        args.append(params["tool"])
    start_from, start_to = start_bounds(params)
    if start_from is not None:
        where.append(sql.STARTS_FROM)
        args.append(start_from)
    if start_to is not None:
        where.append(sql.STARTS_BEFORE)
        args.append(start_to)
    state = params.get("state")
    if state:
        state = state.upper()
        if state not in STATES:
            raise QueryError(f"state: expected one of {', '.join(STATES)}, got {params['state']!r}")
        if state in ("RUNNING", "AWAITING_APPROVAL"):
            where.append(f"NOT {sql.SEALED}")
            where.append(
                sql.AWAITING_APPROVAL if state == "AWAITING_APPROVAL" else f"NOT {sql.AWAITING_APPROVAL}"
            )
        else:
            where.append(sql.SEALED)
            where.append(sql.STATE[state])
        args.append(idle_cut)
    if params.get("q"):
        condition, search_args = _search(params["q"])
        where.append(condition)
        args += search_args
    cursor = params.get("cursor")
    if cursor:
        where.append(sql.BEFORE_CURSOR)
        args += list(parse_cursor(cursor))
    limit = page_limit(params)
    rows = store.list_traces(" AND ".join(where), args, limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    calls, spans = store.listing_details([r.trace_id for r in rows]) if rows else ({}, [])
    naming: dict[str, list[Span]] = {}
    for span in spans:
        naming.setdefault(span.trace_id, []).append(span)
    summaries = [
        (
            (r.start_ns, r.trace_id),
            summary(r, idle_cut, calls.get(r.trace_id, {}), naming.get(r.trace_id, [])),
        )
        for r in rows
    ]
    return summaries, more


def start_bounds(params: dict[str, str]) -> tuple[int | None, int | None]:
    """The trace starts ``from_ms`` and ``to_ms`` ask for, in nanoseconds (inclusive, exclusive)."""
    start_from = _int(params, "from_ms", 0, _MAX_MS)
    start_to = _int(params, "to_ms", 0, _MAX_MS)
    return (
        None if start_from is None else start_from * NS_PER_MS,
        None if start_to is None else start_to * NS_PER_MS,
    )


def page_limit(params: dict[str, str]) -> int:
    """The rows of a page ``limit=`` asks for (1..500, default 50)."""
    limit = _int(params, "limit", 1, _MAX_LIMIT)
    return _DEFAULT_LIMIT if limit is None else limit
