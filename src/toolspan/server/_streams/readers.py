"""What a view stream reads each time it wakes (``Reader``): a trace's spans from the store (read again only
once the trace changed, its spans decoded kept for the next read: ``keep``), final once idle, else from
Tempo/Jaeger (polled); or the spans of a conversation's traces. The progress and frontend streams read
through them."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from starlette.concurrency import run_in_threadpool

from toolspan.bridge.model import Span
from toolspan.server._store.api import StoreApi
from toolspan.server._store.remote import Remote

__all__ = ["Reader", "complete", "conversation_reader", "trace_reader"]


def complete(spans: Sequence[Span]) -> bool:
    """Every span held has ended and every trace has its root among them."""
    rooted = {s.trace_id for s in spans if s.parent_span_id is None}
    return bool(spans) and all(s.end_ns is not None and s.trace_id in rooted for s in spans)


# What a stream reads on each wake: (the trace's spans, whether they are final, whether they came from
# this replica's store: a remote trace is polled instead of waiting for commits).
Reader = Callable[[], Awaitable[tuple[list[Span], bool, bool]]]


def trace_reader(store: StoreApi, trace_id: str, idle_timeout_s: float, remote: Remote | None) -> Reader:
    """What a trace's progress stream reads: the store's spans (read again only once the trace changed),
    final once idle; else, with ``remote``, the trace from Tempo/Jaeger (polled)."""
    held: list[Any] = [None, []]

    async def read() -> tuple[list[Span], bool, bool]:
        row = await run_in_threadpool(store.trace_row, trace_id)
        if row is not None:
            if held[0] != row.last_seen_ns:
                spans = await run_in_threadpool(store.trace_spans, trace_id, keep=True)
                held[:] = [row.last_seen_ns, spans]
            return held[1], time.time_ns() - row.last_seen_ns > idle_timeout_s * 1e9, True
        if remote is None:
            return [], False, True
        return (await remote()) or [], False, False

    return read


def conversation_reader(store: StoreApi, conversation_id: str, idle_timeout_s: float) -> Reader:
    """What a conversation's progress stream reads: the spans of its traces in the store, final once every
    one of them is idle (a later turn's envelopes come after, in time order)."""
    held: list[Any] = [None, []]
    where = "(conversation_id = ? OR trace_id = ?)"

    async def read() -> tuple[list[Span], bool, bool]:
        rows = await run_in_threadpool(store.list_traces, where, (conversation_id, conversation_id), 10_000)
        seen = sorted((r.trace_id, r.last_seen_ns) for r in rows)
        if held[0] != seen:
            spans = await run_in_threadpool(store.conversation_spans, conversation_id, keep=True)
            held[:] = [seen, spans]
        newest = max((r.last_seen_ns for r in rows), default=None)
        idle = newest is not None and time.time_ns() - newest > idle_timeout_s * 1e9
        return held[1], idle, True

    return read
