"""Act/observe events of tool spans from the store's event log: one page at a time after a cursor, woken by
commits (``tail``), rendered as the bridge's ``/events`` view renders them (``render_event``), as the SSE
chunks of the all-traces and conversation streams (``event_chunks``). Every event is

    id: <cursor>          (ns-traceid-spanid-phase: the store's commit clock and the event's span)
    event: act | observe
    data: <the bridge's act/observe event, JSON>

Each event is linked to the model call that asked for it as the trace's ``/events`` view links it (the
model's call id, ``requested_by``): the trace's spans are read once per page of events that has them. A call
sent before the model call that asked for it was stored is remembered (``Unrequested``) and sent again once
linked; its trace is read again only when it changed.

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
from toolspan.bridge.facts import TOOL, ToolCallRecord, classify, tool_call
from toolspan.bridge.link import RequestIndex
from toolspan.bridge.model import Span
from toolspan.bridge.views import act_event, observe_event
from toolspan.bridge.views.internal import TraceIndex, group_traces
from toolspan.server._rows.cursor import ACT, BOTH, OBSERVE, Cursor
from toolspan.server._store.api import StoreApi
from toolspan.server._streams.sse import CONNECTED, HEARTBEAT, format_event, reset_event, within
from toolspan.server._streams.wakeups import Notifier

__all__ = [
    "FUTURE",
    "LIVE_TAIL_NOTE",
    "PAGE",
    "Links",
    "Unrequested",
    "Withheld",
    "event_chunks",
    "linked_calls",
    "live_tail",
    "render_event",
    "tail",
    "trace_links",
]

PAGE: Final = 500
# A cursor past the store's commit clock: another replica's clock, a database restored from a backup.
FUTURE: Final = "cursor from the future (another replica's clock or a restored database); a snapshot follows"
# The first comment of the all-traces stream when it starts at the live tail (``curl -N`` shows it).
LIVE_TAIL_NOTE: Final = b": live tail: events from now on; ?from=start for every event kept\n\n"

Key = tuple[str, str]


@dataclasses.dataclass(frozen=True, slots=True)
class Links:
    """The tool calls of some traces as the views read them, by (trace id, span id): ``calls`` linked to
    the model call that asked for them; ``legs``, tool records that are another record's call (an MCP
    call's transport legs, a call recorded twice): no event of theirs is sent; ``withheld``, MCP records
    whose parents are not all stored yet (a leg, or the call itself): their events wait (``Withheld``)."""

    calls: Mapping[Key, ToolCallRecord] = dataclasses.field(default_factory=dict)
    legs: frozenset[Key] = frozenset()
    withheld: frozenset[Key] = frozenset()
    # Per trace, when its latest model call started (absent: no model call).
    last_model_call: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def update(self, other: Links) -> Links:
        return Links(
            {**self.calls, **other.calls},
            self.legs | other.legs,
            self.withheld | other.withheld,
            {**self.last_model_call, **other.last_model_call},
        )


def linked_calls(spans: Iterable[Span]) -> Links:
    """The tool calls of every trace of ``spans``, linked as the views link them (``Links``)."""
    calls: dict[Key, ToolCallRecord] = {}
    legs: set[Key] = set()
    withheld: set[Key] = set()
    last_model_call: dict[str, int] = {}
    for trace in group_traces(coalesce(spans)):
        index = TraceIndex(trace)
        for call in index.tool_calls().values():
            calls[(call.span.trace_id, call.span.span_id)] = call
        for i, span in enumerate(trace):
            key = (span.trace_id, span.span_id)
            if i in index.undecided:
                withheld.add(key)
            elif index.kinds[i] != TOOL and classify(span) == TOOL:
                legs.add(key)
            elif index.is_model_call(i):
                last_model_call[span.trace_id] = max(last_model_call.get(span.trace_id, 0), span.start_ns)
    return Links(calls, frozenset(legs), frozenset(withheld), last_model_call)


def trace_links(
    store: StoreApi, rows: Sequence[tuple[Cursor, int, Span]], unrequested: Unrequested | None = None
) -> Links:
    """The linked tool calls of the traces of ``rows``, and of the traces of the calls ``unrequested``
    remembers that changed since it last read them (``Unrequested.changed``): one read of each trace. A live
    stream reads a trace again at each page that has its events: the spans it decodes are kept
    (``spans_by_trace``'s ``keep``), so a growing trace decodes only its new and changed spans."""
    out = Links()
    traces = {span.trace_id for _, _, span in rows}
    if unrequested is not None:
        traces |= unrequested.changed(store)
    if not traces:  # a commit of other traces, no remembered call's trace changed: nothing to read
        return out
    for spans in store.spans_by_trace(sorted(traces), keep=True).values():
        out = out.update(linked_calls(spans))
    return out


def _call(span: Span, links: Links | None) -> ToolCallRecord | None:
    linked = None if links is None else links.calls.get((span.trace_id, span.span_id))
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


class Withheld:
    """The event-log entries a stream holds back (``Links.withheld``: maybe an MCP call's transport leg),
    bounded: each is released once its trace's links say it is a call (then sent after the page that says
    so), dropped once they say it is a leg."""

    MAX: Final = 1024

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str, int], tuple[int, Span]] = {}

    def hold(self, phase: int, span: Span) -> None:
        if len(self._rows) < self.MAX:
            self._rows[(span.trace_id, span.span_id, phase)] = (phase, span)

    def released(self, links: Links) -> list[tuple[int, Span]]:
        """The entries ``links`` (which hold their traces) now decide, in the order they came: the calls."""
        out = []
        for key, (phase, span) in list(self._rows.items()):
            ident = (span.trace_id, span.span_id)
            if ident in links.withheld or (ident not in links.calls and ident not in links.legs):
                continue  # still undecided, or a trace this page did not read
            del self._rows[key]
            if ident in links.calls:
                out.append((phase, span))
        return out


