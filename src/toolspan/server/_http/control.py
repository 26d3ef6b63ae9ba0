"""The control channel of ``toolspan serve``: decide tool calls that wait for an approval, and cancel
running ones, from a frontend or a script; the application's ``toolspan.ServerApprover`` waits here for them.

Reads (open as every read of the server is: with ``--token``, the token is needed):

- ``GET /api/control/waiting``: the inbox, the calls waiting for a decision across traces (the pending tool
  spans whose last approval event is ``permission_required``), one per model tool call id, oldest first;
- ``GET /api/control/decisions/{call_id}?wait=S``: the decision on a call (``null`` until made), waiting up
  to ``S`` seconds (at most 30) for it: the application's approver long-polls here. It also names the first
  span that waited for this call id, so a restarted application links back to it;
- ``GET /api/control/cancels?execution_id=...&wait=S``: the cancel requests for the running calls named.

Writes, ``POST`` with a JSON body (``Content-Type: application/json``), and always the bearer token in the
``Authorization`` header (also on 127.0.0.1; a server without ``--token`` answers 403): no cookie, no
query token, and a request whose ``Origin`` is not this server's own (or a ``--cors-origin``) is refused,
so no other web page can send one:

- ``POST /api/control/decisions`` ``{call_id | execution_id, decision: allow|deny, note?, by, arguments?}``:
  the first decision on a call wins (200); the same decision again answers 200 with the same body; another
  one is refused (409, with the decision that stands); a call that does not wait is refused (404 unknown,
  409 running or ended);
- ``POST /api/control/cancels`` ``{execution_id, by, note?}``: asks the application to cancel a running call
  (202; again: 200 with the same body); a call that already ended answers 409 with its state.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import math
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolspan import semconv as sc
from toolspan._kernel.ids import parse_execution_id
from toolspan.bridge.facts import (
    AGENT,
    TOOL,
    act_status,
    agent_name,
    approvals,
    classify,
    tool_call,
    tool_state,
)
from toolspan.bridge.model import Span
from toolspan.server._auth import bearer_token
from toolspan.server._http.auth import error
from toolspan.server._store import control as _control
from toolspan.server._store.control import CancelRow, DecisionRow

__all__ = ["ControlRoutes", "decision_body"]

MAX_BODY: Final = 256 * 1024
MAX_WAIT_S: Final = 30.0
MAX_TEXT: Final = 2000
INBOX_LIMIT: Final = 1000
_JSON: Final = "application/json"
_AWAITING: Final = "awaiting_approval"


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _ms(ns: int) -> int:
    return ns // 1_000_000


def decision_body(row: DecisionRow) -> dict[str, Any]:
    """A stored decision as the routes answer it."""
    return {
        "call_id": row.call_id,
        "execution_id": row.execution_id,
        "trace_id": row.trace_id,
        "span_id": row.span_id,
        "tool": row.tool,
        "decision": row.decision,
        "note": row.note,
        "by": row.decided_by,
        "arguments": None if row.arguments is None else json.loads(row.arguments),
        "decided_at": _ms(row.decided_ns),
    }


def _cancel_body(row: CancelRow) -> dict[str, Any]:
    return {
        "execution_id": row.execution_id,
        "trace_id": row.trace_id,
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


def _wait_param(request: Request) -> float:
    raw = request.query_params.get("wait", "0")
    try:
        wait = float(raw)
    except ValueError:
        raise BadRequest(400, f"wait must be a number of seconds, got {raw[:40]!r}") from None
    if not math.isfinite(wait) or wait < 0:
        raise BadRequest(400, f"wait must be a number of seconds >= 0, got {raw[:40]!r}")
    return min(wait, MAX_WAIT_S)


class _Changes:
    """Wakes the long-polls on the event loop when a decision or a cancel request is stored."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    def current(self) -> asyncio.Event:
        """The event the next change sets (taken before a read, so no change after it is missed)."""
        return self._event


async def _until(event: asyncio.Event, timeout: float) -> None:
    if timeout <= 0:
        return
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(event.wait(), timeout)


# What a tool span records its arguments under (``toolspan._instrument.permissions.recorded_arguments``).
T = TypeVar("T")
R = TypeVar("R")

