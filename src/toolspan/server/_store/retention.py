"""Which traces a retention sweep drops, on either engine: every trace not updated within ``max_age_ns``
(by its ``last_seen_ns``), then, oldest update first, traces until at most ``max_spans`` spans are left.
Whole traces only, so a view never shows a trace with spans missing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from toolspan.server._store import sql

__all__ = ["doomed_traces"]


def doomed_traces(
    execute: Callable[[str, Sequence[Any]], Any], now_ns: int, max_age_ns: int | None, max_spans: int | None
) -> list[str]:
    """The trace ids to drop; ``execute(sql, params)`` runs SQL with ``?`` placeholders on the store's
    connection (in the sweep's transaction)."""
    doomed: list[str] = []
    if max_age_ns is not None:
        old = execute(sql.TRACES_SEEN_BEFORE, (now_ns - max_age_ns,))
        doomed += [r[0] for r in old]
    if max_spans is not None:
        total = execute(sql.SPANS_HELD, ()).fetchone()[0]
        gone = set(doomed)
        for trace_id, count in execute(sql.TRACES_BY_LAST_SEEN, ()):
            if total <= max_spans:
                break
            if trace_id not in gone:
                doomed.append(trace_id)
                total -= count
    return doomed