class Unrequested:
    """The calls a stream sent with no model call that asked for them (``requested_by`` null), bounded:
    when a later model call shows their request (the model's ids in its input messages), ``corrected``
    gives their act, and their observe if they ended, to send again, linked."""

    MAX: Final = 1024

    def __init__(self) -> None:
        self._calls: dict[Key, Span] = {}
        # Each remembered call's trace: its version when its links were last read (``None``: not held).
        self._read_at: dict[str, tuple[int, ...] | None] = {}

    def note(self, span: Span, data: Any) -> None:
        """Remember ``span`` if its event ``data`` was sent with no model call."""
        key = (span.trace_id, span.span_id)
        if isinstance(data, dict) and data.get("requested_by") is None and len(self._calls) < self.MAX:
            self._calls[key] = span if span.end_ns is not None or key not in self._calls else self._calls[key]
            self._read_at.pop(span.trace_id, None)  # its trace read again: ``corrected`` judges it once read

    def traces(self) -> list[str]:
        return sorted({trace for trace, _ in self._calls})

    def changed(self, store: StoreApi) -> set[str]:
        """The traces of the remembered calls to read again: those changed since they were last read, or
        never read since a call of theirs was remembered. A trace that has not changed links its calls as
        it did, and ``corrected`` kept them then: reading it again on every page made a stream's catch-up
        grow with the remembered calls (up to ``MAX`` traces read again per page). Each counts as read at
        the version read here, before its spans: a commit between the two is read at the next page."""
        held = self.traces()
        versions = store.trace_versions(held) if held else {}
        read_at = self._read_at
        out = {t for t in held if t not in read_at or read_at[t] != versions.get(t)}
        self._read_at = {t: versions.get(t) for t in held}
        return out

    def corrected(self, links: Links) -> list[tuple[int, Span]]:
        """The act (and observe) of each remembered call ``links`` (which hold its trace) now links to a
        model call. A call is forgotten once its trace has no model call before it, or one after it that
        did not show its request (only the next model call can)."""
        out: list[tuple[int, Span]] = []
        for key, span in list(self._calls.items()):
            call = links.calls.get(key)
            if call is None:
                continue  # a trace these links did not read
            latest = links.last_model_call.get(key[0])
            if call.requested_by is not None:
                out.append((ACT, span))
                if span.end_ns is not None:
                    out.append((OBSERVE, span))
            elif latest is not None and latest < span.start_ns:
                continue  # the model call that may show it is still to come
            del self._calls[key]
        return out


def render_event(phase: int, span: Span, links: Links | None = None) -> tuple[str, Any] | None:
    """``(kind, data)`` of a log entry: the span's act, or its observe once it ended (else ``None``);
    ``links``: the linked tool calls of its trace (``trace_links``; a leg or a withheld record: ``None``)."""
    if links is not None and (span.trace_id, span.span_id) in links.legs | links.withheld:
        return None
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
    """The event log after ``position``, forever: each page of entries as it is read, ``[]`` after a commit
    that added none, ``None`` when ``heartbeat_s`` passed without a commit (time for a heartbeat). It wakes
    on commits of its trace, of its conversation or the traces it read of it, or (neither given) on every
    commit."""
    seen: set[str] = set()
    woke = False
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
        elif woke:
            yield []  # a commit that added no event (a model call, an agent): links may have changed
        if len(rows) == PAGE:
            continue
        woke = await within(waiter.wait(), heartbeat_s)
        if not woke:
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
    withheld, unrequested = Withheld(), Unrequested()
    last = position
    async with contextlib.aclosing(pages):
        async for rows in pages:
            if rows is None:
                yield HEARTBEAT
                continue
            if not rows and not unrequested.traces():
                continue
            chunk = bytearray()
            links = await run_in_threadpool(trace_links, store, rows, unrequested)
            entries = list(rows)
            for _, phase, span in rows:
                if (span.trace_id, span.span_id) in links.withheld:
                    withheld.hold(phase, span)
            last = rows[-1][0] if rows else last
            # Released and corrected records after the page, under its last cursor: a client resuming
            # there has them.
            entries += [(last, phase, span) for phase, span in withheld.released(links)]
            entries += [(last, phase, span) for phase, span in unrequested.corrected(links)]
            for row_cursor, phase, span in entries:
                event = render_event(phase, span, links)
                if event is not None:
                    unrequested.note(span, event[1])
                    chunk += format_event(row_cursor, *event)
            if chunk:
                yield bytes(chunk)


def live_tail(clock: int) -> Cursor:
    """The cursor of the live tail: past every event committed so far, yet not past the clock (not a cursor
    from the future)."""
    return Cursor(clock, "f" * 32, "f" * 16, BOTH)
