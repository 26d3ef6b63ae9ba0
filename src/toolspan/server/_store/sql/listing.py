"""The trace list's statements (``GET /api/traces``, ``query``): the conditions its filters add to
``sql.TRACES_WHERE`` (fixed fragments and ``?`` only, over ``traces``), and what a page shows beyond the
summary rows (``listing``)."""

from __future__ import annotations

from typing import Final

from toolspan import semconv as sc

__all__ = [
    "ALL",
    "AWAITING_APPROVAL",
    "BEFORE_CURSOR",
    "CONVERSATION_IS",
    "NAMING_SPANS",
    "SEALED",
    "SEARCH",
    "SEARCH_ROOT",
    "SERVICE_IS",
    "STARTS_BEFORE",
    "STARTS_FROM",
    "STATE",
    "TOOL_CALLED",
    "TOOL_STATE_COUNTS",
]

# Every trace (the conditions are joined to it with AND).
ALL: Final = "1 = 1"
# The trace of a service, of a conversation.
SERVICE_IS: Final = "service = ?"
CONVERSATION_IS: Final = "conversation_id = ?"
# A trace in which a tool of this name was called.
TOOL_CALLED: Final = (
    "EXISTS (SELECT 1 FROM spans s WHERE s.trace_id = traces.trace_id AND s.is_tool = 1 AND s.tool_name = ?)"
)
# A trace that started at or after a time, before a time.
STARTS_FROM: Final = "start_ns >= ?"
STARTS_BEFORE: Final = "start_ns < ?"
# A trace after a cursor's ``(start, trace id)`` in the list's order (newest first).
BEFORE_CURSOR: Final = "(start_ns, trace_id) < (?, ?)"
# A trace that is no longer running: its root ended, or nothing arrived since the idle cut.
SEALED: Final = "(root_ended = 1 OR last_seen_ns < ?)"


# The number of the trace's tool calls in a state (denied and cancelled calls are stored as errors,
# ``is_error``: a trace whose every error is one of them is DENIED or CANCELLED).
def _calls_in(state: str) -> str:
    return (
        "(SELECT count(*) FROM spans s WHERE s.trace_id = traces.trace_id AND s.is_tool = 1"
        f" AND s.tool_state = '{state}')"
    )


_DENIED: Final = _calls_in(sc.STATE_DENIED)
_CANCELLED: Final = _calls_in(sc.STATE_CANCELLED)
# A trace one of whose tool calls waits for its approval.
AWAITING_APPROVAL: Final = (
    "EXISTS (SELECT 1 FROM spans s WHERE s.trace_id = traces.trace_id AND s.is_tool = 1 AND s.waiting = 1)"
)
# A sealed trace (``SEALED``) in each ended state.
STATE: Final = {
    "SEALED": "open_tools > 0",
    "FAILED": f"open_tools = 0 AND errors > {_DENIED} + {_CANCELLED}",
    "CANCELLED": f"open_tools = 0 AND {_CANCELLED} > 0 AND errors = {_DENIED} + {_CANCELLED}",
    "DENIED": f"open_tools = 0 AND errors > 0 AND errors = {_DENIED}",
    "COMPLETED": "open_tools = 0 AND errors = 0",
}
_LIKE: Final = " LIKE ? ESCAPE '\\'"
# A trace whose id, root span's name, service, conversation id or a tool name holds the text (five times
# the same ``?``, lower case, LIKE-escaped); closed with ``)``, or with ``SEARCH_ROOT``.
SEARCH: Final = (
    f"(lower(trace_id){_LIKE} OR lower(coalesce(root_name, '')){_LIKE}"
    f" OR lower(coalesce(service, '')){_LIKE} OR lower(coalesce(conversation_id, '')){_LIKE}"
    " OR EXISTS (SELECT 1 FROM spans s WHERE s.trace_id = traces.trace_id AND s.is_tool = 1"
    f"  AND lower(s.tool_name){_LIKE})"
)
# ... or whose root's stored record (JSON text or protobuf bytes) holds its bytes (``{root_has}``, ASCII
# case ignored: its recorded input).
SEARCH_ROOT: Final = (
    " OR EXISTS (SELECT 1 FROM spans r WHERE r.trace_id = traces.trace_id AND r.parent IS NULL"
    " AND {root_has})"
)

# ``(trace id, state, calls)`` of the tool spans of the traces listed (``{ids}``), grouped: the states a
# trace's state depends on beyond its summary row (``listing.LISTED_TOOL_STATES``).
TOOL_STATE_COUNTS: Final = (
    f"SELECT s.trace_id, CASE WHEN s.waiting = 1 THEN '{sc.STATE_AWAITING_APPROVAL}' ELSE s.tool_state END"
    " AS listed, count(*) FROM {ids} {join} spans AS s ON s.trace_id = j.value"
    " WHERE s.is_tool = 1 AND (s.waiting = 1 OR s.tool_state IN"
    f" ('{sc.STATE_DENIED}', '{sc.STATE_CANCELLED}')) GROUP BY s.trace_id, listed"
)
# The spans of the traces listed that name their run: the roots, else (no root has arrived yet: a live run
# of which only a tool's record is here) the first span.
NAMING_SPANS: Final = (
    "SELECT s.data, s.trace_id FROM {ids} {join} spans AS s ON s.trace_id = j.value"
    " WHERE (s.parent IS NULL OR (NOT EXISTS (SELECT 1 FROM spans r WHERE r.trace_id = s.trace_id"
    " AND r.parent IS NULL) AND s.span_id = (SELECT f.span_id FROM spans f WHERE f.trace_id = s.trace_id"
    " ORDER BY f.start_ns, f.span_id LIMIT 1)))"
)