_ARGUMENT_KEYS: Final = (
    sc.GEN_AI_TOOL_CALL_ARGUMENTS,
    sc.OI_INPUT_VALUE,
    sc.TOOLSPAN_TOOL_CALL_ARGUMENTS_DIGEST,
)


def _waiting(span: Span) -> bool:
    return span.end_ns is None and act_status(span) == _AWAITING


def _since_ns(span: Span) -> int:
    """When the call started waiting: its first ``permission_required``."""
    marks = [m.time_ns for m in approvals(span) if m.decision is None]
    return min(marks) if marks else span.start_ns


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
            Route("/api/control/waiting", self.inbox),
            Route("/api/control/decisions", self.decide, methods=["POST"]),
            Route("/api/control/decisions/{call_id:str}", self.decision),
            Route("/api/control/cancels", self.cancels, methods=["GET"]),
            Route("/api/control/cancels", self.cancel, methods=["POST"]),
        ]

    # --- guards ---------------------------------------------------------------------------------

    def _check_write(self, request: Request) -> None:
        token = self.handlers.config.token
        if not token:
            raise BadRequest(
                403,
                "deciding and cancelling need a bearer token: start toolspan serve with --token"
                " (or TOOLSPAN_SERVER_TOKEN) and send it as Authorization: Bearer <token>",
            )
        given = b""
        for name, value in request.headers.raw:
            if name == b"authorization":
                given = bearer_token(value)
        if not hmac.compare_digest(given, token.encode()):
            raise BadRequest(401, "missing or wrong bearer token (send it as Authorization: Bearer <token>)")
        origin = request.headers.get("origin")
        if origin is not None and not self._same_origin(origin, request):
            raise BadRequest(403, f"requests from origin {origin[:100]!r} may not decide or cancel here")
        media = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
        if media != _JSON:
            raise BadRequest(415, f"the body must be {_JSON}, got {media or 'no content type'!r}")

    def _same_origin(self, origin: str, request: Request) -> bool:
        if origin in self.handlers.config.cors_origins:
            return True
        parsed = urllib.parse.urlsplit(origin)
        host = request.headers.get("host")
        return parsed.scheme in ("http", "https") and host is not None and parsed.netloc == host

    async def _body(self, request: Request) -> dict[str, Any]:
        """The JSON object of the body: read as a stream, cut off past ``MAX_BODY`` (413) or when it stops
        coming for the server's ``--read-timeout`` (408)."""
        declared = request.headers.get("content-length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY:
            raise BadRequest(413, f"body of {declared} bytes is over the size limit of {MAX_BODY} bytes")
        body = bytearray()
        chunks = request.stream()
        timeout = self.handlers.config.read_timeout_s
        while True:
            try:
                chunk = await asyncio.wait_for(anext(chunks, None), timeout)
            except asyncio.TimeoutError:
                raise BadRequest(408, f"no body bytes for {timeout:g} s: request timed out") from None
            if chunk is None:
                break
            body += chunk
            if len(body) > MAX_BODY:
                raise BadRequest(413, f"body is over the size limit of {MAX_BODY} bytes")
        try:
            doc = json.loads(body)
        except (ValueError, UnicodeDecodeError) as e:
            raise BadRequest(400, f"the body is not JSON: {e}") from None
        if not isinstance(doc, dict):
            raise BadRequest(400, "the body must be a JSON object")
        return doc

    # --- the inbox --------------------------------------------------------------------------------

    def _inbox(self) -> list[dict[str, Any]]:
        store = self.handlers.store
        spans = store.pending_tool_spans(INBOX_LIMIT)
        by_call: dict[str, dict[str, Any]] = {}
        traces: dict[str, list[Span]] = {}
        for span in spans:
            if not _waiting(span):
                continue
            call = tool_call(span)
            since = _since_ns(span)
            known = by_call.get(call.call_id)
            if known is not None:
                # The same call re-issued after a restart: shown once, waiting since its first wait.
                known["waiting_since"] = min(known["waiting_since"], _ms(since))
                if span.start_ns >= known["_start"]:
                    known.update(execution_id=call.execution_id, trace_id=span.trace_id, span_id=span.span_id)
                    known["_start"] = span.start_ns
                continue
            trace = traces.get(span.trace_id)
            if trace is None:
                trace = traces[span.trace_id] = store.trace_spans(span.trace_id)
            by_call[call.call_id] = {
                "call_id": call.call_id,
                "execution_id": call.execution_id,
                "tool": call.name,
                "arguments": call.input,
                "agent": _agent_of(span, trace),
                "service": span.resource.get(sc.SERVICE_NAME),
                "trace_id": span.trace_id,
                "span_id": span.span_id,
                "waiting_since": _ms(since),
                "_start": span.start_ns,
            }
        out = []
        for entry in sorted(by_call.values(), key=lambda e: (e["waiting_since"], e["call_id"])):
            entry.pop("_start")
            # Decided here, not yet applied by the application (or it is not running now).
            row = _control.run(store, _control.decision_for, entry["call_id"])
            entry["decision"] = None if row is None else decision_body(row)
            out.append(entry)
        return out

    async def inbox(self, request: Request) -> Response:
        calls = await run_in_threadpool(self._inbox)
        return JSONResponse({"waiting": calls})

    # --- decisions --------------------------------------------------------------------------------

    async def _poll(self, read: Callable[[Any, T], R], key: T, wait: float) -> R:
        """``read(connection, key)`` of the control tables, again after each change until it finds something
        or ``wait`` seconds have passed (a long poll)."""
        deadline = time.monotonic() + wait
        while True:
            change = self.changes.current()
            found = await run_in_threadpool(_control.run, self.handlers.store, read, key)
            left = deadline - time.monotonic()
            if found or left <= 0:
                return found
            await _until(change, left)

    def _first_wait(self, call_id: str) -> dict[str, Any] | None:
        """The first span that waited for ``call_id`` (a restarted application links back to it)."""
        first: tuple[int, Span] | None = None
        for span in self.handlers.store.pending_tool_spans(INBOX_LIMIT):
            if tool_call(span).call_id != call_id or not approvals(span):
                continue
            since = _since_ns(span)
            if first is None or since < first[0]:
                first = (since, span)
        if first is None:
            return None
        since, span = first
        return {
            "trace_id": span.trace_id,
            "span_id": span.span_id,
            "execution_id": tool_call(span).execution_id,
            "required_ns": since,
        }

    async def decision(self, request: Request) -> Response:
        call_id = request.path_params["call_id"]
        try:
            wait = _wait_param(request)
        except BadRequest as e:
            return error(e.status, e.message)
        row = await self._poll(_control.decision_for, call_id, wait)
        waiting = await run_in_threadpool(self._first_wait, call_id)
        decided_on = None if row is None else await run_in_threadpool(self._decided_on, row)
        return JSONResponse(
            {
                "call_id": call_id,
                "decision": None if row is None else decision_body(row),
                "waiting": waiting,
                "decided_on": decided_on,
            },
            headers={"cache-control": "no-store"},
        )

    def _decided_on(self, row: DecisionRow) -> dict[str, Any] | None:
        """The arguments of the span a decision was made on, as it recorded them: a call re-issued after a
        restart gets the decision only with the same ones (``ServerApprover``)."""
        if row.span_id is None:
            return None
        found = self.handlers.store.span(row.trace_id, row.span_id)
        if not found:
            return None
        attributes = found[0].attributes
        return {"attributes": {k: attributes[k] for k in _ARGUMENT_KEYS if k in attributes}}

    def _find(self, call_id: str | None, execution_id: str | None) -> Span | None:
        """The tool span named by ``execution_id`` (else the newest pending one of ``call_id``)."""
        store = self.handlers.store
        if execution_id is not None:
            span_id = parse_execution_id(execution_id)
            if span_id is None:
                raise BadRequest(400, f"not an execution id: {execution_id[:80]!r}")
            found = [s for s in store.span(None, format(span_id, "016x")) if classify(s) == TOOL]
            if not found:
                return None
            span: Span = found[0]
            if call_id is not None and tool_call(span).call_id != call_id:
                raise BadRequest(400, f"execution {execution_id!r} is not a call of tool call id {call_id!r}")
            return span
        newest: Span | None = None
        for span in store.pending_tool_spans(INBOX_LIMIT):
            if tool_call(span).call_id == call_id and (newest is None or span.start_ns >= newest.start_ns):
                newest = span
        return newest

    def _decide(self, doc: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        call_id = _text(doc, "call_id", required=False)
        execution_id = _text(doc, "execution_id", required=False)
        if call_id is None and execution_id is None:
            raise BadRequest(
                400, "name the call: field 'call_id' (the model's tool call id) or 'execution_id'"
            )
        decision = doc.get("decision")
        if decision not in ("allow", "deny"):
            raise BadRequest(400, f"field 'decision' must be 'allow' or 'deny', got {str(decision)[:40]!r}")
        note = _text(doc, "note", required=False)
        by = _text(doc, "by", required=True)
        assert by is not None
        arguments = doc.get("arguments")
        if arguments is not None:
            if decision != "allow":
                raise BadRequest(400, "edited 'arguments' go with an 'allow' decision only")
            if not isinstance(arguments, dict):
                raise BadRequest(400, "field 'arguments' must be a JSON object (the whole edited arguments)")
        store = self.handlers.store
        span = self._find(call_id, execution_id)
        if span is not None:
            call_id = tool_call(span).call_id
        if call_id is None:
            raise BadRequest(404, f"no tool call {execution_id!r} is known here")
        text = None if arguments is None else json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        # Read after the span: a span no longer waiting for a decision made here implies it is stored.
        stored = _control.run(store, _control.decision_for, call_id)
        if stored is None:
            if span is None:
                raise BadRequest(404, f"no tool call {call_id!r} waits for a decision here")
            if not _waiting(span):
                state = tool_state(span) if span.end_ns is not None else "RUNNING"
                raise BadRequest(409, f"tool call {call_id!r} does not wait for a decision (state {state})")
            row = DecisionRow(
                call_id,
                span.trace_id,
                span.span_id,
                tool_call(span).execution_id,
                tool_call(span).name,
                decision,
                note,
                by,
                text,
                time.time_ns(),
            )
            stored = _control.run(store, _control.insert_decision, row)
            if stored is row:
                return 200, decision_body(stored)
        same = stored.decision == decision and _same_json(stored.arguments, text)
        if same:
            return 200, decision_body(stored)
        body = decision_body(stored)
        return 409, {
            "error": f"tool call {call_id!r} was already decided: {stored.decision} by {stored.decided_by}",
            "status": 409,
            "decision": body,
        }

    async def decide(self, request: Request) -> Response:
        try:
            self._check_write(request)
            doc = await self._body(request)
            status, body = await run_in_threadpool(self._decide, doc)
        except BadRequest as e:
            return error(e.status, e.message)
        if status == 200:
            self.changes.notify()
        return JSONResponse(body, status_code=status)

    # --- cancel -----------------------------------------------------------------------------------

    def _cancel(self, doc: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        execution_id = _text(doc, "execution_id", required=True)
        assert execution_id is not None
        by = _text(doc, "by", required=True)
        assert by is not None
        note = _text(doc, "note", required=False)
        store = self.handlers.store
        stored = _control.run(store, _control.cancels_for, [execution_id])
        if stored:
            return 200, _cancel_body(stored[0])
        span = self._find(None, execution_id)
        if span is None:
            raise BadRequest(404, f"no tool call {execution_id!r} is known here")
        if span.end_ns is not None:
            state = tool_state(span)
            return 409, {
                "error": f"tool call {execution_id!r} already ended ({state})",
                "status": 409,
                "state": state,
            }
        if _waiting(span):
            raise BadRequest(409, f"tool call {execution_id!r} waits for its approval: deny it instead")
        row = CancelRow(execution_id, span.trace_id, tool_call(span).call_id, by, note, time.time_ns())
        stood = _control.run(store, _control.insert_cancel, row)
        return (202 if stood is row else 200), _cancel_body(stood)

    async def cancel(self, request: Request) -> Response:
        try:
            self._check_write(request)
            doc = await self._body(request)
            status, body = await run_in_threadpool(self._cancel, doc)
        except BadRequest as e:
            return error(e.status, e.message)
        if status == 202:
            self.changes.notify()
        return JSONResponse(body, status_code=status)

    async def cancels(self, request: Request) -> Response:
        ids = request.query_params.getlist("execution_id")[:1000]
        try:
            wait = _wait_param(request)
        except BadRequest as e:
            return error(e.status, e.message)
        rows = await self._poll(_control.cancels_for, ids, wait)
        return JSONResponse(
            {"cancels": [_cancel_body(r) for r in rows]}, headers={"cache-control": "no-store"}
        )


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
