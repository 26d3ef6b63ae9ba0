"""One trace's act/observe stream (``/api/traces/{id}/stream``), resumable on any replica.

Events are those of the all-traces stream, filtered to the trace, with the per-trace cursor of
``_rows.cursor`` as ``id``: ``<commit ns>-<trace>-<span>-<phase>-<seen>-<key ns>-<key span>-<key phase>``.

- A replica that holds the trace reads its store, in commit order. A cursor naming an event it holds is
  re-anchored to that event's commit there (on the replica that wrote it, the same cursor: resume is as
  strong as on the all-traces stream); when the cursor says how many events the client has (``seen``) and
  that is not how many this replica has up to that event, the client gets ``reset`` and a snapshot.
- A replica that does not hold the trace (the Collector's ``loadbalancing`` exporter routed it elsewhere)
  reads it from Tempo/Jaeger (``--tempo``/``--jaeger``), polled every second, in data order. It resumes a
  cursor when exactly ``seen`` of the trace's events there have a data key up to the cursor's: those are
  the events the client has, so it gets exactly the others. Fewer: the backend has not caught up yet, it
  polls again (10 times), then resets; more, or a cursor without ``seen``: ``reset`` and a snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final

from starlette.concurrency import run_in_threadpool

from toolspan.bridge.facts import TOOL, classify
from toolspan.bridge.model import Span
from toolspan.server._rows.cursor import ACT, OBSERVE, Cursor, DataKey
from toolspan.server._store.api import StoreApi
from toolspan.server._store.remote import Remote
from toolspan.server._streams.events import (
    FUTURE,
    PAGE,
    Links,
    Unrequested,
    Withheld,
    linked_calls,
    render_event,
    tail,
    trace_links,
)
from toolspan.server._streams.sse import CONNECTED, HEARTBEAT, format_event, reset_event
from toolspan.server._streams.wakeups import Notifier

__all__ = ["data_key", "trace_chunks"]

_POLL_S: Final = 1.0
_CATCH_UP_POLLS: Final = 10


def data_key(phase: int, span: Span) -> DataKey:
    """Where an event sits in its trace's data: ``(event time, span id, phase)``."""
    at = span.start_ns if phase == ACT else (span.end_ns if span.end_ns is not None else span.start_ns)
    return (at, span.span_id, phase)


_NOT_HERE: Final = "cursor not resumable on this replica; a snapshot follows"


def _log(store: StoreApi, trace_id: str) -> list[tuple[Cursor, int, Span]]:
    """Every event of the trace in the store, in commit order."""
    out: list[tuple[Cursor, int, Span]] = []
    position = Cursor(0)
    while True:
        rows = store.events_after(position, trace_id=trace_id, conversation_id=None, limit=PAGE)
        out += rows
        if len(rows) < PAGE:
            return out
        position = rows[-1][0]


def _tally(
    rows: Sequence[tuple[Cursor, int, Span]], links: Links | None = None
) -> tuple[int, DataKey | None]:
    keys = [data_key(phase, span) for _, phase, span in rows if render_event(phase, span, links) is not None]
    return len(keys), max(keys, default=None)


def _anchor(
    log: list[tuple[Cursor, int, Span]],
    cursor: Cursor | None,
    horizon: Cursor,
    clock: int | None = None,
    links: Links | None = None,
) -> tuple[Cursor, int, DataKey | None, bool]:
    """``(position, seen, key, reset)`` to resume ``cursor`` from on this replica's log of the trace
    (whose commit clock is at ``clock``: a cursor past it names no position here; ``links``: the trace's,
    whose transport legs sent no event)."""
    if cursor is None:
        return Cursor(0), 0, None, False
    for n, (row_cursor, phase, _) in enumerate(log):
        if (row_cursor.span_id, phase) == (cursor.span_id, cursor.event):
            seen, key = _tally(log[: n + 1], links)
            if cursor.seen >= 0 and (cursor.seen, cursor.key) != (seen, key):
                return Cursor(0), 0, None, True
            return row_cursor, seen, key, False
    if cursor.seen >= 0 or cursor < horizon or (clock is not None and cursor.ns > clock):
        return Cursor(0), 0, None, True
    seen, key = _tally([row for row in log if row[0] <= cursor], links)
    return cursor, seen, key, False


