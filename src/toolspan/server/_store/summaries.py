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

__all__ = [
    "Sum",
    "fold",
    "folded_rows",
    "recompute_summaries",
    "stored_summaries",
    "summary_rows",
    "update_folded",
    "update_summaries",
]


def _greater(a: Any, b: Any) -> Any:
    """SQL ``max()`` of two values of one column: ``NULL`` only when both are."""
    if a is None:
        return b
    if b is None:
        return a
    return a if a >= b else b


# A trace's new rows, folded (``fold``): a list, which pickles in C (a parse worker folds a request's rows).
SERVICE, CONVERSATION, ROOT, START, END, SPANS, TOOLS, ERRORS, OPEN = range(9)
# Its root (the parentless row that starts first, then the smaller span id): (start, span id, name, ended).
Sum = list[Any]


def fold(rows: Iterable[Sequence[Any]]) -> dict[str, Sum]:
    """The summary of each trace's rows (``Row``s, or their plain tuples), by trace id, in one pass."""
    sums: dict[str, Sum] = {}
    for row in rows:
        trace_id, span_id, parent, name, start, end = row[0], row[1], row[2], row[3], row[4], row[5]
        tool, error, service, conversation = row[6], row[9], row[10], row[11]
        found = sums.get(trace_id)
        if found is None:
            sums[trace_id] = [
                service,
                conversation,
                (start, span_id, name, end is not None) if parent is None else None,
                start,
                end,
                1,
                tool,
                error,
                int(tool and end is None),
            ]
            continue
        if service is not None and (found[SERVICE] is None or service > found[SERVICE]):
            found[SERVICE] = service
        if conversation is not None and (found[CONVERSATION] is None or conversation > found[CONVERSATION]):
            found[CONVERSATION] = conversation
        if parent is None:
            root = found[ROOT]
            if root is None or (start, span_id) < (root[0], root[1]):
                found[ROOT] = (start, span_id, name, end is not None)
        found[START] = min(found[START], start)
        if end is not None and (found[END] is None or end > found[END]):
            found[END] = end
        found[SPANS] += 1
        if tool:
            found[TOOLS] += 1
            if end is None:
                found[OPEN] += 1
        found[ERRORS] += error
    return sums


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
    sums = fold(row for row in inserts if row.trace_id not in recompute)
    return folded_rows(sums, old_rows, stamp, recompute)


def folded_rows(
    sums: Mapping[str, Sum],
    old_rows: Mapping[str, TraceRow],
    stamp: Callable[[TraceRow | None], int],
    recompute: set[str],
) -> tuple[list[TraceRow], set[str]]:
    """``summary_rows`` of the new rows' summaries (``fold``): the traces that gain a second root are added to
    ``recompute``, which is returned."""
    rows: list[TraceRow] = []
    for trace_id, new in sums.items():
        root = new[ROOT]
        old = old_rows.get(trace_id)
        if old is None:
            rows.append(
                TraceRow(
                    trace_id,
                    new[SERVICE],
                    new[CONVERSATION],
                    None if root is None else root[2],
                    int(root is not None and root[3]),
                    new[START],
                    new[END],
                    stamp(None),
                    new[SPANS],
                    new[TOOLS],
                    new[ERRORS],
                    new[OPEN],
                )
            )
        elif root is not None and old.root_name is not None:
            recompute.add(trace_id)  # a second root: which one starts first is in the spans table
        else:
            rows.append(
                TraceRow(
                    trace_id,
                    _greater(old.service, new[SERVICE]),
                    _greater(old.conversation_id, new[CONVERSATION]),
                    old.root_name if root is None else root[2],
                    old.root_ended if root is None else int(root[3]),
                    min(old.start_ns, new[START]),
                    _greater(old.end_ns, new[END]),
                    stamp(old),
                    old.spans + new[SPANS],
                    old.tools + new[TOOLS],
                    old.errors + new[ERRORS],
                    old.open_tools + new[OPEN],
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
    rows, recompute = summary_rows(inserts, changed, old_rows, lambda old: _stamp(ns, old))
    if rows:
        tx.dialect.insert(conn, TRACES, rows, TRACES.upsert)
    if recompute:
        recompute_summaries(conn, recompute, ns)


def _stamp(ns: int, old: TraceRow | None) -> int:
    """A summary row's ``last_seen_ns`` written at ``ns``: never back."""
    return ns if old is None else max(ns, int(old.last_seen_ns) + 1)


def update_folded(tx: Tx, sums: Mapping[str, Sum], stored: Mapping[str, TraceRow]) -> None:
    """``update_summaries`` of new spans only, from their summaries (``fold``) and the stored rows of their
    traces (``stored_summaries``)."""
    ns = tx.ns
    rows, recompute = folded_rows(sums, stored, lambda old: _stamp(ns, old), set())
    if rows:
        tx.dialect.insert(tx.conn, TRACES, rows, TRACES.upsert)
    if recompute:
        recompute_summaries(tx.conn, recompute, ns)


def recompute_summaries(conn: Connection, trace_ids: Iterable[str], ns: int) -> None:
    """The summary rows of ``trace_ids`` recomputed from all their spans, ``last_seen_ns`` moved to ``ns``
    (never back)."""
    conn.execute(RECOMPUTE_SUMMARIES, (ns, sorted(trace_ids)))
