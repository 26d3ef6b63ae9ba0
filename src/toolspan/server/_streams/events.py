"""Act/observe events of tool spans from the store's event log: one page at a time after a cursor, woken by
commits (``tail``), rendered as the bridge's ``/events`` view renders them (``render_event``), as the SSE
chunks of the all-traces and conversation streams (``event_chunks``). Every event is

    id: <cursor>          (ns-traceid-spanid-phase: the store's commit clock and the event's span)
    event: act | observe
    data: <the bridge's act/observe event, JSON>

Each event is linked to the model call that asked for it as the trace's ``/events`` view links it (the
model's call id, ``requested_by``): the trace's spans are read once per page of events that has them.

A client reconnecting with ``Last-Event-ID`` (or ``?cursor=``) older than the retained events first gets
``event: reset`` and then every event still kept (a snapshot) before the live tail.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, Final

from starlette.concurrency import run_in_threadpool

from toolspan.bridge import coalesce
from toolspan.bridge.facts import ToolCallRecord, tool_call
from toolspan.bridge.link import RequestIndex
from toolspan.bridge.model import Span
from toolspan.bridge.views import act_event, observe_event
from toolspan.bridge.views.internal import TraceIndex, group_traces
from toolspan.server._rows.cursor import ACT, Cursor
from toolspan.server._store.api import StoreApi
from toolspan.server._streams.sse import CONNECTED, HEARTBEAT, format_event, reset_event, within
from toolspan.server._streams.wakeups import Notifier

__all__ = [
    "FUTURE",
    "LIVE_TAIL_NOTE",
    "PAGE",
    "event_chunks",
    "linked_calls",
    "live_tail",
    "render_event",
    "tail",
    "trace_links",
]

PAGE: Final = 500
# The linked tool calls of a trace, by (trace id, span id) (``trace_links``).
Links = Mapping[tuple[str, str], ToolCallRecord]
# A cursor past the store's commit clock: another replica's clock, a database restored from a backup.
FUTURE: Final = "cursor from the future (another replica's clock or a restored database); a snapshot follows"
# The first comment of the all-traces stream when it starts at the live tail (``curl -N`` shows it).
LIVE_TAIL_NOTE: Final = b": live tail: events from now on; ?from=start for every event kept\n\n"


def linked_calls(spans: Iterable[Span]) -> dict[tuple[str, str], ToolCallRecord]:
    """``{(trace id, span id): tool call}`` of every tool span, linked as the views link them."""
    out: dict[tuple[str, str], ToolCallRecord] = {}
    for trace in group_traces(coalesce(spans)):
        for call in TraceIndex(trace).tool_calls().values():
            out[(call.span.trace_id, call.span.span_id)] = call
    return out


def trace_links(
    store: StoreApi, rows: Sequence[tuple[Cursor, int, Span]]
) -> dict[tuple[str, str], ToolCallRecord]:
    """The linked tool calls of the traces of ``rows`` (one read of each trace from the store)."""
    out: dict[tuple[str, str], ToolCallRecord] = {}
    for spans in store.spans_by_trace(sorted({span.trace_id for _, _, span in rows})).values():
        out.update(linked_calls(spans))
    return out


def _call(span: Span, links: Links | None) -> ToolCallRecord | None:
    linked = None if links is None else links.get((span.trace_id, span.span_id))
    if linked is None:
        return None
    if span.end_ns is not None and linked.span.end_ns == span.end_ns:
        return linked  # the ended call, as the trace's views read it (with a nested record's failure)
    # This record's own state (an act may be the open record), with the link the whole trace gives.
    # The model's arguments as the whole trace links them; what the body received (an edit), this record's.
    own = RequestIndex().link(tool_call(span))
    return dataclasses.replace(
        own.with_model_input(linked.model_input), call_id=linked.call_id, requested_by=linked.requested_by
    )


def render_event(phase: int, span: Span, links: Links | None = None) -> tuple[str, Any] | None:
    """``(kind, data)`` of a log entry: the span's act, or its observe once it ended (else ``None``);
    ``links``: the linked tool calls of its trace (``trace_links``)."""
    if phase == ACT:
        return "act", act_event(span, _call(span, links))
    if span.end_ns is not None:
        return "observe", observe_event(span, _call(span, links))
    return None


async def tail(
    store: StoreApi,
    notifier: Notifier,
    position: Cursor,
    *,
    trace_id: str | None,
    conversation_id: str | None,
    heartbeat_s: float,
) -> AsyncGenerator[list[tuple[Cursor, int, Span]] | None, None]:
    """The event log after ``position``, forever: each page of entries as it is read, ``None`` when
    ``heartbeat_s`` passed without a commit (time for a heartbeat). It wakes on commits of its trace, of its
    conversation or the traces it read of it, or (neither given) on every commit."""
    seen: set[str] = set()
    while True:
        if trace_id is not None:
            waiter = notifier.waiter(traces=(trace_id,))
        elif conversation_id is not None:
            waiter = notifier.waiter(traces=seen, conversations=(conversation_id,))
        else:
            waiter = notifier.waiter()
        rows = await run_in_threadpool(
            store.events_after, position, trace_id=trace_id, conversation_id=conversation_id, limit=PAGE
        )
        if rows:
            position = rows[-1][0]
            if conversation_id is not None:
                seen.update(span.trace_id for _, _, span in rows)
            yield rows
        if len(rows) == PAGE:
            continue
        if not await within(waiter.wait(), heartbeat_s):
            yield None


async def event_chunks(
    store: StoreApi,
    notifier: Notifier,
    cursor: Cursor | None,
    *,
    trace_id: str | None,
    conversation_id: str | None,
    heartbeat_s: float,
) -> AsyncIterator[bytes]:
    """The SSE byte chunks of one stream, from after ``cursor`` (``None``: everything kept)."""
    yield CONNECTED
    horizon = await run_in_threadpool(store.horizon)
    if cursor is not None and cursor < horizon:
        reason = "cursor older than the retained events; a snapshot follows"
        yield reset_event({"reason": reason, "horizon": str(horizon)})
        cursor = None
    elif cursor is not None and cursor.ns > await run_in_threadpool(store.clock):
        yield reset_event({"reason": FUTURE})
        cursor = None
    position = cursor if cursor is not None else Cursor(0)
    pages = tail(
        store, notifier, position, trace_id=trace_id, conversation_id=conversation_id, heartbeat_s=heartbeat_s
    )
    async with contextlib.aclosing(pages):
        async for rows in pages:
            if rows is None:
                yield HEARTBEAT
                continue
            chunk = bytearray()
            links = await run_in_threadpool(trace_links, store, rows)
            for row_cursor, phase, span in rows:
                event = render_event(phase, span, links)
                if event is not None:
                    chunk += format_event(row_cursor, *event)
            if chunk:
                yield bytes(chunk)


def live_tail(clock: int) -> Cursor:
    """The cursor of the live tail: past every event committed so far, yet not past the clock (not a cursor
    from the future)."""
    return Cursor(clock, "f" * 32, "f" * 16, 1)
