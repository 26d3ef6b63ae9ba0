"""The control channel of ``toolspan serve``: decide tool calls that wait for an approval, and cancel
running ones, from a frontend or a script; the application's ``toolspan.ServerApprover`` waits here for them.

Who may do what (``toolspan.server._auth``): the application's token (``--token``) sends spans and reads,
the GET routes below included (its approver long-polls them); only a decider token (``--decider
NAME=TOKEN``) decides and cancels, and what it does is recorded as its name. A server without deciders
answers every decision and cancel request 403.

Reads:

- ``GET /api/control/waiting``: the inbox, one entry per tool span that waits for a decision (two calls that
  share a model call id are two entries), oldest first: whatever the number of calls that never ended (the
  waiting spans are indexed), without the calls whose application stopped asking for their decision (it
  died) more than ``--stale-after`` seconds ago. Each entry names the exact call (``execution_id``,
  ``trace_id``, ``span_id``), shows its arguments as recorded and their digest ``arguments_sha256`` (what a
  decision must echo as ``shown``), and the decision made on it that its application has not yet applied
  (``decision``). ``?limit=`` (at most 1000) and ``?after=`` (the ``next`` of the previous page) page it.
- ``GET /api/control/decisions/{execution_id}?trace_id=&wait=S``: the decision on that call (``null`` until
  made), waiting up to ``S`` seconds (at most 30) for it: the application's approver long-polls here, which
  tells the server its application is alive. With ``call_id``, ``tool`` and ``shown`` (the call's digest), it
  also says ``resumes``: a decision on another span of the same model call, tool and arguments whose
  application stopped asking before it could apply it (it died while the call waited): the same call,
  re-issued after a restart, takes it.
- ``GET /api/control/cancels?execution_id=...&wait=S``: the cancel requests for the running calls named.

Writes, ``POST`` with a JSON body (``Content-Type: application/json``), always with a decider token in the
``Authorization`` header (also on 127.0.0.1): no cookie, no query token, and a request whose ``Origin`` is
not this server's own (or a ``--cors-origin``) is refused, so no other web page can send one. Bodies are
parsed strictly (``jsonio.parse_object``: ``NaN``, ``1e999``, lone surrogates and deep nesting are a 400
naming the field), and a field a route does not take is a 400 naming it (``by`` included: who decided is
the token's name):

- ``POST /api/control/decisions`` ``{execution_id, trace_id?, decision: allow|deny, shown, arguments?,
  note?}``: given to that call only. ``shown`` (its ``arguments_sha256``) not matching what the span recorded
  is a 409, an edit (``arguments``, with ``allow`` only) that does not fit the tool's recorded parameter
  schema a 422 (``edits``); the first decision wins (200); the same one again answers 200 with the same
  body, another is refused (409, with the decision that stands); a call that does not wait is refused (404
  unknown, 409 running or ended, with its state);
- ``POST /api/control/cancels`` ``{execution_id, trace_id?, note?}``: asks the application to cancel a
  running call (202; again: 200 with the same body); a call that already ended answers 409 with its state, a
  call still waiting 409 (deny it instead).

A decision or cancel request wakes the long polls waiting for it at once, on every replica of a shared store
(the store's control notifications), and a long poll whose client hung up ends then, freeing its connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolspan import semconv as sc
from toolspan._util.ids import arguments_sha256, parse_execution_id
from toolspan.bridge.facts import (
    ACT_AWAITING_APPROVAL,
    AGENT,
    TOOL,
    act_status,
    agent_name,
    approvals,
    arguments_text,
    classify,
    parse_json,
    tool_call,
    tool_state,
)
from toolspan.bridge.model import Span
from toolspan.server._auth import DECIDE, bearer_token
from toolspan.server._http.auth import access_of, trace_id_param
from toolspan.server._http.edits import edit_problem, recorded_schema
from toolspan.server._http.jsonio import BodyError, JSONResponse, parse_object, read_body, strict_value
from toolspan.server._store import control as _control
from toolspan.server._store.control import CancelRow, DecisionRow

__all__ = ["ControlRoutes", "decision_body"]

_logger = logging.getLogger(__name__)

MAX_BODY: Final = 256 * 1024
MAX_WAIT_S: Final = 30.0
MAX_TEXT: Final = 2000
# Edited arguments deeper than this are refused (the recorded copy of arguments stops at 32 levels).
MAX_DEPTH: Final = 64
INBOX_PAGE: Final = 200
INBOX_MAX: Final = 1000
# After a long poll answers, its application has this long to ask again before it counts as gone.
POLL_GRACE_S: Final = 5.0
# How much earlier than the server first received a waiting span its own clock may say it began waiting
# (export delay, clock skew): a claimed wait older than that counts from the arrival minus this.
ARRIVAL_SLACK_NS: Final = 60 * 10**9
_JSON: Final = "application/json"
_DECISION_FIELDS: Final = frozenset({"execution_id", "trace_id", "decision", "shown", "arguments", "note"})
_CANCEL_FIELDS: Final = frozenset({"execution_id", "trace_id", "note"})

T = TypeVar("T")
R = TypeVar("R")


# Why a call may be unknown here: its application sends no pending records, so the server never saw it wait.
_UNKNOWN_HINT: Final = (
    " (a call shows here while it waits or runs only when its application exports pending records:"
    " TOOLSPAN_PENDING_SPANS=true)"
)


class BadRequest(Exception):
    def __init__(self, status: int, message: str, extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = dict(extra or {})

    def response(self) -> Response:
        return JSONResponse({"error": self.message, "status": self.status, **self.extra}, self.status)


def _ms(ns: int | None) -> int | None:
    return None if ns is None else ns // 1_000_000


def decision_body(row: DecisionRow) -> dict[str, Any]:
    """A stored decision as the routes answer it."""
    return {
        "execution_id": row.execution_id,
        "trace_id": row.trace_id,
        "span_id": row.span_id,
        "call_id": row.call_id,
        "tool": row.tool,
        "decision": row.decision,
        "shown": row.shown,
        "note": row.note,
        "by": row.decided_by,
        "arguments": None if row.arguments is None else json.loads(row.arguments),
        "waiting_since": _ms(row.waiting_since_ns),
        "waiting_since_ns": row.waiting_since_ns,
        "decided_at": _ms(row.decided_ns),
    }


def _cancel_body(row: CancelRow) -> dict[str, Any]:
    return {
        "execution_id": row.execution_id,
        "trace_id": row.trace_id,
        "span_id": row.span_id,
        "call_id": row.call_id,
        "by": row.requested_by,
        "note": row.note,
        "requested_at": _ms(row.requested_ns),
    }


def _text(doc: Mapping[str, Any], key: str, *, required: bool) -> str | None:
    value = doc.get(key)
    if value is None:
        if required:
            raise BadRequest(400, f"field {key!r} is required")
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise BadRequest(400, f"field {key!r} must be a non-empty string")
    if len(value) > MAX_TEXT:
        raise BadRequest(400, f"field {key!r} is longer than {MAX_TEXT} characters")
    return value


def _only(doc: Mapping[str, Any], fields: frozenset[str]) -> None:
    for key in doc:
        if key == "by":
            raise BadRequest(
                400, "field 'by' is not taken: a decision is recorded as made by the decider token's name"
            )
        if key not in fields:
            raise BadRequest(
                400, f"field {key[:80]!r} is not taken here (fields: {', '.join(sorted(fields))})"
            )


def _span_key(doc: Mapping[str, Any]) -> tuple[str | None, str]:
    """``(trace_id or None, span id hex)`` of the call a request names."""
    execution_id = _text(doc, "execution_id", required=True)
    assert execution_id is not None
    span_id = parse_execution_id(execution_id)
    if span_id is None:
        raise BadRequest(
            400, f"field 'execution_id' is not an execution id (exec_ + 16 hex): {execution_id[:80]!r}"
        )
    raw_trace = _text(doc, "trace_id", required=False)
    trace_id = None
    if raw_trace is not None:
        trace_id = _trace_param(raw_trace, "field 'trace_id'")
    return trace_id, format(span_id, "016x")


def _trace_param(raw: str, what: str) -> str:
    text = raw.strip().lower()
    if len(text) != 32 or not set(text) <= set("0123456789abcdef"):
        raise BadRequest(400, f"{what} is not a trace id (32 hex digits): {raw[:80]!r}")
    return text


def _wait_param(request: Request) -> float:
    raw = request.query_params.get("wait", "0")
    try:
        wait = float(raw) if raw.isascii() and len(raw) <= 32 else float("nan")
    except ValueError:
        raise BadRequest(400, f"wait must be a number of seconds, got {raw[:40]!r}") from None
    if not math.isfinite(wait) or wait < 0:
        raise BadRequest(400, f"wait must be a number of seconds >= 0, got {raw[:40]!r}")
    return min(wait, MAX_WAIT_S)


class _Changes:
    """Wakes the long polls on the event loop when a decision or a cancel request is stored (here, or on
    another replica of the same store)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    def current(self) -> asyncio.Event:
        """The event the next change sets (taken before a read, so no change after it is missed)."""
        return self._event


