"""The store's statements, each written once for both engines (``?`` and the words of ``dialect``), named,
each with what it selects or writes: here those of the core tables (spans, traces, log records, the event
log, the store's own values); the trace list's conditions in ``listing``, the control channel's in
``control``, what one engine runs alone in ``engines``; every table declared once in ``tables``, whose
column lists and conflict clauses the statements use. (The schema's DDL is in ``schema``: its history.)

A list parameter is read as the table ``j(value)`` (``{ids}``); a list of span keys (trace id then span id,
as one text) as the table ``k(t, sp)`` (``KEYS``).
"""

from __future__ import annotations

from typing import Final

from toolspan.server._store.sql.tables import SUMMARY_OF_SPANS, TRACES

__all__ = [
    "COUNT_LOGS",
    "COUNT_SPANS",
    "COUNT_TRACES",
    "EVENTS_AFTER",
    "EVENTS_OF_CONVERSATION",
    "EVENTS_OF_TRACE",
    "EVENTS_ORDER",
    "HORIZON",
    "KEYS",
    "LAST_EVENT_OF_TRACES",
    "LOGS_OF_SPANS",
    "LOGS_OF_TRACE",
    "LOGS_OF_TRACES",
    "META_PUT",
    "OLD_LOGS",
    "RECOMPUTE_SUMMARIES",
    "SPAN",
    "SPANS_OF_CONVERSATION",
    "SPANS_OF_TRACE",
    "SPANS_OF_TRACE_FIRST",
    "SPANS_OF_TRACES",
    "SPANS_HELD",
    "SPAN_ANY_TRACE",
    "STORED_SPANS",
    "SUMMARIES",
    "TRACES_BY_LAST_SEEN",
    "TRACES_LISTED",
    "TRACES_SEEN_BEFORE",
    "TRACES_WHERE",
    "TRACE_VERSION",
    "TRACE_VERSIONS",
    "TRACE_CONVERSATIONS",
    "TRACE_ROW",
    "WAITING_SPANS",
    "delete_traces",
]

KEYS: Final = "(SELECT substr(j.value, 1, 32) AS t, substr(j.value, 33) AS sp FROM {ids}) AS k"

# --- spans (each read with its trace id: the log records of those traces are joined to them) ------------

SPANS_OF_TRACE: Final = "SELECT data, trace_id FROM spans WHERE trace_id = ?"
# The first spans of a trace by start (``Storage.first_spans``: a page's first screen), in no order: the ids
# sorted first, the records read after (a sort carrying every record's data would cost a whole read).
SPANS_OF_TRACE_FIRST: Final = (
    "SELECT data, trace_id FROM spans WHERE trace_id = ? AND span_id IN"
    " (SELECT span_id FROM spans WHERE trace_id = ? ORDER BY start_ns, span_id LIMIT ?)"
)
SPANS_OF_TRACES: Final = "SELECT s.data, s.trace_id FROM {ids} {join} spans AS s ON s.trace_id = j.value"
SPANS_OF_CONVERSATION: Final = (
    "SELECT data, trace_id FROM spans WHERE trace_id IN"
    " (SELECT trace_id FROM traces WHERE conversation_id = ? OR trace_id = ?)"
)
SPAN: Final = "SELECT data, trace_id FROM spans WHERE trace_id = ? AND span_id = ?"
SPAN_ANY_TRACE: Final = "SELECT data, trace_id FROM spans WHERE span_id = ?"
# The tool spans waiting for an approval after a position (the control channel's inbox): those whose
# application asked for the decision lately (``control_polls``), and those it never asked for whose trace
# arrived lately.
WAITING_SPANS: Final = (
    "SELECT s.data, s.trace_id FROM spans s JOIN traces t ON t.trace_id = s.trace_id"
    " LEFT JOIN control_polls p ON p.trace_id = s.trace_id AND p.span_id = s.span_id"
    " WHERE s.waiting = 1 AND (s.start_ns, s.trace_id, s.span_id) > (?, ?, ?)"
    " AND (p.until_ns >= ? OR (p.until_ns IS NULL AND t.last_seen_ns >= ?))"
    " ORDER BY s.start_ns, s.trace_id, s.span_id LIMIT ?"
)
# The stored record and end of the spans of some keys (``KEYS``): what an ingest request meets.
STORED_SPANS: Final = (
    f"SELECT s.trace_id, s.span_id, s.data, s.end_ns FROM {KEYS} {{join}} spans AS s"
    " ON s.trace_id = k.t AND s.span_id = k.sp"
)
COUNT_SPANS: Final = "SELECT count(*) FROM spans"

# --- log records ---------------------------------------------------------------------------------------

LOGS_OF_TRACE: Final = "SELECT data FROM logs WHERE trace_id = ? ORDER BY {log_order}"
LOGS_OF_TRACES: Final = (
    "SELECT l.data FROM {ids} {join} logs AS l ON l.trace_id = j.value ORDER BY l.{log_order}"
)
LOGS_OF_SPANS: Final = (
    f"SELECT l.data FROM {KEYS} {{join}} logs AS l ON l.trace_id = k.t AND l.span_id = k.sp"
    " ORDER BY l.{log_order}"
)
# Log records whose spans never arrived are kept only as long as a trace would be.
OLD_LOGS: Final = (
    "DELETE FROM logs WHERE ns < ? AND NOT EXISTS (SELECT 1 FROM traces t WHERE t.trace_id = logs.trace_id)"
)
COUNT_LOGS: Final = "SELECT count(*) FROM logs"

