"""What the trace list shows beyond the summary rows, read the same way on both engines: each trace's tool
calls counted per listed state, and the spans that name its run (``toolspan.bridge.views.run_name``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from toolspan import semconv as sc

__all__ = ["LISTED_TOOL_STATES", "LISTED_TOOL_STATES_SQL", "NAMING_SPANS_SQL", "tool_state_counts"]

# The tool states a trace's state depends on beyond its summary row: a denied or cancelled call is not an
# error of the run, and a call waiting for its approval makes the run AWAITING_APPROVAL.
LISTED_TOOL_STATES: Final = (sc.STATE_DENIED, sc.STATE_CANCELLED, sc.STATE_AWAITING_APPROVAL)
LISTED_TOOL_STATES_SQL: Final = "(" + ", ".join(f"'{state}'" for state in LISTED_TOOL_STATES) + ")"
# The spans of ``s`` (table ``spans``) that name their run: the roots, else (no root has arrived yet: a live
# run of which only a tool's record is here) the first span.
NAMING_SPANS_SQL: Final = (
    "(s.parent IS NULL OR (NOT EXISTS (SELECT 1 FROM spans r WHERE r.trace_id = s.trace_id"
    " AND r.parent IS NULL) AND s.span_id = (SELECT f.span_id FROM spans f WHERE f.trace_id = s.trace_id"
    " ORDER BY f.start_ns, f.span_id LIMIT 1)))"
)


def tool_state_counts(rows: Iterable[Sequence[Any]]) -> dict[str, dict[str, int]]:
    """``{trace id: {state: calls}}`` of ``(trace id, state, count)`` rows."""
    out: dict[str, dict[str, int]] = {}
    for trace_id, state, count in rows:
        out.setdefault(str(trace_id), {})[str(state)] = int(count)
    return out