async def hung_up(request: Request) -> None:
    """Returns once the client of ``request`` disconnected (its body, if any, read already)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


def _waiting(span: Span) -> bool:
    return span.end_ns is None and act_status(span) == ACT_AWAITING_APPROVAL


def _claimed_since(span: Span) -> int:
    """When the call says it began waiting: its first ``permission_required`` (else its start)."""
    marks = [m.time_ns for m in approvals(span) if m.decision is None]
    return min(marks) if marks else span.start_ns


def _arguments(span: Span) -> tuple[Any, str | None]:
    """``(arguments as recorded, their JSON text)``: the value when the text is strict JSON, else the text
    itself (``NaN`` is no JSON: such a record is shown as the text it is)."""
    text = arguments_text(span)
    if text is None:
        return None, None
    value = parse_json(text)
    if value is not text and strict_value(value, max_depth=10_000) is not None:
        value = text
    return value, text


class ControlRoutes:
    """The control routes of one server (``handlers``: its ``ServerHandlers``)."""

    def __init__(self, handlers: Any) -> None:
        self.handlers = handlers
        self._changes: _Changes | None = None

    @property
    def changes(self) -> _Changes:
        if self._changes is None:  # made on the event loop, on first use
            self._changes = _Changes()
        return self._changes

    def routes(self) -> list[Route]:
        return [
            Route("/api/whoami", self.whoami),
            Route("/api/control/waiting", self.inbox),
            Route("/api/control/decisions", self.decide, methods=["POST"]),
            Route("/api/control/decisions/{execution_id:str}", self.decision),
            Route("/api/control/cancels", self.cancels, methods=["GET"]),
            Route("/api/control/cancels", self.cancel, methods=["POST"]),
        ]

    def _changed(self) -> None:
        """A decision or cancel request was stored: wake the long polls here and on every other replica."""
        self.changes.notify()
        try:
            self.handlers.store.publish_control()
        except Exception as e:  # the other replicas' polls then see it at the end of their round
            _logger.warning("toolspan serve: a control change was not sent to the other replicas: %s", e)

    # --- who is asking ------------------------------------------------------------------------------

    async def whoami(self, request: Request) -> Response:
        access = access_of(request.scope)
        return JSONResponse(
            {"name": access.name, "can": access.listed()}, headers={"cache-control": "no-store"}
        )

    def _decider(self, request: Request) -> str:
        """The name of the decider token of a write, after its guards (else ``BadRequest``)."""
        config = self.handlers.config
        if not config.deciders:
            raise BadRequest(
                403,
                "deciding and cancelling need a decider token, and this server has none: start toolspan serve"
                " with --decider NAME=TOKEN (or TOOLSPAN_DECIDERS=name=token) and send that token as"
                " Authorization: Bearer <token>",
            )
        sent = any(name == b"authorization" and bearer_token(value) for name, value in request.headers.raw)
        if not sent:
            raise BadRequest(
                401,
                "deciding needs a decider token in the Authorization header (Bearer <token>), never in a URL",
            )
        access = access_of(request.scope)
        if DECIDE not in access.can or access.name is None:
            if access.known:
                raise BadRequest(
                    403,
                    "the application's token may send spans and read, never decide or cancel: deciding needs"
                    " a"
                    " decider token (toolspan serve --decider NAME=TOKEN)",
                )
            raise BadRequest(401, "missing or wrong decider token (send it as Authorization: Bearer <token>)")
        origin = request.headers.get("origin")
        if origin is not None and not self._same_origin(origin, request):
            raise BadRequest(403, f"requests from origin {origin[:100]!r} may not decide or cancel here")
        media = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
        if media != _JSON:
            raise BadRequest(415, f"the body must be {_JSON}, got {media[:60] or 'no content type'!r}")
        return access.name

    def _same_origin(self, origin: str, request: Request) -> bool:
        if origin in self.handlers.config.cors_origins:
            return True
        parsed = urllib.parse.urlsplit(origin)
        host = request.headers.get("host")
        return parsed.scheme in ("http", "https") and host is not None and parsed.netloc == host

    async def _body(self, request: Request) -> dict[str, Any]:
        raw = await read_body(request, MAX_BODY, self.handlers.config.read_timeout_s)
        return parse_object(raw, max_depth=MAX_DEPTH)

    # --- the inbox --------------------------------------------------------------------------------

    def _inbox(self, after: tuple[int, str, str], limit: int) -> dict[str, Any]:
        store = self.handlers.store
        now = time.time_ns()
        stale_ns = int(self.handlers.config.stale_after_s * 1e9)
        spans = store.waiting_tool_spans(after, now - stale_ns, now - stale_ns, limit + 1)
        more = len(spans) > limit
        spans = spans[:limit]
        traces: dict[str, list[Span]] = {}
        out = []
        for span in spans:
            if classify(span) != TOOL or not _waiting(span):
                continue
            call = tool_call(span)
            trace = traces.get(span.trace_id)
            if trace is None:
                trace = traces[span.trace_id] = store.trace_spans(span.trace_id)
            value, text = _arguments(span)
            rows = _control.run(store, _control.decision_for, (span.trace_id, span.span_id))
            out.append(
                {
                    "execution_id": call.execution_id,
                    "trace_id": span.trace_id,
                    "span_id": span.span_id,
                    "call_id": call.call_id,
                    "tool": call.name,
                    "arguments": value,
                    "arguments_recorded": text is not None,
                    "arguments_sha256": arguments_sha256(text),
                    "agent": _agent_of(span, trace),
                    "service": span.resource.get(sc.SERVICE_NAME),
                    "waiting_since": _ms(self._waiting_since(span)),
                    # Decided here, not yet applied by the application (or it is not running now).
                    "decision": decision_body(rows[0]) if rows else None,
                }
            )
        page: dict[str, Any] = {"waiting": out}
        if more and spans:
            last = spans[-1]
            page["next"] = f"{last.start_ns}-{last.trace_id}-{last.span_id}"
        return page

    async def inbox(self, request: Request) -> Response:
        try:
            after = _after_param(request.query_params.get("after"))
            limit = _limit_param(request.query_params.get("limit"))
        except BadRequest as e:
            return e.response()
        page = await run_in_threadpool(self._inbox, after, limit)
        return JSONResponse(page, headers={"cache-control": "no-store"})

    def _waiting_since(self, span: Span) -> int:
        """When the call began waiting, as far as the server can vouch for it: the span's own first
        ``permission_required``, but never more than ``ARRIVAL_SLACK_NS`` before the server first received
        the span (a forged record cannot claim a wait of decades)."""
        claimed = _claimed_since(span)
        received = _control.run(self.handlers.store, _control.received_ns, span.trace_id, span.span_id)
        if received is None:
            return claimed
        return max(claimed, received - ARRIVAL_SLACK_NS)

    # --- decisions --------------------------------------------------------------------------------

    async def _poll(self, request: Request, read: Callable[[], R], wait: float) -> tuple[R, bool]:
        """``read()`` again after each change until it finds something, ``wait`` seconds have passed or the
        client hung up (a long poll that frees its connection at once); ``(found, client hung up)``."""
        deadline = time.monotonic() + wait
        gone = asyncio.ensure_future(hung_up(request))
        try:
            while True:
                change = self.changes.current()
                found = await run_in_threadpool(read)
                left = deadline - time.monotonic()
                if found or left <= 0 or gone.done():
                    return found, gone.done()
                woken = asyncio.ensure_future(change.wait())
                try:
                    await asyncio.wait({woken, gone}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    woken.cancel()
        finally:
            gone.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await gone

    def _decision_read(
        self, key: tuple[str | None, str], match: tuple[str, str | None, str | None] | None
    ) -> dict[str, Any] | None:
        """What a long poll of the decision on ``key`` answers: the decision on that span, else (with
        ``match``: ``(call id, tool, shown)``) one on another span of the same call its application could not
        apply; ``None`` while neither is there."""
        store = self.handlers.store
        rows = _control.run(store, _control.decision_for, key)
        if len(rows) == 1:
            return {"decision": decision_body(rows[0]), "resumes": None}
        if rows or match is None:
            return None  # several traces hold this span id and none was named: nothing is given
        call_id, tool, shown = match
        now = time.time_ns()
        for row in _control.run(store, _control.decisions_of_call, call_id):
            if (row.trace_id, row.span_id) == key or row.tool != tool or row.shown != shown:
                continue
            state = _control.run(store, _control.span_state, row.trace_id, row.span_id)
            until = _control.run(store, _control.poll_until, row.trace_id, row.span_id)
            # Only a call that can no longer apply its decision hands it on: still waiting (not ended) and
            # its application no longer asking (it died). A live call's decision stays its own.
            if state is not None and state[0] is None and (until is None or until < now):
                return {"decision": None, "resumes": decision_body(row)}
        return None

    def _mark(self, key: tuple[str | None, str], until_ns: int) -> None:
        trace_id, span_id = key
        if trace_id is not None:
            _control.run(self.handlers.store, _control.polled, trace_id, span_id, until_ns)

    async def decision(self, request: Request) -> Response:
        raw = request.path_params["execution_id"]
        params = request.query_params
        try:
            span_id = parse_execution_id(raw)
            if span_id is None:
                raise BadRequest(400, f"not an execution id (exec_ + 16 hex): {raw[:80]!r}")
            trace = params.get("trace_id")
            key = (None if trace is None else _trace_param(trace, "trace_id"), format(span_id, "016x"))
            wait = _wait_param(request)
            call_id, tool, shown = params.get("call_id"), params.get("tool"), params.get("shown")
            match = None if call_id is None else (call_id, tool, shown)
        except BadRequest as e:
            return e.response()
        await run_in_threadpool(self._mark, key, time.time_ns() + int((wait + POLL_GRACE_S) * 1e9))
        found, gone = await self._poll(request, lambda: self._decision_read(key, match), wait)
        # The application asks again right after an answer; a client that hung up asks no more.
        until = time.time_ns() + (0 if gone else int(POLL_GRACE_S * 1e9))
        await run_in_threadpool(self._mark, key, until)
        body = {"execution_id": raw, "trace_id": key[0], **(found or {"decision": None, "resumes": None})}
        return JSONResponse(body, headers={"cache-control": "no-store"})

    def _find(self, key: tuple[str | None, str], shown: str | None) -> Span | None:
        """The tool span ``key`` names. A span id alone that more than one trace holds names the one whose
        recorded arguments were shown (``BadRequest`` 409 when that does not single one out)."""
        trace_id, span_id = key
        found: list[Span] = [s for s in self.handlers.store.span(trace_id, span_id) if classify(s) == TOOL]
        if len(found) <= 1:
            return found[0] if found else None
        fitting = [s for s in found if shown is not None and arguments_sha256(arguments_text(s)) == shown]
        if len(fitting) == 1:
            return fitting[0]
        raise BadRequest(
            409,
            f"execution exec_{span_id} names {len(found)} calls in different traces: name one with"
            " 'trace_id'",
            {"trace_ids": sorted(s.trace_id for s in found)},
        )

    def _decide(self, doc: dict[str, Any], by: str) -> tuple[int, dict[str, Any]]:
        _only(doc, _DECISION_FIELDS)
        key = _span_key(doc)
        decision = doc.get("decision")
        if decision not in ("allow", "deny"):
            raise BadRequest(400, f"field 'decision' must be 'allow' or 'deny', got {str(decision)[:40]!r}")
        shown = _text(doc, "shown", required=True)
        assert shown is not None
        note = _text(doc, "note", required=False)
        arguments = doc.get("arguments")
        if arguments is not None:
            if decision != "allow":
                raise BadRequest(400, "field 'arguments' (an edit) goes with an 'allow' decision only")
            if not isinstance(arguments, dict):
                raise BadRequest(400, "field 'arguments' must be a JSON object (the whole edited arguments)")
        store = self.handlers.store
        span = self._find(key, shown)
        if span is None:
            raise BadRequest(404, f"no tool call exec_{key[1]} is known here{_UNKNOWN_HINT}")
        call = tool_call(span)
        text = None if arguments is None else json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        # Read after the span: a span no longer waiting for a decision made here implies it is stored.
        rows = _control.run(store, _control.decision_for, (span.trace_id, span.span_id))
        if not rows:
            if not _waiting(span):
                state = tool_state(span) if span.end_ns is not None else "RUNNING"
                raise BadRequest(
                    409,
                    f"tool call {call.execution_id} does not wait for a decision (state {state})",
                    {"state": state},
                )
            recorded = arguments_sha256(arguments_text(span))
            if shown != recorded:
                raise BadRequest(
                    409,
                    f"tool call {call.execution_id} recorded other arguments than those shown: show it again"
                    " and decide what it recorded",
                    {"arguments_sha256": recorded},
                )
            if arguments is not None:
                problem = edit_problem(recorded_schema(span.attributes), arguments)
                if problem is not None:
                    raise BadRequest(422, problem)
            row = DecisionRow(
                span.trace_id,
                span.span_id,
                call.execution_id,
                call.call_id,
                call.name,
                decision,
                shown,
                note,
                by,
                text,
                self._waiting_since(span),
                time.time_ns(),
            )
            stored = _control.run(store, _control.insert_decision, row)
            if stored is row:
                return 200, decision_body(stored)
        else:
            stored = rows[0]
        same = stored.decision == decision and stored.shown == shown and _same_json(stored.arguments, text)
        if same:
            return 200, decision_body(stored)
        return 409, {
            "error": f"tool call {call.execution_id} was already decided: {stored.decision} by"
            f" {stored.decided_by}",
            "status": 409,
            "decision": decision_body(stored),
        }

    async def decide(self, request: Request) -> Response:
        try:
            by = self._decider(request)
            doc = await self._body(request)
            status, body = await run_in_threadpool(self._decide, doc, by)
        except BodyError as e:
            return BadRequest(e.status, e.message).response()
        except BadRequest as e:
            return e.response()
        if status == 200:
            self._changed()
        return JSONResponse(body, status_code=status)

    # --- cancel -----------------------------------------------------------------------------------

    def _cancel(self, doc: dict[str, Any], by: str) -> tuple[int, dict[str, Any]]:
        _only(doc, _CANCEL_FIELDS)
        key = _span_key(doc)
        note = _text(doc, "note", required=False)
        store = self.handlers.store
        span = self._find(key, None)
        if span is None:
            raise BadRequest(404, f"no tool call exec_{key[1]} is known here{_UNKNOWN_HINT}")
        call = tool_call(span)
        stored = [
            r
            for r in _control.run(store, _control.cancels_for, [span.span_id])
            if r.trace_id == span.trace_id
        ]
        if stored:
            return 200, _cancel_body(stored[0])
        if span.end_ns is not None:
            state = tool_state(span)
            raise BadRequest(409, f"tool call {call.execution_id} already ended ({state})", {"state": state})
        if _waiting(span):
            raise BadRequest(
                409,
                f"tool call {call.execution_id} waits for its approval: deny it instead",
                {"state": "AWAITING_APPROVAL"},
            )
        row = CancelRow(
            span.trace_id, span.span_id, call.execution_id, call.call_id, by, note, time.time_ns()
        )
        stood = _control.run(store, _control.insert_cancel, row)
        return (202 if stood is row else 200), _cancel_body(stood)

    async def cancel(self, request: Request) -> Response:
        try:
            by = self._decider(request)
            doc = await self._body(request)
            status, body = await run_in_threadpool(self._cancel, doc, by)
        except BodyError as e:
            return BadRequest(e.status, e.message).response()
        except BadRequest as e:
            return e.response()
        if status == 202:
            self._changed()
        return JSONResponse(body, status_code=status)

    async def cancels(self, request: Request) -> Response:
        span_ids = []
        for raw in request.query_params.getlist("execution_id")[:1000]:
            span_id = parse_execution_id(raw)
            if span_id is None:
                return BadRequest(400, f"not an execution id (exec_ + 16 hex): {raw[:80]!r}").response()
            span_ids.append(format(span_id, "016x"))
        try:
            wait = _wait_param(request)
        except BadRequest as e:
            return e.response()
        store = self.handlers.store
        rows, _ = await self._poll(request, lambda: _control.run(store, _control.cancels_for, span_ids), wait)
        return JSONResponse(
            {"cancels": [_cancel_body(r) for r in rows]}, headers={"cache-control": "no-store"}
        )


def _after_param(raw: str | None) -> tuple[int, str, str]:
    if raw is None:
        return (-1, "", "")
    parts = raw.split("-")
    if (
        len(parts) != 3
        or not parts[0].isascii()
        or not parts[0].isdigit()
        or len(parts[0]) > 20
        or trace_id_param(parts[1]) != parts[1]
        or len(parts[2]) != 16
        or not set(parts[2]) <= set("0123456789abcdef")
    ):
        raise BadRequest(400, f"after must be the 'next' of an inbox page, got {raw[:80]!r}")
    return int(parts[0]), parts[1], parts[2]


def _limit_param(raw: str | None) -> int:
    if raw is None:
        return INBOX_PAGE
    if not raw.isascii() or not raw.isdigit() or len(raw) > 6 or not 1 <= int(raw) <= INBOX_MAX:
        raise BadRequest(400, f"limit must be a whole number from 1 to {INBOX_MAX}, got {raw[:40]!r}")
    return int(raw)


def _same_json(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is b
    return bool(json.loads(a) == json.loads(b))


def _agent_of(span: Span, trace: list[Span]) -> str | None:
    """The name of the nearest agent span above ``span`` in its trace, as far as the server has it (pending
    records are sent for tool spans: an agent span arrives when it ends), else the agent its approval
    request names (``toolspan.permission_required``'s ``gen_ai.agent.name``), else the agent name the tool
    span itself carries, if any."""
    asked = [
        e.attributes[sc.GEN_AI_AGENT_NAME]
        for e in span.events
        if e.name == sc.PERMISSION_REQUIRED_EVENT and isinstance(e.attributes.get(sc.GEN_AI_AGENT_NAME), str)
    ]
    own = asked[-1] if asked else span.attributes.get(sc.GEN_AI_AGENT_NAME)
    by_id = {s.span_id: s for s in trace}
    parent = span.parent_span_id
    seen = 0
    while parent is not None and seen < 1000:
        above = by_id.get(parent)
        if above is None:
            break
        if classify(above) == AGENT:
            return agent_name(above)
        parent = above.parent_span_id
        seen += 1
    return None if own is None else str(own)