# --- trace summaries -----------------------------------------------------------------------------------

TRACE_ROW: Final = f"SELECT {TRACES.listed} FROM traces WHERE trace_id = ?"
# What a trace's spans and log records are now (``Storage.trace_version``, ``trace_versions``): its summary's
# ``last_seen_ns`` (moved forward, never back, by every transaction that adds or changes one of its spans)
# and span count, and how many log records it has and the newest one's time (records are added, and dropped
# by age).
_VERSION: Final = (
    "t.last_seen_ns, t.spans, (SELECT count(*) FROM logs l WHERE l.trace_id = t.trace_id),"
    " (SELECT max(l.ns) FROM logs l WHERE l.trace_id = t.trace_id)"
)
TRACE_VERSION: Final = f"SELECT {_VERSION} FROM traces t WHERE t.trace_id = ?"
TRACE_VERSIONS: Final = (
    f"SELECT t.trace_id, {_VERSION} FROM {{ids}} {{join}} traces AS t ON t.trace_id = j.value"
)
# Followed by the caller's condition (fixed fragments and ``?`` only) and ``TRACES_LISTED``.
TRACES_WHERE: Final = f"SELECT {TRACES.listed} FROM traces WHERE "
TRACES_LISTED: Final = " ORDER BY start_ns DESC, trace_id DESC LIMIT ?"
TRACE_CONVERSATIONS: Final = (
    "SELECT t.conversation_id FROM {ids} {join} traces AS t ON t.trace_id = j.value"
    " WHERE t.conversation_id IS NOT NULL"
)
# The summary rows of the traces listed (``{ids}``).
SUMMARIES: Final = (
    "SELECT " + ", ".join(f"t.{c}" for c in TRACES.names) + " FROM {ids} {join} traces AS t"
    " ON t.trace_id = j.value"
)
COUNT_TRACES: Final = "SELECT count(*) FROM traces"
# The summary rows of some traces from all their spans (a stored span changed, or a second root arrived),
# each column as ``tables.SUMMARY_OF_SPANS`` says.
RECOMPUTE_SUMMARIES: Final = (
    f"INSERT INTO traces ({TRACES.listed}) SELECT "
    + ", ".join(SUMMARY_OF_SPANS[c] for c in TRACES.names)
    + " FROM {ids} {join} spans AS s ON s.trace_id = j.value WHERE 1 = 1 GROUP BY s.trace_id "
    + TRACES.upsert
)
# Retention: the traces not updated since a time (``last_seen_ns``), how many spans the traces hold, and
# each trace's span count, the oldest update first.
TRACES_SEEN_BEFORE: Final = "SELECT trace_id FROM traces WHERE last_seen_ns < ?"
SPANS_HELD: Final = "SELECT coalesce(sum(spans), 0) FROM traces"
TRACES_BY_LAST_SEEN: Final = "SELECT trace_id, spans FROM traces ORDER BY last_seen_ns"

# --- the event log -------------------------------------------------------------------------------------

# Events after a cursor, with their spans' records: the caller adds ``EVENTS_OF_TRACE`` and
# ``EVENTS_OF_CONVERSATION`` as asked, then ``EVENTS_ORDER``. (``e.ns >= ?`` lets PostgreSQL use the
# index for the row comparison.)
EVENTS_AFTER: Final = (
    "SELECT e.ns, e.trace_id, e.span_id, e.phase, s.data FROM events e"
    " JOIN spans s ON s.trace_id = e.trace_id AND s.span_id = e.span_id"
    " WHERE e.ns >= ? AND (e.ns, e.trace_id, e.span_id, e.phase) > (?, ?, ?, ?)"
)
EVENTS_OF_TRACE: Final = " AND e.trace_id = ?"
# A conversation's events are those of its traces, as its timeline reads them (no index on the event log
# for it: one index less to write on every ingest).
EVENTS_OF_CONVERSATION: Final = (
    " AND e.trace_id IN (SELECT trace_id FROM traces WHERE conversation_id = ? OR trace_id = ?)"
)
EVENTS_ORDER: Final = " ORDER BY e.ns, e.trace_id, e.span_id, e.phase LIMIT ?"
LAST_EVENT_OF_TRACES: Final = (
    "SELECT e.ns, e.trace_id, e.span_id, e.phase FROM {ids} {join} events AS e ON e.trace_id = j.value"
    " ORDER BY e.ns DESC, e.trace_id DESC, e.span_id DESC, e.phase DESC LIMIT 1"
)

# --- the store's own values ----------------------------------------------------------------------------

HORIZON: Final = "SELECT value FROM meta WHERE key = 'horizon'"
META_PUT: Final = "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"


def delete_traces(table: str) -> str:
    """Delete the rows of ``table`` of the traces listed (``{ids}``)."""
    return f"DELETE FROM {table} WHERE trace_id IN (SELECT j.value FROM {{ids}})"
