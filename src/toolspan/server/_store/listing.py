"""What the trace list shows beyond the summary rows, read the same way on both engines: each trace's tool
calls counted per listed state, and the spans that name its run (``toolspan.bridge.views.run_name``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from toolspan import semconv as sc

__all__ = ["LISTED_TOOL_STATES", "NAMING_SPANS", "TOOL_STATE_COUNTS", "tool_state_counts"]

# The tool states a trace's state depends on beyond its summary row: a denied or cancelled call is not an
# error of the run, and a call waiting for its approval (``spans.waiting``) makes the run AWAITING_APPROVAL.
LISTED_TOOL_STATES: Final = (sc.STATE_DENIED, sc.STATE_CANCELLED, sc.STATE_AWAITING_APPROVAL)
# ``(trace id, state, calls)`` of the tool spans of the traces listed (``{ids}``), grouped.
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


def tool_state_counts(rows: Iterable[Sequence[Any]]) -> dict[str, dict[str, int]]:
    """``{trace id: {state: calls}}`` of ``(trace id, state, count)`` rows."""
    out: dict[str, dict[str, int]] = {}
    for trace_id, state, count in rows:
        out.setdefault(str(trace_id), {})[str(state)] = int(count)
    return out