async def trace_chunks(
    store: StoreApi,
    notifier: Notifier,
    trace_id: str,
    cursor: Cursor | None,
    *,
    heartbeat_s: float,
    remote: Remote | None,
) -> AsyncIterator[bytes]:
    """The SSE chunks of one trace's stream after ``cursor`` (``None``: from its first event)."""
    held = await run_in_threadpool(store.trace_row, trace_id)
    if held is None and remote is not None:
        async for piece in _remote_chunks(remote, trace_id, cursor, heartbeat_s):
            yield piece
        return
    yield CONNECTED
    log = await run_in_threadpool(_log, store, trace_id)
    horizon = await run_in_threadpool(store.horizon)
    clock = await run_in_threadpool(store.clock)
    known = await run_in_threadpool(trace_links, store, log) if cursor is not None and log else None
    position, seen, key, reset = _anchor(log, cursor, horizon, clock, known)
    if reset:
        future = cursor is not None and cursor.seen < 0 and cursor.ns > clock
        yield reset_event({"reason": FUTURE if future else _NOT_HERE})
    pages = tail(store, notifier, position, trace_id=trace_id, conversation_id=None, heartbeat_s=heartbeat_s)
    withheld, unrequested = Withheld(), Unrequested()
    last = position
    async with contextlib.aclosing(pages):
        async for rows in pages:
            if rows is None:
                yield HEARTBEAT
                continue
            if not rows and not unrequested.traces():
                continue
            out = bytearray()
            links = await run_in_threadpool(trace_links, store, rows, unrequested)
            # The page's events, then those withheld that its links release, under its last cursor.
            entries = [(row_cursor, phase, span) for row_cursor, phase, span in rows]
            for _, phase, span in rows:
                if (span.trace_id, span.span_id) in links.withheld:
                    withheld.hold(phase, span)
            last = rows[-1][0] if rows else last
            entries += [(last, phase, span) for phase, span in withheld.released(links)]
            for row_cursor, phase, span in entries:
                event = render_event(phase, span, links)
                if event is None:
                    continue
                unrequested.note(span, event[1])
                seen += 1
                key = max(key, data_key(phase, span)) if key is not None else data_key(phase, span)
                last = dataclasses.replace(row_cursor, seen=seen, key=key)
                out += format_event(last, *event)
            # Calls sent before the model call that asked for them was stored: sent again, linked, under
            # the last event's id (the same events: a client resuming there has them).
            for phase, span in unrequested.corrected(links):
                event = render_event(phase, span, links)
                if event is not None:
                    out += format_event(last, *event)
            if out:
                yield bytes(out)


def _remote_events(trace_id: str, spans: Sequence[Span]) -> list[tuple[DataKey, str, Any]]:
    out: list[tuple[DataKey, str, Any]] = []
    links = linked_calls(spans)
    for span in spans:
        if span.trace_id != trace_id or classify(span) != TOOL:
            continue
        for phase in (ACT, OBSERVE):
            event = render_event(phase, span, links)
            if event is not None:
                out.append((data_key(phase, span), *event))
    out.sort(key=lambda e: e[0])
    return out


async def _remote_chunks(
    remote: Remote, trace_id: str, cursor: Cursor | None, heartbeat_s: float
) -> AsyncIterator[bytes]:
    yield CONNECTED
    sent: set[DataKey] = set()
    seen, key = 0, None
    verified = cursor is None
    polls = 0
    quiet_since = time.monotonic()
    while True:
        events = _remote_events(trace_id, (await remote()) or [])
        if not verified and cursor is not None:
            below = [e[0] for e in events if cursor.key is not None and e[0] <= cursor.key]
            polls += 1
            if cursor.seen >= 0 and len(below) == cursor.seen:
                sent, seen, key, verified = set(below), cursor.seen, cursor.key, True
            elif cursor.seen < 0 or len(below) > cursor.seen or polls > _CATCH_UP_POLLS:
                yield reset_event({"reason": _NOT_HERE})
                verified = True
        if verified:
            chunk = bytearray()
            for event_key, kind, data in events:
                if event_key in sent:
                    continue
                sent.add(event_key)
                seen += 1
                key = max(key, event_key) if key is not None else event_key
                at, span_id, phase = event_key
                chunk += format_event(Cursor(at, trace_id, span_id, phase, seen, key), kind, data)
            if chunk:
                yield bytes(chunk)
                quiet_since = time.monotonic()
        if time.monotonic() - quiet_since >= heartbeat_s:
            yield HEARTBEAT
            quiet_since = time.monotonic()
        await asyncio.sleep(min(_POLL_S, heartbeat_s))
