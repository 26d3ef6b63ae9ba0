"""AG-UI and AI SDK UI message streams of a trace or a conversation, live, and the AG-UI agent endpoint.

Routes:

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
from typing import TYPE_CHECKING, Any, Final

from starlette.requests import Request
from starlette.responses import Response

from toolspan.bridge.model import Span
from toolspan.bridge.views import AI_SDK_HEADER, ag_ui_run_events, ai_sdk_run_chunks, messages_snapshot
from toolspan.bridge.views import Turn as Run
from toolspan.bridge.views import TurnItem as Item
from toolspan.bridge.views import to_turns as to_runs
from toolspan.server._http.auth import error, trace_id_param
from toolspan.server._http.jsonio import BodyError, parse_object, read_body
from toolspan.server._streams.deltas import DeltaDropped, Subscription, relay_until_commit
from toolspan.server._streams.progress import Reader, conversation_reader, trace_reader
from toolspan.server._streams.sse import CONNECTED, HEARTBEAT, EventStreamResponse

if TYPE_CHECKING:
    from toolspan.server._http.app import ServerHandlers

__all__ = ["LINGER_S", "agent_response", "frontend_response", "settled_events"]

_logger = logging.getLogger(__name__)

LINGER_S: Final = 1.0
_REMOTE_POLL_S: Final = 1.0
_MAX_INPUT_BYTES: Final = 4 << 20
_MAX_DEPTH: Final = 100

Entry = tuple[dict[str, Any], Item | None, Run, bool]  # event, its item, its run, is the run's end


@dataclass(frozen=True, slots=True)
class Protocol:
    name: str
    run_events: Callable[[Run], list[tuple[dict[str, Any], Item | None]]]
    headers: dict[str, str] = field(default_factory=dict)
    done: bytes = b""

    def is_run_end(self, event: dict[str, Any]) -> bool:
        ends = ("RUN_FINISHED", "RUN_ERROR") if self.name == "ag-ui" else ("finish", "abort")
        return bool(event["type"] in ends)

    def is_run_start(self, event: dict[str, Any]) -> bool:
        return bool(event["type"] == ("RUN_STARTED" if self.name == "ag-ui" else "start"))


AG_UI: Final = Protocol("ag-ui", ag_ui_run_events)
AI_SDK: Final = Protocol(
    "ai-sdk", ai_sdk_run_chunks, {AI_SDK_HEADER[0]: AI_SDK_HEADER[1]}, b"data: [DONE]\n\n"
)
PROTOCOLS: Final = {"ag-ui": AG_UI, "ai-sdk": AI_SDK}


def _complete(spans: Sequence[Span]) -> bool:
    rooted = {s.trace_id for s in spans if s.parent_span_id is None}
    return bool(spans) and all(s.end_ns is not None and s.trace_id in rooted for s in spans)


def _entries(protocol: Protocol, runs: list[Run]) -> list[Entry]:
    out: list[Entry] = []
    for run in runs:
        events = protocol.run_events(run)
        for n, (event, item) in enumerate(events):
            out.append((event, item, run, item is None and n > 0 and protocol.is_run_end(event)))
    return out


def settled_events(protocol: Protocol, spans: Sequence[Span], *, final: bool) -> list[Entry]:
    """The events of the view that later spans cannot change (all of them when ``final``)."""
    runs = to_runs(spans)
    entries = _entries(protocol, runs)
    if final or _complete(spans):
        return entries
    bounds: dict[str, int] = {}
    for it in (it for run in runs for it in run.items):
        if it.open_key is not None:
            bounds[it.open_key] = min(it.open_bound, bounds.get(it.open_key, it.open_bound))
    first = sorted(bounds.items(), key=lambda kv: kv[1])[:2]
    for n, (_event, item, run, run_end) in enumerate(entries):
        if item is not None and item.provisional:
            return entries[:n]
        if run_end and not run.ended:
            return entries[:n]
        # Nothing at or after the earliest time a span still open (other than the item's own) can end.
        own = item.open_key if item is not None else None
        bound = next((b for key, b in first if key != own), None)
        at = run.end_ns if run_end else (item.time_ns if item is not None else run.start_ns)
        if bound is not None and at >= bound:
            return entries[:n]
    return entries


def _line(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


def _frame(seq: int | None, event: dict[str, Any]) -> bytes:
    head = "" if seq is None else f"id: {seq}\n"
    return f"{head}data: {_line(event)}\n\n".encode()


class _Live:
    """What one connection relayed of the text deltas, to fit the recorded text after them."""

    def __init__(self, protocol: Protocol) -> None:
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


def _run_message_ids(protocol: Protocol, run: Run) -> set[str]:
    ids = set()
    for event, _item in protocol.run_events(run):
        for key in ("messageId",):
            value = event.get(key)
            if isinstance(value, str) and not event["type"].startswith("REASONING_"):
                ids.add(value)
    return ids


async def stream_chunks(
    protocol: Protocol,
    read: Reader,
    app: ServerHandlers,
    since: int,
    *,
    subscription: Subscription | None,
    end_when_complete: bool,
    linger_s: float,
    known: frozenset[str] = frozenset(),
    with_ids: bool = True,
    trace_id: str | None = None,
    conversation_id: str | None = None,
) -> AsyncIterator[bytes]:
    """The SSE chunks of one stream after event ``since`` (0: from the start): of the trace ``trace_id`` or
    the conversation ``conversation_id`` (whose commits wake it)."""
    yield CONNECTED
    live = _Live(protocol)
    sent: list[str] = []  # lines of the view events sent on this connection, from ``since + 1``
    last: tuple[list[Span], bool] | None = None
    quiet_since = time.monotonic()
    skipped: set[str] = set()
    snapshot_due = since > 0 and protocol is AG_UI
    held: set[str] = set() if trace_id is None else {trace_id}  # the traces whose commits wake it
    try:
        while True:
            conversations = () if conversation_id is None else (conversation_id,)
            waiter = app.notifier.waiter(traces=held, conversations=conversations)
            spans, final, local = await read()
            if conversation_id is not None:
                held = {span.trace_id for span in spans}
            complete = _complete(spans)
            if (spans, final) != last:
                last = (spans, final)
                quiet_since = time.monotonic()
                entries = await asyncio.to_thread(settled_events, protocol, spans, final=final)
                if known:
                    for run in {id(r): r for _, _, r, _ in entries}.values():
                        if (
                            run.ended
                            and run.run_id not in skipped
                            and _run_message_ids(protocol, run) <= known
                        ):
                            skipped.add(run.run_id)
                    entries = [e for e in entries if e[2].run_id not in skipped]
                if snapshot_due and len(entries) >= since:
                    snapshot_due = False
                    before = [e[0] for e in entries[:since]]
                    snapshot = {"type": "MESSAGES_SNAPSHOT", "messages": messages_snapshot(before)}
                    yield _frame(None, snapshot)
                lines = [_line(e[0]) for e in entries[since:]]
                if lines[: len(sent)] == sent:
                    fresh = list(range(len(sent), len(lines)))
                else:
                    # Spans that arrived late (an open agent's thoughts come with its end) put events
                    # before ones already sent: send them now, in view order, unless one sent is gone.
                    have = Counter(lines)
                    have.subtract(sent)
                    gone = [line for line, n in have.items() if n < 0]
                    if gone:
                        _logger.warning(
                            "toolspan serve: late spans took back an event a %s stream sent (%s); it ends",
                            protocol.name,
                            gone[0][:200],
                        )
                        return
                    owed = Counter(sent)
                    fresh = []
                    for n, line in enumerate(lines):
                        if owed[line] > 0:
                            owed[line] -= 1
                        else:
                            fresh.append(n)
                chunk = bytearray()
                for n in fresh:
                    for event in live.fit(entries[since + n][0]):
                        chunk += _frame(since + n + 1 if with_ids else None, event)
                    sent.append(lines[n])
                if chunk:
                    yield bytes(chunk)
            if final or (complete and (not end_when_complete and time.monotonic() - quiet_since >= linger_s)):
                break
            if complete and end_when_complete:
                break
            timeout = app.config.heartbeat_s if local else min(app.config.heartbeat_s, _REMOTE_POLL_S)
            # Wake up in time to see the view turn final once the spans went idle.
            timeout = min(timeout, max(0.05, app.config.idle_timeout_s / 2))
            if complete:
                timeout = min(timeout, max(0.05, linger_s - (time.monotonic() - quiet_since)))
            async for relayed in relay_until_commit(waiter, subscription, timeout, local):
                if relayed is None:
                    yield HEARTBEAT
                    continue
                events = live.delta(_delta_data(relayed))
                if events:
                    yield b"".join(_frame(None, e) for e in events)
        if protocol.done:
            yield protocol.done
    except DeltaDropped:
        return
    finally:
        if subscription is not None:
            subscription.close()


def _since(request: Request) -> int | None:
    """The event number a client resumes after (``Last-Event-ID`` or ``?since=``), ``None`` unless it is
    ASCII digits of a number no view reaches beyond (``str.isdigit`` alone takes ``²``, and ``int`` refuses
    thousands of digits with an error)."""
    raw = request.headers.get("last-event-id") or request.query_params.get("since") or "0"
    text = raw.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 18):
        return None
    return int(text)


def _response(app: ServerHandlers, protocol: Protocol, chunks: AsyncIterator[bytes]) -> Response:
    # The stream ends when its chunks do: EventStreamResponse then closes the response body.
    response = EventStreamResponse(
        app._counted(chunks), send_timeout_s=app.config.send_timeout_s, on_drop=app._drop, ending=app.ending
    )
    response.headers.update(protocol.headers)
    response.headers["connection"] = "close"  # the stream ends: so does the connection
    return response


async def frontend_response(app: ServerHandlers, request: Request) -> Response:
    """``/api/traces/{id}/<protocol>/stream`` and ``/api/conversations/{id}/<protocol>/stream``."""
    protocol = PROTOCOLS[request.url.path.rstrip("/").split("/")[-2]]
    since = _since(request)
    if since is None:
        return error(400, "Last-Event-ID / since must be an event number (a non-negative integer)")
    idle_s = app.config.idle_timeout_s
    if "trace_id" in request.path_params:
        trace_id = trace_id_param(request.path_params["trace_id"])
        if trace_id is None:
            return error(404, f"no trace {request.path_params['trace_id']!r}")
        read = trace_reader(app.store, trace_id, idle_s, app.remote_reader(trace_id))
        subscription = app.deltas.subscribe(trace_id=trace_id, conversation_id=None, kind="text_delta")
        end_when_complete = True
        scope: tuple[str | None, str | None] = (trace_id, None)
    else:
        conversation_id = request.path_params["conversation_id"]
        read = conversation_reader(app.store, conversation_id, idle_s)
        subscription = app.deltas.subscribe(trace_id=None, conversation_id=conversation_id, kind="text_delta")
        end_when_complete = False
        scope = (None, conversation_id)
    chunks = stream_chunks(
        protocol,
        read,
        app,
        since,
        subscription=subscription,
        end_when_complete=end_when_complete,
        linger_s=min(LINGER_S, idle_s),
        trace_id=scope[0],
        conversation_id=scope[1],
    )
    return _response(app, protocol, chunks)


def _input_problem(body: Any) -> str | None:
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


async def agent_response(app: ServerHandlers, request: Request) -> Response:
    """``POST /api/ag-ui``: the conversation ``RunAgentInput.threadId`` as an AG-UI agent's run stream. The
    body is read as a stream (413 past ``_MAX_INPUT_BYTES`` before the rest is read, 408 when it stops coming
    for ``--read-timeout``) and parsed strictly (``NaN``, ``1e999``, lone surrogates, nesting deeper than
    ``_MAX_DEPTH``: a 400 naming the field)."""
    try:
        raw = await read_body(request, _MAX_INPUT_BYTES, app.config.read_timeout_s)
        body = parse_object(raw, max_depth=_MAX_DEPTH, what="the RunAgentInput")
    except BodyError as e:
        return error(e.status, e.message)
    problem = _input_problem(body)
    if problem is not None:
        return error(400, problem)
    thread = body["threadId"]
    known = frozenset(m["id"] for m in body.get("messages", []))
    idle_s = app.config.idle_timeout_s
    read = conversation_reader(app.store, thread, idle_s)
    subscription = app.deltas.subscribe(trace_id=None, conversation_id=thread, kind="text_delta")
    chunks = stream_chunks(
        AG_UI,
        read,
        app,
        0,
        subscription=subscription,
        end_when_complete=False,
        linger_s=min(LINGER_S, idle_s),
        known=known,
        with_ids=False,
        conversation_id=thread,
    )
    return _response(app, AG_UI, chunks)
