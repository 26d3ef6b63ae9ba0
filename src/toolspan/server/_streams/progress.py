"""One trace's progress stream over SSE (``/api/traces/{id}/progress/stream``), resumable from its bookmark.

Each event is one envelope of the trace's ``/progress`` view, byte for byte the line that view holds:

    id: <bookmark seq>
    event: progress | control | monitor      (the envelope's channel)
    data: <the envelope, exactly as the /progress line>

The ``id`` is the envelope's ``bookmark.seq``: a position in the trace's own data, not in a server's
commit log, so it means the same thing after a restart and on every replica that can read the trace
(from its store, or from Tempo/Jaeger with ``--tempo``/``--jaeger``). A client resumes with
``Last-Event-ID`` or ``?since=<seq>`` (the seed's ``since: bookmark``; a bookmark object
``{"seq": n, ...}`` is accepted too) and gets every envelope after it.

Only *settled* envelopes are sent: the prefix of the view that later spans cannot change. The view ends
every open tool with ``tool:end`` SEALED and every turn with ``done``: those wait until the trace is
complete (every span held has ended and it has a root) or idle for ``--idle-timeout``. And the prefix
ends with the first envelope of a tool still open (its ``tool:start``, or its ``permission_required``
while it waits for approval): its end may come before anything after it. So a tool's start is on the
stream as soon as its pending record (``TOOLSPAN_PENDING_SPANS``) is stored; tools that run at the
same time as an earlier one are sent once that one has ended. Should a record that arrives late (say,
from another process with its own clock) change what was sent anyway, the stream sends ``event:
reset`` and the view again from seq 1.

Text deltas of the trace (``toolspan.text_delta``) are relayed as ``event: text_chunk`` without an
``id`` (they are never stored, so they cannot be replayed).
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final

from toolspan import semconv as sc
from toolspan.bridge import coalesce, write_json_lines
from toolspan.bridge.facts import TOOL, classify, execution_id
from toolspan.bridge.model import Span
from toolspan.bridge.views import to_progress
from toolspan.bridge.views.internal import TraceIndex, group_traces
from toolspan.server._streams.deltas import DeltaDropped, DeltaHub, Subscription, relay_until_commit
from toolspan.server._streams.readers import Reader, complete
from toolspan.server._streams.sse import CONNECTED, HEARTBEAT, reset_event
from toolspan.server._streams.wakeups import Notifier

__all__ = ["parse_since", "progress_chunks", "settled"]

_REMOTE_POLL_S: Final = 1.0
_MAX_SEQ: Final = (1 << 63) - 1


def parse_since(raw: str) -> int | None:
    """The seq a client resumes after: ``"12"`` or a bookmark ``{"seq": 12, ...}``; ``None`` if neither
    (or a seq past 2**63-1: no view is that long)."""
    text = raw.strip()
    if text.isascii() and text.isdigit():
        seq = int(text) if len(text) <= 19 else None
    else:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return None
        seq = value.get("seq") if isinstance(value, dict) else None
        if not isinstance(seq, int) or isinstance(seq, bool):
            return None
    return seq if seq is not None and 0 <= seq <= _MAX_SEQ else None


def _undecided(spans: Sequence[Span]) -> set[str]:
    """The execution ids of the MCP records whose parents are not all stored yet (maybe a transport leg
    of a call above them: ``TraceIndex.undecided``): the stream waits before them."""
    out: set[str] = set()
    for trace in group_traces(coalesce(spans)):
        index = TraceIndex(trace)
        out.update(execution_id(trace[i]) for i in index.undecided)
    return out


def _provisional(envelope: dict[str, Any]) -> bool:
    event = envelope["event"]
    kind = event.get("type")
    call = event.get("call")
    return (
        kind == "done"
        # Just before a done: the state back to READY, the failure of the turn's agent span.
        or (kind == "state_changed" and event.get("to") == "READY")
        or (kind == "error" and event.get("phase") == "system")
        or (kind == "tool:end" and isinstance(call, dict) and call.get("state") == sc.STATE_SEALED)
    )


def settled(spans: Sequence[Span], *, final: bool) -> list[dict[str, Any]]:
    """The envelopes of the trace's progress view that later spans cannot change (all when ``final``).

    While the trace runs, the prefix ends before the first provisional envelope (a SEALED end, a
    ``done``) and right after the first envelope of a tool still open: its end (exported later than
    the start records of the tools after it) may fall before anything that follows.
    """
    envelopes = to_progress(list(spans))
    if final or complete(spans):
        return envelopes
    open_tools = {execution_id(s) for s in spans if s.end_ns is None and classify(s) == TOOL}
    undecided = _undecided(spans)
    for n, envelope in enumerate(envelopes):
        call = envelope["event"].get("call")
        if _provisional(envelope) or (isinstance(call, dict) and call.get("execution_id") in undecided):
            return envelopes[:n]
        if isinstance(call, dict) and call.get("execution_id") in open_tools:
            return envelopes[: n + 1]
    return envelopes


def _line(envelope: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    write_json_lines([envelope], out)
    return out.getvalue().rstrip(b"\n")


def _chunk(envelope: dict[str, Any], line: bytes) -> bytes:
    seq = envelope["bookmark"]["seq"]
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (seq, envelope["channel"].encode(), line)


async def progress_chunks(
    read: Reader,
    notifier: Notifier,
    since: int,
    *,
    heartbeat_s: float,
    deltas: DeltaHub | None = None,
    trace_id: str | None = None,
    conversation_id: str | None = None,
) -> AsyncIterator[bytes]:
    """The SSE chunks of one trace's progress stream after bookmark ``since`` (0: from the start)."""
    yield CONNECTED
    subscription: Subscription | None = None
    if deltas is not None:
        subscription = deltas.subscribe(trace_id=trace_id, conversation_id=conversation_id, kind="text_chunk")
    sent: list[bytes] = []  # lines sent on this connection, from seq ``since + 1``
    last: tuple[list[Span], bool] | None = None
    held: set[str] = set() if trace_id is None else {trace_id}  # the traces whose commits wake it
    try:
        while True:
            waiter = notifier.waiter(
                traces=held, conversations=() if conversation_id is None else (conversation_id,)
            )
            spans, final, local = await read()
            if conversation_id is not None:
                held = {span.trace_id for span in spans}
            if (spans, final) != last:  # the same spans (the store's cached list) give the same view
                last = (spans, final)
                envelopes = settled(spans, final=final)
                lines = [_line(e) for e in envelopes[since:]]
                if lines[: len(sent)] != sent:
                    yield reset_event(
                        {"reason": "the trace changed what was sent; the view follows from seq 1"}
                    )
                    since, sent = 0, []
                    lines = [_line(e) for e in envelopes]
                fresh = range(len(sent), len(lines))
                if fresh:
                    yield b"".join(_chunk(envelopes[since + n], lines[n]) for n in fresh)
                    sent = lines
            timeout = heartbeat_s if local else min(heartbeat_s, _REMOTE_POLL_S)
            async for chunk in relay_until_commit(waiter, subscription, timeout, local):
                yield HEARTBEAT if chunk is None else chunk
    except DeltaDropped:
        return
    finally:
        if subscription is not None:
            subscription.close()
