"""What the trace list shows beyond the summary rows, read the same way on both engines (``sql.listing``):
each trace's tool calls counted per listed state, and the spans that name its run
(``toolspan.bridge.views.run_name``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from toolspan import semconv as sc

__all__ = ["LISTED_TOOL_STATES", "tool_state_counts"]

# The tool states a trace's state depends on beyond its summary row: a denied or cancelled call is not an
# error of the run, and a call waiting for its approval (``spans.waiting``) makes the run AWAITING_APPROVAL.
LISTED_TOOL_STATES: Final = (sc.STATE_DENIED, sc.STATE_CANCELLED, sc.STATE_AWAITING_APPROVAL)


def tool_state_counts(rows: Iterable[Sequence[Any]]) -> dict[str, dict[str, int]]:
    """``{trace id: {state: calls}}`` of ``(trace id, state, count)`` rows."""
    out: dict[str, dict[str, int]] = {}
    for trace_id, state, count in rows:
        out.setdefault(str(trace_id), {})[str(state)] = int(count)
    return out
