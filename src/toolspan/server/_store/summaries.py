"""The ``traces`` table's summary rows, kept up to date inside the ingest transaction.

A trace that only gained new spans is updated from the old summary and the new rows (counts added, the
earliest start, the latest end, the greater service and conversation id, the root); a trace where a stored
span changed (a pending record then its ended record), or that gained a second root, is recomputed from
all its spans. Both give the same row: the root is the parentless span that starts first (then the
smaller span id).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from toolspan.server._rows.spans import Row
from toolspan.server._store.dialect import Connection
from toolspan.server._store.sql import RECOMPUTE_SUMMARIES, SUMMARIES
from toolspan.server._store.sql.tables import TRACES, TraceRow
from toolspan.server._store.tx import Tx

__all__ = ["recompute_summaries", "stored_summaries", "summary_rows", "update_summaries"]


def _greater(a: Any, b: Any) -> Any:
    """SQL ``max()`` of two values of one column: ``NULL`` only when both are."""
    if a is None:
        return b
    if b is None:
        return a
    return a if a >= b else b


class _Sum:
    """The summary of a trace's new rows."""

    __slots__ = ("conversation", "end", "errors", "open", "root", "service", "spans", "start", "tools")

    def __init__(self, row: Row) -> None:
        self.service = row.service
        self.conversation = row.conversation_id
        self.root: Row | None = row if row.parent is None else None
        self.start = row.start_ns
        self.end = row.end_ns
        self.spans = 1
        self.tools = row.is_tool
        self.errors = row.is_error
        self.open = int(row.is_tool and row.end_ns is None)

    def add(self, row: Row) -> None:
        self.service = _greater(self.service, row.service)
        self.conversation = _greater(self.conversation, row.conversation_id)
        if row.parent is None and (
            self.root is None or (row.start_ns, row.span_id) < (self.root.start_ns, self.root.span_id)
        ):
            self.root = row
        self.start = min(self.start, row.start_ns)
        self.end = _greater(self.end, row.end_ns)
        self.spans += 1
        self.tools += row.is_tool
        self.errors += row.is_error
        self.open += int(row.is_tool and row.end_ns is None)


def summary_rows(
    inserts: Sequence[Row],
    changed: Iterable[str],
    old_rows: Mapping[str, TraceRow],
    stamp: Callable[[TraceRow | None], int],
) -> tuple[list[TraceRow], set[str]]:
    """The new summary rows of the traces of ``inserts`` (new spans), given their stored rows
    (``old_rows``), and the trace ids to recompute from all their spans (``changed``, and traces that gained
    a second root). ``stamp(old row or None)`` is each row's ``last_seen_ns``. Pure: the same on every
    engine."""
    recompute = set(changed)
    sums: dict[str, _Sum] = {}
    for row in inserts:
        if row.trace_id in recompute:
            continue
        found = sums.get(row.trace_id)
        if found is None:
            sums[row.trace_id] = _Sum(row)
        else:
            found.add(row)
    rows: list[TraceRow] = []
    for trace_id, new in sums.items():
        root = new.root
        old = old_rows.get(trace_id)
        if old is None:
            rows.append(
                TraceRow(
                    trace_id,
                    new.service,
                    new.conversation,
                    None if root is None else root.name,
                    int(root is not None and root.end_ns is not None),
                    new.start,
                    new.end,
                    stamp(None),
                    new.spans,
                    new.tools,
                    new.errors,
                    new.open,
                )
            )
        elif root is not None and old.root_name is not None:
            recompute.add(trace_id)  # a second root: which one starts first is in the spans table
        else:
            rows.append(
                TraceRow(
                    trace_id,
                    _greater(old.service, new.service),
                    _greater(old.conversation_id, new.conversation),
                    old.root_name if root is None else root.name,
                    old.root_ended if root is None else int(root.end_ns is not None),
                    min(old.start_ns, new.start),
                    _greater(old.end_ns, new.end),
                    stamp(old),
                    old.spans + new.spans,
                    old.tools + new.tools,
                    old.errors + new.errors,
                    old.open_tools + new.open,
                )
            )
    return rows, recompute


def stored_summaries(tx: Tx, trace_ids: Iterable[str]) -> dict[str, TraceRow]:
    """The stored summary rows of ``trace_ids`` (those that have one), by trace id."""
    wanted = sorted(trace_ids)
    if not wanted:
        return {}
    return {r[0]: TraceRow(*r) for r in tx.dialect.all_rows(tx.conn, SUMMARIES, (wanted,), TRACES.names)}


def update_summaries(
    tx: Tx,
    inserts: Sequence[Row],
    changed: Iterable[str],
    stored: Mapping[str, TraceRow] | None = None,
) -> None:
    """Bring the summary rows of the traces of ``inserts`` (new spans) and ``changed`` (trace ids whose stored
    spans were replaced) up to date, their ``last_seen_ns`` moved to the transaction's time (never back);
    ``stored``: the summary rows stored of every trace of ``inserts`` that has one, when read already
    (``stored_summaries``)."""
    changed = set(changed)
    conn, ns = tx.conn, tx.ns
    old_rows = stored_summaries(tx, {r.trace_id for r in inserts} - changed) if stored is None else stored
    rows, recompute = summary_rows(
        inserts, changed, old_rows, lambda old: ns if old is None else max(ns, int(old.last_seen_ns) + 1)
    )
    if rows:
        tx.dialect.insert(conn, TRACES, rows, TRACES.upsert)
    if recompute:
        recompute_summaries(conn, recompute, ns)


def recompute_summaries(conn: Connection, trace_ids: Iterable[str], ns: int) -> None:
    """The summary rows of ``trace_ids`` recomputed from all their spans, ``last_seen_ns`` moved to ``ns``
    (never back)."""
    conn.execute(RECOMPUTE_SUMMARIES, (ns, sorted(trace_ids)))
