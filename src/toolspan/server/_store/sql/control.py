"""The control channel's statements (``control``): its decisions, cancel requests and poll marks
(``tables.CONTROL_DECISIONS``, ``CONTROL_CANCELS``, ``CONTROL_POLLS``), and what it reads of the spans and
the event log."""

from __future__ import annotations

from typing import Final

from toolspan.server._store.sql import KEYS
from toolspan.server._store.sql.tables import CONTROL_CANCELS, CONTROL_DECISIONS, CONTROL_POLLS

__all__ = [
    "CANCELS_OF_SPANS",
    "CANCEL_OF_SPAN",
    "DECISIONS_OF_CALL",
    "DECISIONS_OF_SPANS",
    "DECISIONS_OF_SPAN_ID",
    "DECISION_OF_SPAN",
    "DROP_CANCELS",
    "DROP_DECISIONS",
    "DROP_POLLS",
    "INSERT_CANCEL",
    "INSERT_DECISION",
    "POLLED",
    "POLL_UNTIL",
    "RECEIVED",
    "RECEIVED_OF_SPANS",
    "SPAN_STATE",
]

_DECISIONS: Final = CONTROL_DECISIONS.listed
_CANCELS: Final = CONTROL_CANCELS.listed

# --- decisions -----------------------------------------------------------------------------------------

# The decisions of a span id in any trace, of a tool span (trace id, span id).
DECISIONS_OF_SPAN_ID: Final = (
    f"SELECT {_DECISIONS} FROM control_decisions WHERE span_id = ? ORDER BY trace_id"
)
DECISION_OF_SPAN: Final = f"SELECT {_DECISIONS} FROM control_decisions WHERE trace_id = ? AND span_id = ?"
# The decisions of the tool spans of some keys (``KEYS``).
DECISIONS_OF_SPANS: Final = (
    "SELECT " + ", ".join(f"d.{c}" for c in CONTROL_DECISIONS.names) + f" FROM {KEYS} {{join}}"
    " control_decisions AS d ON d.trace_id = k.t AND d.span_id = k.sp"
)
# The decisions on the spans of a model's call id, newest first.
DECISIONS_OF_CALL: Final = (
    f"SELECT {_DECISIONS} FROM control_decisions WHERE call_id = ?"
    " ORDER BY decided_ns DESC, trace_id, span_id LIMIT ?"
)
# A decision, unless one on its span is stored (then nothing).
INSERT_DECISION: Final = (
    f"INSERT INTO control_decisions ({_DECISIONS}) VALUES ({','.join('?' * len(CONTROL_DECISIONS.names))})"
    f" ON CONFLICT ({', '.join(CONTROL_DECISIONS.key)}) DO NOTHING"
)

# --- cancel requests -----------------------------------------------------------------------------------

# A cancel request, unless one for its span is stored (then nothing).
INSERT_CANCEL: Final = (
    f"INSERT INTO control_cancels ({_CANCELS}) VALUES ({','.join('?' * len(CONTROL_CANCELS.names))})"
    f" ON CONFLICT ({', '.join(CONTROL_CANCELS.key)}) DO NOTHING"
)
# The cancel request of a tool span (trace id, span id).
CANCEL_OF_SPAN: Final = f"SELECT {_CANCELS} FROM control_cancels WHERE trace_id = ? AND span_id = ?"
# The cancel requests of some span ids (``{ids}``), in any trace, oldest first.
CANCELS_OF_SPANS: Final = (
    f"SELECT {_CANCELS} FROM control_cancels WHERE span_id IN (SELECT j.value FROM {{ids}})"
    " ORDER BY requested_ns, trace_id, span_id"
)

# --- poll marks ----------------------------------------------------------------------------------------

# Until when a tool span's application asks for its decision (set, or moved).
POLLED: Final = f"INSERT INTO control_polls ({CONTROL_POLLS.listed}) VALUES (?,?,?) {CONTROL_POLLS.upsert}"
POLL_UNTIL: Final = "SELECT until_ns FROM control_polls WHERE trace_id = ? AND span_id = ?"

# --- what the control channel reads of the spans and the event log -------------------------------------

# When a tool span's first event was written (its first act), of one span and of some keys (``KEYS``).
RECEIVED: Final = "SELECT min(ns) FROM events WHERE trace_id = ? AND span_id = ?"
RECEIVED_OF_SPANS: Final = (
    f"SELECT e.trace_id, e.span_id, min(e.ns) FROM {KEYS} {{join}} events AS e"
    " ON e.trace_id = k.t AND e.span_id = k.sp GROUP BY e.trace_id, e.span_id"
)
# A stored span's end and whether it waits for an approval.
SPAN_STATE: Final = "SELECT end_ns, waiting FROM spans WHERE trace_id = ? AND span_id = ?"

# --- retention -----------------------------------------------------------------------------------------

# The decisions, cancel requests and poll marks older than a time.
DROP_DECISIONS: Final = "DELETE FROM control_decisions WHERE decided_ns < ?"
DROP_CANCELS: Final = "DELETE FROM control_cancels WHERE requested_ns < ?"
DROP_POLLS: Final = "DELETE FROM control_polls WHERE until_ns < ?"
