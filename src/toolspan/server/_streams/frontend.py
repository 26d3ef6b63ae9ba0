"""AG-UI and AI SDK UI message streams of a trace or a conversation, live, and the AG-UI agent endpoint's
run stream (their routes: ``_http.routes.streams``):

- ``GET /api/traces/{id}/ag-ui/stream``, ``GET /api/conversations/{id}/ag-ui/stream``: the ``ag-ui``
  view as AG-UI's server-sent events (``data: <event JSON>``, each with ``id: <n>``, its position in the
  view);
- ``GET /api/traces/{id}/ai-sdk/stream``, ``GET /api/conversations/{id}/ai-sdk/stream``: the ``ai-sdk``
  view as the AI SDK UI message stream (``x-vercel-ai-ui-message-stream: v1``, ``data: <chunk JSON>``
  with ``id: <n>``, ``data: [DONE]`` at the end);
- ``POST /api/ag-ui``: the AG-UI agent endpoint. The body is a ``RunAgentInput``; its ``threadId`` names
  the conversation, whose runs stream (recorded, then live) in AG-UI's framing. Runs the client already
  holds (every message id of a run that ended is among ``messages``) are skipped, so a client that runs
  again gets only what is new.

Only *settled* events are sent, as on the progress stream: the prefix of the view that spans still to
come cannot change. Events made up for spans that never ended (a SEALED outcome, the end of a run whose
agent span is open) wait until the trace is final; and nothing after the point where a span still open
(a running tool, a model call) could end is sent before it ended. A running tool is on the stream at its
start once its pending record is stored (``TOOLSPAN_PENDING_SPANS``).

Text deltas (``toolspan.text_delta``) of a span are relayed while a run is open on the stream as content
of the span's message (``msg-<span id>``: AG-UI ``TEXT_MESSAGE_START`` / ``TEXT_MESSAGE_CONTENT``, AI SDK
``text-start`` / ``text-delta``), without an ``id:``. When the span's recorded text arrives, only what the
deltas did not already say follows, then the message's end.

A stream ends once its view is final: a trace's when the trace is complete (every span ended, its root
held) or idle for ``--idle-timeout``; a conversation's when it is complete and nothing arrived for
``LINGER_S`` more, or idle. ``Last-Event-ID`` (or ``?since=<n>``) resumes after event ``n``; an AG-UI
stream then first sends a ``MESSAGES_SNAPSHOT`` (no ``id:``) of the messages before it. Should spans that
arrive late put events before ones already sent (an agent's thoughts come with its end), those are sent
then, in view order; should they take back an event already sent, the stream ends (a client starts
over).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from toolspan.bridge.model import Span
from toolspan.bridge.views import messages_snapshot
from toolspan.bridge.views.internal import AI_SDK_HEADER, ag_ui_run_events, ai_sdk_run_chunks
from toolspan.bridge.views.internal import Turn as Run
from toolspan.bridge.views.internal import TurnItem as Item
from toolspan.bridge.views.internal import to_turns as to_runs
from toolspan.server._streams.deltas import DeltaDropped, Subscription, relay_until_commit
from toolspan.server._streams.readers import Reader, complete
from toolspan.server._streams.sse import CONNECTED, HEARTBEAT
from toolspan.server._streams.wakeups import Notifier

__all__ = [
    "AG_UI",
    "AI_SDK",
    "LINGER_S",
    "PROTOCOLS",
    "StreamTimes",
    "UiProtocol",
    "input_problem",
    "settled_events",
    "stream_chunks",
]

_logger = logging.getLogger(__name__)

LINGER_S: Final = 1.0
_REMOTE_POLL_S: Final = 1.0

Entry = tuple[dict[str, Any], Item | None, Run, bool]  # event, its item, its run, is the run's end


@dataclass(frozen=True, slots=True)
class UiProtocol:
    """A frontend's stream: AG-UI's events or the AI SDK UI message stream (its framing, headers, end)."""

    name: str
    run_events: Callable[[Run], list[tuple[dict[str, Any], Item | None]]]
    headers: dict[str, str] = field(default_factory=dict)
    done: bytes = b""

    def is_run_end(self, event: dict[str, Any]) -> bool:
        ends = ("RUN_FINISHED", "RUN_ERROR") if self.name == "ag-ui" else ("finish", "abort")
        return bool(event["type"] in ends)

    def is_run_start(self, event: dict[str, Any]) -> bool:
        return bool(event["type"] == ("RUN_STARTED" if self.name == "ag-ui" else "start"))


AG_UI: Final = UiProtocol("ag-ui", ag_ui_run_events)
AI_SDK: Final = UiProtocol(
    "ai-sdk", ai_sdk_run_chunks, {AI_SDK_HEADER[0]: AI_SDK_HEADER[1]}, b"data: [DONE]\n\n"
)
PROTOCOLS: Final = {"ag-ui": AG_UI, "ai-sdk": AI_SDK}


def _entries(protocol: UiProtocol, runs: list[Run]) -> list[Entry]:
    out: list[Entry] = []
    for run in runs:
        events = protocol.run_events(run)
        for n, (event, item) in enumerate(events):
            out.append((event, item, run, item is None and n > 0 and protocol.is_run_end(event)))
    return out


def settled_events(protocol: UiProtocol, spans: Sequence[Span], *, final: bool) -> list[Entry]:
    """The events of the view that later spans cannot change (all of them when ``final``)."""
    entries, settled = _view_events(protocol, spans, final=final)
    return entries[:settled]


def _view_events(protocol: UiProtocol, spans: Sequence[Span], *, final: bool) -> tuple[list[Entry], int]:
    """``(the view's events, how many of them are settled)``."""
    runs = to_runs(spans)
    entries = _entries(protocol, runs)
    return entries, _settled(entries, runs, final or complete(spans))


def _settled(entries: list[Entry], runs: list[Run], final: bool) -> int:
    if final:
        return len(entries)
    bounds: dict[str, int] = {}
    for it in (it for run in runs for it in run.items):
        if it.open_key is not None:
            bounds[it.open_key] = min(it.open_bound, bounds.get(it.open_key, it.open_bound))
    first = sorted(bounds.items(), key=lambda kv: kv[1])[:2]
    run_starts: dict[int, int] = {}
    for n, (_event, item, run, run_end) in enumerate(entries):
        run_starts.setdefault(id(run), n)
        if item is not None and item.unplaced:
            # Its parents are not all here yet: the run it is in may not be this one at all.
            return run_starts[id(run)]
        if item is not None and item.provisional:
            return n
        if run_end and not run.ended:
            return n
        # Nothing at or after the earliest time a span still open (other than the item's own) can end.
        own = item.open_key if item is not None else None
        bound = next((b for key, b in first if key != own), None)
        at = run.end_ns if run_end else (item.time_ns if item is not None else run.start_ns)
        if bound is not None and at >= bound:
            return n
    return len(entries)


def _line(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


def _frame(seq: int | None, event: dict[str, Any]) -> bytes:
    head = "" if seq is None else f"id: {seq}\n"
    return f"{head}data: {_line(event)}\n\n".encode()


class _Live:
    """What one connection relayed of the text deltas, to fit the recorded text after them."""

    def __init__(self, protocol: UiProtocol) -> None:
        self.protocol = protocol
        self.relayed: dict[str, str] = {}  # message id -> text relayed
        self.open: list[str] = []  # messages started by deltas, not yet ended
        self.ended: set[str] = set()
        self.in_run = False

    def _start(self, message_id: str) -> dict[str, Any]:
        if self.protocol.name == "ag-ui":
            return {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"}
        return {"type": "text-start", "id": message_id}

    def _content(self, message_id: str, text: str) -> dict[str, Any]:
        if self.protocol.name == "ag-ui":
            return {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": text}
        return {"type": "text-delta", "id": message_id, "delta": text}

    def _end(self, message_id: str) -> dict[str, Any]:
        if self.protocol.name == "ag-ui":
            return {"type": "TEXT_MESSAGE_END", "messageId": message_id}
        return {"type": "text-end", "id": message_id}

    def delta(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        """The events relaying one delta (none outside a run, or for a message already ended)."""
        execution = str(data.get("execution_id", ""))
        text = data.get("delta")
        if not self.in_run or not execution.startswith("exec_") or not isinstance(text, str) or not text:
            return []
        message_id = f"msg-{execution[5:]}"
        if message_id in self.ended:
            return []
        out = []
        if message_id not in self.relayed:
            self.relayed[message_id] = ""
            self.open.append(message_id)
            out.append(self._start(message_id))
        self.relayed[message_id] += text
        out.append(self._content(message_id, text))
        return out

    def fit(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """A view event as sent after the deltas relayed so far (dropped, cut, or with ends before it)."""
        kind = event["type"]
        message_id = event.get("messageId", event.get("id"))
        if self.protocol.is_run_start(event):
            self.in_run = True
            return [event]
        if self.protocol.is_run_end(event) or kind == "error":
            before = [self._end(m) for m in self.open]
            self.ended.update(self.open)
            self.open = []
            if kind != "error":
                self.in_run = False
            return [*before, event]
        if not isinstance(message_id, str) or message_id not in self.relayed:
            return [event]
        if kind in ("TEXT_MESSAGE_START", "text-start"):
            return []
        if kind in ("TEXT_MESSAGE_CONTENT", "text-delta"):
            said = self.relayed[message_id]
            text = event["delta"]
            rest = text[len(said) :] if text.startswith(said) else text
            return [dict(event, delta=rest)] if rest else []
        if kind in ("TEXT_MESSAGE_END", "text-end"):
            if message_id in self.open:
                self.open.remove(message_id)
            self.ended.add(message_id)
        return [event]


def _delta_data(chunk: bytes) -> dict[str, Any]:
    """The JSON of a relayed ``text_delta`` server-sent event."""
    at = chunk.find(b"data: ")
    try:
        value = json.loads(chunk[at + 6 :]) if at >= 0 else None
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {}


def _run_message_ids(protocol: UiProtocol, run: Run) -> set[str]:
    ids = set()
    for event, _item in protocol.run_events(run):
        for key in ("messageId",):
            value = event.get(key)
            if isinstance(value, str) and not event["type"].startswith("REASONING_"):
                ids.add(value)
    return ids


class _View:
    """What one connection sent of a view: its events from ``since + 1`` on, the runs it skipped (a client
    that runs again holds them), the text deltas it relayed (``_Live``)."""

    def __init__(self, protocol: UiProtocol, since: int, known: frozenset[str], with_ids: bool) -> None:
        self.protocol = protocol
        self.since = since
        self.known = known
        self.with_ids = with_ids
        self.live = _Live(protocol)
        self.sent: list[str] = []  # lines of the view events sent, from ``since + 1``
        self.last: tuple[list[Span], bool] | None = None
        self.quiet_since = time.monotonic()
        self.skipped: set[str] = set()
        self.snapshot_due = since > 0 and protocol is AG_UI

    def changed(self, spans: list[Span], final: bool) -> bool:
        """Whether the spans read now give another view than the last ones (then they are the last)."""
        if (spans, final) == self.last:
            return False
        self.last = (spans, final)
        self.quiet_since = time.monotonic()
        return True

    def _unknown(self, entries: list[Entry], settled: int) -> tuple[list[Entry], int]:
        """``entries`` without the runs the client holds (every message id of an ended run is ``known``), and
        how many of those left are settled (of the first ``settled``)."""
        for run in {id(r): r for _, _, r, _ in entries[:settled]}.values():
            if (
                run.ended
                and run.run_id not in self.skipped
                and _run_message_ids(self.protocol, run) <= self.known
            ):
                self.skipped.add(run.run_id)
        kept = [e for e in entries[:settled] if e[2].run_id not in self.skipped]
        return kept + [e for e in entries[settled:] if e[2].run_id not in self.skipped], len(kept)

    async def chunks(self, spans: list[Span], final: bool) -> list[bytes] | None:
        """The chunks of what the view now has beyond what was sent (``None``: it took back an event sent,
        the stream ends)."""
        entries, settled = await asyncio.to_thread(_view_events, self.protocol, spans, final=final)
        if self.known:
            entries, settled = self._unknown(entries, settled)
        out: list[bytes] = []
        since = self.since
        if self.snapshot_due and settled >= since:
            self.snapshot_due = False
            snapshot = {
                "type": "MESSAGES_SNAPSHOT",
                "messages": messages_snapshot([e[0] for e in entries[:since]]),
            }
            out.append(_frame(None, snapshot))
        lines = [_line(e[0]) for e in entries[since:settled]]
        fresh, gone = _fresh(lines, self.sent, lambda: [_line(e[0]) for e in entries[since:]])
        if gone is not None:
            _logger.warning(
                "toolspan serve: late spans took back an event a %s stream sent (%s); it ends",
                self.protocol.name,
                gone[:200],
            )
            return None
        chunk = bytearray()
        for n in fresh:
            for event in self.live.fit(entries[since + n][0]):
                chunk += _frame(since + n + 1 if self.with_ids else None, event)
            self.sent.append(lines[n])
        if chunk:
            out.append(bytes(chunk))
        return out

    def relayed(self, chunk: bytes) -> bytes:
        """The events relaying one text delta (``b""`` when none)."""
        return b"".join(_frame(None, e) for e in self.live.delta(_delta_data(chunk)))


def _fresh(lines: list[str], sent: list[str], view: Callable[[], list[str]]) -> tuple[list[int], str | None]:
    """``(the positions in the settled lines not yet sent, an event sent that the whole view no longer holds
    or None)``. Spans that arrive late (an open agent's thoughts come with its end, a tool's end before its
    agent's start) may put events before ones already sent, or hold back again part of what was settled:
    the events new are sent now, in view order; an event sent stays sent while the view holds it."""
    if lines[: len(sent)] == sent:
        return list(range(len(sent), len(lines))), None
    have = Counter(view())
    have.subtract(sent)
    gone = [line for line, n in have.items() if n < 0]
    if gone:
        return [], gone[0]
    owed = Counter(sent)
    fresh = []
    for n, line in enumerate(lines):
        if owed[line] > 0:
            owed[line] -= 1
        else:
            fresh.append(n)
    return fresh, None


@dataclass(frozen=True, slots=True)
class StreamTimes:
    """When a view stream looks again: ``heartbeat_s`` (``--heartbeat``), ``idle_timeout_s`` (a trace idle
    that long is final), ``linger_s`` (a complete conversation's stream ends after this long without news)."""

    heartbeat_s: float
    idle_timeout_s: float
    linger_s: float


async def stream_chunks(
    protocol: UiProtocol,
    read: Reader,
    notifier: Notifier,
    since: int,
    *,
    times: StreamTimes,
    subscription: Subscription | None,
    end_when_complete: bool,
    known: frozenset[str] = frozenset(),
    with_ids: bool = True,
    trace_id: str | None = None,
    conversation_id: str | None = None,
) -> AsyncIterator[bytes]:
    """The SSE chunks of one stream after event ``since`` (0: from the start): of the trace ``trace_id`` or
    the conversation ``conversation_id`` (whose commits wake it)."""
    yield CONNECTED
    view = _View(protocol, since, known, with_ids)
    held: set[str] = set() if trace_id is None else {trace_id}  # the traces whose commits wake it
    conversations = () if conversation_id is None else (conversation_id,)
    try:
        while True:
            waiter = notifier.waiter(traces=held, conversations=conversations)
            spans, final, local = await read()
            if conversation_id is not None:
                held = {span.trace_id for span in spans}
            done = complete(spans)
            if view.changed(spans, final):
                chunks = await view.chunks(spans, final)
                if chunks is None:
                    return
                for chunk in chunks:
                    yield chunk
            quiet_s = time.monotonic() - view.quiet_since
            if final or (done and (end_when_complete or quiet_s >= times.linger_s)):
                break
            timeout = times.heartbeat_s if local else min(times.heartbeat_s, _REMOTE_POLL_S)
            # Wake up in time to see the view turn final once the spans went idle.
            timeout = min(timeout, max(0.05, times.idle_timeout_s / 2))
            if done:
                timeout = min(timeout, max(0.05, times.linger_s - quiet_s))
            async for relayed in relay_until_commit(waiter, subscription, timeout, local):
                chunk = HEARTBEAT if relayed is None else view.relayed(relayed)
                if chunk:
                    yield chunk
        if protocol.done:
            yield protocol.done
    except DeltaDropped:
        return
    finally:
        if subscription is not None:
            subscription.close()


def input_problem(body: Any) -> str | None:
    """Why ``body`` is no AG-UI ``RunAgentInput`` this endpoint takes (``None``: it is one)."""
    if not isinstance(body, dict):
        return "the body must be a JSON object (an AG-UI RunAgentInput)"
    for key in ("threadId", "runId"):
        value = body.get(key)
        if not isinstance(value, str) or not value:
            return f"RunAgentInput.{key} must be a non-empty string"
    messages = body.get("messages", [])
    if not isinstance(messages, list):
        return "RunAgentInput.messages must be an array"
    for n, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("id"), str):
            return f"RunAgentInput.messages[{n}] must be an object with a string id"
    return None
