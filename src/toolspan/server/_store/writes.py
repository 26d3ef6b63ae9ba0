"""The write path of one ingest request, on either engine: its span rows, their act/observe events and the
trace summaries, in one transaction (``Tx``).

A row whose key is not stored yet is inserted as it is (the common case: no span is decoded); a row whose
key is stored is compared with the stored form and, when it differs, both are decoded and merged as the
bridge merges records of one span (``toolspan.bridge._coalesce``), a pending record then its ended record.

An OTLP/HTTP request's rows are made ready in its parse worker (``prepare``: merged within the request,
their columns as one list of statement parameters, the events of their tool spans and each trace's summary
folded), so the server process, which bounds the ingest rate, runs the statements without a step per row
in Python (``put_prepared``) when none of the spans is stored yet; otherwise they are stored as above.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any, Final, NamedTuple, TypeVar, cast

from toolspan.bridge.internal import act_status
from toolspan.bridge.model import Span
from toolspan.server._rows.codec import decode, encode
from toolspan.server._rows.cursor import ACT, BOTH, OBSERVE
from toolspan.server._rows.spans import IngestResult, Row, merge, row_of_span
from toolspan.server._store.sql import STORED_SPANS
from toolspan.server._store.sql.tables import DO_NOTHING, EVENTS, SPANS, EventRow, TraceRow
from toolspan.server._store.summaries import Sum, fold, stored_summaries, update_folded, update_summaries
from toolspan.server._store.tx import Tx

__all__ = ["Plan", "Prepared", "merge_batch", "plan_rows", "prepare", "put_prepared", "put_rows"]

# A request's rows: ``Row``s, or their plain tuples (a parse worker's, which never makes a ``Row`` of each).
R = TypeVar("R", bound=Sequence[Any])
_DATA: Final = Row._fields.index("data")


class Plan(NamedTuple):
    """What one request writes: new rows, rows replacing stored ones (merged), and the events
    ``(trace id, span id, phase)`` of the tool spans among them (``BOTH`` for a new span that ended)."""

    inserts: list[Row]
    replaces: list[Row]
    events: list[tuple[str, str, int]]


def plan_rows(
    batch: dict[tuple[str, str], Row],
    existing: Mapping[tuple[str, str], tuple[str | bytes, int | None]],
    result: IngestResult,
) -> Plan:
    """What storing ``batch`` changes, given the stored ``(data, end_ns)`` of its keys that are stored
    (``existing``); duplicates are counted in ``result``. Pure: the same on every engine."""
    if not existing:  # the common case: every row is new
        inserts = list(batch.values())
        events: list[tuple[str, str, int]] = []
        for row in inserts:
            if row.is_tool:
                events.append((row.trace_id, row.span_id, ACT if row.end_ns is None else BOTH))
        return Plan(inserts, [], events)
    inserts = []
    replaces: list[Row] = []
    events = []
    for key, record in batch.items():
        row = record
        had_end = False
        old: Span | None = None
        new: Span | None = None
        old_row = existing.get(key)
        if old_row is not None:
            if old_row[0] == row.data:
                result.duplicates += 1  # the same record again
                continue
            old = decode(old_row[0])
            had_end = old_row[1] is not None
            new = merge(old, decode(row.data))
            if new is None or encode(new) == encode(old):
                # Nothing new (or a conflicting record: the first stays), counted once.
                result.duplicates += 1
                continue
            row = row_of_span(new)
            replaces.append(row)
        else:
            inserts.append(row)
        if not row.is_tool:
            continue
        if old is None:  # a new call: its act, and its observe with it when it ended already
            events.append((*key, ACT if row.end_ns is None else BOTH))
        elif new is not None and new.end_ns is None and act_status(new) != act_status(old):
            # A running call's act changed (it now waits for its approval, or got it): act again.
            events.append((*key, ACT))
        elif row.end_ns is not None and not had_end:
            events.append((*key, OBSERVE))
    return Plan(inserts, replaces, events)


def merge_batch(rows: Sequence[R], result: IngestResult) -> dict[tuple[str, str], R | Row]:
    """The rows of one request (``Row``s, or their plain tuples) keyed by trace and span id, records of one
    span within the request merged first (a pending record next to its ended span, into a ``Row``); repeats
    are counted in ``result``."""
    batch: dict[tuple[str, str], R | Row] = {}
    for row in rows:
        key = (row[0], row[1])  # trace id, span id
        known = batch.get(key)
        if known is None:
            batch[key] = row
        else:
            result.duplicates += 1
            old, new = cast("str | bytes", known[_DATA]), cast("str | bytes", row[_DATA])
            if old != new:
                merged = merge(decode(old), decode(new))
                if merged is not None:
                    batch[key] = row_of_span(merged)
    return batch


class Prepared(NamedTuple):
    """One request's span rows made ready to store (``prepare``), in the parse worker: all the server process
    does with them then is its statements, in the common case of spans not stored yet. Plain lists, dicts
    and tuples, which pickle in C."""

    accepted: int  # the usable rows received (``ingest_rows``' accepted)
    rejected: int  # rows refused (no trace id or span id), with ``message``
    message: str
    duplicates: int  # records of one span within the request, merged (``merge_batch``)
    values: list[Any]  # the merged rows' columns, row after row (``SPANS``' width each)
    events: list[Any]  # the events of the tool spans as new rows: None (its time), trace, span, phase each
    sums: dict[str, Sum]  # each trace's summary of the rows (``summaries.fold``)
    conversations: list[str]  # the conversation ids the rows name


_WIDTH: Final = len(SPANS.names)
_EVENT_WIDTH: Final = len(EVENTS.names)


def prepare(rows: Sequence[Sequence[Any]], rejected: int = 0, message: str = "") -> Prepared:
    """``rows`` (usable: each with a trace id and span id; ``Row``s, or their plain tuples) made ready to
    store. Pure."""
    result = IngestResult()
    batch = merge_batch(rows, result)
    merged = batch.values()
    events: list[Any] = []
    for row in merged:
        if row[6]:  # is_tool: as ``plan_rows`` of new rows
            events += (None, row[0], row[1], ACT if row[5] is None else BOTH)
    return Prepared(
        len(rows),
        rejected,
        message,
        result.duplicates,
        list(chain.from_iterable(merged)),
        events,
        fold(merged),
        sorted({row[11] for row in merged if row[11] is not None}),
    )


def _batch(values: list[Any]) -> dict[tuple[str, str], Row]:
    new = tuple.__new__
    rows = (new(Row, values[i : i + _WIDTH]) for i in range(0, len(values), _WIDTH))
    return {(row.trace_id, row.span_id): row for row in rows}


def put_prepared(tx: Tx, prepared: Prepared, result: IngestResult) -> None:
    """``put_rows`` of a prepared request: its rows go in as they are, unless some of them are stored
    already (then as ``put_rows`` stores them)."""
    sums, values = prepared.sums, prepared.values
    if not sums:
        return
    tx.lock_traces(sums)
    conn, dialect = tx.conn, tx.dialect
    stored = stored_summaries(tx, sums)
    if stored:
        keys = [values[i] + values[i + 1] for i in range(0, len(values), _WIDTH) if values[i] in stored]
        existing = _existing(tx, keys)
        if existing:
            _put(tx, _batch(values), existing, stored, result)
            return
    dialect.insert_flat(conn, SPANS, values, SPANS.upsert)
    update_folded(tx, sums, stored)
    tx.committed(sums, prepared.conversations)
    events = prepared.events
    if events:
        events[::_EVENT_WIDTH] = [tx.tick()] * (len(events) // _EVENT_WIDTH)
        dialect.insert_flat(conn, EVENTS, events, DO_NOTHING)


def _existing(tx: Tx, keys: list[str]) -> dict[tuple[str, str], tuple[str | bytes, int | None]]:
    """The stored ``(data, end_ns)`` of the spans ``keys`` (trace id and span id, joined) that are stored."""
    if not keys:
        return {}
    record = tx.dialect.record
    return {(r[0], r[1]): (record(r[2]), r[3]) for r in tx.conn.execute(STORED_SPANS, (keys,))}


def put_rows(tx: Tx, batch: dict[tuple[str, str], Row], result: IngestResult) -> None:
    """Store one request's rows (keyed by trace and span id, merged within the request) in the transaction
    ``tx``; duplicates are counted in ``result``."""
    if not batch:
        return
    traces = {trace_id for trace_id, _ in batch}
    tx.lock_traces(traces)
    stored = stored_summaries(tx, traces)
    # A span is stored with its trace's summary row, and dropped with it: only the spans of traces that
    # have one can be stored already (none, for a request of new traces).
    existing = _existing(tx, [t + s for t, s in batch if t in stored])
    _put(tx, batch, existing, stored, result)


def _put(
    tx: Tx,
    batch: dict[tuple[str, str], Row],
    existing: Mapping[tuple[str, str], tuple[str | bytes, int | None]],
    stored: Mapping[str, TraceRow],
    result: IngestResult,
) -> None:
    conn, dialect = tx.conn, tx.dialect
    inserts, replaces, events = plan_rows(batch, existing, result)
    if not inserts and not replaces:
        return
    written = inserts + replaces
    dialect.insert(conn, SPANS, written, SPANS.upsert)
    update_summaries(tx, inserts, {r.trace_id for r in replaces}, stored)
    tx.committed(
        {r.trace_id for r in written}, {r.conversation_id for r in written if r.conversation_id is not None}
    )
    if events:
        # Last: on PostgreSQL the clock row stays locked until this transaction is visible (``tx``). The
        # conversation id of the event log (filled by 0.1.0) stays NULL: a conversation's stream reads the
        # events of the conversation's traces (``sql.EVENTS_OF_CONVERSATION``, ``tables.EVENTS``).
        ns = tx.tick()
        dialect.insert(conn, EVENTS, [EventRow(ns, *e) for e in events], DO_NOTHING)
